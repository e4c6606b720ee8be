//! A command that is one program and its literal words needs no shell.
//!
//! `bash -c 'cat a.txt'` starts bash only for bash to look `cat` up on
//! `PATH` and `execve` it with the words as they are. Where every word is
//! one bash takes literally (no quoting, expansion, operator, redirection,
//! assignment or comment can appear in it) and the first names a program
//! file rather than a builtin or a reserved word (`echo`, `true` and
//! `false`, whose programs do what the builtins do, aside), [`direct`]
//! does that look-up itself, and the contained command starts without the shell in
//! between: one process start less for each such command. Anything else,
//! and a program it cannot find, runs as `bash -c COMMAND`, so bash's own
//! words for a missing program stand.

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

/// Builtins whose program (the POSIX utility of the same name) does what
/// the builtin does with words of [`literal`] bytes (no backslash for
/// `echo` to read), unless a word asks the program for `--help` or
/// `--version`.
const SAME_AS_PROGRAM: &[&str] = &["echo", "false", "true"];

/// The words of `command` when bash would run it as one program with
/// those words as they are: words of [`literal`] bytes separated by spaces
/// or tabs, the first without `=` (an assignment) and not one of
/// bash's builtins and reserved words (but for [`SAME_AS_PROGRAM`] without a `--` word).
pub fn plain_words(command: &str) -> Option<Vec<&str>> {
    let words: Vec<&str> = command
        .split([' ', '\t'])
        .filter(|w| !w.is_empty())
        .collect();
    let first = words.first()?;
    let shell_word = BASH_BUILTINS.contains(first) || RESERVED.contains(first);
    let program = !shell_word
        || (SAME_AS_PROGRAM.contains(first) && !words.iter().any(|w| w.starts_with("--")));
    let plain = words.iter().all(|w| w.bytes().all(literal)) && !first.contains('=') && program;
    plain.then_some(words)
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
        assert_eq!(plain_words("true"), Some(vec!["true"]));
        assert_eq!(
            plain_words("echo -n hi there"),
            Some(vec!["echo", "-n", "hi", "there"])
        );
        for shell in [
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
