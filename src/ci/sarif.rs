//! SARIF 2.1.0 (OASIS; tests/schemas/sarif-schema-2.1.0.json): one run of
//! gavel, its kinds of check as the driver's rules, and one result per
//! check that is not a pass, at the level the gate gives it (`error` only
//! where it fails), located in the policy file at the rule's line where
//! there is one. GitHub code scanning reads it (`upload-sarif`); each
//! command is its own `automationDetails` category, so the uploads of
//! several commands do not replace each other.

use serde_json::{Value, json};

use super::{Level, Report, Run, describe, shown_path};

/// The schema a SARIF 2.1.0 log names.
pub const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// `report` as a SARIF log (pretty JSON).
pub fn render(report: &Report, run: &Run) -> String {
    let mut rules: Vec<&'static str> = Vec::new();
    let mut results = Vec::new();
    for check in report.checks.iter().filter(|c| c.level != Level::Pass) {
        let index = match rules.iter().position(|r| *r == check.kind) {
            Some(index) => index,
            None => {
                rules.push(check.kind);
                rules.len() - 1
            }
        };
        let mut result = json!({
            "ruleId": check.kind,
            "ruleIndex": index,
            "level": check.level.as_str(),
            "message": {"text": format!("{}: {}", check.name, check.message)},
        });
        if let Some(site) = &check.site {
            let mut location = json!({
                "artifactLocation": {"uri": uri(&shown_path(&site.file, run.base.as_deref()))},
            });
            if let Some(line) = site.line.filter(|l| *l > 0) {
                location["region"] = json!({"startLine": line});
            }
            result["locations"] = json!([{"physicalLocation": location}]);
        }
        results.push(result);
    }
    let rules: Vec<Value> = rules
        .iter()
        .map(|kind| {
            json!({
                "id": kind,
                "shortDescription": {"text": describe(kind)},
            })
        })
        .collect();
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "gavel",
                "version": run.version,
                "rules": rules,
            }},
            "automationDetails": {"id": format!("gavel/{}/", report.command.replace(' ', "-"))},
            "results": results,
        }],
    });
    // A `Value` always serializes.
    let mut text = serde_json::to_string_pretty(&log).unwrap_or_default();
    text.push('\n');
    text
}

/// A path as a URI reference: relative stays relative, absolute becomes a
/// `file://` URI; every byte outside RFC 3986's unreserved set and `/`
/// percent-encoded.
pub fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    if path.starts_with('/') {
        out.push_str("file://");
    }
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(byte as char)
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}
