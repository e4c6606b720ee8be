//! `gavel verify`: check the chain, every stored checkpoint note and
//! optionally a signed checkpoint file, or an exported archive with no
//! database. Exit 0 intact, 1 tampered, 2 could not verify.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use gavel::checkpoint::{self, VerifierKey};
use gavel::store::{GivenCheckpoint, Problem, Store, StoreError, VerifyOptions, VerifyReport};

use super::{Exit, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Also prove the log still holds this signed checkpoint
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// A checkpoint signer's public key (KEY.pub), repeatable: every checkpoint
    /// note (the --checkpoint file and each one stored in the log) must be
    /// signed by one of them. Without it no signature is checked.
    #[arg(long, value_name = "KEY.pub")]
    pub public_key: Vec<PathBuf>,
    /// Verify this JSON-lines export (`gavel export`) instead of a database
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// Verify this OCSF export (`gavel export --format ocsf`, e.g. a SIEM's copy) instead
    /// of a database: its chain, its checkpoints, and that no event was edited
    #[arg(long, value_name = "FILE", conflicts_with = "export")]
    pub ocsf: Option<PathBuf>,
    #[command(flatten)]
    pub schema: super::query::SchemaArg,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// A progress bar on stderr when it is a terminal and the log is long.
pub fn progress_bar(store: &Store, what: &str) -> anyhow::Result<Option<ProgressBar>> {
    if !std::io::stderr().is_terminal() {
        return Ok(None);
    }
    let total = store.event_count()?;
    if total < 200_000 {
        return Ok(None);
    }
    let bar = ProgressBar::new(total).with_message(what.to_owned());
    if let Ok(style) = ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} events ({eta})") {
        bar.set_style(style);
    }
    Ok(Some(bar))
}

/// Verifies the log behind `store`, with an optional checkpoint file.
pub fn verify_store(
    store: &Store,
    checkpoint: Option<GivenCheckpoint<'_>>,
) -> anyhow::Result<VerifyReport> {
    verify_with(
        store,
        &VerifyOptions {
            checkpoint,
            ..VerifyOptions::default()
        },
    )
}

fn verify_with(store: &Store, options: &VerifyOptions<'_>) -> anyhow::Result<VerifyReport> {
    let bar = progress_bar(store, "verifying")?;
    let report = store.verify(options, &mut |rows| {
        if let Some(bar) = &bar {
            bar.set_position(rows);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(report)
}

pub fn run(global: &Global, args: VerifyArgs) -> anyhow::Result<Exit> {
    #[cfg(feature = "postgres")]
    if let Some(url) = global.central_url()
        && args.export.is_none()
        && args.ocsf.is_none()
    {
        return super::central_read::verify(&url, &args);
    }
    args.schema.check_local()?;
    let keys: Vec<VerifierKey> = args
        .public_key
        .iter()
        .map(|path| checkpoint::read_verifier_key(path))
        .collect::<Result<_, _>>()?;
    let note = match &args.checkpoint {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read checkpoint `{}`", path.display()))?,
        ),
        None => None,
    };
    let label = args
        .checkpoint
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let given = note.as_deref().map(|note| GivenCheckpoint {
        label: &label,
        note,
    });
    let json = args.format.is_json();
    if let Some(path) = &args.ocsf {
        let outcome = gavel::ocsf::verify(path, given, &keys)
            .with_context(|| format!("OCSF export `{}`", path.display()))?;
        return print(&outcome.report, json, Some(outcome.whole_chain), None);
    }
    if let Some(path) = &args.export {
        let file = std::fs::File::open(path)
            .with_context(|| format!("cannot read export `{}`", path.display()))?;
        let outcome = gavel::archive::verify_export(std::io::BufReader::new(file), given, &keys)
            .with_context(|| format!("export `{}`", path.display()))?;
        return print(&outcome.report, json, Some(outcome.whole_chain), None);
    }
    let store = match Store::open_read_only(&global.db_path()?) {
        Ok(store) => store,
        Err(err @ (StoreError::IdentityMissing { .. } | StoreError::IdentityMalformed { .. })) => {
            return print(
                &tampered(Problem::IdentityMismatch, err.to_string(), &keys),
                json,
                None,
                None,
            );
        }
        Err(err @ StoreError::UnknownFormat { .. }) => {
            return print(
                &tampered(Problem::UnknownFormat, err.to_string(), &keys),
                json,
                None,
                None,
            );
        }
        Err(err) => return Err(err.into()),
    };
    let report = verify_with(
        &store,
        &VerifyOptions {
            checkpoint: given,
            keys: &keys,
            root: false,
        },
    )?;
    let exit = print(&report, json, None, begins_mid_session(&store)?.as_ref())?;
    Ok(exit)
}

/// What the log's first event says when a hook started the log in the
/// middle of a session: a note, not a failure (the chain is whole; what
/// came before it was never recorded here).
fn begins_mid_session(store: &Store) -> anyhow::Result<Option<serde_json::Value>> {
    // A first row that cannot even be read (a column of the wrong type) is
    // the verification's finding, not an error of this note.
    let Ok(Some(first)) = store.first_event() else {
        return Ok(None);
    };
    if first.kind != "lifecycle" {
        return Ok(None);
    }
    let payload: serde_json::Value = serde_json::from_slice(&first.payload).unwrap_or_default();
    if payload["event"] != gavel::clients::LOG_STARTED_MID_SESSION {
        return Ok(None);
    }
    Ok(Some(serde_json::json!({
        "session_id": payload["data"]["session_id"],
        "client": payload["data"]["client"],
    })))
}

/// A failed report that no row can be blamed for.
fn tampered(problem: Problem, detail: String, keys: &[VerifierKey]) -> VerifyReport {
    let mut report = VerifyReport::bad(0, None, problem, detail);
    report.signature_checked = !keys.is_empty();
    report
}

fn print(
    report: &VerifyReport,
    json: bool,
    whole_chain: Option<bool>,
    mid_session: Option<&serde_json::Value>,
) -> anyhow::Result<Exit> {
    if json {
        let mut value = serde_json::to_value(report)?;
        if let (Some(whole), Some(object)) = (whole_chain, value.as_object_mut()) {
            object.insert("whole_chain".into(), whole.into());
        }
        if let (Some(note), Some(object)) = (mid_session, value.as_object_mut()) {
            object.insert("begins_mid_session".into(), note.clone());
        }
        if let Some(object) = value.as_object_mut() {
            // Whether a cut tail would be caught: a checkpoint vouches for a size.
            object.insert(
                "tail_protected".into(),
                (report.checkpoint.is_some() || report.stored_checkpoints > 0).into(),
            );
        }
        render::json(&value)?;
    } else if report.ok {
        let mut line = match whole_chain {
            Some(false) => format!(
                "ok: {} events of a filtered export, each matching its leaf hash (not a whole chain)",
                report.rows
            ),
            _ => format!("ok: {} events, chain intact", report.rows),
        };
        if report.stored_checkpoints > 0 {
            line.push_str(&format!(
                "; holds {} stored checkpoint{}",
                report.stored_checkpoints,
                if report.stored_checkpoints == 1 {
                    ""
                } else {
                    "s"
                }
            ));
        }
        if let Some(cp) = &report.checkpoint {
            line.push_str(&format!("; holds checkpoint of {} events", cp.size));
        }
        if report.checkpoint.is_some() || report.stored_checkpoints > 0 {
            line.push_str(if report.signature_checked {
                " (signatures verified)"
            } else {
                " (signatures NOT checked: no --public-key)"
            });
        }
        render::line(&line)?;
        if report.checkpoint.is_none() && report.stored_checkpoints == 0 && whole_chain.is_none() {
            render::line(
                "note: no checkpoint vouches for this log, so rows cut from its end cannot be detected; \
                 `gavel checkpoint --key KEY` signs one (gavel's hooks, `run` and `serve` sign them \
                 automatically unless GAVEL_CHECKPOINT_EVERY=0)",
            )?;
        }
        if let Some(note) = mid_session {
            render::line(&format!(
                "note: the log begins mid-session ({} session `{}`): what that session did before its first recorded event is not in this log",
                note["client"].as_str().unwrap_or("?"),
                render::escape(note["session_id"].as_str().unwrap_or("?"))
            ))?;
        }
    } else {
        let problem = report.problem.map(Problem::as_str).unwrap_or("unknown");
        let seq = report
            .first_bad_seq
            .map(|s| format!(" at seq {s}"))
            .unwrap_or_default();
        render::line(&format!(
            "TAMPERED: {problem}{seq}: {}",
            report.detail.as_deref().unwrap_or("")
        ))?;
    }
    Ok(if report.ok { Exit::Ok } else { Exit::Failed })
}
