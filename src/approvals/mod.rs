//! Approvals that reach a person: the pending queue (`--ask wait`), and the
//! answers given to it from another process (`gavel approve`, `gavel
//! reject`). With `approval.rs`, the only code that resolves an `ask`.
//!
//! An asked call waits in the record: its `pending` approval row (channel
//! `queue`, with `until_us`) is written ahead with its request and
//! decision. An answer is an `approved` or `rejected` row appended by
//! whoever answered, bound to the call id **and** to the digest of the
//! call's recorded arguments and of the policy that asked
//! (`arguments_sha256`, `policy_digest`): an answer given for other
//! arguments is refused before it is written, and one found in the record
//! that does not match is ignored by the waiting call. The check and the
//! append happen in one `BEGIN IMMEDIATE` transaction, so exactly one
//! answer wins, and a wait that ends unanswered records `cancelled`
//! (cause `timeout`) the same way: an answer that came first wins over it.
//!
//! Deciding which calls wait is the policy's business and knows nothing of
//! this; this module knows the store, not the terminal.

pub mod approvers;
pub mod grants;
pub mod links;
pub mod notify;
mod origin;
pub mod page;
pub mod passkey;
#[cfg(feature = "tls")]
pub mod tls;
pub mod totp;

pub use approvers::{Shortfall, describe_approvers, quorum_shortfalls};
pub use origin::Origin;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::approval::{ApprovalChannel, ApprovalStatus, Approver, CancelCause};
use crate::audit::{
    ApprovalRecord, Event, EventBody, GrantRecord, GrantScope, JsonMeasure, RevocationRecord,
};
use crate::policy::Decision;
use crate::principal::Principal;
use crate::request::ToolRequest;
use crate::store::{Store, StoreError, StoredEvent};

/// How often a waiting call looks for its answer.
pub const POLL: Duration = Duration::from_millis(150);

/// Why an answer could not be given, or a wait could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalsError {
    #[error("call `{call_id}` is not waiting for an answer ({detail})")]
    NotPending { call_id: String, detail: String },
    #[error("call `{call_id}` stopped waiting at {until}; nothing was recorded")]
    Expired { call_id: String, until: String },
    #[error(
        "refusing to answer call `{call_id}`: its recorded arguments have digest `{recorded}`, not `{given}` (the answer was for other arguments)"
    )]
    ArgumentsMismatch {
        call_id: String,
        recorded: String,
        given: String,
    },
    #[error("cannot grant {what} for call `{call_id}`: {why}")]
    Grant {
        call_id: String,
        what: String,
        why: String,
    },
    #[error("no grant `{grant}` in the record")]
    UnknownGrant { grant: String },
    #[error("grant `{grant}` is already revoked")]
    AlreadyRevoked { grant: String },
    #[error("cannot enrol `{name}`: {why}")]
    Enrolment { name: String, why: String },
    #[error("`{name}` {why}")]
    Factor { name: String, why: String },
    #[error("call `{call_id}` needs approval by {needed}: {why}")]
    Approvers {
        call_id: String,
        needed: String,
        why: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A call waiting in the queue, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pending {
    pub call_id: String,
    /// The seq of its `pending` row.
    pub seq: u64,
    pub tool: String,
    /// The arguments as recorded (redacted), exactly what the policy judged
    /// less the secrets taken out before storing.
    pub arguments: Value,
    /// SHA-256 (hex) of `arguments` as compact JSON: what an answer binds to.
    pub arguments_sha256: String,
    /// The digest of the policy that asked.
    pub policy_digest: String,
    pub rule_id: String,
    pub reason: String,
    /// Who made the call (the row's provenance), where recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// When it was asked, microseconds since the epoch.
    pub asked_us: i64,
    /// When its wait ends, microseconds since the epoch.
    pub until_us: i64,
    /// Who must approve it, when its rule names approvers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approvers: Option<crate::policy::Approvers>,
    /// The enrolled people who approved it so far, toward its quorum.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub votes: Vec<String>,
    /// The sandbox profile it would run in, when its decision names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
}

/// The call `events` (all of one call, in seq order) describe, when it is
/// waiting in the queue: its last approval row is `pending` with channel
/// `queue` and nothing (no answer, no result) came after it. Pure.
pub fn pending_of(events: &[StoredEvent]) -> Option<Pending> {
    // A vote toward a quorum leaves the call waiting.
    let (at, row) = events
        .iter()
        .enumerate()
        .rev()
        .find(|(_, e)| (e.kind == "approval" && !is_vote(e)) || e.kind == "result")?;
    if row.kind != "approval" || row.approval.as_deref() != Some("pending") {
        return None;
    }
    let EventBody::Approval(record) = EventBody::from_json("approval", &row.payload).ok()? else {
        return None;
    };
    if record.channel != Some(ApprovalChannel::Queue) {
        return None;
    }
    let request = events[..at].iter().find(|e| e.kind == "request")?;
    let decision = events[..at].iter().find(|e| e.kind == "decision")?;
    let EventBody::Request(req) = EventBody::from_json("request", &request.payload).ok()? else {
        return None;
    };
    let EventBody::Decision(dec) = EventBody::from_json("decision", &decision.payload).ok()? else {
        return None;
    };
    let policy_digest = dec.policy.digest;
    let arguments_sha256 = arguments_digest(&req.arguments);
    let mut votes: Vec<String> = Vec::new();
    for vote in events[at + 1..].iter().filter_map(vote_of) {
        let bound = vote.arguments_sha256.as_deref() == Some(arguments_sha256.as_str())
            && vote.policy_digest.as_deref() == Some(policy_digest.as_str());
        if let Some(name) = vote.approver.filter(|n| bound && !votes.contains(n)) {
            votes.push(name);
        }
    }
    Some(Pending {
        call_id: row.call_id.clone(),
        seq: row.seq,
        tool: request.tool.clone().unwrap_or_default(),
        arguments_sha256,
        arguments: req.arguments,
        policy_digest,
        rule_id: dec.rule_id,
        reason: dec.reason,
        user: request.user.clone(),
        client: request.client.clone(),
        session: request.session.clone(),
        asked_us: request.ts_us,
        until_us: record.until_us.unwrap_or(row.ts_us),
        approvers: dec.approvers,
        votes,
        sandbox: dec.sandbox.map(|s| s.profile),
    })
}

impl Pending {
    /// The status `answer` to this call, as it waits, is recorded with: an
    /// approval short of its rule's quorum is a vote, and the call waits on
    /// (`pending`).
    pub fn recorded_status(&self, answer: ApprovalStatus) -> ApprovalStatus {
        let short = self
            .approvers
            .as_ref()
            .is_some_and(|need| self.votes.len() + 1 < need.quorum as usize);
        match answer {
            ApprovalStatus::Approved if short => ApprovalStatus::Pending,
            other => other,
        }
    }
}

/// The approval record of a vote row (one person's approval toward a quorum).
fn vote_of(row: &StoredEvent) -> Option<ApprovalRecord> {
    if row.kind != "approval" || row.approval.as_deref() != Some("pending") {
        return None;
    }
    match EventBody::from_json("approval", &row.payload) {
        Ok(EventBody::Approval(record)) if record.vote => Some(record),
        _ => None,
    }
}

fn is_vote(row: &StoredEvent) -> bool {
    vote_of(row).is_some()
}

/// What an answerer proved beyond the terminal or the page's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    pub factor: crate::audit::Factor,
    /// For a TOTP code: its time step.
    pub step: Option<u64>,
    /// For a passkey: the signed assertion.
    pub assertion: Option<crate::audit::PasskeyAssertion>,
}

/// The digest an answer binds to: SHA-256 of the recorded arguments'
/// compact JSON (keys sorted).
pub fn arguments_digest(arguments: &Value) -> String {
    JsonMeasure::of(arguments).sha256
}

/// The calls waiting in the queue now (their wait not yet over), oldest first.
pub fn pending(store: &Store, now_us: i64) -> Result<Vec<Pending>, StoreError> {
    Ok(store
        .queued_calls()?
        .iter()
        .filter_map(|events| pending_of(events))
        .filter(|p| p.until_us > now_us)
        .collect())
}

/// An answer to a waiting call.
#[derive(Debug, Clone)]
pub struct QueueAnswer {
    /// `Approved` or `Rejected`.
    pub status: ApprovalStatus,
    /// `cli` or `web`.
    pub channel: ApprovalChannel,
    /// Who answered: the OS user, or the web token's name.
    pub approver: String,
    pub reason: Option<String>,
    /// The digest of the arguments the person was shown; `None` when the
    /// answer is for the call's recorded arguments as they stand.
    pub arguments_sha256: Option<String>,
    /// With an approval: a grant to create with it.
    pub grant: Option<GrantAsk>,
    /// The enrolled `approver`'s second factor, when they proved one.
    pub proof: Option<Proof>,
}

/// The scope a person asks a grant for, before it is read off the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantKind {
    /// This exact call.
    Call,
    /// The call's program and subcommand (`cargo test`), any arguments.
    Command,
    /// The call's tool, on paths under this glob.
    Paths(String),
    /// The call's MCP server tool (`mcp__SERVER__TOOL`), any arguments.
    Tool,
}

/// A grant to create with an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantAsk {
    pub kind: GrantKind,
    /// Limit it to the call's client session.
    pub session: bool,
    /// Limit it to this long from now.
    pub lasts: Option<Duration>,
    /// Limit it to this many calls.
    pub uses: Option<u64>,
}

/// The scope `kind` names for the call `events` describe.
fn scope_for(
    call_id: &str,
    kind: &GrantKind,
    pending: &Pending,
    events: &[StoredEvent],
) -> Result<GrantScope, ApprovalsError> {
    let refuse = |why: &str| ApprovalsError::Grant {
        call_id: call_id.to_owned(),
        what: match kind {
            GrantKind::Call => "this call".to_owned(),
            GrantKind::Command => "its command".to_owned(),
            GrantKind::Paths(glob) => format!("paths under `{glob}`"),
            GrantKind::Tool => format!("`{}` with any arguments", pending.tool),
        },
        why: why.to_owned(),
    };
    let decision = events
        .iter()
        .find(|e| e.kind == "decision")
        .and_then(|e| match EventBody::from_json("decision", &e.payload) {
            Ok(EventBody::Decision(d)) => Some(d),
            _ => None,
        })
        .ok_or_else(|| refuse("its decision is not in the record"))?;
    if grants::never_granted(&decision.rule_id, &decision.facts) {
        return Err(refuse(&format!(
            "it was asked by `{}`, which no grant may answer: each such call is asked again",
            decision.rule_id
        )));
    }
    match kind {
        GrantKind::Call => Ok(GrantScope::Call {
            tool: pending.tool.clone(),
            arguments_sha256: pending.arguments_sha256.clone(),
        }),
        GrantKind::Paths(glob) => {
            if pending.tool == "bash" {
                return Err(refuse(
                    "a path grant is for file tools; grant a command instead",
                ));
            }
            globset::Glob::new(glob).map_err(|e| refuse(&format!("invalid glob: {e}")))?;
            if decision.facts.paths.is_empty() {
                return Err(refuse(
                    "the call names no path (an MCP tool needs its path arguments declared in `[[paths]]`)",
                ));
            }
            Ok(GrantScope::Paths {
                tool: pending.tool.clone(),
                glob: glob.clone(),
            })
        }
        GrantKind::Tool => {
            if !pending.tool.starts_with(grants::MCP_TOOL_PREFIX) {
                return Err(refuse(
                    "only an MCP server's tool (mcp__SERVER__TOOL) is granted whole; grant a command, paths or this call instead",
                ));
            }
            Ok(GrantScope::Tool {
                tool: pending.tool.clone(),
            })
        }
        GrantKind::Command => {
            if pending.tool != "bash" {
                return Err(refuse("only a `bash` call has a command"));
            }
            let facts = decision
                .facts
                .shell
                .ok_or_else(|| refuse("its parse is not in the record"))?;
            let prefix = |words: &[String]| -> Vec<String> {
                match words.get(1) {
                    Some(sub) if !sub.starts_with('-') => words[..2].to_vec(),
                    _ => words[..1].to_vec(),
                }
            };
            let mut prefixes: Vec<Vec<String>> = facts
                .commands
                .iter()
                .filter(|c| !c.words.is_empty())
                .map(|c| prefix(&c.words))
                .collect();
            prefixes.dedup();
            match prefixes.as_slice() {
                [words] if facts.unprovable.is_empty() => Ok(GrantScope::Command {
                    words: words.clone(),
                }),
                [_] => Err(refuse("the command is not fully provable")),
                _ => Err(refuse(
                    "it runs several programs; grant this exact call instead",
                )),
            }
        }
    }
}

/// The grants of the record, each with its revocation and uses so far.
pub fn grants(store: &Store) -> Result<Vec<grants::Grant>, StoreError> {
    let mut found: Vec<grants::Grant> = Vec::new();
    for row in store.grant_rows()? {
        match EventBody::from_json(&row.kind, &row.payload) {
            Ok(EventBody::Grant(record)) => found.push(grants::Grant {
                record,
                seq: row.seq,
                created_us: row.ts_us,
                revoked: None,
                revoked_seq: None,
                used: 0,
            }),
            Ok(EventBody::Revocation(revocation)) => {
                if let Some(grant) = found
                    .iter_mut()
                    .find(|g| g.record.grant == revocation.grant && g.revoked.is_none())
                {
                    grant.revoked = Some(revocation);
                    grant.revoked_seq = Some(row.seq);
                }
            }
            _ => {}
        }
    }
    for grant in &mut found {
        grant.used = store.decisions_by_rule(&format!(
            "{}{}",
            grants::GRANT_RULE_PREFIX,
            grant.record.grant
        ))?;
    }
    Ok(found)
}

/// Records the revocation of `grant`, in one transaction with the check
/// that it exists and is not revoked yet.
pub fn revoke(
    store: &mut Store,
    grant: &str,
    revoked_by: &str,
    channel: ApprovalChannel,
    reason: Option<String>,
    by: Option<&Arc<Principal>>,
) -> Result<GrantRecord, ApprovalsError> {
    let call_id = format!("{}{grant}", grants::GRANT_CALL_PREFIX);
    let mut outcome = Err(ApprovalsError::UnknownGrant {
        grant: grant.to_owned(),
    });
    store.append_for_call(&call_id, |rows| {
        let record = rows
            .iter()
            .find_map(|r| match EventBody::from_json(&r.kind, &r.payload) {
                Ok(EventBody::Grant(g)) => Some(g),
                _ => None,
            });
        let Some(record) = record else {
            return Vec::new();
        };
        if rows.iter().any(|r| r.kind == "revocation") {
            outcome = Err(ApprovalsError::AlreadyRevoked {
                grant: grant.to_owned(),
            });
            return Vec::new();
        }
        outcome = Ok(record);
        vec![
            Event::now(
                &call_id,
                None,
                EventBody::Revocation(RevocationRecord {
                    grant: grant.to_owned(),
                    revoked_by: revoked_by.to_owned(),
                    channel,
                    reason: reason.clone(),
                }),
            )
            .by(by),
        ]
    })?;
    outcome
}

/// The grants of a log, read when a call is asked (never for allow or
/// deny): a [`grants::GrantSource`] over its own read-only connection,
/// opened at the first ask.
pub struct StoreGrants {
    path: std::path::PathBuf,
    store: std::cell::OnceCell<Option<Store>>,
}

impl StoreGrants {
    pub fn new(path: &std::path::Path) -> Self {
        Self {
            path: path.to_owned(),
            store: std::cell::OnceCell::new(),
        }
    }
}

impl grants::GrantSource for StoreGrants {
    fn cover(
        &self,
        request: &ToolRequest,
        facts: &crate::facts::Facts,
        decision: &Decision,
        session: Option<&str>,
    ) -> Option<Decision> {
        let store = self
            .store
            .get_or_init(|| Store::open_read_only(&self.path).ok())
            .as_ref()?;
        // A grant that cannot be read covers nothing: the call is asked.
        let all = grants(store).ok()?;
        let now = chrono::Utc::now().timestamp_micros();
        grants::covering(&all, request, facts, decision, session, now)
            .map(|grant| grants::granted(grant, decision))
    }
}

/// Records `answer` for `call_id`, in one transaction with the check that
/// the call is still waiting and its recorded arguments are the ones the
/// answer is for. Returns the call as it was waiting.
pub fn answer(
    store: &mut Store,
    call_id: &str,
    answer: &QueueAnswer,
    by: Option<&Arc<Principal>>,
    now_us: i64,
) -> Result<Pending, ApprovalsError> {
    let mut outcome: Option<Result<Pending, ApprovalsError>> = None;
    store.append_for_call(call_id, |events| {
        let checked = check_answer(call_id, events, answer, now_us);
        let append = match &checked {
            Ok(pending) => {
                let grant = match (&answer.grant, answer.status) {
                    (Some(ask), ApprovalStatus::Approved) => {
                        match grant_record(call_id, ask, pending, events, answer, now_us) {
                            Ok(record) => Some(record),
                            Err(err) => {
                                outcome = Some(Err(err));
                                return Vec::new();
                            }
                        }
                    }
                    _ => None,
                };
                let status = pending.recorded_status(answer.status);
                let vote = status == ApprovalStatus::Pending;
                let mut record = ApprovalRecord::new(status, answer.channel);
                record.approver = Some(answer.approver.clone());
                record.arguments_sha256 = Some(pending.arguments_sha256.clone());
                record.policy_digest = Some(pending.policy_digest.clone());
                record.reason = answer.reason.clone();
                record.factor = answer.proof.as_ref().map(|p| p.factor);
                record.step = answer.proof.as_ref().and_then(|p| p.step);
                record.assertion = answer.proof.as_ref().and_then(|p| p.assertion.clone());
                record.vote = vote;
                let mut append = vec![
                    Event::now(call_id, Some(&pending.tool), EventBody::Approval(record)).by(by),
                ];
                if let Some(grant) = grant {
                    let grant_call = format!("{}{}", grants::GRANT_CALL_PREFIX, grant.grant);
                    append.push(Event::now(&grant_call, None, EventBody::Grant(grant)).by(by));
                }
                append
            }
            Err(_) => Vec::new(),
        };
        if outcome.is_none() {
            outcome = Some(checked);
        }
        append
    })?;
    outcome.unwrap_or_else(|| {
        Err(ApprovalsError::NotPending {
            call_id: call_id.to_owned(),
            detail: "it could not be read".into(),
        })
    })
}

/// The grant `ask` creates with the approval of the call `events` describe.
fn grant_record(
    call_id: &str,
    ask: &GrantAsk,
    pending: &Pending,
    events: &[StoredEvent],
    answer: &QueueAnswer,
    now_us: i64,
) -> Result<GrantRecord, ApprovalsError> {
    let scope = scope_for(call_id, &ask.kind, pending, events)?;
    let session = match (ask.session, &pending.session) {
        (false, _) => None,
        (true, Some(session)) => Some(session.clone()),
        (true, None) => {
            return Err(ApprovalsError::Grant {
                call_id: call_id.to_owned(),
                what: "a session grant".to_owned(),
                why: "the call was made outside a client session".to_owned(),
            });
        }
    };
    Ok(GrantRecord {
        grant: grants::new_grant_id(),
        scope,
        session,
        until_us: ask
            .lasts
            .map(|d| now_us.saturating_add(i64::try_from(d.as_micros()).unwrap_or(i64::MAX))),
        uses: ask.uses,
        created_by: answer.approver.clone(),
        channel: answer.channel,
        call_id: call_id.to_owned(),
    })
}

/// Whether `answer` may be recorded for the call `events` describe. Pure.
pub fn check_answer(
    call_id: &str,
    events: &[StoredEvent],
    answer: &QueueAnswer,
    now_us: i64,
) -> Result<Pending, ApprovalsError> {
    let not_pending = |detail: &str| ApprovalsError::NotPending {
        call_id: call_id.to_owned(),
        detail: detail.to_owned(),
    };
    if events.is_empty() {
        return Err(not_pending("no such call in the record"));
    }
    if !matches!(
        answer.status,
        ApprovalStatus::Approved | ApprovalStatus::Rejected
    ) {
        return Err(not_pending("an answer approves or rejects"));
    }
    let Some(pending) = pending_of(events) else {
        let approval = events
            .iter()
            .rev()
            .find(|e| e.kind == "approval")
            .and_then(|e| e.approval.clone());
        let result = events
            .iter()
            .find(|e| e.kind == "result")
            .and_then(|e| e.status.clone());
        let detail = match (approval, result) {
            (Some(approval), Some(result)) => {
                format!("its approval is already {approval}, its result {result}")
            }
            (Some(approval), None) => format!("its approval is already {approval}"),
            (None, Some(result)) => format!("it was not asked; its result is {result}"),
            (None, None) => "it was not asked through the queue (--ask wait)".to_owned(),
        };
        return Err(not_pending(&detail));
    };
    if pending.until_us <= now_us {
        return Err(ApprovalsError::Expired {
            call_id: call_id.to_owned(),
            until: chrono::DateTime::from_timestamp_micros(pending.until_us)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                .unwrap_or_default(),
        });
    }
    if let Some(given) = &answer.arguments_sha256
        && *given != pending.arguments_sha256
    {
        return Err(ApprovalsError::ArgumentsMismatch {
            call_id: call_id.to_owned(),
            recorded: pending.arguments_sha256,
            given: given.clone(),
        });
    }
    if let Some(need) = &pending.approvers {
        let refuse = |why: String| ApprovalsError::Approvers {
            call_id: call_id.to_owned(),
            needed: describe_approvers(need),
            why,
        };
        if answer.proof.is_none() {
            return Err(refuse(format!(
                "an answer without a second factor does not count; answer with `gavel {} {call_id} --as NAME --code CODE`",
                if answer.status == ApprovalStatus::Approved {
                    "approve"
                } else {
                    "reject"
                }
            )));
        }
        if !need.admits(&answer.approver) {
            return Err(refuse(format!("`{}` is not one of them", answer.approver)));
        }
        if let Some(proof) = answer.proof.as_ref()
            && !need.accepts_factor(proof.factor.as_str())
        {
            return Err(refuse(format!(
                "its rule counts only {} answers, not {}",
                need.factors.join(" or "),
                proof.factor.as_str()
            )));
        }
        if answer.status == ApprovalStatus::Approved && pending.votes.contains(&answer.approver) {
            return Err(refuse(format!(
                "`{}` approved it already; another person must",
                answer.approver
            )));
        }
        if answer.grant.is_some() {
            return Err(refuse(
                "a grant would answer later calls without them; approve this call alone".into(),
            ));
        }
    }
    Ok(pending)
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waited {
    /// `Approved`, `Rejected` or `Cancelled`.
    pub status: ApprovalStatus,
    pub channel: ApprovalChannel,
    pub approver: Option<String>,
    pub reason: Option<String>,
    pub cause: Option<CancelCause>,
}

/// The answer among `rows` (approval and result rows after the pending
/// one) bound to `pending`, if any; a result means the wait is over too. Pure.
fn answer_in(rows: &[StoredEvent], pending: &Pending) -> Option<Waited> {
    for row in rows {
        if row.kind == "result" {
            return Some(Waited {
                status: ApprovalStatus::Cancelled,
                channel: ApprovalChannel::Queue,
                approver: None,
                reason: None,
                cause: Some(CancelCause::Superseded),
            });
        }
        let Ok(EventBody::Approval(record)) = EventBody::from_json("approval", &row.payload) else {
            continue;
        };
        match record.status {
            ApprovalStatus::Approved | ApprovalStatus::Rejected => {
                let bound = record.arguments_sha256.as_deref()
                    == Some(pending.arguments_sha256.as_str())
                    && record.policy_digest.as_deref() == Some(pending.policy_digest.as_str());
                if bound {
                    return Some(Waited {
                        status: record.status,
                        channel: record.channel.unwrap_or(ApprovalChannel::Api),
                        approver: record.approver,
                        reason: record.reason,
                        cause: None,
                    });
                }
            }
            ApprovalStatus::Cancelled => {
                return Some(Waited {
                    status: ApprovalStatus::Cancelled,
                    channel: record.channel.unwrap_or(ApprovalChannel::Queue),
                    approver: None,
                    reason: None,
                    cause: record.cause,
                });
            }
            _ => {}
        }
    }
    None
}

/// The answer recorded so far for `pending` (a call waiting in the queue),
/// if any: one indexed lookup, cheap enough to poll.
pub fn answered(store: &Store, pending: &Pending) -> Result<Option<Waited>, ApprovalsError> {
    let rows = store.answers_after(&pending.call_id, pending.seq)?;
    Ok(answer_in(&rows, pending))
}

/// Ends the wait of `pending` unanswered: records `cancelled` (channel
/// `queue`, cause `cause`) followed by `also` (a `blocked` result), in one
/// transaction that an answer recorded first wins over. Returns how the
/// wait ended: that answer, or the cancellation.
pub fn stop_waiting(
    store: &mut Store,
    pending: &Pending,
    cause: CancelCause,
    by: Option<&Arc<Principal>>,
    also: &dyn Fn(&str) -> Vec<Event>,
) -> Result<Waited, ApprovalsError> {
    let call_id = pending.call_id.as_str();
    let mut answered = None;
    store.append_for_call(call_id, |events| {
        let after: Vec<StoredEvent> = events
            .iter()
            .filter(|e| e.seq > pending.seq)
            .cloned()
            .collect();
        answered = answer_in(&after, pending);
        if answered.is_some() {
            return Vec::new();
        }
        let mut record = ApprovalRecord::new(ApprovalStatus::Cancelled, ApprovalChannel::Queue);
        record.cause = Some(cause);
        let mut append =
            vec![Event::now(call_id, Some(&pending.tool), EventBody::Approval(record)).by(by)];
        append.extend(also(&pending.tool).into_iter().map(|e| e.by(by)));
        append
    })?;
    Ok(answered.unwrap_or(Waited {
        status: ApprovalStatus::Cancelled,
        channel: ApprovalChannel::Queue,
        approver: None,
        reason: None,
        cause: Some(cause),
    }))
}

/// The call `call_id` as it waits in the queue (its `pending` row).
pub fn waiting(store: &Store, call_id: &str) -> Result<Pending, ApprovalsError> {
    let events = store.call_events(call_id)?;
    pending_of(&events).ok_or_else(|| ApprovalsError::NotPending {
        call_id: call_id.to_owned(),
        detail: "it has no pending row in the queue".into(),
    })
}

/// Waits for the answer to `call_id`, which must be waiting in the queue,
/// polling the record every `poll`. When its wait ends unanswered, records
/// `cancelled` (channel `queue`, cause `timeout`) followed by `also` (a
/// hook's `blocked` result), in one transaction that an answer recorded
/// first wins over.
pub fn wait(
    store: &mut Store,
    call_id: &str,
    poll: Duration,
    by: Option<&Arc<Principal>>,
    also: &dyn Fn(&str) -> Vec<Event>,
) -> Result<Waited, ApprovalsError> {
    let pending = waiting(store, call_id)?;
    loop {
        if let Some(waited) = answered(store, &pending)? {
            return Ok(waited);
        }
        let now = chrono::Utc::now().timestamp_micros();
        if now >= pending.until_us {
            return stop_waiting(store, &pending, CancelCause::Timeout, by, also);
        }
        let left = Duration::from_micros(u64::try_from(pending.until_us - now).unwrap_or(0));
        std::thread::sleep(poll.min(left));
    }
}

/// An [`Approver`] answered through the pending queue: it writes the
/// `pending` row ahead with the call, then waits for `gavel approve`,
/// `gavel reject` or the approval page, for at most `wait`. Every answer it
/// returns is already in the record.
pub struct QueueApprover {
    store: Option<Store>,
    /// Where to open `store` at the first ask, when it was not given.
    path: Option<(std::path::PathBuf, crate::store::Durability)>,
    wait: Duration,
    poll: Duration,
    principal: Option<Arc<Principal>>,
    last: Option<Waited>,
    recorded: bool,
}

impl QueueApprover {
    /// Waits on `store` (its own connection to the call's database).
    pub fn new(store: Store, wait: Duration) -> Self {
        Self {
            store: Some(store),
            path: None,
            wait,
            poll: POLL,
            principal: None,
            last: None,
            recorded: false,
        }
    }

    /// Waits on its own connection to the database at `path`, opened at
    /// the first ask: a call that is not asked never opens it.
    pub fn opening(
        path: &std::path::Path,
        durability: crate::store::Durability,
        wait: Duration,
    ) -> Self {
        Self {
            store: None,
            path: Some((path.to_owned(), durability)),
            wait,
            poll: POLL,
            principal: None,
            last: None,
            recorded: false,
        }
    }

    /// Rows it writes (a timeout) are on behalf of `principal`.
    pub fn with_principal(mut self, principal: Principal) -> Self {
        self.principal = Some(Arc::new(principal));
        self
    }

    pub fn with_poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// How the last wait ended.
    pub fn last(&self) -> Option<&Waited> {
        self.last.as_ref()
    }

    fn store(&mut self) -> Result<&mut Store, ApprovalsError> {
        if self.store.is_none()
            && let Some((path, durability)) = &self.path
        {
            self.store = Some(Store::open(path, *durability)?);
        }
        self.store
            .as_mut()
            .ok_or_else(|| ApprovalsError::NotPending {
                call_id: String::new(),
                detail: "no record to wait on".into(),
            })
    }
}

/// The end of a wait of `wait` from now, in microseconds since the epoch.
pub fn until_us(wait: Duration) -> i64 {
    chrono::Utc::now()
        .timestamp_micros()
        .saturating_add(i64::try_from(wait.as_micros()).unwrap_or(i64::MAX))
}

impl Approver for QueueApprover {
    fn approve(&mut self, request: &ToolRequest, decision: &Decision) -> ApprovalStatus {
        let call_id = request.tool_use_id.clone();
        self.approve_call(&call_id, request, decision)
    }

    fn pending(&mut self, _call_id: &str) -> Option<ApprovalRecord> {
        let mut record = ApprovalRecord::new(ApprovalStatus::Pending, ApprovalChannel::Queue);
        record.until_us = Some(until_us(self.wait));
        Some(record)
    }

    fn approve_call(&mut self, call_id: &str, _: &ToolRequest, _: &Decision) -> ApprovalStatus {
        let _ = writeln_stderr(&format!(
            "gavel: call `{call_id}` waits for approval (up to {}s): `gavel pending`, then `gavel approve {call_id}` or `gavel reject {call_id}`",
            self.wait.as_secs()
        ));
        let (poll, principal) = (self.poll, self.principal.clone());
        let waited = self
            .store()
            .and_then(|store| wait(store, call_id, poll, principal.as_ref(), &|_| Vec::new()));
        match waited {
            Ok(waited) => {
                self.recorded = true;
                let status = waited.status;
                self.last = Some(waited);
                status
            }
            Err(err) => {
                let _ = writeln_stderr(&format!("gavel: cannot wait for an approval: {err}"));
                self.recorded = false;
                self.last = Some(Waited {
                    status: ApprovalStatus::Cancelled,
                    channel: ApprovalChannel::Queue,
                    approver: None,
                    reason: None,
                    cause: Some(CancelCause::Error),
                });
                ApprovalStatus::Cancelled
            }
        }
    }

    fn channel(&self) -> ApprovalChannel {
        self.last
            .as_ref()
            .map_or(ApprovalChannel::Queue, |w| w.channel)
    }

    fn approver(&self) -> Option<String> {
        self.last.as_ref().and_then(|w| w.approver.clone())
    }

    fn cause(&self) -> Option<CancelCause> {
        self.last.as_ref().and_then(|w| w.cause)
    }

    fn checks_approvers(&self) -> bool {
        true
    }

    fn recorded(&self) -> bool {
        self.recorded
    }
}

fn writeln_stderr(line: &str) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(std::io::stderr(), "{line}")
}

/// Reads a wait such as `60s`, `5m`, `1h`, `90` (seconds) or `500ms`.
pub use crate::policy::parse_wait;

#[cfg(test)]
mod tests;
