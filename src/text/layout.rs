//! The layout of human output, as pure functions of strings and widths:
//! a cell cut to its column, a table's columns fitted to a width, text
//! wrapped at its words. Printing them, and finding the width to fit, is
//! the command line's (`cli/render.rs`).

use std::borrow::Cow;

use tabled::grid::util::string::{get_char_width, get_string_width};

use super::escape;

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

/// Each column's width before a table is fitted: its longest cell among
/// `rows`, cut to its cap in `caps` (if it has one), but never narrower
/// than its header.
pub fn natural_widths(headers: &[String], rows: &[Vec<String>], caps: &[usize]) -> Vec<usize> {
    headers
        .iter()
        .enumerate()
        .map(|(i, header)| {
            let longest = rows
                .iter()
                .map(|row| row.get(i).map_or(0, |c| get_string_width(c)))
                .max()
                .unwrap_or(0);
            let cap = caps.get(i).copied().unwrap_or(usize::MAX);
            longest.min(cap).max(get_string_width(header))
        })
        .collect()
}

/// The columns to show and their widths, from their natural widths, to
/// fit `limit`: droppable columns are left out (in order) while the rest
/// cannot fit with the flexible entries up to its stage applied, and put
/// back, most important first, where they then fit; then the flexible
/// columns are narrowed in their order, each to its floor, then any
/// column, widest first, to 3. A table that cannot fit stays at its
/// narrowest.
pub fn fit_layout(
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
pub fn one_line(text: &str) -> String {
    escape(&text.replace(['\n', '\r'], " ")).into_owned()
}

/// The cells of a table of one-line cells, laid out to fit `limit`
/// columns: the `droppable` columns are left out, in their order, while
/// the table cannot fit with every word whole; then its widest columns are
/// wrapped, at spaces only, down to their longest word; if that is not
/// enough, the widest columns are narrowed further (those of free text
/// before those of single words, such as rule ids) and a word longer than
/// its column is cut with `…`. A word is never broken across lines, so
/// every word shown is whole or a prefix ending in `…`.
pub fn fit_rows(
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

/// A line of text on lines of at most `width` columns where its words
/// allow: broken at spaces (the spaces between words kept as written),
/// each further line indented four past the line's own indent. A word
/// longer than a line is broken after a `|` or `,` (a list of
/// alternatives) where it has one; else it is kept whole, past the width,
/// for text is not cut.
pub fn wrap_text(text: &str, width: usize) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn natural_widths_are_the_longest_cell_within_its_cap_and_the_header() {
        let headers = ["id".to_owned(), "reason".to_owned(), "n".to_owned()];
        let rows = vec![
            vec!["a1".to_owned(), "a long reason".to_owned(), "12".to_owned()],
            vec!["b".to_owned(), "x".to_owned()],
        ];
        assert_eq!(natural_widths(&headers, &rows, &[10, 5]), [2, 6, 2]);
        assert_eq!(natural_widths(&headers, &[], &[]), [2, 6, 1]);
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
