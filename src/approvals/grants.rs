//! Grants: "yes, and the same again" as chained, revocable records. A grant
//! is created with an approval (`gavel approve CALL --grant …`), has a scope
//! (this exact call; a program and subcommand inside the workspace; a file
//! tool, or an MCP tool's declared path arguments, with paths under a glob;
//! an MCP server's tool with any arguments) and limits (a session, an end time, a
//! number of uses), and is consulted only for a call the policy **asks**
//! about: it can never turn a deny (a hard deny, `path.protected`, the
//! workspace boundary) into an allow, and it never covers a command gavel
//! could not prove (anything unprovable, redirections that write,
//! assignments, a program given by path, paths outside the workspace), nor
//! a call asked by a rule no grant may answer ([`NEVER_GRANTED`]: an MCP
//! tool whose definition changed, gavel's protected paths, self-approval).
//!
//! Matching here is pure: it is handed the grants in force, the request,
//! its facts, its decision and the clock, and opens nothing.

use globset::GlobBuilder;
use serde::Serialize;

use crate::audit::{GrantRecord, GrantScope, RevocationRecord};
use crate::facts::Facts;
use crate::policy::{Action, Decision};
use crate::request::ToolRequest;

/// The prefix of a grant's rows' `call_id` (`grant/<ID>`).
pub const GRANT_CALL_PREFIX: &str = "grant/";

/// The prefix of the `rule_id` of a call a grant allowed (`grant.<ID>`).
pub const GRANT_RULE_PREFIX: &str = "grant.";

/// Rules whose asks no grant covers, and no grant may be created from:
/// whatever a policy makes of them, they stand for something a person must
/// see each time (a changed MCP tool definition: the "rug pull" a grant
/// given before it would wave through; gavel's own record and policy; the
/// agent answering its own approvals; a write to what git runs).
pub const NEVER_GRANTED: &[&str] = &[
    "mcp.definition_changed",
    "path.protected",
    "path.git_config",
    "bash.self_approval",
    "bash.hard_deny",
];

/// Whether no grant may cover a call decided by `rule_id` on `facts`.
pub fn never_granted(rule_id: &str, facts: &Facts) -> bool {
    NEVER_GRANTED.contains(&rule_id)
        || facts
            .mcp
            .as_ref()
            .is_some_and(crate::facts::McpFacts::definition_changed)
}

/// The prefix of an MCP server tool's gavel name (`mcp__SERVER__TOOL`).
pub const MCP_TOOL_PREFIX: &str = "mcp__";

/// A grant as the record has it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    #[serde(flatten)]
    pub record: GrantRecord,
    /// The seq of its `grant` row.
    pub seq: u64,
    pub created_us: i64,
    /// Its revocation, when it was revoked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked: Option<RevocationRecord>,
    /// The seq of its revocation row.
    #[serde(skip)]
    pub revoked_seq: Option<u64>,
    /// The calls it allowed so far.
    pub used: u64,
}

impl Grant {
    /// Whether it may still cover a call at `now_us`; why not, when not.
    pub fn state(&self, now_us: i64) -> &'static str {
        if self.revoked.is_some() {
            "revoked"
        } else if self.record.until_us.is_some_and(|u| u <= now_us) {
            "expired"
        } else if self.record.uses.is_some_and(|n| self.used >= n) {
            "used up"
        } else {
            "active"
        }
    }
}

/// Why a grant whose scope covers a call did not (or would not) allow it,
/// judged at the call's place in the record: its seq, its time, and the
/// grant's uses recorded before it.
pub fn lapsed_at(grant: &Grant, seq: u64, ts_us: i64, uses_before: u64) -> Option<String> {
    if grant.seq > seq {
        Some("not given yet".to_owned())
    } else if grant.revoked_seq.is_some_and(|r| r < seq) {
        Some("revoked".to_owned())
    } else if grant.record.until_us.is_some_and(|u| u <= ts_us) {
        Some("expired".to_owned())
    } else {
        grant
            .record
            .uses
            .filter(|n| uses_before >= *n)
            .map(|n| format!("used up ({uses_before} of {n} uses)"))
    }
}

/// Whether `grant`'s scope and session cover `request` (decided `decision`
/// on `facts`, in client session `session`), whatever its limits. Pure.
pub fn applies(
    grant: &Grant,
    request: &ToolRequest,
    facts: &Facts,
    decision: &Decision,
    session: Option<&str>,
) -> bool {
    decision.action == Action::Ask
        && !never_granted(&decision.rule_id, facts)
        && provable(facts)
        && grant
            .record
            .session
            .as_deref()
            .is_none_or(|s| Some(s) == session)
        && covers(&grant.record.scope, request, facts)
}

/// The first grant of `grants` in force at `now_us` that covers `request`
/// (decided `decision` on `facts`, in client session `session`). Pure.
pub fn covering<'g>(
    grants: &'g [Grant],
    request: &ToolRequest,
    facts: &Facts,
    decision: &Decision,
    session: Option<&str>,
    now_us: i64,
) -> Option<&'g Grant> {
    grants.iter().find(|grant| {
        grant.state(now_us) == "active" && applies(grant, request, facts, decision, session)
    })
}

/// Whether nothing about the call is unproven and every path it names lies
/// inside the workspace.
fn provable(facts: &Facts) -> bool {
    let shell_proven = facts.shell.as_ref().is_none_or(|shell| {
        shell.unprovable.is_empty()
            && shell.unjudgeable.is_none()
            && shell.bare_redirects.is_empty()
    });
    facts.unprovable.is_empty()
        && facts.shell_sha256.is_none()
        && shell_proven
        && facts.paths.iter().all(|p| p.inside && p.error.is_none())
}

/// Whether `scope` covers `request` on `facts` (already provable).
fn covers(scope: &GrantScope, request: &ToolRequest, facts: &Facts) -> bool {
    match scope {
        GrantScope::Call {
            tool,
            arguments_sha256,
        } => {
            request.name == *tool
                && super::arguments_digest(&request.arguments) == *arguments_sha256
        }
        GrantScope::Command { words } => {
            let Some(shell) = facts.shell.as_ref().filter(|_| request.name == "bash") else {
                return false;
            };
            !words.is_empty()
                && !shell.commands.is_empty()
                && shell.commands.iter().all(|command| {
                    command.words.starts_with(words)
                        && command.path.is_none()
                        && command.assignments.is_empty()
                        && command.redirects.iter().all(|r| !r.writes())
                })
        }
        GrantScope::Paths { tool, glob } => {
            let Ok(glob) = GlobBuilder::new(glob).literal_separator(true).build() else {
                return false;
            };
            let glob = glob.compile_matcher();
            request.name == *tool
                && !facts.paths.is_empty()
                && facts
                    .paths
                    .iter()
                    .all(|p| p.relative.as_deref().is_some_and(|r| glob.is_match(r)))
        }
        GrantScope::Tool { tool } => tool.starts_with(MCP_TOOL_PREFIX) && request.name == *tool,
    }
}

/// The decision a call covered by `grant` is recorded with: `allow` by
/// `grant.<ID>`, its reason citing the grant and the rule that asked.
pub fn granted(grant: &Grant, asked: &Decision) -> Decision {
    Decision {
        action: Action::Allow,
        rule_id: format!("{GRANT_RULE_PREFIX}{}", grant.record.grant),
        reason: format!(
            "allowed by grant {} ({}, given by {} via {}); the policy asked [{}]: {}",
            grant.record.grant,
            grant.record.scope.describe(),
            grant.record.created_by,
            grant.record.channel.as_str(),
            asked.rule_id,
            asked.reason
        ),
        // Whatever else the decision carries (its policy) stays the asked one's.
        ..asked.clone()
    }
}

/// What the runner consults when the policy asks: the grant that covers the
/// call, if any, as the decision to record instead.
pub trait GrantSource {
    fn cover(
        &self,
        request: &ToolRequest,
        facts: &Facts,
        decision: &Decision,
        session: Option<&str>,
    ) -> Option<Decision>;
}

/// A fresh grant id: `g` and 8 random hex digits.
pub fn new_grant_id() -> String {
    let mut bytes = [0u8; 4];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: the clock's microseconds still make a usable id.
        let now = chrono::Utc::now().timestamp_micros() as u32;
        bytes = now.to_be_bytes();
    }
    format!("g{}", crate::digest::hex(&bytes))
}
