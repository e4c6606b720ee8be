//! `gavel policy diff OLD NEW`: the rules that changed, the sample requests
//! and the recorded calls whose decision moves; the fast first look before
//! a replay.

use std::path::Path;

use serde_json::json;

use gavel::policy::Policy;
use gavel::policy::diff::{rule_changes, sample_changes};
use gavel::replay::{self, DriftReport, Kept};
use gavel::store::AuditQuery;

use crate::cli::{Exit, GateFormatArgs, Global, render};

/// Sample changes a table shows; JSON lists them all.
const SHOWN: usize = 20;

pub fn run(
    global: &Global,
    old: &Path,
    new: &Path,
    no_log: bool,
    format: GateFormatArgs,
) -> anyhow::Result<Exit> {
    let (ci, format) = (format.ci(), format.plain());
    let old = Policy::load(old)?;
    let new = Policy::load(new)?;
    let rules = rule_changes(&old, &new);
    let (tried, samples) = sample_changes(&old, &new);
    // The recorded calls: `--db` (or $GAVEL_DB) must exist; the default log
    // is used when there is one.
    let mut calls = Vec::new();
    let log = if no_log || (global.db.is_none() && !global.db_path()?.exists()) {
        None
    } else {
        let store = global.read_store()?;
        let report = replay::diff_calls(
            &store,
            &AuditQuery::default(),
            &old,
            &new,
            if ci.is_some() {
                Kept::All
            } else {
                Kept::Examples
            },
            &mut |_| {},
            &mut |call| {
                if ci.is_some() {
                    calls.push(call.clone());
                }
                Ok::<_, gavel::store::StoreError>(())
            },
        )?;
        Some(report)
    };
    if let Some(ci) = ci {
        let mut report = gavel::ci::Report::for_policy("policy diff", &new);
        let sites = (gavel::ci::Sites::of(&old), gavel::ci::Sites::of(&new));
        gavel::ci::diff(&mut report, &rules, &samples, &calls, &sites.0, &sites.1);
        crate::cli::print_ci(&report, ci)?;
        return Ok(Exit::Ok);
    }
    if format.is_json() {
        render::json(&json!({
            "old": old.reference(),
            "new": new.reference(),
            "rules": rules,
            "sample": {"requests": tried, "changed": samples},
            "log": log,
        }))?;
        return Ok(Exit::Ok);
    }
    render::line(&format!(
        "policy `{}` ({}) -> `{}` ({})",
        render::escape(&old.reference().name),
        render::cell(&old.reference().digest, 12),
        render::escape(&new.reference().name),
        render::cell(&new.reference().digest, 12),
    ))?;
    if rules.is_empty() {
        render::line("rules: no change")?;
    } else {
        render::table(
            &["rule", "change", "action", "place"],
            rules.iter().map(|c| {
                [
                    c.rule_id.clone(),
                    c.describe(),
                    c.action
                        .map_or(String::new(), |(a, b)| format!("{a} -> {b}")),
                    c.position
                        .map_or(String::new(), |(a, b)| format!("{a} -> {b}")),
                ]
            }),
        )?;
    }
    render::line(&format!(
        "sample: {} of {tried} generated requests decide differently",
        samples.len()
    ))?;
    if !samples.is_empty() {
        render::table(
            &["tool", "arguments", "from", "to"],
            samples.iter().take(SHOWN).map(|c| {
                [
                    c.tool.clone(),
                    replay::sample_arguments(c),
                    format!("{} {}", c.from.0, c.from.1),
                    format!("{} {}", c.to.0, c.to.1),
                ]
            }),
        )?;
        if samples.len() > SHOWN {
            render::line(&format!(
                "  … and {} more (--format json lists them)",
                samples.len() - SHOWN
            ))?;
        }
    }
    match &log {
        None => render::line("log: none (--db names one)")?,
        Some(report) => log_lines(report)?,
    }
    Ok(Exit::Ok)
}

fn log_lines(report: &DriftReport) -> std::io::Result<()> {
    render::line(&format!(
        "log: {} recorded calls, {} decide differently (loosened {}, tightened {}, rerouted {})",
        report.total, report.changed, report.loosened, report.tightened, report.rerouted
    ))?;
    if report.transitions.is_empty() {
        return Ok(());
    }
    render::table(
        &["from", "to", "calls", "direction"],
        report.transitions.iter().map(|t| {
            [
                format!("{} {}", t.from.action, t.from.rule_id),
                format!("{} {}", t.to.action, t.to.rule_id),
                t.count.to_string(),
                format!("{:?}", t.direction).to_lowercase(),
            ]
        }),
    )
}
