//! GitHub Copilot CLI's hook protocol (`gavel hook copilot`).
//!
//! Copilot sends two payload shapes: camelCase (`preToolUse`, with
//! `sessionId`, `toolName`, `toolArgs`, and no event name in the payload,
//! so `gavel init` passes it as `--event`) and, for PascalCase event names,
//! VS Code's snake_case (`hook_event_name`, `tool_name`, `tool_input`).
//! Events: `preToolUse` (decide), `postToolUse` / `postToolUseFailure`
//! (complete), any other event is a lifecycle event. There is no call id:
//! gavel mints one at `preToolUse` and matches the completion to it by
//! session, tool and the digest of the input. A `postToolUse` whose
//! `resultType` is `denied` reports a call that did not run (declined at
//! Copilot's prompt). Answer: `{"permissionDecision", "permissionDecisionReason"}`,
//! and for a `bash` call allowed under a sandbox the kernel enforces,
//! `modifiedArgs`: its command rewritten to run under `gavel exec`.
//! Copilot's `ask` prompts in an interactive session only; in `copilot -p`
//! nobody is asked, so asks are denied with "needs approval" unless
//! `--ask prompt`. Fails closed with a deny on stdout and exit 2.
//!
//! | Copilot CLI | gavel | arguments |
//! |---|---|---|
//! | `bash`, `powershell` (`Bash`) | `bash` | `command` |
//! | `view` (`Read`) | `read_file` | `path` |
//! | `create` (`Write`) | `write_file` | `path`, `content` ← `file_text` |
//! | `edit` (`Edit`) | `edit_file` | `path`, `old_text` ← `old_str`, `new_text` ← `new_str` |
//! | `glob` (`Glob`) | `glob` | `pattern`, joined to `path` |
//! | `grep` (`Grep`) | `read_file` | `path` (default: the cwd) |
//! | anything else | its own name | its own input |
//!
//! The names in brackets are those of its Claude-compatible hooks (events
//! named `PreToolUse`, …, in a hooks file): Claude Code's tool names, but
//! Copilot's arguments (`Read` with `path`, `Write` with `file_text`).

use serde_json::{Map, Value, json};

use super::claude_code::shell_word;
use super::{
    Answer, AskMode, Client, Context, Fields, HookConfig, HookError, HookEvent, Kind, Reply,
    ToolCall, object, parsed, result, text, text_of,
};
use crate::audit::ExecutionStatus;

/// Copilot CLI.
pub struct Copilot;

const EVENTS: &[&str] = &[
    "preToolUse",
    "postToolUse",
    "postToolUseFailure",
    "userPromptSubmitted",
    "sessionStart",
    "sessionEnd",
];

/// The first of `names` present in `object`.
fn either<'a>(object: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names.iter().find_map(|name| object.get(*name))
}

fn either_text(object: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|name| text(object, name))
}

/// `preToolUse` and `PreToolUse` are the same event.
fn canonical(event: &str) -> String {
    let mut chars = event.chars();
    match chars.next() {
        Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

impl Client for Copilot {
    fn name(&self) -> &'static str {
        "copilot"
    }

    fn parse(&self, input: Value) -> Result<HookEvent, HookError> {
        let object = object(input)?;
        let event = either_text(&object, &["hook_event_name", "hookEventName"]).ok_or(
            HookError::MissingField {
                field: "hook_event_name",
            },
        )?;
        let context = Context {
            // Older releases send no session id: calls then match within "".
            session_id: either_text(&object, &["sessionId", "session_id"]).unwrap_or_default(),
            cwd: either_text(&object, &["cwd"]).ok_or(HookError::MissingField { field: "cwd" })?,
            project_dir: None,
            client_version: None,
            permission_mode: None,
            prompt_id: None,
            agent_id: None,
            agent_type: None,
            model: None,
            user: None,
            event: event.clone(),
        };
        let call = |object: &Map<String, Value>| {
            let tool = either_text(object, &["toolName", "tool_name"]).ok_or_else(|| {
                HookError::MissingEventField {
                    event: event.clone(),
                    field: "toolName",
                }
            })?;
            // `toolArgs` is sometimes the arguments' JSON text.
            let input = parsed(
                either(object, &["toolArgs", "tool_input"])
                    .cloned()
                    .unwrap_or(Value::Null),
            );
            Ok::<_, HookError>(ToolCall {
                tool,
                input,
                id: None,
            })
        };
        let kind = match canonical(&event).as_str() {
            "preToolUse" => Kind::Pre(call(&object)?),
            "postToolUse" => {
                let outcome = either(&object, &["toolResult", "tool_result"])
                    .cloned()
                    .unwrap_or(Value::Null);
                let kind = outcome
                    .get("resultType")
                    .or_else(|| outcome.get("result_type"))
                    .and_then(Value::as_str)
                    .unwrap_or("success");
                let content = outcome
                    .get("textResultForLlm")
                    .or_else(|| outcome.get("text_result_for_llm"))
                    .map(text_of)
                    .unwrap_or_else(|| text_of(&outcome));
                let status = match kind {
                    "success" => ExecutionStatus::Succeeded,
                    // Declined at Copilot's prompt: it did not run.
                    "denied" => ExecutionStatus::Blocked,
                    _ => ExecutionStatus::Failed,
                };
                Kind::Post {
                    call: call(&object)?,
                    result: result(status, content, None),
                }
            }
            "postToolUseFailure" => Kind::Post {
                call: call(&object)?,
                result: result(
                    ExecutionStatus::Failed,
                    text_of(object.get("error").unwrap_or(&Value::Null)),
                    None,
                ),
            },
            other => Kind::lifecycle(object, other == "sessionStart"),
        };
        Ok(HookEvent { context, kind })
    }

    fn map_tool(&self, call: &ToolCall, cwd: &str) -> (String, Value) {
        let f = Fields::of(call, cwd);
        // Copilot's Claude-compatible hooks (PascalCase events) name the
        // tools as Claude Code does but keep Copilot's own arguments
        // (`Read` with `path`, not `file_path`), as captured from 1.0.102.
        match call.tool.as_str() {
            "bash" | "powershell" | "Bash" => f.bash("command"),
            "view" | "Read" => f.read("path"),
            "create" | "Write" => f.write("path", "file_text"),
            "edit" | "Edit" => f.edit("path", "old_str", "new_str"),
            "glob" | "Glob" => f.glob("pattern", "path"),
            "grep" | "Grep" => f.search("path"),
            other => (other.to_owned(), call.input.clone()),
        }
    }

    fn command_field(&self, call: &ToolCall) -> Option<&'static str> {
        // `powershell` is not bash: it is not run under `gavel exec`.
        matches!(call.tool.as_str(), "bash" | "Bash").then_some("command")
    }

    fn can_prompt(&self, _: &Context, mode: AskMode) -> bool {
        mode == AskMode::Prompt
    }

    fn render(&self, _: &Context, reply: &Reply) -> Answer {
        let (decision, reason, rewrite) = match reply {
            Reply::Allow { reason, rewrite } => ("allow", reason, rewrite.as_ref()),
            Reply::Deny { reason } => ("deny", reason, None),
            Reply::Ask { reason } => ("ask", reason, None),
            Reply::Pass => return Answer::ok(None),
        };
        let mut answer = json!({
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        });
        // The arguments the tool runs with instead of the model's.
        if let Some(input) = rewrite {
            answer["modifiedArgs"] = input.clone();
        }
        Answer::ok(Some(answer))
    }

    fn fail_closed(&self, event: Option<&str>, message: &str) -> Answer {
        let pre = event.is_none_or(|e| canonical(e) == "preToolUse");
        Answer {
            stdout: pre.then(|| {
                json!({"permissionDecision": "deny", "permissionDecisionReason": format!("gavel: {message}")})
                    .to_string()
            }),
            stderr: Some(format!("gavel: {message}")),
            exit: if pre { 2 } else { 1 },
        }
    }

    fn hook_config(&self, gavel: &str) -> HookConfig {
        let mut hooks = Map::new();
        for event in EVENTS {
            let command = format!("{} hook copilot --event {event}", shell_word(gavel));
            hooks.insert(
                (*event).to_owned(),
                json!([{"type": "command", "bash": command, "timeoutSec": 30}]),
            );
        }
        HookConfig {
            path: ".github/hooks/gavel.json",
            user_path: Some(".copilot/hooks/gavel.json"),
            json: json!({"version": 1, "hooks": hooks}),
            asks: "asks are denied as \"needs approval\" (nobody is asked in `copilot -p`); for \
                   interactive sessions, add `--ask prompt` to the preToolUse command, or let asks \
                   wait for `gavel approve` (`gavel init copilot --ask wait=60s`)"
                .to_owned(),
            notes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_payloads_with_argument_text_are_read() {
        let event = Copilot
            .parse(json!({
                "hook_event_name": "preToolUse", "sessionId": "s", "timestamp": 1,
                "cwd": "/ws", "toolName": "create",
                "toolArgs": "{\"path\":\"notes.md\",\"file_text\":\"hi\"}",
            }))
            .unwrap();
        let Kind::Pre(call) = &event.kind else {
            panic!("not a pre")
        };
        assert_eq!(call.input, json!({"path": "notes.md", "file_text": "hi"}));
        assert_eq!(
            Copilot.map_tool(call, "/ws"),
            (
                "write_file".to_owned(),
                json!({"path": "/ws/notes.md", "content": "hi"})
            )
        );
    }

    /// Claude Code's tool names with Copilot's arguments, as Copilot CLI
    /// 1.0.102 sends them to hooks registered for `PreToolUse`.
    #[test]
    fn claude_compatible_payloads_keep_copilots_arguments() {
        for (tool, input, name, arguments) in [
            (
                "Bash",
                json!({"command": "sudo ls"}),
                "bash",
                json!({"command": "sudo ls"}),
            ),
            (
                "Read",
                json!({"path": "/ws/a.txt"}),
                "read_file",
                json!({"path": "/ws/a.txt"}),
            ),
            (
                "Write",
                json!({"path": "/ws/b.txt", "file_text": "hi"}),
                "write_file",
                json!({"path": "/ws/b.txt", "content": "hi"}),
            ),
            (
                "Edit",
                json!({"path": "/ws/b.txt", "old_str": "hi", "new_str": "ho"}),
                "edit_file",
                json!({"path": "/ws/b.txt", "old_text": "hi", "new_text": "ho"}),
            ),
        ] {
            let event = Copilot
                .parse(json!({
                    "hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/ws",
                    "timestamp": "2026-12-04T09:36:21.570Z",
                    "tool_name": tool, "tool_input": input,
                }))
                .unwrap();
            let Kind::Pre(call) = &event.kind else {
                panic!("not a pre")
            };
            let (mapped, args) = Copilot.map_tool(call, "/ws");
            assert_eq!(mapped, name, "{tool}");
            for (key, value) in arguments.as_object().unwrap() {
                assert_eq!(&args[key], value, "{tool}: {args}");
            }
        }
    }

    #[test]
    fn a_denied_result_did_not_run() {
        let event = Copilot
            .parse(json!({
                "hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/ws",
                "tool_name": "bash", "tool_input": {"command": "rm x"},
                "tool_result": {"result_type": "denied", "text_result_for_llm": "The user denied"},
            }))
            .unwrap();
        let Kind::Post { result, .. } = event.kind else {
            panic!("not a post")
        };
        assert_eq!(result.status, ExecutionStatus::Blocked);
    }

    #[test]
    fn failing_closed_prints_a_deny_too() {
        let answer = Copilot.fail_closed(Some("preToolUse"), "bad policy");
        assert_eq!(answer.exit, 2);
        assert!(
            answer
                .stdout
                .unwrap()
                .contains(r#""permissionDecision":"deny""#)
        );
        assert_eq!(Copilot.fail_closed(Some("sessionEnd"), "x").exit, 1);
    }
}
