//! JUnit XML: one `<testsuite>` for the command, one `<testcase>` per
//! check, a `<failure>` in exactly the checks the gate fails on. Written
//! to the widely used Ant JUnit schema (tests/schemas/JUnit.xsd, which CI
//! systems read): its required `properties`, `system-out` and `system-err`
//! are always present; warnings and notes, which do not fail, are listed in
//! `system-out`.

use std::fmt::Write;

use super::{Level, Report, Run, shown_path};

/// `report` as a JUnit XML document.
pub fn render(report: &Report, run: &Run) -> String {
    let failures = report
        .checks
        .iter()
        .filter(|c| c.level == Level::Error)
        .count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let hostname = if run.hostname.trim().is_empty() {
        "localhost"
    } else {
        &run.hostname
    };
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "<testsuite name=\"gavel {}\" timestamp=\"{}\" hostname=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{}\">",
        escape(report.command),
        timestamp(&run.timestamp),
        escape(hostname),
        report.checks.len(),
        seconds(run.seconds)
    );
    out.push_str("  <properties>\n");
    let version = [("gavel.version".to_owned(), run.version.clone())];
    for (name, value) in version.iter().chain(&report.properties) {
        if name.trim().is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "    <property name=\"{}\" value=\"{}\"/>",
            escape(name),
            escape(value)
        );
    }
    out.push_str("  </properties>\n");
    let mut noted = String::new();
    for check in &report.checks {
        let place = check.site.as_ref().map(|site| {
            let file = shown_path(&site.file, run.base.as_deref());
            match site.line {
                Some(line) => format!("{file}:{line}"),
                None => file,
            }
        });
        let _ = write!(
            out,
            "  <testcase name=\"{}\" classname=\"gavel.{}\" time=\"0\"",
            escape(&check.name),
            escape(check.kind)
        );
        match check.level {
            Level::Error => {
                let _ = writeln!(
                    out,
                    ">\n    <failure message=\"{}\" type=\"{}\">{}{}</failure>\n  </testcase>",
                    escape(&check.message),
                    escape(check.kind),
                    content(&check.message),
                    content(&place.map(|p| format!("\nat {p}")).unwrap_or_default())
                );
            }
            level => {
                out.push_str("/>\n");
                if level != Level::Pass {
                    let _ = writeln!(
                        noted,
                        "{}: {}: {}{}",
                        level.as_str(),
                        check.name,
                        check.message,
                        place.map(|p| format!(" (at {p})")).unwrap_or_default()
                    );
                }
            }
        }
    }
    let _ = writeln!(out, "  <system-out>{}</system-out>", content(&noted));
    out.push_str("  <system-err></system-err>\n</testsuite>\n");
    out
}

/// `text` safe as an element's content: as [`escape`], but tabs and line
/// feeds kept as they are (content keeps them; a report reads better).
fn content(text: &str) -> String {
    escape(text).replace("&#10;", "\n").replace("&#9;", "\t")
}

/// `text` safe in XML content and in a double-quoted attribute: markup
/// characters as entities, tabs and line ends as character references (an
/// attribute keeps them that way), and the characters XML 1.0 cannot hold
/// at all (other C0 controls, U+FFFE, U+FFFF) as visible `\xNN` text.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            '\u{FFFE}' | '\u{FFFF}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// JUnit's time stamp: `YYYY-MM-DDTHH:MM:SS`, no zone; anything else
/// given becomes the epoch rather than an invalid document.
fn timestamp(given: &str) -> &str {
    let shape = "0000-00-00T00:00:00";
    let fits = given.len() == shape.len()
        && given.bytes().zip(shape.bytes()).all(|(g, s)| match s {
            b'0' => g.is_ascii_digit(),
            other => g == other,
        });
    if fits { given } else { "1970-01-01T00:00:00" }
}

/// Seconds as an `xs:decimal` (never an exponent, never negative).
fn seconds(value: f64) -> String {
    if value.is_finite() && value > 0.0 {
        format!("{value:.3}")
    } else {
        "0".to_owned()
    }
}
