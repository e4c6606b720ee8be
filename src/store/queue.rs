//! The reads the pending queue needs (`crate::approvals`): the calls
//! waiting in it, and the approval rows recorded for one call after a seq.
//! Both are read only when something is asked: allowed and denied calls
//! never run them. Also what approvers need: the calls whose rule named
//! them, and the TOTP steps each has used.

use rusqlite::params;

use super::{Store, StoreError, StoredEvent, sql};

impl Store {
    /// The calls whose last approval row is `pending` in the queue (channel
    /// `queue`) and that have no result yet, oldest first, each with its
    /// events.
    pub fn queued_calls(&self) -> Result<Vec<Vec<StoredEvent>>, StoreError> {
        let ids: Vec<String> = self
            .conn
            .prepare_cached(
                "SELECT a.call_id FROM events a
                 WHERE a.kind = 'approval' AND a.approval = 'pending'
                   AND json_valid(CAST(a.payload AS TEXT))
                   AND json_extract(CAST(a.payload AS TEXT), '$.channel') = 'queue'
                   AND NOT EXISTS (SELECT 1 FROM events b
                                   WHERE b.call_id = a.call_id AND b.seq > a.seq
                                     AND (b.kind = 'result'
                                          OR (b.kind = 'approval' AND b.approval <> 'pending')))
                 ORDER BY a.seq",
            )
            .and_then(|mut s| {
                s.query_map([], |row| row.get(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(sql("finding pending calls"))?;
        ids.iter().map(|id| self.call_events(id)).collect()
    }

    /// The `approval` and `result` rows of `call_id` after `seq`, in order:
    /// one indexed lookup, cheap enough to poll.
    pub fn answers_after(&self, call_id: &str, seq: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let text = format!(
            "SELECT {} FROM events WHERE call_id = ?1 AND kind IN ('approval', 'result')
             AND seq > ?2 ORDER BY seq",
            self.event_columns()
        );
        self.conn
            .prepare_cached(&text)
            .and_then(|mut s| {
                s.query_map(rusqlite::params![call_id, seq], StoredEvent::from_row)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(sql("reading a call's answers"))
    }

    /// Every `grant` and `revocation` row, in seq order: a range of the
    /// `call_id` index (their call ids are `grant/<ID>`), never a scan.
    pub fn grant_rows(&self) -> Result<Vec<StoredEvent>, StoreError> {
        let text = format!(
            "SELECT {} FROM events WHERE call_id >= 'grant/' AND call_id < 'grant0'
             AND kind IN ('grant', 'revocation') ORDER BY seq",
            self.event_columns()
        );
        self.conn
            .prepare_cached(&text)
            .and_then(|mut s| {
                s.query_map([], StoredEvent::from_row)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(sql("reading grants"))
    }

    /// The seqs of the decisions made by `rule_id` (a grant's uses), in order.
    pub fn decision_seqs_by_rule(&self, rule_id: &str) -> Result<Vec<u64>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT seq FROM events WHERE kind = 'decision' AND rule_id = ?1 ORDER BY seq",
            )
            .and_then(|mut s| {
                s.query_map([rule_id], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<u64>>>()
            })
            .map_err(sql("reading a grant's uses"))
    }

    /// How many calls were decided by `rule_id` (a grant's `grant.<ID>`).
    pub fn decisions_by_rule(&self, rule_id: &str) -> Result<u64, StoreError> {
        self.conn
            .prepare_cached("SELECT count(*) FROM events WHERE kind = 'decision' AND rule_id = ?1")
            .and_then(|mut s| s.query_row([rule_id], |r| r.get(0)))
            .map_err(sql("counting a grant's uses"))
    }
}

/// Whether approver `?1` used the TOTP code of time step `?2` already.
pub(super) const TOTP_STEP_USED: &str = "SELECT 1 FROM totp_steps WHERE name = ?1 AND step = ?2";

impl Store {
    /// The calls whose decision names approvers (an ask rule's `approvers`),
    /// oldest first: one scan of the decision rows.
    pub fn calls_needing_approvers(&self) -> Result<Vec<String>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT call_id FROM events WHERE kind = 'decision' AND action = 'ask'
                   AND instr(payload, CAST('\"approvers\":' AS BLOB)) > 0 ORDER BY seq",
            )
            .and_then(|mut s| {
                s.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(sql("finding the calls that need approvers"))
    }

    /// Whether `name` used the TOTP code of time step `step` already.
    pub fn totp_step_used(&self, name: &str, step: u64) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached(TOTP_STEP_USED)
            .and_then(|mut s| s.exists(params![name, step]))
            .map_err(sql("looking up a code"))
    }
}
