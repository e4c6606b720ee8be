//! `gavel serve --socket`: a resident gavel answers `gavel hook` and
//! `gavel run` calls as they would themselves (`run`'s tool and prompt
//! staying in its own process), and a call it cannot answer for runs in
//! its own process.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Sandbox, code, json_lines, stderr, stdout, tool_payload};

/// A resident gavel on the sandbox's database, stopped on drop.
pub(crate) struct Resident {
    child: Option<Child>,
    socket: PathBuf,
}

impl Resident {
    pub(crate) fn start(sandbox: &Sandbox) -> Self {
        let child = gavel(sandbox)
            .args(["serve", "--socket", "--db"])
            .arg(&sandbox.db)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let socket = PathBuf::from(format!("{}.sock", sandbox.db.display()));
        let started = Instant::now();
        while !socket.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the resident gavel did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child: Some(child),
            socket,
        }
    }

    /// Stops it with SIGTERM; what it printed.
    pub(crate) fn stop(mut self) -> String {
        let child = self.child.take().unwrap();
        signal(&child, "TERM");
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stderr(&out)
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `gavel` in the environment `Sandbox::bare` gives (which the resident
/// gavel compares with its own), as a process to spawn.
fn gavel(sandbox: &Sandbox) -> Command {
    in_env(Command::new(env!("CARGO_BIN_EXE_gavel")), sandbox)
}

/// `cmd` in that environment.
fn in_env(mut cmd: Command, sandbox: &Sandbox) -> Command {
    cmd.env("GAVEL_CHECKPOINT_EVERY", "0")
        .env("XDG_CONFIG_HOME", sandbox.root.join("config"))
        .env_remove("GAVEL_ADMIN_POLICY")
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .current_dir(&sandbox.root);
    cmd
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Runs one hook event; its exit code and stdout.
fn hook(sandbox: &Sandbox, payload: &Value, env: &[(&str, &Path)]) -> (i32, String) {
    let mut cmd = sandbox.bare();
    cmd.current_dir(&sandbox.ws)
        .args(["hook", "claude-code", "--db"])
        .arg(&sandbox.db)
        .env_remove("CLAUDE_PROJECT_DIR");
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = cmd.write_stdin(payload.to_string()).output().unwrap();
    (code(&out), stdout(&out) + &stderr(&out))
}

/// A Claude Code `PreToolUse` reading the workspace's `notes.txt`.
fn read_notes(sandbox: &Sandbox, id: &str) -> Value {
    let notes = sandbox.ws.join("notes.txt").display().to_string();
    tool_payload(
        sandbox,
        "pre_tool_use.json",
        id,
        "Read",
        json!({"file_path": notes}),
    )
}

/// A session of every kind of event: allowed, denied and asked calls, a
/// completion, a lifecycle event.
fn session(sandbox: &Sandbox) -> Vec<Value> {
    let pre = |id: &str, tool: &str, input: Value| {
        tool_payload(sandbox, "pre_tool_use.json", id, tool, input)
    };
    let post = |id: &str, tool: &str, input: Value| {
        tool_payload(sandbox, "post_tool_use.json", id, tool, input)
    };
    let notes = sandbox.ws.join("notes.txt").display().to_string();
    let ls = json!({"command": "ls", "description": "List files"});
    vec![
        crate::support::hook_payload(sandbox, "session_start.json"),
        pre("t_read", "Read", json!({"file_path": notes})),
        post("t_read", "Read", json!({"file_path": notes})),
        pre("t_out", "Read", json!({"file_path": "/etc/passwd"})),
        pre("t_ls", "Bash", ls.clone()),
        post("t_ls", "Bash", ls),
        pre("t_rm", "Bash", json!({"command": "rm -rf /"})),
        pre(
            "t_write",
            "Write",
            json!({"file_path": notes, "content": "changed"}),
        ),
        crate::support::hook_payload(sandbox, "stop.json"),
    ]
}

/// Each recorded event's kind, call, tool and decision, in order.
fn record(sandbox: &Sandbox) -> Vec<Value> {
    let out = sandbox.gavel(&["export"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json_lines(&out)
        .into_iter()
        .filter(|line| line["record"] == "event")
        .map(|e| {
            json!([
                e["kind"],
                e["call_id"],
                e["tool"],
                e["action"],
                e["rule_id"],
                e["approval"],
                e["status"]
            ])
        })
        .collect()
}

#[test]
fn a_resident_gavel_answers_hooks_as_the_hook_itself_would() {
    let resident_box = Sandbox::new();
    let alone_box = Sandbox::new();
    let resident = Resident::start(&resident_box);

    let events = session(&resident_box);
    let answers: Vec<(i32, String)> = events.iter().map(|e| hook(&resident_box, e, &[])).collect();
    let alone: Vec<(i32, String)> = session(&alone_box)
        .iter()
        .map(|e| hook(&alone_box, e, &[]))
        .collect();
    // The same answers, byte for byte (the paths differ by sandbox).
    let ours = |(code, out): &(i32, String), sandbox: &Sandbox| {
        (
            *code,
            out.replace(&sandbox.root.display().to_string(), "ROOT"),
        )
    };
    for (resident_answer, alone_answer) in answers.iter().zip(&alone) {
        assert_eq!(
            ours(resident_answer, &resident_box),
            ours(alone_answer, &alone_box)
        );
    }
    assert!(answers[3].1.contains("\"deny\""), "{:?}", answers[3]);
    assert!(answers[6].1.contains("bash.hard_deny"), "{:?}", answers[6]);

    let said = resident.stop();
    assert!(
        said.contains(&format!("answered {} calls", events.len())),
        "every event went through the resident gavel: {said}"
    );
    assert!(!Path::new(&format!("{}.sock", resident_box.db.display())).exists());
    // The same record, and a chain that holds.
    assert_eq!(record(&resident_box), record(&alone_box));
    let out = resident_box.gavel(&["verify"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn a_hook_runs_the_call_itself_when_the_resident_gavel_cannot_answer_for_it() {
    let sandbox = Sandbox::new();
    let resident = Resident::start(&sandbox);
    let read = |id: &str| read_notes(&sandbox, id);

    // A second resident gavel on the same database is refused.
    let out = sandbox
        .bare()
        .args(["serve", "--socket", "--db"])
        .arg(&sandbox.db)
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("already answers"), "{}", stderr(&out));

    // Layers read from another place than the resident gavel reads them:
    // the hook decides itself, under its own layers.
    let other = sandbox.root.join("other-config");
    std::fs::create_dir_all(other.join("gavel")).unwrap();
    std::fs::write(
        other.join("gavel/policy.toml"),
        "name = \"mine\"\n[[rules]]\nid = \"user.no_reads\"\naction = \"deny\"\nreason = \"no reads today\"\ntools = [\"read_file\"]\n",
    )
    .unwrap();
    let (exit, answer) = hook(&sandbox, &read("t_layer"), &[("XDG_CONFIG_HOME", &other)]);
    assert_eq!(exit, 0, "{answer}");
    assert!(answer.contains("user.no_reads"), "{answer}");
    let (exit, answer) = hook(&sandbox, &read("t_plain"), &[]);
    assert_eq!(exit, 0);
    assert!(answer.contains("path.read_allow"), "{answer}");

    let said = resident.stop();
    assert!(said.contains("answered 1 calls"), "{said}");

    // A socket left behind by a resident gavel that was killed: the hook
    // finds nobody there and runs the call itself.
    let stale = Resident::start(&sandbox);
    let mut child = std::mem::ManuallyDrop::new(stale);
    let mut process = child.child.take().unwrap();
    process.kill().unwrap();
    process.wait().unwrap();
    assert!(child.socket.exists());
    let (exit, answer) = hook(&sandbox, &read("t_stale"), &[]);
    assert_eq!(exit, 0);
    assert!(answer.contains("path.read_allow"), "{answer}");

    let out = sandbox.gavel(&["log", "--json"]).output().unwrap();
    let calls: Vec<String> = json_lines(&out)
        .iter()
        .map(|c| format!("{} {}", c["call_id"], c["rule_id"]))
        .collect();
    assert_eq!(
        calls,
        [
            "\"t_layer\" \"user.no_reads\"",
            "\"t_plain\" \"path.read_allow\"",
            "\"t_stale\" \"path.read_allow\""
        ]
    );
    let out = sandbox.gavel(&["verify"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn a_resident_gavel_decides_each_call_by_the_policy_on_disk_then() {
    let sandbox = Sandbox::new();
    let resident = Resident::start(&sandbox);
    let read = |id: &str| read_notes(&sandbox, id);
    let (_, answer) = hook(&sandbox, &read("t_before"), &[]);
    assert!(answer.contains("path.read_allow"), "{answer}");
    sandbox.write(
        "gavel.toml",
        "name = \"closed\"\n[[rules]]\nid = \"project.no_reads\"\naction = \"deny\"\nreason = \"closed for audit\"\ntools = [\"read_file\"]\n",
    );
    let (_, answer) = hook(&sandbox, &read("t_after"), &[]);
    assert!(answer.contains("project.no_reads"), "{answer}");
    std::fs::remove_file(sandbox.ws.join("gavel.toml")).unwrap();
    let (_, answer) = hook(&sandbox, &read("t_again"), &[]);
    assert!(answer.contains("path.read_allow"), "{answer}");
    let said = resident.stop();
    assert!(said.contains("answered 3 calls"), "{said}");
}

#[test]
fn a_hook_never_hands_its_event_to_a_look_alike_listener() {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;

    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.db.parent().unwrap()).unwrap();
    let listener = UnixListener::bind(format!("{}.sock", sandbox.db.display())).unwrap();
    // Answers "allow" to whatever it is sent, as a planted server would.
    let fake = std::thread::spawn(move || {
        let mut heard = Vec::new();
        if let Ok((mut stream, _)) = listener.accept() {
            let _ = stream.read_to_end(&mut heard);
            let allow = r#"{"answer":{"stdout":"{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\"}}","stderr":null,"exit":0}}"#;
            let _ = stream.write_all(format!("{allow}\n").as_bytes());
        }
        heard
    });
    let payload = tool_payload(
        &sandbox,
        "pre_tool_use.json",
        "t_passwd",
        "Read",
        json!({"file_path": "/etc/passwd"}),
    );
    let (exit, answer) = hook(&sandbox, &payload, &[]);
    assert_eq!(exit, 0, "{answer}");
    assert!(answer.contains("\"deny\""), "{answer}");
    assert!(answer.contains("path.outside_workspace"), "{answer}");
    assert!(fake.join().unwrap().is_empty(), "the event was sent");
}

#[test]
fn every_client_waits_for_gavel_approve_through_a_resident_gavel() {
    use std::io::Write;

    for client in ["claude-code", "codex", "gemini", "copilot", "cursor"] {
        let sandbox = Sandbox::new();
        sandbox.write("gavel.toml", gavel::policy::CODING_AGENT_POLICY_TOML);
        let resident = Resident::start(&sandbox);
        let mut args = vec!["hook", client, "--ask", "wait=30s"];
        if client == "copilot" {
            args.extend(["--event", "preToolUse"]);
        }
        let mut hook = gavel(&sandbox)
            .args(&args)
            .arg("--workspace")
            .arg(&sandbox.ws)
            .arg("--db")
            .arg(&sandbox.db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let payload =
            crate::clients::payload(&sandbox, client, "shell_pre", "touch made.txt", "w1");
        hook.stdin
            .take()
            .unwrap()
            .write_all(payload.as_bytes())
            .unwrap();
        let listed = crate::approvals::wait_for_pending(&sandbox, 1);
        let id = listed[0]["call_id"].as_str().unwrap().to_owned();
        let out = sandbox.gavel(&["approve", &id, "--yes"]).output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let output = hook.wait_with_output().unwrap();
        let (answer, reason) = crate::clients::decision(client, &output);
        assert_eq!(answer, "allow", "{client}: {reason}");
        let said = resident.stop();
        assert!(said.contains("answered 1 calls"), "{client}: {said}");
        let out = sandbox.gavel(&["log", "--json"]).output().unwrap();
        let calls = json_lines(&out);
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0]["approval"], "approved", "{client}");
    }
}

#[test]
fn a_resident_gavel_stops_by_itself_after_its_idle_time_and_says_how_to_be_started() {
    let sandbox = Sandbox::new();
    let started = Instant::now();
    let out = sandbox
        .bare()
        .args(["serve", "--socket", "--idle", "1s", "--db"])
        .arg(&sandbox.db)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(
        stderr(&out).contains("answered 0 calls"),
        "{}",
        stderr(&out)
    );
    assert!(!Path::new(&format!("{}.sock", sandbox.db.display())).exists());

    // Neither transport, both, or --idle without --socket: a usage error.
    for args in [
        &["serve"][..],
        &["serve", "--stdio", "--socket"],
        &["serve", "--stdio", "--idle", "1s"],
    ] {
        let out = sandbox.bare().args(args).output().unwrap();
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
    }
}

/// Runs `gavel run ARGS` in the sandbox's workspace, `env` added; its exit
/// code, stdout and stderr with the sandbox's paths as `ROOT`.
fn run(sandbox: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = gavel(sandbox);
    cmd.current_dir(&sandbox.ws)
        .arg("run")
        .args(args)
        .arg("--db")
        .arg(&sandbox.db)
        .stdin(Stdio::null());
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    let root = sandbox.root.display().to_string();
    (
        code(&out),
        without_log_id(&stdout(&out).replace(&root, "ROOT")),
        stderr(&out).replace(&root, "ROOT"),
    )
}

/// `text` with the log id of each receipt reference written `LOG`: two
/// sandboxes' logs have their own ids.
fn without_log_id(text: &str) -> String {
    const AT: &str = "\"log\":\"gavel/";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(AT) {
        let end = (at + AT.len() + 32).min(rest.len());
        out.push_str(&rest[..at + AT.len()]);
        out.push_str("LOG");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `gavel run` calls of every outcome: allowed, denied, asked and approved,
/// rejected and cancelled (no terminal), failed, and a reused call id.
fn runs(sandbox: &Sandbox) -> Vec<(i32, String, String)> {
    let outside = r#"{"path":"/etc/passwd"}"#;
    let said = r#"{"command":"echo \"$GREETING from $(pwd)\""}"#;
    [
        vec![
            "--call-id",
            "r_read",
            "read_file",
            r#"{"path":"notes.txt"}"#,
        ],
        vec!["--call-id", "r_out", "read_file", outside],
        vec!["--call-id", "r_bash", "--approve", "bash", said],
        vec![
            "--call-id",
            "r_json",
            "--approve",
            "--format",
            "json",
            "bash",
            said,
        ],
        vec![
            "--call-id",
            "r_reject",
            "--reject",
            "write_file",
            r#"{"path":"x","content":"y"}"#,
        ],
        vec![
            "--call-id",
            "r_notty",
            "edit_file",
            r#"{"path":"notes.txt","old_text":"a","new_text":"b"}"#,
        ],
        vec![
            "--call-id",
            "r_missing",
            "read_file",
            r#"{"path":"missing.txt"}"#,
        ],
        vec![
            "--call-id",
            "r_read",
            "read_file",
            r#"{"path":"notes.txt"}"#,
        ],
    ]
    .iter()
    .map(|args| run(sandbox, args, &[("GREETING", "hello")]))
    .collect()
}

#[test]
fn a_resident_gavel_answers_gavel_run_as_run_itself_would_with_the_tool_run_by_the_caller() {
    let resident_box = Sandbox::new();
    let alone_box = Sandbox::new();
    let resident = Resident::start(&resident_box);

    let answered = runs(&resident_box);
    let alone = runs(&alone_box);
    for (resident_run, alone_run) in answered.iter().zip(&alone) {
        assert_eq!(resident_run, alone_run);
    }
    let exits: Vec<i32> = answered.iter().map(|(exit, _, _)| *exit).collect();
    assert_eq!(exits, [0, 3, 0, 0, 3, 3, 1, 2]);
    // The command ran in the caller's process: its environment, its directory.
    assert!(
        answered[2].1.contains("hello from ROOT/ws"),
        "{}",
        answered[2].1
    );
    assert!(answered[5].2.contains("no terminal"), "{}", answered[5].2);
    assert!(answered[7].2.contains("already used"), "{}", answered[7].2);

    let said = resident.stop();
    assert!(
        said.contains(&format!("answered {} calls", answered.len())),
        "every run went through the resident gavel: {said}"
    );
    assert_eq!(record(&resident_box), record(&alone_box));
    let out = resident_box.gavel(&["verify"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn a_run_whose_resident_gavel_dies_mid_call_fails_and_is_not_run_again() {
    let sandbox = Sandbox::new();
    let mut resident = Resident::start(&sandbox);
    let marker = sandbox.ws.join("ran.txt");
    let mut cmd = gavel(&sandbox);
    cmd.current_dir(&sandbox.ws)
        .args(["run", "--call-id", "r_cut", "--approve", "bash"])
        .arg(r#"{"command":"echo ran >> ran.txt; sleep 2"}"#)
        .arg("--db")
        .arg(&sandbox.db)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let caller = cmd.spawn().unwrap();
    let started = Instant::now();
    while !marker.exists() {
        assert!(started.elapsed() < Duration::from_secs(20), "never ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut process = resident.child.take().unwrap();
    process.kill().unwrap();
    process.wait().unwrap();

    let out = caller.wait_with_output().unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("stopped answering in the middle of the call"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
    // Written ahead before it ran; its result never came.
    let out = sandbox
        .gavel(&["show", "r_cut", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("bash.requires_approval"), "{shown}");
    assert!(shown.contains("approved"), "{shown}");
    let out = sandbox.gavel(&["verify"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn through_a_resident_gavel_run_asks_on_the_callers_terminal() {
    let Some(script) = ["/usr/bin/script", "/bin/script"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        eprintln!("SKIPPED: `script` (util-linux) is not installed");
        return;
    };
    let sandbox = Sandbox::new();
    let resident = Resident::start(&sandbox);
    let command = format!(
        "{} run --call-id r_tty write_file '{{\"path\":\"out.txt\",\"content\":\"yes\"}}' --db {}",
        env!("CARGO_BIN_EXE_gavel"),
        sandbox.db.display()
    );
    let mut cmd = in_env(Command::new(script), &sandbox);
    cmd.args(["-qec", &command, "/dev/null"])
        .current_dir(&sandbox.ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"y\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let shown = stdout(&out);
    assert_eq!(code(&out), 0, "{shown}");
    assert!(shown.contains("path.write_requires_approval"), "{shown}");
    assert!(shown.contains("succeeded"), "{shown}");
    assert_eq!(
        std::fs::read_to_string(sandbox.ws.join("out.txt")).unwrap(),
        "yes"
    );
    let said = resident.stop();
    assert!(said.contains("answered 1 calls"), "{said}");
    let out = sandbox
        .gavel(&["show", "r_tty", "--json"])
        .output()
        .unwrap();
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let approval = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "approval")
        .expect("an approval row");
    assert_eq!(approval["payload"]["status"], "approved", "{approval}");
    assert_eq!(approval["payload"]["channel"], "tty", "{approval}");
}

#[test]
fn through_a_resident_gavel_run_ask_wait_waits_for_gavel_approve() {
    let sandbox = Sandbox::new();
    let resident = Resident::start(&sandbox);
    let mut run = gavel(&sandbox);
    run.current_dir(&sandbox.ws)
        .args(["run", "--call-id", "r_wait", "--ask", "wait=30s", "--json"])
        .args(["write_file", r#"{"path":"out.txt","content":"waited"}"#])
        .arg("--db")
        .arg(&sandbox.db)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let run = run.spawn().unwrap();
    let listed = crate::approvals::wait_for_pending(&sandbox, 1);
    assert_eq!(listed[0]["call_id"], "r_wait");
    let out = sandbox
        .gavel(&["approve", "r_wait", "--yes"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let outcome: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(outcome["approval"], "approved", "{outcome}");
    assert_eq!(outcome["status"], "succeeded", "{outcome}");
    assert_eq!(
        std::fs::read_to_string(sandbox.ws.join("out.txt")).unwrap(),
        "waited"
    );
    let said = resident.stop();
    assert!(said.contains("answered 1 calls"), "{said}");
    let out = sandbox.gavel(&["verify"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
