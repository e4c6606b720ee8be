//! OpenAI Codex CLI's hook protocol (`gavel hook codex`).
//!
//! Events: `PreToolUse` (decide, by `tool_use_id`), `PostToolUse`
//! (complete), `PermissionRequest` (Codex is about to ask a person: gavel
//! denies what its policy denies and otherwise stays silent, so the person
//! decides), any other event is a lifecycle event. Codex's `PreToolUse`
//! honours only `deny`: an `ask` (or an `allow` without `updatedInput`) is
//! treated as unsupported and the call runs. So an `allow` prints nothing
//! (the call runs), except a `Bash` call allowed under a sandbox the kernel
//! enforces: `allow` with `updatedInput`, its command rewritten to run under
//! `gavel exec`. An `ask` is denied with the ask's reason and "needs
//! approval": no person was asked, and the record says so (`cancelled`,
//! `blocked`), never `approved`. Fails closed with exit 2.
//!
//! | Codex | gavel | arguments |
//! |---|---|---|
//! | `Bash` | `bash` | `command` |
//! | `apply_patch` | `apply_patch` | `paths` (every file the patch adds, updates, deletes or moves to), `patch` |
//! | `mcp__server__tool`, anything else | its own name | its own input |

use serde_json::{Value, json};

use super::claude_code::shell_word;
use super::{
    Answer, AskMode, Client, Context, Fields, HookConfig, HookError, HookEvent, Kind, Reply,
    ToolCall, arguments, event_field, object, patch_paths, required, result, text, text_of,
};
use crate::audit::ExecutionStatus;

/// Codex CLI.
pub struct Codex;

const EVENTS: &[&str] = &[
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "UserPromptSubmit",
    "SessionStart",
    "Stop",
];

impl Client for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn parse(&self, input: Value) -> Result<HookEvent, HookError> {
        let object = object(input)?;
        let event = required(&object, "hook_event_name")?;
        let context = Context {
            session_id: required(&object, "session_id")?,
            cwd: required(&object, "cwd")?,
            project_dir: None,
            client_version: text(&object, "codex_version"),
            permission_mode: text(&object, "permission_mode"),
            prompt_id: text(&object, "turn_id"),
            agent_id: text(&object, "agent_id"),
            agent_type: text(&object, "agent_type"),
            model: text(&object, "model"),
            user: None,
            event: event.clone(),
        };
        let call = |object: &serde_json::Map<String, Value>, with_id: bool| {
            Ok::<_, HookError>(ToolCall {
                tool: event_field(object, &event, "tool_name")?,
                input: object.get("tool_input").cloned().ok_or_else(|| {
                    HookError::MissingEventField {
                        event: event.clone(),
                        field: "tool_input",
                    }
                })?,
                id: match with_id {
                    true => Some(event_field(object, &event, "tool_use_id")?),
                    false => None,
                },
            })
        };
        let kind = match event.as_str() {
            "PreToolUse" => Kind::Pre(call(&object, true)?),
            // No `tool_use_id`: matched to its call by session, tool and input.
            "PermissionRequest" => Kind::Permission(call(&object, false)?),
            "PostToolUse" => {
                let response = object.get("tool_response").cloned().unwrap_or(Value::Null);
                let exit_code = response
                    .get("exit_code")
                    .and_then(Value::as_i64)
                    .and_then(|c| i32::try_from(c).ok());
                let status = match exit_code {
                    Some(code) if code != 0 => ExecutionStatus::Failed,
                    _ => ExecutionStatus::Succeeded,
                };
                let mut reported = result(status, text_of(&response), None);
                reported.exit_code = exit_code;
                Kind::Post {
                    call: call(&object, true)?,
                    result: reported,
                }
            }
            _ => Kind::lifecycle(object, event == "SessionStart"),
        };
        Ok(HookEvent { context, kind })
    }

    fn map_tool(&self, call: &ToolCall, cwd: &str) -> (String, Value) {
        let f = Fields::of(call, cwd);
        match call.tool.as_str() {
            "Bash" => f.bash("command"),
            "apply_patch" => {
                let patch = f.get("command").or_else(|| f.get("patch"));
                let paths = patch
                    .as_ref()
                    .and_then(Value::as_str)
                    .map(patch_paths)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|p| super::absolute(cwd, Value::String(p)))
                    .collect();
                (
                    "apply_patch".to_owned(),
                    arguments(vec![("paths", Some(Value::Array(paths))), ("patch", patch)]),
                )
            }
            other => (other.to_owned(), call.input.clone()),
        }
    }

    fn command_field(&self, call: &ToolCall) -> Option<&'static str> {
        (call.tool == "Bash").then_some("command")
    }

    fn can_prompt(&self, _: &Context, _: AskMode) -> bool {
        // `PreToolUse` cannot ask; the person is asked only when Codex itself
        // decides to (its `PermissionRequest`).
        false
    }

    fn render(&self, context: &Context, reply: &Reply) -> Answer {
        match (context.event.as_str(), reply) {
            ("PermissionRequest", Reply::Deny { reason }) => Answer::ok(Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "PermissionRequest",
                    "decision": {"behavior": "deny", "message": reason},
                }
            }))),
            (_, Reply::Deny { reason }) => Answer::ok(Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": context.event,
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            }))),
            // A contained allow runs its command under `gavel exec`: Codex
            // takes `updatedInput` only with an explicit allow.
            (
                "PreToolUse",
                Reply::Allow {
                    reason,
                    rewrite: Some(input),
                },
            ) => Answer::ok(Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "permissionDecisionReason": reason,
                    "updatedInput": input,
                }
            }))),
            // Any other allow runs the call; an ask at `PermissionRequest`
            // goes to Codex's own prompt. Neither needs an answer.
            _ => Answer::ok(None),
        }
    }

    fn fail_closed(&self, event: Option<&str>, message: &str) -> Answer {
        Answer {
            stdout: None,
            stderr: Some(format!("gavel: {message}")),
            exit: match event {
                Some("Stop" | "SubagentStop") => 1,
                _ => 2,
            },
        }
    }

    fn hook_config(&self, gavel: &str) -> HookConfig {
        let command = format!("{} hook codex", shell_word(gavel));
        let mut hooks = serde_json::Map::new();
        for event in EVENTS {
            hooks.insert(
                (*event).to_owned(),
                json!([{"hooks": [{"type": "command", "command": command}]}]),
            );
        }
        HookConfig {
            path: ".codex/hooks.json",
            user_path: Some(".codex/hooks.json"),
            json: json!({ "hooks": hooks }),
            asks: "asks are denied as \"needs approval\": a Codex hook cannot ask a person, so \
                   under the coding-agent policy Codex can read and run read-only commands but every \
                   write and every other command is refused; allow what it should do without asking \
                   in gavel.toml, or let asks wait for `gavel approve` (`gavel init codex --ask wait=60s`)"
                .to_owned(),
            notes: vec![
                "Codex runs new hooks only once you have trusted them (`/hooks` in Codex; headless \
                 `codex exec` skips untrusted hooks unless given --dangerously-bypass-hook-trust)"
                    .to_owned(),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(payload: Value) -> HookEvent {
        Codex.parse(payload).unwrap()
    }

    #[test]
    fn apply_patch_is_the_files_it_touches() {
        let patch = "*** Begin Patch\n*** Add File: notes.md\n+hi\n*** Update File: /etc/hosts\n@@\n-a\n+b\n*** End Patch\n";
        let call = ToolCall {
            tool: "apply_patch".into(),
            input: json!({ "command": patch }),
            id: Some("c".into()),
        };
        let (name, arguments) = Codex.map_tool(&call, "/ws");
        assert_eq!(name, "apply_patch");
        assert_eq!(arguments["paths"], json!(["/ws/notes.md", "/etc/hosts"]));
        assert_eq!(arguments["patch"], json!(patch));
    }

    #[test]
    fn permission_requests_have_no_id_and_keep_the_turn() {
        let e = event(json!({
            "session_id": "s", "cwd": "/ws", "hook_event_name": "PermissionRequest",
            "model": "gpt", "permission_mode": "default", "transcript_path": null,
            "turn_id": "turn-1", "tool_name": "Bash", "tool_input": {"command": "ls"},
        }));
        assert_eq!(e.context.prompt_id.as_deref(), Some("turn-1"));
        match e.kind {
            Kind::Permission(call) => assert_eq!(call.id, None),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_a_deny_is_an_answer() {
        let pre = Context {
            event: "PreToolUse".into(),
            ..Context::default()
        };
        assert_eq!(
            Codex.render(
                &pre,
                &Reply::Allow {
                    reason: "r".into(),
                    rewrite: None
                }
            ),
            Answer::ok(None)
        );
        let denied = Codex.render(&pre, &Reply::Deny { reason: "r".into() });
        assert!(
            denied
                .stdout
                .unwrap()
                .contains(r#""permissionDecision":"deny""#)
        );
        let permission = Context {
            event: "PermissionRequest".into(),
            ..Context::default()
        };
        let denied = Codex.render(&permission, &Reply::Deny { reason: "r".into() });
        assert!(denied.stdout.unwrap().contains(r#""behavior":"deny""#));
        assert_eq!(
            Codex.render(&permission, &Reply::Ask { reason: "r".into() }),
            Answer::ok(None)
        );
    }
}
