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
        let mut merkle = (options.checkpoint.is_some() || options.root).then(MerkleBuilder::new);
        let mut checkpoint_root: Option<Hash> = None;
        let mut previous = identity.genesis;
        let mut rows: u64 = 0;

        let text = "SELECT seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval,
                           status, payload, leaf, chain
                    FROM events ORDER BY seq";
        let mut statement = self.conn.prepare(text).map_err(sql("preparing verify"))?;
        let mut cursor = statement.query([]).map_err(sql("scanning events"))?;
        while let Some(row) = cursor.next().map_err(sql("scanning events"))? {
            let expected_seq = rows + 1;
            let read = (|| -> rusqlite::Result<_> {
                let seq: i64 = row.get(0)?;
                let log_id = row.get_ref(1)?.as_blob()?;
                let fields = EventFields {
                    seq: seq as u64,
                    log_id,
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
                Ok((
                    seq,
                    fields,
                    row.get_ref(11)?.as_blob()?,
                    row.get_ref(12)?.as_blob()?,
                ))
            })();
            let (seq, fields, leaf, chain) = match read {
                Ok(parts) => parts,
                Err(err) => {
                    return Ok(VerifyReport::bad(
                        rows,
                        Some(expected_seq),
                        Problem::ContentMismatch,
                        format!("row after seq {rows} has a malformed column: {err}"),
                    ));
                }
            };
            if seq != expected_seq as i64 {
                return Ok(VerifyReport::bad(
                    rows,
                    Some(expected_seq),
                    Problem::SeqGap,
                    format!("expected seq {expected_seq}, found {seq}"),
                ));
            }
            if fields.log_id != identity.log_id.as_slice() {
                return Ok(VerifyReport::bad(
                    rows,
                    Some(expected_seq),
                    Problem::LogIdMismatch,
                    format!("seq {seq} belongs to another log"),
                ));
            }
            let computed = fields.leaf_hash();
            if leaf != computed {
                return Ok(VerifyReport::bad(
                    rows,
                    Some(expected_seq),
                    Problem::ContentMismatch,
                    format!("seq {seq} does not match its leaf hash: a field was changed"),
                ));
            }
            previous = link(&previous, &computed);
            if chain != previous {
                return Ok(VerifyReport::bad(
                    rows,
                    Some(expected_seq),
                    Problem::ChainBreak,
                    format!("seq {seq} does not link to the row before it"),
                ));
            }
            rows = expected_seq;
            if let Some(merkle) = merkle.as_mut() {
                merkle.push(computed);
                if let Some(cp) = options.checkpoint
                    && cp.size == rows
                {
                    checkpoint_root = Some(merkle.root());
                }
            }
            if rows.is_multiple_of(65_536) {
                progress(rows);
            }
        }
        progress(rows);

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
        if let Some(cp) = options.checkpoint {
            if cp.size == 0 {
                checkpoint_root = Some(MerkleBuilder::new().root());
            }
            let outcome = |holds| CheckpointOutcome {
                origin: cp.origin.clone(),
                size: cp.size,
                holds,
            };
            match checkpoint_root {
                None => {
                    report = VerifyReport::bad(
                        rows,
                        Some(rows + 1),
                        Problem::CheckpointTruncated,
                        format!(
                            "the checkpoint vouches for {} rows but the log holds {rows}",
                            cp.size
                        ),
                    );
                    report.checkpoint = Some(outcome(false));
                }
                Some(root) if root != cp.root => {
                    report = VerifyReport::bad(
                        rows,
                        None,
                        Problem::CheckpointRootMismatch,
                        format!(
                            "the first {} rows no longer produce the checkpoint's root: history was rewritten",
                            cp.size
                        ),
                    );
                    report.checkpoint = Some(outcome(false));
                }
                Some(_) => report.checkpoint = Some(outcome(true)),
            }
        }
        Ok(report)
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
        let note = key.sign(&checkpoint).map_err(|e| StoreError::Damaged {
            path: self.path.display().to_string(),
            detail: format!("cannot sign a checkpoint: {e}"),
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
