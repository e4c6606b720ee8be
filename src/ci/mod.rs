//! What CI systems read: the outcome of a command a pull request is gated
//! on (`replay`, `policy test`, `policy lint`, `policy diff`, `verify`) as
//! JUnit XML ([`junit`]: one test case per call, case or finding), SARIF
//! 2.1.0 ([`sarif`]: results placed in the policy file at the rule's line)
//! or GitHub Actions workflow commands ([`github`]: `::error file=…,line=…::`).
//!
//! A command's findings become a [`Report`] of [`Check`]s ([`gates`]), each
//! with a [`Level`]: [`Level::Error`] exactly where the command's gate
//! fails (where it exits 1), warnings and notes where it reports without
//! failing, passes for the rest. Each format writes the same report.
//!
//! Pure: values in, text out. The caller gives the time, the host name and
//! the folder paths are shown relative to ([`Run`], which [`Run::here`]
//! reads from the machine); nothing else here reads the clock, the
//! environment or a file, and nothing knows the command line.

mod gates;
pub mod github;
pub mod junit;
pub mod sarif;

use std::path::{Path, PathBuf};

#[cfg(feature = "postgres")]
pub use gates::verify_central;
pub use gates::{CaseResult, Sites, change_word, diff, lint, policy_test, replay, verify};

/// A format a CI system reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JUnit XML (Jenkins, GitLab, most CI test views).
    Junit,
    /// SARIF 2.1.0 (GitHub code scanning, other static-analysis viewers).
    Sarif,
    /// GitHub Actions workflow commands: annotations on the pull request.
    Github,
}

/// How a check came out, ordered by severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Checked and fine: a test case that passed; no SARIF result, no annotation.
    Pass,
    /// Worth knowing, never failing.
    Note,
    /// Reported, but the gate does not fail on it (as the command is run).
    Warning,
    /// The gate fails here: the command exits 1 because of it.
    Error,
}

impl Level {
    /// SARIF's name (`none` for a pass), which GitHub's `notice`,
    /// `warning` and `error` commands follow.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Pass => "none",
            Level::Note => "note",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// A place in a file: the policy file and the line a rule begins on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The path as given (relative paths stay relative).
    pub file: String,
    /// From 1; `None` for the file as a whole.
    pub line: Option<usize>,
}

/// One check: a call replayed, a case run, a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked, for a person: the test case's name.
    pub name: String,
    /// What kind of check it is, one of [`KINDS`]: SARIF's rule id and
    /// JUnit's class name (`gavel.` before it).
    pub kind: &'static str,
    pub level: Level,
    /// What was found, on one line.
    pub message: String,
    pub site: Option<Site>,
}

/// Every kind of check, with what it means (SARIF's rule descriptions).
pub const KINDS: &[(&str, &str)] = &[
    (
        "replay.unchanged",
        "A recorded call is decided as it was recorded",
    ),
    (
        "replay.loosened",
        "A recorded call is decided less strictly under the policy now",
    ),
    (
        "replay.tightened",
        "A recorded call is decided more strictly under the policy now",
    ),
    (
        "replay.rerouted",
        "A recorded call gets the same action from another rule",
    ),
    (
        "replay.undecidable",
        "A recorded call decides differently but cannot be re-decided exactly: a field the policy reads was stored redacted",
    ),
    (
        "test.case",
        "A policy test case: a request and the decision expected of it",
    ),
    (
        "lint.unconditional_allow",
        "An allow rule with no tools and no conditions allows every call",
    ),
    (
        "lint.shadowed",
        "A rule that can never decide: an earlier rule matches every call it matches",
    ),
    (
        "lint.unscoped_shell_allow",
        "A bash allow rule that lets commands reach outside the workspace",
    ),
    (
        "lint.unmodelled_program",
        "A bash allow rule naming a program gavel has no model of",
    ),
    (
        "lint.never_matched",
        "A rule that decided none of the recorded calls",
    ),
    ("diff.rule", "A rule changed between the two policies"),
    (
        "diff.sample",
        "A generated request decides differently under the two policies",
    ),
    (
        "diff.call",
        "A recorded call decides differently under the two policies",
    ),
    (
        "verify.identity",
        "The log's identity and record format are what its genesis says",
    ),
    (
        "verify.chain",
        "Every row is in its place, unedited, and chained to the one before",
    ),
    (
        "verify.checkpoints",
        "Every checkpoint is signed, names this log, and still matches it",
    ),
];

/// What a command found, as checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The command, as the suite's name: `replay`, `policy test`, ...
    pub command: &'static str,
    /// Facts about the run (the policy's name and digest, the log), as
    /// JUnit properties.
    pub properties: Vec<(String, String)>,
    pub checks: Vec<Check>,
}

/// Where and when the report is written.
#[derive(Debug, Clone)]
pub struct Run {
    /// gavel's version.
    pub version: String,
    /// When the command ran, UTC, `YYYY-MM-DDTHH:MM:SS` (JUnit's form).
    pub timestamp: String,
    pub hostname: String,
    /// How long the command took.
    pub seconds: f64,
    /// Paths under this folder are shown relative to it (a CI job runs at
    /// the repository's root, and annotations name files from there).
    pub base: Option<PathBuf>,
}

impl Run {
    /// This run, of a command started at `started`: now, this host, this
    /// gavel, paths relative to the current folder. The one place this
    /// module reads the clock and the machine.
    pub fn here(started: std::time::Instant) -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            timestamp: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S").to_string(),
            hostname: crate::principal::Principal::current("cli").host,
            seconds: started.elapsed().as_secs_f64(),
            base: std::env::current_dir().ok(),
        }
    }
}

impl Report {
    pub fn new(command: &'static str) -> Self {
        Self {
            command,
            properties: Vec::new(),
            checks: Vec::new(),
        }
    }

    /// A report of a command run under `policy`: its name, digest and file
    /// as properties.
    pub fn for_policy(command: &'static str, policy: &crate::policy::Policy) -> Self {
        let mut report = Self::new(command);
        report.properties = vec![
            ("policy".to_owned(), policy.reference().name.clone()),
            (
                "policy.sha256".to_owned(),
                policy.reference().digest.clone(),
            ),
            ("policy.file".to_owned(), policy.origin().to_owned()),
        ];
        report
    }

    /// Whether the gate fails: some check is an error.
    pub fn fails(&self) -> bool {
        self.checks.iter().any(|c| c.level == Level::Error)
    }

    /// The report in `format`, ending with a newline.
    pub fn render(&self, format: Format, run: &Run) -> String {
        match format {
            Format::Junit => junit::render(self, run),
            Format::Sarif => sarif::render(self, run),
            Format::Github => github::render(self, run),
        }
    }
}

/// What kind `kind` is, in words.
pub fn describe(kind: &str) -> &'static str {
    KINDS
        .iter()
        .find(|(id, _)| *id == kind)
        .map_or("", |(_, text)| text)
}

/// `file` as a report shows it: relative to `base` when it lies under it.
pub fn shown_path(file: &str, base: Option<&Path>) -> String {
    let path = Path::new(file);
    match base.and_then(|base| path.strip_prefix(base).ok()) {
        Some(rest) if !rest.as_os_str().is_empty() => rest.display().to_string(),
        _ => file.to_owned(),
    }
}

#[cfg(test)]
mod tests;
