//! The audit record's vocabulary: the events of a call (request, decision,
//! approval, result), of a session (lifecycle) and of grants (grant,
//! revocation), the closed vocabularies they hold (an approval's status,
//! channel and cancel cause; a grant's scope), and the `AuditSink` they
//! are appended to. The SQLite store is one sink; a `Vec<Event>` is another.
//!
//! Each event body serializes to the exact JSON bytes the store keeps and
//! hashes; nothing here knows about SQL or the chain.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::facts::Facts;
use crate::policy::{Action, History, LayerRef, PolicyRef, ShadowVerdict};
use crate::principal::Principal;

mod approval;
pub use approval::{ApprovalRecord, EnrolmentRecord, Factor, PasskeyAssertion, PasskeyKey};

/// How execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionStatus {
    /// The handler was not called: denied, rejected or cancelled.
    Blocked,
    Succeeded,
    /// The handler was called (or missing) and reported an error.
    Failed,
}

impl ExecutionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::Blocked => "blocked",
            ExecutionStatus::Succeeded => "succeeded",
            ExecutionStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "blocked" => Some(ExecutionStatus::Blocked),
            "succeeded" => Some(ExecutionStatus::Succeeded),
            "failed" => Some(ExecutionStatus::Failed),
            _ => None,
        }
    }
}

/// What execution returned: always a result, never an escaped error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    pub status: ExecutionStatus,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
}

/// Results longer than this are stored as a digest and a prefix.
pub const MAX_STORED_CONTENT: usize = 16 * 1024;

/// The tool a client named and the input it sent, when gavel mapped it onto
/// its own vocabulary (Claude Code's `Bash` becomes `bash`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientCall {
    pub client: String,
    pub tool: String,
    /// The input as sent, or a summary of it (`input_bytes` is then set).
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// SHA-256 (hex) of the input's compact JSON: what a completion is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_sha256: Option<String>,
    /// Set when the input was too large to keep: its size in bytes (compact JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_bytes: Option<u64>,
    /// The client's permission mode when it sent the call (Claude Code's
    /// `permission_mode`: was the call made under `bypassPermissions`?).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// The prompt or turn the call belongs to (Claude Code `prompt_id`,
    /// Codex `turn_id`, Cursor `generation_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// The working directory the client reported with the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

impl ClientCall {
    /// The client's call, bound by the digest of its input; an input over
    /// `max_bytes` is kept as a summary (`JsonMeasure::summary`), with its
    /// full size in `input_bytes`.
    pub fn new(
        client: &str,
        tool: &str,
        input: &Value,
        session_id: Option<&str>,
        max_bytes: u64,
    ) -> Self {
        let measured = JsonMeasure::of(input);
        let (input, input_bytes) = if measured.bytes > max_bytes {
            (measured.summary(), Some(measured.bytes))
        } else {
            (input.clone(), None)
        };
        Self {
            client: client.to_owned(),
            tool: tool.to_owned(),
            input,
            session_id: session_id.map(str::to_owned),
            input_sha256: Some(measured.sha256),
            input_bytes,
            permission_mode: None,
            prompt_id: None,
            cwd: None,
        }
    }

    /// The digest a completion's input must match: the recorded one, or
    /// (records from before digests were kept) the digest of the kept input.
    pub fn bound_digest(&self) -> String {
        self.input_sha256
            .clone()
            .unwrap_or_else(|| JsonMeasure::of(&self.input).sha256)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    pub tool_use_id: String,
    /// The model's input, or, when it was over the size limit, the first
    /// bytes of its compact JSON as a string (`arguments_bytes` and
    /// `arguments_sha256` then describe the whole).
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_sha256: Option<String>,
    /// Who made the call, from where, through what (format 2; absent in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<Principal>,
}

/// A client's input recorded beside the arguments gavel mapped it to is
/// kept whole up to this size (compact JSON bytes); a larger one is kept by
/// size, digest and first bytes, since the arguments carry its content.
pub const INLINE_CLIENT_INPUT: u64 = 64 * 1024;

/// The default limit on a request's arguments: 4 MiB of compact JSON.
pub const DEFAULT_MAX_ARGUMENT_BYTES: u64 = 4 * 1024 * 1024;

/// How many bytes of an over-large value's JSON the record keeps.
pub const OVERSIZED_PREFIX: usize = 256;

/// The size and SHA-256 of a JSON value's compact serialization, measured
/// without building the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonMeasure {
    pub bytes: u64,
    pub sha256: String,
    /// The first `OVERSIZED_PREFIX` bytes of the text (cut at a char boundary).
    pub prefix: String,
}

impl JsonMeasure {
    /// The size alone: cheap enough for every call.
    pub fn size(value: &Value) -> u64 {
        struct Count(u64);
        impl std::io::Write for Count {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0 += buf.len() as u64;
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut count = Count(0);
        // Writing a `Value` to a sink that never fails cannot fail.
        let _ = serde_json::to_writer(&mut count, value);
        count.0
    }

    pub fn of(value: &Value) -> Self {
        use sha2::Digest;
        struct Sink {
            bytes: u64,
            hasher: sha2::Sha256,
            prefix: Vec<u8>,
        }
        impl std::io::Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.bytes += buf.len() as u64;
                self.hasher.update(buf);
                let room = OVERSIZED_PREFIX.saturating_sub(self.prefix.len());
                self.prefix.extend_from_slice(&buf[..room.min(buf.len())]);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut sink = Sink {
            bytes: 0,
            hasher: sha2::Sha256::new(),
            prefix: Vec::new(),
        };
        // Writing a `Value` to a sink that never fails cannot fail.
        let _ = serde_json::to_writer(&mut sink, value);
        let prefix = match String::from_utf8(sink.prefix) {
            Ok(text) => text,
            Err(err) => {
                let valid = err.utf8_error().valid_up_to();
                String::from_utf8_lossy(&err.into_bytes()[..valid]).into_owned()
            }
        };
        Self {
            bytes: sink.bytes,
            sha256: crate::digest::hex(&sink.hasher.finalize()),
            prefix,
        }
    }

    /// What the record keeps instead of an over-large value: its first bytes, as a string.
    pub fn summary(&self) -> Value {
        Value::String(self.prefix.clone())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    pub action: Action,
    pub rule_id: String,
    pub reason: String,
    pub policy: PolicyRef,
    /// Under layered policies, the deciding layer (docs/record-format.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<String>,
    /// Under layered policies, every layer consulted, top first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerRef>,
    /// The verdicts of shadow policies on this call (never enforced).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shadow: Vec<ShadowVerdict>,
    /// The sandbox of an allow rule that names one (docs/sandbox.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::SandboxRecord>,
    /// The call's labels, for later calls' flow rules (docs/flows.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// The earlier call whose label made the deciding rule's `after` hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<crate::policy::After>,
    /// Who must approve the call (an ask rule's `approvers` and `quorum`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<crate::policy::Approvers>,
    /// The last seq of the record the session's history was read through,
    /// when the policy read it: replay reads the same rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_through: Option<u64>,
    pub facts: Facts,
}

/// How the approval stage ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// The decision was `allow` or `deny`; nobody was asked.
    NotRequired,
    Approved,
    Rejected,
    /// No answer could be had: EOF, Ctrl-C, no terminal, an approver error.
    Cancelled,
    /// Handed to the client's own prompt (Claude Code); its answer is not yet known.
    Pending,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::NotRequired => "not_required",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Rejected => "rejected",
            ApprovalStatus::Cancelled => "cancelled",
            ApprovalStatus::Pending => "pending",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::NotRequired,
            Self::Approved,
            Self::Rejected,
            Self::Cancelled,
            Self::Pending,
        ]
        .into_iter()
        .find(|status| status.as_str() == s)
    }
}

impl std::fmt::Display for ApprovalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an approval was answered (recorded on every approval row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalChannel {
    /// A person at gavel's terminal prompt (or no terminal to ask on).
    Tty,
    /// A flag answered for everyone (`run --approve`, `--reject`).
    Flag,
    /// The `serve` client, over its stream.
    Serve,
    /// The agent client's own permission prompt (Claude Code's `ask`).
    ClientPrompt,
    /// The agent client let the call run without a prompt (its own allow rules or mode).
    ClientAuto,
    /// A library caller's own approver.
    Api,
    /// Waiting in gavel's pending queue (`--ask wait`): the `pending` row of
    /// an asked call, and its `cancelled` row when the wait ends unanswered.
    Queue,
    /// `gavel approve` / `gavel reject` from another process.
    Cli,
    /// The approval page (`gavel approvals --listen`).
    Web,
    /// An MCP client's answer to gavel's `elicitation/create` request
    /// (`gavel mcp`); the client may answer it without asking a person.
    ClientElicitation,
}

impl ApprovalChannel {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalChannel::Tty => "tty",
            ApprovalChannel::Flag => "flag",
            ApprovalChannel::Serve => "serve",
            ApprovalChannel::ClientPrompt => "client_prompt",
            ApprovalChannel::ClientAuto => "client_auto",
            ApprovalChannel::Api => "api",
            ApprovalChannel::Queue => "queue",
            ApprovalChannel::Cli => "cli",
            ApprovalChannel::Web => "web",
            ApprovalChannel::ClientElicitation => "client_elicitation",
        }
    }
}

/// Why an approval was `cancelled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelCause {
    /// There was no terminal to ask on (stdin or stderr is not a terminal).
    NoTty,
    /// The input ended before an answer.
    Eof,
    /// Ctrl-C at the prompt.
    Interrupt,
    /// No answer in time.
    Timeout,
    /// Another request came in place of the answer.
    Superseded,
    /// The answer could not be read as one (not JSON, not for this call, ...).
    Malformed,
    /// The prompt could not be shown or read.
    Error,
    /// The rule names approvers, and nobody here can prove being one (a
    /// terminal, a flag, a client's own prompt): only the pending queue,
    /// answered with a second factor, can approve it.
    FactorRequired,
}

impl CancelCause {
    pub fn as_str(self) -> &'static str {
        match self {
            CancelCause::NoTty => "no_tty",
            CancelCause::Eof => "eof",
            CancelCause::Interrupt => "interrupt",
            CancelCause::Timeout => "timeout",
            CancelCause::Superseded => "superseded",
            CancelCause::Malformed => "malformed",
            CancelCause::Error => "error",
            CancelCause::FactorRequired => "factor_required",
        }
    }
}

/// The chained row that switches a log's record format from the next row on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormatRecord {
    /// The format of every row after this one.
    pub format: u32,
    /// The format this row (and the rows before it) is in.
    pub previous: u32,
    /// The gavel version that switched it.
    pub gavel: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    pub status: ExecutionStatus,
    /// The content, or its first bytes when it was longer than `MAX_STORED_CONTENT`.
    pub content: String,
    /// Set when `content` was cut: the SHA-256 (hex) and size of the full content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// The sandbox profile the command ran in, when gavel ran it contained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contained: Option<String>,
}

/// What the sandbox refused a contained call (docs/sandbox.md): each
/// write, creation, removal, rename, mode change, execution or socket
/// outside what its profile permits, and the program that tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedRecord {
    /// The profile the command ran in.
    pub profile: String,
    pub attempts: Vec<crate::sandbox::observe::Attempt>,
    /// Refused attempts beyond the ones kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ResultRecord {
    /// Records `result`, keeping a digest instead of very large content.
    pub fn from_result(result: &ToolResult) -> Self {
        let (content, content_sha256, content_bytes) = if result.content.len() > MAX_STORED_CONTENT
        {
            let mut cut = MAX_STORED_CONTENT;
            while !result.content.is_char_boundary(cut) {
                cut -= 1;
            }
            (
                result.content[..cut].to_owned(),
                Some(crate::digest::hex(&crate::digest::sha256(
                    result.content.as_bytes(),
                ))),
                Some(result.content.len() as u64),
            )
        } else {
            (result.content.clone(), None, None)
        };
        Self {
            status: result.status,
            content,
            content_sha256,
            content_bytes,
            exit_code: result.exit_code,
            duration_ms: result.duration_ms,
            contained: None,
        }
    }
}

/// A completion that gavel could not accept as the end of a governed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyKind {
    /// The call was blocked (denied, rejected or cancelled) and the client reports it ran.
    RanDespiteDeny,
    /// The client reports a tool ran that gavel never decided.
    RanWithoutDecision,
    /// The completion's session, tool or input differ from the recorded request.
    CompletionMismatch,
    /// The call already had its result (or its anomaly) and another completion came.
    SecondCompletion,
    /// A client without call ids reported a completion that several open
    /// calls could own, not all allowed by one rule; none was completed.
    AmbiguousCompletion,
    /// A new call came with the id of a call already recorded; it was refused.
    ReusedCallId,
    /// An MCP call ran (or was refused) under a tool definition that changed
    /// since the log last saw it (`gavel mcp`).
    DefinitionChanged,
}

impl AnomalyKind {
    pub const ALL: [AnomalyKind; 7] = [
        AnomalyKind::RanDespiteDeny,
        AnomalyKind::RanWithoutDecision,
        AnomalyKind::CompletionMismatch,
        AnomalyKind::SecondCompletion,
        AnomalyKind::AmbiguousCompletion,
        AnomalyKind::ReusedCallId,
        AnomalyKind::DefinitionChanged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AnomalyKind::RanDespiteDeny => "ran_despite_deny",
            AnomalyKind::RanWithoutDecision => "ran_without_decision",
            AnomalyKind::CompletionMismatch => "completion_mismatch",
            AnomalyKind::SecondCompletion => "second_completion",
            AnomalyKind::AmbiguousCompletion => "ambiguous_completion",
            AnomalyKind::ReusedCallId => "reused_call_id",
            AnomalyKind::DefinitionChanged => "definition_changed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// In plain words, for people.
    pub fn describe(self) -> &'static str {
        match self {
            AnomalyKind::RanDespiteDeny => "ran despite being blocked",
            AnomalyKind::RanWithoutDecision => "ran without a decision",
            AnomalyKind::CompletionMismatch => "completion did not match its request",
            AnomalyKind::SecondCompletion => "second completion",
            AnomalyKind::AmbiguousCompletion => "completion more than one call could own",
            AnomalyKind::ReusedCallId => "refused: reused call id",
            AnomalyKind::DefinitionChanged => "tool definition changed since the log last saw it",
        }
    }
}

impl std::fmt::Display for AnomalyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A client's report that a tool ran, which did not complete a governed
/// call: recorded beside the call (never as its result), so the call's
/// first result stays what it was and the contradiction stays visible.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnomalyRecord {
    pub anomaly: AnomalyKind,
    /// What happened, in plain words.
    pub detail: String,
    /// The client event that reported it (`PostToolUse`, `PostToolUseFailure`).
    pub event: String,
    /// The client's id for the call it reported.
    pub tool_use_id: String,
    /// The tool, session and input the completion carried.
    pub client: ClientCall,
    /// For `completion_mismatch`: which of `client`, `session_id`, `tool`, `input` differ.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mismatched: Vec<String>,
    /// The result the client reported.
    pub result: ResultRecord,
}

/// A session event that is not a tool call (`UserPromptSubmit`, `Stop`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LifecycleRecord {
    pub event: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub data: Value,
}

/// What a grant covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GrantScope {
    /// This exact call again: the same tool with the same arguments.
    Call {
        tool: String,
        arguments_sha256: String,
    },
    /// `bash` running only this program and subcommand (`cargo test`), with
    /// any arguments, every path inside the workspace.
    Command { words: Vec<String> },
    /// A file tool (or an MCP tool with declared path arguments) whose
    /// every path, relative to the workspace, matches `glob`.
    Paths { tool: String, glob: String },
    /// An MCP server's tool (`mcp__SERVER__TOOL`) with any arguments.
    Tool { tool: String },
}

impl GrantScope {
    /// The scope in words.
    pub fn describe(&self) -> String {
        match self {
            GrantScope::Call { tool, .. } => format!("this exact `{tool}` call"),
            GrantScope::Command { words } => format!("`{}` with any arguments", words.join(" ")),
            GrantScope::Paths { tool, glob } => format!("`{tool}` on paths under `{glob}`"),
            GrantScope::Tool { tool } => format!("`{tool}` with any arguments"),
        }
    }
}

/// The payload of a `grant` row (`crate::approvals::grants` reads it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantRecord {
    /// The grant's id (the row's `call_id` is `grant/<id>`).
    pub grant: String,
    pub scope: GrantScope,
    /// Only calls of this client session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Only until then (microseconds since the epoch, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_us: Option<i64>,
    /// Only this many calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uses: Option<u64>,
    /// Who created it, and how.
    pub created_by: String,
    pub channel: ApprovalChannel,
    /// The call whose approval created it.
    pub call_id: String,
}

/// The payload of a `revocation` row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevocationRecord {
    pub grant: String,
    pub revoked_by: String,
    pub channel: ApprovalChannel,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The body of one event.
// A call's request and decision are its largest bodies and are built once
// per call, then moved into the batch: boxing them would only add an
// allocation to every call.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum EventBody {
    Request(RequestRecord),
    Decision(DecisionRecord),
    Approval(ApprovalRecord),
    Result(ResultRecord),
    Lifecycle(LifecycleRecord),
    Anomaly(AnomalyRecord),
    Format(FormatRecord),
    /// A grant created with an approval (`crate::approvals::grants`).
    Grant(GrantRecord),
    /// A grant's revocation.
    Revocation(RevocationRecord),
    /// What the sandbox refused a contained call.
    Refused(RefusedRecord),
    /// A person enrolled as an approver, or removed.
    Enrolment(EnrolmentRecord),
}

impl EventBody {
    /// The payload's field that is stored exactly as written, whatever
    /// redaction takes out of the rest: a passkey's public key and signed
    /// answers are high-entropy by nature, and must stay exact to be
    /// verified from the log.
    pub fn key_material(&self) -> Option<&'static str> {
        match self {
            EventBody::Enrolment(record) if record.passkey.is_some() => Some("passkey"),
            EventBody::Approval(record) if record.assertion.is_some() => Some("assertion"),
            _ => None,
        }
    }

    /// The kind stored beside the payload.
    pub fn kind(&self) -> &'static str {
        match self {
            EventBody::Request(_) => "request",
            EventBody::Decision(_) => "decision",
            EventBody::Approval(_) => "approval",
            EventBody::Result(_) => "result",
            EventBody::Lifecycle(_) => "lifecycle",
            EventBody::Anomaly(_) => "anomaly",
            EventBody::Format(_) => crate::chain::FORMAT_KIND,
            EventBody::Grant(_) => "grant",
            EventBody::Revocation(_) => "revocation",
            EventBody::Refused(_) => "refused",
            EventBody::Enrolment(_) => "enrolment",
        }
    }

    /// The payload's JSON bytes, as stored and hashed.
    pub fn to_json(&self) -> Vec<u8> {
        // Most payloads are a few hundred bytes: one allocation, not a
        // doubling series of them.
        let mut bytes = Vec::with_capacity(512);
        let written = match self {
            EventBody::Request(r) => serde_json::to_writer(&mut bytes, r),
            EventBody::Decision(r) => serde_json::to_writer(&mut bytes, r),
            EventBody::Approval(r) => serde_json::to_writer(&mut bytes, r),
            EventBody::Result(r) => serde_json::to_writer(&mut bytes, r),
            EventBody::Lifecycle(r) => serde_json::to_writer(&mut bytes, r),
            EventBody::Anomaly(r) => serde_json::to_writer(&mut bytes, r),
            EventBody::Format(r) => serde_json::to_writer(&mut bytes, r),
            EventBody::Grant(r) => serde_json::to_writer(&mut bytes, r),
            EventBody::Revocation(r) => serde_json::to_writer(&mut bytes, r),
            EventBody::Refused(r) => serde_json::to_writer(&mut bytes, r),
            EventBody::Enrolment(r) => serde_json::to_writer(&mut bytes, r),
        };
        // These records hold only strings, numbers and JSON values with string keys,
        // which serde_json always serializes.
        written.expect("audit records serialize to JSON");
        bytes
    }

    /// Reads a stored payload back.
    pub fn from_json(kind: &str, payload: &[u8]) -> Result<Self, String> {
        let err = |e: serde_json::Error| format!("{kind} payload: {e}");
        Ok(match kind {
            "request" => EventBody::Request(serde_json::from_slice(payload).map_err(err)?),
            "decision" => EventBody::Decision(serde_json::from_slice(payload).map_err(err)?),
            "approval" => EventBody::Approval(serde_json::from_slice(payload).map_err(err)?),
            "result" => EventBody::Result(serde_json::from_slice(payload).map_err(err)?),
            "lifecycle" => EventBody::Lifecycle(serde_json::from_slice(payload).map_err(err)?),
            "anomaly" => EventBody::Anomaly(serde_json::from_slice(payload).map_err(err)?),
            "format" => EventBody::Format(serde_json::from_slice(payload).map_err(err)?),
            "grant" => EventBody::Grant(serde_json::from_slice(payload).map_err(err)?),
            "revocation" => EventBody::Revocation(serde_json::from_slice(payload).map_err(err)?),
            "refused" => EventBody::Refused(serde_json::from_slice(payload).map_err(err)?),
            "enrolment" => EventBody::Enrolment(serde_json::from_slice(payload).map_err(err)?),
            other => return Err(format!("unknown event kind `{other}`")),
        })
    }
}

/// One event of the record.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub call_id: String,
    /// The tool, in gavel's vocabulary; `None` for lifecycle events.
    pub tool: Option<String>,
    /// Microseconds since the Unix epoch, UTC.
    pub ts_us: i64,
    pub body: EventBody,
    /// Who the event is on behalf of: its user, host, client, session and
    /// agent are the row's provenance columns (format 2).
    pub principal: Option<std::sync::Arc<Principal>>,
}

impl Event {
    pub fn now(call_id: &str, tool: Option<&str>, body: EventBody) -> Self {
        Self {
            call_id: call_id.to_owned(),
            tool: tool.map(str::to_owned),
            ts_us: chrono::Utc::now().timestamp_micros(),
            body,
            principal: None,
        }
    }

    /// The same event, on behalf of `principal`.
    pub fn by(mut self, principal: Option<&std::sync::Arc<Principal>>) -> Self {
        self.principal = principal.cloned();
        self
    }
}

/// Why the record could not be written. The runner fails closed on it.
#[derive(Debug, thiserror::Error)]
#[error("audit record unavailable: {0}")]
pub struct AuditError(pub Box<dyn std::error::Error + Send + Sync>);

/// Where events go. `append` writes all of `events` atomically, in order.
pub trait AuditSink {
    fn append(&mut self, events: &[Event]) -> Result<(), AuditError>;

    /// [`AuditSink::append`] of events the caller gives away: a sink that
    /// keeps them (holds them back, say) takes them without a copy.
    fn append_owned(&mut self, events: Vec<Event>) -> Result<(), AuditError> {
        self.append(&events)
    }

    /// What the earlier calls of `session` did, for flow rules: for each
    /// of `labels`, the first call that set it and took place, and the
    /// last seq of the record read (docs/flows.md).
    /// `None`: this sink cannot say, and the history is unknown (flow
    /// rules then fail closed).
    fn session_history(
        &mut self,
        session: &str,
        labels: &[String],
    ) -> Result<Option<(u64, History)>, AuditError> {
        let _ = (session, labels);
        Ok(None)
    }
}

impl<T: AuditSink + ?Sized> AuditSink for &mut T {
    fn append(&mut self, events: &[Event]) -> Result<(), AuditError> {
        (**self).append(events)
    }

    fn append_owned(&mut self, events: Vec<Event>) -> Result<(), AuditError> {
        (**self).append_owned(events)
    }

    fn session_history(
        &mut self,
        session: &str,
        labels: &[String],
    ) -> Result<Option<(u64, History)>, AuditError> {
        (**self).session_history(session, labels)
    }
}

/// An in-memory record, for tests and embedding.
impl AuditSink for Vec<Event> {
    fn append(&mut self, events: &[Event]) -> Result<(), AuditError> {
        self.extend_from_slice(events);
        Ok(())
    }

    fn append_owned(&mut self, events: Vec<Event>) -> Result<(), AuditError> {
        self.extend(events);
        Ok(())
    }

    /// The same reading as the store's, seqs counted from 1.
    fn session_history(
        &mut self,
        session: &str,
        labels: &[String],
    ) -> Result<Option<(u64, History)>, AuditError> {
        let of_session = |e: &Event| {
            e.principal
                .as_ref()
                .is_some_and(|p| p.session.as_deref() == Some(session))
        };
        let blocked = |call_id: &str| {
            self.iter().any(|e| {
                e.call_id == call_id
                    && match &e.body {
                        EventBody::Approval(a) => matches!(
                            a.status,
                            ApprovalStatus::Rejected | ApprovalStatus::Cancelled
                        ),
                        EventBody::Result(r) => r.status == ExecutionStatus::Blocked,
                        _ => false,
                    }
            })
        };
        let mut history = History::default();
        for event in self.iter().filter(|e| of_session(e)) {
            if let EventBody::Decision(d) = &event.body
                && d.action != Action::Deny
                && !d.labels.is_empty()
                && !blocked(&event.call_id)
            {
                let read: Vec<String> = d
                    .labels
                    .iter()
                    .filter(|l| labels.contains(l))
                    .cloned()
                    .collect();
                history.add(&event.call_id, &read);
            }
        }
        Ok(Some((self.len() as u64, history)))
    }
}

/// Holds each call's `result` back and writes it with the next batch, or at
/// `flush`: a stream of calls then costs one commit per call instead of two.
/// Requests, decisions and approvals are never held back, so write-ahead is
/// unchanged; a process killed with a result held back leaves that call
/// `incomplete`, as if it had been killed while the tool ran.
pub struct DeferredResults<S: AuditSink> {
    inner: S,
    pending: Vec<Event>,
}

impl<S: AuditSink> DeferredResults<S> {
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            pending: Vec::new(),
        }
    }

    /// The sink behind: what is appended to it directly is not held back,
    /// and goes before any results still held.
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The sink behind, once the held results are written or given up.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Whether results are held back, owed to the record.
    pub fn holds(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Writes any held-back results now.
    pub fn flush(&mut self) -> Result<(), AuditError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.inner.append(&self.pending)?;
        self.pending.clear();
        Ok(())
    }
}

impl<S: AuditSink> AuditSink for DeferredResults<S> {
    /// Held results do not matter: a call whose result is blocked was
    /// denied or refused in rows already written.
    fn session_history(
        &mut self,
        session: &str,
        labels: &[String],
    ) -> Result<Option<(u64, History)>, AuditError> {
        self.inner.session_history(session, labels)
    }

    fn append(&mut self, events: &[Event]) -> Result<(), AuditError> {
        if self.pending.is_empty() && !only_results(events) {
            return self.inner.append(events);
        }
        self.append_owned(events.to_vec())
    }

    fn append_owned(&mut self, events: Vec<Event>) -> Result<(), AuditError> {
        if only_results(&events) {
            self.pending.extend(events);
            return Ok(());
        }
        if self.pending.is_empty() {
            return self.inner.append(&events);
        }
        let held = self.pending.len();
        self.pending.extend(events);
        let outcome = self.inner.append(&self.pending);
        // Whatever happened to the new events, the held results stay owed until written.
        match outcome {
            Ok(()) => self.pending.clear(),
            Err(_) => self.pending.truncate(held),
        }
        outcome
    }
}

fn only_results(events: &[Event]) -> bool {
    events
        .iter()
        .all(|e| matches!(e.body, EventBody::Result(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records each append as a batch of kinds; fails while `fail` is set.
    #[derive(Default)]
    struct Batches {
        batches: Vec<Vec<&'static str>>,
        fail: std::rc::Rc<std::cell::Cell<bool>>,
    }

    impl AuditSink for Batches {
        fn append(&mut self, events: &[Event]) -> Result<(), AuditError> {
            if self.fail.get() {
                return Err(AuditError("disk full".into()));
            }
            self.batches
                .push(events.iter().map(|e| e.body.kind()).collect());
            Ok(())
        }
    }

    fn event(body: EventBody) -> Event {
        Event::now("c", Some("bash"), body)
    }

    fn result() -> Event {
        event(EventBody::Result(ResultRecord::from_result(&ToolResult {
            status: ExecutionStatus::Succeeded,
            content: String::new(),
            exit_code: None,
            duration_ms: 0,
        })))
    }

    fn request() -> Event {
        event(EventBody::Request(RequestRecord {
            tool_use_id: "c".into(),
            arguments: Value::Null,
            client: None,
            arguments_bytes: None,
            arguments_sha256: None,
            principal: None,
        }))
    }

    #[test]
    fn measuring_json_matches_its_serialization() {
        let value = serde_json::json!({"command": "ls \u{e9}", "n": [1, 2]});
        let text = serde_json::to_vec(&value).unwrap();
        let measure = JsonMeasure::of(&value);
        assert_eq!(measure.bytes, text.len() as u64);
        assert_eq!(JsonMeasure::size(&value), measure.bytes);
        assert_eq!(
            measure.sha256,
            crate::digest::hex(&crate::digest::sha256(&text))
        );
        assert_eq!(measure.prefix.as_bytes(), &text[..]);
        let big = Value::String("\u{e9}".repeat(OVERSIZED_PREFIX));
        let measure = JsonMeasure::of(&big);
        assert!(measure.prefix.len() <= OVERSIZED_PREFIX);
        assert!(measure.prefix.starts_with("\"\u{e9}"));
    }

    #[test]
    fn the_bound_digest_is_over_compact_json_with_sorted_keys() {
        // docs/record-format.md promises this, so another program can bind a completion.
        let value: Value = serde_json::from_str(r#"{ "b": 1, "a": [true, null] }"#).unwrap();
        let measure = JsonMeasure::of(&value);
        assert_eq!(measure.prefix, r#"{"a":[true,null],"b":1}"#);
    }

    #[test]
    fn anomaly_kinds_round_trip() {
        for kind in AnomalyKind::ALL {
            assert_eq!(AnomalyKind::parse(kind.as_str()), Some(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }

    #[test]
    fn results_ride_with_the_next_write_ahead_batch_or_the_flush() {
        let mut sink = Batches::default();
        let mut deferred = DeferredResults::new(&mut sink);
        deferred.append(&[request()]).unwrap();
        deferred.append(&[result()]).unwrap();
        deferred.append(&[request()]).unwrap();
        deferred.append(&[result()]).unwrap();
        deferred.flush().unwrap();
        deferred.flush().unwrap();
        assert_eq!(
            sink.batches,
            [vec!["request"], vec!["result", "request"], vec!["result"]]
        );
    }

    #[test]
    fn a_failed_batch_keeps_the_held_results_owed() {
        let mut sink = Batches::default();
        let fail = sink.fail.clone();
        let mut deferred = DeferredResults::new(&mut sink);
        deferred.append(&[result()]).unwrap();
        fail.set(true);
        assert!(deferred.append(&[request()]).is_err());
        fail.set(false);
        deferred.flush().unwrap();
        assert_eq!(sink.batches, [vec!["result"]]);
    }
}
