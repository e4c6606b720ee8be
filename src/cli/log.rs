//! `gavel log` and `gavel stats`: the record, one row per call, and counts.

use std::collections::BTreeMap;
use std::io::Write;

use clap::Args;
use serde_json::{Value, json};

use gavel::archive::format_time;
use gavel::audit::AnomalyKind;
use gavel::listing::{call_text, layer_text, listed_json, who_text};
use gavel::source::{Integrity, RowFrom};
use gavel::store::{CallEntry, CallSummary, LifecycleEntry, Listed};

use super::{Exit, Format, FormatArgs, Global, QueryArgs, refuse_filters, render, warn};

#[derive(Args, Debug)]
pub struct LogArgs {
    #[command(flatten)]
    pub query: QueryArgs,
    /// The newest N calls, newest first
    #[arg(long, value_name = "N", conflicts_with = "limit")]
    pub tail: Option<u64>,
    /// Newest first (with --limit N: the newest N)
    #[arg(long)]
    pub newest_first: bool,
    /// Show the table's times in the local time zone instead of UTC (JSON stays UTC)
    #[arg(long)]
    pub local: bool,
    /// Also list session events (prompts, session starts, stops) among the
    /// calls; in JSON they have `"kind": "lifecycle"`
    #[arg(long)]
    pub events: bool,
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

/// A session event in one line: its name, and a prompt's text.
fn event_text(entry: &LifecycleEntry) -> String {
    match entry.record.data.get("prompt").and_then(Value::as_str) {
        Some(prompt) => format!("{}: {prompt}", entry.record.event),
        None => entry.record.event.clone(),
    }
}

/// A call's status for a table cell, with what its sandbox refused:
/// `failed (2 refused)`.
fn status_cell(call: &CallSummary) -> String {
    match call.refused {
        0 => call.status.clone(),
        n => format!("{} ({n} refused)", call.status),
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
fn short_time(ts_us: i64, local: bool) -> String {
    if local && let Some(time) = chrono::DateTime::<chrono::Utc>::from_timestamp_micros(ts_us) {
        return time
            .with_timezone(&chrono::Local)
            .format("%Y-%m-%d %H:%M:%S")
            .to_string();
    }
    let full = format_time(ts_us);
    full.get(..19).unwrap_or(&full).replace('T', " ")
}

/// The log table's columns, the longest each may be, and which narrow first.
const HEADERS: [&str; 10] = [
    "time (UTC)",
    "id",
    "tool",
    "call",
    "action",
    "rule",
    "approval",
    "status",
    "anomaly",
    "reason",
];
const CAPS: [usize; 10] = [19, 40, 24, 80, 6, 40, 12, 22, 40, 60];
/// Narrowed first, in this order, each to its floor, to fit the terminal:
/// the free text (reason, anomaly), the id to 12, the call to 30, the id
/// and tool, the call to 12. The rule is never narrowed: an id cut short
/// names no rule.
const FLEXIBLE: [(usize, usize); 7] =
    [(9, 20), (8, 10), (1, 12), (3, 30), (1, 8), (2, 10), (3, 12)];
/// Left out, in this order, when the terminal is too narrow for them all:
/// reason, approval and anomaly while the call could not have 30 columns,
/// then status and the rule while it could not have 12.
const DROPPABLE: [(usize, usize); 5] = [(9, 4), (6, 4), (8, 4), (7, 7), (5, 7)];
/// The `who` and `host` columns narrow before any other.
const EXTRA_FLOOR: usize = 12;

fn row(listed: &Listed, narrow: bool, local: bool, wide: bool) -> Vec<String> {
    let mut cells = row_cells(listed, narrow, local);
    if wide {
        let (who, layer) = match listed {
            Listed::Call(CallEntry::Decided(c)) => {
                (who_text(c.request.principal.as_ref()), layer_text(c))
            }
            _ => ("-".to_owned(), "-".to_owned()),
        };
        cells.push(who);
        cells.push(layer);
    }
    cells
}

fn row_cells(listed: &Listed, narrow: bool, local: bool) -> Vec<String> {
    let short_time = |ts_us: i64| {
        let time = short_time(ts_us, local);
        match narrow {
            true => time.get(5..).map(str::to_owned).unwrap_or(time),
            false => time,
        }
    };
    match listed {
        Listed::Call(CallEntry::Decided(c)) => vec![
            short_time(c.ts_us),
            c.call_id.clone(),
            c.tool.clone(),
            call_text(&c.request.arguments),
            c.decision.action.to_string(),
            c.decision.rule_id.clone(),
            c.approval.clone(),
            status_cell(c),
            anomalies_cell(&c.anomalies),
            c.decision.reason.clone(),
        ],
        Listed::Call(CallEntry::Ungoverned(u)) => vec![
            short_time(u.ts_us),
            u.call_id.clone(),
            u.tool.clone(),
            call_text(&u.anomaly.client.input),
            "-".into(),
            "-".into(),
            "-".into(),
            gavel::store::UNGOVERNED.into(),
            anomalies_cell(&u.anomalies),
            u.anomaly.detail.clone(),
        ],
        Listed::Lifecycle(e) => vec![
            short_time(e.ts_us),
            e.session.clone(),
            "-".into(),
            event_text(e),
            "-".into(),
            "-".into(),
            "-".into(),
            "event".into(),
            "-".into(),
            "-".into(),
        ],
    }
}

/// One row of a listing handed to the printer, with where it comes from
/// when the store is central.
pub type Each<'a> = dyn FnMut(Option<RowFrom>, Listed) -> anyhow::Result<()> + 'a;

/// `value` with where its row comes from, for a central store.
fn located(mut value: Value, from: Option<&RowFrom>) -> Value {
    if let (Some(from), Some(object)) = (from, value.as_object_mut()) {
        object.insert(
            "central".into(),
            json!({ "host": from.host, "log": from.log, "seq": from.seq }),
        );
    }
    value
}

pub fn run(global: &Global, args: LogArgs) -> anyhow::Result<Exit> {
    let mut query = args.query.to_query()?;
    if let Some(n) = args.tail {
        query.limit = Some(n);
        query.newest_first = true;
    }
    query.newest_first |= args.newest_first;
    let mut source = global.source(&args.query.schema, args.query.selection(), args.query.read)?;
    let found = checked(source.integrity()?, &query)?;
    let central = source.is_central();
    print_listing(&args, global.wide, central, &found, &mut |each| {
        source.for_each_listed(&query, args.events, &mut *each)
    })
}

/// What the bounded check found, once filters that read rows it could not
/// verify are refused, each warned about on stderr.
fn checked(
    found: Vec<Integrity>,
    query: &gavel::store::AuditQuery,
) -> anyhow::Result<Vec<Integrity>> {
    if let Some(first) = found.first() {
        refuse_filters(first, query)?;
    }
    found.iter().for_each(warn);
    Ok(found)
}

/// Marks a row the chain check could not verify: `"verified": false` in
/// JSON (and `true` for every verified row of a log that does not verify).
fn marked(mut value: Value, listed: &Listed, log: Option<&str>, found: &[Integrity]) -> Value {
    if let (false, Some(object)) = (found.is_empty(), value.as_object_mut()) {
        let seq = match listed {
            Listed::Call(entry) => entry.seq(),
            Listed::Lifecycle(entry) => entry.seq,
        };
        object.insert(
            "verified".into(),
            json!(!Integrity::unverified_in(found, log, seq)),
        );
    }
    value
}

/// The JSON object of one listed row: where it comes from, and whether it verified.
fn row_json(from: Option<RowFrom>, listed: &Listed, found: &[Integrity]) -> Value {
    let log = from.as_ref().map(|f| f.log.as_str());
    marked(
        located(listed_json(listed), from.as_ref()),
        listed,
        log,
        found,
    )
}

/// Prints the listing `rows` hands over, in the format asked for; with
/// `central`, each row says which enrolled host and log it comes from;
/// with `wide`, who made each call.
fn print_listing(
    args: &LogArgs,
    wide: bool,
    central: bool,
    found: &[Integrity],
    rows: &mut dyn FnMut(&mut Each<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<Exit> {
    let events = args.events;
    match args.format.get() {
        Format::Jsonl => {
            rows(&mut |from, listed| {
                let value = row_json(from, &listed, found);
                Ok(render::json(&value)?)
            })?;
        }
        Format::Json => {
            // A JSON array, written element by element as rows are read.
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let mut first = true;
            rows(&mut |from, listed| {
                let value = row_json(from, &listed, found);
                let text = serde_json::to_string_pretty(&value)?;
                write!(out, "{}\n  ", if first { "[" } else { "," })?;
                write!(out, "{}", text.replace('\n', "\n  "))?;
                first = false;
                Ok(())
            })?;
            writeln!(out, "{}", if first { "[]" } else { "\n]" })?;
            out.flush()?;
        }
        Format::Table => {
            // At 100 columns or fewer the year is left out of the time.
            let narrow = render::width().is_some_and(|w| w <= 100);
            let mut headers = HEADERS.to_vec();
            if args.local {
                headers[0] = "time (local)";
            }
            let mut caps = CAPS.to_vec();
            let mut flexible = Vec::new();
            if wide {
                flexible.push((headers.len(), EXTRA_FLOOR));
                headers.push("who");
                caps.push(64);
                flexible.push((headers.len(), EXTRA_FLOOR));
                headers.push("layer, shadows");
                caps.push(64);
            }
            if central {
                flexible.push((headers.len(), EXTRA_FLOOR));
                headers.push("host");
                caps.push(32);
            }
            let stage = flexible.len();
            flexible.extend(FLEXIBLE);
            let droppable: Vec<(usize, usize)> =
                DROPPABLE.iter().map(|&(c, s)| (c, s + stage)).collect();
            let mut table = render::StreamTable::new(&headers, &caps, &flexible, &droppable);
            let mut anomalous = 0u64;
            let mut unverified = 0u64;
            rows(&mut |from, listed| {
                if let Listed::Call(entry) = &listed
                    && !entry.anomalies().is_empty()
                {
                    anomalous += 1;
                }
                let mut cells = row(&listed, narrow, args.local, wide);
                let seq = match &listed {
                    Listed::Call(entry) => entry.seq(),
                    Listed::Lifecycle(entry) => entry.seq,
                };
                if Integrity::unverified_in(found, from.as_ref().map(|f| f.log.as_str()), seq) {
                    unverified += 1;
                    // The call column says so: the row may have been edited.
                    if let Some(cell) = cells.get_mut(1) {
                        cell.insert_str(0, "!! ");
                    }
                }
                if let Some(from) = from {
                    cells.push(from.host);
                }
                Ok(table.push(cells)?)
            })?;
            let rows = table.rows();
            table.finish()?;
            if rows == 0 {
                render::line(if events {
                    "no calls or events match"
                } else {
                    "no calls match"
                })?;
            }
            if anomalous > 0 {
                render::line(&format!(
                    "!! {anomalous} call(s) with anomalies: a tool ran outside what gavel decided, or under a changed MCP tool definition; `gavel audit` lists them"
                ))?;
            }
            if unverified > 0 {
                render::line(&format!(
                    "!! {unverified} row(s) marked `!!` are past the first row that does not verify: they may have been edited (`gavel verify`)"
                ))?;
            }
        }
    }
    Ok(Exit::Ok)
}

pub fn stats(global: &Global, args: StatsArgs) -> anyhow::Result<Exit> {
    let query = args.query.to_query()?;
    let mut source = global.source(&args.query.schema, args.query.selection(), args.query.read)?;
    let found = checked(source.integrity()?, &query)?;
    let stats = source.stats(&query)?;
    // Only what was checked (not with --no-verify) says whether it verified.
    let checked = !args.query.read.no_verify;
    let broken = (!found.is_empty()).then(|| {
        found
            .iter()
            .map(|i| i.text.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    });
    if args.format.is_json() {
        let mut value = serde_json::to_value(&stats)?;
        if let (true, Some(object)) = (checked, value.as_object_mut()) {
            object.insert("verified".into(), json!(broken.is_none()));
        }
        render::json(&value)?;
        return Ok(Exit::Ok);
    }
    if let Some(broken) = &broken {
        render::line(&format!(
            "!! {}: these counts read rows that may have been edited (`gavel verify`)",
            render::escape(broken)
        ))?;
    }
    if stats.calls == 0 {
        render::line("no calls match")?;
        return Ok(Exit::Ok);
    }
    render::line(&format!("{} calls", stats.calls))?;
    if stats.anomalous_calls > 0 {
        render::line(&format!(
            "!! {} call(s) with anomalies: a tool ran outside what gavel decided, or under a changed MCP tool definition; `gavel audit` lists them",
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
