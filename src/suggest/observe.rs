//! The one pass over the record that the learner needs: every decided call
//! with its approvals and results ([`Store::for_each_decided_call_with_outcomes`],
//! the scan replay uses, widened to the outcome rows), each decided again
//! under the current policy on its recorded facts, kept as a compact
//! [`Observation`] when it is labelled or asked about now. The whole record
//! is read; the query only marks which calls proposals are learned from.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::policy::{Action, Policy};
use crate::replay::{arguments_summary, recorded_request};
use crate::store::{AuditQuery, DecidedCall, Scanned, Store};

use super::SuggestError;
use super::shape::{self, Shape};

/// What the record says of a call, as a label for learning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    /// Asked, and a person approved it (by any channel, the client's
    /// prompt included).
    Approved,
    /// Allowed by a grant: approved once, "and the same again".
    Granted,
    Rejected,
    /// Asked, and no answer could be had (fail closed).
    Cancelled,
    Denied,
    /// Asked, and no answer is recorded.
    Unanswered,
    /// Allowed by a rule: nobody was asked.
    Allowed,
}

impl Label {
    /// Approved calls and grant uses: what proposals are learned from.
    pub fn positive(self) -> bool {
        matches!(self, Label::Approved | Label::Granted)
    }

    /// Rejected, cancelled and denied calls: what no proposal may cover.
    pub fn negative(self) -> bool {
        matches!(self, Label::Rejected | Label::Cancelled | Label::Denied)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Label::Approved => "approved",
            Label::Granted => "granted",
            Label::Rejected => "rejected",
            Label::Cancelled => "cancelled",
            Label::Denied => "denied",
            Label::Unanswered => "unanswered",
            Label::Allowed => "allowed",
        }
    }
}

/// Which part of the record a call is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Selected by the query; learned from (the earlier part of its
    /// session, under `--holdout`).
    Train,
    /// Selected, in the later part of its session: evaluated on, not
    /// learned from (`--holdout`).
    HeldOut,
    /// Not selected: checked against, never learned from.
    Outside,
}

/// One call the learner keeps.
#[derive(Debug, Clone)]
pub struct Observation {
    pub call_id: String,
    pub seq: u64,
    pub ts_us: i64,
    /// Its client session, an index into [`Record::sessions`].
    pub session: u32,
    pub tool: String,
    /// Its arguments on one line, for people.
    pub summary: String,
    recorded_action: Action,
    recorded_rule: String,
    approval: Option<String>,
    status: Option<String>,
    /// What the current policy decides on its recorded facts, and by which
    /// rule of which layer (`None`: the project's policy alone).
    pub now: Action,
    pub now_rule: String,
    pub now_layer: Option<String>,
    pub part: Part,
    /// Its shape, or why it cannot be learned.
    pub shape: Result<Shape, String>,
}

impl Observation {
    pub fn label(&self) -> Label {
        if self
            .recorded_rule
            .starts_with(crate::approvals::grants::GRANT_RULE_PREFIX)
        {
            return Label::Granted;
        }
        match self.recorded_action {
            Action::Deny => Label::Denied,
            Action::Allow => Label::Allowed,
            Action::Ask => match self.approval.as_deref() {
                Some("approved") => Label::Approved,
                Some("rejected") => Label::Rejected,
                Some("cancelled") => Label::Cancelled,
                _ => Label::Unanswered,
            },
        }
    }

    /// Whether the current policy asks about it in the project's own
    /// policy (a layer above, or gavel's floor, is never loosened).
    pub fn asked_by_project(&self) -> bool {
        self.now == Action::Ask
            && self
                .now_layer
                .as_deref()
                .is_none_or(|l| l == crate::policy::PROJECT_LAYER)
    }

    /// Whether it was selected by the query.
    pub fn selected(&self) -> bool {
        self.part != Part::Outside
    }
}

/// The record as the learner keeps it.
pub struct Record {
    pub observations: Vec<Observation>,
    /// Observations by call id.
    pub index: HashMap<String, u32>,
    /// Client sessions, in order of first appearance; `""` for calls
    /// without one.
    pub sessions: Vec<String>,
    /// Every decided call read, and those the query selected.
    pub calls: u64,
    pub selected: u64,
    /// The first and last time of a selected call.
    pub first_us: Option<i64>,
    pub last_us: Option<i64>,
    /// For each rule of the current policy (and each grant, `grant.<ID>`
    /// as recorded): the last time it decided a selected call.
    pub last_used: BTreeMap<String, i64>,
    /// How many selected calls each rule and grant decided.
    pub used: BTreeMap<String, u64>,
}

impl Record {
    pub fn session(&self, observation: &Observation) -> &str {
        self.sessions
            .get(observation.session as usize)
            .map_or("", String::as_str)
    }
}

/// Reads the whole of `store` once under `policy`; `query` selects the
/// calls to learn from.
pub fn scan(
    store: &Store,
    query: &AuditQuery,
    policy: &Policy,
    progress: &mut dyn FnMut(u64),
) -> Result<Record, SuggestError> {
    if query.anomalies || query.newest_first {
        return Err(SuggestError::Query {
            problem: "suggest learns from decided calls in record order: \
                      --anomalies and newest-first are not filters it takes"
                .into(),
        });
    }
    if query.limit.is_some() && (query.approval.is_some() || query.status.is_some()) {
        return Err(SuggestError::Query {
            problem: "--limit with --approval or --status is not a selection suggest can make"
                .into(),
        });
    }
    let mut record = Record {
        observations: Vec::new(),
        index: HashMap::new(),
        sessions: Vec::new(),
        calls: 0,
        selected: 0,
        first_us: None,
        last_us: None,
        last_used: BTreeMap::new(),
        used: BTreeMap::new(),
    };
    let mut sessions: HashMap<String, u32> = HashMap::new();
    let outcome_filters = query.approval.is_some() || query.status.is_some();
    // Calls selected so far (for `--limit`), and those whose selection
    // waits for their outcome (`--approval`, `--status`).
    let mut selected_before = 0u64;
    let mut waiting: Vec<(u32, Vec<String>)> = Vec::new();
    // Flow rules decide as they did: on each session's history.
    let flows = crate::replay::Flows::scan(store, policy, None)?;
    store.for_each_decided_call_with_outcomes(&AuditQuery::default(), |scanned| {
        match scanned {
            Scanned::Outcome {
                call_id,
                approval,
                status,
            } => {
                if let Some(&i) = record.index.get(&call_id)
                    && let Some(observation) = record.observations.get_mut(i as usize)
                {
                    if approval.is_some() {
                        observation.approval = approval;
                    }
                    if observation.status.is_none() {
                        observation.status = status;
                    }
                }
            }
            Scanned::Call(call) => {
                record.calls += 1;
                if record.calls.is_multiple_of(16_384) {
                    progress(record.calls);
                }
                let selected =
                    query.limit.is_none_or(|n| selected_before < n) && selects(query, &call);
                selected_before += u64::from(selected);
                let seen = Seen {
                    selected,
                    outcome_filters,
                };
                let history = flows.as_ref().map(|f| f.history(&call)).unwrap_or_default();
                if let Some(wait) =
                    observe(&mut record, &mut sessions, policy, &history, *call, seen)
                {
                    waiting.push(wait);
                }
            }
        }
        Ok::<_, SuggestError>(())
    })?;
    progress(record.calls);
    // The outcome filters, now that every outcome is known.
    for (i, uses) in waiting {
        let Some(o) = record.observations.get_mut(i as usize) else {
            continue;
        };
        let keep = query
            .approval
            .as_deref()
            .is_none_or(|a| Some(a) == approval_of(o))
            && query
                .status
                .as_deref()
                .is_none_or(|s| Some(s) == status_of(o));
        if keep {
            let ts = o.ts_us;
            count_selected(&mut record, &uses, ts);
        } else {
            o.part = Part::Outside;
        }
    }
    Ok(record)
}

/// The approval a listing shows for a call.
fn approval_of(o: &Observation) -> Option<&str> {
    match (o.recorded_action, o.approval.as_deref()) {
        (Action::Ask, None) => Some("pending"),
        (Action::Ask, approval) => approval,
        _ => Some("not_required"),
    }
}

/// The status a listing shows for a call.
fn status_of(o: &Observation) -> Option<&str> {
    Some(o.status.as_deref().unwrap_or("incomplete"))
}

/// Counts a selected call: its time, and the rules (and grant) that decided it.
fn count_selected(record: &mut Record, uses: &[String], ts: i64) {
    record.selected += 1;
    record.first_us = Some(record.first_us.map_or(ts, |f| f.min(ts)));
    record.last_us = Some(record.last_us.map_or(ts, |l| l.max(ts)));
    for rule in uses {
        let last = record.last_used.entry(rule.clone()).or_insert(ts);
        *last = (*last).max(ts);
        *record.used.entry(rule.clone()).or_default() += 1;
    }
}

/// How a call was met in the scan.
#[derive(Clone, Copy)]
struct Seen {
    selected: bool,
    /// The query filters on outcomes: a selected call is counted only
    /// once its outcome is known.
    outcome_filters: bool,
}

/// Decides `call` again and keeps what the learner needs of it; a call
/// whose selection waits for its outcome is returned with what decided it.
fn observe(
    record: &mut Record,
    sessions: &mut HashMap<String, u32>,
    policy: &Policy,
    history: &crate::policy::History,
    call: DecidedCall,
    seen: Seen,
) -> Option<(u32, Vec<String>)> {
    let request = recorded_request(&call);
    let now = policy.decide_in(
        &request,
        &call.decision.facts,
        call.request.principal.as_ref(),
        history,
    );
    let granted = call
        .decision
        .rule_id
        .starts_with(crate::approvals::grants::GRANT_RULE_PREFIX);
    // What decided it, for `--unused-for`: the current policy's rule, and
    // the grant that allowed it when one did.
    let mut uses = vec![now.rule_id.clone()];
    if granted {
        uses.push(call.decision.rule_id.clone());
    }
    let waits = seen.selected && seen.outcome_filters;
    let keep =
        call.decision.action != Action::Allow || granted || now.action != Action::Allow || waits;
    if !keep {
        if seen.selected {
            count_selected(record, &uses, call.ts_us);
        }
        return None;
    }
    let session_name = call
        .request
        .principal
        .as_ref()
        .and_then(|p| p.session.clone())
        .or_else(|| {
            call.request
                .client
                .as_ref()
                .and_then(|c| c.session_id.clone())
        })
        .unwrap_or_default();
    let next = sessions.len() as u32;
    let session = *sessions.entry(session_name.clone()).or_insert_with(|| {
        record.sessions.push(session_name);
        next
    });
    let shape = shape::of(&call.tool, &call.request.arguments, &call.decision.facts);
    let index = record.observations.len() as u32;
    record.index.insert(call.call_id.clone(), index);
    let ts = call.ts_us;
    record.observations.push(Observation {
        summary: cut(&arguments_summary(&call.tool, &call.request.arguments), 120),
        call_id: call.call_id,
        seq: call.seq,
        ts_us: call.ts_us,
        session,
        tool: call.tool,
        recorded_action: call.decision.action,
        recorded_rule: call.decision.rule_id,
        approval: None,
        status: None,
        now: now.action,
        now_rule: now.rule_id,
        now_layer: now.layer,
        part: if seen.selected {
            Part::Train
        } else {
            Part::Outside
        },
        shape,
    });
    if waits {
        return Some((index, uses));
    }
    if seen.selected {
        count_selected(record, &uses, ts);
    }
    None
}

/// `text`, at most `max` characters.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Whether `query`'s filters on the request and decision hold for `call`,
/// as the store's own queries read them (the outcome filters are applied
/// once the outcomes are known).
fn selects(query: &AuditQuery, call: &DecidedCall) -> bool {
    let principal = call.request.principal.as_ref();
    let session = principal.and_then(|p| p.session.as_deref()).or_else(|| {
        call.request
            .client
            .as_ref()
            .and_then(|c| c.session_id.as_deref())
    });
    let mcp = crate::mcp::names::split_tool_name(&call.tool);
    let eq = |wanted: &Option<String>, have: Option<&str>| {
        wanted.as_deref().is_none_or(|w| Some(w) == have)
    };
    query.since.is_none_or(|since| call.ts_us >= since)
        && query.until.is_none_or(|until| call.ts_us < until)
        && eq(&query.tool, Some(&call.tool))
        && eq(&query.rule_id, Some(&call.decision.rule_id))
        && eq(&query.action, Some(call.decision.action.as_str()))
        && eq(&query.call_id, Some(&call.call_id))
        && eq(&query.session, session)
        && eq(&query.user, principal.map(|p| p.user.as_str()))
        && eq(&query.client, principal.map(|p| p.client.as_str()))
        && eq(&query.agent, principal.and_then(|p| p.agent_id.as_deref()))
        && query
            .host
            .as_deref()
            .is_none_or(|host| principal.is_some_and(|p| p.host == host || p.host_id == host))
        && eq(&query.mcp_server, mcp.map(|(server, _)| server))
        && eq(&query.mcp_tool, mcp.map(|(_, tool)| tool))
        && query
            .grep
            .as_deref()
            .is_none_or(|text| holds_text(&call.request.arguments, text))
}

/// Whether a string in `value` holds `text`.
fn holds_text(value: &Value, text: &str) -> bool {
    match value {
        Value::String(s) => s.contains(text),
        Value::Array(items) => items.iter().any(|v| holds_text(v, text)),
        Value::Object(map) => map.values().any(|v| holds_text(v, text)),
        Value::Number(n) => n.to_string().contains(text),
        Value::Bool(b) => b.to_string().contains(text),
        Value::Null => false,
    }
}
