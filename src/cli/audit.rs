//! `gavel audit`: the anomalies of the record, loudly. Every tool a client
//! reports it ran that did not complete a governed call (ran despite deny,
//! ran without a decision, a completion that did not match its request, a
//! second completion) is listed, and any one of them makes the command exit
//! 4, so a CI job or a reviewer cannot miss it. The chain is verified first,
//! in full: a log that does not verify makes `audit` exit 1 whatever else it
//! finds, and says so in every format, since its anomalies (or their
//! absence) could have been edited.

use std::collections::HashSet;

use clap::Args;
use serde_json::{Value, json};

use gavel::audit::AnomalyKind;
use gavel::store::{AnomalyEntry, AuditQuery};

use super::query::{format_time, parse_time};
use super::verify::verify_store;
use super::{Exit, Format, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// Only anomalies at or after TIME: RFC 3339, a date (2026-12-01), or an age (30m, 2h, 7d)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only anomalies before TIME (same forms as --since)
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Only anomalies of this tool
    #[arg(long)]
    pub tool: Option<String>,
    /// Only anomalies of this call
    #[arg(long = "call", value_name = "ID")]
    pub call: Option<String>,
    /// With a central --db (postgres://…): only the logs of this enrolled host
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// With a central --db (postgres://…): only this log, by its id (hex) or
    /// a prefix of its origin [default: every log]
    #[arg(long, value_name = "ID|ORIGIN")]
    pub log: Option<String>,
    #[command(flatten)]
    pub schema: super::query::SchemaArg,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// Where the findings of a central store's log come from.
pub struct FromLog<'a> {
    /// The enrolled host.
    pub host: &'a str,
    /// The log's origin.
    pub log: &'a str,
}

/// What auditing one log found: how its chain verified (`None`: it
/// verifies), and its anomalies, in seq order.
pub struct Audited {
    pub broken: Option<Value>,
    pub findings: Vec<Value>,
}

/// One finding: an anomaly event, or (logs written by an older gavel) a
/// call with more than one result.
fn finding_json(entry: &AnomalyEntry) -> Value {
    json!({
        "seq": entry.seq,
        "ts": format_time(entry.ts_us),
        "call_id": entry.call_id,
        "tool": entry.tool,
        "anomaly": entry.record.anomaly,
        "detail": entry.record.detail,
        "action": entry.action,
        "rule_id": entry.rule_id,
        "recorded_status": entry.recorded_status,
        "reported_status": entry.record.result.status,
        "event": entry.record.event,
        "client": entry.record.client,
        "mismatched": entry.record.mismatched,
    })
}

pub fn run(global: &Global, args: AuditArgs) -> anyhow::Result<Exit> {
    #[cfg(feature = "postgres")]
    if let Some(url) = global.central_url() {
        return super::central_read::audit(&url, &args);
    }
    if args.host.is_some() || args.log.is_some() {
        anyhow::bail!("--host and --log pick logs of a central store; give --db postgres://…");
    }
    args.schema.check_local()?;
    let store = global.read_store()?;
    let audited = audit_store(&store, &args)?;
    print(&args, false, &[(None, audited)])
}

/// Verifies `store`'s chain in full, then gathers its anomalies (those
/// `args` selects).
pub fn audit_store(store: &gavel::store::Store, args: &AuditArgs) -> anyhow::Result<Audited> {
    let integrity = verify_store(store, None)?;
    let broken = (!integrity.ok).then(|| {
        json!({
            "problem": integrity.problem.map(|p| p.as_str()),
            "first_bad_seq": integrity.first_bad_seq,
            "detail": integrity.detail,
        })
    });
    let query = AuditQuery {
        since: args.since.as_deref().map(parse_time).transpose()?,
        until: args.until.as_deref().map(parse_time).transpose()?,
        tool: args.tool.clone(),
        call_id: args.call.clone(),
        ..AuditQuery::default()
    };
    let anomalies = store.anomalies(&query)?;
    let mut findings: Vec<Value> = anomalies.iter().map(finding_json).collect();
    // Older logs appended a second result instead of an anomaly.
    let seen: HashSet<&str> = anomalies.iter().map(|a| a.call_id.as_str()).collect();
    let legacy_query = AuditQuery {
        anomalies: true,
        ..query.clone()
    };
    let mut legacy = Vec::new();
    store.for_each_call(&legacy_query, |call| -> anyhow::Result<()> {
        if !seen.contains(call.call_id.as_str()) {
            for kind in &call.anomalies {
                legacy.push(json!({
                    "seq": call.seq,
                    "ts": format_time(call.ts_us),
                    "call_id": call.call_id,
                    "tool": call.tool,
                    "anomaly": kind,
                    "detail": "the call has more than one result (recorded by an older gavel); its first result stands",
                    "action": call.decision.action,
                    "rule_id": call.decision.rule_id,
                    "recorded_status": call.status,
                    "reported_status": null,
                    "event": null,
                    "client": null,
                    "mismatched": [],
                }));
            }
        }
        Ok(())
    })?;
    store.check_unchanged()?;
    findings.extend(legacy);
    // Older logs kept reports they could not attach as lifecycle notes.
    if query.tool.is_none() && query.mcp_server.is_none() && query.mcp_tool.is_none() {
        for (seq, ts_us, id, data) in store.legacy_completion_notes(&query)? {
            let note = data["note"].as_str().unwrap_or_default();
            let anomaly = if note.contains("no call") {
                AnomalyKind::RanWithoutDecision
            } else {
                AnomalyKind::SecondCompletion
            };
            findings.push(json!({
                "seq": seq,
                "ts": format_time(ts_us),
                "call_id": id,
                "tool": data["tool_name"],
                "anomaly": anomaly,
                "detail": format!("recorded by an older gavel as a lifecycle note: {note}"),
                "action": null,
                "rule_id": null,
                "recorded_status": null,
                "reported_status": data["result"]["status"],
                "event": null,
                "client": null,
                "mismatched": [],
            }));
        }
    }
    findings.sort_by_key(|f| f["seq"].as_u64().unwrap_or(0));
    Ok(Audited { broken, findings })
}

/// `value` with where it comes from, for a central store's log.
fn located(mut value: Value, from: Option<&FromLog<'_>>) -> Value {
    if let (Some(from), Some(object)) = (from, value.as_object_mut()) {
        object.insert(
            "central".into(),
            json!({ "host": from.host, "log": from.log }),
        );
    }
    value
}

/// Prints what auditing each log found (one log, unnamed, for a local
/// store; each named by host and log for a `central` one), and the exit
/// code: 1 when any chain does not verify, else 4 when there are
/// anomalies, else 0.
pub fn print(
    args: &AuditArgs,
    central: bool,
    audited: &[(Option<FromLog<'_>>, Audited)],
) -> anyhow::Result<Exit> {
    let broken: Vec<Value> = audited
        .iter()
        .filter_map(|(from, a)| a.broken.clone().map(|b| located(b, from.as_ref())))
        .collect();
    let findings: Vec<Value> = audited
        .iter()
        .flat_map(|(from, a)| {
            a.findings
                .iter()
                .map(move |f| located(f.clone(), from.as_ref()))
        })
        .collect();
    match args.format.get() {
        Format::Jsonl => {
            for broken in &broken {
                render::json(&json!({ "integrity": broken }))?;
            }
            for finding in &findings {
                render::json(finding)?;
            }
        }
        Format::Json => {
            let mut value = json!({
                "ok": findings.is_empty() && broken.is_empty(),
                "verified": broken.is_empty(),
                "integrity": broken.first(),
                "anomalies": findings,
            });
            if central {
                value["logs"] = audited
                    .iter()
                    .filter_map(|(from, a)| {
                        let from = from.as_ref()?;
                        Some(json!({
                            "host": from.host,
                            "log": from.log,
                            "verified": a.broken.is_none(),
                            "integrity": a.broken,
                            "anomalies": a.findings.len(),
                        }))
                    })
                    .collect();
            }
            render::json(&value)?;
        }
        Format::Table => {
            for broken in &broken {
                let place = match (&broken["central"]["log"], &broken["central"]["host"]) {
                    (Value::String(log), Value::String(host)) => {
                        format!("log {log} of host `{host}`")
                    }
                    _ => "the log".to_owned(),
                };
                render::line(&format!(
                    "!! {} does not verify: {} at seq {}: {}; what follows may have been edited (`gavel verify` for details)",
                    render::escape(&place),
                    broken["problem"].as_str().unwrap_or("unknown"),
                    broken["first_bad_seq"],
                    render::escape(broken["detail"].as_str().unwrap_or_default())
                ))?;
            }
            if central && audited.is_empty() {
                render::line("no logs match")?;
            } else if findings.is_empty() && !broken.is_empty() {
                render::line("No anomalies found in the rows as they are now.")?;
            } else if findings.is_empty() {
                render::line(
                    "No anomalies: every tool run reported to gavel completed a call it decided.",
                )?;
            } else {
                let text = |v: &Value| match v {
                    Value::Null => "-".to_owned(),
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let mut headers = vec![
                    "seq", "time", "call", "tool", "anomaly", "decided", "recorded", "reported",
                    "detail",
                ];
                if central {
                    headers.insert(0, "host");
                }
                // Narrow: recorded and reported status, then time, seq and tool go first.
                let shift = usize::from(central);
                let droppable: Vec<usize> = [6, 7, 1, 0, 3].iter().map(|i| i + shift).collect();
                render::table_dropping(
                    &headers,
                    findings.iter().map(|f| {
                        let decided = match (&f["action"], &f["rule_id"]) {
                            (Value::String(a), Value::String(r)) => format!("{a} {r}"),
                            _ => "never".to_owned(),
                        };
                        let host = central.then(|| text(&f["central"]["host"]));
                        host.into_iter().chain([
                            text(&f["seq"]),
                            text(&f["ts"]).get(..19).unwrap_or("").replace('T', " "),
                            text(&f["call_id"]),
                            text(&f["tool"]),
                            text(&f["anomaly"]),
                            decided,
                            text(&f["recorded_status"]),
                            text(&f["reported_status"]),
                            render::cell(&text(&f["detail"]), 80),
                        ])
                    }),
                    &droppable,
                )?;
                render::line(&format!(
                    "!! {} anomal{}: tools ran outside what gavel decided, or under a changed MCP tool definition",
                    findings.len(),
                    if findings.len() == 1 { "y" } else { "ies" }
                ))?;
            }
        }
    }
    Ok(if !broken.is_empty() {
        Exit::Failed
    } else if findings.is_empty() {
        Exit::Ok
    } else {
        Exit::Anomalies
    })
}
