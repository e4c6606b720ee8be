//! What `gavel export` writes of one log, line by line: the JSON-lines
//! archive (`archive`: the stored bytes exactly, so `gavel verify --export`
//! checks it with no database), CSV, OCSF events (`ocsf`), one OTLP/JSON
//! request (`otlp`), or the recorded requests as `gavel policy test` cases;
//! all of it or the events of the calls a query selects. Pure mapping from
//! stored events; where the lines go is the caller's.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use crate::archive::{self, format_time};
use crate::digest::hex;
use crate::policy::cases::PolicyCase;
use crate::store::{AuditQuery, Store, StoreError, StoredEvent};

/// The format of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Csv,
    /// OCSF 1.9 events, one per row, each carrying its row (docs/siem.md)
    Ocsf,
    /// OpenTelemetry traces as one OTLP/JSON request: an `execute_tool` span per call
    OtlpJson,
}

/// What to export of one log.
pub struct Export<'a> {
    pub format: Format,
    /// The recorded requests as `gavel policy test` cases instead of events.
    pub requests: bool,
    /// The calls to export.
    pub query: &'a AuditQuery,
    /// The filters given, as the header records them; `None` exports the
    /// whole chain (the query then selects every call).
    pub selection: Option<Value>,
    /// Whether the CSV header is written (an export of several logs writes it once).
    pub first: bool,
}

/// One line of an export.
pub enum Line {
    Json(Value),
    Text(String),
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
fn cosigned_lines(db: &std::path::Path) -> std::io::Result<Vec<Value>> {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".cosigned");
    match std::fs::read_to_string(db.with_file_name(name)) {
        Ok(text) => Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(err),
    }
}

/// Exports `store` as `export` says, handing each line to `out` and
/// telling `progress` how many events are read.
pub fn export<E: From<StoreError> + From<std::io::Error>>(
    store: &Store,
    export: &Export<'_>,
    progress: &mut dyn FnMut(u64),
    out: &mut dyn FnMut(Line) -> Result<(), E>,
) -> Result<(), E> {
    let query = export.query;
    if export.requests {
        store.for_each_call(query, |call| -> Result<(), E> {
            // The labels the decision read, so the case decides as it did.
            let session = call
                .request
                .principal
                .as_ref()
                .and_then(|p| p.session.as_deref());
            let history = match (session, call.decision.history_through) {
                (Some(session), Some(through)) => store
                    .session_history_through(session, through, None)?
                    .labels()
                    .map(|(label, _)| crate::policy::cases::CaseEarlier::Label(label.to_owned()))
                    .collect(),
                _ => Vec::new(),
            };
            let case = PolicyCase {
                name: None,
                call_id: Some(call.call_id),
                tool: call.tool,
                arguments: call.request.arguments,
                facts: Some(call.decision.facts),
                who: call
                    .request
                    .principal
                    .as_ref()
                    .map(crate::policy::cases::CaseWho::of),
                history,
                action: call.decision.action,
                rule_id: Some(call.decision.rule_id),
                reason: Some(call.decision.reason),
            };
            out(Line::Json(
                serde_json::to_value(&case).map_err(std::io::Error::from)?,
            ))
        })?;
        return Ok(());
    }
    let selection = export.selection.clone();
    // A filtered export holds the events of the selected calls.
    let wanted: Option<HashSet<String>> = match &selection {
        None => None,
        Some(_) => {
            let mut ids = HashSet::new();
            store.for_each_call(query, |call| -> Result<(), E> {
                ids.insert(call.call_id);
                Ok(())
            })?;
            Some(ids)
        }
    };
    let header = archive::header_line(store.identity(), selection.clone());
    // OCSF: each checkpoint rides on the event of the row it ends at (one
    // past the log's end, or of no row, on the last row).
    let mut ends: BTreeMap<u64, Vec<Value>> = Default::default();
    match export.format {
        Format::Csv if export.first => out(Line::Text(CSV_HEADER.to_owned()))?,
        Format::Csv => {}
        Format::Jsonl => {
            out(Line::Json(header.clone()))?;
            if selection.is_none() {
                for row in store.checkpoint_rows()? {
                    out(Line::Json(archive::checkpoint_line(&row)))?;
                }
            }
        }
        Format::OtlpJson => {}
        Format::Ocsf => {
            if selection.is_none() {
                let last = store.last_seq()?.max(1);
                let cosigned = cosigned_lines(store.path())?;
                for row in store.checkpoint_rows()? {
                    let at = u64::try_from(row.size).unwrap_or(0).clamp(1, last);
                    let line = crate::ocsf::with_cosignatures(
                        vec![archive::checkpoint_line(&row)],
                        &cosigned,
                    );
                    ends.entry(at).or_default().extend(line);
                }
            }
        }
    }
    let log_format = store.identity().format;
    let switch = store.format_switch()?;
    let mut done = 0u64;
    let mut spans = crate::otlp::Spans::new();
    let mut finished = Vec::new();
    // OCSF: the line of the row exported just before, for `prev_event`.
    let mut previous: Option<Value> = None;
    store.for_each_event(|event| -> Result<(), E> {
        done += 1;
        if done.is_multiple_of(4096) {
            progress(done);
        }
        if wanted
            .as_ref()
            .is_some_and(|ids| !ids.contains(&event.call_id))
        {
            return Ok(());
        }
        match export.format {
            Format::Csv => out(Line::Text(csv_row(&event)))?,
            Format::Jsonl => out(Line::Json(archive::event_line(
                &event,
                crate::store::row_format(log_format, switch, event.seq),
            )))?,
            Format::Ocsf => {
                let line = archive::event_line(
                    &event,
                    crate::store::row_format(log_format, switch, event.seq),
                );
                let checkpoints = ends.remove(&event.seq).unwrap_or_default();
                out(Line::Json(crate::ocsf::event(
                    &header,
                    &line,
                    previous.as_ref(),
                    &checkpoints,
                )))?;
                previous = Some(line);
            }
            Format::OtlpJson => finished.extend(spans.push(&event)),
        }
        Ok(())
    })?;
    store.check_unchanged()?;
    if export.format == Format::OtlpJson {
        finished.extend(spans.finish());
        out(Line::Json(crate::otlp::to_json(&finished)))?;
    }
    Ok(())
}
