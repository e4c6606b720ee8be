//! `gavel init <client>`: installs gavel as a client's hooks (project or
//! user level) and writes the coding-agent policy to `gavel.toml` in the
//! project, `.gavel/` to its `.gitignore`, the checkpoint key, and the
//! log's first signed checkpoint. It says what an ask becomes. The hook
//! command is the `gavel` on `PATH` when that is the same gavel as this
//! binary (the same file, bytes or version), else its absolute path (with a
//! warning when it lies in a build folder, which `cargo clean` removes). Refuses to change an existing file without
//! `--force`, and never rewrites a customised `gavel.toml` without
//! `--overwrite-policy`; prints what it changed. `--check` changes nothing
//! and says whether every hook command still runs this gavel.

use std::io::Write as _;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::Args;
use serde_json::{Map, Value};

use gavel::clients::{self, Client};
use gavel::install::{self, Hooks, Runs};
use gavel::policy::CODING_AGENT_POLICY_TOML;

use super::{Exit, Global, render};

#[derive(Args, Debug)]
pub struct InitArgs {
    /// The agent client to install gavel for
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(
        clients::CLIENTS.iter().map(|c| c.name())
    ))]
    pub client: String,
    /// Write the client's user-level settings (in your home folder) instead of the project's
    #[arg(long)]
    pub user: bool,
    /// Change files that already exist: gavel's hooks replace earlier gavel hooks
    /// (other hooks are kept); a gavel.toml that differs from the preset is kept
    #[arg(long)]
    pub force: bool,
    /// With --force, also replace a gavel.toml that differs from the preset
    #[arg(long, requires = "force")]
    pub overwrite_policy: bool,
    /// Change nothing: say whether every installed hook command still runs this gavel
    /// (exit 1 when one does not)
    #[arg(long, conflicts_with_all = ["force", "overwrite_policy"])]
    pub check: bool,
    /// `wait[=DURATION]`: the hooks let an asked call wait in the pending queue for
    /// `gavel approve` / `gavel reject` (`hook --ask wait`); the client's hook timeout
    /// is set above DURATION where the client has a key for it
    #[arg(long, value_name = "wait[=DURATION]", value_parser = super::parse_ask_wait)]
    pub ask: Option<super::AskWait>,
}

/// Makes every gavel hook command of `config` wait in the pending queue for
/// `wait`, with the client's hook timeout set above it where the client has
/// a key for it; a warning when it has none and `wait` passes its limit.
fn with_wait(client: &dyn Client, json: &mut Value, wait: std::time::Duration) -> Option<String> {
    let limit = clients::hook_timeout(client.name());
    let marker = format!(" hook {}", client.name());
    let secs = wait.as_secs().max(1);
    let timeout = secs + 15;
    fn walk(value: &mut Value, each: &mut dyn FnMut(&mut Map<String, Value>)) {
        match value {
            Value::Object(object) => {
                each(object);
                for child in object.values_mut() {
                    walk(child, each);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, each)),
            _ => {}
        }
    }
    walk(json, &mut |entry| {
        for field in ["command", "bash"] {
            let Some(Value::String(command)) = entry.get_mut(field) else {
                continue;
            };
            if !command.contains(&marker) {
                continue;
            }
            command.push_str(&format!(" --ask wait={secs}s"));
            if let Some((key, millis)) = limit.key {
                let value = if millis { timeout * 1000 } else { timeout };
                entry.insert(key.to_owned(), Value::from(value));
            }
        }
    });
    (limit.key.is_none() && wait + std::time::Duration::from_secs(5) > limit.default).then(|| {
        format!(
            "{} has no hook timeout gavel can set, and it may stop a hook after about {} s: \
             a wait of {secs} s may outlast it (a shorter --ask wait=DURATION is safer)",
            client.name(),
            limit.default.as_secs()
        )
    })
}

/// The command the hooks run gavel by: `gavel` when the `gavel` on `PATH`
/// is the same gavel as this binary (the same file, or a copy: the same
/// bytes or version), else this binary's absolute path; a note when the
/// `PATH` one stands in for this one, a warning when the path lies in a
/// build folder.
fn hook_program(this: &Path) -> (String, Option<String>, Option<String>) {
    if let Some((on_path, same)) = install::gavel_on_path(this) {
        let note = match same {
            install::Same::File => None,
            _ if !install::in_build_folder(this) => None,
            install::Same::Contents | install::Same::Version(_) => Some(format!(
                "the hooks run `gavel` from PATH (`{}`), the same gavel as this one in a build folder (`{}`)",
                on_path.display(),
                this.display()
            )),
        };
        return ("gavel".to_owned(), note, None);
    }
    let shown = this.to_string_lossy().into_owned();
    let warning = install::in_build_folder(this).then(|| {
        let found = install::which("gavel").map_or_else(
            || "there is no gavel on PATH".to_owned(),
            |other| {
                format!(
                    "the gavel on PATH, `{}`, is another version",
                    other.display()
                )
            },
        );
        format!(
            "the hooks run `{shown}`, inside a build folder, because {found}: after `cargo clean` they find no gavel \
             and the client runs its tools ungoverned. Install this gavel on PATH (`cargo install --path .`) \
             and run `gavel init --force` again; `gavel init --check` tells whether the hooks still run"
        )
    });
    (shown, None, warning)
}

/// `gavel init --check`: every installed hook command must run this gavel.
fn check(client: &dyn Client, hooks_path: &Path, this: &Path) -> anyhow::Result<Exit> {
    let programs = match install::hooks(client, hooks_path, this)? {
        Hooks::NoFile => {
            render::line(&format!(
                "not installed: `{}` does not exist (`gavel init {}` installs the hooks)",
                hooks_path.display(),
                client.name()
            ))?;
            return Ok(Exit::Failed);
        }
        Hooks::NoGavelHook => {
            render::line(&format!(
                "not installed: `{}` has no `hook {}` command",
                hooks_path.display(),
                client.name()
            ))?;
            return Ok(Exit::Failed);
        }
        Hooks::Installed(programs) => programs,
    };
    let mut broken = 0;
    for (program, runs) in &programs {
        let verdict = match runs {
            Runs::This => "ok: runs this gavel".to_owned(),
            Runs::Other(found) => format!("runs another binary, `{}`", found.display()),
            Runs::Missing => {
                "BROKEN: no such program; the client would run its tools ungoverned".to_owned()
            }
        };
        if *runs != Runs::This {
            broken += 1;
        }
        render::line(&format!("{}: `{program}`: {verdict}", hooks_path.display()))?;
    }
    if broken > 0 {
        render::line(&format!(
            "fix: `gavel init {} --force` with the gavel you want the hooks to run",
            client.name()
        ))?;
        return Ok(Exit::Failed);
    }
    Ok(Exit::Ok)
}

/// Adds `.gavel/` to the project's `.gitignore` (made when missing), so
/// that `git add -A` never commits the record or its keys.
fn ignore_record(project: &Path) -> anyhow::Result<Option<PathBuf>> {
    let path = project.join(".gitignore");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err).with_context(|| format!("cannot read `{}`", path.display())),
    };
    let listed = text.lines().map(str::trim).any(|l| {
        matches!(
            l,
            ".gavel" | ".gavel/" | "/.gavel" | "/.gavel/" | ".gavel/*" | "/.gavel/*"
        )
    });
    if listed {
        return Ok(None);
    }
    let mut updated = text;
    if !updated.is_empty() && !updated.ends_with('\n') {
        updated.push('\n');
    }
    updated.push_str("# gavel's audit record and its keys (gavel init)\n.gavel/\n");
    std::fs::write(&path, updated).with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(Some(path))
}

pub fn run(global: &Global, args: InitArgs) -> anyhow::Result<Exit> {
    let client = clients::by_name(&args.client)
        .with_context(|| format!("unknown client `{}`", args.client))?;
    let project = global.workspace()?.root().to_path_buf();
    let gavel = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot find the path of this gavel binary")?;
    let (program, path_note, warning) = hook_program(&gavel);
    let mut config = client.hook_config(&program);
    let wait_warning = args
        .ask
        .map(|ask| gavel::session::hook_wait_for(client.name(), ask))
        .and_then(|wait| with_wait(client, &mut config.json, wait));
    let hooks_path = if args.user {
        let Some(user_path) = config.user_path else {
            bail!(
                "{} reads hooks from the project only; run without --user",
                client.name()
            );
        };
        PathBuf::from(std::env::var_os("HOME").context("$HOME is not set")?).join(user_path)
    } else {
        project.join(config.path)
    };
    let policy_path = project.join("gavel.toml");
    if args.check {
        return check(client, &hooks_path, &gavel);
    }
    // A policy the user changed is theirs: --force refreshes the hooks and
    // keeps it, unless --overwrite-policy says otherwise.
    let customised =
        std::fs::read_to_string(&policy_path).is_ok_and(|text| text != CODING_AGENT_POLICY_TOML);
    let write_policy = !args.user && (!customised || args.overwrite_policy);

    // Check everything before writing anything.
    let existing = install::read_settings(&hooks_path)?;
    if existing.is_some() && !args.force {
        bail!(
            "`{}` exists; --force adds gavel's hooks to it (replacing earlier gavel hooks, keeping the others)",
            hooks_path.display()
        );
    }
    if !args.user && policy_path.exists() && !args.force {
        bail!(
            "`{}` exists; --force refreshes the hooks and keeps it (--overwrite-policy replaces it with the coding-agent policy)",
            policy_path.display()
        );
    }

    let merged = install::merge_hooks(client, existing, &config.json);
    if let Some(parent) = hooks_path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create `{}`", parent.display()))?;
    }
    let text = serde_json::to_string_pretty(&merged)? + "\n";
    std::fs::write(&hooks_path, text)
        .with_context(|| format!("cannot write `{}`", hooks_path.display()))?;
    let events: Vec<&String> = config
        .json
        .get("hooks")
        .and_then(Value::as_object)
        .map(|hooks| hooks.keys().collect())
        .unwrap_or_default();
    render::line(&format!(
        "wrote {}: gavel (`{program}`) answers {}",
        hooks_path.display(),
        events
            .iter()
            .map(|e| e.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ))?;
    if write_policy {
        std::fs::write(&policy_path, CODING_AGENT_POLICY_TOML)
            .with_context(|| format!("cannot write `{}`", policy_path.display()))?;
        render::line(&format!(
            "wrote {}: the coding-agent policy (read-only tools and commands allowed, writes in the workspace and network fetches asked)",
            policy_path.display()
        ))?;
    } else if args.user {
        render::line(
            "no policy written: each project uses its gavel.toml, else the built-in policy (`gavel policy show --preset coding-agent > gavel.toml` starts one)",
        )?;
    } else {
        render::line(&format!(
            "kept {}: it differs from the coding-agent preset (--overwrite-policy replaces it)",
            policy_path.display()
        ))?;
    }
    if !args.user
        && let Some(ignore) = ignore_record(&project)?
    {
        render::line(&format!(
            "wrote {}: `.gavel/` (the record and its keys) is never committed",
            ignore.display()
        ))?;
    }
    if let Some(note) = &path_note {
        render::line(&format!("note: {note}"))?;
    }
    if let Some(warning) = &warning {
        let _ = writeln!(std::io::stderr(), "gavel: warning: {warning}");
    }
    if let Some(warning) = &wait_warning {
        let _ = writeln!(std::io::stderr(), "gavel: warning: {warning}");
    }
    if !args.user {
        // The folder of the database (which the first hook creates): every
        // hook then leaves a log whose cut tail `verify` catches.
        let db = global.db_path()?;
        if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("cannot create `{}`", dir.display()))?;
        }
        // The log's own key, named by the log's id, outside the workspace
        // (an agent that can rewrite the log cannot re-sign it); the log
        // starts vouched for: its first checkpoint is signed now, not at
        // the first call.
        let mut store = global.open_store()?;
        let key_path = gavel::store::checkpoint_key_path(&db, &store.identity().log_id);
        gavel::store::prepare_key_dir(&key_path)
            .with_context(|| format!("cannot create the folder of `{}`", key_path.display()))?;
        let key = gavel::checkpoint::read_or_create_key(&key_path, "gavel")?;
        if key_path == gavel::store::checkpoint_key_beside(&db) {
            render::line(&format!(
                "checkpoint key {}: beside the log, where whoever can rewrite the log can re-sign it (no home folder for keys: set HOME or XDG_DATA_HOME)",
                key_path.display()
            ))?;
        } else {
            render::line(&format!(
                "checkpoint key {}: each hook signs a checkpoint of the log it leaves (GAVEL_CHECKPOINT_EVERY=0 turns that off)",
                key_path.display()
            ))?;
        }
        if store.checkpoint_rows()?.is_empty() {
            match store.checkpoint(&key)? {
                Ok((checkpoint, _)) => render::line(&format!(
                    "log {}: first checkpoint signed ({} events)",
                    db.display(),
                    checkpoint.size
                ))?,
                Err(report) => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "gavel: warning: no first checkpoint: `{}` does not verify ({} at seq {}); `gavel verify` says more",
                        db.display(),
                        report.problem.map_or("unknown", |p| p.as_str()),
                        report.first_bad_seq.unwrap_or(0)
                    );
                }
            }
        }
    }
    let waits = args
        .ask
        .map(|ask| gavel::session::hook_wait_for(client.name(), ask));
    // What an ask becomes, for every client: with --ask wait, the queue.
    if waits.is_none() {
        render::line(&format!("note: {}", config.asks))?;
    }
    for note in &config.notes {
        render::line(&format!("note: {note}"))?;
    }
    if let Some(wait) = waits {
        render::line(&format!(
            "note: asks wait up to {} s in the pending queue: `gavel pending` lists them, `gavel approve ID` or `gavel reject ID` answers from another terminal",
            wait.as_secs().max(1)
        ))?;
    }
    Ok(Exit::Ok)
}
