//! What the running kernel can enforce: the Landlock ABI, seccomp filters,
//! and unprivileged user and mount namespaces. Asked of the kernel itself,
//! never of a setting, so a process that cannot reach a feature (a seccomp
//! filter answering `ENOSYS`, a container without user namespaces) sees it
//! missing and `gavel exec` refuses.

use serde::Serialize;

/// The Landlock ABI the sandbox needs for everything it enforces: file
/// access with truncation (3), TCP (4), device ioctls (5), and scoping of
/// signals and abstract UNIX sockets (6).
pub const FULL_ABI: i64 = 6;
/// Below this the sandbox cannot hold (no truncate right, no TCP rules).
pub const MIN_ABI: i64 = 4;

/// What the kernel supports, as `gavel doctor` and `gavel exec` report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Support {
    /// The Landlock ABI version, 0 when Landlock is unavailable.
    pub landlock_abi: i64,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Whether this process may create a user and mount namespace.
    pub user_namespaces: bool,
}

/// How much of a spec the kernel enforces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "enforcement", rename_all = "lowercase")]
pub enum Enforcement {
    /// Everything the spec says.
    Full,
    /// The spec holds, but something beside it is not enforced.
    Partial { missing: Vec<String> },
    /// The spec cannot be enforced: the command must not run.
    Unavailable { missing: Vec<String> },
}

impl Enforcement {
    /// One word: `full`, `partial` or `unavailable`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Enforcement::Full => "full",
            Enforcement::Partial { .. } => "partial",
            Enforcement::Unavailable { .. } => "unavailable",
        }
    }
}

impl Support {
    /// Asks the kernel. Probing user namespaces forks a short-lived child.
    pub fn probe() -> Self {
        Self {
            landlock_abi: landlock_abi(),
            seccomp: seccomp_available(),
            user_namespaces: user_namespaces_available(),
        }
    }

    /// As [`Support::probe`], without forking to try user namespaces: the
    /// system's settings that forbid them are read instead. For deciding
    /// and for `gavel exec`, whose child creates the namespaces anyway and
    /// refuses (nothing runs) when it cannot.
    pub fn probe_without_namespaces() -> Self {
        Self {
            landlock_abi: landlock_abi(),
            seccomp: seccomp_available(),
            user_namespaces: user_namespaces_permitted(),
        }
    }

    /// As [`Support::probe_without_namespaces`], for a launcher whose child
    /// creates the namespaces itself and refuses (nothing runs) when it
    /// cannot: the system's settings are not read until then
    /// ([`namespaces_refused`]).
    pub fn probe_for_launch() -> Self {
        Self {
            landlock_abi: landlock_abi(),
            seccomp: seccomp_available(),
            user_namespaces: true,
        }
    }

    /// What this support enforces of a sandbox.
    pub fn enforcement(&self) -> Enforcement {
        let mut fatal = Vec::new();
        if self.landlock_abi == 0 {
            fatal.push("landlock (the kernel has none, or it is not enabled)".to_owned());
        } else if self.landlock_abi < MIN_ABI {
            fatal.push(format!(
                "landlock ABI {MIN_ABI} (truncation and TCP rules; the kernel has ABI {})",
                self.landlock_abi
            ));
        }
        if !self.seccomp {
            fatal.push("seccomp filters".to_owned());
        }
        if !self.user_namespaces {
            fatal.push(
                "unprivileged user namespaces (read-only mounts for chmod, chown, timestamps \
                 and the never-writable paths)"
                    .to_owned(),
            );
        }
        if !fatal.is_empty() {
            return Enforcement::Unavailable { missing: fatal };
        }
        if self.landlock_abi < FULL_ABI {
            return Enforcement::Partial {
                missing: vec![format!(
                    "landlock ABI {FULL_ABI} scoping of signals and abstract UNIX sockets \
                     (the kernel has ABI {})",
                    self.landlock_abi
                )],
            };
        }
        Enforcement::Full
    }
}

/// What this machine enforces of a sandbox, asked of the kernel once per
/// process ([`Support::probe_without_namespaces`]).
pub fn enforcement_here() -> &'static Enforcement {
    static HERE: std::sync::OnceLock<Enforcement> = std::sync::OnceLock::new();
    HERE.get_or_init(|| Support::probe_without_namespaces().enforcement())
}

/// Whether the system's settings leave unprivileged user namespaces on:
/// none of `user.max_user_namespaces = 0`, Debian's
/// `kernel.unprivileged_userns_clone = 0` or Ubuntu's
/// `kernel.apparmor_restrict_unprivileged_userns = 1`.
/// When a child could not be contained: the system setting that forbids
/// unprivileged user namespaces, if one does.
pub fn namespaces_refused() -> Option<String> {
    (!user_namespaces_permitted()).then(|| {
        "unprivileged user namespaces are turned off (user.max_user_namespaces, \
         kernel.unprivileged_userns_clone or kernel.apparmor_restrict_unprivileged_userns)"
            .to_owned()
    })
}

fn user_namespaces_permitted() -> bool {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_owned())
    };
    read("/proc/sys/user/max_user_namespaces").as_deref() != Some("0")
        && read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() != Some("0")
        && read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() != Some("1")
}

/// The Landlock ABI version, or 0.
pub fn landlock_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call
    // only returns the ABI version (or an error); it touches no memory.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    abi.max(0)
}

/// Whether seccomp filters are supported (`PR_GET_SECCOMP` answers).
pub fn seccomp_available() -> bool {
    // SAFETY: PR_GET_SECCOMP reads the calling thread's seccomp mode.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

/// Whether a child of this process can create a user and a mount namespace.
pub fn user_namespaces_available() -> bool {
    // SAFETY: the child only calls unshare and _exit, both async-signal-safe.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return false;
        }
        if pid == 0 {
            let ok = libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) == 0;
            libc::_exit(if ok { 0 } else { 1 });
        }
        let mut status = 0;
        if libc::waitpid(pid, &mut status, 0) != pid {
            return false;
        }
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enforcement_follows_support() {
        let full = Support {
            landlock_abi: 7,
            seccomp: true,
            user_namespaces: true,
        };
        assert_eq!(full.enforcement(), Enforcement::Full);
        let old = Support {
            landlock_abi: 5,
            ..full.clone()
        };
        assert_eq!(old.enforcement().as_str(), "partial");
        let none = Support {
            landlock_abi: 0,
            ..full.clone()
        };
        assert_eq!(none.enforcement().as_str(), "unavailable");
        let no_ns = Support {
            user_namespaces: false,
            ..full
        };
        assert_eq!(no_ns.enforcement().as_str(), "unavailable");
    }
}
