//! The filter flags shared by `log`, `stats`, `replay` and `export`, and
//! how they become a library `AuditQuery`.

use anyhow::{Context, bail};
use chrono::{DateTime, NaiveDate, Utc};
use clap::Args;

use gavel::store::AuditQuery;

#[derive(Args, Debug, Clone, Default)]
pub struct QueryArgs {
    /// Only calls to this tool
    #[arg(long)]
    pub tool: Option<String>,
    /// Only calls of a tool of this MCP server (tool names `mcp__SERVER__TOOL`,
    /// through `gavel mcp` or a client's own MCP support)
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
    /// Only calls of this MCP tool (the TOOL of `mcp__SERVER__TOOL`), on any server
    #[arg(long, value_name = "TOOL")]
    pub mcp_tool: Option<String>,
    /// Only calls decided by this rule
    #[arg(long = "rule", value_name = "RULE_ID")]
    pub rule: Option<String>,
    /// Only calls with this action (allow, ask, deny)
    #[arg(long)]
    pub action: Option<String>,
    /// Only calls with this approval (not_required, approved, rejected, cancelled, pending)
    #[arg(long)]
    pub approval: Option<String>,
    /// Only calls with this status (blocked, succeeded, failed, incomplete, ungoverned)
    #[arg(long)]
    pub status: Option<String>,
    /// Only calls with an anomaly: ran despite deny, ran without a decision
    /// (ungoverned), a completion that did not match, a second completion
    #[arg(long)]
    pub anomalies: bool,
    /// Only calls (and, with `log --events`, session events) of this client session
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only calls (and session events) made by this OS user
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// Only calls (and session events) made on this host (its name or host id)
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Only calls (and session events) that came through this client (cli, serve, claude-code, ...)
    #[arg(long, value_name = "CLIENT")]
    pub client: Option<String>,
    /// Only calls (and session events) of this subagent (its agent_id)
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,
    /// Only calls whose arguments hold TEXT in a value (a command, a path, a
    /// pattern...); case-sensitive
    #[arg(long, value_name = "TEXT")]
    pub grep: Option<String>,
    /// Calls at or after TIME: RFC 3339, a date (2026-12-01, meaning 00:00 UTC), or an age (30m, 2h, 7d)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Calls before TIME (same forms as --since; a date is 00:00 UTC)
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Only this call
    #[arg(long = "call", value_name = "ID")]
    pub call: Option<String>,
    /// At most N calls: the oldest N (`log --tail N` gives the newest)
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// With a central --db (postgres://…): only this log, by its id (hex) or
    /// a prefix of its origin (`--host` picks an enrolled or recorded host)
    #[arg(long, value_name = "ID|ORIGIN")]
    pub log: Option<String>,
    #[command(flatten)]
    pub schema: SchemaArg,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// The schema of a central store a reading command reads; the same flag and
/// meaning as on `gavel central …` (resolved by `Central::open`).
#[derive(Args, Debug, Clone, Default)]
pub struct SchemaArg {
    /// With a central --db (postgres://…): its schema [default: the URL's
    /// search_path, else public]
    #[arg(long, value_name = "NAME")]
    pub schema: Option<String>,
}

impl SchemaArg {
    /// Refuses `--schema` on a local store.
    pub fn check_local(&self) -> anyhow::Result<()> {
        if self.schema.is_some() {
            bail!("--schema selects the schema of a central store; give --db postgres://…");
        }
        Ok(())
    }
}

/// How a reading command opens the log.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct ReadArgs {
    /// Do not check the chain's recent rows before answering (by default a
    /// warning goes to stderr when they do not verify; `gavel verify` checks it all)
    #[arg(long)]
    pub no_verify: bool,
}

const ACTIONS: &[&str] = &["allow", "ask", "deny"];
const APPROVALS: &[&str] = &[
    "not_required",
    "approved",
    "rejected",
    "cancelled",
    "pending",
];
const STATUSES: &[&str] = &["blocked", "succeeded", "failed", "incomplete", "ungoverned"];

impl QueryArgs {
    pub fn to_query(&self) -> anyhow::Result<AuditQuery> {
        Ok(AuditQuery {
            since: self
                .since
                .as_deref()
                .map(parse_time)
                .transpose()
                .context("--since")?,
            until: self
                .until
                .as_deref()
                .map(parse_time)
                .transpose()
                .context("--until")?,
            tool: self.tool.clone(),
            rule_id: self.rule.clone(),
            action: one_of("--action", &self.action, ACTIONS)?,
            approval: one_of("--approval", &self.approval, APPROVALS)?,
            status: one_of("--status", &self.status, STATUSES)?,
            call_id: self.call.clone(),
            anomalies: self.anomalies,
            session: self.session.clone(),
            user: self.user.clone(),
            host: self.host.clone(),
            client: self.client.clone(),
            agent: self.agent.clone(),
            grep: self.grep.clone(),
            mcp_server: self.server.clone(),
            mcp_tool: self.mcp_tool.clone(),
            newest_first: false,
            limit: self.limit,
        })
    }
}

impl QueryArgs {
    /// Refuses what only a central store has (`--log`) on a local one.
    pub fn check_local(&self) -> anyhow::Result<()> {
        if self.log.is_some() {
            bail!("--log picks a log of a central store; give --db postgres://…");
        }
        self.schema.check_local()
    }
}

fn one_of(flag: &str, value: &Option<String>, allowed: &[&str]) -> anyhow::Result<Option<String>> {
    match value {
        Some(v) if !allowed.contains(&v.as_str()) => {
            bail!(
                "{flag}: unknown value `{v}` (one of {})",
                allowed.join(", ")
            )
        }
        other => Ok(other.clone()),
    }
}

/// Microseconds since the epoch for an RFC 3339 time, a date, or an age like `2h`.
pub fn parse_time(text: &str) -> anyhow::Result<i64> {
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Ok(time.with_timezone(&Utc).timestamp_micros());
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let midnight = date.and_hms_opt(0, 0, 0).context("midnight exists")?;
        return Ok(midnight.and_utc().timestamp_micros());
    }
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => bail!("cannot read time `{text}` (RFC 3339, YYYY-MM-DD, or an age like 30m, 2h, 7d)"),
    };
    let count: i64 = number
        .parse()
        .with_context(|| format!("cannot read time `{text}`"))?;
    Ok(Utc::now().timestamp_micros() - count.saturating_mul(seconds).saturating_mul(1_000_000))
}

/// An RFC 3339 UTC time with microseconds.
pub fn format_time(ts_us: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(ts_us)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
        .unwrap_or_else(|| ts_us.to_string())
}
