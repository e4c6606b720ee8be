//! The audit store: one SQLite file of hash-chained events. It owns every
//! SQL string in gavel. It knows the record model (`audit`) and the chain
//! encoding (`chain`), and nothing of the CLI.
//!
//! Opening never modifies a file that is not a gavel database, or one from
//! a newer gavel: both are refused with a clear error.

mod append;
mod migrate;
mod query;
mod verify;

use std::fs::{DirBuilder, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::chain::Hash;

pub use query::{
    AnomalyEntry, AuditQuery, CallEntry, CallSummary, DecidedCall, Stats, StoredEvent, UNGOVERNED,
    UngovernedCall,
};
pub use verify::{CheckpointOutcome, Problem, VerifyOptions, VerifyReport};

/// Marks a SQLite file as gavel's (`PRAGMA application_id`, "gavl").
const APPLICATION_ID: i32 = 0x6761_766c;

/// Whether each commit waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Every write-ahead commit (request and decision, approval) is synced
    /// before anything runs (`synchronous = FULL`): survives power loss. A
    /// result is synced with the next commit, or when the database closes.
    #[default]
    Full,
    /// Commits reach the OS, not the disk (`synchronous = NORMAL` in WAL mode):
    /// survives a crash or kill of gavel, may lose the last commits on power loss.
    Normal,
}

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create `{path}`: {source}")]
    Create {
        path: String,
        source: std::io::Error,
    },
    #[error("audit database `{path}` does not exist")]
    Missing { path: String },
    #[error("cannot open audit database `{path}`: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("`{path}` is not a gavel audit database; refusing to touch it")]
    NotGavel { path: String },
    #[error(
        "`{path}` was written by a newer gavel (schema {found}, this gavel knows up to {supported}); refusing to touch it"
    )]
    Newer {
        path: String,
        found: i64,
        supported: i64,
    },
    #[error("audit database `{path}` is damaged: {detail}")]
    Damaged { path: String, detail: String },
    #[error("the system gave no randomness for a new log id: {detail}")]
    Randomness { detail: String },
    #[error("cannot sign a checkpoint: {detail}")]
    Sign { detail: String },
    #[error("audit database `{path}` has no log identity: its `log_meta` row was deleted")]
    IdentityMissing { path: String },
    #[error("call `{call_id}` is already recorded")]
    DuplicateCall { call_id: String },
    #[error("no call `{call_id}` in the record")]
    UnknownCall { call_id: String },
    #[error("{context}: {source}")]
    Sqlite {
        context: &'static str,
        source: rusqlite::Error,
    },
}

/// Refuses a file that is not a gavel database, or is one from a newer
/// gavel, by its 100-byte SQLite header alone, before SQLite opens it (a
/// SQLite connection to a WAL-mode file leaves `-wal`/`-shm` files beside
/// it). While a `-wal` file exists the header may be stale, so SQLite's own
/// view decides instead. An empty file is new when `may_be_new`.
fn check_header(path: &Path, may_be_new: bool) -> Result<(), StoreError> {
    let display = || path.display().to_string();
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if Path::new(&wal).exists() {
        return Ok(());
    }
    let mut header = Vec::with_capacity(100);
    let read = std::fs::File::open(path).and_then(|file| {
        std::io::Read::read_to_end(&mut std::io::Read::take(file, 100), &mut header)
    });
    if let Err(source) = read {
        return Err(StoreError::Create {
            path: display(),
            source,
        });
    }
    if header.is_empty() && may_be_new {
        return Ok(());
    }
    let field = |at: usize| {
        i32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    if header.len() < 100 || &header[..16] != b"SQLite format 3\0" {
        return Err(StoreError::NotGavel { path: display() });
    }
    if field(68) != APPLICATION_ID {
        // An empty SQLite database (no schema yet, offset 40) may be one another
        // gavel is creating right now; SQLite's view, under its locks, decides.
        let empty = field(40) == 0 && field(60) == 0 && field(68) == 0;
        if empty && may_be_new {
            return Ok(());
        }
        return Err(StoreError::NotGavel { path: display() });
    }
    let supported = migrate::MIGRATIONS.len() as i64;
    let found = i64::from(field(60));
    if found > supported {
        return Err(StoreError::Newer {
            path: display(),
            found,
            supported,
        });
    }
    Ok(())
}

/// Sets whether commits on `conn` wait for the disk.
fn set_synchronous(conn: &Connection, durability: Durability) -> Result<(), StoreError> {
    let sync = match durability {
        Durability::Full => "FULL",
        Durability::Normal => "NORMAL",
    };
    conn.pragma_update(None, "synchronous", sync)
        .map_err(sql("setting synchronous"))
}

/// Attaches what was being done to a rusqlite error.
pub(crate) fn sql(context: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
    move |source| StoreError::Sqlite { context, source }
}

/// The log's identity, fixed at creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogIdentity {
    pub log_id: Vec<u8>,
    pub origin: String,
    pub format: u32,
    pub created_us: i64,
    pub genesis: Hash,
}

/// An open audit database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    identity: LogIdentity,
    /// `None` for a read-only store.
    durability: Option<Durability>,
    /// Whether `synchronous` is lowered for a result-only batch right now.
    relaxed: bool,
}

impl Store {
    /// Opens `path` for appending, creating it (mode 0600, folder 0700) on first use.
    pub fn open(path: &Path, durability: Durability) -> Result<Self, StoreError> {
        let display = path.display().to_string();
        if let Some(dir) = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty() && !d.exists())
        {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| StoreError::Create {
                    path: dir.display().to_string(),
                    source,
                })?;
        }
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                check_header(path, true)?
            }
            Err(source) => {
                return Err(StoreError::Create {
                    path: display,
                    source,
                });
            }
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: display.clone(),
            source,
        })?;
        Self::prepare(conn, path, Some(durability))
    }

    /// Opens an existing database read-only: nothing can be written through it.
    pub fn open_read_only(path: &Path) -> Result<Self, StoreError> {
        let display = path.display().to_string();
        if !path.exists() {
            return Err(StoreError::Missing { path: display });
        }
        check_header(path, false)?;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: display,
            source,
        })?;
        Self::prepare(conn, path, None)
    }

    /// A fresh database in memory, for tests and embedding.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(|source| StoreError::Open {
            path: ":memory:".into(),
            source,
        })?;
        Self::prepare(conn, Path::new(":memory:"), Some(Durability::Normal))
    }

    /// Checks the file is ours, migrates it (when writable) and reads the identity.
    fn prepare(
        conn: Connection,
        path: &Path,
        writable: Option<Durability>,
    ) -> Result<Self, StoreError> {
        let display = path.display().to_string();
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(sql("setting the busy timeout"))?;
        // Reading through a memory map saves a copy per page on long scans.
        conn.pragma_update(None, "mmap_size", 1i64 << 30)
            .map_err(sql("setting mmap_size"))?;
        let state = migrate::inspect(&conn, &display)?;
        if let Some(durability) = writable {
            migrate::apply(&conn, &display, state)?;
            // Each checkpoint waits for the disk twice; a long-lived writer
            // (`serve`) lets the WAL grow to ~40 MB between them rather than
            // SQLite's default ~4 MB. The last connection to close still
            // checkpoints, so an idle database is one self-contained file
            // that can be copied and handed to an auditor.
            conn.pragma_update(None, "wal_autocheckpoint", 10_000)
                .map_err(sql("configuring checkpoints"))?;
            set_synchronous(&conn, durability)?;
        } else if state == migrate::State::Fresh {
            return Err(StoreError::NotGavel { path: display });
        }
        let identity = migrate::identity(&conn, &display)?;
        Ok(Self {
            conn,
            path: path.to_owned(),
            identity,
            durability: writable,
            relaxed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn identity(&self) -> &LogIdentity {
        &self.identity
    }
}

#[cfg(test)]
mod tests;
