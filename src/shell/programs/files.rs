//! Models of the programs that read files or print text: GNU coreutils
//! 9.1, diffutils 3.8, file 5.44, and the shell builtins that print. Each
//! table lists every option the program knows; only the effect of an option
//! that is more than a read is marked.

use super::getopt::{Arg, Does, Opt, Parsed, Style, both, long, short};
use super::{Model, Operands, Walks, no_check};

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
    both('m', "merge", Arg::No, N),
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

/// `uniq IN OUT` writes OUT.
fn uniq_check(parsed: &Parsed<'_>) -> Vec<String> {
    parsed
        .operands
        .get(1)
        .map(|out| format!("`uniq` writes its second operand `{out}`"))
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
    model(&["stat"], STAT, Operands::Paths(None), "every option"),
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
            "every option, one operand (a second is written)",
        )
    },
    model(
        &["sort"],
        SORT,
        Operands::Paths(None),
        "every option but `-o`, `-T`, `--compress-program`, `--files0-from`",
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
    model(
        &["realpath"],
        REALPATH,
        Operands::Paths(None),
        "every option",
    ),
    model(
        &["readlink"],
        READLINK,
        Operands::Paths(None),
        "every option",
    ),
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
        ..model(
            &["cd"],
            CD,
            Operands::Paths(None),
            "one folder; relative paths after it are taken from there",
        )
    },
];

/// `echo`, `printf`, `true`, `false`, `:`: bash builtins that only print
/// (or do nothing) whatever their words.
pub(crate) const PRINTERS: &[&str] = &["echo", "printf", "true", "false", ":"];
