//! `gavel replay`: recorded requests decided again under the current policy;
//! the drift, and an exit code a CI job can gate a policy change on.

use clap::{Args, ValueEnum};

use gavel::replay::{self, DriftReport, FactSource};
use gavel::store::Problem;

use super::query::QueryArgs;
use super::verify::{progress_bar, verify_store};
use super::{Exit, FormatArgs, Global, render};

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
    /// Re-gather facts from the filesystem as it is now instead of using the recorded ones
    #[arg(long)]
    pub live: bool,
    /// Replay even if the chain does not verify (the output says so)
    #[arg(long)]
    pub skip_verify: bool,
    /// Exit 1 when drift of this kind exists
    #[arg(long, value_enum, default_value_t = FailOn::Any)]
    pub fail_on: FailOn,
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn run(global: &Global, args: ReplayArgs) -> anyhow::Result<Exit> {
    let store = global.read_store_with(args.query.read)?;
    if !args.skip_verify {
        let report = verify_store(&store, None)?;
        if !report.ok {
            anyhow::bail!(
                "refusing to replay `{}`: the chain does not verify ({} at seq {}); --skip-verify replays anyway",
                store.path().display(),
                report.problem.map(Problem::as_str).unwrap_or("unknown"),
                report.first_bad_seq.unwrap_or(0)
            );
        }
    }
    let workspace = global.workspace()?;
    let policy = global.policy(&workspace)?;
    let source = if args.live {
        FactSource::Live
    } else {
        FactSource::Recorded
    };
    let bar = progress_bar(&store, "replaying")?;
    let report = replay::replay(&store, &args.query.to_query()?, &policy, source, &mut |n| {
        if let Some(bar) = &bar {
            bar.set_position(n);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    store.check_unchanged()?;

    if args.format.is_json() {
        let mut value = serde_json::to_value(&report)?;
        if let Some(object) = value.as_object_mut() {
            object.insert("verified".into(), (!args.skip_verify).into());
        }
        render::json(&value)?;
    } else {
        print_table(&report, args.skip_verify)?;
    }
    let failing = match args.fail_on {
        FailOn::Any => report.changed,
        FailOn::Loosened => report.loosened,
        FailOn::Tightened => report.tightened,
        FailOn::Never => 0,
    };
    Ok(if failing > 0 { Exit::Failed } else { Exit::Ok })
}

pub fn print_table(report: &DriftReport, skipped_verify: bool) -> std::io::Result<()> {
    if skipped_verify {
        render::line("WARNING: the chain was not verified (--skip-verify)")?;
    }
    let current = &report.policy.current;
    render::line(&format!(
        "Replayed {} calls under policy `{}` (sha256 {}) with {} facts",
        report.total,
        render::escape(&current.name),
        render::cell(&current.digest, 16),
        match report.facts {
            FactSource::Recorded => "recorded",
            FactSource::Live => "live",
        }
    ))?;
    render::line(&format!(
        "  unchanged {} (reason changed {}), changed {}: loosened {}, tightened {}, rerouted {}",
        report.unchanged,
        report.reason_changed,
        report.changed,
        report.loosened,
        report.tightened,
        report.rerouted
    ))?;
    if report.parse_differs > 0 {
        render::line(&format!(
            "  {} long command(s) parse differently now than when decided (their parse was recorded by digest); they were replayed on today's parse",
            report.parse_differs
        ))?;
    }
    if report.anomalies > 0 {
        render::line(&format!(
            "!! {} call(s) with anomalies in this range (not replayed as such: a tool ran outside what gavel decided), e.g. {}; `gavel audit` lists them",
            report.anomalies,
            render::escape(&report.anomaly_calls.join(", "))
        ))?;
    }
    if report.transitions.is_empty() {
        return render::line("No drift.");
    }
    render::table(
        &["direction", "from", "to", "calls", "e.g."],
        report.transitions.iter().map(|t| {
            [
                format!("{:?}", t.direction).to_lowercase(),
                format!("{} {}", t.from.action, t.from.rule_id),
                format!("{} {}", t.to.action, t.to.rule_id),
                t.count.to_string(),
                t.call_ids.join(", "),
            ]
        }),
    )
}
