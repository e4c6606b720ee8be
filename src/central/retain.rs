//! Retention: dropping whole monthly partitions of `events`, and marking,
//! per log, where its rows were cut. Before a cut is stored, the rows it
//! drops are verified (leaves and links from the previous cut), so that
//! retention never launders a broken chain: each log's cut keeps the chain
//! value and the Merkle frontier after its last dropped row, and a note
//! signed by the central key marks the cut. `verify` starts each log there.
//!
//! The cut note is a C2SP checkpoint note of the host's log (its origin,
//! the cut size, the Merkle root of the dropped rows) with one extension
//! line, `gavel-cut <base64 chain>`, signed by the central key.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use postgres::Client;
use postgres::fallible_iterator::FallibleIterator as _;

use super::query::{ReadError, sql};
use crate::chain::Hash;
use crate::checkpoint::{self, Checkpoint, MerkleBuilder, SigningKey, VerifierKey};
use crate::store::{Checker, Problem, RowCheck, row_format};

/// The extension line of a cut note.
const CUT_LINE: &str = "gavel-cut ";

/// Why retention did nothing.
#[derive(Debug, thiserror::Error)]
pub enum RetainError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("`{0}` is not a month; give YYYY-MM")]
    Month(String),
    #[error("--before {0} is after the current month: only past months' partitions can be dropped")]
    Future(String),
    #[error(
        "the signing key `{given}` is not the central store's key `{stored}`; give the key `gavel central init` used"
    )]
    WrongKey { given: String, stored: String },
    #[error(
        "refusing to cut log {origin} of host `{host}`: it does not verify at seq {seq}: {problem}: {detail}; run `gavel verify --db …`"
    )]
    Broken {
        host: String,
        origin: String,
        seq: u64,
        problem: String,
        detail: String,
    },
    #[error(
        "refusing to cut log {origin} of host `{host}`: {count} of its rows up to seq {cut} are in partitions that are kept"
    )]
    Straddles {
        host: String,
        origin: String,
        cut: u64,
        count: i64,
    },
}

/// What a cut note says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutMark {
    /// The log's origin, the cut size and the root of rows 1..cut.
    pub checkpoint: Checkpoint,
    /// The chain value after the last dropped row.
    pub chain: Hash,
}

/// Signs a cut note with the central key.
pub fn sign_cut_note(mark: &CutMark, key: &SigningKey) -> String {
    let body = format!(
        "{}{CUT_LINE}{}\n",
        mark.checkpoint.body(),
        BASE64.encode(mark.chain)
    );
    key.sign_text(&body)
}

/// Opens a cut note: the central key's signature, then what it marks.
pub fn open_cut_note(note: &str, key: &VerifierKey) -> Result<CutMark, String> {
    let checkpoint = checkpoint::open(note, key).map_err(|e| e.to_string())?;
    let chain = note
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(CUT_LINE))
        .and_then(|b64| BASE64.decode(b64).ok())
        .and_then(|bytes| <Hash>::try_from(bytes.as_slice()).ok())
        .ok_or_else(|| format!("the note has no `{}` line", CUT_LINE.trim()))?;
    Ok(CutMark { checkpoint, chain })
}

/// A log cut by one run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Cut {
    pub host: String,
    pub origin: String,
    /// Rows 1..=`size` are gone; verification starts after them.
    pub size: u64,
    /// Rows this run dropped from the log.
    pub dropped: u64,
}

/// What one retention run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RetainReport {
    /// The partitions dropped, by name (`events_YYYYMM`).
    pub partitions: Vec<String>,
    pub cuts: Vec<Cut>,
}

/// `YYYY-MM` as the number `YYYYMM`.
pub fn parse_month(text: &str) -> Result<u32, RetainError> {
    let bad = || RetainError::Month(text.to_owned());
    let (year, month) = text.split_once('-').ok_or_else(bad)?;
    if year.len() != 4 || month.len() != 2 {
        return Err(bad());
    }
    let (year, month): (u32, u32) = (
        year.parse().map_err(|_| bad())?,
        month.parse().map_err(|_| bad())?,
    );
    if !(1..=12).contains(&month) {
        return Err(bad());
    }
    Ok(year * 100 + month)
}

/// Drops every monthly partition of `events` before `before` (`YYYYMM`),
/// after cutting each log at its last row in them, in one transaction.
/// `current` is this month (`YYYYMM`); a later `before` is refused.
pub fn retain(
    client: &mut Client,
    key: &SigningKey,
    before: u32,
    current: u32,
) -> Result<RetainReport, RetainError> {
    if before > current {
        return Err(RetainError::Future(format!(
            "{}-{:02}",
            before / 100,
            before % 100
        )));
    }
    let mut tx = client.transaction().map_err(sql("starting retention"))?;
    let stored: String = tx
        .query_one("SELECT verifier FROM central_meta WHERE id = 1", &[])
        .map_err(sql("reading central_meta"))?
        .get(0);
    if stored.trim() != key.verifier().to_text() {
        return Err(RetainError::WrongKey {
            given: key.verifier().to_text(),
            stored,
        });
    }
    // Every log's row, locked: ingest waits until the cuts are in.
    let logs = tx
        .query(
            "SELECT log_id, host, origin, format, switch_seq, switch_format, genesis,
                    COALESCE(cut_size, 0), cut_chain, cut_frontier
               FROM logs ORDER BY host, origin FOR UPDATE",
            &[],
        )
        .map_err(sql("locking logs"))?;
    let partitions: Vec<String> = tx
        .query(
            "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent = 'events'::regclass ORDER BY 1",
            &[],
        )
        .map_err(sql("listing partitions"))?
        .iter()
        .map(|r| r.get::<_, String>(0))
        .filter(|name| {
            name.strip_prefix("events_")
                .and_then(|m| m.parse::<u32>().ok())
                .is_some_and(|month| month < before)
        })
        .collect();
    let mut report = RetainReport {
        partitions: partitions.clone(),
        cuts: Vec::new(),
    };
    if partitions.is_empty() {
        tx.commit().map_err(sql("ending retention"))?;
        return Ok(report);
    }
    // The last seq of each log in the partitions that go.
    let union = partitions
        .iter()
        .map(|p| {
            format!(
                "SELECT log_id, max(seq) AS seq FROM {} GROUP BY log_id",
                ident(p)
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let last: std::collections::HashMap<Vec<u8>, i64> = tx
        .query(
            &format!("SELECT log_id, max(seq) FROM ({union}) p GROUP BY log_id"),
            &[],
        )
        .map_err(sql("finding the cuts"))?
        .iter()
        .map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, i64>(1)))
        .collect();
    let kept_from: i64 = month_start_us(before);
    for log in &logs {
        let log_id: Vec<u8> = log.get(0);
        let (host, origin): (String, String) = (log.get(1), log.get(2));
        let Some(&cut) = last.get(&log_id) else {
            continue;
        };
        let previous_cut: i64 = log.get(7);
        if cut <= previous_cut {
            continue;
        }
        let straddling: i64 = tx
            .query_one(
                "SELECT count(*) FROM events WHERE log_id = $1 AND seq <= $2 AND part_us >= $3",
                &[&log_id, &cut, &kept_from],
            )
            .map_err(sql("checking the cut"))?
            .get(0);
        if straddling > 0 {
            return Err(RetainError::Straddles {
                host,
                origin,
                cut: cut as u64,
                count: straddling,
            });
        }
        let format = u32::try_from(log.get::<_, i32>(3)).unwrap_or(0);
        let switch = match (log.get::<_, Option<i64>>(4), log.get::<_, Option<i32>>(5)) {
            (Some(at), Some(to)) => Some((at.max(0) as u64, to.max(0) as u32)),
            _ => None,
        };
        let (previous, mut merkle) = if previous_cut == 0 {
            let genesis: Vec<u8> = log.get(6);
            (
                <Hash>::try_from(genesis.as_slice()).unwrap_or_default(),
                MerkleBuilder::new(),
            )
        } else {
            let chain: Option<Vec<u8>> = log.get(8);
            let frontier: Option<Vec<u8>> = log.get(9);
            let chain = chain
                .and_then(|c| <Hash>::try_from(c.as_slice()).ok())
                .unwrap_or_default();
            let merkle = frontier
                .and_then(|f| super::verify::frontier_tree(previous_cut as u64, &f))
                .unwrap_or_default();
            (chain, merkle)
        };
        let broken = |seq: u64, problem: &str, detail: String| RetainError::Broken {
            host: host.clone(),
            origin: origin.clone(),
            seq,
            problem: problem.to_owned(),
            detail,
        };
        let first = previous_cut as u64;
        let mut checker = Checker::resume(previous, first, row_format(format, switch, first + 1));
        let mut chain = previous;
        {
            let mut rows = tx
                .query_raw(
                    "SELECT seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval,
                            status, payload, leaf, chain, \"user\", host, client, session, agent
                       FROM events WHERE log_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq",
                    [
                        &log_id as &(dyn postgres::types::ToSql + Sync),
                        &previous_cut,
                        &cut,
                    ],
                )
                .map_err(sql("reading the rows to drop"))?;
            while let Some(row) = rows.next().map_err(sql("reading the rows to drop"))? {
                let check = super::verify::row_check(&row, &log_id, format, switch)
                    .map_err(sql("reading the rows to drop"))?;
                let leaf = match &check {
                    RowCheck::Row { leaf, chain: c, .. } => {
                        chain = <Hash>::try_from(c.as_slice()).unwrap_or_default();
                        Some(*leaf)
                    }
                    RowCheck::Malformed { .. } => None,
                };
                if let Some(bad) = checker.row(check) {
                    return Err(broken(
                        bad.first_bad_seq.unwrap_or_default(),
                        bad.problem.map_or("unknown", Problem::as_str),
                        bad.detail.unwrap_or_default(),
                    ));
                }
                if let Some(leaf) = leaf {
                    merkle.push(leaf);
                }
            }
        }
        if checker.rows() != cut as u64 {
            return Err(broken(
                checker.rows() + 1,
                Problem::SeqGap.as_str(),
                format!("its rows end at {} before the cut at {cut}", checker.rows()),
            ));
        }
        let mark = CutMark {
            checkpoint: Checkpoint {
                origin: origin.clone(),
                size: cut as u64,
                root: merkle.root(),
            },
            chain,
        };
        let note = sign_cut_note(&mark, key);
        tx.execute(
            "UPDATE logs SET cut_size = $2, cut_chain = $3, cut_frontier = $4, cut_note = $5
              WHERE log_id = $1",
            &[
                &log_id,
                &cut,
                &&chain[..],
                &merkle.frontier().concat(),
                &note,
            ],
        )
        .map_err(sql("storing a cut"))?;
        report.cuts.push(Cut {
            host,
            origin,
            size: cut as u64,
            dropped: (cut - previous_cut) as u64,
        });
    }
    for partition in &partitions {
        tx.batch_execute(&format!("DROP TABLE {}", ident(partition)))
            .map_err(sql("dropping a partition"))?;
    }
    tx.commit().map_err(sql("ending retention"))?;
    Ok(report)
}

/// A PostgreSQL identifier, quoted.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Microseconds since the epoch at 00:00 UTC on the first of `month` (`YYYYMM`).
fn month_start_us(month: u32) -> i64 {
    chrono::NaiveDate::from_ymd_opt((month / 100) as i32, month % 100, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map_or(0, |t| t.and_utc().timestamp_micros())
}
