//! The central side: `gavel central ingest`. For each enrolled host's inbox
//! and each log in it, in one transaction with the log's row locked: the
//! batch must start at the accepted size + 1 (rows re-sent below it must be
//! the accepted ones) and continue the accepted chain; every leaf and chain
//! value is recomputed and must equal what the host sent; the Merkle
//! frontier is extended over the batch and its root must equal the root of
//! each checkpoint the host sent, at its size, whose signature must verify
//! with the host's enrolled key. Then the rows go to `events`, the head
//! moves, the checkpoint is cosigned and becomes a leaf of the central log.
//! Anything else is refused: nothing of the batch is accepted, a `refusals`
//! row names the problem, and the inbox rows are moved to `refused_events`
//! (kept as evidence) so that the host can push again.

use postgres::Transaction;
use postgres::fallible_iterator::FallibleIterator as _;

use crate::chain::{Hash, genesis, known_format, link};
use crate::checkpoint::{Checkpoint, MerkleBuilder, SigningKey, VerifierKey};

use super::cosign::{central_leaf, cosign, note_body};
use super::push::Inbox;
use super::{Break, Central, CentralError, Head, ROW_COLUMNS, Row, now_us, sql};

/// Why a batch was refused: a stable code, stored in `refusals.problem`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// A row the host sent is not what it hashed, does not link to the row
    /// before it, or differs from the accepted row of the same seq.
    Rewritten,
    /// The host's log is shorter than what was accepted.
    Truncated,
    /// The batch does not continue the accepted chain, or a checkpoint at
    /// the accepted size has another root.
    Fork,
    /// Rows are missing: the batch starts after size + 1, or ends before
    /// the size its checkpoint vouches for.
    Gap,
    /// A checkpoint is not signed by the host's enrolled key (or is malformed).
    CheckpointSignature,
    /// The rows do not produce the root of the checkpoint at its size.
    CheckpointRoot,
    /// Rows for a log with no identity, a wrong identity, or another host's log.
    UnknownLog,
    /// A record format this build does not know, or a bad format switch.
    Format,
}

impl Problem {
    pub fn as_str(self) -> &'static str {
        match self {
            Problem::Rewritten => "rewritten",
            Problem::Truncated => "truncated",
            Problem::Fork => "fork",
            Problem::Gap => "gap",
            Problem::CheckpointSignature => "checkpoint_signature",
            Problem::CheckpointRoot => "checkpoint_root",
            Problem::UnknownLog => "unknown_log",
            Problem::Format => "format",
        }
    }
}

/// A refused batch.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub host: String,
    pub log_id: Vec<u8>,
    pub problem: Problem,
    pub detail: String,
    pub first_seq: Option<i64>,
    pub last_seq: Option<i64>,
    /// Rows moved to `refused_events`.
    pub rows: u64,
}

/// An accepted batch.
#[derive(Debug, Clone)]
pub struct Accepted {
    pub host: String,
    pub log_id: Vec<u8>,
    /// Rows `from..=to` accepted now.
    pub from: u64,
    pub to: u64,
    /// The central log leaf of its (last) checkpoint.
    pub central_seq: i64,
}

/// What one ingest pass did.
#[derive(Debug, Clone, Default)]
pub struct IngestReport {
    pub accepted: Vec<Accepted>,
    pub refused: Vec<Refusal>,
    /// Policy texts taken (new ones), and ones dropped for a digest that is not theirs.
    pub policies: u64,
    pub bad_policies: u64,
    /// The central checkpoint signed after the pass: its size.
    pub central_size: Option<u64>,
    /// Hosts whose inbox could not be taken, and why (the pass went on with the others).
    pub errors: Vec<(String, String)>,
}

impl IngestReport {
    /// Rows accepted in the pass.
    pub fn rows(&self) -> u64 {
        self.accepted.iter().map(|a| a.to + 1 - a.from).sum()
    }
}

/// An advisory lock key for the central log's appends.
const CENTRAL_LOCK: i64 = 0x6761_766c_6365_6e74; // "gavlcent"
/// Another for making partitions (never held while waiting for the first).
const PARTITION_LOCK: i64 = 0x6761_766c_7061_7274; // "gavlpart"

/// What a host sent for one log, checked; or why it is refused.
enum Outcome {
    /// Nothing to take yet (no checkpoint covering new rows).
    Nothing,
    /// Rows old.size+1..=new.size, vouched for by the checkpoint `(size, note)`
    /// at new.size (the largest of the batch).
    Accept {
        old: Head,
        new: Head,
        checkpoint: (u64, String),
    },
    Refuse {
        problem: Problem,
        detail: String,
        first_seq: Option<i64>,
        last_seq: Option<i64>,
    },
}

fn refuse(problem: Problem, detail: String, first: Option<i64>, last: Option<i64>) -> Outcome {
    Outcome::Refuse {
        problem,
        detail,
        first_seq: first,
        last_seq: last,
    }
}

/// One ingest pass over every enrolled host's inbox, signed with the central key.
pub fn ingest(central: &mut Central, key: &SigningKey) -> Result<IngestReport, CentralError> {
    let (meta, hosts) = prepare(central, key)?;
    let mut report = IngestReport::default();
    for (host, verifier) in &hosts {
        ingest_host(central, key, host, verifier, &mut report);
    }
    finish(central, key, &meta.origin, report)
}

/// [`ingest`] with up to `jobs` connections (to `url`, in this store's
/// schema) taking different hosts at once. Each log is still taken in one
/// transaction with its row locked; the central log's appends take turns.
pub fn ingest_parallel(
    central: &mut Central,
    url: &str,
    key: &SigningKey,
    jobs: usize,
) -> Result<IngestReport, CentralError> {
    let (meta, hosts) = prepare(central, key)?;
    let jobs = jobs.clamp(1, hosts.len().max(1));
    if jobs == 1 {
        let mut report = IngestReport::default();
        for (host, verifier) in &hosts {
            ingest_host(central, key, host, verifier, &mut report);
        }
        return finish(central, key, &meta.origin, report);
    }
    let schema = central.schema.clone();
    let results: Vec<Result<IngestReport, CentralError>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..jobs)
            .map(|job| {
                let mine: Vec<&(String, VerifierKey)> =
                    hosts.iter().skip(job).step_by(jobs).collect();
                let schema = &schema;
                s.spawn(move || {
                    let mut report = IngestReport::default();
                    let mut worker = match Central::connect(url, Some(schema)) {
                        Ok(worker) => worker,
                        Err(e) => {
                            for (host, _) in mine {
                                report.errors.push((host.clone(), e.to_string()));
                            }
                            return Ok(report);
                        }
                    };
                    for (host, verifier) in mine {
                        ingest_host(&mut worker, key, host, verifier, &mut report);
                    }
                    Ok(report)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or_else(|_| {
                    Err(CentralError::Damaged {
                        detail: "an ingest worker stopped early".into(),
                    })
                })
            })
            .collect()
    });
    let mut report = IngestReport::default();
    for result in results {
        let part = result?;
        report.accepted.extend(part.accepted);
        report.refused.extend(part.refused);
        report.policies += part.policies;
        report.bad_policies += part.bad_policies;
        report.errors.extend(part.errors);
    }
    finish(central, key, &meta.origin, report)
}

/// Checks the store and key; lists the enrolled hosts with their keys.
fn prepare(
    central: &mut Central,
    key: &SigningKey,
) -> Result<(super::admin::CentralMeta, Vec<(String, VerifierKey)>), CentralError> {
    central.check()?;
    let meta = central.check_key(key)?;
    let rows = central
        .client
        .query("SELECT host, verifier FROM hosts ORDER BY host", &[])
        .map_err(sql("listing hosts"))?;
    let mut hosts = Vec::with_capacity(rows.len());
    for row in rows {
        let verifier: String = row.get(1);
        hosts.push((row.get(0), VerifierKey::from_text(&verifier)?));
    }
    Ok((meta, hosts))
}

/// Signs a central checkpoint when the central log is larger than its last
/// one (so leaves a crash left unsigned are signed by the next pass).
fn finish(
    central: &mut Central,
    key: &SigningKey,
    origin: &str,
    mut report: IngestReport,
) -> Result<IngestReport, CentralError> {
    report.central_size = sign_central(central, key, origin)?;
    Ok(report)
}

/// Takes what one host's inbox holds: its policies, then each log. An
/// error is recorded in the report against the host; the pass goes on.
fn ingest_host(
    central: &mut Central,
    key: &SigningKey,
    host: &str,
    verifier: &VerifierKey,
    report: &mut IngestReport,
) {
    if let Err(e) = take_host(central, key, host, verifier, report) {
        report.errors.push((host.to_owned(), e.to_string()));
    }
}

fn take_host(
    central: &mut Central,
    key: &SigningKey,
    host: &str,
    verifier: &VerifierKey,
    report: &mut IngestReport,
) -> Result<(), CentralError> {
    let inbox = Inbox {
        schema: central.inbox_schema(),
        host: host.to_owned(),
    };
    take_policies(central, &inbox, report)?;
    let logs = central
        .client
        .query(
            &format!(
                "SELECT log_id FROM {} UNION SELECT log_id FROM {} ORDER BY 1",
                inbox.table("checkpoints"),
                inbox.table("events")
            ),
            &[],
        )
        .map_err(sql("listing pending logs"))?;
    for log in logs {
        let log_id: Vec<u8> = log.get(0);
        ingest_log(central, key, &inbox, verifier, &log_id, report)?;
    }
    Ok(())
}

/// Moves a host's pushed policy texts into `policies` (those whose SHA-256 is their digest).
fn take_policies(
    central: &mut Central,
    inbox: &Inbox,
    report: &mut IngestReport,
) -> Result<(), CentralError> {
    let mut tx = central
        .client
        .transaction()
        .map_err(sql("starting policies"))?;
    let rows = tx
        .query(
            &format!(
                "DELETE FROM {} RETURNING digest, name, source, first_seen_us",
                inbox.table("policies")
            ),
            &[],
        )
        .map_err(sql("reading pushed policies"))?;
    for row in rows {
        let digest: String = row.get(0);
        let source: String = row.get(2);
        if crate::digest::hex(&crate::digest::sha256(source.as_bytes())) != digest {
            report.bad_policies += 1;
            continue;
        }
        let name: String = row.get(1);
        let first: i64 = row.get(3);
        report.policies += tx
            .execute(
                "INSERT INTO policies (digest, name, source, first_seen_us) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (digest) DO NOTHING",
                &[&digest, &name, &source, &first],
            )
            .map_err(sql("storing a policy"))?;
    }
    tx.commit().map_err(sql("committing policies"))
}

/// The name of the month partition `events_YYYYMM` holding `part_us`.
fn partition_name(part_us: i64) -> Result<String, CentralError> {
    use chrono::Datelike as _;
    let at =
        chrono::DateTime::from_timestamp_micros(part_us).ok_or_else(|| CentralError::Damaged {
            detail: format!("time {part_us} is out of range"),
        })?;
    Ok(format!("events_{:04}{:02}", at.year(), at.month()))
}

/// The month partition `events_YYYYMM` holding `part_us`, made if missing.
pub fn ensure_partition(central: &mut Central, part_us: i64) -> Result<(), CentralError> {
    use chrono::Datelike as _;
    let at =
        chrono::DateTime::from_timestamp_micros(part_us).ok_or_else(|| CentralError::Damaged {
            detail: format!("time {part_us} is out of range"),
        })?;
    let start = chrono::NaiveDate::from_ymd_opt(at.year(), at.month(), 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc());
    let end = start.and_then(|s| s.checked_add_months(chrono::Months::new(1)));
    let (Some(start), Some(end)) = (start, end) else {
        return Err(CentralError::Damaged {
            detail: format!("time {part_us} is out of range"),
        });
    };
    let name = partition_name(part_us)?;
    // A partition of this store's events (not merely a table of that name).
    let partition = "SELECT EXISTS (
                         SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                         WHERE i.inhparent = (quote_ident($1) || '.events')::regclass
                           AND c.relname = $2)";
    let exists: bool = central
        .client
        .query_one(partition, &[&central.schema, &name])
        .map_err(sql("looking for a partition"))?
        .get(0);
    if exists {
        return Ok(());
    }
    let mut tx = central
        .client
        .transaction()
        .map_err(sql("starting a partition"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PARTITION_LOCK])
        .map_err(sql("locking for a partition"))?;
    let exists: bool = tx
        .query_one(partition, &[&central.schema, &name])
        .map_err(sql("looking for a partition"))?
        .get(0);
    if exists {
        return Ok(());
    }
    // Without IF NOT EXISTS: a table of that name that is not a partition is an error.
    tx.batch_execute(&format!(
        "CREATE TABLE {name} PARTITION OF events FOR VALUES FROM ({}) TO ({})",
        start.timestamp_micros(),
        end.timestamp_micros()
    ))
    .map_err(sql("creating a partition"))?;
    tx.commit().map_err(sql("committing a partition"))
}

/// An advisory lock key for one log (its id's first 8 bytes): held for the
/// whole transaction, across the savepoint a refusal rolls back to.
fn log_lock(log_id: &[u8]) -> i64 {
    let mut key = [0u8; 8];
    for (k, b) in key.iter_mut().zip(log_id) {
        *k = *b;
    }
    i64::from_be_bytes(key)
}

/// The most rows of a refused batch kept as evidence, from its first bad seq on.
pub const REFUSED_EVIDENCE_ROWS: i64 = 1000;

/// Ingests what `inbox` holds for one log, in one transaction holding the
/// log's lock: the batch is checked and accepted inside a savepoint; a
/// refusal rolls back to it and is recorded in the same transaction.
fn ingest_log(
    central: &mut Central,
    key: &SigningKey,
    inbox: &Inbox,
    verifier: &VerifierKey,
    log_id: &[u8],
    report: &mut IngestReport,
) -> Result<(), CentralError> {
    // The partition first, in its own transaction, for at least now.
    let planned_us = now_us().max(last_accept(&mut central.client, log_id)?);
    ensure_partition(central, planned_us)?;

    let mut tx = central
        .client
        .transaction()
        .map_err(sql("starting ingest"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&log_lock(log_id)])
        .map_err(sql("locking the log"))?;
    // Under the lock: never before the log's previous batch (whose
    // partition exists, since its rows are in it).
    let part_us = planned_us.max(last_accept(&mut tx, log_id)?);
    let mut registered = false;
    let refused = {
        let mut batch = tx.savepoint("batch").map_err(sql("starting a batch"))?;
        match check_batch(&mut batch, inbox, verifier, log_id, &mut registered)? {
            // A log is registered only with its first accepted batch: rows
            // without a checkpoint claim nothing.
            Outcome::Nothing if registered => {
                batch.rollback().map_err(sql("rolling back ingest"))?;
                None
            }
            Outcome::Nothing => {
                batch.commit().map_err(sql("committing ingest"))?;
                None
            }
            Outcome::Accept {
                old,
                new,
                checkpoint,
            } => {
                let central_seq = accept(
                    &mut batch,
                    key,
                    inbox,
                    log_id,
                    &old,
                    &new,
                    &checkpoint,
                    part_us,
                )?;
                batch.commit().map_err(sql("committing ingest"))?;
                report.accepted.push(Accepted {
                    host: inbox.host.clone(),
                    log_id: log_id.to_vec(),
                    from: old.size + 1,
                    to: new.size,
                    central_seq,
                });
                None
            }
            Outcome::Refuse {
                problem,
                detail,
                first_seq,
                last_seq,
            } => {
                batch.rollback().map_err(sql("rolling back ingest"))?;
                Some((problem, detail, first_seq, last_seq))
            }
        }
    };
    if let Some((problem, detail, first_seq, last_seq)) = refused {
        let rows = record_refusal(
            &mut tx, inbox, log_id, problem, &detail, first_seq, last_seq,
        )?;
        report.refused.push(Refusal {
            host: inbox.host.clone(),
            log_id: log_id.to_vec(),
            problem,
            detail,
            first_seq,
            last_seq,
            rows,
        });
    }
    tx.commit().map_err(sql("committing ingest"))
}

/// When the log's last batch was accepted (`i64::MIN` before its first).
fn last_accept(
    client: &mut impl postgres::GenericClient,
    log_id: &[u8],
) -> Result<i64, CentralError> {
    client
        .query_one(
            "SELECT max(accepted_us) FROM checkpoints WHERE log_id = $1",
            &[&log_id],
        )
        .map(|r| r.get::<_, Option<i64>>(0).unwrap_or(i64::MIN))
        .map_err(sql("reading the last accept time"))
}

/// Moves an accepted batch into `events` (one server-side statement from
/// the inbox), moves the head, cosigns the batch's largest checkpoint and
/// appends it to the central log; returns its central seq.
#[allow(clippy::too_many_arguments)]
fn accept(
    tx: &mut Transaction<'_>,
    key: &SigningKey,
    inbox: &Inbox,
    log_id: &[u8],
    old: &Head,
    new: &Head,
    checkpoint: &(u64, String),
    part_us: i64,
) -> Result<i64, CentralError> {
    // Straight into the month partition (it exists: made before the
    // transaction, or holding the log's previous batch); PostgreSQL still
    // checks the partition's bounds, and skipping the routing is faster.
    let moved = tx
        .execute(
            &format!(
                "INSERT INTO {} ({ROW_COLUMNS}, part_us)
                 SELECT {ROW_COLUMNS}, $4 FROM {} WHERE log_id = $1 AND seq > $2 AND seq <= $3",
                super::ident(&partition_name(part_us)?),
                inbox.table("events")
            ),
            &[&log_id, &(old.size as i64), &(new.size as i64), &part_us],
        )
        .map_err(sql("accepting rows"))?;
    if moved != new.size - old.size {
        return Err(CentralError::Damaged {
            detail: format!(
                "the inbox of `{}` changed under ingest ({moved} rows moved, {} checked)",
                inbox.host,
                new.size - old.size
            ),
        });
    }
    clear_inbox(tx, inbox, "events", log_id, new.size)?;
    tx.execute(
        "UPDATE logs SET size = $2, chain = $3, frontier = $4, switch_seq = $5, switch_format = $6
         WHERE log_id = $1",
        &[
            &log_id,
            &(new.size as i64),
            &&new.chain[..],
            &new.frontier_bytes(),
            &new.switch.map(|s| s.0 as i64),
            &new.switch.map(|s| s.1 as i32),
        ],
    )
    .map_err(sql("moving the head"))?;
    clear_inbox(tx, inbox, "checkpoints", log_id, new.size)?;
    let (size, note) = checkpoint;
    let cp = crate::checkpoint::parse_unverified(note)?;
    let body = note_body(note).unwrap_or(note);
    let time = (part_us / 1_000_000).max(0) as u64;
    let cosignature = cosign(key, body, time);
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CENTRAL_LOCK])
        .map_err(sql("locking the central log"))?;
    let central_seq = append_central(tx, log_id, *size, note, part_us)?;
    tx.execute(
        "INSERT INTO checkpoints (log_id, size, root, note, cosignature, central_seq, accepted_us)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[
            &log_id,
            &(*size as i64),
            &&cp.root[..],
            note,
            &cosignature,
            &central_seq,
            &part_us,
        ],
    )
    .map_err(sql("storing a cosigned checkpoint"))?;
    Ok(central_seq)
}

/// Deletes from the host's inbox `table` (`events` or `checkpoints`) what
/// of `log_id` lies at or below `upto` (rows by seq, checkpoints by size).
fn clear_inbox(
    tx: &mut Transaction<'_>,
    inbox: &Inbox,
    table: &str,
    log_id: &[u8],
    upto: u64,
) -> Result<(), CentralError> {
    let column = if table == "checkpoints" {
        "size"
    } else {
        "seq"
    };
    tx.execute(
        &format!(
            "DELETE FROM {} WHERE log_id = $1 AND {column} <= $2",
            inbox.table(table)
        ),
        &[&log_id, &(upto as i64)],
    )
    .map_err(sql("emptying the inbox"))?;
    Ok(())
}

/// Records a refusal and moves the log's inbox rows out: the first
/// [`REFUSED_EVIDENCE_ROWS`] from the first bad seq on (or from the
/// batch's start) are kept in `refused_events`, the rest are deleted.
#[allow(clippy::too_many_arguments)]
fn record_refusal(
    tx: &mut Transaction<'_>,
    inbox: &Inbox,
    log_id: &[u8],
    problem: Problem,
    detail: &str,
    first_seq: Option<i64>,
    last_seq: Option<i64>,
) -> Result<u64, CentralError> {
    let id: i64 = tx
        .query_one(
            "INSERT INTO refusals (host, log_id, at_us, first_seq, last_seq, problem, detail)
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            &[
                &inbox.host,
                &log_id,
                &now_us(),
                &first_seq,
                &last_seq,
                &problem.as_str(),
                &detail,
            ],
        )
        .map_err(sql("recording a refusal"))?
        .get(0);
    let rows = tx
        .execute(
            &format!(
                "INSERT INTO refused_events (refusal, {ROW_COLUMNS})
                 SELECT $1, {ROW_COLUMNS} FROM {} WHERE log_id = $2 AND seq >= $3
                 ORDER BY seq LIMIT $4",
                inbox.table("events")
            ),
            &[
                &id,
                &log_id,
                &first_seq.unwrap_or(i64::MIN),
                &REFUSED_EVIDENCE_ROWS,
            ],
        )
        .map_err(sql("keeping the refused rows"))?;
    for table in ["events", "checkpoints"] {
        tx.execute(
            &format!("DELETE FROM {} WHERE log_id = $1", inbox.table(table)),
            &[&log_id],
        )
        .map_err(sql("emptying the inbox"))?;
    }
    Ok(rows)
}

/// Appends a host checkpoint note to the central log, with the Merkle
/// frontier after it; returns its seq. The caller holds the central lock.
fn append_central(
    tx: &mut Transaction<'_>,
    log_id: &[u8],
    size: u64,
    note: &str,
    ts_us: i64,
) -> Result<i64, CentralError> {
    let (seq, previous, mut tree) = match central_head(tx)? {
        Some((seq, chain, tree)) => (seq + 1, chain, tree),
        None => {
            let genesis: Vec<u8> = tx
                .query_one("SELECT genesis FROM central_meta WHERE id = 1", &[])
                .map_err(sql("reading the central genesis"))?
                .get(0);
            let genesis: Hash = genesis.try_into().map_err(|_| CentralError::Damaged {
                detail: "the central genesis is not 32 bytes".into(),
            })?;
            (1, genesis, MerkleBuilder::new())
        }
    };
    let leaf = central_leaf(note);
    let chain = link(&previous, &leaf);
    tree.push(leaf);
    tx.execute(
        "INSERT INTO central_log (seq, ts_us, log_id, size, note, leaf, chain, frontier)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[
            &seq,
            &ts_us,
            &log_id,
            &(size as i64),
            &note,
            &&leaf[..],
            &&chain[..],
            &tree.frontier().concat(),
        ],
    )
    .map_err(sql("appending to the central log"))?;
    Ok(seq)
}

/// The central log's last leaf: its seq, chain value and the Merkle
/// frontier over leaves 1..seq; `None` when it is empty.
fn central_head(
    tx: &mut Transaction<'_>,
) -> Result<Option<(i64, Hash, MerkleBuilder)>, CentralError> {
    let Some(row) = tx
        .query_opt(
            "SELECT seq, chain, frontier FROM central_log ORDER BY seq DESC LIMIT 1",
            &[],
        )
        .map_err(sql("reading the central log"))?
    else {
        return Ok(None);
    };
    let damaged = |detail: &str| CentralError::Damaged {
        detail: detail.to_owned(),
    };
    let seq: i64 = row.get(0);
    let chain: Vec<u8> = row.get(1);
    let chain: Hash = chain
        .try_into()
        .map_err(|_| damaged("a central chain value is not 32 bytes"))?;
    let frontier: Vec<u8> = row.get(2);
    let tree = super::frontier_tree(seq.max(0) as u64, &frontier, "the central")?;
    Ok(Some((seq, chain, tree)))
}

/// Signs a checkpoint of the central log (its size and Merkle root, from
/// the frontier its last leaf keeps) when it is larger than the last one;
/// returns the size signed.
fn sign_central(
    central: &mut Central,
    key: &SigningKey,
    origin: &str,
) -> Result<Option<u64>, CentralError> {
    let mut tx = central
        .client
        .transaction()
        .map_err(sql("starting a central checkpoint"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CENTRAL_LOCK])
        .map_err(sql("locking the central log"))?;
    let Some((seq, _, tree)) = central_head(&mut tx)? else {
        return Ok(None);
    };
    let signed: i64 = tx
        .query_one(
            "SELECT coalesce(max(size), 0) FROM central_checkpoints",
            &[],
        )
        .map_err(sql("reading central checkpoints"))?
        .get(0);
    if signed >= seq {
        return Ok(None);
    }
    let checkpoint = Checkpoint {
        origin: origin.to_owned(),
        size: tree.len(),
        root: tree.root(),
    };
    let note = key.sign(&checkpoint)?;
    tx.execute(
        "INSERT INTO central_checkpoints (size, root, note) VALUES ($1, $2, $3)",
        &[&(checkpoint.size as i64), &&checkpoint.root[..], &note],
    )
    .map_err(sql("storing a central checkpoint"))?;
    tx.commit()
        .map_err(sql("committing a central checkpoint"))?;
    Ok(Some(checkpoint.size))
}

/// The log's head, locked; created from the pushed identity on first sight
/// (the caller rolls that back unless a batch is accepted).
/// `Err(outcome)` when the log cannot be taken from this host.
/// `registered` is set when the log's row was made now.
fn locked_head(
    tx: &mut Transaction<'_>,
    inbox: &Inbox,
    log_id: &[u8],
    registered: &mut bool,
) -> Result<Result<(Head, i64), Outcome>, CentralError> {
    let hex = crate::digest::hex(log_id);
    let select = "SELECT host, size, chain, frontier, format, switch_seq, switch_format, cut_size
                  FROM logs WHERE log_id = $1 FOR UPDATE";
    let mut row = tx
        .query_opt(select, &[&log_id])
        .map_err(sql("locking the log"))?;
    if row.is_none() {
        let identity = tx
            .query_opt(
                &format!(
                    "SELECT origin, format, created_us, genesis FROM {} WHERE log_id = $1",
                    inbox.table("logs")
                ),
                &[&log_id],
            )
            .map_err(sql("reading the pushed identity"))?;
        let Some(identity) = identity else {
            return Ok(Err(refuse(
                Problem::UnknownLog,
                format!("rows for log {hex}, whose identity was never pushed"),
                None,
                None,
            )));
        };
        let origin: String = identity.get(0);
        let format: i32 = identity.get(1);
        let created_us: i64 = identity.get(2);
        let stated: Vec<u8> = identity.get(3);
        if !known_format(i64::from(format)) {
            return Ok(Err(refuse(
                Problem::Format,
                format!("log {hex} is in record format {format}, which this gavel does not know"),
                None,
                None,
            )));
        }
        let expected_origin = format!("gavel/{hex}");
        let genesis = genesis(log_id, &origin, format as u32);
        if origin != expected_origin || stated[..] != genesis[..] {
            return Ok(Err(refuse(
                Problem::UnknownLog,
                format!(
                    "log {hex}: its identity (origin `{origin}`, genesis) is not the one its log id gives"
                ),
                None,
                None,
            )));
        }
        tx.execute(
            "INSERT INTO logs (log_id, host, origin, format, created_us, genesis, size, chain, frontier)
             VALUES ($1, $2, $3, $4, $5, $6, 0, $6, ''::bytea) ON CONFLICT (log_id) DO NOTHING",
            &[&log_id, &inbox.host, &origin, &format, &created_us, &&genesis[..]],
        )
        .map_err(sql("registering the log"))?;
        *registered = true;
        row = tx
            .query_opt(select, &[&log_id])
            .map_err(sql("locking the log"))?;
    }
    let Some(row) = row else {
        return Err(CentralError::Damaged {
            detail: format!("log {hex} vanished while being ingested"),
        });
    };
    let owner: String = row.get(0);
    if owner != inbox.host {
        return Ok(Err(refuse(
            Problem::UnknownLog,
            format!(
                "log {hex} belongs to host `{owner}`, not to `{}`",
                inbox.host
            ),
            None,
            None,
        )));
    }
    let head = Head::from_stored(
        row.get(1),
        &row.get::<_, Vec<u8>>(2),
        &row.get::<_, Vec<u8>>(3),
        row.get(4),
        row.get(5),
        row.get(6),
    )?;
    Ok(Ok((head, row.get(7))))
}

/// Checks what the host sent for one log against the locked head.
fn check_batch(
    tx: &mut Transaction<'_>,
    inbox: &Inbox,
    verifier: &VerifierKey,
    log_id: &[u8],
    registered: &mut bool,
) -> Result<Outcome, CentralError> {
    let hex = crate::digest::hex(log_id);
    let (old, cut_size) = match locked_head(tx, inbox, log_id, registered)? {
        Ok(found) => found,
        Err(outcome) => return Ok(outcome),
    };
    let origin = format!("gavel/{hex}");

    // The checkpoints: every one must be the host's and for this log.
    let pending = tx
        .query(
            &format!(
                "SELECT size, note FROM {} WHERE log_id = $1 ORDER BY size",
                inbox.table("checkpoints")
            ),
            &[&log_id],
        )
        .map_err(sql("reading pushed checkpoints"))?;
    let mut checkpoints: Vec<(Checkpoint, String)> = Vec::new();
    for row in &pending {
        let size: i64 = row.get(0);
        let note: String = row.get(1);
        let cp = match crate::checkpoint::open(&note, verifier) {
            Ok(cp) => cp,
            Err(e) => {
                return Ok(refuse(
                    Problem::CheckpointSignature,
                    format!("log {hex}: the checkpoint of size {size}: {e}"),
                    None,
                    Some(size),
                ));
            }
        };
        if cp.origin != origin || cp.size != size.max(0) as u64 {
            return Ok(refuse(
                Problem::CheckpointSignature,
                format!(
                    "log {hex}: a checkpoint for `{}` at size {} was pushed as this log's at size {size}",
                    cp.origin, cp.size
                ),
                None,
                Some(size),
            ));
        }
        checkpoints.push((cp, note));
    }
    let Some(target) = checkpoints.last().map(|c| c.0.size) else {
        // Rows without a checkpoint: they wait for one.
        return Ok(Outcome::Nothing);
    };

    let bounds = tx
        .query_one(
            &format!(
                "SELECT min(seq), max(seq) FROM {} WHERE log_id = $1",
                inbox.table("events")
            ),
            &[&log_id],
        )
        .map_err(sql("sizing the batch"))?;
    let low: Option<i64> = bounds.get(0);
    let high: Option<i64> = bounds.get(1);

    // Rows sent again (a host that diverged sends everything): they must be the accepted ones.
    let mut accepted_leaves: Vec<Vec<u8>> = Vec::new();
    let overlap_from = low.map_or(i64::MAX, |l| l.max(cut_size + 1).max(1));
    if overlap_from <= old.size as i64 {
        let params: [&(dyn postgres::types::ToSql + Sync); 3] =
            [&log_id, &overlap_from, &(old.size as i64)];
        let rows = tx
            .query(
                "SELECT leaf FROM events WHERE log_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq",
                &params,
            )
            .map_err(sql("reading accepted leaves"))?;
        accepted_leaves = rows.iter().map(|r| r.get(0)).collect();
    }

    let mut new = old.clone();
    let mut refusal = None;
    let mut next_cp = checkpoints
        .iter()
        .filter(|c| c.0.size > old.size)
        .peekable();
    {
        let params: [&(dyn postgres::types::ToSql + Sync); 2] = [&log_id, &(target as i64)];
        let mut rows = tx
            .query_raw(
                &format!(
                    "SELECT {ROW_COLUMNS} FROM {} WHERE log_id = $1 AND seq <= $2 ORDER BY seq",
                    inbox.table("events")
                ),
                params,
            )
            .map_err(sql("reading the batch"))?;
        let mut re_sent_last = 0i64;
        while let Some(pg_row) = rows.next().map_err(sql("reading the batch"))? {
            let row = Row::from_pg(&pg_row).map_err(sql("reading a pushed row"))?;
            if row.seq <= old.size as i64 {
                // A row sent again: compare with the accepted one.
                re_sent_last = row.seq;
                if row.seq < overlap_from {
                    continue;
                }
                let at = (row.seq - overlap_from) as usize;
                let format = old.format_at(row.seq.max(0) as u64);
                let leaf = row.fields(format).leaf_hash();
                let same = accepted_leaves
                    .get(at)
                    .is_some_and(|a| a[..] == leaf[..] && a[..] == row.leaf[..]);
                if !same {
                    refusal = Some(refuse(
                        Problem::Rewritten,
                        format!(
                            "log {hex}: seq {} differs from the row accepted at that seq: the host rewrote history it had pushed",
                            row.seq
                        ),
                        Some(row.seq),
                        high,
                    ));
                    break;
                }
                continue;
            }
            if let Err(why) = new.extend(log_id, &row) {
                let (problem, detail) = match &why {
                    Break::Gap { expected, found } => (
                        Problem::Gap,
                        format!(
                            "log {hex}: rows are missing: expected seq {expected}, found {found}"
                        ),
                    ),
                    Break::Chain { seq } if *seq == old.size + 1 => (
                        Problem::Fork,
                        format!(
                            "log {hex}: seq {seq} does not continue the accepted chain after seq {}: the log forked",
                            old.size
                        ),
                    ),
                    Break::Format { .. } => (Problem::Format, format!("log {hex}: {why}")),
                    _ => (Problem::Rewritten, format!("log {hex}: {why}")),
                };
                refusal = Some(refuse(problem, detail, Some(why.seq() as i64), high));
                break;
            }
            while let Some((cp, _)) = next_cp.peek() {
                if cp.size > new.size {
                    break;
                }
                if cp.size == new.size && cp.root != new.root() {
                    refusal = Some(refuse(
                        Problem::CheckpointRoot,
                        format!(
                            "log {hex}: rows 1..{} do not produce the root of the host's checkpoint at that size",
                            cp.size
                        ),
                        Some(old.size as i64 + 1),
                        Some(cp.size as i64),
                    ));
                    break;
                }
                next_cp.next();
            }
            if refusal.is_some() {
                break;
            }
        }
        if refusal.is_none()
            && re_sent_last > 0
            && re_sent_last < old.size as i64
            && high == Some(re_sent_last)
        {
            refusal = Some(refuse(
                Problem::Truncated,
                format!(
                    "log {hex}: the host's log holds {re_sent_last} rows, {} were accepted: it was truncated",
                    old.size
                ),
                low,
                high,
            ));
        }
    }
    if let Some(refusal) = refusal {
        return Ok(refusal);
    }
    // A checkpoint at the accepted size must have the accepted root.
    for (cp, _) in &checkpoints {
        if cp.size == old.size && cp.root != old.root() {
            return Ok(refuse(
                Problem::Fork,
                format!(
                    "log {hex}: the host signed another tree of {} rows than the one accepted: its history was rewritten",
                    cp.size
                ),
                None,
                Some(cp.size as i64),
            ));
        }
    }

    if target < old.size {
        return Ok(refuse(
            Problem::Truncated,
            format!(
                "log {hex}: the host signed a checkpoint of {target} rows, {} were accepted: its log was truncated",
                old.size
            ),
            None,
            Some(target as i64),
        ));
    }
    if new.size < target {
        return Ok(refuse(
            Problem::Gap,
            format!(
                "log {hex}: the checkpoint vouches for {target} rows, the pushed rows end at {}",
                new.size
            ),
            Some(new.size as i64 + 1),
            Some(target as i64),
        ));
    }
    if new.size == old.size {
        // Only checkpoints at (or below) the accepted size: nothing new.
        clear_inbox(tx, inbox, "checkpoints", log_id, old.size)?;
        clear_inbox(tx, inbox, "events", log_id, old.size)?;
        return Ok(Outcome::Nothing);
    }
    // Only the largest checkpoint is cosigned and logged: the one at new.size.
    let Some(checkpoint) = checkpoints
        .into_iter()
        .rev()
        .find(|(cp, _)| cp.size == new.size)
        .map(|(cp, note)| (cp.size, note))
    else {
        return Err(CentralError::Damaged {
            detail: format!("log {hex}: no checkpoint at the accepted size {}", new.size),
        });
    };
    // Re-sent rows below the old head are dropped with the rest.
    clear_inbox(tx, inbox, "events", log_id, old.size)?;
    Ok(Outcome::Accept {
        old,
        new,
        checkpoint,
    })
}
