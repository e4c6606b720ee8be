//! Words: quote and escape removal over tree-sitter-bash word nodes.
//!
//! Literal parts are unquoted and unescaped the way bash would; expansions
//! and substitutions are kept as their source text and mark the word as
//! not literal, so that the caller can tell `rm` from `$CMD`.

use std::borrow::Cow;

use tree_sitter::Node;

/// How much of a word is known from its text alone. Ordered: a word made of
/// several parts takes the least known of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Known {
    /// Plain text once quotes and escapes are removed.
    Literal,
    /// Contains an unquoted glob or brace pattern (`*`, `?`, `[`, `{a,b}`).
    Pattern,
    /// Contains a parameter or arithmetic expansion (`$HOME`, `${x}`, `$((1))`).
    Variable,
    /// Contains a command or process substitution.
    Substitution,
}

/// A word after quote removal, with what is known about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Word {
    pub text: String,
    pub known: Known,
}

impl Word {
    pub fn literal(text: impl Into<String>) -> Self {
        Word {
            text: text.into(),
            known: Known::Literal,
        }
    }
}

/// Word nodes nest only a few levels (a concatenation holding a string
/// holding an expansion); past this depth the source text is kept as is.
const MAX_WORD_DEPTH: usize = 8;

/// The source text of `node`, clamped to `src` and lossy at odd boundaries.
pub(super) fn node_text<'s>(src: &'s str, node: Node<'_>) -> Cow<'s, str> {
    slice(src, node.start_byte(), node.end_byte())
}

/// `src[a..b]`, clamped; falls back to a lossy copy if the range does not
/// fall on character boundaries.
pub(super) fn slice(src: &str, a: usize, b: usize) -> Cow<'_, str> {
    let b = b.min(src.len());
    let a = a.min(b);
    match src.get(a..b) {
        Some(s) => Cow::Borrowed(s),
        None => String::from_utf8_lossy(&src.as_bytes()[a..b]),
    }
}

/// Characters kept of an expansion or substitution once the verbatim budget
/// is spent.
const SHORT_VERBATIM_CHARS: usize = 32;

/// Evaluates a word node (anything that can be a command name, argument or
/// redirection target) into its text after quote removal.
///
/// Expansions and substitutions are copied verbatim while `budget` (bytes)
/// lasts, then shortened: `$($($(...)))` nests each substitution's text in
/// the word of the command around it, and copying it whole at every level
/// would make time and memory quadratic in the input.
pub(super) fn word(src: &str, node: Node<'_>, budget: &mut usize) -> Word {
    let mut out = Word::literal(String::new());
    push_node(src, node, 0, budget, &mut out);
    out
}

fn raise(out: &mut Word, known: Known) {
    out.known = out.known.max(known);
}

fn push_verbatim(src: &str, node: Node<'_>, known: Known, budget: &mut usize, out: &mut Word) {
    let text = node_text(src, node);
    if text.len() <= *budget {
        *budget -= text.len();
        out.text.push_str(&text);
    } else {
        let mut short = text.chars();
        out.text.extend(short.by_ref().take(SHORT_VERBATIM_CHARS));
        if short.next().is_some() {
            out.text.push('…');
        }
    }
    raise(out, known);
}

fn push_node(src: &str, node: Node<'_>, depth: usize, budget: &mut usize, out: &mut Word) {
    if depth > MAX_WORD_DEPTH {
        push_verbatim(src, node, Known::Variable, budget, out);
        return;
    }
    match node.kind() {
        // A word that is only `[` (the test builtin) has no bracket
        // expression to match with: bash leaves it as it is.
        "word" if depth == 0 && node_text(src, node) == "[" => out.text.push('['),
        "word" | "number" | "variable_name" | "special_variable_name" => {
            unquoted(&node_text(src, node), out);
        }
        "raw_string" => {
            let t = node_text(src, node);
            let inner = t.strip_prefix('\'').unwrap_or(&t);
            out.text.push_str(inner.strip_suffix('\'').unwrap_or(inner));
        }
        "ansi_c_string" => {
            let t = node_text(src, node);
            let inner = t.strip_prefix("$'").unwrap_or(&t);
            ansi_c(inner.strip_suffix('\'').unwrap_or(inner), out);
        }
        "string" => double_quoted(src, node, depth, budget, out),
        "simple_expansion" | "expansion" | "arithmetic_expansion" => {
            push_verbatim(src, node, Known::Variable, budget, out);
        }
        "command_substitution" | "process_substitution" => {
            push_verbatim(src, node, Known::Substitution, budget, out);
        }
        "brace_expression" => push_verbatim(src, node, Known::Pattern, budget, out),
        // Containers: named children are evaluated, the text between them
        // (`=` in an assignment, `$` before a translated string) is unquoted.
        "command_name" | "concatenation" | "variable_assignment" | "translated_string" => {
            // In `$"..."` the `$` belongs to the string syntax.
            let keep_gaps = node.kind() != "translated_string";
            let mut pos = node.start_byte();
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                if keep_gaps && child.start_byte() > pos {
                    unquoted(&slice(src, pos, child.start_byte()), out);
                }
                push_node(src, child, depth + 1, budget, out);
                pos = pos.max(child.end_byte());
            }
            if keep_gaps && node.end_byte() > pos {
                unquoted(&slice(src, pos, node.end_byte()), out);
            }
        }
        // Anonymous tokens used as arguments (`==`, `$`), regexes, extglobs.
        _ if !node.is_named() => out.text.push_str(&node_text(src, node)),
        "regex" | "extglob_pattern" => push_verbatim(src, node, Known::Pattern, budget, out),
        _ => push_verbatim(src, node, Known::Variable, budget, out),
    }
}

/// Unquoted text: a backslash quotes the next character, backslash-newline
/// is a line continuation; unquoted glob characters make a pattern.
fn unquoted(text: &str, out: &mut Word) {
    let mut chars = text.chars();
    let mut brace_open = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(n) => out.text.push(n),
                None => out.text.push('\\'),
            },
            '*' | '?' | '[' => {
                raise(out, Known::Pattern);
                out.text.push(c);
            }
            '{' => {
                brace_open = true;
                out.text.push(c);
            }
            '}' if brace_open => {
                raise(out, Known::Pattern);
                out.text.push(c);
            }
            _ => out.text.push(c),
        }
    }
}

/// A `"..."` string: expansions and substitutions stay as written, and a
/// backslash quotes only `$`, `` ` ``, `"`, `\` and newline.
fn double_quoted(src: &str, node: Node<'_>, depth: usize, budget: &mut usize, out: &mut Word) {
    let full = node_text(src, node);
    let start = node.start_byte() + usize::from(full.starts_with('"'));
    let end = node
        .end_byte()
        .saturating_sub(usize::from(full.len() > 1 && full.ends_with('"')))
        .max(start);
    let mut pos = start;
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        if child.kind() == "string_content" {
            continue;
        }
        if child.start_byte() > pos {
            dq_text(&slice(src, pos, child.start_byte()), out);
        }
        push_node(src, child, depth + 1, budget, out);
        pos = pos.max(child.end_byte());
    }
    if end > pos {
        dq_text(&slice(src, pos, end), out);
    }
}

fn dq_text(text: &str, out: &mut Word) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.text.push(c);
            continue;
        }
        match chars.peek() {
            Some('\n') => {
                chars.next();
            }
            Some(&n @ ('$' | '`' | '"' | '\\')) => {
                chars.next();
                out.text.push(n);
            }
            _ => out.text.push('\\'),
        }
    }
}

/// Decodes the body of an ANSI-C `$'...'` string the way bash does; like
/// bash, a NUL ends the string.
pub(super) fn ansi_c(body: &str, out: &mut Word) {
    let mut bytes: Vec<u8> = Vec::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let Some(e) = chars.next() else {
            bytes.push(b'\\');
            break;
        };
        match e {
            'a' => bytes.push(0x07),
            'b' => bytes.push(0x08),
            'e' | 'E' => bytes.push(0x1b),
            'f' => bytes.push(0x0c),
            'n' => bytes.push(b'\n'),
            'r' => bytes.push(b'\r'),
            't' => bytes.push(b'\t'),
            'v' => bytes.push(0x0b),
            '\\' | '\'' | '"' | '?' => bytes.push(e as u8),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                bytes.push((v & 0xff) as u8);
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v: u32 = 0;
                let mut n = 0;
                while n < max {
                    match chars.peek().and_then(|d| d.to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            chars.next();
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    bytes.push(b'\\');
                    bytes.push(e as u8);
                } else if e == 'x' {
                    bytes.push((v & 0xff) as u8);
                } else {
                    let ch = char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER);
                    let mut buf = [0u8; 4];
                    bytes.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
            }
            'c' => match chars.next() {
                Some(k) if k.is_ascii() => bytes.push((k as u8) & 0x1f),
                Some(k) => {
                    let mut buf = [0u8; 4];
                    bytes.extend_from_slice(k.encode_utf8(&mut buf).as_bytes());
                }
                None => {
                    bytes.extend_from_slice(b"\\c");
                }
            },
            other => {
                bytes.push(b'\\');
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(other.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(nul);
    }
    out.text.push_str(&String::from_utf8_lossy(&bytes));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(body: &str) -> String {
        let mut w = Word::literal("");
        ansi_c(body, &mut w);
        w.text
    }

    #[test]
    fn ansi_c_escapes_decode_like_bash() {
        assert_eq!(decode(r"a\nb"), "a\nb");
        assert_eq!(decode(r"\x41\101\u00e9"), "AAé");
        assert_eq!(decode(r"\'\\"), "'\\");
        assert_eq!(decode(r"ab\0cd"), "ab");
        assert_eq!(decode(r"\q"), "\\q");
        assert_eq!(decode("\\"), "\\");
    }

    #[test]
    fn double_quote_escapes_only_special_characters() {
        let mut w = Word::literal("");
        dq_text(r#"a\$b\"c\d\\"#, &mut w);
        assert_eq!(w.text, r#"a$b"c\d\"#);
    }
}
