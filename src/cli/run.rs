//! `gavel run`: one call through the whole pipeline, recorded (the
//! adapter is `gavel::frontend::run`, or a resident gavel's).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::Value;

use gavel::approval::TerminalApprover;
use gavel::facts::Workspace;
use gavel::frontend::resident;
use gavel::frontend::run::{govern, outcome_json};
use gavel::runner::new_call_id;
use gavel::session::RunAsks;
use gavel::tools::Registry;
use gavel::{ExecutionStatus, ToolRequest};

use super::{
    Exit, Format, FormatArgs, Global, ToolLimits, hint_tool_typo, parse_json_arg, read_input,
    render,
};

#[derive(Args, Debug)]
#[command(after_help = gavel::request::builtin_tools_help())]
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
    let asks = match (args.approve, args.reject, args.ask) {
        (true, _, _) => RunAsks::Approve,
        (_, true, _) => RunAsks::Reject,
        (_, _, Some(wait)) => RunAsks::Wait(wait.0),
        _ => RunAsks::Prompt,
    };
    let setup = global.setup();
    let context = |workspace: &Workspace| args.limits.context(workspace);
    let outcome = match resident::run::forward(&setup, &request, &call_id, asks, &context) {
        Some(answered) => answered?,
        None => outcome_json(&govern(
            &setup,
            &request,
            &call_id,
            asks,
            Registry::builtin(),
            context,
            || Box::new(TerminalApprover::new()),
        )?),
    };
    finish(&outcome, args.format.get())
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
