//! `gavel mcp --ask wait`: an asked call waits in the pending queue while
//! the session goes on. Its `pending` row is written ahead with its request
//! and decision (by the runner); the session polls the record for the
//! answer each [`approvals::POLL`] between messages, and then forwards the
//! client's line (approved), or answers the call itself with `isError`
//! (rejected, no answer in time, the client cancelled, a side went away).
//! The waiting, the binding of an answer to the call's arguments and the
//! one-transaction end of a wait are `crate::approvals`'; this only
//! connects them to the session's messages.

use std::time::Instant;

use super::{OpenCall, Out, Session};
use crate::approval::{ApprovalStatus, CancelCause};
use crate::approvals::{self, Pending, Waited};
use crate::audit::{EventBody, ResultRecord};
use crate::mcp::jsonrpc;
use crate::mcp::results::blocked;
use crate::policy::Decision;
use crate::runner::blocked_content;

/// A call waiting in the pending queue.
#[derive(Debug)]
pub(super) struct Queued {
    pub(super) open: OpenCall,
    /// The client's `tools/call` line, sent on when approved.
    line: String,
    decision: Decision,
    pending: Pending,
    /// When to look for its answer next.
    pub(super) next_poll: Instant,
}

impl Session {
    /// Keeps an asked call (its `pending` row already recorded) waiting.
    pub(super) fn enqueue(
        &mut self,
        open: OpenCall,
        line: &str,
        decision: Decision,
        now: Instant,
    ) -> Vec<Out> {
        let pending = match approvals::waiting(self.service.store(), &open.call_id) {
            Ok(pending) => pending,
            Err(err) => {
                // Its own pending row cannot be read back: nobody could
                // answer it, so it is refused now, never forwarded.
                let text = format!(
                    "gavel cannot keep the call waiting for an approval ({err}). {}",
                    blocked_content(&decision, ApprovalStatus::Cancelled)
                );
                let result = self.event(
                    &open,
                    EventBody::Result(ResultRecord::from_result(&blocked(&text))),
                );
                let mut out = Vec::new();
                if let Err(err) = self.service.store().append(&[result]) {
                    out.push(Out::Note(format!("cannot record the end of an ask: {err}")));
                }
                out.push(Out::Client(jsonrpc::tool_error(&open.request_id, &text)));
                return out;
            }
        };
        let note = Out::Note(format!(
            "call `{id}` ({tool}) waits for approval (up to {secs} s): `gavel pending`, then `gavel approve {id}` or `gavel reject {id}`",
            id = open.call_id,
            tool = open.tool,
            secs = self.wait.map_or(0, |w| w.as_secs()),
        ));
        self.queued.insert(
            open.call_id.clone(),
            Queued {
                open,
                line: line.to_owned(),
                decision,
                pending,
                next_poll: now + approvals::POLL,
            },
        );
        vec![note]
    }

    /// Looks for the answers of the waiting calls whose poll is due; ends
    /// the wait of those whose time is up.
    pub(super) fn poll_queue(&mut self, now: Instant) -> Vec<Out> {
        let due: Vec<String> = self
            .queued
            .iter()
            .filter(|(_, q)| q.next_poll <= now)
            .map(|(id, _)| id.clone())
            .collect();
        let mut out = Vec::new();
        for call_id in due {
            let Some(queued) = self.queued.get_mut(&call_id) else {
                continue;
            };
            let over = chrono::Utc::now().timestamp_micros() >= queued.pending.until_us;
            match approvals::answered(self.service.store(), &queued.pending) {
                Ok(Some(waited)) => out.extend(self.settle(&call_id, waited, false, now)),
                Ok(None) | Err(_) if over => {
                    out.extend(self.unqueue(&call_id, CancelCause::Timeout))
                }
                Ok(None) => queued.next_poll = now + approvals::POLL,
                Err(err) => {
                    queued.next_poll = now + approvals::POLL;
                    out.push(Out::Note(format!(
                        "cannot read the answer to call `{call_id}`: {err}"
                    )));
                }
            }
        }
        out
    }

    /// Ends the wait of `call_id` unanswered (`cause`), unless an answer
    /// was recorded first; either way the call is answered by gavel and
    /// never forwarded.
    pub(super) fn unqueue(&mut self, call_id: &str, cause: CancelCause) -> Vec<Out> {
        let Some(queued) = self.queued.get(call_id) else {
            return Vec::new();
        };
        let text = match cause {
            CancelCause::Timeout => format!(
                "needs approval: nobody answered in time; cancelled. {}",
                blocked_content(&queued.decision, ApprovalStatus::Cancelled)
            ),
            _ => blocked_content(&queued.decision, ApprovalStatus::Cancelled),
        };
        let result = self.event(
            &queued.open,
            EventBody::Result(ResultRecord::from_result(&blocked(&text))),
        );
        let who = self.who.clone();
        let stopped = approvals::stop_waiting(
            self.service.store(),
            &queued.pending,
            cause,
            who.as_ref(),
            &|_| vec![result.clone()],
        );
        match stopped {
            // The cancellation and its result are recorded.
            Ok(waited) if waited.status == ApprovalStatus::Cancelled => {
                self.settle(call_id, waited, true, Instant::now())
            }
            // An answer came first: it is what the record says, but the
            // call is not forwarded any more (timeout aside, nobody waits
            // for it); its result says so.
            Ok(waited) if cause == CancelCause::Timeout => {
                self.settle(call_id, waited, false, Instant::now())
            }
            Ok(waited) => {
                let status = match waited.status {
                    ApprovalStatus::Rejected => ApprovalStatus::Rejected,
                    _ => ApprovalStatus::Cancelled,
                };
                let cancelled = Waited {
                    status,
                    cause: Some(cause),
                    ..waited
                };
                self.settle(call_id, cancelled, false, Instant::now())
            }
            Err(err) => {
                let mut out = vec![Out::Note(format!(
                    "cannot record the end of call `{call_id}`'s wait: {err}"
                ))];
                if let Some(queued) = self.queued.remove(call_id) {
                    out.push(Out::Client(jsonrpc::tool_error(
                        &queued.open.request_id,
                        &text,
                    )));
                }
                out
            }
        }
    }

    /// Every waiting call's wait ends (a side of the session is gone).
    pub(super) fn stop_queue(&mut self, cause: CancelCause) -> Vec<Out> {
        let ids: Vec<String> = self.queued.keys().cloned().collect();
        ids.iter()
            .flat_map(|id| self.unqueue(id, cause))
            .collect::<Vec<_>>()
    }

    /// The wait of `call_id` ended as `waited`: an approval sends the call
    /// on; anything else answers it with `isError`, its `blocked` result
    /// recorded (unless `recorded`: it already is).
    fn settle(&mut self, call_id: &str, waited: Waited, recorded: bool, now: Instant) -> Vec<Out> {
        let Some(queued) = self.queued.remove(call_id) else {
            return Vec::new();
        };
        let Queued {
            mut open,
            line,
            decision,
            ..
        } = queued;
        let by = waited
            .approver
            .as_deref()
            .map(|a| format!(" by {a}"))
            .unwrap_or_default();
        if waited.status == ApprovalStatus::Approved {
            let note = Out::Note(format!(
                "call `{call_id}` approved{by} via {}; sent to the server",
                waited.channel.as_str()
            ));
            open.started = now;
            open.deadline = now + self.config.timeout;
            self.calls.insert(jsonrpc::id_key(&open.request_id), open);
            return vec![note, Out::Server(line)];
        }
        let text = match (waited.status, waited.cause) {
            (ApprovalStatus::Rejected, _) => format!(
                "{} (rejected{by} via {}{})",
                blocked_content(&decision, ApprovalStatus::Rejected),
                waited.channel.as_str(),
                waited
                    .reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
            (_, Some(CancelCause::Timeout)) => format!(
                "needs approval: nobody answered in time; cancelled. {}",
                blocked_content(&decision, ApprovalStatus::Cancelled)
            ),
            _ => blocked_content(&decision, ApprovalStatus::Cancelled),
        };
        let mut out = Vec::new();
        let superseded = waited.cause == Some(CancelCause::Superseded);
        if !recorded && !superseded {
            let result = self.event(
                &open,
                EventBody::Result(ResultRecord::from_result(&blocked(&text))),
            );
            if let Err(err) = self.service.store().append(&[result]) {
                out.push(Out::Note(format!("cannot record the end of an ask: {err}")));
            }
        }
        out.extend(self.anomaly_row(&open, crate::audit::ExecutionStatus::Blocked, &text));
        out.push(Out::Client(jsonrpc::tool_error(&open.request_id, &text)));
        out
    }
}
