//! The program models against real programs: every command the
//! coding-agent preset allows must, when run for real, execute nothing but
//! the programs it names, write nothing, and read nothing outside the
//! workspace or inside gavel's record.
//!
//! A hostile fixture repository (`fixtures/shell/hostile/make.sh`: a symlink
//! out of the repository, file names that a glob hands to a program as
//! options, gavel's own `.gavel/` record, hooks that leave a mark, a
//! compressed file) is built once. A seeded generator builds commands from
//! the preset's read-only programs, with their read-only and their
//! dangerous options, abbreviations, `--`, hostile operands, globs,
//! recursion and exclusion flags, redirections, pipelines, `cd` and stdin
//! shapes. Each is decided under `gavel::policy::CODING_AGENT_POLICY_TOML`
//! in the pristine fixture. Every command the preset **allows**, and only
//! those, is run by `/usr/bin/bash -c` in a fresh copy of the fixture (the
//! same layout, on `/dev/shm` when there is one), with the real programs,
//! under `strace -f`, with `HOME` and `TMPDIR` fresh folders outside the
//! repository, stdin `/dev/null` and a 2 s limit.
//!
//! What is a failure, from the trace:
//! 1. **A program ran** (or was tried) that the command does not name:
//!    by basename; `git` may run only `git`, `egrep`/`fgrep` only `grep`.
//! 2. **A write**: an open with `O_WRONLY`, `O_RDWR`, `O_CREAT` or
//!    `O_TRUNC`, or any other mutating call (rename, unlink, mkdir, chmod,
//!    ..., clock setting), successful or not, on anything but `/dev/null`,
//!    `/dev/tty`, `/dev/pts/*` and, spelled so, `/dev/stdout`,
//!    `/dev/stderr` and `/dev/fd/N` (the streams the caller gave the
//!    command, harmless for gavel too). git's own index refresh
//!    (`.git/index.lock` -> `.git/index`) under an allowed `git status` or
//!    `git diff` is counted and reported, not failed (docs/shell.md).
//! 3. **A read outside**: a successful open of a path that resolves outside
//!    the repository copy, other than system files (the loader, `/usr`,
//!    `/proc`, locale and terminfo files, git's system and `$HOME`
//!    configuration, `file`'s magic, `/etc/passwd` and `/etc/group` when
//!    the C library opens them for names).
//! 4. **A read of the record**: a successful open of anything under `.gavel/`.
//! 5. **A hook ran**: `HOOK_RAN` exists next to the repository copy.
//!
//! Unlinks, removals, chmod/chown and clock changes are refused by strace
//! (`inject=...:error=EPERM`) so that a wrongly allowed command cannot harm
//! the machine; the attempt still shows in the trace and still fails.
//!
//! `GAVEL_PROGRAMS_CASES` sets how many commands are generated (10,000),
//! `GAVEL_PROGRAMS_SEED` the seed (fixed by default; `random` draws one),
//! `GAVEL_DIFF_REQUIRE=1` turns missing tools into a failure. Every
//! counterexample found goes into `fixtures/shell/programs-counterexamples.txt`,
//! checked on every run.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use wait_timeout::ChildExt;

use gavel::{Action, Decision, Policy, ToolRequest, Workspace};

use crate::support::fixture;

const BASH: &str = "/usr/bin/bash";
const STRACE: &str = "/usr/bin/strace";
/// What is traced: programs run, files opened, and every call that changes
/// the file system or the clock.
const SYSCALLS: &str = "execve,execveat,openat,open,creat,truncate,rename,renameat,renameat2,\
                        unlink,unlinkat,mkdir,mkdirat,rmdir,mknod,mknodat,symlink,symlinkat,\
                        link,linkat,chmod,fchmodat,chown,lchown,fchownat,utimensat,\
                        settimeofday,clock_settime,clock_adjtime,adjtimex";
/// Refused outright, so that a wrongly allowed command harms nothing; the
/// attempt is still in the trace, and still a failure.
const REFUSED: &str = "unlink,unlinkat,rmdir,truncate,chmod,fchmodat,chown,lchown,fchownat,\
                       settimeofday,clock_settime,clock_adjtime,adjtimex";
/// The calls that change something; any of them is a write.
const MUTATING: &str = "creat,truncate,rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,\
                        rmdir,mknod,mknodat,symlink,symlinkat,link,linkat,chmod,fchmodat,chown,\
                        lchown,fchownat,utimensat,settimeofday,clock_settime,clock_adjtime,\
                        adjtimex";
const RUN_LIMIT: Duration = Duration::from_secs(2);
const DEFAULT_CASES: usize = 10_000;
const DEFAULT_SEED: u64 = 0x9a7e_2d11;
/// The fixture's folder name: the repository is `fx/repo`, the folder its
/// symlink leaves to is `outside-fx`, next to `fx`.
const NAME: &str = "fx";
const WORKERS: usize = 2;
/// Which programs each failure shows in full.
const SHOWN: usize = 25;

// ---------------------------------------------------------------------------
// The environment.

fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn which(program: &str) -> Option<PathBuf> {
    ["/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(program))
        .find(|p| p.is_file())
}

/// Why the harness cannot run here, or `None` when it can.
fn missing_tools() -> Option<String> {
    if !Path::new(BASH).is_file() {
        return Some(format!("{BASH} is missing"));
    }
    if !Path::new(STRACE).is_file() {
        return Some(format!("{STRACE} is missing (the `strace` package)"));
    }
    for (program, package) in [("rg", "ripgrep"), ("tree", "tree"), ("git", "git")] {
        if which(program).is_none() {
            return Some(format!("`{program}` is missing (the `{package}` package)"));
        }
    }
    let probe = Command::new(STRACE)
        .args(["-f", "-qq", "-e", "trace=execve", "-o", "/dev/null"])
        .args([BASH, "-c", ":"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match probe {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "strace cannot trace here (ptrace not permitted?): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(err) => Some(format!("strace cannot start: {err}")),
    }
}

/// `false` after a plain `skipped:` line, or a panic when
/// `GAVEL_DIFF_REQUIRE` asks for the harness to run.
fn can_run(test: &str) -> bool {
    let Some(why) = missing_tools() else {
        return true;
    };
    if std::env::var_os("GAVEL_DIFF_REQUIRE").is_some_and(|v| v != "0") {
        panic!("{test}: cannot run the program-model harness: {why}");
    }
    say(&format!("skipped: {test}: {why}"));
    false
}

fn preset() -> Policy {
    Policy::from_toml(gavel::policy::CODING_AGENT_POLICY_TOML, "preset").expect("the preset loads")
}

// ---------------------------------------------------------------------------
// The fixture: built once, copied for every run.

struct Fixture {
    _dir: tempfile::TempDir,
    /// Holds `fx/repo`, `outside-fx/`, `home/` and `tmp/`; copied whole per run.
    template: PathBuf,
    /// Where the copies go.
    cases: PathBuf,
}

/// One copy of the template: the repository to run in, `HOME`, and the
/// folder `HOOK_RAN` would appear in.
struct Case {
    _dir: tempfile::TempDir,
    root: PathBuf,
    repo: PathBuf,
    home: PathBuf,
    /// `TMPDIR`: what a program leaves there goes with the copy.
    tmp: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        // Every allowed command gets a fresh copy: on a tmpfs when there is
        // one, copying and removing ~90 files costs a tenth of a disk's.
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            tempfile::tempdir_in(shm).or_else(|_| tempfile::tempdir())
        } else {
            tempfile::tempdir()
        }
        .expect("a temporary folder");
        let root = dir.path().canonicalize().unwrap();
        let template = root.join("template");
        let cases = root.join("cases");
        std::fs::create_dir_all(template.join("home")).unwrap();
        std::fs::create_dir_all(template.join("tmp")).unwrap();
        std::fs::create_dir(&cases).unwrap();
        let script = fixture("shell/hostile/make.sh");
        let out = Command::new(BASH)
            .arg(&script)
            .arg(template.join(NAME))
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", template.join("home"))
            .stdin(Stdio::null())
            .output()
            .expect("run make.sh");
        assert!(
            out.status.success(),
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let repo = template.join(NAME).join("repo");
        std::fs::write(
            repo.join("gavel.toml"),
            gavel::policy::CODING_AGENT_POLICY_TOML,
        )
        .unwrap();
        Self {
            _dir: dir,
            template,
            cases,
        }
    }

    /// The pristine repository, for deciding without copying.
    fn repo(&self) -> PathBuf {
        self.template.join(NAME).join("repo")
    }

    /// A fresh copy of the template.
    fn copy(&self) -> Case {
        let dir = tempfile::tempdir_in(&self.cases).unwrap();
        let root = dir.path().to_path_buf();
        copy_tree(&self.template, &root).expect("copy the fixture");
        Case {
            repo: root.join(NAME).join("repo"),
            home: root.join("home"),
            tmp: root.join("tmp"),
            root,
            _dir: dir,
        }
    }
}

/// Copies a tree: folders, files with their permissions, symlinks as they are.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Runs `command` in `case.repo` under strace; the raw trace and stderr.
fn run(case: &Case, command: &str) -> Run {
    let trace_file = case.root.join("trace");
    let stderr_file = case.root.join("stderr");
    let stderr = std::fs::File::create(&stderr_file).unwrap();
    let mut child = Command::new(STRACE)
        .args(["--seccomp-bpf", "-f", "-qq", "-xx", "-y", "-s", "4096"])
        .args(["-e", "signal=none"])
        .arg("-e")
        .arg(format!("trace={SYSCALLS}"))
        .arg("-e")
        .arg(format!("inject={REFUSED}:error=EPERM"))
        .arg("-o")
        .arg(&trace_file)
        .args([BASH, "-c", command])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &case.home)
        .env("TMPDIR", &case.tmp)
        .env("LC_ALL", "C.UTF-8")
        .current_dir(&case.repo)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .process_group(0)
        .spawn()
        .expect("start strace");
    let timed_out = match child.wait_timeout(RUN_LIMIT).unwrap() {
        Some(_) => false,
        None => {
            // SAFETY: killpg takes plain integers and touches no memory.
            unsafe {
                libc::killpg(child.id() as libc::pid_t, libc::SIGKILL);
            }
            let _ = child.wait();
            true
        }
    };
    let trace = std::fs::read(&trace_file).unwrap_or_default();
    let mut stderr = std::fs::read(&stderr_file).unwrap_or_default();
    stderr.truncate(300);
    Run {
        calls: parse_trace(&String::from_utf8_lossy(&trace)),
        timed_out,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        hook_ran: case.root.join(NAME).join("HOOK_RAN").exists(),
    }
}

struct Run {
    calls: Vec<Call>,
    timed_out: bool,
    stderr: String,
    hook_ran: bool,
}

// ---------------------------------------------------------------------------
// Reading strace's output (`-xx`: every string hex-escaped; `-y`: file
// descriptors followed by their path in `<...>`, also hex-escaped).

/// One system call, its `unfinished`/`resumed` halves joined.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    /// The text between the parentheses, as strace printed it.
    args: String,
    /// After `= `: `0`, `3</path>`, `-1 ENOENT (...)`; empty when the trace
    /// ended first.
    result: String,
}

impl Call {
    fn ok(&self) -> bool {
        self.result.starts_with(|c: char| c.is_ascii_digit())
    }

    /// The quoted strings of the arguments, decoded, each with whether it
    /// sits inside the first `[...]` (an argv).
    fn strings(&self) -> Vec<(Vec<u8>, bool)> {
        let bytes = self.args.as_bytes();
        let (mut out, mut i, mut depth, mut arrays) = (Vec::new(), 0, 0, 0);
        while i < bytes.len() {
            match bytes[i] {
                b'[' => {
                    depth += 1;
                    arrays += 1;
                }
                b']' => depth -= 1,
                b'"' => {
                    let end = bytes[i + 1..]
                        .iter()
                        .position(|b| *b == b'"')
                        .map_or(bytes.len(), |p| i + 1 + p);
                    out.push((unhex(&self.args[i + 1..end]), depth > 0 && arrays == 1));
                    i = end;
                }
                _ => {}
            }
            i += 1;
        }
        out
    }

    fn paths(&self) -> Vec<Vec<u8>> {
        self.strings().into_iter().map(|(s, _)| s).collect()
    }

    /// The path `-y` printed after the result: what an open opened.
    fn opened(&self) -> Option<PathBuf> {
        let start = self.result.find('<')?;
        let end = self.result.rfind('>')?;
        (end > start).then(|| bytes_path(unhex(&self.result[start + 1..end])))
    }

    /// The folder the first argument names when it is a descriptor
    /// (`AT_FDCWD</cwd>`, `3</dir>`): where a relative path starts.
    fn dirfd(&self) -> Option<PathBuf> {
        let first = self.args.split(',').next()?;
        let start = first.find('<')?;
        let end = first.rfind('>')?;
        (end > start).then(|| bytes_path(unhex(&first[start + 1..end])))
    }

    /// The call as a readable line.
    fn show(&self) -> String {
        let text = format!("{}({}) = {}", self.name, self.args, self.result);
        String::from_utf8_lossy(&unhex(&text)).into_owned()
    }
}

fn bytes_path(bytes: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}

/// `\xHH` sequences decoded, everything else as it is.
fn unhex(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && bytes.get(i + 1) == Some(&b'x')
            && let Some(hex) = text.get(i + 2..i + 4)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

fn parse_trace(text: &str) -> Vec<Call> {
    let mut calls = Vec::new();
    let mut pending: HashMap<&str, String> = HashMap::new();
    for line in text.lines() {
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        let full = if let Some(resumed) = rest.strip_prefix("<... ") {
            let Some(head) = pending.remove(pid) else {
                continue;
            };
            let tail = resumed.split_once("resumed>").map_or("", |(_, t)| t);
            format!("{head}{tail}")
        } else {
            rest.to_owned()
        };
        if let Some(head) = full.strip_suffix("<unfinished ...>") {
            pending.insert(pid, head.to_owned());
            continue;
        }
        calls.extend(parse_call(&full));
    }
    // Calls the kill cut short: no result, but the attempt counts.
    calls.extend(pending.values().filter_map(|head| parse_call(head)));
    calls
}

fn parse_call(text: &str) -> Option<Call> {
    let open = text.find('(')?;
    let name = &text[..open];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let bytes = text.as_bytes();
    let (mut depth, mut i, mut quoted) = (0usize, open, false);
    let mut close = None;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            _ => {}
        }
        i += 1;
    }
    let (args, result) = match close {
        Some(close) => (
            &text[open + 1..close],
            text[close + 1..]
                .trim_start()
                .strip_prefix('=')
                .unwrap_or("")
                .trim(),
        ),
        None => (&text[open + 1..], ""),
    };
    Some(Call {
        name: name.to_owned(),
        args: args.trim_end().to_owned(),
        result: result.to_owned(),
    })
}

// ---------------------------------------------------------------------------
// The check.

/// What a run did wrong, one line each with the calls that show it; and
/// how many of its writes were git's own index refresh.
#[derive(Debug, Default)]
struct Verdict {
    problems: Vec<String>,
    index_refreshes: usize,
    /// The programs that ran (by basename), the first bash left out.
    execs: Vec<String>,
    /// Files outside the repository read as system files, in short
    /// (`/usr/lib/...`, `$HOME/.gitconfig`): the harness's exceptions.
    system: BTreeSet<String>,
}

/// `..` and `.` applied lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
            _ => {}
        }
    }
    out
}

/// Whether a program may open `path` (resolved) for reading although it is
/// outside the repository.
fn system_file(path: &Path, home: &Path, call: &Call) -> bool {
    let text = path.to_string_lossy();
    const PREFIXES: &[&str] = &[
        "/usr/",
        "/lib/",
        "/lib64/",
        "/lib32/",
        "/libx32/",
        "/proc/",
        "/sys/",
        "/dev/pts/",
        "/etc/terminfo/",
        "/etc/ssl/",
    ];
    const FILES: &[&str] = &[
        "/etc/ld.so.cache",
        "/dev/null",
        "/dev/urandom",
        "/dev/random",
        "/dev/tty",
        "/etc/localtime",
        "/etc/nsswitch.conf",
        "/etc/locale.alias",
        "/etc/gitconfig",
        "/usr/local/etc/gitconfig",
        "/etc/magic",
        "/etc/magic.mgc",
        "/etc/mime.types",
    ];
    if PREFIXES.iter().any(|p| text.starts_with(p)) || FILES.contains(&text.as_ref()) {
        return true;
    }
    // The C library reads the user and group databases for names (`ls -l`,
    // `whoami`, `stat`) with `O_CLOEXEC`; a program told to read them as
    // a file (`cat /etc/passwd`) does not.
    if matches!(text.as_ref(), "/etc/passwd" | "/etc/group") {
        return call.args.contains("O_CLOEXEC");
    }
    path == home.join(".gitconfig") || path.starts_with(home.join(".config/git"))
}

/// Whether a write goes to a device that stores nothing: `/dev/null`,
/// the terminal, or (spelled so) the command's own standard output, error
/// or an open descriptor, which the caller of the command chose.
fn harmless_write(requested: &[u8], resolved: &str) -> bool {
    let descriptor = requested
        .strip_prefix(b"/dev/fd/")
        .is_some_and(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit));
    descriptor
        || requested == b"/dev/stdout"
        || requested == b"/dev/stderr"
        || resolved == "/dev/null"
        || resolved == "/dev/tty"
        || resolved.starts_with("/dev/pts/")
}

/// A system file's path cut to what says why it is one: its first two
/// folders (`/usr/lib/...`), or `$HOME/...`.
fn short_system(path: &Path, home: &Path) -> String {
    if let Ok(rest) = path.strip_prefix(home) {
        return format!("$HOME/{}", rest.display());
    }
    let parts: Vec<_> = path.components().skip(1).collect();
    if matches!(parts.first(), Some(Component::Normal(top)) if *top == "proc" || *top == "sys") {
        let top: PathBuf = parts[..1].iter().collect();
        format!("/{}/...", top.display())
    } else if parts.len() > 2 {
        let head: PathBuf = parts[..2].iter().collect();
        format!("/{}/...", head.display())
    } else {
        path.display().to_string()
    }
}

fn is_index(path: &[u8]) -> bool {
    [&b".git/index.lock"[..], b".git/index"].iter().any(|end| {
        path == *end || (path.ends_with(end) && path[..path.len() - end.len()].ends_with(b"/"))
    })
}

/// Judges a run of a command whose parsed simple commands are `commands`
/// (program first).
fn check(case: &Case, commands: &[Vec<String>], ran: &Run) -> Verdict {
    let mut verdict = Verdict::default();
    let mut problems = Vec::new();
    let mut allowed: BTreeSet<&str> = commands
        .iter()
        .filter_map(|c| c.first())
        .map(String::as_str)
        .collect();
    if allowed.contains("egrep") || allowed.contains("fgrep") {
        // Debian's egrep and fgrep are `exec grep -E/-F "$@"` scripts.
        allowed.insert("grep");
    }
    // git's optional index refresh (`.git/index.lock` renamed over
    // `.git/index`), which `status` and `diff` make: git's own cache.
    let git_status = commands.iter().any(|c| {
        c.first().is_some_and(|p| p == "git") && c.iter().any(|w| w == "status" || w == "diff")
    });
    let repo = &case.repo;
    let record = repo.join(".gavel");
    let mut first_exec = true;
    for call in &ran.calls {
        match call.name.as_str() {
            "execve" | "execveat" => {
                let strings = call.strings();
                let path = strings
                    .iter()
                    .find(|(_, in_array)| !*in_array)
                    .map(|(s, _)| s.clone())
                    .unwrap_or_default();
                if first_exec && path == BASH.as_bytes() {
                    first_exec = false;
                    continue;
                }
                first_exec = false;
                let name = path.rsplit(|b| *b == b'/').next().unwrap_or_default();
                let name = String::from_utf8_lossy(name);
                if call.ok() {
                    verdict.execs.push(name.clone().into_owned());
                }
                if !allowed.contains(name.as_ref()) {
                    let what = if name.starts_with("git-") {
                        "a git helper"
                    } else {
                        "a program the command does not name"
                    };
                    problems.push(format!("runs {what}: {}", call.show()));
                }
            }
            "open" | "openat" | "creat" => {
                let flags = &call.args;
                let writes = call.name == "creat"
                    || ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC"]
                        .iter()
                        .any(|f| flags.contains(f));
                let requested = call.paths().into_iter().next().unwrap_or_default();
                let resolved = call.opened().or_else(|| {
                    let raw = bytes_path(requested.clone());
                    if raw.is_absolute() {
                        Some(normalize(&raw))
                    } else {
                        call.dirfd().map(|d| normalize(&d.join(raw)))
                    }
                });
                if writes {
                    let shown = resolved
                        .as_ref()
                        .map(|p| p.to_string_lossy().into_owned())
                        .unwrap_or_else(|| String::from_utf8_lossy(&requested).into_owned());
                    if harmless_write(&requested, &shown) {
                        continue;
                    }
                    if git_status && is_index(&requested) {
                        verdict.index_refreshes += 1;
                        continue;
                    }
                    problems.push(format!("writes `{shown}`: {}", call.show()));
                    continue;
                }
                if !call.ok() {
                    continue;
                }
                let Some(path) = resolved else {
                    problems.push(format!("opens a path it cannot resolve: {}", call.show()));
                    continue;
                };
                if path.starts_with(&record) && path != record {
                    problems.push(format!("reads gavel's record: {}", call.show()));
                } else if !path.starts_with(repo) {
                    let raw = bytes_path(requested.clone());
                    let lexical = raw.is_absolute().then(|| normalize(&raw));
                    let system = system_file(&path, &case.home, call)
                        || lexical.is_some_and(|l| {
                            system_file(&l, &case.home, call) && !path.starts_with(&case.root)
                        });
                    if system {
                        verdict.system.insert(short_system(&path, &case.home));
                    } else {
                        problems.push(format!(
                            "reads outside the repository (`{}`): {}",
                            path.display(),
                            call.show()
                        ));
                    }
                }
            }
            name if MUTATING.split(',').any(|m| m == name) => {
                let paths = call.paths();
                if git_status
                    && !paths.is_empty()
                    && paths.iter().all(|p| is_index(p))
                    && matches!(
                        name,
                        "rename" | "renameat" | "renameat2" | "unlink" | "unlinkat"
                    )
                {
                    verdict.index_refreshes += 1;
                    continue;
                }
                problems.push(format!("changes the system: {}", call.show()));
            }
            _ => {}
        }
    }
    if ran.hook_ran {
        problems.push("a git hook ran: `HOOK_RAN` exists".to_owned());
    }
    if ran.calls.is_empty() {
        problems.push("strace recorded nothing".to_owned());
    }
    // One line per kind of problem and call is enough.
    let mut seen = BTreeSet::new();
    problems.retain(|p| seen.insert(p.clone()));
    verdict.problems = problems;
    verdict
}

// ---------------------------------------------------------------------------
// One command: decide, and run only what is allowed.

/// What the preset decided to allow, and the simple commands it parsed.
struct Allowed {
    decision: Decision,
    commands: Vec<Vec<String>>,
}

/// Decides `command` in `workspace`; `Some` when the preset allows it.
fn decide(workspace: &Workspace, policy: &Policy, command: &str) -> Option<Allowed> {
    let request = ToolRequest::new("1", "bash", json!({ "command": command }));
    let facts = workspace.facts(&request);
    let decision = policy.decide(&request, &facts);
    (decision.action == Action::Allow).then(|| Allowed {
        decision,
        commands: facts
            .shell
            .as_ref()
            .map(|a| a.commands.iter().map(|c| c.words.clone()).collect())
            .unwrap_or_default(),
    })
}

/// What running an allowed command did: the verdict, whether it was
/// killed, and a report when it failed.
struct Outcome {
    verdict: Verdict,
    timed_out: bool,
    report: String,
}

/// Runs an allowed command in a fresh copy of the fixture (the same layout
/// as the pristine one it was decided in) and judges the trace.
fn run_allowed(fixture: &Fixture, command: &str, allowed: &Allowed) -> Outcome {
    let case = fixture.copy();
    let ran = run(&case, command);
    let verdict = check(&case, &allowed.commands, &ran);
    let mut report = String::new();
    if !verdict.problems.is_empty() {
        let decision = &allowed.decision;
        let _ = writeln!(report, "command: {command}");
        let _ = writeln!(
            report,
            "  gavel: {} {} ({})",
            decision.action, decision.rule_id, decision.reason
        );
        for words in &allowed.commands {
            let _ = writeln!(report, "  parsed: {words:?}");
        }
        for problem in &verdict.problems {
            let _ = writeln!(report, "  FAIL: {problem}");
        }
        if ran.timed_out {
            let _ = writeln!(report, "  (killed after {}s)", RUN_LIMIT.as_secs());
        }
        if !ran.stderr.trim().is_empty() {
            let _ = writeln!(report, "  stderr: {:?}", ran.stderr);
        }
    }
    // Paths inside the copy, shown from it: `<copy>/fx/repo/...`.
    let report = report.replace(&case.root.to_string_lossy().into_owned(), "<copy>");
    Outcome {
        verdict,
        timed_out: ran.timed_out,
        report,
    }
}

// ---------------------------------------------------------------------------
// The generator.
//
// Lists of options, operands and scripts are written as one string of
// alternatives separated by ` | `; an option that takes a value is its
// words separated by spaces (`-o out.txt`).

/// The alternatives of a ` | `-separated list.
fn alternatives(list: &str) -> impl Iterator<Item = &str> {
    list.split(" | ").map(str::trim).filter(|s| !s.is_empty())
}

/// A word of a command: quoted when it needs to be (and sometimes when it
/// does not), or raw so that bash expands it (a glob, `~`, `$PWD`).
enum W {
    Lit(String),
    Raw(String),
}

fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn plain(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('~')
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:=,+%@^-".contains(&b))
}

/// How a program's operands read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Files and folders (the hostile pool).
    Files,
    /// A pattern first, then files.
    Pattern,
    /// A sed script first, then files.
    Script,
    /// Words that are not files (printed, or names).
    Text,
    /// No operands.
    Nothing,
    /// Exactly two files (`diff`, `cmp`).
    Two,
}

/// A program of the preset; each field a ` | `-separated list.
struct Spec {
    program: &'static str,
    /// Options that only change what is printed.
    safe: &'static str,
    /// Options that run, write, read a list of files, set the clock, or
    /// are unknown, and abbreviations of them.
    risky: &'static str,
    /// Options that walk, follow symlinks or read hidden names.
    walk: &'static str,
    /// Options that leave names out of a walk.
    exclude: &'static str,
    /// One of these comes first, when not empty (`cut -c 1-3`, `tr a-z A-Z`).
    first: &'static str,
    kind: Kind,
}

const fn spec(program: &'static str, safe: &'static str, kind: Kind) -> Spec {
    Spec {
        program,
        safe,
        risky: "",
        walk: "",
        exclude: "",
        first: "",
        kind,
    }
}

const GREP_SAFE: &str = "-n | -i | -v | -c | -l | -H | -h | -o | -E | -F | -w | -x | -s | -q | \
    -A 1 | -B1 | -C 1 | --color=never | -m 1 | -a | -I | --include=*.rs | --include=*.md | -Z | \
    -L | --null | --max-count=1 | --line-n";
const GREP_RISKY: &str = "-d recurse | --directories=recurse | --dir=recurse | \
    -f link_out/secret.txt | -f README.md | -f .gavel/audit.db | -f - | \
    --exclude-from=README.md | --exclude-from=link_out/secret.txt | -D read | --no-such-option";
const GREP_WALK: &str = "-r | -R | -rn | -Rn | -ril | -rl | -rL | --recursive | --rec | -Rs | \
    --dereference-recursive | --deref";
const GREP_EXCLUDE: &str = "--exclude-dir=.gavel | --exclude-dir=.gavel --exclude-dir=.git | \
    --exclude-dir=.git | --exclude-dir=.g* | --exclude-dir=.* | --exclude=*.db | \
    --exclude-d=.gavel";
const CHECKSUM_SAFE: &str = "-b | -t | --tag | -z | --binary | --text";
const CHECKSUM_RISKY: &str = "-c | --check | -c - | --check README.md | -c --status | \
    -c --ignore-missing | --ch | -cw";

const SPECS: &[Spec] = &[
    Spec {
        walk: "-R | -LR | -L | -lR | -RL | --recursive | --rec | -aR | --dereference -R",
        exclude: "-I .gavel | --ignore=.gavel | --hide=.gavel",
        risky: "--no-such-option | -Z | --hyperlink",
        ..spec(
            "ls",
            "-l | -a | -la | -1 | -d | -h | -A | -F | -i | -s | -t | -r | --color=never | \
             --all | --almost | --human | -lh | --sort=size | -I README.md | --hide=*.rs | \
             -w 80 | --format=long | -H",
            Kind::Files,
        )
    },
    spec(
        "cat",
        "-n | -A | -b | -s | -v | -E | -T | -e | --number | --show-all | --num",
        Kind::Files,
    ),
    spec(
        "head",
        "-n 2 | -2 | -c 10 | --lines=2 | --li=2 | -q | -v | -n -1 | --bytes=5 | -z",
        Kind::Files,
    ),
    spec(
        "tail",
        "-n 2 | -3 | -c 10 | --lines=1 | -q | -v | -n +2 | --bytes=4 | -z",
        Kind::Files,
    ),
    Spec {
        risky: "--files0-from=- | --files0-from=README.md | --files0=- | --files0-from - | \
                --files0-from=link_out/secret.txt",
        ..spec(
            "wc",
            "-l | -w | -c | -m | -L | --lines | --total=never | --li",
            Kind::Files,
        )
    },
    spec("nl", "-ba | -n ln | -w 3 | -s : | -v 10 | -p", Kind::Files),
    Spec {
        risky: "-f - | -f README.md | -C -m x | -z | -Z | -p | -m link_out/secret.txt | \
                --files-from=- | --files=- | --compile | -m .gavel/audit.db | -E | \
                --uncompress | --unc",
        ..spec(
            "file",
            "-b | -i | -L | -h | -k | --mime-type | -s | -N | -0 | --extension | -r | -S | \
             --brief | -l",
            Kind::Files,
        )
    },
    spec(
        "stat",
        "-L | -c %n | -t | --format=%s | -f | --printf=%n\\n | --terse | -c %N | --deref",
        Kind::Files,
    ),
    Spec {
        walk: "-L | --dereference | -aL | --deref",
        exclude: "--exclude=.gavel | --exclude=.git | --exclude=.g*",
        risky: "--files0-from=- | -X README.md | --exclude-from=link_out/secret.txt | \
                --files0-from=README.md",
        ..spec(
            "du",
            "-s | -h | -a | -d 1 | -b | --max-depth=1 | -c | -k | -x | -0 | --apparent-size | \
             -sh | --max=0",
            Kind::Files,
        )
    },
    Spec {
        risky: GREP_RISKY,
        walk: GREP_WALK,
        exclude: GREP_EXCLUDE,
        ..spec("grep", GREP_SAFE, Kind::Pattern)
    },
    Spec {
        risky: GREP_RISKY,
        walk: GREP_WALK,
        exclude: GREP_EXCLUDE,
        ..spec("egrep", GREP_SAFE, Kind::Pattern)
    },
    Spec {
        risky: GREP_RISKY,
        walk: GREP_WALK,
        exclude: GREP_EXCLUDE,
        ..spec("fgrep", GREP_SAFE, Kind::Pattern)
    },
    Spec {
        risky: "--pre=sh | --pre sh | --pre=./x | --pr=sh | --pre=cat | --pre=sh --pre-glob=* | \
                -z | --search-zip | --search | --hostname-bin=sh | \
                --ignore-file .gavel/audit.db | --ignore-file=link_out/secret.txt | \
                -f link_out/secret.txt | -f README.md | -f - | --no-such-option",
        walk: "--hidden | -uu | -u | -uuu | -L | --follow | --no-ignore | -. | --hid | -g *.rs | \
               --glob=*.md | --iglob=*.rs | --no-ignore-vcs | -uL",
        exclude: "-g !.gavel | --glob=!.gavel | -g !.gavel/** | --glob !.git | -g !link_out",
        ..spec(
            "rg",
            "-n | -i | -l | -c | -F | -w | --files | -t rust | -t md | --type=rust | \
             --max-depth 1 | --sort path | -j1 | -N | -H | --no-heading | --json | -o | -v | \
             -S | --color=never | --no-config | --no-messages | -a | --trim | --stats | \
             -e hello | --pre-glob=*.gz | --no-pre | --files-with | -0",
            Kind::Pattern,
        )
    },
    Spec {
        risky: "-o out.txt | -o gavel.toml | -R | --fromfile | --fromfile README.md | \
                --infofile README.md | --gitfile=link_out/secret.txt | -H . -o out.html | \
                -o /dev/null | --no-such-option",
        walk: "-a | -l | -la | -al | -a -l",
        exclude: "-I .gavel | -I .gavel|.git | -I .g* | -I link_out",
        ..spec(
            "tree",
            "-d | -L 2 | -f | -i | --noreport | -C | -n | -J | -X | -s | -h | -p | --du | \
             --gitignore | --charset=ascii | -F | -D | --dirsfirst | -Q | -N | -v | -r | -t | \
             -x | -P *.rs | --prune | --matchdirs | --filelimit 10",
            Kind::Files,
        )
    },
    Spec {
        risky: "-i | -i.bak | --in-place | -ibak | --in=.bak | -f README.md | \
                -f link_out/secret.txt | -s -i",
        ..spec(
            "sed",
            "-n | -E | -r | -s | -z | -u | --posix | --debug | -l 5 | --follow-symlinks",
            Kind::Script,
        )
    },
    spec("which", "-a | -s", Kind::Text),
    spec("echo", "-n | -e | -E", Kind::Text),
    spec("printf", "", Kind::Text),
    spec("true", "", Kind::Text),
    spec("false", "", Kind::Text),
    spec("pwd", "-L | -P", Kind::Nothing),
    Spec {
        walk: "-r | --recursive | -rq | -ru",
        exclude: "-x .gavel | --exclude=.gavel | -x .git | -x .g*",
        risky: "-l | --paginate | --pag | -lr | --from-file=link_out/secret.txt | \
                --to-file=.gavel/audit.db | -X README.md | --no-dereference",
        ..spec(
            "diff",
            "-u | -q | -N | -i | -w | --brief | --color=never | -a | -b | -B | -s | -c | -y | \
             -U 1 | --normal | --label=x | --strip",
            Kind::Two,
        )
    },
    spec(
        "cmp",
        "-l | -s | -b | -n 10 | -i 1 | --verbose | --quiet",
        Kind::Two,
    ),
    Spec {
        risky: "--compress-program=sh | --compress=sh | --co=sh | --compress-program sh | \
                -S1 --compress-program=sh | --batch-size=2 --compress-program=cat | \
                -o out.txt | -o gavel.toml | --output=out.txt | --out=out.txt | --o=out.txt | \
                -oout.txt | -T d | -T /tmp | --temporary-directory=src | --tem=src | \
                --files0-from=- | --files0-from=README.md | \
                --random-source=link_out/secret.txt | --random-source=README.md",
        ..spec(
            "sort",
            "-r | -n | -u | -f | -k 1 | -t , | -s | -b | -V | -c | -C | --debug | \
             --parallel=1 | -S 1M | -h | -M | -R | -z | -m | --sort=version | -g | --rev",
            Kind::Files,
        )
    },
    spec(
        "uniq",
        "-c | -d | -u | -i | -D | -f 1 | -s 1 | -w 2 | -z | --group | \
         --all-repeated=separate",
        Kind::Files,
    ),
    Spec {
        first: "-c 1-3 | -f 1 | -b 1 | -d , -f 1 | --characters=1 | -d : -f 2 -s",
        ..spec(
            "cut",
            "--complement | -s | -z | --output-delimiter=:",
            Kind::Files,
        )
    },
    Spec {
        first: "a-z A-Z | -d a | -s ab | -c a b | -cd a | ab ba | -t abc xy",
        ..spec("tr", "", Kind::Nothing)
    },
    spec("basename", "-a | -s .rs | -z | --suffix=.md", Kind::Text),
    spec("dirname", "-z", Kind::Text),
    Spec {
        risky: "--relative-to=link_out | --relative-to=/etc | --relative-base=.gavel",
        ..spec(
            "realpath",
            "-e | -m | -s | -q | -z | -L | -P | --relative-to=src | --relative-base=. | \
             --no-symlinks",
            Kind::Files,
        )
    },
    spec(
        "readlink",
        "-f | -e | -m | -n | -q | -v | -z | -s",
        Kind::Files,
    ),
    Spec {
        risky: "-s 2020-01-01 | --set=2020-01-01 | 0101000026 | -s @0 | --se=@0 | \
                -f README.md | -f link_out/secret.txt | -r link_out/secret.txt | \
                -r .gavel/audit.db | -f - | --file=.gavel/audit.db",
        ..spec(
            "date",
            "+%s | -u | -d @0 | --date=@0 | -R | -I | --iso-8601=seconds | -r README.md | \
             --utc | +%Y-%m-%d | --rfc-3339=date | --debug | --reference=README.md | \
             --resolution",
            Kind::Nothing,
        )
    },
    Spec {
        risky: "--help | --no-such-option",
        ..spec("whoami", "", Kind::Nothing)
    },
    spec(
        "uname",
        "-a | -s | -r | -m | -n | -o | -p | -i | -v | --all",
        Kind::Nothing,
    ),
    Spec {
        risky: CHECKSUM_RISKY,
        ..spec("sha256sum", CHECKSUM_SAFE, Kind::Files)
    },
    Spec {
        risky: CHECKSUM_RISKY,
        ..spec("sha1sum", CHECKSUM_SAFE, Kind::Files)
    },
    Spec {
        risky: CHECKSUM_RISKY,
        ..spec("sha512sum", CHECKSUM_SAFE, Kind::Files)
    },
    Spec {
        risky: CHECKSUM_RISKY,
        ..spec("md5sum", CHECKSUM_SAFE, Kind::Files)
    },
];

/// Operands inside the repository.
const INSIDE: &str = "README.md | src/main.rs | src/lib.rs | Cargo.toml | docs/a.md | \
    .gitignore | a.gz | src/inner/a.md | gavel.toml | ./-ogavel.toml | ./--output=x | ./-f | \
    src | docs | . | src/inner | nonexistent | ./ | docs/";
/// Operands that leave the repository, name gavel's record, or read as options.
const HOSTILE: &str = "link_out | link_out/secret.txt | link_out/ | .gavel | .gavel/audit.db | \
    .gavel/audit.db.redact-key | ../ | .. | /etc/passwd | -ogavel.toml | --output=x | -f | \
    ../../outside-fx/secret.txt | .git | .git/config | /dev/null | /tmp | \
    src/inner/../../link_out/secret.txt | ./.gavel/../README.md | src/../.gavel/audit.db";
/// Left unquoted: bash expands them.
const RAW: &str = "~ | ~/.gitconfig | ~+ | ~+/README.md | * | [-]o* | -* | src/* | ** | .g* | \
    docs/* | *.md | src/*.rs | .* | */* | ?* | link_*/* | .gav*/* | $PWD/README.md | \
    \"$PWD\"/link_out";
const PATTERNS: &str = "a | hello | ^# | x|y | fn | secret | SQLite | a b | -e";
const SED_SAFE: &str = "p | 1p | 1,2p | $p | 2q | = | 1d | s/a/b/ | s/a/b/g | s/a/b/2p | l | \
    n;p | 1!d";
const SED_RISKY: &str = "s/a/b/w out.txt | w out.txt | 1e | e id | s/a/b/e | r /etc/passwd | \
    1r link_out/secret.txt | W out.txt | s/a/b/w /dev/stdout | R README.md | F | y/ab/ba/ | \
    s|a|b| | 1w gavel.toml";
const TEXT: &str = "hello | a b | %s\\n | x\\0 | -n | ls | git | sh | rg | src/main.rs | \
    link_out/secret.txt | .gavel/audit.db | --output=gavel.toml | -e | $HOME";
const REDIRECTS: &str = "2>/dev/null | >/dev/null | < README.md | <README.md | 2>&1 | \
    &>/dev/null | < link_out/secret.txt | < .gavel/audit.db | > out.txt | >> out.txt | \
    < /etc/passwd | > gavel.toml | < gavel.toml | 2>/dev/stderr | </dev/null";
const CD: &str = "cd src && | cd .. && | cd docs; | cd src/inner && | cd link_out && | \
    cd .git && | cd -P src && | cd ~ && | cd && | cd src; cd .. && | cd .gavel && | \
    cd ./src/../docs &&";
/// Whole commands that read what arrives on stdin.
const CONSUMERS: &str = "grep a | grep -c a | sort | sort -u | head -n 2 | tail -1 | wc -l | \
    uniq -c | cut -c 1-3 | tr a-z A-Z | sed -n 1p | sha256sum | md5sum | cat -n | nl | file - | \
    file -f - | sort --files0-from=- | wc --files0-from=- | xargs git log | xargs cat | \
    xargs ls | rg a | sed 1e | diff - README.md | cmp - README.md | sort -o out.txt | \
    uniq - out.txt";
/// Whole commands: what arrives on stdin.
const STDIN: &[&str] = &[
    "echo '--output=gavel.toml' | xargs git log",
    "printf 'x\\0' | sort --files0-from=-",
    "echo /etc/passwd | file -f -",
    "printf 'link_out/secret.txt\\0' | wc --files0-from=-",
    "echo .gavel/audit.db | xargs cat",
    "find . -print0 | sort -z",
    "git ls-files | grep a",
    "git ls-files -z | sort -z",
    "echo README.md | sha256sum -c",
    "printf 'README.md\\n' | file -f -",
    "ls | sort",
    "echo link_out/secret.txt | xargs cat",
    "git log --format=%H | head -1",
    "cat README.md | sed -n 1p",
    "echo 1e | sed -f -",
    "printf '%s\\n' a b | uniq - out.txt",
];
/// Shell state a printing builtin or `cd` can change: does the decision see it?
const BUILTIN_STATE: &[&str] = &[
    "printf -v PWD %s /etc && cat \"$PWD\"/passwd",
    "printf -v PWD %s .. && ls \"$PWD\"",
    "printf -v CDPATH %s ../.. && cd outside-fx && cat secret.txt",
    "printf -v CDPATH %s ../.. && cd fx && ls",
    "printf -v HOME %s link_out && cat ~/secret.txt",
    "printf -v HOME %s . && git log -1",
    "printf -v OLDPWD %s ../.. && cd - && ls",
    "printf -v PATH %s src && ls",
    "printf -v GIT_DIR %s link_out && git status",
    "cd link_out/.. && cat README.md",
    "cd src/inner/.. && ls",
];
const FIND_SAFE: &str = "-name *.rs | -type f | -type d | -maxdepth 1 | -mindepth 1 | -print | \
    -print0 | -ls | -newer README.md | -iname readme* | -path ./.gavel -prune -o -print | \
    -name .gavel -prune -o -print | -size -1k | -empty | -printf %p\\n | -not -name x | \
    -follow | -xdev | -depth | -newer link_out/secret.txt";
const FIND_RISKY: &str = "-exec cat {} ; | -exec cat {} + | -execdir cat {} ; | -ok cat {} ; | \
    -okdir cat {} ; | -delete | -fprint out.txt | -fprint0 out.txt | -fls out.txt | \
    -fprintf out.txt %p | -files0-from README.md | -exec sh -c id ; | -fprint gavel.toml";
const GIT_GLOBAL: &str = "--no-pager | -P | --no-optional-locks | -C src | -C . | \
    --git-dir=.git | --work-tree=. | --literal-pathspecs | -C link_out | --git-dir=.gavel | \
    -c core.pager=sh | -c core.pager=cat | -c diff.external=sh | -c core.fsmonitor=./x | \
    --config-env=core.pager=HOME | -p | --paginate | --exec-path=. | -c alias.log=!sh | --bare";
const GIT_OTHER: &str = "checkout main | config core.pager | stash | gc | fetch";
const LOG_SAFE: &str = "--oneline | -n 1 | -1 | --stat | -p | --format=%H | --all | --graph | \
    --decorate | --pretty=oneline | --name-only | --reverse | --abbrev-commit | --date=iso | \
    -3 | --max-count=2 | --no-ext-diff | --no-textconv | --follow";
const LOG_RISKY: &str = "--output=out.txt | --out=out.txt | --output=gavel.toml | \
    --output out.txt | --show-signature | --ext-diff | --textconv | --help | -p --ext-diff | \
    --ext | --textconv -p";
/// git subcommands: name, safe options, risky options, operands.
const GIT: &[(&str, &str, &str, Kind)] = &[
    (
        "status",
        "-s | -b | --short | --porcelain | --porcelain=v2 | -uall | -uno | \
         --untracked-files=all | --ignored | -z | --long | -v | --no-renames | --ahead-behind | \
         --column=never | --show-stash",
        "--help | --no-such-option",
        Kind::Files,
    ),
    (
        "diff",
        "--stat | --cached | --name-only | --name-status | HEAD | -U1 | --color=never | \
         --no-color | -w | --numstat | --shortstat | --no-ext-diff | --patch | -R | \
         --exit-code | --quiet",
        "--output=out.txt | --out=out.txt | --output=gavel.toml | --ext-diff | --textconv | \
         --no-index | --help | --ext",
        Kind::Files,
    ),
    ("log", LOG_SAFE, LOG_RISKY, Kind::Files),
    ("log", LOG_SAFE, LOG_RISKY, Kind::Files),
    ("show", LOG_SAFE, LOG_RISKY, Kind::Text),
    (
        "branch",
        "-a | -v | -vv | --list | --show-current | -r | -l | --no-color | \
         --format=%(refname) | --contains HEAD | --merged | --sort=refname | --column=never",
        "-D main | -d main | -m newname | -c newname | -f newname | -u main | newname | -M x | \
         -C x | --edit-description | --set-upstream-to=main | --unset-upstream | -t x | \
         --list newname | --mov x",
        Kind::Nothing,
    ),
    (
        "rev-parse",
        "HEAD | --show-toplevel | --git-dir | --abbrev-ref HEAD | --is-inside-work-tree | \
         --short HEAD | --verify HEAD | --git-path index | --show-prefix | --absolute-git-dir",
        "--resolve-git-dir .git | --resolve-git-dir link_out | --parseopt",
        Kind::Nothing,
    ),
    (
        "ls-files",
        "-o | -c | --others | -s | -z | --exclude-standard | -i -o --exclude-standard | -m | \
         -d | --directory | -t | --eol | --debug | --format=%(path)",
        "-X .gavel/audit.db | --exclude-from=link_out/secret.txt | -o --directory",
        Kind::Files,
    ),
    (
        "blame",
        "-L 1,2 | -s | -e | -l | -w | -p | --line-porcelain | -M | -C | --root | -b | -t",
        "--contents link_out/secret.txt | --contents=.gavel/audit.db | \
         -S link_out/secret.txt | --ignore-revs-file=README.md",
        Kind::Two,
    ),
];
const REVISIONS: &str = "HEAD | HEAD:README.md | HEAD:link_out | HEAD~0 | main";
const BLAMED: &str = "README.md | src/lib.rs | link_out | docs/a.md | gavel.toml | src/inner/a.md";

struct Gen {
    state: u64,
}

impl Gen {
    fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// splitmix64.
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    /// One alternative of a ` | `-separated list.
    fn one<'a>(&mut self, list: &'a str) -> &'a str {
        let items: Vec<&str> = alternatives(list).collect();
        self.pick(&items)
    }

    /// One option of a list, as its words.
    fn option(&mut self, list: &str) -> Vec<W> {
        let entry = self.one(list);
        entry.split(' ').map(|w| W::Lit(w.to_owned())).collect()
    }

    /// The words as bash text: literal words bare when they can be (four
    /// times in five), single-quoted otherwise.
    fn render(&mut self, words: &[W]) -> String {
        let mut out = Vec::new();
        for word in words {
            out.push(match word {
                W::Raw(text) => text.clone(),
                W::Lit(text) if plain(text) && !self.chance(20) => text.clone(),
                W::Lit(text) => quote(text),
            });
        }
        out.join(" ")
    }

    fn operand(&mut self) -> W {
        match self.below(100) {
            0..=49 => W::Lit(self.one(INSIDE).to_owned()),
            50..=77 => W::Lit(self.one(HOSTILE).to_owned()),
            _ => W::Raw(self.one(RAW).to_owned()),
        }
    }

    /// A whole command.
    fn command(&mut self) -> String {
        match self.below(100) {
            0..=3 => return self.pick(STDIN).to_owned(),
            4..=5 => return self.pick(BUILTIN_STATE).to_owned(),
            _ => {}
        }
        let mut out = String::new();
        if self.chance(12) {
            out.push_str(self.one(CD));
            out.push(' ');
        }
        out.push_str(&self.simple());
        if self.chance(15) {
            let consumer = if self.chance(50) {
                self.one(CONSUMERS).to_owned()
            } else {
                self.simple()
            };
            out.push_str(" | ");
            out.push_str(&consumer);
        }
        if self.chance(18) {
            out.push(' ');
            out.push_str(self.one(REDIRECTS));
        }
        if self.chance(6) {
            let sep = self.pick(&[" && ", "; ", " || "]);
            let next = self.simple();
            out.push_str(sep);
            out.push_str(&next);
        }
        out
    }

    fn simple(&mut self) -> String {
        if self.chance(18) {
            return self.git();
        }
        if self.chance(6) {
            return self.find();
        }
        let mut spec = &SPECS[self.below(SPECS.len())];
        if matches!(spec.kind, Kind::Text | Kind::Nothing) && self.chance(50) {
            // Programs that read no file need fewer runs.
            spec = &SPECS[self.below(SPECS.len())];
        }
        let mut options: Vec<Vec<W>> = Vec::new();
        if !spec.safe.is_empty() {
            for _ in 0..self.below(3) {
                options.push(self.option(spec.safe));
            }
        }
        if !spec.risky.is_empty() && self.chance(40) {
            options.push(self.option(spec.risky));
        }
        if !spec.walk.is_empty() && self.chance(40) {
            options.push(self.option(spec.walk));
        }
        if !spec.exclude.is_empty() && self.chance(35) {
            options.push(self.option(spec.exclude));
        }
        // Options in any order; GNU programs also take them after operands.
        for i in (1..options.len()).rev() {
            let j = self.below(i + 1);
            options.swap(i, j);
        }
        let late = if !options.is_empty() && self.chance(15) {
            options.pop()
        } else {
            None
        };
        let mut words = vec![W::Lit(spec.program.to_owned())];
        if !spec.first.is_empty() {
            words.extend(self.option(spec.first));
        }
        // `--` before the options makes them operands.
        let dash_first = self.chance(4);
        if dash_first {
            words.push(W::Raw("--".to_owned()));
        }
        for option in options {
            words.extend(option);
        }
        match spec.kind {
            Kind::Pattern if self.chance(85) => {
                words.push(W::Lit(self.one(PATTERNS).to_owned()));
            }
            Kind::Script => {
                let script = if self.chance(25) {
                    self.one(SED_RISKY)
                } else {
                    self.one(SED_SAFE)
                };
                if self.chance(20) {
                    words.push(W::Lit("-e".to_owned()));
                }
                if self.chance(10) {
                    words.push(W::Lit("--sandbox".to_owned()));
                }
                words.push(W::Lit(script.to_owned()));
            }
            _ => {}
        }
        if !dash_first && self.chance(12) {
            words.push(W::Raw("--".to_owned()));
        }
        let count = match spec.kind {
            Kind::Nothing => 0,
            Kind::Two => 2,
            _ => self.below(3),
        };
        for _ in 0..count {
            let word = if spec.kind == Kind::Text && self.chance(70) {
                W::Lit(self.one(TEXT).to_owned())
            } else {
                self.operand()
            };
            words.push(word);
        }
        if spec.program == "uniq" && self.chance(10) {
            words.push(W::Lit("out.txt".to_owned()));
        }
        if let Some(option) = late {
            words.extend(option);
        }
        self.render(&words)
    }

    fn find(&mut self) -> String {
        let mut words = vec![W::Lit("find".to_owned())];
        if self.chance(20) {
            words.push(W::Lit(self.one("-L | -H | -P").to_owned()));
        }
        for _ in 0..self.below(3) {
            words.push(self.operand());
        }
        for _ in 0..self.below(3) {
            words.extend(self.option(FIND_SAFE));
        }
        if self.chance(30) {
            words.extend(self.option(FIND_RISKY));
        }
        self.render(&words)
    }

    fn git(&mut self) -> String {
        let mut words = vec![W::Lit("git".to_owned())];
        if self.chance(25) {
            words.extend(self.option(GIT_GLOBAL));
        }
        if self.chance(2) {
            words.extend(self.option(GIT_OTHER));
            return self.render(&words);
        }
        let (sub, safe, risky, kind) = GIT[self.below(GIT.len())];
        words.push(W::Lit(sub.to_owned()));
        for _ in 0..self.below(3) {
            words.extend(self.option(safe));
        }
        if self.chance(30) {
            words.extend(self.option(risky));
        }
        match kind {
            Kind::Text if self.chance(50) => {
                words.push(W::Lit(self.one(REVISIONS).to_owned()));
            }
            Kind::Files | Kind::Text if self.chance(40) => {
                if self.chance(50) {
                    words.push(W::Raw("--".to_owned()));
                }
                words.push(self.operand());
            }
            Kind::Two => words.push(W::Lit(self.one(BLAMED).to_owned())),
            _ => {}
        }
        self.render(&words)
    }
}

fn generated(seed: u64, case: usize) -> String {
    Gen::new(seed ^ (case as u64).wrapping_mul(0x2545_f491_4f6c_dd1d)).command()
}

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    let value = value.trim();
    match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => value.parse().ok(),
    }
}

// ---------------------------------------------------------------------------
// The tests.

#[derive(Default)]
struct Tally {
    generated: usize,
    allowed: usize,
    timeouts: usize,
    index_refreshes: usize,
    decide: Duration,
    run: Duration,
    by_program: BTreeMap<String, usize>,
    executed: BTreeMap<String, usize>,
    system: BTreeSet<String>,
    slowest: (Duration, String),
    killed: Vec<String>,
    failures: Vec<(usize, String)>,
}

#[test]
fn generated_commands_the_preset_allows_only_read_inside_the_workspace() {
    let test = "programs: generated commands";
    if !can_run(test) {
        return;
    }
    let cases = env_number("GAVEL_PROGRAMS_CASES").map_or(DEFAULT_CASES, |n| n as usize);
    let seed = match std::env::var("GAVEL_PROGRAMS_SEED")
        .as_deref()
        .map(str::trim)
    {
        Ok("random") => {
            let mut bytes = [0u8; 8];
            getrandom::fill(&mut bytes).expect("random seed");
            u64::from_le_bytes(bytes)
        }
        _ => env_number("GAVEL_PROGRAMS_SEED").unwrap_or(DEFAULT_SEED),
    };
    let fixture = Fixture::new();
    let policy = preset();
    let pristine = Workspace::open(&fixture.repo()).unwrap();
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|_| {
                let (fixture, policy, pristine, next) = (&fixture, &policy, &pristine, &next);
                scope.spawn(move || {
                    let mut tally = Tally::default();
                    loop {
                        let case = next.fetch_add(1, Ordering::Relaxed);
                        if case >= cases {
                            break;
                        }
                        tally.generated += 1;
                        let command = generated(seed, case);
                        let clock = Instant::now();
                        let allowed = decide(pristine, policy, &command);
                        let took = clock.elapsed();
                        tally.decide += took;
                        if took > tally.slowest.0 {
                            tally.slowest = (took, command.clone());
                        }
                        let Some(allowed) = allowed else {
                            continue;
                        };
                        let clock = Instant::now();
                        let Outcome {
                            verdict,
                            timed_out,
                            report,
                        } = run_allowed(fixture, &command, &allowed);
                        tally.run += clock.elapsed();
                        tally.allowed += 1;
                        if timed_out {
                            tally.timeouts += 1;
                            tally.killed.push(command.clone());
                        }
                        tally.index_refreshes += usize::from(verdict.index_refreshes > 0);
                        for name in &verdict.execs {
                            *tally.executed.entry(name.clone()).or_default() += 1;
                        }
                        tally.system.extend(verdict.system.iter().cloned());
                        for words in &allowed.commands {
                            let program = words.first().cloned().unwrap_or_default();
                            *tally.by_program.entry(program).or_default() += 1;
                        }
                        if !verdict.problems.is_empty() {
                            tally.failures.push((case, report));
                        }
                    }
                    tally
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let mut total = Tally::default();
    for t in tallies {
        total.generated += t.generated;
        total.allowed += t.allowed;
        total.timeouts += t.timeouts;
        total.index_refreshes += t.index_refreshes;
        total.decide += t.decide;
        total.run += t.run;
        for (program, n) in t.by_program {
            *total.by_program.entry(program).or_default() += n;
        }
        for (program, n) in t.executed {
            *total.executed.entry(program).or_default() += n;
        }
        total.system.extend(t.system);
        total.killed.extend(t.killed);
        if t.slowest.0 > total.slowest.0 {
            total.slowest = t.slowest;
        }
        total.failures.extend(t.failures);
    }
    total.failures.sort_by_key(|f| f.0);
    let programs: Vec<String> = total
        .by_program
        .iter()
        .map(|(p, n)| format!("{p} {n}"))
        .collect();
    say(&format!(
        "programs: {} generated, {} allowed, run under strace, {} failures \
         (seed {seed:#x}; {elapsed:.1}s on {WORKERS} threads: deciding {:.1}s, copying and \
         running {:.1}s of thread time; {} killed after {}s; {} allowed `git status` runs \
         refreshed .git/index)",
        total.generated,
        total.allowed,
        total.failures.len(),
        total.decide.as_secs_f64(),
        total.run.as_secs_f64(),
        total.timeouts,
        RUN_LIMIT.as_secs(),
        total.index_refreshes,
    ));
    let executed: Vec<String> = total
        .executed
        .iter()
        .map(|(p, n)| format!("{p} {n}"))
        .collect();
    say(&format!(
        "programs: allowed simple commands by program: {}",
        programs.join(", ")
    ));
    say(&format!(
        "programs: slowest decision {:.2}s: {}; killed after {}s: {:?}",
        total.slowest.0.as_secs_f64(),
        total.slowest.1,
        RUN_LIMIT.as_secs(),
        total.killed
    ));
    say(&format!(
        "programs: programs executed under strace: {}",
        executed.join(", ")
    ));
    say(&format!(
        "programs: system files read outside the repository (allowed): {}",
        total.system.iter().cloned().collect::<Vec<_>>().join(", ")
    ));
    assert!(
        total.generated >= cases,
        "only {} of {cases} generated",
        total.generated
    );
    assert!(
        total.allowed * 20 >= total.generated || total.generated < 200,
        "only {} of {} generated commands were allowed: the generator no longer exercises \
         the programs",
        total.allowed,
        total.generated
    );
    if total.failures.is_empty() {
        return;
    }
    let all: String = total
        .failures
        .iter()
        .map(|(case, report)| format!("case {case}: {report}\n"))
        .collect();
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("programs-{seed:#x}.txt"));
    let _ = std::fs::write(&file, &all);
    let shown: String = total
        .failures
        .iter()
        .take(SHOWN)
        .map(|(case, report)| format!("case {case}: {report}\n"))
        .collect();
    panic!(
        "{} of {} commands the preset allows ran a program, wrote, or read outside the \
         workspace (seed {seed:#x}; rerun with GAVEL_PROGRAMS_SEED={seed:#x}). Add each to \
         fixtures/shell/programs-counterexamples.txt.\nAll of them: {}\nThe first {}:\n{shown}",
        total.failures.len(),
        total.allowed,
        file.display(),
        SHOWN.min(total.failures.len()),
    );
}

/// The recorded counterexamples: each line of
/// `fixtures/shell/programs-counterexamples.txt` (`#` starts a comment) is
/// decided and, when allowed, run and judged.
#[test]
fn recorded_program_counterexamples_only_read_inside_the_workspace() {
    let test = "programs: recorded counterexamples";
    if !can_run(test) {
        return;
    }
    let text = std::fs::read_to_string(fixture("shell/programs-counterexamples.txt")).unwrap();
    let commands: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    let fixture = Fixture::new();
    let policy = preset();
    let pristine = Workspace::open(&fixture.repo()).unwrap();
    let (mut allowed, mut failures) = (0, Vec::new());
    for command in &commands {
        if let Some(decision) = decide(&pristine, &policy, command) {
            allowed += 1;
            let outcome = run_allowed(&fixture, command, &decision);
            if !outcome.verdict.problems.is_empty() {
                failures.push(outcome.report);
            }
        }
    }
    say(&format!(
        "programs: {} recorded counterexamples, {allowed} still allowed, {} failures",
        commands.len(),
        failures.len()
    ));
    assert!(
        failures.is_empty(),
        "{} recorded counterexamples are still allowed and escape:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The oracle itself: run without a decision, it must see a program run, a
/// write, a read outside, a read of the record and a hook, and pass a plain
/// read and `git status`.
#[test]
fn the_programs_oracle_sees_what_it_must() {
    if !can_run("programs: the oracle") {
        return;
    }
    let fixture = Fixture::new();
    let judge = |command: &str, programs: &[&[&str]]| {
        let case = fixture.copy();
        let ran = run(&case, command);
        let commands: Vec<Vec<String>> = programs
            .iter()
            .map(|c| c.iter().map(|w| (*w).to_owned()).collect())
            .collect();
        check(&case, &commands, &ran)
    };
    let clean = judge(
        "ls -la; cat README.md src/lib.rs 2>/dev/null | wc -l",
        &[&["ls"], &["cat"], &["wc"]],
    );
    assert_eq!(clean.problems, Vec::<String>::new());
    let status = judge(
        "git status; git log --oneline -1; ls -l link_out",
        &[&["git", "status"], &["git", "log"], &["ls"]],
    );
    assert_eq!(status.problems, Vec::<String>::new());
    let expect = |command: &str, programs: &[&[&str]], needle: &str| {
        let verdict = judge(command, programs);
        assert!(
            verdict.problems.iter().any(|p| p.contains(needle)),
            "{command}: expected a problem containing {needle:?}, got {:?}",
            verdict.problems
        );
    };
    expect("sort -o out.txt README.md", &[&["sort"]], "writes");
    expect("cat link_out/secret.txt", &[&["cat"]], "reads outside");
    expect("cat /etc/passwd", &[&["cat"]], "reads outside");
    expect("cat .gavel/audit.db", &[&["cat"]], "gavel's record");
    expect("rg --pre=sh hello", &[&["rg"]], "runs a program");
    expect("date -s @0", &[&["date"]], "changes the system");
    expect(
        "find . -name nothing -delete; find a.gz -delete",
        &[&["find"]],
        "changes the system",
    );
    expect(
        "git -c user.name=a -c user.email=b@c commit -q --allow-empty -m x",
        &[&["git", "commit"]],
        "hook",
    );
}

#[test]
fn the_programs_generator_is_deterministic_and_covers_the_hazards() {
    let a: Vec<String> = (0..DEFAULT_CASES)
        .map(|i| generated(DEFAULT_SEED, i))
        .collect();
    let b: Vec<String> = (0..DEFAULT_CASES)
        .map(|i| generated(DEFAULT_SEED, i))
        .collect();
    assert_eq!(a, b);
    let distinct: BTreeSet<&String> = a.iter().collect();
    assert!(
        distinct.len() * 10 > DEFAULT_CASES * 8,
        "{} distinct",
        distinct.len()
    );
    let all = a.join("\n");
    let needles = "--pre | --compress | sort -o | -T  | --files0-from=- | file -f - | -C -m x | \
        tree -o | -R | date -s | 0101000026 | --output= | --ext-diff | core.pager=sh | \
        -D main | -exec | -execdir | -ok | -delete | -fprint | sed -i | /w | 1e | diff -l | \
        --pr=sh | --compress=sh | --out= | link_out | .gavel | ../ | /etc/passwd | ~ | [-]o* | \
        -* | src/* | ** | -LR | --exclude-dir=.gavel | '!.gavel' | -I .gavel | 2>/dev/null | \
        >/dev/null | xargs git log | rg -z | printf -v | cd src && | cd .. &&";
    let missing: Vec<&str> = alternatives(needles)
        .chain([" | ", " -- ", "< ", "uniq ", "git "])
        .filter(|needle| !all.contains(needle))
        .collect();
    assert!(
        missing.is_empty(),
        "no generated command contains {missing:?}"
    );
}
