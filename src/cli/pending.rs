//! `gavel pending`: the calls waiting in the pending queue (`--ask wait`)
//! for `gavel approve` or `gavel reject`.

use clap::Args;
use serde_json::json;

use gavel::approvals::{self, Pending};

use super::{Exit, Format, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct PendingArgs {
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn run(global: &Global, args: PendingArgs) -> anyhow::Result<Exit> {
    let now = chrono::Utc::now().timestamp_micros();
    // No log yet: nothing can be waiting in it.
    let waiting = if global.db_path()?.exists() {
        approvals::pending(&global.read_store()?, now)?
    } else {
        Vec::new()
    };
    match args.format.get() {
        Format::Table if waiting.is_empty() => {
            render::line("no calls are waiting for approval")?;
        }
        Format::Table => render::table(
            &[
                "call",
                "who",
                "tool",
                "arguments",
                "rule",
                "reason",
                "age",
                "left",
            ],
            waiting.iter().map(|p| {
                vec![
                    p.call_id.clone(),
                    who(p),
                    p.tool.clone(),
                    render::cell(&p.arguments.to_string(), 80),
                    p.rule_id.clone(),
                    p.reason.clone(),
                    seconds(now - p.asked_us),
                    seconds(p.until_us - now),
                ]
            }),
        )?,
        Format::Json => render::json(&json!(
            waiting.iter().map(|p| to_json(p, now)).collect::<Vec<_>>()
        ))?,
        Format::Jsonl => {
            for p in &waiting {
                render::json(&to_json(p, now))?;
            }
        }
    }
    Ok(Exit::Ok)
}

fn who(p: &Pending) -> String {
    match (&p.user, &p.client) {
        (Some(user), Some(client)) => format!("{user} via {client}"),
        (Some(user), None) => user.clone(),
        (None, Some(client)) => client.clone(),
        (None, None) => "?".to_owned(),
    }
}

fn seconds(us: i64) -> String {
    format!("{}s", us.max(0) / 1_000_000)
}

fn to_json(p: &Pending, now: i64) -> serde_json::Value {
    let mut value = serde_json::to_value(p).unwrap_or_default();
    value["age_s"] = json!((now - p.asked_us).max(0) / 1_000_000);
    value["left_s"] = json!((p.until_us - now).max(0) / 1_000_000);
    value
}
