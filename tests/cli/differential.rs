//! The differential harness: gavel's reading of a command against what real
//! bash does with it.
//!
//! Generated commands (quoting, every expansion form, heredocs, redirects,
//! control bytes, wrappers with options, compound commands) are decided under
//! the allow-list policy `fixtures/shell/differential-policy.toml`. Every
//! command gavel **allows**, and only those, is then run by
//! `/usr/bin/bash -c` in a fresh throwaway folder, under `strace -f`, with
//! `PATH` holding nothing but a folder of stub programs: one per allowed
//! program and per dangerous one (`sudo`, `rm`, `reboot`, `curl`, ...) that
//! logs its argv and exits (a test holds those logs to what the trace
//! says), plus links to the real wrappers (`env`, `nice`,
//! `timeout`, `xargs`, `stdbuf`, `nohup`, `time`) so that their option
//! parsing is GNU's own.
//!
//! What is checked, from the trace:
//! 1. **What ran.** Every program bash (or a wrapper) executed, or tried to
//!    execute, and every command bash could not find, must be one of the
//!    simple commands gavel parsed: same program name, and the same
//!    arguments byte for byte. Where gavel kept a word as text that bash
//!    still expands (`$`, a backquote, `*`, `?`, `[`, `{`, `~`, `(`), or the
//!    script uses `xargs` (which appends its input), only the program name
//!    is compared. The check is one way: a parsed command that never ran
//!    (`false && ls`, a loop that never turns) is no error; a command that
//!    ran and was never parsed is. Wrappers themselves are transparent:
//!    what they run is checked. `echo`, `printf` and `true` are taken out of
//!    bash's builtins (`enable -n` in `BASH_ENV`) so that their argv is
//!    seen too.
//! 2. **What was written.** No file may be opened for writing, created,
//!    truncated, renamed, linked, unlinked, made, removed, chmod-ed or
//!    chown-ed except `/dev/null`, `/dev/stdout`, `/dev/stderr`, `/dev/tty`,
//!    `/dev/fd/N` (spelled exactly so), and the harness's own log and temporary folders
//!    (stub logs, bash's heredoc files). The test policy's allow rule holds
//!    only when no redirection writes a file, so no other write is one the
//!    decision saw and permitted. Attempts count, whether or not they
//!    succeeded: what fails in an empty scratch folder succeeds elsewhere.
//!
//! `GAVEL_DIFF_CASES` sets how many commands are generated (10,000 by
//! default), `GAVEL_DIFF_SEED` sets the seed (fixed by default, so every run
//! judges the same commands; `random` draws one, and it is printed),
//! `GAVEL_DIFF_SHRINK` says how many counterexamples are shrunk (12),
//! `GAVEL_DIFF_REQUIRE=1` turns a missing bash or strace into a failure
//! instead of a plainly printed skip (CI sets it).
//!
//! Every counterexample ever found goes into
//! `fixtures/shell/differential-counterexamples.toml`, replayed each run.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;
use wait_timeout::ChildExt;

use gavel::shell::SimpleCommand;
use gavel::{Action, Policy, ToolRequest, Workspace};

use crate::support::fixture;

const BASH: &str = "/usr/bin/bash";
const STRACE: &str = "/usr/bin/strace";
const SYSCALLS: &str = "execve,execveat,openat,open,creat,truncate,rename,renameat,renameat2,\
                        unlink,unlinkat,mkdir,mkdirat,rmdir,mknod,mknodat,symlink,symlinkat,\
                        link,linkat,chmod,fchmodat,chown,lchown,fchownat,chdir";
/// How long one command may run before its process group is killed.
const RUN_LIMIT: Duration = Duration::from_secs(2);
const DEFAULT_CASES: usize = 10_000;
/// The seed of a default run: fixed, so that `cargo test` and CI judge the
/// same commands every time. Exploration uses `GAVEL_DIFF_SEED=random` (or
/// any number) with more cases, and records what it finds as fixtures.
const DEFAULT_SEED: u64 = 0x9a7e_1d00;

/// Programs with a logging stub. The allowed ones, the hard-denied ones and
/// a few others a hidden command would likely use.
const STUBS: &[&str] = &[
    "ls", "cat", "echo", "grep", "wc", "head", "true", "printf", "git", "false", "sudo", "doas",
    "su", "rm", "reboot", "shutdown", "curl", "wget", "touch", "mv", "cp", "dd", "tee", "bash",
    "sh", "python3", "mkfs", "chmod", "sed",
];
/// Real programs that run their arguments, linked into the stub folder.
const WRAPPERS: &[&str] = &["env", "nice", "timeout", "xargs", "stdbuf", "nohup", "time"];
/// Devices a command may write without writing a file.
const HARMLESS: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

// ---------------------------------------------------------------------------
// The environment: bash, strace, a stub folder.

/// Why the harness cannot run here, or `None` when it can.
fn missing_tools() -> Option<String> {
    if !Path::new(BASH).is_file() {
        return Some(format!("{BASH} is missing"));
    }
    if !Path::new(STRACE).is_file() {
        return Some(format!(
            "{STRACE} is missing (install the `strace` package)"
        ));
    }
    for wrapper in WRAPPERS {
        if which(wrapper).is_none() {
            return Some(format!("`{wrapper}` is not installed"));
        }
    }
    let probe = Command::new(STRACE)
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=execve",
            "-o",
            "/dev/null",
            BASH,
            "-c",
            ":",
        ])
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

fn which(program: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|dir| Path::new(dir).join(program))
        .find(|p| p.is_file())
}

/// Prints a line that `cargo test` shows even for a passing test.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Returns `false` after saying plainly why the harness is skipped, or
/// panics when `GAVEL_DIFF_REQUIRE` asks for it to run.
fn can_run(test: &str) -> bool {
    let Some(why) = missing_tools() else {
        return true;
    };
    if std::env::var_os("GAVEL_DIFF_REQUIRE").is_some_and(|v| v != "0") {
        panic!("{test}: cannot run the differential harness: {why}");
    }
    say(&format!(
        "SKIPPED {test}: the differential harness against real bash did not run: {why}"
    ));
    false
}

/// A folder of stubs and the harness's own log and temporary folders.
struct Harness {
    _dir: tempfile::TempDir,
    root: PathBuf,
    stubs: PathBuf,
    logs: PathBuf,
    tmp: PathBuf,
    bash_env: PathBuf,
    cases: PathBuf,
}

impl Harness {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("create the harness folder");
        let root = dir.path().canonicalize().unwrap();
        let (stubs, logs, tmp, cases) = (
            root.join("stubs"),
            root.join("logs"),
            root.join("tmp"),
            root.join("cases"),
        );
        for d in [&stubs, &logs, &tmp, &cases] {
            std::fs::create_dir(d).unwrap();
        }
        for name in STUBS {
            // Exits 0 (`false` 1) after writing its name and arguments,
            // NUL-terminated, to a log named by its pid.
            let status = if *name == "false" { 1 } else { 0 };
            let script = format!(
                "#!/bin/sh\nprintf '%s\\0' \"${{0##*/}}\" \"$@\" > '{}/'$$\nexit {status}\n",
                logs.display()
            );
            let path = stubs.join(name);
            std::fs::write(&path, script).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // A command bash cannot find is handed to this stub, so it shows
        // in the trace with its arguments.
        let notfound = stubs.join(".notfound");
        std::fs::write(&notfound, "#!/bin/sh\nexit 127\n").unwrap();
        std::fs::set_permissions(&notfound, std::fs::Permissions::from_mode(0o755)).unwrap();
        for wrapper in WRAPPERS {
            if let Some(real) = which(wrapper) {
                std::os::unix::fs::symlink(real, stubs.join(wrapper)).unwrap();
            }
        }
        let bash_env = root.join("bash_env");
        std::fs::write(
            &bash_env,
            format!(
                "enable -n echo printf true\n\
                 command_not_found_handle() {{ '{}' \"$@\"; }}\n",
                notfound.display()
            ),
        )
        .unwrap();
        Self {
            _dir: dir,
            root,
            stubs,
            logs,
            tmp,
            bash_env,
            cases,
        }
    }

    /// A fresh scratch folder: `a.txt`, `sub/b.txt`, an empty `home/`.
    fn scratch(&self) -> tempfile::TempDir {
        let dir = tempfile::tempdir_in(&self.cases).unwrap();
        std::fs::write(dir.path().join("a.txt"), "a\nb\n").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b.txt"), "b\n").unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        dir
    }

    /// Runs `command` with bash in `scratch` under strace; `worker` keeps
    /// parallel runs' trace files apart.
    fn run(&self, command: &str, scratch: &Path, worker: usize) -> Trace {
        let trace_file = self.root.join(format!("trace.{worker}"));
        let stderr_file = self.root.join(format!("stderr.{worker}"));
        let _ = std::fs::remove_file(&trace_file);
        let stderr = std::fs::File::create(&stderr_file).unwrap();
        let mut child = Command::new(STRACE)
            .args(["-f", "-qq", "-xx", "-s", "65535", "-e", "signal=none", "-e"])
            .arg(format!("trace={SYSCALLS}"))
            .arg("-o")
            .arg(&trace_file)
            .args([BASH, "-c", command])
            .env_clear()
            .env("PATH", &self.stubs)
            .env("HOME", scratch.join("home"))
            .env("LC_ALL", "C")
            .env("TMPDIR", &self.tmp)
            .env("BASH_ENV", &self.bash_env)
            .current_dir(scratch)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .expect("start strace");
        let timed_out = match child.wait_timeout(RUN_LIMIT).unwrap() {
            Some(_) => false,
            None => {
                // The command runs in its own process group: end it all.
                // SAFETY: killpg takes plain integers and touches no memory.
                unsafe {
                    libc::killpg(child.id() as libc::pid_t, libc::SIGKILL);
                }
                let _ = child.wait();
                true
            }
        };
        let text = std::fs::read(&trace_file).unwrap_or_default();
        let mut trace = parse_trace(&text);
        trace.timed_out = timed_out;
        trace.stderr = std::fs::read(&stderr_file).unwrap_or_default();
        trace.stderr.truncate(400);
        trace
    }
}

// ---------------------------------------------------------------------------
// Reading strace's output (`-xx`: every string is hex-escaped).

#[derive(Debug, Default)]
struct Trace {
    execs: Vec<Exec>,
    writes: Vec<Write>,
    changed_dir: bool,
    timed_out: bool,
    stderr: Vec<u8>,
}

#[derive(Debug)]
struct Exec {
    path: Vec<u8>,
    argv: Vec<Vec<u8>>,
    /// `Some(true)` when it succeeded; `None` when the trace ended first.
    ok: Option<bool>,
}

#[derive(Debug)]
struct Write {
    syscall: String,
    path: Vec<u8>,
    /// Whether a relative path was relative to a directory other than the
    /// scratch folder (`openat(3, ...)` or after a `chdir`).
    elsewhere: bool,
}

/// A syscall's arguments as strace printed them: the strings, each with
/// whether it sat inside the first `[...]` array (an argv), and the text.
struct Args {
    strings: Vec<(Vec<u8>, bool)>,
    raw: String,
}

fn parse_args(text: &str) -> Args {
    let bytes = text.as_bytes();
    let mut strings = Vec::new();
    let (mut i, mut depth, mut arrays) = (0, 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'[' => {
                depth += 1;
                arrays += 1;
                i += 1;
            }
            b']' => {
                depth -= 1;
                i += 1;
            }
            b'"' => {
                let mut value = Vec::new();
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'x') {
                        let hex = std::str::from_utf8(&bytes[i + 2..i + 4]).unwrap_or("3f");
                        value.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                        i += 4;
                    } else {
                        value.push(bytes[i]);
                        i += 1;
                    }
                }
                i += 1;
                strings.push((value, depth > 0 && arrays == 1));
            }
            _ => i += 1,
        }
    }
    Args {
        strings,
        raw: text.to_owned(),
    }
}

fn parse_trace(text: &[u8]) -> Trace {
    let text = String::from_utf8_lossy(text);
    let mut trace = Trace::default();
    // An `execve` whose result comes on a later `resumed` line, by pid.
    let mut pending: Vec<(u32, usize)> = Vec::new();
    for line in text.lines() {
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(resumed) = rest.strip_prefix("<... ") {
            if resumed.starts_with("execve")
                && let Some(pos) = pending.iter().position(|(p, _)| *p == pid)
            {
                let (_, index) = pending.remove(pos);
                trace.execs[index].ok = Some(result_ok(resumed));
            }
            continue;
        }
        let Some((syscall, args)) = rest.split_once('(') else {
            continue;
        };
        let unfinished = rest.ends_with("<unfinished ...>");
        let args = parse_args(args);
        let strings: Vec<Vec<u8>> = args.strings.iter().map(|(s, _)| s.clone()).collect();
        match syscall {
            "execve" | "execveat" => {
                let argv = args
                    .strings
                    .iter()
                    .filter(|(_, in_array)| *in_array)
                    .map(|(s, _)| s.clone())
                    .collect();
                let path = args
                    .strings
                    .iter()
                    .find(|(_, in_array)| !*in_array)
                    .map(|(s, _)| s.clone())
                    .unwrap_or_default();
                trace.execs.push(Exec {
                    path,
                    argv,
                    ok: (!unfinished).then(|| result_ok(rest)),
                });
                if unfinished {
                    pending.push((pid, trace.execs.len() - 1));
                }
            }
            "chdir" => trace.changed_dir |= unfinished || result_ok(rest),
            "open" | "openat" => {
                let writes = ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"]
                    .iter()
                    .any(|flag| args.raw.contains(flag));
                if writes && let Some(path) = strings.first() {
                    let elsewhere = syscall == "openat" && !args.raw.starts_with("AT_FDCWD");
                    trace.writes.push(Write {
                        syscall: syscall.to_owned(),
                        path: path.clone(),
                        elsewhere: elsewhere || trace.changed_dir,
                    });
                }
            }
            _ => {
                let touched = match syscall {
                    "symlink" | "symlinkat" => strings.last().cloned().into_iter().collect(),
                    _ => strings,
                };
                let elsewhere = syscall.ends_with("at") && !args.raw.starts_with("AT_FDCWD");
                for path in touched {
                    trace.writes.push(Write {
                        syscall: syscall.to_owned(),
                        path,
                        elsewhere: elsewhere || trace.changed_dir,
                    });
                }
            }
        }
    }
    trace
}

/// Whether a syscall line ends in `= 0` (or any non-negative result).
fn result_ok(line: &str) -> bool {
    line.rsplit_once("= ")
        .is_some_and(|(_, result)| !result.trim_start().starts_with('-'))
}

// ---------------------------------------------------------------------------
// The check.

/// What gavel saw, for comparing with what bash did.
struct Seen<'a> {
    commands: &'a [SimpleCommand],
    /// `xargs` appends its input to the command it runs.
    appends: bool,
}

/// A program bash ran or tried to run: its name and arguments.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Ran {
    program: Vec<u8>,
    args: Vec<Vec<u8>>,
    how: String,
}

impl Harness {
    /// The leaf programs of a trace: what ran or was tried, wrappers and the
    /// first `bash` left out.
    fn ran(&self, trace: &Trace) -> Vec<Ran> {
        let stubs = self.stubs.as_os_str().as_bytes();
        let mut ran = Vec::new();
        for (i, exec) in trace.execs.iter().enumerate() {
            if i == 0 && exec.path == BASH.as_bytes() {
                continue;
            }
            let name = exec
                .path
                .rsplit(|b| *b == b'/')
                .next()
                .unwrap_or_default()
                .to_vec();
            let in_stubs = exec.path.starts_with(stubs)
                && exec.path.get(stubs.len()) == Some(&b'/')
                && !exec.path[stubs.len() + 1..].contains(&b'/');
            let args = exec.argv.get(1..).unwrap_or_default().to_vec();
            let status = match exec.ok {
                Some(true) => "ran",
                Some(false) => "failed to start",
                None => "started",
            };
            if in_stubs && name == b".notfound" {
                if let Some((program, rest)) = args.split_first() {
                    ran.push(Ran {
                        program: program.clone(),
                        args: rest.to_vec(),
                        how: "not found".to_owned(),
                    });
                }
            } else if in_stubs && WRAPPERS.iter().any(|w| w.as_bytes() == name) {
                continue;
            } else if in_stubs {
                ran.push(Ran {
                    program: name,
                    args,
                    how: status.to_owned(),
                });
            } else {
                ran.push(Ran {
                    program: name,
                    args,
                    how: format!(
                        "{status} (outside the stubs, as `{}`)",
                        String::from_utf8_lossy(&exec.path).escape_debug()
                    ),
                });
            }
        }
        ran
    }

    /// Everything bash did that gavel did not see, one line each.
    fn check(&self, trace: &Trace, seen: &Seen, scratch: &Path, harmless: &[&str]) -> Vec<String> {
        let mut problems = Vec::new();
        if trace
            .execs
            .first()
            .is_none_or(|e| e.path != BASH.as_bytes())
        {
            problems.push("bash did not start under strace".to_owned());
            return problems;
        }
        for ran in self.ran(trace) {
            if ran.how.starts_with("ran (outside the stubs") {
                problems.push(format!(
                    "bash {} {}: the environment was cleared or a path named",
                    ran.how,
                    show_argv(&ran.program, &ran.args)
                ));
            }
            let matched = seen.commands.iter().any(|c| {
                c.program().as_bytes() == ran.program
                    && (vague(c, seen.appends)
                        || c.args()
                            .iter()
                            .map(|a| a.as_bytes())
                            .eq(ran.args.iter().map(Vec::as_slice)))
            });
            if !matched {
                problems.push(format!(
                    "bash {} {} which gavel did not parse",
                    ran.how,
                    show_argv(&ran.program, &ran.args)
                ));
            }
        }
        for write in &trace.writes {
            if !self.may_write(write, scratch, harmless) {
                problems.push(format!(
                    "bash wrote `{}` ({}) but an allow permits no file write",
                    String::from_utf8_lossy(&write.path).escape_debug(),
                    write.syscall
                ));
            }
        }
        problems
    }

    /// Whether a write is one an allow permits: the test policy's allow
    /// rule holds only when no redirection writes a file, so an allowed
    /// command may write harmless devices and nothing else (the harness's
    /// own logs and bash's heredoc files in `TMPDIR` aside).
    fn may_write(&self, write: &Write, scratch: &Path, harmless: &[&str]) -> bool {
        let raw = Path::new(std::ffi::OsStr::from_bytes(&write.path));
        let text = String::from_utf8_lossy(&write.path);
        let descriptor = text
            .strip_prefix("/dev/fd/")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if harmless.contains(&text.as_ref()) || (descriptor && !harmless.is_empty()) {
            return true;
        }
        if write.elsewhere && raw.is_relative() {
            return false;
        }
        let absolute = normalize(&scratch.join(raw));
        [&self.logs, &self.tmp]
            .iter()
            .any(|d| absolute.starts_with(d))
    }
}

/// Whether bash may turn `command`'s words into other words: gavel keeps
/// expansions as text, so only the program name can be compared.
fn vague(command: &SimpleCommand, appends: bool) -> bool {
    appends
        || command
            .words
            .iter()
            .any(|w| w.contains(['$', '`', '*', '?', '[', '{', '~', '(']))
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

fn show_argv(program: &[u8], args: &[Vec<u8>]) -> String {
    let words: Vec<String> = std::iter::once(program)
        .chain(args.iter().map(Vec::as_slice))
        .map(|w| format!("{:?}", String::from_utf8_lossy(w)))
        .collect();
    format!("[{}]", words.join(", "))
}

// ---------------------------------------------------------------------------
// One case: decide, and run only what is allowed.

fn policy() -> Policy {
    Policy::load(&fixture("shell/differential-policy.toml")).expect("the differential policy loads")
}

enum Outcome {
    NotAllowed,
    Agreed { timed_out: bool },
    Counterexample(String),
}

fn decide_and_run(harness: &Harness, policy: &Policy, command: &str, worker: usize) -> Outcome {
    let request = ToolRequest::new("diff", "bash", json!({ "command": command }));
    let scratch = harness.scratch();
    let workspace = Workspace::open(scratch.path()).unwrap();
    let facts = workspace.facts(&request);
    let decision = policy.decide(&request, &facts);
    if decision.action != Action::Allow {
        return Outcome::NotAllowed;
    }
    if let Some(why) = reaches_real_programs(command) {
        panic!("refusing to run {command:?}: {why}; the generator and the fixtures must not");
    }
    let root = workspace.root().to_path_buf();
    let trace = harness.run(command, &root, worker);
    let analysis = facts.shell.clone().unwrap_or_default();
    let seen = Seen {
        commands: &analysis.commands,
        appends: command.contains("xargs"),
    };
    let problems = harness.check(&trace, &seen, &root, HARMLESS);
    if problems.is_empty() {
        return Outcome::Agreed {
            timed_out: trace.timed_out,
        };
    }
    let mut report = String::new();
    let _ = writeln!(report, "command: {command:?}");
    let _ = writeln!(
        report,
        "  gavel: {} {} ({})",
        decision.action, decision.rule_id, decision.reason
    );
    for c in &analysis.commands {
        let redirects: Vec<String> = c
            .redirects
            .iter()
            .map(|r| format!("{} {:?}", r.op, r.target))
            .collect();
        let _ = writeln!(report, "  parsed: {:?} {}", c.words, redirects.join(" "));
    }
    for r in &analysis.bare_redirects {
        let _ = writeln!(report, "  parsed bare redirect: {} {:?}", r.op, r.target);
    }
    for ran in harness.ran(&trace) {
        let _ = writeln!(
            report,
            "  bash {}: {}",
            ran.how,
            show_argv(&ran.program, &ran.args)
        );
    }
    for problem in &problems {
        let _ = writeln!(report, "  MISMATCH: {problem}");
    }
    if !trace.stderr.is_empty() {
        let _ = writeln!(
            report,
            "  bash stderr: {:?}",
            String::from_utf8_lossy(&trace.stderr)
        );
    }
    Outcome::Counterexample(report)
}

/// Why `command` might run real programs instead of the stubs, if it
/// might: a word `-`, `-i…` or `--i…` (GNU `env` then clears the
/// environment and searches `/bin:/usr/bin`), `exec -c` (the same), `PATH`,
/// a system folder, or `command -p`. A backstop for a misparse that gavel allows: generated
/// commands and fixtures never contain these.
fn reaches_real_programs(command: &str) -> Option<&'static str> {
    for needle in [
        "PATH",
        "/bin",
        "/sbin",
        "/usr",
        "/lib",
        "/etc",
        "command -p",
    ] {
        if command.contains(needle) {
            return Some("it names the search path or a system folder");
        }
    }
    // `exec -c` clears the environment before a wrapper searches for its
    // program.
    let clears = |word: &str| {
        word.strip_prefix('-')
            .is_some_and(|flags| flags.contains('c') && flags.bytes().all(|b| b"acl".contains(&b)))
    };
    if command.contains("exec") && command.split_ascii_whitespace().any(clears) {
        return Some("`exec -c` clears the environment");
    }
    let bytes = command.as_bytes();
    let starts_word = |i: usize| i == 0 || b" \t\n\r\x0b\x0c'\"=;(`{,".contains(&bytes[i - 1]);
    let ends_word = |i: usize| {
        bytes
            .get(i)
            .is_none_or(|b| b" \t\n\r\x0b\x0c'\";)|&`".contains(b))
    };
    for i in (0..bytes.len()).filter(|&i| bytes[i] == b'-' && starts_word(i)) {
        let rest = &bytes[i + 1..];
        if ends_word(i + 1) || rest.starts_with(b"i") || rest.starts_with(b"-i") {
            return Some("a word `-`, `-i…` or `--i…` can make `env` clear the environment");
        }
    }
    None
}

// ---------------------------------------------------------------------------
// The generator: a seeded grammar of bash commands, biased so that a good
// share is allowed under the test policy.

struct Gen {
    state: u64,
    depth: usize,
}

const ALLOWED: &[&str] = &[
    "ls",
    "cat",
    "echo",
    "grep",
    "wc",
    "head",
    "true",
    "printf",
    "git status",
];
/// Hidden commands: all are stubs, none has arguments that could reach
/// outside the scratch folder.
const PAYLOADS: &[&str] = &[
    "sudo reboot",
    "sudo ls",
    "rm -rf victim",
    "reboot",
    "curl -s x",
    "touch pwned",
    "cp a.txt b",
];
/// Plain words. Never `PATH`, never anything starting `-i` or `--i`
/// (`env -i` would run real programs from the default path).
const PLAIN: &[&str] = &[
    "a",
    "a.txt",
    "sub",
    "sub/b.txt",
    ".",
    "-l",
    "-n",
    "1",
    "--color=never",
    "-v",
    "x",
    "--",
    "sudo",
    "reboot",
    "rm",
    "-rf",
    "victim",
    "-s",
    "KILL",
    "5",
    "FOO",
    "FOO=1",
    "a.b=1",
    "-S",
    "--un",
    "--s",
    "--p",
    "--eof",
    "-E",
    "-o",
    "out.txt",
    "-u",
    "status",
];
const CONTROL: &[&str] = &["\r", "\x0c", "\x0b"];

impl Gen {
    fn new(seed: u64) -> Self {
        Self {
            state: seed,
            depth: 0,
        }
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

    fn payload(&mut self) -> String {
        self.pick(PAYLOADS).to_owned()
    }

    /// A whole command: one to three statements, sometimes a trailing
    /// comment or a control byte that bash reads as part of a word.
    fn script(&mut self) -> String {
        let n = 1 + self.below(3);
        let mut out = self.list(n);
        if self.chance(6) {
            let ctrl = self.pick(CONTROL);
            let payload = self.payload();
            out = format!("{out}{ctrl}#; {payload}");
        } else if self.chance(5) {
            let payload = self.payload();
            out = format!("{out} # {payload}");
        }
        if self.chance(5) {
            out.push('\n');
        }
        out
    }

    fn list(&mut self, n: usize) -> String {
        let mut out = String::new();
        for i in 0..n {
            let statement = self.statement();
            if i > 0 {
                if out.ends_with('\n') {
                    // A heredoc ended the line: only a new line can follow.
                } else {
                    let sep = self.pick(&["; ", " && ", " || ", " | ", "\n", " & ", " |& ", ";"]);
                    out.push_str(sep);
                }
            }
            out.push_str(&statement);
        }
        out
    }

    fn statement(&mut self) -> String {
        if self.depth >= 2 {
            return self.simple();
        }
        self.depth += 1;
        let out = match self.below(100) {
            0..=59 => self.simple(),
            60..=67 => self.heredoc(),
            68..=69 => {
                // `$_` now holds text with a substitution in a subscript.
                let payload = self.payload();
                let uses = self.pick(&[
                    "echo $(( _ ))",
                    "echo ${!_}",
                    "echo ${_@P}",
                    "echo ${a[_]}",
                    "[[ _ -eq 1 ]] && ls",
                    "echo $[ _ ]",
                    "(( _ )); ls",
                ]);
                format!("echo 'a[$({payload})]'; {uses}")
            }
            70..=71 => {
                let payload = self.payload();
                let var = self.pick(&["x", "_", "PS4"]);
                format!("{var}='$({payload})'; echo ${{{var}@P}}")
            }
            72..=77 => self.for_loop(),
            _ => self.compound(),
        };
        self.depth -= 1;
        out
    }

    fn body(&mut self) -> String {
        let n = 1 + self.below(2);
        let inner = self.list(n);
        if inner.ends_with('\n') {
            inner
        } else {
            format!("{inner}; ")
        }
    }

    fn compound(&mut self) -> String {
        match self.below(20) {
            0 => {
                let n = 1 + self.below(2);
                format!("( {} )", self.list(n))
            }
            1 => format!("{{ {}}}", self.body()),
            2 => format!("if {}then {}fi", self.body(), self.body()),
            3 => format!("if false; then {}else {}fi", self.body(), self.body()),
            4 => self.for_loop(),
            5 => format!("for ((i=0;i<1;i++)); do {}done", self.body()),
            6 => format!("while false; do {}done", self.body()),
            7 => format!("until true; do {}done", self.body()),
            8 => format!("case a in a) {};; *) {};; esac", self.list(1), self.list(1)),
            9 => format!("! {}", self.simple()),
            10 => format!("coproc {}", self.simple()),
            11 => format!("coproc {{ {}}}", self.body()),
            12 => format!("time {}", self.simple()),
            13 => format!("time -p {}", self.simple()),
            14 => format!("[[ -n a ]] && {}", self.simple()),
            15 => format!("(( 1 )) && {}", self.simple()),
            16 => format!("f() {{ {}}}; f", self.body()),
            17 => format!("function f {{ {}}}; f a", self.body()),
            18 => {
                let name = self.pick(&["x", "y", "_x"]);
                let value = self.word();
                format!("{name}={value}; {}", self.simple())
            }
            _ => format!("{} &", self.simple()),
        }
    }

    /// A `for` loop: mostly over words gavel expands (literal words,
    /// globs), sometimes over words it must not (quoted blanks, braces,
    /// expansions); its body uses the variable in every form, and
    /// sometimes as a program, a wrapper's option or a `-c` script.
    fn for_loop(&mut self) -> String {
        let name = self.pick(&["x", "x", "f", "i", "HOME", "_", "F"]);
        let mut items = Vec::new();
        for _ in 0..1 + self.below(3) {
            let item = if self.chance(80) {
                self.pick(&[
                    "a", "a.txt", "sub", "sub/", "-l", "-n", "-rf", "sudo", "x=1", "*", "*.txt",
                    "sub/*", "?.txt", "[ab].txt", "'a.txt'", "\"sub\"", "s'u'b", "ls", "echo",
                    "--", "5",
                ])
            } else {
                self.pick(&[
                    "'a b'",
                    "{a,b}",
                    "~",
                    "$x",
                    "\"$x\"",
                    "$(sudo ls)",
                    "`reboot`",
                    "''",
                    "a\\ b",
                    "'*'",
                    "\\*",
                    "${x:-a}",
                    "a\\$x",
                    "'$x'",
                ])
            };
            items.push(item.to_owned());
        }
        let header = if self.chance(5) {
            format!("for {name}")
        } else {
            format!("for {name} in {}", items.join(" "))
        };
        let sep = self.pick(&["; ", "\n", " ;\n", ";\n\n", ";"]);
        let n = 1 + self.below(3);
        let mut body = String::new();
        for i in 0..n {
            let statement = if self.chance(15) {
                self.statement()
            } else {
                self.loop_command(name)
            };
            if i > 0 && !body.ends_with('\n') {
                body.push_str(self.pick(&["; ", "\n", " && ", " | ", " || "]));
            }
            body.push_str(&statement);
        }
        if !body.ends_with('\n') {
            body.push_str(self.pick(&["; ", "\n", ";"]));
        }
        let tail = if self.chance(10) {
            format!("; echo ${name}")
        } else {
            String::new()
        };
        format!("{header}{sep}do {body}done{tail}")
    }

    /// A simple command using the loop variable `name`.
    fn loop_command(&mut self, name: &str) -> String {
        let mut parts: Vec<String> = Vec::new();
        match self.below(100) {
            0..=79 => parts.push(self.pick(ALLOWED).to_owned()),
            80..=85 => parts.push(format!("${name}")),
            86..=89 => {
                parts.push(self.wrapper());
                parts.push(self.pick(ALLOWED).to_owned());
            }
            90..=93 => {
                let inner = self.pick(&["ls", "echo", "cat"]);
                parts.push(format!("bash -c \"{inner} ${name}\""));
            }
            _ => parts.push(format!("nice ${name} 5 ls")),
        }
        for _ in 0..1 + self.below(3) {
            let word = if self.chance(85) {
                let form = self.pick(&[
                    "\"$N\"",
                    "$N",
                    "${N}",
                    "\"${N}\"",
                    "$N/",
                    "\"$N\"/b.txt",
                    "'$N'",
                    "\\$N",
                    "x$N",
                    "\"=== $N ===\"",
                    "$N.txt",
                    "${N}x",
                    "$Nx",
                    "\"$N\"*",
                ]);
                form.replace('N', name)
            } else {
                self.word()
            };
            parts.push(word);
        }
        if self.chance(10) {
            parts.push(self.redirect());
        }
        parts.join(" ")
    }

    /// A simple command: sometimes an assignment or wrappers first, a
    /// program, arguments, redirections.
    fn simple(&mut self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if self.chance(3) {
            parts.push(format!("x={}", self.word()));
        }
        if self.chance(6) {
            parts.push(self.redirect());
        }
        if self.chance(22) {
            parts.push(self.wrapper());
            if self.chance(15) {
                parts.push(self.wrapper());
            }
        }
        parts.push(self.program());
        for _ in 0..self.below(4) {
            parts.push(self.word());
        }
        for _ in 0..self.below(3) {
            if self.chance(45) {
                parts.push(self.redirect());
            }
        }
        let mut out = String::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                out.push_str(self.blank());
            }
            out.push_str(part);
        }
        out
    }

    /// What separates two words: mostly a space; sometimes a tab, a line
    /// continuation, or a control byte that bash keeps inside the word.
    fn blank(&mut self) -> &'static str {
        match self.below(100) {
            0..=84 => " ",
            85..=88 => "\t",
            89..=91 => " \\\n",
            92..=93 => "  ",
            94 => "\r",
            95 => "\x0c",
            96 => "\x0b",
            97 => " \r ",
            _ => "\\\n",
        }
    }

    fn program(&mut self) -> String {
        match self.below(100) {
            0..=83 => self.pick(ALLOWED).to_owned(),
            84..=91 => self.payload(),
            _ => self
                .pick(&[
                    "\\ls",
                    "'ls'",
                    "\"echo\"",
                    "l\\s",
                    "e'ch'o",
                    "$'ls'",
                    "$\"ls\"",
                    "l\"\"s",
                    "ls\\\n",
                    "\\\nls",
                    "git \\\nstatus",
                    "gi\\\nt status",
                    "{ls,}",
                    "l?",
                ])
                .to_owned(),
        }
    }

    fn wrapper(&mut self) -> String {
        let (name, options): (&str, &[&str]) = match self.below(10) {
            0 | 1 => (
                "env",
                &[
                    "-u FOO",
                    "-uFOO",
                    "--unset FOO",
                    "--unset=FOO",
                    "--un",
                    "--u",
                    "-u",
                    "-S",
                    "-S 'ls -l'",
                    "--s='ls a'",
                    "--split-string=ls",
                    "-C sub",
                    "--chdir=sub",
                    "FOO=1",
                    "a.b=1",
                    "-0",
                    "--",
                    "-v",
                    "--debug",
                ],
            ),
            2 => (
                "timeout",
                &[
                    "5",
                    "--sig KILL 5",
                    "-s KILL 5",
                    "-sKILL 5",
                    "-k 1 5",
                    "--signal=TERM 5",
                    "--kill-after 1 5",
                    "--sig",
                    "--k",
                    "--fore 5",
                    "--preserve 5",
                    "-v 5",
                ],
            ),
            3 => (
                "nice",
                &[
                    "-n 5",
                    "-n5",
                    "-5",
                    "--adjustment=3",
                    "--adj 3",
                    "--adj",
                    "-n",
                    "--",
                ],
            ),
            4 => (
                "xargs",
                &[
                    "--eof",
                    "-E x",
                    "-Ex",
                    "--eof=x",
                    "--e",
                    "--p",
                    "-0",
                    "-n 1",
                    "-r",
                    "--max-args 1",
                    "-I {}",
                    "-l",
                    "--max-lines",
                    "-P 1",
                    "-a a.txt",
                    "--arg-file=a.txt",
                    "-d x",
                    "--delim",
                ],
            ),
            5 => (
                "time",
                &[
                    "-o out.txt",
                    "--output=out.txt",
                    "-p",
                    "-a -o out.txt",
                    "-f %e",
                    "-v",
                    "--out out.txt",
                    "-ao out.txt",
                    "--append",
                    "--quiet",
                ],
            ),
            6 => (
                "stdbuf",
                &[
                    "-o0",
                    "-oL",
                    "-e0",
                    "--output=L",
                    "-o 0",
                    "--err 0",
                    "--out",
                ],
            ),
            7 => ("nohup", &["--", ""]),
            8 => ("command", &["--", "", "-v"]),
            _ => ("exec", &["--", "", "-a name", "-a"]),
        };
        let mut out = name.to_owned();
        for _ in 0..self.below(3) {
            let option = self.pick(options);
            if !option.is_empty() {
                out.push(' ');
                out.push_str(option);
            }
        }
        out
    }

    fn word(&mut self) -> String {
        let first = self.word_part();
        if self.chance(15) {
            let second = self.word_part();
            format!("{first}{second}")
        } else {
            first
        }
    }

    fn word_part(&mut self) -> String {
        match self.below(100) {
            0..=44 => self.pick(PLAIN).to_owned(),
            45..=52 => {
                let inner = self.pick(&[
                    "a b",
                    "x",
                    "$(sudo ls)",
                    "`reboot`",
                    "a[$(rm -rf victim)]",
                    ";",
                    "#",
                    "\\",
                    "\"",
                    "$x",
                    "${x:-$(sudo ls)}",
                    "",
                    " ",
                ]);
                format!("'{inner}'")
            }
            53..=62 => {
                let inner = match self.below(12) {
                    0 => "a b".to_owned(),
                    1 => "$x".to_owned(),
                    2 => "${x:-a}".to_owned(),
                    3 => format!("$({})", self.payload()),
                    4 => format!("`{}`", self.payload()),
                    5 => format!("${{x:-'$({})'}}", self.payload()),
                    6 => "\\$x".to_owned(),
                    7 => "\\\"".to_owned(),
                    8 => "'a'".to_owned(),
                    9 => format!("${{PWD#`{}`}}", self.payload()),
                    10 => "$'\\x41'".to_owned(),
                    _ => String::new(),
                };
                format!("\"{inner}\"")
            }
            63..=67 => format!(
                "$'{}'",
                self.pick(&[
                    "\\x41",
                    "a\\nb",
                    "\\t",
                    "\\'",
                    "\\\\",
                    "\\x3b sudo ls",
                    "\\r#",
                    "\\u0041",
                    "\\c@",
                    "\\e",
                ])
            ),
            68..=72 => self
                .pick(&[
                    "\\a", "\\$x", "\\;", "\\#", "\\ ", "\\\\", "a\\\nb", "\\|", "\\&", "\\'",
                ])
                .to_owned(),
            73..=88 => self.expansion(),
            89..=94 => self
                .pick(&[
                    "*", "?.txt", "{a,b}", "~", "~/x", "[ab]", "sub/*", "*.txt", "{,sudo}", "#x",
                    "x#y", "a=b", "@(a|b)",
                ])
                .to_owned(),
            _ => {
                let ctrl = self.pick(CONTROL);
                format!("a{ctrl}b")
            }
        }
    }

    fn expansion(&mut self) -> String {
        let payload = self.payload();
        let allowed = self.pick(&["ls", "echo a", "cat a.txt", "true"]);
        match self.below(26) {
            0 => "$x".to_owned(),
            1 => "${x}".to_owned(),
            2 => "$_".to_owned(),
            3 => "${x:-a}".to_owned(),
            4 => "${x#a}".to_owned(),
            5 => "${!x}".to_owned(),
            6 => "${x@P}".to_owned(),
            7 => "$((1+2))".to_owned(),
            8 => format!("$({payload})"),
            9 => format!("`{payload}`"),
            10 => format!("$({allowed})"),
            11 => format!("<({allowed})"),
            12 => format!("<({payload})"),
            13 => format!("${{PWD#$({payload})}}"),
            14 => format!("${{PWD#`{payload}`}}"),
            15 => format!("${{x:-$({payload})}}"),
            16 => format!("\"${{x:-'$({payload})'}}\""),
            17 => "${#x}".to_owned(),
            18 => "$$".to_owned(),
            19 => "${x/a/b}".to_owned(),
            20 => format!("${{a[$({payload})]}}"),
            21 => "$(( _ ))".to_owned(),
            22 => "${_@P}".to_owned(),
            23 => format!(">({allowed})"),
            24 => format!("$(({payload}) )"),
            _ => "${HOME}".to_owned(),
        }
    }

    fn redirect(&mut self) -> String {
        let op = self.pick(&[
            ">", ">>", "<", "&>", "&>>", "2>", "1>", ">|", "<>", ">&", "2>>", "<", "<<<",
        ]);
        if self.chance(15) {
            return self
                .pick(&["2>&1", ">&2", "1>&2", "<&-", "2>&-"])
                .to_owned();
        }
        let target = match self.below(100) {
            0..=39 => "/dev/null",
            40..=49 => self.pick(&["/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2"]),
            50..=54 => "/dev/fd/../cwd/out.txt",
            55..=74 => self.pick(&["out.txt", "a.txt", "sub/x", ".gavel/x", "gavel.toml"]),
            75..=84 => self.pick(&["\"out file\"", "$'o\\x75t'", "o\\ut", "'out'", "~/x"]),
            _ => self.pick(&[
                "$x",
                "$(echo out)",
                "*.txt",
                "{a,b}",
                "/dev/fd/3",
                "/dev/fd/01",
            ]),
        };
        let space = if self.chance(50) { " " } else { "" };
        format!("{op}{space}{target}")
    }

    /// A heredoc with its body: unquoted, quoted or partly quoted
    /// delimiters, `<<-` with tabs, the heredoc operator before other
    /// redirections, bodies with substitutions and lines that look like an
    /// end but are not.
    fn heredoc(&mut self) -> String {
        let program = self.pick(&["cat", "grep a", "wc -l", "head -n 1", "ls"]);
        let (written, real) = self.pick2(&[
            ("EOF", "EOF"),
            ("'EOF'", "EOF"),
            ("\"EOF\"", "EOF"),
            ("E\"OF\"", "EOF"),
            ("\\EOF", "EOF"),
            ("E'O'F", "EOF"),
            ("\"E\"OF", "EOF"),
            ("E\\OF", "EOF"),
            ("'E F'", "E F"),
            ("$X", "$X"),
        ]);
        let dash = self.chance(25);
        let op = if dash { "<<-" } else { "<<" };
        let space = if self.chance(50) { " " } else { "" };
        let mut head = format!("{program} {op}{space}{written}");
        if self.chance(40) {
            head.push(' ');
            head.push_str(&self.redirect());
        }
        if self.chance(15) {
            head.push_str(" | ");
            head.push_str(self.pick(&["grep a", "wc", "cat"]));
        }
        let mut body = Vec::new();
        for _ in 0..self.below(4) {
            let payload = self.payload();
            let line = match self.below(12) {
                0 => "hello".to_owned(),
                1 => "$x ${x:-a}".to_owned(),
                2 => format!("`{payload}`"),
                3 => format!("$({payload})"),
                4 => format!("${{x:-$({payload})}}"),
                5 => written.to_owned(),
                6 => format!(" {real}"),
                7 => format!("{real} "),
                8 => payload,
                9 => format!("\\`{}\\`", self.payload()),
                10 => "a \\\nb".to_owned(),
                _ => format!("$(( $({}) ))", self.payload()),
            };
            let tab = if dash && self.chance(50) { "\t" } else { "" };
            body.push(format!("{tab}{line}"));
        }
        let end = match self.below(10) {
            0 => format!("{real}\n{}\n{written}", self.payload()),
            1 => written.to_owned(),
            2 if dash => format!("\t{real}"),
            _ => real.to_owned(),
        };
        let mut out = head;
        out.push('\n');
        for line in body {
            out.push_str(&line);
            out.push('\n');
        }
        out.push_str(&end);
        out.push('\n');
        out
    }

    fn pick2<'a>(&mut self, items: &[(&'a str, &'a str)]) -> (&'a str, &'a str) {
        items[self.below(items.len())]
    }
}

// ---------------------------------------------------------------------------
// The tests.

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    let value = value.trim();
    match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => value.parse().ok(),
    }
}

#[test]
fn generated_commands_that_gavel_allows_run_in_bash_exactly_as_parsed() {
    if !can_run("generated_commands_that_gavel_allows_run_in_bash_exactly_as_parsed") {
        return;
    }
    let cases = env_number("GAVEL_DIFF_CASES").map_or(DEFAULT_CASES, |n| n as usize);
    let seed = match std::env::var("GAVEL_DIFF_SEED").as_deref().map(str::trim) {
        Ok("random") => {
            let mut bytes = [0u8; 8];
            getrandom::fill(&mut bytes).expect("random seed");
            u64::from_le_bytes(bytes)
        }
        _ => env_number("GAVEL_DIFF_SEED").unwrap_or(DEFAULT_SEED),
    };
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, 4);
    let harness = Harness::new();
    let policy = policy();
    let started = Instant::now();
    type Found = (usize, String, String);
    type Counts = (usize, usize, usize, usize, Vec<Found>);
    let results: Vec<Counts> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                let (harness, policy) = (&harness, &policy);
                scope.spawn(move || {
                    let (mut allowed, mut loops, mut timeouts, mut found) = (0, 0, 0, Vec::new());
                    let mine = (worker..cases).step_by(workers);
                    let generated = mine.len();
                    for case in mine {
                        let mut generator =
                            Gen::new(seed ^ (case as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
                        let command = generator.script();
                        let looped = command.contains("for ") && command.contains(" in ");
                        match decide_and_run(harness, policy, &command, worker) {
                            Outcome::NotAllowed => {}
                            Outcome::Agreed { timed_out } => {
                                allowed += 1;
                                loops += usize::from(looped);
                                timeouts += usize::from(timed_out);
                            }
                            Outcome::Counterexample(report) => {
                                allowed += 1;
                                loops += usize::from(looped);
                                found.push((case, command, report));
                            }
                        }
                    }
                    (generated, allowed, loops, timeouts, found)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let generated: usize = results.iter().map(|r| r.0).sum();
    let allowed: usize = results.iter().map(|r| r.1).sum();
    let loops: usize = results.iter().map(|r| r.2).sum();
    let timeouts: usize = results.iter().map(|r| r.3).sum();
    let mut found: Vec<&Found> = results.iter().flat_map(|r| &r.4).collect();
    found.sort_by_key(|f| f.0);
    say(&format!(
        "differential: seed {seed:#x}: {generated} commands generated, {allowed} allowed and run \
         in bash ({:.1}%; {loops} with a `for` loop), {timeouts} killed after {}s, {} \
         counterexamples, {elapsed:.1}s ({:.0} commands/s)",
        100.0 * allowed as f64 / generated.max(1) as f64,
        RUN_LIMIT.as_secs(),
        found.len(),
        generated as f64 / elapsed.max(0.001),
    ));
    assert!(generated >= cases, "only {generated} of {cases} generated");
    assert!(
        allowed * 20 >= generated || generated < 100,
        "only {allowed} of {generated} generated commands were allowed: the generator no longer \
         exercises bash"
    );
    if found.is_empty() {
        return;
    }
    // The first few, shrunk to what still escapes; all of them in a file.
    let shrunk: Vec<String> = found
        .iter()
        .take(env_number("GAVEL_DIFF_SHRINK").map_or(SHRINK, |n| n as usize))
        .map(|(_, command, _)| format!("  {:?}", shrink(&harness, &policy, command)))
        .collect();
    let full: String = found
        .iter()
        .map(|(case, _, report)| format!("case {case}: {report}\n"))
        .collect();
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("differential-{seed:#x}.txt"));
    let _ = std::fs::write(&file, &full);
    let shown: String = found
        .iter()
        .take(SHOWN)
        .map(|(case, _, report)| format!("case {case}: {report}\n"))
        .collect();
    panic!(
        "{} of {allowed} commands allowed by gavel did something else in real bash (seed \
         {seed:#x}; rerun with GAVEL_DIFF_SEED={seed:#x}). Add each to \
         fixtures/shell/differential-counterexamples.toml.\n\
         The first {} shrunk:\n{}\n\
         All of them: {}\n\
         The first {}:\n{shown}",
        found.len(),
        shrunk.len(),
        shrunk.join("\n"),
        file.display(),
        SHOWN.min(found.len()),
    );
}

/// How many counterexamples of a generated run are shrunk, and shown whole.
const SHRINK: usize = 12;
const SHOWN: usize = 20;

/// Drops words and lines from a counterexample while it stays one (allowed,
/// and bash does something the parse did not say), to show its core.
fn shrink(harness: &Harness, policy: &Policy, command: &str) -> String {
    let mut best = command.to_owned();
    let mut tries = 0;
    'outer: while tries < 300 {
        let pieces: Vec<&str> = best.split_inclusive([' ', '\n', ';']).collect();
        for skip in 0..pieces.len() {
            let candidate: String = pieces
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != skip)
                .map(|(_, p)| *p)
                .collect();
            if candidate.trim().is_empty() {
                continue;
            }
            tries += 1;
            if let Outcome::Counterexample(_) = decide_and_run(harness, policy, &candidate, 0) {
                best = candidate;
                continue 'outer;
            }
        }
        break;
    }
    best.trim_end_matches([' ', ';']).to_owned()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Counterexample {
    why: String,
    command: String,
}

#[derive(Deserialize)]
struct Counterexamples {
    case: Vec<Counterexample>,
}

/// Every counterexample the harness (or a person) ever found, replayed:
/// decided under the test policy and, when allowed, run and checked.
///
/// Known to fail until the analyzer closes the classes of
/// `fixtures/shell/differential-counterexamples.toml`; the failure lists
/// which commands still escape.
#[test]
fn recorded_counterexamples_no_longer_escape_the_analysis() {
    if !can_run("recorded_counterexamples_no_longer_escape_the_analysis") {
        return;
    }
    let text = std::fs::read_to_string(fixture("shell/differential-counterexamples.toml")).unwrap();
    let cases = toml::from_str::<Counterexamples>(&text).unwrap().case;
    assert!(
        cases.len() >= 20,
        "only {} counterexamples recorded",
        cases.len()
    );
    let harness = Harness::new();
    let policy = policy();
    let mut escaped = Vec::new();
    for case in &cases {
        if let Outcome::Counterexample(report) = decide_and_run(&harness, &policy, &case.command, 0)
        {
            escaped.push(format!("{}\n{report}", case.why));
        }
    }
    assert!(
        escaped.is_empty(),
        "{} of {} recorded counterexamples are still allowed and do something else in bash:\n{}",
        escaped.len(),
        cases.len(),
        escaped.join("\n")
    );
}

/// The oracle itself: it must see a program gavel's list lacks, a write
/// the decision did not see, and accept a faithful parse. Runs only
/// commands the test policy allows.
#[test]
fn the_harness_sees_programs_and_writes_that_a_parse_missed() {
    if !can_run("the_harness_sees_programs_and_writes_that_a_parse_missed") {
        return;
    }
    let harness = Harness::new();
    let policy = policy();
    let command = "ls -l a.txt | grep a > /dev/null; echo \"a b\"";
    let request = ToolRequest::new("t", "bash", json!({ "command": command }));
    let scratch = harness.scratch();
    let workspace = Workspace::open(scratch.path()).unwrap();
    let facts = workspace.facts(&request);
    assert_eq!(policy.decide(&request, &facts).action, Action::Allow);
    let root = workspace.root().to_path_buf();
    let trace = harness.run(command, &root, 0);
    let analysis = facts.shell.clone().unwrap();
    let faithful = Seen {
        commands: &analysis.commands,
        appends: false,
    };
    assert_eq!(
        harness.check(&trace, &faithful, &root, HARMLESS),
        Vec::<String>::new()
    );
    let ran: BTreeSet<Vec<Vec<u8>>> = harness
        .ran(&trace)
        .into_iter()
        .map(|r| [vec![r.program], r.args].concat())
        .collect();
    let expected: BTreeSet<Vec<Vec<u8>>> =
        [&["ls", "-l", "a.txt"][..], &["grep", "a"], &["echo", "a b"]]
            .iter()
            .map(|words| words.iter().map(|w| w.as_bytes().to_vec()).collect())
            .collect();
    assert_eq!(ran, expected, "stubs ran, `echo` included");
    // The stubs' own logs, NUL-separated, say the same as the trace.
    let logged: BTreeSet<Vec<Vec<u8>>> = std::fs::read_dir(&harness.logs)
        .unwrap()
        .map(|entry| {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            let mut words: Vec<Vec<u8>> = bytes.split(|b| *b == 0).map(<[u8]>::to_vec).collect();
            words.pop();
            words
        })
        .collect();
    assert_eq!(logged, expected);

    let partial = Seen {
        commands: &analysis.commands[..1],
        appends: false,
    };
    let problems = harness.check(&trace, &partial, &root, HARMLESS);
    assert!(
        problems.iter().any(|p| p.contains("\"grep\", \"a\"")),
        "{problems:?}"
    );

    // With no harmless devices, the write to /dev/null is one an allow
    // does not permit.
    let blind = Seen {
        commands: &analysis.commands,
        appends: false,
    };
    let problems = harness.check(&trace, &blind, &root, &[]);
    assert!(
        problems.iter().any(|p| p.contains("/dev/null")),
        "{problems:?}"
    );

    // A word bash cannot find is reported with its arguments.
    let command = "ls\x0ca b";
    let request = ToolRequest::new("t", "bash", json!({ "command": command }));
    let facts = workspace.facts(&request);
    if policy.decide(&request, &facts).action == Action::Allow {
        let trace = harness.run(command, &root, 0);
        let ran = harness.ran(&trace);
        assert_eq!(ran[0].program, b"ls\x0ca");
        assert_eq!(ran[0].how, "not found");
    }
}

#[test]
fn generated_commands_never_reach_real_programs() {
    for seed in 0..20_000 {
        let command = Gen::new(seed).script();
        if let Some(why) = reaches_real_programs(&command) {
            panic!("seed {seed}: {command:?}: {why}");
        }
    }
    for command in [
        "env - ls",
        "env -i ls",
        "x --ignore-environment",
        "PATH=/x ls",
    ] {
        assert!(reaches_real_programs(command).is_some(), "{command:?}");
    }
    assert_eq!(reaches_real_programs("ls -- -l 2>&1 <<-EOF ${x:-a}"), None);
}

#[test]
fn the_generator_is_deterministic_and_varied() {
    let a: Vec<String> = (0..200).map(|i| Gen::new(i).script()).collect();
    let b: Vec<String> = (0..200).map(|i| Gen::new(i).script()).collect();
    assert_eq!(a, b);
    let distinct: BTreeSet<&String> = a.iter().collect();
    assert!(distinct.len() > 190, "{} distinct of 200", distinct.len());
    let all = a.concat();
    for needle in [
        "<<", "$(", "`", "${", "env", "\r", "'", "\"", "$'", "xargs", "coproc",
    ] {
        assert!(
            all.contains(needle),
            "no generated command contains {needle:?}"
        );
    }
}
