//! The session history flow rules read (docs/flows.md):
//! for each label, the first call of the session that set it and took
//! place, from the `session_labels` table migration 0007 derives from the
//! decision rows.

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError, sql};
use crate::policy::History;

/// A row of a call that refused it: a rejected or cancelled approval, or a
/// blocked result (the call did not take place).
const REFUSING: &str = "((kind = 'approval' AND approval IN ('rejected', 'cancelled'))
                         OR (kind = 'result' AND status = 'blocked'))";

/// The first call of session `?1` up to seq `?3` that set label `?2` and
/// was not refused by then.
fn first_setter() -> String {
    format!(
        "SELECT s.call_id FROM session_labels s
          WHERE s.session = ?1 AND s.label = ?2 AND s.seq <= ?3
            AND NOT EXISTS (SELECT 1 FROM events
                             WHERE call_id = s.call_id AND seq <= ?3 AND {REFUSING})
          ORDER BY s.seq LIMIT 1"
    )
}

/// Every label of session `?1` up to seq `?2`, oldest first, of calls not
/// refused by then.
fn every_label() -> String {
    format!(
        "SELECT s.call_id, s.label FROM session_labels s
          WHERE s.session = ?1 AND s.seq <= ?2
            AND NOT EXISTS (SELECT 1 FROM events
                             WHERE call_id = s.call_id AND seq <= ?2 AND {REFUSING})
          ORDER BY s.seq"
    )
}

/// The first row that refused call `?1`.
fn blocked_at() -> String {
    format!("SELECT min(seq) FROM events WHERE call_id = ?1 AND {REFUSING}")
}

/// `session_labels` made from the decision rows alone, as the append
/// writes them: for a log copied row by row (a mirror of a central log).
pub(super) const DERIVE_SESSION_LABELS: &str = "
    INSERT OR IGNORE INTO session_labels (session, label, seq, call_id)
    SELECT e.session, j.value, e.seq, e.call_id
      FROM events e, json_each(CAST(e.payload AS TEXT), '$.labels') AS j
     WHERE e.kind = 'decision' AND e.session IS NOT NULL AND e.action <> 'deny'
       AND instr(e.payload, X'226C6162656C73223A') > 0
       AND json_valid(CAST(e.payload AS TEXT)) AND j.type = 'text'";

impl Store {
    /// What the earlier calls of `session` did, as far as `labels` go: the
    /// first call that set each and took place, read in one snapshot with
    /// the last seq it holds.
    pub fn session_history(
        &self,
        session: &str,
        labels: &[String],
    ) -> Result<(u64, History), StoreError> {
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(sql("reading the session's history"))?;
        let through: u64 = tx
            .query_row("SELECT coalesce(max(seq), 0) FROM events", [], |r| r.get(0))
            .map_err(sql("reading the session's history"))?;
        let history = self.session_history_through(session, through, Some(labels))?;
        tx.finish().map_err(sql("reading the session's history"))?;
        Ok((through, history))
    }

    /// What the calls of `session` up to seq `through` did, as a decision
    /// that recorded `history_through = through` read it: for `labels`, or
    /// for every label (`None`).
    pub fn session_history_through(
        &self,
        session: &str,
        through: u64,
        labels: Option<&[String]>,
    ) -> Result<History, StoreError> {
        let context = "reading the session's history";
        let mut history = History::default();
        match labels {
            Some(labels) => {
                let mut statement = self
                    .conn
                    .prepare_cached(&first_setter())
                    .map_err(sql(context))?;
                for label in labels {
                    let call_id: Option<String> = statement
                        .query_row(params![session, label, through as i64], |r| r.get(0))
                        .optional()
                        .map_err(sql(context))?;
                    if let Some(call_id) = call_id {
                        history.add(&call_id, std::slice::from_ref(label));
                    }
                }
            }
            None => {
                let mut statement = self
                    .conn
                    .prepare_cached(&every_label())
                    .map_err(sql(context))?;
                let rows = statement
                    .query_map(params![session, through as i64], |r| {
                        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                    })
                    .map_err(sql(context))?;
                for row in rows {
                    let (call_id, label) = row.map_err(sql(context))?;
                    history.add(&call_id, &[label]);
                }
            }
        }
        Ok(history)
    }

    /// The seq of the first row that refused call `call_id` (a rejected or
    /// cancelled approval, a blocked result), if one did.
    pub fn blocked_at(&self, call_id: &str) -> Result<Option<u64>, StoreError> {
        self.conn
            .prepare_cached(&blocked_at())
            .and_then(|mut s| {
                s.query_row([call_id], |r| r.get::<_, Option<u64>>(0))
                    .optional()
            })
            .map(Option::flatten)
            .map_err(sql("reading a call's refusal"))
    }
}
