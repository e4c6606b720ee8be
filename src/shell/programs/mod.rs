//! What a program does with its options and operands: which words are
//! files it reads, which folders it walks (following symlinks or not,
//! reading contents or only names), and whatever makes an invocation more
//! than a read: an option that runs a program, writes a file, reads a list
//! of file names, or is not known.
//!
//! One model per program family, each a table of the program's options as
//! its own parser reads them (`getopt.rs`), so that the next program is one
//! table. A model exists only for programs whose every known use is a read;
//! [`read`] answers `None` for any other, and the policy then knows nothing
//! more than the words. Pure knowledge of command lines: no I/O, no policy.
//! Facts walk the folders named here; the policy judges the hazards.

mod files;
mod find;
pub mod gavel;
pub mod getopt;
mod git;
mod search;

use getopt::{Does, Opt, Parsed, Style};

pub use git::GitLocation;

use super::SimpleCommand;

/// How a modelled invocation reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reading {
    /// Files and folders named by the command whose contents the program
    /// reads, as written.
    pub reads: Vec<String>,
    /// Files and folders named by the command of which the program reads
    /// only names and metadata (`ls`, `stat`, `du`, `find`, `test`), as
    /// written: it lists them, never opens them.
    pub lists: Vec<String>,
    /// Folders the program walks below what it names.
    pub walks: Vec<Walk>,
    /// Why the invocation is not proven to be a read inside what it names:
    /// empty when it is. Each is a phrase for a reason.
    pub hazards: Vec<String>,
}

/// A folder a program walks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walk {
    /// The folder as written.
    pub root: String,
    /// Whether symlinks met inside are followed (`grep -R`, `rg -L`).
    pub follows: bool,
    /// Whether the contents of the files are read (`grep -r`), or only
    /// names and metadata (`ls -R`, `find`, `du`).
    pub contents: bool,
    /// Whether names starting with `.` are skipped (`rg` without `--hidden`).
    pub skips_hidden: bool,
    /// Globs of names the walk leaves out (`--exclude-dir`, `tree -I`).
    pub excludes: Vec<String>,
    /// When not empty, the only file names whose contents are read.
    pub includes: Vec<String>,
}

/// How a program's operands read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operands {
    /// Every operand is a file read; without one, `default` is (`ls` reads `.`).
    Paths(Option<&'static str>),
    /// Operands are text (`echo`, `basename`, `tr`), never files.
    Text,
    /// The first operand is a pattern unless an option gave one (`grep -e`);
    /// the rest are files, `default` when none.
    PatternThenPaths(Option<&'static str>),
}

/// Whether, and how, a program walks the folders it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walks {
    Never,
    /// Only with an option that [`Does::Recurses`].
    WhenAsked,
    Always,
}

/// One program family's model.
pub(crate) struct Model {
    /// The programs it covers (`words[0]`).
    pub names: &'static [&'static str],
    pub options: &'static [Opt],
    pub style: Style,
    /// Whether a cluster may hold a number (`head -20`, `grep -5`).
    pub digits: bool,
    pub operands: Operands,
    pub walks: Walks,
    /// Whether the program reads the contents of the files it names or
    /// walks (`cat`, `grep -r`), or only their names and metadata (`ls`,
    /// `stat`, `du`, `tree`): then its operands are listed, not read.
    pub contents: bool,
    /// Whether a walk follows symlinks unless told not to (`diff -r`).
    pub follows: bool,
    /// Whether a walk skips dot names unless told not to (`rg`, `tree`).
    pub skips_hidden: bool,
    /// The folder a walk starts from when no file is named (`grep -r`
    /// reads `.`), where that differs from what the operands say.
    pub walk_default: Option<&'static str>,
    /// What the model allows, one line for docs/shell.md.
    pub summary: &'static str,
    /// Hazards the table cannot express (an operand that sets the clock).
    pub check: fn(&Parsed<'_>) -> Vec<String>,
}

/// No hazards beyond the table's.
pub(crate) fn no_check(_: &Parsed<'_>) -> Vec<String> {
    Vec::new()
}

/// Every modelled program family.
fn models() -> impl Iterator<Item = &'static Model> {
    files::MODELS.iter().chain(search::MODELS)
}

/// The model for `program`, if there is one.
fn model(program: &str) -> Option<&'static Model> {
    models().find(|m| m.names.contains(&program))
}

/// How `command` reads, or `None` when its program has no model (or, for
/// `git` and `cargo`, its subcommand has none).
pub fn read(command: &SimpleCommand) -> Option<Reading> {
    read_words(&command.words)
}

/// [`read`] over a command's words (program first).
pub fn read_words(words: &[String]) -> Option<Reading> {
    let program = words.first()?.as_str();
    let args = &words[1..];
    match program {
        "git" => git::read(args),
        "cargo" => git::cargo(args),
        "find" => Some(find::read(args)),
        "test" | "[" => Some(files::test(args)),
        "jq" => Some(files::jq(args)),
        p if files::PRINTERS.contains(&p) => Some(Reading::default()),
        _ => model(program).map(|m| apply(m, program, args)),
    }
}

/// Where `git ARGS` (`words`, program first) finds its repository, or
/// `None` when the program is not `git`.
pub fn git_location(words: &[String]) -> Option<GitLocation> {
    (words.first().map(String::as_str) == Some("git")).then(|| git::location(&words[1..]))
}

/// The words a rule's prefix is also matched against: `git` without its
/// own options before the subcommand (`git -C src log` is `git log`), or
/// `None` when the words are the only reading.
pub fn canonical(words: &[String]) -> Option<Vec<String>> {
    match words.first().map(String::as_str) {
        Some("git") => git::canonical(&words[1..]),
        _ => None,
    }
}

/// The subcommand a command runs, as its program's own parser finds it
/// past the options that may come before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subcommand<'a> {
    /// This word.
    Named(&'a str),
    /// None: only options, or nothing, follow the program.
    Absent,
    /// The words before it cannot be read (an option the model does not
    /// know, a value missing): which word is the subcommand is not known.
    Unreadable,
}

/// Which subcommand `words` (program first) runs, for the programs whose
/// subcommands are modelled (`gavel`); `None` for any other program.
pub fn subcommand(words: &[String]) -> Option<Subcommand<'_>> {
    match words.first().map(String::as_str) {
        Some("gavel") => Some(gavel::subcommand(&words[1..])),
        _ => None,
    }
}

/// Whether `prefix` (a `command_prefix` entry) names something modelled:
/// a modelled program, or `git`/`cargo` with a modelled subcommand.
pub fn is_modelled(prefix: &[String]) -> bool {
    match prefix.first().map(String::as_str) {
        // `git --version` names only git's own options, which its model reads.
        Some("git") => match prefix[1..].iter().find(|w| !w.starts_with('-')) {
            Some(subcommand) => git::SUBCOMMANDS.contains(&subcommand.as_str()),
            None => prefix.len() > 1,
        },
        Some("cargo") => prefix
            .get(1)
            .is_some_and(|s| git::CARGO_SUBCOMMANDS.contains(&s.as_str())),
        Some(program) => {
            matches!(program, "find" | "test" | "[" | "jq")
                || files::PRINTERS.contains(&program)
                || model(program).is_some()
        }
        None => false,
    }
}

/// One row of the table in docs/shell.md: the programs and what is allowed.
pub fn documented() -> Vec<(String, &'static str)> {
    let mut rows: Vec<(String, &'static str)> =
        models().map(|m| (m.names.join(", "), m.summary)).collect();
    rows.push((
        "find".to_owned(),
        "tests and `-print`, `-printf`, `-ls`, `-prune`; never `-exec`, `-execdir`, `-ok`, `-okdir`, `-delete`, `-fprint*`, `-fls`, `-files0-from`; walks (names only: its starting points are listed, not opened), `-L`/`-follow` follow symlinks",
    ));
    rows.push((
        "test, [".to_owned(),
        "any expression; every word that is not an operator is a file whose metadata is read (listed, not opened)",
    ));
    rows.push((
        "jq".to_owned(),
        "every option but `-L`; a filter that `import`s or `include`s is not proven",
    ));
    rows.push((
        files::PRINTERS.join(", "),
        "anything: their words are printed (or are a status), never opened",
    ));
    rows.extend(git::documented());
    rows
}

/// Reads `args` with `model`'s table.
pub(crate) fn apply(model: &Model, program: &str, args: &[String]) -> Reading {
    let parsed = getopt::parse(program, args, model.options, model.style, model.digits);
    let mut reading = Reading {
        hazards: parsed.problems.clone(),
        ..Reading::default()
    };
    for found in &parsed.options {
        let hazard = match found.does {
            Does::Runs => Some(format!("`{program} {}` runs another program", found.name)),
            Does::Writes => Some(format!("`{program} {}` writes a file", found.name)),
            Does::ReadsList => Some(format!(
                "`{program} {}` reads the names of the files to read from `{}`",
                found.name,
                found.value.unwrap_or("-")
            )),
            Does::Hazard(what) => Some(format!("`{program} {}` {what}", found.name)),
            _ => None,
        };
        reading.hazards.extend(hazard);
    }
    reading.hazards.extend((model.check)(&parsed));
    reading.reads.extend(
        parsed
            .values(Does::Reads)
            .chain(parsed.values(Does::PatternFile))
            .filter(|v| *v != "-")
            .map(str::to_owned),
    );
    let (operands, default) = match model.operands {
        Operands::Text => (&[][..], None),
        Operands::Paths(default) => (&parsed.operands[..], default),
        Operands::PatternThenPaths(default) => {
            let given = parsed.has(Does::Pattern) || parsed.has(Does::PatternFile);
            let skip = usize::from(!given).min(parsed.operands.len());
            // Bash expands a glob in the pattern's place before the program
            // runs: the first name becomes the pattern, the others files it
            // reads, which no operand here names. Quoting is gone from the
            // words, so a regular expression (`fn.*main`) looks the same: a
            // path-like one (a `/` in it) is taken for a glob.
            if let Some(pattern) = parsed.operands[..skip]
                .iter()
                .find(|o| o.contains('/') && expands(o))
            {
                reading.hazards.push(format!(
                    "the glob `{pattern}` in the place of `{program}`'s pattern may expand to several names, the rest read as files"
                ));
            }
            (&parsed.operands[skip..], default)
        }
    };
    let files: Vec<&str> = operands.iter().copied().filter(|o| *o != "-").collect();
    let recursive = match model.walks {
        Walks::Never => false,
        Walks::WhenAsked => parsed.has(Does::Recurses) || parsed.has(Does::RecursesFollowing),
        Walks::Always => true,
    };
    let default = default.or(model.walk_default.filter(|_| recursive));
    let roots: Vec<&str> = match (operands.is_empty(), default) {
        (true, Some(default)) => vec![default],
        _ => files.clone(),
    };
    let named = if model.contents {
        &mut reading.reads
    } else {
        &mut reading.lists
    };
    named.extend(roots.iter().map(|r| (*r).to_owned()));
    if recursive {
        let mut excludes: Vec<String> = parsed.values(Does::Excludes).map(str::to_owned).collect();
        let mut includes: Vec<String> = parsed.values(Does::Includes).map(str::to_owned).collect();
        let mut hidden = parsed.has(Does::Hidden);
        for glob in parsed.values(Does::Glob) {
            match glob.strip_prefix('!') {
                Some(excluded) => excludes.push(excluded.to_owned()),
                None => {
                    // A positive override wins over the hidden filter for
                    // the names it matches; treat the walk as reading them.
                    hidden = true;
                    includes.push(glob.to_owned());
                }
            }
        }
        let follows = parsed.has(Does::Follows)
            || parsed.has(Does::RecursesFollowing)
            || (model.follows && !parsed.named("--no-dereference"));
        reading.walks = roots
            .iter()
            .map(|root| Walk {
                root: (*root).to_owned(),
                follows,
                contents: model.contents,
                skips_hidden: model.skips_hidden && !hidden,
                excludes: excludes.clone(),
                includes: includes.clone(),
            })
            .collect();
    }
    reading
}

#[cfg(test)]
mod tests;

/// Whether `word` holds a `*`, `?` or `[` that no backslash escapes.
fn expands(word: &str) -> bool {
    let mut escaped = false;
    word.chars().any(|c| {
        let wild = !escaped && matches!(c, '*' | '?' | '[');
        escaped = !escaped && c == '\\';
        wild
    })
}
