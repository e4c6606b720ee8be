//! Printing: tables for people, JSON for programs. stdout carries data only.

use std::borrow::Cow;
use std::io::Write;

use tabled::builder::Builder;
use tabled::settings::Style;

/// Prints a table with a header row.
pub fn table<I, R>(headers: &[&str], rows: I) -> std::io::Result<()>
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = String>,
{
    let mut builder = Builder::new();
    builder.push_record(headers.iter().map(|h| (*h).to_owned()));
    for row in rows {
        builder.push_record(row.into_iter().map(|cell| escape(&cell).into_owned()));
    }
    let mut table = builder.build();
    table.with(Style::sharp());
    line(&table.to_string())
}

/// Prints a two-column table of field names and values.
pub fn fields(pairs: &[(&str, String)]) -> std::io::Result<()> {
    let mut builder = Builder::new();
    for (name, value) in pairs {
        builder.push_record([(*name).to_owned(), escape(value).into_owned()]);
    }
    let mut table = builder.build();
    table.with(Style::sharp());
    line(&table.to_string())
}

/// Prints one line to stdout.
pub fn line(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
}

/// Prints one JSON value on one line.
pub fn json(value: &serde_json::Value) -> std::io::Result<()> {
    line(&value.to_string())
}

/// Prints one JSON value, pretty.
pub fn json_pretty(value: &serde_json::Value) -> std::io::Result<()> {
    line(&serde_json::to_string_pretty(value).unwrap_or_default())
}

/// Shortens `text` to one line of at most `max` characters for a table
/// cell, control characters escaped.
pub fn cell(text: &str, max: usize) -> String {
    let flat = text.replace(['\n', '\r'], " ");
    let flat = escape(&flat);
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat.into_owned(),
    }
}

/// Whether a character must not reach a terminal raw: C0 and C1 controls,
/// DEL, and the bidirectional overrides and isolates that reorder text.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with control characters written as escapes (`\n`, `\t`,
/// `\u{1b}`), so recorded text (a call id, a tool name, an argument, a
/// reason) can never move the cursor, recolour or rewrite the auditor's
/// terminal. Human output passes through here; JSON output is escaped by
/// JSON itself.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Prints lines of human text, each escaped.
pub fn text(lines: &[String]) -> std::io::Result<()> {
    let escaped: Vec<Cow<'_, str>> = lines.iter().map(|l| escape(l)).collect();
    line(&escaped.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_controls_and_keeps_plain_text() {
        assert_eq!(escape("plain ü"), "plain ü");
        assert_eq!(
            escape("a\u{1b}[2Jb\nc\u{7f}\u{9b}\u{202e}"),
            "a\\u{1b}[2Jb\\nc\\u{7f}\\u{9b}\\u{202e}"
        );
        assert_eq!(cell("x\u{1b}]0;t\u{7}", 40), "x\\u{1b}]0;t\\u{7}");
    }
}
