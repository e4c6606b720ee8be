//! Records a generated session in-process, through gavel's own recording
//! path (`GovernedRunner` with `Store` as the sink, durability normal): the
//! fallback for building the benchmark log when `gavel serve` is missing.
//!
//! usage: gen-log --workspace DIR --db FILE --events N [--id-prefix P] [--seed S]

use std::path::PathBuf;
use std::time::Instant;

use gavel::policy::Policy;
use gavel::store::{Durability, Store};
use gavel::tools::Registry;
use gavel::{ApprovalStatus, Decision, GovernedRunner, ToolRequest, Workspace};
use gavel_bench::{flag, mix, required};

const USAGE: &str = "gen-log --workspace DIR --db FILE --events N [--id-prefix P] [--seed S]";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(required(&args, "--workspace", USAGE));
    let db = PathBuf::from(required(&args, "--db", USAGE));
    let events: u64 = required(&args, "--events", USAGE).parse()?;
    let prefix = flag(&args, "--id-prefix").unwrap_or_else(|| "toolu_".into());
    let seed: u64 = flag(&args, "--seed").map_or(Ok(1), |s| s.parse())?;

    std::fs::create_dir_all(&dir)?;
    mix::setup_workspace(&dir)?;
    let workspace = Workspace::open(&dir)?;
    let calls = mix::calls(&workspace, events, &prefix, seed);
    let started = Instant::now();
    let mut store = Store::open(&db, Durability::Normal)?;
    let runner = GovernedRunner::new(Policy::builtin(), workspace, Registry::builtin());
    store.remember_policy(runner.policy())?;
    let mut total = 0;
    for call in &calls {
        let answer = call.answer;
        let mut approver = move |_: &ToolRequest, _: &Decision| match answer {
            Some(true) => ApprovalStatus::Approved,
            _ => ApprovalStatus::Rejected,
        };
        let id = call.request.tool_use_id.clone();
        runner.run(&id, &call.request, None, &mut approver, &mut store)?;
        total += call.events();
    }
    drop(store);
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{{\"calls\":{},\"events\":{total},\"seconds\":{seconds},\"events_per_s\":{}}}",
        calls.len(),
        total as f64 / seconds
    );
    Ok(())
}
