//! A copy in memory of (part of) a log kept elsewhere: its identity, rows
//! exactly as stored there, its checkpoints and policy texts. The central
//! store's reading commands that are large and local (`show`, `explain`,
//! `replay`, `export`, `report`) run unchanged on such a copy.

use rusqlite::params;

use super::{LogIdentity, PolicyRow, Store, StoreError, StoredEvent, sql};

/// A stored checkpoint: `(size, root, note, created_us)`.
pub type CheckpointCopy = (i64, Vec<u8>, String, i64);

impl Store {
    /// An in-memory store holding `rows` (with their own seq, leaf and
    /// chain, never rehashed) under `identity`, with `checkpoints` and
    /// `policies`. Read-only in use: nothing appends to it.
    pub fn mirror(
        identity: &LogIdentity,
        rows: impl IntoIterator<Item = StoredEvent>,
        checkpoints: &[CheckpointCopy],
        policies: &[PolicyRow],
    ) -> Result<Self, StoreError> {
        let mut store = Self::open_in_memory()?;
        let tx = store.conn.transaction().map_err(sql("starting a mirror"))?;
        // The identity is fixed by triggers in a real log; a mirror takes its source's.
        tx.execute_batch("DROP TRIGGER log_meta_no_update;")
            .map_err(sql("preparing a mirror"))?;
        tx.execute(
            "UPDATE log_meta SET log_id = ?1, origin = ?2, format = ?3, created_us = ?4, genesis = ?5",
            params![
                identity.log_id,
                identity.origin,
                identity.format,
                identity.created_us,
                &identity.genesis[..]
            ],
        )
        .map_err(sql("copying the identity"))?;
        {
            let mut insert = tx
                .prepare(&format!(
                    "INSERT INTO events ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                    StoredEvent::COLUMNS
                ))
                .map_err(sql("copying events"))?;
            for e in rows {
                insert
                    .execute(params![
                        e.seq, e.log_id, e.ts_us, e.kind, e.call_id, e.tool, e.action, e.rule_id,
                        e.approval, e.status, e.payload, e.leaf, e.chain, e.user, e.host, e.client,
                        e.session, e.agent
                    ])
                    .map_err(sql("copying events"))?;
            }
            let mut insert = tx
                .prepare("INSERT INTO checkpoints (size, root, note, created_us) VALUES (?1, ?2, ?3, ?4)")
                .map_err(sql("copying checkpoints"))?;
            for (size, root, note, created_us) in checkpoints {
                insert
                    .execute(params![size, root, note, created_us])
                    .map_err(sql("copying checkpoints"))?;
            }
            let mut insert = tx
                .prepare("INSERT INTO policies (digest, name, source, first_seen_us) VALUES (?1, ?2, ?3, ?4)")
                .map_err(sql("copying policies"))?;
            for p in policies {
                insert
                    .execute(params![p.digest, p.name, p.source, p.first_seen_us])
                    .map_err(sql("copying policies"))?;
            }
        }
        // What flow rules read, derived as the append would have written it.
        tx.execute(super::history::DERIVE_SESSION_LABELS, [])
            .map_err(sql("copying session labels"))?;
        tx.commit().map_err(sql("ending a mirror"))?;
        store.identity = identity.clone();
        store.redactor = None;
        store.durability = None;
        Ok(store)
    }
}
