//! `gavel exec` as a library call: a recorded call's events in, this
//! process become the contained command; or why it did not run.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::Spec;
use super::bind::{Authorized, authorize};
use super::kernel::{Enforcement, Support};
use super::launch::{ChildSetup, LaunchError, Resolved, Unexecuted, contain, home, prepare};
use super::observe::{Attempt, Judge, Launch, Observed, Observer, Witness, start_process};

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
    /// Contained, the program could not be executed (as bash would say).
    #[error("{program}: {}", strerror(source))]
    NotExecuted {
        program: String,
        source: std::io::Error,
    },
}

/// An error as the C library words it, without Rust's ` (os error N)`.
fn strerror(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
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

/// [`exec`] on call `call_id` of the database `db`: authorized by its
/// ticket when the hook left one for the command `given`
/// ([`super::ticket`]), else by the call's events as the record holds
/// them (the database is closed before the command starts). An unknown
/// call is refused. This process becomes the command ([`exec`]): returns
/// only why it did not run.
pub fn exec_recorded(db: &Path, call_id: &str, given: Option<&str>, verbose: bool) -> ExecError {
    let ticket = super::ticket::path(db, call_id);
    let (authorized, spent) = match given.and_then(|c| super::ticket::read(&ticket, call_id, c)) {
        Some(authorized) => (authorized.map_err(ExecError::from), Some(ticket)),
        None => (recorded(db, call_id, given), None),
    };
    let authorized = match authorized {
        Ok(authorized) => authorized,
        Err(err) => {
            // Spent on a refusal too: the record decides from now on.
            leave(None, spent.as_deref());
            return err;
        }
    };
    // `gavel exec --verbose`: one line on stderr before the command runs.
    let before = |p: &Prepared| {
        if verbose {
            eprintln!("{}", p.describe(call_id));
        }
    };
    exec(call_id, authorized, db, spent, before)
}

impl ExecError {
    /// The status `gavel exec` exits with: 124 when the kernel cannot
    /// enforce the sandbox, 126 or 127 when the program could not be
    /// executed or found (as bash answers), else 125 (refused); `None`
    /// for an error of the record, which is gavel's own.
    pub fn status(&self) -> Option<u8> {
        match self {
            ExecError::Store(_) => None,
            ExecError::Unenforceable(_) => Some(124),
            ExecError::NotExecuted { source, .. } => {
                Some(if source.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                })
            }
            ExecError::Refused(_) | ExecError::Tmp { .. } => Some(125),
        }
    }

    /// The line `gavel exec` says on stderr for it: what refused the call
    /// is `refused:`; a program that could not be executed is said as
    /// bash says it.
    pub fn line(&self) -> String {
        match self.status() {
            Some(124 | 125) => format!("gavel exec: refused: {self}"),
            _ => format!("gavel exec: {self}"),
        }
    }
}

/// Becomes call `call_id` of the database `db`, `authorized` so: this
/// process executes the command in place, contained, and what the sandbox
/// refuses it is chained to the call as it happens ([`Recorder`]). The
/// file `spent` (its ticket) is removed before the command starts, by the
/// observer, off the launcher's path. `before` sees what is about to run.
/// Returns only why it did not run.
pub fn exec(
    call_id: &str,
    authorized: Authorized,
    db: &Path,
    spent: Option<PathBuf>,
    before: impl FnOnce(&Prepared),
) -> ExecError {
    let support = Support::probe_for_launch();
    // What bash runs without a process has nothing for a sandbox to
    // contain (`super::direct::builtin`): run here, as bash runs it, where
    // the kernel could have contained it (never where it could not: a
    // contained allow there runs nothing).
    if let Some(builtin) = super::direct::builtin(&authorized.command)
        && !matches!(support.enforcement(), Enforcement::Unavailable { .. })
    {
        leave(None, spent.as_deref());
        std::process::exit(builtin.run());
    }
    let workspace = PathBuf::from(&authorized.workspace);
    let cwd = decided_in(&workspace, authorized.cwd.as_deref());
    let contained = contained_command(
        support,
        &authorized.command,
        (&authorized.profile, &authorized.spec),
        &workspace,
        &cwd,
        Some(db),
        call_id,
    );
    let mut contained = match contained {
        Ok(contained) => contained,
        Err(err) => {
            leave(None, spent.as_deref());
            return err;
        }
    };
    contained.spent = spent;
    before(&Prepared {
        authorized: authorized.clone(),
        enforcement: contained.enforcement.clone(),
    });
    contained.exec(Recorder {
        db: db.to_path_buf(),
        call_id: call_id.to_owned(),
        profile: authorized.profile,
        store: None,
    })
}

/// What the sandbox refused a command the launcher became, chained to its
/// call as the observer sees it: one `refused` event per attempt kept,
/// written while the attempt's process waits in the call, and one with
/// the count of the rest once the command is over. A record that cannot
/// be written is said on the command's standard error, and the command
/// carries on.
struct Recorder {
    db: PathBuf,
    call_id: String,
    profile: String,
    store: Option<crate::store::Store>,
}

impl Recorder {
    fn append(
        &mut self,
        attempts: Vec<Attempt>,
        more: u64,
    ) -> Result<(), crate::store::StoreError> {
        let event = crate::audit::Event::now(
            &self.call_id,
            Some("bash"),
            crate::audit::EventBody::Refused(crate::audit::RefusedRecord {
                profile: self.profile.clone(),
                attempts,
                more,
            }),
        );
        let store = match &mut self.store {
            Some(store) => store,
            None => self.store.insert(crate::store::Store::open(
                &self.db,
                crate::store::Durability::default(),
            )?),
        };
        store.append(&[event]).map(|_| ())
    }
}

impl Witness for Recorder {
    fn refused(&mut self, attempt: &Attempt, pid: u32) {
        if let Err(err) = self.append(vec![attempt.clone()], 0) {
            say_to(
                pid,
                &format!("gavel exec: warning: a refused attempt was not recorded: {err}\n"),
            );
        }
    }

    fn over(&mut self, more: u64) {
        if more > 0 {
            let _ = self.append(Vec::new(), more);
        }
    }
}

/// Writes `line` to the standard error of process `pid` (the observer
/// holds none of its own): best effort.
fn say_to(pid: u32, line: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOCTTY)
        .open(format!("/proc/{pid}/fd/2"));
    if let Ok(mut err) = opened {
        let _ = err.write_all(line.as_bytes());
    }
}

/// Call `call_id` authorized by the record itself. The record is read, not
/// checked: a warning about its tail is `verify`'s to give, and would be
/// printed into the agent's command output; what runs is bound to the
/// call's own rows.
fn recorded(db: &Path, call_id: &str, given: Option<&str>) -> Result<Authorized, ExecError> {
    let store = crate::store::Store::open_read_only(db)?;
    let events = match store.call_events(call_id) {
        Err(crate::store::StoreError::UnknownCall { .. }) => Vec::new(),
        other => other?,
    };
    Ok(authorize(call_id, &events, given)?)
}

/// The folder a call's relative paths were decided from, as the hook
/// resolved it (`Workspace::with_cwd`): the reported `cwd` taken from the
/// workspace; the workspace itself when none was reported or it is gone.
fn decided_in(workspace: &Path, cwd: Option<&str>) -> PathBuf {
    cwd.filter(|cwd| Path::new(cwd) != workspace)
        .and_then(|cwd| std::fs::canonicalize(workspace.join(cwd)).ok())
        .unwrap_or_else(|| workspace.to_path_buf())
}

/// A command made to run contained, and the private temporary folder it
/// may write (removed when this is dropped, or when the command it became
/// is over).
#[derive(Debug)]
pub struct ContainedCommand {
    /// The file executed, and its arguments (`argv[0]` first).
    program: PathBuf,
    argv: Vec<OsString>,
    /// Set in its environment, over this process's.
    env: Vec<(OsString, OsString)>,
    cwd: PathBuf,
    setup: Option<ChildSetup>,
    pub enforcement: Enforcement,
    tmp: Option<PathBuf>,
    /// A file to remove with the temporary folder (the launcher's ticket).
    spent: Option<PathBuf>,
    /// What its Landlock ruleset is built from and its observer judges
    /// against: the paths, and the kernel's Landlock ABI.
    landlock: (Resolved, i64),
    observer: Option<Observer>,
}

impl ContainedCommand {
    /// The command for [`std::process::Command`] to spawn as it is, or
    /// with its input and output set first (once: the sandbox goes with
    /// it), observed by a thread of this process ([`Self::observed`]).
    pub fn take_command(&mut self) -> Result<Command, ExecError> {
        let mut command = Command::new(&self.program);
        if let Some((argv0, args)) = self.argv.split_first() {
            command.arg0(argv0).args(args);
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        let mut setup = self.setup.take().ok_or_else(taken)?;
        let (resolved, abi) = &self.landlock;
        setup
            .build_ruleset(resolved, *abi)
            .map_err(|e| ExecError::Unenforceable(e.to_string()))?;
        let (observer, end) = Observer::start(judge(&self.landlock.0)).map_err(no_observer)?;
        self.observer = Some(observer);
        setup.observed_by(end);
        contain(&mut command, setup, &self.cwd);
        Ok(command)
    }

    /// Becomes the command: this process sets itself up contained and
    /// executes it in place, so that the command's caller waits for the
    /// command itself, with nothing between them. What the sandbox
    /// refuses goes to `witness` from an observer process
    /// ([`start_process`]), which removes the private temporary folder
    /// once the command is over. A program the sandbox may not execute is
    /// refused (126) before anything is set up, its attempt witnessed.
    /// Returns only why the command did not run. Call it where this
    /// process has one thread.
    pub fn exec(mut self, witness: impl Witness + 'static) -> ExecError {
        let nul = |_| ExecError::Unenforceable(LaunchError::Nul.to_string());
        let c = |bytes: &[u8]| CString::new(bytes).map_err(nul);
        let program = c(self.program.as_os_str().as_bytes());
        let argv: Result<Vec<_>, _> = self.argv.iter().map(|a| c(a.as_bytes())).collect();
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !self.env.iter().any(|(set, _)| set == k))
            .collect();
        env.extend(self.env.iter().cloned());
        let envp: Result<Vec<_>, _> = env
            .iter()
            .map(|(k, v)| c(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
            .collect();
        let (program, argv, envp, mut setup) = match (program, argv, envp, self.setup.take()) {
            (Ok(program), Ok(argv), Ok(envp), Some(setup)) => (program, argv, envp, setup),
            (Err(err), ..) | (_, Err(err), ..) | (_, _, Err(err), _) => return err,
            (.., None) => return taken(),
        };
        // A program the sandbox may not execute: refused as the kernel
        // would refuse it, on record before the caller hears of it, with
        // nothing set up.
        let judge = judge(&self.landlock.0);
        if let Some(attempt) = judge.refuses_exec(&self.program) {
            let mut witness = witness;
            witness.refused(&attempt, std::process::id());
            witness.over(0);
            return ExecError::NotExecuted {
                program: self.program.display().to_string(),
                source: std::io::Error::from_raw_os_error(libc::EACCES),
            };
        }
        // The observer spends the ticket before the command starts, and
        // removes the temporary folder once it is over.
        let launch = Launch {
            program: self.program.clone(),
            ticket: self.spent.clone(),
        };
        let tmp = self.tmp.clone();
        let end = move || leave(tmp.as_deref(), None);
        match start_process(judge, witness, launch, end) {
            Ok(end) => setup.observed_by(end),
            Err(err) => return no_observer(err),
        }
        // The observer's to remove from here.
        (self.spent, self.tmp) = (None, None);
        let (resolved, abi) = &self.landlock;
        if let Err(err) = setup.build_ruleset(resolved, *abi) {
            return ExecError::Unenforceable(err.to_string());
        }
        match setup.exec(&program, &argv, &envp) {
            Unexecuted::Execve(source) => ExecError::NotExecuted {
                program: self.program.display().to_string(),
                source,
            },
            Unexecuted::Setup(err) => {
                ExecError::Unenforceable(match super::kernel::namespaces_refused() {
                    Some(why) => format!("the sandbox could not be set up: {why}"),
                    None => format!("the sandbox could not be set up: {err}"),
                })
            }
        }
    }

    /// Once the command spawned from [`Self::take_command`] is over: the
    /// attempts the sandbox refused.
    pub fn observed(&mut self) -> Observed {
        self.observer
            .take()
            .map(Observer::finish)
            .unwrap_or_default()
    }
}

/// The sandbox was taken before: nothing runs uncontained.
fn taken() -> ExecError {
    ExecError::Unenforceable("the sandbox was taken".into())
}

fn no_observer(err: std::io::Error) -> ExecError {
    ExecError::Unenforceable(format!("cannot start the observer: {err}"))
}

impl Drop for ContainedCommand {
    fn drop(&mut self) {
        leave(self.tmp.as_deref(), self.spent.as_deref());
    }
}

/// What an observer judges attempts against: the write and exec paths,
/// less the never-writable and hidden ones.
fn judge(resolved: &Resolved) -> Judge {
    let closed: Vec<PathBuf> = resolved
        .protected
        .iter()
        .chain(&resolved.hidden)
        .cloned()
        .collect();
    Judge::new(&resolved.write, &resolved.exec, &closed)
}

/// Removes what a command leaves: its temporary folder, its spent ticket.
fn leave(tmp: Option<&Path>, spent: Option<&Path>) {
    if let Some(tmp) = tmp {
        let _ = std::fs::remove_dir_all(tmp);
    }
    if let Some(spent) = spent {
        let _ = std::fs::remove_file(spent);
    }
}

/// `COMMAND` in `cwd` (its program itself, or `bash -c COMMAND`),
/// contained by `spec` (the profile `profile`) whose relative paths are
/// `workspace`'s, on a kernel with `support`: become it
/// ([`ContainedCommand::exec`]) or take it to spawn
/// ([`ContainedCommand::take_command`]). The database `db` (its tickets
/// and keys) is never writable, nor is anything of
/// [`super::NEVER_WRITABLE`]. A command that writes gets a private
/// temporary folder (`TMPDIR`, owner-only, in the system's temporary
/// folder). Errs, and nothing runs, when this kernel cannot enforce the
/// spec.
pub fn contained_command(
    support: Support,
    command: &str,
    (profile, spec): (&str, &Spec),
    workspace: &Path,
    cwd: &Path,
    db: Option<&Path>,
    call_id: &str,
) -> Result<ContainedCommand, ExecError> {
    let enforcement = support.enforcement();
    if let Enforcement::Unavailable { missing } = &enforcement {
        return Err(ExecError::Unenforceable(format!(
            "the kernel cannot enforce sandbox `{profile}` (missing: {})",
            missing.join("; ")
        )));
    }
    let (program, argv, mut env) = program_of(command, cwd);
    let mut contained = ContainedCommand {
        program,
        argv,
        env: Vec::new(),
        cwd: cwd.to_path_buf(),
        setup: None,
        enforcement,
        tmp: None,
        spent: None,
        landlock: (Resolved::default(), 0),
        observer: None,
    };
    // Nothing to carve out or protect where nothing is writable.
    let mut protected: Vec<PathBuf> = Vec::new();
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
        // The tickets' folder is made where it is missing, so that it can
        // be held read-only: a command must not leave a ticket there.
        if let Some(db) = db {
            let _ = std::fs::DirBuilder::new()
                .mode(0o700)
                .create(super::ticket::folder(db));
        }
        // The log, its tickets, its keys beside it (an older gavel's) and
        // the user's keys folder, whatever a profile's write set holds.
        protected = db
            .into_iter()
            .flat_map(|db| {
                [
                    db.to_path_buf(),
                    crate::store::redact_key_path(db),
                    crate::store::checkpoint_key_beside(db),
                    super::ticket::folder(db),
                ]
            })
            .chain(crate::store::user_keys_dir())
            .filter(|p| p.exists())
            .collect();
    }
    let fail = |e: LaunchError| ExecError::Unenforceable(e.to_string());
    let home = home().map_err(fail)?;
    let extra_write: Vec<PathBuf> = contained.tmp.iter().cloned().collect();
    let resolved = Resolved::new(spec, workspace, &home, &extra_write, &protected).map_err(fail)?;
    if let Some(tmp) = &contained.tmp {
        env.push(("TMPDIR".into(), tmp.into()));
    }
    contained.env = env;
    contained.setup = Some(prepare(&resolved, cwd, true).map_err(fail)?);
    contained.landlock = (resolved, support.landlock_abi);
    Ok(contained)
}

/// What runs `command` in `cwd`: the file executed, its arguments
/// (`argv[0]` first) and what is set in its environment. Its program
/// itself when it needs no shell ([`super::direct`]), else `bash -c
/// COMMAND`.
type Program = (PathBuf, Vec<OsString>, Vec<(OsString, OsString)>);

fn program_of(command: &str, cwd: &Path) -> Program {
    let path = std::env::var_os("PATH");
    match super::direct::direct(command, path.as_deref(), cwd) {
        // As bash would: argv[0] as written, `_` the file it found, and
        // `PWD` the folder it runs in unless it already names it.
        Some((program, words)) => {
            let mut env = vec![("_".into(), program.clone().into())];
            if !names_folder(std::env::var_os("PWD"), cwd) {
                env.push(("PWD".into(), cwd.into()));
            }
            let argv = words.into_iter().map(OsString::from).collect();
            (program, argv, env)
        }
        None => {
            let argv = ["bash", "-c", command].map(OsString::from).to_vec();
            (bash().to_path_buf(), argv, Vec::new())
        }
    }
}

/// Whether `pwd` (a `$PWD`) names the folder `cwd`, as bash checks it
/// before keeping it: the same path, or the same file.
fn names_folder(pwd: Option<OsString>, cwd: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(pwd) = pwd.map(PathBuf::from).filter(|p| p.is_absolute()) else {
        return false;
    };
    pwd == cwd
        || match (std::fs::metadata(&pwd), std::fs::metadata(cwd)) {
            (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
            _ => false,
        }
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
    let random: [u8; 8] = super::raw::random();
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
