//! What `gavel push` reads from a local log to ship it to a central store:
//! rows from a seq on, one row's chain value, the recorded policies.

use rusqlite::OptionalExtension as _;

use super::{Store, StoreError, StoredEvent, sql};

/// A recorded policy text, as the `policies` table holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRow {
    pub digest: String,
    pub name: String,
    pub source: String,
    pub first_seen_us: i64,
}

impl Store {
    /// Every event with `seq >= from`, in seq order, one at a time.
    pub fn for_each_event_from<E: From<StoreError>>(
        &self,
        from: u64,
        mut each: impl FnMut(StoredEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        let text = format!(
            "SELECT {} FROM events WHERE seq >= ?1 ORDER BY seq",
            self.event_columns()
        );
        let mut statement = self.conn.prepare(&text).map_err(sql("preparing a scan"))?;
        let mut rows = statement
            .query([i64::try_from(from).unwrap_or(i64::MAX)])
            .map_err(sql("scanning events"))?;
        while let Some(row) = rows.next().map_err(sql("scanning events"))? {
            each(StoredEvent::from_row(row).map_err(sql("reading an event"))?)?;
        }
        Ok(())
    }

    /// The stored chain value of row `seq`, if there is such a row.
    pub fn chain_at(&self, seq: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.conn
            .query_row(
                "SELECT chain FROM events WHERE seq = ?1",
                [i64::try_from(seq).unwrap_or(i64::MAX)],
                |row| row.get(0),
            )
            .optional()
            .map_err(sql("reading a chain value"))
    }

    /// The highest seq in the log (0 when empty).
    pub fn last_seq(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT coalesce(max(seq), 0) FROM events", [], |row| {
                row.get(0)
            })
            .map_err(sql("sizing the log"))
    }

    /// Every recorded policy text.
    pub fn policy_rows(&self) -> Result<Vec<PolicyRow>, StoreError> {
        let mut statement = self
            .conn
            .prepare("SELECT digest, name, source, first_seen_us FROM policies ORDER BY digest")
            .map_err(sql("preparing a policy read"))?;
        statement
            .query_map([], |row| {
                Ok(PolicyRow {
                    digest: row.get(0)?,
                    name: row.get(1)?,
                    source: row.get(2)?,
                    first_seen_us: row.get(3)?,
                })
            })
            .and_then(|rows| rows.collect())
            .map_err(sql("reading policies"))
    }
}
