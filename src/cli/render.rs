//! Printing: tables for people, JSON for programs. stdout carries data only.

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
        builder.push_record(row);
    }
    let mut table = builder.build();
    table.with(Style::sharp());
    line(&table.to_string())
}

/// Prints a two-column table of field names and values.
pub fn fields(pairs: &[(&str, String)]) -> std::io::Result<()> {
    let mut builder = Builder::new();
    for (name, value) in pairs {
        builder.push_record([(*name).to_owned(), value.clone()]);
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

/// Shortens `text` to one line of at most `max` characters for a table cell.
pub fn cell(text: &str, max: usize) -> String {
    let flat = text.replace(['\n', '\r'], " ");
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}
