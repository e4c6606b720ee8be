//! GitHub Actions workflow commands: one annotation per check that is not
//! a pass (`::error` exactly where the gate fails, `::warning`, `::notice`),
//! on the policy file's line where there is one, then one plain summary
//! line. Values are escaped as the Actions toolkit escapes them, so that no
//! text from a record (a command, a call id) can end an annotation early or
//! issue a command of its own.

use std::fmt::Write;

use super::{Level, Report, Run, shown_path};

/// `report` as workflow commands, one per line.
pub fn render(report: &Report, run: &Run) -> String {
    let mut out = String::new();
    let mut counts = [0usize; 4];
    for check in &report.checks {
        counts[check.level as usize] += 1;
        let command = match check.level {
            Level::Pass => continue,
            Level::Note => "notice",
            Level::Warning => "warning",
            Level::Error => "error",
        };
        let mut properties = Vec::new();
        if let Some(site) = &check.site {
            properties.push(format!(
                "file={}",
                property(&shown_path(&site.file, run.base.as_deref()))
            ));
            if let Some(line) = site.line {
                properties.push(format!("line={line}"));
            }
        }
        properties.push(format!(
            "title={}",
            property(&format!("gavel {}: {}", report.command, check.name))
        ));
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "::{command} {}::{}",
            properties.join(","),
            data(&check.message)
        );
    }
    let [pass, note, warning, error] = counts;
    let _ = writeln!(
        out,
        "gavel {}: {} checked: {error} failed, {warning} warnings, {note} notes, {pass} passed",
        data(report.command),
        report.checks.len(),
    );
    out
}

/// A command's message: `%`, CR and LF escaped.
pub fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A command's property value: as [`data`], and `:` and `,` too.
pub fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}
