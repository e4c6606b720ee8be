//! What a glob pattern could match, as a sequence of path segments: bash
//! brace expansion first, then each segment is literal text, a wildcard
//! pattern (`*`, `?`, `[...]`, `\x` escapes), or `**`.
//!
//! Pure text work, bounded: brace expansion stops at [`MAX_EXPANSIONS`]
//! alternatives or [`MAX_EXPANDED_BYTES`] of text, and a wildcard segment
//! longer than [`MAX_SEGMENT`] is refused; the caller fails closed with the
//! reason given.

/// At most this many alternatives from brace expansion.
pub const MAX_EXPANSIONS: usize = 256;
/// At most this much text, all alternatives together.
pub const MAX_EXPANDED_BYTES: usize = 1 << 20;
/// A wildcard segment longer than this (bytes) is not matched.
pub const MAX_SEGMENT: usize = 256;

/// Whether `word` holds anything pattern syntax could act on.
pub fn is_pattern(word: &str) -> bool {
    word.contains(['*', '?', '[', '{', '\\'])
}

/// One segment of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Plain text (escapes removed).
    Literal(String),
    /// A wildcard pattern, as written.
    Wild(String),
    /// `**`: any number of folders.
    Globstar,
}

/// A pattern split into segments; `absolute` when it starts with `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub absolute: bool,
    pub segments: Vec<Segment>,
}

/// Splits one brace-free alternative into segments.
pub fn split(alternative: &str) -> Split {
    let absolute = alternative.starts_with('/');
    let segments = alternative
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s == "**" {
                Segment::Globstar
            } else if has_wildcard(s) {
                Segment::Wild(s.to_owned())
            } else {
                Segment::Literal(unescape(s))
            }
        })
        .collect();
    Split { absolute, segments }
}

/// Whether `segment` has an unescaped `*`, `?` or `[`.
fn has_wildcard(segment: &str) -> bool {
    let mut escaped = false;
    for c in segment.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

/// `segment` with backslash escapes removed.
fn unescape(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    let mut escaped = false;
    for c in segment.chars() {
        if c == '\\' && !escaped {
            escaped = true;
            continue;
        }
        escaped = false;
        out.push(c);
    }
    out
}

/// Bash brace expansion of `word` (`{a,b}`, nested, `{1..3}`, `{a..c}`);
/// `${` is not a brace. Errors when the result would exceed the bounds.
pub fn expand_braces(word: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut bytes = 0usize;
    let mut pending = vec![word.to_owned()];
    while let Some(current) = pending.pop() {
        match first_group(&current) {
            None => {
                bytes += current.len();
                out.push(current);
            }
            Some((open, close, alternatives)) => {
                for alternative in alternatives.into_iter().rev() {
                    let next =
                        format!("{}{alternative}{}", &current[..open], &current[close + 1..]);
                    bytes += next.len();
                    pending.push(next);
                }
            }
        }
        if out.len() + pending.len() > MAX_EXPANSIONS || bytes > MAX_EXPANDED_BYTES {
            return Err(format!(
                "brace expansion gives more than {MAX_EXPANSIONS} alternatives"
            ));
        }
    }
    Ok(out)
}

/// The first brace group of `word` that expands: its `{` and `}` offsets
/// and its alternatives. One pass with a stack, so linear in `word`.
fn first_group(word: &str) -> Option<(usize, usize, Vec<String>)> {
    let bytes = word.as_bytes();
    // (offset of `{`, offsets of its top-level commas)
    let mut stack: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut best: Option<(usize, usize, Vec<usize>)> = None;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'{' if i > 0 && bytes[i - 1] == b'$' => stack.push((usize::MAX, Vec::new())),
            b'{' => stack.push((i, Vec::new())),
            b',' => {
                if let Some((_, commas)) = stack.last_mut() {
                    commas.push(i);
                }
            }
            b'}' => {
                if let Some((open, commas)) = stack.pop()
                    && open != usize::MAX
                    && best.as_ref().is_none_or(|(b, _, _)| open < *b)
                    && (!commas.is_empty() || sequence(&word[open + 1..i]).is_some())
                {
                    best = Some((open, i, commas));
                }
            }
            _ => {}
        }
        i += 1;
    }
    let (open, close, commas) = best?;
    let inner = &word[open + 1..close];
    if commas.is_empty() {
        return sequence(inner).map(|alternatives| (open, close, alternatives));
    }
    let mut alternatives = Vec::with_capacity(commas.len() + 1);
    let mut start = open + 1;
    for comma in commas {
        alternatives.push(word[start..comma].to_owned());
        start = comma + 1;
    }
    alternatives.push(word[start..close].to_owned());
    Some((open, close, alternatives))
}

/// `a..e`, `1..10` or `1..10..2` expanded; `None` when `inner` is not a sequence.
fn sequence(inner: &str) -> Option<Vec<String>> {
    if inner.len() > 64 {
        return None;
    }
    let parts: Vec<&str> = inner.split("..").collect();
    let (from, to, step) = match parts.as_slice() {
        [a, b] => (*a, *b, None),
        [a, b, s] => (*a, *b, Some(s.parse::<i64>().ok()?)),
        _ => return None,
    };
    let step = step.unwrap_or(1).unsigned_abs().max(1);
    if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        let count = a.abs_diff(b) / step + 1;
        if count > MAX_EXPANSIONS as u64 {
            // Too many: report as many as allowed plus one, so the caller
            // sees the bound crossed.
            return Some(vec![String::new(); MAX_EXPANSIONS + 1]);
        }
        let up = b >= a;
        return Some(
            (0..count)
                .map(|k| {
                    let offset = i64::try_from(k * step).unwrap_or(0);
                    (if up { a + offset } else { a - offset }).to_string()
                })
                .collect(),
        );
    }
    let (mut a, mut b) = (from.chars(), to.chars());
    let (Some(x), None, Some(y), None) = (a.next(), a.next(), b.next(), b.next()) else {
        return None;
    };
    if !x.is_ascii() || !y.is_ascii() {
        return None;
    }
    let (lo, hi) = (x.min(y) as u8, x.max(y) as u8);
    let mut chars: Vec<String> = (lo..=hi)
        .step_by(usize::try_from(step).unwrap_or(1))
        .map(|c| char::from(c).to_string())
        .collect();
    if x > y {
        chars.reverse();
    }
    Some(chars)
}

/// One element of a wildcard segment.
#[derive(Debug, Clone)]
enum Atom {
    Char(char),
    /// `?`
    Any,
    /// `*`
    Star,
    /// `[...]`: negated, ranges; `named` when a `[:class:]` is inside,
    /// taken to match any character.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
        named: bool,
    },
}

fn atoms(segment: &str) -> Vec<Atom> {
    let chars: Vec<char> = segment.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                out.push(Atom::Char(chars[i + 1]));
                i += 2;
                continue;
            }
            '*' => out.push(Atom::Star),
            '?' => out.push(Atom::Any),
            '[' => {
                if let Some((atom, next)) = class(&chars, i) {
                    out.push(atom);
                    i = next;
                    continue;
                }
                out.push(Atom::Char('['));
            }
            c => out.push(Atom::Char(c)),
        }
        i += 1;
    }
    out
}

/// The bracket expression starting at `chars[start] == '['`, and the index
/// after it; `None` when it is not closed (then `[` is literal).
fn class(chars: &[char], start: usize) -> Option<(Atom, usize)> {
    let mut i = start + 1;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut named = false;
    let mut first = true;
    while i < chars.len() {
        let c = chars[i];
        if c == ']' && !first {
            return Some((
                Atom::Class {
                    negated,
                    ranges,
                    named,
                },
                i + 1,
            ));
        }
        first = false;
        if c == '[' && matches!(chars.get(i + 1), Some(':' | '.' | '=')) {
            named = true;
            let close = chars.get(i + 2..)?.windows(2).position(|w| w[1] == ']')?;
            i += close + 4;
            continue;
        }
        let c = if c == '\\' && i + 1 < chars.len() {
            i += 1;
            chars[i]
        } else {
            c
        };
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|&e| e != ']') {
            ranges.push((c, chars[i + 2]));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
    None
}

fn atom_accepts(atom: &Atom, c: char) -> bool {
    match atom {
        Atom::Char(x) => *x == c,
        Atom::Any | Atom::Star => c != '/',
        Atom::Class {
            negated,
            ranges,
            named,
        } => {
            let hit = *named || ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c));
            hit != *negated
        }
    }
}

/// Whether a wildcard segment could match the name `..`: each dot matched
/// by a literal dot or a bracket expression that accepts one (`*` and `?`
/// never match a leading dot, nor `.`/`..` under bash 5.2's globskipdots).
/// Conservative: a bracket is counted even where bash would not let it
/// match a leading dot.
pub fn could_be_dotdot(segment: &str) -> bool {
    // Extended patterns (`@(..)`, `!(x)`, ...) of bash's extglob and of
    // other glob libraries are not modelled: one that could reach a dot
    // counts.
    let extended = ["@(", "!(", "+(", "*(", "?("]
        .iter()
        .any(|open| segment.contains(open));
    if extended && (segment.contains('.') || segment.contains("!(")) {
        return true;
    }
    let atoms = atoms(segment);
    // Positions reachable after consuming 0, 1, 2 dots; stars match empty.
    let mut states = vec![0usize];
    for _ in 0..2 {
        let mut next = Vec::new();
        for state in close_stars(&atoms, &states) {
            if let Some(atom) = atoms.get(state)
                && !matches!(atom, Atom::Star | Atom::Any)
                && atom_accepts(atom, '.')
                && !next.contains(&(state + 1))
            {
                next.push(state + 1);
            }
        }
        states = next;
    }
    close_stars(&atoms, &states).contains(&atoms.len())
}

fn close_stars(atoms: &[Atom], states: &[usize]) -> Vec<usize> {
    let mut out = Vec::new();
    for &s in states {
        let mut s = s;
        loop {
            if !out.contains(&s) {
                out.push(s);
            }
            match atoms.get(s) {
                Some(Atom::Star) => s += 1,
                _ => break,
            }
        }
    }
    out
}

/// A compiled wildcard segment, matched against single names with bash's
/// rules: a leading `.` only by an explicit dot, never `.` or `..`.
#[derive(Debug, Clone)]
pub struct SegmentMatcher {
    atoms: Vec<Atom>,
    explicit_dot: bool,
}

impl SegmentMatcher {
    /// `None` when the segment is too long to match in bounded time.
    pub fn new(segment: &str) -> Option<Self> {
        if segment.len() > MAX_SEGMENT {
            return None;
        }
        let atoms = atoms(segment);
        let explicit_dot = match atoms.first() {
            Some(Atom::Char('.')) => true,
            Some(a @ Atom::Class { .. }) => atom_accepts(a, '.'),
            _ => false,
        };
        Some(Self {
            atoms,
            explicit_dot,
        })
    }

    pub fn matches(&self, name: &str) -> bool {
        if name == "." || name == ".." || (name.starts_with('.') && !self.explicit_dot) {
            return false;
        }
        let name: Vec<char> = name.chars().collect();
        // Classic glob matching with one backtrack point for the last `*`:
        // O(len(atoms) * len(name)) at worst, both bounded.
        let (mut p, mut n) = (0usize, 0usize);
        let mut back: Option<(usize, usize)> = None;
        while n < name.len() {
            match self.atoms.get(p) {
                Some(Atom::Star) => {
                    back = Some((p, n));
                    p += 1;
                }
                Some(atom) if atom_accepts(atom, name[n]) => {
                    p += 1;
                    n += 1;
                }
                _ => match back {
                    Some((bp, bn)) => {
                        p = bp + 1;
                        n = bn + 1;
                        back = Some((bp, bn + 1));
                    }
                    None => return false,
                },
            }
        }
        self.atoms[p.min(self.atoms.len())..]
            .iter()
            .all(|a| matches!(a, Atom::Star))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_expand_like_bash() {
        assert_eq!(
            expand_braces("{..,x}/{..,x}/etc/*").unwrap(),
            ["../../etc/*", "../x/etc/*", "x/../etc/*", "x/x/etc/*"]
        );
        assert_eq!(
            expand_braces("a{b,c{d,e}}f").unwrap(),
            ["abf", "acdf", "acef"]
        );
        assert_eq!(expand_braces("{1..3}").unwrap(), ["1", "2", "3"]);
        assert_eq!(expand_braces("{a}").unwrap(), ["{a}"]);
        assert_eq!(expand_braces("${x,y}").unwrap(), ["${x,y}"]);
        assert_eq!(expand_braces("{.gavel,x}").unwrap(), [".gavel", "x"]);
        assert!(expand_braces(&"{a,b}".repeat(20)).is_err());
        assert!(expand_braces("{1..100000}").is_err());
        let long = "{".repeat(400_000);
        assert_eq!(expand_braces(&long).unwrap(), [long]);
    }

    #[test]
    fn segments_that_could_be_dotdot() {
        for s in [
            "[.][.]",
            ".\\.",
            "[.].",
            ".[!a]",
            ".*.",
            "[[:punct:]].",
            "@(..)",
            "!(x)",
        ] {
            assert!(could_be_dotdot(s), "{s}");
        }
        for s in ["*", "?.", ".*", "??", "[a].", "*.rs"] {
            assert!(!could_be_dotdot(s), "{s}");
        }
    }

    #[test]
    fn names_match_with_bash_dot_rules() {
        let star = SegmentMatcher::new("*").unwrap();
        assert!(star.matches("gavel.toml"));
        assert!(!star.matches(".gavel"));
        let dot = SegmentMatcher::new(".g*").unwrap();
        assert!(dot.matches(".gavel"));
        assert!(!SegmentMatcher::new(".*").unwrap().matches(".."));
        assert!(SegmentMatcher::new("a*b?c").unwrap().matches("axxbyc"));
        assert!(SegmentMatcher::new("[!x]y").unwrap().matches("ay"));
        assert!(SegmentMatcher::new(&"a".repeat(MAX_SEGMENT + 1)).is_none());
    }

    #[test]
    fn splitting_removes_escapes_from_literal_segments() {
        let s = split(".\\./*");
        assert_eq!(
            s.segments,
            [Segment::Literal("..".into()), Segment::Wild("*".into())]
        );
        assert!(split("/etc/**/x").absolute);
    }

    proptest::proptest! {
        #[test]
        fn pattern_work_never_panics(word in "[{}.,*?\\[\\]!^:a-c/$é-]{0,40}") {
            if let Ok(alternatives) = expand_braces(&word) {
                for alternative in alternatives {
                    for segment in split(&alternative).segments {
                        if let Segment::Wild(text) = segment {
                            let _ = could_be_dotdot(&text);
                            if let Some(m) = SegmentMatcher::new(&text) {
                                let _ = m.matches("a.b");
                                let _ = m.matches(".x");
                            }
                        }
                    }
                }
            }
        }
    }
}
