//! The HTML evidence report: the data a page is filled from, gathered from
//! the store through the same library calls as `gavel stats`, `gavel verify`
//! and `gavel replay`, and one template (`report.html.j2`) rendered with
//! HTML auto-escaping. Nothing here fetches, prompts or reads the clock: the
//! caller hands in the generation time, so the same database gives the same
//! bytes apart from that one line.

mod chart;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::digest::hex;
use crate::policy::{Action, Policy};
use crate::replay::{self, DriftReport, FactSource, Kept};
use crate::store::{
    AuditQuery, CallEntry, PolicyText, Stats, Store, StoreError, VerifyOptions, VerifyReport,
};

pub use chart::Chart;

/// The template, compiled into the binary.
const TEMPLATE: &str = include_str!("report.html.j2");
/// The index page of a report over several logs.
const INDEX_TEMPLATE: &str = include_str!("index.html.j2");

/// How many calls the table (and each detail list) shows at most; the
/// counts always cover every selected call.
pub const DEFAULT_ROW_CAP: usize = 1000;

/// A call's detail shows at most this many characters of its request,
/// decision and each result; `gavel show CALL_ID` has them whole.
pub const DETAIL_CHARS: usize = 4096;

/// How many sessions the per-session counts show.
const TOP_SESSIONS: usize = 20;

/// How many entries the top-denied and top-asked lists show.
const TOP: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("rendering the report template")]
    Template(#[source] minijinja::Error),
}

/// What the caller decides: filters, a policy to compare with, the time line.
pub struct ReportOptions<'a> {
    pub query: &'a AuditQuery,
    /// The filters in words, as given on the command line.
    pub filters: String,
    /// `--compare-policy`: replay the selected calls under it.
    pub compare: Option<&'a Policy>,
    /// The one line that differs between two runs on the same database.
    pub generated: String,
    /// The database path as the re-verify commands should name it.
    pub db_label: String,
    pub row_cap: usize,
    /// `--receipts DIR`, as the page links it: each shown call a
    /// checkpoint covers links `DIR/<call id>.receipt`.
    pub receipts: Option<String>,
}

/// Everything the page shows.
#[derive(Debug, Serialize)]
pub struct Report {
    pub generated: String,
    pub db: String,
    pub filters: String,
    pub identity: Identity,
    pub verify: VerifyReport,
    pub problem: Option<&'static str>,
    pub checkpoints: Vec<CheckpointView>,
    pub reverify: Vec<String>,
    /// The counts, exactly as `gavel stats --json` gives them.
    pub stats: Stats,
    /// The same counts as rows, larger first, for the tables.
    pub groups: Vec<Group>,
    pub first_call: Option<String>,
    pub last_call: Option<String>,
    pub chart: Chart,
    /// Calls per client (`claude-code`, ...; `none` for `gavel run` and
    /// library callers), from the record's requests: `stats` has no such count.
    pub by_client: Vec<Counted>,
    /// Calls per recorded `user@host` (empty when no call recorded one).
    pub by_who: Vec<Counted>,
    /// The sessions with the most calls, and how many sessions there are.
    pub by_session: Vec<Counted>,
    pub sessions: usize,
    pub top_denied: Vec<Counted>,
    pub top_asked: Vec<Counted>,
    pub pending: Vec<CallRow>,
    pub pending_total: u64,
    pub anomalies: Vec<CallRow>,
    pub calls: Vec<CallRow>,
    pub row_cap: usize,
    pub policies: Vec<PolicyVersion>,
    pub drift: Option<Drift>,
    /// What each shadow policy recorded on the selected calls, against
    /// what was enforced (`gavel replay --shadow NAME`).
    pub shadows: Vec<Drift>,
    /// The grants of the log (`approve --grant`), with their uses and revocations.
    pub grants: Vec<GrantView>,
}

/// One grant as the page shows it.
#[derive(Debug, Serialize)]
pub struct GrantView {
    pub grant: String,
    pub scope: String,
    pub limits: String,
    pub created: String,
    pub created_by: String,
    pub call_id: String,
    pub used: u64,
    pub state: &'static str,
    /// Who revoked it, and why, when it was revoked.
    pub revoked: Option<String>,
}

fn grant_views(store: &Store) -> Result<Vec<GrantView>, StoreError> {
    let now = chrono::Utc::now().timestamp_micros();
    Ok(crate::approvals::grants(store)?
        .into_iter()
        .map(|g| {
            let mut limits = Vec::new();
            if let Some(session) = &g.record.session {
                limits.push(format!("session {session}"));
            }
            if let Some(until) = g.record.until_us {
                limits.push(format!("until {}", format_time(until)));
            }
            if let Some(uses) = g.record.uses {
                limits.push(format!("{uses} uses"));
            }
            GrantView {
                state: g.state(now),
                grant: g.record.grant.clone(),
                scope: g.record.scope.describe(),
                limits: limits.join(", "),
                created: format_time(g.created_us),
                created_by: format!("{} via {}", g.record.created_by, g.record.channel.as_str()),
                call_id: g.record.call_id.clone(),
                used: g.used,
                revoked: g.revoked.as_ref().map(|r| {
                    format!(
                        "by {}{}",
                        r.revoked_by,
                        r.reason
                            .as_deref()
                            .map(|why| format!(": {why}"))
                            .unwrap_or_default()
                    )
                }),
            }
        })
        .collect())
}

#[derive(Debug, Serialize)]
pub struct Identity {
    pub origin: String,
    pub log_id: String,
    pub format: u32,
    pub created: String,
}

#[derive(Debug, Serialize)]
pub struct CheckpointView {
    pub id: i64,
    pub size: i64,
    pub root: String,
    pub signers: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Group {
    pub name: &'static str,
    pub key: &'static str,
    pub rows: Vec<Counted>,
}

#[derive(Debug, Serialize, Clone)]
pub struct Counted {
    pub label: String,
    pub count: u64,
}

/// One call as the table and its detail show it.
#[derive(Debug, Serialize, Clone)]
pub struct CallRow {
    pub seq: u64,
    pub call_id: String,
    pub ts: String,
    pub tool: String,
    pub summary: String,
    pub action: String,
    pub rule_id: String,
    pub reason: String,
    pub approval: String,
    pub status: String,
    /// Attempts the sandbox refused the command.
    pub refused: u64,
    pub anomalies: Vec<String>,
    pub session: String,
    /// The request's arguments, pretty JSON.
    pub request: String,
    /// The decision record (rule, reason, policy, facts), pretty JSON.
    pub decision: String,
    /// The call's events with their hashes (only for calls the table shows).
    pub events: Vec<EventView>,
    /// Who answered its approvals and how, where recorded (shown calls).
    pub approvers: Vec<String>,
    /// Who its rule needed, when it named approvers: `2 distinct people of
    /// alice, bob`, and whether the record shows them (shown calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum: Option<String>,
    /// Whether the call's decision row is before the first row that does
    /// not verify (every row of an intact log is).
    pub verified: bool,
    /// Where the call's receipt is (shown calls).
    pub receipt: Option<ReceiptView>,
}

/// A call's receipt as the page shows it: its first leaf, the checkpoint
/// covering it, and the file `--receipts DIR` wrote, linked.
#[derive(Debug, Serialize, Clone)]
pub struct ReceiptView {
    pub index: u64,
    pub log: String,
    pub checkpoint: Option<u64>,
    pub file: Option<String>,
}

#[derive(Debug, Serialize, Clone)]
pub struct EventView {
    pub seq: u64,
    pub kind: String,
    pub ts: String,
    pub leaf: String,
    pub chain: String,
    pub payload: String,
}

#[derive(Debug, Serialize)]
pub struct PolicyVersion {
    pub name: String,
    pub digest: String,
    /// The layer it decided in (`system`, `admin`, `user`, `project`), under layers.
    pub layer: Option<String>,
    pub first_seen: String,
    pub calls: u64,
    pub rules: Vec<String>,
    pub text: &'static str,
}

#[derive(Debug, Serialize)]
pub struct Drift {
    pub policy: String,
    pub digest: String,
    pub report: DriftReport,
    pub examples: Vec<DriftExample>,
}

#[derive(Debug, Serialize)]
pub struct DriftExample {
    pub call_id: String,
    pub tool: String,
    pub arguments: String,
    pub from: String,
    pub to: String,
    pub direction: String,
}

/// The index of a report over several logs (a central store's): one
/// line per log, linking to its own page.
#[derive(Debug, Serialize)]
pub struct Index {
    pub generated: String,
    /// The store as the pages name it.
    pub db: String,
    pub filters: String,
    pub logs: Vec<IndexEntry>,
}

/// One log's page, as the index lists it.
#[derive(Debug, Serialize)]
pub struct IndexEntry {
    /// The enrolled host.
    pub host: String,
    pub origin: String,
    /// The page's file name, beside the index.
    pub page: String,
    /// The calls its page counts.
    pub calls: u64,
    pub verified: bool,
    /// What broke (`content_mismatch at seq 11`), when it does not verify.
    pub problem: Option<String>,
}

/// `2026-12-03T08:04:35.123456Z`, the form `gavel log --json` uses.
pub fn format_time(ts_us: i64) -> String {
    chrono::DateTime::from_timestamp_micros(ts_us)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
        .unwrap_or_else(|| ts_us.to_string())
}

fn pretty(value: &impl Serialize) -> String {
    clip(serde_json::to_string_pretty(value).unwrap_or_default())
}

/// `text` cut at `DETAIL_CHARS` characters, saying so.
fn clip(text: String) -> String {
    match text.char_indices().nth(DETAIL_CHARS) {
        Some((cut, _)) => format!(
            "{}\n… (cut at {DETAIL_CHARS} of {} characters; `gavel show` has it whole)",
            &text[..cut],
            text.chars().count()
        ),
        None => text,
    }
}

fn sorted(counts: &BTreeMap<String, u64>) -> Vec<Counted> {
    let mut rows: Vec<Counted> = counts
        .iter()
        .map(|(label, count)| Counted {
            label: label.clone(),
            count: *count,
        })
        .collect();
    rows.sort_by(|a, b| b.count.cmp(&a.count).then(a.label.cmp(&b.label)));
    rows
}

fn top(counts: HashMap<String, u64>) -> Vec<Counted> {
    top_n(counts, TOP)
}

/// The `n` largest counts, larger first, ties by label.
fn top_n(counts: HashMap<String, u64>, n: usize) -> Vec<Counted> {
    let mut rows: Vec<Counted> = counts
        .into_iter()
        .map(|(label, count)| Counted { label, count })
        .collect();
    rows.sort_by(|a, b| b.count.cmp(&a.count).then(a.label.cmp(&b.label)));
    rows.truncate(n);
    rows
}

fn row_of(entry: &CallEntry) -> CallRow {
    match entry {
        CallEntry::Decided(call) => CallRow {
            seq: call.seq,
            call_id: call.call_id.clone(),
            ts: format_time(call.ts_us),
            tool: call.tool.clone(),
            summary: replay::arguments_summary(&call.tool, &call.request.arguments),
            action: call.decision.action.as_str().to_owned(),
            rule_id: call.decision.rule_id.clone(),
            reason: call.decision.reason.clone(),
            approval: call.approval.clone(),
            status: call.status.clone(),
            refused: call.refused,
            anomalies: call
                .anomalies
                .iter()
                .map(|k| k.as_str().to_owned())
                .collect(),
            session: session_of(&call.request),
            request: pretty(&call.request),
            decision: pretty(&call.decision),
            events: Vec::new(),
            approvers: Vec::new(),
            quorum: None,
            verified: true,
            receipt: None,
        },
        CallEntry::Ungoverned(call) => CallRow {
            seq: call.seq,
            call_id: call.call_id.clone(),
            ts: format_time(call.ts_us),
            tool: call.tool.clone(),
            summary: replay::arguments_summary(&call.tool, &call.anomaly.client.input),
            action: String::new(),
            rule_id: String::new(),
            reason: call.anomaly.detail.clone(),
            approval: String::new(),
            status: crate::store::UNGOVERNED.to_owned(),
            refused: 0,
            anomalies: call
                .anomalies
                .iter()
                .map(|k| k.as_str().to_owned())
                .collect(),
            session: String::new(),
            request: pretty(&call.anomaly),
            decision: String::new(),
            events: Vec::new(),
            approvers: Vec::new(),
            quorum: None,
            verified: true,
            receipt: None,
        },
    }
}

fn session_of(request: &crate::audit::RequestRecord) -> String {
    request
        .client
        .as_ref()
        .and_then(|c| c.session_id.clone())
        .unwrap_or_default()
}

/// The client that sent a call and its session, when the record has them.
/// Who made a call, as recorded: its client and session, and `user@host`.
/// The recorded principal (every call gavel decided since format 2) comes
/// first; a hook's client block fills what it lacks.
fn client_of(entry: &CallEntry) -> (String, Option<String>, Option<String>) {
    let (principal, hook) = match entry {
        CallEntry::Decided(call) => (
            call.request.principal.as_ref(),
            call.request.client.as_ref(),
        ),
        CallEntry::Ungoverned(call) => (None, Some(&call.anomaly.client)),
    };
    let client = principal
        .map(|p| p.client.clone())
        .or_else(|| hook.map(|c| c.client.clone()))
        .unwrap_or_else(|| "none".to_owned());
    let session = principal
        .and_then(|p| p.session.clone())
        .or_else(|| hook.and_then(|c| c.session_id.clone()));
    let who = principal.map(|p| format!("{}@{}", p.user, p.host));
    (client, session, who)
}

/// Who answered an approval event, and how, from its payload: `approved
/// by alice (cli, totp)`; a vote toward a quorum reads `voted`.
fn approver_of(payload: &[u8]) -> Option<String> {
    let record: crate::audit::ApprovalRecord = serde_json::from_slice(payload).ok()?;
    let status = if record.vote {
        "voted"
    } else {
        record.status.as_str()
    };
    let how: Vec<&str> = record
        .channel
        .map(|c| c.as_str())
        .into_iter()
        .chain(record.factor.map(|f| f.as_str()))
        .collect();
    let how = (!how.is_empty()).then(|| format!(" ({})", how.join(", ")));
    match (record.approver, how) {
        (Some(who), how) => Some(format!("{status} by {who}{}", how.unwrap_or_default())),
        (None, Some(how)) => Some(format!("{status}{how}")),
        (None, None) => None,
    }
}

/// Signer names of a checkpoint note: its signature lines, `— name sig`.
fn signers(note: &str) -> Vec<String> {
    note.lines()
        .filter_map(|line| line.strip_prefix("\u{2014} "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// Gathers the report's data for the calls `options.query` selects.
pub fn gather(store: &Store, options: &ReportOptions<'_>) -> Result<Report, ReportError> {
    let verify = store.verify(&VerifyOptions::default(), &mut |_| {})?;
    let shortfalls = crate::approvals::quorum_shortfalls(store)?;
    let identity = store.identity();
    let checkpoints = store
        .checkpoint_rows()?
        .into_iter()
        .map(|row| CheckpointView {
            id: row.id,
            size: row.size,
            root: hex(&row.root),
            signers: signers(&row.note),
        })
        .collect();

    let mut chart_times: Vec<i64> = Vec::new();
    let mut clients: HashMap<String, u64> = HashMap::new();
    let mut sessions: HashMap<String, u64> = HashMap::new();
    let mut people: HashMap<String, u64> = HashMap::new();
    let mut denied: HashMap<String, u64> = HashMap::new();
    let mut asked: HashMap<String, u64> = HashMap::new();
    let mut calls: Vec<CallRow> = Vec::new();
    let mut pending: Vec<CallRow> = Vec::new();
    let mut pending_total = 0u64;
    let mut anomalies: Vec<CallRow> = Vec::new();
    let mut policies: Vec<PolicyVersion> = Vec::new();
    let mut policy_index: HashMap<String, usize> = HashMap::new();
    let mut shadow_names: Vec<String> = Vec::new();
    let (mut first, mut last) = (None, None);
    // One read of the log: the counts are `Store::stats`'s, the rest is
    // gathered from the same calls as they are counted.
    let stats = store.stats_with(options.query, |entry| {
        let ts = match entry {
            CallEntry::Decided(c) => c.ts_us,
            CallEntry::Ungoverned(c) => c.ts_us,
        };
        chart_times.push(ts);
        let (client, session, who) = client_of(entry);
        *clients.entry(client).or_default() += 1;
        if let Some(session) = session {
            *sessions.entry(session).or_default() += 1;
        }
        if let Some(who) = who {
            *people.entry(who).or_default() += 1;
        }
        first = Some(first.map_or(ts, |f: i64| f.min(ts)));
        last = Some(last.map_or(ts, |l: i64| l.max(ts)));
        if let CallEntry::Decided(call) = entry {
            let summary = || replay::arguments_summary(&call.tool, &call.request.arguments);
            match call.decision.action {
                Action::Deny => *denied.entry(summary()).or_default() += 1,
                Action::Ask => *asked.entry(summary()).or_default() += 1,
                Action::Allow => {}
            }
            for verdict in &call.decision.shadow {
                if !shadow_names.contains(&verdict.name) {
                    shadow_names.push(verdict.name.clone());
                }
            }
            let policy = &call.decision.policy;
            match policy_index.get(&policy.digest) {
                Some(&i) => policies[i].calls += 1,
                None => {
                    policy_index.insert(policy.digest.clone(), policies.len());
                    policies.push(PolicyVersion {
                        name: policy.name.clone(),
                        digest: policy.digest.clone(),
                        layer: call.decision.layer.clone(),
                        first_seen: format_time(call.ts_us),
                        calls: 1,
                        rules: Vec::new(),
                        text: "",
                    });
                }
            }
        }
        let is_pending = entry.status() == "incomplete"
            || matches!(entry, CallEntry::Decided(c) if c.approval == "pending");
        let shown = calls.len() < options.row_cap;
        let listed = !entry.anomalies().is_empty()
            || (is_pending && pending.len() < options.row_cap)
            || shown;
        if listed {
            let row = row_of(entry);
            if !entry.anomalies().is_empty() && anomalies.len() < options.row_cap {
                anomalies.push(row.clone());
            }
            if is_pending && pending.len() < options.row_cap {
                pending.push(row.clone());
            }
            if shown {
                calls.push(row);
            }
        }
        if is_pending {
            pending_total += 1;
        }
        Ok::<_, StoreError>(())
    })?;
    for row in &mut calls {
        let events = store.call_events(&row.call_id)?;
        row.approvers = events
            .iter()
            .filter(|e| e.kind == "approval")
            .filter_map(|e| approver_of(&e.payload))
            .collect();
        row.quorum = events
            .iter()
            .find(|e| e.kind == "decision")
            .and_then(|e| serde_json::from_slice::<crate::audit::DecisionRecord>(&e.payload).ok())
            .and_then(|d| d.approvers)
            .map(|need| {
                let met = shortfalls.iter().all(|s| s.call_id != row.call_id);
                format!(
                    "needs {}{}",
                    crate::approvals::describe_approvers(&need),
                    if met { "" } else { " (not met in the record)" }
                )
            });
        row.verified = verify.ok || verify.first_bad_seq.is_some_and(|bad| row.seq < bad);
        row.receipt = store.receipt_reference(&row.call_id)?.map(|r| ReceiptView {
            file: options
                .receipts
                .as_ref()
                .filter(|_| r.checkpoint.is_some())
                .map(|dir| format!("{dir}/{}", crate::receipt::file_name(&row.call_id))),
            index: r.index,
            log: r.log,
            checkpoint: r.checkpoint.map(|(size, _)| size),
        });
        row.events = events
            .into_iter()
            .map(|event| EventView {
                seq: event.seq,
                kind: event.kind.clone(),
                ts: format_time(event.ts_us),
                leaf: hex(&event.leaf),
                chain: hex(&event.chain),
                payload: clip(String::from_utf8_lossy(&event.payload).into_owned()),
            })
            .collect();
    }
    for version in &mut policies {
        match store.recorded_policy(&version.digest)? {
            PolicyText::Text(text) => {
                version.text = "recorded";
                if let Ok(policy) = Policy::from_toml(&text, &version.name) {
                    version.rules = policy.rules().iter().map(|r| r.id.clone()).collect();
                }
            }
            PolicyText::Mismatch => version.text = "stored text does not match its digest",
            PolicyText::Missing => version.text = "text not stored",
        }
    }
    let drift = match options.compare {
        Some(policy) => {
            let report = replay::replay_calls(
                store,
                options.query,
                policy,
                FactSource::Recorded,
                Kept::Examples,
                &mut |_| {},
                &mut |_| Ok::<_, StoreError>(()),
            )?;
            let examples = examples_of(&report);
            Some(Drift {
                policy: policy.reference().name.clone(),
                digest: policy.reference().digest.clone(),
                report,
                examples,
            })
        }
        None => None,
    };
    // What each shadow policy decided on the selected calls, live.
    let shadows = shadow_names
        .into_iter()
        .map(|name| {
            let report = replay::shadow_calls(
                store,
                options.query,
                &name,
                Kept::Examples,
                &mut |_| {},
                &mut |_| Ok::<_, StoreError>(()),
            )?;
            Ok(Drift {
                policy: name,
                digest: report.policy.current.digest.clone(),
                examples: examples_of(&report),
                report,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let mut groups = vec![
        group("action", "by_action", &stats.by_action),
        group("rule", "by_rule", &stats.by_rule),
        group("tool", "by_tool", &stats.by_tool),
        group("approval", "by_approval", &stats.by_approval),
        group("status", "by_status", &stats.by_status),
        group("anomaly", "by_anomaly", &stats.by_anomaly),
    ];
    // MCP calls (tool names `mcp__SERVER__TOOL`), by server, when there are any.
    let mut by_server: BTreeMap<String, u64> = BTreeMap::new();
    for (tool, count) in &stats.by_tool {
        if let Some((server, _)) = crate::mcp::names::split_tool_name(tool) {
            *by_server.entry(server.to_owned()).or_default() += count;
        }
    }
    if !by_server.is_empty() {
        groups.push(group("MCP server", "by_mcp_server", &by_server));
    }
    let db = options.db_label.clone();
    let quoted = shell_quote(&db);
    Ok(Report {
        generated: options.generated.clone(),
        filters: options.filters.clone(),
        identity: Identity {
            origin: identity.origin.clone(),
            log_id: hex(&identity.log_id),
            format: identity.format,
            created: format_time(identity.created_us),
        },
        problem: verify.problem.map(|p| p.as_str()),
        verify,
        checkpoints,
        reverify: vec![
            format!("gavel verify --db {quoted}"),
            format!("python3 scripts/verify_chain.py {quoted}"),
        ],
        groups,
        stats,
        first_call: first.map(format_time),
        last_call: last.map(format_time),
        chart: Chart::of(&chart_times),
        by_client: top_n(clients, usize::MAX),
        by_who: top_n(people, usize::MAX),
        sessions: sessions.len(),
        by_session: top_n(sessions, TOP_SESSIONS),
        top_denied: top(denied),
        top_asked: top(asked),
        pending,
        pending_total,
        anomalies,
        calls,
        row_cap: options.row_cap,
        policies,
        drift,
        grants: grant_views(store)?,
        shadows,
        db,
    })
}

/// The example calls of each transition, for the drift tables.
fn examples_of(report: &DriftReport) -> Vec<DriftExample> {
    report
        .transitions
        .iter()
        .flat_map(|t| t.examples.iter())
        .map(|c| DriftExample {
            call_id: c.call_id.clone(),
            tool: c.tool.clone(),
            arguments: c.arguments.clone(),
            from: format!("{} ({})", c.from.action.as_str(), c.from.rule_id),
            to: format!("{} ({})", c.to.action.as_str(), c.to.rule_id),
            direction: format!("{:?}", c.direction).to_lowercase(),
        })
        .collect()
}

fn group(name: &'static str, key: &'static str, counts: &BTreeMap<String, u64>) -> Group {
    Group {
        name,
        key,
        rows: sorted(counts),
    }
}

/// `text` as one shell word.
fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The page for `report`: one self-contained HTML document.
pub fn render(report: &Report) -> Result<String, ReportError> {
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("report.html", TEMPLATE)
        .map_err(ReportError::Template)?;
    let template = env
        .get_template("report.html")
        .map_err(ReportError::Template)?;
    template
        .render(
            minijinja::context! { r => minijinja::Value::from(minijinja::value::Serde(report)) },
        )
        .map_err(ReportError::Template)
}

/// The index page of a report over several logs: one self-contained
/// HTML document.
pub fn render_index(index: &Index) -> Result<String, ReportError> {
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("index.html", INDEX_TEMPLATE)
        .map_err(ReportError::Template)?;
    let template = env
        .get_template("index.html")
        .map_err(ReportError::Template)?;
    template
        .render(minijinja::context! { i => minijinja::Value::from(minijinja::value::Serde(index)) })
        .map_err(ReportError::Template)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signers_are_read_from_the_signature_lines() {
        let note = "origin\n3\nroot=\n\n\u{2014} alice AAAA\n\u{2014} bob BBBB\n";
        assert_eq!(signers(note), ["alice", "bob"]);
    }

    #[test]
    fn long_details_are_cut_and_say_so() {
        let long = "é".repeat(DETAIL_CHARS + 10);
        let cut = clip(long);
        assert!(cut.starts_with(&"é".repeat(DETAIL_CHARS)));
        assert!(cut.ends_with(&format!(
            "cut at {DETAIL_CHARS} of {} characters; `gavel show` has it whole)",
            DETAIL_CHARS + 10
        )));
        assert_eq!(clip("short".to_owned()), "short");
    }

    #[test]
    fn shell_quote_leaves_plain_paths_and_quotes_the_rest() {
        assert_eq!(shell_quote("/tmp/a.db"), "/tmp/a.db");
        assert_eq!(shell_quote("/tmp/a b's.db"), "'/tmp/a b'\\''s.db'");
    }
}
