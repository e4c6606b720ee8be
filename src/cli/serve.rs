//! `gavel serve --stdio`: governed tool calls over JSON lines. Each request
//! line (an Anthropic `tool_use` block or an OpenAI `function_call` item) is
//! run through `GovernedRunner::run`, recorded write-ahead, and answered with
//! one line: the `tool_result` block plus gavel's decision fields. An `ask`
//! is put to the client as an `approval_request` line on the same stream.

use std::io::{BufRead, Write};

use clap::Args;
use serde_json::{Value, json};

use gavel::approval::{ApprovalChannel, CancelCause};
use gavel::approvals::{QueueApprover, StoreGrants};
use gavel::audit::DeferredResults;
use gavel::tools::Registry;
use gavel::{ApprovalStatus, Approver, CallOutcome, Decision, GovernedRunner, ToolRequest};

use super::{Exit, Global, ToolLimits};

/// The protocol and the durability trade-off, shown by `gavel serve --help`.
const PROTOCOL: &str = "\
Protocol, one JSON object per line:
  in   {\"type\":\"tool_use\",\"id\",\"name\",\"input\"}
       or {\"type\":\"function_call\",\"call_id\",\"name\",\"arguments\":\"<json>\"}
  out  the tool_result block with call_id, action, rule_id, reason, approval and status
  ask  out {\"type\":\"approval_request\",\"id\",\"rule_id\",\"reason\",\"tool\",\"input\"},
       in  {\"type\":\"approval\",\"id\",\"approved\":true|false}; end of input or any other
       reply is `cancelled` and the call does not run; a new request sent instead of
       the approval cancels the pending call and is then handled like any other
  A line that is not a request gets {\"type\":\"error\",\"error\":\"...\"} and the server goes on.
  Requests are handled in order; exit 0 at end of input.

Durability: every call is recorded before it is asked about or run.
  --durability full    (default) syncs every commit to disk: survives power loss
  --durability normal  survives a crash or kill of gavel, but may lose the last
                       commits on power loss; much faster";

#[derive(Args, Debug)]
#[command(after_help = PROTOCOL)]
pub struct ServeArgs {
    /// Speak JSON lines on stdin and stdout
    #[arg(long, required_unless_present = "socket", conflicts_with = "socket")]
    pub stdio: bool,
    /// Stay resident and answer `gavel hook` and `gavel run` calls on a Unix socket
    /// (default `<db>.sock`), keeping the database open and the policy parsed (`run`'s
    /// tool and prompt stay in its own process); a call that finds no answer there runs
    /// in its own process
    #[arg(
        long,
        value_name = "PATH",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        value_parser = socket_path
    )]
    pub socket: Option<std::path::PathBuf>,
    /// With --socket: stop after no call came for DURATION (e.g. 30m, 8h)
    #[arg(long, value_name = "DURATION", requires = "socket", conflicts_with = "stdio",
          value_parser = gavel::approvals::parse_wait)]
    pub idle: Option<std::time::Duration>,
    /// `wait[=DURATION]`: instead of an `approval_request` line, an asked call waits in the
    /// pending queue until `gavel approve` or `gavel reject` answers it from another terminal,
    /// or DURATION ends (default 10m; then cancelled, cause timeout)
    #[arg(long, value_name = "wait[=DURATION]", value_parser = super::parse_ask_wait)]
    pub ask: Option<super::AskWait>,
    #[command(flatten)]
    pub limits: ToolLimits,
}

pub fn run(global: &Global, args: ServeArgs) -> anyhow::Result<Exit> {
    if let Some(socket) = args.socket {
        let socket = Some(socket).filter(|s| !s.as_os_str().is_empty());
        let idle = args.idle.unwrap_or(std::time::Duration::MAX);
        return super::resident::listen(global, socket, idle);
    }
    let workspace = global.workspace()?;
    let policy = global.calls_policy(&workspace)?;
    let mut store = global.open_store()?;
    store.checkpoint_in_background()?;
    super::Global::vouch_policy(&policy, &store)?;
    store.remember_policy(&policy)?;
    store.set_redaction(policy.redaction());
    let context = args.limits.context(&workspace);
    let principal = global.principal("serve", &workspace, &policy, &store);
    let wait = args.ask.or(policy
        .approval_wait()
        .map(|wait| super::AskWait(Some(wait))));
    let mut queue = wait.map(|wait| {
        QueueApprover::opening(
            store.path(),
            global.durability(),
            wait.or(super::DEFAULT_WAIT),
        )
        .with_principal(principal.clone())
    });
    let runner = GovernedRunner::new(policy, workspace, Registry::builtin())
        .with_max_argument_bytes(global.max_argument_bytes)
        .with_context(context)
        .with_principal(principal)
        .with_grants(Box::new(StoreGrants::new(store.path())));
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    let mut audit = DeferredResults::new(&mut store);
    serve(
        &runner,
        &mut audit,
        &mut input,
        &mut output,
        &stdin_has_data,
        queue.as_mut(),
    )?;
    drop(audit);
    // The session's end: a signed checkpoint vouches for what it recorded.
    super::auto_checkpoint(&mut store, 1);
    Ok(Exit::Ok)
}

/// `--socket`'s value; empty (a bare `--socket`) for the default.
fn socket_path(text: &str) -> Result<std::path::PathBuf, String> {
    Ok(text.into())
}

/// Whether a read of stdin would return at once (data or end of input).
fn stdin_has_data() -> bool {
    let mut poll = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout.
    unsafe { libc::poll(&mut poll, 1, 0) == 1 }
}

/// Handles request lines from `input` in order until end of input.
///
/// Results are held back while more requests are already waiting
/// (`input_ready`), and written before the server would block for input, so
/// the record is complete whenever the server is idle.
pub fn serve(
    runner: &GovernedRunner,
    audit: &mut DeferredResults<'_>,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
    input_ready: &dyn Fn() -> bool,
    mut queue: Option<&mut QueueApprover>,
) -> std::io::Result<()> {
    // A request that arrived while a call waited for its approval: it
    // cancelled that call and is handled next.
    let mut early: Option<String> = None;
    loop {
        let line = match early.take() {
            Some(line) => Ok(line),
            None => {
                if !input_ready() {
                    flush(audit, output)?;
                }
                let Some(line) = read_line(input)? else {
                    break;
                };
                line
            }
        };
        let Ok(line) = line else {
            send(output, &error_line("request line is not UTF-8", None))?;
            continue;
        };
        if line.trim().is_empty() {
            continue;
        }
        let request = match parse_request(&line) {
            Ok(request) => request,
            Err(message) => {
                send(output, &error_line(&message, None))?;
                continue;
            }
        };
        let call_id = request.tool_use_id.clone();
        let mut approver = LineApprover {
            input: &mut *input,
            output: &mut *output,
            early: &mut early,
            cause: None,
        };
        let approver: &mut dyn Approver = match queue.as_deref_mut() {
            Some(queue) => queue,
            None => &mut approver,
        };
        let reply = match runner.run(&call_id, &request, None, approver, audit) {
            Ok(outcome) if outcome.record_error.is_some() => {
                let mut line = outcome_line(&outcome);
                line["recorded"] = json!(false);
                line["record_error"] = json!(outcome.record_error);
                line
            }
            Ok(outcome) => outcome_line(&outcome),
            Err(err) => error_line(&err.to_string(), Some(&call_id)),
        };
        send(output, &reply)?;
    }
    flush(audit, output)
}

/// Writes held-back results; a failure is reported as an error line.
fn flush(audit: &mut DeferredResults<'_>, output: &mut dyn Write) -> std::io::Result<()> {
    match audit.flush() {
        Ok(()) => Ok(()),
        Err(err) => send(output, &error_line(&err.to_string(), None)),
    }
}

/// The next line without its newline: `None` at end of input, `Some(Err)`
/// when it is not UTF-8.
fn read_line(input: &mut dyn BufRead) -> std::io::Result<Option<Result<String, ()>>> {
    let mut bytes = Vec::new();
    if input.read_until(b'\n', &mut bytes)? == 0 {
        return Ok(None);
    }
    while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        bytes.pop();
    }
    Ok(Some(String::from_utf8(bytes).map_err(|_| ())))
}

fn parse_request(line: &str) -> Result<ToolRequest, String> {
    let block: Value =
        serde_json::from_str(line).map_err(|e| format!("request line is not JSON: {e}"))?;
    if block.get("type").and_then(Value::as_str) == Some("approval") {
        return Err("no approval was requested".to_owned());
    }
    ToolRequest::from_block(&block).map_err(|e| e.to_string())
}

/// The `tool_result` block with gavel's decision fields beside it.
fn outcome_line(outcome: &CallOutcome) -> Value {
    let mut line = outcome.to_protocol_block();
    let decision = outcome.decision();
    for (field, value) in [
        ("call_id", json!(outcome.call_id)),
        ("action", json!(decision.action)),
        ("rule_id", json!(decision.rule_id)),
        ("reason", json!(decision.reason)),
        ("approval", json!(outcome.resolution.approval)),
        ("status", json!(outcome.result.status)),
    ] {
        line[field] = value;
    }
    line
}

fn error_line(message: &str, id: Option<&str>) -> Value {
    let mut line = json!({"type": "error", "error": message});
    if let Some(id) = id {
        line["id"] = json!(id);
    }
    line
}

/// Writes one JSON line and flushes it: serialized whole first, so that
/// stdout (line-buffered) takes it in one write.
fn send(output: &mut dyn Write, line: &Value) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(line)?;
    bytes.push(b'\n');
    output.write_all(&bytes)?;
    output.flush()
}

/// Asks over the same lines: sends an `approval_request`, reads one reply.
/// Anything but a well-formed `approval` for this call is `cancelled`; a
/// new request in its place is kept in `early`, to be handled next.
struct LineApprover<'a> {
    input: &'a mut dyn BufRead,
    output: &'a mut dyn Write,
    early: &'a mut Option<String>,
    /// Why the last approval was cancelled.
    cause: Option<CancelCause>,
}

impl LineApprover<'_> {
    fn ask(
        &mut self,
        request: &ToolRequest,
        decision: &Decision,
    ) -> Result<bool, (CancelCause, String)> {
        let malformed = |message: String| (CancelCause::Malformed, message);
        let id = &request.tool_use_id;
        send(
            self.output,
            &json!({
                "type": "approval_request",
                "id": id,
                "rule_id": decision.rule_id,
                "reason": decision.reason,
                "tool": request.name,
                "input": request.arguments,
            }),
        )
        .map_err(|e| {
            (
                CancelCause::Error,
                format!("cannot send the approval request: {e}"),
            )
        })?;
        let reply: Value = loop {
            let line = match read_line(self.input) {
                Ok(None) => {
                    return Err((
                        CancelCause::Eof,
                        "end of input before an approval".to_owned(),
                    ));
                }
                Err(e) => {
                    return Err((CancelCause::Error, format!("cannot read an approval: {e}")));
                }
                Ok(Some(Err(()))) => return Err(malformed("approval line is not UTF-8".into())),
                Ok(Some(Ok(line))) if line.trim().is_empty() => continue,
                Ok(Some(Ok(line))) => line,
            };
            let reply: Value = serde_json::from_str(&line)
                .map_err(|e| malformed(format!("approval line is not JSON: {e}")))?;
            // A request instead of the approval cancels this call, and is
            // handled next like any other: recorded, never dropped.
            if let Ok(next) = ToolRequest::from_block(&reply) {
                let message = format!(
                    "request `{}` arrived before an approval for `{id}`; `{id}` is cancelled",
                    next.tool_use_id
                );
                *self.early = Some(line);
                return Err((CancelCause::Superseded, message));
            }
            break reply;
        };
        if reply.get("type").and_then(Value::as_str) != Some("approval") {
            return Err(malformed(format!("expected an approval for `{id}`")));
        }
        if reply.get("id").and_then(Value::as_str) != Some(id.as_str()) {
            return Err(malformed(format!("the approval is not for `{id}`")));
        }
        reply
            .get("approved")
            .and_then(Value::as_bool)
            .ok_or_else(|| malformed("the approval has no boolean `approved`".to_owned()))
    }
}

impl Approver for LineApprover<'_> {
    fn channel(&self) -> ApprovalChannel {
        ApprovalChannel::Serve
    }

    fn cause(&self) -> Option<CancelCause> {
        self.cause
    }

    fn approve(&mut self, request: &ToolRequest, decision: &Decision) -> ApprovalStatus {
        self.cause = None;
        match self.ask(request, decision) {
            Ok(true) => ApprovalStatus::Approved,
            Ok(false) => ApprovalStatus::Rejected,
            Err((cause, message)) => {
                self.cause = Some(cause);
                // Say why, then fail closed; the result line follows.
                let _ = send(
                    self.output,
                    &error_line(&message, Some(&request.tool_use_id)),
                );
                ApprovalStatus::Cancelled
            }
        }
    }
}
