//! Printing: tables for people, JSON for programs. stdout carries data only.

use std::io::{IsTerminal, Write};

use gavel::text::layout::{fit, fit_layout, fit_rows, natural_widths, one_line, wrap_text};
use tabled::builder::Builder;
use tabled::grid::util::string::get_string_width;
use tabled::settings::Style;

/// The width output that is neither a terminal nor given `$COLUMNS`
/// (a pipe, a file) is fitted to, unless `--wide`.
pub const PIPED_WIDTH: usize = 160;

/// `--wide`: tables keep their natural width whatever the terminal.
static WIDE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sets `--wide` for this process: no width limit for tables.
pub fn set_wide(wide: bool) {
    WIDE.store(wide, std::sync::atomic::Ordering::Relaxed);
}

/// The width human output must fit: `None` (no limit) with `--wide`;
/// else `$COLUMNS` when set, else the terminal's width when stdout is
/// one, else [`PIPED_WIDTH`].
pub fn width() -> Option<usize> {
    if WIDE.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    if let Some(columns) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
    {
        return Some(columns);
    }
    Some(terminal_width().unwrap_or(PIPED_WIDTH))
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

/// A table printed row by row, as its rows come: the column widths are
/// set from the header and the first rows (`SAMPLE`, or those read within
/// `SAMPLE_WAIT`), fitted to
/// [`width`], and a later cell longer than its column is cut with `…`.
/// Memory stays constant however many rows follow. Cells are one line,
/// control characters escaped, and a cell that does not fit is cut with
/// `…`, never broken. To fit a narrow width, the `droppable` columns are
/// left out in their order while the rest cannot fit with the `flexible`
/// ones at their floors (up to the column's stage); then the flexible
/// ones are narrowed in their order, each to its floor. A column that is
/// neither (a rule id) keeps its width unless nothing else can give.
pub struct StreamTable {
    headers: Vec<String>,
    /// Per column: the longest a cell may be before the table is fitted.
    caps: Vec<usize>,
    /// (column, the narrowest it is cut to), narrowed in this order; a
    /// column listed twice narrows to its first floor, later to its second.
    flexible: Vec<(usize, usize)>,
    /// (column, stage): left out, in this order, while the table cannot
    /// fit with the first `stage` flexible entries applied.
    droppable: Vec<(usize, usize)>,
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

impl StreamTable {
    /// A table with these headers; `caps` bounds each column's width;
    /// `flexible` holds (column, floor) pairs in the order they narrow.
    pub fn new(
        headers: &[&str],
        caps: &[usize],
        flexible: &[(usize, usize)],
        droppable: &[(usize, usize)],
    ) -> Self {
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
        let natural = natural_widths(&self.headers, &self.pending, &self.caps);
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

/// Prints a table with a header row, fitted to [`width`] (see [`fit_rows`]).
pub fn table<I, R>(headers: &[&str], rows: I) -> std::io::Result<()>
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = String>,
{
    table_dropping(headers, rows, &[])
}

/// [`table`], leaving out the `droppable` columns, in their order, while
/// the others cannot fit [`width`] with every word whole.
pub fn table_dropping<I, R>(headers: &[&str], rows: I, droppable: &[usize]) -> std::io::Result<()>
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = String>,
{
    let mut all = vec![headers.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>()];
    all.extend(rows.into_iter().map(|row| {
        row.into_iter()
            .map(|cell| escape(&cell).into_owned())
            .collect()
    }));
    print_grid(all, droppable)
}

/// Prints a two-column table of field names and values, fitted to [`width`].
pub fn fields(pairs: &[(&str, String)]) -> std::io::Result<()> {
    print_grid(
        pairs
            .iter()
            .map(|(name, value)| vec![(*name).to_owned(), escape(value).into_owned()])
            .collect(),
        &[],
    )
}

fn print_grid(rows: Vec<Vec<String>>, droppable: &[usize]) -> std::io::Result<()> {
    let mut builder = Builder::new();
    for row in fit_rows(rows, droppable, width()) {
        builder.push_record(row);
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
#[allow(dead_code)] // `log` streams its array; kept for one-value pretty output
pub fn json_pretty(value: &serde_json::Value) -> std::io::Result<()> {
    line(&serde_json::to_string_pretty(value).unwrap_or_default())
}

pub use gavel::text::{cell, escape};

/// Prints lines of human text, each escaped, and wrapped to [`width`]
/// (see [`wrap_text`]).
pub fn text(lines: &[String]) -> std::io::Result<()> {
    let limit = width();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    for l in lines {
        let escaped = escape(l);
        match limit {
            Some(limit) if get_string_width(&escaped) > limit => {
                out.extend(wrap_text(&escaped, limit));
            }
            _ => out.push(escaped.into_owned()),
        }
    }
    line(&out.join("\n"))
}

/// A progress bar on stderr when it is a terminal and the log is long.
pub fn progress_bar(
    store: &gavel::store::Store,
    what: &str,
) -> anyhow::Result<Option<indicatif::ProgressBar>> {
    if !std::io::stderr().is_terminal() {
        return Ok(None);
    }
    progress_of(Some(store.event_count()?), what)
}

/// A progress bar of `total` events on stderr (when it is a terminal and
/// they are many), or with no total, a spinner counting them.
pub fn progress_of(
    total: Option<u64>,
    what: &str,
) -> anyhow::Result<Option<indicatif::ProgressBar>> {
    use indicatif::{ProgressBar, ProgressStyle};
    if !std::io::stderr().is_terminal() {
        return Ok(None);
    }
    let (bar, template) = match total {
        Some(total) if total < 200_000 => return Ok(None),
        Some(total) => (
            ProgressBar::new(total),
            "{msg} {bar:40} {pos}/{len} events ({eta})",
        ),
        None => (ProgressBar::new_spinner(), "{msg} {spinner} {pos} events"),
    };
    let bar = bar.with_message(what.to_owned());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    Ok(Some(bar))
}

// ---------------------------------------------------------------------------
// The drift table of `replay` (and `demo`).

pub fn drift_table(
    report: &gavel::replay::DriftReport,
    skipped_verify: bool,
) -> std::io::Result<()> {
    for text in gavel::replay::summary::lines(report, skipped_verify) {
        line(&text)?;
    }
    if report.transitions.is_empty() {
        return Ok(());
    }
    let rows = gavel::replay::summary::transition_rows(report);
    table(&["direction", "from", "to", "calls", "e.g."], rows)
}
