//! `gavel check`: decide only. No prompt, no execution, nothing recorded.

use clap::Args;
use serde_json::json;

use gavel::ToolRequest;

use super::{Exit, FormatArgs, Global, hint_tool_typo, parse_json_arg, render};

#[derive(Args, Debug)]
#[command(after_help = gavel::request::builtin_tools_help())]
pub struct CheckArgs {
    /// Tool name (bash, read_file, write_file, edit_file, glob, or any other)
    pub tool: String,
    /// The tool's arguments as JSON
    pub args_json: String,
    /// Show the command's parse, the simple command and rule entry that decided, and,
    /// rule by rule, why each rule before the deciding one did not match
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
    let facts = workspace.facts_with(&request, &policy.path_arguments(&request.name));
    // Decided as `gavel run` would decide it: client `cli`, this user and host.
    let who = gavel::principal::Principal::current("cli");
    let (mut decision, trace) = policy.explain_as(&request, &facts, Some(&who));
    decision.shadow = policy.shadow_verdicts(&request, &facts);
    let matched = policy.entry_matches(&decision.rule_id, &request, &facts);
    let suggestion = hint_tool_typo(&request.name);

    if args.format.is_json() {
        render::json(&json!({
            "tool": request.name,
            "action": decision.action,
            "rule_id": decision.rule_id,
            "reason": decision.reason,
            "policy": decision.policy,
            "layer": decision.layer,
            "layers": decision.layers,
            "shadow": decision.shadow,
            "facts": facts,
            "trace": trace,
            "matched": matched,
            "did_you_mean": suggestion,
        }))?;
        return Ok(Exit::Ok);
    }
    let mut fields = vec![
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
    ];
    if let Some(layer) = &decision.layer {
        fields.push(("layer", gavel::explain::layer_line(layer, &decision.layers)));
    }
    for verdict in &decision.shadow {
        fields.push((
            "shadow",
            format!(
                "{}: {} by {} (not enforced)",
                verdict.name, verdict.action, verdict.rule_id
            ),
        ));
    }
    render::fields(&fields)?;
    if args.explain {
        let mut text = Vec::new();
        if let Some(shell) = &facts.shell {
            text.push("The command runs, as parsed:".to_owned());
            text.extend(gavel::explain::parse_lines(shell));
        }
        text.extend(gavel::explain::match_lines(&matched, &decision.rule_id));
        if !text.is_empty() {
            render::text(&text)?;
        }
        render::table(
            &["#", "rule", "matched", "why"],
            trace.iter().enumerate().map(|(i, t)| {
                [
                    (i + 1).to_string(),
                    match &t.layer {
                        Some(layer) => format!("[{layer}] {}", t.rule_id),
                        None => t.rule_id.clone(),
                    },
                    if t.matched { "yes" } else { "no" }.to_owned(),
                    t.detail.clone(),
                ]
            }),
        )?;
    }
    Ok(Exit::Ok)
}
