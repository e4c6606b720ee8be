//! Cursor's agent hook protocol (`gavel hook cursor`), from Cursor's
//! documentation (`.cursor/hooks.json`).
//!
//! Pre-events (decided): `beforeShellExecution`, `beforeMCPExecution`,
//! `beforeReadFile` and the newer `preToolUse`. Completions:
//! `afterShellExecution`, `afterMCPExecution`, `postToolUse`, and
//! `afterFileEdit` (an edit Cursor made: it has no pre-event, so unless a
//! `preToolUse` decided it, it is recorded as ran without a decision). Any
//! other event is a lifecycle event. The session is `conversation_id`, the
//! turn `generation_id`, the project the first of `workspace_roots`. Calls
//! have no id (except, when sent, `preToolUse`'s `tool_use_id`): gavel mints
//! one and matches the completion by session, tool and input digest.
//! Answer: `{"permission": "allow"|"deny"|"ask", "user_message",
//! "agent_message"}`; `ask` is Cursor's own prompt, except on
//! `beforeReadFile`, which takes only allow or deny (an ask is denied with
//! "needs approval"). Fails closed with a deny on stdout and exit 2; the
//! entries `gavel init cursor` writes carry `"failClosed": true`, so that a
//! hook Cursor itself stops (its `timeout`, in seconds) blocks too.
//!
//! | Cursor | gavel | arguments |
//! |---|---|---|
//! | `beforeShellExecution` (`Shell`) | `bash` | `command` |
//! | `beforeReadFile` (`Read`) | `read_file` | `path` ← `file_path` |
//! | `beforeMCPExecution` | the MCP tool's name | its input |
//! | `preToolUse` `Write` / `StrReplace` / `Delete` | `write_file` / `edit_file` / `apply_patch` | |
//! | `afterFileEdit` (`Edit`) | `apply_patch` | `paths` ← `file_path`, `edits` |

use serde_json::{Map, Value, json};

use super::claude_code::shell_word;
use super::{
    Answer, AskMode, Client, Context, Fields, HookConfig, HookError, HookEvent, Kind, Reply,
    ToolCall, event_field, object, parsed, required, result, text, text_of,
};
use crate::audit::ExecutionStatus;

/// Cursor.
pub struct Cursor;

const EVENTS: &[&str] = &[
    "beforeShellExecution",
    "afterShellExecution",
    "beforeMCPExecution",
    "afterMCPExecution",
    "beforeReadFile",
    "afterFileEdit",
    "beforeSubmitPrompt",
    "stop",
];

/// Events whose answer is a permission.
const PERMISSION_EVENTS: &[&str] = &[
    "beforeShellExecution",
    "beforeMCPExecution",
    "beforeReadFile",
    "preToolUse",
];

impl Client for Cursor {
    fn name(&self) -> &'static str {
        "cursor"
    }

    fn parse(&self, input: Value) -> Result<HookEvent, HookError> {
        let object = object(input)?;
        let event = required(&object, "hook_event_name")?;
        let project_dir = object
            .get("workspace_roots")
            .and_then(Value::as_array)
            .and_then(|roots| roots.first())
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let cwd = text(&object, "cwd")
            .or_else(|| project_dir.clone())
            .ok_or(HookError::MissingField { field: "cwd" })?;
        let context = Context {
            session_id: required(&object, "conversation_id")?,
            cwd,
            project_dir,
            client_version: text(&object, "cursor_version"),
            permission_mode: None,
            prompt_id: text(&object, "generation_id"),
            agent_id: None,
            agent_type: None,
            model: text(&object, "model"),
            user: text(&object, "user_email"),
            event: event.clone(),
        };
        let field =
            |object: &Map<String, Value>, name: &'static str| event_field(object, &event, name);
        let shell = |object: &Map<String, Value>| {
            Ok::<_, HookError>(ToolCall {
                tool: "Shell".to_owned(),
                input: json!({ "command": field(object, "command")? }),
                id: None,
            })
        };
        let mcp = |object: &Map<String, Value>| {
            Ok::<_, HookError>(ToolCall {
                tool: field(object, "tool_name")?,
                input: parsed(object.get("tool_input").cloned().unwrap_or(Value::Null)),
                id: None,
            })
        };
        let tool = |object: &Map<String, Value>| {
            Ok::<_, HookError>(ToolCall {
                tool: field(object, "tool_name")?,
                input: parsed(object.get("tool_input").cloned().unwrap_or(Value::Null)),
                id: text(object, "tool_use_id"),
            })
        };
        let duration = object.get("duration").and_then(Value::as_u64);
        let kind = match event.as_str() {
            "beforeShellExecution" => Kind::Pre(shell(&object)?),
            "beforeMCPExecution" => Kind::Pre(mcp(&object)?),
            // The file's content comes with the event; only its path is the call.
            "beforeReadFile" => Kind::Pre(ToolCall {
                tool: "Read".to_owned(),
                input: json!({ "file_path": field(&object, "file_path")? }),
                id: None,
            }),
            "preToolUse" => Kind::Pre(tool(&object)?),
            "afterShellExecution" => Kind::Post {
                call: shell(&object)?,
                result: result(
                    ExecutionStatus::Succeeded,
                    text_of(object.get("output").unwrap_or(&Value::Null)),
                    duration,
                ),
            },
            "afterMCPExecution" => Kind::Post {
                call: mcp(&object)?,
                result: result(
                    ExecutionStatus::Succeeded,
                    text_of(object.get("result_json").unwrap_or(&Value::Null)),
                    duration,
                ),
            },
            "postToolUse" => Kind::Post {
                call: tool(&object)?,
                result: result(
                    ExecutionStatus::Succeeded,
                    text_of(
                        object
                            .get("tool_output")
                            .or_else(|| object.get("tool_response"))
                            .unwrap_or(&Value::Null),
                    ),
                    duration,
                ),
            },
            "afterFileEdit" => Kind::Post {
                call: ToolCall {
                    tool: "Edit".to_owned(),
                    input: json!({
                        "file_path": field(&object, "file_path")?,
                        "edits": object.get("edits").cloned().unwrap_or(Value::Null),
                    }),
                    id: None,
                },
                result: result(ExecutionStatus::Succeeded, String::new(), None),
            },
            _ => Kind::lifecycle(object, event == "sessionStart"),
        };
        Ok(HookEvent { context, kind })
    }

    fn map_tool(&self, call: &ToolCall, cwd: &str) -> (String, Value) {
        let f = Fields::of(call, cwd);
        let path = if f.get("file_path").is_some() {
            "file_path"
        } else {
            "path"
        };
        match call.tool.as_str() {
            "Shell" => f.bash("command"),
            "Read" => f.read(path),
            "Write" => {
                let content = if f.get("contents").is_some() {
                    "contents"
                } else {
                    "content"
                };
                f.write(path, content)
            }
            "StrReplace" => f.edit(path, "old_string", "new_string"),
            "Delete" => f.patch(f.get(path).into_iter().collect(), "content"),
            "Edit" => f.patch(f.get(path).into_iter().collect(), "edits"),
            "Grep" => f.search(path),
            other => (other.to_owned(), call.input.clone()),
        }
    }

    fn can_prompt(&self, context: &Context, _: AskMode) -> bool {
        // `beforeReadFile` takes only allow or deny.
        context.event != "beforeReadFile"
    }

    fn render(&self, context: &Context, reply: &Reply) -> Answer {
        let (permission, reason) = match reply {
            // Cursor's answer takes no new input: a contained allow runs
            // as Cursor runs it, uncontained (docs/sandbox.md).
            Reply::Allow { reason, .. } => ("allow", reason),
            Reply::Deny { reason } => ("deny", reason),
            Reply::Ask { reason } => ("ask", reason),
            Reply::Pass => return Answer::ok(None),
        };
        if context.event == "beforeReadFile" {
            return Answer::ok(Some(json!({ "permission": permission })));
        }
        Answer::ok(Some(json!({
            "permission": permission,
            "user_message": reason,
            "agent_message": reason,
        })))
    }

    fn fail_closed(&self, event: Option<&str>, message: &str) -> Answer {
        let message = format!("gavel: {message}");
        let stdout = match event {
            None => Some(
                json!({"permission": "deny", "user_message": message, "agent_message": message}),
            ),
            Some(e) if PERMISSION_EVENTS.contains(&e) => Some(
                json!({"permission": "deny", "user_message": message, "agent_message": message}),
            ),
            Some("beforeSubmitPrompt") => Some(json!({"continue": false, "user_message": message})),
            Some(_) => None,
        };
        let exit = if stdout.is_some() { 2 } else { 1 };
        Answer {
            stdout: stdout.map(|v| v.to_string()),
            stderr: Some(message),
            exit,
        }
    }

    fn project_dir_var(&self) -> Option<&'static str> {
        Some("CURSOR_PROJECT_DIR")
    }

    fn hook_config(&self, gavel: &str) -> HookConfig {
        let command = format!("{} hook cursor", shell_word(gavel));
        let mut hooks = Map::new();
        // `failClosed`: Cursor lets the action through when a hook crashes,
        // times out or answers no JSON, unless the entry says otherwise;
        // gavel's own failures already answer a deny, this covers the rest
        // (a hook Cursor stops at its `timeout`).
        for event in EVENTS {
            hooks.insert(
                (*event).to_owned(),
                json!([{ "command": command, "failClosed": true }]),
            );
        }
        HookConfig {
            path: ".cursor/hooks.json",
            user_path: Some(".cursor/hooks.json"),
            json: json!({"version": 1, "hooks": hooks}),
            asks: "asks go to Cursor's own prompt for shell commands, MCP tools and `preToolUse` \
                   calls (recorded `pending`, then `approved` when the call runs); a file read \
                   (`beforeReadFile`) takes only allow or deny, so an ask on a read is denied as \
                   \"needs approval\"; `gavel init cursor --ask wait=60s` makes asks wait for \
                   `gavel approve` instead"
                .to_owned(),
            notes: vec![
                "Cursor cannot gate its own file edits with these events: each edit is recorded \
                 by afterFileEdit as ran without a decision (newer Cursor versions can use preToolUse)"
                    .to_owned(),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(event: &str) -> Map<String, Value> {
        let value = json!({
            "hook_event_name": event, "conversation_id": "c1", "generation_id": "g1",
            "workspace_roots": ["/ws"], "cursor_version": "1.7.2",
        });
        value.as_object().unwrap().clone()
    }

    #[test]
    fn shell_events_read_the_command_and_the_turn() {
        let mut payload = base("beforeShellExecution");
        payload.insert("command".into(), json!("ls -la"));
        payload.insert("cwd".into(), json!("/ws/src"));
        let event = Cursor.parse(Value::Object(payload)).unwrap();
        assert_eq!(event.context.session_id, "c1");
        assert_eq!(event.context.prompt_id.as_deref(), Some("g1"));
        assert_eq!(event.context.cwd, "/ws/src");
        assert_eq!(event.context.project_dir.as_deref(), Some("/ws"));
        assert_eq!(event.context.client_version.as_deref(), Some("1.7.2"));
        let Kind::Pre(call) = event.kind else {
            panic!("not a pre")
        };
        assert_eq!(
            Cursor.map_tool(&call, "/ws/src"),
            ("bash".to_owned(), json!({"command": "ls -la"}))
        );
    }

    #[test]
    fn read_file_asks_become_denies_and_its_content_is_not_the_call() {
        let mut payload = base("beforeReadFile");
        payload.insert("file_path".into(), json!("/ws/.env"));
        payload.insert("content".into(), json!("SECRET=1"));
        let event = Cursor.parse(Value::Object(payload)).unwrap();
        let Kind::Pre(call) = &event.kind else {
            panic!("not a pre")
        };
        assert_eq!(call.input, json!({"file_path": "/ws/.env"}));
        assert!(!Cursor.can_prompt(&event.context, AskMode::Prompt));
        let answer = Cursor.render(&event.context, &Reply::Deny { reason: "r".into() });
        assert_eq!(answer.stdout.as_deref(), Some(r#"{"permission":"deny"}"#));
    }
}
