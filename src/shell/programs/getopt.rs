//! Reading a program's options the way its own parser does: GNU
//! `getopt_long` (clustered short options, attached or separate values,
//! `--name=value`, unique abbreviations of long names, `--`, options after
//! operands), or a simpler parser that takes values only from the next word
//! (`tree`). Each option found carries what it does ([`Does`]); an option the
//! table does not know is a problem, never silently skipped.

/// Whether an option takes a value (glibc's `has_arg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    No,
    Required,
    /// Only attached: `--name=value`, `-xvalue`.
    Optional,
}

/// What giving an option does, beyond changing what is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Does {
    /// Changes only what is printed (or its value is text: a number, a
    /// format, a pattern matched against lines).
    Nothing,
    /// Its value is a file the program reads.
    Reads,
    /// Its value names the files to read (a file of names, `-` for stdin):
    /// which files are read cannot be known from the command.
    ReadsList,
    /// Its value is a file or folder the program writes.
    Writes,
    /// Runs another program.
    Runs,
    /// Walks folders recursively.
    Recurses,
    /// Follows every symlink, also those met inside a walked folder.
    Follows,
    /// Both: walks and follows (`grep -R`).
    RecursesFollowing,
    /// Reads hidden (dot) files a walk skips by default (`rg --hidden`).
    Hidden,
    /// Its value is a glob of names a walk leaves out (`--exclude-dir=`).
    Excludes,
    /// Its value is a glob of the only file names a walk reads (`--include=`).
    Includes,
    /// `rg -g`: a glob that includes, or with a leading `!` excludes.
    Glob,
    /// Its value is a pattern, so the first operand is a file (`grep -e`).
    Pattern,
    /// Its value is a file of patterns, read; the first operand is a file.
    PatternFile,
    /// Anything else that is not read-only, in a phrase: "sets the clock".
    Hazard(&'static str),
}

/// One option: its short letter (`'\0'` for none), its long name (`""` for
/// none), whether it takes a value, and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    pub short: char,
    pub long: &'static str,
    pub arg: Arg,
    pub does: Does,
}

/// A short option with a long name.
pub const fn both(short: char, long: &'static str, arg: Arg, does: Does) -> Opt {
    Opt {
        short,
        long,
        arg,
        does,
    }
}

/// A long option only.
pub const fn long(long: &'static str, arg: Arg, does: Does) -> Opt {
    Opt {
        short: '\0',
        long,
        arg,
        does,
    }
}

/// A short option only.
pub const fn short(short: char, arg: Arg, does: Does) -> Opt {
    Opt {
        short,
        long: "",
        arg,
        does,
    }
}

/// How a program reads its command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// GNU `getopt_long` with argument permutation.
    Gnu,
    /// Like GNU, but options end at the first operand (`+` optstring,
    /// git's subcommands do not: they use `Gnu`).
    GnuStopAtOperand,
    /// `tree`: a value is always the next word, letters after a
    /// value-taking one in the same word are more options, long options
    /// match only exactly (`--name=value` or `--name value`).
    NextWord,
}

/// An option as found, with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found<'a> {
    /// The option as its table names it: `-x` or `--name`.
    pub name: String,
    pub does: Does,
    pub value: Option<&'a str>,
}

/// A command line read against a table.
#[derive(Debug, Default)]
pub struct Parsed<'a> {
    pub options: Vec<Found<'a>>,
    pub operands: Vec<&'a str>,
    /// What could not be read: unknown or ambiguous options, a missing value.
    pub problems: Vec<String>,
}

impl<'a> Parsed<'a> {
    /// Whether an option that does `does` was given.
    pub fn has(&self, does: Does) -> bool {
        self.options.iter().any(|o| o.does == does)
    }

    /// Whether the option named `name` (`-x` or `--name`) was given.
    pub fn named(&self, name: &str) -> bool {
        self.options.iter().any(|o| o.name == name)
    }

    /// The values of the options that do `does`.
    pub fn values(&self, does: Does) -> impl Iterator<Item = &'a str> + '_ {
        self.options
            .iter()
            .filter(move |o| o.does == does)
            .filter_map(|o| o.value)
    }
}

/// At most this many problems are kept for one command: a word of a
/// million unknown letters must not make a million phrases.
const MAX_PROBLEMS: usize = 4;

/// Reads `args` (the words after the program) as `program` would, with
/// its option `table`. `digits` lets a cluster hold digits (`grep -5`,
/// `head -20`): they are a number, not options.
pub fn parse<'a>(
    program: &str,
    args: &'a [String],
    table: &'static [Opt],
    style: Style,
    digits: bool,
) -> Parsed<'a> {
    let mut parsed = Parsed::default();
    let problem = |parsed: &mut Parsed<'a>, text: String| {
        if parsed.problems.len() < MAX_PROBLEMS {
            parsed.problems.push(text);
        }
    };
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let arg = args[i].as_str();
        i += 1;
        if only_operands || arg == "-" || !arg.starts_with('-') {
            parsed.operands.push(arg);
            if style == Style::GnuStopAtOperand {
                only_operands = true;
            }
            continue;
        }
        if arg == "--" {
            only_operands = true;
            continue;
        }
        if let Some(body) = arg.strip_prefix("--") {
            let (name, attached) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let opt = match lookup_long(table, name, style) {
                Ok(opt) => opt,
                Err(why) => {
                    problem(&mut parsed, format!("`{program}` option `--{name}` {why}"));
                    continue;
                }
            };
            let value = match (opt.arg, attached) {
                (Arg::No, Some(_)) => {
                    problem(
                        &mut parsed,
                        format!("`{program}` option `--{}` takes no value", opt.long),
                    );
                    continue;
                }
                (Arg::No, None) => None,
                (Arg::Optional, v) if style != Style::NextWord => v,
                (_, Some(v)) => Some(v),
                (_, None) => match args.get(i) {
                    Some(next) => {
                        i += 1;
                        Some(next.as_str())
                    }
                    None if opt.arg == Arg::Optional => None,
                    None => {
                        problem(
                            &mut parsed,
                            format!("`{program}` option `--{}` lacks its value", opt.long),
                        );
                        continue;
                    }
                },
            };
            parsed.options.push(Found {
                name: format!("--{}", opt.long),
                does: opt.does,
                value,
            });
            continue;
        }
        // A cluster of short options.
        let cluster = &arg[1..];
        let mut chars = cluster.char_indices().peekable();
        while let Some((at, letter)) = chars.next() {
            if digits && letter.is_ascii_digit() {
                continue;
            }
            let Some(opt) = table.iter().find(|o| o.short == letter) else {
                problem(
                    &mut parsed,
                    format!("`{program}` option `-{letter}` is not known"),
                );
                break;
            };
            let rest = &cluster[at + letter.len_utf8()..];
            let value = match opt.arg {
                Arg::No => None,
                Arg::Optional if style != Style::NextWord => {
                    let v = (!rest.is_empty()).then_some(rest);
                    parsed.options.push(Found {
                        name: format!("-{letter}"),
                        does: opt.does,
                        value: v,
                    });
                    break;
                }
                _ if style != Style::NextWord && !rest.is_empty() => {
                    parsed.options.push(Found {
                        name: format!("-{letter}"),
                        does: opt.does,
                        value: Some(rest),
                    });
                    break;
                }
                _ => match args.get(i) {
                    Some(next) => {
                        i += 1;
                        Some(next.as_str())
                    }
                    None => {
                        problem(
                            &mut parsed,
                            format!("`{program}` option `-{letter}` lacks its value"),
                        );
                        break;
                    }
                },
            };
            parsed.options.push(Found {
                name: format!("-{letter}"),
                does: opt.does,
                value,
            });
            if chars.peek().is_none() {
                break;
            }
        }
    }
    parsed
}

/// The long option `name` names: exactly, or (GNU) as the unique option it
/// abbreviates.
fn lookup_long(table: &'static [Opt], name: &str, style: Style) -> Result<&'static Opt, String> {
    if name.is_empty() {
        return Err("is not known".to_owned());
    }
    if let Some(exact) = table.iter().find(|o| o.long == name) {
        return Ok(exact);
    }
    if style == Style::NextWord {
        return Err("is not known".to_owned());
    }
    let mut candidates = table
        .iter()
        .filter(|o| !o.long.is_empty() && o.long.starts_with(name));
    let Some(first) = candidates.next() else {
        return Err("is not known".to_owned());
    };
    // getopt_long accepts an ambiguous prefix when every candidate is the
    // same option; here that means the same value and effect.
    if candidates.any(|o| o.arg != first.arg || o.does != first.does) {
        return Err("is ambiguous".to_owned());
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[Opt] = &[
        both('o', "output", Arg::Required, Does::Writes),
        both('n', "lines", Arg::Required, Does::Nothing),
        both('v', "verbose", Arg::No, Does::Nothing),
        long("color", Arg::Optional, Does::Nothing),
        long("colors", Arg::Required, Does::Nothing),
        long("compress-program", Arg::Required, Does::Runs),
    ];

    /// Leaked, so that a parse may borrow it for the rest of the test.
    fn words(list: &[&str]) -> &'static [String] {
        Box::leak(list.iter().map(|w| (*w).to_owned()).collect())
    }

    #[test]
    fn gnu_forms_are_read_like_getopt() {
        let args = words(&["-vo", "out", "a", "--lines=3", "--compress=sh", "--", "-v"]);
        let p = parse("t", args, TABLE, Style::Gnu, false);
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        assert_eq!(p.values(Does::Writes).collect::<Vec<_>>(), ["out"]);
        assert_eq!(p.values(Does::Runs).collect::<Vec<_>>(), ["sh"]);
        assert_eq!(p.operands, ["a", "-v"]);
        let attached = words(&["-oout", "--color", "x"]);
        let p = parse("t", attached, TABLE, Style::Gnu, false);
        assert_eq!(p.values(Does::Writes).collect::<Vec<_>>(), ["out"]);
        assert_eq!(
            p.operands,
            ["x"],
            "an optional value attaches only with `=`"
        );
    }

    #[test]
    fn unknown_ambiguous_and_incomplete_options_are_problems() {
        for (args, phrase) in [
            (&["-x"][..], "`-x` is not known"),
            (&["--col"][..], "ambiguous"),
            (&["--frob"][..], "not known"),
            (&["-o"][..], "lacks its value"),
            (&["--verbose=1"][..], "takes no value"),
        ] {
            let p = parse("t", words(args), TABLE, Style::Gnu, false);
            assert!(
                p.problems.iter().any(|x| x.contains(phrase)),
                "{args:?}: {:?}",
                p.problems
            );
        }
    }

    #[test]
    fn next_word_style_never_attaches() {
        let p = parse(
            "t",
            words(&["-on", "f", "3"]),
            TABLE,
            Style::NextWord,
            false,
        );
        assert_eq!(p.values(Does::Writes).collect::<Vec<_>>(), ["f"]);
        assert!(p.named("-n"));
        assert!(p.problems.is_empty());
        let p = parse("t", words(&["--outp", "f"]), TABLE, Style::NextWord, false);
        assert!(!p.problems.is_empty(), "no abbreviations");
    }

    #[test]
    fn digits_are_a_number_where_the_program_says_so() {
        let p = parse("t", words(&["-20v"]), TABLE, Style::Gnu, true);
        assert!(p.problems.is_empty());
        let p = parse("t", words(&["-20"]), TABLE, Style::Gnu, false);
        assert!(!p.problems.is_empty());
    }

    #[test]
    fn stop_at_operand_keeps_later_options_as_operands() {
        let p = parse(
            "t",
            words(&["a", "-o", "x"]),
            TABLE,
            Style::GnuStopAtOperand,
            false,
        );
        assert_eq!(p.operands, ["a", "-o", "x"]);
    }
}
