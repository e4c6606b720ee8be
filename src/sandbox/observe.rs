//! Refused attempts as evidence. A contained command's writes, creations,
//! removals, renames, mode changes, executions and (offline) sockets are
//! handed to an observer by a seccomp filter with a listener
//! ([`super::seccomp::Filter::sandbox_observed`]); the observer judges each
//! against the sandbox and keeps those the sandbox refuses, then lets the
//! kernel decide (the file calls) or refuses itself (`socket`).
//! Enforcement stays the kernel's: the observer only watches, so a path it
//! misreads costs a record, never an escape. If the observer is gone, the
//! observed calls fail (`ENOSYS`): closed, not open.
//!
//! The observer is a thread of the gavel that spawns and waits for the
//! command ([`Observer::start`]: `run`, `serve`), or, for the launcher that
//! becomes its command by executing it in place, a process of its own
//! ([`start_process`]) that hands each refused attempt to a [`Witness`]
//! before the kernel answers the call that made it.

use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};

use super::raw;

/// At most this many refused attempts are kept for one call; the rest are
/// counted.
pub const KEPT: usize = 64;

/// One attempt the sandbox refused.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Attempt {
    /// `write`, `create`, `remove`, `rename`, `chmod`, `chown`, `utime`,
    /// `exec` or `network`.
    pub operation: String,
    /// The path (absolute, as the command named it), or for `network` the
    /// socket's family.
    pub target: String,
    /// The program that tried (`/proc/PID/exe`).
    pub program: String,
}

/// What the observer saw: the refused attempts kept, and how many more.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    pub attempts: Vec<Attempt>,
    pub more: u64,
}

impl Observed {
    /// Counts `attempt`; whether it is kept (new, and fewer than [`KEPT`]
    /// kept before).
    fn count(&mut self, attempt: Attempt) -> bool {
        if self.attempts.contains(&attempt) {
            false
        } else if self.attempts.len() < KEPT {
            self.attempts.push(attempt);
            true
        } else {
            self.more += 1;
            false
        }
    }
}

/// Where a process observer ([`start_process`]) puts what it sees, as it
/// sees it.
pub trait Witness {
    /// An attempt kept, by process `pid`, which waits in the call until
    /// this returns.
    fn refused(&mut self, attempt: &Attempt, pid: u32);
    /// Once the command is over: how many attempts beyond those kept.
    fn over(&mut self, more: u64);
}

/// What the sandbox permits, to judge attempts against.
#[derive(Debug, Clone)]
pub struct Judge {
    write: Vec<PathBuf>,
    exec: Vec<PathBuf>,
    /// Never writable, or hidden: refused beneath, whatever `write` says.
    closed: Vec<PathBuf>,
}

impl Judge {
    /// A command that may write beneath `write` (but nothing beneath
    /// `closed`) and execute beneath `exec`.
    pub fn new(write: &[PathBuf], exec: &[PathBuf], closed: &[PathBuf]) -> Self {
        Self {
            write: write.to_vec(),
            exec: exec.to_vec(),
            closed: closed.to_vec(),
        }
    }
}

/// Room for one descriptor's control message (`CMSG_SPACE` of an int is
/// 24 bytes on 64-bit Linux; 64 is ample), aligned as a `cmsghdr`.
#[repr(C, align(8))]
struct Control([u8; 64]);

/// A message of `iov` with `control` as its control buffer (whole).
fn message(iov: &mut libc::iovec, control: &mut Control) -> libc::msghdr {
    // SAFETY: a zeroed msghdr is a valid empty one.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = control.0.len() as _;
    msg
}

/// Sends the descriptor `fd` on `sock`, with one byte. Async-signal-safe.
fn send_fd(sock: RawFd, fd: RawFd) -> std::io::Result<()> {
    let byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_ptr() as *mut libc::c_void,
        iov_len: 1,
    };
    let mut control = Control([0; 64]);
    // SAFETY: msg points at iov and control, alive for the call; the
    // CMSG macros stay inside control.
    unsafe {
        let mut msg = message(&mut iov, &mut control);
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        if libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The child's end: where it sends its listener.
#[derive(Debug)]
pub struct ChildEnd {
    sock: OwnedFd,
    /// Whether the observer is [`start_process`]'s, which says when it has
    /// spent the ticket.
    awaits_observer: bool,
}

impl ChildEnd {
    /// Sends the listener `fd` to the observer, then closes it here; with
    /// [`start_process`]'s observer, waits until it has spent the ticket
    /// (at once, as a rule: it did so while this process set itself up).
    /// Errs when the observer is gone. Async-signal-safe (a forked child
    /// calls it before `execve`).
    pub fn send(&self, fd: RawFd) -> std::io::Result<()> {
        let sent = send_fd(self.sock.as_raw_fd(), fd);
        // SAFETY: the listener is this process's to close, sent or not.
        unsafe { libc::close(fd) };
        sent?;
        if self.awaits_observer {
            let mut byte = 0u8;
            loop {
                // SAFETY: one byte into `byte`.
                let n =
                    unsafe { libc::read(self.sock.as_raw_fd(), (&mut byte as *mut u8).cast(), 1) };
                match n {
                    1 => break,
                    -1 if std::io::Error::last_os_error().kind()
                        == std::io::ErrorKind::Interrupted => {}
                    _ => {
                        return Err(std::io::Error::other(
                            "the observer ended before the command started",
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The observer of one contained command.
#[derive(Debug)]
pub struct Observer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Observed>>,
}

impl Observer {
    /// Starts the observer of a command judged by `judge`, in a thread,
    /// before the command is spawned: its first `execve` already waits for
    /// the observer.
    pub fn start(judge: Judge) -> std::io::Result<(Self, ChildEnd)> {
        let (ours, theirs) = socket_pair()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("gavel-observer".into())
            .spawn(move || watch(&ours, &judge, &Until::Flag(&stopped), &mut ()))?;
        Ok((
            Self {
                stop,
                thread: Some(thread),
            },
            ChildEnd {
                sock: theirs,
                awaits_observer: false,
            },
        ))
    }

    /// Once the command is over: what was refused.
    pub fn finish(mut self) -> Observed {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Starts the observer of a command judged by `judge` in a process of its
/// own, for this process to become the command: to execute `launch`'s
/// program in place, with [`execve_passing`]. The observer removes
/// `launch`'s ticket at once; [`ChildEnd::send`] waits for that, so the
/// ticket is gone before the command starts. Once this process has
/// executed the program (or exited), the observer watches until the
/// command is over, hands `witness` each attempt it keeps before the
/// kernel answers the call that made it (so the refusal is on record
/// before the command learns of it), then how many more there were, runs
/// `end`, and exits.
///
/// The observer shares this process's memory until this process executes
/// the program: a clone of it with no copy to make (a fork's copy and its
/// copy-on-write faults cost a command most of a fifth of a millisecond),
/// that sleeps until the kernel, as it replaces this process's memory,
/// leaves the old one to the observer alone. This process's `wait` does
/// not see it (it sends no signal when it ends): a command that waits for
/// all of its children never waits for it. Before the command starts, it
/// lets go of every descriptor of this process but the two it needs (its
/// standard input, output and error are `/dev/null`), so whoever reads
/// the command's output to its end never waits for it, however late the
/// observer is scheduled; and it ignores the terminal's signals: it ends
/// with the command. Call it where this process has one thread and holds
/// no lock.
pub fn start_process(
    judge: Judge,
    mut witness: impl Witness + 'static,
    launch: Launch,
    end: impl FnOnce() + 'static,
) -> std::io::Result<ChildEnd> {
    let (ours, theirs) = socket_pair()?;
    // SAFETY: pidfd_open of this process; the descriptor is owned here.
    let command = unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        OwnedFd::from_raw_fd(fd as RawFd)
    };
    let ticket = match launch.ticket {
        Some(path) => Some(
            CString::new(path.into_os_string().into_vec())
                .map_err(|_| std::io::Error::other("a ticket's path holds a NUL byte"))?,
        ),
        None => None,
    };
    let (sock, pidfd) = (ours.as_raw_fd(), command.as_raw_fd());
    let program = launch.program;
    let body = move || {
        // SAFETY: names this process.
        unsafe { libc::prctl(libc::PR_SET_NAME, c"gavel-observer".as_ptr()) };
        let until = Until::Exit(command.as_raw_fd());
        let mut observed = watch(&ours, &judge, &until, &mut witness);
        // The launcher's own `execve`, which the observer is not told of
        // ([`execve_passing`]): when the kernel refused it, an attempt too
        // (the launcher refuses what it knows the sandbox would refuse
        // before it gets here: [`Judge::refuses_exec`]).
        if LAUNCH_ERRNO.load(Ordering::Acquire) == libc::EACCES
            && let Some(attempt) = judge.refuses_exec(&program)
            && observed.count(attempt)
        {
            witness.refused(&observed.attempts[observed.attempts.len() - 1], 0);
        }
        witness.over(observed.more);
        end();
    };
    start_beside(Box::new(Start {
        ticket,
        sock,
        pidfd,
        body: Box::new(body),
    }))?;
    // This process's copy of the observer's end, closed: should the
    // observer end before it has spent the ticket, the launcher's wait
    // for it ends too ([`ChildEnd::send`]).
    // SAFETY: this process's descriptor; the observer holds its own.
    unsafe { libc::close(sock) };
    Ok(ChildEnd {
        sock: theirs,
        awaits_observer: true,
    })
}

/// What a launcher hands its observer besides the judge
/// ([`start_process`]).
#[derive(Debug)]
pub struct Launch {
    /// The program the launcher executes.
    pub program: PathBuf,
    /// Its spent ticket, removed before the program starts.
    pub ticket: Option<PathBuf>,
}

/// The launcher's `clear_child_tid` (`set_tid_address(2)`) while it shares
/// its memory with its observer: 1 until the kernel zeroes it, and wakes
/// the observer, as the launcher executes the command or exits.
static LAUNCHER_HERE: AtomicU32 = AtomicU32::new(1);

/// Why the launcher's own `execve` of the command failed (`errno`), when
/// it did: its observer reads it once the launcher has exited.
static LAUNCH_ERRNO: AtomicI32 = AtomicI32::new(0);

/// What an observer started by [`start_process`] is given.
struct Start {
    ticket: Option<CString>,
    /// The observer's end of the socket.
    sock: RawFd,
    /// The launcher's pidfd: the command, once it executes.
    pidfd: RawFd,
    /// The observer's work once it has the memory to itself.
    body: Box<dyn FnOnce()>,
}

/// The secret with which the filter lets the launcher's own `execve`
/// through unobserved (in its fourth and fifth arguments, which `execve`
/// ignores), drawn for each launch: the program the launcher executes
/// needs no observer to start, and no command can pass it: it is in the
/// kernel's copy of the filter and in the memory the `execve` leaves to
/// the observer, which a contained command cannot read (Landlock keeps it
/// from tracing a process outside its sandbox, the filter refuses
/// `ptrace` and `process_vm_readv`).
pub fn pass() -> [u32; 4] {
    let bytes: [u8; 16] = super::raw::random();
    std::array::from_fn(|i| u32::from_ne_bytes([0, 1, 2, 3].map(|b| bytes[4 * i + b])))
}

/// `execve(program, argv, envp)` with `pass` ([`pass`]) in the arguments
/// `execve` ignores; returns only why it failed, which the observer
/// started by [`start_process`] reads once this process has exited.
///
/// # Safety
/// `program` is NUL-terminated, `argv` and `envp` NULL-ended arrays of
/// NUL-terminated strings, all alive for the call.
pub unsafe fn execve_passing(
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    pass: [u32; 4],
) -> std::io::Error {
    let high = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    // SAFETY: the caller's.
    unsafe {
        libc::syscall(
            libc::SYS_execve,
            program,
            argv,
            envp,
            high(pass[0], pass[1]),
            high(pass[2], pass[3]),
        );
    }
    let err = std::io::Error::last_os_error();
    LAUNCH_ERRNO.store(err.raw_os_error().unwrap_or(0), Ordering::Release);
    err
}

/// The stack an observer started by [`start_process`] runs on (untouched
/// pages cost nothing).
const STACK: usize = 8 << 20;

/// Starts `start`'s observer as a clone of this process sharing its
/// memory ([`start_process`]), on a stack of its own with a guard page
/// below it.
fn start_beside(start: Box<Start>) -> std::io::Result<()> {
    // SAFETY: a fresh private mapping, its lowest page made inaccessible;
    // the clone runs `observer` on the rest, with `start`, which this
    // process leaves to it (it never touches it again).
    unsafe {
        let base = libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).unwrap_or(4096);
        libc::mprotect(base, page, libc::PROT_NONE);
        LAUNCHER_HERE.store(1, Ordering::Release);
        libc::syscall(libc::SYS_set_tid_address, LAUNCHER_HERE.as_ptr());
        let arg = Box::into_raw(start);
        let top = base.cast::<u8>().add(STACK).cast();
        // CLONE_VM and no exit signal: memory shared, unseen by `wait`.
        if libc::clone(observer, top, libc::CLONE_VM, arg.cast()) < 0 {
            let err = std::io::Error::last_os_error();
            drop(Box::from_raw(arg));
            libc::munmap(base, STACK);
            return Err(err);
        }
    }
    Ok(())
}

/// An observer's first steps, beside the launcher ([`start_beside`]).
extern "C" fn observer(arg: *mut libc::c_void) -> libc::c_int {
    // Until the launcher has left this memory, it is the launcher's too:
    // raw system calls only (the C library's write the launcher's
    // `errno`), and nothing written but on this stack.
    // SAFETY: `arg` is the `Start` this observer was given, alive and
    // unchanged until it takes it below.
    let start = unsafe { &*arg.cast::<Start>() };
    for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM] {
        raw::ignore(signal);
    }
    if let Some(ticket) = &start.ticket {
        raw::unlink(ticket);
    }
    // Nothing of the command's held (its pipes, the child's end of the
    // socket) before it starts.
    raw::keep_only([start.sock, start.pidfd]);
    raw::write(start.sock, b"s");
    while LAUNCHER_HERE.load(Ordering::Acquire) != 0 {
        raw::futex_wait(&LAUNCHER_HERE, 1);
    }
    // The launcher is the command now (or gone): this memory is the
    // observer's alone, as a fork's copy would be.
    // SAFETY: the `Start` leaked for this observer, taken once.
    let start = unsafe { Box::from_raw(arg.cast::<Start>()) };
    (start.body)();
    // SAFETY: ends the observer without unwinding into the clone's entry.
    unsafe { libc::_exit(0) }
}

/// A connected pair of datagram sockets: the observer's end, the child's.
fn socket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: socketpair gave us both, owned from here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A thread observer's witness: what it keeps, it returns when joined.
impl Witness for () {
    fn refused(&mut self, _: &Attempt, _: u32) {}
    fn over(&mut self, _: u64) {}
}

/// When an observer stops.
enum Until<'a> {
    /// When the flag is set (the command was waited for).
    Flag(&'a AtomicBool),
    /// When the process this pidfd names has exited.
    Exit(RawFd),
}

/// Waits up to `ms` for `fd` to be readable or for `until`; whether `fd` is
/// readable, and whether it hung up or the observer is to stop.
fn wait(fd: RawFd, until: &Until, ms: i32) -> (bool, bool) {
    let end = match until {
        Until::Exit(pidfd) => *pidfd,
        Until::Flag(_) => -1,
    };
    let mut polls = [fd, end].map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    // SAFETY: two pollfds (a negative fd is skipped), alive for the call.
    let n = unsafe { libc::poll(polls.as_mut_ptr(), 2, ms) };
    let over = match until {
        Until::Flag(stop) => stop.load(Ordering::Relaxed),
        Until::Exit(_) => polls[1].revents != 0,
    };
    if n < 0 {
        return (false, over);
    }
    let revents = polls[0].revents;
    (
        revents & libc::POLLIN != 0,
        over || revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0,
    )
}

/// Receives the listener the child sends.
fn receive(sock: &OwnedFd, until: &Until) -> Option<OwnedFd> {
    loop {
        let (ready, done) = wait(sock.as_raw_fd(), until, 50);
        if ready {
            break;
        }
        if done {
            return None;
        }
    }
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = Control([0; 64]);
    // SAFETY: as in `send_fd`; the descriptor received is owned here.
    unsafe {
        let mut msg = message(&mut iov, &mut control);
        if libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) <= 0 {
            return None;
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return None;
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
        Some(OwnedFd::from_raw_fd(fd))
    }
}

/// The observer's loop: every notification judged and answered (the
/// `witness` told of each attempt kept first), until every process of the
/// command is gone or the command is over.
fn watch(sock: &OwnedFd, judge: &Judge, until: &Until, witness: &mut dyn Witness) -> Observed {
    let mut observed = Observed::default();
    // Made on the first attempt: a command that tries nothing costs its
    // observer no `realpath`.
    let settled = std::cell::OnceCell::new();
    let Some(listener) = receive(sock, until) else {
        return observed;
    };
    let fd = listener.as_raw_fd();
    loop {
        let (ready, done) = wait(fd, until, 50);
        if !ready {
            if done {
                return observed;
            }
            continue;
        }
        // SAFETY: the kernel wants a zeroed notification to fill.
        let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: notif is the struct this ioctl fills.
        if unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif) } != 0 {
            // The process died before it was received (ENOENT), or an
            // interruption: carry on.
            continue;
        }
        let seen = settled.get_or_init(|| judge.settled()).judge(&notif, fd);
        let mut resp = libc::seccomp_notif_resp {
            id: notif.id,
            val: 0,
            error: 0,
            flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        };
        if notif.data.nr as libc::c_long == libc::SYS_socket {
            // Offline: refused here, not by the kernel.
            resp.error = -libc::EACCES;
            resp.flags = 0;
        }
        if let Some(attempt) = seen
            && observed.count(attempt)
        {
            witness.refused(&observed.attempts[observed.attempts.len() - 1], notif.pid);
        }
        // SAFETY: resp is the struct this ioctl reads; a process that died
        // meanwhile makes it fail, which is fine.
        unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) };
    }
}

impl Judge {
    fn executable(&self, path: &Path) -> bool {
        self.exec.iter().any(|e| path.starts_with(e))
    }

    /// This judge with its exec paths also as they really are (symlinks
    /// followed): attempts are judged by their real paths. Made by the
    /// observer, off the command's path (a `realpath` each).
    fn settled(&self) -> Self {
        let mut exec = self.exec.clone();
        exec.extend(
            self.exec
                .iter()
                .filter_map(|p| std::fs::canonicalize(p).ok()),
        );
        exec.sort();
        exec.dedup();
        Self {
            exec,
            ..self.clone()
        }
    }

    /// The attempt this process's `execve` of `program` would be, when
    /// the sandbox refuses it: `program` beneath no exec path, as written
    /// nor as they really are.
    pub fn refuses_exec(&self, program: &Path) -> Option<Attempt> {
        if self.executable(program) {
            return None;
        }
        let real = normalize(program);
        (!self.settled().executable(&real)).then(|| Attempt {
            operation: "exec".into(),
            target: real.display().to_string(),
            program: self::program(std::process::id()),
        })
    }

    fn writable(&self, path: &Path) -> bool {
        path.starts_with("/dev")
            || (self.write.iter().any(|w| path.starts_with(w))
                && !self.closed.iter().any(|c| path.starts_with(c)))
    }

    /// The attempt `notif` is, when the sandbox refuses it.
    fn judge(&self, notif: &libc::seccomp_notif, listener: RawFd) -> Option<Attempt> {
        let pid = notif.pid;
        let nr = notif.data.nr as libc::c_long;
        let args = notif.data.args;
        let at = |dirfd: u64, ptr: u64| path_at(pid, dirfd as i32, ptr);
        let cwd = libc::AT_FDCWD as u64;
        let (operation, paths): (&str, Vec<Option<PathBuf>>) = match nr {
            libc::SYS_socket => {
                let family = match args[0] as i32 {
                    libc::AF_UNIX => "unix",
                    libc::AF_INET => "inet",
                    libc::AF_INET6 => "inet6",
                    libc::AF_NETLINK => "netlink",
                    libc::AF_PACKET => "packet",
                    _ => "other",
                };
                let attempt = Attempt {
                    operation: "network".into(),
                    target: format!("socket({family})"),
                    program: program(pid),
                };
                return valid(listener, notif.id).then_some(attempt);
            }
            libc::SYS_openat | libc::SYS_openat2 => ("write", vec![at(args[0], args[1])]),
            libc::SYS_unlinkat => ("remove", vec![at(args[0], args[1])]),
            libc::SYS_renameat | libc::SYS_renameat2 => {
                ("rename", vec![at(args[0], args[1]), at(args[2], args[3])])
            }
            libc::SYS_linkat => ("create", vec![at(args[2], args[3])]),
            libc::SYS_mkdirat | libc::SYS_mknodat => ("create", vec![at(args[0], args[1])]),
            libc::SYS_symlinkat => ("create", vec![at(args[1], args[2])]),
            libc::SYS_fchmodat => ("chmod", vec![at(args[0], args[1])]),
            libc::SYS_fchownat => ("chown", vec![at(args[0], args[1])]),
            libc::SYS_truncate => ("write", vec![at(cwd, args[0])]),
            libc::SYS_utimensat if args[1] != 0 => ("utime", vec![at(args[0], args[1])]),
            libc::SYS_execve => ("exec", vec![at(cwd, args[0])]),
            libc::SYS_execveat => ("exec", vec![at(args[0], args[1])]),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_open | libc::SYS_creat => ("write", vec![at(cwd, args[0])]),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_unlink | libc::SYS_rmdir => ("remove", vec![at(cwd, args[0])]),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_rename => ("rename", vec![at(cwd, args[0]), at(cwd, args[1])]),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_mkdir | libc::SYS_mknod => ("create", vec![at(cwd, args[0])]),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_symlink | libc::SYS_link => ("create", vec![at(cwd, args[1])]),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_chmod => ("chmod", vec![at(cwd, args[0])]),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_chown | libc::SYS_lchown => ("chown", vec![at(cwd, args[0])]),
            _ => return None,
        };
        // What was read of the process's memory is its own only while the
        // notification is still pending.
        if !valid(listener, notif.id) {
            return None;
        }
        let refused = paths.into_iter().flatten().find(|path| {
            if operation == "exec" {
                !self.executable(path)
            } else {
                !self.writable(path)
            }
        })?;
        Some(Attempt {
            operation: operation.into(),
            target: refused.display().to_string(),
            program: program(pid),
        })
    }
}

/// Whether notification `id` is still pending (its process alive and the
/// same).
fn valid(listener: RawFd, id: u64) -> bool {
    let mut id = id;
    // SAFETY: the ioctl reads one u64.
    unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &mut id) == 0 }
}

/// The program process `pid` runs.
fn program(pid: u32) -> String {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// The path argument at `ptr` of process `pid`, made absolute against the
/// folder `dirfd` names (or its working folder), with `.` and `..`
/// resolved and the folder holding it followed through symlinks.
fn path_at(pid: u32, dirfd: i32, ptr: u64) -> Option<PathBuf> {
    if ptr == 0 {
        return None;
    }
    let mut mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut bytes = Vec::with_capacity(256);
    {
        use std::io::{Seek, SeekFrom};
        mem.seek(SeekFrom::Start(ptr)).ok()?;
        let mut buf = [0u8; 256];
        while bytes.len() < libc::PATH_MAX as usize {
            let n = mem.read(&mut buf).ok()?;
            if n == 0 {
                break;
            }
            if let Some(end) = buf[..n].iter().position(|&b| b == 0) {
                bytes.extend_from_slice(&buf[..end]);
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
    }
    use std::os::unix::ffi::OsStrExt;
    let raw = PathBuf::from(std::ffi::OsStr::from_bytes(&bytes));
    let base = if raw.is_absolute() {
        PathBuf::new()
    } else if dirfd == libc::AT_FDCWD {
        std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?
    } else {
        std::fs::read_link(format!("/proc/{pid}/fd/{dirfd}")).ok()?
    };
    Some(normalize(&base.join(raw)))
}

/// `path` with `.` and `..` resolved lexically, then its folder's real
/// path (symlinks followed) when it exists.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    match (out.parent(), out.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|d| d.join(name))
            .unwrap_or(out),
        _ => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalized_lexically_then_through_their_folder() {
        assert_eq!(
            normalize(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        let tmp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
        assert_eq!(normalize(&tmp.join("x/../y")), tmp.join("y"));
    }

    #[test]
    fn the_judge_refuses_writes_outside_the_write_set_and_beneath_protected_paths() {
        let judge = Judge {
            write: vec![PathBuf::from("/w")],
            exec: vec![PathBuf::from("/usr")],
            closed: vec![PathBuf::from("/w/.git/hooks")],
        };
        assert!(judge.writable(Path::new("/w/src/a.rs")));
        assert!(!judge.writable(Path::new("/etc/passwd")));
        assert!(!judge.writable(Path::new("/w/.git/hooks/pre-commit")));
        assert!(judge.writable(Path::new("/dev/null")));
    }
}
