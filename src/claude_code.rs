//! Claude Code's hook protocol: parsing a hook's JSON input, mapping Claude
//! Code's tools onto gavel's vocabulary, and building the JSON a
//! `PreToolUse` hook answers with. Pure: no I/O, no clock, no store; the CLI
//! (`gavel hook claude-code`) reads stdin, records and prints.
//!
//! Mapping (the client's own tool name and input are kept beside it, in
//! `ClientCall`):
//!
//! | Claude Code | gavel | arguments |
//! |---|---|---|
//! | `Bash` | `bash` | `command` |
//! | `Read` | `read_file` | `path` |
//! | `Write` | `write_file` | `path`, `content` |
//! | `Edit` | `edit_file` | `path`, `old_text`, `new_text` |
//! | `Glob` | `glob` | `pattern`, joined to `path` (default: the cwd) unless absolute |
//! | `Grep` | `read_file` | `path` (default: the cwd) |
//! | anything else | its own name | its own input |
//!
//! `Grep` becomes a `read_file` of the folder or file it searches: it
//! reveals file *content*, so a policy that guards reads (the workspace
//! boundary, a deny on `.env`) must guard it too. As a `glob` it would slip
//! past rules that restrict reading but let names be listed.
//!
//! Relative paths, which Claude Code does not normally send, are taken
//! relative to the hook's `cwd`, as Claude Code would.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::audit::{ClientCall, ExecutionStatus, LifecycleRecord, ResultRecord, ToolResult};
use crate::policy::Decision;
use crate::request::ToolRequest;

/// The client name recorded in `ClientCall`.
pub const CLIENT: &str = "claude-code";

/// Why a hook input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("hook input is not JSON: {source}")]
    NotJson { source: serde_json::Error },
    #[error("hook input must be a JSON object")]
    NotObject,
    #[error("hook input is missing the string field `{field}`")]
    MissingField { field: &'static str },
    #[error("`{event}` hook input is missing the field `{field}`")]
    MissingEventField {
        event: &'static str,
        field: &'static str,
    },
}

/// What every hook input carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub session_id: String,
    pub cwd: String,
    /// `hook_event_name`.
    pub event: String,
}

/// A tool call as Claude Code describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    pub tool_name: String,
    pub tool_input: Value,
    pub tool_use_id: String,
}

/// One hook input.
#[derive(Debug, Clone, PartialEq)]
pub enum HookInput {
    /// Before a tool runs: gavel decides.
    PreToolUse { session: Session, tool: ToolUse },
    /// After a tool ran and succeeded.
    PostToolUse {
        session: Session,
        tool: ToolUse,
        response: Value,
        duration_ms: Option<u64>,
    },
    /// After a tool ran and failed.
    PostToolUseFailure {
        session: Session,
        tool: ToolUse,
        error: String,
        duration_ms: Option<u64>,
    },
    /// Any other event (`UserPromptSubmit`, `Stop`, `SessionStart`, ...):
    /// recorded as it came, without `hook_event_name`.
    Other { session: Session, data: Value },
}

impl HookInput {
    /// Parses the JSON text Claude Code writes to a hook's stdin.
    pub fn parse(text: &str) -> Result<Self, HookError> {
        let value: Value =
            serde_json::from_str(text).map_err(|source| HookError::NotJson { source })?;
        Self::from_value(value)
    }

    /// Reads a parsed hook input.
    pub fn from_value(value: Value) -> Result<Self, HookError> {
        let Value::Object(mut object) = value else {
            return Err(HookError::NotObject);
        };
        let text = |object: &Map<String, Value>, field: &'static str| {
            object
                .get(field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or(HookError::MissingField { field })
        };
        let session = Session {
            session_id: text(&object, "session_id")?,
            cwd: text(&object, "cwd")?,
            event: text(&object, "hook_event_name")?,
        };
        let tool = |object: &Map<String, Value>,
                    event: &'static str,
                    needs_input: bool|
         -> Result<ToolUse, HookError> {
            let field = |name: &'static str| {
                object
                    .get(name)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .ok_or(HookError::MissingEventField { event, field: name })
            };
            let tool_input = match object.get("tool_input") {
                Some(input) => input.clone(),
                None if needs_input => {
                    return Err(HookError::MissingEventField {
                        event,
                        field: "tool_input",
                    });
                }
                None => Value::Null,
            };
            Ok(ToolUse {
                tool_name: field("tool_name")?,
                tool_input,
                tool_use_id: field("tool_use_id")?,
            })
        };
        let duration_ms = object.get("duration_ms").and_then(Value::as_u64);
        Ok(match session.event.as_str() {
            "PreToolUse" => HookInput::PreToolUse {
                tool: tool(&object, "PreToolUse", true)?,
                session,
            },
            "PostToolUse" => HookInput::PostToolUse {
                tool: tool(&object, "PostToolUse", false)?,
                response: object.get("tool_response").cloned().unwrap_or(Value::Null),
                duration_ms,
                session,
            },
            "PostToolUseFailure" => HookInput::PostToolUseFailure {
                tool: tool(&object, "PostToolUseFailure", false)?,
                error: match object.get("error") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                },
                duration_ms,
                session,
            },
            _ => {
                object.remove("hook_event_name");
                HookInput::Other {
                    session,
                    data: Value::Object(object),
                }
            }
        })
    }

    pub fn session(&self) -> &Session {
        match self {
            HookInput::PreToolUse { session, .. }
            | HookInput::PostToolUse { session, .. }
            | HookInput::PostToolUseFailure { session, .. }
            | HookInput::Other { session, .. } => session,
        }
    }
}

/// The request gavel decides for a Claude Code tool call; its id is the `tool_use_id`.
pub fn to_request(tool: &ToolUse, cwd: &str) -> ToolRequest {
    let input = &tool.tool_input;
    let get = |field: &str| input.get(field).cloned();
    let path = |field: &str| get(field).map(|p| absolute(cwd, p));
    let mut arguments = Map::new();
    let mut put = |name: &str, value: Option<Value>| {
        if let Some(value) = value {
            arguments.insert(name.to_owned(), value);
        }
    };
    let name = match tool.tool_name.as_str() {
        "Bash" => {
            put("command", get("command"));
            "bash"
        }
        "Read" => {
            put("path", path("file_path"));
            "read_file"
        }
        "Write" => {
            put("path", path("file_path"));
            put("content", get("content"));
            "write_file"
        }
        "Edit" => {
            put("path", path("file_path"));
            put("old_text", get("old_string"));
            put("new_text", get("new_string"));
            "edit_file"
        }
        "Glob" => {
            let base = path("path").unwrap_or_else(|| Value::String(cwd.to_owned()));
            put("pattern", get("pattern").map(|p| glob_pattern(&base, p)));
            "glob"
        }
        "Grep" => {
            put(
                "path",
                Some(path("path").unwrap_or_else(|| Value::String(cwd.to_owned()))),
            );
            "read_file"
        }
        other => {
            return ToolRequest::new(&tool.tool_use_id, other, tool.tool_input.clone());
        }
    };
    ToolRequest::new(&tool.tool_use_id, name, Value::Object(arguments))
}

/// A string path made absolute against `cwd`; anything else as it is.
fn absolute(cwd: &str, path: Value) -> Value {
    match path {
        Value::String(p) if !p.is_empty() && !p.starts_with('/') && !p.starts_with('~') => {
            Value::String(Path::new(cwd).join(p).to_string_lossy().into_owned())
        }
        other => other,
    }
}

/// A glob pattern joined to the folder it is relative to, unless absolute.
fn glob_pattern(base: &Value, pattern: Value) -> Value {
    match (base, pattern) {
        (Value::String(base), Value::String(p)) if !p.is_empty() && !p.starts_with('/') => {
            Value::String(format!("{}/{p}", base.trim_end_matches('/')))
        }
        (_, other) => other,
    }
}

/// Claude Code's own view of the call, kept in the request record: its
/// tool name, session and input (a summary when the input is over
/// `max_input_bytes`), and the input's digest, which binds completions.
pub fn client_call(tool: &ToolUse, session_id: &str, max_input_bytes: u64) -> ClientCall {
    ClientCall::new(
        CLIENT,
        &tool.tool_name,
        &tool.tool_input,
        Some(session_id),
        max_input_bytes,
    )
}

/// What of a completion (`PostToolUse`, `PostToolUseFailure`) differs from
/// the call recorded at its `PreToolUse`: `client` (the call was not
/// recorded from Claude Code), `session_id`, `tool` or `input` (by digest).
/// Empty when the completion belongs to the recorded call.
pub fn binding_mismatch(recorded: Option<&ClientCall>, completion: &ClientCall) -> Vec<String> {
    let Some(recorded) = recorded else {
        return vec!["client".to_owned()];
    };
    let mut differ = Vec::new();
    if recorded.client != completion.client {
        differ.push("client");
    }
    if recorded.session_id != completion.session_id {
        differ.push("session_id");
    }
    if recorded.tool != completion.tool {
        differ.push("tool");
    }
    if recorded.bound_digest() != completion.bound_digest() {
        differ.push("input");
    }
    differ.into_iter().map(str::to_owned).collect()
}

/// The reason shown to the user and the model: `[rule_id] reason`.
pub fn decision_reason(decision: &Decision) -> String {
    format!("[{}] {}", decision.rule_id, decision.reason)
}

/// What a `PreToolUse` hook prints on stdout for `decision`.
pub fn pre_tool_use_output(decision: &Decision) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision.action.as_str(),
            "permissionDecisionReason": decision_reason(decision),
        }
    })
}

/// The result of a call Claude Code ran. A string response is kept as it
/// is, anything else as compact JSON; the record keeps a prefix and a
/// digest of very long content (`ResultRecord::from_result`).
pub fn tool_result(input: &HookInput) -> Option<ToolResult> {
    let (status, content, duration_ms) = match input {
        HookInput::PostToolUse {
            response,
            duration_ms,
            ..
        } => (ExecutionStatus::Succeeded, text_of(response), duration_ms),
        HookInput::PostToolUseFailure {
            error, duration_ms, ..
        } => (ExecutionStatus::Failed, error.clone(), duration_ms),
        _ => return None,
    };
    Some(ToolResult {
        status,
        content,
        exit_code: None,
        duration_ms: duration_ms.unwrap_or(0),
    })
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The lifecycle record of a session event that is not a tool call
/// (`UserPromptSubmit`, `Stop`, ...), as it came. A tool event is recorded
/// by its session, tool, input and (for completions) result.
pub fn lifecycle(input: &HookInput) -> LifecycleRecord {
    let session = input.session();
    let data = match input {
        HookInput::Other { data, .. } => data.clone(),
        HookInput::PreToolUse { tool, .. }
        | HookInput::PostToolUse { tool, .. }
        | HookInput::PostToolUseFailure { tool, .. } => {
            let mut data = json!({
                "session_id": session.session_id,
                "cwd": session.cwd,
                "tool_use_id": tool.tool_use_id,
                "tool_name": tool.tool_name,
                "tool_input": tool.tool_input,
            });
            if let Some(result) = tool_result(input) {
                data["result"] =
                    serde_json::to_value(ResultRecord::from_result(&result)).unwrap_or(Value::Null);
            }
            data
        }
    };
    LifecycleRecord {
        event: session.event.clone(),
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Action, PolicyRef};

    fn pre(tool: &str, input: Value) -> HookInput {
        HookInput::from_value(json!({
            "session_id": "s1", "transcript_path": "/t.jsonl", "cwd": "/ws",
            "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_1",
        }))
        .unwrap()
    }

    fn request(tool: &str, input: Value) -> ToolRequest {
        match pre(tool, input) {
            HookInput::PreToolUse { tool, session } => to_request(&tool, &session.cwd),
            other => panic!("not a PreToolUse: {other:?}"),
        }
    }

    #[test]
    fn claude_code_tools_map_onto_gavel_tools() {
        let r = request(
            "Bash",
            json!({"command":"ls","description":"list","timeout":5}),
        );
        assert_eq!(
            (r.name.as_str(), r.arguments),
            ("bash", json!({"command":"ls"}))
        );
        assert_eq!(r.tool_use_id, "toolu_1");
        let r = request(
            "Read",
            json!({"file_path":"/ws/a.txt","offset":1,"limit":2}),
        );
        assert_eq!(
            (r.name.as_str(), r.arguments),
            ("read_file", json!({"path":"/ws/a.txt"}))
        );
        let r = request("Write", json!({"file_path":"/ws/a.txt","content":"hi"}));
        assert_eq!(
            (r.name.as_str(), r.arguments),
            ("write_file", json!({"path":"/ws/a.txt","content":"hi"}))
        );
        let r = request(
            "Edit",
            json!({"file_path":"/ws/a.txt","old_string":"a","new_string":"b","replace_all":false}),
        );
        assert_eq!(
            (r.name.as_str(), r.arguments),
            (
                "edit_file",
                json!({"path":"/ws/a.txt","old_text":"a","new_text":"b"})
            )
        );
        let r = request("mcp__github__create_issue", json!({"title":"x"}));
        assert_eq!(
            (r.name.as_str(), r.arguments),
            ("mcp__github__create_issue", json!({"title":"x"}))
        );
    }

    #[test]
    fn glob_patterns_are_joined_to_their_folder_unless_absolute() {
        let r = request("Glob", json!({"pattern":"**/*.rs"}));
        assert_eq!(r.arguments, json!({"pattern":"/ws/**/*.rs"}));
        let r = request("Glob", json!({"pattern":"*.rs","path":"/ws/src/"}));
        assert_eq!(r.arguments, json!({"pattern":"/ws/src/*.rs"}));
        let r = request("Glob", json!({"pattern":"/etc/*","path":"/ws"}));
        assert_eq!(r.arguments, json!({"pattern":"/etc/*"}));
    }

    #[test]
    fn grep_is_a_read_of_the_path_it_searches() {
        let r = request("Grep", json!({"pattern":"fn main","glob":"*.rs"}));
        assert_eq!(
            (r.name.as_str(), r.arguments),
            ("read_file", json!({"path":"/ws"}))
        );
        let r = request("Grep", json!({"pattern":"x","path":"/etc"}));
        assert_eq!(r.arguments, json!({"path":"/etc"}));
    }

    #[test]
    fn relative_paths_are_taken_from_the_cwd() {
        let r = request("Read", json!({"file_path":"src/lib.rs"}));
        assert_eq!(r.arguments, json!({"path":"/ws/src/lib.rs"}));
    }

    #[test]
    fn missing_or_odd_arguments_are_left_for_the_policy_to_refuse() {
        let r = request("Read", json!({"file_path": 7}));
        assert_eq!(r.arguments, json!({"path": 7}));
        let r = request("Bash", json!({}));
        assert_eq!(r.arguments, json!({}));
    }

    #[test]
    fn malformed_inputs_are_refused() {
        assert!(matches!(
            HookInput::parse("nope"),
            Err(HookError::NotJson { .. })
        ));
        assert!(matches!(HookInput::parse("[1]"), Err(HookError::NotObject)));
        assert!(matches!(
            HookInput::parse(r#"{"session_id":"s","cwd":"/"}"#),
            Err(HookError::MissingField {
                field: "hook_event_name"
            })
        ));
        let err = HookInput::parse(
            r#"{"session_id":"s","cwd":"/","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}"#,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`PreToolUse` hook input is missing the field `tool_use_id`"
        );
    }

    #[test]
    fn other_events_keep_their_data_without_the_event_name() {
        let input = HookInput::parse(
            r#"{"session_id":"s","cwd":"/w","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#,
        )
        .unwrap();
        let record = lifecycle(&input);
        assert_eq!(record.event, "UserPromptSubmit");
        assert_eq!(
            record.data,
            json!({"session_id":"s","cwd":"/w","prompt":"hi"})
        );
    }

    #[test]
    fn responses_become_results() {
        let input = HookInput::parse(
            r#"{"session_id":"s","cwd":"/w","hook_event_name":"PostToolUse","tool_name":"Bash",
                "tool_input":{"command":"ls"},"tool_use_id":"t","tool_response":{"stdout":"a"},"duration_ms":12}"#,
        )
        .unwrap();
        let result = tool_result(&input).unwrap();
        assert_eq!(result.status, ExecutionStatus::Succeeded);
        assert_eq!(result.content, r#"{"stdout":"a"}"#);
        assert_eq!(result.duration_ms, 12);
    }

    #[test]
    fn the_answer_carries_the_rule_id_first() {
        let decision = Decision {
            action: Action::Deny,
            rule_id: "bash.hard_deny".into(),
            reason: "no".into(),
            policy: PolicyRef {
                name: "p".into(),
                digest: "d".into(),
            },
        };
        assert_eq!(
            pre_tool_use_output(&decision),
            json!({"hookSpecificOutput":{"hookEventName":"PreToolUse",
                "permissionDecision":"deny","permissionDecisionReason":"[bash.hard_deny] no"}})
        );
    }
}
