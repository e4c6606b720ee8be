//! What a call's result is, in gavel's terms, from what the server (or
//! nobody) answered; and gavel's own `elicitation/create` for an ask. Pure.

use std::time::Duration;

use serde_json::{Value, json};

use super::jsonrpc;
use crate::audit::{AuditError, ExecutionStatus, ToolResult};
use crate::policy::Decision;
use crate::request::ToolRequest;

/// The result of a forwarded call, from the server's response.
pub(super) fn server_result(
    result: Option<&Value>,
    error: Option<&Value>,
    took: Duration,
) -> ToolResult {
    let duration_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
    match (result, error) {
        (Some(result), _) => {
            let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
            ToolResult {
                status: if is_error {
                    ExecutionStatus::Failed
                } else {
                    ExecutionStatus::Succeeded
                },
                content: content_text(result),
                exit_code: None,
                duration_ms,
            }
        }
        (None, error) => {
            let error = error.cloned().unwrap_or(Value::Null);
            ToolResult {
                status: ExecutionStatus::Failed,
                content: format!(
                    "JSON-RPC error {}: {}",
                    error.get("code").map(Value::to_string).unwrap_or_default(),
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                ),
                exit_code: None,
                duration_ms,
            }
        }
    }
}

/// The text of a `tools/call` result: its text blocks, one per line, each
/// other block as its JSON; the whole result's JSON when it has no content.
pub fn content_text(result: &Value) -> String {
    let Some(blocks) = result.get("content").and_then(Value::as_array) else {
        return result.to_string();
    };
    if blocks.is_empty() {
        return result
            .get("structuredContent")
            .map(Value::to_string)
            .unwrap_or_default();
    }
    blocks
        .iter()
        .map(|block| match block.get("text").and_then(Value::as_str) {
            Some(text) if block.get("type").and_then(Value::as_str) == Some("text") => {
                text.to_owned()
            }
            _ => block.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(super) fn failed(content: String, took: Duration) -> ToolResult {
    ToolResult {
        status: ExecutionStatus::Failed,
        content,
        exit_code: None,
        duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
    }
}

pub(super) fn blocked(content: &str) -> ToolResult {
    ToolResult {
        status: ExecutionStatus::Blocked,
        content: content.to_owned(),
        exit_code: None,
        duration_ms: 0,
    }
}

/// The client's answer when the record cannot be written: the call did not run.
pub(super) fn unrecorded(id: &Value, err: &AuditError) -> String {
    jsonrpc::error(
        id,
        jsonrpc::INTERNAL_ERROR,
        &format!("gavel: {err}; the call was not sent to the server"),
    )
}

/// gavel's `elicitation/create` request for an ask: one boolean, `approve`.
pub(super) fn elicitation(
    ask_id: &str,
    request: &ToolRequest,
    decision: &Decision,
    changed: Option<&str>,
) -> String {
    let mut arguments = request.arguments.to_string();
    if arguments.len() > 2000 {
        let mut cut = 2000;
        while !arguments.is_char_boundary(cut) {
            cut -= 1;
        }
        arguments.truncate(cut);
        arguments.push('…');
    }
    let changed = changed
        .map(|detail| format!(" Warning: {detail}."))
        .unwrap_or_default();
    let message = format!(
        "gavel: `{}` needs approval [{}]: {}.{changed} Arguments: {arguments}",
        request.name, decision.rule_id, decision.reason
    );
    jsonrpc::request(
        ask_id,
        "elicitation/create",
        json!({
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "approve": {
                        "type": "boolean",
                        "title": "Run this tool call?",
                        "description": format!("Allow `{}` to run once", request.name),
                    }
                },
                "required": ["approve"],
            },
        }),
    )
}
