//! `gavel init <client>`: installs gavel as a client's hooks (project or
//! user level, with the absolute path of this gavel binary) and writes the
//! coding-agent policy to `gavel.toml` in the project. Refuses to change
//! an existing file without `--force`; prints what it changed.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::Args;
use serde_json::{Map, Value};

use gavel::clients::{self, Client};
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
    /// (other hooks are kept), and gavel.toml is rewritten
    #[arg(long)]
    pub force: bool,
}

pub fn run(global: &Global, args: InitArgs) -> anyhow::Result<Exit> {
    let client = clients::by_name(&args.client)
        .with_context(|| format!("unknown client `{}`", args.client))?;
    let project = global.workspace()?.root().to_path_buf();
    let gavel = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot find the path of this gavel binary")?;
    let config = client.hook_config(&gavel.to_string_lossy());
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
    let write_policy = !args.user;

    // Check everything before writing anything.
    let existing = read_json(&hooks_path)?;
    if existing.is_some() && !args.force {
        bail!(
            "`{}` exists; --force adds gavel's hooks to it (replacing earlier gavel hooks, keeping the others)",
            hooks_path.display()
        );
    }
    if write_policy && policy_path.exists() && !args.force {
        bail!(
            "`{}` exists; --force replaces it with the coding-agent policy (`gavel policy show --preset coding-agent`)",
            policy_path.display()
        );
    }

    let merged = merge(client, existing, &config.json);
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
        "wrote {}: gavel ({}) answers {}",
        hooks_path.display(),
        gavel.display(),
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
    } else {
        render::line(
            "no policy written: each project uses its gavel.toml, else the built-in policy (`gavel policy show --preset coding-agent > gavel.toml` starts one)",
        )?;
    }
    if !args.user {
        // The key gavel signs its automatic checkpoints with, beside the
        // database (which the first hook creates): every hook then leaves
        // a log whose cut tail `verify` catches.
        let db = global.db_path()?;
        if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("cannot create `{}`", dir.display()))?;
        }
        let key = gavel::store::checkpoint_key_path(&db);
        gavel::checkpoint::read_or_create_key(&key, "gavel")?;
        render::line(&format!(
            "checkpoint key {}: each hook signs a checkpoint of the log it leaves (GAVEL_CHECKPOINT_EVERY=0 turns that off)",
            key.display()
        ))?;
    }
    for note in &config.notes {
        render::line(&format!("note: {note}"))?;
    }
    Ok(Exit::Ok)
}

/// The JSON object in `path`, `None` when there is no file.
fn read_json(path: &Path) -> anyhow::Result<Option<Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("cannot read `{}`", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(Some(Value::Object(Map::new())));
    }
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("`{}` is not JSON; fix or move it first", path.display()))?;
    if !value.is_object() {
        bail!(
            "`{}` is not a JSON object; fix or move it first",
            path.display()
        );
    }
    Ok(Some(value))
}

/// `existing` with gavel's hooks for each event of `ours`: entries that
/// already run `hook <client>` are replaced, every other entry is kept.
fn merge(client: &dyn Client, existing: Option<Value>, ours: &Value) -> Value {
    let Some(mut merged) = existing else {
        return ours.clone();
    };
    let marker = format!(" hook {}", client.name());
    let Some(object) = merged.as_object_mut() else {
        return ours.clone();
    };
    for (key, value) in ours.as_object().into_iter().flatten() {
        if key != "hooks" {
            object.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    let hooks = object
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    if !hooks.is_object() {
        *hooks = Value::Object(Map::new());
    }
    let Some(hooks) = hooks.as_object_mut() else {
        return merged;
    };
    for (event, entries) in ours
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let list = hooks
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Some(list) = list.as_array_mut() {
            list.retain(|entry| !entry.to_string().contains(&marker));
            list.extend(entries.as_array().into_iter().flatten().cloned());
        }
    }
    merged
}
