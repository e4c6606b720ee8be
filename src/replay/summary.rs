//! A drift report in plain words, for a person: the summary lines `replay`
//! and `demo` print above the table of transitions, and that table's rows.
//! Text from the record is escaped (`crate::text`).

use crate::text::{cell, escape};

use super::{DriftReport, FactSource, GrantedCall};

/// How many examples the table shows per transition, and their width.
const EXAMPLES_SHOWN: usize = 3;
const EXAMPLE_CHARS: usize = 48;

/// The lines above the table: what was replayed, the counts, grants,
/// re-parsed, undecidable and anomalous calls; "No drift." when there is
/// no transition to tabulate.
pub fn lines(report: &DriftReport, skipped_verify: bool) -> Vec<String> {
    let mut out = Vec::new();
    if skipped_verify {
        out.push("WARNING: the chain was not verified (--skip-verify)".to_owned());
    }
    let current = &report.policy.current;
    let facts = match report.facts {
        FactSource::Recorded => "recorded",
        FactSource::Live => "live",
        FactSource::Shadow => "",
    };
    out.push(if report.facts == FactSource::Shadow {
        format!(
            "Compared {} calls with what shadow policy `{}` (sha256 {}) decided on them live",
            report.total,
            escape(&current.name),
            cell(&current.digest, 16),
        )
    } else {
        format!(
            "Replayed {} calls under policy `{}` (sha256 {}) with {facts} facts",
            report.total,
            escape(&current.name),
            cell(&current.digest, 16),
        )
    });
    out.push(format!(
        "  unchanged {} (reason changed {}), changed {}: loosened {}, tightened {}, rerouted {}",
        report.unchanged,
        report.reason_changed,
        report.changed,
        report.loosened,
        report.tightened,
        report.rerouted
    ));
    let covered: Vec<&GrantedCall> = report.granted_calls.iter().filter(|g| g.covered).collect();
    let lapsed: Vec<&GrantedCall> = report.granted_calls.iter().filter(|g| !g.covered).collect();
    let shown = |calls: &[&GrantedCall]| {
        let mut shown: Vec<String> = calls
            .iter()
            .take(10)
            .map(|g| match &g.lapsed {
                Some(why) => format!(
                    "{} (grant {}: {})",
                    escape(&g.call_id),
                    escape(&g.grant),
                    escape(why)
                ),
                None => format!("{} (grant {})", escape(&g.call_id), escape(&g.grant)),
            })
            .collect();
        if calls.len() > 10 {
            shown.push("…".to_owned());
        }
        shown.join(", ")
    };
    if !covered.is_empty() {
        out.push(format!(
            "  {} call(s) allowed by a grant: {}",
            covered.len(),
            shown(&covered)
        ));
    }
    if !lapsed.is_empty() {
        out.push(format!(
            "  {} call(s) a grant does not cover (any more): {}",
            lapsed.len(),
            shown(&lapsed)
        ));
    }
    if report.parse_differs > 0 {
        out.push(format!(
            "  {} long command(s) parse differently now than when decided (their parse was recorded by digest); they were replayed on today's parse",
            report.parse_differs
        ));
    }
    if report.undecidable > 0 {
        let shown: Vec<String> = report
            .undecidable_calls
            .iter()
            .take(EXAMPLES_SHOWN)
            .map(|c| {
                format!(
                    "{} {} {} -> {} {}",
                    c.call_id, c.from.action, c.from.rule_id, c.to.action, c.to.rule_id
                )
            })
            .collect();
        out.push(format!(
            "!! {} call(s) undecidable ({} of them would loosen): a command or path the policy reads was stored with a secret redacted, and the redacted call decides differently, so the policy's effect cannot be proven (e.g. {}); they fail --fail-on any|loosened unless --allow-undecidable",
            report.undecidable,
            report.undecidable_loosened,
            escape(&shown.join("; "))
        ));
    }
    if report.anomalies > 0 {
        out.push(format!(
            "!! {} call(s) with anomalies in this range (not replayed as such: a tool ran outside what gavel decided), e.g. {}; `gavel audit` lists them",
            report.anomalies,
            escape(&report.anomaly_calls.join(", "))
        ));
    }
    if report.transitions.is_empty() {
        out.push(
            if report.undecidable > 0 {
                "No drift among the calls that could be re-decided."
            } else {
                "No drift."
            }
            .to_owned(),
        );
    }
    out
}

/// The table of transitions: direction, from, to, calls and an example
/// per row, the transition on its first example's row and the rest under it.
pub fn transition_rows(report: &DriftReport) -> Vec<[String; 5]> {
    let mut rows = Vec::new();
    for t in &report.transitions {
        let mut examples: Vec<String> = t
            .examples
            .iter()
            .take(EXAMPLES_SHOWN)
            .map(|e| {
                let because = e.because.as_ref().map_or(String::new(), |b| {
                    format!(" (after `{}` set by {})", b.label, b.call_id)
                });
                cell(
                    &format!("{} {}{because} {}", e.call_id, e.tool, e.arguments),
                    EXAMPLE_CHARS,
                )
            })
            .collect();
        if t.count > examples.len() as u64 {
            examples.push(format!("(+{} more)", t.count - examples.len() as u64));
        }
        for (i, example) in examples.into_iter().enumerate() {
            rows.push(if i == 0 {
                [
                    format!("{:?}", t.direction).to_lowercase(),
                    format!("{} {}", t.from.action, t.from.rule_id),
                    format!("{} {}", t.to.action, t.to.rule_id),
                    t.count.to_string(),
                    example,
                ]
            } else {
                [
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    example,
                ]
            });
        }
    }
    rows
}
