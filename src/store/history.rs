//! The session history flow rules read (docs/policy.md, "Session flows"):
//! the labels of the earlier calls of a session that took place, from the
//! decision rows migration 0007 indexes.

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError, sql};
use crate::audit::AuditError;
use crate::policy::History;

/// The decision rows of session `?1` that carry labels, up to seq `?2`,
/// not denied, and not refused by an approval or a blocked result at or
/// before `?2`. Its first two terms are the partial index's, which it uses.
const LABELLED: &str = "
    SELECT d.call_id, d.payload FROM events d
     WHERE d.kind = 'decision' AND instr(d.payload, X'226C6162656C73223A') > 0
       AND d.session = ?1 AND d.seq <= ?2 AND d.action <> 'deny'
       AND NOT EXISTS (
           SELECT 1 FROM events o
            WHERE o.call_id = d.call_id AND o.seq <= ?2
              AND ((o.kind = 'approval' AND o.approval IN ('rejected', 'cancelled'))
                OR (o.kind = 'result' AND o.status = 'blocked')))
     ORDER BY d.seq";

/// The first row at or after which a call did not take place: a refusing
/// approval or a blocked result.
const BLOCKED_AT: &str = "
    SELECT min(seq) FROM events
     WHERE call_id = ?1
       AND ((kind = 'approval' AND approval IN ('rejected', 'cancelled'))
         OR (kind = 'result' AND status = 'blocked'))";

/// Only the labels of a decision payload.
#[derive(serde::Deserialize)]
struct Labels {
    #[serde(default)]
    labels: Vec<String>,
}

impl Store {
    /// What the earlier calls of `session` did: the labels of those that
    /// took place, read in one snapshot with the last seq it holds.
    pub fn session_history(&self, session: &str) -> Result<(u64, History), StoreError> {
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(sql("reading the session's history"))?;
        let through: u64 = tx
            .query_row("SELECT coalesce(max(seq), 0) FROM events", [], |r| r.get(0))
            .map_err(sql("reading the session's history"))?;
        let history = self.session_history_through(session, through)?;
        tx.finish().map_err(sql("reading the session's history"))?;
        Ok((through, history))
    }

    /// What the calls of `session` up to seq `through` did, as a decision
    /// that recorded `history_through = through` read it.
    pub fn session_history_through(
        &self,
        session: &str,
        through: u64,
    ) -> Result<History, StoreError> {
        let mut statement = self
            .conn
            .prepare_cached(LABELLED)
            .map_err(sql("reading the session's history"))?;
        let mut rows = statement
            .query(params![session, through as i64])
            .map_err(sql("reading the session's history"))?;
        let mut history = History::default();
        while let Some(row) = rows.next().map_err(sql("reading the session's history"))? {
            let call_id: String = row.get(0).map_err(sql("reading the session's history"))?;
            let payload: Vec<u8> = row.get(1).map_err(sql("reading the session's history"))?;
            // A payload that is not a decision's JSON labels nothing;
            // `gavel verify` names a damaged row.
            if let Ok(read) = serde_json::from_slice::<Labels>(&payload) {
                history.add(&call_id, &read.labels);
            }
        }
        Ok(history)
    }

    /// The seq of the first row that refused call `call_id` (a rejected or
    /// cancelled approval, a blocked result), if one did.
    pub fn blocked_at(&self, call_id: &str) -> Result<Option<u64>, StoreError> {
        self.conn
            .prepare_cached(BLOCKED_AT)
            .and_then(|mut s| {
                s.query_row([call_id], |r| r.get::<_, Option<u64>>(0))
                    .optional()
            })
            .map(Option::flatten)
            .map_err(sql("reading a call's refusal"))
    }
}

impl crate::audit::AuditSink for Store {
    fn append(&mut self, events: &[crate::audit::Event]) -> Result<(), AuditError> {
        Store::append(self, events)
            .map(|_| ())
            .map_err(|e| AuditError(Box::new(e)))
    }

    fn session_history(&mut self, session: &str) -> Result<Option<(u64, History)>, AuditError> {
        Store::session_history(self, session)
            .map(Some)
            .map_err(|e| AuditError(Box::new(e)))
    }
}
