//! `gavel replay`, `policy test`, `export --requests` and `check --explain`
//! against real recorded databases.

use std::collections::BTreeMap;

use serde_json::json;

use crate::support::{
    Sandbox, code, fixture, json, json_lines, record, run_expecting, stderr, stdout,
};

/// Seven calls under the built-in policy whose drift under
/// `fixtures/replay/changed.toml` is counted by hand below.
fn record_session(sandbox: &Sandbox) {
    record(sandbox, "c1", "read_file", json!({"path": "notes.txt"}));
    record(
        sandbox,
        "c2",
        "write_file",
        json!({"path": "a.md", "content": "x"}),
    );
    record(
        sandbox,
        "c3",
        "write_file",
        json!({"path": "docs/b.md", "content": "x"}),
    );
    record(
        sandbox,
        "c4",
        "write_file",
        json!({"path": "c.txt", "content": "x"}),
    );
    record(sandbox, "c5", "bash", json!({"command": "ls"}));
    record(
        sandbox,
        "c6",
        "bash",
        json!({"command": "curl https://example.com"}),
    );
    record(sandbox, "c7", "deploy", json!({"env": "prod"}));
}

fn replay(sandbox: &Sandbox, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["replay", "--format", "json"];
    args.extend_from_slice(extra);
    sandbox.gavel(&args).output().unwrap()
}

fn changed_policy() -> String {
    fixture("replay/changed.toml").display().to_string()
}

#[test]
fn replay_under_the_recording_policy_reports_no_drift() {
    let sandbox = Sandbox::new();
    record_session(&sandbox);
    let output = replay(&sandbox, &[]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let report = json(&output);
    assert_eq!(report["total"], 7);
    assert_eq!(report["unchanged"], 7);
    assert_eq!(report["changed"], 0);
    assert_eq!(report["transitions"], json!([]));
    assert_eq!(report["verified"], true);
    assert_eq!(report["facts"], "recorded");
}

#[test]
fn replay_counts_loosened_tightened_and_rerouted_calls_exactly() {
    let sandbox = Sandbox::new();
    record_session(&sandbox);
    let output = replay(&sandbox, &["--policy", &changed_policy()]);
    assert_eq!(code(&output), 1, "drift exits 1 under --fail-on any");
    let report = json(&output);
    assert_eq!(report["total"], 7);
    assert_eq!(report["changed"], 5);
    assert_eq!(report["unchanged"], 2, "c4 and c5 keep their decisions");
    assert_eq!(report["loosened"], 3);
    assert_eq!(report["tightened"], 1);
    assert_eq!(report["rerouted"], 1);
    assert_eq!(report["policy"]["current"]["name"], "replay-changed");
    assert_eq!(report["policy"]["recorded"].as_array().unwrap().len(), 1);

    let transitions: Vec<(String, String, String, u64, Vec<String>)> = report["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["direction"].as_str().unwrap().to_owned(),
                format!(
                    "{} {}",
                    t["from"]["action"].as_str().unwrap(),
                    t["from"]["rule_id"].as_str().unwrap()
                ),
                format!(
                    "{} {}",
                    t["to"]["action"].as_str().unwrap(),
                    t["to"]["rule_id"].as_str().unwrap()
                ),
                t["count"].as_u64().unwrap(),
                t["call_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect();
    let s = |x: &str| x.to_owned();
    assert_eq!(
        transitions,
        vec![
            (
                s("loosened"),
                s("ask path.write_requires_approval"),
                s("allow docs.write_allow"),
                2,
                vec![s("c2"), s("c3")]
            ),
            (
                s("loosened"),
                s("deny default.deny"),
                s("ask deploy.ask"),
                1,
                vec![s("c7")]
            ),
            (
                s("tightened"),
                s("ask bash.requires_approval"),
                s("deny net.deny"),
                1,
                vec![s("c6")]
            ),
            (
                s("rerouted"),
                s("allow path.read_allow"),
                s("allow path.read_allow_v2"),
                1,
                vec![s("c1")]
            ),
        ]
    );
}

#[test]
fn fail_on_chooses_which_drift_fails() {
    let sandbox = Sandbox::new();
    record_session(&sandbox);
    let policy = changed_policy();
    for (fail_on, expected) in [("any", 1), ("loosened", 1), ("tightened", 1), ("never", 0)] {
        let output = replay(&sandbox, &["--policy", &policy, "--fail-on", fail_on]);
        assert_eq!(code(&output), expected, "--fail-on {fail_on}");
    }
    // Only the curl call: tightened, nothing loosened.
    let only_bash = ["--policy", &policy, "--tool", "bash"];
    let loosened = replay(
        &sandbox,
        &[&only_bash[..], &["--fail-on", "loosened"]].concat(),
    );
    assert_eq!(code(&loosened), 0);
    assert_eq!(json(&loosened)["total"], 2, "filters select the calls");
    let tightened = replay(
        &sandbox,
        &[&only_bash[..], &["--fail-on", "tightened"]].concat(),
    );
    assert_eq!(code(&tightened), 1);
}

/// The bytes of every file in `dir`, recursively, by relative path.
fn snapshot(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                files.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn replay_leaves_the_workspace_the_database_and_its_chain_untouched() {
    let sandbox = Sandbox::new();
    record_session(&sandbox);
    let head =
        |s: &Sandbox| json(&run_expecting(&mut s.gavel(&["verify", "--json"]), 0))["head"].clone();
    let before_head = head(&sandbox);
    let before = snapshot(&sandbox.root);
    let output = replay(&sandbox, &["--policy", &changed_policy(), "--live"]);
    assert_eq!(code(&output), 1);
    let after = snapshot(&sandbox.root);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &before {
        // The -shm file is SQLite's shared-memory index, rebuilt by any reader.
        if !name.ends_with("-shm") {
            assert!(after[name] == *bytes, "{name} changed");
        }
    }
    assert_eq!(head(&sandbox), before_head);
    let log = json_lines(&run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0));
    assert_eq!(log.len(), 7, "replay appended nothing");
}

#[test]
fn a_moved_symlink_changes_a_live_replay_but_not_a_recorded_one() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.ws.join("data")).unwrap();
    std::fs::write(sandbox.ws.join("data/x.txt"), "x").unwrap();
    std::os::unix::fs::symlink(sandbox.ws.join("data"), sandbox.ws.join("link")).unwrap();
    record(
        &sandbox,
        "via-link",
        "read_file",
        json!({"path": "link/x.txt"}),
    );

    // The link now leads outside the workspace.
    std::fs::remove_file(sandbox.ws.join("link")).unwrap();
    std::os::unix::fs::symlink(&sandbox.outside, sandbox.ws.join("link")).unwrap();

    let recorded = replay(&sandbox, &[]);
    assert_eq!(code(&recorded), 0);
    assert_eq!(json(&recorded)["unchanged"], 1);

    let live = replay(&sandbox, &["--live"]);
    assert_eq!(code(&live), 1);
    let report = json(&live);
    assert_eq!(report["facts"], "live");
    assert_eq!(report["tightened"], 1);
    assert_eq!(
        report["transitions"][0]["to"]["rule_id"],
        "path.outside_workspace"
    );
    assert_eq!(report["transitions"][0]["call_ids"], json!(["via-link"]));
}

#[test]
fn a_tampered_database_is_refused_unless_told_to_skip_verification() {
    let sandbox = Sandbox::new();
    record_session(&sandbox);
    {
        let conn = rusqlite::Connection::open(&sandbox.db).unwrap();
        conn.execute_batch(
            "DROP TRIGGER events_no_update;
             UPDATE events SET rule_id = 'path.read_allow' WHERE seq = 5;",
        )
        .unwrap();
    }
    let refused = replay(&sandbox, &[]);
    assert_eq!(code(&refused), 2);
    let err = stderr(&refused);
    assert!(
        err.contains("does not verify") && err.contains("seq 5"),
        "{err}"
    );
    assert!(refused.stdout.is_empty());

    let skipped = replay(&sandbox, &["--skip-verify"]);
    assert_eq!(json(&skipped)["verified"], false);
    let table = sandbox
        .gavel(&["replay", "--skip-verify"])
        .output()
        .unwrap();
    assert!(stdout(&table).starts_with("WARNING: the chain was not verified"));
}

#[test]
fn exported_requests_become_a_passing_regression_suite() {
    let sandbox = Sandbox::new();
    record_session(&sandbox);
    let export = run_expecting(&mut sandbox.gavel(&["export", "--requests"]), 0);
    let corpus = sandbox.root.join("corpus.jsonl");
    std::fs::write(&corpus, &export.stdout).unwrap();
    let cases = json_lines(&export);
    assert_eq!(cases.len(), 7);
    assert_eq!(cases[0]["call_id"], "c1");
    assert_eq!(cases[0]["rule_id"], "path.read_allow");
    assert!(cases[0]["facts"]["paths"][0]["inside"].as_bool().unwrap());

    let corpus = corpus.display().to_string();
    let pass = run_expecting(&mut sandbox.gavel(&["policy", "test", &corpus]), 0);
    assert!(
        stdout(&pass).contains("7 passed, 0 failed"),
        "{}",
        stdout(&pass)
    );

    let policy = changed_policy();
    let fail = run_expecting(
        &mut sandbox.gavel(&["policy", "test", &corpus, "--policy", &policy, "--json"]),
        1,
    );
    let results = json_lines(&fail);
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| r["pass"] == false)
        .map(|r| r["case"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["c1", "c2", "c3", "c6", "c7"]);
}

#[test]
fn hand_written_toml_cases_run_with_their_own_facts() {
    let sandbox = Sandbox::new();
    let cases = fixture("replay/cases.toml").display().to_string();
    let output = run_expecting(&mut sandbox.gavel(&["policy", "test", &cases]), 0);
    assert!(stdout(&output).contains("4 passed, 0 failed"));
    let bad = sandbox.root.join("bad.toml");
    std::fs::write(
        &bad,
        "[[cases]]\ntool = \"bash\"\narguments = { command = \"ls\" }\naction = \"allow\"\n",
    )
    .unwrap();
    let output = run_expecting(
        &mut sandbox.gavel(&["policy", "test", &bad.display().to_string()]),
        1,
    );
    assert!(stdout(&output).contains("0 passed, 1 failed"));
}

#[test]
fn check_explain_says_why_each_earlier_rule_did_not_match() {
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
    assert!(
        text.contains("tool `write_file` is not one of [bash]"),
        "{text}"
    );
    assert!(text.contains("is not outside the workspace"), "{text}");
    assert!(
        text.contains("tool `write_file` is not one of [read_file, glob, mcp__filesystem__read_*"),
        "{text}"
    );
}

#[test]
fn replay_of_a_long_command_recorded_once_is_exact() {
    let sandbox = crate::support::Sandbox::new();
    let command = format!("echo {}", "word ".repeat(20_000));
    let request = sandbox.root.join("long.json");
    std::fs::write(
        &request,
        serde_json::json!({"type":"tool_use","id":"long1","name":"bash","input":{"command":command}})
            .to_string(),
    )
    .unwrap();
    crate::support::run_expecting(
        &mut sandbox.gavel(&["run", "--request", request.to_str().unwrap(), "--reject"]),
        3,
    );
    let out = crate::support::run_expecting(&mut sandbox.gavel(&["show", "long1", "--json"]), 0);
    let events = crate::support::json(&out)["events"].clone();
    let request_payload = events[0]["payload"].to_string();
    let decision_payload = events[1]["payload"].to_string();
    assert!(request_payload.len() > command.len());
    assert!(
        decision_payload.len() < 2048,
        "the decision does not copy the command: {} bytes",
        decision_payload.len()
    );
    assert!(events[1]["payload"]["facts"]["shell_sha256"].is_string());
    let report = crate::support::json(&crate::support::run_expecting(
        &mut sandbox.gavel(&["replay", "--json"]),
        0,
    ));
    assert_eq!(
        (
            report["total"].as_u64(),
            report["unchanged"].as_u64(),
            report["parse_differs"].as_u64()
        ),
        (Some(1), Some(1), Some(0))
    );
    let text = crate::support::stdout(&crate::support::run_expecting(
        &mut sandbox.gavel(&["explain", "long1"]),
        0,
    ));
    assert!(
        text.contains("the command runs, as parsed:\n    - echo word word"),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(!text.contains("parsed again from the request"));
}

/// The secret shapes of `fixtures/secrets/corpus.txt`, one per case.
fn secret_texts() -> Vec<String> {
    let text = std::fs::read_to_string(fixture("secrets/corpus.txt")).unwrap();
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.replace("[[", "").replace("]]", "").replace('⏎', "\n"))
        .collect()
}

/// Replay's gate never passes what it could not prove: writes whose
/// redacted content no rule reads are re-decided exactly (loosening them
/// fails the gate), and commands stored redacted that decide differently
/// are undecidable, which fails the gate unless allowed.
#[test]
#[ignore = "slow: a plain `cargo test` leaves it out; `cargo test -- --ignored` (and CI) runs it"]
fn replay_gate_fails_on_loosening_hidden_by_redaction() {
    let sandbox = Sandbox::new();
    let secrets = secret_texts();
    assert!(secrets.len() >= 50, "{} cases", secrets.len());
    let mut lines = Vec::new();
    for (i, secret) in secrets.iter().enumerate() {
        lines.push(
            json!({"type":"tool_use","id":format!("w{i}"),"name":"write_file",
                   "input":{"path":format!("f{i}.env"),"content":secret}})
            .to_string(),
        );
        lines.push(json!({"type":"approval","id":format!("w{i}"),"approved":true}).to_string());
        lines.push(
            json!({"type":"tool_use","id":format!("b{i}"),"name":"bash",
                   "input":{"command":format!("echo {}", secret.replace('\n', " "))}})
            .to_string(),
        );
        lines.push(json!({"type":"approval","id":format!("b{i}"),"approved":false}).to_string());
    }
    let served = sandbox
        .gavel(&["serve", "--stdio", "--durability", "normal"])
        .write_stdin(lines.join("\n") + "\n")
        .output()
        .unwrap();
    assert_eq!(code(&served), 0, "{}", stderr(&served));
    let export = run_expecting(&mut sandbox.gavel(&["export", "--format", "jsonl"]), 0);
    assert!(
        String::from_utf8_lossy(&export.stdout).contains("«redacted:"),
        "the corpus was stored redacted"
    );

    // A looser policy: writes allowed, `echo` allowed.
    let looser = sandbox.root.join("looser.toml");
    std::fs::write(
        &looser,
        r#"name = "looser"
[[rules]]
id = "write.allow"
action = "allow"
tools = ["write_file"]
path_scope = "inside"
reason = "writes allowed"
[[rules]]
id = "bash.outside"
action = "ask"
tools = ["bash"]
path_scope = "outside"
reason = "outside"
[[rules]]
id = "echo.allow"
action = "allow"
tools = ["bash"]
command_prefix = [["echo"]]
reason = "echo allowed"
[[rules]]
id = "bash.ask"
action = "ask"
tools = ["bash"]
reason = "asked"
"#,
    )
    .unwrap();
    let looser = looser.display().to_string();

    // Writes: `content` is read by no rule, so each is re-decided exactly.
    let out = replay(
        &sandbox,
        &[
            "--policy",
            &looser,
            "--tool",
            "write_file",
            "--fail-on",
            "loosened",
        ],
    );
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let report = json(&out);
    assert_eq!(report["loosened"], secrets.len() as u64, "{report}");
    assert_eq!(report["undecidable"], 0, "{report}");

    // Commands: stored redacted, the policy reads them: undecidable.
    let out = replay(
        &sandbox,
        &[
            "--policy",
            &looser,
            "--tool",
            "bash",
            "--fail-on",
            "loosened",
        ],
    );
    let report = json(&out);
    let undecidable = report["undecidable"].as_u64().unwrap();
    assert!(undecidable > 0, "{report}");
    assert_eq!(code(&out), 1, "undecidable calls fail the gate: {report}");
    assert!(
        report["undecidable_loosened"].as_u64().unwrap() > 0,
        "{report}"
    );
    let calls = report["undecidable_calls"].as_array().unwrap();
    assert_eq!(calls.len() as u64, undecidable, "JSON lists every one");
    assert!(
        calls.iter().any(|c| c["direction"] == "loosened"
            && c["from"]["action"] == "ask"
            && c["to"]["action"] == "allow"),
        "{report}"
    );
    // Allowed explicitly, only real drift can fail the gate.
    let out = replay(
        &sandbox,
        &[
            "--policy",
            &looser,
            "--tool",
            "bash",
            "--fail-on",
            "loosened",
            "--allow-undecidable",
        ],
    );
    let report = json(&out);
    let expected = u8::from(report["loosened"].as_u64().unwrap() > 0);
    assert_eq!(code(&out), i32::from(expected), "{report}");
    // The table says it too.
    let table = sandbox
        .gavel(&["replay", "--policy", &looser, "--tool", "bash"])
        .output()
        .unwrap();
    assert!(stdout(&table).contains("undecidable"), "{}", stdout(&table));
}
