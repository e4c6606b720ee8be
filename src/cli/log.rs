//! `gavel log` and `gavel stats`: the record, one row per call, and counts.

use std::collections::BTreeMap;

use clap::Args;
use serde_json::{Value, json};

use gavel::audit::AnomalyKind;
use gavel::store::{CallEntry, CallSummary, UngovernedCall};

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
        "anomalies": call.anomalies,
        "policy": call.decision.policy,
    })
}

/// The JSON object for a call gavel never decided: the same fields, with
/// no decision (`action`, `rule_id`, `approval`, `policy` are null), status
/// `ungoverned`, and what the client reported.
pub fn ungoverned_json(call: &UngovernedCall) -> Value {
    json!({
        "call_id": call.call_id,
        "ts": format_time(call.ts_us),
        "tool": call.tool,
        "arguments": call.anomaly.client.input,
        "action": null,
        "rule_id": null,
        "reason": call.anomaly.detail,
        "approval": null,
        "status": gavel::store::UNGOVERNED,
        "anomalies": call.anomalies,
        "policy": null,
        "client": call.anomaly.client,
        "result": call.anomaly.result,
    })
}

/// The JSON object for one row of the listing.
pub fn entry_json(entry: &CallEntry) -> Value {
    match entry {
        CallEntry::Decided(call) => call_json(call),
        CallEntry::Ungoverned(call) => ungoverned_json(call),
    }
}

/// A call's anomalies for a table cell: `-` when there are none.
pub fn anomalies_cell(anomalies: &[AnomalyKind]) -> String {
    if anomalies.is_empty() {
        return "-".to_owned();
    }
    let names: Vec<&str> = anomalies.iter().map(|a| a.as_str()).collect();
    format!("!! {}", names.join(", "))
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
            store.for_each_entry(&query, |entry| -> anyhow::Result<()> {
                Ok(render::json(&entry_json(&entry))?)
            })?;
            store.check_unchanged()?;
        }
        Format::Json => {
            let mut calls = Vec::new();
            store.for_each_entry(&query, |entry| -> anyhow::Result<()> {
                calls.push(entry_json(&entry));
                Ok(())
            })?;
            store.check_unchanged()?;
            render::json_pretty(&Value::Array(calls))?;
        }
        Format::Table => {
            let mut entries = Vec::new();
            store.for_each_entry(&query, |entry| -> anyhow::Result<()> {
                entries.push(entry);
                Ok(())
            })?;
            store.check_unchanged()?;
            render::table(
                &[
                    "time", "call", "tool", "action", "rule", "approval", "status", "anomaly",
                    "reason",
                ],
                entries.iter().map(|entry| match entry {
                    CallEntry::Decided(c) => [
                        short_time(c.ts_us),
                        c.call_id.clone(),
                        c.tool.clone(),
                        c.decision.action.to_string(),
                        c.decision.rule_id.clone(),
                        c.approval.clone(),
                        c.status.clone(),
                        anomalies_cell(&c.anomalies),
                        render::cell(&c.decision.reason, 60),
                    ],
                    CallEntry::Ungoverned(u) => [
                        short_time(u.ts_us),
                        u.call_id.clone(),
                        u.tool.clone(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        gavel::store::UNGOVERNED.into(),
                        anomalies_cell(&u.anomalies),
                        render::cell(&u.anomaly.detail, 60),
                    ],
                }),
            )?;
            let anomalous = entries.iter().filter(|e| !e.anomalies().is_empty()).count();
            if anomalous > 0 {
                render::line(&format!(
                    "!! {anomalous} call(s) with anomalies: a tool ran outside what gavel decided; `gavel audit` lists them"
                ))?;
            }
        }
    }
    Ok(Exit::Ok)
}

pub fn stats(global: &Global, args: StatsArgs) -> anyhow::Result<Exit> {
    let store = global.read_store()?;
    let stats = store.stats(&args.query.to_query()?)?;
    store.check_unchanged()?;
    if args.format.is_json() {
        render::json(&serde_json::to_value(&stats)?)?;
        return Ok(Exit::Ok);
    }
    render::line(&format!("{} calls", stats.calls))?;
    if stats.anomalous_calls > 0 {
        render::line(&format!(
            "!! {} call(s) with anomalies: a tool ran outside what gavel decided; `gavel audit` lists them",
            stats.anomalous_calls
        ))?;
    }
    let groups: [(&str, &BTreeMap<String, u64>); 6] = [
        ("rule", &stats.by_rule),
        ("action", &stats.by_action),
        ("approval", &stats.by_approval),
        ("status", &stats.by_status),
        ("tool", &stats.by_tool),
        ("anomaly", &stats.by_anomaly),
    ];
    for (name, counts) in groups {
        if counts.is_empty() && name == "anomaly" {
            continue;
        }
        let mut rows: Vec<(&String, &u64)> = counts.iter().collect();
        rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        render::table(
            &[name, "calls"],
            rows.into_iter().map(|(k, v)| [k.clone(), v.to_string()]),
        )?;
    }
    Ok(Exit::Ok)
}
