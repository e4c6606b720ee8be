//! `gavel run`: one call through policy, approval and execution, through the
//! real binary. Exit codes: 0 succeeded, 1 failed, 2 usage error, 3 blocked.

use serde_json::json;

use crate::support::{Sandbox, assert_one_line_error, fixture, json, run_expecting, stdout};

#[test]
fn run_allowed_read_succeeds_with_exit_0() {
    let sandbox = Sandbox::new();
    let value = json(&run_expecting(
        &mut sandbox.gavel(&["run", "read_file", r#"{"path":"notes.txt"}"#, "--json"]),
        0,
    ));
    assert_eq!(value["tool"], "read_file");
    assert_eq!(value["action"], "allow");
    assert_eq!(value["rule_id"], "path.read_allow");
    assert_eq!(value["approval"], "not_required");
    assert_eq!(value["status"], "succeeded");
    assert_eq!(value["content"], "hello from the workspace\n");
    assert_eq!(value["policy"]["name"], "gavel-default");
    assert_eq!(value["tool_result"]["type"], "tool_result");
    assert_eq!(value["tool_result"]["is_error"], json!(false));
    assert_eq!(value["tool_result"]["content"], value["content"]);
}

#[test]
fn run_failed_call_exits_1_and_keeps_the_exit_code() {
    let sandbox = Sandbox::new();
    let value = json(&run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "bash",
            r#"{"command":"exit 4"}"#,
            "--approve",
            "--json",
        ]),
        1,
    ));
    assert_eq!(value["approval"], "approved");
    assert_eq!(value["status"], "failed");
    assert_eq!(value["exit_code"], 4);
    assert_eq!(value["tool_result"]["is_error"], json!(true));
}

#[test]
fn run_missing_file_and_missing_command_are_failed() {
    let sandbox = Sandbox::new();
    let value = json(&run_expecting(
        &mut sandbox.gavel(&["run", "read_file", r#"{"path":"nope.txt"}"#, "--json"]),
        1,
    ));
    assert_eq!(value["status"], "failed");
    let value = json(&run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "bash",
            r#"{"command":"gavel-no-such-command-xyz"}"#,
            "--approve",
            "--json",
        ]),
        1,
    ));
    assert_eq!(value["status"], "failed");
    assert_eq!(value["exit_code"], 127);
}

#[test]
fn run_denied_call_is_blocked_with_exit_3_even_with_approve() {
    let sandbox = Sandbox::new();
    let value = json(&run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "bash",
            r#"{"command":"sudo touch pwned"}"#,
            "--approve",
            "--json",
        ]),
        3,
    ));
    assert_eq!(value["action"], "deny");
    assert_eq!(value["rule_id"], "bash.hard_deny");
    assert_eq!(value["approval"], "not_required");
    assert_eq!(value["status"], "blocked");
    assert_eq!(
        value["content"],
        "Permission blocked [bash.hard_deny]: command matches a non-overridable deny rule: sudo touch pwned (approval=not_required)"
    );
    assert_eq!(value["tool_result"]["is_error"], json!(true));
    assert!(!sandbox.ws.join("pwned").exists());
}

#[test]
fn run_path_escape_is_blocked_with_exit_3() {
    let sandbox = Sandbox::new();
    let value = json(&run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "write_file",
            r#"{"path":"../outside/new.txt","content":"x"}"#,
            "--approve",
            "--json",
        ]),
        3,
    ));
    assert_eq!(value["rule_id"], "path.outside_workspace");
    assert!(!sandbox.outside.join("new.txt").exists());
}

#[test]
fn run_ask_with_approve_runs_and_with_reject_is_blocked() {
    let sandbox = Sandbox::new();
    let args = r#"{"path":"deep/dir/out.txt","content":"written"}"#;
    let value = json(&run_expecting(
        &mut sandbox.gavel(&["run", "write_file", args, "--reject", "--json"]),
        3,
    ));
    assert_eq!(value["action"], "ask");
    assert_eq!(value["approval"], "rejected");
    assert_eq!(value["status"], "blocked");
    assert!(
        value["content"]
            .as_str()
            .unwrap()
            .ends_with("(approval=rejected)")
    );
    assert!(!sandbox.ws.join("deep").exists());

    let value = json(&run_expecting(
        &mut sandbox.gavel(&["run", "write_file", args, "--approve", "--json"]),
        0,
    ));
    assert_eq!(value["approval"], "approved");
    assert_eq!(value["status"], "succeeded");
    assert_eq!(sandbox.read("deep/dir/out.txt"), "written");
}

#[test]
fn run_ask_without_a_flag_or_a_terminal_is_cancelled_and_blocked() {
    let sandbox = Sandbox::new();
    let output = run_expecting(
        sandbox
            .gavel(&["run", "bash", r#"{"command":"touch made.txt"}"#, "--json"])
            .write_stdin("y\n"),
        3,
    );
    let value = json(&output);
    assert_eq!(value["rule_id"], "bash.requires_approval");
    assert_eq!(value["approval"], "cancelled");
    assert_eq!(value["status"], "blocked");
    assert!(
        !sandbox.ws.join("made.txt").exists(),
        "piped `y` is not consent"
    );
}

#[test]
fn run_approve_and_reject_together_are_a_usage_error() {
    let sandbox = Sandbox::new();
    let output = run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "bash",
            r#"{"command":"ls"}"#,
            "--approve",
            "--reject",
        ]),
        2,
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn run_arguments_that_are_not_json_are_a_usage_error() {
    let sandbox = Sandbox::new();
    assert_one_line_error(&mut sandbox.gavel(&["run", "bash", "not json", "--approve"]));
}

#[test]
fn run_request_file_with_a_tool_use_block() {
    let sandbox = Sandbox::new();
    let request = fixture("requests/read-notes.tool_use.json");
    let value = json(&run_expecting(
        &mut sandbox.gavel(&["run", "--request", request.to_str().unwrap(), "--json"]),
        0,
    ));
    assert_eq!(value["tool"], "read_file");
    assert_eq!(value["status"], "succeeded");
    assert_eq!(value["call_id"], "toolu_fixture_read");
    assert_eq!(value["tool_result"]["tool_use_id"], "toolu_fixture_read");
}

#[test]
fn run_request_from_stdin() {
    let sandbox = Sandbox::new();
    let block = json!({
        "type": "tool_use",
        "id": "toolu_stdin",
        "name": "write_file",
        "input": {"path": "from-stdin.txt", "content": "piped"}
    });
    let value = json(&run_expecting(
        sandbox
            .gavel(&["run", "--request", "-", "--approve", "--json"])
            .write_stdin(block.to_string()),
        0,
    ));
    assert_eq!(value["tool_result"]["tool_use_id"], "toolu_stdin");
    assert_eq!(value["status"], "succeeded");
    assert_eq!(sandbox.read("from-stdin.txt"), "piped");
}

#[test]
fn run_request_that_is_not_a_block_is_a_usage_error() {
    let sandbox = Sandbox::new();
    for input in ["not json", "[1]", r#"{"type":"tool_use","name":"bash"}"#] {
        assert_one_line_error(sandbox.gavel(&["run", "--request", "-"]).write_stdin(input));
    }
}

#[test]
fn run_request_and_tool_together_are_a_usage_error() {
    let sandbox = Sandbox::new();
    let request = fixture("requests/read-notes.tool_use.json");
    run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "read_file",
            r#"{"path":"notes.txt"}"#,
            "--request",
            request.to_str().unwrap(),
        ]),
        2,
    );
}

#[test]
fn run_call_id_names_the_call() {
    let sandbox = Sandbox::new();
    let value = json(&run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "read_file",
            r#"{"path":"notes.txt"}"#,
            "--call-id",
            "my-call-7",
            "--json",
        ]),
        0,
    ));
    assert_eq!(value["call_id"], "my-call-7");
    assert_eq!(value["tool_result"]["tool_use_id"], "my-call-7");

    // With a block, the call id is ours and the tool_use_id stays the client's.
    let request = fixture("requests/read-notes.tool_use.json");
    let value = json(&run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "--request",
            request.to_str().unwrap(),
            "--call-id",
            "my-call-8",
            "--json",
        ]),
        0,
    ));
    assert_eq!(value["call_id"], "my-call-8");
    assert_eq!(value["tool_result"]["tool_use_id"], "toolu_fixture_read");
}

#[test]
fn run_generates_distinct_call_ids() {
    let sandbox = Sandbox::new();
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let value = json(&run_expecting(
                &mut sandbox.gavel(&["run", "read_file", r#"{"path":"notes.txt"}"#, "--json"]),
                0,
            ));
            value["call_id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert!(!ids[0].is_empty());
    assert_ne!(ids[0], ids[1]);
}

#[test]
fn run_table_output_shows_rule_status_and_content() {
    let sandbox = Sandbox::new();
    let output = run_expecting(
        &mut sandbox.gavel(&["run", "read_file", r#"{"path":"notes.txt"}"#]),
        0,
    );
    let text = stdout(&output);
    assert!(text.contains("path.read_allow"), "{text}");
    assert!(text.contains("succeeded"), "{text}");
    assert!(text.contains("hello from the workspace"), "{text}");
}

/// Runs `gavel run ... --json` on a pseudo-terminal made by `script(1)`,
/// typing `keys`; `None` when `script` is not installed.
fn run_on_a_terminal(sandbox: &Sandbox, keys: &str, path: &str) -> Option<serde_json::Value> {
    let gavel = env!("CARGO_BIN_EXE_gavel");
    let inner = format!(
        "{gavel} run write_file '{{\"path\":\"{path}\",\"content\":\"x\"}}' --workspace {} --db {} --json",
        sandbox.ws.display(),
        sandbox.db.display()
    );
    let output = match std::process::Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    {
        Ok(mut child) => {
            use std::io::Write as _;
            // Give the prompt a moment to appear, as a person would.
            std::thread::sleep(std::time::Duration::from_millis(300));
            child
                .stdin
                .take()
                .unwrap()
                .write_all(keys.as_bytes())
                .unwrap();
            child.wait_with_output().unwrap()
        }
        Err(_) => {
            eprintln!("note: script(1) is not installed; skipping the terminal prompt test");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Allow this call? [y/N]"), "no prompt: {text}");
    let line = text.lines().last().unwrap();
    let json = &line[line.find('{').expect("a JSON object after the prompt")..];
    Some(serde_json::from_str(json).unwrap())
}

#[test]
fn the_terminal_prompt_approves_on_y_rejects_on_n_and_cancels_on_eof() {
    let sandbox = Sandbox::new();
    let Some(yes) = run_on_a_terminal(&sandbox, "y\n", "yes.txt") else {
        return;
    };
    assert_eq!(
        (yes["approval"].as_str(), yes["status"].as_str()),
        (Some("approved"), Some("succeeded"))
    );
    assert!(sandbox.ws.join("yes.txt").exists());

    let no = run_on_a_terminal(&sandbox, "n\n", "no.txt").unwrap();
    assert_eq!(
        (no["approval"].as_str(), no["status"].as_str()),
        (Some("rejected"), Some("blocked"))
    );
    let eof = run_on_a_terminal(&sandbox, "\x04", "eof.txt").unwrap();
    assert_eq!(
        (eof["approval"].as_str(), eof["status"].as_str()),
        (Some("cancelled"), Some("blocked"))
    );
    let ctrl_c = run_on_a_terminal(&sandbox, "\x03", "int.txt").unwrap();
    assert_eq!(
        (ctrl_c["approval"].as_str(), ctrl_c["status"].as_str()),
        (Some("cancelled"), Some("blocked"))
    );
    assert!(!sandbox.ws.join("no.txt").exists() && !sandbox.ws.join("int.txt").exists());
}

/// Waits (without a deadline that could flake) until `path` exists, or the
/// child has exited.
fn wait_for(path: &std::path::Path, child: &mut std::process::Child) {
    while !path.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("gavel exited before the tool ran: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn run_whose_result_cannot_be_recorded_prints_it_and_exits_5() {
    let sandbox = Sandbox::new();
    // The database exists and knows the policy: the call's writes are its own.
    run_expecting(
        &mut sandbox.gavel(&["run", "read_file", r#"{"path":"notes.txt"}"#]),
        0,
    );
    let ran = sandbox.root.join("ran");
    let go = sandbox.root.join("go");
    let command = format!(
        "touch {}; while [ ! -e {} ]; do sleep 0.01; done; echo tool-output",
        ran.display(),
        go.display()
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gavel"))
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .current_dir(&sandbox.root)
        .args(["run", "bash", &json!({ "command": command }).to_string()])
        .args(["--approve", "--json", "--call-id", "c-unrecorded"])
        .arg("--workspace")
        .arg(&sandbox.ws)
        .arg("--db")
        .arg(&sandbox.db)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The request, decision and approval are written; the tool is running.
    wait_for(&ran, &mut child);
    // A real fault between the two commits: gavel may no longer grow any
    // file (a full disk looks the same to it: every write fails).
    let pid = child.id() as libc::pid_t;
    // SAFETY: plain prlimit(2) calls on a child we own, with valid pointers.
    unsafe {
        let mut old = std::mem::zeroed::<libc::rlimit>();
        assert_eq!(
            libc::prlimit(pid, libc::RLIMIT_FSIZE, std::ptr::null(), &mut old),
            0
        );
        let new = libc::rlimit {
            rlim_cur: 0,
            rlim_max: old.rlim_max,
        };
        assert_eq!(
            libc::prlimit(pid, libc::RLIMIT_FSIZE, &new, std::ptr::null_mut()),
            0
        );
    }
    std::fs::write(&go, "").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(5),
        "stdout: {}\nstderr: {}",
        stdout(&output),
        crate::support::stderr(&output)
    );
    let value = json(&output);
    assert_eq!(value["call_id"], "c-unrecorded");
    assert_eq!(value["status"], "succeeded");
    assert_eq!(value["content"], "tool-output\n");
    assert_eq!(value["recorded"], json!(false));
    assert!(value["record_error"].is_string(), "{value}");
    let err = crate::support::stderr(&output);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("gavel: the tool ran (succeeded) but its result could not be recorded"),
        "{err}"
    );
    assert!(err.contains("`c-unrecorded`"), "{err}");
    // What was written before the tool ran is intact: the call is on
    // record as approved, with no result.
    let log = crate::support::json_lines(&run_expecting(
        &mut sandbox.gavel(&["log", "--json", "--call", "c-unrecorded"]),
        0,
    ));
    assert_eq!(log[0]["approval"], "approved");
    assert_eq!(log[0]["status"], "incomplete");
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}

#[test]
fn run_over_large_arguments_are_denied_and_recorded_by_size_and_digest() {
    let sandbox = Sandbox::new();
    let request = sandbox.root.join("big.json");
    let content = "y".repeat(300_000);
    std::fs::write(
        &request,
        json!({"type":"tool_use","id":"big1","name":"write_file",
               "input":{"path":"big.txt","content":content}})
        .to_string(),
    )
    .unwrap();
    let value = json(&run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "--request",
            request.to_str().unwrap(),
            "--approve",
            "--json",
            "--max-argument-bytes",
            "100000",
        ]),
        3,
    ));
    assert_eq!(value["rule_id"], "request.invalid_arguments");
    assert_eq!(value["status"], "blocked");
    assert!(!sandbox.ws.join("big.txt").exists());
    let mut events = crate::support::json_lines(&run_expecting(&mut sandbox.gavel(&["export"]), 0));
    events.retain(|line| line["record"] == "event");
    let request = &events[0]["payload"];
    assert!(request["arguments_bytes"].as_u64().unwrap() > 300_000);
    assert!(request["arguments"].as_str().unwrap().len() <= 256);
    let decision = &events[1]["payload"];
    assert!(decision["facts"].get("shell").is_none());
    let total: usize = events.iter().map(|e| e.to_string().len()).sum();
    assert!(total < 20_000, "the export holds {total} bytes");
}
