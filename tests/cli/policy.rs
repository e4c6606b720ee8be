//! Policy selection (`--policy`, `$GAVEL_POLICY`, `gavel.toml`, built-in),
//! `gavel policy show|validate`, and bad policy files, through the real binary.

use std::path::Path;

use gavel::policy::DEFAULT_POLICY_TOML;

use crate::support::{
    Sandbox, assert_one_line_error, code, fixture, fixtures_in, json, run_expecting, stderr, stdout,
};

/// The rule that decided `deploy {}` under the given command.
fn deploy_rule(cmd: &mut assert_cmd::Command) -> String {
    let value = json(&run_expecting(cmd, 0));
    value["rule_id"].as_str().unwrap().to_owned()
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

const DEPLOY: [&str; 4] = ["check", "deploy", "{}", "--json"];

#[test]
fn policy_flag_selects_the_policy() {
    let sandbox = Sandbox::new();
    let allow = fixture("policies/deploy-allow.toml");
    let mut cmd = sandbox.gavel(&DEPLOY);
    cmd.arg("--policy").arg(&allow);
    let value = json(&run_expecting(&mut cmd, 0));
    assert_eq!(value["action"], "allow");
    assert_eq!(value["rule_id"], "fixture.deploy_allow");
    assert_eq!(value["reason"], "the fixture policy allows deploy");
    assert_eq!(value["policy"]["name"], "fixture-deploy-allow");
}

#[test]
fn gavel_policy_env_selects_the_policy() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.gavel(&DEPLOY);
    cmd.env("GAVEL_POLICY", fixture("policies/deploy-ask.toml"));
    assert_eq!(deploy_rule(&mut cmd), "fixture.deploy_ask");
}

#[test]
fn gavel_toml_in_the_workspace_selects_the_policy() {
    let sandbox = Sandbox::new();
    std::fs::copy(
        fixture("policies/deploy-deny.toml"),
        sandbox.ws.join("gavel.toml"),
    )
    .unwrap();
    assert_eq!(
        deploy_rule(&mut sandbox.gavel(&DEPLOY)),
        "fixture.deploy_deny"
    );
}

#[test]
fn without_any_policy_the_built_in_one_decides() {
    let sandbox = Sandbox::new();
    let value = json(&run_expecting(&mut sandbox.gavel(&DEPLOY), 0));
    assert_eq!(value["rule_id"], "default.deny");
    assert_eq!(value["policy"]["name"], "gavel-default");
}

#[test]
fn policy_flag_beats_env_which_beats_gavel_toml() {
    let sandbox = Sandbox::new();
    std::fs::copy(
        fixture("policies/deploy-deny.toml"),
        sandbox.ws.join("gavel.toml"),
    )
    .unwrap();
    let mut env_only = sandbox.gavel(&DEPLOY);
    env_only.env("GAVEL_POLICY", fixture("policies/deploy-ask.toml"));
    assert_eq!(deploy_rule(&mut env_only), "fixture.deploy_ask");

    let mut both = sandbox.gavel(&DEPLOY);
    both.env("GAVEL_POLICY", fixture("policies/deploy-ask.toml"))
        .arg("--policy")
        .arg(fixture("policies/deploy-allow.toml"));
    assert_eq!(deploy_rule(&mut both), "fixture.deploy_allow");
}

#[test]
fn policy_selection_applies_to_run_too() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.gavel(&["run", "read_file", r#"{"path":"notes.txt"}"#, "--json"]);
    cmd.arg("--policy")
        .arg(fixture("policies/deploy-allow.toml"));
    let value = json(&run_expecting(&mut cmd, 3));
    assert_eq!(value["rule_id"], "default.deny");
    assert_eq!(value["status"], "blocked");
}

#[test]
fn bad_policy_files_exit_2_with_one_line_naming_the_file_and_the_rule() {
    let sandbox = Sandbox::new();
    for file in fixtures_in("policies/invalid", "toml") {
        let text = std::fs::read_to_string(&file).unwrap();
        let expect = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{} lacks a `# expect: ` first line", file.display()));

        for mut cmd in [
            {
                let mut cmd = sandbox.gavel(&DEPLOY);
                cmd.arg("--policy").arg(&file);
                cmd
            },
            {
                let mut cmd = sandbox.gavel(&DEPLOY);
                cmd.env("GAVEL_POLICY", &file);
                cmd
            },
            sandbox.gavel(&["policy", "validate", path_str(&file)]),
        ] {
            let line = assert_one_line_error(&mut cmd);
            assert!(
                line.contains(&format!("policy `{}`", file.display())),
                "{line}"
            );
            assert!(line.contains(expect), "expected `{expect}` in: {line}");
        }
    }
}

#[test]
fn a_bad_gavel_toml_in_the_workspace_is_an_error_not_a_fallback() {
    let sandbox = Sandbox::new();
    let bad = sandbox.write(
        "gavel.toml",
        &std::fs::read_to_string(fixture("policies/invalid/unknown-action.toml")).unwrap(),
    );
    let line = assert_one_line_error(&mut sandbox.gavel(&DEPLOY));
    assert!(line.contains(path_str(&bad)), "{line}");
    assert!(line.contains("fixture.typo"), "{line}");
}

#[test]
fn a_missing_policy_file_is_a_one_line_error() {
    let sandbox = Sandbox::new();
    let missing = sandbox.root.join("absent.toml");
    let mut cmd = sandbox.gavel(&DEPLOY);
    cmd.arg("--policy").arg(&missing);
    let line = assert_one_line_error(&mut cmd);
    assert!(line.contains(path_str(&missing)), "{line}");
}

#[test]
fn policy_show_prints_the_built_in_toml() {
    let sandbox = Sandbox::new();
    let output = run_expecting(&mut sandbox.gavel(&["policy", "show"]), 0);
    assert_eq!(stdout(&output), DEFAULT_POLICY_TOML);
}

#[test]
fn policy_show_round_trips_through_validate_with_the_same_digest() {
    let sandbox = Sandbox::new();
    let shown = stdout(&run_expecting(&mut sandbox.gavel(&["policy", "show"]), 0));
    let file = sandbox.root.join("shown.toml");
    std::fs::write(&file, &shown).unwrap();

    let builtin = json(&run_expecting(&mut sandbox.gavel(&DEPLOY), 0));
    let digest = builtin["policy"]["digest"].as_str().unwrap();

    let validated = stdout(&run_expecting(
        &mut sandbox.gavel(&["policy", "validate", path_str(&file)]),
        0,
    ));
    assert!(
        validated.starts_with("ok: policy `gavel-default`"),
        "{validated}"
    );
    assert!(validated.contains("11 rules"), "{validated}");
    assert!(validated.contains(digest), "{validated}");

    // Used as the workspace's policy, it decides exactly as the built-in one.
    std::fs::copy(&file, sandbox.ws.join("gavel.toml")).unwrap();
    let local = json(&run_expecting(&mut sandbox.gavel(&DEPLOY), 0));
    assert_eq!(local["policy"], builtin["policy"]);
}

#[test]
fn policy_show_prints_the_selected_policy() {
    let sandbox = Sandbox::new();
    let allow = fixture("policies/deploy-allow.toml");
    let mut cmd = sandbox.gavel(&["policy", "show"]);
    cmd.arg("--policy").arg(&allow);
    let shown = stdout(&run_expecting(&mut cmd, 0));
    assert_eq!(shown, std::fs::read_to_string(&allow).unwrap());
}

#[test]
fn every_valid_policy_fixture_validates() {
    let sandbox = Sandbox::new();
    for file in fixtures_in("policies", "toml") {
        let output = run_expecting(
            &mut sandbox.gavel(&["policy", "validate", path_str(&file)]),
            0,
        );
        assert!(
            stdout(&output).starts_with("ok: policy `fixture-"),
            "{}",
            file.display()
        );
    }
}

#[test]
fn policy_show_builtin_starts_a_policy_even_over_an_empty_gavel_toml() {
    let sandbox = Sandbox::new();
    // `gavel policy show --builtin > gavel.toml`: the shell creates the file
    // (empty) before gavel runs, and gavel must not try to load it.
    sandbox.write("gavel.toml", "");
    let shown = run_expecting(&mut sandbox.gavel(&["policy", "show", "--builtin"]), 0);
    assert_eq!(stdout(&shown).trim_end(), DEFAULT_POLICY_TOML.trim_end());
    sandbox.write("gavel.toml", &stdout(&shown));
    let validated = run_expecting(&mut sandbox.gavel(&["policy", "validate"]), 0);
    let text = stdout(&validated);
    assert!(text.contains("gavel.toml in the workspace"), "{text}");
    assert!(text.contains("policy `gavel-default`"), "{text}");
}

/// Inline examples are checked once per policy a log records, not on every
/// call; a policy whose example fails is still refused at its first call,
/// by `run` and by a hook, and nothing runs.
#[test]
fn a_policy_with_a_failing_example_is_refused_at_its_first_governed_call() {
    let sandbox = crate::support::Sandbox::new();
    let policy = sandbox.root.join("bad.toml");
    std::fs::write(
        &policy,
        r#"name = "bad"
[[rules]]
id = "r"
action = "allow"
tools = ["read_file"]
path_scope = "inside"
reason = "x"
examples = [{ tool = "read_file", arguments = { path = "/etc/passwd" }, matches = true }]
"#,
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    let err = crate::support::assert_one_line_error(&mut sandbox.gavel(&[
        "run",
        "read_file",
        r#"{"path":"notes.txt"}"#,
        "--policy",
        policy,
    ]));
    assert!(err.contains("example 1"), "{err}");
    assert!(
        !sandbox.db.exists() || {
            let log = crate::support::run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0);
            log.stdout.is_empty()
        }
    );
}

/// `policy diff`: the rule that changed, the sample requests and the
/// recorded calls it moves.
#[test]
fn policy_diff_names_the_changed_rules_and_the_decisions_they_move() {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", gavel::policy::CODING_AGENT_POLICY_TOML);
    let out = sandbox
        .gavel(&["run", "bash", r#"{"command":"git --version"}"#, "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let old = sandbox.ws.join("gavel.toml");
    let new = sandbox.root.join("new.toml");
    let text = gavel::policy::CODING_AGENT_POLICY_TOML;
    let first = text.find("[[rules]]").unwrap();
    std::fs::write(
        &new,
        format!(
            "{}[[rules]]\nid = \"corp.no_git\"\naction = \"deny\"\ntools = [\"bash\"]\ncommands = [{{ program = [\"git\"] }}]\nreason = \"no git\"\n\n{}",
            &text[..first],
            &text[first..]
        ),
    )
    .unwrap();
    let out = sandbox
        .gavel(&["policy", "diff", "--format", "json"])
        .arg(&old)
        .arg(&new)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let diff = json(&out);
    assert_eq!(diff["rules"][0]["rule_id"], "corp.no_git");
    assert_eq!(diff["rules"][0]["kind"], "added");
    assert_eq!(
        diff["rules"].as_array().unwrap().len(),
        1,
        "{}",
        diff["rules"]
    );
    let changed = diff["sample"]["changed"].as_array().unwrap();
    assert!(!changed.is_empty());
    assert!(
        changed
            .iter()
            .all(|c| c["to"] == serde_json::json!(["deny", "corp.no_git"]))
    );
    assert_eq!(diff["log"]["total"], 1);
    assert_eq!(diff["log"]["tightened"], 1);
    // The same policy twice: nothing moves.
    let out = sandbox
        .gavel(&["policy", "diff", "--format", "json", "--no-log"])
        .arg(&old)
        .arg(&old)
        .output()
        .unwrap();
    let same = json(&out);
    assert_eq!(same["rules"], serde_json::json!([]));
    assert_eq!(same["sample"]["changed"], serde_json::json!([]));
    assert_eq!(same["log"], serde_json::Value::Null);
}
