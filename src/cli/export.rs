//! `gavel export`: every event with its hashes, as JSON lines or CSV, or
//! the events of the calls a filter selects. The JSON-lines form carries the
//! stored bytes exactly (`gavel::archive`), so `gavel verify --export`
//! checks it with no database.

use std::collections::HashSet;

use clap::{Args, ValueEnum};
use serde_json::{Map, Value};

use gavel::archive::{self, format_time};
use gavel::digest::hex;
use gavel::policy::cases::PolicyCase;
use gavel::store::StoredEvent;

use super::{Exit, Global, QueryArgs, render};

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Jsonl,
    Csv,
    /// OCSF 1.9 events, one per row, each carrying its row (docs/siem.md)
    Ocsf,
    /// OpenTelemetry traces as one OTLP/JSON request: an `execute_tool` span per call
    #[value(name = "otlp-json")]
    OtlpJson,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Output format
    #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
    pub format: ExportFormat,
    /// Write recorded requests with their facts and decisions as `gavel policy test` cases (JSON lines)
    #[arg(long)]
    pub requests: bool,
    /// Which calls to export: only their events (a filtered export is not a
    /// whole chain; its events verify one by one)
    #[command(flatten)]
    pub query: QueryArgs,
}

const CSV_HEADER: &str = "seq,ts,ts_us,kind,call_id,tool,action,rule_id,approval,status,payload,log_id,leaf,chain,user,host,client,session,agent";

/// One CSV field. A field a spreadsheet would run as a formula (`=`, `+`,
/// `-`, `@`, TAB or CR first) is quoted with a leading `'`; the other
/// columns (hashes, `ts_us`) still let anyone recompute every hash from the
/// export.
fn csv_field(text: &str) -> String {
    let guarded;
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        guarded = format!("'{text}");
        &guarded
    } else {
        text
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

fn csv_row(e: &StoredEvent) -> String {
    let opt = |v: &Option<String>| csv_field(v.as_deref().unwrap_or(""));
    [
        e.seq.to_string(),
        format_time(e.ts_us),
        e.ts_us.to_string(),
        csv_field(&e.kind),
        csv_field(&e.call_id),
        opt(&e.tool),
        opt(&e.action),
        opt(&e.rule_id),
        opt(&e.approval),
        opt(&e.status),
        csv_field(&String::from_utf8_lossy(&e.payload)),
        hex(&e.log_id),
        hex(&e.leaf),
        hex(&e.chain),
        opt(&e.user),
        opt(&e.host),
        opt(&e.client),
        opt(&e.session),
        opt(&e.agent),
    ]
    .join(",")
}

/// The central store's cosignatures of this log's checkpoints, kept by
/// `gavel push` in `<db>.cosigned` (one JSON line each); none without it.
fn cosigned_lines(db: &std::path::Path) -> anyhow::Result<Vec<Value>> {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".cosigned");
    match std::fs::read_to_string(db.with_file_name(name)) {
        Ok(text) => Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(err.into()),
    }
}

/// The filters given, as the export header records them; `None` when there are none.
fn selection(query: &QueryArgs) -> anyhow::Result<Option<Value>> {
    let resolved = query.to_query()?;
    let mut out = Map::new();
    for (name, value) in query.given() {
        if let Some(value) = value {
            out.insert(name.replace('-', "_"), value.clone().into());
        }
    }
    if let Some(limit) = query.limit {
        out.insert("limit".into(), limit.into());
    }
    if let Some(since) = resolved.since {
        out.insert("since_us".into(), since.into());
    }
    if let Some(until) = resolved.until {
        out.insert("until_us".into(), until.into());
    }
    Ok((!out.is_empty()).then_some(Value::Object(out)))
}

pub fn run(global: &Global, args: ExportArgs) -> anyhow::Result<Exit> {
    let mut source = global.source(&args.query.schema, args.query.selection(), args.query.read)?;
    if let Some(integrity) = source.opened() {
        super::warn(integrity);
    }
    source
        .reading()?
        .for_each_log(&args.query.to_query()?, |log| {
            run_on(log.store, &args, log.query, log.index == 0)
        })?;
    Ok(Exit::Ok)
}

/// Exports `store` as `args` says, the calls `query` selects; `first`
/// writes the CSV header (a central export writes several logs in turn).
fn run_on(
    store: &gavel::store::Store,
    args: &ExportArgs,
    query: &gavel::store::AuditQuery,
    first: bool,
) -> anyhow::Result<()> {
    if args.requests {
        store.for_each_call(query, |call| -> anyhow::Result<()> {
            let case = PolicyCase {
                name: None,
                call_id: Some(call.call_id),
                tool: call.tool,
                arguments: call.request.arguments,
                facts: Some(call.decision.facts),
                action: call.decision.action,
                rule_id: Some(call.decision.rule_id),
                reason: Some(call.decision.reason),
            };
            Ok(render::json(&serde_json::to_value(&case)?)?)
        })?;
        return Ok(());
    }
    let selection = selection(&args.query)?;
    // A filtered export holds the events of the selected calls.
    let wanted: Option<HashSet<String>> = match &selection {
        None => None,
        Some(_) => {
            let mut ids = HashSet::new();
            store.for_each_call(query, |call| -> anyhow::Result<()> {
                ids.insert(call.call_id);
                Ok(())
            })?;
            Some(ids)
        }
    };
    let header = archive::header_line(store.identity(), selection.clone());
    // OCSF: each checkpoint rides on the event of the row it ends at (one
    // past the log's end, or of no row, on the last row).
    let mut ends: std::collections::BTreeMap<u64, Vec<Value>> = Default::default();
    match args.format {
        ExportFormat::Csv if first => render::line(CSV_HEADER)?,
        ExportFormat::Csv => {}
        ExportFormat::Jsonl => {
            render::json(&header)?;
            if selection.is_none() {
                for row in store.checkpoint_rows()? {
                    render::json(&archive::checkpoint_line(&row))?;
                }
            }
        }
        ExportFormat::OtlpJson => {}
        ExportFormat::Ocsf => {
            if selection.is_none() {
                let last = store.last_seq()?.max(1);
                let cosigned = cosigned_lines(store.path())?;
                for row in store.checkpoint_rows()? {
                    let at = u64::try_from(row.size).unwrap_or(0).clamp(1, last);
                    let line = gavel::ocsf::with_cosignatures(
                        vec![archive::checkpoint_line(&row)],
                        &cosigned,
                    );
                    ends.entry(at).or_default().extend(line);
                }
            }
        }
    }
    // A bar on stderr when it is a terminal and the log is long, as `verify` shows.
    let bar = render::progress_bar(store, "exporting")?;
    let log_format = store.identity().format;
    let switch = store.format_switch()?;
    let mut done = 0u64;
    let mut spans = gavel::otlp::Spans::new();
    let mut finished = Vec::new();
    // OCSF: the line of the row exported just before, for `prev_event`.
    let mut previous: Option<Value> = None;
    store.for_each_event(|event| -> anyhow::Result<()> {
        done += 1;
        if let Some(bar) = &bar
            && done.is_multiple_of(4096)
        {
            bar.set_position(done);
        }
        if wanted
            .as_ref()
            .is_some_and(|ids| !ids.contains(&event.call_id))
        {
            return Ok(());
        }
        match args.format {
            ExportFormat::Csv => render::line(&csv_row(&event))?,
            ExportFormat::Jsonl => render::json(&archive::event_line(
                &event,
                gavel::store::row_format(log_format, switch, event.seq),
            ))?,
            ExportFormat::Ocsf => {
                let line = archive::event_line(
                    &event,
                    gavel::store::row_format(log_format, switch, event.seq),
                );
                let checkpoints = ends.remove(&event.seq).unwrap_or_default();
                render::json(&gavel::ocsf::event(
                    &header,
                    &line,
                    previous.as_ref(),
                    &checkpoints,
                ))?;
                previous = Some(line);
            }
            ExportFormat::OtlpJson => finished.extend(spans.push(&event)),
        }
        Ok(())
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    store.check_unchanged()?;
    if args.format == ExportFormat::OtlpJson {
        finished.extend(spans.finish());
        render::json(&gavel::otlp::to_json(&finished))?;
    }
    Ok(())
}
