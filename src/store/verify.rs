//! Verification: stream every row, check seq continuity and the log id,
//! recompute each leaf and link, and, given a checkpoint, the Merkle root
//! of the first `size` leaves. Never relies on the triggers.

use serde::Serialize;

use super::{Store, StoreError, sql};
use crate::chain::{EventFields, Hash, genesis, link};
use crate::checkpoint::{Checkpoint, MerkleBuilder};

/// What is wrong with a log, as a stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// The log identity does not produce its stored genesis hash.
    IdentityMismatch,
    /// A row's seq is not the next number: a row was deleted, inserted or moved.
    SeqGap,
    /// A row carries another log's id: spliced in from elsewhere.
    LogIdMismatch,
    /// A row's fields do not produce its stored leaf hash: it was edited.
    ContentMismatch,
    /// A row's chain value does not follow from the row before.
    ChainBreak,
    /// The checkpoint is not signed by the given key, or does not parse.
    CheckpointSignature,
    /// The checkpoint names another log.
    CheckpointOrigin,
    /// The log holds fewer rows than the checkpoint vouched for: its tail was cut.
    CheckpointTruncated,
    /// The first `size` rows no longer produce the checkpoint's root: history was rewritten.
    CheckpointRootMismatch,
}

impl Problem {
    pub fn as_str(self) -> &'static str {
        match self {
            Problem::IdentityMismatch => "identity_mismatch",
            Problem::SeqGap => "seq_gap",
            Problem::LogIdMismatch => "log_id_mismatch",
            Problem::ContentMismatch => "content_mismatch",
            Problem::ChainBreak => "chain_break",
            Problem::CheckpointSignature => "checkpoint_signature",
            Problem::CheckpointOrigin => "checkpoint_origin",
            Problem::CheckpointTruncated => "checkpoint_truncated",
            Problem::CheckpointRootMismatch => "checkpoint_root_mismatch",
        }
    }
}

/// How a checkpoint check went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointOutcome {
    pub origin: String,
    pub size: u64,
    pub holds: bool,
}

/// The outcome of `verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub ok: bool,
    /// Rows read (all of them when intact; up to the first bad one otherwise).
    pub rows: u64,
    pub first_bad_seq: Option<u64>,
    pub problem: Option<Problem>,
    pub detail: Option<String>,
    /// The final chain value (hex) when intact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointOutcome>,
    /// The Merkle root over every leaf, when asked for.
    #[serde(skip)]
    pub root: Option<Hash>,
}

impl VerifyReport {
    fn bad(rows: u64, seq: Option<u64>, problem: Problem, detail: String) -> Self {
        Self {
            ok: false,
            rows,
            first_bad_seq: seq,
            problem: Some(problem),
            detail: Some(detail),
            head: None,
            checkpoint: None,
            root: None,
        }
    }
}

/// One row, hashed: what the single-threaded link check needs.
enum RowCheck {
    Row {
        seq: i64,
        leaf: Hash,
        leaf_matches: bool,
        log_id_matches: bool,
        /// The stored chain value, if it is 32 bytes.
        chain: Option<Hash>,
    },
    Malformed {
        detail: String,
    },
}

/// Rows per unit of work handed to a hashing thread.
const CHUNK: i64 = 16_384;
/// Below this many rows, threads cost more than they save.
const PARALLEL_FROM: i64 = 50_000;

const ROWS_SQL: &str = "SELECT seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval,
                               status, payload, leaf, chain
                        FROM events WHERE seq >= ?1 AND seq < ?2 ORDER BY seq LIMIT ?3";

/// Reads at most `CHUNK` rows with `lo <= seq < hi` in order and hashes each one.
fn hash_rows(
    conn: &rusqlite::Connection,
    lo: i64,
    hi: i64,
    log_id: &[u8],
) -> Result<Vec<RowCheck>, StoreError> {
    let mut statement = conn
        .prepare_cached(ROWS_SQL)
        .map_err(sql("preparing verify"))?;
    let mut cursor = statement
        .query([lo, hi, CHUNK])
        .map_err(sql("scanning events"))?;
    let mut out = Vec::with_capacity(hi.saturating_sub(lo).clamp(0, CHUNK) as usize);
    while let Some(row) = cursor.next().map_err(sql("scanning events"))? {
        let read = (|| -> rusqlite::Result<RowCheck> {
            let seq: i64 = row.get(0)?;
            let row_log_id = row.get_ref(1)?.as_blob()?;
            let fields = EventFields {
                seq: seq as u64,
                log_id: row_log_id,
                ts_us: row.get(2)?,
                kind: row.get_ref(3)?.as_str()?,
                call_id: row.get_ref(4)?.as_str()?,
                tool: row.get_ref(5)?.as_str_or_null()?,
                action: row.get_ref(6)?.as_str_or_null()?,
                rule_id: row.get_ref(7)?.as_str_or_null()?,
                approval: row.get_ref(8)?.as_str_or_null()?,
                status: row.get_ref(9)?.as_str_or_null()?,
                payload: row.get_ref(10)?.as_blob()?,
            };
            let leaf = fields.leaf_hash();
            Ok(RowCheck::Row {
                seq,
                leaf,
                leaf_matches: row.get_ref(11)?.as_blob()? == leaf,
                log_id_matches: row_log_id == log_id,
                chain: row.get_ref(12)?.as_blob()?.try_into().ok(),
            })
        })();
        match read {
            Ok(check) => out.push(check),
            Err(err) => {
                out.push(RowCheck::Malformed {
                    detail: err.to_string(),
                });
                break;
            }
        }
    }
    Ok(out)
}

/// What to check besides the chain.
#[derive(Debug, Default)]
pub struct VerifyOptions<'a> {
    /// Prove the log still holds this (already signature-checked) checkpoint.
    pub checkpoint: Option<&'a Checkpoint>,
    /// Compute the Merkle root over all leaves (for making a checkpoint).
    pub root: bool,
}

impl Store {
    /// Verifies the whole log. `progress` is called with the rows done so far.
    pub fn verify(
        &self,
        options: &VerifyOptions<'_>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<VerifyReport, StoreError> {
        let identity = &self.identity;
        let expected = genesis(&identity.log_id, &identity.origin, identity.format);
        if expected != identity.genesis {
            return Ok(VerifyReport::bad(
                0,
                None,
                Problem::IdentityMismatch,
                "the log identity does not match its genesis hash".into(),
            ));
        }
        if let Some(cp) = options.checkpoint
            && cp.origin != identity.origin
        {
            return Ok(VerifyReport::bad(
                0,
                None,
                Problem::CheckpointOrigin,
                format!(
                    "checkpoint is for `{}`, this log is `{}`",
                    cp.origin, identity.origin
                ),
            ));
        }
        // Every checkpoint that vouches for a prefix of the log: the one given,
        // and those `gavel checkpoint` stored in the database.
        let mut vouched: Vec<(String, u64, Hash)> = self.stored_checkpoints()?;
        if let Some(cp) = options.checkpoint {
            vouched.push(("the given checkpoint".to_owned(), cp.size, cp.root));
        }
        let sizes: std::collections::BTreeSet<u64> = vouched.iter().map(|v| v.1).collect();
        let mut roots: std::collections::BTreeMap<u64, Hash> = Default::default();
        if sizes.contains(&0) {
            roots.insert(0, MerkleBuilder::new().root());
        }
        let mut merkle = (!vouched.is_empty() || options.root).then(MerkleBuilder::new);
        let mut previous = identity.genesis;
        let mut rows: u64 = 0;

        let mut check = |chunk: Vec<RowCheck>| -> Option<VerifyReport> {
            for row in chunk {
                let expected_seq = rows + 1;
                let bad = |problem, detail| {
                    Some(VerifyReport::bad(rows, Some(expected_seq), problem, detail))
                };
                let (seq, leaf, leaf_matches, log_id_matches, chain) = match row {
                    RowCheck::Malformed { detail } => {
                        return bad(
                            Problem::ContentMismatch,
                            format!("row after seq {rows} has a malformed column: {detail}"),
                        );
                    }
                    RowCheck::Row {
                        seq,
                        leaf,
                        leaf_matches,
                        log_id_matches,
                        chain,
                    } => (seq, leaf, leaf_matches, log_id_matches, chain),
                };
                if seq != expected_seq as i64 {
                    return bad(
                        Problem::SeqGap,
                        format!("expected seq {expected_seq}, found {seq}"),
                    );
                }
                if !log_id_matches {
                    return bad(
                        Problem::LogIdMismatch,
                        format!("seq {seq} belongs to another log"),
                    );
                }
                if !leaf_matches {
                    return bad(
                        Problem::ContentMismatch,
                        format!("seq {seq} does not match its leaf hash: a field was changed"),
                    );
                }
                previous = link(&previous, &leaf);
                if chain != Some(previous) {
                    return bad(
                        Problem::ChainBreak,
                        format!("seq {seq} does not link to the row before it"),
                    );
                }
                rows = expected_seq;
                if let Some(merkle) = merkle.as_mut() {
                    merkle.push(leaf);
                    if sizes.contains(&rows) {
                        roots.insert(rows, merkle.root());
                    }
                }
            }
            progress(rows);
            None
        };
        if let Some(report) = self.scan(&mut check)? {
            return Ok(report);
        }

        let mut report = VerifyReport {
            ok: true,
            rows,
            first_bad_seq: None,
            problem: None,
            detail: None,
            head: Some(crate::digest::hex(&previous)),
            checkpoint: None,
            root: merkle.as_ref().map(MerkleBuilder::root),
        };
        for (label, size, root) in &vouched {
            let problem = match roots.get(size) {
                None => Some((
                    Problem::CheckpointTruncated,
                    Some(rows + 1),
                    format!("{label} vouches for {size} rows but the log holds {rows}"),
                )),
                Some(found) if found != root => Some((
                    Problem::CheckpointRootMismatch,
                    None,
                    format!(
                        "the first {size} rows no longer produce the root of {label}: history was rewritten"
                    ),
                )),
                Some(_) => None,
            };
            if let Some((problem, seq, detail)) = problem {
                report = VerifyReport::bad(rows, seq, problem, detail);
                break;
            }
        }
        if let Some(cp) = options.checkpoint {
            report.checkpoint = Some(CheckpointOutcome {
                origin: cp.origin.clone(),
                size: cp.size,
                holds: roots.get(&cp.size) == Some(&cp.root),
            });
        }
        Ok(report)
    }

    /// The checkpoints stored in the database, as `(label, size, root)`.
    fn stored_checkpoints(&self) -> Result<Vec<(String, u64, Hash)>, StoreError> {
        let mut statement = self
            .conn
            .prepare("SELECT id, size, root FROM checkpoints ORDER BY id")
            .map_err(sql("reading checkpoints"))?;
        let rows = statement
            .query_map([], |r| {
                // A tampered row may hold any type: whatever does not read as
                // a size and a 32-byte root fails its check below.
                let size = r.get::<_, i64>(1).ok().and_then(|s| u64::try_from(s).ok());
                let root = r
                    .get_ref(2)?
                    .as_bytes()
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default();
                Ok((r.get::<_, i64>(0)?, size.unwrap_or(u64::MAX), root))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(sql("reading checkpoints"))?;
        Ok(rows
            .into_iter()
            .map(|(id, size, root)| {
                // A stored root of the wrong length can match nothing: it fails as rewritten.
                let root = <Hash>::try_from(root.as_slice()).unwrap_or([0; 32]);
                (format!("stored checkpoint #{id}"), size, root)
            })
            .collect())
    }

    /// Hands every row, hashed, to `check` in seq order, chunk by chunk,
    /// stopping at the first report it returns. Long logs are read and hashed
    /// by one thread per core, each with its own read-only connection; the
    /// link check stays in order on the calling thread.
    fn scan(
        &self,
        check: &mut dyn FnMut(Vec<RowCheck>) -> Option<VerifyReport>,
    ) -> Result<Option<VerifyReport>, StoreError> {
        let (lo, hi, count): (Option<i64>, Option<i64>, i64) = self
            .conn
            .query_row("SELECT min(seq), max(seq), count(*) FROM events", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(sql("sizing the log"))?;
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Ok(None);
        };
        let end = hi.saturating_add(1);
        let log_id = self.identity.log_id.as_slice();
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4);
        let in_memory = self.path.as_os_str() == ":memory:";
        // Ranges of seq split the work only when seq has no gaps; otherwise
        // (a tampered log) read in order by key, whatever the seq values.
        let contiguous = hi.checked_sub(lo).and_then(|d| d.checked_add(1)) == Some(count);
        if workers < 2 || in_memory || !contiguous || count < PARALLEL_FROM {
            let mut start = lo;
            loop {
                let chunk = hash_rows(&self.conn, start, i64::MAX, log_id)?;
                let next = match chunk.last() {
                    Some(RowCheck::Row { seq, .. }) if chunk.len() as i64 == CHUNK => {
                        seq.checked_add(1)
                    }
                    _ => None,
                };
                if let Some(report) = check(chunk) {
                    return Ok(Some(report));
                }
                match next {
                    Some(next) => start = next,
                    None => return Ok(None),
                }
            }
        }

        let chunks: Vec<(i64, i64)> = (0..)
            .map(|i| lo.saturating_add(i * CHUNK))
            .take_while(|start| *start < end)
            .map(|start| (start, start.saturating_add(CHUNK).min(end)))
            .collect();
        std::thread::scope(|scope| {
            let mut receivers = Vec::with_capacity(workers);
            for worker in 0..workers {
                let (tx, rx) = std::sync::mpsc::sync_channel(2);
                receivers.push(rx);
                let chunks = &chunks;
                let path = &self.path;
                scope.spawn(move || {
                    let conn = match super::Store::open_read_only(path) {
                        Ok(store) => store.conn,
                        Err(err) => {
                            let _ = tx.send(Err(err));
                            return;
                        }
                    };
                    for &(start, stop) in chunks.iter().skip(worker).step_by(workers) {
                        let result = hash_rows(&conn, start, stop, log_id);
                        let failed = result.is_err();
                        if tx.send(result).is_err() || failed {
                            return;
                        }
                    }
                });
            }
            for index in 0..chunks.len() {
                let chunk =
                    receivers[index % workers]
                        .recv()
                        .map_err(|_| StoreError::Damaged {
                            path: self.path.display().to_string(),
                            detail: "a verify worker stopped early".into(),
                        })??;
                if let Some(report) = check(chunk) {
                    return Ok(Some(report));
                }
            }
            Ok(None)
        })
    }

    /// Verifies the log, then records and returns a checkpoint of it signed by `key`.
    /// Refuses (returns the failing report) when the log does not verify.
    pub fn checkpoint(
        &mut self,
        key: &crate::checkpoint::SigningKey,
    ) -> Result<Result<(Checkpoint, String), VerifyReport>, StoreError> {
        let report = self.verify(
            &VerifyOptions {
                checkpoint: None,
                root: true,
            },
            &mut |_| {},
        )?;
        let (true, Some(root)) = (report.ok, report.root) else {
            return Ok(Err(report));
        };
        let checkpoint = Checkpoint {
            origin: self.identity.origin.clone(),
            size: report.rows,
            root,
        };
        let note = key.sign(&checkpoint).map_err(|e| StoreError::Sign {
            detail: e.to_string(),
        })?;
        self.conn
            .execute(
                "INSERT INTO checkpoints (size, root, note, created_us) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![
                    checkpoint.size,
                    &checkpoint.root[..],
                    note,
                    chrono::Utc::now().timestamp_micros()
                ],
            )
            .map_err(sql("storing a checkpoint"))?;
        Ok(Ok((checkpoint, note)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Event, EventBody, LifecycleRecord};
    use crate::store::Durability;

    /// A file store with `n` lifecycle events, appended in batches.
    fn store_with(n: usize) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("a.db"), Durability::Normal).unwrap();
        let events: Vec<Event> = (0..n)
            .map(|i| {
                Event::now(
                    &format!("s{}", i % 7),
                    None,
                    EventBody::Lifecycle(LifecycleRecord {
                        event: "Stop".into(),
                        data: serde_json::json!({ "i": i }),
                    }),
                )
            })
            .collect();
        for batch in events.chunks(10_000) {
            store.append(batch).unwrap();
        }
        (dir, store)
    }

    #[test]
    fn parallel_verify_finds_the_first_bad_row_in_a_long_log() {
        let (dir, store) = store_with(70_000);
        let report = store
            .verify(&VerifyOptions::default(), &mut |_| {})
            .unwrap();
        assert!(report.ok, "{report:?}");
        assert_eq!(report.rows, 70_000);

        let raw = rusqlite::Connection::open(dir.path().join("a.db")).unwrap();
        raw.execute_batch(
            "DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete;
             UPDATE events SET ts_us = ts_us + 1 WHERE seq = 66666;
             UPDATE events SET ts_us = ts_us + 1 WHERE seq = 55555;",
        )
        .unwrap();
        // Read and hashed in parallel chunks: the first bad row still wins.
        let report = store
            .verify(&VerifyOptions::default(), &mut |_| {})
            .unwrap();
        assert_eq!(report.problem, Some(Problem::ContentMismatch));
        assert_eq!(report.first_bad_seq, Some(55_555));
        assert_eq!(report.rows, 55_554);
        // With a gap, rows are read in key order on one connection.
        raw.execute_batch("DELETE FROM events WHERE seq = 30000;")
            .unwrap();
        let report = store
            .verify(&VerifyOptions::default(), &mut |_| {})
            .unwrap();
        assert_eq!(report.problem, Some(Problem::SeqGap));
        assert_eq!(report.first_bad_seq, Some(30_000));
    }

    #[test]
    fn a_row_with_a_huge_seq_is_a_gap_not_a_hang() {
        let (dir, store) = store_with(9);
        let raw = rusqlite::Connection::open(dir.path().join("a.db")).unwrap();
        raw.execute_batch(
            "INSERT INTO events (seq, log_id, ts_us, kind, call_id, tool, action, rule_id,
                                 approval, status, payload, leaf, chain)
             SELECT 4611686018427387904, log_id, ts_us, kind, call_id, tool, action, rule_id,
                    approval, status, payload, leaf, chain FROM events WHERE seq = 9;",
        )
        .unwrap();
        let report = store
            .verify(&VerifyOptions::default(), &mut |_| {})
            .unwrap();
        assert_eq!(report.problem, Some(Problem::SeqGap));
        assert_eq!(report.first_bad_seq, Some(10));
    }

    #[test]
    fn parallel_merkle_root_equals_the_reference() {
        let (_dir, store) = store_with(52_000);
        let options = VerifyOptions {
            checkpoint: None,
            root: true,
        };
        let report = store.verify(&options, &mut |_| {}).unwrap();
        let mut leaves = Vec::new();
        store
            .for_each_event(|e| {
                leaves.push(<Hash>::try_from(e.leaf.as_slice()).unwrap());
                Ok::<_, StoreError>(())
            })
            .unwrap();
        assert_eq!(report.root, Some(crate::checkpoint::merkle_root(&leaves)));
    }
}
