//! `gavel audit`: the anomalies of the record, loudly. Every tool a client
//! reports it ran that did not complete a governed call (ran despite deny,
//! ran without a decision, a completion that did not match its request, a
//! second completion) is listed, and any one of them makes the command exit
//! 4, so a CI job or a reviewer cannot miss it. The chain is verified first,
//! in full: a log that does not verify makes `audit` exit 1 whatever else it
//! finds, and says so in every format, since its anomalies (or their
//! absence) could have been edited.

use clap::Args;
use serde_json::{Value, json};

use gavel::source::{Audited, CentralLog, Selection, SourceError};
use gavel::store::AuditQuery;

use super::{Exit, Format, FormatArgs, Global, SchemaArg, render};
use gavel::archive::parse_time;

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
    pub schema: SchemaArg,
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn run(global: &Global, args: AuditArgs) -> anyhow::Result<Exit> {
    let selection = Selection {
        log: args.log.clone(),
        host: args.host.clone(),
        enrolled: true,
    };
    let mut source = global.source(&args.schema, selection, Default::default())?;
    if let Some(integrity) = source.opened() {
        super::warn(integrity);
    }
    let query = AuditQuery {
        since: args.since.as_deref().map(parse_time).transpose()?,
        until: args.until.as_deref().map(parse_time).transpose()?,
        tool: args.tool.clone(),
        call_id: args.call.clone(),
        ..AuditQuery::default()
    };
    let mut audited = Vec::new();
    let found = source
        .reading()?
        .for_each_log(&query, |log| -> anyhow::Result<()> {
            let bar = render::progress_bar(log.store, "verifying")?;
            let found = gavel::source::audit(log.store, log.query, &mut |rows| {
                if let Some(bar) = &bar {
                    bar.set_position(rows);
                }
            })?;
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            audited.push((log.from.cloned(), found));
            Ok(())
        });
    if let Err(err) = &found
        && let Some(SourceError::NoLogOfHost { host }) = err.downcast_ref()
    {
        anyhow::bail!(
            "no log of the central store is of the enrolled host `{}`",
            render::escape(host)
        );
    }
    found?;
    print(&args, source.is_central(), &audited)
}

/// `value` with where it comes from, for a central store's log.
fn located(mut value: Value, from: Option<&CentralLog>) -> Value {
    if let (Some(from), Some(object)) = (from, value.as_object_mut()) {
        object.insert(
            "central".into(),
            json!({ "host": from.host, "log": from.origin }),
        );
    }
    value
}

/// Prints what auditing each log found (one log, unnamed, for a local
/// store; each named by host and log for a `central` one), and the exit
/// code: 1 when any chain does not verify, else 4 when there are
/// anomalies, else 0.
fn print(
    args: &AuditArgs,
    central: bool,
    audited: &[(Option<CentralLog>, Audited)],
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
                            "log": from.origin,
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
