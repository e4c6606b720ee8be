//! A contained allow's ticket: what [`super::bind::authorize`] makes of the
//! call's recorded events, written by the hook that recorded them, beside
//! the database, so that the command's launcher need not open SQLite.
//!
//! The hook records the call, reads its events back, authorizes them as
//! `gavel exec` would, and writes the result (with the command) to
//! `<db>.exec/id-<the call id in hex>` (`sha256-<its SHA-256>` for a call
//! id of more than 100 bytes; owner-only). The launcher reads the ticket,
//! holds the command it is given to the ticket's, and has it removed
//! before the command starts, off the launcher's path (an unlink is tens
//! of microseconds); with no ticket (run twice, or `gavel exec` by hand) it
//! reads the record itself. Nothing in a ticket is hashed on the
//! launcher's path: the first hash would cost the launcher its CPU
//! feature probe. A ticket is no
//! more to be trusted than the database beside it (same owner, same
//! folder, the same never-writable set keeps contained commands off both),
//! and no less.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Spec;
use super::bind::{Authorized, Refusal};
use crate::digest::{hex, sha256};

/// What a ticket holds: an [`Authorized`] call.
#[derive(Debug, Serialize, Deserialize)]
struct Ticket {
    call_id: String,
    command: String,
    profile: String,
    spec: Spec,
    sha256: String,
    recorded: bool,
    workspace: String,
    cwd: Option<String>,
}

/// The folder of `db`'s tickets (never writable by a contained command).
pub fn folder(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".exec");
    PathBuf::from(name)
}

/// The ticket of call `call_id` of `db`.
pub fn path(db: &Path, call_id: &str) -> PathBuf {
    let name = if call_id.len() <= 100 {
        format!("id-{}", hex(call_id.as_bytes()))
    } else {
        format!("sha256-{}", hex(&sha256(call_id.as_bytes())))
    };
    folder(db).join(name)
}

/// Writes the ticket of call `call_id` of `db`, authorized as `authorized`.
pub fn write(db: &Path, call_id: &str, authorized: &Authorized) -> std::io::Result<()> {
    let ticket = Ticket {
        call_id: call_id.to_owned(),
        command: authorized.command.clone(),
        profile: authorized.profile.clone(),
        spec: authorized.spec.clone(),
        sha256: authorized.sha256.clone(),
        recorded: authorized.recorded,
        workspace: authorized.workspace.clone(),
        cwd: authorized.cwd.clone(),
    };
    let folder = folder(db);
    match std::fs::DirBuilder::new().mode(0o700).create(&folder) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let text = serde_json::to_vec(&ticket).map_err(std::io::Error::other)?;
    // Written whole under a temporary name, then renamed: a launcher never
    // reads half a ticket.
    let target = path(db, call_id);
    let partial = target.with_extension("partial");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)?;
    file.write_all(&text)?;
    drop(file);
    std::fs::rename(&partial, &target)
}

/// Reads the ticket at `path` ([`path`]) of call `call_id` for
/// `command`: `None` when there is none (the record decides), else the
/// call authorized, or why not (another command than the one decided, a
/// damaged ticket). The caller removes it once it is spent.
pub fn read(path: &Path, call_id: &str, command: &str) -> Option<Result<Authorized, Refusal>> {
    let text = std::fs::read(path).ok()?;
    let ticket: Ticket = match serde_json::from_slice(&text) {
        Ok(ticket) => ticket,
        Err(e) => {
            return Some(Err(Refusal::Damaged {
                call_id: call_id.to_owned(),
                detail: format!("its ticket `{}`: {e}", path.display()),
            }));
        }
    };
    if ticket.call_id != call_id {
        return Some(Err(Refusal::Damaged {
            call_id: call_id.to_owned(),
            detail: format!("its ticket `{}` names another call", path.display()),
        }));
    }
    if command != ticket.command {
        return Some(Err(Refusal::Mismatch {
            call_id: call_id.to_owned(),
        }));
    }
    Some(Ok(Authorized {
        command: ticket.command,
        profile: ticket.profile,
        spec: ticket.spec,
        sha256: ticket.sha256,
        recorded: ticket.recorded,
        workspace: ticket.workspace,
        cwd: ticket.cwd,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authorized(command: &str) -> Authorized {
        let spec = Spec::read_only();
        Authorized {
            command: command.into(),
            profile: "read-only".into(),
            sha256: spec.digest(),
            spec,
            recorded: true,
            workspace: "/w".into(),
            cwd: Some("src".into()),
        }
    }

    /// Reads the ticket and removes it, as the launcher's observer does.
    fn take(db: &Path, call_id: &str, command: &str) -> Option<Result<Authorized, Refusal>> {
        let read = read(&path(db, call_id), call_id, command);
        let _ = std::fs::remove_file(path(db, call_id));
        read
    }

    #[test]
    fn a_long_call_id_is_named_by_its_digest() {
        let db = Path::new("/d/audit.db");
        let long = "x".repeat(101);
        let name = |id: &str| {
            path(db, id)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        };
        assert_eq!(name("c1"), "id-6331");
        assert_eq!(
            name(&long),
            format!("sha256-{}", hex(&sha256(long.as_bytes())))
        );
    }

    #[test]
    fn a_ticket_is_taken_once_and_only_for_its_command() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("audit.db");
        write(&db, "c1", &authorized("cat a.txt")).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&folder(&db)), 0o700);
        assert_eq!(mode(&path(&db, "c1")), 0o600);
        assert_eq!(
            take(&db, "c1", "cat a.txt"),
            Some(Ok(authorized("cat a.txt")))
        );
        // Taken: the record decides from now on.
        assert_eq!(take(&db, "c1", "cat a.txt"), None);
        write(&db, "c2", &authorized("cat a.txt")).unwrap();
        assert!(matches!(
            take(&db, "c2", "rm -rf /"),
            Some(Err(Refusal::Mismatch { .. }))
        ));
        // A ticket under another call's name, or garbled, runs nothing.
        write(&db, "c3", &authorized("ls")).unwrap();
        std::fs::rename(path(&db, "c3"), path(&db, "c4")).unwrap();
        assert!(matches!(
            take(&db, "c4", "ls"),
            Some(Err(Refusal::Damaged { .. }))
        ));
        std::fs::write(path(&db, "c5"), b"{").unwrap();
        assert!(matches!(
            take(&db, "c5", "ls"),
            Some(Err(Refusal::Damaged { .. }))
        ));
    }
}
