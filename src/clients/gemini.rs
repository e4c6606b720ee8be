//! Gemini CLI's hook protocol (`gavel hook gemini`).
//!
//! Events: `BeforeTool` (decide), `AfterTool` (complete), any other event
//! (`SessionStart`, `BeforeAgent`, `AfterAgent`, `SessionEnd`, ...) is a
//! lifecycle event. Gemini sends no call id: gavel mints one at
//! `BeforeTool` and matches `AfterTool` to it by session, tool and the
//! digest of the input. Answer: `{"decision": "allow"|"deny"|"ask",
//! "reason"}`; a `run_shell_command` allowed under a sandbox the kernel
//! enforces also carries `hookSpecificOutput.tool_input`, its command
//! rewritten to run under `gavel exec`. Gemini's `ask` prompts in an
//! interactive session but hangs a headless one (`gemini -p`), so asks are
//! denied with "needs approval" unless `--ask prompt` says a person is at
//! the terminal. Fails closed with exit 2 on `BeforeTool` and `BeforeAgent`
//! (blocks); elsewhere, where exit 2 would retry or hide a result, exit 1
//! (a warning).
//!
//! | Gemini CLI | gavel | arguments |
//! |---|---|---|
//! | `run_shell_command` | `bash` | `command` |
//! | `read_file` | `read_file` | `path` ← `file_path` |
//! | `write_file` | `write_file` | `path`, `content` |
//! | `replace` | `edit_file` | `path`, `old_text`, `new_text` |
//! | `glob` | `glob` | `pattern`, joined to `dir_path` |
//! | `grep_search`, `search_file_content` | `read_file` | `path` ← `dir_path` (default: the cwd) |
//! | `list_directory` | `glob` | `dir_path/*` |
//! | `mcp_server_tool`, anything else | its own name | its own input |

use serde_json::{Value, json};

use super::claude_code::shell_word;
use super::{
    Answer, AskMode, Client, Context, Fields, HookConfig, HookError, HookEvent, Kind, Reply,
    ToolCall, event_field, object, required, result, text, text_of,
};
use crate::audit::ExecutionStatus;

/// Gemini CLI.
pub struct Gemini;

const EVENTS: &[(&str, bool)] = &[
    ("BeforeTool", true),
    ("AfterTool", true),
    ("BeforeAgent", false),
    ("SessionStart", false),
    ("SessionEnd", false),
];

/// `call` with Gemini's older argument names read as today's: `absolute_path`
/// as `file_path`, and a folder's `path` as `dir_path`; `None` when it
/// uses today's names.
fn older_names(call: &ToolCall) -> Option<ToolCall> {
    let object = call.input.as_object()?;
    let renames: &[(&str, &str)] = match call.tool.as_str() {
        "read_file" | "write_file" | "replace" => &[("absolute_path", "file_path")],
        "glob" | "grep_search" | "search_file_content" | "list_directory" => {
            &[("path", "dir_path")]
        }
        _ => &[],
    };
    let mut input = object.clone();
    let mut changed = false;
    for (old, new) in renames {
        if !input.contains_key(*new)
            && let Some(value) = input.remove(*old)
        {
            input.insert((*new).to_owned(), value);
            changed = true;
        }
    }
    changed.then(|| ToolCall {
        tool: call.tool.clone(),
        input: Value::Object(input),
        id: call.id.clone(),
    })
}

impl Client for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn parse(&self, input: Value) -> Result<HookEvent, HookError> {
        let object = object(input)?;
        let event = required(&object, "hook_event_name")?;
        let context = Context {
            session_id: required(&object, "session_id")?,
            cwd: required(&object, "cwd")?,
            project_dir: None,
            client_version: text(&object, "gemini_cli_version"),
            permission_mode: text(&object, "approval_mode"),
            prompt_id: text(&object, "prompt_id"),
            agent_id: None,
            agent_type: None,
            model: None,
            user: None,
            event: event.clone(),
        };
        let call = |object: &serde_json::Map<String, Value>| {
            Ok::<_, HookError>(ToolCall {
                tool: event_field(object, &event, "tool_name")?,
                input: object.get("tool_input").cloned().ok_or_else(|| {
                    HookError::MissingEventField {
                        event: event.clone(),
                        field: "tool_input",
                    }
                })?,
                id: None,
            })
        };
        let kind = match event.as_str() {
            "BeforeTool" => Kind::Pre(call(&object)?),
            "AfterTool" => {
                let response = object.get("tool_response").cloned().unwrap_or(Value::Null);
                let error = response.get("error").filter(|e| !e.is_null());
                let reported = match error {
                    Some(error) => {
                        let message = error.get("message").unwrap_or(error);
                        result(ExecutionStatus::Failed, text_of(message), None)
                    }
                    None => result(
                        ExecutionStatus::Succeeded,
                        text_of(response.get("llmContent").unwrap_or(&response)),
                        None,
                    ),
                };
                Kind::Post {
                    call: call(&object)?,
                    result: reported,
                }
            }
            _ => Kind::lifecycle(object, event == "SessionStart"),
        };
        Ok(HookEvent { context, kind })
    }

    fn map_tool(&self, call: &ToolCall, cwd: &str) -> (String, Value) {
        // Older Gemini CLI releases named the path `absolute_path` (and a
        // folder `path`): read under today's names.
        let renamed;
        let call = match older_names(call) {
            Some(newer) => {
                renamed = newer;
                &renamed
            }
            None => call,
        };
        let f = Fields::of(call, cwd);
        match call.tool.as_str() {
            "run_shell_command" => f.bash("command"),
            "read_file" => f.read("file_path"),
            "write_file" => f.write("file_path", "content"),
            "replace" => f.edit("file_path", "old_string", "new_string"),
            "glob" => f.glob("pattern", "dir_path"),
            "grep_search" | "search_file_content" => f.search("dir_path"),
            "list_directory" => f.list("dir_path"),
            other => (other.to_owned(), call.input.clone()),
        }
    }

    fn command_field(&self, call: &ToolCall) -> Option<&'static str> {
        (call.tool == "run_shell_command").then_some("command")
    }

    fn can_prompt(&self, _: &Context, mode: AskMode) -> bool {
        mode == AskMode::Prompt
    }

    fn render(&self, _: &Context, reply: &Reply) -> Answer {
        match reply {
            Reply::Allow { reason, rewrite } => {
                let mut answer = json!({"decision": "allow", "reason": reason});
                // Merged over the model's arguments before the tool runs.
                if let Some(input) = rewrite {
                    answer["hookSpecificOutput"] =
                        json!({"hookEventName": "BeforeTool", "tool_input": input});
                }
                Answer::ok(Some(answer))
            }
            Reply::Deny { reason } => {
                Answer::ok(Some(json!({"decision": "deny", "reason": reason})))
            }
            Reply::Ask { reason } => Answer::ok(Some(
                json!({"decision": "ask", "reason": reason, "systemMessage": reason}),
            )),
            Reply::Pass => Answer::ok(None),
        }
    }

    fn fail_closed(&self, event: Option<&str>, message: &str) -> Answer {
        Answer {
            stdout: None,
            stderr: Some(format!("gavel: {message}")),
            exit: match event {
                None | Some("BeforeTool" | "BeforeAgent") => 2,
                Some(_) => 1,
            },
        }
    }

    fn project_dir_var(&self) -> Option<&'static str> {
        Some("GEMINI_PROJECT_DIR")
    }

    fn hook_config(&self, gavel: &str) -> HookConfig {
        let command = format!("{} hook gemini", shell_word(gavel));
        let mut hooks = serde_json::Map::new();
        for (event, tools) in EVENTS {
            let mut group =
                json!({"hooks": [{"type": "command", "command": command, "name": "gavel"}]});
            if *tools {
                group["matcher"] = json!(".*");
            }
            hooks.insert((*event).to_owned(), json!([group]));
        }
        HookConfig {
            path: ".gemini/settings.json",
            user_path: Some(".gemini/settings.json"),
            json: json!({ "hooks": hooks }),
            asks: format!(
                "asks are denied as \"needs approval\" (a headless `gemini -p` would hang on them); \
                 for interactive sessions, change the command to `{command} --ask prompt`, or let \
                 asks wait for `gavel approve` (`gavel init gemini --ask wait=60s`)"
            ),
            notes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_argument_names_are_read_as_todays() {
        let call = ToolCall {
            tool: "read_file".into(),
            input: json!({"absolute_path": "/ws/a.txt"}),
            id: None,
        };
        let (name, arguments) = Gemini.map_tool(&call, "/ws");
        assert_eq!(name, "read_file");
        assert_eq!(arguments["path"], "/ws/a.txt", "{arguments}");
        let call = ToolCall {
            tool: "list_directory".into(),
            input: json!({"path": "src"}),
            id: None,
        };
        let (_, arguments) = Gemini.map_tool(&call, "/ws");
        assert!(arguments.to_string().contains("/ws/src"), "{arguments}");
    }

    #[test]
    fn gemini_tools_map_onto_gavel_tools() {
        let map = |tool: &str, input: Value| {
            Gemini.map_tool(
                &ToolCall {
                    tool: tool.into(),
                    input,
                    id: None,
                },
                "/ws",
            )
        };
        assert_eq!(
            map(
                "run_shell_command",
                json!({"command": "ls", "description": "x"})
            ),
            ("bash".to_owned(), json!({"command": "ls"}))
        );
        assert_eq!(
            map(
                "replace",
                json!({"file_path": "a", "old_string": "x", "new_string": "y"})
            ),
            (
                "edit_file".to_owned(),
                json!({"path": "/ws/a", "old_text": "x", "new_text": "y"})
            )
        );
        assert_eq!(
            map("list_directory", json!({"dir_path": "/etc"})),
            ("glob".to_owned(), json!({"pattern": "/etc/*"}))
        );
        assert_eq!(
            map("grep_search", json!({"pattern": "x"})),
            ("read_file".to_owned(), json!({"path": "/ws"}))
        );
    }

    #[test]
    fn after_tool_errors_are_failures() {
        let event = Gemini
            .parse(json!({
                "session_id": "s", "cwd": "/ws", "hook_event_name": "AfterTool",
                "tool_name": "read_file", "tool_input": {"file_path": "/ws/x"},
                "tool_response": {"llmContent": "", "error": {"message": "no such file"}},
            }))
            .unwrap();
        let Kind::Post { call, result } = event.kind else {
            panic!("not a post")
        };
        assert_eq!(call.id, None);
        assert_eq!(result.status, ExecutionStatus::Failed);
        assert_eq!(result.content, "no such file");
    }
}
