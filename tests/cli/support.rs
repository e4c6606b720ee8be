//! Shared helpers: a temporary workspace with a sibling "outside" folder, a
//! hermetic `gavel` command, fixture paths and output parsing.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

/// A temporary folder holding `ws/` (the workspace, with `notes.txt`),
/// `outside/` (with `secret.txt`) and the path of an audit database.
pub struct Sandbox {
    _dir: TempDir,
    /// The temporary folder, canonicalized.
    pub root: PathBuf,
    /// The workspace, canonicalized.
    pub ws: PathBuf,
    /// A folder next to the workspace, never inside it.
    pub outside: PathBuf,
    /// Where `--db` points; not created by the tests.
    pub db: PathBuf,
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("create a temporary folder");
        let root = dir
            .path()
            .canonicalize()
            .expect("canonicalize the temp folder");
        let ws = root.join("ws");
        let outside = root.join("outside");
        std::fs::create_dir(&ws).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(ws.join("notes.txt"), "hello from the workspace\n").unwrap();
        std::fs::write(outside.join("secret.txt"), "top secret\n").unwrap();
        Self {
            db: root.join("audit.db"),
            _dir: dir,
            root,
            ws,
            outside,
        }
    }

    /// Writes `content` to `rel` inside the workspace, creating folders.
    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.ws.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws.join(rel)).unwrap()
    }

    /// `gavel ARGS --workspace WS --db DB`, hermetic.
    pub fn gavel(&self, args: &[&str]) -> Command {
        let mut cmd = self.bare();
        cmd.args(args)
            .arg("--workspace")
            .arg(&self.ws)
            .arg("--db")
            .arg(&self.db);
        cmd
    }

    /// `gavel` with a clean environment and the sandbox (not the workspace,
    /// not the repository) as its current directory; no arguments yet.
    pub fn bare(&self) -> Command {
        Command::from_std(self.bare_std())
    }

    /// `gavel ARGS --workspace WS --db DB` started in the background,
    /// hermetic like [`Sandbox::gavel`]: stdin closed, stdout and stderr
    /// piped.
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        use std::process::Stdio;
        self.bare_std()
            .args(args)
            .arg("--workspace")
            .arg(&self.ws)
            .arg("--db")
            .arg(&self.db)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start gavel")
    }

    /// [`Sandbox::bare`] as the standard library's command.
    pub fn bare_std(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gavel"));
        // `COLUMNS` makes tables fit a width: tests that want one set it.
        // Automatic checkpoints change what a log holds: the tests that
        // want them set `GAVEL_CHECKPOINT_EVERY` themselves.
        cmd.env("GAVEL_CHECKPOINT_EVERY", "0");
        // Layers above the project: none but what a test puts there (the
        // user layer under `config/`, the admin layer by name).
        cmd.env("XDG_CONFIG_HOME", self.root.join("config"))
            .env_remove("GAVEL_ADMIN_POLICY");
        // Checkpoint keys go to the user's data folder: the sandbox's.
        cmd.env("XDG_DATA_HOME", self.root.join("data"));
        cmd.env_remove("GAVEL_POLICY")
            .env_remove("GAVEL_DB")
            .env_remove("COLUMNS")
            .env_remove("GAVEL_BASH_TIMEOUT")
            .env_remove("GAVEL_MAX_OUTPUT_BYTES")
            .env_remove("GAVEL_MAX_ARGUMENT_BYTES")
            .current_dir(&self.root);
        cmd
    }
}

/// A file under `fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// The files in `fixtures/DIR` ending in `.EXT`, sorted.
pub fn fixtures_in(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixture(dir))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .{ext} fixtures in {dir}");
    files
}

/// The exit code; a signal is a test failure.
pub fn code(output: &Output) -> i32 {
    output
        .status
        .code()
        .unwrap_or_else(|| panic!("gavel was killed by a signal: {output:?}"))
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}

/// stdout parsed as one JSON value.
pub fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON value ({e}):\nstdout: {}\nstderr: {}",
            stdout(output),
            stderr(output)
        )
    })
}

/// stdout parsed as JSON lines.
pub fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("each stdout line is JSON"))
        .collect()
}

/// Runs `cmd` and insists on exit code `expected`, showing the output otherwise.
pub fn run_expecting(cmd: &mut Command, expected: i32) -> Output {
    let output = cmd.output().expect("run gavel");
    assert_eq!(
        code(&output),
        expected,
        "unexpected exit code\nstdout: {}\nstderr: {}",
        stdout(&output),
        stderr(&output)
    );
    output
}

/// A usage or input error: exit 2, nothing on stdout, exactly one line on
/// stderr starting `gavel:`. Returns that line.
pub fn assert_one_line_error(cmd: &mut Command) -> String {
    let output = run_expecting(cmd, 2);
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "stderr: {err}");
    assert!(err.starts_with("gavel: "), "stderr: {err}");
    assert!(output.stdout.is_empty(), "stdout: {}", stdout(&output));
    err.trim_end().to_owned()
}

/// Records one call with `gavel run`, answering asks with `--reject` so
/// nothing is written.
pub fn record(sandbox: &Sandbox, call_id: &str, tool: &str, arguments: Value) {
    let output = sandbox
        .gavel(&[
            "run",
            tool,
            &arguments.to_string(),
            "--reject",
            "--call-id",
            call_id,
        ])
        .output()
        .unwrap();
    assert!(
        matches!(code(&output), 0 | 1 | 3),
        "recording {call_id} failed: {}",
        stderr(&output)
    );
}

/// A Claude Code hook payload from `fixtures/clients/claude-code/` for one call.
pub fn tool_payload(sandbox: &Sandbox, fixture: &str, id: &str, tool: &str, input: Value) -> Value {
    let mut value = hook_payload(sandbox, fixture);
    value["tool_use_id"] = serde_json::json!(id);
    value["tool_name"] = serde_json::json!(tool);
    value["tool_input"] = input;
    value
}

/// A Claude Code hook payload from `fixtures/clients/claude-code/`, with the
/// sandbox's workspace filled in.
pub fn hook_payload(sandbox: &Sandbox, fixture: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/clients/claude-code")
        .join(fixture);
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("${WORKSPACE}", &sandbox.ws.to_string_lossy());
    serde_json::from_str(&text).unwrap()
}

/// A copy of the gavel under test at `dir/gavel`, executable.
pub fn copy_gavel(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let copy = dir.join("gavel");
    std::fs::copy(env!("CARGO_BIN_EXE_gavel"), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

/// Runs `cmd`, again while its binary is busy: a binary just copied
/// ([`copy_gavel`]) may still be held open by another test's child between
/// its fork and its exec (`ETXTBSY`).
pub fn output(cmd: &mut std::process::Command) -> Output {
    for _ in 0..100 {
        match cmd.output() {
            Err(err) if err.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other.expect("run a command"),
        }
    }
    panic!("the binary stayed busy");
}

/// Appends `n` calls `c<first>`..: request, decision (allow or deny by
/// turns, under two rules) and result, through the library, in batches.
pub fn append_calls(db: &Path, first: usize, n: usize) {
    let mut store = gavel::store::Store::open(db, gavel::store::Durability::Normal)
        .expect("open the host's log");
    // Nothing here is secret: redaction off keeps generating 10,000s of calls quick.
    store.set_redaction(&gavel::policy::RedactSettings {
        enabled: false,
        ..Default::default()
    });
    let policy = gavel::policy::Policy::builtin().reference().clone();
    let mut batch = Vec::with_capacity(1500);
    for i in first..first + n {
        let id = format!("c{i}");
        let deny = i % 4 == 3;
        batch.push(gavel::audit::Event::now(
            &id,
            Some("bash"),
            gavel::audit::EventBody::Request(gavel::audit::RequestRecord {
                tool_use_id: id.clone(),
                arguments: serde_json::json!({"command": format!("echo {i}")}),
                client: None,
                arguments_bytes: None,
                arguments_sha256: None,
                principal: None,
            }),
        ));
        batch.push(gavel::audit::Event::now(
            &id,
            Some("bash"),
            gavel::audit::EventBody::Decision(gavel::audit::DecisionRecord {
                action: if deny {
                    gavel::Action::Deny
                } else {
                    gavel::Action::Allow
                },
                rule_id: if deny {
                    "bash.hard_deny".into()
                } else {
                    "bash.read_only".into()
                },
                reason: "test".into(),
                policy: policy.clone(),
                layer: None,
                layers: Vec::new(),
                shadow: Vec::new(),
                sandbox: None,
                labels: Vec::new(),
                after: None,
                approvers: None,
                history_through: None,
                facts: gavel::Facts {
                    workspace: "/ws".into(),
                    paths: vec![],
                    shell: None,
                    shell_sha256: None,
                    unprovable: Vec::new(),
                    mcp: None,
                },
            }),
        ));
        batch.push(gavel::audit::Event::now(
            &id,
            Some("bash"),
            gavel::audit::EventBody::Result(gavel::audit::ResultRecord::from_result(
                &gavel::ToolResult {
                    status: if deny {
                        gavel::ExecutionStatus::Blocked
                    } else {
                        gavel::ExecutionStatus::Succeeded
                    },
                    content: format!("{i}\n"),
                    exit_code: Some(0),
                    duration_ms: 1,
                },
            )),
        ));
        if batch.len() >= 1500 {
            store.append(&batch).expect("append calls");
            batch.clear();
        }
    }
    if !batch.is_empty() {
        store.append(&batch).expect("append calls");
    }
}
