//! Replay: recorded requests decided again under the current policy, and
//! the drift between what was recorded and what would happen now.
//!
//! Replay is read-only and pure on the recorded data: it never prompts,
//! never runs a handler and never appends. By default it uses the facts
//! recorded with each decision, so a replay is exact and repeatable even
//! after the filesystem changed; a `FactSource::Live` replay re-gathers them.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::facts::{Facts, Workspace};
use crate::policy::{Action, Decision, Policy, PolicyRef};
use crate::request::ToolRequest;
use crate::store::{AuditQuery, DecidedCall, Store, StoreError};

/// Where the facts for a replayed decision come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FactSource {
    /// The facts recorded with the original decision.
    Recorded,
    /// The filesystem as it is now, under the recorded workspace root.
    Live,
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
}

/// Calls whose decision moved the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transition {
    pub from: Verdict,
    pub to: Verdict,
    pub direction: Direction,
    pub count: u64,
    /// The first few calls that moved this way, oldest first.
    pub call_ids: Vec<String>,
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
    /// The first few of them, in the order their first anomaly was recorded.
    pub anomaly_calls: Vec<String>,
    /// With recorded facts: calls whose long command (its parse recorded by
    /// digest) parses differently now; they were re-decided on today's parse.
    pub parse_differs: u64,
}

/// How many call ids a transition keeps.
pub const CALL_IDS_KEPT: usize = 5;

/// Classifies a move from `from` to `to`; `None` when action and rule are the same.
pub fn direction(from: &Verdict, to: &Verdict) -> Option<Direction> {
    match to.action.cmp(&from.action) {
        std::cmp::Ordering::Less => Some(Direction::Loosened),
        std::cmp::Ordering::Greater => Some(Direction::Tightened),
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
    groups: HashMap<(Verdict, Verdict), (Direction, u64, Vec<String>)>,
}

impl DriftBuilder {
    pub fn new(current: PolicyRef, facts: FactSource) -> Self {
        Self {
            current,
            facts,
            recorded: Vec::new(),
            total: 0,
            reason_changed: 0,
            groups: HashMap::new(),
        }
    }

    /// Adds one call: what was recorded and what the current policy says.
    pub fn add(&mut self, call_id: &str, recorded: &Decision, now: &Decision) {
        self.total += 1;
        if !self.recorded.contains(&recorded.policy.digest) {
            self.recorded.push(recorded.policy.digest.clone());
        }
        let from = Verdict {
            action: recorded.action,
            rule_id: recorded.rule_id.clone(),
        };
        let to = Verdict {
            action: now.action,
            rule_id: now.rule_id.clone(),
        };
        match direction(&from, &to) {
            None => {
                if recorded.reason != now.reason {
                    self.reason_changed += 1;
                }
            }
            Some(direction) => {
                let entry = self
                    .groups
                    .entry((from, to))
                    .or_insert_with(|| (direction, 0, Vec::new()));
                entry.1 += 1;
                if entry.2.len() < CALL_IDS_KEPT {
                    entry.2.push(call_id.to_owned());
                }
            }
        }
    }

    pub fn finish(self) -> DriftReport {
        let mut counts: BTreeMap<Direction, u64> = BTreeMap::new();
        let mut transitions: Vec<Transition> = self
            .groups
            .into_iter()
            .map(|((from, to), (direction, count, call_ids))| {
                *counts.entry(direction).or_default() += count;
                Transition {
                    from,
                    to,
                    direction,
                    count,
                    call_ids,
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
            unchanged: self.total - changed,
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

/// Re-gathers facts for a recorded call from the filesystem as it is now,
/// in its recorded workspace `root` (opened, or the error opening it).
pub fn live_facts(
    root: &str,
    workspace: &Result<Workspace, String>,
    request: &ToolRequest,
) -> Facts {
    match workspace {
        Ok(workspace) => workspace.facts(request),
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
    let mut drift = DriftBuilder::new(policy.reference().clone(), source);
    // Live facts: each recorded workspace is opened (canonicalized) once.
    let mut workspaces: HashMap<String, Result<Workspace, String>> = HashMap::new();
    let mut parse_differs = 0;
    store.for_each_decided_call(query, |call| {
        let request = recorded_request(&call);
        let now = match source {
            FactSource::Recorded => {
                parse_differs += u64::from(call.parse_differs);
                policy.decide(&request, &call.decision.facts)
            }
            FactSource::Live => {
                let root = &call.decision.facts.workspace;
                let workspace = workspaces.entry(root.clone()).or_insert_with(|| {
                    Workspace::open(std::path::Path::new(root)).map_err(|e| e.to_string())
                });
                policy.decide(&request, &live_facts(root, workspace, &request))
            }
        };
        let recorded = Decision {
            action: call.decision.action,
            rule_id: call.decision.rule_id,
            reason: call.decision.reason,
            policy: call.decision.policy,
        };
        drift.add(&call.call_id, &recorded, &now);
        if drift.total.is_multiple_of(16_384) {
            progress(drift.total);
        }
        Ok::<_, StoreError>(())
    })?;
    progress(drift.total);
    let mut report = drift.finish();
    report.parse_differs = parse_differs;
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
            if report.anomaly_calls.len() < CALL_IDS_KEPT {
                report.anomaly_calls.push(anomaly.call_id);
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(action: Action, rule_id: &str, reason: &str) -> Decision {
        Decision {
            action,
            rule_id: rule_id.into(),
            reason: reason.into(),
            policy: PolicyRef {
                name: "p".into(),
                digest: "d".into(),
            },
        }
    }

    #[test]
    fn directions_follow_strictness() {
        let v = |action, rule: &str| Verdict {
            action,
            rule_id: rule.into(),
        };
        assert_eq!(
            direction(&v(Action::Deny, "a"), &v(Action::Ask, "b")),
            Some(Direction::Loosened)
        );
        assert_eq!(
            direction(&v(Action::Ask, "a"), &v(Action::Allow, "a")),
            Some(Direction::Loosened)
        );
        assert_eq!(
            direction(&v(Action::Allow, "a"), &v(Action::Deny, "b")),
            Some(Direction::Tightened)
        );
        assert_eq!(
            direction(&v(Action::Ask, "a"), &v(Action::Ask, "b")),
            Some(Direction::Rerouted)
        );
        assert_eq!(direction(&v(Action::Ask, "a"), &v(Action::Ask, "a")), None);
    }

    #[test]
    fn a_changed_reason_alone_is_not_drift() {
        let mut drift = DriftBuilder::new(
            PolicyRef {
                name: "p".into(),
                digest: "e".into(),
            },
            FactSource::Recorded,
        );
        drift.add(
            "c1",
            &decision(Action::Ask, "r", "old"),
            &decision(Action::Ask, "r", "new"),
        );
        drift.add(
            "c2",
            &decision(Action::Deny, "r", "x"),
            &decision(Action::Allow, "s", "x"),
        );
        drift.add(
            "c3",
            &decision(Action::Deny, "r", "x"),
            &decision(Action::Allow, "s", "x"),
        );
        drift.add(
            "c4",
            &decision(Action::Allow, "s", "x"),
            &decision(Action::Ask, "t", "x"),
        );
        let report = drift.finish();
        assert_eq!(
            (
                report.total,
                report.unchanged,
                report.changed,
                report.reason_changed
            ),
            (4, 1, 3, 1)
        );
        assert_eq!(
            (report.loosened, report.tightened, report.rerouted),
            (2, 1, 0)
        );
        assert_eq!(report.transitions[0].direction, Direction::Loosened);
        assert_eq!(report.transitions[0].call_ids, ["c2", "c3"]);
        assert_eq!(report.transitions[1].direction, Direction::Tightened);
    }
}
