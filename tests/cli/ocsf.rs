//! `gavel export --format ocsf` and `gavel verify --ocsf` (issue 29): every
//! event validates against the vendored OCSF schema, and a SIEM's copy is
//! verified with no database: an edited, deleted or reordered event is
//! found.

use serde_json::Value;

use crate::ocsf_schema::Schema;
use crate::support::{Sandbox, code, json_lines, stderr, stdout};

/// A log with every kind of row: the demo's session.
fn demo() -> Sandbox {
    let sandbox = Sandbox::new();
    let out = sandbox
        .bare()
        .args(["demo", "--db"])
        .arg(&sandbox.db)
        .env("GAVEL_CHECKPOINT_EVERY", "1")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    sandbox
}

fn export(sandbox: &Sandbox, args: &[&str]) -> Vec<Value> {
    let out = sandbox
        .bare()
        .args(["export", "--format", "ocsf", "--db"])
        .arg(&sandbox.db)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json_lines(&out)
}

fn verify(sandbox: &Sandbox, events: &[Value]) -> (i32, String) {
    let path = sandbox.root.join("siem.jsonl");
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(&path, text).unwrap();
    let out = sandbox
        .bare()
        .args(["verify", "--ocsf"])
        .arg(&path)
        .output()
        .unwrap();
    (code(&out), stdout(&out) + &stderr(&out))
}

#[test]
fn every_event_of_the_demo_log_validates_against_the_ocsf_schema() {
    let sandbox = demo();
    let events = export(&sandbox, &[]);
    assert!(events.len() > 10);
    let mut schema = Schema::load();
    let mut classes = std::collections::BTreeSet::new();
    for event in &events {
        let problems = schema.validate(event);
        assert!(problems.is_empty(), "{problems:#?}\n{event:#}");
        classes.insert(event["class_uid"].as_u64().unwrap());
    }
    assert_eq!(classes.into_iter().collect::<Vec<_>>(), [1001, 1007, 6003]);
    // Each event names the one before by its fingerprint: the chain, readable in the SIEM.
    for pair in events.windows(2) {
        let before = &pair[0]["attestation_list"][0]["fingerprint"]["value"];
        let named = &pair[1]["attestation_list"][0]["prev_event"]["fingerprint"]["value"];
        assert_eq!(named, before);
    }
    // The verdict rides on the decision's event.
    let decision = events
        .iter()
        .find(|e| e["metadata"]["event_code"] == "decision" && e["action_id"] == 2)
        .expect("a denied call");
    assert_eq!(decision["disposition"], "Blocked");
    assert!(decision["policy"]["uid"].as_str().unwrap().contains('.'));
    assert_eq!(decision["policy"]["version"].as_str().unwrap().len(), 64);
}

#[test]
fn the_validator_refuses_what_the_schema_does_not_allow() {
    let sandbox = demo();
    let event = export(&sandbox, &[]).remove(0);
    let mut schema = Schema::load();
    let mut broken = event.clone();
    broken["colour"] = "blue".into();
    assert!(
        schema
            .validate(&broken)
            .iter()
            .any(|p| p.contains("colour"))
    );
    let mut broken = event.clone();
    broken["severity_id"] = 42.into();
    assert!(
        schema
            .validate(&broken)
            .iter()
            .any(|p| p.contains("severity_id"))
    );
    let mut broken = event.clone();
    broken["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("product");
    assert!(
        schema
            .validate(&broken)
            .iter()
            .any(|p| p.contains("product"))
    );
    let mut broken = event;
    broken["time"] = "yesterday".into();
    assert!(schema.validate(&broken).iter().any(|p| p.contains("time")));
}

#[test]
fn verify_ocsf_finds_an_edited_deleted_or_reordered_event() {
    let sandbox = demo();
    let events = export(&sandbox, &[]);
    let (exit, said) = verify(&sandbox, &events);
    assert_eq!(exit, 0, "{said}");
    assert!(said.contains("chain intact"), "{said}");

    // A mapped field edited: the verdict a SIEM rule would read.
    let mut edited = events.clone();
    let decision = edited
        .iter_mut()
        .find(|e| e["metadata"]["event_code"] == "decision")
        .unwrap();
    decision["disposition_id"] = 99.into();
    let (exit, said) = verify(&sandbox, &edited);
    assert_eq!(exit, 1, "{said}");
    assert!(said.contains("content_mismatch"), "{said}");

    // The row it carries edited.
    let mut edited = events.clone();
    let row = &mut edited[2]["unmapped"]["gavel"];
    row["ts_us"] = (row["ts_us"].as_i64().unwrap() + 1).into();
    let (exit, said) = verify(&sandbox, &edited);
    assert_eq!(exit, 1, "{said}");

    // Deleted, reordered.
    let mut deleted = events.clone();
    deleted.remove(4);
    let (exit, said) = verify(&sandbox, &deleted);
    assert_eq!(exit, 1, "{said}");
    assert!(said.contains("seq_gap"), "{said}");
    let mut reordered = events.clone();
    reordered.swap(4, 5);
    let (exit, said) = verify(&sandbox, &reordered);
    assert_eq!(exit, 1, "{said}");

    // A cut tail is found against the checkpoint that covered it.
    let checkpoint = sandbox.root.join("checkpoint.txt");
    let out = sandbox
        .bare()
        .args(["checkpoint", "--db"])
        .arg(&sandbox.db)
        .arg("--key")
        .arg(sandbox.db.with_extension("db.checkpoint-key"))
        .output()
        .unwrap();
    std::fs::write(&checkpoint, &out.stdout).unwrap();
    let path = sandbox.root.join("cut.jsonl");
    let text: String = events[..events.len() - 2]
        .iter()
        .map(|e| format!("{e}\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    let out = sandbox
        .bare()
        .args(["verify", "--ocsf"])
        .arg(&path)
        .arg("--checkpoint")
        .arg(&checkpoint)
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
}

/// How many calls the mixed session has: `GAVEL_OCSF_CALLS`, else 1,000
/// (CI runs 10,000).
fn calls() -> usize {
    std::env::var("GAVEL_OCSF_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000)
}

#[test]
fn every_event_of_a_mixed_session_validates_and_verifies() {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", gavel::policy::CODING_AGENT_POLICY_TOML);
    sandbox.write("src/lib.rs", "pub fn f() {}\n");
    let mut lines = String::new();
    for i in 0..calls() {
        let (name, input) = match i % 8 {
            0 => ("read_file", serde_json::json!({"path": "src/lib.rs"})),
            1 => ("glob", serde_json::json!({"pattern": "src/*.rs"})),
            2 => ("bash", serde_json::json!({"command": "ls src"})),
            3 => ("bash", serde_json::json!({"command": "rm -rf /"})),
            4 => (
                "write_file",
                serde_json::json!({"path": format!("notes/{i}.md"), "content": "x"}),
            ),
            5 => (
                "edit_file",
                serde_json::json!({"path": "src/lib.rs", "old_text": "zz", "new_text": "y"}),
            ),
            6 => ("mcp__github__search", serde_json::json!({"q": "x"})),
            _ => ("read_file", serde_json::json!({"path": "/etc/passwd"})),
        };
        lines.push_str(
            &serde_json::json!({"type": "tool_use", "id": format!("m{i}"), "name": name, "input": input})
                .to_string(),
        );
        lines.push('\n');
        if matches!(i % 8, 4 | 5) {
            let approval = serde_json::json!({"type": "approval", "id": format!("m{i}"), "approved": i % 16 == 4});
            lines.push_str(&approval.to_string());
            lines.push('\n');
        }
    }
    let out = sandbox
        .gavel(&["serve", "--stdio", "--durability", "normal"])
        .env("GAVEL_CHECKPOINT_EVERY", "1")
        .write_stdin(lines)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events = export(&sandbox, &[]);
    assert!(events.len() >= calls() * 3);
    let mut schema = Schema::load();
    for event in &events {
        let problems = schema.validate(event);
        assert!(problems.is_empty(), "{problems:#?}\n{event:#}");
    }
    let (exit, said) = verify(&sandbox, &events);
    assert_eq!(exit, 0, "{said}");
    // A filtered export verifies event by event.
    let denied = export(&sandbox, &["--action", "deny"]);
    assert!(!denied.is_empty() && denied.len() < events.len());
    let (exit, said) = verify(&sandbox, &denied);
    assert_eq!(exit, 0, "{said}");
}
