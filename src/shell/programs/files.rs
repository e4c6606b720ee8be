//! Models of the programs that read files or print text: GNU coreutils
//! 9.1, diffutils 3.8, file 5.44, and the shell builtins that print. Each
//! table lists every option the program knows; only the effect of an option
//! that is more than a read is marked.

use super::getopt::{Arg, Does, Opt, Parsed, Style, both, long, short};
use super::{Model, Operands, Reading, Walks, no_check};

const HELP: Opt = long("help", Arg::No, Does::Nothing);
const VERSION: Opt = long("version", Arg::No, Does::Nothing);
const N: Does = Does::Nothing;

const LS: &[Opt] = &[
    both('a', "all", Arg::No, N),
    both('A', "almost-all", Arg::No, N),
    long("author", Arg::No, N),
    both('b', "escape", Arg::No, N),
    long("block-size", Arg::Required, N),
    both('B', "ignore-backups", Arg::No, N),
    short('c', Arg::No, N),
    short('C', Arg::No, N),
    long("color", Arg::Optional, N),
    long("colour", Arg::Optional, N),
    both('d', "directory", Arg::No, N),
    both('D', "dired", Arg::No, N),
    short('f', Arg::No, N),
    both('F', "classify", Arg::Optional, N),
    long("file-type", Arg::No, N),
    long("format", Arg::Required, N),
    long("full-time", Arg::No, N),
    short('g', Arg::No, N),
    long("group-directories-first", Arg::No, N),
    both('G', "no-group", Arg::No, N),
    both('h', "human-readable", Arg::No, N),
    long("si", Arg::No, N),
    both('H', "dereference-command-line", Arg::No, N),
    long("dereference-command-line-symlink-to-dir", Arg::No, N),
    long("hide", Arg::Required, N),
    long("hyperlink", Arg::Optional, N),
    long("indicator-style", Arg::Required, N),
    both('i', "inode", Arg::No, N),
    both('I', "ignore", Arg::Required, N),
    both('k', "kibibytes", Arg::No, N),
    short('l', Arg::No, N),
    both('L', "dereference", Arg::No, Does::Follows),
    short('m', Arg::No, N),
    both('n', "numeric-uid-gid", Arg::No, N),
    both('N', "literal", Arg::No, N),
    short('o', Arg::No, N),
    short('p', Arg::No, N),
    both('q', "hide-control-chars", Arg::No, N),
    long("show-control-chars", Arg::No, N),
    both('Q', "quote-name", Arg::No, N),
    long("quoting-style", Arg::Required, N),
    both('r', "reverse", Arg::No, N),
    both('R', "recursive", Arg::No, Does::Recurses),
    both('s', "size", Arg::No, N),
    short('S', Arg::No, N),
    long("sort", Arg::Required, N),
    long("time", Arg::Required, N),
    long("time-style", Arg::Required, N),
    short('t', Arg::No, N),
    both('T', "tabsize", Arg::Required, N),
    short('u', Arg::No, N),
    short('U', Arg::No, N),
    short('v', Arg::No, N),
    both('w', "width", Arg::Required, N),
    short('x', Arg::No, N),
    short('X', Arg::No, N),
    both('Z', "context", Arg::No, N),
    long("zero", Arg::No, N),
    short('1', Arg::No, N),
    HELP,
    VERSION,
];

const CAT: &[Opt] = &[
    both('A', "show-all", Arg::No, N),
    both('b', "number-nonblank", Arg::No, N),
    short('e', Arg::No, N),
    both('E', "show-ends", Arg::No, N),
    both('n', "number", Arg::No, N),
    both('s', "squeeze-blank", Arg::No, N),
    short('t', Arg::No, N),
    both('T', "show-tabs", Arg::No, N),
    short('u', Arg::No, N),
    both('v', "show-nonprinting", Arg::No, N),
    HELP,
    VERSION,
];

const HEAD: &[Opt] = &[
    both('c', "bytes", Arg::Required, N),
    both('n', "lines", Arg::Required, N),
    both('q', "quiet", Arg::No, N),
    long("silent", Arg::No, N),
    both('v', "verbose", Arg::No, N),
    both('z', "zero-terminated", Arg::No, N),
    HELP,
    VERSION,
];

const TAIL: &[Opt] = &[
    both('c', "bytes", Arg::Required, N),
    both('f', "follow", Arg::Optional, N),
    short('F', Arg::No, N),
    both('n', "lines", Arg::Required, N),
    long("max-unchanged-stats", Arg::Required, N),
    long("pid", Arg::Required, N),
    both('q', "quiet", Arg::No, N),
    long("silent", Arg::No, N),
    long("retry", Arg::No, N),
    both('s', "sleep-interval", Arg::Required, N),
    both('v', "verbose", Arg::No, N),
    both('z', "zero-terminated", Arg::No, N),
    HELP,
    VERSION,
];

const WC: &[Opt] = &[
    both('c', "bytes", Arg::No, N),
    both('m', "chars", Arg::No, N),
    both('l', "lines", Arg::No, N),
    long("files0-from", Arg::Required, Does::ReadsList),
    both('L', "max-line-length", Arg::No, N),
    both('w', "words", Arg::No, N),
    long("total", Arg::Required, N),
    HELP,
    VERSION,
];

const NL: &[Opt] = &[
    both('b', "body-numbering", Arg::Required, N),
    both('d', "section-delimiter", Arg::Required, N),
    both('f', "footer-numbering", Arg::Required, N),
    both('h', "header-numbering", Arg::Required, N),
    both('i', "line-increment", Arg::Required, N),
    both('l', "join-blank-lines", Arg::Required, N),
    both('n', "number-format", Arg::Required, N),
    both('p', "no-renumber", Arg::No, N),
    both('s', "number-separator", Arg::Required, N),
    both('v', "starting-line-number", Arg::Required, N),
    both('w', "number-width", Arg::Required, N),
    HELP,
    VERSION,
];

const STAT: &[Opt] = &[
    both('L', "dereference", Arg::No, N),
    both('f', "file-system", Arg::No, N),
    long("cached", Arg::Required, N),
    both('c', "format", Arg::Required, N),
    long("printf", Arg::Required, N),
    both('t', "terse", Arg::No, N),
    HELP,
    VERSION,
];

const DU: &[Opt] = &[
    both('0', "null", Arg::No, N),
    both('a', "all", Arg::No, N),
    long("apparent-size", Arg::No, N),
    both('B', "block-size", Arg::Required, N),
    both('b', "bytes", Arg::No, N),
    both('c', "total", Arg::No, N),
    both('D', "dereference-args", Arg::No, N),
    both('d', "max-depth", Arg::Required, N),
    long("files0-from", Arg::Required, Does::ReadsList),
    short('H', Arg::No, N),
    both('h', "human-readable", Arg::No, N),
    long("inodes", Arg::No, N),
    short('k', Arg::No, N),
    both('L', "dereference", Arg::No, Does::Follows),
    both('l', "count-links", Arg::No, N),
    short('m', Arg::No, N),
    both('P', "no-dereference", Arg::No, N),
    both('S', "separate-dirs", Arg::No, N),
    long("si", Arg::No, N),
    both('s', "summarize", Arg::No, N),
    both('t', "threshold", Arg::Required, N),
    long("time", Arg::Optional, N),
    long("time-style", Arg::Required, N),
    both('X', "exclude-from", Arg::Required, Does::Reads),
    long("exclude", Arg::Required, Does::Excludes),
    both('x', "one-file-system", Arg::No, N),
    HELP,
    VERSION,
];

const CHECKSUM: &[Opt] = &[
    both('b', "binary", Arg::No, N),
    both(
        'c',
        "check",
        Arg::No,
        Does::Hazard("reads the names of the files to read from its operands"),
    ),
    long("tag", Arg::No, N),
    both('t', "text", Arg::No, N),
    both('z', "zero", Arg::No, N),
    long("ignore-missing", Arg::No, N),
    long("quiet", Arg::No, N),
    long("status", Arg::No, N),
    long("strict", Arg::No, N),
    both('w', "warn", Arg::No, N),
    HELP,
    VERSION,
];

const B2SUM: &[Opt] = &[
    both('b', "binary", Arg::No, N),
    both(
        'c',
        "check",
        Arg::No,
        Does::Hazard("reads the names of the files to read from its operands"),
    ),
    both('l', "length", Arg::Required, N),
    long("tag", Arg::No, N),
    both('t', "text", Arg::No, N),
    both('z', "zero", Arg::No, N),
    long("ignore-missing", Arg::No, N),
    long("quiet", Arg::No, N),
    long("status", Arg::No, N),
    long("strict", Arg::No, N),
    both('w', "warn", Arg::No, N),
    HELP,
    VERSION,
];

const CUT: &[Opt] = &[
    both('b', "bytes", Arg::Required, N),
    both('c', "characters", Arg::Required, N),
    both('d', "delimiter", Arg::Required, N),
    both('f', "fields", Arg::Required, N),
    short('n', Arg::No, N),
    long("complement", Arg::No, N),
    both('s', "only-delimited", Arg::No, N),
    long("output-delimiter", Arg::Required, N),
    both('z', "zero-terminated", Arg::No, N),
    HELP,
    VERSION,
];

const TR: &[Opt] = &[
    both('c', "complement", Arg::No, N),
    short('C', Arg::No, N),
    both('d', "delete", Arg::No, N),
    both('s', "squeeze-repeats", Arg::No, N),
    both('t', "truncate-set1", Arg::No, N),
    HELP,
    VERSION,
];

const UNIQ: &[Opt] = &[
    both('c', "count", Arg::No, N),
    both('d', "repeated", Arg::No, N),
    short('D', Arg::No, N),
    long("all-repeated", Arg::Optional, N),
    both('f', "skip-fields", Arg::Required, N),
    long("group", Arg::Optional, N),
    both('i', "ignore-case", Arg::No, N),
    both('s', "skip-chars", Arg::Required, N),
    both('u', "unique", Arg::No, N),
    both('z', "zero-terminated", Arg::No, N),
    both('w', "check-chars", Arg::Required, N),
    HELP,
    VERSION,
];

const SORT: &[Opt] = &[
    both('b', "ignore-leading-blanks", Arg::No, N),
    both('d', "dictionary-order", Arg::No, N),
    both('f', "ignore-case", Arg::No, N),
    both('g', "general-numeric-sort", Arg::No, N),
    both('i', "ignore-nonprinting", Arg::No, N),
    both('M', "month-sort", Arg::No, N),
    both('h', "human-numeric-sort", Arg::No, N),
    both('n', "numeric-sort", Arg::No, N),
    both('R', "random-sort", Arg::No, N),
    long("random-source", Arg::Required, Does::Reads),
    both('r', "reverse", Arg::No, N),
    long("sort", Arg::Required, N),
    both('V', "version-sort", Arg::No, N),
    long("batch-size", Arg::Required, N),
    both('c', "check", Arg::Optional, N),
    short('C', Arg::No, N),
    long("compress-program", Arg::Required, Does::Runs),
    long("debug", Arg::No, N),
    long("files0-from", Arg::Required, Does::ReadsList),
    both('k', "key", Arg::Required, N),
    both(
        'm',
        "merge",
        Arg::No,
        Does::Hazard("merges through temporary files it writes"),
    ),
    both('o', "output", Arg::Required, Does::Writes),
    both('s', "stable", Arg::No, N),
    both('S', "buffer-size", Arg::Required, N),
    both('t', "field-separator", Arg::Required, N),
    both('T', "temporary-directory", Arg::Required, Does::Writes),
    long("parallel", Arg::Required, N),
    both('u', "unique", Arg::No, N),
    both('z', "zero-terminated", Arg::No, N),
    HELP,
    VERSION,
];

const DIFF: &[Opt] = &[
    long("normal", Arg::No, N),
    both('q', "brief", Arg::No, N),
    both('s', "report-identical-files", Arg::No, N),
    short('c', Arg::No, N),
    both('C', "context", Arg::Optional, N),
    short('u', Arg::No, N),
    both('U', "unified", Arg::Optional, N),
    both('e', "ed", Arg::No, N),
    both('n', "rcs", Arg::No, N),
    both('y', "side-by-side", Arg::No, N),
    both('W', "width", Arg::Required, N),
    long("left-column", Arg::No, N),
    long("suppress-common-lines", Arg::No, N),
    both('p', "show-c-function", Arg::No, N),
    both('F', "show-function-line", Arg::Required, N),
    long("label", Arg::Required, N),
    both('t', "expand-tabs", Arg::No, N),
    both('T', "initial-tab", Arg::No, N),
    long("tabsize", Arg::Required, N),
    long("suppress-blank-empty", Arg::No, N),
    both('l', "paginate", Arg::No, Does::Runs),
    both('r', "recursive", Arg::No, Does::Recurses),
    long("no-dereference", Arg::No, N),
    both('N', "new-file", Arg::No, N),
    long("unidirectional-new-file", Arg::No, N),
    long("ignore-file-name-case", Arg::No, N),
    long("no-ignore-file-name-case", Arg::No, N),
    both('x', "exclude", Arg::Required, Does::Excludes),
    both('X', "exclude-from", Arg::Required, Does::Reads),
    both('S', "starting-file", Arg::Required, N),
    long("from-file", Arg::Required, Does::Reads),
    long("to-file", Arg::Required, Does::Reads),
    both('i', "ignore-case", Arg::No, N),
    both('E', "ignore-tab-expansion", Arg::No, N),
    both('Z', "ignore-trailing-space", Arg::No, N),
    both('b', "ignore-space-change", Arg::No, N),
    both('w', "ignore-all-space", Arg::No, N),
    both('B', "ignore-blank-lines", Arg::No, N),
    both('I', "ignore-matching-lines", Arg::Required, N),
    both('a', "text", Arg::No, N),
    long("strip-trailing-cr", Arg::No, N),
    both('D', "ifdef", Arg::Required, N),
    long("old-group-format", Arg::Required, N),
    long("new-group-format", Arg::Required, N),
    long("unchanged-group-format", Arg::Required, N),
    long("changed-group-format", Arg::Required, N),
    long("line-format", Arg::Required, N),
    long("old-line-format", Arg::Required, N),
    long("new-line-format", Arg::Required, N),
    long("unchanged-line-format", Arg::Required, N),
    both('d', "minimal", Arg::No, N),
    long("horizon-lines", Arg::Required, N),
    long("speed-large-files", Arg::No, N),
    long("color", Arg::Optional, N),
    long("palette", Arg::Required, N),
    HELP,
    both('v', "version", Arg::No, N),
];

const CMP: &[Opt] = &[
    both('b', "print-bytes", Arg::No, N),
    both('i', "ignore-initial", Arg::Required, N),
    both('l', "verbose", Arg::No, N),
    both('n', "bytes", Arg::Required, N),
    both('s', "quiet", Arg::No, N),
    long("silent", Arg::No, N),
    HELP,
    both('v', "version", Arg::No, N),
];

const FILE: &[Opt] = &[
    HELP,
    both('v', "version", Arg::No, N),
    both('m', "magic-file", Arg::Required, Does::Reads),
    both(
        'z',
        "uncompress",
        Arg::No,
        Does::Hazard("may run a decompressor"),
    ),
    both(
        'Z',
        "uncompress-noreport",
        Arg::No,
        Does::Hazard("may run a decompressor"),
    ),
    both('b', "brief", Arg::No, N),
    both('c', "checking-printout", Arg::No, N),
    both('e', "exclude", Arg::Required, N),
    long("exclude-quiet", Arg::Required, N),
    both('f', "files-from", Arg::Required, Does::ReadsList),
    both('F', "separator", Arg::Required, N),
    both('i', "mime", Arg::No, N),
    long("mime-type", Arg::No, N),
    long("mime-encoding", Arg::No, N),
    long("apple", Arg::No, N),
    long("extension", Arg::No, N),
    both('k', "keep-going", Arg::No, N),
    both('l', "list", Arg::No, N),
    both('L', "dereference", Arg::No, N),
    both('h', "no-dereference", Arg::No, N),
    both('n', "no-buffer", Arg::No, N),
    both('N', "no-pad", Arg::No, N),
    both('0', "print0", Arg::No, N),
    both(
        'p',
        "preserve-date",
        Arg::No,
        Does::Hazard("changes the access times of the files it reads"),
    ),
    both('P', "parameter", Arg::Required, N),
    both('r', "raw", Arg::No, N),
    both('s', "special-files", Arg::No, N),
    both('S', "no-sandbox", Arg::No, N),
    both('C', "compile", Arg::No, Does::Writes),
    both('d', "debug", Arg::No, N),
];

const REALPATH: &[Opt] = &[
    both('e', "canonicalize-existing", Arg::No, N),
    both('m', "canonicalize-missing", Arg::No, N),
    both('L', "logical", Arg::No, N),
    both('P', "physical", Arg::No, N),
    both('q', "quiet", Arg::No, N),
    long("relative-to", Arg::Required, Does::Reads),
    long("relative-base", Arg::Required, Does::Reads),
    both('s', "strip", Arg::No, N),
    long("no-symlinks", Arg::No, N),
    both('z', "zero", Arg::No, N),
    HELP,
    VERSION,
];

const READLINK: &[Opt] = &[
    both('f', "canonicalize", Arg::No, N),
    both('e', "canonicalize-existing", Arg::No, N),
    both('m', "canonicalize-missing", Arg::No, N),
    both('n', "no-newline", Arg::No, N),
    both('q', "quiet", Arg::No, N),
    both('s', "silent", Arg::No, N),
    both('v', "verbose", Arg::No, N),
    both('z', "zero", Arg::No, N),
    HELP,
    VERSION,
];

const BASENAME: &[Opt] = &[
    both('a', "multiple", Arg::No, N),
    both('s', "suffix", Arg::Required, N),
    both('z', "zero", Arg::No, N),
    HELP,
    VERSION,
];

const DIRNAME: &[Opt] = &[both('z', "zero", Arg::No, N), HELP, VERSION];

const DATE: &[Opt] = &[
    both('d', "date", Arg::Required, N),
    long("debug", Arg::No, N),
    both('f', "file", Arg::Required, Does::Reads),
    both('I', "iso-8601", Arg::Optional, N),
    long("resolution", Arg::No, N),
    both('R', "rfc-email", Arg::No, N),
    long("rfc-3339", Arg::Required, N),
    both('r', "reference", Arg::Required, Does::Reads),
    both(
        's',
        "set",
        Arg::Required,
        Does::Hazard("sets the system clock"),
    ),
    both('u', "utc", Arg::No, N),
    long("universal", Arg::No, N),
    HELP,
    VERSION,
];

const UNAME: &[Opt] = &[
    both('a', "all", Arg::No, N),
    both('s', "kernel-name", Arg::No, N),
    both('n', "nodename", Arg::No, N),
    both('r', "kernel-release", Arg::No, N),
    both('v', "kernel-version", Arg::No, N),
    both('m', "machine", Arg::No, N),
    both('p', "processor", Arg::No, N),
    both('i', "hardware-platform", Arg::No, N),
    both('o', "operating-system", Arg::No, N),
    HELP,
    VERSION,
];

const ONLY_HELP: &[Opt] = &[HELP, VERSION];

/// Bash's `pwd` builtin.
const PWD: &[Opt] = &[short('L', Arg::No, N), short('P', Arg::No, N)];

/// Debian's `which` (debianutils).
const WHICH: &[Opt] = &[short('a', Arg::No, N), short('s', Arg::No, N)];

/// Bash's `cd` builtin; the folder it enters is followed by the facts.
const CD: &[Opt] = &[
    short('L', Arg::No, N),
    short('P', Arg::No, N),
    short('e', Arg::No, N),
    short('@', Arg::No, N),
];

/// `date` with an operand that is not `+FORMAT` sets the clock.
fn date_check(parsed: &Parsed<'_>) -> Vec<String> {
    parsed
        .operands
        .iter()
        .filter(|o| !o.starts_with('+'))
        .map(|o| format!("`date {o}` sets the system clock"))
        .take(1)
        .collect()
}

/// `uniq IN OUT` writes OUT; an operand that is a pattern may expand to
/// two names, the second then written (`uniq -d src/*.rs`).
fn uniq_check(parsed: &Parsed<'_>) -> Vec<String> {
    if let Some(out) = parsed.operands.get(1) {
        return vec![format!("`uniq` writes its second operand `{out}`")];
    }
    parsed
        .operands
        .iter()
        .find(|o| o.contains(['*', '?', '[', '{']))
        .map(|o| format!("`uniq {o}`: a pattern may name two files, and the second is written"))
        .into_iter()
        .collect()
}

/// `cd` with more than one folder is an error; a folder it cannot follow
/// (`-`, an expansion) is the facts' business.
fn cd_check(parsed: &Parsed<'_>) -> Vec<String> {
    (parsed.operands.len() > 1)
        .then(|| "`cd` takes one folder".to_owned())
        .into_iter()
        .collect()
}

const fn model(
    names: &'static [&'static str],
    options: &'static [Opt],
    operands: Operands,
    summary: &'static str,
) -> Model {
    Model {
        names,
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

pub(crate) const MODELS: &[Model] = &[
    Model {
        walks: Walks::WhenAsked,
        contents: false,
        ..model(
            &["ls"],
            LS,
            Operands::Paths(Some(".")),
            "every option; `-R` walks (names only), `-L` with it follows symlinks",
        )
    },
    model(&["cat"], CAT, Operands::Paths(None), "every option"),
    Model {
        digits: true,
        ..model(
            &["head"],
            HEAD,
            Operands::Paths(None),
            "every option, `-NUM`",
        )
    },
    Model {
        digits: true,
        ..model(
            &["tail"],
            TAIL,
            Operands::Paths(None),
            "every option, `-NUM`",
        )
    },
    model(
        &["wc"],
        WC,
        Operands::Paths(None),
        "every option but `--files0-from`",
    ),
    model(&["nl"], NL, Operands::Paths(None), "every option"),
    Model {
        contents: false,
        ..model(&["stat"], STAT, Operands::Paths(None), "every option")
    },
    Model {
        walks: Walks::Always,
        contents: false,
        ..model(
            &["du"],
            DU,
            Operands::Paths(Some(".")),
            "every option but `--files0-from`; walks (sizes only), `-L` follows symlinks",
        )
    },
    model(
        &[
            "sha256sum",
            "sha1sum",
            "sha224sum",
            "sha384sum",
            "sha512sum",
            "md5sum",
        ],
        CHECKSUM,
        Operands::Paths(None),
        "every option but `-c` (which reads file names from a file)",
    ),
    model(
        &["b2sum"],
        B2SUM,
        Operands::Paths(None),
        "every option but `-c`",
    ),
    model(&["cut"], CUT, Operands::Paths(None), "every option"),
    model(
        &["tr"],
        TR,
        Operands::Text,
        "every option (operands are sets, not files)",
    ),
    Model {
        check: uniq_check,
        ..model(
            &["uniq"],
            UNIQ,
            Operands::Paths(None),
            "every option, one operand that is no pattern (a second is written)",
        )
    },
    model(
        &["sort"],
        SORT,
        Operands::Paths(None),
        "every option but `-o`, `-T`, `-m`, `--compress-program`, `--files0-from`",
    ),
    Model {
        walks: Walks::WhenAsked,
        follows: true,
        ..model(
            &["diff"],
            DIFF,
            Operands::Paths(None),
            "every option but `-l` (runs `pr`); `-r` walks and follows symlinks unless `--no-dereference`",
        )
    },
    model(&["cmp"], CMP, Operands::Paths(None), "every option"),
    model(
        &["file"],
        FILE,
        Operands::Paths(None),
        "every option but `-C`, `-f`, `-z`, `-Z`, `-p`",
    ),
    Model {
        contents: false,
        ..model(
            &["realpath"],
            REALPATH,
            Operands::Paths(None),
            "every option",
        )
    },
    Model {
        contents: false,
        ..model(
            &["readlink"],
            READLINK,
            Operands::Paths(None),
            "every option",
        )
    },
    model(
        &["basename"],
        BASENAME,
        Operands::Text,
        "every option (operands are names, not files)",
    ),
    model(
        &["dirname"],
        DIRNAME,
        Operands::Text,
        "every option (operands are names, not files)",
    ),
    Model {
        check: date_check,
        ..model(
            &["date"],
            DATE,
            Operands::Text,
            "every option but `-s`; only a `+FORMAT` operand",
        )
    },
    model(&["uname"], UNAME, Operands::Text, "every option"),
    model(&["whoami"], ONLY_HELP, Operands::Text, "no operand needed"),
    model(&["pwd"], PWD, Operands::Text, "`-L`, `-P`"),
    model(
        &["which"],
        WHICH,
        Operands::Text,
        "`-a`, `-s` (operands are program names)",
    ),
    Model {
        style: Style::GnuStopAtOperand,
        check: cd_check,
        // It enters the folder; what is read there is each later command's.
        contents: false,
        ..model(
            &["cd"],
            CD,
            Operands::Paths(None),
            "one folder; relative paths after it are taken from there",
        )
    },
    model(&["tac"], TAC, Operands::Paths(None), "every option"),
    model(&["paste"], PASTE, Operands::Paths(None), "every option"),
    model(&["rev"], REV, Operands::Paths(None), "every option"),
    Model {
        digits: true,
        ..model(&["seq"], SEQ, Operands::Text, "every option")
    },
    Model {
        digits: true,
        style: Style::GnuStopAtOperand,
        ..model(&["expr"], ONLY_HELP, Operands::Text, "any expression")
    },
    model(&["numfmt"], NUMFMT, Operands::Text, "every option"),
    model(
        &["base64", "base32"],
        BASE64,
        Operands::Paths(None),
        "every option",
    ),
    model(&["comm"], COMM, Operands::Paths(None), "every option"),
    model(&["nproc"], NPROC, Operands::Text, "every option"),
    Model {
        check: hostname_check,
        ..model(
            &["hostname"],
            HOSTNAME,
            Operands::Text,
            "options that print; no operand, no `-F`",
        )
    },
    model(&["locale"], LOCALE, Operands::Text, "every option"),
    model(
        &["command"],
        COMMAND,
        Operands::Text,
        "`-v`, `-V` (names, not files)",
    ),
    model(&["type"], TYPE, Operands::Text, "every option"),
];

const TAC: &[Opt] = &[
    both('b', "before", Arg::No, N),
    both('r', "regex", Arg::No, N),
    both('s', "separator", Arg::Required, N),
    HELP,
    VERSION,
];

const PASTE: &[Opt] = &[
    both('d', "delimiters", Arg::Required, N),
    both('s', "serial", Arg::No, N),
    both('z', "zero-terminated", Arg::No, N),
    HELP,
    VERSION,
];

/// util-linux `rev`.
const REV: &[Opt] = &[
    both('0', "zero", Arg::No, N),
    both('h', "help", Arg::No, N),
    both('V', "version", Arg::No, N),
];

const SEQ: &[Opt] = &[
    both('f', "format", Arg::Required, N),
    both('s', "separator", Arg::Required, N),
    both('w', "equal-width", Arg::No, N),
    HELP,
    VERSION,
];

const NUMFMT: &[Opt] = &[
    long("debug", Arg::No, N),
    both('d', "delimiter", Arg::Required, N),
    long("field", Arg::Required, N),
    long("format", Arg::Required, N),
    long("from", Arg::Required, N),
    long("from-unit", Arg::Required, N),
    long("grouping", Arg::No, N),
    long("header", Arg::Optional, N),
    long("invalid", Arg::Required, N),
    long("padding", Arg::Required, N),
    long("round", Arg::Required, N),
    long("suffix", Arg::Required, N),
    long("unit-separator", Arg::Required, N),
    long("to", Arg::Required, N),
    long("to-unit", Arg::Required, N),
    both('z', "zero-terminated", Arg::No, N),
    HELP,
    VERSION,
];

const BASE64: &[Opt] = &[
    both('d', "decode", Arg::No, N),
    both('i', "ignore-garbage", Arg::No, N),
    both('w', "wrap", Arg::Required, N),
    HELP,
    VERSION,
];

const COMM: &[Opt] = &[
    short('1', Arg::No, N),
    short('2', Arg::No, N),
    short('3', Arg::No, N),
    long("check-order", Arg::No, N),
    long("nocheck-order", Arg::No, N),
    long("output-delimiter", Arg::Required, N),
    long("total", Arg::No, N),
    both('z', "zero-terminated", Arg::No, N),
    HELP,
    VERSION,
];

const NPROC: &[Opt] = &[
    long("all", Arg::No, N),
    long("ignore", Arg::Required, N),
    HELP,
    VERSION,
];

/// Debian's `hostname`: options that print; `-F FILE` and an operand set it.
const HOSTNAME: &[Opt] = &[
    both('a', "alias", Arg::No, N),
    both('A', "all-fqdns", Arg::No, N),
    both('b', "boot", Arg::No, N),
    both('d', "domain", Arg::No, N),
    both('f', "fqdn", Arg::No, N),
    long("long", Arg::No, N),
    both(
        'F',
        "file",
        Arg::Required,
        Does::Hazard("sets the host name"),
    ),
    both('i', "ip-address", Arg::No, N),
    both('I', "all-ip-addresses", Arg::No, N),
    both('s', "short", Arg::No, N),
    both('y', "yp", Arg::No, N),
    long("nis", Arg::No, N),
    both('h', "help", Arg::No, N),
    both('V', "version", Arg::No, N),
];

const LOCALE: &[Opt] = &[
    both('a', "all-locales", Arg::No, N),
    both('m', "charmaps", Arg::No, N),
    both('c', "category-name", Arg::No, N),
    both('k', "keyword-name", Arg::No, N),
    both('v', "verbose", Arg::No, N),
    HELP,
    VERSION,
];

/// Bash's `command -v|-V` (run forms are stepped over as a wrapper) and `type`.
const COMMAND: &[Opt] = &[
    short('v', Arg::No, N),
    short('V', Arg::No, N),
    short('p', Arg::No, N),
];

const TYPE: &[Opt] = &[
    short('a', Arg::No, N),
    short('f', Arg::No, N),
    short('P', Arg::No, N),
    short('p', Arg::No, N),
    short('t', Arg::No, N),
];

/// `hostname NAME` sets the host name.
fn hostname_check(parsed: &Parsed<'_>) -> Vec<String> {
    parsed
        .operands
        .first()
        .map(|name| format!("`hostname {name}` sets the host name"))
        .into_iter()
        .collect()
}

/// `test EXPRESSION` and `[ EXPRESSION ]`: every word that is not an
/// operator may name a file whose metadata is read.
pub(super) fn test(args: &[String]) -> Reading {
    const OPERATORS: &[&str] = &[
        "!", "(", ")", "]", "-a", "-o", "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le",
        "-gt", "-ge", "-nt", "-ot", "-ef", "-z", "-n", "-e", "-f", "-d", "-r", "-w", "-x", "-s",
        "-L", "-h", "-b", "-c", "-p", "-S", "-g", "-u", "-k", "-O", "-G", "-N", "-t", "-v", "-R",
    ];
    Reading {
        lists: args
            .iter()
            .filter(|a| !OPERATORS.contains(&a.as_str()))
            .cloned()
            .collect(),
        ..Reading::default()
    }
}

/// `jq [OPTIONS] FILTER [FILES]`: jq 1.6-1.7's own parser. It never runs
/// or writes anything; a filter that `import`s or `include`s a module reads
/// files from its library path, which is not proven.
pub(super) fn jq(args: &[String]) -> Reading {
    let mut reading = Reading::default();
    let mut filter_given = false;
    let mut filter = None;
    let mut only_args = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        let arg = arg.as_str();
        if only_args || !arg.starts_with('-') || arg == "-" {
            match (&filter, filter_given) {
                (None, false) => filter = Some(arg.to_owned()),
                _ if only_args => {}
                _ => reading.reads.push(arg.to_owned()),
            }
            continue;
        }
        match arg {
            "--args" | "--jsonargs" => only_args = true,
            "--arg" | "--argjson" => i += 2,
            "--slurpfile" | "--rawfile" => {
                if let Some(file) = args.get(i + 1) {
                    reading.reads.push(file.clone());
                }
                i += 2;
            }
            "-f" | "--from-file" => {
                if let Some(file) = args.get(i) {
                    reading.reads.push(file.clone());
                }
                filter_given = true;
                i += 1;
            }
            "--indent" => i += 1,
            "-L" => {
                reading
                    .hazards
                    .push("`jq -L` reads modules from another folder".to_owned());
                i += 1;
            }
            "--seq"
            | "--stream"
            | "--stream-errors"
            | "--slurp"
            | "--raw-input"
            | "--null-input"
            | "--compact-output"
            | "--tab"
            | "--color-output"
            | "--monochrome-output"
            | "--ascii-output"
            | "--unbuffered"
            | "--sort-keys"
            | "--raw-output"
            | "--raw-output0"
            | "--join-output"
            | "--exit-status"
            | "--help"
            | "--version"
            | "--build-configuration" => {}
            _ if !arg.starts_with("--")
                && arg[1..].chars().all(|c| "nrjasceSCMRhVe".contains(c)) => {}
            _ => reading
                .hazards
                .push(format!("`jq` option `{arg}` is not known")),
        }
    }
    if let Some(filter) = filter.filter(|_| !filter_given)
        && (filter.contains("import") || filter.contains("include"))
    {
        reading
            .hazards
            .push("a `jq` filter that imports modules reads files outside".to_owned());
    }
    reading
}

/// `echo`, `printf`, `true`, `false`, `:`, `exit`: bash builtins that only
/// print (or do nothing, or end the shell) whatever their words.
pub(crate) const PRINTERS: &[&str] = &["echo", "printf", "true", "false", ":", "exit"];
