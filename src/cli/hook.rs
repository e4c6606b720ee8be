//! `gavel hook <client>`: an agent client's hook command. One JSON object
//! on stdin; for a pre-event, the decision in the client's own format on
//! stdout (`gavel::clients` knows each client's events, tools and answers).
//!
//! Exit codes follow the client, not gavel's table: 0 when the event was
//! recorded (a `deny` is an answer, not an error). Anything that goes wrong
//! (bad input, a bad policy, an unwritable record, a panic, a fatal signal)
//! ends in the client's fail-closed answer (`Client::fail_closed`): exit 2
//! (and, for clients that read it, a deny on stdout) wherever the client
//! would otherwise let the call run; exit 1 on events where 2 would mean
//! something else (Claude Code's `Stop`: keep working).

use std::io::{Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::Context as _;
use clap::Args;
use serde_json::{Value, json};

use gavel::approvals;
use gavel::audit::{
    AnomalyKind, AnomalyRecord, ClientCall, Event, EventBody, INLINE_CLIENT_INPUT, LifecycleRecord,
    ResultRecord, ToolResult,
};
use gavel::clients::completion::{Completion, by, client_approval, close_declined};
use gavel::clients::{
    self, Answer, AskMode, Client, Context, HookError, HookEvent, Kind, LOG_STARTED_MID_SESSION,
    Reply, ToolCall,
};
use gavel::policy::Policy;
use gavel::principal::Principal;
use gavel::runner::{AskRoute, new_call_id};
use gavel::store::{Store, StoreError};
use gavel::tools::Registry;
use gavel::{Action, ApprovalStatus, ExecutionStatus, GovernedRunner};

use super::{Exit, Global, one_line};

#[derive(Args, Debug)]
pub struct HookArgs {
    /// The agent client whose hook this is
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(
        clients::CLIENTS.iter().map(|c| c.name())
    ))]
    pub client: String,
    /// What an `ask` becomes: `auto` hands it to the client's prompt where the
    /// client always can (Claude Code, Cursor) and denies it as "needs approval"
    /// elsewhere; `prompt` also hands it over where the client prompts only in
    /// interactive sessions (Gemini CLI, Copilot CLI); `deny` never hands it over;
    /// `wait[=DURATION]` keeps the hook waiting in the pending queue until `gavel
    /// approve` / `gavel reject` answers from another terminal, or DURATION ends
    /// (default: 10 s less than the client's hook timeout; then denied, cancelled/timeout)
    /// [default: `wait=…` when the policy's `[approval] wait` sets one, else `auto`]
    #[arg(long, value_name = "auto|prompt|deny|wait[=DURATION]", value_parser = parse_ask)]
    pub ask: Option<AskArg>,
    /// The event name, for payloads that do not carry it (Copilot's camelCase hooks)
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
}

/// `--ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskArg {
    Auto,
    Prompt,
    Deny,
    Wait(super::AskWait),
}

pub(super) fn parse_ask(text: &str) -> Result<AskArg, String> {
    match text {
        "auto" => Ok(AskArg::Auto),
        "prompt" => Ok(AskArg::Prompt),
        "deny" => Ok(AskArg::Deny),
        _ if text.starts_with("wait") => super::parse_ask_wait(text).map(AskArg::Wait),
        _ => Err(format!(
            "`{text}` is not one of auto, prompt, deny, wait[=DURATION]"
        )),
    }
}

pub fn run(global: &Global, args: HookArgs) -> anyhow::Result<Exit> {
    // The value parser admits only known names.
    let client = clients::by_name(&args.client)
        .with_context(|| format!("unknown client `{}`", args.client))?;
    Ok(hook(client, global, &args))
}

/// Waits in the pending queue for the answer to `call_id` and says what the
/// client is to do: run it (approved), or not (rejected, or no answer in
/// time), with its `blocked` result recorded.
fn waited_reply(
    store: &mut Store,
    call_id: &str,
    decision: &gavel::Decision,
    who: &Arc<Principal>,
) -> anyhow::Result<Reply> {
    let blocked = |tool: &str, status: ApprovalStatus| {
        Event::now(
            call_id,
            Some(tool),
            EventBody::Result(ResultRecord::from_result(&ToolResult {
                status: ExecutionStatus::Blocked,
                content: gavel::runner::blocked_content(decision, status),
                exit_code: None,
                duration_ms: 0,
            })),
        )
        .by(Some(who))
    };
    let waited = approvals::wait(store, call_id, approvals::POLL, Some(who), &|tool| {
        vec![blocked(tool, ApprovalStatus::Cancelled)]
    })?;
    let by = waited
        .approver
        .as_deref()
        .map(|a| format!(" by {a}"))
        .unwrap_or_default();
    Ok(match waited.status {
        ApprovalStatus::Approved => Reply::Allow {
            reason: format!(
                "{} (approved{by} via {})",
                clients::decision_reason(decision),
                waited.channel.as_str()
            ),
        },
        ApprovalStatus::Rejected => {
            let tool = store
                .call_events(call_id)?
                .first()
                .and_then(|e| e.tool.clone())
                .unwrap_or_default();
            store.append(&[blocked(&tool, ApprovalStatus::Rejected)])?;
            Reply::Deny {
                reason: format!(
                    "{} (rejected{by} via {}{})",
                    clients::decision_reason(decision),
                    waited.channel.as_str(),
                    waited
                        .reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                ),
            }
        }
        _ => Reply::Deny {
            reason: format!(
                "{} (needs approval: nobody answered in time; cancelled)",
                clients::decision_reason(decision)
            ),
        },
    })
}

/// The exit code of a fatal signal, and what to print on stdout then.
static FATAL_EXIT: AtomicI32 = AtomicI32::new(2);
static FATAL_STDOUT: OnceLock<Vec<u8>> = OnceLock::new();

/// Makes a fatal signal (a crash in C code, an abort, a kill on timeout)
/// end in the client's fail-closed answer rather than a death by signal,
/// which a client could take as "let the call run".
fn fail_closed_on_fatal_signals(client: &dyn Client) {
    let answer = client.fail_closed(None, "internal error: fatal signal");
    let mut stdout = answer.stdout.unwrap_or_default().into_bytes();
    if !stdout.is_empty() {
        stdout.push(b'\n');
    }
    let _ = FATAL_STDOUT.set(stdout);
    FATAL_EXIT.store(i32::from(answer.exit), Ordering::Relaxed);
    extern "C" fn fatal(_: libc::c_int) {
        const MESSAGE: &[u8] = b"gavel: internal error: fatal signal\n";
        let code = FATAL_EXIT.load(Ordering::Relaxed);
        // SAFETY: an atomic load, reading a buffer set before the handler was
        // installed, write(2) and _exit(2) are async-signal-safe.
        unsafe {
            if let Some(out) = FATAL_STDOUT.get() {
                libc::write(1, out.as_ptr().cast(), out.len());
            }
            libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
            libc::_exit(code);
        }
    }
    for signal in [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGABRT,
    ] {
        // SAFETY: a zeroed sigaction with a plain handler; SA_ONSTACK uses the
        // alternate stack Rust's runtime sets up, so a stack overflow lands here too.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = fatal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Runs the hook; whatever happens, the client gets an answer it reads
/// as recorded, or its fail-closed answer.
fn hook(client: &dyn Client, global: &Global, args: &HookArgs) -> Exit {
    fail_closed_on_fatal_signals(client);
    // A panic must not print its multi-line report nor exit with 101, which
    // a client would treat as "let the call run".
    std::panic::set_hook(Box::new(|_| {}));
    let mut text = String::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the hook input from stdin")?;
        let event = parse_event(client, args, &text)?;
        let global = pin_workspace(client, global, &event.context);
        match super::resident::forward(client, &global, args, &text) {
            Some(answer) => Ok(answer),
            None => handle_event(client, &global, args, event),
        }
    }));
    let _ = std::panic::take_hook();
    let answer = match outcome {
        Ok(Ok(answer)) => answer,
        Ok(Err(err)) => fail(client, args, &text, &one_line(&err)),
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let message = format!("internal error: {}", detail.replace('\n', " "));
            fail(client, args, &text, &message)
        }
    };
    let printed = match &answer.stdout {
        Some(line) => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}").and_then(|()| out.flush())
        }
        None => Ok(()),
    };
    if let Some(line) = &answer.stderr {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    if printed.is_err() && answer.exit == 0 {
        let failed = fail(client, args, &text, "cannot write the hook answer");
        let _ = writeln!(std::io::stderr(), "{}", failed.stderr.unwrap_or_default());
        return exit(failed.exit);
    }
    exit(answer.exit)
}

fn exit(code: u8) -> Exit {
    match code {
        0 => Exit::Ok,
        1 => Exit::Failed,
        _ => Exit::Error,
    }
}

/// The client's fail-closed answer for the event `text` names, if it names one.
pub(super) fn fail(client: &dyn Client, args: &HookArgs, text: &str, message: &str) -> Answer {
    let named = serde_json::from_str::<Value>(text).ok().and_then(|v| {
        ["hook_event_name", "hookEventName"]
            .iter()
            .find_map(|field| v.get(*field)?.as_str().map(str::to_owned))
    });
    client.fail_closed(named.or_else(|| args.event.clone()).as_deref(), message)
}

/// The client's event in `text` (named by `--event` when it does not say).
fn parse_event(client: &dyn Client, args: &HookArgs, text: &str) -> anyhow::Result<HookEvent> {
    let mut value: Value =
        serde_json::from_str(text).map_err(|source| HookError::NotJson { source })?;
    if let (Some(event), Some(object)) = (&args.event, value.as_object_mut())
        && !object.contains_key("hook_event_name")
        && !object.contains_key("hookEventName")
    {
        object.insert("hook_event_name".into(), Value::String(event.clone()));
    }
    Ok(client.parse(value)?)
}

/// `global` with the workspace pinned for the whole session: --workspace,
/// else the project the client was started in (its environment variable,
/// or the project it reports), and only then the hook's cwd, which follows
/// the agent's `cd`.
fn pin_workspace(client: &dyn Client, global: &Global, context: &Context) -> Global {
    let mut global = global.clone();
    if global.workspace.is_none() {
        let project = client
            .project_dir_var()
            .and_then(std::env::var_os)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| context.project_dir.as_ref().map(PathBuf::from));
        global.workspace = Some(project.unwrap_or_else(|| PathBuf::from(&context.cwd)));
    }
    global
}

/// Handles one event: the answer for the client.
pub(super) fn handle(
    client: &dyn Client,
    global: &Global,
    args: &HookArgs,
    text: &str,
) -> anyhow::Result<Answer> {
    let event = parse_event(client, args, text)?;
    let global = pin_workspace(client, global, &event.context);
    handle_event(client, &global, args, event)
}

/// Handles a parsed event, `global` with its workspace pinned.
fn handle_event(
    client: &dyn Client,
    global: &Global,
    args: &HookArgs,
    event: HookEvent,
) -> anyhow::Result<Answer> {
    let context = &event.context;
    FATAL_EXIT.store(
        i32::from(client.fail_closed(Some(&context.event), "").exit),
        Ordering::Relaxed,
    );
    let workspace = global.workspace()?;
    // A call is decided by a policy that loads, or nothing is recorded.
    let policy = match event.kind {
        Kind::Pre(_) | Kind::Permission(_) => Some(global.calls_policy(&workspace)?),
        _ => None,
    };
    let mut store = global.open_store()?;
    // A log with nothing in it yet (new, or made by a resident gavel).
    let fresh = store.last_seq()? == 0;
    if let Some(policy) = &policy {
        super::Global::vouch_policy(policy, &store)?;
    }
    let starts_session = matches!(
        event.kind,
        Kind::Lifecycle {
            starts_session: true,
            ..
        }
    );
    // Who made the call: this process's user and host, what the client
    // tells of its session, subagent and version, and, for a decided
    // call, where its policy came from.
    let base = match &policy {
        Some(policy) => global.principal(client.name(), &workspace, policy, &store),
        None => Principal::current(client.name()).with_host_id_beside(store.path()),
    };
    let who = Arc::new(from_context(base, context));
    if fresh && !starts_session {
        store.append(&[mid_session(client, context).by(Some(&who))])?;
    }
    let HookEvent { context, kind } = &event;
    let handling = Handling {
        client,
        global,
        args,
        context,
        workspace,
        who,
    };
    let answer = (|| -> anyhow::Result<Answer> {
        match kind {
            Kind::Pre(call) => handling.pre(
                policy.context("the policy was loaded for this event")?,
                &mut store,
                call,
            ),
            Kind::Permission(call) => handling.permission(
                policy.context("the policy was loaded for this event")?,
                &mut store,
                call,
            ),
            Kind::Post { call, result } => {
                redaction_from_policy(global, &handling.workspace, &mut store);
                let completion = Completion {
                    client,
                    context,
                    call,
                    result,
                    max_input_bytes: global.max_argument_bytes,
                    who: &handling.who,
                };
                match &call.id {
                    Some(id) => completion.complete_by_id(&mut store, id)?,
                    None => completion.complete_by_match(&mut store)?,
                }
                Ok(Answer::ok(None))
            }
            Kind::Batch(calls) => {
                redaction_from_policy(global, &handling.workspace, &mut store);
                for batch in calls {
                    if let Some(id) = &batch.call.id {
                        let rejected = client_approval(client, context, ApprovalStatus::Rejected);
                        store.append_for_call(id, |events| {
                            by(
                                close_declined(id, events, &batch.told, rejected),
                                &handling.who,
                            )
                        })?;
                    }
                }
                Ok(Answer::ok(None))
            }
            Kind::Lifecycle { data, .. } => {
                redaction_from_policy(global, &handling.workspace, &mut store);
                store.append(&[Event::now(
                    &context.session_id,
                    None,
                    EventBody::Lifecycle(LifecycleRecord {
                        event: context.event.clone(),
                        data: data.clone(),
                    }),
                )
                .by(Some(&handling.who))])?;
                Ok(Answer::ok(None))
            }
        }
    })();
    // Each hook is one process: the log it leaves is vouched for by a
    // signed checkpoint, so a cut tail is caught (docs/checkpoints.md).
    if answer.is_ok() {
        super::auto_checkpoint(&mut store, 1);
        global.keep_store(store);
    }
    answer
}

/// One event being handled: from which client, under which options, in
/// which workspace, recorded as whose.
struct Handling<'a> {
    client: &'a dyn Client,
    global: &'a Global,
    args: &'a HookArgs,
    context: &'a Context,
    workspace: gavel::Workspace,
    who: Arc<Principal>,
}

impl Handling<'_> {
    /// A call about to run: decided, recorded write-ahead, and answered
    /// (after a wait in the pending queue, under `--ask wait`).
    fn pre(&self, policy: Policy, store: &mut Store, call: &ToolCall) -> anyhow::Result<Answer> {
        let (client, global, context, who) = (self.client, self.global, self.context, &self.who);
        let workspace = self.workspace.clone();
        store.remember_policy(&policy)?;
        store.set_redaction(policy.redaction());
        let call_id = call.id.clone().unwrap_or_else(new_call_id);
        let request = clients::to_request(client, call, &context.cwd, &call_id);
        // The mapped arguments carry the input's content: a large input
        // is not kept twice, only bound by its digest.
        let recorded = context.client_call(
            client.name(),
            call,
            global.max_argument_bytes.min(INLINE_CLIENT_INPUT),
        );
        // The client's shell runs in the session's cwd: a relative
        // redirect lands there, whatever the pinned workspace root.
        let workspace = match workspace.clone().with_cwd(Path::new(&context.cwd)) {
            Ok(inside_cwd) => inside_cwd,
            Err(_) => workspace,
        };
        let (route, prompt, wait) = self.route(&policy);
        let runner = GovernedRunner::new(policy, workspace, Registry::empty())
            .with_max_argument_bytes(global.max_argument_bytes)
            .with_principal(Principal::clone(who))
            .with_grants(Box::new(approvals::StoreGrants::new(store.path())));
        let decided =
            runner.decide_and_record(&call_id, &request, Some(recorded.clone()), route, store);
        let decision = match decided {
            Ok((_, decision)) => decision,
            Err(err) => {
                let reused = err
                    .0
                    .downcast_ref::<StoreError>()
                    .is_some_and(|e| matches!(e, StoreError::DuplicateCall { .. }));
                if reused {
                    store.append(&[
                        reused_id(context, &call_id, &request.name, recorded).by(Some(who))
                    ])?;
                }
                return Err(err.into());
            }
        };
        let reason = clients::decision_reason(&decision);
        let reply = match decision.action {
            Action::Allow => Reply::Allow { reason },
            Action::Deny => Reply::Deny { reason },
            Action::Ask if wait.is_some() => waited_reply(store, &call_id, &decision, who)?,
            Action::Ask if prompt => Reply::Ask { reason },
            Action::Ask => Reply::Deny {
                reason: clients::needs_approval_reason(&decision, client.name()),
            },
        };
        Ok(client.render(context, &reply))
    }

    /// The client is about to ask its person: recorded, and denied only
    /// where the policy denies.
    fn permission(
        &self,
        policy: Policy,
        store: &mut Store,
        call: &ToolCall,
    ) -> anyhow::Result<Answer> {
        let (client, global, context, who) = (self.client, self.global, self.context, &self.who);
        let workspace = self.workspace.clone();
        store.set_redaction(policy.redaction());
        let request = clients::to_request(client, call, &context.cwd, "permission");
        let runner = GovernedRunner::new(policy, workspace, Registry::empty())
            .with_max_argument_bytes(global.max_argument_bytes);
        let (_, decision) = runner.decide(&request);
        // The client is about to ask a person: gavel answers in the
        // person's place only to deny what its policy denies.
        let reply = match decision.action {
            Action::Deny => Reply::Deny {
                reason: clients::decision_reason(&decision),
            },
            Action::Allow | Action::Ask => Reply::Pass,
        };
        let answered = match reply {
            Reply::Deny { .. } => "denied by gavel",
            _ => "left to the client's own prompt",
        };
        store.append(&[Event::now(
            &context.session_id,
            None,
            EventBody::Lifecycle(LifecycleRecord {
                event: context.event.clone(),
                data: json!({
                    "session_id": context.session_id,
                    "cwd": context.cwd,
                    "turn_id": context.prompt_id,
                    "tool_name": call.tool,
                    "tool_input": call.input,
                    "gavel": {
                        "action": decision.action.as_str(),
                        "rule_id": decision.rule_id,
                        "reason": decision.reason,
                        "answer": answered,
                    },
                }),
            }),
        )
        .by(Some(who))])?;
        Ok(client.render(context, &reply))
    }

    /// Where an ask goes (the pending queue, the client's prompt, or a
    /// refusal), whether the client prompts, and how long a queued call waits.
    fn route(&self, policy: &Policy) -> (AskRoute, bool, Option<std::time::Duration>) {
        let ask = self.args.ask.unwrap_or(match policy.approval_wait() {
            Some(wait) => AskArg::Wait(super::AskWait(Some(wait))),
            None => AskArg::Auto,
        });
        let prompt = match ask {
            AskArg::Deny | AskArg::Wait(_) => false,
            AskArg::Prompt => self.client.can_prompt(self.context, AskMode::Prompt),
            AskArg::Auto => self.client.can_prompt(self.context, AskMode::Deny),
        };
        let wait = match ask {
            AskArg::Wait(wait) => Some(super::hook_wait_for(self.client.name(), wait)),
            _ => None,
        };
        let route = match (prompt, wait) {
            (_, Some(wait)) => AskRoute::Queue {
                until_us: approvals::until_us(wait),
            },
            (true, None) => AskRoute::ClientPrompt {
                approver: self.context.user.clone(),
            },
            (false, None) => AskRoute::Refuse {
                why: format!(
                    "needs approval: {} cannot ask a person from this hook, so gavel refused the call",
                    self.client.name()
                ),
            },
        };
        (route, prompt, wait)
    }
}

/// The note a hook records when it starts a new log mid-session.
fn mid_session(client: &dyn Client, context: &Context) -> Event {
    Event::now(
        &context.session_id,
        None,
        EventBody::Lifecycle(LifecycleRecord {
            event: LOG_STARTED_MID_SESSION.to_owned(),
            data: json!({
                "session_id": context.session_id,
                "client": client.name(),
                "first_event": context.event,
                "detail": "no audit database existed when this hook ran, and the session had already started: what the session did before is not in this log",
            }),
        }),
    )
}

/// The anomaly of a call refused because its id was already used.
fn reused_id(context: &Context, call_id: &str, tool: &str, client: ClientCall) -> Event {
    Event::now(
        call_id,
        Some(tool),
        EventBody::Anomaly(AnomalyRecord {
            anomaly: AnomalyKind::ReusedCallId,
            detail: format!(
                "a new `{}` call came with the id of a call already recorded; gavel refused it",
                client.tool
            ),
            event: context.event.clone(),
            tool_use_id: call_id.to_owned(),
            client,
            mismatched: Vec::new(),
            result: ResultRecord::from_result(&ToolResult {
                status: ExecutionStatus::Blocked,
                content: "refused: reused call id".to_owned(),
                exit_code: None,
                duration_ms: 0,
            }),
        }),
    )
}

/// Who made the call, as far as the client tells: its session, a
/// subagent's id and type, the client's version.
fn from_context(principal: Principal, context: &Context) -> Principal {
    principal
        .with_session(Some(&context.session_id))
        .with_agent(context.agent_id.as_deref(), context.agent_type.as_deref())
        .with_client_version(context.client_version.as_deref())
}

/// Applies the policy's `[redact]` settings to `store`; a policy that does
/// not load leaves the built-in redaction on (the safe side) and is
/// reported by the next pre-event.
fn redaction_from_policy(global: &Global, workspace: &gavel::Workspace, store: &mut Store) {
    if let Ok(policy) = global.policy(workspace) {
        store.set_redaction(policy.redaction());
    }
}
