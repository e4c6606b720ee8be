//! Each gating command's findings as checks: which are errors (exactly
//! those the command exits 1 on), warnings, notes and passes, and where in
//! the policy file each points.

use std::collections::HashMap;

use crate::policy::cases::PolicyCase;
use crate::policy::diff::{RuleChange, RuleChangeKind, SampleChange};
use crate::policy::lint::Finding;
use crate::policy::{Action, Decision, Policy};
use crate::replay::{
    ChangedCall, Direction, DriftReport, Gate, ReplayedCall, Verdict, arguments_summary,
};
use crate::store::{Problem, VerifyReport};

use super::{Check, Level, Report, Site};

/// Where a policy's rules are written, to locate checks: each rule's file
/// and line, and the policy's own file for a decision no rule of it wrote
/// (`default.deny`).
#[derive(Debug, Clone, Default)]
pub struct Sites {
    rules: HashMap<String, (String, Option<usize>)>,
    file: Option<String>,
}

impl Sites {
    /// The sites of `policy`'s rules and its layers'.
    pub fn of(policy: &Policy) -> Self {
        Self {
            rules: policy.rule_sites(),
            file: (!policy.origin().starts_with('<')).then(|| policy.origin().to_owned()),
        }
    }

    /// Where rule `id` is written; else the policy's file; else nowhere.
    pub fn rule(&self, id: &str) -> Option<Site> {
        match self.rules.get(id) {
            Some((file, line)) => Some(Site {
                file: file.clone(),
                line: *line,
            }),
            None => self.file.clone().map(|file| Site { file, line: None }),
        }
    }
}

fn verdict(v: &Verdict) -> String {
    match &v.sandbox {
        Some(sandbox) => format!("{} `{}` (sandbox {})", v.action, v.rule_id, sandbox.profile),
        None => format!("{} `{}`", v.action, v.rule_id),
    }
}

fn direction_word(direction: Direction) -> &'static str {
    match direction {
        Direction::Loosened => "loosened",
        Direction::Tightened => "tightened",
        Direction::Rerouted => "rerouted",
    }
}

/// Replay's checks: one per call replayed (`DriftReport::replayed`, kept
/// with `Kept::Every`), an error where `gate` fails on the call, located
/// at the rule that decides it now. `log` names a central store's log.
pub fn replay(
    report: &mut Report,
    drift: &DriftReport,
    gate: Gate,
    sites: &Sites,
    log: Option<&str>,
) {
    let prefix = log.map(|l| format!("{l}: ")).unwrap_or_default();
    for call in &drift.replayed {
        report.checks.push(replayed(call, gate, sites, &prefix));
    }
}

fn replayed(call: &ReplayedCall, gate: Gate, sites: &Sites, prefix: &str) -> Check {
    let name = format!(
        "{prefix}call {}: {} {}",
        call.call_id, call.tool, call.arguments
    );
    let site = sites.rule(&call.to.rule_id);
    let Some(direction) = call.direction else {
        return Check {
            name,
            kind: "replay.unchanged",
            level: Level::Pass,
            message: format!("decided {} as recorded", verdict(&call.to)),
            site,
        };
    };
    let level = if gate.fails(direction, call.undecidable) {
        Level::Error
    } else if direction == Direction::Rerouted {
        Level::Note
    } else {
        Level::Warning
    };
    let mut message = format!(
        "{}: recorded {}, now {}",
        direction_word(direction),
        verdict(&call.from),
        verdict(&call.to)
    );
    if call.undecidable {
        message.push_str(
            "; a field the policy reads was stored redacted, so it cannot be re-decided exactly",
        );
    }
    Check {
        name,
        kind: if call.undecidable {
            "replay.undecidable"
        } else {
            match direction {
                Direction::Loosened => "replay.loosened",
                Direction::Tightened => "replay.tightened",
                Direction::Rerouted => "replay.rerouted",
            }
        },
        level,
        message,
        site,
    }
}

/// One `policy test` case and what the policy decided on it.
#[derive(Debug, Clone, Copy)]
pub struct CaseResult<'a> {
    pub case: &'a PolicyCase,
    /// Its place in the cases file, from 0 (for its label).
    pub index: usize,
    pub got: &'a Decision,
}

/// `policy test`'s checks: one per case, an error where the case fails
/// (the command exits 1 when any does), located at the rule that decided.
pub fn policy_test(report: &mut Report, results: &[CaseResult<'_>], sites: &Sites) {
    for result in results {
        let (case, got) = (result.case, result.got);
        let pass = case.passes(got);
        let expected = match &case.rule_id {
            Some(rule) => format!("{} `{rule}`", case.action),
            None => format!("{} (any rule)", case.action),
        };
        report.checks.push(Check {
            name: format!(
                "case {}: {} {}",
                case.label(result.index),
                case.tool,
                arguments_summary(&case.tool, &case.arguments)
            ),
            kind: "test.case",
            level: if pass { Level::Pass } else { Level::Error },
            message: format!(
                "{}: expected {expected}, got {} `{}`: {}",
                if pass { "passed" } else { "failed" },
                got.action,
                got.rule_id,
                got.reason
            ),
            site: sites.rule(&got.rule_id),
        });
    }
}

/// `policy lint`'s checks: one per finding; with `strict` the static ones
/// are errors (the command exits 1), else warnings; rules that never
/// matched a recorded call (`never`) are notes, which never fail.
pub fn lint(
    report: &mut Report,
    findings: &[Finding],
    never: &[Finding],
    strict: bool,
    sites: &Sites,
) {
    let static_level = if strict { Level::Error } else { Level::Warning };
    let all = findings
        .iter()
        .map(|f| (f, static_level))
        .chain(never.iter().map(|f| (f, Level::Note)));
    for (finding, level) in all {
        let kind = lint_kind(finding);
        report.checks.push(Check {
            name: format!(
                "rule {}: {}",
                finding.rule_id,
                kind.trim_start_matches("lint.")
            ),
            kind,
            level,
            message: finding.message.clone(),
            site: sites.rule(&finding.rule_id),
        });
    }
}

fn lint_kind(finding: &Finding) -> &'static str {
    use crate::policy::lint::LintKind;
    match finding.kind {
        LintKind::UnconditionalAllow => "lint.unconditional_allow",
        LintKind::Shadowed => "lint.shadowed",
        LintKind::NeverMatched => "lint.never_matched",
        LintKind::UnscopedShellAllow => "lint.unscoped_shell_allow",
        LintKind::UnmodelledProgram => "lint.unmodelled_program",
        LintKind::NeverSent => "lint.never_sent",
        LintKind::UnknownLabel => "lint.unknown_label",
    }
}

/// The word `policy diff` uses for a rule's change.
pub fn change_word(kind: RuleChangeKind) -> &'static str {
    kind.word()
}

/// Whether a move from `from` to `to` is a loosening.
fn looser(from: Action, to: Action) -> bool {
    to < from
}

/// `policy diff`'s checks: one per changed rule, per sample request and
/// per recorded call that decides differently. `policy diff` never fails
/// (it exits 0): what loosens is a warning, the rest notes. A removed rule
/// is located in `old`, everything else in `new`.
pub fn diff(
    report: &mut Report,
    rules: &[RuleChange],
    samples: &[SampleChange],
    calls: &[ChangedCall],
    old: &Sites,
    new: &Sites,
) {
    for change in rules {
        let loosens = change.kind == RuleChangeKind::Widened
            || change.action.is_some_and(|(a, b)| looser(a, b));
        let mut message = format!("rule `{}` {}", change.rule_id, change_word(change.kind));
        if let Some((a, b)) = change.action {
            message.push_str(&format!(", action {a} -> {b}"));
        }
        if let Some((a, b)) = change.position {
            message.push_str(&format!(", place {a} -> {b}"));
        }
        if change.reason_changed {
            message.push_str(", reason changed");
        }
        let sites = if change.kind == RuleChangeKind::Removed {
            old
        } else {
            new
        };
        report.checks.push(Check {
            name: format!("rule {}", change.rule_id),
            kind: "diff.rule",
            level: if loosens { Level::Warning } else { Level::Note },
            message,
            site: sites.rule(&change.rule_id),
        });
    }
    for sample in samples {
        let arguments = crate::replay::sample_arguments(sample);
        report.checks.push(Check {
            name: format!("sample: {} {arguments}", sample.tool),
            kind: "diff.sample",
            level: if looser(sample.from.0, sample.to.0) {
                Level::Warning
            } else {
                Level::Note
            },
            message: format!(
                "a generated request decided {} `{}` before, {} `{}` now",
                sample.from.0, sample.from.1, sample.to.0, sample.to.1
            ),
            site: new.rule(&sample.to.1),
        });
    }
    for call in calls {
        report.checks.push(Check {
            name: format!("call {}: {} {}", call.call_id, call.tool, call.arguments),
            kind: "diff.call",
            level: if call.direction == Direction::Loosened {
                Level::Warning
            } else {
                Level::Note
            },
            message: format!(
                "{}: decided {} before, {} now",
                direction_word(call.direction),
                verdict(&call.from),
                verdict(&call.to)
            ),
            site: new.rule(&call.to.rule_id),
        });
    }
}

/// `verify`'s checks on one log (a database or an export at `log`), in
/// the order they are made: its identity, its chain, its checkpoints. The
/// one its problem is about is the error (the command exits 1) and the
/// last listed: what verification did not reach is not reported as passed.
pub fn verify(report: &mut Report, verified: &VerifyReport, log: &str) {
    let problem = verified.problem;
    let part = |p: Problem| match p {
        Problem::IdentityMismatch | Problem::UnknownFormat => "verify.identity",
        Problem::SeqGap
        | Problem::LogIdMismatch
        | Problem::ContentMismatch
        | Problem::ChainBreak => "verify.chain",
        Problem::CheckpointSignature
        | Problem::CheckpointMismatch
        | Problem::CheckpointOrigin
        | Problem::CheckpointTruncated
        | Problem::CheckpointRootMismatch => "verify.checkpoints",
    };
    let failed = (!verified.ok).then(|| problem.map_or("verify.chain", part));
    let site = Some(Site {
        file: log.to_owned(),
        line: None,
    });
    let checkpoints = verified.stored_checkpoints + u64::from(verified.checkpoint.is_some());
    for (kind, name, fine) in [
        (
            "verify.identity",
            "identity".to_owned(),
            "its identity and format are what its genesis says".to_owned(),
        ),
        (
            "verify.chain",
            "chain".to_owned(),
            format!("{} events, each in place and chained", verified.rows),
        ),
        (
            "verify.checkpoints",
            "checkpoints".to_owned(),
            format!(
                "{checkpoints} checkpoints hold{}",
                if verified.signature_checked {
                    ", signatures verified"
                } else {
                    ""
                }
            ),
        ),
    ] {
        let (level, message) = if failed == Some(kind) {
            let seq = verified
                .first_bad_seq
                .map(|s| format!(" at seq {s}"))
                .unwrap_or_default();
            (
                Level::Error,
                format!(
                    "tampered: {}{seq}: {}",
                    problem.map_or("unknown", Problem::as_str),
                    verified.detail.as_deref().unwrap_or("")
                ),
            )
        } else {
            (Level::Pass, fine)
        };
        report.checks.push(Check {
            name: format!("{name} of {log}"),
            kind,
            level,
            message,
            site: site.clone(),
        });
        if level == Level::Error {
            break;
        }
    }
}

/// `verify`'s check of a central store: one, an error when anything in it
/// does not verify (the command exits 1), naming the log that breaks.
#[cfg(feature = "postgres")]
pub fn verify_central(report: &mut Report, verified: &crate::central::verify::CentralReport) {
    let problem = verified.problem.as_deref().unwrap_or("unknown");
    let checkpoints = [
        "checkpoint",
        "cosignature",
        "central_checkpoint",
        "central_key",
    ];
    let (level, message) = if verified.ok {
        (
            Level::Pass,
            format!(
                "{} logs, {} events, {} checkpoints and the central log of {} leaves verify",
                verified.logs, verified.events, verified.checkpoints, verified.central_log
            ),
        )
    } else {
        (
            Level::Error,
            format!(
                "tampered: {problem} in log {} of host `{}`{}: {}",
                verified.origin.as_deref().unwrap_or("?"),
                verified.host.as_deref().unwrap_or("?"),
                verified
                    .first_bad_seq
                    .map(|s| format!(" at seq {s}"))
                    .unwrap_or_default(),
                verified.detail.as_deref().unwrap_or("")
            ),
        )
    };
    report.checks.push(Check {
        name: "central store".to_owned(),
        kind: if checkpoints.iter().any(|c| problem.starts_with(c)) {
            "verify.checkpoints"
        } else {
            "verify.chain"
        },
        level,
        message,
        site: None,
    });
}
