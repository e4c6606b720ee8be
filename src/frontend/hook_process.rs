//! The hook as a process (`gavel hook <client>`): one event read from
//! stdin, handed to a resident gavel when one answers for the database
//! (`super::resident`), else handled here (`super::hook`); the answer on
//! stdout and the exit code. Whatever goes wrong, a panic or a fatal
//! signal included, ends in the client's fail-closed answer.

use std::io::{Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

use super::hook::{HookOptions, fail, handle_event, one_line, parse_event, pin_workspace};
use super::resident;
use crate::clients::Client;
use crate::session::{SessionError, Setup};

/// Answers the hook event on stdin on stdout, as `client`'s hook under
/// `setup`: whatever happens, the client gets an answer it reads as
/// recorded, or its fail-closed answer. Returns the exit code.
pub fn answer_stdin(client: &dyn Client, setup: &Setup, options: &HookOptions) -> u8 {
    fail_closed_on_fatal_signals(client);
    // A panic must not print its multi-line report nor exit with 101, which
    // a client would treat as "let the call run".
    std::panic::set_hook(Box::new(|_| {}));
    let mut text = String::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|source| SessionError::Io {
                what: "cannot read the hook input from stdin".to_owned(),
                source,
            })?;
        let event = parse_event(client, options, &text)?;
        FATAL_EXIT.store(
            i32::from(client.fail_closed(Some(&event.context.event), "").exit),
            Ordering::Relaxed,
        );
        let setup = pin_workspace(client, setup, &event.context);
        match resident::forward_hook(client, &setup, options, &text) {
            Some(answer) => Ok(answer),
            None => handle_event(client, &setup, options, event),
        }
    }));
    let _ = std::panic::take_hook();
    let answer = match outcome {
        Ok(Ok(answer)) => answer,
        Ok(Err(err)) => fail(client, options, &text, &one_line(&err)),
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let message = format!("internal error: {}", detail.replace('\n', " "));
            fail(client, options, &text, &message)
        }
    };
    let printed = match &answer.stdout {
        Some(line) => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}").and_then(|()| out.flush())
        }
        None => Ok(()),
    };
    if let Some(line) = &answer.stderr {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    if printed.is_err() && answer.exit == 0 {
        let failed = fail(client, options, &text, "cannot write the hook answer");
        let _ = writeln!(std::io::stderr(), "{}", failed.stderr.unwrap_or_default());
        return failed.exit;
    }
    answer.exit
}

/// The exit code of a fatal signal, and what to print on stdout then.
static FATAL_EXIT: AtomicI32 = AtomicI32::new(2);
static FATAL_STDOUT: OnceLock<Vec<u8>> = OnceLock::new();

/// Makes a fatal signal (a crash in C code, an abort, a kill on timeout)
/// end in the client's fail-closed answer rather than a death by signal,
/// which a client could take as "let the call run".
fn fail_closed_on_fatal_signals(client: &dyn Client) {
    let answer = client.fail_closed(None, "internal error: fatal signal");
    let mut stdout = answer.stdout.unwrap_or_default().into_bytes();
    if !stdout.is_empty() {
        stdout.push(b'\n');
    }
    let _ = FATAL_STDOUT.set(stdout);
    FATAL_EXIT.store(i32::from(answer.exit), Ordering::Relaxed);
    extern "C" fn fatal(_: libc::c_int) {
        const MESSAGE: &[u8] = b"gavel: internal error: fatal signal\n";
        let code = FATAL_EXIT.load(Ordering::Relaxed);
        // SAFETY: an atomic load, reading a buffer set before the handler was
        // installed, write(2) and _exit(2) are async-signal-safe.
        unsafe {
            if let Some(out) = FATAL_STDOUT.get() {
                libc::write(1, out.as_ptr().cast(), out.len());
            }
            libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
            libc::_exit(code);
        }
    }
    for signal in [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGABRT,
    ] {
        // SAFETY: a zeroed sigaction with a plain handler; SA_ONSTACK uses the
        // alternate stack Rust's runtime sets up, so a stack overflow lands here too.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = fatal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}
