//! Wrappers: programs and builtins that run their arguments as a command
//! (`env`, `nice`, `timeout`, `xargs`, `exec`, `command`, ...), and the
//! exact option syntax needed to step over them.
//!
//! Each external wrapper is modelled by its GNU option table (coreutils 9.1,
//! findutils 4.9, GNU time 1.9) read the way glibc's `getopt_long` reads it:
//! a long option may be abbreviated to any unique prefix (an exact name wins
//! over a longer one it prefixes), a long option with an optional value takes
//! it only as `--name=value`, a short one only attached (`-e` vs `-eEND`),
//! `--` ends the options, and every wrapper here stops at its first operand
//! (a `+` optstring), whatever `POSIXLY_CORRECT` says. The builtins `exec`,
//! `command` and `builtin` and the keyword `time` follow bash 5.2's own
//! rules. Whatever the model cannot read exactly is reported as unprovable,
//! naming the wrapper and the option; reading then goes on with the most
//! likely shape, so that deny rules still see the command behind it.
//!
//! Only shapes are known here; nothing is judged.

use super::Redirect;
use super::word::{Known, Word};

/// Whether an option takes a value (glibc's `has_arg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arg {
    No,
    Required,
    /// Only attached: `--name=value`, `-xvalue`.
    Optional,
}

/// A long option: its name, its value, and the key it reports (its short
/// equivalent, or a private key when it has none).
#[derive(Clone, Copy)]
struct Long(&'static str, Arg, char);

/// Keys of long options without a short equivalent.
const HELP: char = '\u{e000}';
const VERSION: char = '\u{e001}';
const OTHER: char = '\u{e002}';

/// A GNU tool's options: the `getopt_long` optstring (without its leading
/// `+`) and the long option table.
struct Spec {
    tool: &'static str,
    short: &'static str,
    /// Short options that print something and exit (GNU time's `-V`).
    informs: &'static str,
    long: &'static [Long],
}

const HELP_VERSION: [Long; 2] = [
    Long("help", Arg::No, HELP),
    Long("version", Arg::No, VERSION),
];

/// `env` (coreutils 9.1): `+C:iS:u:v0` plus the blanks, which it rejects.
const ENV: Spec = Spec {
    tool: "env",
    short: "C:iS:u:v0",
    informs: "",
    long: &[
        Long("ignore-environment", Arg::No, 'i'),
        Long("null", Arg::No, '0'),
        Long("unset", Arg::Required, 'u'),
        Long("chdir", Arg::Required, 'C'),
        Long("default-signal", Arg::Optional, OTHER),
        Long("ignore-signal", Arg::Optional, OTHER),
        Long("block-signal", Arg::Optional, OTHER),
        Long("list-signal-handling", Arg::No, OTHER),
        Long("debug", Arg::No, 'v'),
        Long("split-string", Arg::Required, 'S'),
        HELP_VERSION[0],
        HELP_VERSION[1],
    ],
};

/// `nice` (coreutils 9.1): `+n:`, and `-N`, `--N`, `-+N` before each word.
const NICE: Spec = Spec {
    tool: "nice",
    short: "n:",
    informs: "",
    long: &[
        Long("adjustment", Arg::Required, 'n'),
        HELP_VERSION[0],
        HELP_VERSION[1],
    ],
};

/// `nohup` (coreutils 9.1): only `--help` and `--version`, optstring `+`.
const NOHUP: Spec = Spec {
    tool: "nohup",
    short: "",
    informs: "",
    long: &HELP_VERSION,
};

/// `timeout` (coreutils 9.1): `+k:s:v`, then a DURATION operand.
const TIMEOUT: Spec = Spec {
    tool: "timeout",
    short: "k:s:v",
    informs: "",
    long: &[
        Long("kill-after", Arg::Required, 'k'),
        Long("signal", Arg::Required, 's'),
        Long("verbose", Arg::No, 'v'),
        Long("foreground", Arg::No, OTHER),
        Long("preserve-status", Arg::No, OTHER),
        HELP_VERSION[0],
        HELP_VERSION[1],
    ],
};

/// `stdbuf` (coreutils 9.1): `+i:o:e:`.
const STDBUF: Spec = Spec {
    tool: "stdbuf",
    short: "i:o:e:",
    informs: "",
    long: &[
        Long("input", Arg::Required, 'i'),
        Long("output", Arg::Required, 'o'),
        Long("error", Arg::Required, 'e'),
        HELP_VERSION[0],
        HELP_VERSION[1],
    ],
};

/// `xargs` (findutils 4.9): `+0a:E:e::i::I:l::L:n:oprs:txP:d:`.
/// `--replace` reports `I` but, like `-i`, takes its value only attached.
const XARGS: Spec = Spec {
    tool: "xargs",
    short: "0a:E:e::i::I:l::L:n:oprs:txP:d:",
    informs: "",
    long: &[
        Long("null", Arg::No, '0'),
        Long("arg-file", Arg::Required, 'a'),
        Long("delimiter", Arg::Required, 'd'),
        Long("eof", Arg::Optional, 'e'),
        Long("replace", Arg::Optional, 'I'),
        Long("max-lines", Arg::Optional, 'l'),
        Long("max-args", Arg::Required, 'n'),
        Long("open-tty", Arg::No, 'o'),
        Long("interactive", Arg::No, 'p'),
        Long("no-run-if-empty", Arg::No, 'r'),
        Long("max-chars", Arg::Required, 's'),
        Long("verbose", Arg::No, 't'),
        Long("show-limits", Arg::No, OTHER),
        Long("exit", Arg::No, 'x'),
        Long("max-procs", Arg::Required, 'P'),
        Long("process-slot-var", Arg::Required, OTHER),
        Long("version", Arg::No, VERSION),
        Long("help", Arg::No, HELP),
    ],
};

/// GNU `time` 1.9: `+af:o:pqvV` (`-h` is not an option; `--help` is).
const GNU_TIME: Spec = Spec {
    tool: "time",
    short: "af:o:pqvV",
    informs: "V",
    long: &[
        Long("append", Arg::No, 'a'),
        Long("format", Arg::Required, 'f'),
        Long("help", Arg::No, HELP),
        Long("output-file", Arg::Required, 'o'),
        Long("portability", Arg::No, 'p'),
        Long("quiet", Arg::No, 'q'),
        Long("verbose", Arg::No, 'v'),
        Long("version", Arg::No, VERSION),
    ],
};

/// `setsid` (util-linux 2.38): `+cfwhV`.
const SETSID: Spec = Spec {
    tool: "setsid",
    short: "cfwhV",
    informs: "hV",
    long: &[
        Long("ctty", Arg::No, 'c'),
        Long("fork", Arg::No, 'f'),
        Long("wait", Arg::No, 'w'),
        HELP_VERSION[0],
        HELP_VERSION[1],
    ],
};

/// `ionice` (util-linux 2.38): `+c:n:p:P:tu:hV`; with `-p`, `-P` or `-u`
/// it changes running processes and runs nothing.
const IONICE: Spec = Spec {
    tool: "ionice",
    short: "c:n:p:P:tu:hV",
    informs: "hV",
    long: &[
        Long("class", Arg::Required, 'c'),
        Long("classdata", Arg::Required, 'n'),
        Long("pid", Arg::Required, 'p'),
        Long("pgid", Arg::Required, 'P'),
        Long("ignore", Arg::No, 't'),
        Long("uid", Arg::Required, 'u'),
        HELP_VERSION[0],
        HELP_VERSION[1],
    ],
};

/// `taskset` (util-linux 2.38): `+achpV`, then a MASK (or CPU list)
/// operand; with `-p` it changes a running process and runs nothing.
const TASKSET: Spec = Spec {
    tool: "taskset",
    short: "achpV",
    informs: "hV",
    long: &[
        Long("all-tasks", Arg::No, 'a'),
        Long("cpu-list", Arg::No, 'c'),
        Long("pid", Arg::No, 'p'),
        HELP_VERSION[0],
        HELP_VERSION[1],
    ],
};

/// bash 5.2's builtins (`compgen -b`): the names `builtin` can run.
pub const BASH_BUILTINS: &[&str] = &[
    ".",
    ":",
    "[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];

/// bash 5.2's reserved words (`compgen -k`). Where bash reads one (first in
/// a command, or after the keyword `time`), a correct parse never shows it
/// as a command's name: there, it means the parse and bash disagree
/// (`time { sudo ls; }`, `time ! sudo ls`, `coproc sudo ls`).
pub const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
];

/// Reserved words followed by a command, which is then read in their place
/// so that deny rules still see it.
const BEFORE_A_COMMAND: &[&str] = &[
    "!", "{", "if", "then", "else", "elif", "while", "until", "do", "coproc",
];

/// Names this module reads differently depending on where they stand: the
/// builtins `exec`, `command`, `builtin` and the keyword `time`.
const POSITIONAL: &[&str] = &["exec", "command", "builtin", "time"];

/// One option read by [`Getopt`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Opt {
    key: char,
    value: Option<String>,
}

/// What [`Getopt::next`] read.
#[derive(Debug, PartialEq, Eq)]
enum Read {
    Opt(Opt),
    /// The options end; operands start at this index.
    End(usize),
}

/// glibc's `getopt_long` with a `+` optstring (stop at the first operand),
/// over `words` from an index on. Problems (an unknown or ambiguous option,
/// a missing or unexpected value, a word that is not literal) go to
/// `problems` as phrases; the option is then read as a flag.
struct Getopt<'s> {
    spec: &'s Spec,
    /// The next word to read.
    i: usize,
    /// Inside a cluster of short options: the word and the byte offset of
    /// the next option in it (`-vu` after `v`).
    cluster: Option<(usize, usize)>,
    problems: Vec<String>,
}

/// At most this many problems are kept per wrapper: one is enough to make
/// the command unprovable, and a word of a million unknown flags must not
/// become a million phrases.
const MAX_PROBLEMS: usize = 4;

impl<'s> Getopt<'s> {
    fn new(spec: &'s Spec, i: usize) -> Self {
        Getopt {
            spec,
            i,
            cluster: None,
            problems: Vec::new(),
        }
    }

    fn problem(&mut self, what: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(format!("`{}` {what}", self.spec.tool));
        }
    }

    /// Reads the next option, or where the operands start.
    fn next(&mut self, words: &[Word]) -> Read {
        if let Some((at, offset)) = self.cluster.take() {
            return self.short(words, at, offset);
        }
        let Some(word) = words.get(self.i) else {
            return Read::End(self.i);
        };
        let text = word.text.as_str();
        if text == "--" {
            return Read::End(self.i + 1);
        }
        if !text.starts_with('-') || text == "-" {
            return Read::End(self.i);
        }
        if word.known != Known::Literal {
            self.problem(format!("option `{}` is not literal", snippet(text)));
        }
        let at = self.i;
        self.i += 1;
        match text.strip_prefix("--") {
            Some(long) => self.long(long, words),
            None => self.short(words, at, 1),
        }
    }

    /// `--name`, `--name=value`, or a unique prefix of a name.
    fn long(&mut self, written: &str, words: &[Word]) -> Read {
        let (name, attached) = match written.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (written, None),
        };
        let found = match self.spec.long.iter().find(|l| l.0 == name) {
            Some(exact) => Some(exact),
            None => {
                let mut matches = self.spec.long.iter().filter(|l| l.0.starts_with(name));
                let first = matches.next();
                // glibc forgives candidates that read the same way.
                let others: Vec<&str> = matches
                    .filter(|l| first.is_some_and(|f| f.1 != l.1 || f.2 != l.2))
                    .map(|l| l.0)
                    .collect();
                if let (Some(f), false) = (first, others.is_empty()) {
                    self.problem(format!(
                        "option `--{}` is ambiguous (--{}, --{})",
                        snippet(name),
                        f.0,
                        others.join(", --")
                    ));
                    return flag(attached);
                }
                first
            }
        };
        let Some(&Long(full, arg, key)) = found else {
            self.problem(format!("option `--{}` is not known", snippet(name)));
            return flag(attached);
        };
        match (arg, attached) {
            (Arg::No, Some(_)) => {
                self.problem(format!("option `--{full}` takes no value"));
                Read::Opt(Opt { key, value: None })
            }
            (Arg::Required, None) => {
                let value = self.value(words, &format!("--{full}"));
                Read::Opt(Opt { key, value })
            }
            (_, value) => Read::Opt(Opt { key, value }),
        }
    }

    /// The short option at byte `offset` of `words[at]`, a cluster such as
    /// `-vu`.
    fn short(&mut self, words: &[Word], at: usize, offset: usize) -> Read {
        let text = words.get(at).map_or("", |w| w.text.as_str());
        let Some(c) = text.get(offset..).and_then(|s| s.chars().next()) else {
            return self.next(words);
        };
        let next = offset + c.len_utf8();
        let rest = text.get(next..).unwrap_or("");
        let Some(arg) = short_arg(self.spec.short, c) else {
            self.problem(format!("option `-{}` is not known", c.escape_debug()));
            if !rest.is_empty() {
                self.cluster = Some((at, next));
            }
            return flag(None);
        };
        let value = match (arg, rest.is_empty()) {
            (Arg::No, false) => {
                self.cluster = Some((at, next));
                None
            }
            (Arg::No | Arg::Optional, true) => None,
            (Arg::Required | Arg::Optional, false) => Some(rest.to_owned()),
            (Arg::Required, true) => self.value(words, &format!("-{c}")),
        };
        let key = if self.spec.informs.contains(c) {
            VERSION
        } else {
            c
        };
        Read::Opt(Opt { key, value })
    }

    /// The next word, as the value of the option `name`.
    fn value(&mut self, words: &[Word], name: &str) -> Option<String> {
        let Some(word) = words.get(self.i) else {
            self.problem(format!("option `{name}` lacks its value"));
            return None;
        };
        self.i += 1;
        if word.known != Known::Literal {
            self.problem(format!(
                "value `{}` of option `{name}` is not literal",
                snippet(&word.text)
            ));
        }
        Some(word.text.clone())
    }

    /// Reads every option; returns them and where the operands start.
    fn all(&mut self, words: &[Word]) -> (Vec<Opt>, usize) {
        let mut opts = Vec::new();
        loop {
            match self.next(words) {
                Read::Opt(o) => opts.push(o),
                Read::End(at) => return (opts, at),
            }
        }
    }
}

/// An option that could not be read, taken as a flag.
fn flag(value: Option<String>) -> Read {
    Read::Opt(Opt { key: OTHER, value })
}

/// Whether `c` is a short option of `optstring`, and its value.
fn short_arg(optstring: &str, c: char) -> Option<Arg> {
    if c == ':' {
        return None;
    }
    let at = optstring.find(c)?;
    let after = &optstring[at + c.len_utf8()..];
    Some(if after.starts_with("::") {
        Arg::Optional
    } else if after.starts_with(':') {
        Arg::Required
    } else {
        Arg::No
    })
}

/// A word shortened for a phrase.
fn snippet(text: &str) -> String {
    const MAX: usize = 40;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

/// The name a program is run by: the part after the last `/`
/// (`/usr/bin/sudo` -> `sudo`). A path whose last part is empty, `.` or `..`
/// names a directory, not a program, and is kept whole (so `a/.` never
/// becomes the `.` builtin).
pub(super) fn program_name(text: &str) -> &str {
    match text.rsplit_once('/') {
        Some((_, base)) if !matches!(base, "" | "." | "..") => base,
        _ => text,
    }
}

/// How the word at the front of a command is looked up by bash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// The first word of a command: a keyword (`time`, when unquoted), a
    /// builtin or a program.
    Shell,
    /// After assignments, `command` or `builtin`: a builtin or a program,
    /// never a keyword.
    Builtins,
    /// After an external wrapper or `exec`: a program found by `PATH`. A
    /// word such as `exec` or `command` is then a program of that name, not
    /// the builtin.
    Program,
}

/// What the wrapper at the front of the words does.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Not a wrapper: the words are the command.
    Program,
    /// A wrapper that runs no command (`--help`, `command -v`, no operand
    /// left, `builtin` of something that is not a builtin).
    Nothing,
    /// The command it runs starts at this index, looked up this way.
    Runs(usize, Lookup),
    /// `xargs` without a command runs `echo`.
    Echo,
}

/// What stripping wrappers learned besides the words.
#[derive(Debug, Default)]
pub(super) struct Stripped {
    /// Names of variables the wrappers set (`env FOO=1`).
    pub assignments: Vec<String>,
    /// The program as written, when it was a path.
    pub path: Option<String>,
    /// Files a wrapper itself opens (GNU `time -o FILE` writes one, `xargs
    /// -a FILE` reads one), as redirections of the command it runs, so that
    /// path rules see them.
    pub writes: Vec<Redirect>,
    /// The program was run by an external wrapper or `exec`, which find it
    /// on `PATH`: `nice eval x` runs a program named `eval`, never the
    /// builtin, so builtins must not be read into it.
    pub external: bool,
}

/// Strips wrappers (nested ones too) off the front of `words`, leaving the
/// program they run first, by its name. A wrapper that runs nothing is
/// itself the program. What could not be followed goes to `notes`.
///
/// `out.assignments` holds the command's own leading assignments on entry:
/// after them `time` is a program, not the keyword.
pub(super) fn strip(
    mut words: Vec<Word>,
    notes: &mut Vec<String>,
    out: &mut Stripped,
) -> Vec<Word> {
    let mut lookup = if out.assignments.is_empty() {
        Lookup::Shell
    } else {
        Lookup::Builtins
    };
    // Where the current wrapper stands; the words before it are dropped
    // once, at the end, so that a long chain of wrappers stays linear.
    let mut base = 0;
    let mut after_xargs = false;
    // xargs replace patterns already marked in the words that follow.
    let mut replaced = Vec::new();
    // Whether the word at `base` names its program by a path, which is
    // never a builtin.
    let mut is_path = false;
    while let Some(first) = words.get_mut(base) {
        if first.known != Known::Literal {
            break;
        }
        let name = program_name(&first.text).to_string();
        is_path = name.len() != first.text.len();
        if is_path {
            // Sticky: `./env ls` runs whatever `./env` is, so the command is
            // not pinned down even though `ls` is named by its name.
            let written = std::mem::replace(&mut first.text, name.clone());
            out.path.get_or_insert(written);
        }
        let step = if name == "xargs" {
            xargs(base, &mut words, notes, out, &mut replaced)
        } else {
            step(&name, is_path, lookup, base, &mut words, notes, out)
        };
        match step {
            Step::Program => break,
            Step::Nothing => {
                if after_xargs {
                    notes.push(format!(
                        "`xargs` appends its input to `{name}`, which may run it as a command"
                    ));
                }
                break;
            }
            Step::Echo => {
                lookup = Lookup::Program;
                is_path = false;
                words.truncate(base);
                words.push(Word::literal("echo"));
                break;
            }
            Step::Runs(start, next) => {
                if name == "xargs" && !after_xargs {
                    // The words it appends come from its input, which the
                    // command does not show: deny rules still see the
                    // program, but nothing after it is proven.
                    notes.push(XARGS_INPUT.to_owned());
                }
                after_xargs |= name == "xargs";
                is_path = false;
                base = start;
                lookup = next;
            }
        }
    }
    out.external = lookup == Lookup::Program || is_path;
    words.drain(..base.min(words.len()));
    if after_xargs && let Some(shell) = words.first().filter(|w| SHELLS.contains(&w.text.as_str()))
    {
        notes.push(format!(
            "`xargs` appends its input to `{}`, which may read it as a script",
            shell.text
        ));
    }
    words
}

/// Why a command run by `xargs` is never proven.
pub const XARGS_INPUT: &str = "`xargs` appends words read from its input to the command it runs";

/// Reads the wrapper `name` at `words[base]`, looked up as `lookup`.
fn step(
    name: &str,
    is_path: bool,
    lookup: Lookup,
    base: usize,
    words: &mut Vec<Word>,
    notes: &mut Vec<String>,
    out: &mut Stripped,
) -> Step {
    let builtin_here = !is_path && lookup != Lookup::Program;
    match name {
        "exec" | "command" | "builtin" if builtin_here => builtin(name, base, words, notes),
        "exec" | "command" | "builtin" => Step::Program,
        "time" if !is_path && lookup == Lookup::Shell => keyword_time(base, words, notes, out),
        "time" => gnu_time(base, words, notes, out),
        _ if !is_path && lookup == Lookup::Shell && RESERVED.contains(&name) => {
            notes.push(format!(
                "`{name}` is a reserved word of bash, read here as a command name"
            ));
            if BEFORE_A_COMMAND.contains(&name) && base + 1 < words.len() {
                Step::Runs(base + 1, Lookup::Shell)
            } else {
                Step::Program
            }
        }
        "env" => env(base, words, notes, out),
        "nice" => nice(base, words, notes),
        "nohup" => {
            let mut g = Getopt::new(&NOHUP, base + 1);
            let (opts, at) = g.all(words);
            notes.append(&mut g.problems);
            let step = runs(&opts, at, words, Lookup::Program);
            if matches!(step, Step::Runs(..)) {
                // When its output is a terminal, which the command's text
                // cannot tell, nohup appends it to `nohup.out`.
                out.writes.push(Redirect {
                    op: ">>".to_owned(),
                    target: "nohup.out".to_owned(),
                });
            }
            step
        }
        "setsid" => {
            let mut g = Getopt::new(&SETSID, base + 1);
            let (opts, at) = g.all(words);
            notes.append(&mut g.problems);
            runs(&opts, at, words, Lookup::Program)
        }
        "ionice" | "taskset" => {
            let spec = if name == "ionice" { &IONICE } else { &TASKSET };
            let mut g = Getopt::new(spec, base + 1);
            let (opts, at) = g.all(words);
            notes.append(&mut g.problems);
            let on_processes = |keys: &str| opts.iter().any(|o| keys.contains(o.key));
            if name == "ionice" && on_processes("pPu") {
                Step::Nothing
            } else if name == "taskset" {
                if on_processes("p") {
                    Step::Nothing
                } else {
                    // The MASK or CPU list comes first.
                    runs(&opts, at + 1, words, Lookup::Program)
                }
            } else {
                runs(&opts, at, words, Lookup::Program)
            }
        }
        "stdbuf" => {
            let mut g = Getopt::new(&STDBUF, base + 1);
            let (opts, at) = g.all(words);
            notes.append(&mut g.problems);
            runs(&opts, at, words, Lookup::Program)
        }
        "timeout" => {
            let mut g = Getopt::new(&TIMEOUT, base + 1);
            let (opts, at) = g.all(words);
            notes.append(&mut g.problems);
            if let Some(duration) = words.get(at).filter(|w| w.known != Known::Literal) {
                notes.push(format!(
                    "`timeout` duration `{}` is not literal",
                    snippet(&duration.text)
                ));
            }
            runs(&opts, at + 1, words, Lookup::Program)
        }
        _ => Step::Program,
    }
}

/// After a GNU tool's options: its command starts at `at`, unless it was
/// asked for help or its version, or nothing is left to run.
fn runs(opts: &[Opt], at: usize, words: &[Word], lookup: Lookup) -> Step {
    if opts.iter().any(|o| o.key == HELP || o.key == VERSION) || at >= words.len() {
        Step::Nothing
    } else {
        Step::Runs(at, lookup)
    }
}

/// `env [OPTION]... [-] [NAME=VALUE]... [COMMAND [ARG]...]`.
fn env(base: usize, words: &mut Vec<Word>, notes: &mut Vec<String>, out: &mut Stripped) -> Step {
    let mut g = Getopt::new(&ENV, base + 1);
    let mut opts = Vec::new();
    let mut split = false;
    let mut at = loop {
        match g.next(words) {
            Read::End(at) => break at,
            Read::Opt(o) => {
                match (o.key, &o.value) {
                    ('S', Some(value)) => {
                        notes.push(format!(
                            "`env --split-string` splits `{}` into words",
                            snippet(value)
                        ));
                        // env reads the words of the string in place of
                        // the option, options first; they are spliced in
                        // (split at blanks, which is rougher than env) so
                        // that deny rules see what they likely run. Only
                        // the first, so that splicing stays linear.
                        if !split {
                            split = true;
                            let parts: Vec<Word> =
                                value.split_ascii_whitespace().map(Word::literal).collect();
                            words.splice(g.i..g.i, parts);
                        }
                    }
                    ('C', Some(dir)) => notes.push(format!(
                        "`env --chdir` runs its command in the folder `{}`, where relative paths \
                         mean something else",
                        snippet(dir)
                    )),
                    _ => {}
                }
                opts.push(o);
            }
        }
    };
    notes.append(&mut g.problems);
    // `env -` is `env -i`; no option is read after it.
    if words.get(at).is_some_and(|w| w.text == "-") {
        at += 1;
    }
    // GNU env takes every word with `=` as an assignment, whatever the name.
    while let Some(w) = words.get(at).filter(|w| w.text.contains('=')) {
        if w.known != Known::Literal {
            notes.push(format!(
                "`env` assignment `{}` is not literal",
                snippet(&w.text)
            ));
        }
        let name = w.text.split_once('=').map_or("", |(n, _)| n);
        out.assignments.push(name.to_owned());
        at += 1;
    }
    runs(&opts, at, words, Lookup::Program)
}

/// `nice [-n N | -N] [COMMAND [ARG]...]`: before reading each word as
/// options, nice takes `-N`, `--N` and `-+N` (a digit after them) as an
/// adjustment.
fn nice(base: usize, words: &[Word], notes: &mut Vec<String>) -> Step {
    let mut g = Getopt::new(&NICE, base + 1);
    let mut opts = Vec::new();
    let at = loop {
        let legacy = words.get(g.i).filter(|w| is_adjustment(&w.text));
        if let (None, Some(w)) = (&g.cluster, legacy) {
            if w.known != Known::Literal {
                g.problem(format!("option `{}` is not literal", snippet(&w.text)));
            }
            g.i += 1;
            continue;
        }
        match g.next(words) {
            Read::Opt(o) => opts.push(o),
            Read::End(at) => break at,
        }
    };
    notes.append(&mut g.problems);
    runs(&opts, at, words, Lookup::Program)
}

/// nice's own test for an adjustment word: `-` then a digit, or `--` or
/// `-+` then a digit.
fn is_adjustment(text: &str) -> bool {
    let b = text.as_bytes();
    let digit_at = 1 + usize::from(matches!(b.get(1), Some(b'-' | b'+')));
    b.first() == Some(&b'-') && b.get(digit_at).is_some_and(u8::is_ascii_digit)
}

/// `xargs [OPTION]... [COMMAND [INITIAL-ARGS]...]`: the command gets words
/// read from the input appended; with `-I R`, `-i[R]` or `--replace[=R]`
/// every word holding `R` is rewritten from the input, so it is no longer
/// known. Without a command xargs runs `echo`.
///
/// `replaced` holds the patterns of the xargs before this one, already
/// marked in the words after them; a chain of xargs marks each new pattern
/// once, and past a few the command is unprovable instead, so that the work
/// stays linear.
fn xargs(
    base: usize,
    words: &mut [Word],
    notes: &mut Vec<String>,
    out: &mut Stripped,
    replaced: &mut Vec<String>,
) -> Step {
    let mut g = Getopt::new(&XARGS, base + 1);
    let (opts, at) = g.all(words);
    notes.append(&mut g.problems);
    // `-a FILE` reads its input from FILE, as `< FILE` would: path rules
    // see it.
    out.writes
        .extend(opts.iter().filter(|o| o.key == 'a').filter_map(|o| {
            Some(Redirect {
                op: "<".to_owned(),
                target: o.value.clone()?,
            })
        }));
    for o in opts.iter().filter(|o| matches!(o.key, 'I' | 'i')) {
        let pattern = o.value.clone().unwrap_or_else(|| "{}".to_owned());
        if replaced.contains(&pattern) {
            continue;
        }
        if replaced.len() == MAX_PROBLEMS {
            notes.push("`xargs` replaces too many patterns to follow".to_owned());
            break;
        }
        for w in words.iter_mut().skip(at) {
            if w.text.contains(pattern.as_str()) {
                w.known = w.known.max(Known::Variable);
            }
        }
        replaced.push(pattern);
    }
    match runs(&opts, at, words, Lookup::Program) {
        Step::Nothing
            if at >= words.len() && opts.iter().all(|o| o.key != HELP && o.key != VERSION) =>
        {
            Step::Echo
        }
        step => step,
    }
}

/// GNU `time [OPTION]... COMMAND [ARG]...`: `-o FILE` (`--output-file`)
/// writes FILE, appending with `-a`; the last `-o` counts.
fn gnu_time(base: usize, words: &[Word], notes: &mut Vec<String>, out: &mut Stripped) -> Step {
    let mut g = Getopt::new(&GNU_TIME, base + 1);
    let (opts, at) = g.all(words);
    notes.append(&mut g.problems);
    out.writes.extend(time_write(&opts));
    runs(&opts, at, words, Lookup::Program)
}

/// The file GNU time writes, given its options.
fn time_write(opts: &[Opt]) -> Option<Redirect> {
    let target = opts.iter().rev().find(|o| o.key == 'o')?.value.clone()?;
    let append = opts.iter().any(|o| o.key == 'a');
    Some(Redirect {
        op: if append { ">>" } else { ">" }.to_owned(),
        target,
    })
}

/// bash's keyword `time [-p] [--] PIPELINE`. The words cannot tell whether
/// `time` was quoted (then it is GNU time), so the keyword's reading is
/// taken only where GNU time would read the same command the same way;
/// elsewhere the command is unprovable, read as GNU time when the two
/// disagree on where the command starts (so that its writes are seen).
fn keyword_time(base: usize, words: &[Word], notes: &mut Vec<String>, out: &mut Stripped) -> Step {
    let mut k = base + 1;
    if words.get(k).is_some_and(|w| w.text == "-p") {
        k += 1;
    }
    if words.get(k).is_some_and(|w| w.text == "--") {
        k += 1;
    }
    let mut g = Getopt::new(&GNU_TIME, base + 1);
    let (opts, at) = g.all(words);
    let write = time_write(&opts);
    let gnu = runs(&opts, at, words, Lookup::Program);
    let informs = opts.iter().any(|o| o.key == HELP || o.key == VERSION);
    let positional = words
        .get(k)
        .is_some_and(|w| POSITIONAL.contains(&w.text.as_str()));
    let same_start = at == k && g.problems.is_empty() && write.is_none() && !informs;
    if same_start && !positional {
        return if k < words.len() {
            Step::Runs(k, Lookup::Shell)
        } else {
            Step::Nothing
        };
    }
    let shown: Vec<&str> = words[base..]
        .iter()
        .take(6)
        .map(|w| w.text.as_str())
        .collect();
    notes.push(format!(
        "`time` is bash's keyword unless quoted or in POSIX mode, and GNU time otherwise; the \
         two read `{}` differently",
        snippet(&shown.join(" "))
    ));
    if same_start {
        // They differ only in how the next word is looked up: the
        // keyword's reading steps over more wrappers.
        return Step::Runs(k, Lookup::Shell);
    }
    notes.append(&mut g.problems);
    out.writes.extend(write);
    gnu
}

/// The builtins `exec [-cl] [-a NAME]`, `command [-pVv]` and `builtin`, read
/// with bash's `internal_getopt`: clusters of short options, a value
/// attached or in the next word, `--` ends them, a lone `-` is an operand,
/// and `--help` prints help.
fn builtin(name: &str, base: usize, words: &[Word], notes: &mut Vec<String>) -> Step {
    let optstring = match name {
        "exec" => "cla:",
        "command" => "pVv",
        _ => "",
    };
    let mut i = base + 1;
    let mut describe = false;
    let mut problems = 0;
    let mut problem = |notes: &mut Vec<String>, what: String| {
        if problems < MAX_PROBLEMS {
            problems += 1;
            notes.push(format!("`{name}` {what}"));
        }
    };
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if !t.starts_with('-') || t == "-" {
            break;
        }
        i += 1;
        if t == "--" {
            break;
        }
        if t == "--help" {
            return Step::Nothing;
        }
        if w.known != Known::Literal {
            problem(notes, format!("option `{}` is not literal", snippet(t)));
        }
        for (pos, c) in t.char_indices().skip(1) {
            match short_arg(optstring, c) {
                None => problem(
                    notes,
                    format!("option `-{}` is not known", c.escape_debug()),
                ),
                Some(Arg::No) => describe |= matches!(c, 'v' | 'V'),
                Some(_) => {
                    if pos + c.len_utf8() == t.len() {
                        match words.get(i) {
                            None => problem(notes, format!("option `-{c}` lacks its value")),
                            Some(v) if v.known != Known::Literal => problem(
                                notes,
                                format!(
                                    "value `{}` of option `-{c}` is not literal",
                                    snippet(&v.text)
                                ),
                            ),
                            Some(_) => {}
                        }
                        i += 1;
                    }
                    break;
                }
            }
        }
    }
    let Some(next) = words.get(i) else {
        return Step::Nothing;
    };
    match name {
        // `command -v x` / `-V x` only describe x.
        "command" if describe => Step::Nothing,
        "command" => Step::Runs(i, Lookup::Builtins),
        // `builtin x` runs x only if it is a builtin; otherwise nothing.
        "builtin"
            if next.known == Known::Literal && !BASH_BUILTINS.contains(&next.text.as_str()) =>
        {
            Step::Nothing
        }
        "builtin" => Step::Runs(i, Lookup::Builtins),
        _ => Step::Runs(i, Lookup::Program),
    }
}

/// Shells whose `-c` script is analysed.
pub(super) const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh"];

/// What a shell invocation runs.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ShellRun<'w> {
    /// `-c SCRIPT`.
    Script(&'w Word),
    /// A script file operand.
    File(&'w Word),
    /// Commands read from standard input.
    Input,
    /// Nothing to run (`--version`, `-c` without a script).
    Nothing,
}

/// Reads the options of a shell invocation (`words[0]` is the shell).
pub(super) fn shell_run(words: &[Word]) -> ShellRun<'_> {
    let mut i = 1;
    let mut command_string = false;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            if matches!(long, "version" | "help") {
                return ShellRun::Nothing;
            }
            let takes_next = matches!(long, "rcfile" | "init-file");
            i += 1 + usize::from(takes_next);
            continue;
        }
        let cluster = match t.strip_prefix('-').or_else(|| t.strip_prefix('+')) {
            Some(c) if !c.is_empty() => c,
            _ => break,
        };
        if t.starts_with('-') && cluster.contains('c') {
            command_string = true;
        }
        // `-o option` and `-O shopt` take the next word.
        i += 1 + cluster.chars().filter(|c| matches!(c, 'o' | 'O')).count();
    }
    match (command_string, words.get(i)) {
        (true, Some(script)) => ShellRun::Script(script),
        (true, None) => ShellRun::Nothing,
        (false, Some(file)) => ShellRun::File(file),
        (false, None) => ShellRun::Input,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(words: &str) -> Vec<Word> {
        words.split(' ').map(Word::literal).collect()
    }

    /// `getopt_long` over `words` (after the tool's name): the options as
    /// `key=value` and the index of the first operand.
    fn read(spec: &Spec, words: &str) -> (Vec<String>, usize, Vec<String>) {
        let words = literal(words);
        let mut g = Getopt::new(spec, 1);
        let (opts, at) = g.all(&words);
        let shown = opts
            .iter()
            .map(|o| format!("{}={}", o.key, o.value.as_deref().unwrap_or("")))
            .collect();
        (shown, at, g.problems)
    }

    /// The words and unprovable phrases of the single command of `script`.
    fn one(script: &str) -> (Vec<String>, Vec<String>) {
        let got = super::super::analyze(script);
        assert_eq!(got.commands.len(), 1, "{script}: {got:?}");
        (got.commands[0].words.clone(), got.unprovable)
    }

    fn runs(script: &str, expected: &str) {
        let (words, unprovable) = one(script);
        assert_eq!(words.join(" "), expected, "{script}");
        assert!(unprovable.is_empty(), "{script}: {unprovable:?}");
    }

    /// Like [`runs`] for a command `xargs` runs: the only thing unproven
    /// is the input it appends.
    fn fed(script: &str, expected: &str) {
        let (words, unprovable) = one(script);
        assert_eq!(words.join(" "), expected, "{script}");
        assert_eq!(unprovable, [super::XARGS_INPUT], "{script}");
    }

    fn unprovable(script: &str, expected: &str, phrase: &str) {
        let (words, unprovable) = one(script);
        assert_eq!(words.join(" "), expected, "{script}");
        assert!(
            unprovable.iter().any(|p| p.contains(phrase)),
            "{script}: {unprovable:?} lacks {phrase:?}"
        );
    }

    #[test]
    fn long_options_take_any_unique_prefix() {
        assert_eq!(read(&ENV, "env --un ls x").0, ["u=ls"]);
        assert_eq!(read(&ENV, "env --un ls x").1, 3);
        assert_eq!(read(&TIMEOUT, "timeout --sig KILL 5").0, ["s=KILL"]);
        assert_eq!(read(&XARGS, "xargs --p ls rm").0, [format!("{OTHER}=ls")]);
        assert_eq!(read(&GNU_TIME, "time --out f ls").0, ["o=f"]);
        assert_eq!(read(&GNU_TIME, "time --output=f ls").0, ["o=f"]);
    }

    #[test]
    fn an_ambiguous_or_unknown_long_option_is_a_problem() {
        let (_, at, problems) = read(&ENV, "env --d ls");
        assert_eq!(at, 2);
        assert!(problems[0].contains("`--d` is ambiguous"), "{problems:?}");
        let (_, _, problems) = read(&XARGS, "xargs --e=x ls");
        assert!(problems[0].contains("--eof, --exit"), "{problems:?}");
        let (_, _, problems) = read(&TIMEOUT, "timeout --nope 5 ls");
        assert!(
            problems[0].contains("`--nope` is not known"),
            "{problems:?}"
        );
        let (_, _, problems) = read(&ENV, "env --debug=1 ls");
        assert!(problems[0].contains("takes no value"), "{problems:?}");
        let (_, _, problems) = read(&ENV, "env -u");
        assert!(problems[0].contains("lacks its value"), "{problems:?}");
    }

    #[test]
    fn an_exact_name_beats_the_longer_names_it_prefixes() {
        const SPEC: Spec = Spec {
            tool: "t",
            short: "",
            informs: "",
            long: &[
                Long("out", Arg::Required, 'o'),
                Long("output", Arg::No, 'p'),
            ],
        };
        assert_eq!(read(&SPEC, "t --out f x").0, ["o=f"]);
        assert_eq!(read(&SPEC, "t --outp x").0, ["p="]);
        assert!(!read(&SPEC, "t --ou x").2.is_empty());
    }

    #[test]
    fn optional_values_attach_only() {
        assert_eq!(read(&XARGS, "xargs --eof sudo ls").0, ["e="]);
        assert_eq!(read(&XARGS, "xargs --eof sudo ls").1, 2);
        assert_eq!(read(&XARGS, "xargs --eof=x ls").0, ["e=x"]);
        assert_eq!(read(&XARGS, "xargs -e sudo").0, ["e="]);
        assert_eq!(read(&XARGS, "xargs -esudo ls").0, ["e=sudo"]);
        assert_eq!(read(&XARGS, "xargs -i ls").0, ["i="]);
        // A required value takes the rest of a cluster or the next word.
        assert_eq!(read(&XARGS, "xargs -0n1 ls").0, ["0=", "n=1"]);
        assert_eq!(read(&XARGS, "xargs -0n 1 ls").0, ["0=", "n=1"]);
    }

    #[test]
    fn options_stop_at_the_first_operand_or_after_dashes() {
        assert_eq!(read(&NICE, "nice ls -n 5").1, 1);
        assert_eq!(read(&NICE, "nice -- -n 5").1, 2);
        assert_eq!(read(&ENV, "env - -i ls").1, 1);
        runs("nice -- -5 ls", "-5 ls");
        runs("timeout 5 -s KILL ls", "-s KILL ls");
    }

    #[test]
    fn wrappers_are_stepped_over_exactly() {
        runs("env --un ls sudo reboot", "sudo reboot");
        runs("env -vu ls sudo", "sudo");
        runs("env a.b=1 =x 1=2 sudo ls", "sudo ls");
        runs("env -i - FOO=1 sudo ls", "sudo ls");
        fed("xargs --eof sudo ls", "sudo ls");
        fed("xargs -E sudo ls", "ls");
        runs("timeout --sig KILL --k 1 5 sudo ls", "sudo ls");
        runs(
            "nice -5 nice --5 nice -+5 nice -n 3 nice --adj 3 sudo",
            "sudo",
        );
        runs("stdbuf --o L -e0 sudo", "sudo");
        runs("nohup -- sudo", "sudo");
        runs("xargs", "echo");
        runs("xargs -0 -r", "echo");
        runs("setsid -f --wai sudo ls", "sudo ls");
        runs("ionice -c3 -n 7 --ign sudo", "sudo");
        runs("taskset -c 0,1 sudo ls", "sudo ls");
        runs("taskset 03 sudo", "sudo");
        runs("setsid --version sudo", "setsid --version sudo");
        runs("ionice -p 1 sudo", "ionice -p 1 sudo");
        runs("taskset -p 03 1", "taskset -p 03 1");
    }

    #[test]
    fn help_and_version_run_nothing() {
        runs("env --help sudo", "env --help sudo");
        runs("nice --h sudo", "nice --h sudo");
        runs("nohup --v sudo", "nohup --v sudo");
        runs("xargs --help sudo", "xargs --help sudo");
        runs("command -v sudo", "command -v sudo");
        runs("exec --help sudo", "exec --help sudo");
        runs("env time -V sudo", "time -V sudo");
    }

    #[test]
    fn split_strings_and_other_folders_are_unprovable() {
        unprovable("env --s='rm -rf x' ls", "rm -rf x ls", "split");
        unprovable("env -S '-u X sudo' ls", "sudo ls", "split");
        unprovable(
            "env -C sub ls",
            "ls",
            "`env --chdir` runs its command in the folder `sub`",
        );
        unprovable("env --ch=/ ls", "ls", "chdir");
    }

    #[test]
    fn builtins_after_an_external_wrapper_are_programs() {
        runs("nice exec true", "exec true");
        runs("env exec -a name head", "exec -a name head");
        runs("env -v command -- cat a.txt", "command -- cat a.txt");
        runs("nice --adj 3 exec git status", "exec git status");
        runs("exec command ls", "command ls");
        runs("./exec ls", "exec ls");
        runs("./eval 'sudo ls'", "eval sudo ls");
        // No builtin is read into them.
        runs("nice eval 'sudo ls'", "eval sudo ls");
        // GNU time is a program: it steps over its options.
        runs("nice time -f %e sudo", "sudo");
    }

    #[test]
    fn builtins_read_their_own_options() {
        runs("exec -la name sudo", "sudo");
        runs("exec -aname -c -- sudo", "sudo");
        runs("command -p -- sudo", "sudo");
        runs("command exec sudo", "sudo");
        runs("builtin -- command sudo", "sudo");
        // `builtin` of something that is not a builtin runs nothing.
        runs("builtin sudo ls", "builtin sudo ls");
        runs("builtin time ls", "builtin time ls");
        unprovable("exec -x ls", "ls", "`exec` option `-x` is not known");
        unprovable("exec -a $x ls", "ls", "not literal");
    }

    #[test]
    fn gnu_time_reports_the_file_it_writes() {
        let writes = |script: &str| {
            let got = super::super::analyze(script);
            got.commands[0]
                .redirects
                .iter()
                .map(|r| format!("{}{}", r.op, r.target))
                .collect::<Vec<_>>()
        };
        assert_eq!(writes("nice time --output=o.txt ls"), [">o.txt"]);
        assert_eq!(writes("command time -o a -ao b ls"), [">>b"]);
        assert_eq!(writes("FOO=1 time --output-file o ls"), [">o"]);
        assert_eq!(writes("nice time -- ls"), Vec::<String>::new());
        // The keyword, or GNU time when quoted: unprovable, the write kept.
        assert_eq!(writes("time -o o.txt ls"), [">o.txt"]);
        unprovable("time -o o.txt ls", "ls", "keyword");
        // Where both read the same, the keyword's reading holds.
        runs("time -p -- ls", "ls");
        unprovable("time time -p ls", "ls", "keyword");
        unprovable("time exec sudo", "sudo", "keyword");
    }

    #[test]
    fn reserved_words_read_as_command_names_are_unprovable() {
        // tree-sitter-bash does not know the keyword `time`: what follows
        // it is read as words. The command behind is still seen.
        // (The walk reads `time !` and `! !` exactly itself; see
        // shell::tests::time_and_negation_run_their_command.)
        let got = super::super::analyze("time -p { sudo ls; }");
        assert_eq!(got.commands[0].words, ["sudo", "ls"]);
        assert!(
            got.unprovable[0].contains("`{` is a reserved word"),
            "{got:?}"
        );
        // The walk also reads what follows `coproc` again as a script (for
        // `coproc NAME { ... }`), so the command may be listed twice.
        let got = super::super::analyze("coproc sudo ls");
        assert!(got.commands.iter().all(|c| c.words == ["sudo", "ls"]));
        assert!(got.unprovable[0].contains("`coproc` is a reserved word"));
        let got = super::super::analyze("time while sudo ls; do :; done");
        assert_eq!(got.commands[0].words, ["sudo", "ls"]);
        assert!(
            got.unprovable[0].contains("`while` is a reserved word"),
            "{got:?}"
        );
        // After an assignment or `command`, the word is a program's name.
        runs("command if x", "if x");
    }

    #[test]
    fn xargs_input_can_make_the_command() {
        unprovable("xargs env", "env", "`xargs` appends its input to `env`");
        unprovable(
            "xargs bash -c",
            "bash -c",
            "`xargs` appends its input to `bash`",
        );
        unprovable("xargs -I{} {} x", "{} x", "command name");
        let got = super::super::analyze("xargs -I{} sudo {}");
        assert_eq!(got.commands[0].words, ["sudo", "{}"]);
        // `-a FILE` reads FILE, like `< FILE`.
        let got = super::super::analyze("xargs --arg=list.txt -a in.txt grep x");
        let reads: Vec<_> = got.commands[0]
            .redirects
            .iter()
            .map(|r| format!("{}{}", r.op, r.target))
            .collect();
        assert_eq!(reads, ["<list.txt", "<in.txt"]);
    }

    /// Long wrapper chains and option clusters are read to the end (their
    /// cost is measured by the criterion bench, not timed here).
    #[test]
    fn long_chains_and_clusters_are_read_to_the_end() {
        for unit in [
            "xargs -I{} ",
            "xargs -i ",
            "env ",
            "nice -5 ",
            "time ",
            "env -vvvvvvvvvv ",
            "xargs -0 ",
        ] {
            let script = format!("{}ls", unit.repeat(50_000));
            let got = super::super::analyze(&script);
            assert_eq!(
                got.commands.last().map(|c| c.program()),
                Some("ls"),
                "{unit}"
            );
        }
        // Past 16 KiB a script is read by the strict reader alone: its
        // commands, but no proof.
        unprovable(
            &format!("env -{} ls", "v".repeat(1_000_000)),
            "ls",
            "without a second opinion",
        );
        runs(&format!("env -{} ls", "v".repeat(16_000)), "ls");
    }
}
