//! Verifying the central store as a whole, never trusting what ingest or
//! retention wrote: every log from its cut (its identity, seq contiguity,
//! every leaf and link recomputed with the same in-order checker as a local
//! log, its head), every host checkpoint (the enrolled host's key, its root
//! at its size) and its cosignature (the central key), the cut notes, the
//! central log (leaves, chain) and its checkpoints. The first break is named
//! by enrolled host, log origin and seq.

use postgres::Transaction;
use postgres::fallible_iterator::FallibleIterator as _;
use serde::Serialize;

use super::query::{ReadError, sql};
use crate::chain::{EventFields, Hash, Who, genesis};
use crate::checkpoint::{self, Checkpoint, MerkleBuilder, VerifierKey};
use crate::digest::hex;
use crate::store::{Checker, Problem, RowCheck, VerifyReport, row_format, switch_of};

use super::query::LogRef;

/// The outcome of verifying the central store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CentralReport {
    pub ok: bool,
    /// Logs verified whole (all of them when intact).
    pub logs: u64,
    /// Events found good.
    pub events: u64,
    /// Host checkpoints whose signature, root and cosignature were checked.
    pub checkpoints: u64,
    /// Logs that start at a retention cut (their cut note checked).
    pub cut_logs: u64,
    /// Leaves of the central log found good.
    pub central_log: u64,
    /// Central checkpoints checked.
    pub central_checkpoints: u64,
    /// Whether the central key was checked against one given by the caller.
    pub central_key_given: bool,
    /// A stable code: the local verifier's (`seq_gap`, `content_mismatch`,
    /// `chain_break`, `checkpoint_signature`, ...) or a central one
    /// (`head_mismatch`, `unvouched_rows`, `cosignature`, `cut`, `central_log`,
    /// `central_checkpoint`, `central_key`).
    pub problem: Option<String>,
    /// The enrolled host of the log that breaks.
    pub host: Option<String>,
    /// The origin of the log that breaks (`gavel/<hex id>`), or the central origin.
    pub origin: Option<String>,
    /// The first seq that is not good, when a row can be blamed.
    pub first_bad_seq: Option<u64>,
    pub detail: Option<String>,
}

/// A break, before it is put in the report.
struct Break {
    problem: String,
    host: Option<String>,
    origin: Option<String>,
    seq: Option<u64>,
    detail: String,
}

impl Break {
    fn log(log: &LogRow, problem: &str, seq: Option<u64>, detail: String) -> Self {
        Self {
            problem: problem.to_owned(),
            host: Some(log.host.clone()),
            origin: Some(log.origin.clone()),
            seq,
            detail,
        }
    }

    fn central(origin: &str, problem: &str, seq: Option<u64>, detail: String) -> Self {
        Self {
            problem: problem.to_owned(),
            host: None,
            origin: Some(origin.to_owned()),
            seq,
            detail,
        }
    }
}

/// One row of `logs`, with its host's verifier key text.
struct LogRow {
    log_id: Vec<u8>,
    host: String,
    verifier: Option<String>,
    origin: String,
    format: i32,
    genesis: Vec<u8>,
    size: i64,
    chain: Vec<u8>,
    frontier: Vec<u8>,
    switch_seq: Option<i64>,
    switch_format: Option<i32>,
    cut_size: i64,
    cut_chain: Option<Vec<u8>>,
    cut_frontier: Option<Vec<u8>>,
    cut_note: Option<String>,
}

/// The central store's identity.
pub(crate) struct Meta {
    pub origin: String,
    pub genesis: Vec<u8>,
    pub verifier: String,
}

pub(crate) fn meta(client: &mut Transaction<'_>) -> Result<Meta, ReadError> {
    let row = client
        .query_opt(
            "SELECT origin, genesis, verifier FROM central_meta WHERE id = 1",
            &[],
        )
        .map_err(sql("reading central_meta"))?
        .ok_or_else(|| ReadError::Damaged {
            detail: "it has no identity (`central_meta` is empty): run `gavel central init`".into(),
        })?;
    Ok(Meta {
        origin: row.get(0),
        genesis: row.get(1),
        verifier: row.get(2),
    })
}

/// Verifies the whole central store, in `snapshot` (see
/// [`super::query::snapshot`]: one consistent view, so that an ingest or a
/// retention committing meanwhile is never taken for tampering). `given`
/// are the central keys a
/// reviewer holds (`central.pub`): when any is given, the store's own must
/// be one of them.
/// `progress` hears the number of events checked so far.
pub fn verify(
    snapshot: &mut Transaction<'_>,
    given: &[VerifierKey],
    progress: &mut dyn FnMut(u64),
) -> Result<CentralReport, ReadError> {
    let mut report = CentralReport {
        ok: true,
        logs: 0,
        events: 0,
        checkpoints: 0,
        cut_logs: 0,
        central_log: 0,
        central_checkpoints: 0,
        central_key_given: !given.is_empty(),
        problem: None,
        host: None,
        origin: None,
        first_bad_seq: None,
        detail: None,
    };
    if let Err(found) = verify_all(snapshot, given, &mut report, progress)? {
        report.ok = false;
        report.problem = Some(found.problem);
        report.host = found.host;
        report.origin = found.origin;
        report.first_bad_seq = found.seq;
        report.detail = Some(found.detail);
    }
    Ok(report)
}

fn verify_all(
    client: &mut Transaction<'_>,
    given: &[VerifierKey],
    report: &mut CentralReport,
    progress: &mut dyn FnMut(u64),
) -> Result<Result<(), Break>, ReadError> {
    let meta = meta(client)?;
    let central_key = match VerifierKey::from_text(&meta.verifier) {
        Ok(key) => key,
        Err(err) => {
            return Ok(Err(Break::central(
                &meta.origin,
                "central_key",
                None,
                format!("the central verifier key in central_meta does not parse: {err}"),
            )));
        }
    };
    if !given.is_empty() && !given.contains(&central_key) {
        return Ok(Err(Break::central(
            &meta.origin,
            "central_key",
            None,
            format!(
                "the central store's key `{}` is not a given one",
                central_key.to_text()
            ),
        )));
    }
    let orphans = client
        .query_opt(
            "SELECT encode(e.log_id, 'hex'), e.seq FROM events e
              WHERE NOT EXISTS (SELECT 1 FROM logs l WHERE l.log_id = e.log_id) LIMIT 1",
            &[],
        )
        .map_err(sql("looking for rows of no log"))?;
    if let Some(row) = orphans {
        let (log_id, seq): (String, i64) = (row.get(0), row.get(1));
        return Ok(Err(Break {
            problem: "unknown_log".into(),
            host: None,
            origin: Some(format!("gavel/{log_id}")),
            seq: u64::try_from(seq).ok(),
            detail: format!("events hold rows of log {log_id}, which no enrolled host's log is"),
        }));
    }
    let logs = read_logs(client)?;
    for log in &logs {
        if let Err(found) = verify_log(client, log, &central_key, report, progress)? {
            return Ok(Err(found));
        }
        report.logs += 1;
    }
    central_log(client, &meta, &central_key, report)
}

fn read_logs(client: &mut Transaction<'_>) -> Result<Vec<LogRow>, ReadError> {
    let rows = client
        .query(
            "SELECT l.log_id, l.host, h.verifier, l.origin, l.format, l.genesis, l.size, l.chain,
                    l.frontier, l.switch_seq, l.switch_format, l.cut_size, l.cut_chain,
                    l.cut_frontier, l.cut_note
               FROM logs l LEFT JOIN hosts h ON h.host = l.host
              ORDER BY l.host, l.origin",
            &[],
        )
        .map_err(sql("reading logs"))?;
    rows.iter()
        .map(|r| -> Result<LogRow, postgres::Error> {
            Ok(LogRow {
                log_id: r.try_get(0)?,
                host: r.try_get(1)?,
                verifier: r.try_get(2)?,
                origin: r.try_get(3)?,
                format: r.try_get(4)?,
                genesis: r.try_get(5)?,
                size: r.try_get(6)?,
                chain: r.try_get(7)?,
                frontier: r.try_get(8)?,
                switch_seq: r.try_get(9)?,
                switch_format: r.try_get(10)?,
                cut_size: r.try_get::<_, Option<i64>>(11)?.unwrap_or(0),
                cut_chain: r.try_get(12)?,
                cut_frontier: r.try_get(13)?,
                cut_note: r.try_get(14)?,
            })
        })
        .collect::<Result<_, _>>()
        .map_err(sql("reading logs"))
}

/// The problem code of rows no host checkpoint covers.
const UNVOUCHED: &str = "unvouched_rows";

/// A host checkpoint row.
struct HostCheckpoint {
    id: i64,
    size: i64,
    root: Vec<u8>,
    note: String,
    cosignature: String,
}

/// What the rows of a log must produce: `(label, size, root)`.
type Vouched = (String, u64, Hash);

fn verify_log(
    client: &mut Transaction<'_>,
    log: &LogRow,
    central_key: &VerifierKey,
    report: &mut CentralReport,
    progress: &mut dyn FnMut(u64),
) -> Result<Result<(), Break>, ReadError> {
    let fail = |problem: &str, seq: Option<u64>, detail: String| {
        Ok(Err(Break::log(log, problem, seq, detail)))
    };
    // The identity, as a local log's.
    let format = u32::try_from(log.format).unwrap_or(0);
    if !crate::chain::known_format(i64::from(log.format)) {
        return fail(
            Problem::UnknownFormat.as_str(),
            None,
            format!("the log says record format {}", log.format),
        );
    }
    let expected_origin = format!("gavel/{}", hex(&log.log_id));
    if log.origin != expected_origin {
        return fail(
            Problem::IdentityMismatch.as_str(),
            None,
            format!("its origin is not `{expected_origin}`, the one its log id gives"),
        );
    }
    if genesis(&log.log_id, &log.origin, format)[..] != log.genesis[..] {
        return fail(
            Problem::IdentityMismatch.as_str(),
            None,
            "its identity does not produce its genesis hash".into(),
        );
    }
    let Some(verifier) = &log.verifier else {
        return fail(
            "unknown_host",
            None,
            format!("the log's host `{}` is not enrolled", log.host),
        );
    };
    let host_key = match VerifierKey::from_text(verifier) {
        Ok(key) => key,
        Err(err) => {
            return fail(
                Problem::CheckpointSignature.as_str(),
                None,
                format!(
                    "the enrolled key of host `{}` does not parse: {err}",
                    log.host
                ),
            );
        }
    };

    // Where the rows start: genesis, or the retention cut and its signed note.
    let cut = u64::try_from(log.cut_size).unwrap_or(0);
    let (previous, mut merkle) = if cut == 0 {
        let previous = <Hash>::try_from(log.genesis.as_slice()).unwrap_or_default();
        (previous, MerkleBuilder::new())
    } else {
        match check_cut(log, cut, central_key) {
            Ok(start) => {
                report.cut_logs += 1;
                start
            }
            Err(detail) => return fail("cut", Some(cut), detail),
        }
    };

    // Every host checkpoint: the host's signature, its row, the central cosignature.
    let checkpoints = read_checkpoints(client, &log.log_id)?;
    let mut vouched: Vec<Vouched> = Vec::new();
    for cp in &checkpoints {
        let label = format!("checkpoint #{} (size {})", cp.id, cp.size);
        let opened = match checkpoint::open(&cp.note, &host_key) {
            Ok(opened) => opened,
            Err(err) => {
                return fail(
                    Problem::CheckpointSignature.as_str(),
                    None,
                    format!(
                        "{label} does not verify with the key of host `{}`: {err}",
                        log.host
                    ),
                );
            }
        };
        if opened.origin != log.origin {
            return fail(
                Problem::CheckpointOrigin.as_str(),
                None,
                format!("{label} is for `{}`", opened.origin),
            );
        }
        if i64::try_from(opened.size).ok() != Some(cp.size) || opened.root[..] != cp.root[..] {
            return fail(
                Problem::CheckpointMismatch.as_str(),
                None,
                format!("{label}: its row disagrees with its signed note"),
            );
        }
        let cosignature = &cp.cosignature;
        let body = super::cosign::note_body(&cp.note).unwrap_or_default();
        if let Err(detail) = super::cosign::verify(central_key, body, cosignature) {
            return fail(
                "cosignature",
                None,
                format!("{label}: its cosignature does not verify with the central key: {detail}"),
            );
        }
        if opened.size > cut || (opened.size == cut && cut > 0) {
            vouched.push((label, opened.size, opened.root));
        }
    }
    let sizes: std::collections::BTreeSet<u64> = vouched.iter().map(|v| v.1).collect();
    let mut roots: std::collections::BTreeMap<u64, Hash> = Default::default();
    if sizes.contains(&cut) {
        roots.insert(cut, merkle.root());
    }

    // The rows, in order, from the cut.
    let switch = match (log.switch_seq, log.switch_format) {
        (Some(at), Some(to)) => Some((
            u64::try_from(at).unwrap_or(0),
            u32::try_from(to).unwrap_or(0),
        )),
        _ => None,
    };
    let mut checker = Checker::resume(previous, cut, row_format(format, switch, cut + 1));
    let mut rows = client
        .query_raw(
            "SELECT seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status,
                    payload, leaf, chain, \"user\", host, client, session, agent
               FROM events WHERE log_id = $1 AND seq > $2 ORDER BY seq",
            [
                &log.log_id as &(dyn postgres::types::ToSql + Sync),
                &log.cut_size,
            ],
        )
        .map_err(sql("scanning events"))?;
    let mut last_chain: Vec<u8> = previous.to_vec();
    while let Some(row) = rows.next().map_err(sql("scanning events"))? {
        let check =
            row_check(&row, &log.log_id, format, switch).map_err(sql("reading an event"))?;
        let (leaf, chain) = match &check {
            RowCheck::Row { leaf, chain, .. } => (Some(*leaf), chain.clone()),
            RowCheck::Malformed { .. } => (None, Vec::new()),
        };
        if let Some(bad) = checker.row(check) {
            return Ok(Err(from_local(log, bad)));
        }
        if let Some(leaf) = leaf {
            merkle.push(leaf);
            if sizes.contains(&merkle.len()) {
                roots.insert(merkle.len(), merkle.root());
            }
        }
        last_chain = chain;
        report.events += 1;
        if report.events.is_multiple_of(50_000) {
            progress(report.events);
        }
    }
    drop(rows);
    let rows = checker.rows();

    // What each checkpoint vouched for, then the head ingest keeps.
    for (label, size, root) in &vouched {
        match roots.get(size) {
            None => {
                return fail(
                    Problem::CheckpointTruncated.as_str(),
                    Some(rows + 1),
                    format!("{label} vouches for {size} rows but the log holds {rows}"),
                );
            }
            Some(found) if found != root => {
                return fail(
                    Problem::CheckpointRootMismatch.as_str(),
                    None,
                    format!(
                        "the first {size} rows no longer produce the root of {label}: history was rewritten"
                    ),
                );
            }
            Some(_) => {}
        }
    }
    // Every row must be vouched for by the host: the rows end at the
    // largest host checkpoint (ingest moves the head only to a checkpoint's
    // size), or at the retention cut (its note vouches for them). Rows past
    // it were put there by someone else, whatever the head says.
    let largest = checkpoints
        .iter()
        .map(|cp| u64::try_from(cp.size).unwrap_or(0))
        .max();
    match largest {
        None => {
            return fail(
                UNVOUCHED,
                Some(cut + 1),
                format!(
                    "the log holds {rows} rows and no checkpoint of host `{}`: ingest registers a log only with its first checkpoint",
                    log.host
                ),
            );
        }
        Some(largest) if rows != cut && largest != rows => {
            let from = largest.max(cut) + 1;
            return fail(
                UNVOUCHED,
                Some(from),
                format!(
                    "rows {from}..{rows} are vouched for by no checkpoint of host `{}` (its largest is at {largest})",
                    log.host
                ),
            );
        }
        Some(_) => {}
    }
    if u64::try_from(log.size).ok() != Some(rows) || log.chain != last_chain {
        return fail(
            "head_mismatch",
            Some(rows + 1),
            format!(
                "the log's head says {} rows (chain {}), its rows end at {rows} (chain {})",
                log.size,
                short(&log.chain),
                short(&last_chain)
            ),
        );
    }
    if log.frontier != merkle.frontier().concat() {
        return fail(
            "head_mismatch",
            None,
            "the log's stored Merkle frontier is not the one its rows produce".into(),
        );
    }
    report.checkpoints += checkpoints.len() as u64;
    Ok(Ok(()))
}

fn short(bytes: &[u8]) -> String {
    hex(&bytes[..bytes.len().min(8)])
}

/// A local verifier's report as a break of `log`.
fn from_local(log: &LogRow, bad: VerifyReport) -> Break {
    Break::log(
        log,
        bad.problem.map_or("unknown", Problem::as_str),
        bad.first_bad_seq,
        bad.detail.unwrap_or_default(),
    )
}

/// The start of a cut log: its cut note must be signed by the central key
/// and name the log, the cut size, the root of the cut frontier and the
/// cut chain. Returns `(chain, frontier)` at the cut.
fn check_cut(
    log: &LogRow,
    cut: u64,
    central_key: &VerifierKey,
) -> Result<(Hash, MerkleBuilder), String> {
    let (Some(chain), Some(frontier), Some(note)) =
        (&log.cut_chain, &log.cut_frontier, &log.cut_note)
    else {
        return Err(format!(
            "the log is cut at {cut} rows but its cut chain, frontier or note is missing"
        ));
    };
    // The stored cut read as a head (size, chain, frontier), as ingest reads one.
    let head = super::Head::from_stored(log.cut_size, chain, frontier, 0, None, None)
        .map_err(|e| format!("the stored cut does not parse: {e}"))?;
    let (chain, merkle) = (head.chain, head.tree);
    let marked = super::cosign::open_cut_note(note, central_key)
        .map_err(|err| format!("the cut note does not verify with the central key: {err}"))?;
    let expected = super::cosign::CutMark {
        checkpoint: Checkpoint {
            origin: log.origin.clone(),
            size: cut,
            root: merkle.root(),
        },
        chain,
    };
    if marked != expected {
        return Err(
            "the cut note disagrees with the stored cut (origin, size, root or chain)".into(),
        );
    }
    Ok((chain, merkle))
}

fn read_checkpoints(
    client: &mut Transaction<'_>,
    log_id: &[u8],
) -> Result<Vec<HostCheckpoint>, ReadError> {
    let rows = client
        .query(
            "SELECT id, size, root, note, cosignature FROM checkpoints
              WHERE log_id = $1 ORDER BY id",
            &[&log_id],
        )
        .map_err(sql("reading checkpoints"))?;
    rows.iter()
        .map(|r| -> Result<HostCheckpoint, postgres::Error> {
            Ok(HostCheckpoint {
                id: r.try_get(0)?,
                size: r.try_get(1)?,
                root: r.try_get(2)?,
                note: r.try_get(3)?,
                cosignature: r.try_get(4)?,
            })
        })
        .collect::<Result<_, _>>()
        .map_err(sql("reading checkpoints"))
}

/// Hashes one event row as the local verifier does.
pub(crate) fn row_check(
    row: &postgres::Row,
    log_id: &[u8],
    log_format: u32,
    switch: Option<(u64, u32)>,
) -> Result<RowCheck, postgres::Error> {
    let seq: i64 = row.try_get(0)?;
    let format = row_format(log_format, switch, seq.max(0) as u64);
    let row_log_id: Vec<u8> = row.try_get(1)?;
    let kind: String = row.try_get(3)?;
    let call_id: String = row.try_get(4)?;
    let text = |i: usize| row.try_get::<_, Option<String>>(i);
    let (tool, action, rule_id, approval, status) =
        (text(5)?, text(6)?, text(7)?, text(8)?, text(9)?);
    let payload: Vec<u8> = row.try_get(10)?;
    let stored_leaf: Vec<u8> = row.try_get(11)?;
    let chain: Vec<u8> = row.try_get(12)?;
    let who: Vec<Option<String>> = (13..18).map(text).collect::<Result<_, _>>()?;
    if format == 1 && who.iter().any(Option::is_some) {
        return Ok(RowCheck::Malformed {
            seq,
            detail: format!(
                "seq {seq}: a provenance column is set in a format-1 row (it is not hashed there)"
            ),
        });
    }
    let fields = EventFields {
        seq: seq.max(0) as u64,
        log_id: &row_log_id,
        ts_us: row.try_get(2)?,
        kind: &kind,
        call_id: &call_id,
        tool: tool.as_deref(),
        action: action.as_deref(),
        rule_id: rule_id.as_deref(),
        approval: approval.as_deref(),
        status: status.as_deref(),
        payload: &payload,
        format,
        who: Who {
            user: who[0].as_deref(),
            host: who[1].as_deref(),
            client: who[2].as_deref(),
            session: who[3].as_deref(),
            agent: who[4].as_deref(),
        },
    };
    let leaf = fields.leaf_hash();
    Ok(RowCheck::Row {
        seq,
        leaf,
        leaf_matches: stored_leaf[..] == leaf[..],
        log_id_matches: row_log_id == log_id,
        chain,
        format,
        switch: switch_of(&kind, &payload),
    })
}

/// The central log: seq from 1, each leaf from its note, each link, every
/// leaf's note an accepted host checkpoint (and every accepted checkpoint a
/// leaf), then every central checkpoint (the central key, its root at its size).
fn central_log(
    client: &mut Transaction<'_>,
    meta: &Meta,
    central_key: &VerifierKey,
    report: &mut CentralReport,
) -> Result<Result<(), Break>, ReadError> {
    let origin = meta.origin.clone();
    let fail = |problem: &str, seq: Option<u64>, detail: String| {
        Ok(Err(Break::central(&origin, problem, seq, detail)))
    };
    let id = meta
        .origin
        .strip_prefix("gavel-central/")
        .and_then(crate::digest::unhex)
        .unwrap_or_default();
    if genesis(&id, &meta.origin, super::admin::CENTRAL_FORMAT)[..] != meta.genesis[..] {
        return fail(
            Problem::IdentityMismatch.as_str(),
            None,
            "the central log's identity does not produce its genesis hash".into(),
        );
    }
    let Ok(mut previous) = <Hash>::try_from(meta.genesis.as_slice()) else {
        return fail(
            "central_log",
            None,
            "the central genesis is not 32 bytes".into(),
        );
    };
    let checkpoints = client
        .query(
            "SELECT size, root, note FROM central_checkpoints ORDER BY id",
            &[],
        )
        .map_err(sql("reading central checkpoints"))?;
    let mut vouched: Vec<Vouched> = Vec::new();
    for row in &checkpoints {
        let (size, root, note): (i64, Vec<u8>, String) = (row.get(0), row.get(1), row.get(2));
        let label = format!("central checkpoint of size {size}");
        let opened = match checkpoint::open(&note, central_key) {
            Ok(cp) => cp,
            Err(err) => return fail("central_checkpoint", None, format!("{label}: {err}")),
        };
        if opened.origin != meta.origin
            || i64::try_from(opened.size).ok() != Some(size)
            || opened.root[..] != root[..]
        {
            return fail(
                "central_checkpoint",
                None,
                format!("{label}: its row disagrees with its signed note"),
            );
        }
        vouched.push((label, opened.size, opened.root));
    }
    let sizes: std::collections::BTreeSet<u64> = vouched.iter().map(|v| v.1).collect();
    let mut roots: std::collections::BTreeMap<u64, Hash> = Default::default();
    let mut merkle = MerkleBuilder::new();
    if sizes.contains(&0) {
        roots.insert(0, merkle.root());
    }
    let mut rows = client
        .query_raw(
            "SELECT c.seq, c.note, c.leaf, c.chain, k.note
               FROM central_log c LEFT JOIN checkpoints k ON k.central_seq = c.seq
              ORDER BY c.seq",
            std::iter::empty::<&(dyn postgres::types::ToSql + Sync)>(),
        )
        .map_err(sql("scanning the central log"))?;
    let mut expected = 1u64;
    while let Some(row) = rows.next().map_err(sql("scanning the central log"))? {
        let seq: i64 = row.get(0);
        let note: String = row.get(1);
        let (stored_leaf, chain): (Vec<u8>, Vec<u8>) = (row.get(2), row.get(3));
        let accepted: Option<String> = row.get(4);
        if seq != expected as i64 {
            return fail(
                Problem::SeqGap.as_str(),
                Some(expected),
                format!("expected seq {expected}, found {seq}"),
            );
        }
        let leaf = super::cosign::central_leaf(&note);
        if stored_leaf[..] != leaf[..] {
            return fail(
                Problem::ContentMismatch.as_str(),
                Some(expected),
                format!("central seq {seq} does not match its leaf hash: its note was changed"),
            );
        }
        let next = crate::chain::link(&previous, &leaf);
        if chain[..] != next[..] {
            return fail(
                Problem::ChainBreak.as_str(),
                Some(expected),
                format!("central seq {seq} does not link to the row before it"),
            );
        }
        if accepted.as_deref() != Some(note.as_str()) {
            return fail(
                "central_log",
                Some(expected),
                format!("central seq {seq} is not the note of the host checkpoint accepted as it"),
            );
        }
        previous = next;
        merkle.push(leaf);
        if sizes.contains(&merkle.len()) {
            roots.insert(merkle.len(), merkle.root());
        }
        report.central_log = expected;
        expected += 1;
    }
    drop(rows);
    let unlinked: i64 = client
        .query_one(
            "SELECT count(*) FROM checkpoints k WHERE NOT EXISTS
               (SELECT 1 FROM central_log c WHERE c.seq = k.central_seq)",
            &[],
        )
        .map_err(sql("reading checkpoints"))?
        .get(0);
    if unlinked > 0 {
        return fail(
            "central_log",
            None,
            format!("{unlinked} accepted host checkpoint(s) are not leaves of the central log"),
        );
    }
    for (label, size, root) in &vouched {
        match roots.get(size) {
            Some(found) if found == root => {}
            Some(_) => {
                return fail(
                    "central_checkpoint",
                    None,
                    format!(
                        "the first {size} central leaves no longer produce the root of {label}"
                    ),
                );
            }
            None => {
                return fail(
                    "central_checkpoint",
                    Some(merkle.len() + 1),
                    format!(
                        "{label} vouches for {size} leaves but the central log holds {}",
                        merkle.len()
                    ),
                );
            }
        }
    }
    report.central_checkpoints = vouched.len() as u64;
    Ok(Ok(()))
}

/// The newest rows of each log a reading command checks (as a local
/// log's `check_recent` does).
pub const RECENT_ROWS: u64 = 10_000;

/// What a reading command's bounded check found wrong in one log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecentBreak {
    /// The enrolled host of the log.
    pub host: String,
    /// The log's origin (`gavel/<hex id>`).
    pub origin: String,
    pub log_id: Vec<u8>,
    /// A stable code, as `verify`'s (`content_mismatch`, `chain_break`,
    /// `seq_gap`, `head_mismatch`, ...).
    pub problem: String,
    /// Rows of this log from this seq on are not verified.
    pub first_bad_seq: u64,
    pub detail: String,
}

/// A cheap check for a reading command over `logs`: each log's newest
/// [`RECENT_ROWS`] rows (from its retention cut at the earliest), each
/// against its leaf hash, its log id and the chain value of the row before
/// it, and whether its rows end where its head says (size and chain). No
/// signature is checked and older rows are not read: `gavel verify` reads
/// everything. Returns the logs that do not pass, in the order given.
pub fn check_recent(
    client: &mut impl postgres::GenericClient,
    logs: &[LogRef],
) -> Result<Vec<RecentBreak>, ReadError> {
    let mut broken = Vec::new();
    for log in logs {
        if let Some((problem, first_bad_seq, detail)) = check_log_recent(client, &log.log_id)? {
            broken.push(RecentBreak {
                host: log.host.clone(),
                origin: log.origin.clone(),
                log_id: log.log_id.clone(),
                problem,
                first_bad_seq,
                detail,
            });
        }
    }
    Ok(broken)
}

/// `(problem, first bad seq, detail)` of one log's recent rows, if any.
fn check_log_recent(
    client: &mut impl postgres::GenericClient,
    log_id: &[u8],
) -> Result<Option<(String, u64, String)>, ReadError> {
    let row = client
        .query_one(
            "SELECT l.format, l.genesis, l.size, l.chain, l.switch_seq, l.switch_format,
                    coalesce(l.cut_size, 0), l.cut_chain,
                    (SELECT max(e.seq) FROM events e WHERE e.log_id = l.log_id)
               FROM logs l WHERE l.log_id = $1",
            &[&log_id],
        )
        .map_err(sql("reading a log's head"))?;
    let format = u32::try_from(row.get::<_, i32>(0)).unwrap_or(0);
    let genesis: Vec<u8> = row.get(1);
    let size = u64::try_from(row.get::<_, i64>(2)).unwrap_or(0);
    let head_chain: Vec<u8> = row.get(3);
    let switch = match (row.get::<_, Option<i64>>(4), row.get::<_, Option<i32>>(5)) {
        (Some(at), Some(to)) => Some((
            u64::try_from(at).unwrap_or(0),
            u32::try_from(to).unwrap_or(0),
        )),
        _ => None,
    };
    let cut = u64::try_from(row.get::<_, i64>(6)).unwrap_or(0);
    let cut_chain: Option<Vec<u8>> = row.get(7);
    let last = row
        .get::<_, Option<i64>>(8)
        .map_or(cut, |seq| u64::try_from(seq).unwrap_or(0));
    let start = (last.saturating_sub(RECENT_ROWS) + 1).max(cut + 1);
    let before = start - 1;
    let previous: Option<Vec<u8>> = if before == 0 {
        Some(genesis)
    } else if before == cut {
        cut_chain
    } else {
        client
            .query_opt(
                "SELECT chain FROM events WHERE log_id = $1 AND seq = $2",
                &[&log_id, &(before as i64)],
            )
            .map_err(sql("reading a chain value"))?
            .map(|r| r.get(0))
    };
    let Some(Ok(previous)) = previous.as_deref().map(<Hash>::try_from) else {
        return Ok(Some((
            Problem::SeqGap.as_str().to_owned(),
            before.max(1),
            format!("the chain value after seq {before} is missing or not 32 bytes"),
        )));
    };
    let mut checker = Checker::resume(previous, before, row_format(format, switch, start));
    let mut rows = client
        .query_raw(
            "SELECT seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status,
                    payload, leaf, chain, \"user\", host, client, session, agent
               FROM events WHERE log_id = $1 AND seq >= $2 ORDER BY seq",
            [
                &log_id as &(dyn postgres::types::ToSql + Sync),
                &(start as i64),
            ],
        )
        .map_err(sql("scanning events"))?;
    let mut last_chain = previous.to_vec();
    while let Some(row) = rows.next().map_err(sql("scanning events"))? {
        let check = row_check(&row, log_id, format, switch).map_err(sql("reading an event"))?;
        let chain = match &check {
            RowCheck::Row { chain, .. } => chain.clone(),
            RowCheck::Malformed { .. } => Vec::new(),
        };
        if let Some(bad) = checker.row(check) {
            return Ok(Some((
                bad.problem.map_or("unknown", Problem::as_str).to_owned(),
                bad.first_bad_seq.unwrap_or(start),
                bad.detail.unwrap_or_default(),
            )));
        }
        last_chain = chain;
    }
    drop(rows);
    let rows = checker.rows();
    if rows != size || (rows > cut && last_chain != head_chain) {
        return Ok(Some((
            "head_mismatch".to_owned(),
            rows.min(size) + 1,
            format!(
                "the log's head says {size} rows (chain {}), its rows end at {rows} (chain {})",
                short(&head_chain),
                short(&last_chain)
            ),
        )));
    }
    Ok(None)
}
