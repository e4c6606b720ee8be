//! A recorded spec made real: paths resolved, a Landlock ruleset built, the
//! mounts planned and a seccomp filter compiled in the parent; in the child
//! just before `execve`, a user and mount namespace whose every mount is
//! read-only except the spec's write paths (with the never-writable paths
//! bound read-only again on top), then the Landlock ruleset, then the filter.
//!
//! Read-only mounts are what stop `chmod`, `chown`, timestamp and extended
//! attribute changes outside the write set, which Landlock does not cover,
//! and they carve the never-writable paths out of a writable workspace,
//! which Landlock (allow rules only) cannot.

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathFd, Ruleset, RulesetAttr, Scope,
};

use super::observe::ChildEnd;
use super::seccomp::Filter;
use super::{NEVER_WRITABLE, Spec};

/// Device files every sandbox may read and write (their contents are not files).
const DEVICES_RW: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];
/// Device files every sandbox may read.
const DEVICES_READ: &[&str] = &["/dev/random", "/dev/urandom"];

/// Why a sandbox could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("cannot build the landlock ruleset: {0}")]
    Landlock(String),
    #[error("cannot protect `{path}`: it does not exist and its folder is writable")]
    Unprotectable { path: String },
    #[error("cannot find the home folder of user {uid}")]
    NoHome { uid: u32 },
    #[error("a path of the sandbox holds a NUL byte")]
    Nul,
}

/// A spec's paths made absolute: the write paths (and those carved out of
/// them) also canonical, as the mounts need them, with missing ones left
/// out; the read and exec paths as written (Landlock leaves out the
/// missing ones).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    pub exec: Vec<PathBuf>,
    /// Never-writable paths inside a write path, bound read-only.
    pub protected: Vec<PathBuf>,
    /// gavel's record where the command could read it (the workspace's
    /// `.gavel/`): an empty read-only folder is mounted over it.
    pub hidden: Vec<PathBuf>,
    pub network: bool,
}

/// The user's home folder from the password database (never `$HOME`,
/// which the command's caller controls): `/etc/passwd` read directly, else
/// (a user from another source) the C library's lookup, which may load
/// name-service modules and costs milliseconds. Asked once per process.
pub fn home() -> Result<PathBuf, LaunchError> {
    static HOME: std::sync::OnceLock<Result<PathBuf, u32>> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        passwd_home(uid)
            .ok_or(uid)
            .or_else(|uid| lookup_home(uid).ok_or(uid))
    })
    .clone()
    .map_err(|uid| LaunchError::NoHome { uid })
}

/// The home folder of `uid` in `/etc/passwd` (`name:x:uid:gid:gecos:home:shell`).
fn passwd_home(uid: u32) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 7 && fields[2].parse() == Ok(uid) && fields[5].starts_with('/'))
            .then(|| PathBuf::from(fields[5]))
    })
}

/// The home folder of `uid` by `getpwuid_r`.
fn lookup_home(uid: u32) -> Option<PathBuf> {
    let mut buf = vec![0u8; 4096];
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: buf, pwd and out are valid for the call; the strings it sets
    // point into buf, read before buf is dropped.
    let rc =
        unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr().cast(), buf.len(), &mut out) };
    if rc != 0 || out.is_null() || pwd.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir is a NUL-terminated string inside buf.
    let dir = unsafe { std::ffi::CStr::from_ptr(pwd.pw_dir) };
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes())))
}

/// `path` as written, made absolute against `workspace` and `home`.
pub fn absolute(path: &str, workspace: &Path, home: &Path) -> PathBuf {
    if path == "~" {
        home.to_path_buf()
    } else if let Some(rest) = path.strip_prefix("~/") {
        home.join(rest)
    } else if path.starts_with('/') {
        PathBuf::from(path)
    } else if path == "." {
        workspace.to_path_buf()
    } else {
        workspace.join(path.strip_prefix("./").unwrap_or(path))
    }
}

impl Resolved {
    /// Resolves `spec` for `workspace`; `extra_write` (a private temporary
    /// folder) is writable, `extra_protected` (the database and its keys)
    /// never. Errs when a never-writable path is missing where the command
    /// could create it.
    pub fn new(
        spec: &Spec,
        workspace: &Path,
        home: &Path,
        extra_write: &[PathBuf],
        extra_protected: &[PathBuf],
    ) -> Result<Self, LaunchError> {
        let mut write = sorted(
            spec.write
                .iter()
                .filter_map(|p| std::fs::canonicalize(absolute(p, workspace, home)).ok())
                .collect(),
        );
        let mut protected = Vec::new();
        // Nothing to protect where nothing is writable.
        let writes = !write.is_empty() || !extra_write.is_empty();
        let candidates = NEVER_WRITABLE
            .iter()
            .map(|p| absolute(p, workspace, home))
            .chain(extra_protected.iter().cloned())
            .filter(|_| writes);
        for path in candidates {
            // Lexically inside a write path (the write paths are canonical;
            // the workspace is too).
            let inside = |p: &Path| write.iter().any(|w| p.starts_with(w));
            match std::fs::canonicalize(&path) {
                Ok(real) => {
                    if inside(&real) || inside(&path) {
                        protected.push(real);
                    }
                }
                // gavel's own folder is made before a command that writes
                // runs (`exec::contained_command`).
                Err(_) if path == workspace.join(".gavel") => {}
                Err(_) => {
                    // Missing: the command could create it if its folder is
                    // writable. A missing `.git/config` under a missing
                    // `.git` is `.git` itself.
                    let mut missing = path.clone();
                    while let Some(parent) = missing.parent() {
                        if parent.exists() {
                            break;
                        }
                        missing = parent.to_path_buf();
                    }
                    let parent = missing.parent().and_then(|p| std::fs::canonicalize(p).ok());
                    if parent.is_some_and(|p| inside(&p)) {
                        return Err(LaunchError::Unprotectable {
                            path: missing.display().to_string(),
                        });
                    }
                }
            }
        }
        let protected = sorted(protected);
        for extra in extra_write {
            if let Ok(real) = std::fs::canonicalize(extra) {
                write.push(real);
            }
        }
        // The record (its redaction key among it) is not for the command
        // to read: what it may print reaches the model. The workspace is
        // canonical: a folder in it needs no `realpath` (a symlink does).
        let own = workspace.join(".gavel");
        let hidden = match std::fs::symlink_metadata(&own) {
            Ok(meta) if meta.is_dir() => Some(own),
            Ok(meta) if meta.is_symlink() => {
                std::fs::canonicalize(&own).ok().filter(|p| p.is_dir())
            }
            _ => None,
        };
        // Read and exec paths are Landlock's, which follows symlinks
        // itself, and the observer's, which makes its own real off the
        // command's path: made absolute, not canonical (a `realpath` each
        // is most of the cost of preparing a sandbox).
        let absolutes = |list: &[String]| -> Vec<PathBuf> {
            sorted(list.iter().map(|p| absolute(p, workspace, home)).collect())
        };
        Ok(Self {
            read: absolutes(&spec.read),
            write,
            exec: absolutes(&spec.exec),
            protected,
            hidden: hidden.into_iter().collect(),
            network: spec.network,
        })
    }
}

/// `paths` ordered by their bytes (a comparison of components costs more,
/// and the order only serves to drop duplicates), each once.
fn sorted(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    paths.dedup_by(|a, b| a.as_os_str() == b.as_os_str());
    paths
}

/// The Landlock ABI the ruleset is built for: the kernel's, at most V6.
fn abi_for(kernel: i64) -> ABI {
    match kernel {
        ..=3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        _ => ABI::V6,
    }
}

/// Builds the Landlock ruleset of `resolved` (in the parent: it opens the
/// paths): the crate makes it, for the rights this kernel's ABI handles,
/// all of them a hard requirement; the rules are added here, one system
/// call each ([`add_rule`]). Its descriptor, for [`ChildSetup`] to enforce.
pub fn ruleset(resolved: &Resolved, kernel_abi: i64) -> Result<OwnedFd, LaunchError> {
    let abi = abi_for(kernel_abi);
    let err = |e: &dyn std::fmt::Display| LaunchError::Landlock(e.to_string());
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi) & !AccessFs::Execute;
    let exec = AccessFs::from_read(abi);
    let write = all & !AccessFs::Execute;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(|e| err(&e))?;
    if !resolved.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| err(&e))?;
    }
    if kernel_abi >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(|e| err(&e))?;
    }
    let created: Option<OwnedFd> = ruleset.create().map_err(|e| err(&e))?.into();
    let ruleset = created.ok_or_else(|| err(&"the kernel made no ruleset"))?;
    // One rule per path, with every right a list gives it (`/usr` is read
    // and executed from): each rule is a path opened and a system call.
    // Paths are told apart by their bytes (two spellings of one folder
    // make two rules, which the kernel merges).
    let lists = [
        (&resolved.read[..], read),
        (&resolved.exec[..], exec),
        (&resolved.write[..], write),
    ];
    let devices = DEVICES_RW
        .iter()
        .map(|d| (Path::new(d), AccessFs::ReadFile | AccessFs::WriteFile))
        .chain(
            DEVICES_READ
                .iter()
                .map(|d| (Path::new(d), AccessFs::ReadFile.into())),
        );
    let mut rules: Vec<(&Path, landlock::BitFlags<AccessFs>)> = lists
        .iter()
        .flat_map(|(paths, access)| paths.iter().map(|p| (p.as_path(), *access)))
        .chain(devices)
        .collect();
    rules.sort_unstable_by(|(a, _), (b, _)| a.as_os_str().cmp(b.as_os_str()));
    rules.dedup_by(|(path, access), (kept, union)| {
        let same = path.as_os_str() == kept.as_os_str();
        if same {
            *union |= *access;
        }
        same
    });
    let on_file = AccessFs::from_file(abi);
    for (path, access) in rules {
        // Opened once; a missing path is left out.
        let Ok(parent) = PathFd::new(path) else {
            continue;
        };
        // A file takes only the rights a file has (the kernel says
        // EINVAL to a folder's): tried as a folder first, the usual case,
        // rather than asked (`fstat`) every time.
        let added = add_rule(&ruleset, access.bits(), &parent).or_else(|e| {
            if e.raw_os_error() == Some(libc::EINVAL) {
                add_rule(&ruleset, (access & on_file).bits(), &parent)
            } else {
                Err(e)
            }
        });
        added.map_err(|e| err(&format_args!("a rule for `{}`: {e}", path.display())))?;
    }
    Ok(ruleset)
}

/// `struct landlock_path_beneath_attr` (packed, as the kernel has it).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_long = 1;

/// Adds to `ruleset` the rule that `access` is allowed beneath `parent`.
fn add_rule(ruleset: &OwnedFd, access: u64, parent: &PathFd) -> std::io::Result<()> {
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: parent.as_fd().as_raw_fd(),
    };
    // SAFETY: both descriptors are open, and the attribute is the
    // kernel's struct, alive for the call.
    check(unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0,
        )
    })
}

/// Enforces the Landlock `ruleset` on this thread (and what it executes),
/// with `no_new_privs` set first, as Landlock needs.
fn restrict_self(ruleset: OwnedFd) -> std::io::Result<()> {
    // SAFETY: plain system calls on an open descriptor.
    unsafe {
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) as libc::c_long)?;
        check(libc::syscall(
            libc::SYS_landlock_restrict_self,
            ruleset.as_raw_fd(),
            0,
        ))
    }
}

/// What the child does before `execve`, prepared so that it allocates
/// nothing it need not.
pub struct ChildSetup {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Bind mounts in order (shallow first): path, and whether it ends
    /// writable.
    binds: Vec<(CString, bool)>,
    /// Folders an empty read-only tmpfs is mounted over.
    hidden: Vec<CString>,
    cwd: CString,
    /// Built once the observer is started ([`ChildSetup::build_ruleset`]).
    ruleset: Option<OwnedFd>,
    /// The sandbox's filter, with the observer's calls in it when
    /// `listener` is set.
    filter: Filter,
    /// What lets [`ChildSetup::exec`]'s own `execve` through the filter
    /// unobserved ([`super::observe::pass`]).
    pass: [u32; 4],
    /// Where the filter's listener goes: the observer.
    listener: Option<ChildEnd>,
}

impl std::fmt::Debug for ChildSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildSetup")
            .field("binds", &self.binds)
            .field("hidden", &self.hidden)
            .field("cwd", &self.cwd)
            .field("filter", &self.filter.len())
            .finish_non_exhaustive()
    }
}

/// Why [`ChildSetup::exec`] did not become its program.
#[derive(Debug)]
pub enum Unexecuted {
    /// The sandbox could not be set up.
    Setup(std::io::Error),
    /// Set up, the program could not be executed.
    Execve(std::io::Error),
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_uint = 0x8000;

fn check(rc: libc::c_long) -> std::io::Result<()> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn write_file(path: &[u8], data: &[u8]) -> std::io::Result<()> {
    // SAFETY: path is NUL-terminated; data outlives the write.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        if n != data.len() as isize {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn set_readonly(path: &std::ffi::CStr, readonly: bool) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: if readonly { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if readonly { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: path is NUL-terminated and attr is a valid mount_attr of the
    // size passed.
    check(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    })
}

impl ChildSetup {
    fn run(&mut self) -> std::io::Result<()> {
        // SAFETY: plain system calls on prepared, NUL-terminated strings.
        unsafe {
            check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) as libc::c_long)?;
        }
        write_file(b"/proc/self/setgroups\0", b"deny")?;
        write_file(b"/proc/self/uid_map\0", &self.uid_map)?;
        write_file(b"/proc/self/gid_map\0", &self.gid_map)?;
        let root = c"/";
        // SAFETY: as above.
        unsafe {
            check(libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) as libc::c_long)?;
        }
        set_readonly(root, true)?;
        for (path, writable) in &self.binds {
            // SAFETY: as above.
            unsafe {
                check(libc::mount(
                    path.as_ptr(),
                    path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ) as libc::c_long)?;
            }
            set_readonly(path, !*writable)?;
        }
        let tmpfs = c"tmpfs";
        let options = c"size=4k,mode=0555";
        for path in &self.hidden {
            // SAFETY: as above.
            unsafe {
                check(libc::mount(
                    tmpfs.as_ptr(),
                    path.as_ptr(),
                    tmpfs.as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    options.as_ptr().cast(),
                ) as libc::c_long)?;
            }
        }
        // The working folder was entered before the mounts: enter it again,
        // through them.
        // SAFETY: as above.
        unsafe {
            check(libc::chdir(self.cwd.as_ptr()) as libc::c_long)?;
        }
        let ruleset = self
            .ruleset
            .take()
            .ok_or_else(|| std::io::Error::other("no landlock ruleset"))?;
        restrict_self(ruleset)?;
        match &self.listener {
            Some(end) => end.send(self.filter.install_listener()?)?,
            None => self.filter.install()?,
        }
        Ok(())
    }

    /// The observer's end, where the filter's listener goes.
    pub fn observed_by(&mut self, end: ChildEnd) {
        self.listener = Some(end);
    }

    /// Builds the Landlock ruleset of `resolved` here ([`ruleset`]).
    pub fn build_ruleset(
        &mut self,
        resolved: &Resolved,
        kernel_abi: i64,
    ) -> Result<(), LaunchError> {
        self.ruleset = Some(ruleset(resolved, kernel_abi)?);
        Ok(())
    }

    /// Sets this process up so and executes `program` in place (`argv[0]`
    /// the name it is given), with the environment `envp`, unobserved
    /// ([`super::observe::execve_passing`]); returns only why it could
    /// not: the setup, or the `execve` itself. `SIGPIPE`, which Rust's
    /// runtime ignores, is the default again, as the program would have it
    /// from a shell. Call it where this process has one thread (a user
    /// namespace needs that).
    pub fn exec(mut self, program: &CStr, argv: &[CString], envp: &[CString]) -> Unexecuted {
        let argv: Vec<*const libc::c_char> = argv
            .iter()
            .map(|a| a.as_ptr())
            .chain([std::ptr::null()])
            .collect();
        let envp: Vec<*const libc::c_char> = envp
            .iter()
            .map(|e| e.as_ptr())
            .chain([std::ptr::null()])
            .collect();
        if let Err(err) = self.run() {
            return Unexecuted::Setup(err);
        }
        // SAFETY: resetting a disposition; program, argv and envp are
        // NUL-terminated and NULL-ended, alive for the call.
        Unexecuted::Execve(unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            super::observe::execve_passing(
                program.as_ptr(),
                argv.as_ptr(),
                envp.as_ptr(),
                self.pass,
            )
        })
    }
}

fn cstring(path: &Path) -> Result<CString, LaunchError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| LaunchError::Nul)
}

/// Prepares what a child applies just before `execve` to run contained by
/// `resolved` in `cwd`: everything that opens, allocates or compiles is
/// done here, the Landlock ruleset once the observer is started
/// ([`ChildSetup::build_ruleset`]: a thread observer shares this process's
/// descriptors, a forked one need not inherit the ruleset's).
/// With `observed`, the filter hands the observer's calls to a listener,
/// which goes to the observer ([`ChildSetup::observed_by`]).
pub fn prepare(resolved: &Resolved, cwd: &Path, observed: bool) -> Result<ChildSetup, LaunchError> {
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut binds: Vec<(&PathBuf, bool)> = resolved
        .write
        .iter()
        .map(|p| (p, true))
        .chain(resolved.protected.iter().map(|p| (p, false)))
        .collect();
    // Shallow first, so that a deeper bind lands on top; at the same
    // depth, read-only last.
    binds.sort_by_key(|(p, writable)| (p.components().count(), !*writable));
    let binds = binds
        .into_iter()
        .map(|(p, w)| Ok((cstring(p)?, w)))
        .collect::<Result<Vec<_>, LaunchError>>()?;
    let pass = super::observe::pass();
    Ok(ChildSetup {
        uid_map: format!("{uid} {uid} 1\n").into_bytes(),
        gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        binds,
        hidden: resolved
            .hidden
            .iter()
            .map(|p| cstring(p))
            .collect::<Result<_, _>>()?,
        cwd: cstring(cwd)?,
        ruleset: None,
        filter: if observed {
            Filter::sandbox_observed(resolved.network, pass)
        } else {
            Filter::sandbox(resolved.network)
        },
        pass,
        listener: None,
    })
}

/// Makes `command` run contained by `setup` in `cwd`: the child applies it
/// just before `execve`.
pub fn contain(command: &mut Command, mut setup: ChildSetup, cwd: &Path) {
    command.current_dir(cwd);
    // SAFETY: the closure runs in the forked child; it makes system calls
    // on data prepared above and allocates nothing on its way to `execve`
    // (only an error's message may allocate, and glibc's fork leaves the
    // allocator usable in the child of a process with other threads:
    // `run` and `serve` have them).
    unsafe {
        command.pre_exec(move || setup.run());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_against_the_workspace_and_the_home_folder() {
        let ws = Path::new("/w");
        let home = Path::new("/h");
        assert_eq!(absolute(".", ws, home), PathBuf::from("/w"));
        assert_eq!(absolute("./src", ws, home), PathBuf::from("/w/src"));
        assert_eq!(absolute("src", ws, home), PathBuf::from("/w/src"));
        assert_eq!(absolute("~", ws, home), PathBuf::from("/h"));
        assert_eq!(absolute("~/.cargo", ws, home), PathBuf::from("/h/.cargo"));
        assert_eq!(absolute("/usr", ws, home), PathBuf::from("/usr"));
    }

    #[test]
    fn a_missing_never_writable_path_in_a_writable_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        let home_dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(home_dir.path()).unwrap();
        // No gavel.toml and no .git: the command could create them.
        let err = Resolved::new(&Spec::workspace_write(), &ws, &home, &[], &[]).unwrap_err();
        assert!(matches!(err, LaunchError::Unprotectable { .. }), "{err}");
        std::fs::write(ws.join("gavel.toml"), "").unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "").unwrap();
        std::fs::create_dir(ws.join(".gavel")).unwrap();
        let resolved = Resolved::new(&Spec::workspace_write(), &ws, &home, &[], &[]).unwrap();
        assert_eq!(resolved.write, vec![ws.clone()]);
        for p in ["gavel.toml", ".gavel", ".git/config", ".git/hooks"] {
            assert!(resolved.protected.contains(&ws.join(p)), "{p}");
        }
        // Read-only writes nothing: nothing to protect, nothing missing.
        let ro = Resolved::new(&Spec::read_only(), &ws, &home, &[], &[]).unwrap();
        assert!(ro.protected.is_empty() && ro.write.is_empty());
    }
}
