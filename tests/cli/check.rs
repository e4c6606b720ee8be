//! `gavel check`: decide only, through the real binary.

use serde_json::json;

use crate::support::{Sandbox, assert_one_line_error, fixture, json, run_expecting, stdout};

#[test]
fn check_json_reports_tool_action_rule_reason_policy_and_trace() {
    let sandbox = Sandbox::new();
    let output = run_expecting(
        &mut sandbox.gavel(&["check", "read_file", r#"{"path":"notes.txt"}"#, "--json"]),
        0,
    );
    let value = json(&output);
    assert_eq!(value["tool"], "read_file");
    assert_eq!(value["action"], "allow");
    assert_eq!(value["rule_id"], "path.read_allow");
    assert_eq!(value["reason"], "read_file only reads inside the workspace");
    assert_eq!(value["policy"]["name"], "gavel-default");
    let digest = value["policy"]["digest"].as_str().unwrap();
    assert_eq!(digest.len(), 64);
    assert!(digest.chars().all(|c| c.is_ascii_hexdigit()));
    let trace = value["trace"].as_array().unwrap();
    let ids: Vec<&str> = trace
        .iter()
        .map(|t| t["rule_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "bash.hard_deny",
            "bash.self_approval",
            "path.protected",
            "path.outside_workspace",
            "mcp.definition_changed",
            "path.read_allow"
        ]
    );
    assert_eq!(trace.last().unwrap()["matched"], json!(true));
    assert!(trace[..3].iter().all(|t| t["matched"] == json!(false)));
}

#[test]
fn check_hard_deny_names_the_rule_and_the_command() {
    let sandbox = Sandbox::new();
    let output = run_expecting(
        &mut sandbox.gavel(&["check", "bash", r#"{"command":"sudo rm -rf /"}"#, "--json"]),
        0,
    );
    let value = json(&output);
    assert_eq!(value["action"], "deny");
    assert_eq!(value["rule_id"], "bash.hard_deny");
    assert!(value["reason"].as_str().unwrap().contains("sudo rm -rf /"));
}

#[test]
fn check_unmatched_tool_is_default_deny() {
    let sandbox = Sandbox::new();
    let value = json(&run_expecting(
        &mut sandbox.gavel(&["check", "deploy", r#"{"env":"prod"}"#, "--json"]),
        0,
    ));
    assert_eq!(value["action"], "deny");
    assert_eq!(value["rule_id"], "default.deny");
    assert_eq!(value["reason"], "no permission rule matched tool `deploy`");
}

#[test]
fn check_shell_commands_are_asked_whatever_their_first_token() {
    let sandbox = Sandbox::new();
    for command in ["ls", "cat x", "git status"] {
        let args = json!({ "command": command }).to_string();
        let value = json(&run_expecting(
            &mut sandbox.gavel(&["check", "bash", &args, "--json"]),
            0,
        ));
        assert_eq!(value["action"], "ask", "{command}");
        assert_eq!(value["rule_id"], "bash.requires_approval", "{command}");
    }
}

#[test]
fn check_path_escapes_name_the_canonical_workspace() {
    let sandbox = Sandbox::new();
    std::os::unix::fs::symlink(&sandbox.outside, sandbox.ws.join("link")).unwrap();
    for (tool, args) in [
        ("read_file", r#"{"path":"../outside/secret.txt"}"#),
        ("read_file", r#"{"path":"/etc/hosts"}"#),
        ("write_file", r#"{"path":"link/new.txt","content":"x"}"#),
        ("glob", r#"{"pattern":"../outside/*.txt"}"#),
    ] {
        let value = json(&run_expecting(
            &mut sandbox.gavel(&["check", tool, args, "--json"]),
            0,
        ));
        assert_eq!(value["action"], "deny", "{tool} {args}");
        assert_eq!(value["rule_id"], "path.outside_workspace", "{tool} {args}");
        let reason = value["reason"].as_str().unwrap();
        assert!(
            reason.contains(&format!("`{}`", sandbox.ws.display())),
            "{reason}"
        );
    }
}

#[test]
fn check_arguments_that_are_not_json_are_a_usage_error() {
    let sandbox = Sandbox::new();
    let line = assert_one_line_error(&mut sandbox.gavel(&["check", "bash", "not json"]));
    assert!(line.contains("ARGS_JSON"), "{line}");
}

#[test]
fn check_json_that_is_not_an_object_is_denied_as_invalid_arguments() {
    let sandbox = Sandbox::new();
    let value = json(&run_expecting(
        &mut sandbox.gavel(&["check", "bash", "[1]", "--json"]),
        0,
    ));
    assert_eq!(value["action"], "deny");
    assert_eq!(value["rule_id"], "request.invalid_arguments");
    assert!(value["reason"].as_str().unwrap().contains("an array"));
}

#[test]
fn check_accepts_global_options_before_or_after_the_subcommand() {
    let sandbox = Sandbox::new();
    let args = r#"{"path":"notes.txt"}"#;
    let ws = sandbox.ws.to_str().unwrap();
    let db = sandbox.db.to_str().unwrap();
    let before = run_expecting(
        sandbox.bare().args([
            "--workspace",
            ws,
            "--db",
            db,
            "check",
            "read_file",
            args,
            "--json",
        ]),
        0,
    );
    let after = run_expecting(
        sandbox.bare().args([
            "check",
            "read_file",
            args,
            "--json",
            "--workspace",
            ws,
            "--db",
            db,
        ]),
        0,
    );
    let (before, after) = (json(&before), json(&after));
    assert_eq!(before, after);
    assert_eq!(before["facts"]["workspace"], ws);
}

#[test]
fn check_uses_the_workspace_given_not_the_current_directory() {
    let sandbox = Sandbox::new();
    // gavel runs from the sandbox root: resolved from there, `../ws/notes.txt`
    // would leave the workspace; resolved from the workspace, it names notes.txt.
    let value = json(&run_expecting(
        &mut sandbox.gavel(&[
            "check",
            "read_file",
            r#"{"path":"../ws/notes.txt"}"#,
            "--json",
        ]),
        0,
    ));
    assert_eq!(value["rule_id"], "path.read_allow");
    assert_eq!(
        value["facts"]["paths"][0]["resolved"],
        sandbox.ws.join("notes.txt").to_str().unwrap()
    );
}

#[test]
fn check_table_output_names_the_rule() {
    let sandbox = Sandbox::new();
    let output = run_expecting(
        &mut sandbox.gavel(&[
            "check",
            "write_file",
            r#"{"path":"a.txt","content":""}"#,
            "--explain",
        ]),
        0,
    );
    let text = stdout(&output);
    assert!(text.contains("path.write_requires_approval"), "{text}");
    assert!(text.contains("ask"), "{text}");
    assert!(
        text.contains("path.read_allow"),
        "the explain table lists misses: {text}"
    );
}

#[test]
fn check_with_a_missing_workspace_is_a_one_line_error() {
    let sandbox = Sandbox::new();
    let missing = sandbox.root.join("no-such-dir");
    let line = assert_one_line_error(sandbox.bare().args([
        "check",
        "read_file",
        r#"{"path":"x"}"#,
        "--workspace",
        missing.to_str().unwrap(),
    ]));
    assert!(line.contains("no-such-dir"), "{line}");
}

#[test]
fn check_decides_without_running_or_writing_anything() {
    let sandbox = Sandbox::new();
    run_expecting(
        &mut sandbox.gavel(&[
            "check",
            "write_file",
            r#"{"path":"made.txt","content":"x"}"#,
            "--policy",
            fixture("policies/deploy-allow.toml").to_str().unwrap(),
        ]),
        0,
    );
    run_expecting(
        &mut sandbox.gavel(&["check", "bash", r#"{"command":"touch made.txt"}"#]),
        0,
    );
    assert!(!sandbox.ws.join("made.txt").exists());
    assert!(!sandbox.db.exists(), "check records nothing");
}
