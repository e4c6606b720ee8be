//! The record as OCSF events (schema 1.9), for security teams' SIEMs.
//!
//! One OCSF event per chained row of the log, so each event carries its own
//! link of the chain: a `bash` call's rows are Process Activity (1007), the
//! file tools' File System Activity (1001), every other tool (MCP tools
//! included) and the rows of no call API Activity (6003). Each event holds
//! the export line of its row (`gavel export`, docs/record-format.md) under
//! `unmapped.gavel`, the export's header under `unmapped.gavel_export`, and
//! on the row a checkpoint ends at, that checkpoint's line under
//! `unmapped.gavel_checkpoints`: everything else in the event is a pure
//! function of those ([`event`]), so `gavel verify --ocsf` rebuilds the
//! export, verifies it as one, and then checks that every event is what
//! its row maps to. docs/siem.md has the field mapping.

use serde_json::{Map, Value, json};

/// The OCSF schema version the events follow.
pub const OCSF_VERSION: &str = "1.9.0";

/// The profiles each event applies.
const PROFILES: [&str; 3] = ["ai_operation", "security_control", "record_integrity"];

/// `algorithm_id` of SHA-256 in OCSF's `fingerprint`.
const SHA256: u64 = 3;

/// An OCSF class of event: uid, name, category uid and name.
struct Class {
    uid: u64,
    name: &'static str,
    category: u64,
    category_name: &'static str,
}

const PROCESS: Class = Class {
    uid: 1007,
    name: "Process Activity",
    category: 1,
    category_name: "System Activity",
};
const FILE: Class = Class {
    uid: 1001,
    name: "File System Activity",
    category: 1,
    category_name: "System Activity",
};
const API: Class = Class {
    uid: 6003,
    name: "API Activity",
    category: 6,
    category_name: "Application Activity",
};

/// The class of a row of `tool`, and its activity (id, name).
fn class_of(tool: Option<&str>) -> (Class, u64, &'static str) {
    match tool {
        Some("bash") => (PROCESS, 1, "Launch"),
        Some("read_file" | "glob") => (FILE, 2, "Read"),
        Some("write_file") => (FILE, 1, "Create"),
        Some("edit_file") => (FILE, 3, "Update"),
        _ => (API, 99, "Other"),
    }
}

/// The OCSF event of the export line `line` (an `event` record), in an
/// export whose header is `header`; `previous` is the line of the row
/// before it when the export holds that row (its leaf is the previous
/// event's fingerprint); `checkpoints` are the checkpoint lines of the
/// checkpoints that end at this row.
pub fn event(
    header: &Value,
    line: &Value,
    previous: Option<&Value>,
    checkpoints: &[Value],
) -> Value {
    let text = |key: &str| line[key].as_str();
    let tool = text("tool");
    let kind = text("kind").unwrap_or("");
    let payload = &line["payload"];
    let (class, activity, activity_name) = class_of(tool);
    let seq = line["seq"].as_u64().unwrap_or(0);
    let log_id = text("log_id").unwrap_or("");
    let ts_us = line["ts_us"].as_i64().unwrap_or(0);
    let mut event = Map::new();
    let mut put = |key: &str, value: Value| {
        event.insert(key.to_owned(), value);
    };
    put("class_uid", json!(class.uid));
    put("class_name", json!(class.name));
    put("category_uid", json!(class.category));
    put("category_name", json!(class.category_name));
    put("activity_id", json!(activity));
    put("activity_name", json!(activity_name));
    put("type_uid", json!(class.uid * 100 + activity));
    put(
        "type_name",
        json!(format!("{}: {activity_name}", class.name)),
    );
    put("time", json!(ts_us.div_euclid(1000)));
    put("severity_id", json!(severity(line)));
    put("message", json!(message(kind, tool, line, payload)));
    put(
        "metadata",
        json!({
            "version": OCSF_VERSION,
            "product": {"name": "gavel", "vendor_name": "gavel", "uid": log_id},
            "uid": format!("{log_id}/{seq}"),
            "log_name": header["origin"],
            "event_code": kind,
            "correlation_uid": line["call_id"],
            "profiles": PROFILES,
        }),
    );
    put("actor", actor(line));
    if let Some(client) = text("client") {
        // The client, its version (on the request), the session, the subagent.
        let mut agent = json!({"name": client});
        if let Some(version) = payload["principal"]["client_version"].as_str() {
            agent["version"] = json!(version);
        }
        if let Some(session) = text("session") {
            agent["uid"] = json!(session);
        }
        if let Some(subagent) = text("agent") {
            agent["instance_uid"] = json!(subagent);
        }
        put("ai_agent", agent);
    }
    let host = text("host").unwrap_or("localhost");
    match class.uid {
        1007 => {
            put("device", json!({"hostname": host, "type_id": 0}));
            let mut process = json!({"uid": line["call_id"]});
            if let Some(command) = command(payload) {
                process["cmd_line"] = json!(command);
            }
            put("process", process);
            if let Some(code) = payload["exit_code"].as_i64() {
                put("exit_code", json!(code));
            }
        }
        1001 => {
            put("device", json!({"hostname": host, "type_id": 0}));
            put("file", file(payload, tool));
        }
        _ => {
            put("api", json!({"operation": tool.unwrap_or(kind)}));
            put("src_endpoint", json!({"hostname": host}));
        }
    }
    for (key, value) in control(kind, line, payload) {
        put(key, value);
    }
    if let Some((status_id, status)) = status(kind, payload) {
        put("status_id", json!(status_id));
        put("status", json!(status));
    }
    put(
        "attestation_list",
        json!([attestation(header, line, previous, checkpoints)]),
    );
    // Where this row's receipt is (docs/receipts.md): `gavel receipt CALL_ID`.
    let receipt = json!({
        "call_id": line["call_id"],
        "log": header["origin"],
        "index": seq.saturating_sub(1),
    });
    let mut unmapped = json!({"gavel": line, "gavel_export": header, "gavel_receipt": receipt});
    if !checkpoints.is_empty() {
        unmapped["gavel_checkpoints"] = json!(checkpoints);
    }
    put("unmapped", unmapped);
    Value::Object(event)
}

/// Informational, but Medium for a deny, for a row that reports an
/// anomaly, and for what a sandbox refused.
fn severity(line: &Value) -> u64 {
    if line["action"] == "deny" || line["kind"] == "anomaly" || line["kind"] == "refused" {
        3
    } else {
        1
    }
}

fn message(kind: &str, tool: Option<&str>, line: &Value, payload: &Value) -> String {
    let tool = tool.unwrap_or("-");
    match kind {
        "decision" => format!(
            "{} {tool} by {}: {}",
            line["action"].as_str().unwrap_or(""),
            line["rule_id"].as_str().unwrap_or(""),
            payload["reason"].as_str().unwrap_or("")
        ),
        "approval" => format!("{tool} {}", line["approval"].as_str().unwrap_or("")),
        "result" => format!("{tool} {}", line["status"].as_str().unwrap_or("")),
        "refused" => {
            let attempts: Vec<String> = payload["attempts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| {
                    format!(
                        "{} {} by {}",
                        a["operation"].as_str().unwrap_or(""),
                        a["target"].as_str().unwrap_or(""),
                        a["program"].as_str().unwrap_or("")
                    )
                })
                .collect();
            format!(
                "{tool} refused by sandbox {}: {}",
                payload["profile"].as_str().unwrap_or(""),
                attempts.join("; ")
            )
        }
        other => format!("{other} {tool}"),
    }
}

/// The recorded principal: the user, else gavel itself.
fn actor(line: &Value) -> Value {
    match line["user"].as_str() {
        Some(user) => json!({"user": {"name": user}}),
        None => json!({"app_name": "gavel"}),
    }
}

/// A bash request's command.
fn command(payload: &Value) -> Option<&str> {
    payload["arguments"]["command"].as_str()
}

fn file(payload: &Value, tool: Option<&str>) -> Value {
    let arguments = &payload["arguments"];
    let path = arguments["path"]
        .as_str()
        .or_else(|| arguments["pattern"].as_str());
    match path {
        Some(path) => {
            let name = path.rsplit('/').next().unwrap_or(path);
            json!({"name": name, "path": path, "type_id": 0})
        }
        // Rows after the request do not repeat the path: the call names it.
        None => json!({"name": tool.unwrap_or("-"), "type_id": 0}),
    }
}

/// The `security_control` profile's fields of a decision, approval or result.
fn control(kind: &str, line: &Value, payload: &Value) -> Vec<(&'static str, Value)> {
    let disposition =
        |id: u64, name: &str| vec![("disposition_id", json!(id)), ("disposition", json!(name))];
    match kind {
        "decision" => {
            let (action_id, action, mut fields) = match line["action"].as_str() {
                Some("allow") => (1, "Allowed", disposition(1, "Allowed")),
                Some("deny") => (2, "Denied", disposition(2, "Blocked")),
                _ => (99, "Ask", disposition(14, "Delayed")),
            };
            fields.push(("action_id", json!(action_id)));
            fields.push(("action", json!(action)));
            fields.push((
                "policy",
                json!({
                    "uid": line["rule_id"],
                    "name": payload["policy"]["name"],
                    "version": payload["policy"]["digest"],
                    "desc": payload["reason"],
                }),
            ));
            fields
        }
        "approval" => match line["approval"].as_str() {
            Some("approved") => disposition(8, "Approved"),
            Some("rejected") => disposition(25, "Rejected"),
            Some("pending") => disposition(14, "Delayed"),
            _ => disposition(2, "Blocked"),
        },
        "result" => match line["status"].as_str() {
            Some("succeeded") => disposition(1, "Allowed"),
            Some("blocked") => disposition(2, "Blocked"),
            _ => disposition(27, "Error"),
        },
        "refused" => disposition(2, "Blocked"),
        _ => Vec::new(),
    }
}

/// A result's status: Success, Failure, or Other for a blocked call.
fn status(kind: &str, payload: &Value) -> Option<(u64, &'static str)> {
    (kind == "result").then(|| match payload["status"].as_str() {
        Some("succeeded") => (1, "Success"),
        Some("failed") => (2, "Failure"),
        _ => (99, "Other"),
    })
}

/// The `record_integrity` profile's attestation of a row: its leaf as the
/// fingerprint, the row before as `prev_event`, the log as the chain, and
/// the checkpoints that end here as signatures.
fn attestation(
    header: &Value,
    line: &Value,
    previous: Option<&Value>,
    checkpoints: &[Value],
) -> Value {
    let log_id = line["log_id"].as_str().unwrap_or("");
    let seq = line["seq"].as_u64().unwrap_or(0);
    let mut attestation = json!({
        "uid": format!("{log_id}/{seq}"),
        "chain_uid": log_id,
        "authority_uid": header["origin"],
        "fingerprint": {"algorithm_id": SHA256, "algorithm": "SHA-256", "value": line["leaf"]},
    });
    if seq > 1 {
        let mut prev = json!({"uid": format!("{log_id}/{}", seq - 1)});
        if let Some(previous) = previous.filter(|p| p["seq"].as_u64() == Some(seq - 1)) {
            prev["fingerprint"] = json!({
                "algorithm_id": SHA256,
                "algorithm": "SHA-256",
                "value": previous["leaf"],
            });
        }
        attestation["prev_event"] = prev;
    }
    if !checkpoints.is_empty() {
        attestation["signatures"] = checkpoints
            .iter()
            .map(|c| {
                // A checkpoint the central store cosigned (`<db>.cosigned`).
                let algorithm = if c["cosignature"].is_string() {
                    "Ed25519 (C2SP signed note, cosigned)"
                } else {
                    "Ed25519 (C2SP signed note)"
                };
                json!({
                    "algorithm_id": 99,
                    "algorithm": algorithm,
                    "digest": {"algorithm_id": SHA256, "algorithm": "SHA-256", "value": c["root"]},
                })
            })
            .collect();
    }
    attestation
}

/// The checkpoint lines of an OCSF export: `gavel export`'s, each with the
/// central store's cosignature of it (from `<db>.cosigned`: the line whose
/// `size` and `note` are the checkpoint's) as `cosignature`, where there is
/// one.
pub fn with_cosignatures(mut checkpoints: Vec<Value>, cosigned: &[Value]) -> Vec<Value> {
    for checkpoint in &mut checkpoints {
        if let Some(line) = cosigned
            .iter()
            .find(|c| c["size"] == checkpoint["size"] && c["note"] == checkpoint["note"])
        {
            checkpoint["cosignature"] = line["cosignature"].clone();
        }
    }
    checkpoints
}

/// Verifies the OCSF export (`gavel export --format ocsf`) in the file
/// `path`: the gavel export its events carry is rebuilt (the header of the
/// first event, the checkpoint lines in file order, one event line per
/// event) and verified as an export is ([`crate::archive::verify_export`]);
/// then every event must be exactly what its row maps to, so an edited
/// field is found as a `content_mismatch` at its row. The first problem, by
/// row, is the report's. The file is read three times, line by line, so a
/// copy of any size is checked in constant memory.
pub fn verify(
    path: &std::path::Path,
    given: Option<crate::store::GivenCheckpoint<'_>>,
    keys: &[crate::checkpoint::VerifierKey],
) -> Result<crate::archive::ExportReport, crate::archive::ArchiveError> {
    use crate::archive::ArchiveError;
    // First: the header, and the checkpoint lines the events carry.
    let mut header: Option<Value> = None;
    let mut checkpoints = Vec::new();
    for event in events(path)? {
        let event = event?;
        let unmapped = &event["unmapped"];
        header.get_or_insert_with(|| unmapped["gavel_export"].clone());
        for checkpoint in unmapped["gavel_checkpoints"]
            .as_array()
            .into_iter()
            .flatten()
        {
            // A cosignature rides along; the export's line is the rest.
            let mut checkpoint = checkpoint.clone();
            if let Some(object) = checkpoint.as_object_mut() {
                object.remove("cosignature");
            }
            checkpoints.push(checkpoint);
        }
    }
    let Some(header) = header else {
        return Err(ArchiveError::NotAnExport {
            detail: "it holds no event".into(),
        });
    };
    if !header.is_object() {
        return Err(ArchiveError::NotAnExport {
            detail: "its first event carries no gavel export header (unmapped.gavel_export)".into(),
        });
    }
    // Then: the gavel export they carry, streamed to its verifier.
    let head = std::iter::once(&header)
        .chain(&checkpoints)
        .map(|line| Ok(line.to_string().into_bytes()))
        .collect::<Vec<_>>();
    let rows =
        events(path)?.map(|event| event.map(|e| e["unmapped"]["gavel"].to_string().into_bytes()));
    let reader = std::io::BufReader::new(Lines::new(head.into_iter().chain(rows)));
    let mut outcome = crate::archive::verify_export(reader, given, keys)?;
    // Last: each event as its row maps to, up to the first problem found.
    let limit = outcome.report.first_bad_seq.unwrap_or(u64::MAX);
    let mut previous: Option<Value> = None;
    for (i, event) in events(path)?.enumerate() {
        let event = event?;
        let line = &event["unmapped"]["gavel"];
        let seq = line["seq"].as_u64().unwrap_or(i as u64 + 1);
        if seq >= limit {
            break;
        }
        let carried: Vec<Value> = event["unmapped"]["gavel_checkpoints"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let same_header = event["unmapped"]["gavel_export"] == header;
        if !same_header || event != self::event(&header, line, previous.as_ref(), &carried) {
            let signature_checked = outcome.report.signature_checked;
            outcome.report = crate::store::VerifyReport::bad(
                i as u64,
                Some(seq),
                crate::store::Problem::ContentMismatch,
                format!(
                    "OCSF event {} is not what its gavel row maps to: a field of it was edited",
                    i + 1
                ),
            );
            outcome.report.signature_checked = signature_checked;
            break;
        }
        previous = Some(line.clone());
    }
    Ok(outcome)
}

/// The events of the file at `path`, one per line that is not blank.
fn events(path: &std::path::Path) -> std::io::Result<impl Iterator<Item = std::io::Result<Value>>> {
    use std::io::BufRead;
    let file = std::io::BufReader::new(std::fs::File::open(path)?);
    Ok(file.lines().filter_map(|line| match line {
        Ok(line) if line.trim().is_empty() => None,
        Ok(line) => Some(Ok(crate::archive::read_line(&line))),
        Err(err) => Some(Err(err)),
    }))
}

/// Lines (without their newline) read as one text, each ended by a newline.
struct Lines<I> {
    lines: I,
    current: Vec<u8>,
    at: usize,
}

impl<I> Lines<I> {
    fn new(lines: I) -> Self {
        Lines {
            lines,
            current: Vec::new(),
            at: 0,
        }
    }
}

impl<I: Iterator<Item = std::io::Result<Vec<u8>>>> std::io::Read for Lines<I> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.current.len() {
            match self.lines.next() {
                None => return Ok(0),
                Some(line) => {
                    self.current = line?;
                    self.current.push(b'\n');
                    self.at = 0;
                }
            }
        }
        let n = out.len().min(self.current.len() - self.at);
        out[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
