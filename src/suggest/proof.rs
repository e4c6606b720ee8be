//! The proof of a set of proposals: the policy file with them written in,
//! and the whole record decided under it by the code `replay` and `policy
//! diff` use ([`crate::replay::diff_calls_inspecting`]), in one pass: which
//! calls each proposal loosens (they must all be approved ones), which
//! denies it would lose (none), and, each proposed rule matched on its own
//! against every call it must not cover, how many of those it covers (none).

use std::collections::{BTreeMap, BTreeSet};

use crate::digest::{hex, sha256};
use crate::policy::{Action, Policy};
use crate::replay::{self, Direction, Kept};
use crate::store::{AuditQuery, Store};

use super::SuggestError;
use super::edit::{self, Insert};
use super::ladder::{Candidate, RuleSpec};
use super::observe::{Part, Record};

/// The proposed policy's text, and the project rules it was written from.
pub struct Plan {
    pub text: String,
    pub digest: String,
}

/// The ids of the project policy's own rules, in order.
pub fn rule_ids(policy: &Policy) -> Vec<&str> {
    policy.rules().iter().map(|r| r.id.as_str()).collect()
}

/// What identifies a proposal: the policy it applies to, the rule it goes
/// before and the rule's text.
pub fn digest(policy: &Policy, candidate: &Candidate) -> String {
    let before = policy
        .rules()
        .get(candidate.anchor)
        .map_or("", |r| r.id.as_str());
    let text = format!(
        "{}\n{before}\n{}",
        policy.reference().digest,
        edit::rule_text(&candidate.rule)
    );
    hex(&sha256(text.as_bytes()))
}

/// The comment written above a proposed rule, the same in the diff and
/// in the file `--apply` writes.
pub fn comment(index: usize, rung: &str, shape: &str, digest: &str) -> String {
    format!(
        "Proposed by `gavel policy suggest` ({index}, digest {}): {shape} ({rung} rung).",
        &digest[..16.min(digest.len())]
    )
}

/// `policy`'s text with `candidates` (numbered from 1 in this order) added
/// and `removals` taken out.
pub fn plan(
    policy: &Policy,
    candidates: &[(usize, &Candidate)],
    removals: &[&str],
) -> Result<Plan, SuggestError> {
    let ids = rule_ids(policy);
    let inserts: Vec<Insert<'_>> = candidates
        .iter()
        .map(|(index, c)| Insert {
            before: c.anchor,
            rule: &c.rule,
            comment: comment(*index, c.rung.as_str(), &c.shape, &digest(policy, c)),
        })
        .collect();
    let text = edit::edit(policy.source(), policy.origin(), &ids, &inserts, removals)?;
    let digest = hex(&sha256(text.as_bytes()));
    Ok(Plan { text, digest })
}

/// The proposed policy, under the same layers as `policy`.
pub fn load(policy: &Policy, plan: &Plan) -> Result<Policy, SuggestError> {
    let proposed = Policy::from_toml(&plan.text, policy.origin())
        .map_err(|source| SuggestError::Proposed { source })?;
    Ok(proposed.with_layers(policy.layers().to_vec()))
}

/// The proposed rules alone, to match each against the calls it must not cover.
pub fn alone(rules: &[&RuleSpec]) -> Result<Policy, SuggestError> {
    let mut text = "name = \"proposed rules\"\n".to_owned();
    for rule in rules {
        text.push('\n');
        text.push_str(&edit::rule_text(rule));
    }
    Policy::from_toml(&text, "<proposed rules>").map_err(|source| SuggestError::Proposed { source })
}

/// One call whose decision moved under the proposals.
#[derive(Debug, Clone)]
pub struct Moved {
    /// The observation, when the learner kept the call.
    pub observation: Option<u32>,
    pub call_id: String,
    pub from_action: Action,
    pub from_rule: String,
    pub to_action: Action,
    pub to_rule: String,
    pub direction: Direction,
}

/// What deciding the whole record under the proposals found.
pub struct Replayed {
    pub drift: replay::DriftReport,
    pub moved: Vec<Moved>,
    /// For each proposed rule: the calls it must not cover that it matches
    /// (observation indices), whatever decides them.
    pub covers: BTreeMap<String, Vec<u32>>,
    /// How many calls outside a held-out part each proposal was checked
    /// against (those it must not cover).
    pub checked: u64,
}

/// Whether observation `o` is one no proposal may cover.
pub fn must_not_cover(record: &Record, i: u32) -> bool {
    record.observations.get(i as usize).is_some_and(|o| {
        let label = o.label();
        label.negative() || (!label.positive() && o.now != Action::Allow)
    })
}

/// Decides every call of `store` under `proposed` beside `policy`.
pub fn replay(
    store: &Store,
    record: &Record,
    policy: &Policy,
    proposed: &Policy,
    rules: &[&RuleSpec],
    progress: &mut dyn FnMut(u64),
) -> Result<Replayed, SuggestError> {
    let alone = alone(rules)?;
    let ids: BTreeSet<&str> = rules.iter().map(|r| r.id.as_str()).collect();
    let mut moved = Vec::new();
    let mut covers: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut checked = 0u64;
    let drift = replay::diff_calls_inspecting(
        store,
        &AuditQuery::default(),
        policy,
        proposed,
        Kept::Examples,
        progress,
        &mut |change: &replay::ChangedCall| {
            moved.push(Moved {
                observation: record.index.get(&change.call_id).copied(),
                call_id: change.call_id.clone(),
                from_action: change.from.action,
                from_rule: change.from.rule_id.clone(),
                to_action: change.to.action,
                to_rule: change.to.rule_id.clone(),
                direction: change.direction,
            });
            Ok::<_, SuggestError>(())
        },
        &mut |call, request, _, _| {
            let Some(&i) = record.index.get(&call.call_id) else {
                return;
            };
            if !must_not_cover(record, i) {
                return;
            }
            let held_out = record
                .observations
                .get(i as usize)
                .is_some_and(|o| o.part == Part::HeldOut);
            checked += u64::from(!held_out);
            for id in alone.matching_rules(request, &call.decision.facts) {
                if ids.contains(id) {
                    covers.entry(id.to_owned()).or_default().push(i);
                }
            }
        },
    )?;
    Ok(Replayed {
        drift,
        moved,
        covers,
        checked,
    })
}
