//! `gavel-exec`: what `gavel exec` does, in a binary of its own.
//!
//! A hook rewrites every allowed command to run under `gavel exec`, so
//! its start is paid once per command the agent runs. gavel's own binary
//! is large (every program model, tree-sitter, the report, the central
//! store's client) and starting it costs mostly the dynamic loader's
//! relocations; this one links only the record's reader and the sandbox.
//! It takes exactly the line `src/sandbox/line.rs` writes:
//!
//! ```text
//! gavel-exec exec --db DB --call-id ID [--verbose] -- COMMAND
//! ```
//!
//! and answers as `gavel exec` does: it becomes the command (so its exit
//! status is the command's), or exits 125 (refused) or 124
//! (unenforceable) with one line on stderr. Anything else (help, other
//! commands) is `gavel`'s.
//!
//! It has no Rust runtime start (`no_main`): that start installs a
//! stack-overflow handler (an alternate signal stack, mapped and guarded)
//! and finds the main thread's stack by parsing `/proc/self/maps`, tens of
//! microseconds of every contained command, for a process that soon
//! becomes another program. The arguments are the C library's, which the
//! standard library reads all the same.

// Not in the unit tests' build, whose harness brings its own `main`.
#![cfg_attr(not(test), no_main)]

use std::ffi::OsString;
use std::path::PathBuf;

/// `exec --db DB --call-id ID [--verbose] [-- COMMAND]`, read.
struct Line {
    db: PathBuf,
    call_id: String,
    verbose: bool,
    command: Option<String>,
}

fn read(words: &[OsString]) -> Result<Line, String> {
    let mut words = words.iter();
    if words.next().and_then(|w| w.to_str()) != Some("exec") {
        return Err("usage: gavel-exec exec --db DB --call-id ID [--verbose] -- COMMAND".into());
    }
    let (mut db, mut call_id, mut verbose, mut command) = (None, None, false, None);
    while let Some(word) = words.next() {
        match word.to_str() {
            Some("--db") => db = words.next().map(PathBuf::from),
            Some("--call-id") => call_id = words.next().and_then(|w| w.to_str()).map(str::to_owned),
            Some("--verbose") => verbose = true,
            Some("--") => {
                let rest: Vec<&OsString> = words.by_ref().collect();
                match rest.as_slice() {
                    [] => {}
                    [one] => {
                        command = Some(one.to_str().ok_or("the command is not UTF-8")?.to_owned());
                    }
                    _ => return Err("one command after `--`".into()),
                }
            }
            _ => return Err(format!("unexpected argument `{}`", word.to_string_lossy())),
        }
    }
    Ok(Line {
        db: db.ok_or("--db DB is needed")?,
        call_id: call_id.ok_or("--call-id ID is needed")?,
        verbose,
        command,
    })
}

/// The C library's `main`: no Rust runtime start (see above).
#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    let words: Vec<OsString> = std::env::args_os().skip(1).collect();
    let line = match read(&words) {
        Ok(line) => line,
        Err(why) => {
            eprintln!("gavel-exec: {why}");
            return 2;
        }
    };
    // Returns only when the command did not run.
    let err = gavel::sandbox::exec::exec_recorded(
        &line.db,
        &line.call_id,
        line.command.as_deref(),
        line.verbose,
    );
    eprintln!("{}", err.line());
    err.status().map_or(2, libc::c_int::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &[&str]) -> Vec<OsString> {
        line.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_line_a_hook_writes_is_read_and_nothing_else() {
        let line = read(&words(&[
            "exec",
            "--db",
            "/d/audit.db",
            "--call-id",
            "c1",
            "--verbose",
            "--",
            "cat a.txt",
        ]))
        .unwrap();
        assert_eq!(line.db, PathBuf::from("/d/audit.db"));
        assert_eq!((line.call_id.as_str(), line.verbose), ("c1", true));
        assert_eq!(line.command.as_deref(), Some("cat a.txt"));
        let bare = read(&words(&["exec", "--db", "d", "--call-id", "c"])).unwrap();
        assert_eq!((bare.command, bare.verbose), (None, false));
        for wrong in [
            &["run", "--db", "d", "--call-id", "c"][..],
            &["exec", "--call-id", "c"],
            &["exec", "--db", "d"],
            &["exec", "--db", "d", "--call-id", "c", "--", "a", "b"],
            &["exec", "--db", "d", "--call-id", "c", "--force"],
        ] {
            assert!(read(&words(wrong)).is_err(), "{wrong:?}");
        }
    }
}
