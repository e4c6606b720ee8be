//! The paths rung: folder and extension globs over a tool's paths (a file
//! tool's, or an MCP tool's declared path arguments), and a literal path
//! where no glob is supported. A call is covered by a glob when each of its
//! paths is; the calls it must not cover are indexed by the globs their
//! own paths suggest, and the proof then matches every chosen rule against
//! every call exactly.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use globset::{GlobBuilder, GlobMatcher};

use super::{
    Alternative, Ask, Blockers, Candidate, Refuse, RuleSpec, Rung, anchor, approved, described,
    learned, rule_id,
};
use crate::suggest::observe::Observation;
use crate::suggest::shape::Shape;

/// The ways a path glob may be written, narrowest first.
fn globs_for(path: &str) -> Vec<(u8, String)> {
    let escaped = globset::escape(path);
    let mut out = vec![(0, escaped)];
    let (dir, name) = match path.rsplit_once('/') {
        Some((dir, name)) => (Some(dir), name),
        None => (None, path),
    };
    let ext = name
        .rsplit_once('.')
        .filter(|(stem, ext)| !stem.is_empty() && !ext.is_empty())
        .map(|(_, ext)| globset::escape(ext));
    let join = |dir: Option<&str>, rest: &str| match dir {
        Some(dir) => format!("{}/{rest}", globset::escape(dir)),
        None => rest.to_owned(),
    };
    if let Some(ext) = &ext {
        out.push((1, join(dir, &format!("*.{ext}"))));
    }
    // The folder and each folder above it: `d/**/*.e`, `d/**`.
    let mut ancestors: Vec<Option<&str>> = Vec::new();
    let mut at = dir;
    while let Some(d) = at {
        ancestors.push(Some(d));
        at = d.rsplit_once('/').map(|(up, _)| up);
    }
    ancestors.push(None);
    for (depth, ancestor) in ancestors.iter().enumerate() {
        let rank = 2 + 2 * depth as u8;
        if let Some(ext) = &ext {
            out.push((rank, join(*ancestor, &format!("**/*.{ext}"))));
        }
        if let Some(d) = ancestor {
            out.push((rank + 1, format!("{}/**", globset::escape(d))));
        }
    }
    out
}

/// The globs that cover every one of `paths` (none for a path holding a
/// backslash, which a glob would read as an escape), each with its rank.
fn globs_of(paths: &[String]) -> Vec<(u8, String)> {
    let Some((first, rest)) = paths.split_first() else {
        return Vec::new();
    };
    if paths.iter().any(|p| p.contains('\\')) {
        return Vec::new();
    }
    let mut globs = globs_for(first);
    for path in rest {
        let other: BTreeSet<String> = globs_for(path).into_iter().map(|(_, g)| g).collect();
        globs.retain(|(_, g)| other.contains(g));
    }
    globs
}

fn matcher(glob: &str) -> Option<GlobMatcher> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// Whether a glob could match gavel's or git's own files.
fn touches_protected(matcher: &GlobMatcher, glob: &str) -> bool {
    let ext = glob.rsplit_once("*.").map(|(_, e)| e).unwrap_or("x");
    [
        "gavel.toml".to_owned(),
        ".gavel/audit.db".to_owned(),
        format!(".gavel/x.{ext}"),
        ".git/config".to_owned(),
        ".git/hooks/pre-commit".to_owned(),
        format!(".git/x.{ext}"),
    ]
    .iter()
    .any(|p| matcher.is_match(p))
}

fn path_shape(o: &Observation) -> &[String] {
    match &o.shape {
        Ok(Shape::Paths { paths }) => paths,
        _ => &[],
    }
}

pub(super) fn learn_paths(
    ask: &Ask<'_>,
    tool: &str,
    positives: &[u32],
    blockers: &Blockers<'_>,
    candidates: &mut Vec<Candidate>,
    refuse: &mut Refuse<'_>,
) {
    let obs = |i: &u32| &ask.record.observations[*i as usize];
    // Every glob the approved paths suggest, with the calls it covers: a
    // call is covered by the globs every one of its paths suggests. The
    // calls it must not cover are indexed the same way (the proof then
    // matches every chosen rule against every call exactly).
    let mut by_glob: BTreeMap<String, (u8, Vec<u32>)> = BTreeMap::new();
    for i in positives {
        for (rank, glob) in globs_of(path_shape(obs(i))) {
            by_glob.entry(glob).or_insert((rank, Vec::new())).1.push(*i);
        }
    }
    let mut blocked_by: HashMap<String, &Observation> = HashMap::new();
    for o in blockers.of_tool(tool) {
        for (_, glob) in globs_of(path_shape(o)) {
            blocked_by.entry(glob).or_insert(o);
        }
    }
    struct Choice {
        glob: String,
        rank: u8,
        calls: Vec<u32>,
        paths: BTreeSet<String>,
        blocked: Option<String>,
    }
    let mut options: Vec<Choice> = Vec::new();
    for (glob, (rank, calls)) in by_glob {
        let Some(m) = matcher(&glob) else { continue };
        let paths: BTreeSet<String> = calls
            .iter()
            .flat_map(|i| path_shape(obs(i)).iter().cloned())
            .collect();
        let blocked = if touches_protected(&m, &glob) {
            Some("floor: it could name gavel's or git's own files".to_owned())
        } else {
            blocked_by.get(&glob).map(|o| described(o))
        };
        options.push(Choice {
            glob,
            rank,
            calls,
            paths,
            blocked,
        });
    }
    let mut covered: BTreeSet<u32> = BTreeSet::new();
    let mut chosen: Vec<usize> = Vec::new();
    loop {
        // The option covering most approved calls not yet covered, with at
        // least `min_support` distinct paths among them; the narrowest first
        // among equals.
        let best = options
            .iter()
            .enumerate()
            .filter(|(_, o)| o.blocked.is_none() && o.rank > 0)
            .map(|(at, o)| {
                let fresh: Vec<u32> = o
                    .calls
                    .iter()
                    .copied()
                    .filter(|c| !covered.contains(c))
                    .collect();
                let fresh_paths: BTreeSet<&String> =
                    fresh.iter().flat_map(|i| path_shape(obs(i))).collect();
                (at, fresh.len(), fresh_paths.len())
            })
            .filter(|(_, _, paths)| *paths >= ask.min_support)
            .max_by(|a, b| {
                (
                    a.1,
                    std::cmp::Reverse(options[a.0].rank),
                    std::cmp::Reverse(&options[a.0].glob),
                )
                    .cmp(&(
                        b.1,
                        std::cmp::Reverse(options[b.0].rank),
                        std::cmp::Reverse(&options[b.0].glob),
                    ))
            });
        let Some((at, _, _)) = best else { break };
        covered.extend(options[at].calls.iter().copied());
        chosen.push(at);
    }
    for at in chosen {
        let option = &options[at];
        let calls: Vec<u32> = option.calls.clone();
        let anchor = match anchor(ask, tool, &calls) {
            Ok(anchor) => anchor,
            Err(why) => {
                refuse(tool, option.glob.clone(), calls.len() as u64, why);
                continue;
            }
        };
        let m = matcher(&option.glob);
        let within = |other: &Choice| {
            m.as_ref()
                .is_some_and(|m| other.paths.iter().all(|p| m.is_match(p)))
        };
        let mut alternatives = Vec::new();
        if let Some(narrower) = options
            .iter()
            .filter(|o| o.rank < option.rank && within(o) && o.calls.len() < calls.len())
            .max_by_key(|o| (o.calls.len(), std::cmp::Reverse(o.rank)))
        {
            alternatives.push(Alternative {
                relation: "narrower",
                rung: if narrower.rank == 0 {
                    Rung::Exact
                } else {
                    Rung::Paths
                },
                shape: narrower.glob.clone(),
                why: format!(
                    "covers {} of the {}",
                    narrower.calls.len(),
                    approved(calls.len())
                ),
            });
        }
        if let Some(broader) = options
            .iter()
            .filter(|o| {
                o.rank > option.rank && o.paths.is_superset(&option.paths) && o.glob != option.glob
            })
            .min_by_key(|o| (o.rank, o.glob.clone()))
        {
            alternatives.push(Alternative {
                relation: "broader",
                rung: Rung::Paths,
                shape: broader.glob.clone(),
                why: broader.blocked.clone().unwrap_or_else(|| {
                    if broader.calls.len() == calls.len() {
                        "covers no approved call beyond these".to_owned()
                    } else {
                        "covers calls another proposal covers".to_owned()
                    }
                }),
            });
        }
        let sessions = calls
            .iter()
            .map(|i| obs(i).session)
            .collect::<BTreeSet<_>>()
            .len();
        candidates.push(Candidate {
            tool: tool.to_owned(),
            rung: Rung::Paths,
            shape: option.glob.clone(),
            rule: RuleSpec {
                id: rule_id(tool, &option.glob),
                tools: vec![globset::escape(tool)],
                command_prefix: Vec::new(),
                command_regex: None,
                inside: true,
                path_glob: Some(option.glob.clone()),
                sandbox: None,
                reason: learned(calls.len(), sessions),
            },
            positives: calls.clone(),
            anchor,
            alternatives,
        });
    }
    let option_of: HashMap<&str, usize> = options
        .iter()
        .enumerate()
        .map(|(at, o)| (o.glob.as_str(), at))
        .collect();
    // What is left: one path each, approved often enough on its own.
    let mut exact: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for i in positives.iter().filter(|i| !covered.contains(i)) {
        match path_shape(obs(i)) {
            [one] => exact.entry(one.as_str()).or_default().push(*i),
            paths => refuse(
                tool,
                paths.join(", "),
                1,
                "several paths, no glob supported by the evidence".to_owned(),
            ),
        }
    }
    for (path, calls) in exact {
        let glob = globset::escape(path);
        let n = calls.len() as u64;
        let broader = globs_for(path)
            .iter()
            .filter(|(rank, _)| *rank > 0)
            .filter_map(|(_, glob)| option_of.get(glob.as_str()))
            .map(|at| &options[*at])
            .min_by_key(|o| (o.rank, o.glob.clone()));
        let broader_why = broader.map(|o| {
            let why = o.blocked.clone().unwrap_or_else(|| {
                format!(
                    "only {} distinct approved path{} (--min-support {})",
                    o.paths.len(),
                    if o.paths.len() == 1 { "" } else { "s" },
                    ask.min_support
                )
            });
            (o.glob.clone(), why)
        });
        if calls.len() < ask.min_support || path.contains('\\') {
            let why = match &broader_why {
                Some((glob, why)) => format!(
                    "approved {n} time{} (--min-support {}); broader `{glob}` not proposed: {why}",
                    if n == 1 { "" } else { "s" },
                    ask.min_support
                ),
                None => format!("approved {n} times (--min-support {})", ask.min_support),
            };
            refuse(tool, path.to_owned(), n, why);
            continue;
        }
        if let Some(b) = blocked_by.get(&glob) {
            refuse(tool, path.to_owned(), n, described(b));
            continue;
        }
        let anchor = match anchor(ask, tool, &calls) {
            Ok(anchor) => anchor,
            Err(why) => {
                refuse(tool, path.to_owned(), n, why);
                continue;
            }
        };
        let sessions = calls
            .iter()
            .map(|i| obs(i).session)
            .collect::<BTreeSet<_>>()
            .len();
        candidates.push(Candidate {
            tool: tool.to_owned(),
            rung: Rung::Exact,
            shape: glob.clone(),
            rule: RuleSpec {
                id: rule_id(tool, path),
                tools: vec![globset::escape(tool)],
                command_prefix: Vec::new(),
                command_regex: None,
                inside: true,
                path_glob: Some(glob.clone()),
                sandbox: None,
                reason: learned(calls.len(), sessions),
            },
            positives: calls,
            anchor,
            alternatives: broader_why
                .map(|(shape, why)| Alternative {
                    relation: "broader",
                    rung: Rung::Paths,
                    shape,
                    why,
                })
                .into_iter()
                .collect(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_climb_from_the_path_to_its_folders() {
        let globs: Vec<String> = globs_for("src/cli/main.rs")
            .into_iter()
            .map(|(_, g)| g)
            .collect();
        assert_eq!(
            globs,
            [
                "src/cli/main.rs",
                "src/cli/*.rs",
                "src/cli/**/*.rs",
                "src/cli/**",
                "src/**/*.rs",
                "src/**",
                "**/*.rs"
            ]
        );
        assert_eq!(
            globs_for("Makefile")
                .into_iter()
                .map(|(_, g)| g)
                .collect::<Vec<_>>(),
            ["Makefile"]
        );
        let m = matcher("**/*.toml").unwrap();
        assert!(touches_protected(&m, "**/*.toml"));
        let m = matcher("src/**").unwrap();
        assert!(!touches_protected(&m, "src/**"));
    }
}
