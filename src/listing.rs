//! The record's calls as `log --json`, `serve` and the evidence report
//! give them: one JSON object per call (decided, ungoverned, or a session
//! event), and the one-line texts of a table's cells.

use serde_json::{Value, json};

use crate::archive::format_time;
use crate::store::{CallEntry, CallSummary, LifecycleEntry, Listed, UngovernedCall};

/// The JSON object for one recorded call.
pub fn call_json(call: &CallSummary) -> Value {
    let mut value = json!({
        "call_id": call.call_id,
        "ts": format_time(call.ts_us),
        "tool": call.tool,
        "arguments": call.request.arguments,
        "action": call.decision.action,
        "rule_id": call.decision.rule_id,
        "reason": call.decision.reason,
        "approval": call.approval,
        "status": call.status,
        "refused": call.refused,
        "anomalies": call.anomalies,
        "policy": call.decision.policy,
        "principal": call.request.principal,
    });
    // MCP calls only: the server and its tool, from the tool name.
    if let Some((server, tool)) = crate::mcp::names::split_tool_name(&call.tool) {
        value["mcp"] = json!({"server": server, "tool": tool});
    }
    // Under layered policies and with shadows only: other logs keep their shape.
    if let Some(layer) = &call.decision.layer {
        value["layer"] = json!(layer);
    }
    if !call.decision.shadow.is_empty() {
        value["shadow"] = json!(call.decision.shadow);
    }
    value
}

/// The deciding layer and the shadows' verdicts, in one cell:
/// `admin; strict: deny strict.no_shell`.
pub fn layer_text(call: &CallSummary) -> String {
    let mut parts: Vec<String> = call.decision.layer.iter().cloned().collect();
    parts.extend(
        call.decision
            .shadow
            .iter()
            .map(|v| format!("{}: {} {}", v.name, v.action, v.rule_id)),
    );
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join("; ")
    }
}

/// Who made a call, in one cell: `user@host via client`, with the subagent.
pub fn who_text(principal: Option<&crate::principal::Principal>) -> String {
    let Some(p) = principal else {
        return "-".to_owned();
    };
    let mut text = format!("{}@{} via {}", p.user, p.host, p.client);
    if let Some(agent) = &p.agent_id {
        text.push_str(&format!(
            " (agent {agent}{})",
            p.agent_type
                .as_deref()
                .map(|t| format!(", {t}"))
                .unwrap_or_default()
        ));
    }
    text
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
        "status": crate::store::UNGOVERNED,
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

/// The JSON object for a session event (`log --events`).
pub fn lifecycle_json(entry: &LifecycleEntry) -> Value {
    json!({
        "kind": "lifecycle",
        "seq": entry.seq,
        "ts": format_time(entry.ts_us),
        "session_id": entry.session,
        "event": entry.record.event,
        "data": entry.record.data,
    })
}

pub fn listed_json(listed: &Listed) -> Value {
    match listed {
        Listed::Call(entry) => entry_json(entry),
        Listed::Lifecycle(entry) => lifecycle_json(entry),
    }
}

/// What a call ran, in one line: a bash command, a path, a pattern (with
/// the folder it searched), a URL or a query; other arguments as compact JSON.
pub fn call_text(arguments: &Value) -> String {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match arguments {
        Value::Object(map) => {
            if let Some(command) = map.get("command") {
                return text(command);
            }
            if let Some(pattern) = map.get("pattern") {
                return match map.get("path").filter(|p| !p.is_null()) {
                    Some(path) => format!("{} in {}", text(pattern), text(path)),
                    None => text(pattern),
                };
            }
            for key in ["path", "file_path", "notebook_path", "url", "query"] {
                if let Some(value) = map.get(key) {
                    return text(value);
                }
            }
            arguments.to_string()
        }
        // An over-large request keeps its arguments' first bytes as a string.
        other => text(other),
    }
}
