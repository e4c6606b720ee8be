//! Words: quote and escape removal over tree-sitter-bash word nodes.
//!
//! Literal parts are unquoted and unescaped the way bash would; expansions
//! and substitutions are kept as their source text and mark the word as
//! not literal, so that the caller can tell `rm` from `$CMD`. A bound
//! `for` loop variable is replaced by its word here ([`Binding`]); which
//! loops and words may be bound is decided in `loops.rs`. Both readers
//! take their word-level text helpers from here: backtick unescaping and
//! the snippets of source text quoted in phrases.

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

/// Whether a word holds the value of a `for` loop's variable (see
/// `loops.rs`). Ordered like [`Known`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Bound {
    /// No loop variable was substituted.
    #[default]
    No,
    /// A loop variable's word was substituted.
    Value,
    /// A glob's pattern was substituted for an unquoted use of its
    /// variable: bash splits a match holding a blank into several words.
    Split,
}

/// A word of a loop's list, as the variable holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Item {
    /// The word after quote removal; for a glob, the pattern as written.
    pub text: String,
    /// Whether the word is a glob: the variable takes each of its matches.
    pub pattern: bool,
}

/// A loop variable bound to one word of its list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Binding {
    pub name: String,
    pub item: Item,
}

/// The innermost binding of `name`.
pub(super) fn lookup<'b>(bindings: &'b [Binding], name: &str) -> Option<&'b Item> {
    bindings
        .iter()
        .rev()
        .find(|b| b.name == name)
        .map(|b| &b.item)
}

/// A word after quote removal, with what is known about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Word {
    pub text: String,
    pub known: Known,
    pub bound: Bound,
}

impl Word {
    pub fn literal(text: impl Into<String>) -> Self {
        Word {
            text: text.into(),
            known: Known::Literal,
            bound: Bound::No,
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
///
/// `$NAME` and `${NAME}` of a bound loop variable (see `loops.rs`) are
/// replaced by its word.
pub(super) fn word(src: &str, node: Node<'_>, budget: &mut usize, bindings: &[Binding]) -> Word {
    let mut out = Word::literal(String::new());
    let mut cx = Cx {
        src,
        budget,
        bindings,
    };
    push_node(&mut cx, node, 0, false, &mut out);
    out
}

/// What evaluating a word needs besides the node.
struct Cx<'a, 'b> {
    src: &'a str,
    budget: &'b mut usize,
    bindings: &'b [Binding],
}

fn raise(out: &mut Word, known: Known) {
    out.known = out.known.max(known);
}

fn push_verbatim(cx: &mut Cx<'_, '_>, node: Node<'_>, known: Known, out: &mut Word) {
    let text = node_text(cx.src, node);
    if text.len() <= *cx.budget {
        *cx.budget -= text.len();
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

fn push_node(cx: &mut Cx<'_, '_>, node: Node<'_>, depth: usize, quoted: bool, out: &mut Word) {
    if depth > MAX_WORD_DEPTH {
        push_verbatim(cx, node, Known::Variable, out);
        return;
    }
    let src = cx.src;
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
        "string" => double_quoted(cx, node, depth, out),
        "simple_expansion" | "expansion" if substitute(cx, node, quoted, out) => {}
        "simple_expansion" | "expansion" | "arithmetic_expansion" => {
            push_verbatim(cx, node, Known::Variable, out);
        }
        "command_substitution" | "process_substitution" => {
            push_verbatim(cx, node, Known::Substitution, out);
        }
        "brace_expression" => push_verbatim(cx, node, Known::Pattern, out),
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
                push_node(cx, child, depth + 1, quoted, out);
                pos = pos.max(child.end_byte());
            }
            if keep_gaps && node.end_byte() > pos {
                unquoted(&slice(src, pos, node.end_byte()), out);
            }
        }
        // Anonymous tokens used as arguments (`==`, `$`), regexes, extglobs.
        _ if !node.is_named() => out.text.push_str(&node_text(src, node)),
        "regex" | "extglob_pattern" => push_verbatim(cx, node, Known::Pattern, out),
        _ => push_verbatim(cx, node, Known::Variable, out),
    }
}

/// `$NAME` or `${NAME}` of a bound loop variable: its word, a pattern
/// for a glob. Returns whether it was one.
fn substitute(cx: &mut Cx<'_, '_>, node: Node<'_>, quoted: bool, out: &mut Word) -> bool {
    if cx.bindings.is_empty() {
        return false;
    }
    let text = node_text(cx.src, node);
    let name = match text.strip_prefix("${") {
        Some(inner) => inner.strip_suffix('}'),
        None => text.strip_prefix('$'),
    };
    let Some(item) = name.and_then(|n| lookup(cx.bindings, n)) else {
        return false;
    };
    out.text.push_str(&item.text);
    let bound = if item.pattern {
        raise(out, Known::Pattern);
        if quoted { Bound::Value } else { Bound::Split }
    } else {
        Bound::Value
    };
    out.bound = out.bound.max(bound);
    true
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
fn double_quoted(cx: &mut Cx<'_, '_>, node: Node<'_>, depth: usize, out: &mut Word) {
    let src = cx.src;
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
        push_node(cx, child, depth + 1, true, out);
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

/// Characters of source text quoted in a phrase.
pub(super) const SNIPPET_CHARS: usize = 60;

/// Quotes `text` for a phrase, shortened to [`SNIPPET_CHARS`] characters.
pub(super) fn snippet(text: &str) -> String {
    let mut out: String = text.chars().take(SNIPPET_CHARS).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// The text of a backtick substitution as bash parses it: a backslash
/// before `` ` ``, `\\` or `$` is removed, and before `"` too inside double
/// quotes.
pub(super) fn unescape_backticks(inner: &str, in_double_quotes: bool) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
            && (matches!(n, '`' | '\\' | '$') || (in_double_quotes && n == '"'))
        {
            out.push(n);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
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
