//! `gavel run`: one call through the whole pipeline, recorded.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use gavel::approval::{Approver, Fixed, TerminalApprover};
use gavel::approvals::{QueueApprover, StoreGrants};
use gavel::facts::Workspace;
use gavel::runner::new_call_id;
use gavel::store::StoreError;
use gavel::tools::{Registry, ToolContext};
use gavel::{ApprovalStatus, CallOutcome, ExecutionStatus, GovernedRunner, ToolRequest};

use super::{
    Exit, Format, FormatArgs, Global, ToolLimits, hint_tool_typo, parse_json_arg, read_input,
    render,
};

#[derive(Args, Debug)]
#[command(after_help = super::builtin_tools_help())]
pub struct RunArgs {
    /// Tool name
    #[arg(required_unless_present = "request", conflicts_with = "request")]
    pub tool: Option<String>,
    /// The tool's arguments as JSON
    #[arg(required_unless_present = "request")]
    pub args_json: Option<String>,
    /// Read a `tool_use` block from FILE (or `-` for stdin) instead
    #[arg(long, value_name = "FILE")]
    pub request: Option<PathBuf>,
    /// Approve calls the policy asks about, without a prompt
    #[arg(long, conflicts_with = "reject")]
    pub approve: bool,
    /// Reject calls the policy asks about, without a prompt
    #[arg(long)]
    pub reject: bool,
    /// `wait[=DURATION]`: an asked call waits in the pending queue until `gavel approve` or
    /// `gavel reject` answers it from another terminal, or DURATION ends (default 10m;
    /// then cancelled, cause timeout) [default: the policy's `[approval] wait`, if any]
    #[arg(long, value_name = "wait[=DURATION]", value_parser = super::parse_ask_wait,
          conflicts_with_all = ["approve", "reject"])]
    pub ask: Option<super::AskWait>,
    /// The call id to record [default: generated]
    #[arg(long, value_name = "ID")]
    pub call_id: Option<String>,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub limits: ToolLimits,
}

pub fn run(global: &Global, args: RunArgs) -> anyhow::Result<Exit> {
    let request = match (&args.request, &args.tool, &args.args_json) {
        (Some(path), _, _) => {
            let text = read_input(path)?;
            let block: Value = serde_json::from_str(&text)
                .with_context(|| format!("request `{}` is not valid JSON", path.display()))?;
            ToolRequest::from_block(&block)
                .with_context(|| format!("request `{}`", path.display()))?
        }
        (None, Some(tool), Some(json)) => {
            let call_id = args.call_id.clone().unwrap_or_else(new_call_id);
            ToolRequest::new(call_id, tool, parse_json_arg(json)?)
        }
        _ => anyhow::bail!("give TOOL ARGS_JSON or --request FILE"),
    };
    let call_id = args
        .call_id
        .clone()
        .unwrap_or_else(|| request.tool_use_id.clone());
    hint_tool_typo(&request.name);
    let asks = Asks::of(&args);
    let outcome = match super::resident::run::forward(global, &request, &call_id, asks, args.limits)
    {
        Some(answered) => answered?,
        None => outcome_json(&govern(
            global,
            &request,
            &call_id,
            asks,
            Registry::builtin(),
            |workspace| args.limits.context(workspace),
            || Box::new(TerminalApprover::new()),
        )?),
    };
    finish(&outcome, args.format.get())
}

/// Who answers the call's ask, as `run`'s options say.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Asks {
    /// `--approve`.
    Approve,
    /// `--reject`.
    Reject,
    /// `--ask wait[=DURATION]`: the pending queue.
    Wait(Option<Duration>),
    /// The policy's `[approval] wait` if it has one, else a prompt on the caller's terminal.
    Prompt,
}

impl Asks {
    fn of(args: &RunArgs) -> Self {
        match (args.approve, args.reject, args.ask) {
            (true, _, _) => Asks::Approve,
            (_, true, _) => Asks::Reject,
            (_, _, Some(wait)) => Asks::Wait(wait.0),
            _ => Asks::Prompt,
        }
    }
}

/// One call through the pipeline under `global`'s policy and into its
/// record; `tools` runs it, `prompt` is asked when a person is to answer.
/// Shared by `gavel run` in its own process and a resident gavel answering
/// one (whose tools and prompt are the caller's, across the socket).
pub fn govern(
    global: &Global,
    request: &ToolRequest,
    call_id: &str,
    asks: Asks,
    tools: Registry,
    context: impl FnOnce(&Workspace) -> ToolContext,
    prompt: impl FnOnce() -> Box<dyn Approver>,
) -> anyhow::Result<CallOutcome> {
    let workspace = global.workspace()?;
    let policy = global.calls_policy(&workspace)?;
    let context = context(&workspace);
    let runner = GovernedRunner::new(policy, workspace, tools)
        .with_max_argument_bytes(global.max_argument_bytes)
        .with_context(context);
    let mut store = global.open_store()?;
    let principal = global.principal("cli", runner.workspace(), runner.policy(), &store);
    let wait = match asks {
        Asks::Wait(wait) => Some(wait),
        Asks::Prompt => runner.policy().approval_wait().map(Some),
        Asks::Approve | Asks::Reject => None,
    };
    let mut approver: Box<dyn Approver> = match (wait, asks) {
        (Some(wait), _) => Box::new(
            QueueApprover::opening(
                store.path(),
                global.durability(),
                super::AskWait(wait).or(super::DEFAULT_WAIT),
            )
            .with_principal(principal.clone()),
        ),
        (None, Asks::Approve) => Box::new(Fixed(ApprovalStatus::Approved)),
        (None, Asks::Reject) => Box::new(Fixed(ApprovalStatus::Rejected)),
        (None, _) => prompt(),
    };
    let runner = runner
        .with_principal(principal)
        .with_grants(Box::new(StoreGrants::new(store.path())));
    super::Global::vouch_policy(runner.policy(), &store)?;
    store.remember_policy(runner.policy())?;
    store.set_redaction(runner.policy().redaction());
    let outcome = runner
        .run(call_id, request, None, approver.as_mut(), &mut store)
        .map_err(|err| match err.0.downcast_ref::<StoreError>() {
            // Not a broken record: the caller reused an id.
            Some(duplicate @ StoreError::DuplicateCall { .. }) => {
                anyhow::anyhow!("{duplicate}; the call did not run (give another --call-id)")
            }
            _ => anyhow::Error::new(err),
        })?;
    // The store closes last: the last connection to close folds the
    // write-ahead log back into the database and removes it.
    drop((runner, approver));
    if outcome.record_error.is_none() {
        super::auto_checkpoint(&mut store, 1);
        global.keep_store(store);
    }
    Ok(outcome)
}

/// Prints the outcome (as [`outcome_json`] made it) and says how `run` exits.
fn finish(outcome: &Value, format: Format) -> anyhow::Result<Exit> {
    let text = |field: &str| outcome[field].as_str().unwrap_or_default().to_owned();
    let status: ExecutionStatus = serde_json::from_value(outcome["status"].clone())
        .context("the call's outcome has no execution status")?;
    // The outcome is printed even when its result could not be recorded:
    // a harness must see that the tool ran, not an empty "nothing happened".
    let printed = print_outcome(outcome, format);
    if outcome["recorded"] == Value::Bool(false) {
        let what = match status {
            ExecutionStatus::Blocked => "the call was blocked (the tool did not run)".to_owned(),
            status => format!("the tool ran ({})", status.as_str()),
        };
        let _ = writeln!(
            std::io::stderr(),
            "gavel: {what} but its result could not be recorded, so the record of call `{}` is incomplete: {}",
            text("call_id"),
            text("record_error").replace('\n', " ")
        );
        printed?;
        return Ok(Exit::Unrecorded);
    }
    printed?;
    Ok(exit_for(status))
}

pub fn exit_for(status: ExecutionStatus) -> Exit {
    match status {
        ExecutionStatus::Succeeded => Exit::Ok,
        ExecutionStatus::Failed => Exit::Failed,
        ExecutionStatus::Blocked => Exit::Blocked,
    }
}

/// The JSON object `run` prints for a call.
pub fn outcome_json(outcome: &CallOutcome) -> Value {
    let decision = outcome.decision();
    json!({
        "call_id": outcome.call_id,
        "tool": outcome.request.name,
        "action": decision.action,
        "rule_id": decision.rule_id,
        "reason": decision.reason,
        "approval": outcome.resolution.approval,
        "status": outcome.result.status,
        "content": outcome.result.content,
        "exit_code": outcome.result.exit_code,
        "policy": decision.policy,
        "tool_result": outcome.to_protocol_block(),
        "recorded": outcome.record_error.is_none(),
        "record_error": outcome.record_error,
    })
}

fn print_outcome(outcome: &Value, format: Format) -> std::io::Result<()> {
    if format != Format::Table {
        // One call: `json` and `jsonl` print the same single object.
        return render::json(outcome);
    }
    let text = |field: &str| match &outcome[field] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let mut fields = vec![
        ("call", text("call_id")),
        ("tool", text("tool")),
        ("action", text("action")),
        ("rule", text("rule_id")),
        ("reason", text("reason")),
        ("approval", text("approval")),
        ("status", text("status")),
    ];
    if outcome["recorded"] == Value::Bool(false) {
        fields.push((
            "record",
            "INCOMPLETE: the result was not written".to_owned(),
        ));
    }
    render::fields(&fields)?;
    let content = text("content");
    if !content.is_empty() {
        render::line(content.trim_end())?;
    }
    Ok(())
}
