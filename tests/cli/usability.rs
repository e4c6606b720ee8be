//! Issue 14, items 8 to 10: built-in tools' argument schemas, tool-name
//! typos, the duplicate call id message, `demo --dir` on a used folder,
//! configurable tool limits and where `--help` shows the global options.

use serde_json::Value;

use crate::support::{
    Sandbox, assert_one_line_error, json, json_lines, run_expecting, stderr, stdout,
};

/// The calls `gavel log --json` lists.
fn logged(sandbox: &Sandbox) -> Vec<Value> {
    json_lines(&run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0))
}

// ------------------------------------------------------------ schemas

#[test]
fn edit_file_with_new_string_is_refused_naming_the_key_and_the_text_survives() {
    let sandbox = Sandbox::new();
    sandbox.write("e.txt", "hello world\n");
    let output = run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "edit_file",
            r#"{"path":"e.txt","old_text":"world","new_string":"there"}"#,
            "--approve",
            "--json",
        ]),
        3,
    );
    let result = json(&output);
    assert_eq!(result["rule_id"], "request.invalid_arguments");
    assert_eq!(result["status"], "blocked");
    let reason = result["reason"].as_str().unwrap();
    assert!(reason.contains("`new_string`"), "{reason}");
    assert!(reason.contains("did you mean `new_text`?"), "{reason}");
    assert_eq!(
        sandbox.read("e.txt"),
        "hello world\n",
        "the text was deleted"
    );
    // Recorded like any decision.
    let calls = logged(&sandbox);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["rule_id"], "request.invalid_arguments");
}

#[test]
fn a_missing_required_argument_is_refused_not_taken_as_empty() {
    let sandbox = Sandbox::new();
    sandbox.write("e.txt", "hello world\n");
    for (tool, arguments, missing) in [
        (
            "edit_file",
            r#"{"path":"e.txt","old_text":"world"}"#,
            "new_text",
        ),
        ("write_file", r#"{"path":"e.txt"}"#, "content"),
    ] {
        let output = run_expecting(
            &mut sandbox.gavel(&["run", tool, arguments, "--approve", "--json"]),
            3,
        );
        let result = json(&output);
        assert_eq!(result["rule_id"], "request.invalid_arguments", "{tool}");
        let reason = result["reason"].as_str().unwrap();
        assert!(
            reason.contains(&format!("requires the argument `{missing}`")),
            "{reason}"
        );
    }
    assert_eq!(sandbox.read("e.txt"), "hello world\n");
    // An empty replacement given on purpose still deletes.
    let output = run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "edit_file",
            r#"{"path":"e.txt","old_text":" world","new_text":""}"#,
            "--approve",
            "--json",
        ]),
        0,
    );
    assert_eq!(json(&output)["status"], "succeeded");
    assert_eq!(sandbox.read("e.txt"), "hello\n");
}

#[test]
fn check_refuses_unknown_keys_and_wrong_kinds_for_every_builtin_tool() {
    let sandbox = Sandbox::new();
    for (tool, arguments, named) in [
        ("bash", r#"{"command":"ls","timeout":5}"#, "`timeout`"),
        (
            "read_file",
            r#"{"file_path":"notes.txt"}"#,
            "did you mean `path`?",
        ),
        (
            "read_file",
            r#"{"path":"notes.txt","limit":"3"}"#,
            "`limit`",
        ),
        ("write_file", r#"{"path":"a.txt","content":1}"#, "`content`"),
        ("glob", r#"{"pattern":"*.rs","path":"src"}"#, "`path`"),
    ] {
        let output = run_expecting(&mut sandbox.gavel(&["check", tool, arguments, "--json"]), 0);
        let result = json(&output);
        assert_eq!(
            result["rule_id"], "request.invalid_arguments",
            "{tool} {arguments}"
        );
        assert_eq!(result["action"], "deny");
        let reason = result["reason"].as_str().unwrap();
        assert!(reason.contains(named), "{reason}");
    }
    // What fits the schema still reaches the rules.
    let output = run_expecting(
        &mut sandbox.gavel(&[
            "check",
            "read_file",
            r#"{"path":"notes.txt","limit":2}"#,
            "--json",
        ]),
        0,
    );
    assert_eq!(json(&output)["rule_id"], "path.read_allow");
}

#[test]
fn check_help_lists_each_builtin_tools_arguments() {
    let sandbox = Sandbox::new();
    let text = stdout(&run_expecting(sandbox.bare().args(["check", "--help"]), 0));
    for needle in [
        "edit_file",
        "old_text",
        "new_text",
        "write_file",
        "content",
        "read_file",
        "limit",
        "glob",
        "pattern",
        "command",
        "request.invalid_arguments",
    ] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
}

// ------------------------------------------------------------ typos

#[test]
fn a_mistyped_tool_name_gets_a_suggestion_and_stays_default_deny() {
    let sandbox = Sandbox::new();
    for (typed, meant, arguments) in [
        ("Bash", "bash", r#"{"command":"ls"}"#),
        ("read", "read_file", r#"{"path":"notes.txt"}"#),
        ("Read_File", "read_file", r#"{"path":"notes.txt"}"#),
    ] {
        let output = run_expecting(&mut sandbox.gavel(&["check", typed, arguments]), 0);
        assert!(
            stdout(&output).contains("default.deny"),
            "{}",
            stdout(&output)
        );
        let err = stderr(&output);
        assert!(err.contains(&format!("did you mean `{meant}`?")), "{err}");

        let output = run_expecting(
            &mut sandbox.gavel(&["check", typed, arguments, "--json"]),
            0,
        );
        let result = json(&output);
        assert_eq!(result["rule_id"], "default.deny");
        assert_eq!(result["did_you_mean"], meant);
    }
    let output = run_expecting(
        &mut sandbox.gavel(&["run", "Bash", r#"{"command":"ls"}"#, "--approve"]),
        3,
    );
    assert!(stderr(&output).contains("did you mean `bash`?"));
}

#[test]
fn unrelated_tool_names_get_no_suggestion() {
    let sandbox = Sandbox::new();
    for tool in ["deploy", "Task", "mcp__github__create_issue"] {
        let output = run_expecting(&mut sandbox.gavel(&["check", tool, "{}", "--json"]), 0);
        assert!(!stderr(&output).contains("did you mean"), "{tool}");
        assert_eq!(json(&output)["did_you_mean"], Value::Null);
    }
}

// ------------------------------------------------------------ duplicate id

#[test]
fn reusing_a_call_id_says_it_was_already_used() {
    let sandbox = Sandbox::new();
    let args = [
        "run",
        "read_file",
        r#"{"path":"notes.txt"}"#,
        "--call-id",
        "t1",
    ];
    run_expecting(&mut sandbox.gavel(&args), 0);
    let err = assert_one_line_error(&mut sandbox.gavel(&args));
    assert!(err.contains("call id `t1` was already used"), "{err}");
    assert!(!err.contains("audit record unavailable"), "{err}");
}

#[test]
fn running_the_readme_serve_example_twice_names_the_reused_id() {
    let sandbox = Sandbox::new();
    let line = r#"{"type":"tool_use","id":"t1","name":"read_file","input":{"path":"notes.txt"}}"#;
    let serve = || {
        let output = run_expecting(
            sandbox
                .gavel(&["serve", "--stdio", "--durability", "normal"])
                .write_stdin(format!("{line}\n")),
            0,
        );
        json_lines(&output)
    };
    assert_eq!(serve()[0]["status"], "succeeded");
    let second = serve();
    let error = second[0]["error"].as_str().unwrap();
    assert!(error.contains("call id `t1` was already used"), "{error}");
}

// ------------------------------------------------------------ demo --dir

#[test]
fn demo_refuses_a_folder_that_is_not_empty_and_touches_nothing() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root.join("mine");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "my own notes\n").unwrap();
    let err = assert_one_line_error(
        sandbox
            .bare()
            .args(["demo", "--dir", dir.to_str().unwrap()]),
    );
    assert!(err.contains("is not empty"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "my own notes\n"
    );
    assert!(!dir.join(".gavel").exists());
    assert!(!dir.join("report.md").exists());
}

#[test]
fn demo_refuses_a_folder_holding_a_gavel_log() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root.join("project");
    std::fs::create_dir_all(dir.join(".gavel")).unwrap();
    let err = assert_one_line_error(
        sandbox
            .bare()
            .args(["demo", "--dir", dir.to_str().unwrap()]),
    );
    assert!(err.contains(".gavel"), "{err}");
    assert!(!dir.join("notes.txt").exists());
}

#[test]
fn demo_runs_in_a_new_or_empty_folder_and_with_force() {
    let sandbox = Sandbox::new();
    let fresh = sandbox.root.join("fresh");
    run_expecting(
        sandbox
            .bare()
            .args(["demo", "--dir", fresh.to_str().unwrap()]),
        0,
    );
    let empty = sandbox.root.join("empty");
    std::fs::create_dir(&empty).unwrap();
    run_expecting(
        sandbox
            .bare()
            .args(["demo", "--dir", empty.to_str().unwrap()]),
        0,
    );
    // Again into the same folder: only with --force, and then both runs are logged.
    assert_one_line_error(
        sandbox
            .bare()
            .args(["demo", "--dir", fresh.to_str().unwrap()]),
    );
    run_expecting(
        sandbox
            .bare()
            .args(["demo", "--dir", fresh.to_str().unwrap(), "--force"]),
        0,
    );
    let db = fresh.join(".gavel").join("audit.db");
    let calls = json_lines(&run_expecting(
        sandbox
            .bare()
            .args(["log", "--json", "--db", db.to_str().unwrap()]),
        0,
    ));
    assert_eq!(calls.len(), 12);
}

// ------------------------------------------------------------ limits

#[test]
fn bash_timeout_is_configurable_by_flag() {
    let sandbox = Sandbox::new();
    let output = run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "bash",
            r#"{"command":"sleep 30"}"#,
            "--approve",
            "--bash-timeout",
            "1",
            "--json",
        ]),
        1,
    );
    let result = json(&output);
    assert_eq!(result["status"], "failed");
    let content = result["content"].as_str().unwrap();
    assert!(content.contains("timed out after 1 s"), "{content}");
}

#[test]
fn output_cap_is_configurable_by_flag_and_env_and_counts_what_it_cut() {
    let sandbox = Sandbox::new();
    let command = r#"{"command":"printf %0200d 0"}"#;
    let by_flag = json(&run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "bash",
            command,
            "--approve",
            "--max-output-bytes",
            "50",
            "--json",
        ]),
        0,
    ));
    let by_env = json(&run_expecting(
        sandbox
            .gavel(&["run", "bash", command, "--approve", "--json"])
            .env("GAVEL_MAX_OUTPUT_BYTES", "50"),
        0,
    ));
    for result in [by_flag, by_env] {
        assert_eq!(
            result["content"],
            format!("{}\n[output truncated: 150 more bytes]", "0".repeat(50))
        );
    }
    // The default keeps 64 KiB: 200 bytes come back whole.
    let whole = json(&run_expecting(
        &mut sandbox.gavel(&["run", "bash", command, "--approve", "--json"]),
        0,
    ));
    assert_eq!(whole["content"], "0".repeat(200));
}

#[test]
fn limits_are_documented_in_run_and_serve_help_and_zero_is_refused() {
    let sandbox = Sandbox::new();
    for command in ["run", "serve"] {
        let text = stdout(&run_expecting(sandbox.bare().args([command, "--help"]), 0));
        for needle in [
            "--bash-timeout",
            "GAVEL_BASH_TIMEOUT",
            "[default: 120]",
            "--max-output-bytes",
            "GAVEL_MAX_OUTPUT_BYTES",
            "[default: 65536]",
        ] {
            assert!(
                text.contains(needle),
                "{command} --help lacks {needle}:\n{text}"
            );
        }
    }
    let output = run_expecting(
        &mut sandbox.gavel(&["run", "bash", r#"{"command":"ls"}"#, "--bash-timeout", "0"]),
        2,
    );
    assert!(stderr(&output).contains("--bash-timeout"));
}

// ------------------------------------------------------------ --help

/// The "Global options:" section of a command's `--help`.
fn global_section(help: &str) -> &str {
    let start = help
        .find("Global options:")
        .unwrap_or_else(|| panic!("no Global options heading:\n{help}"));
    let rest = &help[start..];
    // The section ends at the next line that is neither blank nor indented.
    let mut end = rest.len();
    let mut offset = 0;
    for line in rest.split_inclusive('\n').skip(1) {
        offset += line.len();
        if !line.trim().is_empty() && !line.starts_with(' ') {
            end = rest.find('\n').unwrap_or(0) + 1 + offset - line.len();
            break;
        }
    }
    &rest[..end]
}

fn help(sandbox: &Sandbox, command: &[&str]) -> String {
    let mut args = command.to_vec();
    args.push("--help");
    stdout(&run_expecting(sandbox.bare().args(&args), 0))
}

#[test]
fn help_shows_global_options_under_their_own_heading_only_where_they_apply() {
    let sandbox = Sandbox::new();
    for command in [&["check"][..], &["policy", "test"], &["policy", "validate"]] {
        let text = help(&sandbox, command);
        let globals = global_section(&text);
        assert!(globals.contains("--workspace"), "{command:?}:\n{text}");
        assert!(globals.contains("--policy"), "{command:?}:\n{text}");
        for absent in ["--db", "--durability", "--max-argument-bytes"] {
            assert!(
                !text.contains(absent),
                "{command:?} shows {absent}:\n{text}"
            );
        }
        // The command's own options stay under "Options:", before the globals.
        let own = &text[..text.find("Global options:").unwrap()];
        assert!(!own.contains("--workspace"), "{command:?}:\n{text}");
    }
    for command in [&["run"][..], &["serve"], &["hook", "claude-code"]] {
        let text = help(&sandbox, command);
        let globals = global_section(&text);
        for present in [
            "--workspace",
            "--policy",
            "--db",
            "--durability",
            "--max-argument-bytes",
        ] {
            assert!(
                globals.contains(present),
                "{command:?} lacks {present}:\n{text}"
            );
        }
    }
    let text = help(&sandbox, &["log"]);
    let globals = global_section(&text);
    assert!(globals.contains("--db"), "{text}");
    assert!(!text.contains("--durability"), "{text}");
}

#[test]
fn hidden_global_options_are_still_accepted_before_or_after_the_command() {
    let sandbox = Sandbox::new();
    // `--db` on `check` is ignored, not an error: scripts that pass it everywhere keep working.
    let output = run_expecting(
        &mut sandbox.gavel(&["check", "read_file", r#"{"path":"notes.txt"}"#, "--json"]),
        0,
    );
    assert_eq!(json(&output)["rule_id"], "path.read_allow");
    assert!(!sandbox.db.exists(), "check created the database");
    run_expecting(
        sandbox.bare().args([
            "--workspace",
            sandbox.ws.to_str().unwrap(),
            "--db",
            sandbox.db.to_str().unwrap(),
            "run",
            "read_file",
            r#"{"path":"notes.txt"}"#,
        ]),
        0,
    );
    assert_eq!(logged(&sandbox).len(), 1);
}

#[test]
fn policy_validate_without_a_file_checks_the_policy_in_force_and_says_which() {
    let sandbox = Sandbox::new();
    let text = stdout(&run_expecting(
        &mut sandbox.gavel(&["policy", "validate"]),
        0,
    ));
    assert!(
        text.contains("policy in force: the built-in default"),
        "{text}"
    );
    assert!(text.contains("ok: policy `gavel-default`"), "{text}");

    let changed = crate::support::fixture("replay/changed.toml");
    std::fs::copy(&changed, sandbox.ws.join("gavel.toml")).unwrap();
    let text = stdout(&run_expecting(
        &mut sandbox.gavel(&["policy", "validate"]),
        0,
    ));
    assert!(text.contains("(gavel.toml in the workspace)"), "{text}");
    assert!(text.contains("ok: policy `replay-changed`"), "{text}");

    let text = stdout(&run_expecting(
        sandbox
            .gavel(&["policy", "validate"])
            .env("GAVEL_POLICY", &changed),
        0,
    ));
    assert!(text.contains("($GAVEL_POLICY)"), "{text}");

    // A broken policy in force fails validation.
    std::fs::write(
        sandbox.ws.join("gavel.toml"),
        "name = \"x\"\n[[rules]]\nid = \"a\"\naction = \"alow\"\nreason = \"r\"\n",
    )
    .unwrap();
    let err = assert_one_line_error(&mut sandbox.gavel(&["policy", "validate"]));
    assert!(err.contains("alow"), "{err}");
}

// ------------------------------------------------------------ snapshots

fn snapshot_settings(sandbox: &Sandbox) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.add_filter(&regex::escape(&sandbox.root.display().to_string()), "[TMP]");
    // The built-in policy's digest changes with every edit of it.
    settings.add_filter(r"\(([0-9a-f]{12})…\)", "([DIGEST]…)");
    settings
}

#[test]
fn check_help_and_an_invalid_arguments_error_at_80_and_200_columns() {
    let sandbox = Sandbox::new();
    for columns in ["80", "200"] {
        let text = stdout(&run_expecting(
            sandbox
                .bare()
                .args(["check", "--help"])
                .env("COLUMNS", columns),
            0,
        ));
        snapshot_settings(&sandbox)
            .bind(|| insta::assert_snapshot!(format!("usability_check_help_{columns}"), text));
        let output = run_expecting(
            sandbox
                .gavel(&[
                    "check",
                    "edit_file",
                    r#"{"path":"e.txt","old_text":"world","new_string":"there"}"#,
                ])
                .env("COLUMNS", columns),
            0,
        );
        let text = stdout(&output);
        snapshot_settings(&sandbox).bind(|| {
            insta::assert_snapshot!(format!("usability_check_invalid_arguments_{columns}"), text)
        });
        let err = assert_one_line_error(
            sandbox
                .bare()
                .args(["demo", "--dir", sandbox.ws.to_str().unwrap()])
                .env("COLUMNS", columns),
        );
        snapshot_settings(&sandbox)
            .bind(|| insta::assert_snapshot!(format!("usability_demo_refused_{columns}"), err));
    }
}

/// Help fits the terminal: no line of any command's `--help` is wider
/// than an 80-column terminal (clap wraps to `COLUMNS`).
#[test]
fn help_fits_an_80_column_terminal() {
    let sandbox = Sandbox::new();
    let commands: &[&[&str]] = &[
        &[],
        &["check"],
        &["run"],
        &["policy", "lint"],
        &["log"],
        &["explain"],
        &["replay"],
        &["report"],
        &["verify"],
        &["audit"],
        &["hook"],
        &["init"],
        &["serve"],
        &["push"],
        &["central", "init"],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.push("--help");
        let out = sandbox
            .bare()
            .args(&args)
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(text.lines().count() > 3, "{command:?}: {text}");
        for line in text.lines() {
            assert!(
                line.chars().count() <= 80,
                "{command:?}: {} columns: {line}",
                line.chars().count()
            );
        }
    }
}
