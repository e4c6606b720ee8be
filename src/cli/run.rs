//! `gavel run`: one call through the whole pipeline, recorded.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::{Value, json};

use gavel::approval::{Approver, Fixed, TerminalApprover};
use gavel::approvals::{QueueApprover, StoreGrants};
use gavel::runner::new_call_id;
use gavel::store::StoreError;
use gavel::tools::Registry;
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
    let workspace = global.workspace()?;
    let policy = global.calls_policy(&workspace)?;
    let context = args.limits.context(&workspace);
    let runner = GovernedRunner::new(policy, workspace, Registry::builtin())
        .with_max_argument_bytes(global.max_argument_bytes)
        .with_context(context);
    let mut store = global.open_store()?;
    let principal = global.principal("cli", runner.workspace(), runner.policy(), &store);
    let policy_wait = (!args.approve && !args.reject)
        .then(|| runner.policy().approval_wait())
        .flatten()
        .map(|wait| super::AskWait(Some(wait)));
    let mut approver: Box<dyn Approver> = match args.ask.or(policy_wait) {
        Some(wait) => Box::new(
            QueueApprover::opening(
                store.path(),
                global.durability(),
                wait.or(super::DEFAULT_WAIT),
            )
            .with_principal(principal.clone()),
        ),
        None => approver(&args),
    };
    let runner = runner
        .with_principal(principal)
        .with_grants(Box::new(StoreGrants::new(store.path())));
    super::Global::vouch_policy(runner.policy(), &store)?;
    store.remember_policy(runner.policy())?;
    store.set_redaction(runner.policy().redaction());
    let outcome = runner
        .run(&call_id, &request, None, approver.as_mut(), &mut store)
        .map_err(|err| match err.0.downcast_ref::<StoreError>() {
            // Not a broken record: the caller reused an id.
            Some(duplicate @ StoreError::DuplicateCall { .. }) => {
                anyhow::anyhow!("{duplicate}; the call did not run (give another --call-id)")
            }
            _ => anyhow::Error::new(err),
        })?;
    if outcome.record_error.is_none() {
        super::auto_checkpoint(&mut store, 1);
    }
    // The outcome is printed even when its result could not be recorded:
    // a harness must see that the tool ran, not an empty "nothing happened".
    let printed = print_outcome(&outcome, args.format.get());
    if let Some(error) = &outcome.record_error {
        let what = match outcome.result.status {
            ExecutionStatus::Blocked => "the call was blocked (the tool did not run)".to_owned(),
            status => format!("the tool ran ({})", status.as_str()),
        };
        let _ = writeln!(
            std::io::stderr(),
            "gavel: {what} but its result could not be recorded, so the record of call `{}` is incomplete: {}",
            outcome.call_id,
            error.replace('\n', " ")
        );
        printed?;
        return Ok(Exit::Unrecorded);
    }
    printed?;
    Ok(exit_for(outcome.result.status))
}

fn approver(args: &RunArgs) -> Box<dyn Approver> {
    match (args.approve, args.reject) {
        (true, _) => Box::new(Fixed(ApprovalStatus::Approved)),
        (_, true) => Box::new(Fixed(ApprovalStatus::Rejected)),
        _ => Box::new(TerminalApprover::new()),
    }
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

fn print_outcome(outcome: &CallOutcome, format: Format) -> std::io::Result<()> {
    if format != Format::Table {
        // One call: `json` and `jsonl` print the same single object.
        return render::json(&outcome_json(outcome));
    }
    let decision = outcome.decision();
    let mut fields = vec![
        ("call", outcome.call_id.clone()),
        ("tool", outcome.request.name.clone()),
        ("action", decision.action.to_string()),
        ("rule", decision.rule_id.clone()),
        ("reason", decision.reason.clone()),
        ("approval", outcome.resolution.approval.to_string()),
        ("status", outcome.result.status.as_str().to_owned()),
    ];
    if outcome.record_error.is_some() {
        fields.push((
            "record",
            "INCOMPLETE: the result was not written".to_owned(),
        ));
    }
    render::fields(&fields)?;
    if !outcome.result.content.is_empty() {
        render::line(outcome.result.content.trim_end())?;
    }
    Ok(())
}
