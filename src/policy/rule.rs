//! One compiled rule and how it matches. All conditions present in a rule
//! must hold; a list inside a condition matches if any entry does.
//!
//! Conditions over several facts (a request may touch several paths) follow
//! the rule's action: an `allow` rule needs every fact to satisfy it, an
//! `ask` or `deny` rule needs just one. A rule can then never allow more
//! than it names, and never deny or ask less than it names.

use regex::RegexSet;

use serde::{Deserialize, Serialize};

use super::commands::{self, CommandMatcher, ShellMiss};
use super::flow::After;
use super::patterns::{Globs, Patterns};
use super::{Action, At, Policy};
use crate::facts::{Access, Facts, PathFact};
use crate::request::ToolRequest;

/// Where a path must lie for `path_scope` to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Inside,
    Outside,
}

/// A validated rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub action: Action,
    pub(super) reason: String,
    pub(super) tools: Option<Patterns<Globs>>,
    /// `args`: conditions on argument values, by JSON pointer; all must hold.
    pub(super) args: Option<Vec<super::args::ArgCondition>>,
    /// `who`: conditions on the principal that made the call.
    pub(super) who: Option<super::who::WhoCondition>,
    pub(super) path_scope: Option<Scope>,
    pub(super) path_glob: Option<Patterns<Globs>>,
    /// Like `path_glob`, for paths whose contents are (or may be) read or
    /// written: a path only listed (`ls`, `find`, the `glob` tool) is not.
    pub(super) content_glob: Option<Patterns<Globs>>,
    pub(super) write_glob: Option<Patterns<Globs>>,
    pub(super) command_regex: Option<Patterns<RegexSet>>,
    pub(super) command_prefix: Option<Vec<CommandMatcher>>,
    pub(super) commands: Option<Vec<CommandMatcher>>,
    pub(super) unprovable: Option<bool>,
    /// `definition_changed`: holds when the MCP tool's definition changed
    /// (`true`) or did not (`false`) since the log last saw it.
    pub(super) definition_changed: Option<bool>,
    /// `after`, `not_after`, `labelled`: conditions on the session's flow.
    pub(super) flow: Option<super::flow::FlowCondition>,
    /// `labels`: what the call carries when this rule decides it (for a
    /// `[[labels]]` entry: when it holds).
    pub(super) labels: Vec<String>,
    /// `approvers`, `quorum`: who must approve the calls this ask rule asks about.
    pub(super) approvers: Option<super::Approvers>,
    /// `sandbox`: the profile an allow by this rule runs under (`gavel exec`).
    pub(super) sandbox: Option<String>,
    /// For an allow naming a sandbox: what the kernel holds instead of a
    /// proof ([`commands::Held`]); set when the policy's profiles are known.
    pub(super) held: Option<commands::Held>,
}

/// The first condition of a rule that did not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Miss {
    Tool,
    NoPath,
    Scope,
    PathGlob,
    NoCommand,
    CommandRegex,
    CommandPrefix(ShellMiss),
    Commands(ShellMiss),
    Unprovable(ShellMiss),
    DefinitionChanged,
    /// The `args` entry at this index did not hold.
    Args(usize),
    /// The `who` condition did not hold.
    Who,
    /// A flow condition (`after`, `not_after`, `labelled`) did not hold.
    Flow,
}

impl Rule {
    /// Whether the rule can apply to calls of `tool` (no `tools` list, or
    /// one that names it).
    pub fn applies_to_tool(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|tools| tools.is_match(tool))
    }

    /// `Ok` when every condition holds (with the earlier call an `after`
    /// relied on), else the first that does not.
    pub(super) fn matches(
        &self,
        request: &ToolRequest,
        facts: &Facts,
        at: &At<'_>,
    ) -> Result<Option<After>, Miss> {
        if let Some(tools) = &self.tools
            && !tools.is_match(&request.name)
        {
            return Err(Miss::Tool);
        }
        if let Some(condition) = &self.who {
            condition.check(at.who).map_err(|_| Miss::Who)?;
        }
        let after = match &self.flow {
            Some(flow) => flow
                .check(self.action, at.history, at.labels)
                .map_err(|_| Miss::Flow)?,
            None => None,
        };
        for (i, condition) in self.args.iter().flatten().enumerate() {
            condition
                .check(&request.arguments, self.action)
                .map_err(|_| Miss::Args(i))?;
        }
        if self.path_scope.is_some() || self.has_glob() {
            if facts.paths.is_empty() {
                return Err(Miss::NoPath);
            }
            if let Some(scope) = self.path_scope
                && !self.holds(&facts.paths, |p| p.inside == (scope == Scope::Inside))
            {
                return Err(Miss::Scope);
            }
            if self.has_glob() && !self.holds(&facts.paths, |p| self.glob_holds(p)) {
                return Err(Miss::PathGlob);
            }
        }
        if let Some(regexes) = &self.command_regex {
            let Some(command) = bash_command(request) else {
                return Err(Miss::NoCommand);
            };
            if !regexes.compiled.is_match(command) {
                return Err(Miss::CommandRegex);
            }
        }
        if let Some(matchers) = &self.command_prefix {
            commands::check(matchers, self.action, facts, self.held)
                .map_err(Miss::CommandPrefix)?;
        }
        if let Some(matchers) = &self.commands {
            commands::check(matchers, self.action, facts, self.held).map_err(Miss::Commands)?;
        }
        if let Some(wanted) = self.unprovable {
            commands::check_unprovable(wanted, facts).map_err(Miss::Unprovable)?;
        }
        if let Some(wanted) = self.definition_changed {
            let changed = facts.mcp.as_ref().is_some_and(|m| m.definition_changed());
            if changed != wanted {
                return Err(Miss::DefinitionChanged);
            }
        }
        Ok(after)
    }

    /// Every glob list of the rule, the commands' included.
    fn glob_lists(&self) -> impl Iterator<Item = &Patterns<Globs>> {
        let matchers = self.command_prefix.iter().chain(&self.commands).flatten();
        [
            &self.tools,
            &self.path_glob,
            &self.content_glob,
            &self.write_glob,
        ]
        .into_iter()
        .flatten()
        .chain(matchers.flat_map(CommandMatcher::glob_lists))
        .chain(self.args.iter().flatten().filter_map(|a| a.globs()))
        .chain(
            self.who
                .iter()
                .flat_map(|w| w.fields.iter().map(|(_, g)| g)),
        )
    }

    /// Compiles every glob of the rule: the first that does not compile.
    pub(super) fn check_globs(&self) -> Result<(), String> {
        self.glob_lists().try_for_each(Patterns::check)
    }

    /// Why the rule cannot be applied: globs it used did not compile (a
    /// policy checked by an earlier version of gavel whose globs this
    /// version refuses). The decision is then a deny.
    pub(super) fn broken(&self) -> Option<&str> {
        self.glob_lists().find_map(Patterns::broken)
    }

    /// Whether one path fact meets the rule's `path_scope`, `path_glob`
    /// and `write_glob`.
    fn path_condition_holds(&self, fact: &PathFact) -> bool {
        let scope = self
            .path_scope
            .is_none_or(|scope| fact.inside == (scope == Scope::Inside));
        let glob = !self.has_glob() || self.glob_holds(fact);
        scope && glob
    }

    /// Whether the rule has a path glob condition.
    fn has_glob(&self) -> bool {
        self.path_glob.is_some() || self.content_glob.is_some() || self.write_glob.is_some()
    }

    /// Whether a fact matches `path_glob`; or is (or may be) read or
    /// written, not only listed, and matches `content_glob`; or is (or may
    /// be) written and matches `write_glob`. A fact whose use is not known
    /// may be any.
    fn glob_holds(&self, fact: &PathFact) -> bool {
        let Some(rel) = fact.relative.as_deref() else {
            return false;
        };
        let matches =
            |globs: &Option<Patterns<Globs>>| globs.as_ref().is_some_and(|g| g.is_match(rel));
        let any_use = matches(&self.path_glob);
        let content = fact.access != Some(Access::List) && matches(&self.content_glob);
        let written =
            !matches!(fact.access, Some(Access::Read | Access::List)) && matches(&self.write_glob);
        any_use || content || written
    }

    /// Applies `test` to the facts with the quantifier the action calls for.
    fn holds<T>(&self, items: &[T], test: impl Fn(&T) -> bool) -> bool {
        match self.action {
            Action::Allow => items.iter().all(test),
            Action::Ask | Action::Deny => items.iter().any(test),
        }
    }

    /// The rule's reason with `{tool}`, `{command}`, `{path}`,
    /// `{workspace}`, `{unprovable}` and `{after}` filled in.
    pub(super) fn reason(
        &self,
        request: &ToolRequest,
        facts: &Facts,
        after: Option<&After>,
    ) -> String {
        let template = &self.reason;
        if !template.contains('{') {
            return template.clone();
        }
        // The path that made the rule hold, when one did: for a deny, the
        // first fact meeting every path condition.
        let path = facts
            .paths
            .iter()
            .find(|p| self.path_condition_holds(p))
            .or_else(|| facts.paths.first())
            .map(|p| p.requested.as_str())
            .unwrap_or("");
        template
            .replace("{tool}", &request.name)
            .replace("{command}", &clip(bash_command(request).unwrap_or(""), 200))
            .replace("{path}", path)
            .replace("{workspace}", &facts.workspace)
            .replace("{unprovable}", &commands::unprovable_text(facts))
            .replace("{after}", &super::flow::describe(after))
    }
}

/// A simple command and the `commands` or `command_prefix` entry of the
/// deciding rule it matched, for `explain` and `check --explain`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryMatch {
    /// The simple command as parsed: its words, then its redirections.
    pub command: String,
    /// `commands` or `command_prefix`.
    pub condition: String,
    /// The entry as a policy file writes it.
    pub entry: String,
}

impl Rule {
    /// Which simple commands matched which of this rule's `command_prefix`
    /// and `commands` entries; call it for a rule that matched.
    pub(super) fn entry_matches(&self, request: &ToolRequest, facts: &Facts) -> Vec<EntryMatch> {
        if request.name != "bash" {
            return Vec::new();
        }
        let mut found = Vec::new();
        for (condition, matchers, prefix_entry) in [
            ("command_prefix", &self.command_prefix, true),
            ("commands", &self.commands, false),
        ] {
            let Some(matchers) = matchers else { continue };
            for hit in commands::hits(matchers, self.action, facts) {
                found.push(EntryMatch {
                    command: hit.command,
                    condition: condition.to_owned(),
                    entry: matchers[hit.entry].written(prefix_entry),
                });
            }
        }
        found
    }
}

impl Policy {
    /// For the rule `rule_id` (the one that decided `request`): which simple
    /// commands matched which of its `commands` / `command_prefix` entries.
    /// Empty for a rule without such conditions, or one not in this policy.
    pub fn entry_matches(
        &self,
        rule_id: &str,
        request: &ToolRequest,
        facts: &Facts,
    ) -> Vec<EntryMatch> {
        // A floor rule decides before the policy's own copy of it.
        super::floor()
            .rules()
            .iter()
            .chain(self.rules())
            .filter(|r| r.id == rule_id)
            .find(|r| r.matches(request, facts, &At::none()).is_ok())
            .map(|r| r.entry_matches(request, facts))
            .unwrap_or_default()
    }
}

impl Miss {
    /// A plain sentence saying why `rule` did not match.
    pub(super) fn describe(
        self,
        rule: &Rule,
        request: &ToolRequest,
        facts: &Facts,
        at: &At<'_>,
    ) -> String {
        let list = |p: &[String]| format!("[{}]", p.join(", "));
        match self {
            Miss::Tool => format!(
                "tool `{}` is not one of {}",
                request.name,
                list(rule.tools.as_ref().map_or(&[][..], |t| &t.written[..]))
            ),
            Miss::NoPath => format!("tool `{}` has no path to scope", request.name),
            Miss::Scope => {
                let want = match rule.path_scope {
                    Some(Scope::Outside) => "outside",
                    _ => "inside",
                };
                format!(
                    "path {} is not {want} the workspace",
                    describe_paths(&facts.paths)
                )
            }
            Miss::PathGlob => {
                let mut globs: Vec<String> = rule
                    .path_glob
                    .as_ref()
                    .map_or(&[][..], |g| &g.written[..])
                    .to_vec();
                if let Some(content) = &rule.content_glob {
                    globs.extend(
                        content
                            .written
                            .iter()
                            .map(|g| format!("{g} (read or written)")),
                    );
                }
                if let Some(written) = &rule.write_glob {
                    globs.extend(written.written.iter().map(|g| format!("{g} (written)")));
                }
                format!(
                    "path {} matches none of {}",
                    describe_paths(&facts.paths),
                    list(&globs)
                )
            }
            Miss::NoCommand => format!("tool `{}` has no shell command", request.name),
            Miss::CommandPrefix(miss) => {
                miss.describe(rule.command_prefix.as_deref().unwrap_or_default(), facts)
            }
            Miss::Commands(miss) => {
                miss.describe(rule.commands.as_deref().unwrap_or_default(), facts)
            }
            Miss::Unprovable(miss) => miss.describe(&[], facts),
            Miss::Who => rule
                .who
                .as_ref()
                .and_then(|w| w.check(at.who).err())
                .unwrap_or_default(),
            Miss::Flow => rule
                .flow
                .as_ref()
                .and_then(|f| f.check(rule.action, at.history, at.labels).err())
                .unwrap_or_default(),
            Miss::Args(i) => {
                let condition = &rule.args.as_deref().unwrap_or_default()[i];
                let why = condition
                    .check(&request.arguments, rule.action)
                    .err()
                    .unwrap_or_default();
                format!("argument `{}` {why}", condition.pointer)
            }
            Miss::DefinitionChanged => match rule.definition_changed {
                Some(true) => format!(
                    "the definition of `{}` did not change since the log last saw it",
                    request.name
                ),
                _ => format!(
                    "the definition of `{}` changed since the log last saw it",
                    request.name
                ),
            },
            Miss::CommandRegex => format!(
                "command matches none of {}",
                list(
                    rule.command_regex
                        .as_ref()
                        .map_or(&[][..], |r| &r.written[..])
                )
            ),
        }
    }
}

/// The paths for an explanation: the first [`SHOWN_PATHS`], then how many more.
fn describe_paths(paths: &[PathFact]) -> String {
    const SHOWN_PATHS: usize = 20;
    let mut shown: Vec<String> = paths
        .iter()
        .take(SHOWN_PATHS)
        .map(|p| match &p.resolved {
            Some(resolved) => format!(
                "`{}` (resolved `{}`)",
                clip(&p.requested, 200),
                clip(resolved, 200)
            ),
            None => match &p.error {
                Some(why) => format!("`{}` (unresolved: {why})", clip(&p.requested, 200)),
                None => format!("`{}` (unresolved)", clip(&p.requested, 200)),
            },
        })
        .collect();
    if paths.len() > SHOWN_PATHS {
        shown.push(format!("and {} more", paths.len() - SHOWN_PATHS));
    }
    shown.join(", ")
}

fn bash_command(request: &ToolRequest) -> Option<&str> {
    (request.name == "bash")
        .then(|| request.str_arg("command"))
        .flatten()
}

/// At most `max` characters of `text`, with an ellipsis when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
