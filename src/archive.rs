//! The JSON-lines export of a log, and its verification with no database.
//!
//! An export is a header line (the log identity and whether the export is
//! the whole chain), the stored checkpoints (whole exports only), then one
//! line per event carrying its stored bytes exactly: the payload as the
//! string it was stored as, every other column as stored, and the leaf and
//! chain hashes. A whole export verifies as a chain, exactly as the database
//! would; a filtered one leaf by leaf. docs/record-format.md defines the
//! lines and the checks. Pure data and `std::io`: no SQL, no CLI.

use std::io::BufRead;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::chain::{EventFields, Hash, Who, known_format, link};
use crate::checkpoint::VerifierKey;
use crate::digest::hex;
use crate::store::{Checker, Notes, RowCheck, StoredCheckpoint, check_notes};
use crate::store::{
    CheckpointOutcome, CheckpointRow, GivenCheckpoint, LogIdentity, Problem, StoredEvent,
    VerifyReport,
};

/// The `export` tag of a header line.
pub const EXPORT_TAG: &str = "gavel";

/// Why an export could not be read at all (as opposed to being tampered with).
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("cannot read the export: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a gavel export: {detail}")]
    NotAnExport { detail: String },
    #[error(
        "this export is filtered (not the whole chain), so it cannot prove a checkpoint; export the whole log to check one"
    )]
    FilteredCheckpoint,
}

/// The time of `ts_us` as export lines show it (RFC 3339, microseconds, UTC).
pub fn format_time(ts_us: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_micros(ts_us)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
        .unwrap_or_else(|| ts_us.to_string())
}

/// A time a person wrote that gavel cannot read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read time `{0}` (RFC 3339, YYYY-MM-DD, or an age like 30m, 2h, 7d)")]
pub struct TimeError(pub String);

/// Microseconds since the epoch for an RFC 3339 time, a date (midnight
/// UTC), or an age like `2h` (`s`, `m`, `h`, `d`, `w`) before now.
pub fn parse_time(text: &str) -> Result<i64, TimeError> {
    if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(time.with_timezone(&chrono::Utc).timestamp_micros());
    }
    if let Ok(date) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(date
            .and_time(chrono::NaiveTime::MIN)
            .and_utc()
            .timestamp_micros());
    }
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return Err(TimeError(text.to_owned())),
    };
    let count: i64 = number.parse().map_err(|_| TimeError(text.to_owned()))?;
    Ok(chrono::Utc::now().timestamp_micros()
        - count.saturating_mul(seconds).saturating_mul(1_000_000))
}

/// The header line. `selection` is `None` for the whole chain, else the filters used.
pub fn header_line(identity: &LogIdentity, selection: Option<Value>) -> Value {
    json!({
        "record": "header",
        "export": EXPORT_TAG,
        "format": identity.format,
        "log_id": hex(&identity.log_id),
        "origin": identity.origin,
        "genesis": hex(&identity.genesis),
        "whole_chain": selection.is_none(),
        "selection": selection,
    })
}

/// A stored checkpoint's line.
pub fn checkpoint_line(row: &CheckpointRow) -> Value {
    json!({
        "record": "checkpoint",
        "id": row.id,
        "size": row.size,
        "root": hex(&row.root),
        "note": row.note,
    })
}

/// An event's line: every stored column, the payload as stored, and the
/// format the row is encoded in (`crate::store::row_format`).
pub fn event_line(event: &StoredEvent, format: u32) -> Value {
    let mut line = json!({
        "record": "event",
        "format": format,
        "seq": event.seq,
        "ts": format_time(event.ts_us),
        "ts_us": event.ts_us,
        "kind": event.kind,
        "call_id": event.call_id,
        "tool": event.tool,
        "action": event.action,
        "rule_id": event.rule_id,
        "approval": event.approval,
        "status": event.status,
        "payload": event.payload_json(),
        "log_id": hex(&event.log_id),
        "leaf": hex(&event.leaf),
        "chain": hex(&event.chain),
        "user": event.user,
        "host": event.host,
        "client": event.client,
        "session": event.session,
        "agent": event.agent,
    });
    match std::str::from_utf8(&event.payload) {
        Ok(text) => line["payload_raw"] = Value::String(text.to_owned()),
        Err(_) => line["payload_hex"] = Value::String(hex(&event.payload)),
    }
    line
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2)
        || !text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// Whether two JSON values are the same: same types and members, numbers by
/// value (integers exactly; otherwise as 64-bit floats).
/// How deep an export line may nest: a line holds its event's payload one
/// level below the top, and a payload may nest as deep as JSON that gavel
/// reads at all (serde_json's 128 levels), so 128 would refuse a line of an
/// honest log.
const MAX_LINE_DEPTH: usize = 256;

/// An export line as JSON, or null when it is not JSON or nests deeper than
/// [`MAX_LINE_DEPTH`] (counted before parsing, so a hostile line cannot
/// exhaust the stack).
pub(crate) fn read_line(line: &str) -> Value {
    if nesting(line.as_bytes()) > MAX_LINE_DEPTH {
        return Value::Null;
    }
    let mut reader = serde_json::Deserializer::from_str(line);
    reader.disable_recursion_limit();
    Value::deserialize(&mut reader)
        .and_then(|value| reader.end().map(|()| value))
        .unwrap_or(Value::Null)
}

/// The deepest nesting of arrays and objects in a JSON text (strings
/// skipped).
fn nesting(text: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0, false, false);
    for &byte in text {
        match (in_string, escaped, byte) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ if (x.is_f64() || y.is_f64()) => x.as_f64() == y.as_f64(),
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Whether `ts` is checked for this time: years 0001 to 9999.
fn checked_time(ts_us: i64) -> bool {
    // 0001-01-01T00:00:00Z and 10000-01-01T00:00:00Z, in microseconds.
    (-62_135_596_800_000_000..253_402_300_800_000_000).contains(&ts_us)
}

/// An export's header, read.
struct Header {
    log_id: Vec<u8>,
    origin: String,
    /// `None` when the header's `format` is not an integer.
    format: Option<i64>,
    /// The header's `format` as written, for the report.
    format_text: String,
    genesis: Hash,
    whole_chain: bool,
}

fn read_header(value: &Value) -> Result<Header, ArchiveError> {
    let bad = |detail: &str| ArchiveError::NotAnExport {
        detail: detail.to_owned(),
    };
    if value["record"] != "header" || value["export"] != EXPORT_TAG {
        return Err(bad("the first line is not a gavel export header"));
    }
    let log_id = value["log_id"]
        .as_str()
        .and_then(unhex)
        .ok_or_else(|| bad("the header's `log_id` is not hex"))?;
    let genesis = value["genesis"]
        .as_str()
        .and_then(unhex)
        .and_then(|g| Hash::try_from(g.as_slice()).ok())
        .ok_or_else(|| bad("the header's `genesis` is not 32 bytes of hex"))?;
    Ok(Header {
        log_id,
        origin: value["origin"]
            .as_str()
            .ok_or_else(|| bad("the header has no `origin`"))?
            .to_owned(),
        // Not an integer (`"2"`, `2.0`, absent) is no format gavel knows:
        // `unknown_format`, as for `3` (docs/record-format.md).
        format: value["format"].as_i64(),
        format_text: value["format"].to_string(),
        genesis,
        whole_chain: value["whole_chain"]
            .as_bool()
            .ok_or_else(|| bad("the header's `whole_chain` is not true or false"))?,
    })
}

/// One event line, hashed, with every field type-checked. `Err` is a detail
/// for `content_mismatch`, with the line's seq when it has one.
fn check_event(value: &Value, log_id: &[u8]) -> (Option<u64>, Result<RowCheck, String>) {
    let seq = value["seq"].as_u64();
    let checked = (|| {
        let seq = seq.ok_or("its `seq` is not a non-negative integer")?;
        if value["record"] != "event" {
            return Err(format!("seq {seq}: not an event line"));
        }
        // Lines of exports made before format 2 carry no `format`: they are format 1.
        let format = match &value["format"] {
            Value::Null => 1,
            v => match v.as_i64() {
                Some(f) if known_format(f) => f as u32,
                _ => return Err(format!("seq {seq}: `format` is not a known record format")),
            },
        };
        let text = |name: &str| {
            value[name]
                .as_str()
                .ok_or_else(|| format!("seq {seq}: `{name}` is not a string"))
        };
        let optional = |name: &str| match &value[name] {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.as_str())),
            _ => Err(format!("seq {seq}: `{name}` is not a string or null")),
        };
        let hash_field = |name: &str| {
            unhex(text(name)?).ok_or_else(|| format!("seq {seq}: `{name}` is not hex"))
        };
        let ts_us = value["ts_us"]
            .as_i64()
            .ok_or_else(|| format!("seq {seq}: `ts_us` is not an integer"))?;
        let payload: Vec<u8> = match (&value["payload_raw"], &value["payload_hex"]) {
            (Value::String(raw), Value::Null) => raw.as_bytes().to_vec(),
            (Value::Null, Value::String(h)) => {
                unhex(h).ok_or_else(|| format!("seq {seq}: `payload_hex` is not hex"))?
            }
            _ => {
                return Err(format!(
                    "seq {seq}: needs exactly one of `payload_raw` (a string) and `payload_hex`"
                ));
            }
        };
        let parsed: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
        if !same_json(&value["payload"], &parsed) {
            return Err(format!(
                "seq {seq}: `payload` is not what its stored bytes say"
            ));
        }
        if checked_time(ts_us) && value["ts"].as_str() != Some(format_time(ts_us).as_str()) {
            return Err(format!("seq {seq}: `ts` is not the time `ts_us` says"));
        }
        let row_log_id = hash_field("log_id")?;
        let fields = EventFields {
            seq,
            log_id: &row_log_id,
            ts_us,
            kind: text("kind")?,
            call_id: text("call_id")?,
            tool: optional("tool")?,
            action: optional("action")?,
            rule_id: optional("rule_id")?,
            approval: optional("approval")?,
            status: optional("status")?,
            payload: &payload,
            format,
            who: Who {
                user: optional("user")?,
                host: optional("host")?,
                client: optional("client")?,
                session: optional("session")?,
                agent: optional("agent")?,
            },
        };
        if format == 1 && !fields.who.is_empty() {
            return Err(format!(
                "seq {seq}: a format-1 line has provenance columns (they are not hashed there)"
            ));
        }
        let leaf = fields.leaf_hash();
        let stored_leaf = hash_field("leaf")?;
        let chain = hash_field("chain")?;
        Ok(RowCheck::Row {
            seq: i64::try_from(seq).unwrap_or(i64::MAX),
            leaf,
            leaf_matches: stored_leaf == leaf,
            log_id_matches: row_log_id == log_id,
            chain,
            format,
            switch: crate::store::switch_of(fields.kind, fields.payload),
        })
    })();
    (seq, checked)
}

/// The outcome of verifying an export.
#[derive(Debug)]
pub struct ExportReport {
    pub report: VerifyReport,
    /// Whether the export says it is the whole chain (verified as a chain) or
    /// a selection (verified leaf by leaf).
    pub whole_chain: bool,
}

/// Verifies an export read from `input`, with no database: a whole export
/// as a chain from its genesis (and every checkpoint it carries, and
/// `given`), a filtered one leaf by leaf.
pub fn verify_export(
    input: impl BufRead,
    given: Option<GivenCheckpoint<'_>>,
    keys: &[VerifierKey],
) -> Result<ExportReport, ArchiveError> {
    let mut lines = input
        .lines()
        .enumerate()
        .filter_map(|(i, line)| match line {
            Ok(line) if line.trim().is_empty() => None,
            other => Some((i + 1, other)),
        });
    let Some((_, first)) = lines.next() else {
        return Err(ArchiveError::NotAnExport {
            detail: "it is empty".into(),
        });
    };
    let first: Value = serde_json::from_str(&first?).map_err(|e| ArchiveError::NotAnExport {
        detail: format!("the first line is not JSON: {e}"),
    })?;
    let header = read_header(&first)?;
    let whole_chain = header.whole_chain;
    let done = |report: VerifyReport| {
        Ok(ExportReport {
            report,
            whole_chain,
        })
    };
    if !whole_chain && given.is_some() {
        return Err(ArchiveError::FilteredCheckpoint);
    }
    let format = match header.format.filter(|f| known_format(*f)) {
        Some(format) => format,
        None => {
            let mut report = VerifyReport::bad(
                0,
                None,
                Problem::UnknownFormat,
                format!(
                    "the export says record format {}, which this gavel does not know",
                    header.format_text
                ),
            );
            report.signature_checked = !keys.is_empty();
            return done(report);
        }
    };
    let log_format = format;

    // Checkpoint lines come right after the header; the first event ends them.
    let mut stored = Vec::new();
    let mut pending: Option<(usize, Value)> = None;
    for (number, line) in lines.by_ref() {
        let value = read_line(&line?);
        if value["record"] == "checkpoint" {
            stored.push(StoredCheckpoint {
                id: value["id"].as_i64().unwrap_or(-1),
                size: value["size"].as_i64().filter(|n| *n >= 0),
                root: value["root"].as_str().and_then(unhex),
                note: value["note"].as_str().map(str::to_owned),
            });
        } else {
            pending = Some((number, value));
            break;
        }
    }
    let stored_count = stored.len() as u64;
    let finish = |mut report: VerifyReport| {
        report.signature_checked = !keys.is_empty();
        // Checkpoints count only once the identity holds.
        if report.problem != Some(Problem::IdentityMismatch) {
            report.stored_checkpoints = stored_count;
        }
        done(report)
    };
    if !whole_chain && !stored.is_empty() {
        return Err(ArchiveError::NotAnExport {
            detail: "a filtered export carries checkpoints".into(),
        });
    }
    let Notes {
        vouched,
        given: given_cp,
    } = match check_notes(
        &header.origin,
        &header.log_id,
        format as u32,
        &header.genesis,
        given,
        &stored,
        keys,
    ) {
        Ok(notes) => notes,
        Err(report) => return finish(*report),
    };

    let events = pending
        .into_iter()
        .map(Ok)
        .chain(lines.map(|(number, line)| line.map(|line| (number, read_line(&line)))));
    if whole_chain {
        let mut checker = Checker::new(header.genesis, &vouched, false, format as u32);
        for item in events {
            let (number, value) = item?;
            let row = match check_event(&value, &header.log_id) {
                (_, Ok(row)) => row,
                (seq, Err(detail)) => RowCheck::Malformed {
                    seq: seq.map_or(checker.rows() as i64 + 1, |s| {
                        i64::try_from(s).unwrap_or(i64::MAX)
                    }),
                    detail: if value["record"] == "event" {
                        detail
                    } else {
                        format!("line {number} is not an event line")
                    },
                },
            };
            if let Some(mut report) = checker.row(row) {
                report.checkpoint = given_cp.as_ref().map(|cp| CheckpointOutcome {
                    origin: cp.origin.clone(),
                    size: cp.size,
                    holds: false,
                });
                return finish(report);
            }
        }
        return finish(checker.finish(&vouched, given_cp.as_ref()));
    }

    // A selection: each row on its own; a link only where the row before is present.
    let mut rows = 0u64;
    let mut previous: Option<(u64, Vec<u8>)> = None;
    for item in events {
        let (number, value) = item?;
        let (seq, checked) = check_event(&value, &header.log_id);
        let at = seq.unwrap_or(previous.as_ref().map_or(1, |p| p.0 + 1));
        let bad = |problem, detail| VerifyReport::bad(rows, Some(at), problem, detail);
        let row = match checked {
            Ok(row) if value["record"] == "event" => row,
            Ok(_) => {
                return finish(bad(
                    Problem::ContentMismatch,
                    format!("line {number} is not an event line"),
                ));
            }
            Err(detail) => return finish(bad(Problem::ContentMismatch, detail)),
        };
        let RowCheck::Row {
            leaf,
            leaf_matches,
            log_id_matches,
            chain,
            format,
            ..
        } = row
        else {
            unreachable!("check_event returns rows or an error")
        };
        if i64::from(format) < log_format {
            return finish(bad(
                Problem::ContentMismatch,
                format!(
                    "seq {at} is given in format {format}, older than the log's format {}",
                    log_format
                ),
            ));
        }
        if previous.as_ref().is_some_and(|p| at <= p.0) || at == 0 {
            return finish(bad(
                Problem::SeqGap,
                format!(
                    "seq {at} does not follow seq {}",
                    previous.map_or(0, |p| p.0)
                ),
            ));
        }
        if !log_id_matches {
            return finish(bad(
                Problem::LogIdMismatch,
                format!("seq {at} belongs to another log"),
            ));
        }
        if !leaf_matches {
            return finish(bad(
                Problem::ContentMismatch,
                format!("seq {at} does not match its leaf hash: a field was changed"),
            ));
        }
        let before = match &previous {
            _ if at == 1 => Some(header.genesis.to_vec()),
            Some((p, chain)) if *p + 1 == at => Some(chain.clone()),
            _ => None,
        };
        if let Some(before) = before
            && Hash::try_from(before.as_slice()).map_or(true, |b| chain != link(&b, &leaf))
        {
            return finish(bad(
                Problem::ChainBreak,
                format!("seq {at} does not link to the row before it"),
            ));
        }
        rows += 1;
        previous = Some((at, chain));
    }
    finish(VerifyReport {
        ok: true,
        rows,
        first_bad_seq: None,
        problem: None,
        detail: None,
        head: None,
        checkpoint: None,
        signature_checked: false,
        stored_checkpoints: 0,
        root: None,
        frontier: None,
        blocks: None,
    })
}

/// What an export holds, to be read as a log (`source::Location::Export`):
/// its identity, stored checkpoints and events, each as stored. Read, not
/// verified: [`verify_export`] says whether they are what was recorded.
#[derive(Debug)]
pub struct Contents {
    /// The log's identity; an export does not carry the log's creation
    /// time, so `created_us` is 0.
    pub identity: LogIdentity,
    /// `(size, root, note, created_us)`, created 0.
    pub checkpoints: Vec<crate::store::CheckpointCopy>,
    pub events: Vec<StoredEvent>,
}

/// Reads an export's lines into [`Contents`]; a line that is not a header,
/// checkpoint or event line of the documented types is an error naming it.
pub fn read_export(input: impl BufRead) -> Result<Contents, ArchiveError> {
    let bad = |detail: String| ArchiveError::NotAnExport { detail };
    let mut lines = input.lines().enumerate();
    let mut next = || -> Result<Option<(usize, Value)>, ArchiveError> {
        for (i, line) in lines.by_ref() {
            let line = line?;
            if !line.trim().is_empty() {
                return Ok(Some((i + 1, read_line(&line))));
            }
        }
        Ok(None)
    };
    let Some((_, first)) = next()? else {
        return Err(bad("it is empty".into()));
    };
    let header = read_header(&first)?;
    let format = header
        .format
        .filter(|f| known_format(*f))
        .ok_or_else(|| bad(format!("record format {} is unknown", header.format_text)))?;
    let mut contents = Contents {
        identity: LogIdentity {
            log_id: header.log_id,
            origin: header.origin,
            format: format as u32,
            created_us: 0,
            genesis: header.genesis,
        },
        checkpoints: Vec::new(),
        events: Vec::new(),
    };
    while let Some((number, value)) = next()? {
        let read = match value["record"].as_str() {
            Some("checkpoint") => checkpoint_copy(&value).map(|c| contents.checkpoints.push(c)),
            Some("event") => stored_event(&value).map(|e| contents.events.push(e)),
            _ => Err("not a checkpoint or event line".to_owned()),
        };
        read.map_err(|detail| bad(format!("line {number}: {detail}")))?;
    }
    Ok(contents)
}

fn checkpoint_copy(value: &Value) -> Result<crate::store::CheckpointCopy, String> {
    let size = value["size"].as_i64().filter(|n| *n >= 0);
    let root = value["root"].as_str().and_then(unhex);
    let note = value["note"].as_str();
    match (size, root, note) {
        (Some(size), Some(root), Some(note)) => Ok((size, root, note.to_owned(), 0)),
        _ => Err("a checkpoint needs `size`, `root` (hex) and `note`".into()),
    }
}

/// An event line as the row it copies.
fn stored_event(value: &Value) -> Result<StoredEvent, String> {
    let text = |name: &str| {
        value[name]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("`{name}` is not a string"))
    };
    let optional = |name: &str| match &value[name] {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(format!("`{name}` is not a string or null")),
    };
    let bytes = |name: &str| unhex(&text(name)?).ok_or_else(|| format!("`{name}` is not hex"));
    let payload = match (&value["payload_raw"], &value["payload_hex"]) {
        (Value::String(raw), Value::Null) => raw.as_bytes().to_vec(),
        (Value::Null, Value::String(_)) => bytes("payload_hex")?,
        _ => return Err("needs exactly one of `payload_raw` and `payload_hex`".into()),
    };
    Ok(StoredEvent {
        seq: value["seq"].as_u64().ok_or("`seq` is not a number")?,
        log_id: bytes("log_id")?,
        ts_us: value["ts_us"].as_i64().ok_or("`ts_us` is not a number")?,
        kind: text("kind")?,
        call_id: text("call_id")?,
        tool: optional("tool")?,
        action: optional("action")?,
        rule_id: optional("rule_id")?,
        approval: optional("approval")?,
        status: optional("status")?,
        payload,
        leaf: bytes("leaf")?,
        chain: bytes("chain")?,
        user: optional("user")?,
        host: optional("host")?,
        client: optional("client")?,
        session: optional("session")?,
        agent: optional("agent")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_payload_copies_compare_by_json_value() {
        let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        assert!(same_json(
            &parse(r#"{"a":1,"b":[1.5]}"#),
            &parse(r#"{"b":[1.5],"a":1.0}"#)
        ));
        assert!(!same_json(&parse("1"), &parse("true")));
        assert!(!same_json(&parse("-1"), &parse("18446744073709551615")));
        assert!(same_json(
            &parse("18446744073709551615"),
            &parse("18446744073709551615")
        ));
        assert!(!same_json(
            &parse(r#"{"a":1}"#),
            &parse(r#"{"a":1,"b":null}"#)
        ));
        assert!(!same_json(&parse(r#""1""#), &parse("1")));
    }

    #[test]
    fn time_copies_are_checked_only_in_four_digit_years() {
        assert_eq!(
            format_time(1_764_676_800_000_000),
            "2025-12-02T12:00:00.000000Z"
        );
        assert!(checked_time(0));
        assert!(!checked_time(i64::MAX));
        assert!(!checked_time(-62_135_596_800_000_001));
    }

    #[test]
    fn an_export_reads_back_as_the_rows_it_copies() {
        let identity = LogIdentity {
            log_id: vec![1; 16],
            origin: "gavel/0101".into(),
            format: 2,
            created_us: 5,
            genesis: [7; 32],
        };
        let event = StoredEvent {
            seq: 1,
            log_id: vec![1; 16],
            ts_us: 1_764_676_800_000_000,
            kind: "request".into(),
            call_id: "c1".into(),
            tool: Some("bash".into()),
            action: None,
            rule_id: None,
            approval: None,
            status: None,
            payload: b"{\"a\":1}".to_vec(),
            leaf: vec![2; 32],
            chain: vec![3; 32],
            user: Some("u".into()),
            host: None,
            client: None,
            session: None,
            agent: None,
        };
        let mut text = header_line(&identity, None).to_string() + "\n\n";
        text += &(event_line(&event, 2).to_string() + "\n");
        let read = read_export(text.as_bytes()).unwrap();
        assert_eq!(read.identity.log_id, identity.log_id);
        assert_eq!(read.identity.genesis, identity.genesis);
        assert_eq!(read.events.len(), 1);
        let got = &read.events[0];
        assert_eq!(
            (
                &got.call_id,
                &got.tool,
                &got.payload,
                &got.leaf,
                &got.chain,
                &got.user
            ),
            (
                &event.call_id,
                &event.tool,
                &event.payload,
                &event.leaf,
                &event.chain,
                &event.user
            )
        );
        let broken = text.replace("\"leaf\":\"", "\"leaf\":\"zz");
        let err = read_export(broken.as_bytes()).unwrap_err();
        assert!(
            err.to_string().contains("line 3: `leaf` is not hex"),
            "{err}"
        );
        assert!(read_export(&b"not json\n"[..]).is_err());
    }

    #[test]
    fn an_export_without_a_header_is_not_an_export() {
        let err = verify_export(std::io::Cursor::new("{\"seq\":1}\n"), None, &[]).unwrap_err();
        assert!(matches!(err, ArchiveError::NotAnExport { .. }), "{err}");
        let err = verify_export(std::io::Cursor::new(""), None, &[]).unwrap_err();
        assert!(matches!(err, ArchiveError::NotAnExport { .. }), "{err}");
    }
}
