//! Schema migrations: plain `.sql` files from `migrations/`, applied in
//! order at open and tracked with `PRAGMA user_version`. A new database also
//! gets its log identity here, in the same transaction.

use rusqlite::{Connection, ErrorCode};

use super::{APPLICATION_ID, LogIdentity, StoreError, sql};
use crate::chain::{FORMAT_VERSION, genesis, known_format};

/// Every migration, in order; the schema version is the count applied.
pub(super) const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/0001_init.sql"),
    include_str!("../../migrations/0002_no_replace.sql"),
    include_str!("../../migrations/0003_anomaly_index.sql"),
    include_str!("../../migrations/0004_provenance.sql"),
    include_str!("../../migrations/0005_checkpoint_frontier.sql"),
    include_str!("../../migrations/0006_merkle_blocks.sql"),
    include_str!("../../migrations/0007_session_labels.sql"),
    include_str!("../../migrations/0008_totp_steps.sql"),
];

/// The schema version that added the provenance columns (format 2).
pub(super) const PROVENANCE_SCHEMA: i64 = 4;

/// What an opened file turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// An empty file: gavel may initialize it.
    Fresh,
    /// A gavel database at this schema version.
    Gavel(i64),
}

/// Looks at a file without changing it.
pub(super) fn inspect(conn: &Connection, path: &str) -> Result<State, StoreError> {
    let not_gavel = || StoreError::NotGavel {
        path: path.to_owned(),
    };
    // One statement, one snapshot: another process may be migrating the same
    // new file right now, and a torn read would look like a foreign file.
    let (application_id, version, objects): (i64, i64, i64) = conn
        .query_row(
            "SELECT (SELECT application_id FROM pragma_application_id),
                    (SELECT user_version FROM pragma_user_version),
                    (SELECT count(*) FROM sqlite_master)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .map_err(|err| open_error(err, path))?;
    if application_id == 0 && version == 0 && objects == 0 {
        return Ok(State::Fresh);
    }
    if application_id != i64::from(APPLICATION_ID) {
        return Err(not_gavel());
    }
    let supported = MIGRATIONS.len() as i64;
    if version > supported {
        return Err(StoreError::Newer {
            path: path.to_owned(),
            found: version,
            supported,
        });
    }
    Ok(State::Gavel(version))
}

/// What a failed first read of a file says about it.
pub(super) fn open_error(err: rusqlite::Error, path: &str) -> StoreError {
    match err.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => StoreError::NotGavel {
            path: path.to_owned(),
        },
        _ => StoreError::Open {
            path: path.to_owned(),
            source: err,
        },
    }
}

/// Brings a fresh or older database up to date.
pub(super) fn apply(conn: &Connection, path: &str, state: State) -> Result<(), StoreError> {
    let from = match state {
        State::Fresh => 0,
        State::Gavel(version) => version,
    };
    // Every writer opens the log in WAL mode, a new one and one switched
    // to another journal mode (`sqlite3` loading a dump, `PRAGMA
    // journal_mode=delete`): in a rollback journal a reader's lock blocks
    // the writer, and the call that asks someone (which reads its pending
    // row on a second connection while the first appends) waited 30 s and
    // recorded nothing.
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .map_err(sql("reading the journal mode"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        enable_wal(conn, path)?;
    }
    if from == MIGRATIONS.len() as i64 {
        return Ok(());
    }
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(sql("starting a migration"))?;
    let result = (|| {
        // Another process may have migrated while we waited for the lock.
        let current: i64 = conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(sql("reading the schema version"))?;
        for (index, migration) in MIGRATIONS.iter().enumerate().skip(current as usize) {
            conn.execute_batch(migration)
                .map_err(|source| StoreError::Damaged {
                    path: path.to_owned(),
                    detail: format!("migration {} failed: {source}", index + 1),
                })?;
        }
        if current == 0 {
            create_identity(conn)?;
            conn.pragma_update(None, "application_id", APPLICATION_ID)
                .map_err(sql("marking the database"))?;
        }
        conn.pragma_update(None, "user_version", MIGRATIONS.len() as i64)
            .map_err(sql("recording the schema version"))?;
        Ok(())
    })();
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    conn.execute_batch(end).map_err(sql("ending a migration"))?;
    result
}

/// Switches a database to WAL, which lets readers run while one writer
/// appends. Another gavel creating the same file at the same moment may hold
/// the lock this needs (SQLite does not wait for it here), so this retries
/// until the file is in WAL mode, by either of them.
fn enable_wal(conn: &Connection, path: &str) -> Result<(), StoreError> {
    let mut attempts = 0;
    loop {
        let mode: Result<String, _> =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0));
        match mode {
            // An in-memory database has no WAL, and needs none.
            Ok(mode) if mode.eq_ignore_ascii_case("wal") || mode.eq_ignore_ascii_case("memory") => {
                return Ok(());
            }
            Err(err)
                if err.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) && attempts < 3000 =>
            {
                attempts += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Ok(other) => {
                return Err(StoreError::Damaged {
                    path: path.to_owned(),
                    detail: format!("cannot switch to WAL (journal mode stays `{other}`)"),
                });
            }
            Err(err) => return Err(sql("enabling WAL")(err)),
        }
    }
}

fn create_identity(conn: &Connection) -> Result<(), StoreError> {
    let mut log_id = [0u8; 16];
    getrandom::fill(&mut log_id).map_err(|err| StoreError::Randomness {
        detail: err.to_string(),
    })?;
    let origin = format!("gavel/{}", crate::digest::hex(&log_id));
    let genesis = genesis(&log_id, &origin, FORMAT_VERSION);
    conn.execute(
        "INSERT INTO log_meta (id, log_id, origin, format, created_us, genesis)
         VALUES (1, ?1, ?2, ?3, ?4, ?5)",
        rusqlite::params![
            &log_id[..],
            origin,
            FORMAT_VERSION,
            chrono::Utc::now().timestamp_micros(),
            &genesis[..]
        ],
    )
    .map_err(sql("creating the log identity"))?;
    Ok(())
}

/// Reads the log identity; a gavel database without one, or with one whose
/// columns are not of their documented types, has been tampered with. A
/// record format this gavel does not know is refused.
pub(super) fn identity(conn: &Connection, path: &str) -> Result<LogIdentity, StoreError> {
    use rusqlite::types::ValueRef;
    let malformed = |detail: String| StoreError::IdentityMalformed {
        path: path.to_owned(),
        detail,
    };
    let mut statement = conn
        .prepare("SELECT id, log_id, origin, format, created_us, genesis FROM log_meta")
        .map_err(|e| malformed(format!("cannot read the log identity: {e}")))?;
    let mut rows = statement
        .query([])
        .map_err(|e| malformed(format!("cannot read the log identity: {e}")))?;
    let read = |e: rusqlite::Error| malformed(format!("cannot read the log identity: {e}"));
    let Some(row) = rows.next().map_err(read)? else {
        return Err(StoreError::IdentityMissing {
            path: path.to_owned(),
        });
    };
    let column = |i: usize| row.get_ref(i).map_err(read);
    let (
        ValueRef::Integer(1),
        ValueRef::Blob(log_id),
        ValueRef::Text(origin),
        ValueRef::Integer(format),
        ValueRef::Integer(created_us),
        ValueRef::Blob(genesis),
    ) = (
        column(0)?,
        column(1)?,
        column(2)?,
        column(3)?,
        column(4)?,
        column(5)?,
    )
    else {
        return Err(malformed(
            "a column of `log_meta` is not of its documented type, or its id is not 1".into(),
        ));
    };
    let origin = std::str::from_utf8(origin)
        .map_err(|_| malformed("the origin is not UTF-8".into()))?
        .to_owned();
    let genesis: [u8; 32] = genesis
        .try_into()
        .map_err(|_| malformed("the genesis hash is not 32 bytes".into()))?;
    let log_id = log_id.to_vec();
    if rows.next().map_err(read)?.is_some() {
        return Err(malformed("`log_meta` holds more than one row".into()));
    }
    if !known_format(format) {
        return Err(StoreError::UnknownFormat {
            path: path.to_owned(),
            found: format,
            known: FORMAT_VERSION,
        });
    }
    Ok(LogIdentity {
        log_id,
        origin,
        format: format as u32,
        created_us,
        genesis,
    })
}
