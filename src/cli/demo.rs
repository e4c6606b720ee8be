//! `gavel demo`: a short scripted session in a fresh temporary workspace,
//! showing each stage of the pipeline on the built-in policy (the script is
//! `gavel::demo`).

use std::path::PathBuf;

use clap::Args;

use gavel::demo;
use gavel::frontend::run::outcome_json;
use gavel::policy::Policy;
use gavel::replay::{self, FactSource};
use gavel::store::AuditQuery;

use super::{Exit, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Where to create the demo workspace [default: a new temporary folder]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Run in --dir even if it is not empty: the demo writes notes.txt and
    /// report.md there and appends its calls to .gavel/audit.db
    #[arg(long, requires = "dir")]
    pub force: bool,
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn run(global: &Global, args: DemoArgs) -> anyhow::Result<Exit> {
    let dir = match args.dir {
        Some(dir) => {
            if !args.force {
                demo::refuse_used_folder(&dir)?;
            }
            dir
        }
        None => std::env::temp_dir().join(format!("gavel-demo-{}", std::process::id())),
    };
    // The demo always decides by the built-in policy, whatever --policy says.
    let (mut service, db) = demo::open(&dir, global.db.clone())?;

    let json = args.format.is_json();
    let mut rows = Vec::new();
    // Call ids unique to this run, so a demo can be run again into the same
    // folder; always 8 hex digits, so they line up.
    let run = format!(
        "{:08x}",
        chrono::Utc::now().timestamp_micros() & 0xffff_ffff
    );
    let call_id = |index: usize| format!("demo-{run}-{}", index + 1);
    for (index, step) in demo::script().iter().enumerate() {
        let outcome = demo::run_step(&mut service, call_id(index), step)?;
        if json {
            render::json(&outcome_json(&outcome))?;
            continue;
        }
        let decision = outcome.decision();
        rows.push([
            (index + 1).to_string(),
            step.what.to_owned(),
            format!(
                "{} {}",
                step.tool,
                render::cell(&outcome.request.arguments.to_string(), 40)
            ),
            decision.action.to_string(),
            decision.rule_id.clone(),
            outcome.resolution.approval.to_string(),
            outcome.result.status.as_str().to_owned(),
        ]);
    }
    // A signed checkpoint vouches for the session, as after any hook.
    let store = service.store();
    gavel::session::auto_checkpoint(store, 1);
    let report = store.verify(&gavel::store::VerifyOptions::default(), &mut |_| {})?;
    if json {
        render::json(&serde_json::to_value(&report)?)?;
        return Ok(if report.ok { Exit::Ok } else { Exit::Failed });
    }
    render::line(&format!("gavel demo: workspace {}", dir.display()))?;
    render::line("\n1. Six calls through policy -> approval -> execution:")?;
    render::table_dropping(
        &["#", "step", "call", "action", "rule", "approval", "status"],
        rows,
        // Narrow: approval, then status go first; the rule stays.
        &[5, 6],
    )?;
    render::line(&format!(
        "\n2. Recorded as {} hash-chained events in {}",
        report.rows,
        db.display()
    ))?;
    let events = store.event_count()?;
    render::line(&format!(
        "\n3. gavel verify: {}",
        if report.ok {
            format!("ok, {events} events, chain intact")
        } else {
            format!("TAMPERED: {:?}", report.problem)
        }
    ))?;
    let changed = Policy::from_toml(&demo::policy_change(), "demo change")?;
    let drift = replay::replay(
        store,
        &AuditQuery::default(),
        &changed,
        FactSource::Recorded,
        &mut |_| {},
    )?;
    render::line(
        "\n4. gavel replay under a changed policy (markdown writes allowed, notes.txt private):",
    )?;
    render::drift_table(&drift, false)?;
    // Runnable as printed: the gavel on PATH, else this binary's path.
    let gavel = super::gavel_command();
    let db = gavel::clients::shell_word(&db.to_string_lossy());
    render::line(&format!(
        "\nTry: {gavel} log --db {db}\n     {gavel} explain {} --db {db}\n     {gavel} verify --db {db}",
        call_id(3)
    ))?;
    Ok(if report.ok { Exit::Ok } else { Exit::Failed })
}
