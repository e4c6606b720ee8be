//! `gavel policy suggest`: policy from the record. The calls people
//! approved (and the grants they gave) are the positives, the calls they
//! rejected or cancelled and those the policy denied the negatives; the
//! learner proposes the narrowest allow rules the evidence supports
//! (`ladder`), never one the floor refuses (`floor`), each carried by its
//! proof: the whole record decided under it by the code `replay` uses,
//! looser only on approved calls, no deny lost, none of the negatives
//! covered (`proof`). It also proposes removing allow rules and grants
//! that decided nothing in a window, evaluates itself on the later part of
//! each session (`--holdout`), and writes chosen proposals into the
//! project's policy file, recording the change in the log (`apply`).
//!
//! It reads one log through a [`Store`] and the policy in force; it never
//! prompts, and writes only in [`apply`]. The same record and policy give
//! byte-identical proposals: every collection it reports is ordered, and
//! no clock is read (`--unused-for` counts back from the newest call).

pub mod apply;
mod edit;
pub mod floor;
mod ladder;
mod observe;
mod proof;
mod render;
mod shape;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::digest::{hex, sha256};
use crate::policy::{Action, Policy, PolicyError};
use crate::replay::Direction;
use crate::store::{AuditQuery, Store, StoreError};

pub use edit::EditError;
pub use ladder::{Alternative, NotProposed, RuleSpec, Rung};
pub use observe::Label;
pub use render::text;

use ladder::Candidate;
use observe::{Part, Record};

/// Why no proposals could be made.
#[derive(Debug, thiserror::Error)]
pub enum SuggestError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{problem}")]
    Query { problem: String },
    #[error("{problem}")]
    Options { problem: String },
    #[error(transparent)]
    Edit(#[from] EditError),
    /// A proposed policy did not load: a fault of the learner, never of the user.
    #[error("the proposed policy does not load: {source}")]
    Proposed { source: PolicyError },
    #[error(transparent)]
    Apply(#[from] apply::ApplyError),
}

/// What `suggest` is asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Distinct approved variants a rung needs (approved calls, for the exact rung).
    pub min_support: usize,
    /// Propose removing allow rules and grants that decided nothing in the
    /// last this many microseconds of the selection.
    pub unused_for: Option<i64>,
    /// Learn from the earlier part of each session, report on this later fraction.
    pub holdout: Option<f64>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            min_support: 3,
            unused_for: None,
            holdout: None,
        }
    }
}

/// Reads a window such as `30d`, `12h`, `2w`, `90m` or `45s` into microseconds.
pub fn parse_window(text: &str) -> Result<i64, SuggestError> {
    let bad = || SuggestError::Options {
        problem: format!("--unused-for: `{text}` is not a duration such as 30d, 12h or 2w"),
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: i64 = number.parse().map_err(|_| bad())?;
    let seconds: i64 = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return Err(bad()),
    };
    if n == 0 {
        return Err(bad());
    }
    Ok(n.saturating_mul(seconds).saturating_mul(1_000_000))
}

/// The policies on either side.
#[derive(Debug, Clone, Serialize)]
pub struct Digests {
    pub name: String,
    /// The project's policy file (`<built-in default>` when none).
    pub origin: String,
    /// SHA-256 of its text now, and with every proposal written in.
    pub before: String,
    pub after: String,
}

/// What the record held.
#[derive(Debug, Clone, Serialize)]
pub struct RecordSummary {
    pub calls: u64,
    pub selected: u64,
    pub sessions: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
    /// Selected calls by label: approved, granted, rejected, cancelled, denied, unanswered.
    pub labels: BTreeMap<&'static str, u64>,
}

/// Why a proposal is safe, from the record.
#[derive(Debug, Clone, Serialize)]
pub struct Proof {
    /// The approved calls it allows that the current policy asks about.
    pub calls: u64,
    pub call_ids: Vec<String>,
    /// Distinct variants among them (one for the exact rung).
    pub variants: usize,
    pub sessions: Vec<String>,
    pub first_seen: String,
    pub last_seen: String,
    /// The calls it was checked against (rejected, cancelled, denied,
    /// unanswered or not approved): those it covers, none.
    pub checked: u64,
    pub covered: Vec<String>,
    pub policy_before: String,
    /// The policy with this proposal alone written in.
    pub policy_after: String,
    /// Of the whole record decided under all the proposals: the calls this
    /// one makes looser that nobody approved (none), and the denies it
    /// loses (none).
    pub loosened_unapproved: u64,
    pub denies_lost: u64,
}

/// One proposed rule.
#[derive(Debug, Clone, Serialize)]
pub struct Proposal {
    /// Its number, for `--apply`.
    pub index: usize,
    pub id: String,
    pub tool: String,
    pub rung: Rung,
    pub shape: String,
    /// The project rule it goes before.
    pub before: String,
    pub rule: RuleSpec,
    /// The `[[rules]]` table as it is written.
    pub toml: String,
    /// SHA-256 of what is proposed: the policy it applies to, the rule's
    /// text and where it goes.
    pub digest: String,
    pub proof: Proof,
    pub alternatives: Vec<Alternative>,
    /// Under `--holdout`: the held-out calls it allows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out_calls: Option<u64>,
}

/// An allow rule or a grant that decided nothing in the window.
#[derive(Debug, Clone, Serialize)]
pub struct Removal {
    pub index: usize,
    /// `rule` (taken out of the policy file) or `grant` (revoked).
    pub kind: &'static str,
    pub id: String,
    /// The last selected call it decided, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_used: Option<String>,
    /// Selected calls it decided, all told.
    pub uses: u64,
    /// Recorded calls that get stricter without it (the replay), and which.
    pub stricter: u64,
    pub stricter_calls: Vec<String>,
    pub digest: String,
}

/// The whole record decided under every proposal and removal.
#[derive(Debug, Clone, Serialize)]
pub struct ReplaySummary {
    pub total: u64,
    pub unchanged: u64,
    pub loosened: u64,
    pub tightened: u64,
    pub rerouted: u64,
    /// Loosened calls nobody approved (outside a held-out part): none.
    pub loosened_unapproved: u64,
    pub denies_lost: u64,
}

/// `--holdout`: learned on the earlier part of each session, measured on the later.
#[derive(Debug, Clone, Serialize)]
pub struct Holdout {
    pub fraction: f64,
    pub train_calls: u64,
    pub held_out_calls: u64,
    /// Held-out approved calls the current policy asks about: the prompts to spare.
    pub held_out_approved: u64,
    /// Of them, those the proposals allow.
    pub prompts_avoided: u64,
    /// Held-out rejected, cancelled and denied calls, and those the proposals allow (0).
    pub held_out_negatives: u64,
    pub negatives_allowed: u64,
    /// Held-out calls nobody answered that the proposals allow.
    pub unanswered_allowed: u64,
    pub rules_added: usize,
    /// Distinct approved commands (or paths, or MCP calls) learned from.
    pub distinct_approved: usize,
    /// Proposals that allow no held-out call: breadth the held-out part did not use.
    pub rules_unused: usize,
}

/// Everything `suggest` found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub policy: Digests,
    pub record: RecordSummary,
    pub min_support: usize,
    pub proposals: Vec<Proposal>,
    pub removals: Vec<Removal>,
    /// Approved calls the current policy asks about that no proposal
    /// covers, by shape, and why.
    pub not_proposed: Vec<NotProposed>,
    pub replay: ReplaySummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holdout: Option<Holdout>,
    /// SHA-256 over every proposal's and removal's digest.
    pub digest: String,
    /// The policy file's text now and with everything proposed.
    #[serde(skip)]
    pub before_text: String,
    #[serde(skip)]
    pub after_text: String,
}

/// Learns and proves proposals for `policy` from the calls `query` selects
/// in `store` (the whole record is the check). `progress` is told how
/// many calls each pass has read.
pub fn suggest(
    store: &Store,
    query: &AuditQuery,
    policy: &Policy,
    options: &Options,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, SuggestError> {
    if options.min_support == 0 {
        return Err(SuggestError::Options {
            problem: "--min-support is at least 1".into(),
        });
    }
    if let Some(f) = options.holdout
        && !(f > 0.0 && f < 1.0)
    {
        return Err(SuggestError::Options {
            problem: format!("--holdout {f}: a fraction between 0 and 1, exclusive"),
        });
    }
    let mut record = observe::scan(store, query, policy, progress)?;
    if let Some(fraction) = options.holdout {
        hold_out(&mut record, fraction);
    }
    let unused = unused(store, &record, policy, options)?;
    let learned = ladder::learn(&ladder::Ask {
        record: &record,
        policy,
        min_support: options.min_support,
    });
    let mut not_proposed = learned.not_proposed;
    // A rule that does not load on its own (a regex past the engine's
    // size limit, say) is named, never a reason to propose nothing.
    let (mut candidates, broken): (Vec<Candidate>, Vec<Candidate>) = learned
        .candidates
        .into_iter()
        .partition(|c| proof::alone(&[&c.rule]).is_ok());
    for candidate in broken {
        not_proposed.push(NotProposed {
            tool: candidate.tool.clone(),
            shape: candidate.shape.clone(),
            calls: candidate.positives.len() as u64,
            why: "the rule it would need does not load as a policy rule".to_owned(),
        });
    }
    candidates.sort_by(|a, b| {
        (
            std::cmp::Reverse(a.positives.len()),
            &a.tool,
            a.rung,
            &a.shape,
        )
            .cmp(&(
                std::cmp::Reverse(b.positives.len()),
                &b.tool,
                b.rung,
                &b.shape,
            ))
    });
    unique_ids(&mut candidates, policy);
    let removed_rules: Vec<&str> = unused
        .iter()
        .filter(|u| u.kind == "rule")
        .map(|u| u.id.as_str())
        .collect();
    // Prove; drop what the proof refutes; prove again what is left.
    let mut rounds = 0;
    let (plan, replayed) = loop {
        rounds += 1;
        let numbered: Vec<(usize, &Candidate)> = candidates
            .iter()
            .enumerate()
            .map(|(i, c)| (i + 1, c))
            .collect();
        let plan = proof::plan(policy, &numbered, &removed_rules)?;
        let proposed = proof::load(policy, &plan)?;
        let rules: Vec<&RuleSpec> = candidates.iter().map(|c| &c.rule).collect();
        let replayed = proof::replay(store, &record, policy, &proposed, &rules, progress)?;
        let refuted = refuted(&record, &candidates, &replayed);
        if refuted.is_empty() || rounds >= 4 {
            break (plan, replayed);
        }
        let mut kept = Vec::new();
        for candidate in candidates {
            match refuted.get(&candidate.rule.id) {
                Some(why) => not_proposed.push(NotProposed {
                    tool: candidate.tool.clone(),
                    shape: candidate.shape.clone(),
                    calls: candidate.positives.len() as u64,
                    why: why.clone(),
                }),
                None => kept.push(candidate),
            }
        }
        candidates = kept;
    };
    not_proposed.sort_by(|a, b| {
        (std::cmp::Reverse(a.calls), &a.tool, &a.shape, &a.why).cmp(&(
            std::cmp::Reverse(b.calls),
            &b.tool,
            &b.shape,
            &b.why,
        ))
    });
    report(
        &record,
        policy,
        options,
        candidates,
        unused,
        not_proposed,
        plan,
        replayed,
    )
}

/// Marks the later `fraction` of each session's selected calls held out.
fn hold_out(record: &mut Record, fraction: f64) {
    let mut by_session: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, o) in record.observations.iter().enumerate() {
        if o.part == Part::Train {
            by_session.entry(o.session).or_default().push(i);
        }
    }
    for calls in by_session.values_mut() {
        calls.sort_by_key(|i| {
            let o = &record.observations[*i];
            (o.ts_us, o.seq)
        });
        let train = ((1.0 - fraction) * calls.len() as f64).floor() as usize;
        for i in &calls[train..] {
            record.observations[*i].part = Part::HeldOut;
        }
    }
}

/// Makes every candidate's rule id unique, against the policy's and each other's.
fn unique_ids(candidates: &mut [Candidate], policy: &Policy) {
    let mut taken: BTreeSet<String> = policy.rules().iter().map(|r| r.id.clone()).collect();
    for candidate in candidates {
        let base = candidate.rule.id.clone();
        let mut id = base.clone();
        let mut n = 2;
        while taken.contains(&id) {
            id = format!("{base}-{n}");
            n += 1;
        }
        taken.insert(id.clone());
        candidate.rule.id = id;
    }
}

/// The candidates the proof refutes, with why: one that matches a call it
/// must not cover (outside a held-out part), loosens a call nobody
/// approved, loses a deny, or allows no approved call at all.
fn refuted(
    record: &Record,
    candidates: &[Candidate],
    replayed: &proof::Replayed,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let visible = |i: u32| {
        record
            .observations
            .get(i as usize)
            .is_some_and(|o| o.part != Part::HeldOut)
    };
    for candidate in candidates {
        let id = &candidate.rule.id;
        if let Some(&i) = replayed
            .covers
            .get(id)
            .and_then(|calls| calls.iter().find(|i| visible(**i)))
        {
            let o = &record.observations[i as usize];
            out.insert(
                id.clone(),
                format!(
                    "the proof: it would cover {} call `{}` (`{}`)",
                    o.label().as_str(),
                    o.call_id,
                    o.summary
                ),
            );
            continue;
        }
        let mut allowed = 0;
        for moved in replayed.moved.iter().filter(|m| &m.to_rule == id) {
            let o = moved
                .observation
                .and_then(|i| record.observations.get(i as usize));
            let held_out = o.is_some_and(|o| o.part == Part::HeldOut);
            if moved.from_action == Action::Deny && !held_out {
                out.insert(
                    id.clone(),
                    format!(
                        "the proof: it would lose the deny of call `{}`",
                        moved.call_id
                    ),
                );
                break;
            }
            if moved.direction == Direction::Loosened && !held_out {
                if o.is_some_and(|o| o.label().positive()) {
                    allowed += 1;
                } else {
                    out.insert(
                        id.clone(),
                        format!(
                            "the proof: it would allow call `{}`, which nobody approved",
                            moved.call_id
                        ),
                    );
                    break;
                }
            }
        }
        if allowed == 0 && !out.contains_key(id) {
            out.insert(
                id.clone(),
                "the proof: the rules before it leave it no approved call to allow".to_owned(),
            );
        }
    }
    out
}

/// The allow rules and grants that decided nothing in the window.
struct Unused {
    kind: &'static str,
    id: String,
    last_used: Option<i64>,
    uses: u64,
}

fn unused(
    store: &Store,
    record: &Record,
    policy: &Policy,
    options: &Options,
) -> Result<Vec<Unused>, SuggestError> {
    let (Some(window), Some(end)) = (options.unused_for, record.last_us) else {
        return Ok(Vec::new());
    };
    let start = end.saturating_sub(window);
    let mut out = Vec::new();
    for rule in policy.rules().iter().filter(|r| r.action == Action::Allow) {
        let last = record.last_used.get(&rule.id).copied();
        if last.is_none_or(|t| t < start) {
            out.push(Unused {
                kind: "rule",
                id: rule.id.clone(),
                last_used: last,
                uses: record.used.get(&rule.id).copied().unwrap_or(0),
            });
        }
    }
    for grant in crate::approvals::grants(store)? {
        let rule = format!(
            "{}{}",
            crate::approvals::grants::GRANT_RULE_PREFIX,
            grant.record.grant
        );
        let last = record.last_used.get(&rule).copied();
        if grant.state(end) == "active"
            && grant.created_us < start
            && last.is_none_or(|t| t < start)
        {
            out.push(Unused {
                kind: "grant",
                id: grant.record.grant.clone(),
                last_used: last,
                uses: record.used.get(&rule).copied().unwrap_or(0),
            });
        }
    }
    Ok(out)
}

fn time(ts: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_micros(ts)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| ts.to_string())
}

#[allow(clippy::too_many_arguments)]
fn report(
    record: &Record,
    policy: &Policy,
    options: &Options,
    candidates: Vec<Candidate>,
    unused: Vec<Unused>,
    not_proposed: Vec<NotProposed>,
    plan: proof::Plan,
    replayed: proof::Replayed,
) -> Result<Report, SuggestError> {
    let before = policy.reference().digest.clone();
    let visible = |i: Option<u32>| {
        i.and_then(|i| record.observations.get(i as usize))
            .is_none_or(|o| o.part != Part::HeldOut)
    };
    let mut proposals = Vec::new();
    for (at, candidate) in candidates.iter().enumerate() {
        let index = at + 1;
        let id = &candidate.rule.id;
        let covered: Vec<&proof::Moved> = replayed
            .moved
            .iter()
            .filter(|m| {
                &m.to_rule == id
                    && m.direction == Direction::Loosened
                    && m.observation
                        .and_then(|i| record.observations.get(i as usize))
                        .is_some_and(|o| o.label().positive() && o.part != Part::HeldOut)
            })
            .collect();
        let observations: Vec<&observe::Observation> = covered
            .iter()
            .filter_map(|m| m.observation)
            .filter_map(|i| record.observations.get(i as usize))
            .collect();
        let sessions: BTreeSet<String> = observations
            .iter()
            .map(|o| record.session(o).to_owned())
            .collect();
        let variants: BTreeSet<String> = observations
            .iter()
            .map(|o| match &o.shape {
                Ok(shape::Shape::Bash(b)) if candidate.rung == Rung::Command => b.variant.clone(),
                Ok(shape::Shape::Bash(b)) => b.exact.clone(),
                Ok(shape::Shape::Paths { paths }) => paths.join("\n"),
                Ok(shape::Shape::Tool { variant }) => variant.clone(),
                Err(_) => String::new(),
            })
            .collect();
        let alone = proof::plan(policy, &[(index, candidate)], &[])?;
        let unapproved = replayed
            .moved
            .iter()
            .filter(|m| {
                &m.to_rule == id
                    && m.direction == Direction::Loosened
                    && visible(m.observation)
                    && !m
                        .observation
                        .and_then(|i| record.observations.get(i as usize))
                        .is_some_and(|o| o.label().positive())
            })
            .count() as u64;
        let denies_lost = replayed
            .moved
            .iter()
            .filter(|m| &m.to_rule == id && m.from_action == Action::Deny && visible(m.observation))
            .count() as u64;
        let toml = edit::rule_text(&candidate.rule);
        let before_rule = policy
            .rules()
            .get(candidate.anchor)
            .map_or_else(String::new, |r| r.id.clone());
        let digest = proof::digest(policy, candidate);
        let held_out_calls = options.holdout.map(|_| {
            replayed
                .moved
                .iter()
                .filter(|m| {
                    &m.to_rule == id
                        && m.direction == Direction::Loosened
                        && !visible(m.observation)
                })
                .count() as u64
        });
        proposals.push(Proposal {
            index,
            id: id.clone(),
            tool: candidate.tool.clone(),
            rung: candidate.rung,
            shape: candidate.shape.clone(),
            before: before_rule,
            rule: candidate.rule.clone(),
            toml,
            digest,
            proof: Proof {
                calls: covered.len() as u64,
                call_ids: covered.iter().map(|m| m.call_id.clone()).collect(),
                variants: variants.len(),
                sessions: sessions.into_iter().collect(),
                first_seen: observations
                    .iter()
                    .map(|o| o.ts_us)
                    .min()
                    .map(time)
                    .unwrap_or_default(),
                last_seen: observations
                    .iter()
                    .map(|o| o.ts_us)
                    .max()
                    .map(time)
                    .unwrap_or_default(),
                checked: replayed.checked,
                covered: replayed
                    .covers
                    .get(id)
                    .into_iter()
                    .flatten()
                    .filter(|i| visible(Some(**i)))
                    .filter_map(|i| record.observations.get(*i as usize))
                    .map(|o| o.call_id.clone())
                    .collect(),
                policy_before: before.clone(),
                policy_after: alone.digest,
                loosened_unapproved: unapproved,
                denies_lost,
            },
            alternatives: candidate.alternatives.clone(),
            held_out_calls,
        });
    }
    let first_removal = proposals.len() + 1;
    let removals: Vec<Removal> = unused
        .into_iter()
        .enumerate()
        .map(|(at, u)| {
            let stricter: Vec<String> = if u.kind == "rule" {
                replayed
                    .moved
                    .iter()
                    .filter(|m| m.from_rule == u.id && m.direction == Direction::Tightened)
                    .map(|m| m.call_id.clone())
                    .collect()
            } else {
                // A revocation recorded now leaves every recorded call as it was.
                Vec::new()
            };
            Removal {
                index: first_removal + at,
                kind: u.kind,
                digest: hex(&sha256(
                    format!("{before}\nremove {} {}", u.kind, u.id).as_bytes(),
                )),
                id: u.id,
                last_used: u.last_used.map(time),
                uses: u.uses,
                stricter: stricter.len() as u64,
                stricter_calls: stricter,
            }
        })
        .collect();
    let mut labels: BTreeMap<&'static str, u64> = BTreeMap::new();
    for o in record.observations.iter().filter(|o| o.selected()) {
        let label = o.label();
        if label != Label::Allowed {
            *labels.entry(label.as_str()).or_default() += 1;
        }
    }
    let loosened_unapproved = replayed
        .moved
        .iter()
        .filter(|m| {
            m.direction == Direction::Loosened
                && visible(m.observation)
                && !m
                    .observation
                    .and_then(|i| record.observations.get(i as usize))
                    .is_some_and(|o| o.label().positive())
        })
        .count() as u64;
    let denies_lost = replayed
        .moved
        .iter()
        .filter(|m| m.from_action == Action::Deny && m.to_action != Action::Deny)
        .count() as u64;
    let holdout = options
        .holdout
        .map(|fraction| holdout_numbers(record, &proposals, &replayed, fraction));
    let mut digest_input = before.clone();
    for p in &proposals {
        digest_input.push('\n');
        digest_input.push_str(&p.digest);
    }
    for r in &removals {
        digest_input.push('\n');
        digest_input.push_str(&r.digest);
    }
    let sessions: BTreeSet<u32> = record
        .observations
        .iter()
        .filter(|o| o.selected())
        .map(|o| o.session)
        .collect();
    Ok(Report {
        policy: Digests {
            name: policy.reference().name.clone(),
            origin: policy.origin().to_owned(),
            before: before.clone(),
            after: plan.digest,
        },
        record: RecordSummary {
            calls: record.calls,
            selected: record.selected,
            sessions: sessions.len(),
            first: record.first_us.map(time),
            last: record.last_us.map(time),
            labels,
        },
        min_support: options.min_support,
        proposals,
        removals,
        not_proposed,
        replay: ReplaySummary {
            total: replayed.drift.total,
            unchanged: replayed.drift.unchanged,
            loosened: replayed.drift.loosened,
            tightened: replayed.drift.tightened,
            rerouted: replayed.drift.rerouted,
            loosened_unapproved,
            denies_lost,
        },
        holdout,
        digest: hex(&sha256(digest_input.as_bytes())),
        before_text: policy.source().to_owned(),
        after_text: plan.text,
    })
}

fn holdout_numbers(
    record: &Record,
    proposals: &[Proposal],
    replayed: &proof::Replayed,
    fraction: f64,
) -> Holdout {
    let held = |o: &&observe::Observation| o.part == Part::HeldOut;
    let observations = || record.observations.iter();
    let loosened_held_out = || {
        replayed
            .moved
            .iter()
            .filter(|m| m.direction == Direction::Loosened && m.to_action == Action::Allow)
            .filter_map(|m| m.observation)
            .filter_map(|i| record.observations.get(i as usize))
            .filter(held)
    };
    let distinct: BTreeSet<(String, String)> = observations()
        .filter(|o| o.part == Part::Train && o.label().positive() && o.asked_by_project())
        .map(|o| {
            let key = match &o.shape {
                Ok(shape::Shape::Bash(b)) => b.exact.clone(),
                _ => o.summary.clone(),
            };
            (o.tool.clone(), key)
        })
        .collect();
    Holdout {
        fraction,
        train_calls: observations().filter(|o| o.part == Part::Train).count() as u64,
        held_out_calls: observations().filter(held).count() as u64,
        held_out_approved: observations()
            .filter(held)
            .filter(|o| o.label().positive() && o.now == Action::Ask)
            .count() as u64,
        prompts_avoided: loosened_held_out().filter(|o| o.label().positive()).count() as u64,
        held_out_negatives: observations()
            .filter(held)
            .filter(|o| o.label().negative())
            .count() as u64,
        negatives_allowed: loosened_held_out().filter(|o| o.label().negative()).count() as u64,
        unanswered_allowed: loosened_held_out()
            .filter(|o| !o.label().positive() && !o.label().negative())
            .count() as u64,
        rules_added: proposals.len(),
        distinct_approved: distinct.len(),
        rules_unused: proposals
            .iter()
            .filter(|p| p.held_out_calls == Some(0))
            .count(),
    }
}
