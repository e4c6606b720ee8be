//! `policy diff`: what changed between two policies, rule by rule and in
//! the decisions they make on a sample of requests. Pure: the requests and
//! their facts are made here from the policies' own words, without the
//! filesystem; the recorded log's part is the caller's (`replay::diff_calls`).
//!
//! A rule kept under its id is *widened* when every call the old one
//! matched the new one provably matches too, and more; *narrowed* the other
//! way round; *changed* when neither is provable from the rules as written
//! (the same test `policy lint` uses for shadowing).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::json;

use super::lint::shadows;
use super::{Action, Decision, Policy, Rule};
use crate::facts::lexical_facts;
use crate::request::ToolRequest;

/// How one rule changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleChangeKind {
    Added,
    Removed,
    /// Kept, at another place among the rules both policies have.
    Reordered,
    Widened,
    Narrowed,
    /// Its conditions changed in a way neither covers the other.
    Changed,
    /// Only its action or reason changed.
    Same,
}

impl RuleChangeKind {
    /// How `policy diff` says it: `added`, `widened`, `conditions changed`, …
    pub fn word(self) -> &'static str {
        match self {
            RuleChangeKind::Added => "added",
            RuleChangeKind::Removed => "removed",
            RuleChangeKind::Reordered => "moved",
            RuleChangeKind::Widened => "widened",
            RuleChangeKind::Narrowed => "narrowed",
            RuleChangeKind::Changed => "conditions changed",
            RuleChangeKind::Same => "same conditions",
        }
    }
}

/// One rule's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleChange {
    pub rule_id: String,
    pub kind: RuleChangeKind,
    /// The action before and after, where the rule is in both and it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<(Action, Action)>,
    /// Its place (1-based) before and after, where it is in both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<(usize, usize)>,
    pub reason_changed: bool,
    /// The sandbox profile before and after, where it changed (a rule's
    /// sandbox widened is a widened rule, narrowed a narrowed one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<(Option<String>, Option<String>)>,
}

impl RuleChange {
    /// The change in words, as `policy diff` shows it.
    pub fn describe(&self) -> String {
        let kind = self.kind.word();
        if self.reason_changed {
            format!("{kind}, reason changed")
        } else {
            kind.to_owned()
        }
    }
}

/// A decision that differs between the two policies on a sample request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SampleChange {
    pub tool: String,
    pub arguments: serde_json::Value,
    /// The labels earlier calls of the session had set (none: a fresh session).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    pub from: (Action, String),
    pub to: (Action, String),
}

/// Every rule change, in the new policy's order, then the removed rules.
pub fn rule_changes(old: &Policy, new: &Policy) -> Vec<RuleChange> {
    let mut changes = changes_of(old, new, Policy::rules);
    // A `[[labels]]` entry that labels more calls makes the flow rules
    // reading its labels hold for more: widened, as a rule is.
    changes.extend(changes_of(old, new, |p| &p.label_rules));
    changes
}

/// The changes among the rules `rules` gives of each policy.
fn changes_of(old: &Policy, new: &Policy, rules: fn(&Policy) -> &[Rule]) -> Vec<RuleChange> {
    let old_rules: BTreeMap<&str, (usize, &Rule)> = rules(old)
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), (i, r)))
        .collect();
    let new_ids: Vec<&str> = rules(new).iter().map(|r| r.id.as_str()).collect();
    // Places among the rules both have, so an insertion elsewhere is not a move.
    let common_old: Vec<&str> = rules(old)
        .iter()
        .map(|r| r.id.as_str())
        .filter(|id| new_ids.contains(id))
        .collect();
    let common_new: Vec<&str> = new_ids
        .iter()
        .copied()
        .filter(|id| old_rules.contains_key(id))
        .collect();
    let mut changes = Vec::new();
    for (j, rule) in rules(new).iter().enumerate() {
        let Some(&(i, before)) = old_rules.get(rule.id.as_str()) else {
            changes.push(RuleChange {
                rule_id: rule.id.clone(),
                kind: RuleChangeKind::Added,
                action: None,
                position: None,
                reason_changed: false,
                sandbox: None,
            });
            continue;
        };
        let wider = shadows(rule, before);
        let narrower = shadows(before, rule);
        let kind = match (wider, narrower) {
            (true, true) => RuleChangeKind::Same,
            (true, false) => RuleChangeKind::Widened,
            (false, true) => RuleChangeKind::Narrowed,
            (false, false) => RuleChangeKind::Changed,
        };
        let moved = common_old.iter().position(|id| *id == rule.id)
            != common_new.iter().position(|id| *id == rule.id);
        let spec = |policy: &Policy, rule: &Rule| {
            (rule.action == Action::Allow)
                .then(|| {
                    rule.sandbox
                        .as_deref()
                        .and_then(|n| policy.sandbox_profile(n))
                })
                .flatten()
        };
        let sandbox_moved =
            crate::sandbox::widened(spec(old, before).as_ref(), spec(new, rule).as_ref());
        let kind = match (kind, sandbox_moved) {
            (_, None) => kind,
            (RuleChangeKind::Same | RuleChangeKind::Widened, Some(true)) => RuleChangeKind::Widened,
            (RuleChangeKind::Same | RuleChangeKind::Narrowed, Some(false)) => {
                RuleChangeKind::Narrowed
            }
            _ => RuleChangeKind::Changed,
        };
        let sandbox = sandbox_moved.map(|_| (before.sandbox.clone(), rule.sandbox.clone()));
        let kind = if kind == RuleChangeKind::Same && moved {
            RuleChangeKind::Reordered
        } else {
            kind
        };
        let action = (before.action != rule.action).then_some((before.action, rule.action));
        let reason_changed = before.reason != rule.reason;
        // A `[[labels]]` entry's labels are its effect, as a rule's action is.
        let kind = if kind == RuleChangeKind::Same && before.labels != rule.labels {
            RuleChangeKind::Changed
        } else {
            kind
        };
        if kind == RuleChangeKind::Same && action.is_none() && !reason_changed {
            continue;
        }
        changes.push(RuleChange {
            rule_id: rule.id.clone(),
            kind,
            action,
            position: Some((i + 1, j + 1)),
            reason_changed,
            sandbox,
        });
    }
    for rule in rules(old) {
        if !new_ids.contains(&rule.id.as_str()) {
            changes.push(RuleChange {
                rule_id: rule.id.clone(),
                kind: RuleChangeKind::Removed,
                action: None,
                position: None,
                reason_changed: false,
                sandbox: None,
            });
        }
    }
    changes
}

/// The sample requests: every tool either policy names, on paths inside,
/// outside and under each glob either names, and the shell with each
/// program either names and a few common ones.
pub fn sample_requests(old: &Policy, new: &Policy) -> Vec<ToolRequest> {
    let rules = || old.rules().iter().chain(new.rules());
    let mut tools: Vec<String> = ["read_file", "write_file", "edit_file", "glob", "bash"]
        .map(str::to_owned)
        .to_vec();
    let mut paths: Vec<String> = ["README.md", "src/main.rs", ".env", "/etc/passwd", "../x"]
        .map(str::to_owned)
        .to_vec();
    let mut commands: Vec<String> = [
        "ls",
        "cat README.md",
        "git status",
        "cargo test",
        "rm -rf /",
        "curl https://example.com",
        "echo x > out.txt",
    ]
    .map(str::to_owned)
    .to_vec();
    for rule in rules() {
        if let Some(globs) = &rule.tools {
            tools.extend(
                globs
                    .written
                    .iter()
                    .filter(|t| !t.contains(['*', '?', '[']))
                    .cloned(),
            );
        }
        for globs in [&rule.path_glob, &rule.content_glob, &rule.write_glob]
            .into_iter()
            .flatten()
        {
            paths.extend(globs.written.iter().map(|g| example_path(g)));
        }
        for matcher in rule.commands.iter().chain(&rule.command_prefix).flatten() {
            if let Some(prefix) = &matcher.prefix {
                commands.push(prefix.join(" "));
            }
            if let Some(programs) = &matcher.program {
                commands.extend(
                    programs
                        .written
                        .iter()
                        .filter(|p| !p.contains(['*', '?', '[']))
                        .map(|p| format!("{p} x")),
                );
            }
        }
    }
    for list in [&mut tools, &mut paths, &mut commands] {
        list.sort();
        list.dedup();
    }
    let mut requests = Vec::new();
    for tool in &tools {
        if tool == "bash" {
            for command in &commands {
                requests.push(ToolRequest::new(
                    "sample",
                    "bash",
                    json!({ "command": command }),
                ));
            }
            continue;
        }
        for path in &paths {
            let arguments = match tool.as_str() {
                "write_file" => json!({ "path": path, "content": "x" }),
                "edit_file" => json!({ "path": path, "old_text": "a", "new_text": "b" }),
                "glob" => json!({ "pattern": path }),
                _ => json!({ "path": path }),
            };
            requests.push(ToolRequest::new("sample", tool, arguments));
        }
    }
    requests
}

/// A path a glob matches: `**` and `*` filled in.
fn example_path(glob: &str) -> String {
    glob.replace("**", "a/b")
        .replace('*', "x")
        .replace(['?', '[', ']', '{', '}'], "")
}

/// The sample requests whose decision differs between `old` and `new`.
pub fn sample_changes(old: &Policy, new: &Policy) -> (usize, Vec<SampleChange>) {
    let requests = sample_requests(old, new);
    // Each request as the first call of a session and, when either policy
    // has flow rules, after calls that set every label they read.
    let mut read = old.history_labels();
    super::add_labels(&mut read, &new.history_labels());
    let mut histories = vec![(Vec::new(), super::History::default())];
    if !read.is_empty() {
        let mut history = super::History::default();
        history.add("earlier", &read);
        histories.push((read, history));
    }
    let verdict = |d: Decision| (d.action, d.rule_id);
    let mut changes = Vec::new();
    for request in &requests {
        let facts = lexical_facts(request);
        for (after, history) in &histories {
            let from = verdict(old.decide_in(request, &facts, None, history));
            let to = verdict(new.decide_in(request, &facts, None, history));
            if from != to {
                changes.push(SampleChange {
                    tool: request.name.clone(),
                    arguments: request.arguments.clone(),
                    after: after.clone(),
                    from,
                    to,
                });
            }
        }
    }
    (requests.len() * histories.len(), changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(rules: &str) -> Policy {
        Policy::from_toml(&format!("name = \"p\"\n{rules}"), "p.toml").unwrap()
    }

    const READ_SRC: &str = "[[rules]]\nid = \"read\"\naction = \"allow\"\ntools = [\"read_file\"]\npath_glob = [\"src/**\"]\nreason = \"r\"\n";
    const READ_ALL: &str =
        "[[rules]]\nid = \"read\"\naction = \"allow\"\ntools = [\"read_file\"]\nreason = \"r\"\n";
    const NO_SHELL: &str =
        "[[rules]]\nid = \"shell\"\naction = \"deny\"\ntools = [\"bash\"]\nreason = \"no\"\n";

    #[test]
    fn rules_added_removed_widened_narrowed_and_reordered_are_named() {
        let kinds = |old: &str, new: &str| -> Vec<(String, RuleChangeKind)> {
            rule_changes(&policy(old), &policy(new))
                .into_iter()
                .map(|c| (c.rule_id, c.kind))
                .collect()
        };
        assert_eq!(
            kinds(READ_SRC, READ_ALL),
            [("read".into(), RuleChangeKind::Widened)]
        );
        assert_eq!(
            kinds(READ_ALL, READ_SRC),
            [("read".into(), RuleChangeKind::Narrowed)]
        );
        assert_eq!(
            kinds(READ_SRC, &format!("{READ_SRC}{NO_SHELL}")),
            [("shell".into(), RuleChangeKind::Added)]
        );
        assert_eq!(
            kinds(&format!("{READ_SRC}{NO_SHELL}"), READ_SRC),
            [("shell".into(), RuleChangeKind::Removed)]
        );
        assert_eq!(
            kinds(
                &format!("{READ_SRC}{NO_SHELL}"),
                &format!("{NO_SHELL}{READ_SRC}")
            ),
            [
                ("shell".into(), RuleChangeKind::Reordered),
                ("read".into(), RuleChangeKind::Reordered)
            ]
        );
        assert!(kinds(READ_SRC, READ_SRC).is_empty());
        let stricter = rule_changes(
            &policy(READ_ALL),
            &policy(&READ_ALL.replace("allow", "ask")),
        );
        assert_eq!(stricter[0].action, Some((Action::Allow, Action::Ask)));
    }

    /// Issue 39, item 12: `command_prefix = [["cat"]]` becoming
    /// `[["cat", "notes.txt"]]` was "conditions changed", though every
    /// command the new rule allows the old one did.
    #[test]
    fn a_longer_command_prefix_is_narrowed_not_changed() {
        let rule = |prefix: &str| {
            policy(&format!(
                "[[rules]]\nid = \"cat\"\naction = \"allow\"\ntools = [\"bash\"]\n\
                 command_prefix = {prefix}\nreason = \"r\"\n"
            ))
        };
        let kind = |old: &str, new: &str| rule_changes(&rule(old), &rule(new))[0].kind;
        let cat = r#"[["cat"]]"#;
        let notes = r#"[["cat", "notes.txt"]]"#;
        assert_eq!(kind(cat, notes), RuleChangeKind::Narrowed);
        assert_eq!(kind(notes, cat), RuleChangeKind::Widened);
        assert_eq!(
            kind(r#"[["cat"], ["ls"]]"#, notes),
            RuleChangeKind::Narrowed
        );
        assert_eq!(
            kind(r#"[["cat", "a"]]"#, notes),
            RuleChangeKind::Changed,
            "neither covers the other"
        );
        // The same holds for `commands` entries and path globs.
        let commands = |entries: &str| {
            policy(&format!(
                "[[rules]]\nid = \"rm\"\naction = \"deny\"\ntools = [\"bash\"]\n\
                 commands = {entries}\nreason = \"r\"\n"
            ))
        };
        let changes = rule_changes(
            &commands(r#"[{ program = ["rm"] }]"#),
            &commands(r#"[{ program = ["rm"], flags = [["-r", "-R"]] }]"#),
        );
        assert_eq!(changes[0].kind, RuleChangeKind::Narrowed);
        let changes = rule_changes(
            &commands(r#"[{ prefix = ["git", "push"] }]"#),
            &commands(r#"[{ program = ["git"] }]"#),
        );
        assert_eq!(changes[0].kind, RuleChangeKind::Widened);
        let changes = rule_changes(
            &policy(READ_SRC),
            &policy(&READ_SRC.replace("src/**", "src/main.rs")),
        );
        assert_eq!(changes[0].kind, RuleChangeKind::Narrowed);
    }

    #[test]
    fn the_sample_finds_the_decisions_a_change_moves() {
        let (tried, changes) = sample_changes(&policy(READ_SRC), &policy(READ_ALL));
        assert!(tried > 10);
        // README.md was denied (no rule), and is now read.
        assert!(changes.iter().any(|c| c.arguments["path"] == "README.md"
            && c.from.0 == Action::Deny
            && c.to == (Action::Allow, "read".into())));
        // src/ was allowed before and after: not a change.
        assert!(!changes.iter().any(|c| c.arguments["path"] == "src/main.rs"));
        assert!(
            sample_changes(&policy(READ_SRC), &policy(READ_SRC))
                .1
                .is_empty()
        );
    }
}
