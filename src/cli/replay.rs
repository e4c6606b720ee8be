//! `gavel replay`: recorded requests decided again under the current policy;
//! the drift, and an exit code a CI job can gate a policy change on.

use std::io::Write;

use clap::{Args, ValueEnum};

use serde_json::json;

use gavel::replay::{self, DriftReport, FactSource, Kept};
use gavel::source::{Location, Selection, Source, Verified};

use super::{Exit, GateFormatArgs, Global, QueryArgs, render};

/// Which drift makes `replay` exit 1.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOn {
    /// Any loosened, tightened or rerouted call
    Any,
    Loosened,
    Tightened,
    Never,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub query: QueryArgs,
    /// Replay the calls of this JSON-lines export (`gavel export`: a reference record
    /// committed for a CI gate) instead of a database; verified as `verify --export` does
    #[arg(long, value_name = "FILE")]
    pub export: Option<std::path::PathBuf>,
    /// Re-gather facts from the filesystem as it is now instead of using the recorded ones
    #[arg(long)]
    pub live: bool,
    /// Do not re-decide: compare what was enforced with the verdicts the shadow policy
    /// NAME recorded on each live call (calls without one are left out)
    #[arg(long, value_name = "NAME", conflicts_with = "live")]
    pub shadow: Option<String>,
    /// Replay even if the chain does not verify (the output says so)
    #[arg(long)]
    pub skip_verify: bool,
    /// Exit 1 when drift of this kind exists; with `any` or `loosened`, calls that
    /// cannot be re-decided exactly (a command or path stored redacted) fail too
    #[arg(long, value_enum, default_value_t = FailOn::Any)]
    pub fail_on: FailOn,
    /// Do not fail on calls that cannot be re-decided exactly (they are still listed)
    #[arg(long)]
    pub allow_undecidable: bool,
    /// Stream every changed call as one JSON line (call_id, tool, arguments, from, to,
    /// direction) as it is found; the counts go to stderr
    #[arg(long)]
    pub calls: bool,
    /// Re-decide calls a grant allowed by the policy alone (by default, one the
    /// policy still asks about stays allowed by its grant)
    #[arg(long)]
    pub no_grants: bool,
    #[command(flatten)]
    pub format: GateFormatArgs,
}

impl ReplayArgs {
    /// The library's gate for `--fail-on` and `--allow-undecidable`.
    fn gate(&self) -> replay::Gate {
        let fail_on = match self.fail_on {
            FailOn::Any => replay::FailOn::Any,
            FailOn::Loosened => replay::FailOn::Loosened,
            FailOn::Tightened => replay::FailOn::Tightened,
            FailOn::Never => replay::FailOn::Never,
        };
        replay::Gate {
            fail_on,
            allow_undecidable: self.allow_undecidable,
        }
    }
}

pub fn run(global: &Global, args: ReplayArgs) -> anyhow::Result<Exit> {
    let ci = args.format.ci();
    if ci.is_some() && args.calls {
        anyhow::bail!(
            "--calls streams JSON lines; it does not go with --format junit|sarif|github"
        );
    }
    let (format, gate) = (args.format.plain(), args.gate());
    let mut source = match &args.export {
        Some(_) if args.query.log.is_some() || args.query.schema.schema.is_some() => {
            anyhow::bail!("--log and --schema pick in a central store; --export reads one log")
        }
        Some(path) => Source::open(Location::Export(path.clone()), Selection::default(), false)?,
        None => global.source(&args.query.schema, args.query.selection(), args.query.read)?,
    };
    if let Some(integrity) = source.opened() {
        super::warn(integrity);
    }
    let label = source.label();
    let central = source.is_central();
    // What is verified is what is replayed: one snapshot for both.
    let mut reading = source.reading()?;
    if !args.skip_verify {
        let bar = render::progress_of(reading.event_count()?, "verifying")?;
        let verified = reading.verify(None, &[], &mut |n| {
            if let Some(bar) = &bar {
                bar.set_position(n);
            }
        })?;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        match verified {
            Verified::Local { report, .. } if !report.ok => anyhow::bail!(
                "refusing to replay `{label}`: the chain does not verify ({} at seq {}); --skip-verify replays anyway",
                report.problem.map_or("unknown", |p| p.as_str()),
                report.first_bad_seq.unwrap_or(0)
            ),
            #[cfg(feature = "postgres")]
            Verified::Central(report) if !report.ok => anyhow::bail!(
                "refusing to replay: the central store does not verify ({} in {} of host `{}` at seq {}); --skip-verify replays anyway",
                report.problem.as_deref().unwrap_or("unknown"),
                report.origin.as_deref().unwrap_or("?"),
                report.host.as_deref().unwrap_or("?"),
                report.first_bad_seq.unwrap_or(0)
            ),
            _ => {}
        }
    }
    let policy = match &args.shadow {
        Some(_) => None,
        None => Some(global.policy(&global.workspace()?)?),
    };
    // JSON lists every changed call, a CI report every call; a table shows only examples.
    let kept = match ci {
        Some(_) => Kept::Every,
        None if format.is_json() && !args.calls => Kept::All,
        None => Kept::Examples,
    };
    let sites = policy
        .as_ref()
        .map(gavel::ci::Sites::of)
        .unwrap_or_default();
    let mut checks = match &policy {
        Some(policy) => gavel::ci::Report::for_policy("replay", policy),
        None => gavel::ci::Report::new("replay"),
    };
    let mut failing = 0u64;
    let mut out = Vec::new();
    let logs = reading.for_each_log(&args.query.to_query()?, |log| -> anyhow::Result<()> {
        let central = log.from.map(|from| json!({ "host": from.host, "log": from.origin }));
        let mut changes = Vec::new();
        let mut on_change = |change: &replay::ChangedCall| -> anyhow::Result<()> {
            if args.calls {
                let mut value = serde_json::to_value(change)?;
                if let (Some(central), Some(object)) = (&central, value.as_object_mut()) {
                    object.insert("central".into(), central.clone());
                }
                render::json(&value)?;
            } else if kept == Kept::All {
                changes.push(change.clone());
            }
            Ok(())
        };
        let bar = render::progress_bar(log.store, "replaying")?;
        let mut progress = |n| {
            if let Some(bar) = &bar {
                bar.set_position(n);
            }
        };
        let (store, query) = (log.store, log.query);
        let report = match &policy {
            // No policy: the shadow named is compared with what was enforced.
            None => {
                let name = args.shadow.as_deref().unwrap_or_default();
                replay::shadow_calls(store, query, name, kept, &mut progress, &mut on_change)?
            }
            Some(policy) => replay::replay_calls_with(
                store,
                query,
                policy,
                if args.live {
                    FactSource::Live
                } else {
                    FactSource::Recorded
                },
                kept,
                if args.no_grants {
                    replay::Grants::Ignored
                } else {
                    replay::Grants::AsRecorded
                },
                &mut progress,
                &mut on_change,
            )?,
        };
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        store.check_unchanged()?;
        failing += gate.failing(&report);
        let name = log.from.map(|f| format!("host `{}`, log {}", f.host, f.origin));
        match log.from {
            _ if ci.is_some() => gavel::ci::replay(&mut checks, &report, gate, &sites, name.as_deref()),
            Some(from) if args.calls => eprintln!(
                "gavel: host `{}`, log {}: replayed {} calls: unchanged {}, changed {} (loosened {}, tightened {}, rerouted {})",
                from.host,
                from.origin,
                report.total,
                report.unchanged,
                report.changed,
                report.loosened,
                report.tightened,
                report.rerouted
            ),
            None if args.calls => eprintln_summary(&report)?,
            Some(from) if format.is_json() => {
                let mut value = serde_json::to_value(&report)?;
                if let Some(object) = value.as_object_mut() {
                    object.insert("host".into(), from.host.clone().into());
                    object.insert("log".into(), from.origin.clone().into());
                    object.insert("calls".into(), serde_json::to_value(&changes)?);
                }
                out.push(value);
            }
            None if format.is_json() => print_json(&report, !args.skip_verify, &changes)?,
            Some(_) => {
                render::line(&render::escape(&format!("== {}", name.unwrap_or_default())))?;
                render::drift_table(&report, args.skip_verify)?;
            }
            None => render::drift_table(&report, args.skip_verify)?,
        }
        Ok(())
    })?;
    if let Some(ci) = ci {
        // The report's errors are the calls the gate counted.
        debug_assert_eq!(checks.fails(), failing > 0);
        super::print_ci(&checks, ci)?;
    } else if central && format.is_json() && !args.calls {
        render::json(&json!({ "verified": !args.skip_verify, "logs": out }))?;
    } else if central && logs == 0 && !args.calls {
        render::line("no logs match")?;
    }
    Ok(if failing > 0 { Exit::Failed } else { Exit::Ok })
}

/// A local log's report as JSON, written straight out: with every changed
/// call listed, a JSON tree of the whole report would cost several times its size.
fn print_json(
    report: &DriftReport,
    verified: bool,
    calls: &[replay::ChangedCall],
) -> anyhow::Result<()> {
    #[derive(serde::Serialize)]
    struct Out<'a> {
        #[serde(flatten)]
        report: &'a DriftReport,
        verified: bool,
        /// Every changed call, oldest first.
        calls: &'a [replay::ChangedCall],
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer(
        &mut out,
        &Out {
            report,
            verified,
            calls,
        },
    )
    // Back to the io::Error it wraps, so a closed pipe exits quietly.
    .map_err(std::io::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// With `--calls`: the counts on stderr, stdout keeping only the calls.
fn eprintln_summary(report: &DriftReport) -> std::io::Result<()> {
    writeln!(
        std::io::stderr(),
        "gavel: replayed {} calls: unchanged {}, changed {} (loosened {}, tightened {}, rerouted {}), undecidable {}",
        report.total,
        report.unchanged,
        report.changed,
        report.loosened,
        report.tightened,
        report.rerouted,
        report.undecidable
    )
}
