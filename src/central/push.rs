//! The host side: `gavel push`. Ships a local log's rows that the central
//! store has not accepted yet, with a checkpoint signed by the host's key,
//! into the host's inbox, in one transaction; then keeps the cosignatures
//! it can read in `<db>.cosigned`.
//!
//! The host role can do nothing but insert into and read its own inbox
//! tables and read its `heads` and `refusals` views; which inbox is its own
//! is found by that privilege, so the push URL needs no schema.

use std::io::{Read as _, Write as _};
use std::path::Path;

use postgres::Client;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};

use crate::checkpoint::{SigningKey, VerifierKey};
use crate::store::{Store, StoredEvent};

use super::{CentralError, ident, now_us, open_client, sql};

/// A host's inbox, found by what its role may write.
#[derive(Debug, Clone)]
pub struct Inbox {
    /// The inbox schema.
    pub schema: String,
    /// The enrolled host name.
    pub host: String,
}

impl Inbox {
    /// The quoted name of the host's inbox table `suffix` (`events`, `heads`, ...).
    pub fn table(&self, suffix: &str) -> String {
        format!(
            "{}.{}",
            ident(&self.schema),
            ident(&format!("{}_{suffix}", self.host))
        )
    }
}

/// The inbox this connection's role may insert into: exactly one.
pub fn find_inbox(client: &mut Client) -> Result<Inbox, CentralError> {
    let rows = client
        .query(
            "SELECT n.nspname::text, left(c.relname::text, length(c.relname::text) - 7)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE c.relkind = 'r' AND c.relname LIKE '%\\_events'
               AND (n.nspname = 'gavel_inbox' OR n.nspname LIKE '%\\_inbox')
               AND has_schema_privilege(n.oid, 'USAGE')
               AND has_table_privilege(c.oid, 'INSERT')
             ORDER BY 1, 2",
            &[],
        )
        .map_err(sql("looking for this host's inbox"))?;
    match rows.as_slice() {
        [row] => Ok(Inbox {
            schema: row.get(0),
            host: row.get(1),
        }),
        [] => Err(CentralError::Push {
            detail: "this database role may write to no gavel inbox: push as the role `gavel central enroll` printed".into(),
        }),
        many => Err(CentralError::Push {
            detail: format!(
                "this database role may write to {} gavel inboxes ({}); push as a host's own role, not as an owner",
                many.len(),
                many.iter()
                    .map(|r| format!("{}.{}", r.get::<_, String>(0), r.get::<_, String>(1)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// What the central store said of a log, as the host may read it.
#[derive(Debug, Clone, Default)]
pub struct CentralHead {
    /// Rows accepted.
    pub size: u64,
    /// The chain value after them.
    pub chain: Option<Vec<u8>>,
    /// The newest accepted checkpoint: its size, note and cosignature line.
    pub cosigned: Option<(u64, String, String)>,
}

/// Reads the central head of `log_id` from the host's `heads` view.
pub fn read_head(
    client: &mut Client,
    inbox: &Inbox,
    log_id: &[u8],
) -> Result<CentralHead, CentralError> {
    let row = client
        .query_opt(
            &format!(
                "SELECT size, chain, cosigned_size, note, cosignature FROM {} WHERE log_id = $1",
                inbox.table("heads")
            ),
            &[&log_id],
        )
        .map_err(sql("reading the central head"))?;
    let Some(row) = row else {
        return Ok(CentralHead::default());
    };
    let size: i64 = row.get(0);
    let cosigned = match (
        row.get::<_, Option<i64>>(2),
        row.get::<_, Option<String>>(3),
        row.get::<_, Option<String>>(4),
    ) {
        (Some(size), Some(note), Some(cosignature)) => {
            Some((size.max(0) as u64, note, cosignature))
        }
        _ => None,
    };
    Ok(CentralHead {
        size: size.max(0) as u64,
        chain: row.get(1),
        cosigned,
    })
}

/// The newest refusal id the host can see (0 when none).
pub fn last_refusal_id(client: &mut Client, inbox: &Inbox) -> Result<i64, CentralError> {
    client
        .query_one(
            &format!(
                "SELECT coalesce(max(id), 0) FROM {}",
                inbox.table("refusals")
            ),
            &[],
        )
        .map_err(sql("reading refusals"))
        .map(|r| r.get(0))
}

/// A refusal as the host sees it.
#[derive(Debug, Clone)]
pub struct HostRefusal {
    pub id: i64,
    pub problem: String,
    pub detail: String,
    pub first_seq: Option<i64>,
}

impl std::fmt::Display for HostRefusal {
    /// `rewritten at seq 5: …`: the problem, the first seq it names, the sentence.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.problem)?;
        if let Some(seq) = self.first_seq {
            write!(f, " at seq {seq}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// The newest refusal of `log_id` that still stands: the central store
/// holds fewer rows of the log than the refused batch reached (a refusal
/// of rows it accepted since is over).
pub fn standing_refusal(
    client: &mut Client,
    inbox: &Inbox,
    log_id: &[u8],
    accepted: u64,
) -> Result<Option<HostRefusal>, CentralError> {
    let row = client
        .query_opt(
            &format!(
                "SELECT id, problem, detail, first_seq FROM {}
                  WHERE log_id = $1 AND (last_seq IS NULL OR last_seq > $2)
                  ORDER BY id DESC LIMIT 1",
                inbox.table("refusals")
            ),
            &[&log_id, &(accepted as i64)],
        )
        .map_err(sql("reading refusals"))?;
    Ok(row.map(|row| HostRefusal {
        id: row.get(0),
        problem: row.get(1),
        detail: row.get(2),
        first_seq: row.get(3),
    }))
}

/// What one push did.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The enrolled host name.
    pub host: String,
    pub log_id: Vec<u8>,
    /// Rows in the local log.
    pub local_size: u64,
    /// Rows the central store had accepted before this push.
    pub acked: u64,
    /// Rows sent now, and the first seq sent.
    pub sent: u64,
    pub first_sent: u64,
    /// The checkpoint sent now (its size), if one was.
    pub checkpoint: Option<u64>,
    /// Whether a new checkpoint was signed for it.
    pub signed: bool,
    /// Whether the local log disagrees with what the central store accepted
    /// (rewritten or truncated since): everything was sent again, for the
    /// central side to name where.
    pub diverged: bool,
    /// Cosignatures newly written to `<db>.cosigned`.
    pub cosigned: usize,
    /// The newest refusal id before this push (for `--wait`).
    pub refusals_before: i64,
    /// The newest refusal of this log that still stands (the central store
    /// has not accepted the rows it refused since), as it was before this push.
    pub standing: Option<HostRefusal>,
}

pub use crate::receipt::cosigned_path;

/// Pushes the local log behind `store` to the central store at `url`.
/// `central`, when given, is the central verifier key cosignatures must
/// verify with; else the key the central store states is used.
pub fn push(
    store: &mut Store,
    url: &str,
    key: &SigningKey,
    central: Option<&VerifierKey>,
) -> Result<Pushed, CentralError> {
    let (mut client, _) = open_client(url)?;
    push_with(store, &mut client, key, central)
}

/// [`push`] over an open connection.
pub fn push_with(
    store: &mut Store,
    client: &mut Client,
    key: &SigningKey,
    central: Option<&VerifierKey>,
) -> Result<Pushed, CentralError> {
    let inbox = find_inbox(client)?;
    let identity = store.identity().clone();
    let log_id = identity.log_id.clone();
    let head = read_head(client, &inbox, &log_id)?;
    let refusals_before = last_refusal_id(client, &inbox)?;
    let standing = standing_refusal(client, &inbox, &log_id, head.size)?;
    let central = match central {
        Some(key) => key.clone(),
        None => read_central_verifier(client, &inbox)?,
    };
    let cosigned = keep_cosignatures(
        client,
        &inbox,
        store.path(),
        &log_id,
        &key.verifier(),
        &central,
    )?;
    let local_size = store.last_seq()?;

    // Does the local log still hold what the central store accepted?
    let diverged = head.size > 0
        && (head.size > local_size
            || store.chain_at(head.size)?.as_deref() != head.chain.as_deref());

    let waiting: Option<i64> = client
        .query_one(
            &format!(
                "SELECT max(seq) FROM {} WHERE log_id = $1",
                inbox.table("events")
            ),
            &[&log_id],
        )
        .map_err(sql("reading the inbox"))?
        .get(0);
    let waiting = waiting.map(|w| w.max(0) as u64);
    let first = match waiting {
        Some(w) => w + 1,
        None if diverged => 1,
        None => head.size + 1,
    };

    // The checkpoint: the newest stored one when it covers the log and is
    // this key's, else a fresh one (which verifies the whole log first).
    let newest = store.checkpoint_rows()?.into_iter().next_back();
    let usable = newest.filter(|c| {
        c.size as u64 == local_size && crate::checkpoint::open(&c.note, &key.verifier()).is_ok()
    });
    let already: Option<i64> = client
        .query_one(
            &format!(
                "SELECT max(size) FROM {} WHERE log_id = $1",
                inbox.table("checkpoints")
            ),
            &[&log_id],
        )
        .map_err(sql("reading the inbox"))?
        .get(0);
    let covered =
        already.is_some_and(|s| s as u64 >= local_size) || (!diverged && head.size >= local_size);
    let mut signed = false;
    if !diverged && head.size > 0 && first > local_size && covered {
        // Nothing to send: the rows the central store accepted must still
        // be this log's (an edit that kept the chain column is found only
        // by hashing the rows again).
        let report = store.verify(&crate::store::VerifyOptions::default(), &mut |_| {})?;
        if !report.ok {
            let seq = report.first_bad_seq.unwrap_or(0);
            return Err(CentralError::Push {
                detail: format!(
                    "the local log diverges from what the central store holds: it does not verify ({} at seq {seq}){}; not pushing it",
                    report.problem.map_or("unknown", |p| p.as_str()),
                    if seq <= head.size {
                        format!(
                            ", a row the central store accepted (it holds {} rows)",
                            head.size
                        )
                    } else {
                        String::new()
                    }
                ),
            });
        }
    }
    let note = if covered || local_size == 0 {
        None
    } else if let Some(c) = usable {
        Some((local_size, c.note))
    } else {
        match store.checkpoint(key)? {
            Ok((cp, note)) => {
                signed = true;
                Some((cp.size, note))
            }
            Err(report) => {
                return Err(CentralError::Push {
                    detail: format!(
                        "the local log does not verify ({} at seq {}): not pushing it",
                        report.problem.map_or("unknown", |p| p.as_str()),
                        report.first_bad_seq.unwrap_or(0)
                    ),
                });
            }
        }
    };

    let mut tx = client.transaction().map_err(sql("starting the push"))?;
    tx.execute(
        &format!(
            "INSERT INTO {} (log_id, origin, format, created_us, genesis)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (log_id) DO NOTHING",
            inbox.table("logs")
        ),
        &[
            &log_id,
            &identity.origin,
            &(identity.format as i32),
            &identity.created_us,
            &&identity.genesis[..],
        ],
    )
    .map_err(sql("sending the log's identity"))?;
    let mut sent = 0u64;
    if first <= local_size {
        let sink = tx
            .copy_in(&format!(
                "COPY {} ({}) FROM STDIN (FORMAT binary)",
                inbox.table("events"),
                super::ROW_COLUMNS
            ))
            .map_err(sql("starting the copy"))?;
        let mut writer = BinaryCopyInWriter::new(sink, &COPY_TYPES);
        store.for_each_event_from(first, |event: StoredEvent| {
            let seq = event.seq as i64;
            let values: [&(dyn ToSql + Sync); 18] = [
                &event.log_id,
                &seq,
                &event.ts_us,
                &event.kind,
                &event.call_id,
                &event.tool,
                &event.action,
                &event.rule_id,
                &event.approval,
                &event.status,
                &event.user,
                &event.host,
                &event.client,
                &event.session,
                &event.agent,
                &event.payload,
                &event.leaf,
                &event.chain,
            ];
            writer.write(&values).map_err(sql("sending rows"))?;
            sent += 1;
            Ok::<(), CentralError>(())
        })?;
        writer.finish().map_err(sql("finishing the copy"))?;
    }
    for policy in store.policy_rows()? {
        tx.execute(
            &format!(
                "INSERT INTO {} (digest, name, source, first_seen_us) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (digest) DO NOTHING",
                inbox.table("policies")
            ),
            &[
                &policy.digest,
                &policy.name,
                &policy.source,
                &policy.first_seen_us,
            ],
        )
        .map_err(sql("sending policies"))?;
    }
    if let Some((size, note)) = &note {
        tx.execute(
            &format!(
                "INSERT INTO {} (log_id, size, note, pushed_us) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (log_id, size) DO NOTHING",
                inbox.table("checkpoints")
            ),
            &[&log_id, &(*size as i64), note, &now_us()],
        )
        .map_err(sql("sending the checkpoint"))?;
    }
    tx.commit().map_err(sql("committing the push"))?;
    Ok(Pushed {
        host: inbox.host,
        log_id,
        local_size,
        acked: head.size,
        sent,
        first_sent: first,
        checkpoint: note.map(|(size, _)| size),
        signed,
        diverged,
        cosigned,
        refusals_before,
        standing,
    })
}

/// The column types of [`super::ROW_COLUMNS`], for binary COPY.
const COPY_TYPES: [Type; 18] = [
    Type::BYTEA,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::BYTEA,
    Type::BYTEA,
    Type::BYTEA,
];

/// One cosigned checkpoint of a log, as the host's `cosigned` view shows it.
#[derive(Debug, Clone)]
pub struct Cosigned {
    /// Its id in the central `checkpoints` table (ascending).
    pub id: i64,
    pub size: u64,
    pub note: String,
    pub cosignature: String,
}

/// Every cosigned checkpoint of `log_id` with an id above `after`, in order.
pub fn read_cosigned(
    client: &mut Client,
    inbox: &Inbox,
    log_id: &[u8],
    after: i64,
) -> Result<Vec<Cosigned>, CentralError> {
    let rows = client
        .query(
            &format!(
                "SELECT id, size, note, cosignature FROM {} WHERE log_id = $1 AND id > $2 ORDER BY id",
                inbox.table("cosigned")
            ),
            &[&log_id, &after],
        )
        .map_err(sql("reading cosigned checkpoints"))?;
    Ok(rows
        .iter()
        .map(|row| Cosigned {
            id: row.get(0),
            size: row.get::<_, i64>(1).max(0) as u64,
            note: row.get(2),
            cosignature: row.get(3),
        })
        .collect())
}

/// The central verifier key as the central store states it (its `central` view).
pub fn read_central_verifier(
    client: &mut Client,
    inbox: &Inbox,
) -> Result<VerifierKey, CentralError> {
    let text: String = client
        .query_one(
            &format!("SELECT verifier FROM {}", inbox.table("central")),
            &[],
        )
        .map_err(sql("reading the central key"))?
        .get(0);
    Ok(VerifierKey::from_text(&text)?)
}

/// Stores in `<db>.cosigned` every cosigned checkpoint of this log that the
/// central store shows and the file does not hold yet, one JSON line each
/// (`id`, `log_id`, `size`, `note`, `cosignature`). Each cosignature must
/// verify with `central` over its note, and the note with this host's key,
/// before it is written: a bad one is refused and nothing is written. The
/// file is locked (`flock`) while read and appended, each line goes out
/// whole in one write, a partial last line (a crash) is cut off, and the
/// file is synced. Returns how many lines were written.
pub fn keep_cosignatures(
    client: &mut Client,
    inbox: &Inbox,
    db: &Path,
    log_id: &[u8],
    host: &VerifierKey,
    central: &VerifierKey,
) -> Result<usize, CentralError> {
    let path = cosigned_path(db);
    let io = |e: std::io::Error| CentralError::Push {
        detail: format!("cannot write `{}`: {e}", path.display()),
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(&path)
        .map_err(io)?;
    let _lock = Flock::exclusive(&file).map_err(io)?;
    let mut text = String::new();
    (&file).read_to_string(&mut text).map_err(io)?;
    if !text.is_empty() && !text.ends_with('\n') {
        // A line cut short by a crash: drop it (it is fetched again below).
        let keep = text.rfind('\n').map_or(0, |at| at + 1);
        file.set_len(keep as u64).map_err(io)?;
        text.truncate(keep);
    }
    let hex = crate::digest::hex(log_id);
    let after = text
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|v| v.get("log_id").and_then(|l| l.as_str()) == Some(hex.as_str()))
        .filter_map(|v| v.get("id").and_then(serde_json::Value::as_i64))
        .max()
        .unwrap_or(0);
    let fresh = read_cosigned(client, inbox, log_id, after)?;
    let mut out = String::new();
    for c in &fresh {
        let bad = |why: String| CentralError::Push {
            detail: format!(
                "the central store's cosignature of the checkpoint at size {} of log {hex} {why}: not storing it in `{}`",
                c.size,
                path.display()
            ),
        };
        crate::checkpoint::open(&c.note, host).map_err(|e| {
            bad(format!(
                "is over a note this host's key does not verify ({e})"
            ))
        })?;
        let body = super::cosign::note_body(&c.note)
            .ok_or_else(|| bad("is over a malformed note".into()))?;
        super::cosign::verify(central, body, &c.cosignature).map_err(|e| {
            bad(format!(
                "does not verify with the central key `{}` ({e})",
                central.to_text()
            ))
        })?;
        let line = serde_json::json!({
            "id": c.id,
            "log_id": hex,
            "size": c.size,
            "note": c.note,
            "cosignature": c.cosignature,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    if !out.is_empty() {
        (&file).write_all(out.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
    }
    Ok(fresh.len())
}

/// An exclusive `flock` on a file, released on drop.
struct Flock<'a>(&'a std::fs::File);

impl<'a> Flock<'a> {
    #[cfg(unix)]
    fn exclusive(file: &'a std::fs::File) -> std::io::Result<Self> {
        use std::os::fd::AsRawFd as _;
        // SAFETY: flock on a file descriptor this function borrows for the lock's life.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self(file))
    }

    #[cfg(not(unix))]
    fn exclusive(file: &'a std::fs::File) -> std::io::Result<Self> {
        Ok(Self(file))
    }
}

impl Drop for Flock<'_> {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd as _;
            // SAFETY: as above; unlocking cannot fail in a way worth reporting.
            unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
        }
    }
}

/// Waits until the central store accepted the log up to `size` or refused
/// something after `refusals_before`; polls every 200 ms, gives up at
/// `deadline` (naming the refusal of this log that still stands, if one
/// does). A `diverged` log is never accepted (the central side refuses a
/// rewritten or truncated log): only its refusal ends the wait.
pub fn wait_for(
    client: &mut Client,
    log_id: &[u8],
    size: u64,
    refusals_before: i64,
    diverged: bool,
    deadline: std::time::Instant,
) -> Result<Result<CentralHead, HostRefusal>, CentralError> {
    let inbox = find_inbox(client)?;
    loop {
        let rows = client
            .query(
                &format!(
                    "SELECT id, problem, detail, first_seq FROM {}
                     WHERE id > $1 AND (log_id = $2 OR log_id IS NULL) ORDER BY id LIMIT 1",
                    inbox.table("refusals")
                ),
                &[&refusals_before, &log_id],
            )
            .map_err(sql("reading refusals"))?;
        if let Some(row) = rows.first() {
            return Ok(Err(HostRefusal {
                id: row.get(0),
                problem: row.get(1),
                detail: row.get(2),
                first_seq: row.get(3),
            }));
        }
        let head = read_head(client, &inbox, log_id)?;
        if !diverged && head.size >= size && head.cosigned.as_ref().is_some_and(|c| c.0 >= size) {
            return Ok(Ok(head));
        }
        if std::time::Instant::now() >= deadline {
            let standing = standing_refusal(client, &inbox, log_id, head.size)?;
            return Err(CentralError::Push {
                detail: format!(
                    "the central store has not ingested the push yet (it holds {} of {size} rows){}",
                    head.size,
                    match standing {
                        Some(refusal) => format!(
                            "; it refused an earlier push of this log and has accepted nothing of it since: {refusal}"
                        ),
                        None => String::new(),
                    }
                ),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
