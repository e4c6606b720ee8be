//! `git` (2.47) and `cargo`: programs whose subcommand decides what they
//! do. Only read-only subcommands have a model: `status`, `diff`, `log`,
//! `show`, `branch` and `tag` (listing), `rev-parse`, `ls-files`, `blame`,
//! `describe`, `ls-tree`, `grep`, `config` (reading), `shortlog`, `rev-list`,
//! `merge-base`, `cat-file`, `reflog`, `worktree list`, `count-objects`,
//! `stash show` and `stash list`, `remote` (listing, `get-url`, `show -n`),
//! `show-ref`, `for-each-ref`, `check-ignore`; any other
//! subcommand has none. Options that run programs (`--ext-diff`,
//! `--textconv`, `--show-signature`, a pager, `-c` configuration) or write
//! (`--output`) are hazards. `cargo metadata` and `cargo tree` are modelled
//! only to say that they are not reads: they may rewrite `Cargo.lock` and
//! run the `rustc` (or wrapper) that a committed `.cargo/config.toml` names.

use super::getopt::{Arg, Does, Opt, Parsed, Style, both, long, short};
use super::{Model, Operands, Reading, Walks, apply, no_check};

const N: Does = Does::Nothing;
const RUNS: Does = Does::Runs;
const MANUAL: Opt = long("help", Arg::No, Does::Hazard("opens the manual in a pager"));

/// Revision walking and diff options shared by `log`, `show` and `diff`.
const LOG: &[Opt] = &[
    MANUAL,
    short('h', Arg::No, N),
    both('n', "max-count", Arg::Required, N),
    long("skip", Arg::Required, N),
    long("since", Arg::Required, N),
    long("after", Arg::Required, N),
    long("since-as-filter", Arg::Required, N),
    long("until", Arg::Required, N),
    long("before", Arg::Required, N),
    long("max-age", Arg::Required, N),
    long("min-age", Arg::Required, N),
    long("author", Arg::Required, N),
    long("committer", Arg::Required, N),
    long("grep-reflog", Arg::Required, N),
    long("grep", Arg::Required, N),
    long("all-match", Arg::No, N),
    long("invert-grep", Arg::No, N),
    both('i', "regexp-ignore-case", Arg::No, N),
    long("basic-regexp", Arg::No, N),
    both('E', "extended-regexp", Arg::No, N),
    both('F', "fixed-strings", Arg::No, N),
    both('P', "perl-regexp", Arg::No, N),
    long("remove-empty", Arg::No, N),
    long("merges", Arg::No, N),
    long("no-merges", Arg::No, N),
    long("min-parents", Arg::Required, N),
    long("max-parents", Arg::Required, N),
    long("no-min-parents", Arg::No, N),
    long("no-max-parents", Arg::No, N),
    long("first-parent", Arg::No, N),
    long("exclude-first-parent-only", Arg::No, N),
    long("not", Arg::No, N),
    long("all", Arg::No, N),
    long("branches", Arg::Optional, N),
    long("tags", Arg::Optional, N),
    long("remotes", Arg::Optional, N),
    long("glob", Arg::Required, N),
    long("exclude", Arg::Required, N),
    long("exclude-hidden", Arg::Required, N),
    long("reflog", Arg::No, N),
    long("alternate-refs", Arg::No, N),
    long("single-worktree", Arg::No, N),
    long("ignore-missing", Arg::No, N),
    long("bisect", Arg::No, N),
    long("stdin", Arg::No, N),
    long("cherry-mark", Arg::No, N),
    long("cherry-pick", Arg::No, N),
    long("left-only", Arg::No, N),
    long("right-only", Arg::No, N),
    long("cherry", Arg::No, N),
    both('g', "walk-reflogs", Arg::No, N),
    long("merge", Arg::No, N),
    long("boundary", Arg::No, N),
    long("simplify-by-decoration", Arg::No, N),
    long("show-pulls", Arg::No, N),
    long("full-history", Arg::No, N),
    long("dense", Arg::No, N),
    long("sparse", Arg::No, N),
    long("simplify-merges", Arg::No, N),
    long("ancestry-path", Arg::Optional, N),
    long("date-order", Arg::No, N),
    long("author-date-order", Arg::No, N),
    long("topo-order", Arg::No, N),
    long("reverse", Arg::No, N),
    long("no-walk", Arg::Optional, N),
    long("do-walk", Arg::No, N),
    long("in-commit-order", Arg::No, N),
    long("pretty", Arg::Optional, N),
    long("format", Arg::Required, N),
    long("abbrev-commit", Arg::No, N),
    long("no-abbrev-commit", Arg::No, N),
    long("oneline", Arg::No, N),
    long("encoding", Arg::Required, N),
    long("expand-tabs", Arg::Optional, N),
    long("no-expand-tabs", Arg::No, N),
    long("notes", Arg::Optional, N),
    long("no-notes", Arg::No, N),
    long("show-notes", Arg::Optional, N),
    long("standard-notes", Arg::No, N),
    long("no-standard-notes", Arg::No, N),
    long("show-signature", Arg::No, RUNS),
    long("relative-date", Arg::No, N),
    long("date", Arg::Required, N),
    long("parents", Arg::No, N),
    long("children", Arg::No, N),
    long("left-right", Arg::No, N),
    long("graph", Arg::No, N),
    long("show-linear-break", Arg::Optional, N),
    long("decorate", Arg::Optional, N),
    long("no-decorate", Arg::No, N),
    long("decorate-refs", Arg::Required, N),
    long("decorate-refs-exclude", Arg::Required, N),
    long("clear-decorations", Arg::No, N),
    long("source", Arg::No, N),
    long("mailmap", Arg::No, N),
    long("no-mailmap", Arg::No, N),
    long("use-mailmap", Arg::No, N),
    long("no-use-mailmap", Arg::No, N),
    long("full-diff", Arg::No, N),
    long("log-size", Arg::No, N),
    short('L', Arg::Required, N),
    long("follow", Arg::No, N),
    long("no-follow", Arg::No, N),
    short('c', Arg::No, N),
    long("cc", Arg::No, N),
    long("dd", Arg::No, N),
    short('m', Arg::No, N),
    long("diff-merges", Arg::Required, N),
    long("no-diff-merges", Arg::No, N),
    long("combined-all-paths", Arg::No, N),
    long("remerge-diff", Arg::No, N),
    short('t', Arg::No, N),
    short('r', Arg::No, N),
    long("root", Arg::No, N),
    // Diff options.
    both('p', "patch", Arg::No, N),
    short('u', Arg::No, N),
    both('s', "no-patch", Arg::No, N),
    both('U', "unified", Arg::Optional, N),
    long("output", Arg::Required, Does::Writes),
    long("output-indicator-new", Arg::Required, N),
    long("output-indicator-old", Arg::Required, N),
    long("output-indicator-context", Arg::Required, N),
    long("raw", Arg::No, N),
    long("patch-with-raw", Arg::No, N),
    long("indent-heuristic", Arg::No, N),
    long("no-indent-heuristic", Arg::No, N),
    long("minimal", Arg::No, N),
    long("patience", Arg::No, N),
    long("histogram", Arg::No, N),
    long("anchored", Arg::Required, N),
    long("diff-algorithm", Arg::Required, N),
    long("stat", Arg::Optional, N),
    long("stat-width", Arg::Required, N),
    long("stat-name-width", Arg::Required, N),
    long("stat-graph-width", Arg::Required, N),
    long("stat-count", Arg::Required, N),
    long("compact-summary", Arg::No, N),
    long("numstat", Arg::No, N),
    long("shortstat", Arg::No, N),
    both('X', "dirstat", Arg::Optional, N),
    long("cumulative", Arg::No, N),
    long("dirstat-by-file", Arg::Optional, N),
    long("summary", Arg::No, N),
    long("patch-with-stat", Arg::No, N),
    short('z', Arg::No, N),
    long("name-only", Arg::No, N),
    long("name-status", Arg::No, N),
    long("submodule", Arg::Optional, N),
    long("color", Arg::Optional, N),
    long("no-color", Arg::No, N),
    long("color-moved", Arg::Optional, N),
    long("no-color-moved", Arg::No, N),
    long("color-moved-ws", Arg::Required, N),
    long("no-color-moved-ws", Arg::No, N),
    long("word-diff", Arg::Optional, N),
    long("word-diff-regex", Arg::Required, N),
    long("color-words", Arg::Optional, N),
    long("no-renames", Arg::No, N),
    long("rename-empty", Arg::No, N),
    long("no-rename-empty", Arg::No, N),
    long("check", Arg::No, N),
    long("ws-error-highlight", Arg::Required, N),
    long("full-index", Arg::No, N),
    long("binary", Arg::No, N),
    long("abbrev", Arg::Optional, N),
    long("no-abbrev", Arg::No, N),
    both('B', "break-rewrites", Arg::Optional, N),
    both('M', "find-renames", Arg::Optional, N),
    both('C', "find-copies", Arg::Optional, N),
    long("find-copies-harder", Arg::No, N),
    both('D', "irreversible-delete", Arg::No, N),
    short('l', Arg::Required, N),
    long("diff-filter", Arg::Required, N),
    short('S', Arg::Required, N),
    short('G', Arg::Required, N),
    long("find-object", Arg::Required, N),
    long("pickaxe-all", Arg::No, N),
    long("pickaxe-regex", Arg::No, N),
    short('O', Arg::Required, Does::Reads),
    long("skip-to", Arg::Required, N),
    long("rotate-to", Arg::Required, N),
    short('R', Arg::No, N),
    long("relative", Arg::Optional, N),
    long("no-relative", Arg::No, N),
    both('a', "text", Arg::No, N),
    long("ignore-cr-at-eol", Arg::No, N),
    long("ignore-space-at-eol", Arg::No, N),
    both('b', "ignore-space-change", Arg::No, N),
    both('w', "ignore-all-space", Arg::No, N),
    long("ignore-blank-lines", Arg::No, N),
    both('I', "ignore-matching-lines", Arg::Required, N),
    long("inter-hunk-context", Arg::Required, N),
    both('W', "function-context", Arg::No, N),
    long("exit-code", Arg::No, N),
    long("quiet", Arg::No, N),
    long("ext-diff", Arg::No, RUNS),
    long("no-ext-diff", Arg::No, N),
    long("textconv", Arg::No, RUNS),
    long("no-textconv", Arg::No, N),
    long("ignore-submodules", Arg::Optional, N),
    long("src-prefix", Arg::Required, N),
    long("dst-prefix", Arg::Required, N),
    long("no-prefix", Arg::No, N),
    long("default-prefix", Arg::No, N),
    long("line-prefix", Arg::Required, N),
    long("ita-invisible-in-index", Arg::No, N),
    long("ita-visible-in-index", Arg::No, N),
    // `git diff` only.
    long("cached", Arg::No, N),
    long("staged", Arg::No, N),
    long("merge-base", Arg::No, N),
    long("no-index", Arg::No, N),
    short('0', Arg::No, N),
    short('1', Arg::No, N),
    short('2', Arg::No, N),
    short('3', Arg::No, N),
    long("base", Arg::No, N),
    long("ours", Arg::No, N),
    long("theirs", Arg::No, N),
    // `git rev-list` only.
    long("count", Arg::No, N),
    long("objects", Arg::No, N),
    long("objects-edge", Arg::No, N),
    long("no-object-names", Arg::No, N),
    long("timestamp", Arg::No, N),
    long("header", Arg::No, N),
    long("bisect-all", Arg::No, N),
    long("bisect-vars", Arg::No, N),
];

const TAG: &[Opt] = &[
    MANUAL,
    short('h', Arg::No, N),
    both('l', "list", Arg::No, N),
    short('n', Arg::Optional, N),
    long("sort", Arg::Required, N),
    long("format", Arg::Required, N),
    long("contains", Arg::Optional, N),
    long("no-contains", Arg::Optional, N),
    long("merged", Arg::Optional, N),
    long("no-merged", Arg::Optional, N),
    long("points-at", Arg::Required, N),
    long("column", Arg::Optional, N),
    long("no-column", Arg::No, N),
    both('i', "ignore-case", Arg::No, N),
    long("color", Arg::Optional, N),
    long("omit-empty", Arg::No, N),
    both('a', "annotate", Arg::No, Does::Hazard("creates a tag")),
    both('s', "sign", Arg::No, Does::Hazard("creates a tag")),
    both(
        'u',
        "local-user",
        Arg::Required,
        Does::Hazard("creates a tag"),
    ),
    both('f', "force", Arg::No, Does::Hazard("replaces a tag")),
    both('d', "delete", Arg::No, Does::Hazard("deletes a tag")),
    both('v', "verify", Arg::No, RUNS),
    both('m', "message", Arg::Required, Does::Hazard("creates a tag")),
    both('F', "file", Arg::Required, Does::Hazard("creates a tag")),
    both('e', "edit", Arg::No, Does::Hazard("runs an editor")),
    long("cleanup", Arg::Required, N),
    long("create-reflog", Arg::No, Does::Hazard("creates a tag")),
];

const DESCRIBE: &[Opt] = &[
    MANUAL,
    long("all", Arg::No, N),
    long("tags", Arg::No, N),
    long("contains", Arg::No, N),
    long("abbrev", Arg::Optional, N),
    long("candidates", Arg::Required, N),
    long("exact-match", Arg::No, N),
    long("debug", Arg::No, N),
    long("long", Arg::No, N),
    long("match", Arg::Required, N),
    long("exclude", Arg::Required, N),
    long("always", Arg::No, N),
    long("first-parent", Arg::No, N),
    long("dirty", Arg::Optional, N),
    long("broken", Arg::Optional, N),
];

const LS_TREE: &[Opt] = &[
    MANUAL,
    short('d', Arg::No, N),
    short('r', Arg::No, N),
    short('t', Arg::No, N),
    both('l', "long", Arg::No, N),
    short('z', Arg::No, N),
    long("name-only", Arg::No, N),
    long("name-status", Arg::No, N),
    long("object-only", Arg::No, N),
    long("full-name", Arg::No, N),
    long("full-tree", Arg::No, N),
    long("abbrev", Arg::Optional, N),
    long("format", Arg::Required, N),
];

const GIT_GREP: &[Opt] = &[
    MANUAL,
    long("cached", Arg::No, N),
    long("untracked", Arg::No, Does::Recurses),
    long("no-index", Arg::No, Does::Recurses),
    long("exclude-standard", Arg::No, N),
    long("no-exclude-standard", Arg::No, N),
    long("recurse-submodules", Arg::No, N),
    both('a', "text", Arg::No, N),
    long("textconv", Arg::No, RUNS),
    long("no-textconv", Arg::No, N),
    both('i', "ignore-case", Arg::No, N),
    short('I', Arg::No, N),
    long("max-depth", Arg::Required, N),
    both('r', "recursive", Arg::No, N),
    long("no-recursive", Arg::No, N),
    both('w', "word-regexp", Arg::No, N),
    both('v', "invert-match", Arg::No, N),
    short('h', Arg::No, N),
    short('H', Arg::No, N),
    long("full-name", Arg::No, N),
    both('E', "extended-regexp", Arg::No, N),
    both('G', "basic-regexp", Arg::No, N),
    both('F', "fixed-strings", Arg::No, N),
    both('P', "perl-regexp", Arg::No, N),
    both('n', "line-number", Arg::No, N),
    long("column", Arg::No, N),
    both('l', "files-with-matches", Arg::No, N),
    long("name-only", Arg::No, N),
    both('L', "files-without-match", Arg::No, N),
    both('O', "open-files-in-pager", Arg::Optional, RUNS),
    both('z', "null", Arg::No, N),
    both('o', "only-matching", Arg::No, N),
    both('c', "count", Arg::No, N),
    long("color", Arg::Optional, N),
    long("no-color", Arg::No, N),
    long("break", Arg::No, N),
    long("heading", Arg::No, N),
    both('p', "show-function", Arg::No, N),
    both('A', "after-context", Arg::Required, N),
    both('B', "before-context", Arg::Required, N),
    both('C', "context", Arg::Required, N),
    both('W', "function-context", Arg::No, N),
    both('m', "max-count", Arg::Required, N),
    long("threads", Arg::Required, N),
    short('f', Arg::Required, Does::PatternFile),
    short('e', Arg::Required, Does::Pattern),
    long("and", Arg::No, N),
    long("or", Arg::No, N),
    long("not", Arg::No, N),
    long("all-match", Arg::No, N),
    both('q', "quiet", Arg::No, N),
];

const CONFIG: &[Opt] = &[
    MANUAL,
    long("get", Arg::No, N),
    long("get-all", Arg::No, N),
    long("get-regexp", Arg::No, N),
    long("get-urlmatch", Arg::No, N),
    both('l', "list", Arg::No, N),
    long("show-origin", Arg::No, N),
    long("show-scope", Arg::No, N),
    long("name-only", Arg::No, N),
    both('z', "null", Arg::No, N),
    long("global", Arg::No, N),
    long("system", Arg::No, N),
    long("local", Arg::No, N),
    long("worktree", Arg::No, N),
    both('f', "file", Arg::Required, Does::Reads),
    long("blob", Arg::Required, N),
    long("type", Arg::Required, N),
    long("bool", Arg::No, N),
    long("int", Arg::No, N),
    long("bool-or-int", Arg::No, N),
    long("path", Arg::No, N),
    long("expiry-date", Arg::No, N),
    long("default", Arg::Required, N),
    long("includes", Arg::No, N),
    long("no-includes", Arg::No, N),
    long("all", Arg::No, N),
    long("regexp", Arg::No, N),
    long("value", Arg::Required, N),
    long("fixed-value", Arg::No, N),
    long("add", Arg::No, Does::Hazard("changes configuration")),
    long(
        "replace-all",
        Arg::No,
        Does::Hazard("changes configuration"),
    ),
    long("unset", Arg::No, Does::Hazard("changes configuration")),
    long("unset-all", Arg::No, Does::Hazard("changes configuration")),
    long(
        "rename-section",
        Arg::No,
        Does::Hazard("changes configuration"),
    ),
    long(
        "remove-section",
        Arg::No,
        Does::Hazard("changes configuration"),
    ),
    both('e', "edit", Arg::No, Does::Hazard("runs an editor")),
];

const SHORTLOG: &[Opt] = &[
    MANUAL,
    both('n', "numbered", Arg::No, N),
    both('s', "summary", Arg::No, N),
    both('e', "email", Arg::No, N),
    both('c', "committer", Arg::No, N),
    long("group", Arg::Required, N),
    short('w', Arg::Optional, N),
    long("format", Arg::Required, N),
    long("all", Arg::No, N),
    long("since", Arg::Required, N),
    long("after", Arg::Required, N),
    long("until", Arg::Required, N),
    long("before", Arg::Required, N),
    long("author", Arg::Required, N),
    long("no-merges", Arg::No, N),
    long("merges", Arg::No, N),
    long("first-parent", Arg::No, N),
    long("branches", Arg::Optional, N),
    long("tags", Arg::Optional, N),
];

const MERGE_BASE: &[Opt] = &[
    MANUAL,
    both('a', "all", Arg::No, N),
    long("octopus", Arg::No, N),
    long("independent", Arg::No, N),
    long("is-ancestor", Arg::No, N),
    long("fork-point", Arg::No, N),
];

const CAT_FILE: &[Opt] = &[
    MANUAL,
    short('t', Arg::No, N),
    short('s', Arg::No, N),
    short('e', Arg::No, N),
    short('p', Arg::No, N),
    long("batch", Arg::Optional, N),
    long("batch-check", Arg::Optional, N),
    long("batch-command", Arg::Optional, N),
    long("batch-all-objects", Arg::No, N),
    long("buffer", Arg::No, N),
    long("unordered", Arg::No, N),
    long("follow-symlinks", Arg::No, N),
    short('Z', Arg::No, N),
    long("allow-unknown-type", Arg::No, N),
    long("use-mailmap", Arg::No, N),
    long("no-use-mailmap", Arg::No, N),
    long("textconv", Arg::No, RUNS),
    long("filters", Arg::No, RUNS),
];

const WORKTREE_LIST_OPTS: &[Opt] = &[
    long("porcelain", Arg::No, N),
    both('v', "verbose", Arg::No, N),
    long("expire", Arg::Required, N),
    short('z', Arg::No, N),
];

const SHOW_REF: &[Opt] = &[
    MANUAL,
    long("head", Arg::No, N),
    long("branches", Arg::No, N),
    long("heads", Arg::No, N),
    long("tags", Arg::No, N),
    both('d', "dereference", Arg::No, N),
    both('s', "hash", Arg::Optional, N),
    long("abbrev", Arg::Optional, N),
    long("verify", Arg::No, N),
    long("exists", Arg::No, N),
    both('q', "quiet", Arg::No, N),
    // Reads ref names from standard input, never a file.
    long("exclude-existing", Arg::Optional, N),
];

const FOR_EACH_REF: &[Opt] = &[
    MANUAL,
    long("count", Arg::Required, N),
    both('s', "shell", Arg::No, N),
    both('p', "perl", Arg::No, N),
    long("python", Arg::No, N),
    long("tcl", Arg::No, N),
    long("sort", Arg::Required, N),
    long("format", Arg::Required, N),
    long("color", Arg::Optional, N),
    long("points-at", Arg::Required, N),
    long("merged", Arg::Optional, N),
    long("no-merged", Arg::Optional, N),
    long("contains", Arg::Optional, N),
    long("no-contains", Arg::Optional, N),
    long("ignore-case", Arg::No, N),
    long("omit-empty", Arg::No, N),
    long("exclude", Arg::Required, N),
    long("include-root-refs", Arg::No, N),
    // Reads ref patterns from standard input, never a file.
    long("stdin", Arg::No, N),
];

const CHECK_IGNORE: &[Opt] = &[
    MANUAL,
    both('q', "quiet", Arg::No, N),
    both('v', "verbose", Arg::No, N),
    // Reads path names from standard input; it opens none of them.
    long("stdin", Arg::No, N),
    short('z', Arg::No, N),
    both('n', "non-matching", Arg::No, N),
    long("no-index", Arg::No, N),
];

const REMOTE: &[Opt] = &[MANUAL, both('v', "verbose", Arg::No, N)];

const REMOTE_GET_URL: &[Opt] = &[long("push", Arg::No, N), long("all", Arg::No, N)];

const REMOTE_SHOW: &[Opt] = &[short('n', Arg::No, N)];

const COUNT_OBJECTS: &[Opt] = &[
    MANUAL,
    both('v', "verbose", Arg::No, N),
    both('H', "human-readable", Arg::No, N),
];

/// `git tag NAME` (outside list mode) creates a tag.
fn tag_check(parsed: &Parsed<'_>) -> Vec<String> {
    let lists = [
        "-l",
        "--list",
        "-n",
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
    ]
    .iter()
    .any(|o| parsed.named(o));
    match parsed.operands.first() {
        Some(name) if !lists => vec![format!("`git tag {name}` creates a tag")],
        _ => Vec::new(),
    }
}

/// `git config NAME VALUE` sets configuration.
fn config_check(parsed: &Parsed<'_>) -> Vec<String> {
    let gets = [
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "-l",
        "--list",
    ]
    .iter()
    .any(|o| parsed.named(o));
    if !gets && parsed.operands.len() > 1 {
        vec![format!(
            "`git config {}` sets configuration",
            parsed.operands.join(" ")
        )]
    } else {
        Vec::new()
    }
}

const LOG_MODEL: Model = Model {
    digits: true,
    ..sub(LOG, Operands::Paths(None), "")
};

const CONFIG_MODEL: Model = Model {
    check: config_check,
    ..sub(CONFIG, Operands::Text, "")
};

const WORKTREE_LIST: Model = sub(WORKTREE_LIST_OPTS, Operands::Text, "");

/// `git stash show`: the diff options of `git log`; its operand is a stash.
const STASH_SHOW: Model = Model {
    digits: true,
    ..sub(LOG, Operands::Text, "")
};

const REMOTE_LIST: Model = Model {
    check: remote_list_check,
    ..sub(REMOTE, Operands::Text, "")
};

/// `git remote -v WORD ...`: the word after `-v` is a subcommand
/// (`git remote -v add x URL` adds a remote); only a bare listing reads.
fn remote_list_check(parsed: &Parsed<'_>) -> Vec<String> {
    match parsed.operands.first() {
        Some(word) => vec![format!(
            "`git remote {word}` may change the remotes (only a listing is read here)"
        )],
        None => Vec::new(),
    }
}
const REMOTE_GET_URL_MODEL: Model = sub(REMOTE_GET_URL, Operands::Text, "");
const REMOTE_SHOW_MODEL: Model = Model {
    check: remote_show_check,
    ..sub(REMOTE_SHOW, Operands::Text, "")
};

/// `git remote show NAME` asks the remote over the network (running
/// `ssh` or a credential helper) unless `-n` says not to.
fn remote_show_check(parsed: &Parsed<'_>) -> Vec<String> {
    if parsed.named("-n") || parsed.operands.is_empty() {
        Vec::new()
    } else {
        vec!["`git remote show` without `-n` contacts the remote".to_owned()]
    }
}

const STATUS: &[Opt] = &[
    MANUAL,
    short('h', Arg::No, N),
    both('s', "short", Arg::No, N),
    both('b', "branch", Arg::No, N),
    long("show-stash", Arg::No, N),
    long("porcelain", Arg::Optional, N),
    long("long", Arg::No, N),
    both('v', "verbose", Arg::No, N),
    both('u', "untracked-files", Arg::Optional, N),
    long("ignore-submodules", Arg::Optional, N),
    long("ignored", Arg::Optional, N),
    short('z', Arg::No, N),
    long("null", Arg::No, N),
    long("column", Arg::Optional, N),
    long("no-column", Arg::No, N),
    long("ahead-behind", Arg::No, N),
    long("no-ahead-behind", Arg::No, N),
    long("renames", Arg::No, N),
    long("no-renames", Arg::No, N),
    long("find-renames", Arg::Optional, N),
];

const BRANCH: &[Opt] = &[
    MANUAL,
    short('h', Arg::No, N),
    both('a', "all", Arg::No, N),
    both('r', "remotes", Arg::No, N),
    both('v', "verbose", Arg::No, N),
    both('l', "list", Arg::No, N),
    long("show-current", Arg::No, N),
    long("contains", Arg::Optional, N),
    long("no-contains", Arg::Optional, N),
    long("merged", Arg::Optional, N),
    long("no-merged", Arg::Optional, N),
    long("points-at", Arg::Required, N),
    long("sort", Arg::Required, N),
    long("format", Arg::Required, N),
    long("color", Arg::Optional, N),
    long("no-color", Arg::No, N),
    long("column", Arg::Optional, N),
    long("no-column", Arg::No, N),
    long("abbrev", Arg::Optional, N),
    long("no-abbrev", Arg::No, N),
    both('i', "ignore-case", Arg::No, N),
    long("omit-empty", Arg::No, N),
    both('q', "quiet", Arg::No, N),
    both('d', "delete", Arg::No, Does::Hazard("deletes a branch")),
    short('D', Arg::No, Does::Hazard("deletes a branch")),
    both(
        'f',
        "force",
        Arg::No,
        Does::Hazard("forces a branch change"),
    ),
    both('m', "move", Arg::No, Does::Hazard("renames a branch")),
    short('M', Arg::No, Does::Hazard("renames a branch")),
    both('c', "copy", Arg::No, Does::Hazard("copies a branch")),
    short('C', Arg::No, Does::Hazard("copies a branch")),
    both(
        'u',
        "set-upstream-to",
        Arg::Required,
        Does::Hazard("changes the configuration"),
    ),
    long(
        "unset-upstream",
        Arg::No,
        Does::Hazard("changes the configuration"),
    ),
    long("edit-description", Arg::No, Does::Hazard("runs an editor")),
    both(
        't',
        "track",
        Arg::Optional,
        Does::Hazard("creates a branch"),
    ),
    long("no-track", Arg::No, Does::Hazard("creates a branch")),
    long("create-reflog", Arg::No, Does::Hazard("creates a branch")),
    long(
        "recurse-submodules",
        Arg::No,
        Does::Hazard("creates branches in submodules"),
    ),
];

const REV_PARSE: &[Opt] = &[
    long("git-dir", Arg::No, N),
    long("git-common-dir", Arg::No, N),
    long("absolute-git-dir", Arg::No, N),
    long("show-toplevel", Arg::No, N),
    long("show-prefix", Arg::No, N),
    long("show-cdup", Arg::No, N),
    long("show-superproject-working-tree", Arg::No, N),
    long("show-object-format", Arg::Optional, N),
    long("show-ref-format", Arg::No, N),
    long("shared-index-path", Arg::No, N),
    long("is-inside-work-tree", Arg::No, N),
    long("is-inside-git-dir", Arg::No, N),
    long("is-bare-repository", Arg::No, N),
    long("is-shallow-repository", Arg::No, N),
    long("local-env-vars", Arg::No, N),
    long("abbrev-ref", Arg::Optional, N),
    long("short", Arg::Optional, N),
    long("verify", Arg::No, N),
    both('q', "quiet", Arg::No, N),
    long("symbolic", Arg::No, N),
    long("symbolic-full-name", Arg::No, N),
    long("all", Arg::No, N),
    long("branches", Arg::Optional, N),
    long("tags", Arg::Optional, N),
    long("remotes", Arg::Optional, N),
    long("glob", Arg::Required, N),
    long("exclude", Arg::Required, N),
    long("disambiguate", Arg::Required, N),
    long("since", Arg::Required, N),
    long("after", Arg::Required, N),
    long("until", Arg::Required, N),
    long("before", Arg::Required, N),
    long("default", Arg::Required, N),
    long("prefix", Arg::Required, N),
    long("revs-only", Arg::No, N),
    long("no-revs", Arg::No, N),
    long("flags", Arg::No, N),
    long("no-flags", Arg::No, N),
    long("sq", Arg::No, N),
    long("not", Arg::No, N),
    long("path-format", Arg::Required, N),
    long("git-path", Arg::Required, N),
    long("resolve-git-dir", Arg::Required, Does::Reads),
];

const LS_FILES: &[Opt] = &[
    MANUAL,
    short('h', Arg::No, N),
    both('c', "cached", Arg::No, N),
    both('d', "deleted", Arg::No, N),
    both('m', "modified", Arg::No, N),
    both('o', "others", Arg::No, N),
    both('i', "ignored", Arg::No, N),
    both('s', "stage", Arg::No, N),
    both('u', "unmerged", Arg::No, N),
    both('k', "killed", Arg::No, N),
    long("resolve-undo", Arg::No, N),
    long("directory", Arg::No, N),
    long("no-empty-directory", Arg::No, N),
    long("eol", Arg::No, N),
    long("deduplicate", Arg::No, N),
    short('z', Arg::No, N),
    short('t', Arg::No, N),
    short('v', Arg::No, N),
    short('f', Arg::No, N),
    both('x', "exclude", Arg::Required, N),
    both('X', "exclude-from", Arg::Required, Does::Reads),
    long("exclude-per-directory", Arg::Required, N),
    long("exclude-standard", Arg::No, N),
    long("error-unmatch", Arg::No, N),
    long("with-tree", Arg::Required, N),
    long("full-name", Arg::No, N),
    long("recurse-submodules", Arg::No, N),
    long("abbrev", Arg::Optional, N),
    long("debug", Arg::No, N),
    long("sparse", Arg::No, N),
    long("format", Arg::Required, N),
];

const BLAME: &[Opt] = &[
    MANUAL,
    short('h', Arg::No, N),
    short('b', Arg::No, N),
    long("root", Arg::No, N),
    long("show-stats", Arg::No, N),
    long("progress", Arg::No, N),
    long("no-progress", Arg::No, N),
    long("score-debug", Arg::No, N),
    both('f', "show-name", Arg::No, N),
    both('n', "show-number", Arg::No, N),
    both('p', "porcelain", Arg::No, N),
    long("line-porcelain", Arg::No, N),
    short('c', Arg::No, N),
    short('t', Arg::No, N),
    short('l', Arg::No, N),
    short('s', Arg::No, N),
    both('e', "show-email", Arg::No, N),
    short('w', Arg::No, N),
    long("ignore-rev", Arg::Required, N),
    long("ignore-revs-file", Arg::Required, Does::Reads),
    long("color-lines", Arg::No, N),
    long("color-by-age", Arg::No, N),
    long("minimal", Arg::No, N),
    short('S', Arg::Required, Does::Reads),
    long("contents", Arg::Required, Does::Reads),
    short('L', Arg::Required, N),
    long("reverse", Arg::Required, N),
    long("first-parent", Arg::No, N),
    long("since", Arg::Required, N),
    long("incremental", Arg::No, N),
    long("encoding", Arg::Required, N),
    long("date", Arg::Required, N),
    short('M', Arg::Optional, N),
    short('C', Arg::Optional, N),
    long("abbrev", Arg::Optional, N),
    long("no-abbrev", Arg::No, N),
];

/// `git branch NAME` (outside list mode) creates a branch.
fn branch_check(parsed: &Parsed<'_>) -> Vec<String> {
    let lists = [
        "-l",
        "--list",
        "-v",
        "--verbose",
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
    ]
    .iter()
    .any(|o| parsed.named(o));
    match parsed.operands.first() {
        Some(name) if !lists => vec![format!("`git branch {name}` creates a branch")],
        _ => Vec::new(),
    }
}

const fn sub(options: &'static [Opt], operands: Operands, summary: &'static str) -> Model {
    Model {
        names: &[],
        options,
        style: Style::Gnu,
        digits: false,
        operands,
        walks: Walks::Never,
        contents: true,
        follows: false,
        skips_hidden: false,
        walk_default: None,
        summary,
        check: no_check,
    }
}

/// The modelled subcommands, with their models.
const MODELLED: &[(&str, Model)] = &[
    (
        "status",
        sub(
            STATUS,
            Operands::Paths(None),
            "every option (its index refresh may write `.git/index`)",
        ),
    ),
    (
        "diff",
        Model {
            digits: true,
            ..sub(
                LOG,
                Operands::Paths(None),
                "every option but `--output`, `--ext-diff`, `--textconv`",
            )
        },
    ),
    (
        "log",
        Model {
            digits: true,
            ..sub(
                LOG,
                Operands::Paths(None),
                "every option but `--output`, `--ext-diff`, `--textconv`, `--show-signature`",
            )
        },
    ),
    (
        "show",
        Model {
            digits: true,
            ..sub(
                LOG,
                Operands::Paths(None),
                "every option but `--output`, `--ext-diff`, `--textconv`, `--show-signature`",
            )
        },
    ),
    (
        "branch",
        Model {
            check: branch_check,
            ..sub(
                BRANCH,
                Operands::Text,
                "listing only: no name outside `--list`, no `-d`, `-D`, `-f`, `-m`, `-c`, `-u`, `--edit-description`",
            )
        },
    ),
    ("rev-parse", sub(REV_PARSE, Operands::Text, "every option")),
    (
        "ls-files",
        sub(LS_FILES, Operands::Paths(None), "every option"),
    ),
    ("blame", sub(BLAME, Operands::Paths(None), "every option")),
    (
        "tag",
        Model {
            check: tag_check,
            ..sub(
                TAG,
                Operands::Text,
                "listing only: no name outside `--list`, no `-a`, `-s`, `-d`, `-f`, `-v`, `-m`",
            )
        },
    ),
    ("describe", sub(DESCRIBE, Operands::Text, "every option")),
    ("ls-tree", sub(LS_TREE, Operands::Text, "every option")),
    (
        "grep",
        Model {
            digits: true,
            walks: Walks::WhenAsked,
            ..sub(
                GIT_GREP,
                Operands::PatternThenPaths(Some(".")),
                "every option but `-O`, `--textconv`; `--untracked`, `--no-index` read the folder like `grep -r`",
            )
        },
    ),
    (
        "config",
        sub(
            CONFIG,
            Operands::Text,
            "reading only: `--get*`, `--list`, `get`, `list`, or one name",
        ),
    ),
    ("shortlog", sub(SHORTLOG, Operands::Text, "every option")),
    (
        "rev-list",
        Model {
            digits: true,
            ..sub(LOG, Operands::Paths(None), "every option of `git log`")
        },
    ),
    (
        "merge-base",
        sub(MERGE_BASE, Operands::Text, "every option"),
    ),
    (
        "cat-file",
        sub(
            CAT_FILE,
            Operands::Text,
            "every option but `--textconv`, `--filters`",
        ),
    ),
    (
        "reflog",
        sub(
            LOG,
            Operands::Paths(None),
            "`show`, `list`, `exists`; never `expire`, `delete`, `drop`, `write`",
        ),
    ),
    (
        "worktree",
        sub(WORKTREE_LIST_OPTS, Operands::Text, "`list` only"),
    ),
    (
        "count-objects",
        sub(COUNT_OBJECTS, Operands::Text, "every option"),
    ),
    (
        "stash",
        sub(
            LOG,
            Operands::Text,
            "`show` (the options of `git diff`), `list`; never any other",
        ),
    ),
    (
        "remote",
        sub(
            REMOTE,
            Operands::Text,
            "listing (`-v`), `get-url`, `show -n`; never `show` without `-n`, `add`, `remove`, `set-url`, `prune`, `update`",
        ),
    ),
    ("show-ref", sub(SHOW_REF, Operands::Text, "every option")),
    (
        "for-each-ref",
        sub(FOR_EACH_REF, Operands::Text, "every option"),
    ),
    (
        "check-ignore",
        Model {
            // It matches the names against the ignore rules, never opens them.
            contents: false,
            ..sub(CHECK_IGNORE, Operands::Paths(None), "every option")
        },
    ),
];

/// The git subcommands with a model.
pub(super) const SUBCOMMANDS: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "branch",
    "rev-parse",
    "ls-files",
    "blame",
    "tag",
    "describe",
    "ls-tree",
    "grep",
    "config",
    "shortlog",
    "rev-list",
    "merge-base",
    "cat-file",
    "reflog",
    "worktree",
    "count-objects",
    "stash",
    "remote",
    "show-ref",
    "for-each-ref",
    "check-ignore",
];

/// The cargo subcommands with a model (which says they are not reads).
pub(super) const CARGO_SUBCOMMANDS: &[&str] = &["metadata", "tree"];

/// Rows for docs/shell.md.
pub(super) fn documented() -> Vec<(String, &'static str)> {
    let mut rows: Vec<(String, &'static str)> = MODELLED
        .iter()
        .map(|(name, model)| (format!("git {name}"), model.summary))
        .collect();
    rows.push((
        "git (before the subcommand)".to_owned(),
        "`-C`, `--git-dir`, `--work-tree` (read), `--no-pager`, `-P`, `--no-optional-locks`, pathspec flags; never `-c`, `--config-env`, `--exec-path`, `-p`",
    ));
    rows.push((
        "cargo metadata, cargo tree".to_owned(),
        "never: they may rewrite `Cargo.lock` and run the `rustc` a `.cargo/config.toml` names",
    ));
    rows
}

/// git's own options before the subcommand: what they read and what is
/// not proven, and where the subcommand starts.
fn globals(args: &[String]) -> (Reading, usize) {
    let mut reading = Reading::default();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let arg = arg.as_str();
        if !arg.starts_with('-') {
            break;
        }
        i += 1;
        let (name, attached) = match arg.split_once('=') {
            Some((n, v)) if arg.starts_with("--") => (n, Some(v)),
            _ => (arg, None),
        };
        let mut value = || {
            attached.map(str::to_owned).or_else(|| {
                let v = args.get(i).cloned();
                i += 1;
                v
            })
        };
        match name {
            "-C" | "--git-dir" | "--work-tree" => match value() {
                Some(dir) => reading.reads.push(dir),
                None => reading
                    .hazards
                    .push(format!("`git {name}` lacks its value")),
            },
            "--namespace" | "--attr-source" => {
                value();
            }
            "-P"
            | "--no-pager"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-replace-objects"
            | "--bare"
            | "--no-lazy-fetch"
            | "--no-advice"
            | "--version"
            | "-v" => {}
            "-c" | "--config-env" => {
                value();
                reading.hazards.push(format!(
                    "`git {name}` sets configuration that can run programs"
                ));
            }
            "-p" | "--paginate" => reading.hazards.push(format!("`git {name}` runs a pager")),
            "--help" | "-h" => reading
                .hazards
                .push(format!("`git {name}` opens the manual in a pager")),
            _ => reading
                .hazards
                .push(format!("`git` option `{name}` is not known")),
        }
    }
    (reading, i)
}

/// Where a `git` command finds its repository, from its own options
/// before the subcommand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitLocation {
    /// The `-C` folders, in order (each taken from the one before).
    pub dirs: Vec<String>,
    /// `--git-dir`, taken from the last `-C` folder.
    pub git_dir: Option<String>,
}

/// [`GitLocation`] of `git ARGS`.
pub fn location(args: &[String]) -> GitLocation {
    let mut found = GitLocation::default();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if !arg.starts_with('-') {
            break;
        }
        i += 1;
        let (name, attached) = match arg.split_once('=') {
            Some((n, v)) if arg.starts_with("--") => (n, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let takes_value = matches!(
            name,
            "-C" | "--git-dir"
                | "--work-tree"
                | "--namespace"
                | "--attr-source"
                | "-c"
                | "--config-env"
        );
        if !takes_value {
            continue;
        }
        let value = attached.or_else(|| {
            let v = args.get(i).cloned();
            i += 1;
            v
        });
        match (name, value) {
            ("-C", Some(dir)) => found.dirs.push(dir),
            ("--git-dir", Some(dir)) => found.git_dir = Some(dir),
            _ => {}
        }
    }
    found
}

/// How `git ARGS` reads: its own options, then a modelled subcommand.
pub(super) fn read(args: &[String]) -> Option<Reading> {
    let (mut reading, i) = globals(args);
    let Some(subcommand) = args.get(i) else {
        // `git --version` and the like run nothing more.
        return (i > 0).then_some(reading);
    };
    let subcommand = subcommand.as_str();
    let (_, model) = MODELLED.iter().find(|(name, _)| *name == subcommand)?;
    let rest = &args[i + 1..];
    let inner = match subcommand {
        "reflog" | "worktree" | "config" | "stash" | "remote" => {
            match subcommand_of(subcommand, rest) {
                Ok(inner) => inner,
                Err(hazard) => Reading {
                    hazards: vec![hazard],
                    ..Reading::default()
                },
            }
        }
        _ => apply(model, &format!("git {subcommand}"), rest),
    };
    reading.reads.extend(inner.reads);
    reading.lists.extend(inner.lists);
    reading.walks.extend(inner.walks);
    reading.hazards.extend(inner.hazards);
    Some(reading)
}

/// `git reflog`, `git worktree` and `git config`, whose own first word may
/// be a further subcommand: only those that read are proven.
fn subcommand_of(subcommand: &str, rest: &[String]) -> Result<Reading, String> {
    let first = rest.first().map(String::as_str);
    match (subcommand, first) {
        ("reflog", Some("expire" | "delete" | "drop" | "write")) => Err(format!(
            "`git reflog {}` changes the reflog",
            first.unwrap_or_default()
        )),
        ("reflog", Some("show" | "list" | "exists")) => {
            Ok(apply(&LOG_MODEL, "git reflog", &rest[1..]))
        }
        ("reflog", _) => Ok(apply(&LOG_MODEL, "git reflog", rest)),
        ("worktree", Some("list")) => Ok(apply(&WORKTREE_LIST, "git worktree list", &rest[1..])),
        ("worktree", _) => Err("`git worktree` changes worktrees (only `list` reads)".to_owned()),
        ("stash", Some("show")) => Ok(apply(&STASH_SHOW, "git stash show", &rest[1..])),
        ("stash", Some("list")) => Ok(apply(&LOG_MODEL, "git stash list", &rest[1..])),
        ("stash", _) => Err(
            "`git stash` changes the stash or the worktree (only `show` and `list` read)"
                .to_owned(),
        ),
        ("remote", Some("get-url")) => Ok(apply(
            &REMOTE_GET_URL_MODEL,
            "git remote get-url",
            &rest[1..],
        )),
        ("remote", Some("show")) => Ok(apply(&REMOTE_SHOW_MODEL, "git remote show", &rest[1..])),
        ("remote", Some(word)) if !word.starts_with('-') => Err(format!(
            "`git remote {word}` changes the remotes (only listing, `get-url` and `show -n` read)"
        )),
        ("remote", _) => Ok(apply(&REMOTE_LIST, "git remote", rest)),
        ("config", Some("get" | "list")) => Ok(apply(&CONFIG_MODEL, "git config", &rest[1..])),
        ("config", Some(word))
            if !word.starts_with('-') && rest.len() > 1 && !config_gets(rest) =>
        {
            Err(format!("`git config {word} …` sets configuration"))
        }
        ("config", Some("set" | "unset" | "rename-section" | "remove-section" | "edit")) => {
            Err("`git config` changes configuration".to_owned())
        }
        _ => Ok(apply(&CONFIG_MODEL, "git config", rest)),
    }
}

/// Whether `git config ARGS` uses one of the options that only read.
fn config_gets(args: &[String]) -> bool {
    args.iter().any(|a| {
        matches!(
            a.as_str(),
            "--get" | "--get-all" | "--get-regexp" | "--get-urlmatch" | "-l" | "--list"
        )
    })
}

/// The words of a `git` command without git's own options before the
/// subcommand (`git -C src --no-pager log` is `git log`), for matching a
/// rule's prefix: those options are read (and judged) by the model.
pub(super) fn canonical(args: &[String]) -> Option<Vec<String>> {
    let (_, i) = globals(args);
    (i > 0 && i < args.len()).then(|| {
        std::iter::once("git".to_owned())
            .chain(args[i..].iter().cloned())
            .collect()
    })
}

/// How `cargo ARGS` reads: `metadata` and `tree` are never reads.
pub(super) fn cargo(args: &[String]) -> Option<Reading> {
    let subcommand = args.iter().find(|a| !a.starts_with('-'))?;
    CARGO_SUBCOMMANDS
        .contains(&subcommand.as_str())
        .then(|| Reading {
            hazards: vec![format!(
                "`cargo {subcommand}` may rewrite `Cargo.lock` and run the `rustc` that a `.cargo/config.toml` names"
            )],
            ..Reading::default()
        })
}
