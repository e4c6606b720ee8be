//! `gavel check`: decide only. No prompt, no execution, nothing recorded.

use clap::Args;
use serde_json::json;

use gavel::ToolRequest;

use super::{Exit, FormatArgs, Global, hint_tool_typo, parse_json_arg, render};

#[derive(Args, Debug)]
#[command(after_help = super::builtin_tools_help())]
pub struct CheckArgs {
    /// Tool name (bash, read_file, write_file, edit_file, glob, or any other)
    pub tool: String,
    /// The tool's arguments as JSON
    pub args_json: String,
    /// Show, rule by rule, why each rule before the deciding one did not match
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn run(global: &Global, args: CheckArgs) -> anyhow::Result<Exit> {
    let arguments = parse_json_arg(&args.args_json)?;
    let workspace = global.workspace()?;
    let policy = global.policy(&workspace)?;
    let request = ToolRequest::new("check", &args.tool, arguments);
    let facts = workspace.facts(&request);
    let (decision, trace) = policy.explain(&request, &facts);
    let suggestion = hint_tool_typo(&request.name);

    if args.format.is_json() {
        render::json(&json!({
            "tool": request.name,
            "action": decision.action,
            "rule_id": decision.rule_id,
            "reason": decision.reason,
            "policy": decision.policy,
            "facts": facts,
            "trace": trace,
            "did_you_mean": suggestion,
        }))?;
        return Ok(Exit::Ok);
    }
    render::fields(&[
        ("tool", request.name.clone()),
        ("action", decision.action.to_string()),
        ("rule", decision.rule_id.clone()),
        ("reason", decision.reason.clone()),
        (
            "policy",
            format!(
                "{} ({})",
                decision.policy.name,
                render::cell(&decision.policy.digest, 12)
            ),
        ),
    ])?;
    if args.explain {
        render::table(
            &["#", "rule", "matched", "why"],
            trace.iter().enumerate().map(|(i, t)| {
                [
                    (i + 1).to_string(),
                    t.rule_id.clone(),
                    if t.matched { "yes" } else { "no" }.to_owned(),
                    t.detail.clone(),
                ]
            }),
        )?;
    }
    Ok(Exit::Ok)
}
