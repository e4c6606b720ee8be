//! The audit store: one SQLite file of hash-chained events. It owns every
//! SQL string in gavel. It knows the record model (`audit`) and the chain
//! encoding (`chain`), and nothing of the CLI.
//!
//! Opening never modifies a file that is not a gavel database, an empty
//! file, or one from a newer gavel or with an unknown record format: all
//! are refused with a clear error. A new database is created whole under a
//! temporary name and linked into place. Read-only opens never write, never
//! migrate and never make `-wal`/`-shm` files for a complete (idle) file.

mod append;
mod history;
mod migrate;
mod mirror;
mod query;
mod queue;
mod receipt;
mod ship;
mod verify;
mod wal;

use std::fs::{DirBuilder, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use crate::chain::Hash;

pub use append::ClientKey;
pub use mirror::CheckpointCopy;
pub use query::{
    AnomalyEntry, AuditQuery, CallEntry, CallSummary, DecidedCall, LifecycleEntry, Listed, Scanned,
    Stats, StoredEvent, UNGOVERNED, UngovernedCall,
};
#[cfg(feature = "postgres")]
pub(crate) use query::{RawCall, assemble};
pub use receipt::{BLOCK_LEVEL, LeafData, StoredNote};
pub use ship::PolicyRow;
pub(crate) use verify::{Checker, Notes, RowCheck, StoredCheckpoint, check_notes, switch_of};
pub use verify::{
    CheckpointOutcome, CheckpointRow, GivenCheckpoint, PolicyText, Problem, VerifyOptions,
    VerifyReport,
};

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
    #[error("cannot read or create the redaction key `{path}`: {source}")]
    RedactKey {
        path: String,
        source: std::io::Error,
    },
    #[error("the redaction key `{path}` is malformed: it must hold 64 hex digits")]
    RedactKeyMalformed { path: String },
    #[error("cannot sign a checkpoint: {detail}")]
    Sign { detail: String },
    #[error("audit database `{path}` has no log identity: its `log_meta` row was deleted")]
    IdentityMissing { path: String },
    #[error("audit database `{path}` has a malformed log identity: {detail}")]
    IdentityMalformed { path: String, detail: String },
    #[error(
        "audit database `{path}` says record format {found}, which this gavel does not know (it knows 1 to {known}); refusing to read or append to it"
    )]
    UnknownFormat {
        path: String,
        found: i64,
        known: u32,
    },
    #[error("`{path}` is an empty file, not a gavel audit database; refusing to touch it")]
    Empty { path: String },
    #[error(
        "cannot read audit database `{path}` read-only: it has a write-ahead log (`{path}-wal`) whose shared-memory index (`{path}-shm`) this user cannot create or use ({detail}); let its owner run any gavel command that writes, which folds the log in, or copy the files to a folder you can write"
    )]
    WalUnreadable { path: String, detail: String },
    #[error(
        "`{path}` has mode {mode:04o}, readable or writable by others, and cannot be tightened: {source}"
    )]
    LooseMode {
        path: String,
        mode: u32,
        source: std::io::Error,
    },
    #[error("call id `{call_id}` was already used; each call needs its own id")]
    DuplicateCall { call_id: String },
    #[error("no call `{call_id}` in the record")]
    UnknownCall { call_id: String },
    #[error("{name}'s code of time step {step} was already used; wait for the next code")]
    CodeReused { name: String, step: u64 },
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
/// view decides instead. An empty file is refused: gavel creates a new
/// database whole, under a temporary name, so a log of zero bytes is a cut
/// one or a stranger's, never one in the making.
fn check_header(path: &Path) -> Result<(), StoreError> {
    let display = || path.display().to_string();
    if sibling(path, "-wal").exists() {
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
    if header.is_empty() {
        return Err(StoreError::Empty { path: display() });
    }
    let field = |at: usize| {
        i32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    if header.len() < 100 || &header[..16] != b"SQLite format 3\0" || field(68) != APPLICATION_ID {
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

/// `path` with `suffix` appended to its last part (`audit.db` -> `audit.db-wal`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The path of the redaction key of the database at `path` (`audit.db.redact-key`).
pub fn redact_key_path(path: &Path) -> PathBuf {
    sibling(path, ".redact-key")
}

/// Where older gavels kept the key they signed a log's automatic
/// checkpoints with: beside the database (`audit.db.checkpoint-key`), where
/// whoever can rewrite the log can also re-sign it. Still used when found.
pub fn checkpoint_key_beside(path: &Path) -> PathBuf {
    sibling(path, ".checkpoint-key")
}

/// The folder of the user's checkpoint keys: `$XDG_DATA_HOME/gavel/keys`,
/// else `$HOME/.local/share/gavel/keys` (an unset, empty or relative
/// variable is not used); `None` without either.
pub fn user_keys_dir() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("XDG_DATA_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local/share")))
        .map(|data| data.join("gavel/keys"))
}

/// The key gavel signs the automatic checkpoints of the log at `path`
/// (whose id is `log_id`) with, and its `.pub` beside it: one key per log,
/// `<user keys>/<log id>.checkpoint-key` ([`user_keys_dir`]), outside the
/// workspace, so that an agent that can rewrite the log cannot re-sign it.
/// A key an older gavel left beside the database is used while it is there
/// (`gavel doctor` says to move it). Without a home folder, beside the
/// database.
pub fn checkpoint_key_path(path: &Path, log_id: &[u8]) -> PathBuf {
    let beside = checkpoint_key_beside(path);
    if std::fs::symlink_metadata(&beside).is_ok() {
        return beside;
    }
    match user_keys_dir() {
        Some(dir) => dir.join(format!("{}.checkpoint-key", crate::digest::hex(log_id))),
        None => beside,
    }
}

/// Creates the folder of `key` (and any missing parent) owner-only (0700),
/// and tightens it to 0700 when it exists with wider modes.
pub fn prepare_key_dir(key: &Path) -> std::io::Result<()> {
    let Some(dir) = key.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let meta = std::fs::metadata(dir)?;
    if meta.permissions().mode() & 0o077 != 0 && user_keys_dir().is_some_and(|d| d == dir) {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

fn random_key() -> Result<[u8; 32], StoreError> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|err| StoreError::Randomness {
        detail: err.to_string(),
    })?;
    Ok(key)
}

/// Reads the redaction key kept beside the database at `path`, creating it
/// (mode 0600, 32 random bytes as hex) on first use. It is never part of the
/// chain: without it a redaction tag cannot be linked to a guessed secret.
fn redact_key(path: &Path) -> Result<[u8; 32], StoreError> {
    use std::io::Write;
    let key_path = redact_key_path(path);
    let display = key_path.display().to_string();
    let io = |source| StoreError::RedactKey {
        path: display.clone(),
        source,
    };
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&key_path)
    {
        Ok(mut file) => {
            let key = random_key()?;
            file.write_all(crate::digest::hex(&key).as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(io)?;
            return Ok(key);
        }
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(io(err)),
    }
    // Another gavel may be writing it right now: a short file is retried.
    for _ in 0..50 {
        let text = std::fs::read_to_string(&key_path).map_err(io)?;
        if let Some(key) =
            crate::digest::unhex(text.trim()).and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        {
            return Ok(key);
        }
        if text.trim().len() >= 64 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(StoreError::RedactKeyMalformed { path: display })
}

/// Creates a new gavel database at `path`, whole: it is initialized under a
/// temporary name in the same folder and linked into place only when
/// complete, so no reader or writer ever sees a half-made log there. When
/// another gavel wins the race, its database is used.
fn create_whole(path: &Path) -> Result<(), StoreError> {
    let display = path.display().to_string();
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|err| StoreError::Randomness {
        detail: err.to_string(),
    })?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.new-{}", crate::digest::hex(&nonce)));
    let cleanup = |temp: &Path| {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let _ = std::fs::remove_file(sibling(temp, suffix));
        }
    };
    let made = (|| {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .map_err(|source| StoreError::Create {
                path: temp.display().to_string(),
                source,
            })?;
        let conn = Connection::open_with_flags(
            &temp,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: display.clone(),
            source,
        })?;
        migrate::apply(&conn, &display, migrate::State::Fresh)?;
        // Closing the only connection folds the WAL into the file and removes it.
        conn.close().map_err(|(_, source)| StoreError::Open {
            path: display.clone(),
            source,
        })?;
        match std::fs::hard_link(&temp, path) {
            Ok(()) => Ok(()),
            // Another gavel created it first: use theirs.
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            // A file system without hard links: a plain rename, unless the name is taken by now.
            Err(_) if !path.exists() => {
                std::fs::rename(&temp, path).map_err(|source| StoreError::Create {
                    path: display.clone(),
                    source,
                })
            }
            Err(_) => Ok(()),
        }
    })();
    cleanup(&temp);
    made
}

/// Tightens what gavel owns to owner-only modes: the database and its
/// `-wal`/`-shm` files to 0600, and its folder to 0700 when it is gavel's
/// own `.gavel` folder. Returns one note per change; refuses a file it
/// cannot tighten.
fn tighten_modes(path: &Path) -> Result<Vec<String>, StoreError> {
    use std::os::unix::fs::PermissionsExt;
    let mut notes = Vec::new();
    let mut targets: Vec<PathBuf> = Vec::new();
    if let Some(dir) = path
        .parent()
        .filter(|d| d.file_name().is_some_and(|n| n == ".gavel"))
    {
        targets.push(dir.to_owned());
    }
    targets.push(path.to_owned());
    for suffix in ["-wal", "-shm"] {
        targets.push(sibling(path, suffix));
    }
    for target in targets {
        let Ok(meta) = std::fs::metadata(&target) else {
            continue;
        };
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 == 0 {
            continue;
        }
        let tightened = mode & !0o077;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(tightened)).map_err(
            |source| StoreError::LooseMode {
                path: target.display().to_string(),
                mode,
                source,
            },
        )?;
        notes.push(format!(
            "`{}` {:04o} -> {:04o}",
            target.display(),
            mode,
            tightened
        ));
    }
    Ok(notes)
}

/// `file:` URI for `path` with `query`, escaping what a URI would misread.
fn file_uri(path: &Path, query: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &byte in path.as_os_str().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(query);
    uri
}

/// A read lock on a database file, held the way a SQLite reader holds one
/// (the bytes of its SHARED lock), through an open-file-description lock
/// that no other descriptor's close can release. While it is held, no
/// writer's closing checkpoint rewrites the file (that needs an EXCLUSIVE
/// lock and skips when it cannot get one), so the file can be read as
/// immutable without SQLite's `-wal`/`-shm` files. `None` when the lock
/// is not available (a writer holds EXCLUSIVE right now) or not supported.
#[cfg(target_os = "linux")]
fn read_lock(path: &Path) -> Option<std::fs::File> {
    use std::os::fd::AsRawFd;
    // SQLite's unix locking: PENDING_BYTE 0x40000000, SHARED_FIRST two bytes on, 510 bytes.
    const SHARED_FIRST: i64 = 0x4000_0002;
    const SHARED_SIZE: i64 = 510;
    let file = std::fs::File::open(path).ok()?;
    for _ in 0..100 {
        // SAFETY: an all-zero `flock` is a valid value; the fields that matter are set below.
        let mut lock: libc::flock = unsafe { std::mem::zeroed() };
        lock.l_type = libc::F_RDLCK as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        lock.l_start = SHARED_FIRST as libc::off_t;
        lock.l_len = SHARED_SIZE as libc::off_t;
        // SAFETY: `file` is an open descriptor and `lock` a valid `flock` for F_OFD_SETLK.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) } == 0 {
            return Some(file);
        }
        let busy = matches!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EAGAIN | libc::EACCES)
        );
        if !busy {
            return None;
        }
        // A writer is folding its WAL into the file right now; it takes milliseconds.
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

#[cfg(not(target_os = "linux"))]
fn read_lock(_path: &Path) -> Option<std::fs::File> {
    None
}

/// The size and modification time of a file, to notice a change under an immutable read.
fn stamp(path: &Path) -> Option<(u64, std::time::SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// Sets whether commits on `conn` wait for the disk.
pub(super) fn set_synchronous(conn: &Connection, durability: Durability) -> Result<(), StoreError> {
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
    /// A long-lived writer's WAL checkpoints, on a thread; declared before
    /// `conn` so that it stops first and the writer closes last.
    checkpointer: Option<wal::Checkpointer>,
    conn: Connection,
    path: PathBuf,
    identity: LogIdentity,
    /// `None` for a read-only store.
    durability: Option<Durability>,
    /// Whether `synchronous` is lowered for a result-only batch right now.
    relaxed: bool,
    /// File modes tightened when it was opened for writing, one note each.
    tightened: Vec<String>,
    /// For a read-only store opened `immutable` (no `-wal` file existed):
    /// the file's size and mtime then, so that a change by a writer during
    /// the read is noticed.
    immutable: Option<Option<(u64, std::time::SystemTime)>>,
    /// The read lock that keeps an immutable read consistent, held until drop.
    _read_lock: Option<std::fs::File>,
    /// Redacts payloads before they are hashed; `None` for a read-only store.
    redactor: Option<crate::redact::Redactor>,
    /// Secrets found in the calls this process appended lately.
    secrets: RecentSecrets,
    /// The leaves of the rows this process appended last.
    appended: Appended,
    /// Whether `events` has the provenance columns (schema 4 on): a
    /// database opened read-only is never migrated, so an older one has not.
    provenance: bool,
}

/// The leaf hashes of the last run of rows this process appended, in seq
/// order, so that a checkpoint of them needs no reading back (they are
/// known good: this process hashed them). One run: an append that does not
/// continue it starts a new one. Bounded; past [`Appended::MAX`] leaves it
/// is dropped, and a checkpoint reads the rows as it would without it.
#[derive(Debug, Default)]
pub(crate) struct Appended {
    /// The seq of `leaves[0]`.
    first: u64,
    leaves: Vec<crate::chain::Hash>,
}

impl Appended {
    const MAX: usize = 1 << 16;

    /// Notes the leaves of an append whose last row is `last`.
    fn record(&mut self, last: u64, leaves: Vec<crate::chain::Hash>) {
        let first = last + 1 - leaves.len() as u64;
        if !self.leaves.is_empty() && self.first + self.leaves.len() as u64 == first {
            self.leaves.extend(leaves);
        } else {
            self.first = first;
            self.leaves = leaves;
        }
        if self.leaves.len() > Self::MAX {
            self.leaves = Vec::new();
        }
    }

    /// The leaves of the rows `from..=to`, when this process appended
    /// them all.
    pub(crate) fn rows(&self, from: u64, to: u64) -> Option<&[crate::chain::Hash]> {
        let end = self.first + self.leaves.len() as u64;
        (from >= self.first && from <= to + 1 && to + 1 == end && !self.leaves.is_empty())
            .then(|| &self.leaves[(from - self.first) as usize..])
    }
}

/// The secrets found in the events of recent calls, by call id, so that a
/// later event of the same call (its result) has them taken out even where
/// it quotes them in another form. Bounded; held in memory only.
#[derive(Debug, Default)]
pub(crate) struct RecentSecrets {
    by_call: std::collections::HashMap<String, Vec<(String, String)>>,
}

impl RecentSecrets {
    const MAX_CALLS: usize = 1024;

    /// The secrets known for any of `calls`, each once (a call's events
    /// in one batch would otherwise take its secrets once per event, and
    /// the list would double with every batch it is in).
    fn take(&self, calls: &[&str]) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = Vec::new();
        for call in calls {
            for secret in self.by_call.get(*call).into_iter().flatten() {
                if !found.contains(secret) {
                    found.push(secret.clone());
                }
            }
        }
        found
    }

    /// Remembers `found` (each once) for each of `calls` (only when
    /// anything was found).
    fn keep(&mut self, calls: &[&str], mut found: Vec<(String, String)>) {
        if found.is_empty() {
            return;
        }
        let mut seen = std::collections::HashSet::new();
        found.retain(|secret| seen.insert(secret.clone()));
        if self.by_call.len() >= Self::MAX_CALLS {
            self.by_call.clear();
        }
        for call in calls {
            self.by_call.insert((*call).to_owned(), found.clone());
        }
    }
}

impl Store {
    /// Opens `path` for appending, creating it (mode 0600, folder 0700) on first use.
    /// Loose modes on an existing database (and its `.gavel` folder) are
    /// tightened ([`Store::tightened`] says which) or, when that fails, refused.
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
        match std::fs::symlink_metadata(path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => create_whole(path)?,
            Err(source) => {
                return Err(StoreError::Create {
                    path: display,
                    source,
                });
            }
            Ok(_) => {}
        }
        check_header(path)?;
        let tightened = tighten_modes(path)?;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: display.clone(),
            source,
        })?;
        let mut store = Self::prepare(conn, path, Some(durability), false)?;
        store.tightened = tightened;
        store.redactor = Some(crate::redact::Redactor::new(redact_key(path)?));
        Ok(store)
    }

    /// Opens an existing database read-only: nothing can be written through
    /// it, nothing is migrated, no checkpoint of its WAL is run, and it
    /// works in a folder this user cannot write. When no `-wal` file exists
    /// the file is complete: it is read as immutable under a read lock that
    /// keeps writers' checkpoints out, and no `-wal`/`-shm` file is made.
    /// Otherwise SQLite reads it with the WAL; when the WAL's shared-memory
    /// file cannot be made, the error says so.
    pub fn open_read_only(path: &Path) -> Result<Self, StoreError> {
        let display = path.display().to_string();
        if !path.exists() {
            return Err(StoreError::Missing { path: display });
        }
        check_header(path)?;
        let open_error = |source| StoreError::Open {
            path: display.clone(),
            source,
        };
        // The lock first, then the look for a WAL: a writer that starts
        // after this writes to its WAL, not to the file being read.
        if let Some(lock) = read_lock(path)
            && !sibling(path, "-wal").exists()
        {
            let before = stamp(path);
            let conn = Connection::open_with_flags(
                file_uri(path, "mode=ro&immutable=1"),
                OpenFlags::SQLITE_OPEN_READ_ONLY
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX
                    | OpenFlags::SQLITE_OPEN_URI,
            )
            .map_err(open_error)?;
            let mut store = Self::prepare(conn, path, None, false)?;
            store.immutable = Some(before);
            store._read_lock = Some(lock);
            return Ok(store);
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(open_error)?;
        // SQLite opens lazily: the first read is what needs the `-wal` and `-shm` files.
        let probe = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
            r.get::<_, i64>(0)
        });
        let Err(err) = probe else {
            return Self::prepare(conn, path, None, false);
        };
        let cannot_share = matches!(
            err.sqlite_error_code(),
            Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
        );
        if !cannot_share {
            return Err(migrate::open_error(err, &display));
        }
        if sibling(path, "-wal").exists() {
            return Err(StoreError::WalUnreadable {
                path: display,
                detail: err.to_string(),
            });
        }
        drop(conn);
        let before = stamp(path);
        let conn = Connection::open_with_flags(
            file_uri(path, "mode=ro&immutable=1"),
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )
        .map_err(open_error)?;
        let mut store = Self::prepare(conn, path, None, false)?;
        store.immutable = Some(before);
        Ok(store)
    }

    /// A fresh database in memory, for tests and embedding.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(|source| StoreError::Open {
            path: ":memory:".into(),
            source,
        })?;
        let mut store = Self::prepare(conn, Path::new(":memory:"), Some(Durability::Normal), true)?;
        store.redactor = Some(crate::redact::Redactor::new(random_key()?));
        Ok(store)
    }

    /// The redactor this store applies before hashing (`None` when read-only).
    pub fn redactor(&self) -> Option<&crate::redact::Redactor> {
        self.redactor.as_ref()
    }

    /// Applies a policy's `[redact]` settings to what is appended from now on.
    pub fn set_redaction(&mut self, settings: &crate::policy::RedactSettings) {
        if let Some(redactor) = self.redactor.take() {
            self.redactor =
                Some(redactor.with_settings(crate::redact::Settings::from_policy(settings)));
        }
    }

    /// Checks the file is ours, migrates it (when writable) and reads the
    /// identity. Only an in-memory store may start empty (`may_be_new`).
    fn prepare(
        conn: Connection,
        path: &Path,
        writable: Option<Durability>,
        may_be_new: bool,
    ) -> Result<Self, StoreError> {
        let display = path.display().to_string();
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(sql("setting the busy timeout"))?;
        // Reading through a memory map saves a copy per page on long scans.
        conn.pragma_update(None, "mmap_size", 1i64 << 30)
            .map_err(sql("setting mmap_size"))?;
        let state = migrate::inspect(&conn, &display)?;
        if state == migrate::State::Fresh && !may_be_new {
            return Err(StoreError::NotGavel { path: display });
        }
        let provenance = match state {
            migrate::State::Gavel(version) => version >= migrate::PROVENANCE_SCHEMA,
            migrate::State::Fresh => true,
        } || writable.is_some();
        if let Some(durability) = writable {
            migrate::apply(&conn, &display, state)?;
            // Each checkpoint waits for the disk twice; a writer lets the
            // WAL grow to ~40 MB between them rather than SQLite's default
            // ~4 MB (a long-lived one checkpoints on a thread well before:
            // `checkpoint_in_background`). The last connection to close
            // still checkpoints, so an idle database is one self-contained
            // file that can be copied and handed to an auditor.
            conn.pragma_update(None, "wal_autocheckpoint", 10_000)
                .map_err(sql("configuring checkpoints"))?;
            // A writer reads few pages, each through the page cache; with a
            // memory map every page it touches is first looked up in the
            // WAL's index (`walFindFrame`), a cost per insert.
            conn.pragma_update(None, "mmap_size", 0)
                .map_err(sql("setting mmap_size"))?;
            // The schema's triggers refuse edits by other programs; gavel's
            // own writes are plain inserts that a taken key already fails.
            // Fired, a BEFORE INSERT trigger makes every insert keep a
            // statement journal (a copy of each page it changes), about a
            // fifth of an append's work.
            conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false)
                .map_err(sql("configuring the writer"))?;
            set_synchronous(&conn, durability)?;
        }
        let identity = migrate::identity(&conn, &display)?;
        Ok(Self {
            checkpointer: None,
            conn,
            path: path.to_owned(),
            identity,
            durability: writable,
            relaxed: false,
            tightened: Vec::new(),
            immutable: None,
            _read_lock: None,
            redactor: None,
            secrets: RecentSecrets::default(),
            appended: Appended::default(),
            provenance,
        })
    }

    /// The modes tightened when this store was opened, one note each (`path 0644 -> 0600`).
    pub fn tightened(&self) -> &[String] {
        &self.tightened
    }

    /// Fails when this read-only store was read as immutable and its file
    /// changed since it was opened: what was read may mix two versions.
    pub fn check_unchanged(&self) -> Result<(), StoreError> {
        match &self.immutable {
            Some(before) if stamp(&self.path) != *before => Err(StoreError::Damaged {
                path: self.path.display().to_string(),
                detail:
                    "it changed while it was being read (another user wrote to it); read it again"
                        .into(),
            }),
            _ => Ok(()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// For a writer that stays open across many calls (`serve`, `mcp`, a
    /// resident gavel): SQLite's WAL checkpoints run on a thread with a
    /// connection of its own instead of inside an append (see `wal.rs`).
    /// Does nothing for a read-only or in-memory store, or when already on.
    pub fn checkpoint_in_background(&mut self) -> Result<(), StoreError> {
        if self.checkpointer.is_some()
            || self.durability.is_none()
            || self.path == Path::new(":memory:")
        {
            return Ok(());
        }
        self.checkpointer = Some(wal::Checkpointer::start(&self.path)?);
        Ok(())
    }

    pub fn identity(&self) -> &LogIdentity {
        &self.identity
    }

    /// Where the log's format changes: `(seq of the switch row, format
    /// after it)`, or `None` when every row is in the log's own format.
    pub fn format_switch(&self) -> Result<Option<(u64, u32)>, StoreError> {
        if self.identity.format >= crate::chain::FORMAT_VERSION {
            return Ok(None);
        }
        Ok(append::switched_at(&self.conn)?.map(|seq| (seq, crate::chain::FORMAT_VERSION)))
    }
}

/// The format a row at `seq` is encoded in, given the log's own format and its switch.
pub fn row_format(log_format: u32, switch: Option<(u64, u32)>, seq: u64) -> u32 {
    match switch {
        Some((at, to)) if seq > at => to,
        _ => log_format,
    }
}

#[cfg(test)]
mod tests;
