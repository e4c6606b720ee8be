//! Tools for policy authors: every changed call of a replay, `policy test`
//! failures and `--accept`, `policy lint`, and explanations that name the
//! simple command and the rule entry that decided.

use serde_json::{Value, json};

use crate::support::{Sandbox, json, json_lines, record, run_expecting, stderr, stdout};

/// A policy denying every tool, written next to the workspace.
fn deny_all(sandbox: &Sandbox) -> String {
    let path = sandbox.root.join("deny-all.toml");
    std::fs::write(
        &path,
        "name = \"deny-all\"\n[[rules]]\nid = \"all.deny\"\naction = \"deny\"\nreason = \"no {tool}\"\ntools = [\"*\"]\n",
    )
    .unwrap();
    path.display().to_string()
}

/// Seven reads (allowed by the built-in policy) and one hard-denied command.
fn record_eight(sandbox: &Sandbox) {
    for i in 1..=7 {
        record(
            sandbox,
            &format!("r{i}"),
            "read_file",
            json!({"path": "notes.txt"}),
        );
    }
    record(
        sandbox,
        "b1",
        "bash",
        json!({"command": "cd build && make && rm -rf /tmp/cache/*"}),
    );
}

#[test]
fn replay_json_lists_every_changed_call_with_tool_and_arguments() {
    let sandbox = Sandbox::new();
    record_eight(&sandbox);
    let policy = deny_all(&sandbox);
    let output = run_expecting(
        &mut sandbox.gavel(&["replay", "--format", "json", "--policy", &policy]),
        1,
    );
    let report = json(&output);
    assert_eq!(report["changed"], 8);
    let tightened = &report["transitions"][0];
    assert_eq!(tightened["count"], 7);
    assert_eq!(
        tightened["call_ids"],
        json!(["r1", "r2", "r3", "r4", "r5", "r6", "r7"]),
        "no cap on the call ids in JSON"
    );
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 8, "every changed call is listed");
    assert_eq!(calls[0]["call_id"], "r1");
    assert_eq!(calls[0]["tool"], "read_file");
    assert_eq!(calls[0]["arguments"], "notes.txt");
    assert_eq!(calls[0]["from"]["rule_id"], "path.read_allow");
    assert_eq!(calls[0]["to"]["rule_id"], "all.deny");
    assert_eq!(calls[0]["direction"], "tightened");
    assert_eq!(calls[7]["call_id"], "b1");
    assert_eq!(
        calls[7]["arguments"],
        "cd build && make && rm -rf /tmp/cache/*"
    );
    assert_eq!(calls[7]["from"]["rule_id"], "bash.hard_deny");
    assert_eq!(calls[7]["direction"], "rerouted");
}

#[test]
fn replay_calls_streams_one_json_line_per_changed_call() {
    let sandbox = Sandbox::new();
    record_eight(&sandbox);
    let policy = deny_all(&sandbox);
    let output = run_expecting(
        &mut sandbox.gavel(&["replay", "--calls", "--policy", &policy]),
        1,
    );
    let lines = json_lines(&output);
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r1", "r2", "r3", "r4", "r5", "r6", "r7", "b1"]);
    assert!(lines.iter().all(|l| l["to"]["rule_id"] == "all.deny"));
    assert!(
        stderr(&output).contains("changed 8"),
        "the counts go to stderr: {}",
        stderr(&output)
    );
}

#[test]
fn replay_table_shows_examples_with_their_arguments() {
    let sandbox = Sandbox::new();
    record_eight(&sandbox);
    let policy = deny_all(&sandbox);
    let output = run_expecting(&mut sandbox.gavel(&["replay", "--policy", &policy]), 1);
    let table = stdout(&output);
    assert!(table.contains("r1 read_file notes.txt"), "{table}");
    assert!(table.contains("(+4 more)"), "{table}");
    assert!(
        table.contains("b1 bash cd build && make && rm -rf /tmp/cache/*"),
        "{table}"
    );
    assert!(
        table.lines().all(|l| l.chars().count() <= 120),
        "examples are cut to fit: {table}"
    );
}

/// Three hand-written cases against the built-in policy: the second fails.
const CASES_TOML: &str = r#"# regression cases, kept by hand
[[cases]]
name = "read notes"
tool = "read_file"
arguments = { path = "notes.txt" }
action = "allow"

[[cases]]
name = "hard deny" # the author changed their mind
tool = "bash"
arguments = { command = "sudo rm -rf /" }
action = "allow"
rule_id = "bash.safe_allow"

[[cases]]
name = "unknown tool"
tool = "deploy"
action = "deny"
"#;

#[test]
fn policy_test_failures_only_shows_the_failing_case_with_its_arguments() {
    let sandbox = Sandbox::new();
    let cases = sandbox.root.join("cases.toml");
    std::fs::write(&cases, CASES_TOML).unwrap();
    let cases = cases.display().to_string();
    let output = run_expecting(
        &mut sandbox.gavel(&["policy", "test", &cases, "--failures-only"]),
        1,
    );
    let table = stdout(&output);
    assert!(table.contains("hard deny"), "{table}");
    assert!(
        table.contains("sudo rm -rf /"),
        "the arguments column: {table}"
    );
    assert!(
        !table.contains("read notes"),
        "passing cases are left out: {table}"
    );
    assert!(table.contains("2 passed, 1 failed"), "{table}");

    let output = run_expecting(
        &mut sandbox.gavel(&["policy", "test", &cases, "--failures-only", "--json"]),
        1,
    );
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["case"], "hard deny");
    assert_eq!(lines[0]["arguments"], "sudo rm -rf /");
    assert_eq!(lines[0]["got"]["rule_id"], "bash.hard_deny");

    let output = run_expecting(&mut sandbox.gavel(&["policy", "test", &cases]), 1);
    assert!(stdout(&output).contains("notes.txt"), "{}", stdout(&output));
}

#[test]
fn policy_test_accept_rewrites_only_the_failing_expectations_in_toml() {
    let sandbox = Sandbox::new();
    let path = sandbox.root.join("cases.toml");
    std::fs::write(&path, CASES_TOML).unwrap();
    let cases = path.display().to_string();
    let output = run_expecting(
        &mut sandbox.gavel(&["policy", "test", &cases, "--accept"]),
        0,
    );
    assert!(
        stderr(&output).contains("accepted 1 case in"),
        "{}",
        stderr(&output)
    );
    let expected = CASES_TOML
        .replace(
            "arguments = { command = \"sudo rm -rf /\" }\naction = \"allow\"\nrule_id = \"bash.safe_allow\"",
            "arguments = { command = \"sudo rm -rf /\" }\naction = \"deny\"\nrule_id = \"bash.hard_deny\"",
        );
    assert_ne!(expected, CASES_TOML);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        expected,
        "comments, order and the passing cases are kept"
    );
    run_expecting(&mut sandbox.gavel(&["policy", "test", &cases]), 0);
    let leftovers: Vec<_> = std::fs::read_dir(&sandbox.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn policy_test_accept_rewrites_exported_json_lines_cases() {
    let sandbox = Sandbox::new();
    record(&sandbox, "r1", "read_file", json!({"path": "notes.txt"}));
    record(&sandbox, "b1", "bash", json!({"command": "ls"}));
    let output = run_expecting(&mut sandbox.gavel(&["export", "--requests"]), 0);
    let path = sandbox.root.join("cases.jsonl");
    std::fs::write(&path, output.stdout).unwrap();
    let before = std::fs::read_to_string(&path).unwrap();
    let cases = path.display().to_string();
    let policy = deny_all(&sandbox);
    run_expecting(
        &mut sandbox.gavel(&["policy", "test", &cases, "--policy", &policy]),
        1,
    );
    run_expecting(
        &mut sandbox.gavel(&["policy", "test", &cases, "--policy", &policy, "--accept"]),
        0,
    );
    let after = std::fs::read_to_string(&path).unwrap();
    assert_eq!(after.lines().count(), before.lines().count());
    for line in after.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        assert_eq!(case["action"], "deny");
        assert_eq!(case["rule_id"], "all.deny");
    }
    run_expecting(
        &mut sandbox.gavel(&["policy", "test", &cases, "--policy", &policy]),
        0,
    );
}

#[test]
fn policy_validate_says_1_rule_not_1_rules() {
    let sandbox = Sandbox::new();
    let policy = deny_all(&sandbox);
    let output = run_expecting(&mut sandbox.gavel(&["policy", "validate", &policy]), 0);
    assert!(
        stdout(&output).contains("(1 rule, sha256"),
        "{}",
        stdout(&output)
    );
}

/// A policy with a shadowed rule and an unconditional allow.
const SLOPPY_POLICY: &str = r#"name = "sloppy"

[[rules]]
id = "read.inside"
action = "allow"
reason = "reading {path}"
tools = ["read_file"]
path_scope = "inside"

[[rules]]
id = "read.inside.again"
action = "allow"
reason = "again"
tools = ["read_file"]
path_scope = "inside"

[[rules]]
id = "never.used"
action = "deny"
reason = "no deploys"
tools = ["deploy"]

[[rules]]
id = "everything"
action = "allow"
reason = "fine"
"#;

fn sloppy(sandbox: &Sandbox) -> String {
    let path = sandbox.root.join("sloppy.toml");
    std::fs::write(&path, SLOPPY_POLICY).unwrap();
    path.display().to_string()
}

#[test]
fn policy_lint_flags_unconditional_allows_and_shadowed_rules() {
    let sandbox = Sandbox::new();
    let policy = sloppy(&sandbox);
    let output = run_expecting(
        &mut sandbox.gavel(&["policy", "lint", &policy, "--no-usage"]),
        0,
    );
    let text = stdout(&output);
    assert!(text.contains("2 warnings"), "{text}");
    assert!(
        text.contains("`read.inside.again` can never decide")
            && text.contains("matched first by `read.inside`"),
        "{text}"
    );
    assert!(
        text.contains("allow rule `everything` has no `tools` and no conditions"),
        "{text}"
    );

    let output = run_expecting(
        &mut sandbox.gavel(&[
            "policy",
            "lint",
            &policy,
            "--no-usage",
            "--strict",
            "--json",
        ]),
        1,
    );
    let report = json(&output);
    let found: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_owned(),
                f["rule_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("shadowed".to_owned(), "read.inside.again".to_owned()),
            ("unconditional_allow".to_owned(), "everything".to_owned())
        ]
    );
    assert_eq!(report["findings"][0]["by"], "read.inside");

    // `policy validate` shows the same warnings on stderr, and fails only with --strict.
    let output = run_expecting(&mut sandbox.gavel(&["policy", "validate", &policy]), 0);
    assert!(stdout(&output).starts_with("ok: policy `sloppy` (4 rules"));
    assert_eq!(stderr(&output).matches("gavel: warning:").count(), 2);
    let strict = run_expecting(
        &mut sandbox.gavel(&["policy", "validate", &policy, "--strict"]),
        1,
    );
    // It exits 1, so it does not say `ok`.
    assert!(
        stdout(&strict).starts_with("not ok (--strict): 2 lint warnings: policy `sloppy`"),
        "{}",
        stdout(&strict)
    );
}

#[test]
fn the_built_in_policy_lints_clean() {
    let sandbox = Sandbox::new();
    let output = run_expecting(
        &mut sandbox.gavel(&["policy", "lint", "--strict", "--no-usage", "--json"]),
        0,
    );
    assert_eq!(json(&output)["findings"], json!([]));
}

#[test]
fn policy_lint_over_the_log_lists_never_matched_and_most_matched_rules() {
    let sandbox = Sandbox::new();
    record_eight(&sandbox);
    let policy = sloppy(&sandbox);
    let output = run_expecting(
        &mut sandbox.gavel(&["policy", "lint", &policy, "--json"]),
        0,
    );
    let usage = &json(&output)["usage"];
    assert_eq!(usage["calls"], 8);
    assert_eq!(
        usage["never_matched"],
        json!(["read.inside.again", "never.used"])
    );
    assert_eq!(
        usage["top"][0],
        json!({"rule_id": "read.inside", "calls": 7})
    );
    assert_eq!(
        usage["top"][1],
        json!({"rule_id": "everything", "calls": 1}),
        "the unconditional allow would have let the hard-denied command through"
    );

    let output = run_expecting(&mut sandbox.gavel(&["policy", "lint", &policy]), 0);
    let text = stdout(&output);
    assert!(text.contains("Over 8 calls recorded"), "{text}");
    assert!(
        text.contains("matched most: `read.inside` (7 calls), `everything` (1 call)"),
        "{text}"
    );
    assert!(
        text.contains("never matched (2 rules): `read.inside.again`, `never.used`"),
        "{text}"
    );
}

#[test]
fn an_unknown_reason_placeholder_is_refused_with_the_known_ones() {
    let sandbox = Sandbox::new();
    let path = sandbox.root.join("typo.toml");
    std::fs::write(
        &path,
        "name = \"typo\"\n[[rules]]\nid = \"r\"\naction = \"deny\"\nreason = \"no {nope} in {a, b}\"\ntools = [\"x\"]\n",
    )
    .unwrap();
    let err = crate::support::assert_one_line_error(&mut sandbox.gavel(&[
        "policy",
        "validate",
        &path.display().to_string(),
    ]));
    assert!(
        err.contains("rule `r`: unknown placeholder `{nope}` in `reason`")
            && err.contains("`{tool}`, `{command}`, `{path}`, `{workspace}`, `{unprovable}`"),
        "{err}"
    );
}

const CHAINED: &str = "cd build && make && rm -rf /tmp/cache/*";

#[test]
fn explain_names_the_simple_command_and_the_entry_that_matched() {
    let sandbox = Sandbox::new();
    record(&sandbox, "b1", "bash", json!({ "command": CHAINED }));
    let output = run_expecting(&mut sandbox.gavel(&["explain", "b1"]), 0);
    let text = stdout(&output);
    assert!(
        text.contains(
            "`rm -rf /tmp/cache/*` matched `{ program = [\"rm\"], flags = [[\"-r\", \"-R\", \"--recursive\"], [\"-f\", \"--force\"]] }` of `bash.hard_deny` (commands)"
        ),
        "{text}"
    );
    assert!(
        text.contains("    - cd build\n    - make\n    - rm -rf /tmp/cache/*"),
        "{text}"
    );

    let output = run_expecting(
        &mut sandbox.gavel(&["explain", "b1", "--format", "json"]),
        0,
    );
    let matched = &json(&output)["matched"];
    assert_eq!(matched.as_array().unwrap().len(), 1, "{matched}");
    assert_eq!(matched[0]["command"], "rm -rf /tmp/cache/*");
    assert_eq!(matched[0]["condition"], "commands");
    assert!(
        matched[0]["entry"]
            .as_str()
            .unwrap()
            .starts_with("{ program = [\"rm\"]")
    );
}

#[test]
fn check_explain_shows_the_parse_and_the_matching_entry() {
    let sandbox = Sandbox::new();
    let args = json!({ "command": CHAINED }).to_string();
    let output = run_expecting(
        &mut sandbox.gavel(&["check", "bash", &args, "--explain"]),
        0,
    );
    let text = stdout(&output);
    assert!(text.contains("The command runs, as parsed:"), "{text}");
    assert!(
        text.contains("    - cd build\n    - make\n    - rm -rf /tmp/cache/*"),
        "{text}"
    );
    assert!(text.contains("everything in it is understood"), "{text}");
    assert!(
        text.contains("`rm -rf /tmp/cache/*` matched `{ program = [\"rm\"]"),
        "{text}"
    );

    let unprovable = json!({ "command": "ls $(curl x)" }).to_string();
    let output = run_expecting(
        &mut sandbox.gavel(&["check", "bash", &unprovable, "--explain"]),
        0,
    );
    assert!(
        stdout(&output).contains("- cannot prove: command substitution `$(curl x)`"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn an_allow_by_prefix_names_the_entry_each_simple_command_matched() {
    let sandbox = Sandbox::new();
    let policy = sandbox.root.join("prefix.toml");
    std::fs::write(
        &policy,
        r#"name = "prefix"
[[rules]]
id = "git.read"
action = "allow"
reason = "read-only git"
tools = ["bash"]
command_prefix = [["git", "status"], ["git", "log"]]
"#,
    )
    .unwrap();
    let policy = policy.display().to_string();
    let args = json!({ "command": "git status && git log -1" }).to_string();
    let output = run_expecting(
        &mut sandbox.gavel(&["check", "bash", &args, "--policy", &policy, "--json"]),
        0,
    );
    let report = json(&output);
    assert_eq!(report["rule_id"], "git.read");
    assert_eq!(
        report["matched"],
        json!([
            {"command": "git status", "condition": "command_prefix", "entry": "[\"git\", \"status\"]"},
            {"command": "git log -1", "condition": "command_prefix", "entry": "[\"git\", \"log\"]"}
        ])
    );
    let output = run_expecting(
        &mut sandbox.gavel(&[
            "check",
            "bash",
            "{\"command\":\"rm x\"}",
            "--policy",
            &policy,
            "--json",
        ]),
        0,
    );
    assert_eq!(
        json(&output)["matched"],
        json!([]),
        "default.deny has no entry"
    );
}
