//! The few system calls a process makes while it shares another's memory
//! ([`super::observe::fork`]), made without the C library: its wrappers
//! write `errno`, which lives in the memory of the thread they run on, and
//! this process runs on the launcher's thread memory until the launcher
//! executes the command. Each returns the kernel's answer: a negative
//! number is an error (`-errno`).

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
    }
}
