//! `gavel central retain --before YYYY-MM`: drop the central store's
//! monthly partitions of events before a month; each log keeps where it was
//! cut (chain, Merkle frontier, a note signed by the central key), and
//! `gavel verify` starts it there.

use std::path::PathBuf;

use clap::Args;

use gavel::central::Central;
use gavel::central::retain::{self, parse_month};
use gavel::checkpoint;

use super::central::{Target, central_url};
use super::{Exit, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct RetainArgs {
    /// Drop the partitions of months before this one (YYYY-MM, UTC); at most the current month
    #[arg(long, value_name = "YYYY-MM")]
    pub before: String,
    /// The central signing key given to `gavel central init` (it signs each cut note)
    #[arg(long, value_name = "KEY", env = "GAVEL_CENTRAL_KEY")]
    pub key: PathBuf,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn run(global: &Global, args: RetainArgs) -> anyhow::Result<Exit> {
    let before = parse_month(&args.before)?;
    let key = checkpoint::read_signing_key(&args.key)?;
    let url = central_url(global)?;
    let mut central = Central::open(&url, args.target.schema.as_deref())?;
    let now = chrono::Utc::now();
    let current = parse_month(&now.format("%Y-%m").to_string())?;
    let report = retain::retain(&mut central, &key, before, current)?;
    // A partition kept for a log is something to look into: exit 1.
    let exit = if report.held.is_empty() {
        Exit::Ok
    } else {
        Exit::Failed
    };
    if args.format.is_json() {
        render::json(&serde_json::to_value(&report)?)?;
        return Ok(exit);
    }
    for held in &report.held {
        render::line(&render::escape(&format!(
            "kept {}: host `{}`, log {} has rows up to its cut in it (its accept times went backwards); run `gavel verify --db …`",
            held.partition, held.host, held.origin
        )))?;
    }
    if report.partitions.is_empty() {
        render::line(&format!("no partitions before {} dropped", args.before))?;
        return Ok(exit);
    }
    render::line(&format!(
        "dropped {} partition(s) ({}); {} log(s) cut",
        report.partitions.len(),
        report.partitions.join(", "),
        report.cuts.len()
    ))?;
    for cut in &report.cuts {
        render::line(&render::escape(&format!(
            "  host `{}`, log {}: rows 1..{} gone ({} now), verify starts at seq {}",
            cut.host,
            cut.origin,
            cut.size,
            cut.dropped,
            cut.size + 1
        )))?;
    }
    Ok(exit)
}
