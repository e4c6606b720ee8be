//! The layout docs/architecture.md describes, checked on the source's own
//! `use` lines and paths: the command line is a thin layer (no command file
//! imports another; under 7,000 lines), no import circle anywhere in
//! `src/`, and one entry point runs the pipeline for every front-end.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// Every `.rs` file under `src/`, with its module path (`cli::hook`,
/// `session::service`; `lib.rs`, `main.rs` and `mod.rs` name their folder).
fn modules() -> BTreeMap<Module, PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = BTreeMap::new();
    let mut folders = vec![src.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(&src).unwrap().with_extension("");
                let mut module: Module = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    module.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    module.pop();
                }
                found.insert(module, path);
            }
        }
    }
    found
}

/// Whether `module` is test code (a `tests` module in a file of its own).
fn is_test(module: &Module) -> bool {
    module.iter().any(|part| part == "tests")
}

/// `text` without comments, string and character literals, and without
/// the bodies of `#[cfg(test)]` modules: what is left is code.
fn code(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |end| end + 2);
        } else if let Some(hashes) = raw_string(rest) {
            let close = format!("\"{}", "#".repeat(hashes));
            let open = 2 + hashes;
            i += open
                + rest[open..]
                    .find(&close)
                    .map_or(rest.len(), |e| e + close.len());
            out.push_str("\"\"");
        } else if rest.starts_with('"') {
            let mut j = 1;
            while j < rest.len() && rest.as_bytes()[j] != b'"' {
                j += if rest.as_bytes()[j] == b'\\' { 2 } else { 1 };
            }
            i += j + 1;
            out.push_str("\"\"");
        } else if let Some(len) = char_literal(rest) {
            i += len;
            out.push_str("' '");
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    without_test_modules(&out)
}

/// The number of `#`s of a raw string starting `text`.
fn raw_string(text: &str) -> Option<usize> {
    let after = text.strip_prefix("br").or_else(|| text.strip_prefix('r'))?;
    let hashes = after.len() - after.trim_start_matches('#').len();
    after[hashes..].starts_with('"').then_some(hashes)
}

/// The length of a character literal starting `text` (`'a'`, `'\n'`,
/// `'\u{1b}'`), not a lifetime.
fn char_literal(text: &str) -> Option<usize> {
    let after = text.strip_prefix('\'')?;
    let mut chars = after.char_indices();
    let (_, first) = chars.next()?;
    if first == '\\' {
        return after.find('\'').filter(|&at| at > 0).map(|at| at + 2);
    }
    let (at, second) = chars.next()?;
    (second == '\'').then_some(at + 2)
}

fn without_test_modules(code: &str) -> String {
    let mut out = code.to_owned();
    while let Some(at) = out.find("#[cfg(test)]") {
        let after = &out[at..];
        let end = match (after.find('{'), after.find(';')) {
            (Some(open), semi) if semi.is_none_or(|s| s > open) => {
                let mut depth = 0;
                let mut end = after.len();
                for (i, c) in after[open..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (_, Some(semi)) => semi + 1,
            _ => after.len(),
        };
        out.replace_range(at..at + end, "");
    }
    out
}

/// The paths a `use` tree names (`a::{b, c::{d, self}}` → `a::b`, `a::c::d`, `a::c`).
fn use_paths(tree: &str) -> Vec<Vec<String>> {
    fn expand(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let mut depth = 0;
        let mut start = 0;
        let mut parts = Vec::new();
        for (i, c) in tree.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&tree[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&tree[start..]);
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let (head, inner) = match part.find('{') {
                Some(open) => (&part[..open], Some(&part[open + 1..part.len() - 1])),
                None => (part, None),
            };
            let mut path = prefix.to_vec();
            for word in head.split("::").filter(|w| !w.is_empty()) {
                let word = word.split(" as ").next().unwrap_or(word).trim();
                if word != "self" {
                    path.push(word.to_owned());
                }
            }
            match inner {
                Some(inner) => expand(&path, inner, out),
                None => out.push(path),
            }
        }
    }
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace(" ::", "::");
    let tree = tree
        .replace(", ", ",")
        .replace("{ ", "{")
        .replace(" }", "}");
    let mut out = Vec::new();
    expand(&[], &tree, &mut out);
    out
}

/// Edges from each module to the modules it names, by their longest known prefix.
fn imports(modules: &BTreeMap<Module, PathBuf>) -> BTreeMap<Module, BTreeSet<Module>> {
    let uses = regex::Regex::new(r"\buse\s+([^;]+);").unwrap();
    let inline =
        regex::Regex::new(r"\b(?:crate|gavel|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+").unwrap();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, path) in modules {
        if is_test(module) {
            continue;
        }
        let text = code(&std::fs::read_to_string(path).unwrap());
        let mut paths: Vec<Vec<String>> = Vec::new();
        for found in uses.captures_iter(&text) {
            paths.extend(use_paths(&found[1]));
        }
        for found in inline.find_iter(&text) {
            paths.push(found.as_str().split("::").map(str::to_owned).collect());
        }
        for path in paths {
            let Some(absolute) = absolute(module, &path) else {
                continue;
            };
            let target = (1..=absolute.len())
                .rev()
                .map(|n| absolute[..n].to_vec())
                .find(|prefix| modules.contains_key(prefix));
            if let Some(target) = target
                && target != *module
            {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    edges
}

/// `path` as seen from `module`, from the crate root (`crate::` and
/// `gavel::` are the library's root; the binary's `cli` is its own).
fn absolute(module: &Module, path: &[String]) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    match first.as_str() {
        "crate" | "gavel" => Some(rest.to_vec()),
        "super" => {
            let mut base = module.clone();
            let mut rest = path;
            while rest.first().is_some_and(|w| w == "super") {
                base.pop();
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            Some(base)
        }
        _ => None,
    }
}

/// A command file of `src/cli/` (its top module), or `None` for the
/// shared ones (`cli/mod.rs`, `cli/render.rs`) and everything else.
fn command(module: &Module) -> Option<&str> {
    match module.as_slice() {
        [cli, name, ..] if cli == "cli" && name != "render" => Some(name),
        _ => None,
    }
}

#[test]
fn no_command_file_imports_another() {
    let modules = modules();
    let mut crossing = Vec::new();
    for (from, targets) in imports(&modules) {
        for to in targets {
            if let (Some(a), Some(b)) = (command(&from), command(&to))
                && a != b
            {
                crossing.push(format!("{} -> {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        crossing.is_empty(),
        "command files importing each other: {crossing:#?}"
    );
}

#[test]
fn no_import_circle_in_src() {
    let modules = modules();
    // A module declaring its children is not an import; a child naming its
    // parent's items is.
    let edges: BTreeMap<Module, BTreeSet<Module>> = imports(&modules)
        .into_iter()
        .map(|(from, to)| {
            let to = to.into_iter().filter(|t| !t.starts_with(&from)).collect();
            (from, to)
        })
        .collect();
    let mut circles = Vec::new();
    let mut done = BTreeSet::new();
    for start in edges.keys() {
        // Depth-first from each module: a path back to it is a circle.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                if next == start {
                    let names: Vec<String> = path.iter().map(|m| m.join("::")).collect();
                    let key: BTreeSet<String> = names.iter().cloned().collect();
                    if done.insert(key) {
                        circles.push(names.join(" -> "));
                    }
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn the_command_line_stays_a_thin_layer() {
    let lines: usize = modules()
        .iter()
        .filter(|(module, _)| module.first().is_some_and(|m| m == "cli"))
        .map(|(_, path)| std::fs::read_to_string(path).unwrap().lines().count())
        .sum();
    assert!(lines < 7_000, "src/cli/ is {lines} lines");
}

#[test]
fn only_the_session_service_runs_the_pipeline() {
    // The pipeline's entry points, and who may name them outside tests.
    let entries = [
        ("decide_and_record", &["runner", "session::service"][..]),
        ("GovernedRunner::new", &["runner", "session::service"][..]),
    ];
    let mut outside = Vec::new();
    for (module, path) in modules() {
        if is_test(&module) {
            continue;
        }
        let text = code(&std::fs::read_to_string(&path).unwrap());
        for (entry, allowed) in entries {
            if text.contains(entry) && !allowed.contains(&module.join("::").as_str()) {
                outside.push(format!("{} names {entry}", module.join("::")));
            }
        }
    }
    assert!(outside.is_empty(), "{outside:#?}");
}

#[test]
fn the_reader_of_use_lines_reads_them() {
    let modules = modules();
    let edges = imports(&modules);
    let of = |m: &str| edges[&m.split("::").map(str::to_owned).collect::<Module>()].clone();
    let has = |set: &BTreeSet<Module>, m: &str| {
        set.contains(&m.split("::").map(str::to_owned).collect::<Module>())
    };
    // Known edges, so that a reader that finds nothing cannot pass.
    assert!(has(&of("cli::hook"), "frontend::hook"));
    assert!(has(&of("frontend::hook"), "session"));
    assert!(has(&of("session::service"), "runner"));
    assert_eq!(
        use_paths("a::{b, c::{d, self}}"),
        [vec!["a", "b"], vec!["a", "c", "d"], vec!["a", "c"]]
    );
    assert_eq!(
        code("let s = \"use x;\"; // use y;\nuse z;"),
        "let s = \"\"; \nuse z;"
    );
}
