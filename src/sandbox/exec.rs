//! `gavel exec` as a library call: a recorded call's events in, the
//! contained command run, its exit status out; or why it did not run.

use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::Spec;
use super::bind::{Authorized, authorize};
use super::kernel::{Enforcement, Support};
use super::launch::{LaunchError, Resolved, contain, home};
use super::observe::{Observed, Observer};
use crate::store::StoredEvent;

/// Why a call did not run.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Not this call, not allowed, not this command.
    #[error(transparent)]
    Refused(#[from] super::bind::Refusal),
    /// The kernel cannot enforce the sandbox.
    #[error("enforcement unavailable: {0}; the command did not run")]
    Unenforceable(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("cannot make the private temporary folder `{path}`: {source}")]
    Tmp {
        path: String,
        source: std::io::Error,
    },
}

/// What runs, and how contained, once authorized (for `--verbose`).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub authorized: Authorized,
    pub enforcement: Enforcement,
}

impl Prepared {
    /// One line for `gavel exec --verbose`: the profile, its digest, the enforcement.
    pub fn describe(&self, call_id: &str) -> String {
        let a = &self.authorized;
        let missing = match &self.enforcement {
            Enforcement::Partial { missing } => format!(" (missing: {})", missing.join("; ")),
            _ => String::new(),
        };
        format!(
            "gavel exec: call {call_id} in sandbox `{}` (sha256 {}{}), enforcement {}{missing}",
            a.profile,
            a.sha256,
            if a.recorded { "" } else { ", proven read-only" },
            self.enforcement.as_str(),
        )
    }
}

/// [`exec`] on the call as `store` records it; the store is closed before
/// the command starts. An unknown call is refused.
pub fn exec_recorded(
    store: crate::store::Store,
    call_id: &str,
    given: Option<&str>,
    verbose: bool,
) -> Result<i32, ExecError> {
    let events = match store.call_events(call_id) {
        Err(crate::store::StoreError::UnknownCall { .. }) => Vec::new(),
        other => other?,
    };
    let db = store.path().to_path_buf();
    drop(store);
    // `gavel exec --verbose`: one line on stderr before the command runs.
    let before = |p: &Prepared| {
        if verbose {
            eprintln!("{}", p.describe(call_id));
        }
    };
    let ran = exec(call_id, &events, given, &db, before)?;
    // What the sandbox refused, chained to the call; a record that cannot
    // be written is said, and the command's status stands.
    if !ran.observed.attempts.is_empty() {
        let refused = crate::audit::RefusedRecord {
            profile: ran.profile,
            attempts: ran.observed.attempts,
            more: ran.observed.more,
        };
        let event = crate::audit::Event::now(
            call_id,
            Some("bash"),
            crate::audit::EventBody::Refused(refused),
        );
        let written = crate::store::Store::open(&db, crate::store::Durability::default())
            .and_then(|mut store| store.append(&[event]));
        if let Err(err) = written {
            eprintln!("gavel exec: warning: the refused attempts were not recorded: {err}");
        }
    }
    Ok(ran.status)
}

/// A command `gavel exec` ran: its exit status, the profile it ran in and
/// what the sandbox refused it.
#[derive(Debug)]
pub struct Ran {
    pub status: i32,
    pub profile: String,
    pub observed: Observed,
}

impl ExecError {
    /// Whether the kernel, not the call, is why nothing ran.
    pub fn unenforceable(&self) -> bool {
        matches!(self, ExecError::Unenforceable(_))
    }
}

/// Runs call `call_id` of the database `db` (its `events`), the command
/// `given` or the recorded one, contained; `before` sees what is about to
/// run. Returns the command's exit status (128 + a signal's number) and
/// what the sandbox refused.
pub fn exec(
    call_id: &str,
    events: &[StoredEvent],
    given: Option<&str>,
    db: &Path,
    before: impl FnOnce(&Prepared),
) -> Result<Ran, ExecError> {
    let authorized = authorize(call_id, events, given)?;
    let workspace = PathBuf::from(&authorized.workspace);
    let cwd = decided_in(&workspace, authorized.cwd.as_deref());
    let mut contained = contained_command(
        &authorized.command,
        &authorized.profile,
        &authorized.spec,
        &workspace,
        &cwd,
        Some(db),
        call_id,
    )?;
    before(&Prepared {
        authorized: authorized.clone(),
        enforcement: contained.enforcement.clone(),
    });
    let status = run_child(&mut contained.command)?;
    Ok(Ran {
        status,
        profile: authorized.profile,
        observed: contained.observed(),
    })
}

/// The folder a call's relative paths were decided from, as the hook
/// resolved it (`Workspace::with_cwd`): the reported `cwd` taken from the
/// workspace; the workspace itself when none was reported or it is gone.
fn decided_in(workspace: &Path, cwd: Option<&str>) -> PathBuf {
    cwd.and_then(|cwd| std::fs::canonicalize(workspace.join(cwd)).ok())
        .unwrap_or_else(|| workspace.to_path_buf())
}

/// A command made to run contained, and the private temporary folder it
/// may write (removed when this is dropped).
#[derive(Debug)]
pub struct ContainedCommand {
    pub command: Command,
    pub enforcement: Enforcement,
    tmp: Option<PathBuf>,
    observer: Option<Observer>,
}

impl ContainedCommand {
    /// Once the command is over: the attempts the sandbox refused.
    pub fn observed(&mut self) -> Observed {
        self.observer
            .take()
            .map(Observer::finish)
            .unwrap_or_default()
    }
}

impl Drop for ContainedCommand {
    fn drop(&mut self) {
        if let Some(tmp) = &self.tmp {
            let _ = std::fs::remove_dir_all(tmp);
        }
    }
}

/// `bash -c COMMAND` in `cwd`, contained by `spec` (the profile `profile`)
/// whose relative paths are `workspace`'s: spawn it as it is, or set its
/// input and output first. The database `db` (and its keys) is never
/// writable, nor is anything of [`super::NEVER_WRITABLE`]. A command that
/// writes gets a private temporary folder (`TMPDIR`, owner-only, in the
/// system's temporary folder). Errs, and nothing runs, when this kernel
/// cannot enforce the spec.
pub fn contained_command(
    command: &str,
    profile: &str,
    spec: &Spec,
    workspace: &Path,
    cwd: &Path,
    db: Option<&Path>,
    call_id: &str,
) -> Result<ContainedCommand, ExecError> {
    let support = Support::probe_without_namespaces();
    let enforcement = support.enforcement();
    if let Enforcement::Unavailable { missing } = &enforcement {
        return Err(ExecError::Unenforceable(format!(
            "the kernel cannot enforce sandbox `{profile}` (missing: {})",
            missing.join("; ")
        )));
    }
    let mut contained = ContainedCommand {
        command: Command::new(bash()),
        enforcement,
        tmp: None,
        observer: None,
    };
    if !spec.write.is_empty() {
        contained.tmp = Some(private_tmp(call_id)?);
        // gavel's own folder, made (owner-only) where it is missing so
        // that it can be held read-only: the command must not make it.
        let own = workspace.join(".gavel");
        if std::fs::symlink_metadata(&own).is_err() {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&own)
                .map_err(|source| ExecError::Tmp {
                    path: own.display().to_string(),
                    source,
                })?;
        }
    }
    let fail = |e: LaunchError| ExecError::Unenforceable(e.to_string());
    let home = home().map_err(fail)?;
    // The log, its keys beside it (an older gavel's) and the user's keys
    // folder, whatever a profile's write set holds.
    let protected: Vec<PathBuf> = db
        .into_iter()
        .flat_map(|db| {
            [
                db.to_path_buf(),
                crate::store::redact_key_path(db),
                crate::store::checkpoint_key_beside(db),
            ]
        })
        .chain(crate::store::user_keys_dir())
        .filter(|p| p.exists())
        .collect();
    let extra_write: Vec<PathBuf> = contained.tmp.iter().cloned().collect();
    let resolved = Resolved::new(spec, workspace, &home, &extra_write, &protected).map_err(fail)?;
    contained.command.arg("-c").arg(command);
    if let Some(tmp) = &contained.tmp {
        contained.command.env("TMPDIR", tmp);
    }
    let closed: Vec<PathBuf> = resolved
        .protected
        .iter()
        .chain(&resolved.hidden)
        .cloned()
        .collect();
    let (observer, end) = Observer::start(&resolved.write, &resolved.exec, &closed)
        .map_err(|e| ExecError::Unenforceable(format!("cannot start the observer: {e}")))?;
    contained.observer = Some(observer);
    contain(
        &mut contained.command,
        &resolved,
        cwd,
        support.landlock_abi,
        Some(end),
    )
    .map_err(fail)?;
    Ok(contained)
}

/// `bash` found on `PATH` here, once: the contained child then executes
/// it directly, rather than trying each folder of `PATH` (each try an
/// observed `execve`).
fn bash() -> &'static Path {
    static BASH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BASH.get_or_init(|| {
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join("bash"))
            .find(|p| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(p)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
            .unwrap_or_else(|| PathBuf::from("bash"))
    })
}

/// A fresh private temporary folder for one run (owner-only, a random
/// name in the system's temporary folder): the command's `TMPDIR`, not
/// the shared `/tmp` itself.
fn private_tmp(call_id: &str) -> Result<PathBuf, ExecError> {
    let safe: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    let mut random = [0u8; 8];
    let _ = getrandom::fill(&mut random);
    let dir =
        std::env::temp_dir().join(format!("gavel-exec-{safe}-{}", crate::digest::hex(&random)));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|source| ExecError::Tmp {
            path: dir.display().to_string(),
            source,
        })?;
    Ok(dir)
}

/// Runs the contained command, passing stdin, stdout and stderr through.
fn run_child(command: &mut Command) -> Result<i32, ExecError> {
    // Like system(3): the terminal's interrupt is for the command.
    // SAFETY: ignoring a signal installs no handler.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let mut child = command.spawn().map_err(|err| {
        ExecError::Unenforceable(format!("the sandbox could not be set up: {err}"))
    })?;
    let status = child
        .wait()
        .map_err(|e| ExecError::Unenforceable(format!("waiting for the command: {e}")))?;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}
