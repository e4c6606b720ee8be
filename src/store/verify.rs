//! Verification: the log identity, every checkpoint (the one given and the
//! ones stored), then every row in order (seq continuity, column types, the
//! log id, each leaf and link), then whether the log still holds each
//! checkpoint. The order is part of the format (docs/record-format.md): it
//! decides which problem is reported when there are several. Never relies
//! on the triggers.

use rusqlite::OptionalExtension;
use rusqlite::types::ValueRef;
use serde::Serialize;

use super::{Store, StoreError, sql};
use crate::chain::{EventFields, FORMAT_KIND, FORMAT_VERSION, Hash, Who, genesis, link};
use crate::checkpoint::{Checkpoint, MerkleBuilder, VerifierKey};

/// What is wrong with a log, as a stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// The log identity is missing, malformed, names a foreign origin, or
    /// does not produce its stored genesis hash.
    IdentityMismatch,
    /// The log says a record format this gavel does not know.
    UnknownFormat,
    /// A row's seq is not the next number: a row was deleted, inserted or moved.
    SeqGap,
    /// A row carries another log's id: spliced in from elsewhere.
    LogIdMismatch,
    /// A row's fields do not produce its stored leaf hash, or a column is
    /// not of its documented type: it was edited.
    ContentMismatch,
    /// A row's chain value does not follow from the row before.
    ChainBreak,
    /// A checkpoint is not signed by the given key, or the given file does not parse.
    CheckpointSignature,
    /// A stored checkpoint's note does not parse, or disagrees with its row (size, root).
    CheckpointMismatch,
    /// A checkpoint names another log.
    CheckpointOrigin,
    /// The log holds fewer rows than a checkpoint vouched for: its tail was cut.
    CheckpointTruncated,
    /// The first `size` rows no longer produce a checkpoint's root: history was rewritten.
    CheckpointRootMismatch,
}

impl Problem {
    pub fn as_str(self) -> &'static str {
        match self {
            Problem::IdentityMismatch => "identity_mismatch",
            Problem::UnknownFormat => "unknown_format",
            Problem::SeqGap => "seq_gap",
            Problem::LogIdMismatch => "log_id_mismatch",
            Problem::ContentMismatch => "content_mismatch",
            Problem::ChainBreak => "chain_break",
            Problem::CheckpointSignature => "checkpoint_signature",
            Problem::CheckpointMismatch => "checkpoint_mismatch",
            Problem::CheckpointOrigin => "checkpoint_origin",
            Problem::CheckpointTruncated => "checkpoint_truncated",
            Problem::CheckpointRootMismatch => "checkpoint_root_mismatch",
        }
    }
}

/// How the check of a given checkpoint file went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointOutcome {
    pub origin: String,
    pub size: u64,
    /// Whether the log was found to hold it (false when verification stopped earlier).
    pub holds: bool,
}

/// The outcome of `verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub ok: bool,
    /// Rows found good, in order, before verification stopped (all of them when intact).
    pub rows: u64,
    /// The seq at which the log stops being valid (`rows + 1`), when a row can be blamed.
    pub first_bad_seq: Option<u64>,
    pub problem: Option<Problem>,
    pub detail: Option<String>,
    /// The final chain value (hex) when intact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The checkpoint given as a file, once its note was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointOutcome>,
    /// Whether every checkpoint note checked had its signature verified by a given key.
    pub signature_checked: bool,
    /// How many checkpoints the database (or the export) stores.
    pub stored_checkpoints: u64,
    /// The Merkle root over every leaf, when asked for.
    #[serde(skip)]
    pub root: Option<Hash>,
    /// The frontier of that tree (what extends it), when asked for.
    #[serde(skip)]
    pub frontier: Option<Vec<Hash>>,
    /// The roots of the tree's 256-leaf blocks completed during the check
    /// (the first one's block number, then the roots), kept to build
    /// inclusion proofs later.
    #[serde(skip)]
    pub blocks: Option<(u64, Vec<Hash>)>,
}

impl VerifyReport {
    /// A failed report.
    pub fn bad(rows: u64, seq: Option<u64>, problem: Problem, detail: String) -> Self {
        Self {
            ok: false,
            rows,
            first_bad_seq: seq,
            problem: Some(problem),
            detail: Some(detail),
            head: None,
            checkpoint: None,
            signature_checked: false,
            stored_checkpoints: 0,
            root: None,
            frontier: None,
            blocks: None,
        }
    }
}

/// One row, hashed: what the single-threaded link check needs.
pub(crate) enum RowCheck {
    Row {
        seq: i64,
        leaf: Hash,
        leaf_matches: bool,
        log_id_matches: bool,
        /// The stored chain value.
        chain: Vec<u8>,
        /// The format the leaf was computed in.
        format: u32,
        /// For a `format` row: the format its payload switches to (`-1` when unreadable).
        switch: Option<i64>,
    },
    /// A column is not of its documented type (or its text is not UTF-8).
    Malformed { seq: i64, detail: String },
}

/// The newest rows `Store::check_recent` always reads.
pub const RECENT_ROWS: u64 = 10_000;

/// Rows per unit of work handed to a hashing thread.
const CHUNK: i64 = 16_384;
/// Below this many rows, threads cost more than they save.
const PARALLEL_FROM: i64 = 50_000;

const ROWS_SQL: &str = "SELECT seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval,
                               status, payload, leaf, chain, user, host, client, session, agent
                        FROM events WHERE seq >= ?1 AND seq < ?2 ORDER BY seq LIMIT ?3";

/// `ROWS_SQL` for a database read at a schema before the provenance columns.
const ROWS_SQL_BEFORE_PROVENANCE: &str = "SELECT seq, log_id, ts_us, kind, call_id, tool, action,
                               rule_id, approval, status, payload, leaf, chain,
                               NULL, NULL, NULL, NULL, NULL
                        FROM events WHERE seq >= ?1 AND seq < ?2 ORDER BY seq LIMIT ?3";

/// The documented column names of `events`, in `ROWS_SQL` order.
const COLUMN_NAMES: [&str; 18] = [
    "seq", "log_id", "ts_us", "kind", "call_id", "tool", "action", "rule_id", "approval", "status",
    "payload", "leaf", "chain", "user", "host", "client", "session", "agent",
];

/// The format a `format` row's payload switches to; `-1` when it does not say.
pub(crate) fn switch_of(kind: &str, payload: &[u8]) -> Option<i64> {
    (kind == FORMAT_KIND).then(|| {
        serde_json::from_slice::<serde_json::Value>(payload)
            .ok()
            .and_then(|v| v.get("format")?.as_i64())
            .unwrap_or(-1)
    })
}

/// Which format the rows of a log are in: the log's own, then, after the
/// switch row's seq (as the `format` rows say; the in-order check confirms it), another.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Formats {
    pub log: u32,
    pub switch: Option<(u64, u32)>,
}

impl Formats {
    pub(crate) fn of(&self, seq: i64) -> u32 {
        super::row_format(self.log, self.switch, seq.max(0) as u64)
    }
}

fn type_name(value: ValueRef<'_>) -> &'static str {
    match value {
        ValueRef::Null => "NULL",
        ValueRef::Integer(_) => "INTEGER",
        ValueRef::Real(_) => "REAL",
        ValueRef::Text(_) => "TEXT",
        ValueRef::Blob(_) => "BLOB",
    }
}

/// Hashes one row, insisting on the documented storage class of every column.
fn check_row(
    row: &rusqlite::Row<'_>,
    log_id: &[u8],
    formats: Formats,
) -> rusqlite::Result<RowCheck> {
    let seq: i64 = row.get(0)?;
    let format = formats.of(seq);
    let mut values = [ValueRef::Null; 18];
    for (i, value) in values.iter_mut().enumerate() {
        *value = row.get_ref(i)?;
    }
    let wrong = |i: usize, wanted: &str| RowCheck::Malformed {
        seq,
        detail: format!(
            "seq {seq}: column `{}` is stored as {}, not {wanted}",
            COLUMN_NAMES[i],
            type_name(values[i])
        ),
    };
    let blob = |i: usize| match values[i] {
        ValueRef::Blob(b) => Ok(b),
        _ => Err(wrong(i, "BLOB")),
    };
    let text = |i: usize| match values[i] {
        ValueRef::Text(t) => std::str::from_utf8(t).map_err(|_| RowCheck::Malformed {
            seq,
            detail: format!("seq {seq}: column `{}` is not UTF-8 text", COLUMN_NAMES[i]),
        }),
        _ => Err(wrong(i, "TEXT")),
    };
    let optional = |i: usize| match values[i] {
        ValueRef::Null => Ok(None),
        ValueRef::Text(_) => text(i).map(Some),
        _ => Err(wrong(i, "TEXT or NULL")),
    };
    let checked = (|| -> Result<RowCheck, RowCheck> {
        if format == 1
            && let Some(i) = (13..18).find(|&i| !matches!(values[i], ValueRef::Null))
        {
            return Err(RowCheck::Malformed {
                seq,
                detail: format!(
                    "seq {seq}: column `{}` must be NULL in a format-1 row (it is not hashed there)",
                    COLUMN_NAMES[i]
                ),
            });
        }
        let row_log_id = blob(1)?;
        let ValueRef::Integer(ts_us) = values[2] else {
            return Err(wrong(2, "INTEGER"));
        };
        let fields = EventFields {
            seq: seq as u64,
            log_id: row_log_id,
            ts_us,
            kind: text(3)?,
            call_id: text(4)?,
            tool: optional(5)?,
            action: optional(6)?,
            rule_id: optional(7)?,
            approval: optional(8)?,
            status: optional(9)?,
            payload: blob(10)?,
            format,
            who: Who {
                user: optional(13)?,
                host: optional(14)?,
                client: optional(15)?,
                session: optional(16)?,
                agent: optional(17)?,
            },
        };
        let stored_leaf = blob(11)?;
        let chain = blob(12)?.to_vec();
        let leaf = fields.leaf_hash();
        Ok(RowCheck::Row {
            seq,
            leaf,
            leaf_matches: stored_leaf == leaf,
            log_id_matches: row_log_id == log_id,
            chain,
            format,
            switch: switch_of(fields.kind, fields.payload),
        })
    })();
    Ok(checked.unwrap_or_else(|malformed| malformed))
}

/// Reads at most `CHUNK` rows with `lo <= seq < hi` in order and hashes each one.
fn hash_rows(
    conn: &rusqlite::Connection,
    provenance: bool,
    lo: i64,
    hi: i64,
    log_id: &[u8],
    formats: Formats,
) -> Result<Vec<RowCheck>, StoreError> {
    let mut statement = conn
        .prepare_cached(if provenance {
            ROWS_SQL
        } else {
            ROWS_SQL_BEFORE_PROVENANCE
        })
        .map_err(sql("preparing verify"))?;
    let mut cursor = statement
        .query([lo, hi, CHUNK])
        .map_err(sql("scanning events"))?;
    let mut out = Vec::with_capacity(hi.saturating_sub(lo).clamp(0, CHUNK) as usize);
    while let Some(row) = cursor.next().map_err(sql("scanning events"))? {
        out.push(check_row(row, log_id, formats).map_err(sql("scanning events"))?);
    }
    Ok(out)
}

/// A checkpoint note given from outside the database (a file).
#[derive(Debug, Clone, Copy)]
pub struct GivenCheckpoint<'a> {
    /// How to name it in a detail, e.g. the file's path.
    pub label: &'a str,
    /// The signed note's text.
    pub note: &'a str,
}

/// What to check besides the chain.
#[derive(Debug, Default)]
pub struct VerifyOptions<'a> {
    /// Prove the log still holds this checkpoint (its signature is checked
    /// when `keys` is not empty, else only parsed).
    pub checkpoint: Option<GivenCheckpoint<'a>>,
    /// Verifier keys: when any is given, every checkpoint note (the given
    /// one and each stored one) must carry a valid signature by one of them.
    pub keys: &'a [VerifierKey],
    /// Compute the Merkle root over all leaves (for making a checkpoint).
    pub root: bool,
}

/// A stored checkpoint as read from its row: `id` and the columns, untyped.
pub(crate) struct StoredCheckpoint {
    pub id: i64,
    pub size: Option<i64>,
    pub root: Option<Vec<u8>>,
    pub note: Option<String>,
}

/// A checkpoint signed, with its note, or why the log could not be signed.
pub type Signed = Result<(Checkpoint, String), VerifyReport>;

/// What a checkpoint vouches for: how to name it, its size and root.
pub(crate) type Vouched = (String, u64, Hash);

/// The checkpoints that passed the note checks.
pub(crate) struct Notes {
    /// What each vouches for: the given one first, then the stored ones by id.
    pub vouched: Vec<Vouched>,
    /// The given one's parsed note.
    pub given: Option<Checkpoint>,
}

/// A stored checkpoint row with the documented column types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRow {
    pub id: i64,
    pub size: i64,
    pub root: Vec<u8>,
    pub note: String,
}

/// The checks of the identity and of every checkpoint note, before any row
/// is read; a failed report when one does not hold.
pub(crate) fn check_notes(
    origin: &str,
    log_id: &[u8],
    format: u32,
    stored_genesis: &Hash,
    given: Option<GivenCheckpoint<'_>>,
    stored: &[StoredCheckpoint],
    keys: &[VerifierKey],
) -> Result<Notes, Box<VerifyReport>> {
    let fail = |problem, detail| Err(Box::new(VerifyReport::bad(0, None, problem, detail)));
    let expected_origin = format!("gavel/{}", crate::digest::hex(log_id));
    if origin != expected_origin {
        return fail(
            Problem::IdentityMismatch,
            format!(
                "the log's origin `{origin}` is not `{expected_origin}`, the one its log id gives"
            ),
        );
    }
    if genesis(log_id, origin, format) != *stored_genesis {
        return fail(
            Problem::IdentityMismatch,
            "the log identity does not match its genesis hash".into(),
        );
    }
    let open = |note: &str| -> Result<Checkpoint, String> {
        if keys.is_empty() {
            return crate::checkpoint::parse_unverified(note).map_err(|e| e.to_string());
        }
        let mut last = String::new();
        for key in keys {
            match crate::checkpoint::open(note, key) {
                Ok(cp) => return Ok(cp),
                Err(err) => last = err.to_string(),
            }
        }
        Err(last)
    };
    let mut vouched = Vec::new();
    let mut given_checkpoint = None;
    if let Some(given) = given {
        let cp = match open(given.note) {
            Ok(cp) => cp,
            Err(err) => {
                return fail(
                    Problem::CheckpointSignature,
                    format!("checkpoint `{}`: {err}", given.label),
                );
            }
        };
        if cp.origin != origin {
            return fail(
                Problem::CheckpointOrigin,
                format!(
                    "checkpoint `{}` is for `{}`, this log is `{origin}`",
                    given.label, cp.origin
                ),
            );
        }
        vouched.push((format!("checkpoint `{}`", given.label), cp.size, cp.root));
        given_checkpoint = Some(cp);
    }
    for row in stored {
        let label = format!("stored checkpoint #{}", row.id);
        let (Some(size), Some(root), Some(note)) = (row.size, &row.root, &row.note) else {
            return fail(
                Problem::CheckpointMismatch,
                format!("{label}: a column is not of its documented type"),
            );
        };
        let note_cp = match crate::checkpoint::parse_unverified(note) {
            Ok(cp) => cp,
            Err(err) => {
                return fail(
                    Problem::CheckpointMismatch,
                    format!("{label}: its note does not parse: {err}"),
                );
            }
        };
        if i64::try_from(note_cp.size).ok() != Some(size) || note_cp.root[..] != root[..] {
            return fail(
                Problem::CheckpointMismatch,
                format!(
                    "{label}: its row (size {size}) disagrees with its signed note (size {}, another root or size)",
                    note_cp.size
                ),
            );
        }
        if note_cp.origin != origin {
            return fail(
                Problem::CheckpointOrigin,
                format!(
                    "{label} is for `{}`, this log is `{origin}`",
                    note_cp.origin
                ),
            );
        }
        if !keys.is_empty()
            && let Err(err) = open(note)
        {
            return fail(Problem::CheckpointSignature, format!("{label}: {err}"));
        }
        vouched.push((label, note_cp.size, note_cp.root));
    }
    Ok(Notes {
        vouched,
        given: given_checkpoint,
    })
}

/// The in-order row check, shared by the database and export verifiers.
pub(crate) struct Checker {
    previous: Hash,
    rows: u64,
    /// The format the next row must be in.
    format: u32,
    sizes: std::collections::BTreeSet<u64>,
    roots: std::collections::BTreeMap<u64, Hash>,
    merkle: Option<MerkleBuilder>,
    /// The 256-leaf blocks the tree completed: the first one's number, the roots.
    blocks: (u64, Vec<Hash>),
}

impl Checker {
    pub(crate) fn new(genesis: Hash, vouched: &[Vouched], root: bool, format: u32) -> Self {
        let sizes: std::collections::BTreeSet<u64> = vouched.iter().map(|v| v.1).collect();
        let mut roots = std::collections::BTreeMap::new();
        if sizes.contains(&0) {
            roots.insert(0, MerkleBuilder::new().root());
        }
        Self {
            previous: genesis,
            rows: 0,
            format,
            merkle: (!vouched.is_empty() || root).then(MerkleBuilder::new),
            sizes,
            roots,
            blocks: (0, Vec::new()),
        }
    }

    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// A checker that starts after row `rows`, whose chain value is `previous`.
    pub(crate) fn resume(previous: Hash, rows: u64, format: u32) -> Self {
        let mut checker = Self::new(previous, &[], false, format);
        checker.rows = rows;
        checker
    }

    /// Checks the next row; a report when it is bad.
    pub(crate) fn row(&mut self, row: RowCheck) -> Option<VerifyReport> {
        let rows = self.rows;
        let expected_seq = rows + 1;
        let bad =
            |problem, detail| Some(VerifyReport::bad(rows, Some(expected_seq), problem, detail));
        let found = match &row {
            RowCheck::Row { seq, .. } | RowCheck::Malformed { seq, .. } => *seq,
        };
        if found != expected_seq as i64 {
            return bad(
                Problem::SeqGap,
                format!("expected seq {expected_seq}, found {found}"),
            );
        }
        let (seq, leaf, leaf_matches, log_id_matches, chain, format, switch) = match row {
            RowCheck::Malformed { detail, .. } => return bad(Problem::ContentMismatch, detail),
            RowCheck::Row {
                seq,
                leaf,
                leaf_matches,
                log_id_matches,
                chain,
                format,
                switch,
            } => (
                seq,
                leaf,
                leaf_matches,
                log_id_matches,
                chain,
                format,
                switch,
            ),
        };
        if format != self.format {
            return bad(
                Problem::ContentMismatch,
                format!(
                    "seq {seq} is given in format {format}, but the log is in format {} there",
                    self.format
                ),
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
        let next = link(&self.previous, &leaf);
        if chain != next {
            return bad(
                Problem::ChainBreak,
                format!("seq {seq} does not link to the row before it"),
            );
        }
        if let Some(to) = switch {
            // Only the one switch this gavel knows: format 1, continued as 2.
            if self.format != 1 || to != i64::from(FORMAT_VERSION) {
                return bad(
                    Problem::UnknownFormat,
                    format!(
                        "seq {seq} switches the log from format {} to format {to}, which this gavel does not know",
                        self.format
                    ),
                );
            }
            self.format = FORMAT_VERSION;
        }
        self.previous = next;
        self.rows = expected_seq;
        if let Some(merkle) = self.merkle.as_mut() {
            if let Some(block) = merkle.push_completing(leaf, crate::store::BLOCK_LEVEL) {
                if self.blocks.1.is_empty() {
                    self.blocks.0 = (self.rows >> crate::store::BLOCK_LEVEL) - 1;
                }
                self.blocks.1.push(block);
            }
            if self.sizes.contains(&self.rows) {
                self.roots.insert(self.rows, merkle.root());
            }
        }
        None
    }

    /// After the last row: whether the log holds what each checkpoint vouched for.
    pub(crate) fn finish(self, vouched: &[Vouched], given: Option<&Checkpoint>) -> VerifyReport {
        let rows = self.rows;
        let mut report = VerifyReport {
            ok: true,
            rows,
            first_bad_seq: None,
            problem: None,
            detail: None,
            head: Some(crate::digest::hex(&self.previous)),
            checkpoint: None,
            signature_checked: false,
            stored_checkpoints: 0,
            root: self.merkle.as_ref().map(MerkleBuilder::root),
            frontier: self.merkle.as_ref().map(|m| m.frontier().to_vec()),
            blocks: self.merkle.is_some().then(|| self.blocks.clone()),
        };
        for (label, size, root) in vouched {
            let problem = match self.roots.get(size) {
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
        if let Some(cp) = given {
            report.checkpoint = Some(CheckpointOutcome {
                origin: cp.origin.clone(),
                size: cp.size,
                holds: self.roots.get(&cp.size) == Some(&cp.root),
            });
        }
        report
    }
}

/// A recorded policy text, as `explain` needs to tell the cases apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyText {
    /// No text is stored under the digest.
    Missing,
    /// A text is stored, but its SHA-256 is not the digest: it was edited.
    Mismatch,
    /// The text, checked against its digest.
    Text(String),
}

impl Store {
    /// Verifies the whole log. `progress` is called with the rows done so far.
    pub fn verify(
        &self,
        options: &VerifyOptions<'_>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<VerifyReport, StoreError> {
        let identity = &self.identity;
        let stored = self.stored_checkpoints()?;
        let finish = |mut report: VerifyReport| {
            report.signature_checked = !options.keys.is_empty();
            // Checkpoints are read only once the identity holds.
            if report.problem != Some(Problem::IdentityMismatch) {
                report.stored_checkpoints = stored.len() as u64;
            }
            report
        };
        let Notes { vouched, given } = match check_notes(
            &identity.origin,
            &identity.log_id,
            identity.format,
            &identity.genesis,
            options.checkpoint,
            &stored,
            options.keys,
        ) {
            Ok(notes) => notes,
            Err(report) => return Ok(finish(*report)),
        };
        let mut checker = Checker::new(identity.genesis, &vouched, options.root, identity.format);
        let mut check = |chunk: Vec<RowCheck>| -> Option<VerifyReport> {
            for row in chunk {
                if let Some(report) = checker.row(row) {
                    return Some(report);
                }
            }
            progress(checker.rows());
            None
        };
        let stopped = self.scan(i64::MIN, &mut check)?;
        self.check_unchanged()?;
        let mut report = match stopped {
            Some(report) => report,
            None => checker.finish(&vouched, given.as_ref()),
        };
        if report.checkpoint.is_none()
            && let Some(cp) = &given
        {
            report.checkpoint = Some(CheckpointOutcome {
                origin: cp.origin.clone(),
                size: cp.size,
                holds: false,
            });
        }
        Ok(finish(report))
    }

    /// A cheap check for a reading command: the log identity, the stored
    /// checkpoint notes (parsed; no signature is checked), whether the log
    /// still holds as many rows as the largest checkpoint vouches for, and
    /// every row after that checkpoint and at least the newest
    /// `RECENT_ROWS`, each against its leaf hash, its log id and the chain
    /// value of the row before it. An `ok` report says nothing of older
    /// rows (`verify` reads them all); its `rows` is the last seq checked.
    pub fn check_recent(&self) -> Result<VerifyReport, StoreError> {
        let identity = &self.identity;
        let stored = self.stored_checkpoints()?;
        if let Err(report) = check_notes(
            &identity.origin,
            &identity.log_id,
            identity.format,
            &identity.genesis,
            None,
            &stored,
            &[],
        ) {
            return Ok(*report);
        }
        let vouched = stored.iter().filter_map(|c| c.size).max().map(|s| s as u64);
        let last: Option<i64> = self
            .conn
            .query_row("SELECT max(seq) FROM events", [], |r| r.get(0))
            .map_err(sql("sizing the log"))?;
        let last = last.map_or(0, |seq| seq.max(0) as u64);
        let tail = last.saturating_sub(RECENT_ROWS) + 1;
        let start = match vouched {
            Some(size) if last < size => {
                return Ok(VerifyReport::bad(
                    last,
                    Some(last + 1),
                    Problem::CheckpointTruncated,
                    format!(
                        "a stored checkpoint vouches for {size} rows but the log ends at seq {last}"
                    ),
                ));
            }
            Some(size) => (size + 1).min(tail),
            None => tail,
        };
        let previous: Hash = if start == 1 {
            identity.genesis
        } else {
            let before = start - 1;
            let chain: Option<Vec<u8>> = self
                .conn
                .query_row(
                    "SELECT chain FROM events WHERE seq = ?1",
                    [before as i64],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql("reading a chain value"))?;
            match chain.as_deref().map(<Hash>::try_from) {
                Some(Ok(hash)) => hash,
                Some(Err(_)) => {
                    return Ok(VerifyReport::bad(
                        before - 1,
                        Some(before),
                        Problem::ContentMismatch,
                        format!("seq {before}: its chain value is not 32 bytes"),
                    ));
                }
                None => {
                    return Ok(VerifyReport::bad(
                        before - 1,
                        Some(before),
                        Problem::SeqGap,
                        format!("seq {before} is missing"),
                    ));
                }
            }
        };
        let formats = self.formats()?;
        let mut checker = Checker::resume(previous, start - 1, formats.of(start as i64));
        let mut check = |chunk: Vec<RowCheck>| -> Option<VerifyReport> {
            chunk.into_iter().find_map(|row| checker.row(row))
        };
        let stopped = self.scan(start as i64, &mut check)?;
        Ok(match stopped {
            Some(report) => report,
            None => checker.finish(&[], None),
        })
    }

    /// The checkpoints stored in the database, by id, with their columns as stored.
    fn stored_checkpoints(&self) -> Result<Vec<StoredCheckpoint>, StoreError> {
        let mut statement = self
            .conn
            .prepare("SELECT id, size, root, note FROM checkpoints ORDER BY id")
            .map_err(sql("reading checkpoints"))?;
        statement
            .query_map([], |r| {
                // A tampered row may hold any type: what is not of its
                // documented type is `None`, and fails its check.
                Ok(StoredCheckpoint {
                    id: r.get(0)?,
                    size: match r.get_ref(1)? {
                        ValueRef::Integer(n) if n >= 0 => Some(n),
                        _ => None,
                    },
                    root: match r.get_ref(2)? {
                        ValueRef::Blob(b) => Some(b.to_vec()),
                        _ => None,
                    },
                    note: match r.get_ref(3)? {
                        ValueRef::Text(t) => std::str::from_utf8(t).ok().map(str::to_owned),
                        _ => None,
                    },
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(sql("reading checkpoints"))
    }

    /// Which format each row is in, as the `format` rows say (`verify`
    /// confirms it in order).
    pub(crate) fn formats(&self) -> Result<Formats, StoreError> {
        Ok(Formats {
            log: self.identity.format,
            switch: self.format_switch()?,
        })
    }

    /// The stored checkpoints as an export carries them: `(id, size, root, note)`.
    pub fn checkpoint_rows(&self) -> Result<Vec<CheckpointRow>, StoreError> {
        self.stored_checkpoints()?
            .into_iter()
            .map(|c| match (c.size, c.root, c.note) {
                (Some(size), Some(root), Some(note)) => Ok(CheckpointRow {
                    id: c.id,
                    size,
                    root,
                    note,
                }),
                _ => Err(StoreError::Damaged {
                    path: self.path.display().to_string(),
                    detail: format!(
                        "stored checkpoint #{} has a column not of its documented type",
                        c.id
                    ),
                }),
            })
            .collect()
    }

    /// The policy text recorded under `digest`, told apart from a missing or an edited one.
    pub fn recorded_policy(&self, digest: &str) -> Result<PolicyText, StoreError> {
        let source: Option<Option<String>> = self
            .conn
            .query_row(
                "SELECT source FROM policies WHERE digest = ?1",
                [digest],
                |row| Ok(row.get::<_, String>(0).ok()),
            )
            .optional()
            .map_err(sql("reading a policy"))?;
        Ok(match source {
            None => PolicyText::Missing,
            Some(Some(text))
                if crate::digest::hex(&crate::digest::sha256(text.as_bytes())) == digest =>
            {
                PolicyText::Text(text)
            }
            Some(_) => PolicyText::Mismatch,
        })
    }

    /// Hands every row, hashed, to `check` in seq order, chunk by chunk,
    /// stopping at the first report it returns. Long logs are read and hashed
    /// by one thread per core, each with its own read-only connection; the
    /// link check stays in order on the calling thread.
    fn scan(
        &self,
        from: i64,
        check: &mut dyn FnMut(Vec<RowCheck>) -> Option<VerifyReport>,
    ) -> Result<Option<VerifyReport>, StoreError> {
        let (lo, hi, count): (Option<i64>, Option<i64>, i64) = self
            .conn
            .query_row(
                "SELECT min(seq), max(seq), count(*) FROM events WHERE seq >= ?1",
                [from],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(sql("sizing the log"))?;
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Ok(None);
        };
        let end = hi.saturating_add(1);
        let log_id = self.identity.log_id.as_slice();
        let formats = self.formats()?;
        let in_memory = self.path.as_os_str() == ":memory:";
        // Ranges of seq split the work only when seq has no gaps; otherwise
        // (a tampered log) read in order by key, whatever the seq values.
        let contiguous = hi.checked_sub(lo).and_then(|d| d.checked_add(1)) == Some(count);
        // Asked only for a scan worth splitting: the answer reads cgroup
        // files, which costs a bounded check more than its hashing.
        let workers = if in_memory || !contiguous || count < PARALLEL_FROM {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
        };
        if workers < 2 {
            let mut start = lo;
            loop {
                let chunk = hash_rows(
                    &self.conn,
                    self.provenance,
                    start,
                    i64::MAX,
                    log_id,
                    formats,
                )?;
                let next = match chunk.last() {
                    Some(RowCheck::Row { seq, .. } | RowCheck::Malformed { seq, .. })
                        if chunk.len() as i64 == CHUNK =>
                    {
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
                    let (conn, provenance) = match super::Store::open_read_only(path) {
                        Ok(store) => (store.conn, store.provenance),
                        Err(err) => {
                            let _ = tx.send(Err(err));
                            return;
                        }
                    };
                    for &(start, stop) in chunks.iter().skip(worker).step_by(workers) {
                        let result = hash_rows(&conn, provenance, start, stop, log_id, formats);
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
}

mod signing;
#[cfg(test)]
mod tests;
