//! JSON-RPC 2.0 as MCP frames it over stdio: one message per line. Reading
//! a message only classifies it (a request, a notification, a response, or
//! something else); the proxy relays the line it read, never a
//! re-serialization. Building a message is for gavel's own answers.

use serde_json::{Value, json};

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// An error inside gavel or the proxied server (the server exited, hung,
/// or the record could not be written).
pub const INTERNAL_ERROR: i64 = -32603;

/// What one message is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Message<'a> {
    /// A call that expects a response with the same `id`.
    Request {
        id: &'a Value,
        method: &'a str,
        params: Option<&'a Value>,
    },
    /// A call without an `id`: no response.
    Notification {
        method: &'a str,
        params: Option<&'a Value>,
    },
    /// The answer to a request: `result` or `error`.
    Response {
        id: &'a Value,
        result: Option<&'a Value>,
        error: Option<&'a Value>,
    },
    /// A JSON-RPC batch (an array), which MCP 2025-06-18 removed.
    Batch(&'a [Value]),
    /// JSON, but not a JSON-RPC message.
    Other,
}

/// Classifies a parsed message. Lenient where MCP peers are: the
/// `jsonrpc` member is not required.
pub fn classify(value: &Value) -> Message<'_> {
    if let Value::Array(items) = value {
        return Message::Batch(items);
    }
    let Value::Object(object) = value else {
        return Message::Other;
    };
    let id = object.get("id").filter(|id| is_id(id));
    let params = object.get("params");
    match (object.get("method").and_then(Value::as_str), id) {
        (Some(method), Some(id)) => Message::Request { id, method, params },
        (Some(method), None) if !object.contains_key("id") => {
            Message::Notification { method, params }
        }
        (None, Some(id)) if object.contains_key("result") || object.contains_key("error") => {
            Message::Response {
                id,
                result: object.get("result"),
                error: object.get("error"),
            }
        }
        _ => Message::Other,
    }
}

/// Whether `value` is something a JSON-RPC peer may send: a request, a
/// notification, a response, a batch, or an error response for no request
/// (`"id": null`, a peer's parse error). Everything else is not JSON-RPC and
/// is never relayed.
pub fn is_message(value: &Value) -> bool {
    !matches!(classify(value), Message::Other) || is_error_for_no_request(value)
}

/// An error response whose `id` is `null`: the answer to a message its
/// sender could not read, for no request in particular.
pub fn is_error_for_no_request(value: &Value) -> bool {
    value.get("id") == Some(&Value::Null)
        && value.get("error").is_some()
        && value.get("method").is_none()
}

/// The id that a line which is not a JSON-RPC message appears to answer:
/// the `id` of a JSON object that is not one (`{"id": 3}`, no result), or
/// the first `"id": 3` / `"id": "a"` in text that is not JSON at all
/// (`{this is not json, "id": 3`). A guess, for a line that is an error
/// either way: it only says which open request the error goes to.
pub fn stray_id(line: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(line) {
        return value.get("id").filter(|id| is_id(id)).cloned();
    }
    let mut rest = line;
    while let Some(at) = rest.find("\"id\"") {
        rest = &rest[at + 4..];
        let Some(value) = rest.trim_start().strip_prefix(':') else {
            continue;
        };
        let value = value.trim_start();
        if value.starts_with('"') {
            let mut stream = serde_json::Deserializer::from_str(value).into_iter::<String>();
            if let Some(Ok(text)) = stream.next() {
                return Some(Value::String(text));
            }
        } else {
            let end = value
                .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
                .unwrap_or(value.len());
            if let Ok(number) = serde_json::from_str::<serde_json::Number>(&value[..end]) {
                return Some(Value::Number(number));
            }
        }
    }
    None
}

/// A JSON-RPC id: a string or a number (`null` only in error responses,
/// which are not for any one request).
fn is_id(id: &Value) -> bool {
    id.is_string() || id.is_number()
}

/// A key that tells ids apart exactly: `1` and `"1"` are different ids.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// The id as text for the record: a string as is, a number in decimal.
pub fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A response line with `result`.
pub fn response(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error response line.
pub fn error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// A request line gavel sends itself.
pub fn request(id: &str, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A notification line gavel sends itself.
pub fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// A `tools/call` result the model reads as a failed tool call
/// (`isError`), with `text` as its only content.
pub fn tool_error(id: &Value, text: &str) -> String {
    response(
        id,
        json!({"content": [{"type": "text", "text": text}], "isError": true}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> String {
        let value: Value = serde_json::from_str(text).unwrap();
        match classify(&value) {
            Message::Request { method, .. } => format!("request {method}"),
            Message::Notification { method, .. } => format!("notification {method}"),
            Message::Response { result, .. } => {
                format!("response {}", if result.is_some() { "ok" } else { "error" })
            }
            Message::Batch(items) => format!("batch {}", items.len()),
            Message::Other => "other".to_owned(),
        }
    }

    #[test]
    fn messages_are_told_apart_by_method_and_id() {
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            "request ping"
        );
        assert_eq!(
            kind(r#"{"id":"a","method":"tools/call","params":{}}"#),
            "request tools/call"
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            "notification notifications/initialized"
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            "response ok"
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#),
            "response error"
        );
        assert_eq!(kind(r#"[{"id":1,"method":"ping"}]"#), "batch 1");
        // An id that is neither a string nor a number, a method that is not a
        // string, a response without result or error: not JSON-RPC.
        assert_eq!(kind(r#"{"id":{},"method":"ping"}"#), "other");
        assert_eq!(kind(r#"{"id":null,"method":"ping"}"#), "other");
        assert_eq!(kind(r#"{"id":1,"method":7}"#), "other");
        assert_eq!(kind(r#"{"id":1}"#), "other");
        assert_eq!(kind("7"), "other");
    }

    #[test]
    fn what_is_not_json_rpc_is_told_apart_and_its_id_guessed() {
        let message = |text: &str| is_message(&serde_json::from_str(text).unwrap());
        assert!(message(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#
        ));
        assert!(message(r#"{"id":1,"result":{}}"#));
        assert!(message(r#"[{"id":1,"result":{}}]"#));
        assert!(!message(r#"{"id":1}"#));
        assert!(!message(r#"{"id":null}"#));
        assert!(!message(r#""hello""#));
        assert_eq!(stray_id(r#"{this is not json, "id": 3"#), Some(json!(3)));
        assert_eq!(stray_id(r#"{x "id" :"a\"b", "id": 4"#), Some(json!("a\"b")));
        assert_eq!(stray_id(r#"{"id": 5}"#), Some(json!(5)));
        assert_eq!(stray_id(r#"{"id": {}}"#), None);
        assert_eq!(stray_id(r#"{"id": nope, "id": 6"#), Some(json!(6)));
        assert_eq!(stray_id("this is not json"), None);
    }

    #[test]
    fn ids_keep_their_type() {
        assert_ne!(id_key(&json!(1)), id_key(&json!("1")));
        assert_eq!(id_text(&json!(1)), "1");
        assert_eq!(id_text(&json!("abc")), "abc");
    }
}
