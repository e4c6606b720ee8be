//! `policy lint`: author mistakes a policy loads with but should not keep.
//! Pure: it reads a loaded `Policy` (and, for usage, counts gathered by the
//! caller from recorded traffic); it opens nothing.
//!
//! Shadowing is flagged only where it is provable from the rules as
//! written: an earlier rule whose tools include the later rule's and whose
//! every condition is also a condition of the later rule, written the same
//! way or provably wider (more entries or globs, a shorter command prefix,
//! a glob matching the other's literal text), under a quantifier at least
//! as loose.

use std::collections::BTreeMap;

use serde::Serialize;

use super::commands::CommandMatcher;
use super::patterns::{Globs, Patterns};
use super::rule::Rule;
use super::rule::Scope;
use super::{Action, Policy};
use crate::shell::programs;

/// What kind of mistake a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LintKind {
    /// An allow rule that applies to every tool and has no condition.
    UnconditionalAllow,
    /// A rule every request of which an earlier rule decides first.
    Shadowed,
    /// A rule that decided none of the recorded calls (usage only).
    NeverMatched,
    /// A `bash` allow rule that nothing keeps inside the workspace: neither
    /// its own `path_scope = "inside"` nor an earlier ask or deny rule for
    /// `bash` with `path_scope = "outside"`.
    UnscopedShellAllow,
    /// A `bash` allow rule naming a program (or git/cargo subcommand) gavel
    /// has no model of: its options are taken on trust.
    UnmodelledProgram,
    /// A `who` condition on a field none of the clients it names ever
    /// sends: it can never hold.
    NeverSent,
    /// A flow condition on a label nothing gives: no `[[labels]]` entry
    /// (nor, for `after` and `not_after`, any rule's `labels`).
    UnknownLabel,
}

/// One finding about one rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub kind: LintKind,
    pub rule_id: String,
    /// The earlier rule that shadows this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    pub message: String,
}

/// The static findings: unconditional allows and shadowed rules, in rule order.
pub fn lint(policy: &Policy) -> Vec<Finding> {
    let rules = policy.rules();
    let mut findings = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        if rule.action == Action::Allow && every_tool(rule) && !has_conditions(rule) {
            findings.push(Finding {
                kind: LintKind::UnconditionalAllow,
                rule_id: rule.id.clone(),
                by: None,
                message: format!(
                    "allow rule `{}` has no `tools` and no conditions: it allows every call of every tool \
                     (`bash` `sudo rm -rf /` included) that reaches it",
                    rule.id
                ),
            });
        }
        if rule.action == Action::Allow && applies_to_bash(rule) {
            let shell_condition = rule.command_prefix.is_some() || rule.commands.is_some();
            let scoped =
                rule.path_scope == Some(Scope::Inside) || rules[..i].iter().any(keeps_bash_inside);
            if shell_condition
                && !scoped
                && let Some(example) = outside_example(rule)
            {
                findings.push(Finding {
                    kind: LintKind::UnscopedShellAllow,
                    rule_id: rule.id.clone(),
                    by: None,
                    message: format!(
                        "allow rule `{}` lets `bash` reach outside the workspace (it allows `{example}`): \
                         add an earlier ask rule for `bash` with `path_scope = \"outside\"`, as the \
                         coding-agent preset's `bash.outside_workspace`",
                        rule.id
                    ),
                });
            }
            // A rule naming a sandbox is held by the kernel, not by models.
            for program in unmodelled(rule)
                .into_iter()
                .filter(|_| rule.sandbox.is_none())
            {
                findings.push(Finding {
                    kind: LintKind::UnmodelledProgram,
                    rule_id: rule.id.clone(),
                    by: None,
                    message: format!(
                        "allow rule `{}` names `{program}`, which gavel has no model of: \
                         whatever its options do (run a program, write a file) is allowed \
                         (see the table in docs/shell.md)",
                        rule.id
                    ),
                });
            }
        }
        if let Some(message) = rule.who.as_ref().and_then(|w| w.never_sent()) {
            findings.push(Finding {
                kind: LintKind::NeverSent,
                rule_id: rule.id.clone(),
                by: None,
                message: format!(
                    "rule `{}` {message}: its `who` condition never holds",
                    rule.id
                ),
            });
        }
        for label in unknown_labels(policy, rule) {
            findings.push(Finding {
                kind: LintKind::UnknownLabel,
                rule_id: rule.id.clone(),
                by: None,
                message: format!(
                    "rule `{}` reads label `{label}`, which no [[labels]] entry{} gives: \
                     the condition never changes",
                    rule.id,
                    if rule
                        .flow
                        .as_ref()
                        .is_some_and(|f| f.labelled.contains(&label))
                    {
                        ""
                    } else {
                        " or rule"
                    }
                ),
            });
        }
        if let Some(earlier) = rules[..i].iter().find(|earlier| shadows(earlier, rule)) {
            findings.push(Finding {
                kind: LintKind::Shadowed,
                rule_id: rule.id.clone(),
                by: Some(earlier.id.clone()),
                message: format!(
                    "rule `{}` can never decide: every call it matches is matched first by `{}` \
                     (same or wider tools, no condition `{}` lacks)",
                    rule.id, earlier.id, rule.id
                ),
            });
        }
    }
    findings
}

/// How often each rule decided recorded calls under this policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Calls decided in all.
    pub calls: u64,
    /// Rules in policy order with how many calls each decided (0 included),
    /// then the built-in outcomes (`default.deny`, ...) that decided any.
    pub by_rule: Vec<(String, u64)>,
    /// The rules that decided the most calls, most first (at most `TOP`).
    pub top: Vec<(String, u64)>,
}

/// `policy lint`'s report as lines of text: the policy, its warnings,
/// and, over the log at `db`, the rules that matched most and those that
/// never matched (`usage`; `None` when there is no log, or `no_usage`).
pub fn text(
    policy: &Policy,
    findings: &[Finding],
    usage: Option<&(Usage, Vec<Finding>)>,
    no_usage: bool,
    db: &std::path::Path,
) -> Vec<String> {
    use crate::text::plural;
    let mut text = vec![format!(
        "policy `{}` ({}, sha256 {}): {}",
        policy.reference().name,
        plural(policy.rules().len(), "rule"),
        crate::text::cell(&policy.reference().digest, 16),
        if findings.is_empty() {
            "no warnings".to_owned()
        } else {
            plural(findings.len(), "warning")
        }
    )];
    for finding in findings {
        text.push(format!("  warning: {}", finding.message));
    }
    match usage {
        None if no_usage => {}
        None => text.push(format!(
            "No log at `{}`: no usage report (--db LOG names one)",
            db.display()
        )),
        Some((usage, never)) => {
            text.push(format!(
                "Over {} recorded in `{}`, decided again under this policy:",
                plural(usage.calls as usize, "call"),
                db.display()
            ));
            if usage.top.is_empty() {
                text.push("  no rule matched any call".into());
            } else {
                let top: Vec<String> = usage
                    .top
                    .iter()
                    .map(|(id, n)| format!("`{id}` ({})", plural(*n as usize, "call")))
                    .collect();
                text.push(format!("  matched most: {}", top.join(", ")));
            }
            if never.is_empty() {
                text.push("  every rule matched at least one call".into());
            } else {
                let ids: Vec<String> = never.iter().map(|f| format!("`{}`", f.rule_id)).collect();
                text.push(format!(
                    "  never matched ({}): {}",
                    plural(never.len(), "rule"),
                    ids.join(", ")
                ));
            }
        }
    }
    text
}

/// How many rules `Usage::top` lists.
pub const TOP: usize = 5;

/// Usage from `counts` (rule id -> calls it decided): the policy's rules
/// that never matched become findings.
pub fn usage(policy: &Policy, counts: &BTreeMap<String, u64>) -> (Usage, Vec<Finding>) {
    let mut by_rule: Vec<(String, u64)> = policy
        .rules()
        .iter()
        .map(|r| (r.id.clone(), counts.get(&r.id).copied().unwrap_or(0)))
        .collect();
    for (id, count) in counts {
        if !policy.rules().iter().any(|r| &r.id == id) {
            by_rule.push((id.clone(), *count));
        }
    }
    let mut top: Vec<(String, u64)> = by_rule.iter().filter(|(_, n)| *n > 0).cloned().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(TOP);
    let findings = policy
        .rules()
        .iter()
        .filter(|r| counts.get(&r.id).copied().unwrap_or(0) == 0)
        .map(|r| Finding {
            kind: LintKind::NeverMatched,
            rule_id: r.id.clone(),
            by: None,
            message: format!("rule `{}` decided none of the recorded calls", r.id),
        })
        .collect();
    (
        Usage {
            calls: counts.values().sum(),
            by_rule,
            top,
        },
        findings,
    )
}

/// Whether the rule can apply to `bash`.
fn applies_to_bash(rule: &Rule) -> bool {
    rule.tools.as_ref().is_none_or(|t| t.is_match("bash"))
}

/// Whether `rule` stops every `bash` call that names a path outside the
/// workspace before a later rule sees it.
fn keeps_bash_inside(rule: &Rule) -> bool {
    rule.action != Action::Allow
        && applies_to_bash(rule)
        && rule.path_scope == Some(Scope::Outside)
        && rule.path_glob.is_none()
        && rule.content_glob.is_none()
        && rule.write_glob.is_none()
        && rule.command_regex.is_none()
        && rule.command_prefix.is_none()
        && rule.commands.is_none()
        && rule.unprovable.is_none()
        && rule.definition_changed.is_none()
        && rule.args.is_none()
        && rule.who.is_none()
        && rule.flow.is_none()
}

/// The labels `rule`'s flow conditions read that nothing in `policy` or
/// the layers above gives: `labelled` reads the `[[labels]]` entries,
/// `after` and `not_after` those and every rule's `labels`.
fn unknown_labels(policy: &Policy, rule: &Rule) -> Vec<String> {
    let Some(flow) = &rule.flow else {
        return Vec::new();
    };
    let policies: Vec<&Policy> = policy
        .above
        .iter()
        .map(|l| &l.policy)
        .chain([policy])
        .collect();
    let given = |label: &String, by_rules: bool| {
        policies.iter().any(|p| {
            p.label_rules.iter().any(|r| r.labels.contains(label))
                || (by_rules && p.rules.iter().any(|r| r.labels.contains(label)))
        })
    };
    let mut unknown = Vec::new();
    for (label, by_rules) in flow
        .after
        .iter()
        .chain(&flow.not_after)
        .map(|l| (l, true))
        .chain(flow.labelled.iter().map(|l| (l, false)))
    {
        if !given(label, by_rules) && !unknown.contains(label) {
            unknown.push(label.clone());
        }
    }
    unknown
}

/// A command that `rule` allows and that names a path outside the
/// workspace, built from the rule's own entries (its prefixes, its literal
/// program names) followed by an outside path; `None` when none of them is
/// such a command, so the finding is never shown with an example the rule
/// does not allow. Matched on lexical facts, as a rule's examples are;
/// whether an earlier rule decides first is the shadowing finding's
/// business.
fn outside_example(rule: &Rule) -> Option<String> {
    const OUTSIDE: [&str; 3] = ["~/.ssh", "-r BEGIN ~/.ssh", "BEGIN ~/.ssh/id_rsa"];
    let mut bases: Vec<String> = Vec::new();
    for matcher in rule
        .command_prefix
        .iter()
        .chain(rule.commands.iter())
        .flatten()
    {
        if let Some(prefix) = &matcher.prefix {
            bases.push(prefix.join(" "));
            if let Some(rest) = prefix.strip_prefix(&["git".to_owned()]) {
                // git's own `-C` names the folder it reads.
                bases.push(format!("git -C ~/.ssh {}", rest.join(" ")));
            }
        }
        if let Some(program) = &matcher.program {
            bases.extend(
                program
                    .written
                    .iter()
                    .filter(|p| !p.contains(['*', '?', '[', '{']))
                    .cloned(),
            );
        }
    }
    bases.extend(["cat", "ls", "grep"].map(str::to_owned));
    let mut candidates = bases.iter().flat_map(|base| {
        let reads_dir = base.contains("~/.ssh");
        OUTSIDE
            .iter()
            .filter(move |_| !reads_dir)
            .map(move |tail| format!("{base} {tail}"))
            .chain(reads_dir.then(|| base.clone()))
    });
    candidates.find(|command| {
        let request = crate::request::ToolRequest::new(
            "lint",
            "bash",
            serde_json::json!({ "command": command }),
        );
        let facts = crate::facts::lexical_facts(&request);
        rule.matches(&request, &facts, &super::At::none()).is_ok()
            && facts.paths.iter().any(|p| !p.inside)
    })
}

/// The programs an allow rule names that have no model, as written.
fn unmodelled(rule: &Rule) -> Vec<String> {
    let mut names = Vec::new();
    for matcher in rule
        .command_prefix
        .iter()
        .chain(rule.commands.iter())
        .flatten()
    {
        if let Some(prefix) = &matcher.prefix {
            if !programs::is_modelled(prefix) {
                names.push(prefix.join(" "));
            }
        } else if let Some(program) = &matcher.program {
            names.extend(
                program
                    .written
                    .iter()
                    .filter(|p| !programs::is_modelled(&[(*p).clone()]))
                    .cloned(),
            );
        }
    }
    names
}

/// Whether the rule's `tools` match every tool name (absent, or a bare `*`).
fn every_tool(rule: &Rule) -> bool {
    rule.tools
        .as_ref()
        .is_none_or(|t| t.written.iter().any(|g| g == "*" || g == "**"))
}

fn has_conditions(rule: &Rule) -> bool {
    rule.path_scope.is_some()
        || rule.path_glob.is_some()
        || rule.content_glob.is_some()
        || rule.write_glob.is_some()
        || rule.command_regex.is_some()
        || rule.command_prefix.is_some()
        || rule.commands.is_some()
        || rule.unprovable.is_some()
        || rule.definition_changed.is_some()
        || rule.args.is_some()
        || rule.who.is_some()
        || rule.flow.is_some()
}

/// Whether every call `later` matches is provably matched by `earlier`.
pub(super) fn shadows(earlier: &Rule, later: &Rule) -> bool {
    // Path and command conditions of an allow rule need every fact (path,
    // simple command) to hold, the others just one: "all" implies "any"
    // (both need at least one fact), not the other way round. Tools, regex
    // and `unprovable` read the same under every action.
    let quantified = earlier.path_scope.is_some()
        || earlier.path_glob.is_some()
        || earlier.content_glob.is_some()
        || earlier.write_glob.is_some()
        || earlier.command_prefix.is_some()
        || earlier.commands.is_some();
    if quantified && earlier.action == Action::Allow && later.action != Action::Allow {
        return false;
    }
    tools_cover(earlier, later)
        && (earlier.path_scope.is_none() || earlier.path_scope == later.path_scope)
        && globs_cover(&earlier.path_glob, &later.path_glob)
        && globs_cover(&earlier.content_glob, &later.content_glob)
        && globs_cover(&earlier.write_glob, &later.write_glob)
        && regex_same(earlier, later)
        && matchers_cover(&earlier.command_prefix, &later.command_prefix)
        && matchers_cover(&earlier.commands, &later.commands)
        && (earlier.unprovable.is_none() || earlier.unprovable == later.unprovable)
        && (earlier.definition_changed.is_none()
            || earlier.definition_changed == later.definition_changed)
        && args_cover(earlier, later)
        && earlier
            .flow
            .as_ref()
            .is_none_or(|e| later.flow.as_ref() == Some(e))
        && earlier.who.as_ref().is_none_or(|e| {
            later
                .who
                .as_ref()
                .is_some_and(|l| e.written() == l.written())
        })
}

/// Absent in `earlier`, or each of its `args` entries is one of `later`'s
/// (`later` then holds for fewer calls). A type `earlier` cannot judge
/// holds for an ask or deny and not for an allow: entries cover only
/// under rules of the same kind.
fn args_cover(earlier: &Rule, later: &Rule) -> bool {
    match (&earlier.args, &later.args) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(e), Some(l)) => {
            (earlier.action == Action::Allow) == (later.action == Action::Allow)
                && e.iter()
                    .all(|entry| l.iter().any(|other| other.written() == entry.written()))
        }
    }
}

fn tools_cover(earlier: &Rule, later: &Rule) -> bool {
    if every_tool(earlier) {
        return true;
    }
    match (&earlier.tools, &later.tools) {
        (Some(e), Some(l)) => l.written.iter().all(|t| e.written.contains(t)),
        _ => false,
    }
}

/// Absent in `earlier`, or every glob of `later` is among `earlier`'s.
fn globs_cover(earlier: &Option<Patterns<Globs>>, later: &Option<Patterns<Globs>>) -> bool {
    match (earlier, later) {
        (None, _) => true,
        (Some(e), Some(l)) => e.covers(l),
        (Some(_), None) => false,
    }
}

/// A regex set is one condition: only the same set, or none, is provably wider.
fn regex_same(earlier: &Rule, later: &Rule) -> bool {
    match (&earlier.command_regex, &later.command_regex) {
        (None, _) => true,
        (Some(e), Some(l)) => l.written.iter().all(|r| e.written.contains(r)),
        (Some(_), None) => false,
    }
}

/// Absent in `earlier`, or every entry of `later` is among `earlier`'s.
fn matchers_cover(
    earlier: &Option<Vec<CommandMatcher>>,
    later: &Option<Vec<CommandMatcher>>,
) -> bool {
    match (earlier, later) {
        (None, _) => true,
        (Some(e), Some(l)) => l
            .iter()
            .all(|m| e.iter().any(|n| n.shown == m.shown || n.covers(m))),
        (Some(_), None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(rules: &str) -> Policy {
        Policy::from_toml(&format!("name = \"t\"\n{rules}"), "test").unwrap()
    }

    fn kinds(policy: &Policy) -> Vec<(LintKind, String)> {
        lint(policy)
            .into_iter()
            .map(|f| (f.kind, f.rule_id))
            .collect()
    }

    #[test]
    fn an_allow_without_tools_or_conditions_is_flagged() {
        let p = policy(
            "[[rules]]\nid = \"all\"\naction = \"allow\"\nreason = \"r\"\n\
             [[rules]]\nid = \"star\"\naction = \"allow\"\nreason = \"r\"\ntools = [\"*\"]\n",
        );
        let found = kinds(&p);
        assert!(found.contains(&(LintKind::UnconditionalAllow, "all".into())));
        assert!(found.contains(&(LintKind::Shadowed, "star".into())));

        let p = policy(
            "[[rules]]\nid = \"bash.all\"\naction = \"allow\"\nreason = \"r\"\ntools = [\"bash\"]\nunprovable = false\n\
             [[rules]]\nid = \"bash.sudo\"\naction = \"deny\"\nreason = \"r\"\ntools = [\"bash\"]\nunprovable = false\n\
             commands = [{ program = [\"sudo\"] }]\n",
        );
        assert_eq!(
            kinds(&p),
            [(LintKind::Shadowed, "bash.sudo".into())],
            "a deny after an allow without path or command conditions is unreachable"
        );
    }

    #[test]
    fn shell_allows_need_a_scope_and_modelled_programs() {
        let unscoped = policy(
            r#"
[[rules]]
id = "r"
action = "allow"
tools = ["bash"]
command_prefix = [["grep"], ["cargo", "build"]]
reason = "x"
"#,
        );
        assert_eq!(
            kinds(&unscoped),
            [
                (LintKind::UnscopedShellAllow, "r".to_owned()),
                (LintKind::UnmodelledProgram, "r".to_owned())
            ]
        );
        let preset = Policy::from_toml(crate::policy::CODING_AGENT_POLICY_TOML, "preset").unwrap();
        assert!(lint(&preset).is_empty(), "{:?}", lint(&preset));
        let builtin = Policy::builtin();
        assert!(lint(&builtin).is_empty(), "{:?}", lint(&builtin));
    }

    /// Issue 39, item 11: the warning for an unscoped allow of `ls` gave
    /// `grep -r BEGIN ~/.ssh` as its example, a command that rule never
    /// allows.
    #[test]
    fn the_unscoped_allow_example_is_a_command_the_rule_allows() {
        for (prefix, expected) in [
            (r#"[["ls"]]"#, "ls ~/.ssh"),
            (r#"[["grep"]]"#, "grep -r BEGIN ~/.ssh"),
            (r#"[["git", "log"]]"#, "git log ~/.ssh"),
            (r#"[["make"]]"#, "make ~/.ssh"),
        ] {
            let p = policy(&format!(
                "[[rules]]\nid = \"r\"\naction = \"allow\"\ntools = [\"bash\"]\n\
                 command_prefix = {prefix}\nreason = \"x\"\n"
            ));
            let finding = lint(&p)
                .into_iter()
                .find(|f| f.kind == LintKind::UnscopedShellAllow)
                .unwrap_or_else(|| panic!("{prefix}: no finding"));
            assert!(
                finding
                    .message
                    .contains(&format!("(it allows `{expected}`)")),
                "{prefix}: {}",
                finding.message
            );
            let request = crate::request::ToolRequest::new(
                "t",
                "bash",
                serde_json::json!({ "command": expected }),
            );
            let decision = p.decide(&request, &crate::facts::lexical_facts(&request));
            assert_eq!(decision.rule_id, "r", "{expected}");
            assert_eq!(decision.action, Action::Allow, "{expected}");
            assert!(!finding.message.contains("BEGIN") || expected.contains("BEGIN"));
        }
        // A rule that names only what cannot reach a path gets no claim.
        let printers = policy(
            "[[rules]]\nid = \"r\"\naction = \"allow\"\ntools = [\"bash\"]\n\
             command_prefix = [[\"echo\"]]\nreason = \"x\"\n",
        );
        assert!(kinds(&printers).is_empty(), "{:?}", lint(&printers));
    }

    #[test]
    fn shadowing_is_flagged_only_when_provable() {
        let p = policy(
            r#"
[[rules]]
id = "deny.rm"
action = "deny"
reason = "r"
tools = ["bash"]
commands = [{ program = ["rm"] }]

[[rules]]
id = "deny.rm.rf"
action = "deny"
reason = "r"
tools = ["bash"]
commands = [{ program = ["rm"] }]
unprovable = false

[[rules]]
id = "ask.rm.or.mv"
action = "ask"
reason = "r"
tools = ["bash"]
commands = [{ program = ["rm"] }, { program = ["mv"] }]

[[rules]]
id = "read.inside"
action = "allow"
reason = "r"
tools = ["read_file"]
path_scope = "inside"

[[rules]]
id = "read.docs"
action = "allow"
reason = "r"
tools = ["read_file", "glob"]
path_scope = "inside"
path_glob = ["docs/**"]

[[rules]]
id = "deny.read.inside"
action = "deny"
reason = "r"
tools = ["read_file"]
path_scope = "inside"
"#,
        );
        let shadowed: Vec<String> = lint(&p)
            .into_iter()
            .filter(|f| f.kind == LintKind::Shadowed)
            .map(|f| format!("{} by {}", f.rule_id, f.by.unwrap()))
            .collect();
        assert_eq!(
            shadowed,
            ["deny.rm.rf by deny.rm"],
            "more entries, more tools, or an allow before a deny are not provably shadowed"
        );
    }

    #[test]
    fn usage_lists_never_matched_rules_and_the_top_ones() {
        let p = policy(
            "[[rules]]\nid = \"a\"\naction = \"deny\"\nreason = \"r\"\ntools = [\"x\"]\n\
             [[rules]]\nid = \"b\"\naction = \"deny\"\nreason = \"r\"\ntools = [\"y\"]\n",
        );
        let counts = BTreeMap::from([("a".to_owned(), 3), ("default.deny".to_owned(), 5)]);
        let (usage, findings) = usage(&p, &counts);
        assert_eq!(usage.calls, 8);
        assert_eq!(
            usage.top,
            [("default.deny".to_owned(), 5), ("a".to_owned(), 3)]
        );
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].rule_id, "b");
    }
}
