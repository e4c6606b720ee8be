//! `gavel approve CALL_ID` and `gavel reject CALL_ID`: answer a call waiting
//! in the pending queue, from another process. The answer is bound to the
//! call's recorded arguments and policy, and recorded with channel `cli`
//! and the OS user who gave it.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use serde_json::json;

use gavel::approval::{ApprovalChannel, ApprovalStatus};
use gavel::approvals::{self, QueueAnswer};
use gavel::principal::Principal;

use super::{Exit, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct AnswerArgs {
    /// The waiting call (see `gavel pending`)
    pub call_id: String,
    /// Why, recorded with the answer
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Answer only if the call's recorded arguments have this SHA-256
    /// (`arguments_sha256` in `gavel pending --json`)
    #[arg(long, value_name = "SHA256")]
    pub digest: Option<String>,
    /// Do not ask for confirmation on a terminal
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn approve(global: &Global, args: AnswerArgs) -> anyhow::Result<Exit> {
    answer(global, args, ApprovalStatus::Approved)
}

pub fn reject(global: &Global, args: AnswerArgs) -> anyhow::Result<Exit> {
    answer(global, args, ApprovalStatus::Rejected)
}

fn answer(global: &Global, args: AnswerArgs, status: ApprovalStatus) -> anyhow::Result<Exit> {
    let mut store = global.open_store()?;
    let now = chrono::Utc::now().timestamp_micros();
    let events = store
        .call_events(&args.call_id)
        .with_context(|| format!("cannot answer call `{}`", render::escape(&args.call_id)))?;
    let shown = approvals::check_answer(
        &args.call_id,
        &events,
        &QueueAnswer {
            status,
            channel: ApprovalChannel::Cli,
            approver: String::new(),
            reason: None,
            arguments_sha256: args.digest.clone(),
        },
        now,
    )?;
    let verb = match status {
        ApprovalStatus::Approved => "approve",
        _ => "reject",
    };
    if std::io::stdin().is_terminal() && !args.yes {
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "gavel: call {} [{}]\n  reason: {}\n  tool:   {}\n  input:  {}",
            render::escape(&shown.call_id),
            render::escape(&shown.rule_id),
            render::escape(&shown.reason),
            render::escape(&shown.tool),
            render::cell(&shown.arguments.to_string(), 2000),
        )?;
        write!(err, "{} this call? [y/N] ", capitalized(verb))?;
        err.flush()?;
        drop(err);
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        if !matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            let _ = writeln!(std::io::stderr(), "gavel: nothing recorded");
            return Ok(Exit::Failed);
        }
    }
    let principal = Arc::new(Principal::current("cli").with_host_id_beside(store.path()));
    let answered = approvals::answer(
        &mut store,
        &args.call_id,
        &QueueAnswer {
            status,
            channel: ApprovalChannel::Cli,
            approver: principal.user.clone(),
            reason: args.reason.clone(),
            // Bound to what was shown, whatever was asked for.
            arguments_sha256: Some(shown.arguments_sha256.clone()),
        },
        Some(&principal),
        chrono::Utc::now().timestamp_micros(),
    )?;
    if args.format.is_json() {
        render::json(&json!({
            "call_id": answered.call_id,
            "approval": status,
            "channel": "cli",
            "approver": principal.user,
            "arguments_sha256": answered.arguments_sha256,
            "policy_digest": answered.policy_digest,
        }))?;
    } else {
        render::line(&format!(
            "{} call {} ({}) as {}",
            match status {
                ApprovalStatus::Approved => "approved",
                _ => "rejected",
            },
            render::escape(&answered.call_id),
            render::escape(&answered.tool),
            render::escape(&principal.user)
        ))?;
    }
    Ok(Exit::Ok)
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}
