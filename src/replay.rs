//! Replay: recorded requests decided again under the current policy, and
//! the drift between what was recorded and what would happen now.
//!
//! Replay is read-only and pure on the recorded data: it never prompts,
//! never runs a handler and never appends. By default it uses the facts
//! recorded with each decision, so a replay is exact and repeatable even
//! after the filesystem changed; a `FactSource::Live` replay re-gathers them.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::facts::{Facts, Workspace, path_argument};
use crate::policy::{Action, Decision, Policy, PolicyRef};
use crate::request::ToolRequest;
use crate::store::{AuditQuery, DecidedCall, Store, StoreError};

mod flows;
mod gate;
mod grants;
pub mod summary;

pub use flows::Flows;
pub use gate::{FailOn, Gate};
use grants::GrantBook;
pub use grants::{GrantedCall, Grants};

/// Where the facts for a replayed decision come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FactSource {
    /// The facts recorded with the original decision.
    Recorded,
    /// The filesystem as it is now, under the recorded workspace root.
    Live,
    /// Not re-decided: the verdict a shadow policy recorded on each call,
    /// with the facts of that moment (calls without one are left out).
    Shadow,
}

/// How a decision moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The new action is less strict (deny -> ask or allow, ask -> allow).
    Loosened,
    /// The new action is stricter.
    Tightened,
    /// Same action, another rule decided.
    Rerouted,
}

/// One side of a transition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Verdict {
    pub action: Action,
    pub rule_id: String,
    /// The sandbox an allow runs under, when its rule names one (the
    /// `read-only` a proven read-only command gets without a rule naming
    /// it follows from the facts, not the policy, and is left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Contained>,
    /// Who must approve an ask, when its rule names approvers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approvers: Option<crate::policy::Approvers>,
}

/// The sandbox of a verdict: its profile and digest (and, not shown, its
/// spec, which decides whether a change widened it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Contained {
    pub profile: String,
    pub sha256: String,
    #[serde(skip)]
    pub spec: crate::sandbox::Spec,
}

impl Verdict {
    /// The verdict of `decision`.
    pub fn of(decision: &Decision) -> Self {
        Self {
            action: decision.action,
            rule_id: decision.rule_id.clone(),
            sandbox: decision
                .sandbox
                .as_ref()
                .filter(|s| !s.implied)
                .map(|s| Contained {
                    profile: s.profile.clone(),
                    sha256: s.sha256.clone(),
                    spec: s.spec.clone(),
                }),
            approvers: decision.approvers.clone(),
        }
    }
}

/// Calls whose decision moved the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transition {
    pub from: Verdict,
    pub to: Verdict,
    pub direction: Direction,
    pub count: u64,
    /// The calls that moved this way, oldest first: all of them, or the
    /// first few when the builder keeps only examples (`Kept::Examples`).
    pub call_ids: Vec<String>,
    /// The first few calls that moved this way, with their tool and
    /// arguments, for a table (JSON lists every changed call instead).
    #[serde(skip)]
    pub examples: Vec<ChangedCall>,
}

/// One call whose decision moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedCall {
    pub call_id: String,
    pub tool: String,
    /// The arguments on one line: a bash command, a path, a glob pattern,
    /// else the arguments' JSON (at most `SUMMARY_CHARS` characters).
    pub arguments: String,
    pub from: Verdict,
    pub to: Verdict,
    pub direction: Direction,
    /// The earlier call of the session whose label a flow rule read: the
    /// one the new decision's `after` names, else the recorded one's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub because: Option<crate::policy::After>,
}

/// How many call ids a `DriftBuilder` keeps per transition and for anomalies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// Every changed call (JSON output: nothing left out).
    All,
    /// As `All`, and every call replayed, moved or not, in
    /// `DriftReport::replayed` (a JUnit report has a test case per call).
    Every,
    /// The first `CALL_IDS_KEPT` (a table shows only examples).
    Examples,
}

impl Kept {
    fn allows(self, len: usize) -> bool {
        self != Kept::Examples || len < CALL_IDS_KEPT
    }
}

/// One call replayed, moved or not (kept with `Kept::Every`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayedCall {
    pub call_id: String,
    pub tool: String,
    /// As `ChangedCall::arguments`.
    pub arguments: String,
    pub from: Verdict,
    pub to: Verdict,
    /// How its decision moved; `None`: as recorded.
    pub direction: Option<Direction>,
    /// It moved, but cannot be re-decided exactly (see `DriftReport::undecidable`).
    pub undecidable: bool,
}

/// The longest arguments summary, in characters.
pub const SUMMARY_CHARS: usize = 300;

/// A call's arguments on one line: the bash command, the path or the glob
/// pattern when the tool has one, else the arguments' compact JSON; blanks
/// (newlines, tabs) collapsed, at most `SUMMARY_CHARS` characters.
pub fn arguments_summary(tool: &str, arguments: &Value) -> String {
    let field = match tool {
        "bash" => Some("command"),
        "glob" => Some("pattern"),
        other => path_argument(other),
    };
    let text = match field.and_then(|f| arguments.get(f)).and_then(Value::as_str) {
        Some(text) => text.to_owned(),
        None => arguments.to_string(),
    };
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// The policies on either side of a replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicySides {
    /// Digests of the policies that made the recorded decisions, in order of first use.
    pub recorded: Vec<String>,
    pub current: PolicyRef,
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriftReport {
    pub total: u64,
    /// Calls with the same action and rule (a changed reason alone counts here).
    pub unchanged: u64,
    /// `loosened + tightened + rerouted`.
    pub changed: u64,
    pub loosened: u64,
    pub tightened: u64,
    pub rerouted: u64,
    /// Unchanged calls whose reason text differs.
    pub reason_changed: u64,
    pub policy: PolicySides,
    pub facts: FactSource,
    /// Loosened first, then tightened, then rerouted; larger groups first.
    pub transitions: Vec<Transition>,
    /// Selected calls with anomalies (a tool that ran outside what gavel
    /// decided); ungoverned ones have no decision to replay.
    pub anomalies: u64,
    /// Them (all, or the first few when only examples are kept), in the
    /// order their first anomaly was recorded.
    pub anomaly_calls: Vec<String>,
    /// With recorded facts: calls whose long command (its parse recorded by
    /// digest) parses differently now; they were re-decided on today's parse.
    pub parse_differs: u64,
    /// Calls whose decision came out different but cannot be re-decided
    /// exactly: a field the policy reads (a command, a path) was stored
    /// with a secret redacted. It cannot be told whether the policy or the
    /// redaction moved them, so they are neither drift nor unchanged, and
    /// a gate fails on them unless told otherwise.
    pub undecidable: u64,
    /// Of them, those whose move would loosen the decision.
    pub undecidable_loosened: u64,
    /// Them (all, or the first few when only examples are kept), with why.
    pub undecidable_calls: Vec<UndecidableCall>,
    /// Every call replayed, oldest first, when kept (`Kept::Every`).
    #[serde(skip)]
    pub replayed: Vec<ReplayedCall>,
    /// Calls a grant allows in this replay (`grant.<ID>`): unless replayed
    /// without grants, a call the policy still asks about is allowed by a
    /// grant of the log that covers it and was in force at the call's place
    /// in the record (given before it, not yet revoked, not expired, fewer
    /// uses recorded before it than its limit).
    #[serde(skip_serializing_if = "is_zero")]
    pub granted: u64,
    /// Every call that depended on a grant, oldest first: those a grant
    /// allowed when recorded, those one allows in this replay, and those a
    /// grant's scope covers but its limits no longer did (`lapsed`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub granted_calls: Vec<GrantedCall>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A call counted under `undecidable` instead of drift.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UndecidableCall {
    pub call_id: String,
    pub tool: String,
    pub from: Verdict,
    pub to: Verdict,
    pub direction: Direction,
    pub why: String,
}

/// The arguments of `tool` that a policy's conditions read: a bash
/// command, a file tool's path or pattern, a patch's paths. Other fields
/// (`content`, `old_text`, `new_text`, ...) are only checked for their
/// kind, which redaction keeps.
pub fn read_by_policy(tool: &str) -> &'static [&'static str] {
    match tool {
        "bash" => &["command"],
        "apply_patch" => &["paths"],
        "glob" => &["pattern"],
        _ if path_argument(tool).is_some() => &["path"],
        _ => &[],
    }
}

/// Whether a redaction in the stored call could change its decision: a
/// marker in an argument the policy reads, or in the recorded facts.
fn redaction_decides(tool: &str, arguments: &Value, facts: &Facts) -> bool {
    let fields = read_by_policy(tool);
    let in_arguments = match arguments {
        Value::Object(map) => map
            .iter()
            .any(|(key, value)| fields.contains(&key.as_str()) && holds_redaction(value)),
        other => holds_redaction(other),
    };
    in_arguments || serde_json::to_value(facts).is_ok_and(|f| holds_redaction(&f))
}

/// Whether `value` holds a redaction marker (`«redacted:`) in a string.
pub fn holds_redaction(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains("«redacted:"),
        Value::Array(items) => items.iter().any(holds_redaction),
        Value::Object(map) => map.values().any(holds_redaction),
        _ => false,
    }
}

/// How many call ids a transition keeps.
pub const CALL_IDS_KEPT: usize = 5;

/// Classifies a move from `from` to `to`; `None` when action and rule are the same.
pub fn direction(from: &Verdict, to: &Verdict) -> Option<Direction> {
    match to.action.cmp(&from.action) {
        std::cmp::Ordering::Less => Some(Direction::Loosened),
        std::cmp::Ordering::Greater => Some(Direction::Tightened),
        // The same allow under a wider sandbox (or none where there was
        // one) is a loosening; under a narrower one, a tightening.
        std::cmp::Ordering::Equal
            if to.action == Action::Allow
                && crate::sandbox::widened(
                    from.sandbox.as_ref().map(|c| &c.spec),
                    to.sandbox.as_ref().map(|c| &c.spec),
                )
                .is_some() =>
        {
            match crate::sandbox::widened(
                from.sandbox.as_ref().map(|c| &c.spec),
                to.sandbox.as_ref().map(|c| &c.spec),
            ) {
                Some(true) => Some(Direction::Loosened),
                _ => Some(Direction::Tightened),
            }
        }
        // The same ask answered by more people (or, now, only by people
        // proving a factor) is a tightening; by fewer, a loosening.
        std::cmp::Ordering::Equal if to.approvers != from.approvers => {
            let need = |v: &Verdict| v.approvers.as_ref().map_or(0, |a| a.quorum);
            // Fewer kinds of factor counting (`factors`) is stricter too;
            // more people with more kinds of factor is neither.
            let kinds = |v: &Verdict| {
                v.approvers
                    .as_ref()
                    .map_or(crate::policy::FACTORS.len() + 1, |a| a.factor_count())
            };
            let people = need(to).cmp(&need(from));
            let factors = kinds(from).cmp(&kinds(to));
            match people.then(factors) {
                _ if people == factors.reverse() && people.is_ne() => Some(Direction::Rerouted),
                std::cmp::Ordering::Greater => Some(Direction::Tightened),
                std::cmp::Ordering::Less => Some(Direction::Loosened),
                std::cmp::Ordering::Equal => Some(Direction::Rerouted),
            }
        }
        std::cmp::Ordering::Equal if to.rule_id != from.rule_id => Some(Direction::Rerouted),
        std::cmp::Ordering::Equal => None,
    }
}

/// Accumulates replayed decisions into a `DriftReport`.
pub struct DriftBuilder {
    current: PolicyRef,
    facts: FactSource,
    recorded: Vec<String>,
    total: u64,
    reason_changed: u64,
    undecidable: Vec<UndecidableCall>,
    undecidable_count: u64,
    undecidable_loosened: u64,
    kept: Kept,
    groups: HashMap<(Verdict, Verdict), Group>,
    replayed: Vec<ReplayedCall>,
}

struct Group {
    direction: Direction,
    count: u64,
    call_ids: Vec<String>,
    examples: Vec<ChangedCall>,
}

impl DriftBuilder {
    /// A builder keeping the first few call ids of each transition.
    pub fn new(current: PolicyRef, facts: FactSource) -> Self {
        Self::keeping(current, facts, Kept::Examples)
    }

    /// A builder keeping the call ids `kept` says.
    pub fn keeping(current: PolicyRef, facts: FactSource, kept: Kept) -> Self {
        Self {
            kept,
            current,
            facts,
            recorded: Vec::new(),
            total: 0,
            reason_changed: 0,
            undecidable: Vec::new(),
            undecidable_count: 0,
            undecidable_loosened: 0,
            groups: HashMap::new(),
            replayed: Vec::new(),
        }
    }

    /// Adds one call: what was recorded and what the current policy says.
    pub fn add(&mut self, call_id: &str, recorded: &Decision, now: &Decision) {
        self.add_call(call_id, "", &Value::Null, recorded, now);
    }

    /// Adds one call whose decision moved but cannot be re-decided exactly
    /// (a field the policy reads was stored redacted): counted apart as
    /// undecidable, with its transition.
    pub fn add_undecidable(
        &mut self,
        call_id: &str,
        tool: &str,
        arguments: &Value,
        recorded: &Decision,
        now: &Decision,
    ) {
        let (from, to, moved) = self.count(call_id, tool, arguments, recorded, now, true);
        let Some(direction) = moved else {
            return;
        };
        self.undecidable_count += 1;
        if direction == Direction::Loosened {
            self.undecidable_loosened += 1;
        }
        if self.kept.allows(self.undecidable.len()) {
            self.undecidable.push(UndecidableCall {
                call_id: call_id.to_owned(),
                tool: tool.to_owned(),
                from,
                to,
                direction,
                why: "a field the policy reads was stored with a secret redacted, and the \
                      redacted call decides differently: it cannot be re-decided exactly"
                    .to_owned(),
            });
        }
    }

    /// Counts one replayed call (and keeps it, under `Kept::Every`): its
    /// verdicts then and now, and how it moved. `undecidable` marks a call
    /// that moved but cannot be re-decided exactly.
    fn count(
        &mut self,
        call_id: &str,
        tool: &str,
        arguments: &Value,
        recorded: &Decision,
        now: &Decision,
        undecidable: bool,
    ) -> (Verdict, Verdict, Option<Direction>) {
        self.total += 1;
        if !self.recorded.contains(&recorded.policy.digest) {
            self.recorded.push(recorded.policy.digest.clone());
        }
        let from = Verdict::of(recorded);
        let to = Verdict::of(now);
        let moved = direction(&from, &to);
        if self.kept == Kept::Every {
            self.replayed.push(ReplayedCall {
                call_id: call_id.to_owned(),
                tool: tool.to_owned(),
                arguments: arguments_summary(tool, arguments),
                from: from.clone(),
                to: to.clone(),
                direction: moved,
                undecidable: undecidable && moved.is_some(),
            });
        }
        (from, to, moved)
    }

    /// Adds one call with its tool and arguments; returns the change when
    /// its decision moved.
    pub fn add_call(
        &mut self,
        call_id: &str,
        tool: &str,
        arguments: &Value,
        recorded: &Decision,
        now: &Decision,
    ) -> Option<ChangedCall> {
        let (from, to, moved) = self.count(call_id, tool, arguments, recorded, now, false);
        let Some(direction) = moved else {
            if recorded.reason != now.reason {
                self.reason_changed += 1;
            }
            return None;
        };
        let change = ChangedCall {
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            arguments: arguments_summary(tool, arguments),
            from: from.clone(),
            to: to.clone(),
            direction,
            because: now.after.clone().or_else(|| recorded.after.clone()),
        };
        let kept = self.kept;
        let group = self.groups.entry((from, to)).or_insert_with(|| Group {
            direction,
            count: 0,
            call_ids: Vec::new(),
            examples: Vec::new(),
        });
        group.count += 1;
        if kept.allows(group.call_ids.len()) {
            group.call_ids.push(call_id.to_owned());
        }
        if group.examples.len() < CALL_IDS_KEPT {
            group.examples.push(change.clone());
        }
        Some(change)
    }

    pub fn finish(self) -> DriftReport {
        let mut counts: BTreeMap<Direction, u64> = BTreeMap::new();
        let mut transitions: Vec<Transition> = self
            .groups
            .into_iter()
            .map(|((from, to), group)| {
                *counts.entry(group.direction).or_default() += group.count;
                Transition {
                    from,
                    to,
                    direction: group.direction,
                    count: group.count,
                    call_ids: group.call_ids,
                    examples: group.examples,
                }
            })
            .collect();
        transitions.sort_by(|a, b| {
            (a.direction, std::cmp::Reverse(a.count), &a.from, &a.to).cmp(&(
                b.direction,
                std::cmp::Reverse(b.count),
                &b.from,
                &b.to,
            ))
        });
        let get = |d| counts.get(&d).copied().unwrap_or(0);
        let (loosened, tightened, rerouted) = (
            get(Direction::Loosened),
            get(Direction::Tightened),
            get(Direction::Rerouted),
        );
        let changed = loosened + tightened + rerouted;
        DriftReport {
            total: self.total,
            unchanged: self.total - changed - self.undecidable_count,
            changed,
            loosened,
            tightened,
            rerouted,
            reason_changed: self.reason_changed,
            policy: PolicySides {
                recorded: self.recorded,
                current: self.current,
            },
            facts: self.facts,
            transitions,
            anomalies: 0,
            anomaly_calls: Vec::new(),
            parse_differs: 0,
            undecidable: self.undecidable_count,
            undecidable_loosened: self.undecidable_loosened,
            undecidable_calls: self.undecidable,
            replayed: self.replayed,
            granted: 0,
            granted_calls: Vec::new(),
        }
    }
}

/// The request a recorded call made.
pub fn recorded_request(call: &DecidedCall) -> ToolRequest {
    ToolRequest::new(
        call.request.tool_use_id.clone(),
        call.tool.clone(),
        call.request.arguments.clone(),
    )
}

/// A `policy diff` sample's arguments on one line ([`arguments_summary`]),
/// then the labels set before it, if any.
pub fn sample_arguments(sample: &crate::policy::diff::SampleChange) -> String {
    let summary = arguments_summary(&sample.tool, &sample.arguments);
    if sample.after.is_empty() {
        return summary;
    }
    format!("{summary} (after {})", sample.after.join(", "))
}

/// Re-gathers facts for a recorded call from the filesystem as it is now,
/// in its recorded workspace `root` (opened, or the error opening it), with
/// the paths `policy` declares for its tool. What an MCP proxy knew of the
/// tool's definition (`recorded.mcp`) is not on the filesystem: it is kept.
pub fn live_facts(
    root: &str,
    workspace: &Result<Workspace, String>,
    request: &ToolRequest,
    policy: &Policy,
    recorded: &Facts,
) -> Facts {
    match workspace {
        Ok(workspace) => {
            let mut facts = workspace.facts_with(request, &policy.path_arguments(&request.name));
            facts.mcp = recorded.mcp.clone();
            facts
        }
        // The recorded workspace is gone: nothing in it can be resolved, so
        // every path fails closed, as it would for a live call.
        Err(err) => Facts::unresolvable(root, request, err),
    }
}

/// Replays the calls `query` selects from `store` under `policy`.
/// `progress` is called with the number of calls done so far.
pub fn replay(
    store: &Store,
    query: &AuditQuery,
    policy: &Policy,
    source: FactSource,
    progress: &mut dyn FnMut(u64),
) -> Result<DriftReport, StoreError> {
    replay_calls(
        store,
        query,
        policy,
        source,
        Kept::Examples,
        progress,
        &mut |_| Ok::<_, StoreError>(()),
    )
}

/// Replays like [`replay`], keeping the call ids `kept` says, and hands
/// each changed call to `on_change` as it is found (oldest first).
pub fn replay_calls<E: From<StoreError>>(
    store: &Store,
    query: &AuditQuery,
    policy: &Policy,
    source: FactSource,
    kept: Kept,
    progress: &mut dyn FnMut(u64),
    on_change: &mut dyn FnMut(&ChangedCall) -> Result<(), E>,
) -> Result<DriftReport, E> {
    replay_calls_with(
        store,
        query,
        policy,
        source,
        kept,
        Grants::AsRecorded,
        progress,
        on_change,
    )
}

/// [`replay_calls`], counting the log's grants as `grants` says.
#[allow(clippy::too_many_arguments)]
pub fn replay_calls_with<E: From<StoreError>>(
    store: &Store,
    query: &AuditQuery,
    policy: &Policy,
    source: FactSource,
    kept: Kept,
    grants: Grants,
    progress: &mut dyn FnMut(u64),
    on_change: &mut dyn FnMut(&ChangedCall) -> Result<(), E>,
) -> Result<DriftReport, E> {
    let mut granted_calls = Vec::new();
    let book = match grants {
        Grants::AsRecorded => Some(GrantBook::load(store)?),
        Grants::Ignored => None,
    };
    let flows = flows::Flows::scan(store, policy, query.until)?;
    // Live facts: each recorded workspace is opened (canonicalized) once.
    let mut workspaces: HashMap<String, Result<Workspace, String>> = HashMap::new();
    let mut parse_differs = 0;
    let mut decide = |call: &DecidedCall, request: &ToolRequest| {
        let live;
        let facts = match source {
            FactSource::Recorded | FactSource::Shadow => {
                parse_differs += u64::from(call.parse_differs);
                &call.decision.facts
            }
            FactSource::Live => {
                let root = &call.decision.facts.workspace;
                let workspace = workspaces.entry(root.clone()).or_insert_with(|| {
                    Workspace::open(std::path::Path::new(root)).map_err(|e| e.to_string())
                });
                live = live_facts(root, workspace, request, policy, &call.decision.facts);
                &live
            }
        };
        let history = flows.as_ref().map(|f| f.history(call)).unwrap_or_default();
        let mut now = policy.decide_in(request, facts, call.request.principal.as_ref(), &history);
        // Under the enforcement the call's machine recorded (a record
        // older than it: a kernel that enforces everything).
        let enforced = call
            .decision
            .sandbox
            .as_ref()
            .and_then(|s| s.enforcement())
            .unwrap_or(crate::sandbox::kernel::Enforcement::Full);
        crate::sandbox::admit(
            &mut now,
            request,
            facts,
            |_| enforced,
            policy.sandbox_unenforceable(),
        );
        let recorded = recorded_decision(call);
        let was = recorded
            .rule_id
            .strip_prefix(crate::approvals::grants::GRANT_RULE_PREFIX);
        let verdict = Verdict::of(&now);
        let mut list = |grant: &str, covered: bool, lapsed: Option<String>| {
            granted_calls.push(GrantedCall {
                call_id: call.call_id.clone(),
                grant: grant.to_owned(),
                recorded: was == Some(grant),
                covered,
                lapsed,
                now: verdict.clone(),
            });
        };
        let Some(book) = &book else {
            if let Some(grant) = was {
                list(grant, false, Some("replayed without grants".to_owned()));
            }
            return Some((recorded, now));
        };
        if now.action != Action::Ask {
            // A grant answers only an ask.
            if let Some(grant) = was {
                list(grant, false, Some("the policy no longer asks".to_owned()));
            }
            return Some((recorded, now));
        }
        // Re-decided with the grants in force at the call's place in the
        // record, their limits included.
        let now = match book.judge(call, request, facts, &now) {
            Ok(grant) => {
                let id = grant.record.grant.clone();
                let granted = crate::approvals::grants::granted(grant, &now);
                if let Some(other) = was.filter(|w| *w != id) {
                    list(other, false, Some(format!("grant {id} covers it instead")));
                }
                list(&id, true, None);
                // The recorded reason stands when the same grant allows it:
                // it names the creator as the grant row does.
                match was {
                    Some(w) if w == id => Decision {
                        policy: granted.policy,
                        ..recorded.clone()
                    },
                    _ => granted,
                }
            }
            Err(lapsed) => {
                if let Some(grant) = was
                    && !lapsed.iter().any(|(g, _)| *g == grant)
                {
                    let why = if book.knows(grant) {
                        "its scope does not cover the call as replayed"
                    } else {
                        "no such grant in the record"
                    };
                    list(grant, false, Some(why.to_owned()));
                }
                for (grant, why) in lapsed {
                    list(grant, false, Some(why));
                }
                now
            }
        };
        Some((recorded, now))
    };
    let mut report = drift_calls(
        store,
        query,
        DriftBuilder::keeping(policy.reference().clone(), source, kept),
        &mut decide,
        progress,
        on_change,
    )?;
    report.parse_differs = parse_differs;
    report.granted = granted_calls.iter().filter(|g| g.covered).count() as u64;
    report.granted_calls = granted_calls;
    Ok(report)
}

/// What the shadow policy `name` recorded on the calls `query` selects,
/// against what was enforced: the same report as a replay of that policy,
/// made of the verdicts recorded live rather than re-decided. Calls without
/// a verdict of `name` (recorded before it was added) are left out.
pub fn shadow_calls<E: From<StoreError>>(
    store: &Store,
    query: &AuditQuery,
    name: &str,
    kept: Kept,
    progress: &mut dyn FnMut(u64),
    on_change: &mut dyn FnMut(&ChangedCall) -> Result<(), E>,
) -> Result<DriftReport, E> {
    let mut digest: Option<String> = None;
    let mut decide = |call: &DecidedCall, _: &ToolRequest| {
        let verdict = call.decision.shadow.iter().find(|v| v.name == name)?;
        digest.get_or_insert_with(|| verdict.digest.clone());
        let now = Decision::new(
            verdict.action,
            &verdict.rule_id,
            String::new(),
            PolicyRef {
                name: name.to_owned(),
                digest: verdict.digest.clone(),
            },
        );
        Some((recorded_decision(call), now))
    };
    let current = PolicyRef {
        name: name.to_owned(),
        digest: String::new(),
    };
    let mut report = drift_calls(
        store,
        query,
        DriftBuilder::keeping(current, FactSource::Shadow, kept),
        &mut decide,
        progress,
        on_change,
    )?;
    report.policy.current.digest = digest.unwrap_or_default();
    Ok(report)
}

/// What `old` and `new` decide on each call `query` selects, on its
/// recorded facts: the recorded traffic's part of `policy diff`.
pub fn diff_calls<E: From<StoreError>>(
    store: &Store,
    query: &AuditQuery,
    old: &Policy,
    new: &Policy,
    kept: Kept,
    progress: &mut dyn FnMut(u64),
    on_change: &mut dyn FnMut(&ChangedCall) -> Result<(), E>,
) -> Result<DriftReport, E> {
    diff_calls_inspecting(
        store,
        query,
        old,
        new,
        kept,
        progress,
        on_change,
        &mut |_, _, _, _| {},
    )
}

/// [`diff_calls`], handing `inspect` every call with its request and the
/// two decisions as they are made (`policy suggest` checks its proposals
/// against the calls they must not cover in the same pass).
#[allow(clippy::too_many_arguments)]
pub fn diff_calls_inspecting<E: From<StoreError>>(
    store: &Store,
    query: &AuditQuery,
    old: &Policy,
    new: &Policy,
    kept: Kept,
    progress: &mut dyn FnMut(u64),
    on_change: &mut dyn FnMut(&ChangedCall) -> Result<(), E>,
    inspect: &mut dyn FnMut(&DecidedCall, &ToolRequest, &Decision, &Decision),
) -> Result<DriftReport, E> {
    let old_flows = flows::Flows::scan(store, old, query.until)?;
    let new_flows = flows::Flows::scan(store, new, query.until)?;
    let mut decide = |call: &DecidedCall, request: &ToolRequest| {
        let facts = &call.decision.facts;
        let who = call.request.principal.as_ref();
        let history = |flows: &Option<flows::Flows>| {
            flows.as_ref().map(|f| f.history(call)).unwrap_or_default()
        };
        let (before, after) = (
            old.decide_in(request, facts, who, &history(&old_flows)),
            new.decide_in(request, facts, who, &history(&new_flows)),
        );
        inspect(call, request, &before, &after);
        Some((before, after))
    };
    drift_calls(
        store,
        query,
        DriftBuilder::keeping(new.reference().clone(), FactSource::Recorded, kept),
        &mut decide,
        progress,
        on_change,
    )
}

/// The decision recorded for `call`.
fn recorded_decision(call: &DecidedCall) -> Decision {
    Decision {
        action: call.decision.action,
        rule_id: call.decision.rule_id.clone(),
        reason: call.decision.reason.clone(),
        policy: call.decision.policy.clone(),
        layer: call.decision.layer.clone(),
        layers: call.decision.layers.clone(),
        shadow: call.decision.shadow.clone(),
        sandbox: call.decision.sandbox.clone(),
        labels: call.decision.labels.clone(),
        after: call.decision.after.clone(),
        approvers: call.decision.approvers.clone(),
    }
}

/// Makes a recorded call's two decisions to compare: before and now.
type Decide<'a> = dyn FnMut(&DecidedCall, &ToolRequest) -> Option<(Decision, Decision)> + 'a;

/// Compares two decisions of each call `query` selects, as `decide` makes
/// them: before (usually the recorded one) and now (`None`: the call is
/// left out).
fn drift_calls<E: From<StoreError>>(
    store: &Store,
    query: &AuditQuery,
    mut drift: DriftBuilder,
    decide: &mut Decide<'_>,
    progress: &mut dyn FnMut(u64),
    on_change: &mut dyn FnMut(&ChangedCall) -> Result<(), E>,
) -> Result<DriftReport, E> {
    let kept = drift.kept;
    store.for_each_decided_call(query, |call| {
        let request = recorded_request(&call);
        let Some((recorded, now)) = decide(&call, &request) else {
            return Ok(());
        };
        // Only a moved decision is looked at for markers: the common case
        // costs nothing.
        let moved = direction(&Verdict::of(&recorded), &Verdict::of(&now)).is_some();
        if moved && redaction_decides(&call.tool, &call.request.arguments, &call.decision.facts) {
            drift.add_undecidable(
                &call.call_id,
                &call.tool,
                &call.request.arguments,
                &recorded,
                &now,
            );
        } else if let Some(change) = drift.add_call(
            &call.call_id,
            &call.tool,
            &call.request.arguments,
            &recorded,
            &now,
        ) {
            on_change(&change)?;
        }
        if drift.total.is_multiple_of(16_384) {
            progress(drift.total);
        }
        Ok::<_, E>(())
    })?;
    progress(drift.total);
    let mut report = drift.finish();
    // Anomalies are few and indexed: each anomalous call is checked against
    // the selection, rather than the selection scanned for anomalies.
    let mut seen = std::collections::HashSet::new();
    for anomaly in store.anomalies(&AuditQuery {
        since: query.since,
        until: query.until,
        ..AuditQuery::default()
    })? {
        if !seen.insert(anomaly.call_id.clone()) {
            continue;
        }
        let one = AuditQuery {
            call_id: Some(anomaly.call_id.clone()),
            limit: None,
            ..query.clone()
        };
        let mut selected = false;
        store.for_each_entry(&one, |_| {
            selected = true;
            Ok::<_, StoreError>(())
        })?;
        if selected {
            report.anomalies += 1;
            if kept.allows(report.anomaly_calls.len()) {
                report.anomaly_calls.push(anomaly.call_id);
            }
        }
    }
    Ok(report)
}

/// How many of the calls `query` selects each rule of `policy` decides,
/// on the recorded facts (rule id -> calls), for `policy lint`.
pub fn rule_usage(
    store: &Store,
    query: &AuditQuery,
    policy: &Policy,
    progress: &mut dyn FnMut(u64),
) -> Result<BTreeMap<String, u64>, StoreError> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0u64;
    let flows = flows::Flows::scan(store, policy, query.until)?;
    store.for_each_decided_call(query, |call| {
        let request = recorded_request(&call);
        let history = flows.as_ref().map(|f| f.history(&call)).unwrap_or_default();
        let now = policy.decide_in(
            &request,
            &call.decision.facts,
            call.request.principal.as_ref(),
            &history,
        );
        *counts.entry(now.rule_id).or_default() += 1;
        total += 1;
        if total.is_multiple_of(16_384) {
            progress(total);
        }
        Ok::<_, StoreError>(())
    })?;
    progress(total);
    Ok(counts)
}

#[cfg(test)]
mod tests;
