//! A resident gavel: `gavel serve --socket` keeps the audit database open
//! and the policy parsed, and `gavel hook <client>` hands its event to it
//! over a Unix socket beside the database (`<db>.sock`) instead of doing
//! the whole call in a fresh process. `gavel run` hands its call over the
//! same way, keeping the tool and the prompt in its own process (`run.rs`).
//!
//! The resident process runs the same hook code on the same inputs: the
//! hook sends its event text, the options it resolved (absolute paths) and
//! the environment the call path reads; the resident process answers only
//! when all of it is what it would use itself (its database, its gavel
//! version, the same layer variables), and says "do it yourself" otherwise,
//! before recording anything. A hook that finds no resident process, or is
//! told to do it itself, runs the call in its own process exactly as
//! before. One that loses the resident process mid-call gives the client's
//! fail-closed answer: the call may have been recorded, and must not be
//! recorded twice.
//!
//! Only a process of the same user is answered (`SO_PEERCRED`), and a hook
//! hands its event only to a process of its own user running the very
//! binary it runs (`/proc/PID/exe`): a look-alike server that would answer
//! "allow" to everything is never asked, and the hook decides itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::hook::{self, HookOptions};
use crate::clients::{Answer, Client};
use crate::session::{CHECKPOINT_EVERY_VAR, HookAsk, SessionError, Setup, StorePool};
use crate::store::Durability;

pub mod run;

/// The environment variables the call path reads after the options are
/// resolved (the layers, the principal, the checkpoint interval): the
/// resident process answers a hook only when its own values are the same.
const ENV: &[&str] = &[
    "HOME",
    "USER",
    "XDG_CONFIG_HOME",
    crate::layers::ADMIN_POLICY_VAR,
    "GAVEL_POLICY",
    CHECKPOINT_EVERY_VAR,
];

/// The largest request line a resident process reads (a hook's event with
/// the client's whole tool input in it).
const MAX_REQUEST: u64 = 256 << 20;

/// The socket of the resident process for the database `db`.
pub fn socket_for(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".sock");
    PathBuf::from(name)
}

/// What a caller sends: one JSON line, the options it resolved and its job.
#[derive(Serialize, Deserialize)]
struct Request {
    gavel: String,
    workspace: PathBuf,
    policy: Option<PathBuf>,
    shadow_policy: Vec<PathBuf>,
    db: PathBuf,
    durability_normal: bool,
    max_argument_bytes: u64,
    env: Vec<(String, Option<String>)>,
    job: Job,
}

/// The call a caller hands over.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Job {
    /// `gavel hook <client>`: its event, answered whole.
    Hook {
        client: String,
        ask: Option<String>,
        event: Option<String>,
        input: String,
    },
    /// `gavel run`: decided and recorded here, run and prompted there.
    Run(run::Call),
}

/// What the resident process says: the hook's answer; what a `run` caller
/// is to do next, or its outcome; or why the caller is to run the call
/// itself (said first, before anything is recorded, or not at all).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Reply {
    Answer {
        stdout: Option<String>,
        stderr: Option<String>,
        exit: u8,
    },
    Yourself {
        why: String,
    },
    /// Prompt for the ask of this call, on the caller's terminal.
    Ask {
        request: Box<crate::ToolRequest>,
        decision: Box<crate::Decision>,
    },
    /// Run this tool, in the caller's process.
    Execute {
        tool: String,
        arguments: serde_json::Value,
    },
    /// The call is over: its outcome as `run` prints it.
    Ran {
        outcome: serde_json::Value,
    },
    /// The call failed as `run` fails, with this one-line message.
    Error {
        message: String,
    },
}

fn env_now() -> Vec<(String, Option<String>)> {
    ENV.iter()
        .map(|name| {
            let value = std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
            ((*name).to_owned(), value)
        })
        .collect()
}

/// Hands the hook's event to the resident process of its database, if one
/// answers: `None` when the hook is to run the call itself. `pinned` is
/// the hook's options with the session's workspace pinned, as the call
/// itself would resolve them.
pub fn forward_hook(
    client: &dyn Client,
    pinned: &Setup,
    options: &HookOptions,
    text: &str,
) -> Option<Answer> {
    let job = Job::Hook {
        client: client.name().to_owned(),
        ask: options.ask.map(HookAsk::text),
        event: options.event.clone(),
        input: text.to_owned(),
    };
    let stream = send(pinned, job)?;
    let mut reply = String::new();
    let read = BufReader::new(stream).read_line(&mut reply);
    match (read, serde_json::from_str::<Reply>(&reply)) {
        (
            Ok(_),
            Ok(Reply::Answer {
                stdout,
                stderr,
                exit,
            }),
        ) => Some(Answer {
            stdout,
            stderr,
            exit,
        }),
        (Ok(_), Ok(Reply::Yourself { .. })) => None,
        // The resident process took the request and then failed or went
        // away: the call may be recorded, so it is not tried again here.
        _ => Some(hook::fail(
            client,
            options,
            text,
            "the resident gavel (serve --socket) did not answer",
        )),
    }
}

/// Sends `job` with `pinned`'s options to the resident process of its
/// database, when one of this user's running this very binary listens and
/// every path is absolute: the connection to read the answer from, else
/// `None` (nothing was recorded; the caller runs the call itself).
fn send(pinned: &Setup, job: Job) -> Option<UnixStream> {
    let db = pinned.db_path().ok()?;
    let socket = socket_for(&db);
    let owned = std::fs::symlink_metadata(&socket).ok()?;
    // SAFETY: getuid(2) cannot fail and touches no memory.
    if !owned.file_type().is_socket() || owned.uid() != unsafe { libc::getuid() } {
        return None;
    }
    // Relative paths would be read against this process's directory and
    // named so in the record: such a caller keeps the call to itself.
    let workspace = pinned.workspace.clone()?;
    let absolute = |path: &Path| path.is_absolute();
    if !absolute(&workspace)
        || !absolute(&db)
        || !pinned.policy.as_deref().is_none_or(absolute)
        || !pinned.shadow_policy.iter().all(|p| absolute(p))
    {
        return None;
    }
    let mut stream = UnixStream::connect(&socket).ok()?;
    if !trusted_listener(&stream) {
        return None;
    }
    let request = Request {
        gavel: env!("CARGO_PKG_VERSION").to_owned(),
        workspace,
        policy: pinned.policy.clone(),
        shadow_policy: pinned.shadow_policy.clone(),
        db,
        durability_normal: pinned.durability == Durability::Normal,
        max_argument_bytes: pinned.max_argument_bytes,
        env: env_now(),
        job,
    };
    let mut line = serde_json::to_vec(&request).ok()?;
    line.push(b'\n');
    // Nothing is recorded before the request is read whole: a failed send
    // leaves the call to this process.
    stream.write_all(&line).ok()?;
    Some(stream)
}

/// Set by SIGTERM, SIGINT or SIGHUP: the resident process stops accepting.
static STOP: AtomicBool = AtomicBool::new(false);

/// Hook calls being answered now.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// How long a stopping resident gavel lets the calls under way finish.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// How many calls this process answered.
static ANSWERED: AtomicU64 = AtomicU64::new(0);

extern "C" fn stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// `gavel serve --socket`: answers hooks until stopped, or until no hook
/// came for `idle`.
pub fn listen(setup: &Setup, socket: Option<PathBuf>, idle: Duration) -> Result<(), SessionError> {
    let io = |what: String| move |source| SessionError::Io { what, source };
    let db = std::path::absolute(setup.db_path()?).map_err(SessionError::CurrentDir)?;
    let socket = socket.unwrap_or_else(|| socket_for(&db));
    let mut setup = setup.clone();
    setup.db = Some(db.clone());
    let pool = Arc::new(StorePool::default());
    setup.kept = Some(Arc::clone(&pool));
    // The database is made (or migrated) now, so a bad one stops here.
    pool.keep(setup.open_store()?);
    crate::policy::memoize_parses();

    if UnixStream::connect(&socket).is_ok() {
        return Err(SessionError::Call(format!(
            "a resident gavel already answers on `{}`",
            socket.display()
        )));
    }
    match std::fs::symlink_metadata(&socket) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(&socket).map_err(io(
            format!("cannot remove the stale socket `{}`", socket.display()),
        ))?,
        Ok(_) => {
            return Err(SessionError::Call(format!(
                "`{}` exists and is not a socket",
                socket.display()
            )));
        }
        Err(_) => {}
    }
    let listener = UnixListener::bind(&socket)
        .map_err(io(format!("cannot listen on `{}`", socket.display())))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).map_err(io(
        format!("cannot restrict `{}` to its owner", socket.display()),
    ))?;
    listener
        .set_nonblocking(true)
        .map_err(io("cannot listen without blocking".to_owned()))?;
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            libc::signal(
                signal,
                stop as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
    eprintln!(
        "gavel: answering hooks and runs for `{}` on `{}`",
        db.display(),
        socket.display()
    );
    let setup = Arc::new(setup);
    let mut last = Instant::now();
    while !STOP.load(Ordering::Relaxed) && last.elapsed() < idle {
        // Idle means no hook came and none is being answered (one may wait
        // long for an approval).
        if IN_FLIGHT.load(Ordering::SeqCst) > 0 {
            last = Instant::now();
        }
        match listener.accept() {
            Ok((stream, _)) => {
                last = Instant::now();
                let setup = Arc::clone(&setup);
                IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    answer(&setup, stream);
                    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
                });
            }
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => wait_readable(&listener),
            Err(err) => return Err(io("cannot accept a hook's connection".to_owned())(err)),
        }
    }
    let _ = std::fs::remove_file(&socket);
    // The calls under way finish (a wait for an approval at most a while):
    // a hook cut off mid-call would answer fail-closed for a call that ran.
    let stopping = Instant::now();
    while IN_FLIGHT.load(Ordering::SeqCst) > 0 && stopping.elapsed() < STOP_GRACE {
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!("gavel: answered {} calls", ANSWERED.load(Ordering::Relaxed));
    Ok(())
}

/// Waits up to a quarter second for a connection (so a stop is seen soon).
fn wait_readable(listener: &UnixListener) {
    use std::os::fd::AsRawFd;
    let mut poll = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe {
        libc::poll(&mut poll, 1, 250);
    }
}

/// The credentials of the process at the other end of `stream` (for a
/// connecting hook, of the process that listens).
fn peer(stream: &UnixStream) -> Option<libc::ucred> {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero ucred is valid for getsockopt to fill; the length
    // says its size.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid socket, a buffer of `len` bytes.
    let ok = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    } == 0;
    ok.then_some(cred)
}

/// Whether the process listening at the other end of `stream` is this
/// user's and runs this very gavel binary: a server anyone else wrote
/// (one that would answer "allow" to everything) is never asked.
fn trusted_listener(stream: &UnixStream) -> bool {
    let Some(cred) = peer(stream) else {
        return false;
    };
    let same =
        |a: &std::fs::Metadata, b: &std::fs::Metadata| a.dev() == b.dev() && a.ino() == b.ino();
    // SAFETY: getuid(2) cannot fail and touches no memory.
    cred.uid == unsafe { libc::getuid() }
        && match (
            std::fs::metadata(format!("/proc/{}/exe", cred.pid)),
            std::env::current_exe().and_then(std::fs::metadata),
        ) {
            (Ok(theirs), Ok(ours)) => same(&theirs, &ours),
            _ => false,
        }
}

/// Answers one caller's connection.
fn answer(setup: &Setup, stream: UnixStream) {
    // SAFETY: getuid(2) cannot fail and touches no memory.
    if peer(&stream).map(|cred| cred.uid) != Some(unsafe { libc::getuid() }) {
        return;
    }
    let mut line = String::new();
    // The caller sends nothing more until it is asked, so this reader holds
    // the request line alone.
    if BufReader::new((&stream).take(MAX_REQUEST))
        .read_line(&mut line)
        .is_err()
    {
        return;
    }
    let reply = match serde_json::from_str::<Request>(&line) {
        Ok(request) => match mine(setup, &request) {
            Ok(call) => match request.job {
                Job::Hook {
                    client,
                    ask,
                    event,
                    input,
                } => match ask.as_deref().map(HookAsk::parse).transpose() {
                    Ok(ask) => run_hook(&call, &client, HookOptions { ask, event }, &input),
                    Err(why) => Reply::Yourself { why },
                },
                Job::Run(job) => run::answer(&call, job, &stream),
            },
            Err(why) => Reply::Yourself { why },
        },
        Err(err) => Reply::Yourself {
            why: format!("not a request: {err}"),
        },
    };
    if !matches!(reply, Reply::Yourself { .. }) {
        ANSWERED.fetch_add(1, Ordering::Relaxed);
    }
    let _ = say(&stream, &reply);
}

/// Writes `reply` as one line.
fn say(stream: &UnixStream, reply: &Reply) -> Option<()> {
    let mut line = serde_json::to_vec(reply).ok()?;
    line.push(b'\n');
    let mut stream = stream;
    stream.write_all(&line).ok()
}

/// The options of `request` as this process runs them, or why it does not.
fn mine(setup: &Setup, request: &Request) -> Result<Setup, String> {
    if request.gavel != env!("CARGO_PKG_VERSION") {
        return Err(format!("the caller is gavel {}", request.gavel));
    }
    if Some(&request.db) != setup.db.as_ref() {
        return Err(format!(
            "`{}` is not this process's database",
            request.db.display()
        ));
    }
    if request.env != env_now() {
        return Err("the caller's environment differs".to_owned());
    }
    // The kept stores commit with this process's durability.
    if request.durability_normal != (setup.durability == Durability::Normal) {
        return Err("the caller asks for another durability".to_owned());
    }
    let mut call = setup.clone();
    call.workspace = Some(request.workspace.clone());
    call.policy.clone_from(&request.policy);
    call.shadow_policy.clone_from(&request.shadow_policy);
    call.max_argument_bytes = request.max_argument_bytes;
    Ok(call)
}

fn run_hook(setup: &Setup, client: &str, options: HookOptions, input: &str) -> Reply {
    let Some(client) = crate::clients::by_name(client) else {
        return Reply::Yourself {
            why: format!("unknown client `{client}`"),
        };
    };
    let answered = catch_unwind(AssertUnwindSafe(|| {
        hook::handle(client, setup, &options, input)
    }));
    let answer = match answered {
        Ok(Ok(answer)) => answer,
        Ok(Err(err)) => hook::fail(client, &options, input, &hook::one_line(&err)),
        Err(_) => hook::fail(client, &options, input, "internal error"),
    };
    Reply::Answer {
        stdout: answer.stdout,
        stderr: answer.stderr,
        exit: answer.exit,
    }
}
