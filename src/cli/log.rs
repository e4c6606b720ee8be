//! `gavel log` and `gavel stats`: the record, one row per call, and counts.

use std::collections::BTreeMap;

use clap::Args;
use serde_json::{Value, json};

use gavel::store::CallSummary;

use super::query::{QueryArgs, format_time};
use super::{Exit, Format, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct LogArgs {
    #[command(flatten)]
    pub query: QueryArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    pub query: QueryArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// The JSON object for one recorded call.
pub fn call_json(call: &CallSummary) -> Value {
    json!({
        "call_id": call.call_id,
        "ts": format_time(call.ts_us),
        "tool": call.tool,
        "arguments": call.request.arguments,
        "action": call.decision.action,
        "rule_id": call.decision.rule_id,
        "reason": call.decision.reason,
        "approval": call.approval,
        "status": call.status,
        "policy": call.decision.policy,
    })
}

/// `2026-12-02 10:25:05`: the time to the second, for tables.
fn short_time(ts_us: i64) -> String {
    let full = format_time(ts_us);
    full.get(..19).unwrap_or(&full).replace('T', " ")
}

pub fn run(global: &Global, args: LogArgs) -> anyhow::Result<Exit> {
    let store = global.read_store()?;
    let query = args.query.to_query()?;
    match args.format.get() {
        Format::Jsonl => {
            store.for_each_call(&query, |call| -> anyhow::Result<()> {
                Ok(render::json(&call_json(&call))?)
            })?;
        }
        Format::Json => {
            let calls: Vec<Value> = store.calls(&query)?.iter().map(call_json).collect();
            render::json_pretty(&Value::Array(calls))?;
        }
        Format::Table => {
            let calls = store.calls(&query)?;
            render::table(
                &[
                    "time", "call", "tool", "action", "rule", "approval", "status", "reason",
                ],
                calls.iter().map(|c| {
                    [
                        short_time(c.ts_us),
                        c.call_id.clone(),
                        c.tool.clone(),
                        c.decision.action.to_string(),
                        c.decision.rule_id.clone(),
                        c.approval.clone(),
                        c.status.clone(),
                        render::cell(&c.decision.reason, 60),
                    ]
                }),
            )?;
        }
    }
    Ok(Exit::Ok)
}

pub fn stats(global: &Global, args: StatsArgs) -> anyhow::Result<Exit> {
    let store = global.read_store()?;
    let stats = store.stats(&args.query.to_query()?)?;
    if args.format.is_json() {
        render::json(&serde_json::to_value(&stats)?)?;
        return Ok(Exit::Ok);
    }
    render::line(&format!("{} calls", stats.calls))?;
    let groups: [(&str, &BTreeMap<String, u64>); 5] = [
        ("rule", &stats.by_rule),
        ("action", &stats.by_action),
        ("approval", &stats.by_approval),
        ("status", &stats.by_status),
        ("tool", &stats.by_tool),
    ];
    for (name, counts) in groups {
        let mut rows: Vec<(&String, &u64)> = counts.iter().collect();
        rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        render::table(
            &[name, "calls"],
            rows.into_iter().map(|(k, v)| [k.clone(), v.to_string()]),
        )?;
    }
    Ok(Exit::Ok)
}
