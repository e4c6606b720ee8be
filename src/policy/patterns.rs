//! The pattern lists a rule's conditions hold (`tool`, `path_glob`,
//! `write_glob`, `command_regex`, the globs of a `commands` entry): each as
//! written and in its compiled form, globs compiled at their first use.
//! It knows nothing of rules, requests or facts: it only says whether a
//! text matches.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use globset::{Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

/// A list of patterns as written, and their compiled form.
#[derive(Debug, Clone)]
pub(super) struct Patterns<T> {
    pub written: Vec<String>,
    pub compiled: T,
}

/// Globs as written, compiled at their first use. A policy is loaded for
/// every call and most calls consult few of its globs: compiling them all
/// (the built-in disk list) would cost more than the rest of a decision. A
/// checked load ([`Policy::from_toml`](super::Policy::from_toml), and the per-call path for a policy
/// the log has not recorded yet) compiles every one, to refuse a bad glob
/// with the rule and key that hold it.
#[derive(Debug, Clone)]
pub(super) struct Globs {
    /// The policy key the globs come from, for errors.
    key: &'static str,
    /// Whether `*` stops at `/` (paths) or not (programs, arguments).
    paths: bool,
    /// Shared by the policy's clones: a resident process that hands out a
    /// kept parse compiles each glob once (`policy::memoize_parses`).
    compiled: Arc<OnceLock<Result<Compiled, String>>>,
}

#[derive(Debug, Clone)]
struct Compiled {
    /// Globs with no special character match exactly their own text: a
    /// set lookup, not a glob match (`sudo`, `rm` in a program list).
    literals: BTreeSet<String>,
    /// Globs of a shape a comparison of strings decides (`.gavel/**`,
    /// `**/.env`, `mcp__*`): most of what policies write, and building a
    /// glob set costs more than the rest of a decision.
    shapes: Vec<Shape>,
    patterns: Patterned,
}

/// A glob that is a literal text and one `*` or `**` in a place that makes
/// it a prefix, suffix or path test. Each matches exactly what globset
/// matches for the same glob (`shapes_match_what_globset_matches`).
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    /// `LIT/**`: anything beneath the folder `LIT`.
    Beneath(String),
    /// `**/LIT`: `LIT`, at the top or beneath any folder.
    Named(String),
    /// `**/LIT/**`: anything beneath a folder `LIT` anywhere; held as
    /// `/LIT/`, so that one substring search finds it (overlapping
    /// occurrences included: `//` in `.////a`).
    BeneathNamed(String),
    /// `LIT*`: starts with `LIT` (and, for paths, no `/` after it).
    Prefix(String),
    /// `*LIT`: ends with `LIT` (and, for paths, no `/` before it).
    Suffix(String),
    /// `**/LIT*`: at the top or beneath any folder, starts with `LIT`
    /// (`**/id_rsa*`, `**/.env.*`).
    NamedPrefix(String),
    /// `**/*LIT`: at the top or beneath any folder, ends with `LIT` (`**/*.pem`).
    NamedSuffix(String),
}

impl Shape {
    fn of(glob: &str) -> Option<Self> {
        let literal = |s: &str| is_literal(s) && !s.is_empty();
        if let Some(inner) = glob.strip_prefix("**/").and_then(|g| g.strip_suffix("/**")) {
            return literal(inner).then(|| Shape::BeneathNamed(format!("/{inner}/")));
        }
        if let Some(name) = glob.strip_prefix("**/") {
            if literal(name) {
                return Some(Shape::Named(name.to_owned()));
            }
            let one_star = |lit: &str| literal(lit) && !lit.starts_with('*') && !lit.ends_with('*');
            if let Some(prefix) = name.strip_suffix('*').filter(|p| one_star(p)) {
                return Some(Shape::NamedPrefix(prefix.to_owned()));
            }
            if let Some(suffix) = name.strip_prefix('*').filter(|s| one_star(s)) {
                return Some(Shape::NamedSuffix(suffix.to_owned()));
            }
            return None;
        }
        if let Some(folder) = glob.strip_suffix("/**") {
            return literal(folder).then(|| Shape::Beneath(folder.to_owned()));
        }
        // One `*`, not part of a `**`: a `**` that is not a whole path
        // component is globset's `*` too, but left to globset.
        if let Some(prefix) = glob.strip_suffix('*') {
            return (is_literal(prefix) && !prefix.ends_with('*'))
                .then(|| Shape::Prefix(prefix.to_owned()));
        }
        if let Some(suffix) = glob.strip_prefix('*') {
            return (is_literal(suffix) && !suffix.starts_with('*'))
                .then(|| Shape::Suffix(suffix.to_owned()));
        }
        None
    }

    /// Whether `text` matches; `paths`: `*` does not match `/`.
    fn is_match(&self, text: &str, paths: bool) -> bool {
        let slash_free = |rest: &str| !paths || !rest.contains('/');
        match self {
            Shape::Beneath(folder) => text
                .strip_prefix(folder.as_str())
                .is_some_and(|rest| rest.starts_with('/')),
            Shape::Named(name) => text
                .strip_suffix(name.as_str())
                .is_some_and(|head| head.is_empty() || head.ends_with('/')),
            Shape::BeneathNamed(slashed) => {
                text.starts_with(&slashed[1..]) || text.contains(slashed.as_str())
            }
            Shape::Prefix(prefix) => text.strip_prefix(prefix.as_str()).is_some_and(slash_free),
            Shape::Suffix(suffix) => text.strip_suffix(suffix.as_str()).is_some_and(slash_free),
            Shape::NamedPrefix(prefix) => {
                tails(text).any(|tail| tail.strip_prefix(prefix.as_str()).is_some_and(slash_free))
            }
            Shape::NamedSuffix(suffix) => {
                tails(text).any(|tail| tail.strip_suffix(suffix.as_str()).is_some_and(slash_free))
            }
        }
    }
}

/// `text` and each of its ends that starts a path component (after a `/`):
/// what `**/` leaves to match.
fn tails(text: &str) -> impl Iterator<Item = &str> {
    std::iter::once(text).chain(text.match_indices('/').map(|(i, _)| &text[i + 1..]))
}

#[derive(Debug, Clone)]
enum Patterned {
    None,
    Set(GlobSet),
    /// Should the combined set exceed the regex engine's size limit, each
    /// glob is matched on its own (which cannot fail).
    Each(Vec<GlobMatcher>),
}

/// Whether `glob` matches only its own text.
fn is_literal(glob: &str) -> bool {
    !glob.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

impl Globs {
    pub(super) fn new(key: &'static str, paths: bool) -> Self {
        Self {
            key,
            paths,
            compiled: Arc::new(OnceLock::new()),
        }
    }

    fn compile(&self, written: &[String]) -> Result<Compiled, String> {
        let (literals, patterned): (Vec<&String>, Vec<&String>) =
            written.iter().partition(|g| is_literal(g));
        let mut shapes = Vec::new();
        let mut rest = Vec::new();
        for glob in patterned {
            match Shape::of(glob) {
                Some(shape) => shapes.push(shape),
                None => rest.push(glob),
            }
        }
        let globs = rest
            .iter()
            .map(|pattern| {
                GlobBuilder::new(pattern)
                    .literal_separator(self.paths)
                    .build()
                    .map_err(|e| {
                        format!("invalid glob `{pattern}` in `{}`: {}", self.key, e.kind())
                    })
            })
            .collect::<Result<Vec<Glob>, _>>()?;
        let mut set = GlobSetBuilder::new();
        for glob in &globs {
            set.add(glob.clone());
        }
        Ok(Compiled {
            literals: literals.into_iter().cloned().collect(),
            shapes,
            patterns: match set.build() {
                _ if globs.is_empty() => Patterned::None,
                Ok(set) => Patterned::Set(set),
                Err(_) => Patterned::Each(globs.iter().map(Glob::compile_matcher).collect()),
            },
        })
    }
}

impl Patterns<Globs> {
    fn compiled(&self) -> &Result<Compiled, String> {
        self.compiled
            .compiled
            .get_or_init(|| self.compiled.compile(&self.written))
    }

    /// Whether `text` matches one of the globs; never, should they not
    /// compile (a rule holding them then decides nothing: `Rule::broken`).
    pub(super) fn is_match(&self, text: &str) -> bool {
        let Ok(compiled) = self.compiled() else {
            return false;
        };
        compiled.literals.contains(text)
            || compiled
                .shapes
                .iter()
                .any(|s| s.is_match(text, self.compiled.paths))
            || match &compiled.patterns {
                Patterned::None => false,
                Patterned::Set(set) => set.is_match(text),
                Patterned::Each(each) => each.iter().any(|m| m.is_match(text)),
            }
    }

    /// Whether every text `other` matches, these match too, provably from
    /// the globs as written: each of `other`'s is one of these, or matches
    /// only its own text and that text matches one of these.
    pub(super) fn covers(&self, other: &Self) -> bool {
        other
            .written
            .iter()
            .all(|g| self.written.contains(g) || (is_literal(g) && self.is_match(g)))
    }

    /// Compiles the globs now: the first that does not compile, named.
    pub(super) fn check(&self) -> Result<(), String> {
        self.compiled().as_ref().map(|_| ()).map_err(Clone::clone)
    }

    /// Why globs that were used did not compile, if they did not.
    pub(super) fn broken(&self) -> Option<&str> {
        match self.compiled.compiled.get() {
            Some(Err(problem)) => Some(problem),
            _ => None,
        }
    }
}

/// Refuses an empty list under `key`.
pub(super) fn non_empty_list<T>(key: &str, list: &[T]) -> Result<(), String> {
    if list.is_empty() {
        return Err(format!("`{key}` must not be an empty list"));
    }
    Ok(())
}

/// The globs of policy key `key` as written, compiled at their first use;
/// `paths`: `*` does not match `/`.
pub(super) fn globs(
    key: &'static str,
    written: Vec<String>,
    paths: bool,
) -> Result<Patterns<Globs>, String> {
    non_empty_list(key, &written)?;
    Ok(Patterns {
        written,
        compiled: Globs::new(key, paths),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn globset_matches(glob: &str, text: &str, paths: bool) -> bool {
        GlobBuilder::new(glob)
            .literal_separator(paths)
            .build()
            .unwrap()
            .compile_matcher()
            .is_match(text)
    }

    #[test]
    fn shapes_are_recognised_and_the_rest_left_to_globset() {
        let shape = |g| Shape::of(g);
        assert_eq!(shape(".gavel/**"), Some(Shape::Beneath(".gavel".into())));
        assert_eq!(shape("**/.env"), Some(Shape::Named(".env".into())));
        assert_eq!(
            shape("**/.git/hooks/**"),
            Some(Shape::BeneathNamed("/.git/hooks/".into()))
        );
        assert_eq!(shape("mcp__*"), Some(Shape::Prefix("mcp__".into())));
        assert_eq!(shape("*.pem"), Some(Shape::Suffix(".pem".into())));
        assert_eq!(shape("**/*.pem"), Some(Shape::NamedSuffix(".pem".into())));
        assert_eq!(
            shape("**/id_rsa*"),
            Some(Shape::NamedPrefix("id_rsa".into()))
        );
        assert!(
            shape("**/.env.*")
                .unwrap()
                .is_match("config/.env.local", true)
        );
        assert!(!shape("**/.env.*").unwrap().is_match(".env.d/x", true));
        // Overlapping occurrences of the folder: `//` in `.////a` is
        // beneath `//` at offset 2, not at 1 or 3 (found by the property test).
        assert!(shape("**////**").unwrap().is_match(".////a", false));
        for other in [
            "**",
            "**/**.pem",
            "**/*a*",
            "a/*/b",
            "a**",
            "**a",
            "*a*",
            "[ab]*",
            "{a,b}/**",
            "a\\*",
            "**/",
        ] {
            assert_eq!(shape(other), None, "{other}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn shapes_match_what_globset_matches(
            literal in "[a./]{1,4}",
            text in "[a./]{0,9}",
            form in 0usize..7,
            paths: bool,
        ) {
            let glob = match form {
                0 => format!("{literal}/**"),
                1 => format!("**/{literal}"),
                2 => format!("**/{literal}/**"),
                3 => format!("{literal}*"),
                4 => format!("*{literal}"),
                5 => format!("**/{literal}*"),
                _ => format!("**/*{literal}"),
            };
            if let Some(shape) = Shape::of(&glob) {
                prop_assert_eq!(
                    shape.is_match(&text, paths),
                    globset_matches(&glob, &text, paths),
                    "glob {} text {} paths {}", glob, text, paths
                );
            }
        }
    }
}
