//! Wrappers: programs that run their arguments as a command (`env`, `nice`,
//! `timeout`, `xargs`, ...), and the option syntax needed to step over them.
//!
//! Only option *shapes* are known here (which flags take a value); nothing
//! is judged.

use super::word::{Known, Word};

/// Which options of a wrapper take a value; every other option is a flag.
struct Options {
    /// Short options that take a value, attached (`-n1`) or as the next word.
    short_value: &'static str,
    /// Short options whose value can only be attached (`xargs -i{}`).
    short_attached: &'static str,
    /// Long options (without `--`) that take the next word as their value
    /// when not written `--name=value`.
    long_value: &'static [&'static str],
}

const NO_OPTIONS: Options = Options {
    short_value: "",
    short_attached: "",
    long_value: &[],
};

/// Steps over the options starting at `words[i]`; returns the index of the
/// first operand (or `words.len()`). `--` ends the options.
fn skip_options(words: &[Word], mut i: usize, opts: &Options) -> usize {
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            return i + 1;
        }
        if let Some(long) = t.strip_prefix("--") {
            let takes_next = !long.contains('=') && opts.long_value.contains(&long);
            i += 1 + usize::from(takes_next);
            continue;
        }
        let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty()) else {
            return i;
        };
        let mut takes_next = false;
        for (pos, c) in cluster.char_indices() {
            if opts.short_value.contains(c) {
                takes_next = pos + c.len_utf8() == cluster.len();
                break;
            }
            if opts.short_attached.contains(c) {
                break;
            }
        }
        i += 1 + usize::from(takes_next);
    }
    // A value-taking option at the end may have stepped past the last word.
    i.min(words.len())
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

/// True for `NAME=value` with a valid shell variable name.
fn is_assignment(text: &str) -> bool {
    let Some((name, _)) = text.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Where the command run by the wrapper `name` starts, if `name` is a
/// wrapper that runs one. `notes` receives what could not be followed.
fn wrapped_start(name: &str, words: &[Word], notes: &mut Vec<String>) -> Option<usize> {
    let after = match name {
        "env" => {
            let mut i = 1;
            loop {
                let next = skip_options(
                    words,
                    i,
                    &Options {
                        short_value: "uCSP",
                        short_attached: "",
                        long_value: &["unset", "chdir", "split-string"],
                    },
                );
                for w in &words[i.min(next)..next] {
                    let t = w.text.as_str();
                    if t.starts_with("--split-string")
                        || (t.starts_with('-') && !t.starts_with("--") && t.contains('S'))
                    {
                        notes.push("env -S splits a string into a command".to_string());
                    }
                }
                i = next;
                // `env -` is `env -i`; options may follow it again.
                if words.get(i).is_some_and(|w| w.text == "-") {
                    i += 1;
                    continue;
                }
                break;
            }
            while words
                .get(i)
                .is_some_and(|w| w.known == Known::Literal && is_assignment(&w.text))
            {
                i += 1;
            }
            i
        }
        "command" => {
            let mut i = 1;
            while let Some(w) = words.get(i) {
                let t = w.text.as_str();
                if t == "--" {
                    i += 1;
                    break;
                }
                match t.strip_prefix('-') {
                    Some(flags) if !flags.is_empty() => {
                        // `command -v x` / `-V x` only describe x.
                        if flags.contains(['v', 'V']) {
                            return None;
                        }
                        i += 1;
                    }
                    _ => break,
                }
            }
            i
        }
        "builtin" | "nohup" => skip_options(words, 1, &NO_OPTIONS),
        "exec" => skip_options(
            words,
            1,
            &Options {
                short_value: "a",
                ..NO_OPTIONS
            },
        ),
        "nice" => skip_options(
            words,
            1,
            &Options {
                short_value: "n",
                short_attached: "",
                long_value: &["adjustment"],
            },
        ),
        "time" => skip_options(
            words,
            1,
            &Options {
                short_value: "fo",
                short_attached: "",
                long_value: &["format", "output"],
            },
        ),
        "timeout" => {
            // Options, then the DURATION operand.
            skip_options(
                words,
                1,
                &Options {
                    short_value: "sk",
                    short_attached: "",
                    long_value: &["signal", "kill-after"],
                },
            ) + 1
        }
        "stdbuf" => skip_options(
            words,
            1,
            &Options {
                short_value: "ioe",
                short_attached: "",
                long_value: &["input", "output", "error"],
            },
        ),
        "xargs" => skip_options(
            words,
            1,
            &Options {
                short_value: "nIdPLsEa",
                short_attached: "ile",
                long_value: &[
                    "max-args",
                    "delimiter",
                    "max-procs",
                    "max-lines",
                    "max-chars",
                    "eof",
                    "arg-file",
                    "process-slot-var",
                ],
            },
        ),
        _ => return None,
    };
    Some(after)
}

/// What stripping wrappers learned besides the words.
#[derive(Debug, Default)]
pub(super) struct Stripped {
    /// Names of variables the wrappers set (`env FOO=1`).
    pub assignments: Vec<String>,
    /// The program as written, when it was a path.
    pub path: Option<String>,
    /// Files a wrapper itself writes (GNU `time -o FILE`), as redirections
    /// of the command it runs, so that path rules see them.
    pub writes: Vec<super::Redirect>,
}

/// Strips wrappers (nested ones too) off the front of `words`, leaving the
/// program they run first, by its name. A wrapper with nothing after it is
/// itself the program. Returns what could not be followed in `notes`.
pub(super) fn strip(
    mut words: Vec<Word>,
    notes: &mut Vec<String>,
    out: &mut Stripped,
) -> Vec<Word> {
    // Each pass removes at least one word, so this ends.
    loop {
        let Some(first) = words.first_mut() else {
            return words;
        };
        if first.known != Known::Literal {
            return words;
        }
        let name = program_name(&first.text).to_string();
        if name.len() != first.text.len() {
            // Sticky: `./env ls` runs whatever `./env` is, so the command is
            // not pinned down even though `ls` is named by its name.
            let written = std::mem::replace(&mut first.text, name);
            out.path.get_or_insert(written);
        }
        let name = first.text.clone();
        match wrapped_start(&name, &words, notes) {
            Some(start) if start < words.len() => {
                out.assignments.extend(
                    words[1..start]
                        .iter()
                        .filter(|w| is_assignment(&w.text))
                        .filter_map(|w| w.text.split_once('=').map(|(n, _)| n.to_owned())),
                );
                words.drain(..start);
            }
            _ => return words,
        }
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
