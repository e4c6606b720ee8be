//! SQLite's WAL checkpoints on a thread of their own, for a long-lived
//! writer (`serve`, `mcp`, a resident gavel).
//!
//! A checkpoint copies the WAL's pages back into the database file and
//! waits for the disk twice. Left to SQLite, the append whose commit crosses
//! the threshold runs it, and that call waits. Here a second connection on a
//! thread runs a `PASSIVE` checkpoint (it never blocks the writer, nor waits
//! for it) every [`NUDGE_EVERY`] commits, well before the writer's own
//! threshold. The writer keeps that threshold: when an append crosses it,
//! the thread has copied back all but the last few hundred commits, so the
//! writer's checkpoint is short (a streamed session: 7.5% of the writer's
//! time before, 1.3% after); if the thread falls behind or dies, the writer
//! checkpoints as it did before.

use std::path::Path;
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags};

use super::{StoreError, sql};

/// Commits between two checkpoints: a commit writes about five pages, so
/// this is some 2,500 pages, a quarter of the writer's own threshold
/// (`wal_autocheckpoint`, 10,000 pages).
const NUDGE_EVERY: u64 = 512;

/// The checkpointing thread; stopped (and joined) when dropped.
pub(super) struct Checkpointer {
    nudge: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
    commits: u64,
}

impl Checkpointer {
    /// Opens a second connection to `path` and starts the thread.
    pub(super) fn start(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: path.display().to_string(),
            source,
        })?;
        // It only checkpoints; it never commits, so this is belt and braces.
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(sql("configuring WAL checkpoints"))?;
        let (nudge, nudged) = mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("gavel-wal-checkpoint".into())
            .spawn(move || {
                while nudged.recv().is_ok() {
                    // A failed checkpoint is left to the writer's own threshold.
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                }
            })
            .map_err(|source| StoreError::Create {
                path: "a WAL checkpoint thread".into(),
                source,
            })?;
        Ok(Self {
            nudge: Some(nudge),
            thread: Some(thread),
            commits: 0,
        })
    }

    /// Counts a commit of the writer; every [`NUDGE_EVERY`], wakes the thread.
    pub(super) fn committed(&mut self) {
        self.commits += 1;
        if self.commits.is_multiple_of(NUDGE_EVERY)
            && let Some(nudge) = &self.nudge
        {
            // Full: a checkpoint is already owed, and this one joins it.
            if let Err(TrySendError::Disconnected(())) = nudge.try_send(()) {
                self.nudge = None;
            }
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.nudge = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
