//! `gavel exec`: runs one recorded, allowed `bash` call contained by the
//! sandbox its decision carries (`gavel::sandbox`). Refuses, with one line
//! and exit 125, a call that is unknown, not allowed, or whose command is
//! not the one decided; refuses with exit 124 when the kernel cannot
//! enforce the sandbox. Otherwise ends with the command's own status.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;

use gavel::sandbox::bind::{Authorized, authorize};
use gavel::sandbox::kernel::{Enforcement, Support};
use gavel::sandbox::launch::{LaunchError, Resolved, contain, home};
use gavel::store::StoreError;

use super::{Exit, Global};

#[derive(Args, Debug)]
pub struct ExecArgs {
    /// The recorded call to run: its decision must be `allow`
    #[arg(long, value_name = "ID")]
    pub call_id: String,
    /// Say on stderr, before running, the profile, its digest and the enforcement
    #[arg(long)]
    pub verbose: bool,
    /// The `bash` command, exactly as decided (one argument); without it,
    /// the command the record holds
    #[arg(last = true, value_name = "COMMAND", num_args = 0..=1)]
    pub command: Vec<String>,
}

/// Says why `gavel exec` refused, one line on stderr, and the exit code.
fn refuse(message: impl std::fmt::Display, exit: Exit) -> anyhow::Result<Exit> {
    eprintln!("gavel exec: refused: {message}");
    Ok(exit)
}

pub fn run(global: &Global, args: ExecArgs) -> anyhow::Result<Exit> {
    let store = match global.read_store() {
        Ok(store) => store,
        Err(err) => return refuse(format!("{err:#}"), Exit::Refused),
    };
    let events = match store.call_events(&args.call_id) {
        Ok(events) => events,
        Err(StoreError::UnknownCall { call_id }) => {
            return refuse(
                format!("call `{call_id}` is not in the record"),
                Exit::Refused,
            );
        }
        Err(err) => return Err(err.into()),
    };
    let db = store.path().to_path_buf();
    drop(store);
    let authorized = match authorize(
        &args.call_id,
        &events,
        args.command.first().map(String::as_str),
    ) {
        Ok(a) => a,
        Err(refusal) => return refuse(refusal, Exit::Refused),
    };

    let support = Support::probe();
    let enforcement = support.enforcement();
    let missing = match &enforcement {
        Enforcement::Unavailable { missing } => {
            return refuse(
                format!(
                    "enforcement unavailable: the kernel cannot enforce sandbox `{}` (missing: {}); \
                     the command did not run",
                    authorized.profile,
                    missing.join("; ")
                ),
                Exit::Unenforceable,
            );
        }
        Enforcement::Partial { missing } => missing.join("; "),
        Enforcement::Full => String::new(),
    };
    let workspace = PathBuf::from(&authorized.workspace);
    let tmp = if authorized.spec.write.is_empty() {
        None
    } else {
        Some(private_tmp(&workspace, &args.call_id)?)
    };
    let result = launch(&authorized, &workspace, &db, tmp.as_deref(), &support);
    let outcome = match result {
        Ok(mut command) => {
            if args.verbose {
                eprintln!(
                    "gavel exec: call {} in sandbox `{}` (sha256 {}{}), enforcement {}{}",
                    args.call_id,
                    authorized.profile,
                    authorized.sha256,
                    if authorized.recorded {
                        ""
                    } else {
                        ", proven read-only"
                    },
                    enforcement.as_str(),
                    if missing.is_empty() {
                        String::new()
                    } else {
                        format!(" (missing: {missing})")
                    }
                );
            }
            run_child(&mut command)
        }
        Err(err) => Err(err),
    };
    if let Some(tmp) = &tmp {
        let _ = std::fs::remove_dir_all(tmp);
    }
    match outcome {
        Ok(code) => std::process::exit(code),
        Err(Failure::Unenforceable(message)) => refuse(
            format!("enforcement unavailable: {message}; the command did not run"),
            Exit::Unenforceable,
        ),
    }
}

enum Failure {
    Unenforceable(String),
}

/// The command contained, ready to spawn.
fn launch(
    authorized: &Authorized,
    workspace: &Path,
    db: &Path,
    tmp: Option<&Path>,
    support: &Support,
) -> Result<Command, Failure> {
    let fail = |e: LaunchError| Failure::Unenforceable(e.to_string());
    let home = home().map_err(fail)?;
    let protected: Vec<PathBuf> = [
        db.to_path_buf(),
        gavel::store::redact_key_path(db),
        gavel::store::checkpoint_key_path(db),
    ]
    .into_iter()
    .filter(|p| p.exists())
    .collect();
    let extra_write: Vec<PathBuf> = tmp.map(Path::to_path_buf).into_iter().collect();
    let resolved = Resolved::new(&authorized.spec, workspace, &home, &extra_write, &protected)
        .map_err(fail)?;
    let mut command = Command::new("bash");
    command.arg("-c").arg(&authorized.command);
    if let Some(tmp) = tmp {
        command.env("TMPDIR", tmp);
    }
    contain(&mut command, &resolved, workspace, support.landlock_abi).map_err(fail)?;
    Ok(command)
}

/// A fresh private temporary folder for one run, inside `.gavel/tmp/`.
fn private_tmp(workspace: &Path, call_id: &str) -> anyhow::Result<PathBuf> {
    let safe: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let base = workspace.join(".gavel").join("tmp");
    std::fs::create_dir_all(&base)?;
    let dir = base.join(format!("{safe}.{}", std::process::id()));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

/// Runs the contained command, passing stdin, stdout and stderr through;
/// its exit status (128 + the signal that ended it).
fn run_child(command: &mut Command) -> Result<i32, Failure> {
    // Like system(3): the terminal's interrupt is for the command.
    // SAFETY: ignoring a signal installs no handler.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            return Err(Failure::Unenforceable(format!(
                "the sandbox could not be set up: {err}"
            )));
        }
    };
    let status = child
        .wait()
        .map_err(|e| Failure::Unenforceable(format!("waiting for the command: {e}")))?;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}
