//! Session flows in a replay: what the earlier calls of each session did,
//! re-derived from the record under the replayed policy, so that a changed
//! label or flow rule is replayed exactly (docs/flows.md).
//!
//! A call's labels are what the replayed policy gives its recorded request
//! and facts, after its own session's history (a rule's `labels` come with
//! the decision); whether it took place is what the record says (not
//! denied, not refused by an approval or a blocked result). A call reads the calls
//! of its session up to the seq its decision recorded (`history_through`),
//! else those before it: the rows the live decision could have read.

use std::collections::HashMap;

use crate::policy::{History, Policy};
use crate::store::{AuditQuery, DecidedCall, Store, StoreError};

/// A labelled call of a session.
struct Labelled {
    seq: u64,
    call_id: String,
    labels: Vec<String>,
    /// The first row that refused it, if one did.
    blocked_at: Option<u64>,
}

/// The labelled calls of every session, oldest first.
pub struct Flows {
    sessions: HashMap<String, Vec<Labelled>>,
}

impl Flows {
    /// Labels every call of the record up to `until` under `policy`; `None`
    /// when the policy reads no history (nothing to derive, nothing read).
    pub fn scan(
        store: &Store,
        policy: &Policy,
        until: Option<i64>,
    ) -> Result<Option<Self>, StoreError> {
        if !policy.reads_history() {
            return Ok(None);
        }
        let mut sessions: HashMap<String, Vec<Labelled>> = HashMap::new();
        let everything = AuditQuery {
            until,
            ..AuditQuery::default()
        };
        store.for_each_decided_call(&everything, |call| {
            let who = call.request.principal.as_ref();
            let Some(session) = who.and_then(|p| p.session.clone()) else {
                return Ok(());
            };
            if call.decision.action == crate::policy::Action::Deny {
                return Ok(());
            }
            let request = super::recorded_request(&call);
            let history = history_of(&sessions, &call);
            let labels = policy
                .decide_in(&request, &call.decision.facts, who, &history)
                .labels;
            if !labels.is_empty() {
                let blocked_at = store.blocked_at(&call.call_id)?;
                sessions.entry(session).or_default().push(Labelled {
                    seq: call.seq,
                    call_id: call.call_id,
                    labels,
                    blocked_at,
                });
            }
            Ok::<_, StoreError>(())
        })?;
        Ok(Some(Self { sessions }))
    }

    /// The history `call` is decided after.
    pub fn history(&self, call: &DecidedCall) -> History {
        history_of(&self.sessions, call)
    }
}

/// The history `call` is decided after, from the labelled calls of
/// `sessions` (refusals known so far: a scan in seq order knows those at or
/// before the call, which are all it may read).
fn history_of(sessions: &HashMap<String, Vec<Labelled>>, call: &DecidedCall) -> History {
    let mut history = History::default();
    let Some(session) = call
        .request
        .principal
        .as_ref()
        .and_then(|p| p.session.as_deref())
    else {
        return history;
    };
    let read = |seq: u64| match call.decision.history_through {
        Some(through) => seq <= through,
        None => seq < call.seq,
    };
    for earlier in sessions.get(session).into_iter().flatten() {
        if !read(earlier.seq) {
            break;
        }
        if earlier.call_id != call.call_id && !earlier.blocked_at.is_some_and(read) {
            history.add(&earlier.call_id, &earlier.labels);
        }
    }
    history
}
