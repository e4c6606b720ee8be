//! The pattern lists a rule's conditions hold (`tool`, `path_glob`,
//! `write_glob`, `command_regex`, the globs of a `commands` entry): each as
//! written and in its compiled form, globs compiled at their first use.
//! It knows nothing of rules, requests or facts: it only says whether a
//! text matches.

use std::collections::HashSet;
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
    /// hash lookup, not a glob match (`sudo`, `rm` in a program list).
    literals: HashSet<String>,
    patterns: Patterned,
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
        let globs = patterned
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
