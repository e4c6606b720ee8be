//! What `audit` finds in one log: how its chain verifies (in full), and
//! every anomaly the record holds, in seq order, including those an older
//! gavel recorded as a second result or as a lifecycle note.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::archive::format_time;
use crate::audit::AnomalyKind;
use crate::store::{AnomalyEntry, AuditQuery, Store, StoreError, VerifyOptions};

/// What auditing one log found: how its chain verified (`None`: it
/// verifies), and its anomalies, in seq order, each as its JSON object.
pub struct Audited {
    pub broken: Option<Value>,
    pub findings: Vec<Value>,
}

/// One finding: an anomaly event.
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

/// Verifies `store`'s chain in full (telling `progress` how many rows are
/// done), then gathers the anomalies `query` selects (its `since`,
/// `until`, `tool` and `call_id`).
pub fn audit(
    store: &Store,
    query: &AuditQuery,
    progress: &mut dyn FnMut(u64),
) -> Result<Audited, StoreError> {
    let integrity = store.verify(&VerifyOptions::default(), progress)?;
    let broken = (!integrity.ok).then(|| {
        json!({
            "problem": integrity.problem.map(|p| p.as_str()),
            "first_bad_seq": integrity.first_bad_seq,
            "detail": integrity.detail,
        })
    });
    let anomalies = store.anomalies(query)?;
    let mut findings: Vec<Value> = anomalies.iter().map(finding_json).collect();
    // Older logs appended a second result instead of an anomaly.
    let seen: HashSet<&str> = anomalies.iter().map(|a| a.call_id.as_str()).collect();
    let legacy_query = AuditQuery {
        anomalies: true,
        ..query.clone()
    };
    let mut legacy = Vec::new();
    store.for_each_call(&legacy_query, |call| -> Result<(), StoreError> {
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
        for (seq, ts_us, id, data) in store.legacy_completion_notes(query)? {
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
