//! Binding a client's report of a call (a post-event: "this tool ran, with
//! this result") to the call gavel decided, for every client whose hooks
//! report results: by the client's own call id when it gives one, else by
//! session, tool and input digest. A report completes its call only when
//! the call was decided, the report matches the recorded request and the
//! call has no result yet; anything else is an anomaly beside the call
//! (ran without a decision, a completion that does not match, ran despite
//! deny, a second completion, an ambiguous completion), never a guess.
//! Each reads and appends in one transaction, so two reports cannot both
//! complete one call. It knows nothing of the command line.

use std::sync::Arc;

use serde_json::json;

use super::{Client, Context, ToolCall, binding_mismatch};
use crate::ExecutionStatus;
use crate::approval::ApprovalStatus;
use crate::audit::{
    AnomalyKind, AnomalyRecord, ApprovalRecord, ClientCall, Event, EventBody, LifecycleRecord,
    ResultRecord, ToolResult,
};
use crate::policy::Action;
use crate::principal::Principal;
use crate::redact::Redactor;
use crate::runner::new_call_id;
use crate::store::{ClientKey, Store, StoreError, StoredEvent};

/// `events`, each by `who`.
pub fn by(events: Vec<Event>, who: &Arc<Principal>) -> Vec<Event> {
    events.into_iter().map(|e| e.by(Some(who))).collect()
}

/// The approval row of an ask `client` answered: through its prompt, or
/// its mode (`client_auto`), by the person it names, when it names one.
pub fn client_approval(
    client: &dyn Client,
    context: &Context,
    status: ApprovalStatus,
) -> ApprovalRecord {
    let mut record = ApprovalRecord::new(status, client.approval_channel(context));
    record.approver = context.user.clone();
    record
}

/// Closes an ask the client's prompt declined: a batch reported the call
/// and no completion ran it, so it was rejected, with what the model was told.
pub fn close_declined(
    call_id: &str,
    events: &[StoredEvent],
    told: &str,
    approval: ApprovalRecord,
) -> Vec<Event> {
    let Some(decision) = events.iter().find(|e| e.kind == "decision") else {
        return Vec::new();
    };
    let pending = events
        .iter()
        .rev()
        .find(|e| e.kind == "approval")
        .and_then(|e| e.approval.as_deref())
        == Some(ApprovalStatus::Pending.as_str());
    if decision.action.as_deref() != Some(Action::Ask.as_str())
        || !pending
        || events.iter().any(|e| e.kind == "result")
    {
        return Vec::new();
    }
    let tool = decision.tool.as_deref();
    vec![
        Event::now(call_id, tool, EventBody::Approval(approval)),
        Event::now(
            call_id,
            tool,
            EventBody::Result(ResultRecord::from_result(&ToolResult {
                status: ExecutionStatus::Blocked,
                content: told.to_owned(),
                exit_code: None,
                duration_ms: 0,
            })),
        ),
    ]
}

/// Whether `first` and every call of `rest` were allowed by the same rule,
/// so that which of them a completion belongs to makes no difference.
fn interchangeable(first: &[StoredEvent], rest: &[&(String, Vec<StoredEvent>)]) -> bool {
    let allowed_by = |events: &[StoredEvent]| {
        events
            .iter()
            .find(|e| e.kind == "decision")
            .filter(|d| d.action.as_deref() == Some(Action::Allow.as_str()))
            .and_then(|d| d.rule_id.clone())
    };
    let Some(rule) = allowed_by(first) else {
        return false;
    };
    rest.iter()
        .all(|(_, events)| allowed_by(events).as_deref() == Some(rule.as_str()))
}

/// A completion (a post-event) and what it needs to find its call.
pub struct Completion<'a> {
    pub client: &'a dyn Client,
    pub context: &'a Context,
    pub call: &'a ToolCall,
    pub result: &'a ToolResult,
    /// The most bytes of the client's input kept inline in the record.
    pub max_input_bytes: u64,
    pub who: &'a Arc<Principal>,
}

impl Completion<'_> {
    /// The approval row of an ask the client answered: how (its prompt, or
    /// its mode), and who, where the client names the person.
    fn approval(&self, status: ApprovalStatus) -> ApprovalRecord {
        client_approval(self.client, self.context, status)
    }

    fn recorded(&self) -> ClientCall {
        self.context
            .client_call(self.client.name(), self.call, self.max_input_bytes)
    }

    fn gavel_tool(&self) -> String {
        self.client.map_tool(self.call, &self.context.cwd).0
    }

    /// Completes the call recorded under the client's own id (reading and
    /// appending in one transaction, so two reports cannot both complete it).
    pub fn complete_by_id(&self, store: &mut Store, call_id: &str) -> Result<(), StoreError> {
        let redactor = store.redactor().cloned();
        store.append_for_call(call_id, |events| {
            by(
                self.completion(call_id, events, redactor.as_ref()),
                self.who,
            )
        })?;
        Ok(())
    }

    /// Completes the one open call (decided, no result yet) of this
    /// session with this tool and input digest, or the oldest of several
    /// that were all allowed by the same rule (they are interchangeable).
    /// None open: the report is of a call gavel blocked, or of one it never
    /// decided; several with an ask among them: which one a person approved
    /// cannot be told. Both are anomalies, never a guess.
    pub fn complete_by_match(&self, store: &mut Store) -> Result<(), StoreError> {
        let recorded = self.recorded();
        let digest = recorded.bound_digest();
        let key = ClientKey {
            client: self.client.name(),
            session_id: &self.context.session_id,
            tool: &self.call.tool,
            input_sha256: &digest,
        };
        let redactor = store.redactor().cloned();
        store.append_for_client_calls(key, |calls| {

            let open: Vec<&(String, Vec<StoredEvent>)> = calls
                .iter()
                .filter(|(_, events)| {
                    events.iter().any(|e| e.kind == "decision")
                        && !events.iter().any(|e| e.kind == "result")
                })
                .collect();
            let events = match open.as_slice() {
                [(call_id, events)] => self.completion(call_id, events, redactor.as_ref()),
                // Identical calls allowed by one rule are interchangeable: the
                // oldest is completed first (parallel identical reads).
                [(call_id, events), rest @ ..] if interchangeable(events, rest) => {
                    self.completion(call_id, events, redactor.as_ref())
                }
                [] => {
                    let blocked = calls.iter().rev().find(|(_, events)| {
                        events.iter().any(|e| {
                            e.kind == "result"
                                && e.status.as_deref() == Some(ExecutionStatus::Blocked.as_str())
                        })
                    });
                    match blocked {
                        Some((call_id, events)) => {
                            self.completion(call_id, events, redactor.as_ref())
                        }
                        None => self.undecided(&new_call_id()),
                    }
                }
                several => {
                    let ids: Vec<&str> = several.iter().map(|(id, _)| id.as_str()).collect();
                    self.anomaly(
                        &new_call_id(),
                        AnomalyKind::AmbiguousCompletion,
                        format!(
                            "{} reports `{}` ran ({}), and {} open calls of this session have this tool and input ({}); none was completed",
                            self.client.name(),
                            self.call.tool,
                            self.result.status.as_str(),
                            ids.len(),
                            ids.join(", ")
                        ),
                        Vec::new(),
                    )
                }
            };
            by(events, self.who)
        })?;
        Ok(())
    }

    fn anomaly(
        &self,
        call_id: &str,
        anomaly: AnomalyKind,
        detail: String,
        mismatched: Vec<String>,
    ) -> Vec<Event> {
        vec![Event::now(
            call_id,
            Some(&self.gavel_tool()),
            EventBody::Anomaly(AnomalyRecord {
                anomaly,
                detail,
                event: self.context.event.clone(),
                tool_use_id: self.call.id.clone().unwrap_or_default(),
                client: self.recorded(),
                mismatched,
                result: ResultRecord::from_result(self.result),
            }),
        )]
    }

    /// A report of a call gavel never decided: an anomaly when it ran, a
    /// lifecycle event when the client says it did not.
    fn undecided(&self, call_id: &str) -> Vec<Event> {
        if self.result.status == ExecutionStatus::Blocked {
            return vec![Event::now(
                &self.context.session_id,
                None,
                EventBody::Lifecycle(LifecycleRecord {
                    event: self.context.event.clone(),
                    data: json!({
                        "session_id": self.context.session_id,
                        "tool_name": self.call.tool,
                        "tool_input": self.call.input,
                        "result": ResultRecord::from_result(self.result),
                    }),
                }),
            )];
        }
        self.anomaly(
            call_id,
            AnomalyKind::RanWithoutDecision,
            format!(
                "{} reports `{}` ran ({}), but gavel recorded no decision for it",
                self.client.name(),
                self.call.tool,
                self.result.status.as_str()
            ),
            Vec::new(),
        )
    }

    /// The events a completion appends, given what is recorded of `call_id`.
    ///
    /// It completes the call (an `ask` that ran was approved at the
    /// client's prompt; one the client reports it did not run was
    /// rejected; then the result) only when the call was decided, the
    /// completion's session, tool and input digest match the recorded
    /// request, and the call has no result yet. Anything else is an
    /// anomaly beside the call, never its result: a call gavel never
    /// decided (ran without a decision), a completion that does not match
    /// (completion mismatch), a call gavel blocked (ran despite deny), one
    /// already complete (second completion).
    fn completion(
        &self,
        call_id: &str,
        events: &[StoredEvent],
        redactor: Option<&Redactor>,
    ) -> Vec<Event> {
        let reported = self.result.status.as_str();
        let ran = self.result.status != ExecutionStatus::Blocked;
        let Some(decision) = events.iter().find(|e| e.kind == "decision") else {
            if events.iter().any(|e| e.kind == "anomaly") {
                return self.anomaly(
                    call_id,
                    AnomalyKind::SecondCompletion,
                    format!("another report ({reported}) of a call gavel never decided"),
                    Vec::new(),
                );
            }
            return self.undecided(call_id);
        };
        let recorded = events.iter().find(|e| e.kind == "request").and_then(|e| {
            match EventBody::from_json("request", &e.payload) {
                Ok(EventBody::Request(request)) => Some(request),
                _ => None,
            }
        });
        let recorded_client = recorded.as_ref().and_then(|r| r.client.as_ref());
        let completion = self.recorded();
        let mut mismatched = binding_mismatch(recorded_client, &completion);
        // The recorded input had its secrets redacted before it was stored: the
        // completion's input, redacted with the same key, is compared with it.
        if mismatched.iter().any(|m| m == "input")
            && let Some(redactor) = redactor
        {
            let mut redacted = completion.clone();
            if redacted.input_sha256.is_none() && redactor.redact_value(&mut redacted.input) > 0 {
                mismatched = binding_mismatch(recorded_client, &redacted);
            }
        }
        if !mismatched.is_empty() {
            return self.anomaly(
                call_id,
                AnomalyKind::CompletionMismatch,
                format!(
                    "a completion ({reported}) whose {} differ from the recorded request; the call was not completed",
                    mismatched.join(", ")
                ),
                mismatched,
            );
        }
        let approval = events
            .iter()
            .rev()
            .find(|e| e.kind == "approval")
            .and_then(|e| e.approval.as_deref());
        let action = decision.action.as_deref().unwrap_or("?");
        let rule = decision.rule_id.as_deref().unwrap_or("?");
        if let Some(first) = events.iter().find(|e| e.kind == "result") {
            let status = first.status.as_deref().unwrap_or("?");
            if status == ExecutionStatus::Blocked.as_str() {
                if !ran {
                    // The client confirms it did not run a blocked call.
                    return Vec::new();
                }
                return self.anomaly(
                    call_id,
                    AnomalyKind::RanDespiteDeny,
                    format!(
                        "gavel blocked this call ({action} by `{rule}`, approval {}) and {} reports it ran ({reported})",
                        approval.unwrap_or("not_required"),
                        self.client.name()
                    ),
                    Vec::new(),
                );
            }
            return self.anomaly(
                call_id,
                AnomalyKind::SecondCompletion,
                format!(
                    "the call already has its result ({status}); another report ({reported}) came"
                ),
                Vec::new(),
            );
        }
        let tool = decision.tool.as_deref();
        let mut append = Vec::new();
        if decision.action.as_deref() == Some(Action::Ask.as_str())
            && matches!(approval, None | Some("pending"))
        {
            append.push(Event::now(
                call_id,
                tool,
                EventBody::Approval(self.approval(match ran {
                    true => ApprovalStatus::Approved,
                    false => ApprovalStatus::Rejected,
                })),
            ));
        }
        append.push(Event::now(
            call_id,
            tool,
            EventBody::Result(ResultRecord::from_result(self.result)),
        ));
        append
    }
}
