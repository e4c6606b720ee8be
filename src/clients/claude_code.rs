//! Claude Code's hook protocol (`gavel hook claude-code`).
//!
//! Events: `PreToolUse` (decide), `PostToolUse` / `PostToolUseFailure`
//! (complete, by `tool_use_id`), `PostToolBatch` (every call of a turn,
//! with what the model was told: closes the asks that were declined), any
//! other event is a lifecycle event. Answer: `hookSpecificOutput` with
//! `permissionDecision` allow | deny | ask (ask is Claude Code's own
//! prompt); a `Bash` call allowed under a sandbox the kernel enforces is
//! answered with `updatedInput`, its command rewritten to run under
//! `gavel exec`. Fails closed with exit 2 (stderr shown to Claude), except on
//! `Stop`/`SubagentStop`, where exit 2 would keep the agent working: exit 1.
//!
//! | Claude Code | gavel | arguments |
//! |---|---|---|
//! | `Bash` | `bash` | `command` |
//! | `Read` | `read_file` | `path` |
//! | `Write` | `write_file` | `path`, `content` |
//! | `Edit` | `edit_file` | `path`, `old_text`, `new_text` |
//! | `MultiEdit`, `NotebookEdit` | `apply_patch` | `paths`, `edits` / `new_source` |
//! | `Glob` | `glob` | `pattern`, joined to `path` (default: the cwd) unless absolute |
//! | `Grep` | `read_file` | `path` (default: the cwd) |
//! | `LS` | `glob` | `path/*` (default: the cwd) |
//! | `NotebookRead` | `read_file` | `path` ← `notebook_path` |
//! | anything else | its own name | its own input |
//!
//! `Grep` becomes a `read_file` of the folder or file it searches: it
//! reveals file *content*, so a policy that guards reads (the workspace
//! boundary, a deny on `.env`) must guard it too.

use serde_json::{Value, json};

use super::{
    Answer, AskMode, BatchCall, Client, Context, Fields, HookConfig, HookError, HookEvent, Kind,
    Reply, ToolCall, event_field, object, required, result, text, text_of,
};
use crate::audit::ExecutionStatus;

/// The client name recorded in `ClientCall`.
pub const CLIENT: &str = "claude-code";

/// Claude Code.
pub struct ClaudeCode;

/// The events `gavel init claude-code` installs gavel for; tool events match every tool.
const EVENTS: &[(&str, bool)] = &[
    ("PreToolUse", true),
    ("PostToolUse", true),
    ("PostToolUseFailure", true),
    ("PostToolBatch", false),
    ("UserPromptSubmit", false),
    ("SessionStart", false),
    ("Stop", false),
];

impl Client for ClaudeCode {
    fn name(&self) -> &'static str {
        CLIENT
    }

    fn parse(&self, input: Value) -> Result<HookEvent, HookError> {
        let object = object(input)?;
        let event = required(&object, "hook_event_name")?;
        let context = Context {
            session_id: required(&object, "session_id")?,
            cwd: required(&object, "cwd")?,
            project_dir: None,
            client_version: text(&object, "claude_code_version")
                .or_else(|| text(&object, "version")),
            permission_mode: text(&object, "permission_mode"),
            prompt_id: text(&object, "prompt_id"),
            agent_id: text(&object, "agent_id"),
            agent_type: text(&object, "agent_type"),
            model: text(&object, "model"),
            user: None,
            event: event.clone(),
        };
        let call = |object: &serde_json::Map<String, Value>, needs_input: bool| {
            let input = match object.get("tool_input") {
                Some(input) => input.clone(),
                None if needs_input => {
                    return Err(HookError::MissingEventField {
                        event: event.clone(),
                        field: "tool_input",
                    });
                }
                None => Value::Null,
            };
            Ok(ToolCall {
                tool: event_field(object, &event, "tool_name")?,
                input,
                id: Some(event_field(object, &event, "tool_use_id")?),
            })
        };
        let duration_ms = object.get("duration_ms").and_then(Value::as_u64);
        let kind = match event.as_str() {
            "PreToolUse" => Kind::Pre(call(&object, true)?),
            "PostToolUse" => Kind::Post {
                call: call(&object, false)?,
                result: result(
                    ExecutionStatus::Succeeded,
                    text_of(object.get("tool_response").unwrap_or(&Value::Null)),
                    duration_ms,
                ),
            },
            "PostToolUseFailure" => Kind::Post {
                call: call(&object, false)?,
                result: result(
                    ExecutionStatus::Failed,
                    text_of(object.get("error").unwrap_or(&Value::Null)),
                    duration_ms,
                ),
            },
            "PostToolBatch" => {
                let items = object
                    .get("tool_calls")
                    .or_else(|| object.get("tool_results"))
                    .and_then(Value::as_array)
                    .ok_or_else(|| HookError::MissingEventField {
                        event: event.clone(),
                        field: "tool_calls",
                    })?;
                let mut calls = Vec::new();
                for item in items {
                    let Value::Object(item) = item else {
                        return Err(HookError::MissingEventField {
                            event: event.clone(),
                            field: "tool_calls",
                        });
                    };
                    let told = ["tool_response", "tool_result", "error_message", "error"]
                        .iter()
                        .find_map(|field| item.get(*field).filter(|v| !v.is_null()))
                        .map(text_of)
                        .unwrap_or_default();
                    calls.push(BatchCall {
                        call: call(item, false)?,
                        told,
                    });
                }
                Kind::Batch(calls)
            }
            _ => Kind::lifecycle(object, event == "SessionStart"),
        };
        Ok(HookEvent { context, kind })
    }

    fn map_tool(&self, call: &ToolCall, cwd: &str) -> (String, Value) {
        let f = Fields::of(call, cwd);
        match call.tool.as_str() {
            "Bash" => f.bash("command"),
            "Read" => f.read("file_path"),
            "Write" => f.write("file_path", "content"),
            "Edit" => f.edit("file_path", "old_string", "new_string"),
            "MultiEdit" => f.patch(f.get("file_path").into_iter().collect(), "edits"),
            "NotebookEdit" => f.patch(f.get("notebook_path").into_iter().collect(), "new_source"),
            "Glob" => f.glob("pattern", "path"),
            "Grep" => f.search("path"),
            "LS" => f.list("path"),
            "NotebookRead" => f.read("notebook_path"),
            other => (other.to_owned(), call.input.clone()),
        }
    }

    fn command_field(&self, call: &ToolCall) -> Option<&'static str> {
        (call.tool == "Bash").then_some("command")
    }

    fn can_prompt(&self, _: &Context, _: AskMode) -> bool {
        true
    }

    fn render(&self, context: &Context, reply: &Reply) -> Answer {
        let (decision, reason, rewrite) = match reply {
            Reply::Allow { reason, rewrite } => ("allow", reason, rewrite.as_ref()),
            Reply::Deny { reason } => ("deny", reason, None),
            Reply::Ask { reason } => ("ask", reason, None),
            Reply::Pass => return Answer::ok(None),
        };
        let mut answer = json!({
            "hookSpecificOutput": {
                "hookEventName": context.event,
                "permissionDecision": decision,
                "permissionDecisionReason": reason,
            }
        });
        // The whole input, rewritten: Claude Code runs `updatedInput` in
        // place of what the model sent, whatever `dangerouslyDisableSandbox`
        // says (that flag only turns off Claude Code's own sandbox).
        if let Some(input) = rewrite {
            answer["hookSpecificOutput"]["updatedInput"] = input.clone();
        }
        Answer::ok(Some(answer))
    }

    fn fail_closed(&self, event: Option<&str>, message: &str) -> Answer {
        Answer {
            stdout: None,
            stderr: Some(format!("gavel: {message}")),
            // For Stop, exit 2 means "do not stop": the agent would keep
            // working unrecorded. Exit 1 shows the error and lets it end.
            exit: match event {
                Some("Stop" | "SubagentStop") => 1,
                _ => 2,
            },
        }
    }

    fn project_dir_var(&self) -> Option<&'static str> {
        Some("CLAUDE_PROJECT_DIR")
    }

    fn hook_config(&self, gavel: &str) -> HookConfig {
        let command = format!("{} hook claude-code", shell_word(gavel));
        let mut hooks = serde_json::Map::new();
        for (event, tools) in EVENTS {
            let mut group = json!({"hooks": [{"type": "command", "command": command}]});
            if *tools {
                group["matcher"] = json!("*");
            }
            hooks.insert((*event).to_owned(), json!([group]));
        }
        HookConfig {
            path: ".claude/settings.json",
            user_path: Some(".claude/settings.json"),
            json: json!({ "hooks": hooks }),
            asks: "asks go to Claude Code's own permission prompt: recorded `pending`, then \
                   `approved` when you allow the call and it runs, `rejected` when you decline; \
                   where Claude Code shows no prompt (`claude -p`) it refuses them, and a mode that \
                   skips prompts (`bypassPermissions`) may run them unasked (recorded `client_auto`); \
                   `gavel init claude-code --ask wait=60s` makes them wait for `gavel approve` instead"
                .to_owned(),
            notes: Vec::new(),
        }
    }
}

/// `word` quoted for a shell command line when it needs to be.
pub fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%".contains(&b))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pre(tool: &str, input: Value) -> HookEvent {
        ClaudeCode
            .parse(json!({
                "session_id": "s1", "transcript_path": "/t.jsonl", "cwd": "/ws",
                "permission_mode": "default", "hook_event_name": "PreToolUse",
                "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_1",
            }))
            .unwrap()
    }

    fn request(tool: &str, input: Value) -> (String, Value) {
        match pre(tool, input) {
            HookEvent {
                kind: Kind::Pre(call),
                context,
            } => ClaudeCode.map_tool(&call, &context.cwd),
            other => panic!("not a PreToolUse: {other:?}"),
        }
    }

    #[test]
    fn claude_code_tools_map_onto_gavel_tools() {
        let cases = [
            (
                "Bash",
                json!({"command":"ls","description":"list","timeout":5}),
                "bash",
                json!({"command":"ls"}),
            ),
            (
                "Read",
                json!({"file_path":"/ws/a.txt","offset":1,"limit":2}),
                "read_file",
                json!({"path":"/ws/a.txt"}),
            ),
            (
                "Write",
                json!({"file_path":"/ws/a.txt","content":"hi"}),
                "write_file",
                json!({"path":"/ws/a.txt","content":"hi"}),
            ),
            (
                "Edit",
                json!({"file_path":"/ws/a.txt","old_string":"a","new_string":"b","replace_all":false}),
                "edit_file",
                json!({"path":"/ws/a.txt","old_text":"a","new_text":"b"}),
            ),
            (
                "MultiEdit",
                json!({"file_path":"a.txt","edits":[{"old_string":"a","new_string":"b"}]}),
                "apply_patch",
                json!({"paths":["/ws/a.txt"],"edits":[{"old_string":"a","new_string":"b"}]}),
            ),
            (
                "mcp__github__create_issue",
                json!({"title":"x"}),
                "mcp__github__create_issue",
                json!({"title":"x"}),
            ),
            (
                "Glob",
                json!({"pattern":"*.rs","path":"/ws/src/"}),
                "glob",
                json!({"pattern":"/ws/src/*.rs"}),
            ),
            (
                "Glob",
                json!({"pattern":"/etc/*","path":"/ws"}),
                "glob",
                json!({"pattern":"/etc/*"}),
            ),
            (
                "Grep",
                json!({"pattern":"fn main","glob":"*.rs"}),
                "read_file",
                json!({"path":"/ws"}),
            ),
            (
                "LS",
                json!({"path":"/ws/src","ignore":["*.tmp"]}),
                "glob",
                json!({"pattern":"/ws/src/*"}),
            ),
            ("LS", json!({}), "glob", json!({"pattern":"/ws/*"})),
            (
                "NotebookRead",
                json!({"notebook_path":"nb.ipynb"}),
                "read_file",
                json!({"path":"/ws/nb.ipynb"}),
            ),
            (
                "Read",
                json!({"file_path":"src/lib.rs"}),
                "read_file",
                json!({"path":"/ws/src/lib.rs"}),
            ),
            (
                "Read",
                json!({"file_path": 7}),
                "read_file",
                json!({"path": 7}),
            ),
            ("Bash", json!({}), "bash", json!({})),
        ];
        for (tool, input, name, arguments) in cases {
            assert_eq!(
                request(tool, input.clone()),
                (name.to_owned(), arguments),
                "{tool} {input}"
            );
        }
    }

    #[test]
    fn context_keeps_mode_prompt_agent_and_cwd() {
        let event = ClaudeCode
            .parse(json!({
                "session_id": "s1", "cwd": "/ws/sub", "permission_mode": "bypassPermissions",
                "hook_event_name": "PreToolUse", "prompt_id": "p1", "agent_id": "a1",
                "agent_type": "Explore", "tool_name": "Bash",
                "tool_input": {"command": "ls"}, "tool_use_id": "t",
            }))
            .unwrap();
        let c = &event.context;
        assert_eq!(c.permission_mode.as_deref(), Some("bypassPermissions"));
        assert_eq!(c.prompt_id.as_deref(), Some("p1"));
        assert_eq!(
            (c.agent_id.as_deref(), c.agent_type.as_deref()),
            (Some("a1"), Some("Explore"))
        );
        assert_eq!(
            ClaudeCode.approval_channel(c),
            super::super::ApprovalChannel::ClientAuto
        );
    }

    #[test]
    fn malformed_inputs_are_refused() {
        assert!(matches!(
            ClaudeCode.parse(json!([1])),
            Err(HookError::NotObject)
        ));
        assert!(matches!(
            ClaudeCode.parse(json!({"session_id":"s","cwd":"/"})),
            Err(HookError::MissingField {
                field: "hook_event_name"
            })
        ));
        let err = ClaudeCode
            .parse(
                json!({"session_id":"s","cwd":"/","hook_event_name":"PreToolUse",
                "tool_name":"Bash","tool_input":{}}),
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`PreToolUse` hook input is missing the field `tool_use_id`"
        );
    }

    #[test]
    fn a_batch_lists_each_call_with_what_the_model_was_told() {
        let event = ClaudeCode
            .parse(json!({
                "session_id": "s", "cwd": "/w", "hook_event_name": "PostToolBatch",
                "tool_calls": [
                    {"tool_use_id": "t1", "tool_name": "Bash", "tool_input": {"command": "ls"},
                     "tool_response": "a.txt"},
                    {"tool_use_id": "t2", "tool_name": "Write", "tool_input": {"file_path": "/w/x"},
                     "tool_response": "The user doesn't want to proceed with this tool use."},
                ],
            }))
            .unwrap();
        let Kind::Batch(calls) = event.kind else {
            panic!("not a batch")
        };
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].call.id.as_deref(), Some("t2"));
        assert!(calls[1].told.contains("doesn't want to proceed"));
    }

    #[test]
    fn other_events_keep_their_data_without_the_event_name() {
        let event = ClaudeCode
            .parse(json!({"session_id":"s","cwd":"/w","hook_event_name":"UserPromptSubmit","prompt":"hi"}))
            .unwrap();
        assert_eq!(
            event.kind,
            Kind::Lifecycle {
                data: json!({"session_id":"s","cwd":"/w","prompt":"hi"}),
                starts_session: false
            }
        );
    }

    #[test]
    fn responses_become_results() {
        let event = ClaudeCode
            .parse(json!({"session_id":"s","cwd":"/w","hook_event_name":"PostToolUse","tool_name":"Bash",
                "tool_input":{"command":"ls"},"tool_use_id":"t","tool_response":{"stdout":"a"},"duration_ms":12}))
            .unwrap();
        let Kind::Post { result, .. } = event.kind else {
            panic!("not a post")
        };
        assert_eq!(result.status, ExecutionStatus::Succeeded);
        assert_eq!(result.content, r#"{"stdout":"a"}"#);
        assert_eq!(result.duration_ms, 12);
    }

    #[test]
    fn the_answer_is_claude_codes_permission_decision() {
        let context = Context {
            event: "PreToolUse".into(),
            ..Context::default()
        };
        let answer = ClaudeCode.render(
            &context,
            &Reply::Deny {
                reason: "[bash.hard_deny] no".into(),
            },
        );
        let printed: Value = serde_json::from_str(answer.stdout.as_deref().unwrap()).unwrap();
        assert_eq!(
            printed,
            json!({"hookSpecificOutput":{"hookEventName":"PreToolUse",
                "permissionDecision":"deny","permissionDecisionReason":"[bash.hard_deny] no"}})
        );
        assert_eq!(ClaudeCode.fail_closed(Some("Stop"), "x").exit, 1);
        assert_eq!(ClaudeCode.fail_closed(None, "x").exit, 2);
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("/usr/bin/gavel"), "/usr/bin/gavel");
        assert_eq!(shell_word("/a b/gavel"), "'/a b/gavel'");
        assert_eq!(shell_word("/it's/gavel"), r"'/it'\''s/gavel'");
    }
}
