//! Retention: dropping whole monthly partitions of `events`, and marking,
//! per log, where its rows were cut. Before a cut is stored, the rows it
//! drops are verified (leaves and links from the previous cut), so that
//! retention never launders a broken chain: each log's cut keeps the chain
//! value and the Merkle frontier after its last dropped row, and a note
//! signed by the central key marks the cut. `verify` starts each log there.
//! The cut note itself (what it says, how it is signed and opened) lives in
//! [`super::cosign`], beside the other notes the central key signs.

use std::collections::HashMap;

use postgres::fallible_iterator::FallibleIterator as _;

use super::cosign::{CutMark, sign_cut_note};
use super::query::{ReadError, sql};
use super::{Central, CentralError, Head, ident};
use crate::chain::Hash;
use crate::checkpoint::{Checkpoint, MerkleBuilder, SigningKey};
use crate::store::{Checker, Problem, RowCheck, row_format};

/// Why retention did nothing.
#[derive(Debug, thiserror::Error)]
pub enum RetainError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("`{0}` is not a month; give YYYY-MM")]
    Month(String),
    #[error("--before {0} is after the current month: only past months' partitions can be dropped")]
    Future(String),
    #[error(transparent)]
    Central(#[from] CentralError),
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

/// A log that keeps a partition: its rows up to where it would be cut are
/// not all in the partitions that go (its accept times went backwards), so
/// dropping them would leave a hole in it. That partition, and every later
/// one, is kept; the older ones still go.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Held {
    pub host: String,
    pub origin: String,
    /// The kept partition holding its rows.
    pub partition: String,
}

/// What one retention run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RetainReport {
    /// The partitions dropped, by name (`events_YYYYMM`).
    pub partitions: Vec<String>,
    pub cuts: Vec<Cut>,
    /// Logs that kept partitions before `--before` (see [`Held`]).
    pub held: Vec<Held>,
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
/// after cutting each log at its last row in them, in one transaction. A
/// log whose rows up to that cut are not all in those partitions does not
/// stop the run: the oldest partitions that leave no log a hole go, and
/// the report names the log and the partition it holds ([`Held`]). A log
/// whose rows to drop do not verify, or whose stored start is damaged,
/// stops the run: nothing is dropped.
/// `current` is this month (`YYYYMM`); a later `before` is refused.
pub fn retain(
    central: &mut Central,
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
    // The central identity never changes after init: checked before the transaction.
    central.check_key(key)?;
    let mut tx = central
        .client()
        .transaction()
        .map_err(sql("starting retention"))?;
    // Every log's row, locked: ingest waits until the cuts are in.
    let logs = tx
        .query(
            "SELECT log_id, host, origin, format, switch_seq, switch_format, genesis,
                    COALESCE(cut_size, 0), cut_chain, cut_frontier
               FROM logs ORDER BY host, origin FOR UPDATE",
            &[],
        )
        .map_err(sql("locking logs"))?;
    // Every partition, oldest first; those before `before` may go.
    let all: Vec<String> = tx
        .query(
            "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent = 'events'::regclass ORDER BY 1",
            &[],
        )
        .map_err(sql("listing partitions"))?
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect();
    let old = |name: &String| {
        name.strip_prefix("events_")
            .and_then(|m| m.parse::<u32>().ok())
            .is_some_and(|month| month < before)
    };
    let candidates: Vec<String> = all.iter().filter(|n| old(n)).cloned().collect();
    let mut report = RetainReport::default();
    if candidates.is_empty() {
        tx.commit().map_err(sql("ending retention"))?;
        return Ok(report);
    }
    // Each log's lowest and highest seq in each partition.
    let mut spans: HashMap<String, HashMap<Vec<u8>, (i64, i64)>> = HashMap::new();
    for partition in &all {
        let rows = tx
            .query(
                &format!(
                    "SELECT log_id, min(seq), max(seq) FROM {} GROUP BY log_id",
                    ident(partition)
                ),
                &[],
            )
            .map_err(sql("finding the cuts"))?;
        spans.insert(
            partition.clone(),
            rows.iter()
                .map(|r| (r.get::<_, Vec<u8>>(0), (r.get(1), r.get(2))))
                .collect(),
        );
    }
    // The cuts if the oldest `k` candidates go: each log's highest seq in
    // them; and the logs whose rows up to that cut are not all in them
    // (part_us went backwards: dropping would leave a hole in the log).
    let plan = |k: usize| {
        let mut cut: HashMap<&[u8], i64> = HashMap::new();
        for partition in &candidates[..k] {
            for (log_id, &(_, high)) in &spans[partition] {
                let c = cut.entry(log_id.as_slice()).or_insert(high);
                *c = (*c).max(high);
            }
        }
        let mut held: Vec<(Vec<u8>, String)> = Vec::new();
        for partition in all.iter().filter(|p| !candidates[..k].contains(p)) {
            for (log_id, &(low, _)) in &spans[partition] {
                if cut.get(log_id.as_slice()).is_some_and(|&c| low <= c) {
                    held.push((log_id.clone(), partition.clone()));
                }
            }
        }
        (cut, held)
    };
    // One such log keeps only the partitions its rows need: the largest
    // run of the oldest partitions that leaves no log a hole goes.
    let (_, held) = plan(candidates.len());
    let k = (0..=candidates.len())
        .rev()
        .find(|&k| plan(k).1.is_empty())
        .unwrap_or(0);
    let (cuts, _) = plan(k);
    let last: HashMap<Vec<u8>, i64> = cuts.into_iter().map(|(l, c)| (l.to_vec(), c)).collect();
    let partitions: Vec<String> = candidates[..k].to_vec();
    report.partitions = partitions.clone();
    for (log_id, partition) in held {
        if let Some(log) = logs.iter().find(|l| l.get::<_, Vec<u8>>(0) == log_id) {
            report.held.push(Held {
                host: log.get(1),
                origin: log.get(2),
                partition,
            });
        }
    }
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
        let format = u32::try_from(log.get::<_, i32>(3)).unwrap_or(0);
        let switch = match (log.get::<_, Option<i64>>(4), log.get::<_, Option<i32>>(5)) {
            (Some(at), Some(to)) => Some((at.max(0) as u64, to.max(0) as u32)),
            _ => None,
        };
        let damaged = |what: &str| {
            RetainError::Read(ReadError::Damaged {
                detail: format!(
                    "log {origin} of host `{host}`: its {what}; run `gavel verify --db …`"
                ),
            })
        };
        let (previous, mut merkle) = if previous_cut == 0 {
            let genesis: Vec<u8> = log.get(6);
            let genesis = <Hash>::try_from(genesis.as_slice())
                .map_err(|_| damaged("genesis is not 32 bytes"))?;
            (genesis, MerkleBuilder::new())
        } else {
            let chain: Option<Vec<u8>> = log.get(8);
            let frontier: Option<Vec<u8>> = log.get(9);
            let (Some(chain), Some(frontier)) = (chain, frontier) else {
                return Err(damaged("cut chain or cut frontier is missing"));
            };
            // The stored cut read as a head (size, chain, frontier), as ingest reads one.
            let head = Head::from_stored(previous_cut, &chain, &frontier, 0, None, None)
                .map_err(|e| damaged(&format!("cut: {e}")))?;
            (head.chain, head.tree)
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
                        // A chain value not 32 bytes is a break the checker reports.
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
