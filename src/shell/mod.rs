//! Turning a `bash` command string into the simple commands it would run.
//!
//! This module owns the reading of shell syntax: it parses a script with
//! tree-sitter-bash, walks every statement (lists, pipelines, subshells,
//! groups, loops, conditionals, functions, substitutions, `sh -c` scripts),
//! removes quotes and escapes from words, strips wrappers such as `env`,
//! `nice` or `timeout` that only run their arguments, and names everything it
//! could not prove (substitutions, `eval`, variable command names, parse
//! errors) in [`CommandAnalysis::unprovable`].
//!
//! An allow must rest on what bash itself would run, so every script is
//! read twice: by the tree-sitter walk (`walk.rs`), whose error recovery
//! keeps the deny and ask side seeing commands even in broken scripts, and
//! by a strict reader written from bash's own definitions (`strict.rs`)
//! that accepts only a small subset it models exactly. Anything outside
//! that subset, and any difference between the two readings, is named in
//! [`CommandAnalysis::unprovable`]; where they differ, bash's reading is
//! added to the commands so that deny rules see it. Where tree-sitter hides
//! commands (substitutions inside `${...}`, backticks in heredoc bodies,
//! `$((cmd) )`, nested backticks, `coproc`, a heredoc that ends earlier for
//! bash), the walk reads the hidden text again as a script, bounded by
//! [`MAX_NESTING`] and linear in the input overall. A `for` loop over
//! literal words and globs is read by both once per word, with the word
//! in place of its variable (`loops.rs`), within bounds of its own.
//!
//! It must not know about policies, rules, approvals or the filesystem: it
//! does no I/O, reads no clock and no environment, and decides nothing. It
//! describes; the policy engine judges. It is also not a sandbox: aliases,
//! functions defined elsewhere, `PATH` tricks and interpreters such as
//! `python -c` are out of its reach (see `docs/shell.md`).

use serde::{Deserialize, Serialize};

mod loops;
pub mod operands;
pub mod programs;
mod strict;
mod walk;
mod word;
mod wrappers;

pub use wrappers::XARGS_INPUT;
pub(crate) use wrappers::{BASH_BUILTINS, RESERVED};

#[cfg(test)]
mod tests;

/// How deeply `bash -c`, `sh -c` and `eval` scripts (and text read again
/// as a script: hidden substitutions, `coproc` bodies, the text after a
/// heredoc's real end) are analysed inside one another; a script nested
/// deeper is reported as unprovable.
pub const MAX_NESTING: usize = 8;

/// What a command string would run, as far as can be proven from its text.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CommandAnalysis {
    /// Every simple command found, in source order, including those inside
    /// command/process substitutions and inside `bash|sh|zsh -c` scripts (recursively).
    pub commands: Vec<SimpleCommand>,
    /// Human phrases naming what could not be proven, e.g. "command substitution `$(curl x)`",
    /// "eval", "source", "command name is a variable `$CMD`", "parse error near ...". Empty = fully understood.
    pub unprovable: Vec<String>,
    /// Redirections that belong to no simple command: a redirection
    /// standing alone (`> f`), or one on a construct that is not a command
    /// (`[[ x ]] > f`, `((1)) > f`, `x=1 > f`, a function definition, a
    /// compound command with no command inside). Bash still opens, creates
    /// or truncates their targets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bare_redirects: Vec<Redirect>,
    /// Why the command cannot be judged at all, if it cannot: its
    /// substitutions nest deeper than bash itself can parse (more than
    /// 8,192 levels; bash crashes on 2,000). The reading stops there, and
    /// the policy denies the request as `request.invalid_arguments`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unjudgeable: Option<String>,
}

impl CommandAnalysis {
    /// Every redirection of the script: those of each simple command, then
    /// the bare ones.
    pub fn all_redirects(&self) -> impl Iterator<Item = &Redirect> {
        self.commands
            .iter()
            .flat_map(|c| &c.redirects)
            .chain(&self.bare_redirects)
    }
}

/// One simple command: a program and its arguments, plus file redirections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimpleCommand {
    /// Words after quote and escape removal, wrappers stripped; `words[0]` is the program
    /// by its name (`/usr/bin/sudo` -> `sudo`, `\rm` -> `rm`). Never empty.
    pub words: Vec<String>,
    /// File redirections attached to this command (`>`, `>>`, `>|`, `<`, `&>`, `&>>`, `<>`, with optional fd);
    /// fd duplications like `2>&1` and heredocs are not listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirects: Vec<Redirect>,
    /// Variables set for this command alone (`FOO=1 cmd`, `env FOO=1 cmd`),
    /// by name: `PATH=... ls` may not run `ls` at all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assignments: Vec<String>,
    /// The program as written when it was a path (`./ls`, `/usr/bin/sudo`):
    /// `words[0]` names it, but which file runs depends on the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl SimpleCommand {
    /// The program's name (`words[0]`); empty only if `words` was built empty
    /// by hand, which [`analyze`] never does.
    pub fn program(&self) -> &str {
        self.words.first().map_or("", String::as_str)
    }

    /// The arguments after the program.
    pub fn args(&self) -> &[String] {
        self.words.get(1..).unwrap_or(&[])
    }
}

/// A file redirection such as `> out.txt` or `2>> err.log`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redirect {
    /// The operator as written, with its file descriptor if one was given
    /// (`>`, `2>>`, `&>`, `<`, `<>`, `>|`, `>&` followed by a file name).
    pub op: String,
    /// The file, after quote and escape removal (expansions kept as text).
    pub target: String,
}

impl Redirect {
    /// True when the redirection may write or create its target: every
    /// operator except a plain input `<` (with or without a descriptor).
    pub fn writes(&self) -> bool {
        self.op.trim_start_matches(|c: char| c.is_ascii_digit()) != "<"
    }
}

/// Parses `script` as bash and lists the simple commands it would run.
///
/// Never panics and never recurses without bound, whatever the input: parse
/// errors are reported in [`CommandAnalysis::unprovable`] together with the
/// commands that could be recovered.
pub fn analyze(script: &str) -> CommandAnalysis {
    walk::analyze_nested(script, 0)
}
