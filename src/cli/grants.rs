//! `gavel grants` lists the grants in the record; `gavel revoke ID` records
//! a grant's revocation.

use std::sync::Arc;

use clap::Args;
use serde_json::json;

use gavel::approval::ApprovalChannel;
use gavel::approvals::{self, grants::Grant};
use gavel::principal::Principal;

use super::{Exit, Format, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct GrantsArgs {
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Args, Debug)]
pub struct RevokeArgs {
    /// The grant (see `gavel grants`)
    pub grant: String,
    /// Why, recorded with the revocation
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

pub fn list(global: &Global, args: GrantsArgs) -> anyhow::Result<Exit> {
    let found = if global.db_path()?.exists() {
        approvals::grants(&global.read_store()?)?
    } else {
        Vec::new()
    };
    let now = chrono::Utc::now().timestamp_micros();
    match args.format.get() {
        Format::Table if found.is_empty() => render::line("no grants")?,
        Format::Table => render::table(
            &["grant", "state", "scope", "limits", "used", "by", "call"],
            found.iter().map(|g| {
                vec![
                    g.record.grant.clone(),
                    g.state(now).to_owned(),
                    g.record.scope.describe(),
                    limits(g),
                    g.used.to_string(),
                    format!("{} via {}", g.record.created_by, g.record.channel.as_str()),
                    g.record.call_id.clone(),
                ]
            }),
        )?,
        Format::Json => render::json(&json!(
            found.iter().map(|g| to_json(g, now)).collect::<Vec<_>>()
        ))?,
        Format::Jsonl => {
            for g in &found {
                render::json(&to_json(g, now))?;
            }
        }
    }
    Ok(Exit::Ok)
}

fn limits(g: &Grant) -> String {
    let mut parts = Vec::new();
    if let Some(session) = &g.record.session {
        parts.push(format!("session {session}"));
    }
    if let Some(until) = g
        .record
        .until_us
        .and_then(chrono::DateTime::from_timestamp_micros)
    {
        parts.push(format!(
            "until {}",
            until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ));
    }
    if let Some(uses) = g.record.uses {
        parts.push(format!("{uses} uses"));
    }
    parts.join(", ")
}

fn to_json(g: &Grant, now: i64) -> serde_json::Value {
    let mut value = json!(g);
    value["state"] = json!(g.state(now));
    value
}

pub fn revoke(global: &Global, args: RevokeArgs) -> anyhow::Result<Exit> {
    let mut store = global.open_store()?;
    let principal = Arc::new(Principal::current("cli").with_host_id_beside(store.path()));
    let revoked = approvals::revoke(
        &mut store,
        &args.grant,
        &principal.user,
        ApprovalChannel::Cli,
        args.reason,
        Some(&principal),
    )?;
    render::line(&format!(
        "revoked {}: {}",
        render::escape(&args.grant),
        render::escape(&revoked.scope.describe())
    ))?;
    Ok(Exit::Ok)
}
