//! A command that is one program and its literal words needs no shell.
//!
//! `bash -c 'cat a.txt'` starts bash only for bash to look `cat` up on
//! `PATH` and `execve` it with the words as they are. Where every word is
//! one bash takes literally (no quoting, expansion, operator, redirection,
//! assignment or comment can appear in it) and the first names a program
//! file rather than a builtin or a reserved word, [`direct`] does that
//! look-up itself, and the contained command starts without the shell in
//! between: one process start less for each such command. Anything else,
//! and a program it cannot find, runs as `bash -c COMMAND`, so bash's own
//! words for a missing program stand.
//!
//! And what bash runs without any process, a builtin that only sets an
//! exit status (`true`, `false`, `:`) or writes its words to standard
//! output (`echo`), has nothing for a sandbox to contain: [`builtin`]
//! runs it as bash does, in the launcher.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::shell::{BASH_BUILTINS, RESERVED};

/// A byte bash reads literally wherever it stands in a word (outside
/// braces, which are left out): none starts a quote, an expansion, a
/// glob, an operator, a comment or a tilde.
fn literal(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"_-./,:@%+=".contains(&byte)
}

/// The words of `command` when each is one of [`literal`] bytes,
/// separated by spaces or tabs.
fn literal_words(command: &str) -> Option<Vec<&str>> {
    let words: Vec<&str> = command
        .split([' ', '\t'])
        .filter(|w| !w.is_empty())
        .collect();
    (!words.is_empty() && words.iter().all(|w| w.bytes().all(literal))).then_some(words)
}

/// The words of `command` when bash would run it as one program with
/// those words as they are: [`literal_words`], the first without `=` (an
/// assignment) and not one of bash's builtins and reserved words.
pub fn plain_words(command: &str) -> Option<Vec<&str>> {
    let words = literal_words(command)?;
    let first = words[0];
    let shell_word = BASH_BUILTINS.contains(&first) || RESERVED.contains(&first);
    (!first.contains('=') && !shell_word).then_some(words)
}

/// A builtin bash runs without a process, with no effect but its exit
/// status and what it writes to standard output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Builtin<'a> {
    /// `true`, `:` (0) or `false` (1), whatever their words.
    Status(i32),
    /// `echo`: its words after its options, and whether a newline ends them.
    Echo { words: Vec<&'a str>, newline: bool },
}

/// `command` when it is such a builtin with [`literal_words`].
pub fn builtin(command: &str) -> Option<Builtin<'_>> {
    let words = literal_words(command)?;
    match words[0] {
        "true" | ":" => Some(Builtin::Status(0)),
        "false" => Some(Builtin::Status(1)),
        "echo" => {
            // As bash's echo reads its options: leading words of `-` and
            // `n`, `e`, `E` only (`-e` finds no backslash in a literal word).
            let options = words[1..]
                .iter()
                .take_while(|w| {
                    w.len() > 1 && w.starts_with('-') && w[1..].bytes().all(|b| b"neE".contains(&b))
                })
                .count();
            let newline = !words[1..=options].iter().any(|w| w.contains('n'));
            Some(Builtin::Echo {
                words: words[1 + options..].to_vec(),
                newline,
            })
        }
        _ => None,
    }
}

impl Builtin<'_> {
    /// Runs it as bash would, here: its exit status. `echo` writes with
    /// `SIGPIPE` at its default, so a closed pipe ends it as it ends bash.
    pub fn run(&self) -> i32 {
        match self {
            Builtin::Status(status) => *status,
            Builtin::Echo { words, newline } => {
                let mut line = words.join(" ").into_bytes();
                if *newline {
                    line.push(b'\n');
                }
                // SAFETY: resetting a disposition; writing from a live buffer.
                unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
                let mut rest = line.as_slice();
                while !rest.is_empty() {
                    let n = unsafe { libc::write(1, rest.as_ptr().cast(), rest.len()) };
                    if n < 0 {
                        let err = std::io::Error::last_os_error();
                        if err.kind() == std::io::ErrorKind::Interrupted {
                            continue;
                        }
                        eprintln!("echo: write error: {err}");
                        return 1;
                    }
                    rest = &rest[n as usize..];
                }
                0
            }
        }
    }
}

/// `program` as bash finds it: itself (from `cwd`) when it holds a `/`,
/// else the first executable regular file of that name in the folders of
/// `path` (`$PATH`). `None` when there is none, when `path` holds a
/// relative folder (found from wherever bash stands), or when the file
/// is neither a binary nor a `#!` script (bash runs those itself).
pub fn resolve(program: &str, path: Option<&OsStr>, cwd: &Path) -> Option<PathBuf> {
    let found = if program.contains('/') {
        Some(cwd.join(program)).filter(|p| executable(p))
    } else {
        let folders: Vec<PathBuf> = std::env::split_paths(path?).collect();
        if folders.iter().any(|f| !f.is_absolute()) {
            return None;
        }
        folders
            .into_iter()
            .map(|folder| folder.join(program))
            .find(|p| executable(p))
    }?;
    starts_a_program(&found).then_some(found)
}

fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether `path` begins as an ELF binary or a `#!` script: what `execve`
/// runs. Anything else bash would read as a script of its own.
fn starts_a_program(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == *b"\x7fELF" || head.starts_with(b"#!"))
}

/// The program and its arguments that run `command` without a shell, when
/// it is [`plain_words`] and its program [`resolve`]s: the file found, and
/// the words (the first as written, for `argv[0]`).
pub fn direct<'a>(
    command: &'a str,
    path: Option<&OsStr>,
    cwd: &Path,
) -> Option<(PathBuf, Vec<&'a str>)> {
    let words = plain_words(command)?;
    let program = resolve(words[0], path, cwd)?;
    Some((program, words))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_literal_words_run_without_the_shell() {
        assert_eq!(plain_words("cat a.txt"), Some(vec!["cat", "a.txt"]));
        assert_eq!(
            plain_words("  cargo\ttest --all-features -p x=1 "),
            Some(vec!["cargo", "test", "--all-features", "-p", "x=1"])
        );
        assert_eq!(
            plain_words("./run.sh --to=a,b:c@d%e+f"),
            Some(vec!["./run.sh", "--to=a,b:c@d%e+f"])
        );
        for shell in [
            "true",
            "echo -n hi there",
            "",
            "   ",
            "cat a.txt > b",
            "cat a.txt|wc",
            "cat 'a.txt'",
            "cat \"a\"",
            "cat a\\ b",
            "cat $HOME",
            "cat `x`",
            "cat *.rs",
            "cat a?",
            "cat [ab]",
            "cat {a,b}",
            "cat ~/x",
            "cat a # c",
            "cat a; rm b",
            "cat a & b",
            "cat a\nrm b",
            "(cat a)",
            "X=1 cat a",
            "! cat a",
            "true --help",
            "echo --version",
            "echo hi --help",
            "printf hi",
            "pwd",
            "cd /",
            "time cat a",
            "exec cat a",
            ". ./env",
            "[ -f a ]",
        ] {
            assert_eq!(plain_words(shell), None, "{shell:?}");
        }
    }

    #[test]
    fn builtins_with_nothing_to_contain_run_as_bash_runs_them() {
        let echo = |words: &[&'static str], newline| {
            Some(Builtin::Echo {
                words: words.to_vec(),
                newline,
            })
        };
        assert_eq!(builtin("true --help"), Some(Builtin::Status(0)));
        assert_eq!(builtin(": x"), Some(Builtin::Status(0)));
        assert_eq!(builtin("false"), Some(Builtin::Status(1)));
        assert_eq!(builtin("echo hi  there"), echo(&["hi", "there"], true));
        assert_eq!(builtin("echo -n hi"), echo(&["hi"], false));
        assert_eq!(builtin("echo -eEn -e hi"), echo(&["hi"], false));
        // Not options: `-`, `--`, another letter; and none after a word.
        assert_eq!(builtin("echo - hi"), echo(&["-", "hi"], true));
        assert_eq!(builtin("echo -- -n"), echo(&["--", "-n"], true));
        assert_eq!(builtin("echo -nx hi"), echo(&["-nx", "hi"], true));
        assert_eq!(builtin("echo hi -n"), echo(&["hi", "-n"], true));
        assert_eq!(builtin("echo --help"), echo(&["--help"], true));
        assert_eq!(builtin("echo"), echo(&[], true));
        for not in [
            "echo $HOME",
            "echo 'a'",
            "true; rm x",
            "printf hi",
            "cat a",
            "",
        ] {
            assert_eq!(builtin(not), None, "{not:?}");
        }
    }

    #[test]
    fn programs_are_found_as_bash_finds_them() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let write = |path: &Path, text: &[u8], mode: u32| {
            std::fs::write(path, text).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        // Not executable in the first folder: the second's is taken.
        write(&a.join("tool"), b"#!/bin/sh\n", 0o644);
        write(&b.join("tool"), b"#!/bin/sh\n", 0o755);
        // No `#!` and no ELF: bash's to run as a script.
        write(&a.join("bare"), b"echo hi\n", 0o755);
        let path = std::env::join_paths([&a, &b]).unwrap();
        let cwd = dir.path();
        assert_eq!(resolve("tool", Some(&path), cwd), Some(b.join("tool")));
        assert_eq!(resolve("bare", Some(&path), cwd), None);
        assert_eq!(resolve("missing", Some(&path), cwd), None);
        assert_eq!(resolve("tool", None, cwd), None);
        assert_eq!(
            resolve("./b/tool", Some(&path), cwd),
            Some(cwd.join("./b/tool"))
        );
        let relative = std::env::join_paths(["bin", b.to_str().unwrap()]).unwrap();
        assert_eq!(resolve("tool", Some(&relative), cwd), None);
        let (program, words) = direct("tool --x", Some(&path), cwd).unwrap();
        assert_eq!((program, words), (b.join("tool"), vec!["tool", "--x"]));
    }
}
