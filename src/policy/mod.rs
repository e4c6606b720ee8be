//! The policy stage: ordered rules, first match wins, default deny.
//!
//! `Policy::decide` is a pure function of a request and the facts gathered
//! for it. It never prompts, never touches the filesystem, the clock or the
//! environment, so the same request with the same facts always gets the same
//! decision, which is what replay relies on.

mod approvers;
mod args;
pub mod cases;
mod commands;
pub mod diff;
mod file;
mod floor;
mod flow;
mod layered;
pub mod lint;
mod notify;
mod patterns;
mod rule;
mod who;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::facts::{Facts, path_argument};
use crate::principal::Principal;
use crate::request::ToolRequest;

pub use approvers::{Approvers, FACTORS, valid_name};
pub(crate) use commands::unproven;
pub use file::{PLACEHOLDERS, PolicyError, ShadowSpec, memoize_parses};
pub use floor::{FLOOR_LAYER, FLOOR_POLICY_TOML, floor};
pub use flow::{After, History};
pub use layered::{EffectiveRule, Layer, LayerRef, PROJECT_LAYER, Shadow, ShadowVerdict};
pub use notify::{Notify, NotifyFormat, NotifyTarget, check_url as check_notify_url};
pub use rule::{EntryMatch, Rule};

/// The built-in default policy, as shipped in the repository.
pub const DEFAULT_POLICY_TOML: &str = include_str!("default.toml");
/// How the built-in policy is named where a file path would be.
pub const DEFAULT_POLICY_SOURCE: &str = "<built-in default>";

/// The coding-agent preset (`gavel policy show --preset coding-agent`),
/// which `gavel init` writes as a project's `gavel.toml`.
pub const CODING_AGENT_POLICY_TOML: &str = include_str!("coding-agent.toml");

/// The policies `gavel policy show --preset` prints, by name.
pub const PRESETS: &[(&str, &str)] = &[
    ("default", DEFAULT_POLICY_TOML),
    ("coding-agent", CODING_AGENT_POLICY_TOML),
];

/// Rule id for requests whose arguments cannot be judged safely.
pub const INVALID_ARGUMENTS: &str = "request.invalid_arguments";
/// Rule id for requests no rule matched.
pub const DEFAULT_DENY: &str = "default.deny";

/// What the policy says to do, ordered by strictness: `Allow < Ask < Deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Allow,
    Ask,
    Deny,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "allow" => Some(Action::Allow),
            "ask" => Some(Action::Ask),
            "deny" => Some(Action::Deny),
            _ => None,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which policy decided: its name and the SHA-256 of its file's bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PolicyRef {
    pub name: String,
    pub digest: String,
}

/// A policy decision: always an action, a stable rule id and a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub action: Action,
    pub rule_id: String,
    pub reason: String,
    pub policy: PolicyRef,
    /// Under layered policies: the layer whose rule decided (`system`,
    /// `admin`, `user`, or `project`); absent with the project's policy
    /// alone. `built-in` when a rule of gavel's floor decided, under any
    /// policy (`floor.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<String>,
    /// Under layered policies: every layer that was consulted, top first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerRef>,
    /// What each shadow policy would have decided (never enforced).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shadow: Vec<ShadowVerdict>,
    /// The sandbox the deciding allow rule names (`sandbox = "NAME"`):
    /// its spec and digest; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::SandboxRecord>,
    /// The call's labels: from the `[[labels]]` entries that hold for it,
    /// then the deciding rule's own `labels`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// When the deciding rule has an `after` condition: the label and the
    /// earlier call of the session that made it hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<After>,
    /// For an ask whose rule names `approvers`: who must approve, how many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<Approvers>,
}

impl Decision {
    /// `action` by `rule_id` of `policy`, for `reason`, and nothing more:
    /// no layer, shadow, sandbox, labels, flow or approvers.
    pub fn new(action: Action, rule_id: &str, reason: String, policy: PolicyRef) -> Self {
        Self {
            action,
            rule_id: rule_id.to_owned(),
            reason,
            policy,
            layer: None,
            layers: Vec::new(),
            shadow: Vec::new(),
            sandbox: None,
            labels: Vec::new(),
            after: None,
            approvers: None,
        }
    }
}

/// What a rule reads beyond the request and its facts: who made the call,
/// what the session did before, and the labels the call carries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<'a> {
    pub who: Option<&'a Principal>,
    pub history: &'a History,
    pub labels: &'a [String],
}

/// The history of a call that has none: a fresh session.
static NO_HISTORY: History = History::empty();

impl At<'static> {
    /// Nobody known, a fresh session, no labels.
    pub(crate) fn none() -> Self {
        At {
            who: None,
            history: &NO_HISTORY,
            labels: &[],
        }
    }
}

/// Why one rule did or did not match, for `check --explain` and `explain`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleTrace {
    pub rule_id: String,
    pub matched: bool,
    pub detail: String,
    /// The layer the rule belongs to, under layered policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<String>,
}

/// A loaded, validated policy.
#[derive(Debug, Clone)]
pub struct Policy {
    reference: PolicyRef,
    source: String,
    /// Where it was loaded from, for errors.
    origin: String,
    /// Whether its globs and inline examples were checked when it was loaded.
    checked: bool,
    rules: Vec<Rule>,
    redact: RedactSettings,
    /// `[approval] wait`: how long an asked call waits in the pending queue
    /// when the command line does not say (`--ask`).
    approval_wait: Option<std::time::Duration>,
    /// `[approval.notify]`: the webhook a waiting call is announced to.
    approval_notify: Option<Notify>,
    /// `[[paths]]`: the arguments of other tools (an MCP server's) that are paths.
    paths: Vec<PathArguments>,
    /// Layers above this policy, top first, that it cannot loosen.
    above: Vec<Layer>,
    /// Its `[[shadow]]` entries, as written.
    shadow_specs: Vec<ShadowSpec>,
    /// The shadow policies decided beside it on live calls, loaded.
    shadows: Vec<Shadow>,
    /// `[sandbox.profiles.NAME]`: the policy's own profiles, expanded.
    profiles: std::collections::BTreeMap<String, crate::sandbox::Spec>,
    /// `[sandbox] unenforceable`: what an allow whose sandbox the kernel
    /// cannot enforce becomes (`ask` or `deny`).
    unenforceable: Action,
    /// `[[labels]]`: entries that label the calls they hold for.
    label_rules: Vec<Rule>,
}

/// One `[[paths]]` entry of a policy: the top-level arguments of the
/// matching tools that name files, each read or written. Such a tool's
/// calls get path facts like `read_file`'s `path` (`facts::Workspace::facts_with`).
#[derive(Debug, Clone)]
pub struct PathArguments {
    tools: patterns::Patterns<patterns::Globs>,
    pub read: Vec<String>,
    pub write: Vec<String>,
    /// Arguments naming paths whose names and metadata only are read (a
    /// folder listed, a file's size): `list` facts, not reads.
    pub list: Vec<String>,
}

/// What a policy's `[redact]` table asks of the record: plain settings,
/// applied by the store (`docs/record-format.md`, "Redaction").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactSettings {
    /// `false` keeps every byte (for logs that must keep everything).
    pub enabled: bool,
    /// Extra regexes, checked when the policy is loaded; a match (or its
    /// group `s`) is redacted with kind `policy`.
    pub patterns: Vec<String>,
    /// Tools whose calls are stored without redaction.
    pub keep_tools: Vec<String>,
    /// Paths (globs, `**` across folders) whose file calls are stored without redaction.
    pub keep_paths: Vec<String>,
}

impl Default for RedactSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            patterns: Vec::new(),
            keep_tools: Vec::new(),
            keep_paths: Vec::new(),
        }
    }
}

impl Policy {
    /// The built-in default policy.
    pub fn builtin() -> Self {
        Self::compiled_in(DEFAULT_POLICY_TOML, DEFAULT_POLICY_SOURCE)
    }

    /// A policy compiled into gavel (the default, the floor), named
    /// `source` where a file path would be.
    fn compiled_in(text: &str, source: &str) -> Self {
        // Compiled in, and a unit test parses each with its examples
        // checked on every build: it always parses.
        let mut policy = file::parse(text, source, file::Checks::Deferred)
            .expect("a policy compiled into gavel is valid");
        policy.checked = true;
        policy
    }

    /// Parses and validates a policy from TOML text; `origin` names the file in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, PolicyError> {
        file::parse(text, origin, file::Checks::Now)
    }

    /// Reads a policy file, leaving its globs and inline examples
    /// unchecked: the per-call path checks them only for a policy the log
    /// has not recorded yet ([`Policy::check_deferred`]), since a policy
    /// once recorded passed them, and its digest pins its text.
    pub fn load_unchecked(path: &std::path::Path) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.display().to_string(),
            source,
        })?;
        file::parse(&text, &path.display().to_string(), file::Checks::Deferred)
    }

    /// Checks the globs and inline examples of a policy loaded without
    /// them: one that fails refuses the policy, as at a checked load.
    pub fn check_deferred(&self) -> Result<(), PolicyError> {
        if self.checked {
            return Ok(());
        }
        file::parse(&self.source, &self.origin, file::Checks::Now).map(|_| ())
    }

    /// Reads and validates a policy file.
    pub fn load(path: &std::path::Path) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_toml(&text, &path.display().to_string())
    }

    pub fn reference(&self) -> &PolicyRef {
        &self.reference
    }

    /// The policy's TOML text exactly as loaded.
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The policy's `[redact]` settings.
    pub fn redaction(&self) -> &RedactSettings {
        &self.redact
    }

    /// `[approval] wait`, when the policy sets it.
    pub fn approval_wait(&self) -> Option<std::time::Duration> {
        self.approval_wait
    }

    /// `[approval.notify]`, when the policy sets it: like `wait`, the
    /// project's own policy's, whatever the layers above it say.
    pub fn approval_notify(&self) -> Option<&Notify> {
        self.approval_notify.as_ref()
    }

    /// The arguments of `tool` that `[[paths]]` declares paths, each with
    /// its use, in the order declared (the layers above first, then this
    /// policy's); empty for a tool no entry names. The layers decide on the
    /// same facts, so what any of them declares is a path for all; a
    /// shadow's declarations are not (a shadow never changes what is enforced).
    pub fn path_arguments(&self, tool: &str) -> Vec<(String, crate::facts::Access)> {
        let mut found = Vec::new();
        for paths in self
            .above
            .iter()
            .map(|layer| &layer.policy.paths)
            .chain(std::iter::once(&self.paths))
        {
            for entry in declared_paths(paths, tool) {
                if !found.contains(&entry) {
                    found.push(entry);
                }
            }
        }
        found
    }
}

/// The arguments of `tool` that `paths` declares, each with its use.
fn declared_paths(paths: &[PathArguments], tool: &str) -> Vec<(String, crate::facts::Access)> {
    let mut found = Vec::new();
    for entry in paths.iter().filter(|p| p.tools.is_match(tool)) {
        for (names, access) in [
            (&entry.read, crate::facts::Access::Read),
            (&entry.write, crate::facts::Access::Write),
            (&entry.list, crate::facts::Access::List),
        ] {
            for name in names {
                if !found.iter().any(|(n, a)| n == name && *a == access) {
                    found.push((name.clone(), access));
                }
            }
        }
    }
    found
}

impl Policy {
    /// Decides `request` given `facts`. Pure: no prompt, no I/O. No
    /// principal: rules with `who` conditions do not match; a fresh session.
    pub fn decide(&self, request: &ToolRequest, facts: &Facts) -> Decision {
        self.evaluate(request, facts, None, &NO_HISTORY, None)
    }

    /// Decides `request` made by `who` (the principal the record keeps), as
    /// the first call of its session.
    pub fn decide_as(
        &self,
        request: &ToolRequest,
        facts: &Facts,
        who: Option<&Principal>,
    ) -> Decision {
        self.evaluate(request, facts, who, &NO_HISTORY, None)
    }

    /// Decides `request` made by `who` after `history`: what the earlier
    /// calls of its session did, for flow conditions.
    pub fn decide_in(
        &self,
        request: &ToolRequest,
        facts: &Facts,
        who: Option<&Principal>,
        history: &History,
    ) -> Decision {
        self.evaluate(request, facts, who, history, None)
    }

    /// Decides and also reports, rule by rule, why each rule tried did or did not match.
    pub fn explain(&self, request: &ToolRequest, facts: &Facts) -> (Decision, Vec<RuleTrace>) {
        self.explain_in(request, facts, None, &NO_HISTORY)
    }

    /// [`Policy::explain`] of a call made by `who`, first of its session.
    pub fn explain_as(
        &self,
        request: &ToolRequest,
        facts: &Facts,
        who: Option<&Principal>,
    ) -> (Decision, Vec<RuleTrace>) {
        self.explain_in(request, facts, who, &NO_HISTORY)
    }

    /// [`Policy::explain`] of a call made by `who` after `history`.
    pub fn explain_in(
        &self,
        request: &ToolRequest,
        facts: &Facts,
        who: Option<&Principal>,
        history: &History,
    ) -> (Decision, Vec<RuleTrace>) {
        let mut trace = Vec::new();
        let decision = self.evaluate(request, facts, who, history, Some(&mut trace));
        (decision, trace)
    }

    /// The ids of this policy's own rules that match `request` on `facts`,
    /// in order: no floor, no layers, no default, whatever their action.
    /// Pure. `policy suggest` checks with it that a proposed rule covers
    /// none of the calls it must not.
    pub fn matching_rules(&self, request: &ToolRequest, facts: &Facts) -> Vec<&str> {
        let labels = self.labels_of(request, facts, None);
        let at = At {
            labels: &labels,
            ..At::none()
        };
        self.rules
            .iter()
            .filter(|rule| rule.matches(request, facts, &at).is_ok())
            .map(|rule| rule.id.as_str())
            .collect()
    }

    /// The labels the `[[labels]]` entries of the layers above and of this
    /// policy give `request` made by `who`, in their order, each once.
    pub fn labels_of(
        &self,
        request: &ToolRequest,
        facts: &Facts,
        who: Option<&Principal>,
    ) -> Vec<String> {
        let at = At { who, ..At::none() };
        let mut labels: Vec<String> = Vec::new();
        let entries = self.above.iter().map(|l| &l.policy).chain([self]);
        for rule in entries.flat_map(|p| &p.label_rules) {
            if rule.matches(request, facts, &at).is_ok() {
                add_labels(&mut labels, &rule.labels);
            }
        }
        labels
    }

    /// The approvers the first `[[labels]]` entry (of the layers above,
    /// then this policy) that holds for `request` and names them requires.
    fn label_approvers(
        &self,
        request: &ToolRequest,
        facts: &Facts,
        at: &At<'_>,
    ) -> Option<Approvers> {
        let entries = self.above.iter().map(|l| &l.policy).chain([self]);
        entries
            .flat_map(|p| &p.label_rules)
            .filter(|rule| rule.approvers.is_some())
            .find(|rule| rule.matches(request, facts, at).is_ok())
            .and_then(|rule| rule.approvers.clone())
    }

    /// The stricter of the deciding rule's approvers and a label's: the larger
    /// quorum, then the fewer kinds of factor; the label's on a tie (a label
    /// of a layer above is how a team requires approvers a project's rule
    /// cannot remove).
    fn stricter(rule: Option<Approvers>, label: Option<Approvers>) -> Option<Approvers> {
        match (rule, label) {
            (Some(rule), Some(label)) => {
                let weight = |a: &Approvers| (a.quorum, std::cmp::Reverse(a.factor_count()));
                Some(if weight(&rule) > weight(&label) {
                    rule
                } else {
                    label
                })
            }
            (rule, label) => label.or(rule),
        }
    }

    /// Whether a rule of this policy or of a layer above reads the
    /// session's history (`after`, `not_after`): only then is it read.
    pub fn reads_history(&self) -> bool {
        !self.history_labels().is_empty()
    }

    /// The labels the `after` and `not_after` conditions of this policy and
    /// the layers above read, each once: all a session's history needs.
    pub fn history_labels(&self) -> Vec<String> {
        let mut labels = Vec::new();
        let rules = self.above.iter().map(|l| &l.policy).chain([self]);
        for flow in rules.flat_map(|p| &p.rules).filter_map(|r| r.flow.as_ref()) {
            add_labels(&mut labels, &flow.after);
            add_labels(&mut labels, &flow.not_after);
        }
        labels
    }

    fn evaluate(
        &self,
        request: &ToolRequest,
        facts: &Facts,
        who: Option<&Principal>,
        history: &History,
        mut trace: Option<&mut Vec<RuleTrace>>,
    ) -> Decision {
        if let Some(problem) = request
            .schema_problem()
            .or_else(|| invalid_arguments(request))
            .or_else(|| facts.shell.as_ref().and_then(|s| s.unjudgeable.clone()))
        {
            return self.decision(Action::Deny, INVALID_ARGUMENTS, problem);
        }
        let labels = self.labels_of(request, facts, who);
        let at = At {
            who,
            history,
            labels: &labels,
        };
        // The floor sits above every policy and layer: its deny is final,
        // its ask yields only to a deny.
        let floor = floor::held(self, request, facts, &at, trace.as_deref_mut());
        let mut decision = match floor {
            Some(floor) if floor.action == Action::Deny => floor,
            floor => {
                let decision = if self.above.is_empty() {
                    self.first_match(request, facts, &at, trace, None)
                        .unwrap_or_else(|| self.unmatched(request))
                } else {
                    layered::decide(self, request, facts, &at, trace)
                };
                match floor {
                    Some(floor) if floor.action >= decision.action => floor,
                    _ => decision,
                }
            }
        };
        if decision.action == Action::Ask {
            let by_label = self.label_approvers(request, facts, &at);
            decision.approvers = Self::stricter(decision.approvers.take(), by_label);
        }
        let own = std::mem::replace(&mut decision.labels, labels);
        add_labels(&mut decision.labels, &own);
        decision
    }

    /// The decision of the first rule that matches, if one does. `layer`
    /// names the rules' layer in the trace.
    fn first_match(
        &self,
        request: &ToolRequest,
        facts: &Facts,
        at: &At<'_>,
        mut trace: Option<&mut Vec<RuleTrace>>,
        layer: Option<&str>,
    ) -> Option<Decision> {
        for rule in &self.rules {
            let outcome = rule.matches(request, facts, at);
            if let Some(trace) = trace.as_deref_mut() {
                trace.push(RuleTrace {
                    rule_id: rule.id.clone(),
                    matched: outcome.is_ok(),
                    detail: match &outcome {
                        Ok(_) => "all conditions hold".to_owned(),
                        Err(miss) => miss.describe(rule, request, facts, at),
                    },
                    layer: layer.map(str::to_owned),
                });
            }
            if let Some(problem) = rule.broken() {
                let reason = format!(
                    "rule `{}` cannot be applied: {problem}; `gavel policy check` names it",
                    rule.id
                );
                return Some(self.decision(Action::Deny, DEFAULT_DENY, reason));
            }
            if let Ok(after) = outcome {
                let reason = rule.reason(request, facts, after.as_ref());
                let mut decision = self.decision(rule.action, &rule.id, reason);
                if rule.action == Action::Allow
                    && let Some(name) = &rule.sandbox
                {
                    decision.sandbox = self.sandbox_record(name, request);
                }
                decision.labels = rule.labels.clone();
                decision.after = after;
                decision.approvers = rule.approvers.clone();
                return Some(decision);
            }
        }
        None
    }

    /// The decision when no rule matched: a deny.
    fn unmatched(&self, request: &ToolRequest) -> Decision {
        let reason = format!("no permission rule matched tool `{}`", request.name);
        self.decision(Action::Deny, DEFAULT_DENY, reason)
    }

    fn decision(&self, action: Action, rule_id: &str, reason: String) -> Decision {
        Decision::new(action, rule_id, reason, self.reference.clone())
    }

    /// The spec of the profile `name`: built in, or this policy's own.
    pub fn sandbox_profile(&self, name: &str) -> Option<crate::sandbox::Spec> {
        crate::sandbox::Spec::builtin(name).or_else(|| self.profiles.get(name).cloned())
    }

    /// What an allow whose sandbox the kernel cannot enforce becomes: the
    /// strictest `[sandbox] unenforceable` of this policy and the layers
    /// above it.
    pub fn sandbox_unenforceable(&self) -> Action {
        self.above
            .iter()
            .map(|l| l.policy.unenforceable)
            .fold(self.unenforceable, Action::max)
    }

    /// The policy's own `[sandbox.profiles]`, by name.
    pub fn sandbox_profiles(&self) -> &std::collections::BTreeMap<String, crate::sandbox::Spec> {
        &self.profiles
    }

    /// The record of profile `name` for `request` (checked to exist when
    /// the policy loaded).
    fn sandbox_record(
        &self,
        name: &str,
        request: &ToolRequest,
    ) -> Option<crate::sandbox::SandboxRecord> {
        let spec = self.sandbox_profile(name)?;
        let command = (request.name == "bash")
            .then(|| request.str_arg("command"))
            .flatten();
        Some(crate::sandbox::SandboxRecord::new(name, &spec, command))
    }
}

/// Adds to `labels` those of `more` it does not hold yet.
pub(super) fn add_labels(labels: &mut Vec<String>, more: &[String]) {
    for label in more {
        if !labels.contains(label) {
            labels.push(label.clone());
        }
    }
}

/// Says why a request's arguments cannot be judged, if they cannot.
fn invalid_arguments(request: &ToolRequest) -> Option<String> {
    let Value::Object(arguments) = &request.arguments else {
        return Some(format!(
            "arguments of `{}` must be a JSON object, got {}",
            request.name,
            json_kind(&request.arguments)
        ));
    };
    if request.name == "apply_patch" {
        // Judged by the files it touches: it must name at least one, and
        // every entry must be a path.
        return match arguments.get("paths") {
            Some(Value::Array(paths))
                if !paths.is_empty()
                    && paths
                        .iter()
                        .all(|p| p.as_str().is_some_and(|s| !s.is_empty())) =>
            {
                None
            }
            _ => Some(
                "`apply_patch` requires `paths`, a non-empty list of the files it touches"
                    .to_owned(),
            ),
        };
    }
    let field = match request.name.as_str() {
        "bash" => "command",
        tool => path_argument(tool)?,
    };
    match arguments.get(field) {
        // Bash's blanks are space, tab and newline: a command of only those
        // runs nothing and cannot be judged.
        Some(Value::String(s))
            if request.name == "bash" && s.trim_matches([' ', '\t', '\n']).is_empty() =>
        {
            Some("`bash` requires a `command` with at least one word".to_owned())
        }
        Some(Value::String(s)) if !s.is_empty() => None,
        _ => Some(format!(
            "`{}` requires a non-empty string `{field}`",
            request.name
        )),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;

/// Reads a wait such as `60s`, `5m`, `1h`, `90` (seconds) or `500ms`: more
/// than zero, at most a week.
pub fn parse_wait(text: &str) -> Result<std::time::Duration, String> {
    use std::time::Duration;
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as 60s, 5m or 1h"))?;
    let duration = match unit {
        "" | "s" => Duration::from_secs(n),
        "ms" => Duration::from_millis(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        _ => return Err(format!("`{text}` is not a duration such as 60s, 5m or 1h")),
    };
    if duration.is_zero() || duration > Duration::from_secs(7 * 24 * 3600) {
        return Err(format!(
            "`{text}`: a wait is more than zero and at most a week"
        ));
    }
    Ok(duration)
}
