//! `gavel demo`: a scripted session. Asserts on rule ids and statuses, not on
//! the table's layout, which is free to grow.

use serde_json::Value;

use crate::support::{Sandbox, json_lines, run_expecting, stdout};

fn demo(sandbox: &Sandbox, extra: &[&str]) -> std::process::Output {
    let dir = sandbox.root.join("demo");
    let mut args = vec!["demo", "--dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    run_expecting(&mut sandbox.gavel(&args), 0)
}

#[test]
fn demo_exits_0_and_its_table_shows_each_governance_path() {
    let sandbox = Sandbox::new();
    let text = stdout(&demo(&sandbox, &[]));
    for needle in [
        "path.read_allow",
        "path.write_requires_approval",
        "bash.hard_deny",
        "path.outside_workspace",
        "default.deny",
        "approved",
        "rejected",
        "not_required",
        "succeeded",
        "blocked",
    ] {
        assert!(
            text.contains(needle),
            "demo output lacks `{needle}`:\n{text}"
        );
    }
}

#[test]
fn demo_json_pairs_each_rule_with_the_expected_outcome() {
    let sandbox = Sandbox::new();
    let lines = json_lines(&demo(&sandbox, &["--json"]));
    let has = |rule: &str, approval: &str, status: &str| {
        lines.iter().any(|v: &Value| {
            v["rule_id"] == rule && v["approval"] == approval && v["status"] == status
        })
    };
    assert!(
        has("path.read_allow", "not_required", "succeeded"),
        "{lines:?}"
    );
    assert!(has("path.write_requires_approval", "approved", "succeeded"));
    assert!(has("path.write_requires_approval", "rejected", "blocked"));
    assert!(has("bash.hard_deny", "not_required", "blocked"));
    assert!(has("path.outside_workspace", "not_required", "blocked"));
    assert!(has("default.deny", "not_required", "blocked"));
}

#[test]
fn demo_works_in_the_folder_it_is_given() {
    let sandbox = Sandbox::new();
    demo(&sandbox, &[]);
    let dir = sandbox.root.join("demo");
    assert!(dir.join("notes.txt").exists());
    assert!(
        dir.join("report.md").exists(),
        "the approved write happened"
    );
    assert!(
        !std::fs::read_to_string(dir.join("notes.txt"))
            .unwrap()
            .contains("overwritten"),
        "the rejected write did not"
    );
}

#[test]
fn demo_records_verifies_and_replays_its_session() {
    let sandbox = Sandbox::new();
    let text = stdout(&demo(&sandbox, &[]));
    assert!(text.contains("ok, 20 events, chain intact"), "{text}");
    for needle in ["loosened", "tightened", "docs.write_allow", "notes.private"] {
        assert!(
            text.contains(needle),
            "demo replay lacks `{needle}`:\n{text}"
        );
    }
    let log = json_lines(&run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0));
    assert_eq!(log.len(), 6);
    assert_eq!(log[3]["rule_id"], "bash.hard_deny");
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}

/// The demo's closing hints run as printed, with no gavel on `PATH`.
#[test]
fn the_demos_closing_hints_run_as_printed() {
    let sandbox = crate::support::Sandbox::new();
    let dir = sandbox.root.join("demo");
    let out = sandbox
        .bare()
        .args(["demo", "--dir", dir.to_str().unwrap()])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let hints: Vec<&str> = text
        .split("Try: ")
        .nth(1)
        .expect("hints")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(hints.len(), 3, "{text}");
    for hint in hints {
        let run = std::process::Command::new("bash")
            .arg("-c")
            .arg(hint)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        assert_eq!(
            run.status.code(),
            Some(0),
            "`{hint}`: {}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
}
