//! Which recorded call `gavel exec` may run, and under which spec: the
//! call's one decision must be `allow`, and the command given must be
//! byte-for-byte the one decided. Pure over the call's recorded events.

use crate::audit::{DecisionRecord, EventBody, RequestRecord};
use crate::digest::{hex, sha256};
use crate::policy::Action;
use crate::store::StoredEvent;

use super::{READ_ONLY, SandboxRecord, Spec};

/// Why `gavel exec` refuses a call.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refusal {
    #[error("call `{call_id}` is not in the record")]
    Unknown { call_id: String },
    #[error("call `{call_id}` has {decisions} decisions in the record; an id must name one call")]
    Ambiguous { call_id: String, decisions: usize },
    #[error("call `{call_id}` is a `{tool}` call; `gavel exec` runs `bash` calls")]
    NotBash { call_id: String, tool: String },
    #[error("call `{call_id}` was decided `{action}` by `{rule_id}`, not allowed")]
    NotAllowed {
        call_id: String,
        action: Action,
        rule_id: String,
    },
    #[error("the command given is not the one decided for call `{call_id}`")]
    Mismatch { call_id: String },
    #[error(
        "call `{call_id}` was allowed without a sandbox and its command is not proven \
         read-only; an allow rule must name a profile (`sandbox = \"...\"`)"
    )]
    Uncontained { call_id: String },
    #[error("the record of call `{call_id}` cannot be read: {detail}")]
    Damaged { call_id: String, detail: String },
}

/// A call `gavel exec` may run: its command, the spec it runs under, and
/// the workspace (and folder) it was decided in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorized {
    pub command: String,
    pub profile: String,
    pub spec: Spec,
    /// SHA-256 of the spec's canonical JSON.
    pub sha256: String,
    /// Whether the spec was recorded on the decision (else: `read-only`
    /// for a command proven read-only).
    pub recorded: bool,
    pub workspace: String,
    /// The folder the client reported the call from (a hook's `cwd`), as
    /// recorded: relative paths were decided from there. `None`: the
    /// workspace.
    pub cwd: Option<String>,
}

/// Decides whether `command` (or, when `None`, the recorded command) of
/// call `call_id` may run, from the call's events.
pub fn authorize(
    call_id: &str,
    events: &[StoredEvent],
    command: Option<&str>,
) -> Result<Authorized, Refusal> {
    let damaged = |detail: String| Refusal::Damaged {
        call_id: call_id.to_owned(),
        detail,
    };
    let mut requests: Vec<RequestRecord> = Vec::new();
    let mut decisions: Vec<(DecisionRecord, String)> = Vec::new();
    for event in events {
        match EventBody::from_json(&event.kind, &event.payload).map_err(damaged)? {
            EventBody::Request(r) => requests.push(r),
            EventBody::Decision(d) => decisions.push((d, event.tool.clone().unwrap_or_default())),
            _ => {}
        }
    }
    if decisions.is_empty() {
        return Err(Refusal::Unknown {
            call_id: call_id.to_owned(),
        });
    }
    if decisions.len() > 1 || requests.len() > 1 {
        return Err(Refusal::Ambiguous {
            call_id: call_id.to_owned(),
            decisions: decisions.len().max(requests.len()),
        });
    }
    let (decision, tool) = decisions.remove(0);
    let Some(request) = requests.pop() else {
        return Err(damaged("the decision has no request".to_owned()));
    };
    if tool != "bash" {
        return Err(Refusal::NotBash {
            call_id: call_id.to_owned(),
            tool,
        });
    }
    if decision.action != Action::Allow {
        return Err(Refusal::NotAllowed {
            call_id: call_id.to_owned(),
            action: decision.action,
            rule_id: decision.rule_id,
        });
    }
    let recorded_command = request.arguments.get("command").and_then(|c| c.as_str());
    let mismatch = || Refusal::Mismatch {
        call_id: call_id.to_owned(),
    };
    // The digest binds a command whose stored text was redacted; without
    // one, the stored text must be the command, byte for byte.
    let command = match (&decision.sandbox, command) {
        (
            Some(SandboxRecord {
                command_sha256: Some(digest),
                ..
            }),
            Some(given),
        ) => {
            if hex(&sha256(given.as_bytes())) != *digest {
                return Err(mismatch());
            }
            given.to_owned()
        }
        (_, Some(given)) => {
            if recorded_command != Some(given) {
                return Err(mismatch());
            }
            given.to_owned()
        }
        (sandbox, None) => {
            let text = recorded_command.ok_or_else(mismatch)?;
            let digest_holds = match sandbox {
                Some(SandboxRecord {
                    command_sha256: Some(d),
                    ..
                }) => hex(&sha256(text.as_bytes())) == *d,
                _ => true,
            };
            if !digest_holds || text.contains("«redacted:") {
                // Stored redacted: it is not the command that was decided.
                return Err(mismatch());
            }
            text.to_owned()
        }
    };
    let workspace = decision.facts.workspace.clone();
    let cwd = request.client.as_ref().and_then(|c| c.cwd.clone());
    match decision.sandbox {
        Some(record) => {
            if record.spec.digest() != record.sha256 {
                return Err(damaged(
                    "the sandbox's digest does not match its spec".into(),
                ));
            }
            Ok(Authorized {
                command,
                profile: record.profile,
                spec: record.spec,
                sha256: record.sha256,
                recorded: true,
                workspace,
                cwd,
            })
        }
        None if super::admit::proven_read_only(&decision.facts) => {
            let spec = Spec::read_only();
            Ok(Authorized {
                command,
                profile: READ_ONLY.to_owned(),
                sha256: spec.digest(),
                spec,
                recorded: false,
                workspace,
                cwd,
            })
        }
        None => Err(Refusal::Uncontained {
            call_id: call_id.to_owned(),
        }),
    }
}
