//! Printing: tables for people, JSON for programs. stdout carries data only.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};

use tabled::builder::Builder;
use tabled::grid::util::string::{get_char_width, get_string_width};
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
/// cannot fit with the flexible entries up to its stage applied, and put
/// back, most important first, where they then fit; then the flexible
/// columns are narrowed in their order, each to its floor, then any
/// column, widest first, to 3. A table that cannot fit stays at its
/// narrowest.
fn fit_layout(
    natural: &[usize],
    flexible: &[(usize, usize)],
    droppable: &[(usize, usize)],
    limit: Option<usize>,
) -> Vec<(usize, usize)> {
    let mut layout: Vec<(usize, usize)> = natural.iter().copied().enumerate().collect();
    let Some(limit) = limit else {
        return layout;
    };
    let total = |l: &[(usize, usize)]| l.iter().map(|c| c.1).sum::<usize>() + 3 * l.len() + 1;
    // As narrow as the first `stage` flexible entries make `layout`.
    let narrowest = |layout: &[(usize, usize)], stage: usize| {
        let mut narrow = layout.to_vec();
        for &(column, floor) in flexible.iter().take(stage) {
            if let Some((_, w)) = narrow.iter_mut().find(|(c, _)| *c == column) {
                *w = (*w).min(floor);
            }
        }
        total(&narrow)
    };
    let mut left_out = Vec::new();
    for &(dropped, stage) in droppable {
        if narrowest(&layout, stage) <= limit {
            break;
        }
        layout.retain(|(c, _)| *c != dropped);
        left_out.push((dropped, stage));
    }
    // A column left out for one that came after it may fit without that
    // one: the most important first.
    for &(column, stage) in left_out.iter().rev() {
        let mut with = layout.clone();
        with.push((column, natural[column]));
        with.sort_unstable();
        if narrowest(&with, stage) <= limit {
            layout = with;
        }
    }
    let mut excess = total(&layout).saturating_sub(limit);
    for &(column, floor) in flexible {
        if let Some((_, w)) = layout.iter_mut().find(|(c, _)| *c == column) {
            let cut = excess.min(w.saturating_sub(floor));
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

/// The cells of a table of one-line cells, laid out to fit `limit`
/// columns: the `droppable` columns are left out, in their order, while
/// the table cannot fit with every word whole; then its widest columns are
/// wrapped, at spaces only, down to their longest word; if that is not
/// enough, the widest columns are narrowed further (those of free text
/// before those of single words, such as rule ids) and a word longer than
/// its column is cut with `…`. A word is never broken across lines, so
/// every word shown is whole or a prefix ending in `…`.
fn fit_rows(
    mut rows: Vec<Vec<String>>,
    droppable: &[usize],
    limit: Option<usize>,
) -> Vec<Vec<String>> {
    let Some(limit) = limit else {
        return rows;
    };
    let column_max = |rows: &[Vec<String>], measure: &dyn Fn(&str) -> usize| -> Vec<usize> {
        let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
        (0..columns)
            .map(|c| {
                rows.iter()
                    .filter_map(|row| row.get(c))
                    .map(|cell| measure(cell))
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    };
    let word_width = |cell: &str| cell.split(' ').map(get_string_width).max().unwrap_or(0);
    let total = |w: &[usize]| w.iter().sum::<usize>() + 3 * w.len() + 1;
    // Each column left out shifts those after it: `at` is where it is now.
    let mut dropped: Vec<usize> = Vec::new();
    for &column in droppable {
        if total(&column_max(&rows, &word_width)) <= limit {
            break;
        }
        let at = column - dropped.iter().filter(|d| **d < column).count();
        for row in &mut rows {
            if at < row.len() {
                row.remove(at);
            }
        }
        dropped.push(column);
    }
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let natural = column_max(&rows, &|cell| get_string_width(cell));
    let longest_word = column_max(&rows, &word_width);
    let mut widths = natural.clone();
    // A column of single words (ids, rule ids, statuses) is cut last:
    // free text says less per column.
    let free_text: Vec<bool> = (0..columns)
        .map(|c| {
            rows.iter()
                .skip(1)
                .any(|row| row.get(c).is_some_and(|cell| cell.trim().contains(' ')))
        })
        .collect();
    let identifiers = vec![3; columns];
    // A narrow column (a seq, a count, `yes`) is left whole until the
    // last: wrapping it gains a column or two for a line.
    let narrow = |c: usize| natural[c] <= NARROW;
    let longest_word: Vec<usize> = (0..columns)
        .map(|c| {
            if narrow(c) {
                natural[c]
            } else {
                longest_word[c]
            }
        })
        .collect();
    let text_only: Vec<usize> = (0..columns)
        .map(|c| {
            if free_text[c] && !narrow(c) {
                3
            } else {
                widths[c]
            }
        })
        .collect();
    // Wrap at whole words, widest column first; then cut words, in free
    // text first.
    for floor in [longest_word, text_only, identifiers] {
        while total(&widths) > limit {
            let widest = (0..columns)
                .filter(|&c| widths[c] > floor[c].max(1))
                .max_by_key(|&c| (widths[c], std::cmp::Reverse(c)));
            let Some(c) = widest else { break };
            widths[c] -= 1;
        }
    }
    rows.into_iter()
        .map(|row| {
            row.into_iter()
                .enumerate()
                .map(|(c, cell)| match widths.get(c) {
                    Some(&w) if get_string_width(&cell) > w => wrap_words(&cell, w),
                    _ => cell,
                })
                .collect()
        })
        .collect()
}

/// A column this narrow is wrapped or cut only when nothing else can give.
const NARROW: usize = 8;

/// `text` on lines of at most `width` columns, broken at spaces only; a
/// word longer than `width` is cut to it with `…`.
fn wrap_words(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let word = fit(word, width);
        let needed = get_string_width(&current) + 1 + get_string_width(&word);
        if !current.is_empty() && needed > width {
            lines.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&word);
    }
    lines.push(current);
    lines.join("\n")
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

/// A line of text on lines of at most `width` columns where its words
/// allow: broken at spaces (the spaces between words kept as written),
/// each further line indented four past the line's own indent. A word
/// longer than a line is broken after a `|` or `,` (a list of
/// alternatives) where it has one; else it is kept whole, past the width,
/// for text is not cut.
fn wrap_text(text: &str, width: usize) -> Vec<String> {
    let indent = text.len() - text.trim_start_matches(' ').len();
    let hanging = " ".repeat((indent + 4).min(width / 2));
    // Each word with the spaces before it, as written (`fail  hooks`).
    let mut words: std::collections::VecDeque<(usize, String)> = Default::default();
    let mut gap = 0;
    for piece in text[indent..].split(' ') {
        if piece.is_empty() {
            gap += 1;
        } else {
            words.push_back((if words.is_empty() { 0 } else { gap + 1 }, piece.to_owned()));
            gap = 0;
        }
    }
    let mut lines = Vec::new();
    let mut current = " ".repeat(indent);
    let mut fresh = true;
    while let Some((gap, word)) = words.pop_front() {
        let gap = if fresh { 0 } else { gap };
        let room = width.saturating_sub(get_string_width(&current) + gap);
        if get_string_width(&word) > room {
            // Break a long word after a separator that fits here, if any.
            let cut = word
                .char_indices()
                .filter(|&(at, c)| matches!(c, '|' | ',') && get_string_width(&word[..=at]) <= room)
                .map(|(at, _)| at + 1)
                .next_back()
                .filter(|&at| at < word.len());
            if let Some(at) = cut {
                words.push_front((1, word[at..].to_owned()));
                current.push_str(&" ".repeat(gap));
                current.push_str(&word[..at]);
                lines.push(std::mem::replace(&mut current, hanging.clone()));
                fresh = true;
                continue;
            }
            if !fresh {
                lines.push(std::mem::replace(&mut current, hanging.clone()));
                words.push_front((1, word));
                fresh = true;
                continue;
            }
        }
        current.push_str(&" ".repeat(gap));
        current.push_str(&word);
        fresh = false;
    }
    if !fresh {
        lines.push(current);
    }
    lines
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

    #[test]
    fn text_wraps_at_spaces_and_after_a_separator_of_a_long_list() {
        let line =
            "  - `bash.hard_deny` did not match: writes /dev/sd*|/dev/nvme*|/dev/hd*|/dev/vd*";
        let wrapped = wrap_text(line, 40);
        assert_eq!(
            wrapped,
            [
                "  - `bash.hard_deny` did not match:",
                "      writes /dev/sd*|/dev/nvme*|",
                "      /dev/hd*|/dev/vd*",
            ]
        );
        for l in &wrapped {
            assert!(l.chars().count() <= 40, "{l}");
        }
        // Spaces between words are kept; a word with no place to break is kept whole.
        assert_eq!(
            wrap_text("fail  modes: a b", 12),
            ["fail  modes:", "    a b"]
        );
        let long = format!("path `{}` resolved", "a".repeat(50));
        assert_eq!(wrap_text(&long, 20)[1], format!("    `{}`", "a".repeat(50)));
    }

    #[test]
    fn wrapping_keeps_words_whole_and_cuts_only_a_word_longer_than_the_column() {
        assert_eq!(
            wrap_words("gavel recorded no decision", 12),
            "gavel\nrecorded no\ndecision"
        );
        assert_eq!(wrap_words("ran_without_decision", 10), "ran_witho…");
    }

    #[test]
    fn tables_wrap_free_text_before_cutting_a_rule_id() {
        let rows = vec![
            vec!["rule".to_owned(), "why".to_owned()],
            vec![
                "path.write_requires_approval".to_owned(),
                "write_file mutates workspace content".to_owned(),
            ],
        ];
        // 28 + 10 + 7 columns of borders: the reason wraps, the rule stays.
        let fitted = fit_rows(rows.clone(), &[], Some(45));
        assert_eq!(fitted[1][0], "path.write_requires_approval");
        assert_eq!(fitted[1][1], "write_file\nmutates\nworkspace\ncontent");
        // Narrower: the free text is cut before the rule id.
        let fitted = fit_rows(rows.clone(), &[], Some(40));
        assert_eq!(fitted[1][0], "path.write_requires_approval");
        // A droppable column goes before any word is cut.
        let fitted = fit_rows(rows, &[1], Some(40));
        assert_eq!(fitted[1], vec!["path.write_requires_approval".to_owned()]);
    }

    #[test]
    fn stream_layout_drops_free_text_before_the_rule() {
        // time (no year), id, tool, call, action, rule, status, reason
        let natural = [14, 17, 10, 60, 6, 28, 9, 60];
        let flexible = [(7, 20), (1, 12), (3, 30), (1, 8), (2, 10), (3, 12)];
        let droppable = [(7, 3), (6, 6), (5, 6)];
        let layout = fit_layout(&natural, &flexible, &droppable, Some(100));
        let columns: Vec<usize> = layout.iter().map(|c| c.0).collect();
        assert_eq!(columns, [0, 1, 2, 3, 4, 5]);
        assert_eq!(layout[5], (5, 28));
        let total: usize = layout.iter().map(|c| c.1 + 3).sum::<usize>() + 1;
        assert!(total <= 100);
        assert_eq!(fit_layout(&natural, &flexible, &droppable, None).len(), 8);
    }
}
