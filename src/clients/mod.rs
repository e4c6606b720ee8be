//! Agent clients' hook protocols: one module per client (Claude Code,
//! Codex, Gemini CLI, Copilot CLI, Cursor) behind one small trait, and the
//! table `gavel hook <client>` looks clients up in. A client reads its hook
//! input into a [`HookEvent`], maps its tools and argument names onto
//! gavel's vocabulary (keeping its own name and input beside them, in
//! `ClientCall`), and renders gavel's answer in its own output format,
//! including the answer that fails closed when gavel cannot decide.
//!
//! Pure: no I/O, no clock, no store, no environment. The CLI reads stdin,
//! records, and prints what the client renders. Adding a client is one new
//! file and one line in [`CLIENTS`].
//!
//! A shell call allowed under a sandbox the kernel enforces is answered
//! with its input rewritten (`Reply::Allow`'s `rewrite`): the command under
//! `gavel exec`, in the field [`Client::command_field`] names, where the
//! client's answer can carry a new input.
//!
//! gavel's vocabulary: `bash` (`command`), `read_file` (`path`),
//! `write_file` (`path`, `content`), `edit_file` (`path`, `old_text`,
//! `new_text`), `glob` (`pattern`), and `apply_patch` (`paths`: every file
//! a patch or multi-edit touches, plus its content). Any other tool (MCP
//! tools, bookkeeping tools) keeps its own name and input.

pub mod claude_code;
pub use claude_code::shell_word;
pub mod codex;
pub mod completion;
pub mod copilot;
pub mod cursor;
pub mod gemini;

use std::path::Path;

use serde_json::{Map, Value};

use crate::audit::{ClientCall, ExecutionStatus, ToolResult};
use crate::request::ToolRequest;

/// The lifecycle event a hook records first when it creates the log in
/// the middle of a session: what the session did before is not in the log.
pub const LOG_STARTED_MID_SESSION: &str = "LogStartedMidSession";

/// Every client `gavel hook` knows, by name.
pub const CLIENTS: &[&dyn Client] = &[
    &claude_code::ClaudeCode,
    &codex::Codex,
    &gemini::Gemini,
    &copilot::Copilot,
    &cursor::Cursor,
];

/// The client called `name` (`claude-code`, `codex`, ...).
pub fn by_name(name: &str) -> Option<&'static dyn Client> {
    CLIENTS.iter().copied().find(|client| client.name() == name)
}

/// How long a client lets a hook command run before it gives up on it, and
/// the key of a hook entry that sets it: what `--ask wait` must stay under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookTimeout {
    /// The limit when the hook entry sets none.
    pub default: std::time::Duration,
    /// The hook entry's key that sets the limit, and whether it counts
    /// milliseconds (else seconds); `None` where gavel knows of no such key.
    pub key: Option<(&'static str, bool)>,
}

/// Each client's hook timeout (docs/approvals.md cites where each is from).
pub fn hook_timeout(client: &str) -> HookTimeout {
    use std::time::Duration;
    match client {
        // Claude Code: `timeout`, seconds; 60 s by default in the versions gavel was tested with.
        "claude-code" => HookTimeout {
            default: Duration::from_secs(60),
            key: Some(("timeout", false)),
        },
        // Codex: `timeout`, seconds (codex-rs/config hook_config.rs); 600 s when unset.
        "codex" => HookTimeout {
            default: Duration::from_secs(600),
            key: Some(("timeout", false)),
        },
        // Gemini CLI: `timeout`, milliseconds; DEFAULT_HOOK_TIMEOUT = 60000 in the pinned bundle.
        "gemini" => HookTimeout {
            default: Duration::from_secs(60),
            key: Some(("timeout", true)),
        },
        // Copilot CLI: `timeoutSec`; `gavel init` writes 30.
        "copilot" => HookTimeout {
            default: Duration::from_secs(30),
            key: Some(("timeoutSec", false)),
        },
        // Cursor: `timeout`, seconds, per hooks.json entry (cursor.com/docs/hooks, as
        // docs/approvals.md cites); its default is not stated: taken as 30 s.
        "cursor" => HookTimeout {
            default: Duration::from_secs(30),
            key: Some(("timeout", false)),
        },
        // Any other client: no key known; the shortest limit above.
        _ => HookTimeout {
            default: Duration::from_secs(30),
            key: None,
        },
    }
}

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
    MissingEventField { event: String, field: &'static str },
}

/// What the client tells about the moment of an event: who, where, under which mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The event name as the client sent it (`PreToolUse`, `BeforeTool`,
    /// `preToolUse`, `beforeShellExecution`, ...).
    pub event: String,
    /// The client's session (Cursor: `conversation_id`).
    pub session_id: String,
    /// The working directory the client reported.
    pub cwd: String,
    /// The project root the client reported, when it did (Cursor's first
    /// `workspace_roots` entry); the CLI prefers it to `cwd` as the workspace.
    pub project_dir: Option<String>,
    /// The client's version, when it tells (`cursor_version`).
    pub client_version: Option<String>,
    /// The client's permission mode (`default`, `acceptEdits`, `bypassPermissions`, ...).
    pub permission_mode: Option<String>,
    /// The prompt or turn id (Claude Code `prompt_id`, Codex `turn_id`, Cursor `generation_id`).
    pub prompt_id: Option<String>,
    /// A subagent's id and type, when the call came from one.
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    /// The model the client runs, when it tells.
    pub model: Option<String>,
    /// The person the client says is using it, when it tells (Cursor's `user_email`).
    pub user: Option<String>,
}

/// A tool call as the client describes it: its tool name, its input and,
/// when the client has one, its call id.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub tool: String,
    pub input: Value,
    pub id: Option<String>,
}

/// One call of a batch the client reports once all of a turn's calls resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchCall {
    pub call: ToolCall,
    /// What the model was told about the call (its result, or why it did not run).
    pub told: String,
}

/// What a hook input is about.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Before a tool runs: gavel decides.
    Pre(ToolCall),
    /// The client is about to ask a person to approve a call (Codex
    /// `PermissionRequest`): gavel may answer in the person's place only to deny.
    Permission(ToolCall),
    /// After a tool ran, with its result.
    Post { call: ToolCall, result: ToolResult },
    /// Every call of a turn once all resolved (Claude Code `PostToolBatch`).
    Batch(Vec<BatchCall>),
    /// Any other event (`SessionStart`, `UserPromptSubmit`, `Stop`, ...),
    /// recorded as it came without its event name.
    Lifecycle { data: Value, starts_session: bool },
}

impl Kind {
    /// Any other event: the input as it came, without its event name.
    pub(crate) fn lifecycle(mut object: Map<String, Value>, starts_session: bool) -> Self {
        object.remove("hook_event_name");
        object.remove("hookEventName");
        Kind::Lifecycle {
            data: Value::Object(object),
            starts_session,
        }
    }
}

/// One hook input, read.
#[derive(Debug, Clone, PartialEq)]
pub struct HookEvent {
    pub context: Context,
    pub kind: Kind,
}

/// How an ask was answered, as far as the client tells (`client_prompt`,
/// or `client_auto` under a mode that runs calls without asking).
pub use crate::approval::ApprovalChannel;

/// How `gavel hook` treats an `ask` where a client may or may not be able
/// to prompt (`--ask`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskMode {
    /// Hand the ask to the client's own prompt where the client can prompt.
    Prompt,
    /// Deny every ask with "needs approval" (headless runs).
    Deny,
}

/// gavel's answer to a pre-event, before the client renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Run without a prompt; with `rewrite`, run that input instead of the
    /// one the client sent (its command under `gavel exec`, contained).
    Allow {
        reason: String,
        rewrite: Option<Value>,
    },
    /// Do not run; `reason` is shown to the model (and the user).
    Deny { reason: String },
    /// Hand to the client's own permission prompt.
    Ask { reason: String },
    /// Say nothing: the client carries on as it would without gavel
    /// (its own approval flow decides).
    Pass,
}

/// What the hook prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub exit: u8,
}

impl Answer {
    /// Exit 0, `stdout` as the one line printed (if any).
    pub fn ok(stdout: Option<Value>) -> Self {
        Self {
            stdout: stdout.map(|v| v.to_string()),
            stderr: None,
            exit: 0,
        }
    }
}

/// One agent client's hook protocol.
pub trait Client: Sync {
    /// Its name in `gavel hook <name>` and in `ClientCall.client`.
    fn name(&self) -> &'static str;

    /// Reads one hook input.
    fn parse(&self, input: Value) -> Result<HookEvent, HookError>;

    /// Maps a call onto gavel's tool name and arguments; relative paths
    /// are taken from `cwd`. Tools gavel does not know keep their name and input.
    fn map_tool(&self, call: &ToolCall, cwd: &str) -> (String, Value);

    /// The field of `call`'s input that holds the shell command gavel
    /// decides as `bash`, where this client's answer to the pre-event can
    /// replace the input (so that the command runs under `gavel exec`);
    /// `None` for other tools, and where the answer takes no new input.
    fn command_field(&self, call: &ToolCall) -> Option<&'static str> {
        let _ = call;
        None
    }

    /// Whether an `ask` on this event can be handed to the client's own prompt.
    fn can_prompt(&self, context: &Context, mode: AskMode) -> bool;

    /// Renders a reply to a pre-event (or a permission event).
    fn render(&self, context: &Context, reply: &Reply) -> Answer;

    /// What the hook prints and exits with when it failed (bad input, bad
    /// policy, unwritable record, a crash) on `event` (`None`: unreadable):
    /// never an answer that lets a call run.
    fn fail_closed(&self, event: Option<&str>, message: &str) -> Answer {
        let _ = event;
        Answer {
            stdout: None,
            stderr: Some(format!("gavel: {message}")),
            exit: 2,
        }
    }

    /// The environment variable the client sets to its project root, if any.
    fn project_dir_var(&self) -> Option<&'static str> {
        None
    }

    /// Who approved an ask that ran, as far as `context` tells.
    fn approval_channel(&self, context: &Context) -> ApprovalChannel {
        match context.permission_mode.as_deref() {
            Some("bypassPermissions" | "dontAsk" | "yolo") => ApprovalChannel::ClientAuto,
            _ => ApprovalChannel::ClientPrompt,
        }
    }

    /// The hook configuration `gavel init` writes: the file, relative to
    /// the project (or, with `user`, to the home folder), and its JSON
    /// with `gavel` as the command.
    fn hook_config(&self, gavel: &str) -> HookConfig;
}

/// A client's hook configuration file, as `gavel init` writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct HookConfig {
    /// Relative to the project root.
    pub path: &'static str,
    /// Relative to the home folder, for user-level settings; `None` when
    /// the client reads hooks from the project only.
    pub user_path: Option<&'static str>,
    /// The JSON gavel needs; merged into an existing file's `hooks` table.
    pub json: Value,
    /// What a policy's `ask` becomes with these hooks (the client's prompt,
    /// a deny, ...), in one line: `gavel init` always says it.
    pub asks: String,
    /// Anything else to set up by hand, in one line each.
    pub notes: Vec<String>,
}

impl Context {
    /// The client's call as recorded beside gavel's request: its tool,
    /// session, input (a summary over `max_input_bytes`), the input's
    /// digest, and the mode, turn and cwd of the call.
    pub fn client_call(&self, client: &str, call: &ToolCall, max_input_bytes: u64) -> ClientCall {
        let mut recorded = ClientCall::new(
            client,
            &call.tool,
            &call.input,
            Some(&self.session_id),
            max_input_bytes,
        );
        recorded.permission_mode = self.permission_mode.clone();
        recorded.prompt_id = self.prompt_id.clone();
        recorded.cwd = Some(self.cwd.clone()).filter(|cwd| !cwd.is_empty());
        recorded
    }
}

/// The request gavel decides for `call`, under `call_id`.
pub fn to_request(client: &dyn Client, call: &ToolCall, cwd: &str, call_id: &str) -> ToolRequest {
    let (name, arguments) = client.map_tool(call, cwd);
    ToolRequest::new(call_id, name, arguments)
}

/// `call`'s input with its shell command replaced by `line` (the command
/// under `gavel exec`), everything else kept; `None` where the client's
/// answer cannot carry it or the call has no command.
pub fn rewritten_input(client: &dyn Client, call: &ToolCall, line: &str) -> Option<Value> {
    let field = client.command_field(call)?;
    let mut input = call.input.as_object()?.clone();
    input.get(field)?.as_str()?;
    input.insert(field.to_owned(), Value::String(line.to_owned()));
    Some(Value::Object(input))
}

/// `call` as it was decided, when a client reports the input gavel
/// rewrote it to (a completion of a call that ran under `gavel exec`): its
/// command read back from the line, if the line names the call `call`
/// carries (or the call carries no id). Anything else as it is.
pub fn as_decided(client: &dyn Client, call: &ToolCall) -> ToolCall {
    let line = client
        .command_field(call)
        .and_then(|field| Some((field, call.input.get(field)?.as_str()?)))
        .and_then(|(field, text)| Some((field, crate::sandbox::line::ExecLine::parse(text)?)));
    let mut decided = call.clone();
    if let Some((field, line)) = line
        && call.id.as_deref().is_none_or(|id| id == line.call_id)
        && let Some(input) = decided.input.as_object_mut()
    {
        input.insert(field.to_owned(), Value::String(line.command));
    }
    decided
}

/// What a completion (a post-event) of a recorded call differs in:
/// `client` (the call was not recorded from this client), `session_id`,
/// `tool` or `input` (by digest). Empty when it belongs to the call.
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
pub fn decision_reason(decision: &crate::policy::Decision) -> String {
    format!("[{}] {}", decision.rule_id, decision.reason)
}

/// The reason of an ask the client cannot hand to a person: denied, and why.
pub fn needs_approval_reason(decision: &crate::policy::Decision, client: &str) -> String {
    format!(
        "{} (needs approval: {client} cannot ask a person from this hook, so gavel denied it; \
         allow it in the policy or run it yourself)",
        decision_reason(decision)
    )
}

// ---- helpers the adapters share ----

/// A string field of `object`, non-empty.
pub(crate) fn text(object: &Map<String, Value>, field: &str) -> Option<String> {
    object
        .get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// A required string field.
pub(crate) fn required(
    object: &Map<String, Value>,
    field: &'static str,
) -> Result<String, HookError> {
    text(object, field).ok_or(HookError::MissingField { field })
}

/// A required string field of an event.
pub(crate) fn event_field(
    object: &Map<String, Value>,
    event: &str,
    field: &'static str,
) -> Result<String, HookError> {
    text(object, field).ok_or_else(|| HookError::MissingEventField {
        event: event.to_owned(),
        field,
    })
}

/// Reads the JSON object a hook receives.
pub(crate) fn object(input: Value) -> Result<Map<String, Value>, HookError> {
    match input {
        Value::Object(object) => Ok(object),
        _ => Err(HookError::NotObject),
    }
}

/// A value as text: strings as they are, null as nothing, anything else as compact JSON.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A JSON string that holds JSON, parsed; anything else as it is.
pub(crate) fn parsed(value: Value) -> Value {
    match value {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        other => other,
    }
}

/// A result the client reported.
pub(crate) fn result(
    status: ExecutionStatus,
    content: String,
    duration_ms: Option<u64>,
) -> ToolResult {
    ToolResult {
        status,
        content,
        exit_code: None,
        duration_ms: duration_ms.unwrap_or(0),
    }
}

/// A string path made absolute against `cwd`; anything else as it is.
pub(crate) fn absolute(cwd: &str, path: Value) -> Value {
    match path {
        Value::String(p) if !p.is_empty() && !p.starts_with('/') && !p.starts_with('~') => {
            Value::String(Path::new(cwd).join(p).to_string_lossy().into_owned())
        }
        other => other,
    }
}

/// A glob pattern joined to the folder it is relative to, unless absolute.
pub(crate) fn glob_pattern(base: &Value, pattern: Value) -> Value {
    match (base, pattern) {
        (Value::String(base), Value::String(p)) if !p.is_empty() && !p.starts_with('/') => {
            Value::String(format!("{}/{p}", base.trim_end_matches('/')))
        }
        (_, other) => other,
    }
}

/// Builds gavel's arguments from the client's input: each `(gavel name,
/// value)` that is present.
pub(crate) fn arguments(pairs: Vec<(&str, Option<Value>)>) -> Value {
    let mut map = Map::new();
    for (name, value) in pairs {
        if let Some(value) = value {
            map.insert(name.to_owned(), value);
        }
    }
    Value::Object(map)
}

/// The common file-tool mappings, by gavel tool: a path field, content
/// fields, a folder field for searches. `input` is the client's input.
pub(crate) struct Fields<'a> {
    pub input: &'a Value,
    pub cwd: &'a str,
}

impl<'a> Fields<'a> {
    /// The fields of `call`'s input, with relative paths taken from `cwd`.
    pub fn of(call: &'a ToolCall, cwd: &'a str) -> Self {
        Fields {
            input: &call.input,
            cwd,
        }
    }

    pub fn get(&self, field: &str) -> Option<Value> {
        self.input.get(field).cloned()
    }

    pub fn path(&self, field: &str) -> Option<Value> {
        self.get(field).map(|p| absolute(self.cwd, p))
    }

    /// The folder a search or listing runs in: `field`, else the cwd.
    pub fn folder(&self, field: &str) -> Value {
        self.path(field)
            .unwrap_or_else(|| Value::String(self.cwd.to_owned()))
    }

    pub fn bash(&self, command: &str) -> (String, Value) {
        (
            "bash".to_owned(),
            arguments(vec![("command", self.get(command))]),
        )
    }

    pub fn read(&self, path: &str) -> (String, Value) {
        (
            "read_file".to_owned(),
            arguments(vec![("path", self.path(path))]),
        )
    }

    pub fn write(&self, path: &str, content: &str) -> (String, Value) {
        (
            "write_file".to_owned(),
            arguments(vec![
                ("path", self.path(path)),
                ("content", self.get(content)),
            ]),
        )
    }

    pub fn edit(&self, path: &str, old: &str, new: &str) -> (String, Value) {
        (
            "edit_file".to_owned(),
            arguments(vec![
                ("path", self.path(path)),
                ("old_text", self.get(old)),
                ("new_text", self.get(new)),
            ]),
        )
    }

    /// A search of file contents: a read of the folder (or file) it searches.
    pub fn search(&self, folder: &str) -> (String, Value) {
        (
            "read_file".to_owned(),
            arguments(vec![("path", Some(self.folder(folder)))]),
        )
    }

    /// A glob `pattern` taken from `folder` (default: the cwd).
    pub fn glob(&self, pattern: &str, folder: &str) -> (String, Value) {
        let base = self.folder(folder);
        (
            "glob".to_owned(),
            arguments(vec![(
                "pattern",
                self.get(pattern).map(|p| glob_pattern(&base, p)),
            )]),
        )
    }

    /// A listing of `folder`: the names in it, as the glob `folder/*`.
    pub fn list(&self, folder: &str) -> (String, Value) {
        let base = self.folder(folder);
        (
            "glob".to_owned(),
            arguments(vec![(
                "pattern",
                Some(glob_pattern(&base, Value::String("*".to_owned()))),
            )]),
        )
    }

    /// Changes to the files at `paths`, with their content under `content`.
    pub fn patch(&self, paths: Vec<Value>, content: &str) -> (String, Value) {
        let paths = paths.into_iter().map(|p| absolute(self.cwd, p)).collect();
        (
            "apply_patch".to_owned(),
            arguments(vec![
                ("paths", Some(Value::Array(paths))),
                (content, self.get(content)),
            ]),
        )
    }
}

/// The files a patch in the `*** Begin Patch` format touches (`*** Add
/// File:`, `*** Update File:`, `*** Delete File:`, `*** Move to:`), in
/// order, without repeats. A unified diff's `+++ b/x` and `--- a/x` lines
/// count too. Empty when none is found, which the policy denies.
pub fn patch_paths(patch: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for line in patch.lines() {
        let line = line.trim_end_matches('\r');
        let found = [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
            "+++ ",
            "--- ",
        ]
        .iter()
        .find_map(|marker| line.strip_prefix(marker));
        let Some(path) = found.map(str::trim) else {
            continue;
        };
        let path = if line.starts_with("+++ ") || line.starts_with("--- ") {
            if path == "/dev/null" {
                continue;
            }
            // `a/x` and `b/x` name `x`; a timestamp after a tab is dropped.
            let path = path.split('\t').next().unwrap_or(path);
            path.strip_prefix("a/")
                .or_else(|| path.strip_prefix("b/"))
                .unwrap_or(path)
        } else {
            path
        };
        if !path.is_empty() && !paths.iter().any(|p| p == path) {
            paths.push(path.to_owned());
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_is_found_by_its_name() {
        for client in CLIENTS {
            assert_eq!(
                by_name(client.name()).map(|c| c.name()),
                Some(client.name())
            );
        }
        assert!(by_name("vim").is_none());
    }

    #[test]
    fn a_rewrite_replaces_only_the_command_and_reads_back_for_its_own_call() {
        let call = ToolCall {
            tool: "Bash".into(),
            input: serde_json::json!({"command": "ls", "timeout": 5, "dangerouslyDisableSandbox": true}),
            id: Some("toolu_1".into()),
        };
        let line = crate::sandbox::line::ExecLine {
            gavel: "/bin/gavel".into(),
            db: "/w/a.db".into(),
            call_id: "toolu_1".into(),
            command: "ls".into(),
        };
        let client = &claude_code::ClaudeCode;
        let input = rewritten_input(client, &call, &line.render()).unwrap();
        assert_eq!(
            input,
            serde_json::json!({"command": line.render(), "timeout": 5, "dangerouslyDisableSandbox": true})
        );
        let reported = ToolCall {
            input,
            ..call.clone()
        };
        assert_eq!(as_decided(client, &reported), call);
        // A line naming another call is not this call's.
        let other = ToolCall {
            id: Some("toolu_2".into()),
            ..reported.clone()
        };
        assert_eq!(as_decided(client, &other), other);
        // Cursor's answer takes no rewrite; other tools have no command.
        assert_eq!(rewritten_input(&cursor::Cursor, &call, "x"), None);
        let read = ToolCall {
            tool: "Read".into(),
            ..call
        };
        assert_eq!(rewritten_input(client, &read, "x"), None);
    }

    #[test]
    fn patch_paths_names_every_file_once() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Update File: src/b.rs\n@@\n-x\n+y\n\
                     *** Move to: src/c.rs\n*** Delete File: a.txt\n*** End Patch\n";
        assert_eq!(patch_paths(patch), ["a.txt", "src/b.rs", "src/c.rs"]);
        let diff = "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/new.txt\n";
        assert_eq!(patch_paths(diff), ["x.txt", "new.txt"]);
        assert!(patch_paths("just text").is_empty());
    }
}
