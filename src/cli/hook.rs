//! `gavel hook claude-code`: Claude Code's hook command. One JSON object on
//! stdin; for `PreToolUse`, the decision as JSON on stdout.
//!
//! Exit codes follow Claude Code, not gavel's table: 0 when the event was
//! recorded (a `deny` is an answer, not an error), 2 for anything that went
//! wrong, with one line on stderr. For `PreToolUse`, exit 2 blocks the call,
//! and any other non-zero exit would let it run, so nothing here may exit
//! otherwise: errors and panics alike become exit 2 (fail closed). The one
//! exception is `Stop`/`SubagentStop`, where exit 2 would keep the agent
//! working: there an error exits 1, shown to the user.

use std::io::{Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;

use gavel::approval::ApprovalChannel;
use gavel::audit::{
    AnomalyKind, AnomalyRecord, ApprovalRecord, Event, EventBody, INLINE_CLIENT_INPUT, ResultRecord,
};
use gavel::claude_code::{self, HookInput};
use gavel::principal::Principal;
use gavel::store::{Store, StoredEvent};
use gavel::tools::Registry;
use gavel::{Action, ApprovalStatus, ExecutionStatus, GovernedRunner};

use super::{Exit, Global, one_line};

#[derive(Subcommand, Debug)]
pub enum HookCommand {
    /// Claude Code's hook command: decide and record tool calls and session events
    ///
    /// PreToolUse is decided by the current policy against the workspace
    /// (--workspace, else the hook's cwd), recorded write-ahead under the
    /// tool_use_id, and answered with allow, deny or ask (handed to Claude
    /// Code's own prompt, recorded as pending). PostToolUse and
    /// PostToolUseFailure complete that call with its result when their
    /// session, tool and input match it; otherwise (no decision, a mismatch,
    /// a blocked call, a second report) they are recorded as anomalies,
    /// which `gavel audit` lists. Other events
    /// are recorded as lifecycle events. The database is --db, $GAVEL_DB, else
    /// .gavel/audit.db in the workspace. Exit 0 when recorded; exit 2 with
    /// one line on stderr for malformed input, a bad policy or an unwritable
    /// database, which makes Claude Code block the call.
    ClaudeCode,
}

pub fn run(global: &Global, command: HookCommand) -> anyhow::Result<Exit> {
    match command {
        HookCommand::ClaudeCode => Ok(claude_code_hook(global)),
    }
}

/// The exit code of a fatal signal: 2 (block), or 1 for `Stop`, where 2
/// would mean "keep working".
static FATAL_EXIT: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(2);

/// Makes a fatal signal (a crash in C code, an abort, a kill on timeout)
/// exit 2 rather than die by the signal, which Claude Code would take as
/// "let the call run".
fn exit_2_on_fatal_signals() {
    extern "C" fn fatal(_: libc::c_int) {
        const MESSAGE: &[u8] = b"gavel: internal error: fatal signal\n";
        let code = FATAL_EXIT.load(std::sync::atomic::Ordering::Relaxed);
        // SAFETY: an atomic load, write(2) and _exit(2) are async-signal-safe.
        unsafe {
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

/// Runs the hook; whatever happens, the exit is 0 or 2.
fn claude_code_hook(global: &Global) -> Exit {
    exit_2_on_fatal_signals();
    // A panic must not print its multi-line report nor exit with 101, which
    // Claude Code would treat as "let the call run".
    std::panic::set_hook(Box::new(|_| {}));
    let mut text = String::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the hook input from stdin")?;
        handle(global, &text)
    }));
    let _ = std::panic::take_hook();
    let message = match outcome {
        Ok(Ok(())) => return Exit::Ok,
        Ok(Err(err)) => one_line(&err),
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            format!("internal error: {}", detail.replace('\n', " "))
        }
    };
    let _ = writeln!(std::io::stderr(), "gavel: {message}");
    // For Stop, exit 2 means "do not stop": the agent would keep working
    // unrecorded. Exit 1 shows the error and lets the session end.
    let event = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("hook_event_name")?.as_str().map(str::to_owned));
    match event.as_deref() {
        Some("Stop" | "SubagentStop") => Exit::Failed,
        _ => Exit::Error,
    }
}

fn handle(global: &Global, text: &str) -> anyhow::Result<()> {
    let input = HookInput::parse(text)?;
    if matches!(input.session().event.as_str(), "Stop" | "SubagentStop") {
        FATAL_EXIT.store(1, std::sync::atomic::Ordering::Relaxed);
    }

    // The workspace is pinned for the whole session: --workspace, else the
    // project Claude Code was started in ($CLAUDE_PROJECT_DIR), and only
    // then the hook's cwd, which follows the agent's `cd`.
    let mut global = global.clone();
    if global.workspace.is_none() {
        let project = std::env::var_os("CLAUDE_PROJECT_DIR").filter(|d| !d.is_empty());
        global.workspace =
            Some(project.map_or_else(|| PathBuf::from(&input.session().cwd), PathBuf::from));
    }
    let workspace = global.workspace()?;
    match &input {
        HookInput::PreToolUse { session, tool } => {
            let policy = global.policy(&workspace)?;
            let mut store = global.open_store()?;
            store.remember_policy(&policy)?;
            store.set_redaction(policy.redaction());
            let request = claude_code::to_request(tool, &session.cwd);
            // The mapped arguments carry the input's content: a large input
            // is not kept twice, only bound by its digest.
            let client = claude_code::client_call(
                tool,
                &session.session_id,
                global.max_argument_bytes.min(INLINE_CLIENT_INPUT),
            );
            // Claude Code's shell runs in the session's cwd: a relative
            // redirect lands there, whatever the pinned workspace root.
            let workspace = match workspace.clone().with_cwd(Path::new(&session.cwd)) {
                Ok(inside_cwd) => inside_cwd,
                Err(_) => workspace,
            };
            let principal = global.principal("claude-code", &workspace, &policy, &store);
            let runner = GovernedRunner::new(policy, workspace, Registry::empty())
                .with_max_argument_bytes(global.max_argument_bytes)
                .with_principal(with_payload(principal, text));
            let (_, decision) =
                runner.decide_and_record(&tool.tool_use_id, &request, Some(client), &mut store)?;
            let answer = claude_code::pre_tool_use_output(&decision).to_string();
            let mut out = std::io::stdout().lock();
            writeln!(out, "{answer}")
                .and_then(|()| out.flush())
                .context("cannot write the hook answer")?;
        }
        HookInput::PostToolUse { tool, .. } | HookInput::PostToolUseFailure { tool, .. } => {
            let mut store = global.open_store()?;
            redaction_from_policy(&global, &workspace, &mut store);
            let who = payload_principal(&store, text);
            complete(
                &mut store,
                &input,
                &tool.tool_use_id,
                global.max_argument_bytes,
                &who,
                approval_channel(text),
            )?;
        }
        HookInput::Other { session, .. } => {
            let mut store = global.open_store()?;
            redaction_from_policy(&global, &workspace, &mut store);
            let record = claude_code::lifecycle(&input);
            let who = payload_principal(&store, text);
            store.append(&[
                Event::now(&session.session_id, None, EventBody::Lifecycle(record)).by(Some(&who)),
            ])?;
        }
    }
    Ok(())
}

/// What Claude Code's payload says of who made the call: its session, and
/// for a subagent its `agent_id` and `agent_type`.
fn with_payload(principal: Principal, text: &str) -> Principal {
    let payload: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let field = |name: &str| payload.get(name).and_then(serde_json::Value::as_str);
    principal
        .with_session(field("session_id"))
        .with_agent(field("agent_id"), field("agent_type"))
}

/// How a call gavel asked about came to run: Claude Code's prompt allowed
/// it, or its mode (`bypassPermissions`) let it through without one.
fn approval_channel(text: &str) -> ApprovalChannel {
    let payload: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    match payload
        .get("permission_mode")
        .and_then(serde_json::Value::as_str)
    {
        Some("bypassPermissions") => ApprovalChannel::ClientAuto,
        _ => ApprovalChannel::ClientPrompt,
    }
}

/// The principal of a hook event that no policy decides (a completion, a lifecycle event).
fn payload_principal(store: &Store, text: &str) -> std::sync::Arc<Principal> {
    std::sync::Arc::new(with_payload(
        Principal::current("claude-code").with_host_id_beside(store.path()),
        text,
    ))
}

/// Applies the policy's `[redact]` settings to `store`; a policy that does
/// not load leaves the built-in redaction on (the safe side) and is
/// reported by the next `PreToolUse`.
fn redaction_from_policy(global: &Global, workspace: &gavel::Workspace, store: &mut Store) {
    if let Ok(policy) = global.policy(workspace) {
        store.set_redaction(policy.redaction());
    }
}

/// Appends the result of a call Claude Code ran to the call recorded at
/// its `PreToolUse`, or, when it cannot complete that call, an anomaly.
fn complete(
    store: &mut Store,
    input: &HookInput,
    call_id: &str,
    max_input_bytes: u64,
    who: &std::sync::Arc<Principal>,
    channel: ApprovalChannel,
) -> anyhow::Result<()> {
    // Read and append in one transaction, so two reports of one call cannot
    // both complete it.
    let redactor = store.redactor().cloned();
    store.append_for_call(call_id, |events| {
        completion(
            input,
            call_id,
            events,
            max_input_bytes,
            redactor.as_ref(),
            channel,
        )
        .into_iter()
        .map(|event| event.by(Some(who)))
        .collect()
    })?;
    Ok(())
}

/// The events a completion appends, given what is recorded of `call_id`.
///
/// It completes the call (an `ask` that ran was approved in Claude Code's
/// prompt, then the result) only when the call was decided, the
/// completion's session, tool and input digest match the recorded request,
/// and the call has no result yet. Anything else is an anomaly event beside
/// the call, never its result: a call gavel never decided (ran without a
/// decision), a completion that does not match (completion mismatch), a
/// call gavel blocked (ran despite deny), one already complete (second
/// completion).
fn completion(
    input: &HookInput,
    call_id: &str,
    events: &[StoredEvent],
    max_input_bytes: u64,
    redactor: Option<&gavel::redact::Redactor>,
    channel: ApprovalChannel,
) -> Vec<Event> {
    let (session, tool) = match input {
        HookInput::PostToolUse { session, tool, .. }
        | HookInput::PostToolUseFailure { session, tool, .. } => (session, tool),
        _ => return Vec::new(),
    };
    // `tool_result` returns a result for both post events.
    let Some(result) = claude_code::tool_result(input) else {
        return Vec::new();
    };
    let result = ResultRecord::from_result(&result);
    let gavel_tool = claude_code::to_request(tool, &session.cwd).name;
    let client = claude_code::client_call(tool, &session.session_id, max_input_bytes);
    let anomaly = |anomaly: AnomalyKind, detail: String, mismatched: Vec<String>| {
        vec![Event::now(
            call_id,
            Some(&gavel_tool),
            EventBody::Anomaly(AnomalyRecord {
                anomaly,
                detail,
                event: session.event.clone(),
                tool_use_id: tool.tool_use_id.clone(),
                client: client.clone(),
                mismatched,
                result: result.clone(),
            }),
        )]
    };
    let reported = result.status.as_str();
    let Some(decision) = events.iter().find(|e| e.kind == "decision") else {
        if events.iter().any(|e| e.kind == "anomaly") {
            return anomaly(
                AnomalyKind::SecondCompletion,
                format!("another report ({reported}) of a call gavel never decided"),
                Vec::new(),
            );
        }
        return anomaly(
            AnomalyKind::RanWithoutDecision,
            format!(
                "Claude Code reports `{}` ran ({reported}), but gavel recorded no decision for it",
                tool.tool_name
            ),
            Vec::new(),
        );
    };
    let recorded = events.iter().find(|e| e.kind == "request").and_then(|e| {
        match EventBody::from_json("request", &e.payload) {
            Ok(EventBody::Request(request)) => Some(request),
            _ => None,
        }
    });
    let recorded_client = recorded.as_ref().and_then(|r| r.client.as_ref());
    let mut mismatched = claude_code::binding_mismatch(recorded_client, &client);
    // The recorded input had its secrets redacted before it was stored: the
    // completion's input, redacted with the same key, is compared with it.
    if mismatched.iter().any(|m| m == "input")
        && let Some(redactor) = redactor
    {
        let mut redacted = client.clone();
        if redacted.input_sha256.is_none() && redactor.redact_value(&mut redacted.input) > 0 {
            mismatched = claude_code::binding_mismatch(recorded_client, &redacted);
        }
    }
    if !mismatched.is_empty() {
        return anomaly(
            AnomalyKind::CompletionMismatch,
            format!(
                "a completion ({reported}) whose {} differ from the recorded request; the call was not completed",
                mismatched.join(", ")
            ),
            mismatched,
        );
    }
    let approval = events
        .iter()
        .rev()
        .find(|e| e.kind == "approval")
        .and_then(|e| e.approval.as_deref());
    let action = decision.action.as_deref().unwrap_or("?");
    let rule = decision.rule_id.as_deref().unwrap_or("?");
    if let Some(first) = events.iter().find(|e| e.kind == "result") {
        let status = first.status.as_deref().unwrap_or("?");
        if status == ExecutionStatus::Blocked.as_str() {
            return anomaly(
                AnomalyKind::RanDespiteDeny,
                format!(
                    "gavel blocked this call ({action} by `{rule}`, approval {}) and Claude Code reports it ran ({reported})",
                    approval.unwrap_or("not_required")
                ),
                Vec::new(),
            );
        }
        return anomaly(
            AnomalyKind::SecondCompletion,
            format!("the call already has its result ({status}); another report ({reported}) came"),
            Vec::new(),
        );
    }
    let tool = decision.tool.as_deref();
    let mut append = Vec::new();
    if decision.action.as_deref() == Some(Action::Ask.as_str())
        && matches!(approval, None | Some("pending"))
    {
        append.push(Event::now(
            call_id,
            tool,
            EventBody::Approval(ApprovalRecord::new(ApprovalStatus::Approved, channel)),
        ));
    }
    append.push(Event::now(call_id, tool, EventBody::Result(result)));
    append
}
