//! `gavel verify`: check the chain, every stored checkpoint note and
//! optionally a signed checkpoint file, or an exported archive with no
//! database. Exit 0 intact, 1 tampered, 2 could not verify.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use gavel::checkpoint::{self, VerifierKey};
use gavel::source::{Selection, Source, Verified};
use gavel::store::{GivenCheckpoint, Problem, VerifyReport};

use super::{Exit, GateFormatArgs, Global, SchemaArg, render};

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
    /// Check this receipt (`gavel receipt`) alone, with no database, against
    /// the --public-key keys (at least one must sign; `--policy K-of-N` asks
    /// for K) or a C2SP tlog-policy file given as --policy
    #[arg(long, value_name = "FILE", conflicts_with_all = ["export", "ocsf", "checkpoint"])]
    pub receipt: Option<PathBuf>,
    #[command(flatten)]
    pub schema: SchemaArg,
    #[command(flatten)]
    pub format: GateFormatArgs,
}

impl VerifyArgs {
    /// Whether the output is to be JSON.
    pub fn json(&self) -> bool {
        self.format.plain().is_json()
    }
}

/// How `verify` prints: a line, JSON, or a CI report naming the log.
#[derive(Clone, Copy)]
enum Out<'a> {
    Text,
    Json,
    Ci(gavel::ci::Format, &'a str),
}

pub fn run(global: &Global, args: VerifyArgs) -> anyhow::Result<Exit> {
    let location = if args.export.is_none() && args.ocsf.is_none() {
        Some(global.location(&args.schema, &Selection::default())?)
    } else {
        if args.schema.schema.is_some() {
            anyhow::bail!("--schema selects the schema of a central store; give --db postgres://…");
        }
        None
    };
    if location.as_ref().is_some_and(|l| l.is_central()) && args.checkpoint.is_some() {
        anyhow::bail!(
            "--checkpoint checks a local log; a central store's checkpoints are all checked"
        );
    }
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
    let log = match (&args.ocsf, &args.export, &location) {
        (Some(path), _, _) | (_, Some(path), _) => path.display().to_string(),
        (_, _, Some(gavel::source::Location::Local(path))) => path.display().to_string(),
        _ => "central store".to_owned(),
    };
    let out = match args.format.ci() {
        Some(format) => Out::Ci(format, &log),
        None if args.format.plain().is_json() => Out::Json,
        None => Out::Text,
    };
    if let Some(path) = &args.ocsf {
        let outcome = gavel::ocsf::verify(path, given, &keys)
            .with_context(|| format!("OCSF export `{}`", path.display()))?;
        return print(&outcome.report, out, Some(outcome.whole_chain), None);
    }
    if let Some(path) = &args.export {
        let file = std::fs::File::open(path)
            .with_context(|| format!("cannot read export `{}`", path.display()))?;
        let outcome = gavel::archive::verify_export(std::io::BufReader::new(file), given, &keys)
            .with_context(|| format!("export `{}`", path.display()))?;
        return print(&outcome.report, out, Some(outcome.whole_chain), None);
    }
    let Some(location) = location else {
        unreachable!("a database is verified only when no export is given")
    };
    let mut source = match Source::open(location, Selection::default(), false) {
        Ok(source) => source,
        Err(err) => match err.tampered() {
            Some(problem) => {
                return print(&tampered(problem, err.to_string(), &keys), out, None, None);
            }
            None => return Err(err.into()),
        },
    };
    let mut reading = source.reading()?;
    let bar = render::progress_of(reading.event_count()?, "verifying")?;
    let verified = reading.verify(given, &keys, &mut |rows| {
        if let Some(bar) = &bar {
            bar.set_position(rows);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    match verified {
        Verified::Local {
            report,
            mid_session,
            short_of_quorum,
        } => {
            let exit = print(&report, out, None, mid_session.as_ref())?;
            for short in &short_of_quorum {
                eprintln!(
                    "QUORUM: call `{}` was approved by {} of {} needed ({})",
                    render::escape(&short.call_id),
                    short.counted.len(),
                    short.needed.quorum,
                    gavel::approvals::describe_approvers(&short.needed)
                );
            }
            Ok(if short_of_quorum.is_empty() {
                exit
            } else {
                Exit::Failed
            })
        }
        #[cfg(feature = "postgres")]
        Verified::Central(report) => print_central(&report, out),
    }
}

/// A failed report that no row can be blamed for.
fn tampered(problem: Problem, detail: String, keys: &[VerifierKey]) -> VerifyReport {
    let mut report = VerifyReport::bad(0, None, problem, detail);
    report.signature_checked = !keys.is_empty();
    report
}

fn print(
    report: &VerifyReport,
    out: Out<'_>,
    whole_chain: Option<bool>,
    mid_session: Option<&serde_json::Value>,
) -> anyhow::Result<Exit> {
    if let Out::Ci(format, log) = out {
        let mut checks = gavel::ci::Report::new("verify");
        gavel::ci::verify(&mut checks, report, log);
        super::print_ci(&checks, format)?;
    } else if let Out::Json = out {
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

/// What verifying a central store found: every log, checkpoint,
/// cosignature and the central log.
#[cfg(feature = "postgres")]
fn print_central(
    report: &gavel::central::verify::CentralReport,
    out: Out<'_>,
) -> anyhow::Result<Exit> {
    if let Out::Ci(format, _) = out {
        let mut checks = gavel::ci::Report::new("verify");
        gavel::ci::verify_central(&mut checks, report);
        super::print_ci(&checks, format)?;
    } else if let Out::Json = out {
        render::json(&serde_json::to_value(report)?)?;
    } else if report.ok {
        render::line(&format!(
            "ok: {} logs, {} events, chains intact{}; {} host checkpoints signed by their enrolled hosts and cosigned; central log of {} leaves intact, {} central checkpoints ({})",
            report.logs,
            report.events,
            if report.cut_logs > 0 {
                format!(" ({} from their retention cut)", report.cut_logs)
            } else {
                String::new()
            },
            report.checkpoints,
            report.central_log,
            report.central_checkpoints,
            if report.central_key_given {
                "central key verified"
            } else {
                "central key NOT checked against one you hold: no --public-key"
            }
        ))?;
    } else {
        let mut place = Vec::new();
        if let Some(origin) = &report.origin {
            place.push(format!("log {origin}"));
        }
        if let Some(host) = &report.host {
            place.push(format!("of host `{host}`"));
        }
        if let Some(seq) = report.first_bad_seq {
            place.push(format!("at seq {seq}"));
        }
        render::line(&render::escape(&format!(
            "TAMPERED: {} in {}: {}",
            report.problem.as_deref().unwrap_or("unknown"),
            place.join(" "),
            report.detail.as_deref().unwrap_or("")
        )))?;
    }
    Ok(if report.ok { Exit::Ok } else { Exit::Failed })
}
