//! Models of the programs that search and walk folders: GNU grep 3.8,
//! ripgrep 13-14, tree 2.1, GNU sed 4.9 (only scripts that print). `find`
//! has its own reader in `find.rs`.

use super::getopt::{Arg, Does, Opt, Parsed, Style, both, long, short};
use super::{Model, Operands, Walks, no_check};

const N: Does = Does::Nothing;
const HELP: Opt = long("help", Arg::No, N);

const GREP: &[Opt] = &[
    both('E', "extended-regexp", Arg::No, N),
    both('F', "fixed-strings", Arg::No, N),
    both('G', "basic-regexp", Arg::No, N),
    both('P', "perl-regexp", Arg::No, N),
    both('e', "regexp", Arg::Required, Does::Pattern),
    both('f', "file", Arg::Required, Does::PatternFile),
    both('i', "ignore-case", Arg::No, N),
    short('y', Arg::No, N),
    long("no-ignore-case", Arg::No, N),
    both('w', "word-regexp", Arg::No, N),
    both('x', "line-regexp", Arg::No, N),
    both('z', "null-data", Arg::No, N),
    both('s', "no-messages", Arg::No, N),
    both('v', "invert-match", Arg::No, N),
    both('V', "version", Arg::No, N),
    HELP,
    both('m', "max-count", Arg::Required, N),
    both('b', "byte-offset", Arg::No, N),
    both('n', "line-number", Arg::No, N),
    long("line-buffered", Arg::No, N),
    both('H', "with-filename", Arg::No, N),
    both('h', "no-filename", Arg::No, N),
    long("label", Arg::Required, N),
    both('o', "only-matching", Arg::No, N),
    both('q', "quiet", Arg::No, N),
    long("silent", Arg::No, N),
    long("binary-files", Arg::Required, N),
    both('a', "text", Arg::No, N),
    short('I', Arg::No, N),
    both(
        'd',
        "directories",
        Arg::Required,
        Does::Hazard("sets how folders are read (use `-r`)"),
    ),
    both('D', "devices", Arg::Required, N),
    both('r', "recursive", Arg::No, Does::Recurses),
    both(
        'R',
        "dereference-recursive",
        Arg::No,
        Does::RecursesFollowing,
    ),
    long("include", Arg::Required, Does::Includes),
    long("exclude", Arg::Required, N),
    long("exclude-from", Arg::Required, Does::Reads),
    long("exclude-dir", Arg::Required, Does::Excludes),
    both('L', "files-without-match", Arg::No, N),
    both('l', "files-with-matches", Arg::No, N),
    both('c', "count", Arg::No, N),
    both('T', "initial-tab", Arg::No, N),
    both('Z', "null", Arg::No, N),
    both('B', "before-context", Arg::Required, N),
    both('A', "after-context", Arg::Required, N),
    both('C', "context", Arg::Required, N),
    long("group-separator", Arg::Required, N),
    long("no-group-separator", Arg::No, N),
    long("color", Arg::Optional, N),
    long("colour", Arg::Optional, N),
    both('U', "binary", Arg::No, N),
];

const RG: &[Opt] = &[
    both('A', "after-context", Arg::Required, N),
    long("auto-hybrid-regex", Arg::No, N),
    long("no-auto-hybrid-regex", Arg::No, N),
    both('B', "before-context", Arg::Required, N),
    long("binary", Arg::No, N),
    long("no-binary", Arg::No, N),
    long("block-buffered", Arg::No, N),
    long("no-block-buffered", Arg::No, N),
    both('b', "byte-offset", Arg::No, N),
    long("no-byte-offset", Arg::No, N),
    both('s', "case-sensitive", Arg::No, N),
    long("color", Arg::Required, N),
    long("colors", Arg::Required, N),
    long("column", Arg::No, N),
    long("no-column", Arg::No, N),
    both('C', "context", Arg::Required, N),
    long("context-separator", Arg::Required, N),
    long("no-context-separator", Arg::No, N),
    both('c', "count", Arg::No, N),
    long("count-matches", Arg::No, N),
    long("crlf", Arg::No, N),
    long("no-crlf", Arg::No, N),
    long("debug", Arg::No, N),
    long("trace", Arg::No, N),
    long("dfa-size-limit", Arg::Required, N),
    both('E', "encoding", Arg::Required, N),
    long("no-encoding", Arg::No, N),
    long("engine", Arg::Required, N),
    long("field-context-separator", Arg::Required, N),
    long("field-match-separator", Arg::Required, N),
    both('f', "file", Arg::Required, Does::PatternFile),
    long("files", Arg::No, Does::Pattern),
    both('l', "files-with-matches", Arg::No, N),
    long("files-without-match", Arg::No, N),
    both('F', "fixed-strings", Arg::No, N),
    long("no-fixed-strings", Arg::No, N),
    both('L', "follow", Arg::No, Does::Follows),
    long("no-follow", Arg::No, N),
    both('g', "glob", Arg::Required, Does::Glob),
    long("glob-case-insensitive", Arg::No, N),
    long("no-glob-case-insensitive", Arg::No, N),
    both('h', "help", Arg::No, N),
    long("heading", Arg::No, N),
    long("no-heading", Arg::No, N),
    both('.', "hidden", Arg::No, Does::Hidden),
    long("no-hidden", Arg::No, N),
    long("iglob", Arg::Required, Does::Glob),
    both('i', "ignore-case", Arg::No, N),
    long("ignore-file", Arg::Required, Does::Reads),
    long("ignore-file-case-insensitive", Arg::No, N),
    long("no-ignore-file-case-insensitive", Arg::No, N),
    long("include-zero", Arg::No, N),
    long("no-include-zero", Arg::No, N),
    both('v', "invert-match", Arg::No, N),
    long("no-invert-match", Arg::No, N),
    long("json", Arg::No, N),
    long("no-json", Arg::No, N),
    long("line-buffered", Arg::No, N),
    long("no-line-buffered", Arg::No, N),
    both('n', "line-number", Arg::No, N),
    both('N', "no-line-number", Arg::No, N),
    both('x', "line-regexp", Arg::No, N),
    both('M', "max-columns", Arg::Required, N),
    long("max-columns-preview", Arg::No, N),
    long("no-max-columns-preview", Arg::No, N),
    both('m', "max-count", Arg::Required, N),
    long("max-depth", Arg::Required, N),
    short('d', Arg::Required, N),
    long("maxdepth", Arg::Required, N),
    long("max-filesize", Arg::Required, N),
    long("mmap", Arg::No, N),
    long("no-mmap", Arg::No, N),
    both('U', "multiline", Arg::No, N),
    long("no-multiline", Arg::No, N),
    long("multiline-dotall", Arg::No, N),
    long("no-multiline-dotall", Arg::No, N),
    long("no-config", Arg::No, N),
    both('I', "no-filename", Arg::No, N),
    long("no-ignore", Arg::No, N),
    long("ignore", Arg::No, N),
    long("no-ignore-dot", Arg::No, N),
    long("ignore-dot", Arg::No, N),
    long("no-ignore-exclude", Arg::No, N),
    long("ignore-exclude", Arg::No, N),
    long("no-ignore-files", Arg::No, N),
    long("ignore-files", Arg::No, N),
    long("no-ignore-global", Arg::No, N),
    long("ignore-global", Arg::No, N),
    long("no-ignore-messages", Arg::No, N),
    long("ignore-messages", Arg::No, N),
    long("no-ignore-parent", Arg::No, N),
    long("ignore-parent", Arg::No, N),
    long("no-ignore-vcs", Arg::No, N),
    long("ignore-vcs", Arg::No, N),
    long("no-messages", Arg::No, N),
    long("messages", Arg::No, N),
    long("no-pcre2-unicode", Arg::No, N),
    long("pcre2-unicode", Arg::No, N),
    long("no-require-git", Arg::No, N),
    long("require-git", Arg::No, N),
    long("no-unicode", Arg::No, N),
    long("unicode", Arg::No, N),
    both('0', "null", Arg::No, N),
    long("null-data", Arg::No, N),
    long("one-file-system", Arg::No, N),
    long("no-one-file-system", Arg::No, N),
    both('o', "only-matching", Arg::No, N),
    long("passthru", Arg::No, N),
    long("passthrough", Arg::No, N),
    long("path-separator", Arg::Required, N),
    both('P', "pcre2", Arg::No, N),
    long("no-pcre2", Arg::No, N),
    long("pcre2-version", Arg::No, Does::Pattern),
    long("pre", Arg::Required, Does::Runs),
    long("no-pre", Arg::No, N),
    long("pre-glob", Arg::Required, N),
    both('p', "pretty", Arg::No, N),
    both('q', "quiet", Arg::No, N),
    long("regex-size-limit", Arg::Required, N),
    both('e', "regexp", Arg::Required, Does::Pattern),
    both('r', "replace", Arg::Required, N),
    both('z', "search-zip", Arg::No, Does::Runs),
    long("no-search-zip", Arg::No, N),
    both('S', "smart-case", Arg::No, N),
    long("sort", Arg::Required, N),
    long("sortr", Arg::Required, N),
    long("sort-files", Arg::No, N),
    long("no-sort-files", Arg::No, N),
    long("stats", Arg::No, N),
    long("no-stats", Arg::No, N),
    both('a', "text", Arg::No, N),
    long("no-text", Arg::No, N),
    both('j', "threads", Arg::Required, N),
    long("trim", Arg::No, N),
    long("no-trim", Arg::No, N),
    both('t', "type", Arg::Required, N),
    long("type-add", Arg::Required, N),
    long("type-clear", Arg::Required, N),
    long("type-list", Arg::No, Does::Pattern),
    both('T', "type-not", Arg::Required, N),
    // One `-u` drops ignore files, two also read hidden names: either is
    // read as reading hidden names.
    both('u', "unrestricted", Arg::No, Does::Hidden),
    both('V', "version", Arg::No, Does::Pattern),
    long("vimgrep", Arg::No, N),
    both('H', "with-filename", Arg::No, N),
    long("no-filename", Arg::No, N),
    both('w', "word-regexp", Arg::No, N),
    long("hostname-bin", Arg::Required, Does::Runs),
    long("hyperlink-format", Arg::Required, N),
    long("generate", Arg::Required, N),
];

/// tree 2.1: its own parser, values in the next word.
const TREE: &[Opt] = &[
    short('a', Arg::No, Does::Hidden),
    short('d', Arg::No, N),
    short('l', Arg::No, Does::Follows),
    short('f', Arg::No, N),
    short('x', Arg::No, N),
    short('L', Arg::Required, N),
    short(
        'R',
        Arg::No,
        Does::Hazard("runs tree again in each folder, writing `00Tree.html`"),
    ),
    short('P', Arg::Required, N),
    short('I', Arg::Required, Does::Excludes),
    long("gitignore", Arg::No, N),
    long("gitfile", Arg::Required, Does::Reads),
    long("ignore-case", Arg::No, N),
    long("matchdirs", Arg::No, N),
    long("metafirst", Arg::No, N),
    long("prune", Arg::No, N),
    long("info", Arg::No, N),
    long("infofile", Arg::Required, Does::Reads),
    long("noreport", Arg::No, N),
    long("charset", Arg::Required, N),
    long("filelimit", Arg::Required, N),
    short('o', Arg::Required, Does::Writes),
    short('q', Arg::No, N),
    short('N', Arg::No, N),
    short('Q', Arg::No, N),
    short('p', Arg::No, N),
    short('u', Arg::No, N),
    short('g', Arg::No, N),
    short('s', Arg::No, N),
    short('h', Arg::No, N),
    long("si", Arg::No, N),
    long("du", Arg::No, N),
    short('D', Arg::No, N),
    long("timefmt", Arg::Required, N),
    short('F', Arg::No, N),
    long("inodes", Arg::No, N),
    long("device", Arg::No, N),
    short('v', Arg::No, N),
    short('t', Arg::No, N),
    short('c', Arg::No, N),
    short('U', Arg::No, N),
    short('r', Arg::No, N),
    long("dirsfirst", Arg::No, N),
    long("filesfirst", Arg::No, N),
    long("sort", Arg::Required, N),
    short('i', Arg::No, N),
    short('A', Arg::No, N),
    short('S', Arg::No, N),
    short('n', Arg::No, N),
    short('C', Arg::No, N),
    short('X', Arg::No, N),
    short('J', Arg::No, N),
    short('H', Arg::Required, N),
    short('T', Arg::Required, N),
    long("nolinks", Arg::No, N),
    long("hintro", Arg::Required, Does::Reads),
    long("houtro", Arg::Required, Does::Reads),
    long("fromfile", Arg::No, Does::ReadsList),
    long("fflinks", Arg::No, N),
    long("version", Arg::No, N),
    long("help", Arg::No, N),
];

/// GNU sed: only what keeps it from writing or running anything.
const SED: &[Opt] = &[
    both('n', "quiet", Arg::No, N),
    long("silent", Arg::No, N),
    long("debug", Arg::No, N),
    both('e', "expression", Arg::Required, Does::Pattern),
    both(
        'f',
        "file",
        Arg::Required,
        Does::Hazard("reads its script from a file"),
    ),
    long("follow-symlinks", Arg::No, N),
    both('i', "in-place", Arg::Optional, Does::Writes),
    both('l', "line-length", Arg::Required, N),
    long("posix", Arg::No, N),
    both('E', "regexp-extended", Arg::No, N),
    short('r', Arg::No, N),
    both('s', "separate", Arg::No, N),
    long("sandbox", Arg::No, N),
    both('u', "unbuffered", Arg::No, N),
    both('z', "null-data", Arg::No, N),
    long("help", Arg::No, N),
    long("version", Arg::No, N),
];

/// A sed script is proven only when it can neither write nor run: with
/// `--sandbox`, or when every command is one of `p`, `d`, `q`, `Q`, `=`,
/// `n`, `N`, `l` or an `s///` with flags among `gpiImM` and digits, each
/// with at most a numeric or `$` address (range).
fn sed_check(parsed: &Parsed<'_>) -> Vec<String> {
    if parsed.named("--sandbox") {
        return Vec::new();
    }
    let scripts: Vec<&str> = if parsed.has(Does::Pattern) {
        parsed.values(Does::Pattern).collect()
    } else {
        parsed.operands.first().copied().into_iter().collect()
    };
    scripts
        .into_iter()
        .filter(|s| !sed_script_prints_only(s))
        .map(|s| format!("the sed script `{s}` is not proven to only print"))
        .take(1)
        .collect()
}

/// Whether `script` is a list of print-only sed commands (see [`sed_check`]).
fn sed_script_prints_only(script: &str) -> bool {
    let bytes = script.as_bytes();
    let mut i = 0;
    let skip_blanks = |i: &mut usize| {
        while *i < bytes.len() && matches!(bytes[*i], b' ' | b'\t') {
            *i += 1;
        }
    };
    let address = |i: &mut usize| {
        if *i < bytes.len() && bytes[*i] == b'$' {
            *i += 1;
            return;
        }
        while *i < bytes.len() && bytes[*i].is_ascii_digit() {
            *i += 1;
        }
    };
    loop {
        skip_blanks(&mut i);
        while i < bytes.len() && matches!(bytes[i], b';' | b'\n') {
            i += 1;
            skip_blanks(&mut i);
        }
        if i >= bytes.len() {
            return true;
        }
        address(&mut i);
        skip_blanks(&mut i);
        if i < bytes.len() && bytes[i] == b',' {
            i += 1;
            skip_blanks(&mut i);
            address(&mut i);
            skip_blanks(&mut i);
        }
        if i < bytes.len() && bytes[i] == b'!' {
            i += 1;
            skip_blanks(&mut i);
        }
        let Some(&command) = bytes.get(i) else {
            return false;
        };
        i += 1;
        match command {
            b'p' | b'd' | b'q' | b'Q' | b'=' | b'n' | b'N' | b'l' => {}
            b's' => {
                // s/RE/REPLACEMENT/FLAGS, any delimiter but a newline or
                // a backslash.
                let Some(&delimiter) = bytes.get(i).filter(|d| !matches!(d, b'\n' | b'\\')) else {
                    return false;
                };
                i += 1;
                for _ in 0..2 {
                    loop {
                        match bytes.get(i) {
                            None | Some(b'\n') => return false,
                            Some(b'\\') => i += 2,
                            Some(&b) if b == delimiter => {
                                i += 1;
                                break;
                            }
                            Some(_) => i += 1,
                        }
                    }
                }
                while i < bytes.len()
                    && (bytes[i].is_ascii_digit() || b"gpiImM".contains(&bytes[i]))
                {
                    i += 1;
                }
            }
            _ => return false,
        }
        skip_blanks(&mut i);
        match bytes.get(i) {
            None => return true,
            Some(b';' | b'\n') => {}
            Some(_) => return false,
        }
    }
}

pub(crate) const MODELS: &[Model] = &[
    Model {
        names: &["grep", "egrep", "fgrep"],
        options: GREP,
        style: Style::Gnu,
        digits: true,
        operands: Operands::PatternThenPaths(None),
        walks: Walks::WhenAsked,
        contents: true,
        follows: false,
        skips_hidden: false,
        walk_default: Some("."),
        summary: "every option but `-d`; `-r` walks, `-R` also follows symlinks; `--exclude-dir`, `--include` narrow the walk",
        check: no_check,
    },
    Model {
        names: &["rg"],
        options: RG,
        style: Style::Gnu,
        digits: false,
        operands: Operands::PatternThenPaths(Some(".")),
        walks: Walks::Always,
        contents: true,
        follows: false,
        skips_hidden: true,
        walk_default: None,
        summary: "every option but `--pre`, `--hostname-bin`, `-z`; walks, skipping hidden names unless `--hidden`/`-uu`/`-g`; `-L` follows symlinks",
        check: no_check,
    },
    Model {
        names: &["tree"],
        options: TREE,
        style: Style::NextWord,
        digits: false,
        operands: Operands::Paths(Some(".")),
        walks: Walks::Always,
        contents: false,
        follows: false,
        skips_hidden: true,
        walk_default: None,
        summary: "every option but `-o`, `-R`, `--fromfile`; walks (names only), `-l` follows symlinks",
        check: no_check,
    },
    Model {
        names: &["sed"],
        options: SED,
        style: Style::Gnu,
        digits: false,
        operands: Operands::PatternThenPaths(None),
        walks: Walks::Never,
        contents: true,
        follows: false,
        skips_hidden: false,
        walk_default: None,
        summary: "scripts of `p`, `d`, `q`, `=`, `n`, `l` and `s///` (any delimiter) without `w`/`e` flags, or any script with `--sandbox`; never `-i`, `-f`",
        check: sed_check,
    },
];

#[cfg(test)]
mod tests {
    use super::sed_script_prints_only;

    #[test]
    fn sed_scripts_that_only_print() {
        for s in [
            "1,40p",
            "10p",
            "$p",
            "1,5d",
            "5q",
            "s/a/b/g",
            "s|.*/||",
            "s/a\\/x/b/2p",
            "1,3p;5p",
            "2,$!d",
            "=",
            "",
        ] {
            assert!(sed_script_prints_only(s), "{s}");
        }
        for s in [
            "w out",
            "s/a/b/w out",
            "s/a/b/e",
            "1e ls",
            "r /etc/passwd",
            "/x/p",
            "1,5p w f",
            "s/a/b",
        ] {
            assert!(!sed_script_prints_only(s), "{s}");
        }
    }
}
