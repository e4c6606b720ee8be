//! Text from the record made safe to show to a person: control
//! characters written as escapes, and a cell's worth of one line; its
//! layout in tables and lines of a given width is [`layout`]'s.

use std::borrow::Cow;

pub mod layout;

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

/// `1 case`, `2 cases`.
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
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
