//! `gavel doctor`: checks a workspace end to end and says what to fix, one
//! line per check (the checks are `gavel::doctor`). Changes nothing. Exit 0
//! when no check fails, 1 otherwise.

use anyhow::Context as _;
use clap::Args;
use serde_json::json;

use gavel::doctor::{Status, examine};

use super::{Exit, Format, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn run(global: &Global, args: DoctorArgs) -> anyhow::Result<Exit> {
    let this = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot find the path of this gavel binary")?;
    let (root, report) = examine(&global.setup(), &this)?;
    let failed = report.failed();
    match args.format.get() {
        Format::Json => render::json(&json!({
            "workspace": root,
            "ok": !failed,
            "checks": report.0,
        }))?,
        Format::Jsonl => {
            for check in &report.0 {
                render::json(&serde_json::to_value(check)?)?;
            }
        }
        Format::Table => {
            let mut lines = Vec::new();
            for c in &report.0 {
                let status = match c.status {
                    Status::Ok => "ok",
                    Status::Warn => "warn",
                    Status::Fail => "fail",
                };
                let fix = c
                    .fix
                    .as_deref()
                    .map(|f| format!("; fix: {f}"))
                    .unwrap_or_default();
                lines.push(format!("{status:<4}  {}: {}{fix}", c.check, c.message));
            }
            lines.push(format!(
                "{} ok, {} warn, {} fail (workspace {})",
                report.count(Status::Ok),
                report.count(Status::Warn),
                report.count(Status::Fail),
                root.display()
            ));
            render::text(&lines)?;
        }
    }
    Ok(if failed { Exit::Failed } else { Exit::Ok })
}
