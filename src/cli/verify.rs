//! `gavel verify`: check the chain, and optionally that the log still holds
//! a signed checkpoint. Exit 0 intact, 1 tampered, 2 could not verify.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use gavel::checkpoint::{self, Checkpoint};
use gavel::store::{Problem, Store, StoreError, VerifyOptions, VerifyReport};

use super::{Exit, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Also prove the log still holds this signed checkpoint
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// The checkpoint signer's public key (KEY.pub); without it the signature is not checked
    #[arg(long, value_name = "KEY.pub", requires = "checkpoint")]
    pub public_key: Option<PathBuf>,
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

/// Verifies the log behind `store`, with an optional checkpoint.
pub fn verify_store(
    store: &Store,
    checkpoint: Option<&Checkpoint>,
) -> anyhow::Result<VerifyReport> {
    let bar = progress_bar(store, "verifying")?;
    let report = store.verify(
        &VerifyOptions {
            checkpoint,
            root: false,
        },
        &mut |rows| {
            if let Some(bar) = &bar {
                bar.set_position(rows);
            }
        },
    )?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(report)
}

pub fn run(global: &Global, args: VerifyArgs) -> anyhow::Result<Exit> {
    let store = match Store::open_read_only(&global.db_path()?) {
        Ok(store) => store,
        Err(err @ StoreError::IdentityMissing { .. }) => {
            let report = tampered(Problem::IdentityMismatch, err.to_string());
            return print(&report, args.format.is_json(), None);
        }
        Err(err) => return Err(err.into()),
    };
    let mut note_checked = None;
    let checkpoint = match &args.checkpoint {
        None => None,
        Some(path) => {
            let note = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read checkpoint `{}`", path.display()))?;
            let opened = match &args.public_key {
                Some(key) => {
                    note_checked = Some(true);
                    checkpoint::open(&note, &checkpoint::read_verifier_key(key)?)
                }
                None => {
                    note_checked = Some(false);
                    checkpoint::parse_unverified(&note)
                }
            };
            match opened {
                Ok(cp) => Some(cp),
                Err(err) => {
                    let detail = format!("checkpoint `{}`: {err}", path.display());
                    let report = tampered(Problem::CheckpointSignature, detail);
                    return print(&report, args.format.is_json(), note_checked);
                }
            }
        }
    };
    let report = verify_store(&store, checkpoint.as_ref())?;
    print(&report, args.format.is_json(), note_checked)
}

/// A failed report that no row can be blamed for.
fn tampered(problem: Problem, detail: String) -> VerifyReport {
    VerifyReport {
        ok: false,
        rows: 0,
        first_bad_seq: None,
        problem: Some(problem),
        detail: Some(detail),
        head: None,
        checkpoint: None,
        root: None,
    }
}

fn print(
    report: &VerifyReport,
    json: bool,
    signature_checked: Option<bool>,
) -> anyhow::Result<Exit> {
    if json {
        let mut value = serde_json::to_value(report)?;
        if let (Some(checked), Some(object)) = (signature_checked, value.as_object_mut()) {
            object.insert("signature_checked".into(), checked.into());
        }
        render::json(&value)?;
    } else if report.ok {
        let mut line = format!("ok: {} events, chain intact", report.rows);
        if let Some(cp) = &report.checkpoint {
            line.push_str(&format!(
                "; holds checkpoint of {} events{}",
                cp.size,
                if signature_checked == Some(true) {
                    " (signature verified)"
                } else {
                    " (signature NOT checked: no --public-key)"
                }
            ));
        }
        render::line(&line)?;
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
