//! `gavel run`: one call through the session service in this process, its
//! ask answered by `--approve`, `--reject`, the pending queue or the
//! caller's prompt, the tool run here; the outcome as `run` prints it.

use serde_json::{Value, json};

use crate::ToolRequest;
use crate::approval::{ApprovalStatus, Approver, Fixed};
use crate::approvals::QueueApprover;
use crate::facts::Workspace;
use crate::runner::CallOutcome;
use crate::session::{
    Ask, AskWait, Call, DEFAULT_WAIT, Governed, RunAsks, Service, SessionError, Setup,
};
use crate::store::StoreError;
use crate::tools::{Registry, ToolContext};

/// One call through the pipeline under `setup`'s policy and into its
/// record; `tools` runs it, `prompt` is asked when a person is to answer.
/// Shared by `gavel run` in its own process and a resident gavel answering
/// one (whose tools and prompt are the caller's, across the socket).
pub fn govern(
    setup: &Setup,
    request: &ToolRequest,
    call_id: &str,
    asks: RunAsks,
    tools: Registry,
    context: impl FnOnce(&Workspace) -> ToolContext,
    prompt: impl FnOnce() -> Box<dyn Approver>,
) -> Result<CallOutcome, SessionError> {
    let mut service = Service::open(setup, "cli", tools)?.with_context(context);
    let wait = match asks {
        RunAsks::Wait(wait) => Some(wait),
        RunAsks::Prompt => service.policy().approval_wait().map(Some),
        RunAsks::Approve | RunAsks::Reject => None,
    };
    let mut approver: Box<dyn Approver> = match (wait, asks) {
        (Some(wait), _) => {
            let mut queue = QueueApprover::opening(
                &setup.db_path()?,
                setup.durability,
                AskWait(wait).or(DEFAULT_WAIT),
            );
            if let Some(who) = service.runner().principal() {
                queue = queue.with_principal(who.clone());
            }
            Box::new(queue)
        }
        (None, RunAsks::Approve) => Box::new(Fixed(ApprovalStatus::Approved)),
        (None, RunAsks::Reject) => Box::new(Fixed(ApprovalStatus::Rejected)),
        (None, _) => prompt(),
    };
    let governed = service
        .call(Call::new(call_id, request), Ask::Now(approver.as_mut()))
        .map_err(|err| match err.0.downcast_ref::<StoreError>() {
            // Not a broken record: the caller reused an id.
            Some(duplicate @ StoreError::DuplicateCall { .. }) => SessionError::Call(format!(
                "{duplicate}; the call did not run (give another --call-id)"
            )),
            _ => SessionError::Audit(err),
        })?;
    let Governed::Ran(outcome) = governed else {
        unreachable!("a call asked now runs here");
    };
    // The store closes last: the last connection to close folds the
    // write-ahead log back into the database and removes it.
    drop(approver);
    let mut outcome = *outcome;
    if outcome.record_error.is_none() {
        outcome.receipt =
            service.close_then(|store| store.receipt_reference(call_id).ok().flatten());
    }
    Ok(outcome)
}

/// The JSON object `run` prints for a call.
pub fn outcome_json(outcome: &CallOutcome) -> Value {
    let decision = outcome.decision();
    json!({
        "call_id": outcome.call_id,
        "tool": outcome.request.name,
        "action": decision.action,
        "rule_id": decision.rule_id,
        "reason": decision.reason,
        "approval": outcome.resolution.approval,
        "status": outcome.result.status,
        "content": outcome.result.content,
        "exit_code": outcome.result.exit_code,
        "policy": decision.policy,
        "tool_result": outcome.to_protocol_block(),
        "recorded": outcome.record_error.is_none(),
        "record_error": outcome.record_error,
        "receipt": outcome.receipt,
    })
}
