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
use gavel::approvals::{self, GrantAsk, GrantKind, QueueAnswer};
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
    /// Answer as the enrolled approver NAME (`gavel approvers`), proved by their
    /// authenticator's code: `--code`, else asked for on the terminal
    #[arg(long = "as", value_name = "NAME")]
    pub approver: Option<String>,
    /// The current code of NAME's authenticator app
    #[arg(long, value_name = "CODE", requires = "approver")]
    pub code: Option<String>,
    /// With the approval, grant the same again: `call` (this exact call), `command` (its
    /// program and subcommand, e.g. `cargo test`, with any arguments inside the workspace),
    /// `paths=GLOB` (its file tool, or an MCP tool's declared path arguments, on paths under
    /// GLOB), or `tool` (its MCP server tool, mcp__SERVER__TOOL, with any arguments)
    #[arg(long, value_name = "call|command|paths=GLOB|tool", value_parser = parse_grant)]
    pub grant: Option<GrantKind>,
    /// Limit the grant to the call's client session [default when the call has one]
    #[arg(long, requires = "grant")]
    pub session: bool,
    /// Limit the grant to DURATION from now (`30m`, `8h`) [default 1h without a session]
    #[arg(long = "for", value_name = "DURATION", requires = "grant",
          value_parser = gavel::approvals::parse_wait)]
    pub lasts: Option<std::time::Duration>,
    /// Limit the grant to N calls
    #[arg(long, value_name = "N", requires = "grant",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub uses: Option<u64>,
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
    if args.grant.is_some() && status != ApprovalStatus::Approved {
        anyhow::bail!("--grant goes with an approval, not a rejection");
    }
    let mut store = global.open_store()?;
    let now = chrono::Utc::now().timestamp_micros();
    let principal = Arc::new(Principal::current("cli").with_host_id_beside(store.path()));
    let (approver, proof) = match &args.approver {
        Some(name) => {
            let code = match &args.code {
                Some(code) => code.clone(),
                None => super::read_secret_line(&format!("code of {name}'s authenticator: "))?,
            };
            let proof = approvals::approvers::prove(&store, name, &code, now)?;
            (name.clone(), Some(proof))
        }
        None => (principal.user.clone(), None),
    };
    let events = store
        .call_events(&args.call_id)
        .with_context(|| format!("cannot answer call `{}`", render::escape(&args.call_id)))?;
    let shown = approvals::check_answer(
        &args.call_id,
        &events,
        &QueueAnswer {
            status,
            channel: ApprovalChannel::Cli,
            approver: approver.clone(),
            reason: None,
            arguments_sha256: args.digest.clone(),
            grant: args.grant.clone().map(|kind| GrantAsk {
                kind,
                session: false,
                lasts: None,
                uses: None,
            }),
            proof: proof.clone(),
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
    let answered = approvals::answer(
        &mut store,
        &args.call_id,
        &QueueAnswer {
            status,
            channel: ApprovalChannel::Cli,
            approver: approver.clone(),
            proof: proof.clone(),
            reason: args.reason.clone(),
            // Bound to what was shown, whatever was asked for.
            arguments_sha256: Some(shown.arguments_sha256.clone()),
            grant: args.grant.clone().map(|kind| {
                let limited = args.session || args.lasts.is_some() || args.uses.is_some();
                GrantAsk {
                    kind,
                    session: args.session || (!limited && shown.session.is_some()),
                    lasts: args.lasts.or_else(|| {
                        (!limited && shown.session.is_none())
                            .then_some(std::time::Duration::from_secs(3600))
                    }),
                    uses: args.uses,
                }
            }),
        },
        Some(&principal),
        chrono::Utc::now().timestamp_micros(),
    )?;
    // The grant, if one was made, is the newest one this approval created.
    let granted = match args.grant {
        Some(_) => approvals::grants(&store)?
            .into_iter()
            .rev()
            .find(|g| g.record.call_id == answered.call_id),
        None => None,
    };
    // An approval short of its rule's quorum is one vote; the call waits on.
    let votes = answered.votes.len() + 1;
    let quorum = answered.approvers.as_ref().map(|a| a.quorum as usize);
    if args.format.is_json() {
        render::json(&json!({
            "call_id": answered.call_id,
            "approval": answered.recorded_status(status),
            "channel": "cli",
            "approver": approver,
            "factor": proof.as_ref().map(|p| p.factor),
            "votes": quorum.map(|_| votes),
            "quorum": quorum,
            "arguments_sha256": answered.arguments_sha256,
            "policy_digest": answered.policy_digest,
            "grant": granted.as_ref().map(|g| json!(g)),
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
            render::escape(&approver)
        ))?;
        if let Some(quorum) = quorum.filter(|_| status == ApprovalStatus::Approved) {
            render::line(&format!("{votes} of {quorum} approvals"))?;
        }
        if let Some(grant) = &granted {
            render::line(&format!(
                "granted {}: {} (`gavel revoke {}` ends it)",
                grant.record.grant,
                render::escape(&grant.record.scope.describe()),
                grant.record.grant
            ))?;
        }
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

fn parse_grant(text: &str) -> Result<GrantKind, String> {
    match text.split_once('=') {
        None if text == "call" => Ok(GrantKind::Call),
        None if text == "command" => Ok(GrantKind::Command),
        None if text == "tool" => Ok(GrantKind::Tool),
        Some(("paths", glob)) if !glob.is_empty() => Ok(GrantKind::Paths(glob.to_owned())),
        _ => Err(format!(
            "`{text}` is not `call`, `command`, `paths=GLOB` or `tool`"
        )),
    }
}
