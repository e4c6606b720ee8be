//! `gavel serve --stdio`: governed tool calls over JSON lines. Each request
//! line (an Anthropic `tool_use` block or an OpenAI `function_call` item) is
//! handed to the session service ([`Service::call`]), recorded
//! write-ahead, and answered with one line: the `tool_result` block plus
//! gavel's decision fields. An `ask` is put to the client as an
//! `approval_request` line on the same stream.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

use crate::approval::{ApprovalChannel, CancelCause};
use crate::approvals::QueueApprover;
use crate::facts::Workspace;
use crate::session::{Ask, AskWait, Call, DEFAULT_WAIT, Governed, Service, SessionError, Setup};
use crate::tools::{Registry, ToolContext};
use crate::{ApprovalStatus, Approver, CallOutcome, Decision, ToolRequest};

/// Serves JSON lines on stdin and stdout under `setup` until end of input;
/// `ask` waits in the pending queue instead of asking on the stream.
pub fn stdio(
    setup: &Setup,
    ask: Option<AskWait>,
    context: impl FnOnce(&Workspace) -> ToolContext,
) -> Result<(), SessionError> {
    // One stream is one session: flow rules read what its earlier calls did.
    let stream = crate::runner::new_call_id().replacen("call_", "serve_", 1);
    let mut service = Service::open(setup, "serve", Registry::builtin())?
        .with_context(context)
        .with_principal(|who| match who.session {
            Some(_) => who,
            None => who.with_session(Some(&stream)),
        })
        .long_lived(true)?;
    let wait = ask.or(service
        .policy()
        .approval_wait()
        .map(|wait| AskWait(Some(wait))));
    let mut queue = match wait {
        Some(wait) => {
            let path = service.store().path().to_owned();
            let queue = QueueApprover::opening(&path, setup.durability, wait.or(DEFAULT_WAIT));
            Some(match service.runner().principal() {
                Some(who) => queue.with_principal(who.clone()),
                None => queue,
            })
        }
        None => None,
    };
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    serve(
        &mut service,
        &mut input,
        &mut output,
        &stdin_has_data,
        queue.as_mut(),
    )
    .map_err(|source| SessionError::Io {
        what: "cannot serve on stdin and stdout".to_owned(),
        source,
    })?;
    drop(queue);
    // The session's end: a signed checkpoint vouches for what it recorded.
    service.close();
    Ok(())
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
    service: &mut Service,
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
                    flush(service, output)?;
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
        let reply = match service.call(Call::new(&call_id, &request), Ask::Now(approver)) {
            Ok(Governed::Recorded { .. }) => error_line("the call was not run", Some(&call_id)),
            Ok(Governed::Ran(outcome)) if outcome.record_error.is_some() => {
                let mut line = outcome_line(&outcome);
                line["recorded"] = json!(false);
                line["record_error"] = json!(outcome.record_error);
                line
            }
            Ok(Governed::Ran(outcome)) => {
                let mut line = outcome_line(&outcome);
                // Where its receipt will be: the proof needs the checkpoint
                // the session's end signs (`gavel receipt CALL_ID`).
                if let Ok(Some(reference)) = service.store().receipt_reference(&call_id) {
                    line["receipt"] = json!(reference);
                }
                line
            }
            Err(err) => error_line(&err.to_string(), Some(&call_id)),
        };
        send(output, &reply)?;
    }
    flush(service, output)
}

/// Writes held-back results; a failure is reported as an error line.
fn flush(service: &mut Service, output: &mut dyn Write) -> std::io::Result<()> {
    match service.flush() {
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
