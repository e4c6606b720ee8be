//! Learning the ladder: from the approved calls the current policy still
//! asks about, the narrowest rules the evidence supports, and none that
//! would cover a call that was rejected, cancelled, denied or left
//! unanswered.
//!
//! The rungs, narrowest first: the exact command (its volatile tokens
//! abstracted) → a program and its subcommand, any arguments inside the
//! workspace → for a tool with paths, a folder or extension glob → an MCP
//! server's tool, any arguments. The exact rung needs `min_support`
//! approved calls; every rung above it `min_support` distinct approved
//! variants. A rung that would cover a call it must not, or that the floor
//! refuses, is not taken; what was not taken is named, with why.
//!
//! Coverage here is judged on the shapes (program keys, exact keys,
//! paths): an estimate, made exact afterwards by the proof, which decides
//! every call of the record under the proposed rules.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::policy::{Action, Policy};

mod paths;

use super::floor;
use super::observe::{Observation, Part, Record};
use super::shape::{self, Shape};

/// A rung of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rung {
    /// One command, exactly (its volatile tokens abstracted), or one path.
    Exact,
    /// A program and its subcommand, any arguments inside the workspace.
    Command,
    /// A folder or extension glob over a tool's paths.
    Paths,
    /// An MCP server's tool, any arguments.
    Tool,
}

impl Rung {
    pub fn as_str(self) -> &'static str {
        match self {
            Rung::Exact => "exact",
            Rung::Command => "command",
            Rung::Paths => "paths",
            Rung::Tool => "tool",
        }
    }
}

/// A rule as proposed: what goes into the policy file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleSpec {
    pub id: String,
    pub tools: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command_prefix: Vec<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_regex: Option<String>,
    /// `path_scope = "inside"`.
    pub inside: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_glob: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    pub reason: String,
}

/// A rung or shape that was not proposed, beside one that was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Alternative {
    /// `narrower` or `broader`.
    pub relation: &'static str,
    pub rung: Rung,
    /// The shape as people read it (`git push *`, `src/**`).
    pub shape: String,
    pub why: String,
}

/// A proposal before its proof.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub tool: String,
    pub rung: Rung,
    /// The shape as people read it.
    pub shape: String,
    pub rule: RuleSpec,
    /// The approved calls it is expected to cover (observation indices).
    pub positives: Vec<u32>,
    /// The project rule it goes before: the first that asked about them.
    pub anchor: usize,
    pub alternatives: Vec<Alternative>,
}

/// Approved calls no proposal covers, by shape, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotProposed {
    pub tool: String,
    pub shape: String,
    /// Approved calls of this shape.
    pub calls: u64,
    pub why: String,
}

/// What the learner found.
pub struct Learned {
    pub candidates: Vec<Candidate>,
    pub not_proposed: Vec<NotProposed>,
}

/// What the learner is told.
pub struct Ask<'a> {
    pub record: &'a Record,
    pub policy: &'a Policy,
    pub min_support: usize,
}

/// Whether `o` may be learned from.
fn learnable(o: &Observation) -> Result<(), String> {
    if !o.asked_by_project() {
        return Err(match o.now {
            Action::Allow => "already allowed".to_owned(),
            Action::Deny => format!("denied now (`{}`)", o.now_rule),
            Action::Ask => format!(
                "asked by `{}` of the {} layer, above the project's policy",
                o.now_rule,
                o.now_layer.as_deref().unwrap_or("?")
            ),
        });
    }
    if crate::approvals::grants::NEVER_GRANTED.contains(&o.now_rule.as_str()) {
        return Err(format!(
            "asked by `{}`, which stands for something a person must see each time",
            o.now_rule
        ));
    }
    o.shape.as_ref().map(|_| ()).map_err(Clone::clone)
}

/// Whether `o` is one no proposal may cover: any negative, or a call
/// nobody approved that the current policy does not allow; a held-out call
/// is not seen.
fn blocks(o: &Observation) -> bool {
    let label = o.label();
    o.part != Part::HeldOut && (label.negative() || (!label.positive() && o.now != Action::Allow))
}

/// A call no proposal may cover, as a reason.
fn described(o: &Observation) -> String {
    format!(
        "{} at call `{}` (`{}`)",
        o.label().as_str(),
        o.call_id,
        o.summary
    )
}

/// The calls no proposal may cover, in record order, indexed by what a
/// rung could cover them by.
struct Blockers<'a> {
    all: Vec<&'a Observation>,
    /// Bash calls by each of their command keys.
    by_key: HashMap<&'a str, Vec<usize>>,
    /// Bash calls by their exact key: the first.
    by_exact: HashMap<&'a str, usize>,
    by_tool: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Blockers<'a> {
    fn new(all: Vec<&'a Observation>) -> Self {
        let mut by_key: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut by_exact = HashMap::new();
        let mut by_tool: HashMap<&str, Vec<usize>> = HashMap::new();
        for (at, o) in all.iter().enumerate() {
            by_tool.entry(o.tool.as_str()).or_default().push(at);
            if let Ok(Shape::Bash(b)) = &o.shape {
                by_exact.entry(b.exact.as_str()).or_insert(at);
                for c in &b.commands {
                    let list = by_key.entry(c.key.as_str()).or_default();
                    if list.last() != Some(&at) {
                        list.push(at);
                    }
                }
            }
        }
        Self {
            all,
            by_key,
            by_exact,
            by_tool,
        }
    }

    /// The first bash call naming a path whose every command is one of `keys`.
    fn command(&self, keys: &BTreeSet<&str>) -> Option<&'a Observation> {
        keys.iter()
            .filter_map(|key| self.by_key.get(key))
            .flatten()
            .copied()
            .filter(|at| {
                bash_shape(self.all[*at]).is_some_and(|s| {
                    s.has_paths && s.commands.iter().all(|c| keys.contains(c.key.as_str()))
                })
            })
            .min()
            .map(|at| self.all[at])
    }

    /// The first bash call with this exact key.
    fn exact(&self, exact: &str) -> Option<&'a Observation> {
        self.by_exact.get(exact).map(|at| self.all[*at])
    }

    /// The calls of `tool`, in record order.
    fn of_tool(&self, tool: &str) -> impl Iterator<Item = &'a Observation> + '_ {
        self.by_tool
            .get(tool)
            .into_iter()
            .flatten()
            .map(|at| self.all[*at])
    }
}

/// Learns the candidates.
pub fn learn(ask: &Ask<'_>) -> Learned {
    let record = ask.record;
    let mut not_proposed: BTreeMap<(String, String, String), u64> = BTreeMap::new();
    let mut bash: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut paths: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut tools: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut blockers: Vec<&Observation> = Vec::new();
    for (i, o) in record.observations.iter().enumerate() {
        let i = i as u32;
        if blocks(o) {
            blockers.push(o);
        }
        if o.part != Part::Train || !o.label().positive() {
            continue;
        }
        if let Err(why) = learnable(o) {
            if o.now != Action::Allow {
                *not_proposed
                    .entry((o.tool.clone(), o.summary.clone(), why))
                    .or_default() += 1;
            }
            continue;
        }
        match &o.shape {
            Ok(Shape::Bash(b)) => {
                if let Some(refused) = b.commands.iter().find_map(|c| c.floor.clone()) {
                    *not_proposed
                        .entry((o.tool.clone(), b.group(), format!("floor: {refused}")))
                        .or_default() += 1;
                    continue;
                }
                bash.entry(b.group()).or_default().push(i);
            }
            Ok(Shape::Paths { .. }) => paths.entry(o.tool.clone()).or_default().push(i),
            Ok(Shape::Tool { .. }) => tools.entry(o.tool.clone()).or_default().push(i),
            Err(_) => {}
        }
    }
    let blockers = Blockers::new(blockers);
    let mut out = Learned {
        candidates: Vec::new(),
        not_proposed: Vec::new(),
    };
    let mut refuse = |tool: &str, shape: String, calls: u64, why: String| {
        *not_proposed
            .entry((tool.to_owned(), shape, why))
            .or_default() += calls;
    };
    for (group, positives) in &bash {
        learn_bash(
            ask,
            group,
            positives,
            &blockers,
            &mut out.candidates,
            &mut refuse,
        );
    }
    for (tool, positives) in &paths {
        paths::learn_paths(
            ask,
            tool,
            positives,
            &blockers,
            &mut out.candidates,
            &mut refuse,
        );
    }
    for (tool, positives) in &tools {
        learn_tool(
            ask,
            tool,
            positives,
            &blockers,
            &mut out.candidates,
            &mut refuse,
        );
    }
    out.not_proposed = not_proposed
        .into_iter()
        .map(|((tool, shape, why), calls)| NotProposed {
            tool,
            shape,
            calls,
            why,
        })
        .collect();
    out
}

type Refuse<'a> = dyn FnMut(&str, String, u64, String) + 'a;

/// The project rule a candidate covering `positives` goes before: the
/// first that asked about one of them. `None` when a deny of the project
/// for `tool` comes after it (the allow would then decide first).
fn anchor(ask: &Ask<'_>, tool: &str, positives: &[u32]) -> Result<usize, String> {
    let rules = ask.policy.rules();
    let at = positives
        .iter()
        .filter_map(|i| ask.record.observations.get(*i as usize))
        .filter_map(|o| rules.iter().position(|r| r.id == o.now_rule))
        .min()
        .ok_or_else(|| "the rule that asked is not the project's".to_owned())?;
    if let Some(deny) = rules[at..]
        .iter()
        .find(|r| r.action == Action::Deny && r.applies_to_tool(tool))
    {
        return Err(format!(
            "it would come before the deny rule `{}`, which could then no longer decide what it names",
            deny.id
        ));
    }
    Ok(at)
}

fn bash_shape(o: &Observation) -> Option<&shape::Bash> {
    match &o.shape {
        Ok(Shape::Bash(b)) => Some(b),
        _ => None,
    }
}

/// The words of `n` approved calls, for a reason.
/// The reason a proposed rule gives: where it was learned from.
fn learned(calls: usize, sessions: usize) -> String {
    format!(
        "learned by gavel policy suggest from {} in {} session{}",
        approved(calls),
        sessions,
        if sessions == 1 { "" } else { "s" }
    )
}

fn approved(n: usize) -> String {
    if n == 1 {
        "1 approved call".to_owned()
    } else {
        format!("{n} approved calls")
    }
}

fn learn_bash(
    ask: &Ask<'_>,
    group: &str,
    positives: &[u32],
    blockers: &Blockers<'_>,
    candidates: &mut Vec<Candidate>,
    refuse: &mut Refuse<'_>,
) {
    let obs = |i: &u32| &ask.record.observations[*i as usize];
    let shapes: Vec<&shape::Bash> = positives
        .iter()
        .filter_map(|i| bash_shape(obs(i)))
        .collect();
    let Some(first) = shapes.first() else { return };
    let keys: BTreeSet<&str> = first.commands.iter().map(|c| c.key.as_str()).collect();
    let mut prefixes: Vec<Vec<String>> = Vec::new();
    for command in &first.commands {
        if !prefixes.contains(&command.prefix()) {
            prefixes.push(command.prefix());
        }
    }
    prefixes.sort();
    let read_only = shapes
        .iter()
        .all(|b| b.commands.iter().all(|c| c.read_only));
    let sandbox = (!read_only).then(|| crate::sandbox::WORKSPACE_WRITE.to_owned());
    // The command rung: every approved call naming a path (`path_scope`).
    let with_paths: Vec<u32> = positives
        .iter()
        .copied()
        .filter(|i| bash_shape(obs(i)).is_some_and(|b| b.has_paths))
        .collect();
    let variants: BTreeSet<&str> = with_paths
        .iter()
        .filter_map(|i| bash_shape(obs(i)))
        .map(|b| b.variant.as_str())
        .collect();
    let shown_group = format!("{} *", group.replace(" + ", " * | "));
    let destructive_pair = first.commands.iter().find_map(|c| {
        floor::also_allows(&c.program, c.subcommand.as_deref()).map(|words| (c, words))
    });
    let command_blocker = blockers.command(&keys);
    let command_rung: Result<(), String> = if let Some((c, words)) = destructive_pair {
        Err(format!(
            "floor: a rule for `{}` would also allow {}",
            c.key,
            if words.is_empty() {
                format!("every `{}`, which is destructive", c.key)
            } else {
                format!("`{} {}`", c.key, words[0])
            }
        ))
    } else if let Some(b) = command_blocker {
        Err(described(b))
    } else if variants.len() < ask.min_support {
        Err(format!(
            "only {} distinct approved variant{} (--min-support {})",
            variants.len(),
            if variants.len() == 1 { "" } else { "s" },
            ask.min_support
        ))
    } else {
        Ok(())
    };
    // The broader rung, never taken: a program's subcommands are not merged.
    let broader_program = first
        .commands
        .iter()
        .find(|c| c.subcommand.is_some())
        .map(|c| Alternative {
            relation: "broader",
            rung: Rung::Command,
            shape: format!("{} *", c.program),
            why: floor::refuses(&c.program, None).unwrap_or_else(|| {
                format!(
                    "the subcommands of `{}` are never merged (one may read where another writes)",
                    c.program
                )
            }),
        });
    let mut exacts: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for i in positives {
        if let Some(b) = bash_shape(obs(i)) {
            exacts.entry(b.exact.as_str()).or_default().push(*i);
        }
    }
    let sessions_of = |calls: &[u32]| {
        calls
            .iter()
            .map(|i| obs(i).session)
            .collect::<BTreeSet<_>>()
            .len()
    };
    match command_rung {
        Ok(()) => {
            let anchor = match anchor(ask, "bash", &with_paths) {
                Ok(at) => at,
                Err(why) => {
                    refuse("bash", shown_group, positives.len() as u64, why);
                    return;
                }
            };
            let mut alternatives = Vec::new();
            if let Some((exact, calls)) = exacts
                .iter()
                .max_by_key(|(exact, c)| (c.len(), std::cmp::Reverse(*exact)))
            {
                alternatives.push(Alternative {
                    relation: "narrower",
                    rung: Rung::Exact,
                    shape: shape::shown(exact),
                    why: format!(
                        "covers {} of the {}: one rule per variant would be needed",
                        calls.len(),
                        approved(with_paths.len())
                    ),
                });
            }
            alternatives.extend(broader_program.clone());
            candidates.push(Candidate {
                tool: "bash".into(),
                rung: Rung::Command,
                shape: shown_group.clone(),
                rule: RuleSpec {
                    id: rule_id("bash", group),
                    tools: vec!["bash".into()],
                    command_prefix: prefixes.clone(),
                    command_regex: None,
                    inside: true,
                    path_glob: None,
                    sandbox: sandbox.clone(),
                    reason: learned(with_paths.len(), sessions_of(&with_paths)),
                },
                positives: with_paths.clone(),
                anchor,
                alternatives,
            });
            let left: Vec<u32> = positives
                .iter()
                .copied()
                .filter(|i| !with_paths.contains(i))
                .collect();
            if !left.is_empty() {
                exact_rungs(ask, &left, blockers, candidates, refuse, &sandbox, None);
            }
        }
        Err(why) => {
            let broader = Alternative {
                relation: "broader",
                rung: Rung::Command,
                shape: shown_group.clone(),
                why,
            };
            exact_rungs(
                ask,
                positives,
                blockers,
                candidates,
                refuse,
                &sandbox,
                Some(broader),
            );
        }
    }
}

/// The longest command an exact rule is written for.
const MAX_EXACT: usize = 1024;

/// Exact rules for the variants of `positives` approved often enough.
fn exact_rungs(
    ask: &Ask<'_>,
    positives: &[u32],
    blockers: &Blockers<'_>,
    candidates: &mut Vec<Candidate>,
    refuse: &mut Refuse<'_>,
    sandbox: &Option<String>,
    broader: Option<Alternative>,
) {
    let obs = |i: &u32| &ask.record.observations[*i as usize];
    let mut exacts: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for i in positives {
        if let Some(b) = bash_shape(obs(i)) {
            exacts.entry(b.exact.as_str()).or_default().push(*i);
        }
    }
    for (exact, calls) in exacts {
        let shown = shape::shown(exact);
        let Some(first) = calls.first().and_then(|i| bash_shape(obs(i))) else {
            continue;
        };
        let n = calls.len() as u64;
        if exact.len() > MAX_EXACT {
            refuse(
                "bash",
                format!("{}…", shown.chars().take(60).collect::<String>()),
                n,
                format!("longer than {MAX_EXACT} bytes: too long for an exact rule"),
            );
            continue;
        }
        if let Some(c) = first.commands.iter().find(|c| c.destructive.is_some()) {
            refuse(
                "bash",
                shown,
                n,
                format!(
                    "floor: `{}` is destructive with `{}`",
                    c.key,
                    c.destructive.as_deref().unwrap_or("")
                ),
            );
            continue;
        }
        if calls.len() < ask.min_support {
            let why = match &broader {
                Some(b) => format!(
                    "approved {n} time{} (--min-support {}); broader `{}` not proposed: {}",
                    if n == 1 { "" } else { "s" },
                    ask.min_support,
                    b.shape,
                    b.why
                ),
                None => format!(
                    "approved {n} time{} (--min-support {})",
                    if n == 1 { "" } else { "s" },
                    ask.min_support
                ),
            };
            refuse("bash", shown, n, why);
            continue;
        }
        if let Some(b) = blockers.exact(exact) {
            refuse("bash", shown, n, described(b));
            continue;
        }
        let anchor = match anchor(ask, "bash", &calls) {
            Ok(at) => at,
            Err(why) => {
                refuse("bash", shown, n, why);
                continue;
            }
        };
        let mut prefixes: Vec<Vec<String>> = Vec::new();
        for command in &first.commands {
            if !prefixes.contains(&command.prefix()) {
                prefixes.push(command.prefix());
            }
        }
        prefixes.sort();
        let sessions = calls
            .iter()
            .map(|i| obs(i).session)
            .collect::<BTreeSet<_>>()
            .len();
        let read_only = first.commands.iter().all(|c| c.read_only);
        candidates.push(Candidate {
            tool: "bash".into(),
            rung: Rung::Exact,
            shape: shown.clone(),
            rule: RuleSpec {
                id: rule_id("bash", &shown),
                tools: vec!["bash".into()],
                command_prefix: prefixes,
                command_regex: Some(shape::exact_regex(exact)),
                inside: first.has_paths,
                path_glob: None,
                sandbox: if read_only { None } else { sandbox.clone() },
                reason: learned(calls.len(), sessions),
            },
            positives: calls.clone(),
            anchor,
            alternatives: broader.iter().cloned().collect(),
        });
    }
}

fn learn_tool(
    ask: &Ask<'_>,
    tool: &str,
    positives: &[u32],
    blockers: &Blockers<'_>,
    candidates: &mut Vec<Candidate>,
    refuse: &mut Refuse<'_>,
) {
    let obs = |i: &u32| &ask.record.observations[*i as usize];
    let variants: BTreeSet<&str> = positives
        .iter()
        .filter_map(|i| match &obs(i).shape {
            Ok(Shape::Tool { variant }) => Some(variant.as_str()),
            _ => None,
        })
        .collect();
    let n = positives.len() as u64;
    let shown = format!("{tool} *");
    if variants.len() < ask.min_support {
        refuse(
            tool,
            shown,
            n,
            format!(
                "only {} distinct approved variant{} (--min-support {}); an MCP tool's arguments cannot be named narrower",
                variants.len(),
                if variants.len() == 1 { "" } else { "s" },
                ask.min_support
            ),
        );
        return;
    }
    if let Some(b) = blockers.of_tool(tool).next() {
        refuse(tool, shown, n, described(b));
        return;
    }
    let anchor = match anchor(ask, tool, positives) {
        Ok(anchor) => anchor,
        Err(why) => {
            refuse(tool, shown, n, why);
            return;
        }
    };
    let server = crate::mcp::names::split_tool_name(tool).map_or("", |(s, _)| s);
    let sessions = positives
        .iter()
        .map(|i| obs(i).session)
        .collect::<BTreeSet<_>>()
        .len();
    candidates.push(Candidate {
        tool: tool.to_owned(),
        rung: Rung::Tool,
        shape: shown,
        rule: RuleSpec {
            id: rule_id(tool, "any"),
            tools: vec![globset::escape(tool)],
            command_prefix: Vec::new(),
            command_regex: None,
            inside: false,
            path_glob: None,
            sandbox: None,
            reason: learned(positives.len(), sessions),
        },
        positives: positives.to_vec(),
        anchor,
        alternatives: vec![
            Alternative {
                relation: "narrower",
                rung: Rung::Exact,
                shape: format!("{tool} with these arguments"),
                why: "a rule cannot name an MCP tool's arguments (only its declared paths)"
                    .to_owned(),
            },
            Alternative {
                relation: "broader",
                rung: Rung::Tool,
                shape: format!("mcp__{server}__*"),
                why: format!("the other tools of `{server}` were not approved"),
            },
        ],
    });
}

/// A readable rule id: `suggest.<tool>.<shape>`, made unique later.
fn rule_id(tool: &str, shape: &str) -> String {
    let mut slug = String::new();
    for c in shape.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() || c == '_' {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_matches('-').chars().take(48).collect();
    let slug = slug.trim_end_matches('-');
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if slug.is_empty() {
        format!("suggest.{tool}")
    } else {
        format!("suggest.{tool}.{slug}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_readable() {
        assert_eq!(rule_id("bash", "cargo test"), "suggest.bash.cargo-test");
        assert_eq!(
            rule_id("write_file", "src/**/*.rs"),
            "suggest.write_file.src-rs"
        );
        assert_eq!(rule_id("mcp__gh__get", "any"), "suggest.mcp__gh__get.any");
    }
}
