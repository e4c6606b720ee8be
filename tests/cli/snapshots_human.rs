//! The human output people read, snapshotted with insta. Digests, times,
//! call ids and temporary paths are filtered out; the layout is not.

use crate::support::{Sandbox, run_expecting, stdout};

fn settings(sandbox: &Sandbox) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.add_filter(&regex::escape(&sandbox.root.display().to_string()), "[TMP]");
    settings.add_filter(r"[0-9a-f]{12,}…?", "[HEX]");
    settings.add_filter(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+Z)?", "[TIME]");
    // Who ran the tests, on which machine, with which gavel.
    settings.add_filter(
        r"user `[^`]+` \(uid \d+\) on host `[^`]+`",
        "user `[USER]` (uid [UID]) on host `[HOST]`",
    );
    settings.add_filter(r"by `[^`]+`", "by `[USER]`");
    settings.add_filter(r"gavel \d+\.\d+\.\d+", "gavel [VERSION]");
    // Column widths follow the temporary path's length: keep the cells, not the padding.
    settings.add_filter(r" {2,}", " ");
    settings.add_filter(r"─{2,}", "─");
    settings
}

#[test]
fn check_explain_table() {
    let sandbox = Sandbox::new();
    let output = run_expecting(
        &mut sandbox.gavel(&[
            "check",
            "write_file",
            r#"{"path":"notes.txt","content":""}"#,
            "--explain",
        ]),
        0,
    );
    settings(&sandbox).bind(|| insta::assert_snapshot!("check_explain", stdout(&output)));
}

#[test]
fn explain_of_a_rejected_write() {
    let sandbox = Sandbox::new();
    run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "write_file",
            r#"{"path":"notes.txt","content":"x"}"#,
            "--reject",
            "--call-id",
            "w1",
        ]),
        3,
    );
    let output = run_expecting(&mut sandbox.gavel(&["explain", "w1"]), 0);
    settings(&sandbox).bind(|| insta::assert_snapshot!("explain_rejected_write", stdout(&output)));
}

#[test]
fn replay_drift_table() {
    let sandbox = Sandbox::new();
    for (id, tool, args) in [
        ("r1", "read_file", r#"{"path":"notes.txt"}"#),
        ("w1", "write_file", r#"{"path":"a.md","content":"x"}"#),
        ("b1", "bash", r#"{"command":"curl https://example.com"}"#),
    ] {
        sandbox
            .gavel(&["run", tool, args, "--reject", "--call-id", id])
            .output()
            .unwrap();
    }
    let policy = crate::support::fixture("replay/changed.toml");
    let output = sandbox
        .gavel(&["replay", "--policy", policy.to_str().unwrap()])
        .output()
        .unwrap();
    settings(&sandbox).bind(|| insta::assert_snapshot!("replay_drift", stdout(&output)));
}
