//! A recorded call as the learner sees it: its shape on each rung of the
//! ladder, with the volatile tokens of a command (temporary paths, hashes,
//! process ids, timestamps, UUIDs) abstracted, and what keeps it from being
//! learned at all (anything a grant would not cover either: an unprovable
//! command, a write by redirection, a path outside the workspace, a program
//! named by a path or run with variables set).
//!
//! Pure: a request and its recorded facts in, a shape out.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::facts::Facts;
use crate::shell::{SimpleCommand, operands, programs};

use super::floor;

/// A placeholder for an abstracted token, as it appears in an exact key:
/// bracketed by NUL, which no shell word can hold.
const MARK: char = '\u{0}';

/// The kinds of volatile token, their placeholder and the regex an exact
/// rule matches them with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Volatile {
    /// A path under a temporary folder, whole: it lies outside the
    /// workspace, so no exact rule is ever written for it (its regex
    /// matches nothing).
    TempDir,
    /// A `mktemp` name, `tmp.XXXXXX`.
    Temp,
    Uuid,
    Time,
    Hex,
    Number,
}

impl Volatile {
    fn name(self) -> &'static str {
        match self {
            Volatile::TempDir => "tmpdir",
            Volatile::Temp => "tmp",
            Volatile::Uuid => "uuid",
            Volatile::Time => "time",
            Volatile::Hex => "hex",
            Volatile::Number => "n",
        }
    }

    fn regex(self) -> &'static str {
        match self {
            Volatile::TempDir => "[^\\s\\S]",
            Volatile::Temp => "tmp[.][A-Za-z0-9]{6,}",
            Volatile::Uuid => {
                "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
            }
            Volatile::Time => "[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9:.]+(?:Z|[+-][0-9:]+)?)?",
            Volatile::Hex => "[0-9a-f]{7,64}",
            Volatile::Number => "[0-9]{3,}",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        [
            Volatile::TempDir,
            Volatile::Temp,
            Volatile::Uuid,
            Volatile::Time,
            Volatile::Hex,
            Volatile::Number,
        ]
        .into_iter()
        .find(|v| v.name() == name)
    }
}

static VOLATILE: LazyLock<Regex> = LazyLock::new(|| {
    // One alternation, tried left to right at each place: the longest
    // shapes first. Compiled from constants: it always compiles.
    Regex::new(concat!(
        r"(?P<tmpdir>^(?:/tmp|/var/tmp|/private/var/folders|/var/folders)/.*)",
        r"|(?P<tmp>\btmp\.[A-Za-z0-9]{6,}\b)",
        r"|(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)",
        r"|(?P<time>\b[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9:.]+(?:Z|[+-][0-9:]+)?)?)",
        r"|(?P<hex>\b[0-9a-f]{7,64}\b)",
        r"|(?P<n>\b[0-9]{3,}\b)",
    ))
    .expect("the volatile-token regex is a constant")
});

/// `token` with its volatile parts replaced by placeholders: a temporary
/// path (a token under `/tmp`, `/var/tmp`, macOS's `/var/folders`, or a
/// `mktemp` name `tmp.XXXXXX`), a UUID, a date or timestamp, a hash (a run
/// of hex digits counts as one only with a digit and a letter in it:
/// `deadbeef` and `1234567` are not hashes), a number of three digits or
/// more (a PID, a port, an epoch time).
pub fn abstract_token(token: &str) -> String {
    let mut out = String::with_capacity(token.len());
    let mut last = 0;
    for found in VOLATILE.captures_iter(token) {
        let Some(whole) = found.get(0) else { continue };
        let kind = if found.name("tmpdir").is_some() {
            Volatile::TempDir
        } else if found.name("tmp").is_some() {
            Volatile::Temp
        } else if found.name("uuid").is_some() {
            Volatile::Uuid
        } else if found.name("time").is_some() {
            Volatile::Time
        } else if found.name("hex").is_some() {
            let text = whole.as_str();
            if !(text.bytes().any(|b| b.is_ascii_digit())
                && text.bytes().any(|b| b.is_ascii_alphabetic()))
            {
                continue;
            }
            Volatile::Hex
        } else {
            Volatile::Number
        };
        out.push_str(&token[last..whole.start()]);
        out.push(MARK);
        out.push_str(kind.name());
        out.push(MARK);
        last = whole.end();
    }
    out.push_str(&token[last..]);
    out
}

/// An exact key as people read it: placeholders as `<hex>`, `<n>`, ...
pub fn shown(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for (i, part) in key.split(MARK).enumerate() {
        if i % 2 == 1 {
            out.push('<');
            out.push_str(part);
            out.push('>');
        } else {
            out.push_str(part);
        }
    }
    out
}

/// The regex an exact rule matches a command's whole text with: its
/// tokens, literal or abstracted, separated by blanks.
pub fn exact_regex(key: &str) -> String {
    let tokens: Vec<String> = key
        .split(' ')
        .filter(|t| !t.is_empty())
        .map(|token| {
            let mut out = String::new();
            for (i, part) in token.split(MARK).enumerate() {
                if i % 2 == 1 {
                    let kind = Volatile::from_name(part).map_or("[^\\s]+", Volatile::regex);
                    out.push_str(&format!("(?:{kind})"));
                } else {
                    out.push_str(&regex::escape(part));
                }
            }
            out
        })
        .collect();
    format!("^\\s*{}\\s*$", tokens.join("\\s+"))
}

/// One simple command as a rule can name it: its program and subcommand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub program: String,
    pub subcommand: Option<String>,
    /// `program` or `program subcommand`: what a `command_prefix` entry names.
    pub key: String,
    /// Why no rule may be proposed for it ([`floor::refuses`]).
    pub floor: Option<String>,
    /// The argument that makes this very use destructive (`--force` of
    /// `git push --force`).
    pub destructive: Option<String>,
    /// Whether gavel's model of the program proves this use a read.
    pub read_only: bool,
}

impl Command {
    /// The words a `command_prefix` entry for it holds.
    pub fn prefix(&self) -> Vec<String> {
        let mut words = vec![self.program.clone()];
        words.extend(self.subcommand.clone());
        words
    }
}

/// Programs without subcommands whose first argument looks like one
/// (`eslint src`, `pytest tests`): the word is an operand.
const NO_SUBCOMMAND: &[&str] = &[
    "pytest",
    "eslint",
    "prettier",
    "tsc",
    "jest",
    "vitest",
    "mypy",
    "black",
    "flake8",
    "pylint",
    "isort",
    "rustfmt",
    "shellcheck",
    "hadolint",
    "gcc",
    "g++",
    "clang",
    "clang++",
    "cc",
    "c++",
    "rustc",
    "javac",
    "mkdir",
    "touch",
    "cp",
    "mv",
    "ln",
    "tee",
    "curl",
    "wget",
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "xz",
    "patch",
    "open",
    "xdg-open",
    "code",
    "sleep",
    "install",
    "ctest",
    "meson",
    "ninja",
    "tox",
    "nox",
    "coverage",
    "bandit",
    "golangci-lint",
    "staticcheck",
    "clippy-driver",
];

/// Whether `word` reads as a subcommand: a short lowercase word, not an
/// option, a path, a file name or a number.
fn looks_like_subcommand(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && word.len() <= 32
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// The command as a rule names it.
pub fn command(simple: &SimpleCommand) -> Command {
    let words = programs::canonical(&simple.words).unwrap_or_else(|| simple.words.clone());
    let program = words.first().cloned().unwrap_or_default();
    let first = words.get(1).map(String::as_str);
    let modelled = programs::is_modelled(std::slice::from_ref(&program));
    let subcommand = match first {
        Some(word) if floor::SUBCOMMAND_PROGRAMS.contains(&program.as_str()) => {
            looks_like_subcommand(word).then(|| word.to_owned())
        }
        Some(word)
            if !modelled
                && !NO_SUBCOMMAND.contains(&program.as_str())
                && looks_like_subcommand(word) =>
        {
            Some(word.to_owned())
        }
        _ => None,
    };
    let args_after = &words[(1 + usize::from(subcommand.is_some())).min(words.len())..];
    let floor = floor::refuses(&program, subcommand.as_deref());
    let destructive =
        floor::destructive_argument(&program, subcommand.as_deref(), args_after).map(str::to_owned);
    let read_only = programs::read(simple).is_some_and(|r| r.hazards.is_empty());
    let key = match &subcommand {
        Some(sub) => format!("{program} {sub}"),
        None => program.clone(),
    };
    Command {
        program,
        subcommand,
        key,
        floor,
        destructive,
        read_only,
    }
}

/// A `bash` call's shape.
#[derive(Debug, Clone)]
pub struct Bash {
    /// The command's tokens, volatile parts abstracted, joined by one blank:
    /// the exact rung's key.
    pub exact: String,
    /// The words of each simple command, volatile parts abstracted and the
    /// options sorted: two calls that differ only in the order of their
    /// options, or in a hash, are one variant.
    pub variant: String,
    pub commands: Vec<Command>,
    /// Whether the call names a path a `path_scope` rule can judge.
    pub has_paths: bool,
}

impl Bash {
    /// The program-and-subcommand rung's key: every command's key, sorted, once.
    pub fn group(&self) -> String {
        let mut keys: Vec<&str> = self.commands.iter().map(|c| c.key.as_str()).collect();
        keys.sort_unstable();
        keys.dedup();
        keys.join(" + ")
    }
}

/// A call's shape on the ladder.
#[derive(Debug, Clone)]
pub enum Shape {
    Bash(Bash),
    /// A tool whose paths the facts resolve (a file tool, or an MCP tool
    /// with declared path arguments): its workspace-relative paths.
    Paths {
        paths: Vec<String>,
    },
    /// An MCP server's tool: its arguments, volatile parts abstracted, as
    /// one variant.
    Tool {
        variant: String,
    },
}

/// What keeps a call from being learned, if anything, else its shape.
pub fn of(tool: &str, arguments: &Value, facts: &Facts) -> Result<Shape, String> {
    if tool == "bash" {
        return bash(arguments, facts).map(Shape::Bash);
    }
    if !facts.paths.is_empty() {
        let mut paths = Vec::new();
        for path in &facts.paths {
            let relative = match (&path.relative, path.inside, &path.error) {
                (Some(relative), true, None) => relative.clone(),
                _ => {
                    return Err(format!(
                        "`{}` is outside the workspace or unresolved",
                        path.requested
                    ));
                }
            };
            if floor::protected_path(&relative) {
                return Err(format!("`{relative}` is gavel's or git's own file"));
            }
            if !paths.contains(&relative) {
                paths.push(relative);
            }
        }
        paths.sort();
        return Ok(Shape::Paths { paths });
    }
    if tool.starts_with(crate::approvals::grants::MCP_TOOL_PREFIX)
        && crate::mcp::names::split_tool_name(tool).is_some()
    {
        let variant = abstract_json(arguments);
        return Ok(Shape::Tool { variant });
    }
    Err(format!(
        "no rung of the ladder names `{tool}` calls (bash, a tool with paths, an MCP tool)"
    ))
}

/// The JSON of `value` with every string's volatile parts abstracted.
fn abstract_json(value: &Value) -> String {
    fn walk(value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(shown(&abstract_token(s))),
            Value::Array(items) => Value::Array(items.iter().map(walk).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), walk(v)))
                    .collect::<serde_json::Map<_, _>>(),
            ),
            other => other.clone(),
        }
    }
    walk(value).to_string()
}

fn bash(arguments: &Value, facts: &Facts) -> Result<Bash, String> {
    let Some(text) = arguments.get("command").and_then(Value::as_str) else {
        return Err("the call has no command".into());
    };
    let Some(shell) = &facts.shell else {
        return Err("the command was not parsed".into());
    };
    if facts.shell_sha256.is_some() {
        return Err("the command is too long to be proven".into());
    }
    let unproven = crate::policy::unproven(facts);
    if !unproven.is_empty() || shell.unjudgeable.is_some() {
        return Err(format!(
            "the command cannot be proven ({})",
            unproven.join("; ")
        ));
    }
    if shell.commands.is_empty() {
        return Err("the command runs nothing".into());
    }
    if shell
        .all_redirects()
        .any(|r| r.writes() && !operands::is_harmless_target(&r.target))
    {
        return Err("the command writes a file by redirection".into());
    }
    for command in &shell.commands {
        if !command.assignments.is_empty() {
            return Err(format!(
                "`{}` is run with variables set for it",
                command.program()
            ));
        }
        if let Some(path) = &command.path {
            return Err(format!("the program is named by a path (`{path}`)"));
        }
        if operands::operands(command)
            .iter()
            .any(|o| o.writes && !operands::is_harmless_target(&o.path))
        {
            return Err(format!("`{}` writes a file it names", command.program()));
        }
    }
    if let Some(path) = facts.paths.iter().find(|p| !p.inside || p.error.is_some()) {
        return Err(format!(
            "`{}` lies outside the workspace or is unresolved",
            path.requested
        ));
    }
    if let Some(path) = facts
        .paths
        .iter()
        .filter_map(|p| p.relative.as_deref())
        .find(|r| floor::protected_path(r))
    {
        return Err(format!("`{path}` is gavel's or git's own file"));
    }
    let exact: Vec<String> = text.split_whitespace().map(abstract_token).collect();
    let commands: Vec<Command> = shell.commands.iter().map(command).collect();
    let variant: Vec<String> = shell
        .commands
        .iter()
        .zip(&commands)
        .map(|(simple, command)| {
            let skip = 1 + usize::from(command.subcommand.is_some());
            let mut rest: Vec<String> = simple
                .words
                .iter()
                .skip(skip)
                .map(|w| abstract_token(w))
                .collect();
            rest.sort();
            let mut words = command.prefix();
            words.extend(rest);
            words.join(" ")
        })
        .collect();
    Ok(Bash {
        exact: exact.join(" "),
        variant: variant.join(" ; "),
        commands,
        has_paths: !facts.paths.is_empty(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volatile_tokens_are_abstracted_and_matched_back() {
        let key = [
            "git",
            "show",
            "3f2a9c1",
            "--since=2026-01-02T10:00:00Z",
            "kill",
            "12345",
            "deadbeef",
            "5",
        ]
        .map(abstract_token)
        .join(" ");
        assert_eq!(
            shown(&key),
            "git show <hex> --since=<time> kill <n> deadbeef 5"
        );
        let regex = Regex::new(&exact_regex(&key)).unwrap();
        assert!(
            regex.is_match("git show 9e8d7c6b --since=2025-12-31T00:00:00Z kill 999 deadbeef 5")
        );
        assert!(!regex.is_match("git show 9e8d7c6b --since=x kill 999 deadbeef 5"));
        assert!(!regex.is_match("git show 9e8d7c6b --since=2025-12-31 kill 999 deadbeef 5; rm x"));
        let uuid = abstract_token("run-0b1f9c52-6a0e-4d7e-9a43-2f3c1b7d8e90.log");
        assert_eq!(shown(&uuid), "run-<uuid>.log");
        assert_eq!(shown(&abstract_token("/tmp/build-1/out.txt")), "<tmpdir>");
        let key = abstract_token("/tmp/build-1/out.txt");
        assert!(
            !Regex::new(&exact_regex(&key))
                .unwrap()
                .is_match("/tmp/build-1/out.txt")
        );
        assert_eq!(
            shown(&abstract_token("out/tmp.Xa81bC/log")),
            "out/<tmp>/log"
        );
        let key = ["cat", "out/tmp.Xa81bC/log"].map(abstract_token).join(" ");
        let regex = Regex::new(&exact_regex(&key)).unwrap();
        assert!(regex.is_match("cat out/tmp.Q0wErTy/log"));
        assert!(!regex.is_match("cat out/tmp.Q0wErTy/../../x"));
    }

    #[test]
    fn subcommands_are_read_where_a_program_has_them() {
        let simple = |words: &[&str]| SimpleCommand {
            words: words.iter().map(|w| (*w).to_owned()).collect(),
            redirects: Vec::new(),
            assignments: Vec::new(),
            path: None,
        };
        let c = command(&simple(&["git", "-C", "sub", "push", "--force"]));
        assert_eq!(c.key, "git push");
        assert_eq!(c.destructive.as_deref(), Some("--force"));
        let c = command(&simple(&["cargo", "test", "--release"]));
        assert_eq!((c.key.as_str(), c.floor.is_none()), ("cargo test", true));
        assert!(!c.read_only);
        let c = command(&simple(&["cargo", "--version"]));
        assert!(c.floor.is_some(), "a bare program with subcommands");
        let c = command(&simple(&["pytest", "tests"]));
        assert_eq!(c.key, "pytest");
        let c = command(&simple(&["ls", "src"]));
        assert_eq!((c.key.as_str(), c.read_only), ("ls", true));
        let c = command(&simple(&["make", "build"]));
        assert_eq!(c.key, "make build");
        let c = command(&simple(&["python3", "-c", "print(1)"]));
        assert!(c.floor.is_some());
    }
}
