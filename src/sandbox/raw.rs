//! System calls made without the C library: those an observer makes
//! while it shares the launcher's memory
//! ([`super::observe::start_process`]), where the C library's wrappers
//! would write the launcher's `errno` (it lives in the memory of the thread
//! they run on), and [`random`]. Each returns the kernel's answer: a
//! negative number is an error (`-errno`).

use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::AtomicU32;

/// A system call of up to four arguments.
///
/// # Safety
/// The arguments must be what call `nr` expects (pointers valid for it).
#[cfg(target_arch = "x86_64")]
unsafe fn syscall4(nr: libc::c_long, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: the caller's; `syscall` clobbers rcx and r11, and nothing
    // else but rax.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            in("r10") d,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

#[cfg(target_arch = "aarch64")]
unsafe fn syscall4(nr: libc::c_long, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: the caller's; `svc 0` returns in x0 and clobbers nothing else.
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") nr,
            inlateout("x0") a as isize => ret,
            in("x1") b,
            in("x2") c,
            in("x3") d,
            options(nostack),
        );
    }
    ret
}

/// Removes the file at `path` (absolute).
pub fn unlink(path: &CStr) -> isize {
    // SAFETY: a NUL-terminated path, alive for the call.
    unsafe {
        syscall4(
            libc::SYS_unlinkat,
            libc::AT_FDCWD as usize,
            path.as_ptr() as usize,
            0,
            0,
        )
    }
}

/// Writes `bytes` to `fd`.
pub fn write(fd: RawFd, bytes: &[u8]) -> isize {
    // SAFETY: the buffer is alive for the call.
    unsafe {
        syscall4(
            libc::SYS_write,
            fd as usize,
            bytes.as_ptr() as usize,
            bytes.len(),
            0,
        )
    }
}

/// Ignores `signal` (`SIG_IGN`) in this process.
pub fn ignore(signal: libc::c_int) -> isize {
    // The kernel's `struct sigaction` (not the C library's): handler,
    // flags, restorer, mask. Ignoring needs no restorer.
    #[repr(C)]
    struct KernelSigaction {
        handler: usize,
        flags: u64,
        restorer: usize,
        mask: u64,
    }
    let action = KernelSigaction {
        handler: libc::SIG_IGN,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    // SAFETY: a valid action of the size passed; no old action asked for.
    unsafe {
        syscall4(
            libc::SYS_rt_sigaction,
            signal as usize,
            &action as *const KernelSigaction as usize,
            0,
            std::mem::size_of::<u64>(),
        )
    }
}

/// Sleeps while `word` holds `expected` (or until woken).
pub fn futex_wait(word: &AtomicU32, expected: u32) -> isize {
    // SAFETY: the word is alive and aligned; no timeout.
    unsafe {
        syscall4(
            libc::SYS_futex,
            word.as_ptr() as usize,
            libc::FUTEX_WAIT as usize,
            expected as usize,
            0,
        )
    }
}

/// Leaves this process holding none of the descriptors it was given but
/// `keep`, with `/dev/null` on its standard input, output and error: a
/// process that shares nothing of a command's but its start holds none of
/// its pipes, so whoever reads the command's output to its end never
/// waits for it. Best effort (a kernel without `close_range` leaves the
/// other descriptors open); what it could not do is the first error.
pub fn keep_only(keep: [RawFd; 2]) -> isize {
    // SAFETY: a NUL-terminated path, alive for the call.
    let null = unsafe {
        syscall4(
            libc::SYS_openat,
            libc::AT_FDCWD as usize,
            c"/dev/null".as_ptr() as usize,
            (libc::O_RDWR | libc::O_CLOEXEC) as usize,
            0,
        )
    };
    if null < 0 {
        return null;
    }
    let mut first_error = 0;
    for fd in (0..3isize).filter(|&fd| fd != null) {
        // SAFETY: descriptors of this process only.
        let rc = unsafe { syscall4(libc::SYS_dup3, null as usize, fd as usize, 0, 0) };
        if rc < 0 && first_error == 0 {
            first_error = rc;
        }
    }
    // Everything from 3 up but `keep` (the `/dev/null` opened above too,
    // unless it landed below 3).
    let [low, high] = if keep[0] <= keep[1] {
        keep
    } else {
        [keep[1], keep[0]]
    };
    let ranges = [(3, low - 1), (low + 1, high - 1), (high + 1, RawFd::MAX)];
    for (first, last) in ranges.into_iter().filter(|(f, l)| f <= l && *l >= 3) {
        // SAFETY: closes descriptors of this process only.
        let rc = unsafe {
            syscall4(
                libc::SYS_close_range,
                first.max(3) as usize,
                last as u32 as usize,
                0,
                0,
            )
        };
        if rc < 0 && first_error == 0 {
            first_error = rc;
        }
    }
    first_error
}

/// `N` random bytes from the kernel: `getrandom(2)` itself (the
/// `getrandom` crate looks for the C library's function by name, which a
/// static launcher cannot, and falls back to opening `/dev/random` and
/// `/dev/urandom`). Zeros only where the kernel has none to give.
pub fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    let mut filled = 0;
    while filled < N {
        let rest = &mut bytes[filled..];
        // SAFETY: the rest of `bytes`, writable for its length.
        let n = unsafe {
            syscall4(
                libc::SYS_getrandom,
                rest.as_mut_ptr() as usize,
                rest.len(),
                0,
                0,
            )
        };
        match n {
            n if n > 0 => filled += n as usize,
            n if n == -(libc::EINTR as isize) => {}
            _ => break,
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calls_answer_as_the_kernel_does() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let path = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
        assert_eq!(unlink(&path), 0);
        assert!(!file.exists());
        assert_eq!(unlink(&path), -(libc::ENOENT as isize));
        // A word that no longer holds the value: no sleep.
        let word = AtomicU32::new(0);
        assert_eq!(futex_wait(&word, 1), -(libc::EAGAIN as isize));
        let mut fds = [0; 2];
        // SAFETY: room for two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        assert_eq!(write(fds[1], b"ab"), 2);
        let mut buf = [0u8; 2];
        // SAFETY: a buffer of the length read.
        assert_eq!(unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), 2) }, 2);
        assert_eq!(&buf, b"ab");
        // SAFETY: the pipe's own descriptors.
        unsafe { [libc::close(fds[0]), libc::close(fds[1])] };
        // Two draws of 16 bytes are not the same.
        assert_ne!(random::<16>(), random::<16>());
        // Ignored, as the C library reads it back (SIGUSR2: no test uses it).
        assert_eq!(ignore(libc::SIGUSR2), 0);
        // SAFETY: a zeroed sigaction for the kernel to fill.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: asks the disposition only.
        unsafe { libc::sigaction(libc::SIGUSR2, std::ptr::null(), &mut old) };
        assert_eq!(old.sa_sigaction, libc::SIG_IGN);
    }

    /// A process that keeps only two descriptors holds none of another
    /// pipe: its reader sees the end while the process lives on.
    #[test]
    fn a_process_that_keeps_only_two_descriptors_holds_no_other_pipe() {
        let pipe = || {
            let mut fds = [0; 2];
            // SAFETY: room for two descriptors.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            fds
        };
        let (output, held, kept) = (pipe(), pipe(), pipe());
        // SAFETY: the child makes async-signal-safe calls only, and exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let code = (|| {
                if keep_only([held[0], kept[1]]) != 0 {
                    return 1;
                }
                // SAFETY: fcntl and fstat on descriptor numbers.
                unsafe {
                    let open = |fd| libc::fcntl(fd, libc::F_GETFD) >= 0;
                    if open(output[1]) || open(output[0]) || !open(held[0]) || !open(kept[1]) {
                        return 2;
                    }
                    let mut st: libc::stat = std::mem::zeroed();
                    if libc::fstat(1, &mut st) != 0 || st.st_rdev != libc::makedev(1, 3) {
                        return 3;
                    }
                    // Lives on until the test lets it go.
                    let mut byte = 0u8;
                    libc::read(held[0], (&mut byte as *mut u8).cast(), 1);
                }
                0
            })();
            // SAFETY: ends the forked child.
            unsafe { libc::_exit(code) };
        }
        // SAFETY: the test's own descriptors.
        unsafe {
            libc::close(output[1]);
            let mut poll = libc::pollfd {
                fd: output[0],
                events: libc::POLLIN,
                revents: 0,
            };
            assert_eq!(
                libc::poll(&mut poll, 1, 10_000),
                1,
                "the child holds the pipe"
            );
            let mut byte = 0u8;
            assert_eq!(libc::read(output[0], (&mut byte as *mut u8).cast(), 1), 0);
            libc::close(held[1]);
            let mut status = 0;
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
            assert_eq!(libc::WEXITSTATUS(status), 0);
            for fd in [output[0], held[0], kept[0], kept[1]] {
                libc::close(fd);
            }
        }
    }
}
