//! The pending queue through the real binary: a call run with `--ask wait`
//! waits in the record until `gavel approve` / `gavel reject` answers it
//! from another process, or its wait ends.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

/// `gavel ARGS --workspace WS --db DB` started in the background.
fn spawn(sandbox: &Sandbox, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(args)
        .arg("--workspace")
        .arg(&sandbox.ws)
        .arg("--db")
        .arg(&sandbox.db)
        .current_dir(&sandbox.root)
        .env("GAVEL_CHECKPOINT_EVERY", "0")
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gavel")
}

/// The calls `gavel pending --json` lists, once at least `n` are listed.
pub fn wait_for_pending(sandbox: &Sandbox, n: usize) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let output = run_expecting(&mut sandbox.gavel(&["pending", "--json"]), 0);
        let listed = json_lines(&output);
        if listed.len() >= n {
            return listed;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no call became pending"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn finish(child: Child) -> (i32, Value, String) {
    let output = child.wait_with_output().unwrap();
    let err = stderr(&output);
    (code(&output), json(&output), err)
}

/// The payload of call `id`'s approval rows, in order.
fn approvals(sandbox: &Sandbox, id: &str) -> Vec<Value> {
    let output = run_expecting(&mut sandbox.gavel(&["show", id, "--json"]), 0);
    let text = stdout(&output);
    let shown: Value = serde_json::from_str(&text).unwrap_or_else(|_| {
        Value::Array(
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
        )
    });
    let events = shown
        .get("events")
        .cloned()
        .unwrap_or(shown)
        .as_array()
        .cloned()
        .unwrap();
    events
        .into_iter()
        .filter(|e| e["kind"] == "approval")
        .map(|e| e["payload"].clone())
        .collect()
}

fn write_args() -> String {
    json!({"path": "out.txt", "content": "approved content\n"}).to_string()
}

#[test]
fn run_waits_until_gavel_approve_from_another_process_lets_it_run() {
    let sandbox = Sandbox::new();
    let args = write_args();
    let child = spawn(
        &sandbox,
        &["run", "write_file", &args, "--ask", "wait=30s", "--json"],
    );
    let listed = wait_for_pending(&sandbox, 1);
    let call = &listed[0];
    let id = call["call_id"].as_str().unwrap().to_owned();
    assert_eq!(call["tool"], "write_file");
    assert_eq!(call["rule_id"], "path.write_requires_approval");
    assert_eq!(call["arguments"]["path"], "out.txt");
    assert!(!sandbox.ws.join("out.txt").exists(), "ran before approval");
    let answered = run_expecting(&mut sandbox.gavel(&["approve", &id, "--yes", "--json"]), 0);
    assert_eq!(json(&answered)["channel"], "cli");
    let (code, outcome, err) = finish(child);
    assert_eq!(code, 0, "{err}");
    assert_eq!(outcome["approval"], "approved");
    assert_eq!(outcome["status"], "succeeded");
    assert_eq!(sandbox.read("out.txt"), "approved content\n");
    let rows = approvals(&sandbox, &id);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["status"], "pending");
    assert_eq!(rows[0]["channel"], "queue");
    assert_eq!(rows[1]["status"], "approved");
    assert_eq!(rows[1]["channel"], "cli");
    assert!(rows[1]["approver"].as_str().is_some_and(|a| !a.is_empty()));
    assert_eq!(rows[1]["arguments_sha256"], call["arguments_sha256"]);
    // Nothing waits any more, and a second answer is refused.
    assert!(wait_for_pending_now(&sandbox).is_empty());
    let line = assert_one_line_error(&mut sandbox.gavel(&["reject", &id, "--yes"]));
    assert!(line.contains("already approved"), "{line}");
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}

fn wait_for_pending_now(sandbox: &Sandbox) -> Vec<Value> {
    json_lines(&run_expecting(
        &mut sandbox.gavel(&["pending", "--json"]),
        0,
    ))
}

#[test]
fn gavel_reject_blocks_the_waiting_call_with_its_reason() {
    let sandbox = Sandbox::new();
    let args = write_args();
    let child = spawn(
        &sandbox,
        &["run", "write_file", &args, "--ask", "wait=30s", "--json"],
    );
    let id = wait_for_pending(&sandbox, 1)[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    run_expecting(
        &mut sandbox.gavel(&["reject", &id, "--yes", "--reason", "not now"]),
        0,
    );
    let (code, outcome, _) = finish(child);
    assert_eq!(code, 3);
    assert_eq!(outcome["approval"], "rejected");
    assert_eq!(outcome["status"], "blocked");
    assert!(!sandbox.ws.join("out.txt").exists());
    let rows = approvals(&sandbox, &id);
    assert_eq!(rows.last().unwrap()["reason"], "not now");
    assert_eq!(rows.last().unwrap()["channel"], "cli");
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}

#[test]
fn an_unanswered_wait_ends_cancelled_by_timeout() {
    let sandbox = Sandbox::new();
    let args = write_args();
    let started = Instant::now();
    let output = run_expecting(
        &mut sandbox.gavel(&["run", "write_file", &args, "--ask", "wait=1s", "--json"]),
        3,
    );
    assert!(started.elapsed() >= Duration::from_secs(1));
    let outcome = json(&output);
    assert_eq!(outcome["approval"], "cancelled");
    assert_eq!(outcome["status"], "blocked");
    let id = outcome["call_id"].as_str().unwrap();
    let rows = approvals(&sandbox, id);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[1]["status"], "cancelled");
    assert_eq!(rows[1]["channel"], "queue");
    assert_eq!(rows[1]["cause"], "timeout");
    // Too late to answer.
    let line = assert_one_line_error(&mut sandbox.gavel(&["approve", id, "--yes"]));
    assert!(line.contains("already cancelled"), "{line}");
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}

#[test]
fn an_answer_for_other_arguments_is_refused() {
    let sandbox = Sandbox::new();
    let args = write_args();
    let child = spawn(
        &sandbox,
        &["run", "write_file", &args, "--ask", "wait=30s", "--json"],
    );
    let id = wait_for_pending(&sandbox, 1)[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let other = "0".repeat(64);
    let line =
        assert_one_line_error(&mut sandbox.gavel(&["approve", &id, "--yes", "--digest", &other]));
    assert!(line.contains("other arguments"), "{line}");
    // Still waiting; a right answer still works.
    assert_eq!(wait_for_pending_now(&sandbox).len(), 1);
    run_expecting(&mut sandbox.gavel(&["reject", &id, "--yes"]), 0);
    let (code, _, _) = finish(child);
    assert_eq!(code, 3);
}

#[test]
fn answering_a_call_that_never_waited_is_a_one_line_error() {
    let sandbox = Sandbox::new();
    run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "read_file",
            r#"{"path":"notes.txt"}"#,
            "--call-id",
            "r1",
        ]),
        0,
    );
    let line = assert_one_line_error(&mut sandbox.gavel(&["approve", "r1", "--yes"]));
    assert!(line.contains("not waiting"), "{line}");
    let line = assert_one_line_error(&mut sandbox.gavel(&["approve", "nope", "--yes"]));
    assert!(line.contains("nope"), "{line}");
    let output = run_expecting(
        &mut sandbox.gavel(&["run", "read_file", "{}", "--ask", "wait=soon"]),
        2,
    );
    assert!(stderr(&output).contains("`soon` is not a duration"));
}

#[test]
fn serve_waits_in_the_queue_instead_of_asking_on_its_stream() {
    let sandbox = Sandbox::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(["serve", "--stdio", "--ask", "wait=30s", "--workspace"])
        .arg(&sandbox.ws)
        .arg("--db")
        .arg(&sandbox.db)
        .env("GAVEL_CHECKPOINT_EVERY", "0")
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let stdin = child.stdin.as_mut().unwrap();
        let line = json!({"type": "tool_use", "id": "s1", "name": "write_file",
                          "input": {"path": "s.txt", "content": "from serve\n"}});
        writeln!(stdin, "{line}").unwrap();
    }
    wait_for_pending(&sandbox, 1);
    run_expecting(&mut sandbox.gavel(&["approve", "s1", "--yes"]), 0);
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["approval"], "approved");
    assert_eq!(lines[0]["status"], "succeeded");
    assert_eq!(sandbox.read("s.txt"), "from serve\n");
}

/// `gavel hook CLIENT --ask ASK` started in the background on a `shell_pre`
/// payload running `command` (an ask under the coding-agent policy).
fn spawn_hook(sandbox: &Sandbox, client: &str, ask: &str, command: &str, id: &str) -> Child {
    let mut args = vec!["hook", client, "--ask", ask];
    if client == "copilot" {
        args.extend(["--event", "preToolUse"]);
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(&args)
        .arg("--workspace")
        .arg(&sandbox.ws)
        .arg("--db")
        .arg(&sandbox.db)
        .env("GAVEL_CHECKPOINT_EVERY", "0")
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let payload = crate::clients::payload(sandbox, client, "shell_pre", command, id);
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.as_bytes())
            .unwrap();
    }
    child
}

fn coding_agent_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", gavel::policy::CODING_AGENT_POLICY_TOML);
    sandbox
}

/// The `log --json` row of the only call.
fn only_call(sandbox: &Sandbox) -> Value {
    let calls = json_lines(&run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0));
    assert_eq!(calls.len(), 1, "{calls:?}");
    calls[0].clone()
}

#[test]
fn every_client_hook_waits_until_gavel_approve_lets_the_call_run() {
    for client in ["claude-code", "codex", "gemini", "copilot", "cursor"] {
        let sandbox = coding_agent_sandbox();
        let child = spawn_hook(&sandbox, client, "wait=30s", "touch made.txt", "w1");
        let listed = wait_for_pending(&sandbox, 1);
        assert_eq!(listed[0]["rule_id"], "bash.requires_approval", "{client}");
        let id = listed[0]["call_id"].as_str().unwrap().to_owned();
        run_expecting(&mut sandbox.gavel(&["approve", &id, "--yes"]), 0);
        let output = child.wait_with_output().unwrap();
        let (answer, reason) = crate::clients::decision(client, &output);
        assert_eq!(answer, "allow", "{client}: {reason}");
        let call = only_call(&sandbox);
        assert_eq!(call["approval"], "approved", "{client}");
        run_expecting(&mut sandbox.gavel(&["verify"]), 0);
    }
}

#[test]
fn a_rejected_or_unanswered_hook_call_is_denied_and_blocked() {
    let sandbox = coding_agent_sandbox();
    let child = spawn_hook(&sandbox, "codex", "wait=30s", "touch made.txt", "r1");
    let id = wait_for_pending(&sandbox, 1)[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    run_expecting(
        &mut sandbox.gavel(&["reject", &id, "--yes", "--reason", "no touching"]),
        0,
    );
    let output = child.wait_with_output().unwrap();
    let (answer, reason) = crate::clients::decision("codex", &output);
    assert_eq!(answer, "deny");
    assert!(reason.contains("no touching"), "{reason}");
    let call = only_call(&sandbox);
    assert_eq!(call["approval"], "rejected");
    assert_eq!(call["status"], "blocked");

    let sandbox = coding_agent_sandbox();
    let child = spawn_hook(&sandbox, "gemini", "wait=1s", "touch made.txt", "t1");
    let output = child.wait_with_output().unwrap();
    let (answer, reason) = crate::clients::decision("gemini", &output);
    assert_eq!(answer, "deny");
    assert!(reason.contains("nobody answered in time"), "{reason}");
    let call = only_call(&sandbox);
    assert_eq!(call["approval"], "cancelled");
    assert_eq!(call["status"], "blocked");
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}

/// Every spelling of an approval command the agent's `bash` might use.
const SELF_APPROVALS: &[&str] = &[
    "gavel approve call_1 --yes",
    "gavel reject call_1",
    "gavel revoke g1",
    "gavel approvals --listen 127.0.0.1:8080",
    "gavel --db .gavel/audit.db approve call_1",
    "env gavel approve call_1",
    "env GAVEL_DB=/tmp/x.db gavel approve call_1",
    "nohup gavel approve call_1",
    "timeout 5 gavel approve call_1",
    "nice -n 5 gavel approve call_1",
    "command gavel approve call_1",
    "exec gavel approve call_1",
    "sh -c 'gavel approve call_1'",
    "bash -c \"gavel reject call_1\"",
    "bash -lc 'cd . && gavel approve call_1'",
    "./target/release/gavel approve call_1",
    "/usr/local/bin/gavel approve call_1",
    "../gavel/target/debug/gavel approve call_1",
    "echo ok; gavel approve call_1",
    "echo $(gavel approve call_1)",
    "true && gavel approve call_1 --yes",
    "echo call_1 | xargs gavel approve",
    "gavel --wide --db=.gavel/audit.db reject call_1",
    "gavel --workspace . --policy gavel.toml --durability normal revoke g1",
    "gavel grants",
    "gavel -- approve call_1",
    "gavel --no-such-option approve call_1",
];

/// Commands that mention an approval word without running an approval
/// subcommand: the rule must leave them to the rest of the policy.
const NOT_SELF_APPROVALS: &[&str] = &[
    "gavel pending",
    "gavel log",
    "echo gavel approve",
    "gavel log --grep approve",
    "gavel log --rule approve --json",
    "gavel explain approve-123",
    "gavel show approvals",
    "gavel --db approve log",
    "env GAVEL_DB=x gavel --wide stats --tool approve",
    "printf '%s\\n' 'gavel approve call_1'",
    "grep -rn 'gavel approve' docs",
    "sh -c 'gavel log --grep reject'",
];

#[test]
fn the_agents_own_bash_cannot_approve_under_either_builtin_policy() {
    let sandbox = Sandbox::new();
    let preset = sandbox.root.join("coding-agent.toml");
    std::fs::write(&preset, gavel::policy::CODING_AGENT_POLICY_TOML).unwrap();
    let preset = preset.display().to_string();
    for policy in [None, Some(preset.as_str())] {
        for command in SELF_APPROVALS {
            let args = json!({ "command": command }).to_string();
            let mut cmd = sandbox.gavel(&["check", "bash", &args, "--json"]);
            if let Some(policy) = policy {
                cmd.args(["--policy", policy]);
            }
            let report = json(&run_expecting(&mut cmd, 0));
            assert_eq!(
                report["action"], "deny",
                "{command} under {policy:?}: {report}"
            );
            assert_eq!(
                report["rule_id"], "bash.self_approval",
                "{command} under {policy:?}: {report}"
            );
        }
        // Reading the queue, or the record, is not answering it.
        for command in NOT_SELF_APPROVALS {
            let args = json!({ "command": command }).to_string();
            let mut cmd = sandbox.gavel(&["check", "bash", &args, "--json"]);
            if let Some(policy) = policy {
                cmd.args(["--policy", policy]);
            }
            let report = json(&run_expecting(&mut cmd, 0));
            assert_ne!(report["rule_id"], "bash.self_approval", "{command}");
        }
    }
}

/// Issue 39, item 3: a project policy whose first rule allowed the program
/// `gavel` let half of the spellings of `gavel approve` through, since
/// `bash.self_approval` was only a rule of the policy, after it. The floor
/// is decided above any policy: every spelling is denied, and so is any
/// use of gavel's record and any write of its policy, whatever a policy
/// allows first.
#[test]
fn self_approval_is_denied_even_when_a_policy_allows_gavel_before_it() {
    let sandbox = Sandbox::new();
    sandbox.write(".gavel/audit.db", "record");
    let loose = r#"
name = "allows-gavel"
[[rules]]
id = "allow.gavel"
action = "allow"
tools = ["bash"]
commands = [{ program = ["gavel", "env", "command", "nohup", "timeout", "nice", "exec", "sh", "bash", "echo", "true", "xargs", "cat", "rm", "cp"] }]
reason = "anything"
[[rules]]
id = "allow.files"
action = "allow"
tools = ["read_file", "write_file", "edit_file", "glob", "apply_patch"]
reason = "anything"
"#;
    let policy = sandbox.root.join("loose.toml");
    std::fs::write(&policy, loose).unwrap();
    let policy = policy.display().to_string();
    let decide = |tool: &str, arguments: Value| {
        let args = arguments.to_string();
        json(&run_expecting(
            &mut sandbox.gavel(&["check", tool, &args, "--json", "--policy", &policy]),
            0,
        ))
    };
    for command in SELF_APPROVALS {
        let report = decide("bash", json!({ "command": command }));
        assert_eq!(
            (report["action"].as_str(), report["rule_id"].as_str()),
            (Some("deny"), Some("bash.self_approval")),
            "{command}: {report}"
        );
        assert_eq!(report["layer"], "built-in", "{command}: {report}");
    }
    for command in NOT_SELF_APPROVALS
        .iter()
        .filter(|c| c.starts_with("gavel "))
    {
        let report = decide("bash", json!({ "command": command }));
        assert_eq!(report["rule_id"], "allow.gavel", "{command}: {report}");
    }
    for (tool, arguments) in [
        ("read_file", json!({ "path": ".gavel/audit.db" })),
        ("write_file", json!({ "path": "gavel.toml", "content": "" })),
        (
            "edit_file",
            json!({ "path": "gavel.toml", "old_text": "a", "new_text": "b" }),
        ),
        (
            "apply_patch",
            json!({ "paths": ["src/a.rs", ".gavel/audit.db"] }),
        ),
        ("bash", json!({ "command": "cat .gavel/audit.db" })),
        ("bash", json!({ "command": "rm -f .gavel/audit.db" })),
        ("bash", json!({ "command": "cp x gavel.toml" })),
        (
            "bash",
            json!({ "command": "echo '[[rules]]' >> gavel.toml" }),
        ),
    ] {
        let report = decide(tool, arguments.clone());
        assert_eq!(
            (report["action"].as_str(), report["rule_id"].as_str()),
            (Some("deny"), Some("path.protected")),
            "{tool} {arguments}: {report}"
        );
    }
    // The floor's ask: a write to what git runs, never an allow.
    let report = decide(
        "write_file",
        json!({ "path": ".git/config", "content": "[core]\nfsmonitor = ./x" }),
    );
    assert_eq!(
        (report["action"].as_str(), report["rule_id"].as_str()),
        (Some("ask"), Some("path.git_config")),
        "{report}"
    );
}

/// `gavel check bash COMMAND --json` under the built-in policy.
fn checked(sandbox: &Sandbox, command: &str) -> Value {
    let args = json!({ "command": command }).to_string();
    json(&run_expecting(
        &mut sandbox.gavel(&["check", "bash", &args, "--json"]),
        0,
    ))
}

#[test]
fn the_self_approval_rule_reads_gavels_options_as_the_real_binary_does() {
    let sandbox = Sandbox::new();
    let policy = sandbox.write("p.toml", gavel::policy::DEFAULT_POLICY_TOML);
    record(&sandbox, "c1", "read_file", json!({"path": "p.toml"}));
    let help = stdout(&run_expecting(sandbox.bare().arg("--help"), 0));
    // Every option `gavel --help` lists (those a subcommand's name may follow).
    let listed: Vec<(String, bool)> = help
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line
                .strip_prefix("-h, ")
                .or(line.strip_prefix("-V, "))
                .unwrap_or(line);
            let rest = line.strip_prefix("--")?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            Some((name.clone(), rest[name.len()..].starts_with(" <")))
        })
        .collect();
    let modelled: Vec<(String, bool)> = gavel::shell::programs::gavel::GLOBALS
        .iter()
        .map(|o| {
            (
                o.long.to_owned(),
                o.arg == gavel::shell::programs::getopt::Arg::Required,
            )
        })
        .collect();
    let mut sorted = listed.clone();
    sorted.sort();
    let mut model = modelled.clone();
    model.sort();
    assert_eq!(
        sorted, model,
        "gavel --help and the model of its options differ"
    );
    for (name, valued) in &listed {
        if matches!(name.as_str(), "help" | "version") {
            continue;
        }
        let value = match name.as_str() {
            _ if !valued => String::new(),
            "workspace" => sandbox.ws.display().to_string(),
            "policy" | "shadow-policy" => policy.display().to_string(),
            "db" => sandbox.db.display().to_string(),
            "durability" => "normal".to_owned(),
            "max-argument-bytes" => "100000".to_owned(),
            other => panic!("no value to test `--{other}` with: add one here"),
        };
        let option: Vec<String> = if *valued {
            vec![format!("--{name}"), value]
        } else {
            vec![format!("--{name}")]
        };
        // The real binary: the words after the option run `approve` ...
        let mut approve = option.clone();
        approve.extend(["approve".into(), "no_such_call".into(), "--yes".into()]);
        let out = sandbox.bare().args(&approve).output().unwrap();
        assert!(
            stderr(&out).contains("cannot answer call `no_such_call`"),
            "{approve:?} did not run approve: {}",
            stderr(&out)
        );
        // ... or `log`, with the word only as an argument.
        let mut log = option.clone();
        log.extend(["log".into(), "--grep".into(), "approve".into()]);
        let mut log_cmd = sandbox.bare();
        log_cmd.args(&log);
        if name != "db" {
            log_cmd.arg("--db").arg(&sandbox.db);
        }
        run_expecting(&mut log_cmd, 0);
        // The rule reads both as gavel did.
        let words = |w: &[String]| {
            std::iter::once("gavel".to_owned())
                .chain(w.iter().map(|a| format!("'{a}'")))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let report = checked(&sandbox, &words(&approve));
        assert_eq!(
            report["rule_id"], "bash.self_approval",
            "{approve:?}: {report}"
        );
        let report = checked(&sandbox, &words(&log));
        assert_ne!(report["rule_id"], "bash.self_approval", "{log:?}: {report}");
    }
}

#[test]
fn init_with_ask_wait_sets_each_clients_hook_timeout_above_the_wait() {
    let cases: &[(&str, &str, &str, u64)] = &[
        ("claude-code", ".claude/settings.json", "timeout", 75),
        ("codex", ".codex/hooks.json", "timeout", 75),
        ("gemini", ".gemini/settings.json", "timeout", 75_000),
        ("copilot", ".github/hooks/gavel.json", "timeoutSec", 75),
        ("cursor", ".cursor/hooks.json", "timeout", 75),
    ];
    for (client, path, key, timeout) in cases {
        let sandbox = Sandbox::new();
        let output = run_expecting(
            &mut sandbox.gavel(&["init", client, "--ask", "wait=60s"]),
            0,
        );
        assert!(
            !stderr(&output).contains("may outlast"),
            "{}",
            stderr(&output)
        );
        let hooks_path = sandbox.ws.join(path);
        let text = std::fs::read_to_string(&hooks_path)
            .unwrap_or_else(|_| panic!("{client}: no {}", hooks_path.display()));
        let hooks: Value = serde_json::from_str(&text).unwrap();
        let mut entries = Vec::new();
        collect_entries(&hooks, &mut entries);
        assert!(!entries.is_empty(), "{client}: {text}");
        for entry in entries {
            let command = entry
                .get("command")
                .or_else(|| entry.get("bash"))
                .and_then(Value::as_str)
                .unwrap();
            assert!(command.contains("--ask wait=60s"), "{client}: {command}");
            assert_eq!(entry[*key], json!(timeout), "{client}: {entry}");
            // A hook Cursor stops at its timeout must block, not let the call through.
            if *client == "cursor" {
                assert_eq!(entry["failClosed"], true, "{entry}");
            }
        }
    }
}

/// Every hook entry (an object with a gavel `command` or `bash`) in `value`.
fn collect_entries(value: &Value, into: &mut Vec<Value>) {
    match value {
        Value::Object(object) => {
            let runs_gavel = ["command", "bash"].iter().any(|field| {
                object
                    .get(*field)
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.contains(" hook "))
            });
            if runs_gavel {
                into.push(value.clone());
            }
            object.values().for_each(|v| collect_entries(v, into));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_entries(v, into)),
        _ => {}
    }
}

/// `gavel hook codex` on one `shell_pre` payload; the answer and its reason.
fn codex_pre(sandbox: &Sandbox, command: &str, id: &str, args: &[&str]) -> (String, String) {
    let payload = crate::clients::payload(sandbox, "codex", "shell_pre", command, id);
    let output = sandbox
        .gavel(&["hook", "codex"])
        .args(args)
        .write_stdin(payload)
        .output()
        .unwrap();
    crate::clients::decision("codex", &output)
}

/// The `log --json` row of the call whose command is `command`.
fn logged(sandbox: &Sandbox, id: &str) -> Value {
    let calls = json_lines(&run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0));
    calls
        .into_iter()
        .find(|c| c["call_id"] == format!("call_{id}"))
        .unwrap_or_else(|| panic!("no call {id}"))
}

#[test]
fn a_session_grant_for_cargo_update_covers_the_next_calls_until_it_is_revoked() {
    let sandbox = coding_agent_sandbox();
    // The first `cargo update` waits (a build or test would run contained,
    // not asked); approved with a grant for `cargo update` this session.
    let child = spawn_hook(&sandbox, "codex", "wait=30s", "cargo update", "g0");
    let id = wait_for_pending(&sandbox, 1)[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let answered = json(&run_expecting(
        &mut sandbox.gavel(&[
            "approve",
            &id,
            "--yes",
            "--json",
            "--grant",
            "command",
            "--session",
        ]),
        0,
    ));
    let grant = answered["grant"]["grant"].as_str().unwrap().to_owned();
    assert_eq!(
        answered["grant"]["scope"],
        json!({"type": "command", "words": ["cargo", "update"]})
    );
    let (answer, _) = crate::clients::decision("codex", &child.wait_with_output().unwrap());
    assert_eq!(answer, "allow");

    // The next three run without anybody asked, each citing the grant.
    for (n, command) in [
        "cargo update",
        "cargo update --lib grants",
        "cargo update -q -- --nocapture",
    ]
    .iter()
    .enumerate()
    {
        let id = format!("g{}", n + 1);
        let (answer, reason) = codex_pre(&sandbox, command, &id, &[]);
        assert_eq!(answer, "allow", "{command}: {reason}");
        let call = logged(&sandbox, &id);
        assert_eq!(call["action"], "allow", "{command}");
        assert_eq!(call["rule_id"], format!("grant.{grant}"), "{command}");
        assert!(
            call["reason"]
                .as_str()
                .unwrap()
                .contains("bash.requires_approval"),
            "{call}"
        );
    }
    // What the grant never covers: another program, an unprovable or
    // outside command, a write by redirection, another session.
    for (command, id) in [
        ("cargo publish", "n1"),
        ("cargo update $(cat x)", "n2"),
        ("cargo update > out.txt", "n3"),
        ("cargo update --manifest-path /etc/Cargo.toml", "n4"),
        ("cargo update && rm -f a", "n5"),
    ] {
        let (answer, _) = codex_pre(&sandbox, command, id, &[]);
        assert_eq!(answer, "deny", "{command}");
        assert!(
            !logged(&sandbox, id)["rule_id"]
                .as_str()
                .unwrap()
                .starts_with("grant."),
            "{command}"
        );
    }
    let listed = json_lines(&run_expecting(&mut sandbox.gavel(&["grants", "--json"]), 0));
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["used"], 3);
    assert_eq!(listed[0]["state"], "active");

    // `explain` names the grant that allowed a call.
    let explained = stdout(&run_expecting(
        &mut sandbox.gavel(&["explain", "call_g2"]),
        0,
    ));
    assert!(
        explained.contains(&format!(
            "Grant: `{grant}` (`cargo update` with any arguments)"
        )),
        "{explained}"
    );
    let explained = json(&run_expecting(
        &mut sandbox.gavel(&["explain", "call_g2", "--json"]),
        0,
    ));
    assert_eq!(explained["grant"]["grant"], grant.as_str());

    // Revoked: the fourth is asked again (denied as "needs approval" under Codex).
    run_expecting(
        &mut sandbox.gavel(&["revoke", &grant, "--reason", "done"]),
        0,
    );
    let (answer, reason) = codex_pre(&sandbox, "cargo update", "g4", &[]);
    assert_eq!(answer, "deny", "{reason}");
    assert_eq!(logged(&sandbox, "g4")["rule_id"], "bash.requires_approval");
    let listed = json_lines(&run_expecting(&mut sandbox.gavel(&["grants", "--json"]), 0));
    assert_eq!(listed[0]["state"], "revoked");
    assert_eq!(listed[0]["revoked"]["reason"], "done");
    let line = assert_one_line_error(&mut sandbox.gavel(&["revoke", &grant]));
    assert!(line.contains("already revoked"), "{line}");

    // Replay re-decides with the grants in force at each call: the policy
    // still asks about the three, and the grant (not yet revoked then)
    // allows them again (no drift); the fourth came after the revocation,
    // and replay says so. All four are listed with their grant.
    let report = json(&run_expecting(
        &mut sandbox.gavel(&["replay", "--format", "json"]),
        0,
    ));
    assert_eq!(report["granted"], 3, "{report}");
    let granted: Vec<(&str, &str, bool, bool, &str)> = report["granted_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["call_id"].as_str().unwrap(),
                g["grant"].as_str().unwrap(),
                g["recorded"].as_bool().unwrap(),
                g["covered"].as_bool().unwrap(),
                g["lapsed"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        granted,
        [
            ("call_g1", grant.as_str(), true, true, ""),
            ("call_g2", grant.as_str(), true, true, ""),
            ("call_g3", grant.as_str(), true, true, ""),
            ("call_g4", grant.as_str(), false, false, "revoked"),
        ],
        "{report}"
    );
    assert_eq!(
        report["granted_calls"][0]["now"]["rule_id"],
        "bash.requires_approval"
    );
    assert_eq!(report["changed"], 0, "{report}");
    // ... and without grants, they are drift from allow to ask.
    let report = json(&run_expecting(
        &mut sandbox.gavel(&["replay", "--format", "json", "--no-grants"]),
        1,
    ));
    assert_eq!(report["tightened"], 3, "{report}");
    assert_eq!(
        report["granted_calls"][0]["lapsed"], "replayed without grants",
        "{report}"
    );
    let table = stdout(&run_expecting(&mut sandbox.gavel(&["replay"]), 0));
    assert!(table.contains("3 call(s) allowed by a grant"), "{table}");
    assert!(
        table.contains(&format!(
            "1 call(s) a grant does not cover (any more): call_g4 (grant {grant}: revoked)"
        )),
        "{table}"
    );
    // The evidence report shows the grant, its uses and its revocation.
    let html = sandbox.root.join("report.html");
    run_expecting(
        &mut sandbox.gavel(&["report", "--html", html.to_str().unwrap()]),
        0,
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let row_at = page
        .find(&format!("<tr data-grant=\"{grant}\">"))
        .unwrap_or_else(|| panic!("no row for {grant}"));
    let row = &page[row_at..row_at + page[row_at..].find("</tr>").unwrap()];
    assert!(row.contains("<td>revoked</td>"), "{row}");
    assert!(row.contains("<td class=\"n\">3</td>"), "{row}");
    assert!(row.contains(": done"), "{row}");
    // The independent verifier reads the queue, grant and revocation rows as gavel does.
    let report = crate::store::both_agree_db(&sandbox, "grants", &[], &sandbox.db);
    assert_eq!(report["ok"], true, "{report}");
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}

/// The replay's `granted_calls` as (call, covered, lapsed).
fn replayed_grants(sandbox: &Sandbox) -> Vec<(String, bool, String)> {
    let report = json(&run_expecting(
        &mut sandbox.gavel(&["replay", "--format", "json"]),
        0,
    ));
    report["granted_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|g| {
            (
                g["call_id"].as_str().unwrap().to_owned(),
                g["covered"].as_bool().unwrap(),
                g["lapsed"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// Approves the `cargo update` hook call `id` waiting under Codex with a
/// `command` grant limited by `limits`; the grant's id.
fn grant_cargo_update(sandbox: &Sandbox, id: &str, limits: &[&str]) -> String {
    let child = spawn_hook(sandbox, "codex", "wait=30s", "cargo update", id);
    let call = wait_for_pending(sandbox, 1)[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut args = vec!["approve", &call, "--yes", "--json", "--grant", "command"];
    args.extend(limits);
    let answered = json(&run_expecting(&mut sandbox.gavel(&args), 0));
    let (answer, _) = crate::clients::decision("codex", &child.wait_with_output().unwrap());
    assert_eq!(answer, "allow");
    answered["grant"]["grant"].as_str().unwrap().to_owned()
}

#[test]
fn replay_re_checks_a_grants_use_limit_and_its_end() {
    let sandbox = coding_agent_sandbox();
    let grant = grant_cargo_update(&sandbox, "u0", &["--uses", "2"]);
    for (id, expected) in [("u1", "allow"), ("u2", "allow"), ("u3", "deny")] {
        let (answer, reason) = codex_pre(&sandbox, "cargo update", id, &[]);
        assert_eq!(answer, expected, "{id}: {reason}");
    }
    assert_eq!(logged(&sandbox, "u3")["rule_id"], "bash.requires_approval");
    let expected =
        |id: &str, covered: bool, lapsed: &str| (format!("call_{id}"), covered, lapsed.to_owned());
    assert_eq!(
        replayed_grants(&sandbox),
        [
            expected("u1", true, ""),
            expected("u2", true, ""),
            expected("u3", false, "used up (2 of 2 uses)"),
        ]
    );
    run_expecting(&mut sandbox.gavel(&["revoke", &grant]), 0);

    // A grant for one second: a call after it is asked, and replay says why.
    let sandbox = coding_agent_sandbox();
    grant_cargo_update(&sandbox, "d0", &["--for", "1s"]);
    std::thread::sleep(Duration::from_millis(1200));
    let (answer, _) = codex_pre(&sandbox, "cargo update", "d1", &[]);
    assert_eq!(answer, "deny");
    assert_eq!(
        replayed_grants(&sandbox),
        [expected("d1", false, "expired")]
    );
}

#[test]
fn another_session_is_not_covered_by_a_session_grant() {
    let sandbox = coding_agent_sandbox();
    let child = spawn_hook(&sandbox, "codex", "wait=30s", "cargo update", "s0");
    let id = wait_for_pending(&sandbox, 1)[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    run_expecting(
        &mut sandbox.gavel(&["approve", &id, "--yes", "--grant", "command", "--session"]),
        0,
    );
    child.wait_with_output().unwrap();
    let payload = crate::clients::payload(&sandbox, "codex", "shell_pre", "cargo update", "s1")
        .replace("019a7c2e-5b1d-7f30-9a64-3c2d1e0f4b8a", "another-session");
    let output = sandbox
        .gavel(&["hook", "codex"])
        .write_stdin(payload)
        .output()
        .unwrap();
    let (answer, _) = crate::clients::decision("codex", &output);
    assert_eq!(answer, "deny");
    // A rejection cannot carry a grant.
    let line = assert_one_line_error(&mut sandbox.gavel(&["reject", "x", "--grant", "call"]));
    assert!(line.contains("--grant goes with an approval"), "{line}");
}

#[test]
fn the_policys_approval_wait_makes_asked_calls_wait_without_a_flag() {
    let sandbox = Sandbox::new();
    let text = format!(
        "{}\n[approval]\nwait = \"1s\"\n",
        gavel::policy::DEFAULT_POLICY_TOML
    );
    sandbox.write("gavel.toml", &text);
    let args = write_args();
    let output = run_expecting(
        &mut sandbox.gavel(&["run", "write_file", &args, "--json"]),
        3,
    );
    let outcome = json(&output);
    assert_eq!(outcome["approval"], "cancelled");
    let rows = approvals(&sandbox, outcome["call_id"].as_str().unwrap());
    assert_eq!(rows[0]["channel"], "queue");
    assert_eq!(rows[1]["cause"], "timeout");
    // A flag still wins.
    let output = run_expecting(
        &mut sandbox.gavel(&["run", "write_file", &args, "--reject", "--json"]),
        3,
    );
    assert_eq!(json(&output)["approval"], "rejected");
    // A wait that is not one is refused with the policy.
    sandbox.write("gavel.toml", &text.replace("\"1s\"", "\"soon\""));
    let line = assert_one_line_error(&mut sandbox.gavel(&["policy", "validate"]));
    assert!(
        line.contains("[approval]: wait `soon` is not a duration"),
        "{line}"
    );
}

/// `gavel ARGS` with its stdin on a terminal (util-linux `script`), fed `input`.
fn on_a_terminal(sandbox: &Sandbox, args: &str, input: &str) -> Option<(i32, String)> {
    let script = ["/usr/bin/script", "/bin/script"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let Some(script) = script else {
        eprintln!("SKIPPED: `script` (util-linux) is not installed");
        return None;
    };
    let command = format!(
        "{} {args} --workspace {} --db {}",
        env!("CARGO_BIN_EXE_gavel"),
        sandbox.ws.display(),
        sandbox.db.display()
    );
    let mut child = Command::new(script)
        .args(["-qec", &command, "/dev/null"])
        .env("GAVEL_CHECKPOINT_EVERY", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let output = child.wait_with_output().unwrap();
    Some((code(&output), stdout(&output)))
}

#[test]
fn gavel_approve_on_a_terminal_shows_the_call_and_records_only_a_yes() {
    let sandbox = Sandbox::new();
    let args = write_args();
    let child = spawn(
        &sandbox,
        &["run", "write_file", &args, "--ask", "wait=30s", "--json"],
    );
    let id = wait_for_pending(&sandbox, 1)[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let Some((code_no, shown)) = on_a_terminal(&sandbox, &format!("approve {id}"), "n\n") else {
        run_expecting(&mut sandbox.gavel(&["reject", &id, "--yes"]), 0);
        finish(child);
        return;
    };
    assert_eq!(code_no, 1, "{shown}");
    assert!(shown.contains("Approve this call? [y/N]"), "{shown}");
    assert!(shown.contains("\"path\":\"out.txt\""), "{shown}");
    assert!(shown.contains("nothing recorded"), "{shown}");
    assert_eq!(wait_for_pending_now(&sandbox).len(), 1, "a no was recorded");
    let (code_yes, shown) = on_a_terminal(&sandbox, &format!("approve {id}"), "y\n").unwrap();
    assert_eq!(code_yes, 0, "{shown}");
    let (code, outcome, _) = finish(child);
    assert_eq!(code, 0);
    assert_eq!(outcome["status"], "succeeded");
}
