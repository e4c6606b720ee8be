//! `for NAME in WORDS; do LIST; done` over literal words and globs.
//!
//! Bash assigns each word of the list to NAME in turn and runs LIST once
//! per word. Where the words are known from the text (literal words, or
//! globs, whose matches are exactly the values NAME takes), both readers
//! list LIST's simple commands once per word, with every `$NAME` and
//! `${NAME}` replaced by the word: `for d in src docs; do ls "$d"; done`
//! runs `ls src` and `ls docs`. This module holds what both readers must
//! decide alike (which names and words qualify, what a loop may cost) so
//! that their readings can still be compared.
//!
//! Expansion is bounded: at most [`MAX_ITEMS`] words per loop, at most
//! [`MAX_COMMANDS`] commands listed by expansions in one reading, and a
//! budget of text read again ([`BUDGET`]) shared by every reading of one
//! script, its nested `sh -c` scripts included, so that the work stays
//! linear in the input.

use std::cell::Cell;

use super::word::{Item, Known};

/// At most this many words in a loop's list.
pub(super) const MAX_ITEMS: usize = 64;

/// Loops are expanded at most this many inside one another.
pub(super) const MAX_DEPTH: usize = 8;

/// At most this many simple commands are listed, by one reading of one
/// script (the walk counts those of the scripts it runs with `sh -c`
/// too), while a loop variable is bound; past it the loop is read as
/// before (once, its variable kept as text) and the script is unprovable.
pub(super) const MAX_COMMANDS: usize = 256;

/// Bytes of loop bodies read again, and of words substituted into them,
/// for one script (its readings and nested scripts together).
const BUDGET: usize = 64 * 1024;

/// Names bash or the programs it runs read from the shell or the
/// environment: a loop over one of them changes more than its uses.
const RESERVED: &[&str] = &[
    "PATH",
    "IFS",
    "HOME",
    "PWD",
    "OLDPWD",
    "CDPATH",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "GLOBIGNORE",
    "LANG",
    "PS4",
    "PROMPT_COMMAND",
    "http_proxy",
    "https_proxy",
    "ftp_proxy",
    "no_proxy",
    "all_proxy",
];

/// Whether a loop over `name` may be expanded: a plain name holding a
/// lowercase letter (names of the environment, which a loop would export
/// to the programs in its body when they came from there, are upper
/// case: `LD_PRELOAD`, `GIT_DIR`, `PAGER`), none of [`RESERVED`], and no
/// `LC_*` or special parameter.
pub(super) fn name_ok(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && b.iter().any(u8::is_ascii_lowercase)
        && !RESERVED.contains(&name)
        && !name.starts_with("LC_")
}

/// The word a loop's list holds, if it can be expanded: `raw` is its
/// source text, `value` its text after quote removal and `known` what a
/// reader knows of it. A literal word may be quoted; its value holds
/// only plain bytes (no `$`, backquote, brace, tilde, backslash, quote,
/// blank or other byte that a later expansion could read otherwise). A
/// glob is written without any quoting, so that its text is its pattern.
pub(super) fn item(raw: &str, value: &str, known: Known) -> Option<Item> {
    if value.is_empty() || known > Known::Pattern || raw.contains(['$', '`']) {
        return None;
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./,:@%+=^#!".contains(c) || !c.is_ascii();
    let glob = |c: char| matches!(c, '*' | '?' | '[' | ']');
    if !value.chars().all(|c| plain(c) || glob(c)) {
        return None;
    }
    let pattern = value.contains(glob);
    if pattern && (known != Known::Pattern || raw != value) {
        return None;
    }
    Some(Item {
        text: value.to_owned(),
        pattern,
    })
}

/// Builtins and keywords that set a variable named by a word.
const SETTERS: &[&str] = &[
    "read",
    "mapfile",
    "readarray",
    "getopts",
    "unset",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "printf",
    "wait",
    "let",
    "for",
    "select",
    "coproc",
];

/// Whether a loop's `body` (its text between `do` and `done`) leaves its
/// variable `name` as the loop set it, as far as the text shows: no
/// `NAME=`, `NAME+=`, `NAME[`, `NAME++`, `NAME--`, `${NAME:=`, and no
/// mention of NAME other than `$NAME` and `${NAME}` in a body that names
/// a builtin setting variables by name (`read NAME`, `for NAME`). Both
/// readers decide with it, on the same text. What the text cannot show
/// (`read "$v"`) the walk names as unprovable.
pub(super) fn body_keeps(body: &str, name: &str) -> bool {
    let b = body.as_bytes();
    let is_name = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut bare = false;
    let mut setter = false;
    let mut i = 0;
    while i < b.len() {
        if !is_name(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_name(b[i]) {
            i += 1;
        }
        let token = &body[start..i];
        let after = &body[i..];
        if token != name {
            setter |= SETTERS.contains(&token);
            continue;
        }
        let before = &body[..start];
        let reference = before.ends_with('$') || (before.ends_with("${") && after.starts_with('}'));
        if reference {
            continue;
        }
        if ["=", "+=", "[", "++", "--", ":="]
            .iter()
            .any(|op| after.starts_with(op))
        {
            return false;
        }
        bare = true;
    }
    !(bare && setter)
}

/// Whether a loop whose body's text is `body` may be expanded, once
/// per word of `items`, within the budget, which this takes from: the
/// scan of the body itself first, then every pass ([`pass_cost`]). Both
/// readers decide with it, on the same text.
pub(super) fn expandable(body: &str, name: &str, items: &[Item]) -> bool {
    reserve(body.len())
        && body_keeps(body, name)
        && reserve(pass_cost(body, name, items).saturating_mul(items.len()))
}

/// How many times `body` refers to `name` as `$NAME` or `${NAME}` (as
/// text: quoted references count too).
pub(super) fn references(body: &str, name: &str) -> usize {
    let b = body.as_bytes();
    let n = name.as_bytes();
    let mut count = 0;
    let mut i = 0;
    while let Some(at) = b[i..].iter().position(|&c| c == b'$') {
        let start = i + at + 1;
        i = start;
        let rest = &b[start..];
        let (rest, braced) = match rest.strip_prefix(b"{") {
            Some(r) => (r, true),
            None => (rest, false),
        };
        if let Some(after) = rest.strip_prefix(n) {
            let ends = match after.first() {
                Some(&c) => !(c.is_ascii_alphanumeric() || c == b'_'),
                None => true,
            };
            if ends && (!braced || after.first() == Some(&b'}')) {
                count += 1;
            }
        }
    }
    count
}

/// What one pass over a loop's body costs: its text, read again, and
/// every reference to the variable replaced by the longest word.
pub(super) fn pass_cost(body: &str, name: &str, items: &[Item]) -> usize {
    let longest = items.iter().map(|i| i.text.len()).max().unwrap_or(0);
    body.len()
        .saturating_add(references(body, name).saturating_mul(longest))
        .max(1)
}

thread_local! {
    /// What is left of [`BUDGET`] for the script being analysed, or
    /// `None` outside an analysis.
    static LEFT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Runs `f` inside a budget scope: the outermost call opens one with the
/// whole [`BUDGET`]; calls inside it (nested scripts, the second reader)
/// share it.
pub(super) fn scope<R>(f: impl FnOnce() -> R) -> R {
    struct Close(bool);
    impl Drop for Close {
        fn drop(&mut self) {
            if self.0 {
                LEFT.with(|l| l.set(None));
            }
        }
    }
    let opened = LEFT.with(|l| {
        if l.get().is_none() {
            l.set(Some(BUDGET));
            true
        } else {
            false
        }
    });
    let _close = Close(opened);
    f()
}

/// Takes `cost` from the budget, if that much is left.
pub(super) fn reserve(cost: usize) -> bool {
    LEFT.with(|l| match l.get() {
        Some(left) if left >= cost => {
            l.set(Some(left - cost));
            true
        }
        Some(_) => false,
        // Outside a scope (a reader used on its own): no budget at all.
        None => false,
    })
}

/// Where `src` refers to a variable as `$NAME`, `${NAME`, `${#NAME` or
/// `${!NAME` (as text, quoted or not), for each name: its offset and the
/// name.
pub(super) fn all_references(src: &str) -> impl Iterator<Item = (usize, &str)> {
    let b = src.as_bytes();
    b.iter()
        .enumerate()
        .filter(|&(_, &c)| c == b'$')
        .filter_map(move |(at, _)| {
            let mut start = at + 1;
            if b.get(start) == Some(&b'{') {
                start += 1;
                if matches!(b.get(start), Some(b'#' | b'!')) {
                    start += 1;
                }
            }
            let len = b[start.min(b.len())..]
                .iter()
                .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                .unwrap_or(b.len() - start.min(b.len()));
            let name = src.get(start..start + len)?;
            name.as_bytes()
                .first()
                .is_some_and(|c| !c.is_ascii_digit())
                .then_some((at, name))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["d", "f", "file", "dir_1", "_x", "aB"] {
            assert!(name_ok(ok), "{ok}");
        }
        for bad in [
            "",
            "1a",
            "PATH",
            "IFS",
            "LC_ALL",
            "LANG",
            "_",
            "X",
            "GIT_DIR",
            "a-b",
            "http_proxy",
        ] {
            assert!(!name_ok(bad), "{bad}");
        }
    }

    #[test]
    fn items() {
        let lit = |raw: &str, value: &str| item(raw, value, Known::Literal);
        assert_eq!(lit("src", "src").map(|i| i.pattern), Some(false));
        assert_eq!(lit("'a.b'", "a.b").map(|i| i.pattern), Some(false));
        assert_eq!(lit("-rf", "-rf").map(|i| i.pattern), Some(false));
        assert!(lit("'a b'", "a b").is_none());
        assert!(lit("''", "").is_none());
        assert!(lit("'$x'", "$x").is_none());
        assert!(lit("'*'", "*").is_none());
        assert!(lit("\\*", "*").is_none());
        assert!(lit("'~'", "~").is_none());
        assert!(lit("'a\\b'", "a\\b").is_none());
        let glob = item("docs/*.md", "docs/*.md", Known::Pattern);
        assert_eq!(glob.map(|i| i.pattern), Some(true));
        assert!(item("\"d\"/*", "d/*", Known::Pattern).is_none());
        assert!(item("$x", "$x", Known::Variable).is_none());
        assert!(item("{a,b}", "{a,b}", Known::Pattern).is_none());
    }

    #[test]
    fn a_body_that_sets_its_variable_is_not_expanded() {
        for keeps in [
            "ls \"$d\"/; echo ${d}",
            "file \"$d\"",
            "grep -n export \"$d\"",
            "echo d; ls $d",
            "ls $dd; dd=1",
        ] {
            assert!(body_keeps(keeps, "d"), "{keeps}");
        }
        for sets in [
            "d=1; ls $d",
            "d+=x",
            "d[0]=x",
            "read d; ls $d",
            "for d in a; do ls; done",
            "echo ${d:=x}",
            "((d++))",
            "unset d",
            "printf -v d x",
        ] {
            assert!(!body_keeps(sets, "d"), "{sets}");
        }
    }

    #[test]
    fn references_are_counted_as_text() {
        assert_eq!(references("ls \"$d\"/ ${d} $dx ${dx} ${#d} $d", "d"), 3);
        assert_eq!(references("", "d"), 0);
        let found: Vec<(usize, &str)> = all_references("a $d ${e} ${#f} $1 $").collect();
        assert_eq!(found, vec![(2, "d"), (5, "e"), (10, "f")]);
    }

    #[test]
    fn the_budget_is_shared_inside_a_scope() {
        assert!(!reserve(1));
        scope(|| {
            assert!(reserve(BUDGET - 10));
            scope(|| assert!(!reserve(11)));
            assert!(reserve(10));
        });
        scope(|| assert!(reserve(BUDGET)));
    }
}
