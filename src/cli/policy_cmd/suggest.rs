//! `gavel policy suggest`: rules learned from the record, each with its
//! proof (the library's `suggest`); `--apply` writes chosen ones in.

use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use gavel::suggest::{self, Options, apply};

use crate::cli::{Exit, FormatArgs, Global, QueryArgs, render};

#[derive(Args, Debug)]
pub struct SuggestArgs {
    #[command(flatten)]
    pub query: QueryArgs,
    /// Distinct approved variants a rung needs (approved calls, for an exact command)
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub min_support: usize,
    /// Also propose removing allow rules and grants that decided nothing in the last
    /// DURATION of the record (30d, 12h, 2w)
    #[arg(long, value_name = "DURATION")]
    pub unused_for: Option<String>,
    /// Learn from the earlier part of each session and report on this later fraction
    #[arg(long, value_name = "FRACTION")]
    pub holdout: Option<f64>,
    /// Write the proposals (and removals) numbered N into the project's policy file,
    /// recorded in the log
    #[arg(
        long,
        value_name = "N,...",
        value_delimiter = ',',
        conflicts_with = "holdout"
    )]
    pub apply: Vec<usize>,
    /// With --apply: install them as the shadow policy `suggested` instead
    #[arg(long, requires = "apply")]
    pub shadow: bool,
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn run(global: &Global, args: SuggestArgs) -> anyhow::Result<Exit> {
    let workspace = global.workspace()?;
    let policy = global.policy(&workspace)?;
    let options = Options {
        min_support: args.min_support,
        unused_for: args
            .unused_for
            .as_deref()
            .map(suggest::parse_window)
            .transpose()?,
        holdout: args.holdout,
    };
    let mut source = global.source(&args.query.schema, args.query.selection(), args.query.read)?;
    let central = source.is_central();
    let label = source.label();
    let mut reading = source.reading()?;
    // Learning from a record that does not verify would learn what its editor wrote.
    if !reading.verify(None, &[], &mut |_| {})?.ok() {
        anyhow::bail!(
            "refusing to learn from `{label}`: it does not verify (`gavel verify` says where)"
        );
    }
    let mut found = None;
    reading.for_each_log(&args.query.to_query()?, |log| {
        anyhow::ensure!(
            found.is_none(),
            "suggest reads one log: pick one with --log"
        );
        let bar = render::progress_bar(log.store, "reading")?;
        let report = suggest::suggest(log.store, log.query, &policy, &options, &mut |n| {
            if let Some(bar) = &bar {
                bar.set_position(n);
            }
        })?;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        found = Some(report);
        Ok(())
    })?;
    let report = found.context("no log matches")?;
    if !args.apply.is_empty() {
        anyhow::ensure!(
            !central,
            "--apply records the change in a local log; give its --db"
        );
        drop(reading);
        drop(source);
        let mut store = global.open_store()?;
        let by =
            Arc::new(gavel::principal::Principal::current("cli").with_host_id_beside(store.path()));
        let file = apply::project_file(&policy, workspace.root());
        let applied = apply::apply(
            &mut store,
            &report,
            &policy,
            &file,
            &args.apply,
            args.shadow,
            &by,
        )?;
        if args.format.is_json() {
            render::json(&serde_json::to_value(&applied)?)?;
        } else {
            render::line(&render::escape(&applied.describe()))?;
        }
        return Ok(Exit::Ok);
    }
    if args.format.is_json() {
        render::json(&serde_json::to_value(&report)?)?;
    } else {
        for line in suggest::text(&report).lines() {
            render::line(&render::escape(line))?;
        }
    }
    Ok(Exit::Ok)
}
