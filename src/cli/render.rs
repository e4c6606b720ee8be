//! Printing: tables for people, JSON for programs. stdout carries data only.

use std::borrow::Cow;
use std::io::Write;

use tabled::builder::Builder;
use tabled::grid::util::string::{get_char_width, get_string_width};
use tabled::settings::peaker::PriorityMax;
use tabled::settings::{Style, Width};

/// The width human output must fit: `$COLUMNS` when set, else the
/// terminal's width when stdout is one; `None` (no limit) otherwise.
pub fn width() -> Option<usize> {
    if let Some(columns) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
    {
        return Some(columns);
    }
    terminal_width()
}

#[cfg(unix)]
fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    use std::os::fd::AsRawFd;
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    // SAFETY: an all-zero `winsize` is a valid value for TIOCGWINSZ to fill.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: stdout is an open descriptor and `size` a valid `winsize`.
    let got = unsafe { libc::ioctl(stdout.as_raw_fd(), libc::TIOCGWINSZ, &mut size) };
    (got == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

#[cfg(not(unix))]
fn terminal_width() -> Option<usize> {
    None
}

/// `text` cut to at most `width` display columns, ending in `…` when cut.
pub fn fit(text: &str, width: usize) -> Cow<'_, str> {
    if get_string_width(text) <= width {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = get_char_width(c);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width > 0 {
        out.push('…');
    }
    Cow::Owned(out)
}

/// A table printed row by row, as its rows come: the column widths are
/// set from the header and the first rows (`SAMPLE`, or those read within
/// `SAMPLE_WAIT`), fitted to
/// [`width`], and a later cell longer than its column is cut with `…`.
/// Memory stays constant however many rows follow. Cells are one line,
/// control characters escaped. To fit a narrow width, the `droppable`
/// columns are left out in their order, then the `flexible` ones narrowed.
pub struct StreamTable {
    headers: Vec<String>,
    /// Per column: the longest a cell may be before the table is fitted.
    caps: Vec<usize>,
    flexible: Vec<usize>,
    droppable: Vec<usize>,
    /// The columns shown and their widths, once set.
    layout: Option<Vec<(usize, usize)>>,
    pending: Vec<Vec<String>>,
    /// When the first pending row came.
    since: Option<std::time::Instant>,
    rows: u64,
    out: std::io::BufWriter<std::io::Stdout>,
}

/// Rows read before the column widths are set...
const SAMPLE: usize = 50;
/// ...or fewer, once the first of them has waited this long (a filter
/// that matches rarely still shows its first rows at once).
const SAMPLE_WAIT: std::time::Duration = std::time::Duration::from_millis(500);
/// A flexible column is narrowed to this before any other column is.
const FLEX_FLOOR: usize = 10;

impl StreamTable {
    /// A table with these headers; `caps` bounds each column's width.
    pub fn new(headers: &[&str], caps: &[usize], flexible: &[usize], droppable: &[usize]) -> Self {
        Self {
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            caps: caps.to_vec(),
            flexible: flexible.to_vec(),
            droppable: droppable.to_vec(),
            layout: None,
            pending: Vec::new(),
            since: None,
            rows: 0,
            out: std::io::BufWriter::new(std::io::stdout()),
        }
    }

    /// Adds a row; it is printed at once when the widths are set.
    pub fn push(&mut self, row: Vec<String>) -> std::io::Result<()> {
        let row: Vec<String> = row.iter().map(|c| one_line(c)).collect();
        self.rows += 1;
        if self.layout.is_some() {
            self.print_row(&row)?;
            return self.out.flush();
        }
        self.pending.push(row);
        let waited = self
            .since
            .get_or_insert_with(std::time::Instant::now)
            .elapsed();
        if self.pending.len() >= SAMPLE || waited >= SAMPLE_WAIT {
            self.start()?;
        }
        Ok(())
    }

    /// The rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Closes the table (nothing is printed when it has no rows).
    pub fn finish(mut self) -> std::io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        if self.layout.is_none() {
            self.start()?;
        }
        self.border('└', '┴', '┘')?;
        self.out.flush()
    }

    /// Sets the layout from the pending rows and prints the header and them.
    fn start(&mut self) -> std::io::Result<()> {
        let natural: Vec<usize> = self
            .headers
            .iter()
            .enumerate()
            .map(|(i, header)| {
                let longest = self
                    .pending
                    .iter()
                    .map(|row| row.get(i).map_or(0, |c| get_string_width(c)))
                    .max()
                    .unwrap_or(0);
                let cap = self.caps.get(i).copied().unwrap_or(usize::MAX);
                longest.min(cap).max(get_string_width(header))
            })
            .collect();
        let layout = fit_layout(&natural, &self.flexible, &self.droppable, width());
        self.layout = Some(layout);
        self.border('┌', '┬', '┐')?;
        let headers = self.headers.clone();
        self.print_row(&headers)?;
        self.border('├', '┼', '┤')?;
        for row in std::mem::take(&mut self.pending) {
            self.print_row(&row)?;
        }
        self.out.flush()
    }

    fn border(&mut self, left: char, mid: char, right: char) -> std::io::Result<()> {
        let layout = self.layout.as_deref().unwrap_or_default();
        let parts: Vec<String> = layout.iter().map(|(_, w)| "─".repeat(w + 2)).collect();
        writeln!(self.out, "{left}{}{right}", parts.join(&mid.to_string()))
    }

    fn print_row(&mut self, row: &[String]) -> std::io::Result<()> {
        let mut line = String::from("│");
        for &(column, width) in self.layout.as_deref().unwrap_or_default() {
            let cell = row.get(column).map(String::as_str).unwrap_or("");
            let cell = fit(cell, width);
            let pad = width.saturating_sub(get_string_width(&cell));
            line.push(' ');
            line.push_str(&cell);
            line.push_str(&" ".repeat(pad + 1));
            line.push('│');
        }
        writeln!(self.out, "{line}")
    }
}

/// The columns to show and their widths, from their natural widths, to
/// fit `limit`: droppable columns are left out (in order) while the rest
/// cannot fit with the flexible ones at `FLEX_FLOOR` (but the last, whole); then the flexible
/// columns are narrowed in their order to `FLEX_FLOOR`, then any column to
/// 3. A table that cannot fit stays at its narrowest.
fn fit_layout(
    natural: &[usize],
    flexible: &[usize],
    droppable: &[usize],
    limit: Option<usize>,
) -> Vec<(usize, usize)> {
    let mut layout: Vec<(usize, usize)> = natural.iter().copied().enumerate().collect();
    let Some(limit) = limit else {
        return layout;
    };
    let total = |l: &[(usize, usize)]| l.iter().map(|c| c.1).sum::<usize>() + 3 * l.len() + 1;
    for dropped in droppable {
        // The last flexible column (the one that matters most) whole, the others at their floor.
        let narrowest: Vec<(usize, usize)> = layout
            .iter()
            .map(|&(c, w)| match flexible.iter().position(|f| *f == c) {
                Some(at) if at + 1 < flexible.len() => (c, w.min(FLEX_FLOOR)),
                _ => (c, w),
            })
            .collect();
        if total(&narrowest) <= limit {
            break;
        }
        layout.retain(|(c, _)| c != dropped);
    }
    let mut excess = total(&layout).saturating_sub(limit);
    // The flexible columns in their order, each down to its floor; then
    // every column, widest first, down to 3.
    for column in flexible {
        if let Some((_, w)) = layout.iter_mut().find(|(c, _)| c == column) {
            let cut = excess.min(w.saturating_sub(FLEX_FLOOR));
            *w -= cut;
            excess -= cut;
        }
    }
    while excess > 0 {
        let widest = layout
            .iter_mut()
            .filter(|(_, w)| *w > 3)
            .max_by_key(|(c, w)| (*w, std::cmp::Reverse(*c)));
        let Some((_, w)) = widest else { break };
        *w -= 1;
        excess -= 1;
    }
    layout
}

/// One line, control characters escaped.
fn one_line(text: &str) -> String {
    escape(&text.replace(['\n', '\r'], " ")).into_owned()
}

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
    fit_table(&mut table);
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
    fit_table(&mut table);
    line(&table.to_string())
}

/// Narrows a table to [`width`], when there is one, by wrapping its widest
/// columns first (at word boundaries where it can): a cell's text is kept
/// whole, on more lines.
fn fit_table(table: &mut tabled::Table) {
    if let Some(limit) = width() {
        table.with(
            Width::wrap(limit)
                .keep_words(true)
                .priority(PriorityMax::right()),
        );
    }
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
#[allow(dead_code)] // `log` streams its array; kept for one-value pretty output
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
