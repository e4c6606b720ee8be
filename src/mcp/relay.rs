//! The proxy's I/O: starts the server, reads the client's lines and the
//! server's lines on two threads, and hands each, in arrival order, to the
//! [`Session`] on this one, which alone writes the record and both pipes.
//! A forwarded call that outlives its timeout is failed; the server's end
//! fails what is still open and ends the session; the client's end closes
//! the server's input, waits briefly for what the server still answers,
//! then kills it.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::session::{End, Out, Session};

/// How long the server may take to finish after the client is gone.
const GRACE: Duration = Duration::from_secs(2);

/// Why the proxy could not run.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("no server command was given")]
    NoCommand,
    #[error("cannot start the MCP server `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("cannot write to the client: {0}")]
    Client(std::io::Error),
}

/// How the session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    pub by: End,
    /// The server's exit code, when it exited with one.
    pub server_status: Option<i32>,
}

enum Line {
    Client(Vec<u8>),
    ClientEof,
    Server(Vec<u8>),
    ServerEof,
}

/// Runs `command` as the server of `session`, with `client_in` and
/// `client_out` as the client's side, until one side is gone.
pub fn run(
    session: &mut Session,
    command: &[String],
    client_in: impl Read + Send + 'static,
    client_out: &mut dyn Write,
    notes: &mut dyn Write,
) -> Result<Ended, RelayError> {
    let (program, args) = command.split_first().ok_or(RelayError::NoCommand)?;
    let mut child = spawn(program, args).map_err(|source| RelayError::Spawn {
        command: command.join(" "),
        source,
    })?;
    let (tx, rx) = mpsc::channel();
    let server_in = child.stdin.take();
    if let Some(stdout) = child.stdout.take() {
        read_lines(stdout, tx.clone(), Line::Server, Line::ServerEof);
    }
    read_lines(client_in, tx, Line::Client, Line::ClientEof);
    let mut pipes = Pipes {
        server_in,
        client_out,
        client_open: true,
        notes,
    };
    let by = pump(session, &rx, &mut pipes);
    let out = session.end(by);
    let sent = pipes.send(out);
    drop(pipes.server_in.take());
    let server_status = finish(&mut child, by);
    match sent {
        Ok(()) | Err(RelayError::Client(_)) => Ok(Ended { by, server_status }),
        Err(err) => Err(err),
    }
}

/// Starts the server with piped stdin and stdout; its stderr is gavel's.
fn spawn(program: &str, args: &[String]) -> std::io::Result<Child> {
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl(2) is async-signal-safe and touches no memory of the
        // parent; it makes the kernel end the server if gavel dies.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
    }
    command.spawn()
}

/// Reads `input` line by line on its own thread, sending each line (its
/// end of line taken off) as `line` makes it, then `eof`.
pub(super) fn read_lines<E: Send + 'static>(
    input: impl Read + Send + 'static,
    tx: Sender<E>,
    line: fn(Vec<u8>) -> E,
    eof: E,
) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(input);
        loop {
            let mut bytes = Vec::new();
            match reader.read_until(b'\n', &mut bytes) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                        bytes.pop();
                    }
                    if tx.send(line(bytes)).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = tx.send(eof);
    });
}

/// The next message of `rx`, waiting no later than `deadline` when there
/// is one: `Ok(None)` when the deadline came first, `Err` when every
/// sender is gone.
pub(super) fn recv_until<T>(rx: &Receiver<T>, deadline: Option<Instant>) -> Result<Option<T>, ()> {
    match deadline {
        Some(deadline) => match rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(message) => Ok(Some(message)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(()),
        },
        None => rx.recv().map(Some).map_err(|_| ()),
    }
}

/// Handles lines until one side is gone. When the client's input ends,
/// the server's input is closed and what the server still sends is relayed
/// (the client may still read) until it exits or [`GRACE`] is over.
fn pump(session: &mut Session, rx: &Receiver<Line>, pipes: &mut Pipes<'_>) -> End {
    let mut grace: Option<Instant> = None;
    loop {
        let deadline = match (session.next_deadline(), grace) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Ok(line) = recv_until(rx, deadline) else {
            return End::ServerGone;
        };
        let out = match line {
            None if grace.is_some_and(|g| g <= Instant::now()) => return End::ClientGone,
            None => session.expire(Instant::now()),
            Some(Line::Client(bytes)) => match String::from_utf8(bytes) {
                Ok(text) => session.from_client(&text, Instant::now()),
                // Not UTF-8, so not JSON: answered as a parse error.
                Err(_) => session.from_client("\u{0}", Instant::now()),
            },
            Some(Line::Server(bytes)) => session.from_server(&String::from_utf8_lossy(&bytes)),
            Some(Line::ClientEof) => {
                drop(pipes.server_in.take());
                grace = Some(Instant::now() + GRACE);
                Vec::new()
            }
            Some(Line::ServerEof) if grace.is_some() => return End::ClientGone,
            Some(Line::ServerEof) => return End::ServerGone,
        };
        if let Err(RelayError::Client(_)) = pipes.send(out) {
            // A client that no longer reads is gone.
            if grace.is_none() {
                drop(pipes.server_in.take());
                grace = Some(Instant::now() + GRACE);
            }
        }
    }
}

/// Where lines go.
struct Pipes<'a> {
    server_in: Option<ChildStdin>,
    client_out: &'a mut dyn Write,
    /// False once a write to the client failed: later lines are dropped.
    client_open: bool,
    notes: &'a mut dyn Write,
}

impl Pipes<'_> {
    /// Writes each line where it goes. A server that no longer reads is
    /// noticed when its output ends; a client that no longer reads is an error.
    fn send(&mut self, out: Vec<Out>) -> Result<(), RelayError> {
        let mut result = Ok(());
        for out in out {
            match out {
                Out::Client(line) if self.client_open => {
                    let written =
                        writeln!(self.client_out, "{line}").and_then(|()| self.client_out.flush());
                    if let Err(err) = written {
                        self.client_open = false;
                        result = Err(RelayError::Client(err));
                    }
                }
                Out::Client(_) => {}
                Out::Server(line) => {
                    let written = self
                        .server_in
                        .as_mut()
                        .map(|pipe| writeln!(pipe, "{line}").and_then(|()| pipe.flush()));
                    if let Some(Err(err)) = written {
                        let _ =
                            writeln!(self.notes, "gavel mcp: cannot write to the server: {err}");
                        self.server_in = None;
                    }
                }
                Out::Note(note) => {
                    let _ = writeln!(self.notes, "gavel mcp: {note}");
                }
            }
        }
        result
    }
}

/// Waits for the server to exit (killing it when the client is gone and it
/// has not exited within the grace period); its exit code.
fn finish(child: &mut Child, by: End) -> Option<i32> {
    use wait_timeout::ChildExt;
    let wait = match by {
        End::ClientGone => GRACE,
        End::ServerGone => Duration::from_secs(5),
    };
    match child.wait_timeout(wait) {
        Ok(Some(status)) => status.code(),
        _ => {
            let _ = child.kill();
            child.wait().ok().and_then(|s| s.code())
        }
    }
}
