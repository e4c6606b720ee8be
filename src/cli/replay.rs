//! `gavel replay`: recorded requests decided again under the current policy;
//! the drift, and an exit code a CI job can gate a policy change on.

use std::io::Write;

use clap::{Args, ValueEnum};

use gavel::replay::{self, DriftReport, FactSource, Kept};
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
    pub format: FormatArgs,
}

pub fn run(global: &Global, args: ReplayArgs) -> anyhow::Result<Exit> {
    #[cfg(feature = "postgres")]
    if let Some(url) = global.central_url() {
        return super::central_read::replay(&url, global, &args);
    }
    args.query.check_local()?;
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
    let bar = progress_bar(&store, "replaying")?;
    // JSON lists every changed call; a table shows only examples.
    let kept = if args.format.is_json() && !args.calls {
        Kept::All
    } else {
        Kept::Examples
    };
    let streaming = args.calls;
    let mut changes = Vec::new();
    let mut progress = |n| {
        if let Some(bar) = &bar {
            bar.set_position(n);
        }
    };
    let mut on_change = |change: &replay::ChangedCall| -> anyhow::Result<()> {
        if streaming {
            render::json(&serde_json::to_value(change)?)?;
        } else if kept == Kept::All {
            changes.push(change.clone());
        }
        Ok(())
    };
    let query = args.query.to_query()?;
    let report = match &args.shadow {
        Some(name) => {
            replay::shadow_calls(&store, &query, name, kept, &mut progress, &mut on_change)?
        }
        None => {
            let workspace = global.workspace()?;
            let policy = global.policy(&workspace)?;
            let source = if args.live {
                FactSource::Live
            } else {
                FactSource::Recorded
            };
            replay::replay_calls_with(
                &store,
                &query,
                &policy,
                source,
                kept,
                if args.no_grants {
                    replay::Grants::Ignored
                } else {
                    replay::Grants::AsRecorded
                },
                &mut progress,
                &mut on_change,
            )?
        }
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    store.check_unchanged()?;

    if args.calls {
        eprintln_summary(&report)?;
    } else if args.format.is_json() {
        // Written straight out: with every changed call listed, a JSON tree
        // of the whole report would cost several times its size.
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
                report: &report,
                verified: !args.skip_verify,
                calls: &changes,
            },
        )
        // Back to the io::Error it wraps, so a closed pipe exits quietly.
        .map_err(std::io::Error::from)?;
        writeln!(out)?;
        out.flush()?;
    } else {
        print_table(&report, args.skip_verify)?;
    }
    let failing = failing(&report, args.fail_on, args.allow_undecidable);
    Ok(if failing > 0 { Exit::Failed } else { Exit::Ok })
}

/// How many calls make the gate fail: the drift `fail_on` names, and,
/// unless allowed, the undecidable calls that drift could hide in.
pub fn failing(report: &DriftReport, fail_on: FailOn, allow_undecidable: bool) -> u64 {
    let undecidable = |n: u64| if allow_undecidable { 0 } else { n };
    match fail_on {
        FailOn::Any => report.changed + undecidable(report.undecidable),
        FailOn::Loosened => report.loosened + undecidable(report.undecidable_loosened),
        FailOn::Tightened => report.tightened,
        FailOn::Never => 0,
    }
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

/// How many examples the table shows per transition, and their width.
const EXAMPLES_SHOWN: usize = 3;
const EXAMPLE_CHARS: usize = 48;

pub fn print_table(report: &DriftReport, skipped_verify: bool) -> std::io::Result<()> {
    if skipped_verify {
        render::line("WARNING: the chain was not verified (--skip-verify)")?;
    }
    let current = &report.policy.current;
    let facts = match report.facts {
        FactSource::Recorded => "recorded",
        FactSource::Live => "live",
        FactSource::Shadow => "",
    };
    render::line(&if report.facts == FactSource::Shadow {
        format!(
            "Compared {} calls with what shadow policy `{}` (sha256 {}) decided on them live",
            report.total,
            render::escape(&current.name),
            render::cell(&current.digest, 16),
        )
    } else {
        format!(
            "Replayed {} calls under policy `{}` (sha256 {}) with {facts} facts",
            report.total,
            render::escape(&current.name),
            render::cell(&current.digest, 16),
        )
    })?;
    render::line(&format!(
        "  unchanged {} (reason changed {}), changed {}: loosened {}, tightened {}, rerouted {}",
        report.unchanged,
        report.reason_changed,
        report.changed,
        report.loosened,
        report.tightened,
        report.rerouted
    ))?;
    let covered: Vec<&gavel::replay::GrantedCall> =
        report.granted_calls.iter().filter(|g| g.covered).collect();
    let lapsed: Vec<&gavel::replay::GrantedCall> =
        report.granted_calls.iter().filter(|g| !g.covered).collect();
    let shown = |calls: &[&gavel::replay::GrantedCall]| {
        let mut shown: Vec<String> = calls
            .iter()
            .take(10)
            .map(|g| match &g.lapsed {
                Some(why) => format!(
                    "{} (grant {}: {})",
                    render::escape(&g.call_id),
                    render::escape(&g.grant),
                    render::escape(why)
                ),
                None => format!(
                    "{} (grant {})",
                    render::escape(&g.call_id),
                    render::escape(&g.grant)
                ),
            })
            .collect();
        if calls.len() > 10 {
            shown.push("…".to_owned());
        }
        shown.join(", ")
    };
    if !covered.is_empty() {
        render::line(&format!(
            "  {} call(s) allowed by a grant: {}",
            covered.len(),
            shown(&covered)
        ))?;
    }
    if !lapsed.is_empty() {
        render::line(&format!(
            "  {} call(s) a grant does not cover (any more): {}",
            lapsed.len(),
            shown(&lapsed)
        ))?;
    }
    if report.parse_differs > 0 {
        render::line(&format!(
            "  {} long command(s) parse differently now than when decided (their parse was recorded by digest); they were replayed on today's parse",
            report.parse_differs
        ))?;
    }
    if report.undecidable > 0 {
        let shown: Vec<String> = report
            .undecidable_calls
            .iter()
            .take(EXAMPLES_SHOWN)
            .map(|c| {
                format!(
                    "{} {} {} -> {} {}",
                    c.call_id, c.from.action, c.from.rule_id, c.to.action, c.to.rule_id
                )
            })
            .collect();
        render::line(&format!(
            "!! {} call(s) undecidable ({} of them would loosen): a command or path the policy reads was stored with a secret redacted, and the redacted call decides differently, so the policy's effect cannot be proven (e.g. {}); they fail --fail-on any|loosened unless --allow-undecidable",
            report.undecidable,
            report.undecidable_loosened,
            render::escape(&shown.join("; "))
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
        return render::line(if report.undecidable > 0 {
            "No drift among the calls that could be re-decided."
        } else {
            "No drift."
        });
    }
    // One row per example: the transition on the first, the rest under it.
    let mut rows = Vec::new();
    for t in &report.transitions {
        let mut examples: Vec<String> = t
            .examples
            .iter()
            .take(EXAMPLES_SHOWN)
            .map(|e| {
                render::cell(
                    &format!("{} {} {}", e.call_id, e.tool, e.arguments),
                    EXAMPLE_CHARS,
                )
            })
            .collect();
        if t.count > examples.len() as u64 {
            examples.push(format!("(+{} more)", t.count - examples.len() as u64));
        }
        for (i, example) in examples.into_iter().enumerate() {
            rows.push(if i == 0 {
                [
                    format!("{:?}", t.direction).to_lowercase(),
                    format!("{} {}", t.from.action, t.from.rule_id),
                    format!("{} {}", t.to.action, t.to.rule_id),
                    t.count.to_string(),
                    example,
                ]
            } else {
                [
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    example,
                ]
            });
        }
    }
    render::table(&["direction", "from", "to", "calls", "e.g."], rows)
}
