//! Why a recorded call ended as it did, in plain words (`gavel explain`):
//! the rules tried before the deciding one (re-evaluated on the recorded
//! policy text and facts), the paths judged, the parse, the approval, the
//! grant, the result and any anomaly; as a JSON object and as lines for
//! people (not yet escaped for a terminal).

use serde_json::{Value, json};

use crate::ToolRequest;
use crate::archive::format_time;
use crate::audit::{ApprovalRecord, EventBody, RefusedRecord, ResultRecord};
use crate::policy::{EntryMatch, Policy, PolicyError, RuleTrace};
use crate::source::Integrity;
use crate::store::{AnomalyEntry, AuditQuery, CallEntry, CallSummary, Store, StoreError};
use crate::text::cell;

/// Why a call could not be explained.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error("no call `{call_id}` in the record")]
    NoCall { call_id: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// A call explained.
pub struct Explanation {
    /// What `explain --json` prints.
    pub json: Value,
    /// What `explain` prints for people.
    pub lines: Vec<String>,
}

/// The line that says a call's rows may have been edited.
fn unverified_line(integrity: &Integrity) -> String {
    format!(
        "!! UNVERIFIED: {}; this call's rows are past it, so what follows (arguments, parse, decision) may have been edited",
        crate::text::escape(&integrity.text)
    )
}

/// Why call `call_id` of `store` ended as it did: its JSON object and, for
/// people, its lines; `integrity` says what the bounded check of its log
/// found wrong, if anything.
pub fn explain(
    store: &Store,
    call_id: &str,
    integrity: Option<&Integrity>,
) -> Result<Explanation, ExplainError> {
    let query = AuditQuery {
        call_id: Some(call_id.to_owned()),
        ..AuditQuery::default()
    };
    let mut entry = None;
    store.for_each_entry(&query, |e| -> Result<(), StoreError> {
        entry.get_or_insert(e);
        Ok(())
    })?;
    let anomalies = store.anomalies(&query)?;
    store.check_unchanged()?;
    let call = match entry {
        None => {
            return Err(ExplainError::NoCall {
                call_id: call_id.to_owned(),
            });
        }
        Some(CallEntry::Ungoverned(call)) => {
            let json = json!({
                        "call_id": call.call_id,
                        "ts": format_time(call.ts_us),
                        "tool": call.tool,
                        "arguments": call.anomaly.client.input,
                        "client": call.anomaly.client,
                        "action": null,
                        "rule_id": null,
                        "reason": null,
                        "approval": null,
                        "status": crate::store::UNGOVERNED,
                        "result": call.anomaly.result,
                        "anomalies": anomalies,
            });
            let mut lines = vec![
                format!("Call `{}` at {}", call.call_id, format_time(call.ts_us)),
                format!(
                    "  UNGOVERNED: `{}` ran without a decision: gavel never decided, asked about or recorded it before it ran",
                    call.tool
                ),
                String::new(),
            ];
            lines.extend(anomaly_lines(&anomalies));
            return Ok(Explanation { json, lines });
        }
        Some(CallEntry::Decided(call)) => call,
    };
    let (trace, matched) = match recorded_trace(store, &call)? {
        Some((trace, matched)) => (Some(trace), matched),
        None => (None, Vec::new()),
    };
    let result = result_of(store, &call.call_id)?;
    let refused = refused_of(store, &call.call_id)?;
    let approvals = approvals_of(store, &call.call_id)?;
    let approver = approvals.iter().rev().find(|a| !a.vote).cloned();
    let votes: Vec<&ApprovalRecord> = approvals.iter().filter(|a| a.vote).collect();
    let decision = &call.decision;
    let policy_text = match store.recorded_policy(&decision.policy.digest)? {
        crate::store::PolicyText::Text(_) => "recorded",
        crate::store::PolicyText::Missing => "missing",
        crate::store::PolicyText::Mismatch => "tampered",
    };

    // The grant that allowed the call, when one did.
    let grant = match decision
        .rule_id
        .strip_prefix(crate::approvals::grants::GRANT_RULE_PREFIX)
    {
        Some(id) => crate::approvals::grants(store)?
            .into_iter()
            .find(|g| g.record.grant == id),
        None => None,
    };
    let unverified = integrity.filter(|i| i.unverified(call.seq));
    let json = json!({
                "call_id": call.call_id,
                "verified": unverified.is_none(),
                "ts": format_time(call.ts_us),
                "tool": call.tool,
                "mcp": crate::mcp::names::split_tool_name(&call.tool)
                    .map(|(server, tool)| json!({"server": server, "tool": tool})),
                "arguments": call.request.arguments,
                "client": call.request.client,
                "principal": call.request.principal,
                "approver": approver,
                "action": decision.action,
                "rule_id": decision.rule_id,
                "reason": decision.reason,
                "policy": decision.policy,
                "layer": decision.layer,
                "layers": decision.layers,
                "shadow": decision.shadow,
                "facts": decision.facts,
                "trace": trace,
                "matched": matched,
                "policy_text": policy_text,
                "approval": call.approval,
                "status": call.status,
                "result": result,
                "sandbox": decision.sandbox,
                "labels": decision.labels,
                "after": decision.after,
                "refused": refused,
                "anomalies": anomalies,
                "grant": grant,
    });

    let mut text: Vec<String> = unverified.map(unverified_line).into_iter().collect();
    text.extend([
        format!("Call `{}` at {}", call.call_id, format_time(call.ts_us)),
        format!(
            "  asked to run `{}` with {}",
            call.tool,
            cell(&call.request.arguments.to_string(), 300)
        ),
    ]);
    if let Some(client) = &call.request.client {
        text.push(format!(
            "  (sent by {} as tool `{}`)",
            client.client, client.tool
        ));
    }
    if let Some(p) = &call.request.principal {
        let version = p
            .client_version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        text.push(format!(
            "  by user `{}` (uid {}) on host `{}` (id {}) via {}{version}, gavel {}",
            p.user, p.uid, p.host, p.host_id, p.client, p.gavel
        ));
        if let Some(session) = &p.session {
            text.push(format!("  in session `{session}`"));
        }
        if let Some(agent) = &p.agent_id {
            text.push(format!(
                "  by subagent `{agent}`{}",
                p.agent_type
                    .as_deref()
                    .map(|t| format!(" ({t})"))
                    .unwrap_or_default()
            ));
        }
        if let Some(source) = &p.policy {
            text.push(format!(
                "  policy from {}{}",
                source.layer,
                source
                    .path
                    .as_deref()
                    .map(|path| format!(" `{path}`"))
                    .unwrap_or_default()
            ));
        }
    }
    if decision.facts.mcp.is_none()
        && let Some((server, tool)) = crate::mcp::names::split_tool_name(&call.tool)
    {
        text.push(format!("  the tool `{tool}` of MCP server `{server}`"));
    }
    if let Some(mcp) = &decision.facts.mcp {
        text.push(match (&mcp.definition_sha256, &mcp.previous_sha256) {
            (Some(now), Some(before)) => format!(
                "  under a changed definition of `{}` on MCP server `{}`: sha256 {now}, the log held {before}",
                mcp.tool, mcp.server
            ),
            (Some(now), None) => format!(
                "  under the definition of `{}` on MCP server `{}` with sha256 {now}",
                mcp.tool, mcp.server
            ),
            (None, _) => format!(
                "  on MCP server `{}`, its definition of `{}` not listed to gavel",
                mcp.server, mcp.tool
            ),
        });
    }
    text.extend(path_lines(&decision.facts));
    if let Some(shell) = &decision.facts.shell {
        text.push("  the command runs, as parsed:".into());
        text.extend(parse_lines(shell));
        if call.parse_differs {
            text.push(
                "    (parsed again from the request: the parse that decided was recorded by digest, and differs)"
                    .into(),
            );
        }
    }
    text.push(String::new());
    match &trace {
        Some(trace) => {
            let before: Vec<&RuleTrace> = trace.iter().filter(|t| !t.matched).collect();
            if before.is_empty() {
                text.push("No rule came before the deciding one.".into());
            } else {
                text.push("Rules tried before the deciding one:".into());
                for t in before {
                    text.push(format!("  - `{}` did not match: {}", t.rule_id, t.detail));
                }
            }
        }
        None if policy_text == "tampered" => text.push(format!(
            "The recorded text of policy `{}` does not match its digest (sha256 {}): it was edited after it was recorded, so the rules tried before cannot be shown.",
            decision.policy.name, decision.policy.digest
        )),
        None => text.push(format!(
            "The text of policy `{}` was not recorded, so the rules tried before cannot be shown.",
            decision.policy.name
        )),
    }
    text.push(format!(
        "Decision: {} by rule `{}` of policy `{}` (sha256 {}):",
        decision.action,
        decision.rule_id,
        decision.policy.name,
        cell(&decision.policy.digest, 16)
    ));
    text.push(format!("  {}", decision.reason));
    if let Some(after) = &decision.after {
        text.push(format!(
            "  after call `{}` earlier in the session, which set label `{}`",
            after.call_id, after.label
        ));
    }
    if !decision.labels.is_empty() {
        text.push(format!(
            "  the call carries the labels {}",
            decision.labels.join(", ")
        ));
    }
    for line in match_lines(&matched, &decision.rule_id) {
        text.push(format!("  {line}"));
    }
    if let Some(layer) = &decision.layer {
        text.push(format!(
            "  in layer {}",
            layer_line(layer, &decision.layers)
        ));
    }
    for verdict in &decision.shadow {
        text.push(format!(
            "  shadow `{}` (sha256 {}, not enforced) would have decided: {} by rule `{}`",
            verdict.name,
            cell(&verdict.digest, 16),
            verdict.action,
            verdict.rule_id
        ));
    }
    if let Some(g) = &grant {
        text.push(format!(
            "Grant: `{}` ({}), given by {} via {} with the approval of call `{}`; used {} time(s){}",
            g.record.grant,
            g.record.scope.describe(),
            g.record.created_by,
            g.record.channel.as_str(),
            g.record.call_id,
            g.used,
            match &g.revoked {
                Some(r) => format!("; revoked since by {}", r.revoked_by),
                None => String::new(),
            }
        ));
    }
    text.push(format!(
        "Approval: {}",
        match call.approval.as_str() {
            "not_required" => format!(
                "not required ({} is never put to a person)",
                decision.action
            ),
            "pending" => "pending: the client was asked and no answer was recorded".into(),
            other => match &approver {
                Some(a) => approval_words(other, a),
                None => other.to_owned(),
            },
        }
    ));
    for vote in &votes {
        text.push(format!("  after {}", approval_words("an approval", vote)));
    }
    if let Some(need) = &decision.approvers {
        text.push(format!(
            "  the rule needs {}",
            crate::approvals::describe_approvers(need)
        ));
    }
    match (&result, call.status.as_str()) {
        (Some(r), _) => {
            let code = r.exit_code.map(|c| format!(", exit code {c}")).unwrap_or_default();
            text.push(format!("Result: {} after {} ms{code}", r.status.as_str(), r.duration_ms));
            text.push(format!("  {}", cell(&r.content, 300)));
        }
        (None, status) => text.push(format!(
            "Result: {status}: no result was recorded (gavel stopped while the call ran, or the client never reported back)"
        )),
    }
    text.extend(sandbox_lines(decision.sandbox.as_ref(), &refused));
    if !anomalies.is_empty() {
        text.push(String::new());
        text.extend(anomaly_lines(&anomalies));
    } else if !call.anomalies.is_empty() {
        // A log from before anomalies were recorded as such: a second result.
        text.push(String::new());
        for kind in &call.anomalies {
            text.push(format!(
                "ANOMALY: {} ({kind}): a later result was recorded; `gavel show` lists every event",
                kind.describe()
            ));
        }
    }
    Ok(Explanation { json, lines: text })
}

/// The rules tried before the deciding one, re-evaluated on the recorded
/// policy text and facts; `None` when that text was not recorded.
/// The rules tried under the recorded policy, and which simple commands
/// matched which entries of the deciding rule.
type Explained = (Vec<RuleTrace>, Vec<EntryMatch>);

fn recorded_trace(store: &Store, call: &CallSummary) -> Result<Option<Explained>, ExplainError> {
    let Some(text) = store.policy_source(&call.decision.policy.digest)? else {
        return Ok(None);
    };
    let policy = Policy::from_toml(&text, "recorded policy")?;
    let request = ToolRequest::new(
        call.request.tool_use_id.clone(),
        call.tool.clone(),
        call.request.arguments.clone(),
    );
    // The session's history as the decision read it, when it read one.
    let who = call.request.principal.as_ref();
    let history = match (
        who.and_then(|p| p.session.as_deref()),
        call.decision.history_through,
    ) {
        (Some(session), Some(through)) => store.session_history_through(session, through, None)?,
        _ => crate::policy::History::default(),
    };
    let trace = policy
        .explain_in(&request, &call.decision.facts, who, &history)
        .1;
    let matched = policy.entry_matches(&call.decision.rule_id, &request, &call.decision.facts);
    Ok(Some((trace, matched)))
}

/// The call's approval records, oldest first: votes toward a quorum, then
/// the answer.
fn approvals_of(store: &Store, call_id: &str) -> Result<Vec<ApprovalRecord>, StoreError> {
    Ok(store
        .call_events(call_id)?
        .iter()
        .filter(|e| e.kind == "approval")
        .filter_map(|e| match EventBody::from_json("approval", &e.payload) {
            Ok(EventBody::Approval(record)) => Some(record),
            _ => None,
        })
        .collect())
}

/// `approved via tty by alice`, `cancelled via tty (no_tty)`.
fn approval_words(status: &str, record: &ApprovalRecord) -> String {
    let mut text = status.to_owned();
    if let Some(channel) = record.channel {
        text.push_str(&format!(" via {}", channel.as_str()));
    }
    if let Some(who) = &record.approver {
        text.push_str(&format!(" by `{who}`"));
    }
    if let Some(factor) = record.factor {
        text.push_str(&format!(" with {}", factor.as_str()));
    }
    if let Some(cause) = record.cause {
        text.push_str(&format!(" ({})", cause.as_str()));
    }
    text
}

/// What the sandbox refused the call, every `refused` event of it.
fn refused_of(store: &Store, call_id: &str) -> Result<Vec<RefusedRecord>, StoreError> {
    Ok(store
        .call_events(call_id)?
        .iter()
        .filter(|e| e.kind == "refused")
        .filter_map(|e| match EventBody::from_json("refused", &e.payload) {
            Ok(EventBody::Refused(r)) => Some(r),
            _ => None,
        })
        .collect())
}

/// The sandbox lines of `explain`: the profile, what the kernel enforced,
/// and each attempt it refused.
fn sandbox_lines(
    sandbox: Option<&crate::sandbox::SandboxRecord>,
    refused: &[RefusedRecord],
) -> Vec<String> {
    let mut text = Vec::new();
    if let Some(s) = sandbox {
        let enforcement = match s.enforcement.as_deref() {
            Some(e) if s.missing.is_empty() => format!(", enforcement {e}"),
            Some(e) => format!(", enforcement {e} (missing: {})", s.missing.join("; ")),
            None => String::new(),
        };
        let implied = if s.implied {
            " (implied: the command is proven to only read)"
        } else {
            ""
        };
        text.push(format!("Sandbox: `{}`{implied}{enforcement}", s.profile));
    }
    for r in refused {
        let more = if r.more > 0 {
            format!(" and {} more", r.more)
        } else {
            String::new()
        };
        text.push(format!(
            "REFUSED by the sandbox `{}`: {} attempt(s){more}",
            r.profile,
            r.attempts.len()
        ));
        for a in &r.attempts {
            text.push(format!(
                "  {} `{}` by `{}`",
                a.operation,
                crate::text::escape(&a.target),
                crate::text::escape(&a.program)
            ));
        }
    }
    text
}

fn result_of(store: &Store, call_id: &str) -> Result<Option<ResultRecord>, StoreError> {
    for event in store.call_events(call_id)? {
        if event.kind == "result"
            && let Ok(EventBody::Result(r)) = EventBody::from_json("result", &event.payload)
        {
            return Ok(Some(r));
        }
    }
    Ok(None)
}

/// The anomaly lines of `explain`: what a client reported that did not
/// complete the call as governed.
fn anomaly_lines(anomalies: &[AnomalyEntry]) -> Vec<String> {
    let mut text = Vec::new();
    for a in anomalies {
        let record = &a.record;
        text.push(format!(
            "ANOMALY: {} ({}), seq {} at {}",
            record.anomaly.describe(),
            record.anomaly,
            a.seq,
            format_time(a.ts_us)
        ));
        text.push(format!("  {}", record.detail));
        let session = record.client.session_id.as_deref().unwrap_or("-");
        text.push(format!(
            "  reported by {} ({}) in session `{session}` as tool `{}` with {}",
            record.client.client,
            record.event,
            record.client.tool,
            cell(&record.client.input.to_string(), 200)
        ));
        text.push(format!(
            "  reported result: {} after {} ms: {}",
            record.result.status.as_str(),
            record.result.duration_ms,
            cell(&record.result.content, 200)
        ));
    }
    text
}

/// The paths a decision judged, for people: each word the facts took as a
/// path, with its use and where it resolved; what could not be resolved;
/// and, for a command gavel has no model of (or uses outside its model),
/// that any of its words may be a path, naming only those that resolve
/// outside the workspace. An option letter or a pattern is never listed as
/// a path unless a model said it is one.
fn path_lines(facts: &crate::Facts) -> Vec<String> {
    use crate::facts::Judged;
    let mut lines = Vec::new();
    let judged: std::collections::HashSet<(&str, Option<&str>)> = facts
        .paths
        .iter()
        .filter(|p| p.access.is_some())
        .map(|p| (p.requested.as_str(), p.cwd.as_deref()))
        .collect();
    let from = |path: &crate::facts::PathFact| {
        path.cwd
            .as_deref()
            .map(|cwd| format!(" (from `{cwd}`)"))
            .unwrap_or_default()
    };
    let workspace = &facts.workspace;
    for path in &facts.paths {
        let place = if path.inside { "inside" } else { "outside" };
        match (path.access, &path.error, &path.resolved) {
            (Some(access), _, Some(resolved)) => {
                let use_ = access.as_str();
                lines.push(format!(
                    "  path `{}`{} ({use_}) resolved to `{resolved}`, {place} the workspace `{workspace}`",
                    path.requested,
                    from(path)
                ));
            }
            (_, Some(error), _) => lines.push(format!(
                "  path `{}`{} could not be resolved: {error}",
                path.requested,
                from(path)
            )),
            (Some(_), None, None) => lines.push(format!(
                "  path `{}`{} could not be resolved",
                path.requested,
                from(path)
            )),
            // A word of a command without a model: shown only when,
            // taken as a path, it lies outside.
            (None, None, resolved) => {
                if path.inside || judged.contains(&(path.requested.as_str(), path.cwd.as_deref())) {
                    continue;
                }
                lines.push(format!(
                    "  word `{}`{}, if it is a path, is `{}`, outside the workspace `{workspace}`",
                    path.requested,
                    from(path),
                    resolved.as_deref().unwrap_or("(could not be resolved)")
                ));
            }
        }
    }
    let Some(shell) = &facts.shell else {
        return lines;
    };
    let mut said = Vec::new();
    for command in &shell.commands {
        if command.args().is_empty() {
            continue;
        }
        let why = match crate::facts::judged(command) {
            Judged::Modelled(_) => continue,
            Judged::NotModelled if !crate::shell::operands::operands(command).is_empty() => {
                format!(
                    "gavel knows only which paths `{}` writes",
                    command.program()
                )
            }
            Judged::NotModelled => format!("gavel has no model of `{}`", command.program()),
            Judged::OutsideModel(hazards) => format!(
                "this use of `{}` is outside gavel's model of it ({})",
                command.program(),
                hazards.join("; ")
            ),
        };
        if said.contains(&why) {
            continue;
        }
        lines.push(format!(
            "  `{}`: {why}, so which of its words are paths is not known; the path rules took each word as one that might be",
            cell(&command.words.join(" "), 120)
        ));
        said.push(why);
    }
    lines
}

/// The deciding layer and every layer consulted, for people:
/// `user (of user ab12…, project cd34…)`.
pub fn layer_line(layer: &str, layers: &[crate::policy::LayerRef]) -> String {
    let all: Vec<String> = layers
        .iter()
        .map(|l| format!("{} {}", l.layer, cell(&l.digest, 8)))
        .collect();
    format!("{layer} (of {})", all.join(", "))
}

/// A shell command's parse, for people: each simple command with its
/// redirections, the redirections no command carries, and what could not
/// be proven.
pub fn parse_lines(shell: &crate::shell::CommandAnalysis) -> Vec<String> {
    let mut lines = Vec::new();
    for command in &shell.commands {
        let mut text = command.words.join(" ");
        for r in &command.redirects {
            text.push_str(&format!(" {} {}", r.op, r.target));
        }
        lines.push(format!("    - {}", cell(&text, 200)));
    }
    for r in &shell.bare_redirects {
        lines.push(format!(
            "    - (a redirection outside any command) {} {}",
            r.op,
            cell(&r.target, 200)
        ));
    }
    if shell.unprovable.is_empty() {
        lines.push("    everything in it is understood".to_owned());
    }
    for what in &shell.unprovable {
        lines.push(format!("    - cannot prove: {}", cell(what, 200)));
    }
    lines
}

/// How long an entry may be shown (the built-in disk list is long).
const ENTRY_CHARS: usize = 160;

/// Which simple command matched which entry of the deciding rule.
pub fn match_lines(matched: &[crate::policy::EntryMatch], rule_id: &str) -> Vec<String> {
    matched
        .iter()
        .map(|m| {
            format!(
                "`{}` matched `{}` of `{rule_id}` ({})",
                cell(&m.command, 200),
                cell(&m.entry, ENTRY_CHARS),
                m.condition
            )
        })
        .collect()
}
