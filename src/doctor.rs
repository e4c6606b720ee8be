//! `gavel doctor`'s checks of a workspace, end to end: each client's hooks
//! (installed, and running this gavel from where it will stay), the policy
//! (loads, lints clean), the log (verifies, has a checkpoint), a resident
//! gavel, `.gavel/` ignored by git, and the modes of the database and its
//! keys. Each check says what it found and what to do; nothing is changed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::clients::{self, Client};
use crate::facts::Workspace;
use crate::install::{self, Hooks, Runs};
use crate::policy::lint;
use crate::session::{SessionError, Setup, chain};
use crate::store::{Store, VerifyOptions};

/// Checks the workspace `setup` names, for the gavel binary at `this`.
pub fn examine(setup: &Setup, this: &Path) -> Result<(PathBuf, Report), SessionError> {
    let workspace = setup.workspace()?;
    let root = workspace.root().to_path_buf();
    let db = setup.db_path()?;
    let mut report = Report::default();
    hooks(&mut report, &root, this);
    policy(&mut report, setup, &workspace);
    log(&mut report, &db);
    resident(&mut report, &db);
    ignored(&mut report, &root, &db);
    modes(&mut report, &db);
    sandbox(&mut report);
    Ok((root, report))
}

impl Report {
    /// Whether any check failed.
    pub fn failed(&self) -> bool {
        self.0.iter().any(|c| c.status == Status::Fail)
    }

    /// How many checks came out as `status`.
    pub fn count(&self, status: Status) -> usize {
        self.0.iter().filter(|c| c.status == status).count()
    }
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

/// One check's outcome: what was checked, what was found, and what to do.
#[derive(Debug, Serialize)]
pub struct Check {
    pub check: String,
    pub status: Status,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// The checks, as they are made.
#[derive(Debug, Default)]
pub struct Report(pub Vec<Check>);

impl Report {
    fn add(&mut self, check: &str, status: Status, message: String, fix: Option<String>) {
        self.0.push(Check {
            check: check.to_owned(),
            status,
            message,
            fix,
        });
    }

    fn ok(&mut self, check: &str, message: String) {
        self.add(check, Status::Ok, message, None);
    }

    fn warn(&mut self, check: &str, message: String, fix: impl Into<String>) {
        self.add(check, Status::Warn, message, Some(fix.into()));
    }

    fn fail(&mut self, check: &str, message: String, fix: impl Into<String>) {
        self.add(check, Status::Fail, message, Some(fix.into()));
    }
}

/// What the kernel can enforce of `gavel exec`'s sandbox. A warning, never
/// a failure: nothing runs contained yet unless someone runs `gavel exec`,
/// which refuses by itself where the kernel cannot enforce.
fn sandbox(report: &mut Report) {
    use crate::sandbox::kernel::{Enforcement, Support};
    let support = Support::probe();
    let found = format!(
        "landlock ABI {}, seccomp {}, user namespaces {}",
        support.landlock_abi,
        if support.seccomp { "yes" } else { "no" },
        if support.user_namespaces { "yes" } else { "no" }
    );
    match support.enforcement() {
        Enforcement::Full => report.ok(
            "sandbox",
            format!("{found}: `gavel exec` enforces every sandbox profile in full"),
        ),
        Enforcement::Partial { missing } => report.warn(
            "sandbox",
            format!(
                "{found}: enforcement partial, missing {}",
                missing.join("; ")
            ),
            "a kernel with Landlock ABI 6 or later (Linux 6.12)",
        ),
        Enforcement::Unavailable { missing } => report.warn(
            "sandbox",
            format!(
                "{found}: `gavel exec` refuses to run (enforcement unavailable: {})",
                missing.join("; ")
            ),
            "Linux 6.7 or later with Landlock enabled (`lsm=landlock,...`), seccomp, and \
             unprivileged user namespaces (`kernel.unprivileged_userns_clone=1`)",
        ),
    }
}

/// Each client whose hooks `gavel init` writes: in the project (found when
/// its file exists) and in the home folder (when it runs gavel).
fn hooks(report: &mut Report, root: &Path, this: &Path) {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut found = false;
    for &client in clients::CLIENTS {
        let config = client.hook_config("gavel");
        let mut places = vec![(root.join(config.path), false)];
        if let (Some(home), Some(user)) = (&home, config.user_path)
            && home.join(user) != places[0].0
        {
            places.push((home.join(user), true));
        }
        for (path, user) in places {
            found |= client_hooks(report, client, &path, user, this);
        }
    }
    if !found {
        report.warn(
            "hooks",
            "no agent client's hooks found for this workspace: its tool calls are not governed"
                .to_owned(),
            format!(
                "`gavel init CLIENT` ({})",
                clients::CLIENTS
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
}

/// The hooks of `client` in `path`; whether there is anything of it there.
fn client_hooks(
    report: &mut Report,
    client: &dyn Client,
    path: &Path,
    user: bool,
    this: &Path,
) -> bool {
    let name = client.name();
    let check = format!("hooks {name}");
    let init = if user {
        format!("`gavel init {name} --user --force`")
    } else {
        format!("`gavel init {name} --force`")
    };
    let shown = path.display();
    let programs = match install::hooks(client, path, this) {
        Err(err) => {
            report.fail(
                &check,
                format!("{err:#}"),
                format!("fix or move the file, then {init}"),
            );
            return true;
        }
        Ok(Hooks::NoFile) => return false,
        // A user-level file of the client, without gavel: not ours to judge.
        Ok(Hooks::NoGavelHook) if user => return false,
        Ok(Hooks::NoGavelHook) => {
            report.warn(
                &check,
                format!(
                    "`{shown}` runs no `gavel hook {name}`: {name}'s tool calls are not governed"
                ),
                init,
            );
            return true;
        }
        Ok(Hooks::Installed(programs)) => programs,
    };
    for (program, runs) in programs {
        match runs {
            Runs::This
                if install::locate(&program)
                    .and_then(|p| std::fs::canonicalize(p).ok())
                    .is_some_and(|p| install::in_build_folder(&p)) =>
            {
                report.warn(
                    &check,
                    format!(
                        "`{shown}` runs this gavel, `{program}`, from a build folder: after `cargo clean` the hooks find no gavel and {name} runs its tools ungoverned"
                    ),
                    format!("install gavel on PATH (`cargo install --path .`), then {init}"),
                )
            }
            Runs::This => report.ok(&check, format!("`{shown}` runs this gavel (`{program}`)")),
            Runs::Other(other) => report.warn(
                &check,
                format!(
                    "`{shown}` runs `{program}`, which is `{}`, not this gavel (`{}`)",
                    other.display(),
                    this.display()
                ),
                format!("{init} with the gavel the hooks should run"),
            ),
            Runs::Missing => report.fail(
                &check,
                format!(
                    "`{shown}` runs `{program}`, which does not exist: {name} fails to run the hook and may run its tools ungoverned"
                ),
                format!("{init} with the gavel the hooks should run (one on PATH stays put)"),
            ),
        }
    }
    true
}

/// The policy in force loads, and lints clean.
fn policy(report: &mut Report, setup: &Setup, workspace: &Workspace) {
    let (policy, origin) = match setup.policy_in_force(workspace) {
        Ok(found) => found,
        Err(err) => {
            report.fail(
                "policy",
                format!("does not load: {}", chain(&err).replace('\n', " ")),
                "`gavel policy validate` says where; fix the file",
            );
            return;
        }
    };
    let name = &policy.reference().name;
    report.ok("policy", format!("`{name}` from {origin} loads"));
    if !policy.layers().is_empty() {
        let layers: Vec<String> = policy
            .layers()
            .iter()
            .map(|l| format!("{} `{}`", l.name, l.path))
            .collect();
        report.ok(
            "policy layers",
            format!("{} above it; it cannot loosen them", layers.join(", ")),
        );
    }
    if !policy.shadows().is_empty() {
        let shadows: Vec<String> = policy
            .shadows()
            .iter()
            .map(|s| format!("`{}` ({})", s.name, s.path))
            .collect();
        report.ok(
            "shadow policies",
            format!("{} decided beside it, never enforced", shadows.join(", ")),
        );
    }
    let findings = lint::lint(&policy);
    match findings.first() {
        None => report.ok("policy lint", "no findings".to_owned()),
        Some(first) => report.warn(
            "policy lint",
            format!(
                "{} finding(s), first on rule `{}`: {}",
                findings.len(),
                first.rule_id,
                first.message
            ),
            "`gavel policy lint` lists them",
        ),
    }
}

/// Whether a resident gavel (`serve --socket`) answers the hooks and runs of `db`.
fn resident(report: &mut Report, db: &Path) {
    let socket = crate::frontend::resident::socket_for(db);
    if !socket.exists() {
        report.ok(
            "resident",
            "none: each hook and run does its call in its own process (`gavel serve --socket` \
             keeps one resident, which answers a hook in about two thirds of the time)"
                .to_owned(),
        );
    } else if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
        report.ok(
            "resident",
            format!(
                "a resident gavel answers hooks and runs on `{}`",
                socket.display()
            ),
        );
    } else {
        report.warn(
            "resident",
            format!(
                "`{}` is left from a resident gavel that stopped: hooks and runs do their calls themselves",
                socket.display()
            ),
            "remove it, or start `gavel serve --socket` again",
        );
    }
}

/// The log verifies, and holds a checkpoint.
fn log(report: &mut Report, db: &Path) {
    if !db.exists() {
        report.ok(
            "log",
            format!(
                "no audit log yet at `{}`: the first governed call creates it",
                db.display()
            ),
        );
        return;
    }
    let verified = Store::open_read_only(db).and_then(|store| {
        let report = store.verify(&VerifyOptions::default(), &mut |_| {})?;
        let newest = store.checkpoint_rows()?.last().map(|c| c.size);
        Ok((report, newest, store.identity().log_id.clone()))
    });
    let (verify, newest, log_id) = match verified {
        Ok(found) => found,
        Err(err) => {
            report.fail(
                "log",
                format!("cannot read `{}`: {err}", db.display()),
                "`gavel verify` says more",
            );
            return;
        }
    };
    if verify.ok {
        report.ok(
            "log",
            format!(
                "`{}` verifies: {} events, chain intact",
                db.display(),
                verify.rows
            ),
        );
    } else {
        report.fail(
            "log",
            format!(
                "`{}` does not verify: {}{}: {}",
                db.display(),
                verify.problem.map_or("unknown", |p| p.as_str()),
                verify
                    .first_bad_seq
                    .map(|seq| format!(" at seq {seq}"))
                    .unwrap_or_default(),
                verify.detail.as_deref().unwrap_or("")
            ),
            "`gavel verify` and `gavel audit` say what broke; keep the file as evidence",
        );
    }
    let key = crate::store::checkpoint_key_path(db, &log_id);
    key_location(report, db, &key, &log_id);
    match newest {
        Some(size) => report.ok(
            "checkpoint",
            format!(
                "{} stored; the newest covers {size} of {} events",
                verify.stored_checkpoints, verify.rows
            ),
        ),
        None => report.warn(
            "checkpoint",
            "none stored: if the newest events were cut off the log, nothing could tell".to_owned(),
            format!(
                "`gavel checkpoint --key {}` signs one now (hooks sign one after each call unless {}=0)",
                crate::clients::shell_word(&key.to_string_lossy()),
                crate::session::CHECKPOINT_EVERY_VAR
            ),
        ),
    }
}

/// Where the key of the log's automatic checkpoints is: outside the
/// workspace, or (left there by an older gavel) beside the log, where
/// whoever can rewrite the log can re-sign every checkpoint.
fn key_location(report: &mut Report, db: &Path, key: &Path, log_id: &[u8]) {
    let beside = crate::store::checkpoint_key_beside(db);
    let shown = |p: &Path| crate::clients::shell_word(&p.to_string_lossy());
    if key != beside {
        let state = if key.exists() {
            "is"
        } else {
            "will be (on the first automatic checkpoint)"
        };
        report.ok(
            "checkpoint key",
            format!(
                "the key of this log's automatic checkpoints {state} `{}`, outside the log's folder",
                key.display()
            ),
        );
        return;
    }
    let fix = match crate::store::user_keys_dir() {
        Some(dir) => {
            let target = dir.join(format!("{}.checkpoint-key", crate::digest::hex(log_id)));
            format!(
                "move it out of the agent's reach (once none is beside the log, gavel uses the one there): `mkdir -p -m 700 {dir} && mv {key} {target} && mv {key}.pub {target}.pub`",
                dir = shown(&dir),
                key = shown(key),
                target = shown(&target),
            )
        }
        None => {
            "set HOME or XDG_DATA_HOME so that gavel can keep keys outside the workspace".to_owned()
        }
    };
    report.warn(
        "checkpoint key",
        format!(
            "the key of this log's automatic checkpoints is beside the log (`{}`): whoever can rewrite the log can re-sign every checkpoint",
            key.display()
        ),
        fix,
    );
}

/// In a git repository, the database (and the keys beside it) is ignored
/// and not committed.
fn ignored(report: &mut Report, root: &Path, db: &Path) {
    if !root.ancestors().any(|dir| dir.join(".git").exists()) {
        return;
    }
    let Ok(relative) = db.strip_prefix(root) else {
        return;
    };
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
    };
    let folder = relative.parent().filter(|p| !p.as_os_str().is_empty());
    let what = folder.unwrap_or(relative).to_string_lossy().into_owned();
    let shown = folder.map_or(what.clone(), |f| format!("{}/", f.display()));
    let tracked = git(&["ls-files", "--", &what]);
    match tracked {
        Err(err) => {
            report.warn(
                "git",
                format!("cannot run git ({err}): whether `{shown}` is ignored is not checked"),
                "install git, or check .gitignore by hand",
            );
            return;
        }
        Ok(out) if out.status.success() && !out.stdout.is_empty() => {
            report.fail(
                "git",
                format!("`{shown}` is committed: the record and its keys are in the repository"),
                format!("`git rm -r --cached {what}`, and add `{shown}` to .gitignore"),
            );
            return;
        }
        Ok(_) => {}
    }
    let name = relative.to_string_lossy();
    match git(&["check-ignore", "-q", "--", &name]).map(|o| o.status.code()) {
        Ok(Some(0)) => report.ok("git", format!("`{shown}` is ignored by git")),
        Ok(Some(1)) => report.fail(
            "git",
            format!(
                "`{shown}` is not ignored by git: `git add -A` would commit the record and its keys"
            ),
            format!("add `{shown}` to .gitignore (`gavel init CLIENT --force` does)"),
        ),
        _ => report.warn(
            "git",
            format!("git could not say whether `{shown}` is ignored"),
            "check .gitignore by hand",
        ),
    }
}

/// The database, its WAL and its keys are readable by their owner only.
fn modes(report: &mut Report, db: &Path) {
    let sibling = |suffix: &str| {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    let mut files = vec![
        db.to_path_buf(),
        sibling("-wal"),
        crate::store::redact_key_path(db),
        crate::store::checkpoint_key_beside(db),
    ];
    if let Ok(store) = Store::open_read_only(db) {
        let key = crate::store::checkpoint_key_path(db, &store.identity().log_id);
        if let Some(dir) = key.parent().filter(|_| key != files[3]) {
            files.push(dir.to_path_buf());
        }
        files.push(key);
    }
    if let Some(dir) = db
        .parent()
        .filter(|d| d.file_name().is_some_and(|n| n == ".gavel"))
    {
        files.insert(0, dir.to_path_buf());
    }
    let mut checked = 0;
    let mut loose = 0;
    for file in files {
        let Ok(meta) = std::fs::metadata(&file) else {
            continue;
        };
        checked += 1;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            loose += 1;
            let owner = if meta.is_dir() { "700" } else { "600" };
            let exposed = if meta.is_dir() {
                "others can list and reach the record's files"
            } else if file.to_string_lossy().ends_with("-key") {
                "others can read the key"
            } else {
                "others can read the record"
            };
            report.fail(
                "modes",
                format!(
                    "`{}` is open to others (mode {mode:o}): {exposed}",
                    file.display()
                ),
                format!(
                    "`chmod {owner} {}`",
                    crate::clients::shell_word(&file.to_string_lossy())
                ),
            );
        }
    }
    if checked > 0 && loose == 0 {
        report.ok(
            "modes",
            "the database and its keys are its owner's only".to_owned(),
        );
    }
}
