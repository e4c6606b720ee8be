//! Reading the record: `log` filters and formats, `stats`, `show`,
//! `export` and `explain`, over the eight calls of `record_mix`.

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::store::{ids, log, record_mix};
use crate::support::{Sandbox, json, json_lines, run_expecting, stderr, stdout};

fn mixed() -> Sandbox {
    let sandbox = Sandbox::new();
    record_mix(&sandbox);
    sandbox
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn log_filters_by_tool_rule_action_approval_status_and_call() {
    let sandbox = mixed();
    let cases: [(&[&str], &[&str]); 12] = [
        (
            &["--tool", "bash"],
            &["c4-bash-cancelled", "c5-sudo", "c8-exit-3"],
        ),
        (&["--tool", "read_file"], &["c1-read", "c6-escape"]),
        (
            &["--rule", "path.write_requires_approval"],
            &["c2-write-approved", "c3-write-rejected"],
        ),
        (
            &["--action", "deny"],
            &["c5-sudo", "c6-escape", "c7-unknown"],
        ),
        (
            &["--action", "ask"],
            &[
                "c2-write-approved",
                "c3-write-rejected",
                "c4-bash-cancelled",
                "c8-exit-3",
            ],
        ),
        (
            &["--approval", "approved"],
            &["c2-write-approved", "c8-exit-3"],
        ),
        (&["--approval", "rejected"], &["c3-write-rejected"]),
        (&["--approval", "cancelled"], &["c4-bash-cancelled"]),
        (
            &["--approval", "not_required"],
            &["c1-read", "c5-sudo", "c6-escape", "c7-unknown"],
        ),
        (&["--status", "failed"], &["c8-exit-3"]),
        (
            &["--status", "succeeded", "--tool", "write_file"],
            &["c2-write-approved"],
        ),
        (&["--call", "c6-escape"], &["c6-escape"]),
    ];
    for (args, want) in cases {
        assert_eq!(ids(&log(&sandbox, args)), want, "log {args:?}");
    }
    assert_eq!(log(&sandbox, &["--status", "blocked"]).len(), 5);
    assert!(log(&sandbox, &["--status", "incomplete"]).is_empty());
    assert!(log(&sandbox, &["--approval", "pending"]).is_empty());
    assert!(log(&sandbox, &["--call", "no-such-call"]).is_empty());
    assert!(log(&sandbox, &["--tool", "glob"]).is_empty());
}

#[test]
fn log_limit_keeps_the_oldest_calls() {
    let sandbox = mixed();
    assert_eq!(
        ids(&log(&sandbox, &["--limit", "2"])),
        ["c1-read", "c2-write-approved"]
    );
    assert_eq!(
        ids(&log(&sandbox, &["--action", "deny", "--limit", "1"])),
        ["c5-sudo"]
    );
    assert!(log(&sandbox, &["--limit", "0"]).is_empty());
}

#[test]
fn log_since_and_until_take_rfc3339_dates_and_ages() {
    let sandbox = mixed();
    let all = log(&sandbox, &[]);
    let ts = |i: usize| all[i]["ts"].as_str().unwrap().to_owned();
    let all_ids = ids(&all);
    // `--since` is inclusive, `--until` exclusive, on the decision's time.
    assert_eq!(ids(&log(&sandbox, &["--since", &ts(3)])), &all_ids[3..]);
    assert_eq!(ids(&log(&sandbox, &["--until", &ts(3)])), &all_ids[..3]);
    assert_eq!(
        ids(&log(&sandbox, &["--since", &ts(2), "--until", &ts(5)])),
        &all_ids[2..5]
    );
    // RFC 3339 with an offset means the same instant.
    let shifted = chrono::DateTime::parse_from_rfc3339(&ts(3))
        .unwrap()
        .with_timezone(&chrono::FixedOffset::east_opt(2 * 3600).unwrap())
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, false);
    assert!(shifted.ends_with("+02:00"), "{shifted}");
    assert_eq!(ids(&log(&sandbox, &["--since", &shifted])), &all_ids[3..]);
    // Ages and dates.
    assert_eq!(ids(&log(&sandbox, &["--since", "1h"])), all_ids);
    assert!(log(&sandbox, &["--until", "1h"]).is_empty());
    assert_eq!(ids(&log(&sandbox, &["--since", "2000-01-01"])), all_ids);
    assert!(log(&sandbox, &["--until", "2000-01-01"]).is_empty());
    assert_eq!(
        ids(&log(
            &sandbox,
            &["--since", "7d", "--until", "2999-01-01T00:00:00Z"]
        )),
        all_ids
    );
}

#[test]
fn log_rejects_unknown_filter_values_and_times() {
    let sandbox = mixed();
    for args in [
        ["--action", "alow"],
        ["--approval", "yes"],
        ["--status", "ok"],
        ["--since", "yesterday"],
        ["--until", "5 minutes"],
    ] {
        let output = run_expecting(&mut sandbox.gavel(&["log", "--json", args[0], args[1]]), 2);
        let err = stderr(&output);
        assert!(err.starts_with("gavel: "), "{args:?}: {err}");
        assert!(err.contains(args[0]), "{args:?}: {err}");
        assert!(output.stdout.is_empty());
    }
}

#[test]
fn log_format_json_is_an_array_of_the_same_objects_as_jsonl() {
    let sandbox = mixed();
    let lines = json_lines(&run_expecting(
        &mut sandbox.gavel(&["log", "--format", "jsonl"]),
        0,
    ));
    let short = log(&sandbox, &[]);
    assert_eq!(lines, short, "--json is short for --format jsonl");
    let array = json(&run_expecting(
        &mut sandbox.gavel(&["log", "--format", "json"]),
        0,
    ));
    assert_eq!(array, Value::Array(lines));
    let filtered = json(&run_expecting(
        &mut sandbox.gavel(&["log", "--format", "json", "--tool", "nothing"]),
        0,
    ));
    assert_eq!(filtered, Value::Array(vec![]));
    // The table names every call too.
    let table = stdout(&run_expecting(&mut sandbox.gavel(&["log"]), 0));
    for id in ids(&short) {
        assert!(table.contains(&id), "{id} missing from\n{table}");
    }
}

#[test]
fn stats_counts_calls_by_rule_action_approval_status_and_tool() {
    let sandbox = mixed();
    let stats = json(&run_expecting(&mut sandbox.gavel(&["stats", "--json"]), 0));
    assert_eq!(stats["calls"], 8);
    assert_eq!(
        stats["by_action"],
        serde_json::json!({"allow": 1, "ask": 4, "deny": 3})
    );
    assert_eq!(
        stats["by_approval"],
        serde_json::json!({"approved": 2, "cancelled": 1, "not_required": 4, "rejected": 1})
    );
    assert_eq!(
        stats["by_status"],
        serde_json::json!({"blocked": 5, "failed": 1, "succeeded": 2})
    );
    assert_eq!(
        stats["by_tool"],
        serde_json::json!({"bash": 3, "frobnicate": 1, "read_file": 2, "write_file": 2})
    );
    assert_eq!(
        stats["by_rule"],
        serde_json::json!({
            "bash.hard_deny": 1,
            "bash.requires_approval": 2,
            "default.deny": 1,
            "path.outside_workspace": 1,
            "path.read_allow": 1,
            "path.write_requires_approval": 2
        })
    );
    let filtered = json(&run_expecting(
        &mut sandbox.gavel(&["stats", "--json", "--tool", "bash"]),
        0,
    ));
    assert_eq!(filtered["calls"], 3);
    assert_eq!(
        filtered["by_rule"],
        serde_json::json!({"bash.hard_deny": 1, "bash.requires_approval": 2})
    );
}

#[test]
fn show_lists_a_calls_events_with_seq_leaf_and_chain() {
    let sandbox = mixed();
    let shown = json(&run_expecting(
        &mut sandbox.gavel(&["show", "c2-write-approved", "--json"]),
        0,
    ));
    assert_eq!(shown["call_id"], "c2-write-approved");
    let events = shown["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["request", "decision", "approval", "result"]);
    // c1-read took seq 1..=3.
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [4, 5, 6, 7]);
    assert_eq!(events[1]["rule_id"], "path.write_requires_approval");
    assert_eq!(events[1]["action"], "ask");
    assert_eq!(events[2]["approval"], "approved");
    assert_eq!(events[3]["status"], "succeeded");
    assert_eq!(events[0]["payload"]["arguments"]["path"], "out.txt");
    assert_eq!(events[1]["payload"]["facts"]["paths"][0]["inside"], true);

    let conn = Connection::open(&sandbox.db).unwrap();
    for event in events {
        let (leaf, chain): (Vec<u8>, Vec<u8>) = conn
            .query_row(
                "SELECT leaf, chain FROM events WHERE seq = ?1",
                [event["seq"].as_u64().unwrap()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(event["leaf"], hex(&leaf));
        assert_eq!(event["chain"], hex(&chain));
    }
    let output = run_expecting(&mut sandbox.gavel(&["show", "no-such-call"]), 2);
    assert!(stderr(&output).contains("no-such-call"));
}

/// Splits CSV text (RFC 4180: quotes, doubled quotes, newlines in quotes).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(
        !quoted && field.is_empty() && record.is_empty(),
        "CSV ends cleanly"
    );
    records
}

#[test]
fn export_jsonl_and_csv_include_every_event_with_its_hashes() {
    let sandbox = mixed();
    let conn = Connection::open(&sandbox.db).unwrap();
    type Stored = (u64, Vec<u8>, String, String, Vec<u8>, Vec<u8>, Vec<u8>);
    let stored: Vec<Stored> = conn
        .prepare("SELECT seq, log_id, kind, call_id, payload, leaf, chain FROM events ORDER BY seq")
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(stored.len() >= 8 * 3);

    let mut lines = json_lines(&run_expecting(
        &mut sandbox.gavel(&["export", "--format", "jsonl"]),
        0,
    ));
    let header = lines.remove(0);
    assert_eq!(header["record"], "header");
    assert_eq!(header["whole_chain"], true);
    assert_eq!(lines.len(), stored.len());
    for (line, (seq, log_id, kind, call_id, payload, leaf, chain)) in lines.iter().zip(&stored) {
        assert_eq!(line["seq"], *seq);
        assert_eq!(line["kind"], kind.as_str());
        assert_eq!(line["call_id"], call_id.as_str());
        assert_eq!(line["log_id"], hex(log_id));
        assert_eq!(line["leaf"], hex(leaf));
        assert_eq!(line["chain"], hex(chain));
        assert!(line["ts_us"].is_i64());
        let raw: Value = serde_json::from_slice(payload).unwrap();
        assert_eq!(line["payload"], raw);
        assert_eq!(
            line["payload_raw"].as_str().unwrap().as_bytes(),
            payload.as_slice(),
            "the payload bytes exactly as stored"
        );
    }
    let head = crate::store::assert_intact(&sandbox, &[])["head"].clone();
    assert_eq!(lines.last().unwrap()["chain"], head);

    let csv = stdout(&run_expecting(
        &mut sandbox.gavel(&["export", "--format", "csv"]),
        0,
    ));
    let records = parse_csv(&csv);
    assert_eq!(
        records[0],
        [
            "seq", "ts", "ts_us", "kind", "call_id", "tool", "action", "rule_id", "approval",
            "status", "payload", "log_id", "leaf", "chain", "user", "host", "client", "session",
            "agent"
        ]
    );
    assert_eq!(records.len(), stored.len() + 1);
    for (record, (seq, _, kind, call_id, payload, leaf, chain)) in records[1..].iter().zip(&stored)
    {
        assert_eq!(record.len(), 19, "{record:?}");
        assert_eq!(record[0], seq.to_string());
        assert_eq!(&record[3], kind);
        assert_eq!(&record[4], call_id);
        assert_eq!(
            record[10].as_bytes(),
            payload.as_slice(),
            "payload bytes as stored"
        );
        assert_eq!(record[11].len(), 32, "the log id, in hex");
        assert_eq!(record[12], hex(leaf));
        assert_eq!(record[13], hex(chain));
    }
    let decision = records
        .iter()
        .find(|r| r[4] == "c5-sudo" && r[3] == "decision")
        .unwrap();
    assert_eq!(decision[5], "bash");
    assert_eq!(decision[6], "deny");
    assert_eq!(decision[7], "bash.hard_deny");
}

#[test]
fn explain_blocked_call_names_the_rule_the_reason_and_the_request() {
    let sandbox = mixed();
    let text = stdout(&run_expecting(
        &mut sandbox.gavel(&["explain", "c5-sudo"]),
        0,
    ));
    assert!(text.contains("c5-sudo"), "{text}");
    assert!(text.contains("bash.hard_deny"), "{text}");
    assert!(text.contains("sudo rm -rf /"), "the request: {text}");
    assert!(
        text.contains("command matches a non-overridable deny rule"),
        "the reason: {text}"
    );
    assert!(text.contains("blocked"), "{text}");
    assert!(
        text.contains("No rule came before the deciding one."),
        "{text}"
    );

    let text = stdout(&run_expecting(
        &mut sandbox.gavel(&["explain", "c6-escape"]),
        0,
    ));
    assert!(text.contains("path.outside_workspace"), "{text}");
    assert!(text.contains("../outside/secret.txt"), "{text}");
    assert!(text.contains("outside the workspace"), "{text}");
}

#[test]
fn explain_write_call_lists_the_earlier_rules_that_did_not_match() {
    let sandbox = mixed();
    let text = stdout(&run_expecting(
        &mut sandbox.gavel(&["explain", "c3-write-rejected"]),
        0,
    ));
    assert!(
        text.contains("Rules tried before the deciding one:"),
        "{text}"
    );
    for rule in [
        "bash.hard_deny",
        "path.outside_workspace",
        "path.read_allow",
    ] {
        assert!(
            text.contains(&format!("`{rule}` did not match")),
            "{rule}: {text}"
        );
    }
    assert!(text.contains("path.write_requires_approval"), "{text}");
    assert!(text.contains("rejected"), "{text}");
    assert!(text.contains("rejected.txt"), "{text}");

    let value = json(&run_expecting(
        &mut sandbox.gavel(&["explain", "c3-write-rejected", "--json"]),
        0,
    ));
    assert_eq!(value["rule_id"], "path.write_requires_approval");
    assert_eq!(value["approval"], "rejected");
    assert_eq!(value["status"], "blocked");
    assert_eq!(value["arguments"]["path"], "rejected.txt");
    let trace: Vec<(&str, bool)> = value["trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["rule_id"].as_str().unwrap(),
                t["matched"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        trace,
        [
            ("bash.hard_deny", false),
            ("bash.self_approval", false),
            ("path.protected", false),
            ("path.outside_workspace", false),
            ("mcp.definition_changed", false),
            ("path.read_allow", false),
            ("path.write_requires_approval", true),
        ]
    );
    assert_eq!(value["result"]["status"], "blocked");
}

#[test]
fn explain_unknown_call_is_an_error() {
    let sandbox = mixed();
    let output = run_expecting(&mut sandbox.gavel(&["explain", "nope"]), 2);
    assert!(
        stderr(&output).contains("no call `nope`"),
        "{}",
        stderr(&output)
    );
}

/// `gavel verify --export FILE --json EXTRA...`: the exit code and report.
fn verify_export(sandbox: &Sandbox, file: &std::path::Path, extra: &[&str]) -> (i32, Value) {
    let output = sandbox
        .gavel(&["verify", "--json", "--export", file.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    let exit = crate::support::code(&output);
    assert!(exit == 0 || exit == 1, "{}", stderr(&output));
    (exit, json(&output))
}

/// Writes `lines` as a JSON-lines file `name` in the sandbox.
fn write_lines(sandbox: &Sandbox, name: &str, lines: &[Value]) -> std::path::PathBuf {
    let path = sandbox.root.join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn whole_export_verifies_as_a_chain_without_the_database() {
    let sandbox = mixed();
    let output = run_expecting(&mut sandbox.gavel(&["export"]), 0);
    let export = sandbox.root.join("all.jsonl");
    std::fs::write(&export, &output.stdout).unwrap();
    let lines = json_lines(&output);
    let head = crate::store::assert_intact(&sandbox, &[])["head"].clone();
    // The database is gone: the export alone verifies.
    std::fs::remove_file(&sandbox.db).unwrap();
    let (exit, report) = verify_export(&sandbox, &export, &[]);
    assert_eq!(exit, 0, "{report}");
    assert_eq!(report["whole_chain"], true);
    assert_eq!(report["rows"], json!(lines.len() - 1));
    assert_eq!(report["head"], head);

    // An edited payload (and its parsed copy) at seq 5.
    let mut edited = lines.clone();
    let raw = edited[5]["payload_raw"]
        .as_str()
        .unwrap()
        .replace("path", "paht");
    edited[5]["payload"] = serde_json::from_str(&raw).unwrap();
    edited[5]["payload_raw"] = raw.into();
    let file = write_lines(&sandbox, "edited.jsonl", &edited);
    let (exit, report) = verify_export(&sandbox, &file, &[]);
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "content_mismatch", "{report}");
    assert_eq!(report["first_bad_seq"], 5, "{report}");

    // Only the readable copy edited: the stored bytes disagree with it.
    let mut edited = lines.clone();
    edited[3]["payload"]["arguments"] = json!({"path": "other.txt"});
    let file = write_lines(&sandbox, "readable.jsonl", &edited);
    let (exit, report) = verify_export(&sandbox, &file, &[]);
    assert_eq!(
        (exit, report["first_bad_seq"].clone()),
        (1, json!(3)),
        "{report}"
    );

    // A dropped line.
    let mut dropped = lines.clone();
    dropped.remove(7);
    let file = write_lines(&sandbox, "dropped.jsonl", &dropped);
    let (exit, report) = verify_export(&sandbox, &file, &[]);
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "seq_gap", "{report}");
    assert_eq!(report["first_bad_seq"], 7, "{report}");

    // A filtered export passed off as whole has gaps.
    let mut lied = lines.clone();
    lied.retain(|l| l["record"] != "event" || l["tool"] == "bash");
    let file = write_lines(&sandbox, "lied.jsonl", &lied);
    let (exit, report) = verify_export(&sandbox, &file, &[]);
    assert_eq!(
        (exit, report["problem"].clone()),
        (1, json!("seq_gap")),
        "{report}"
    );
}

#[test]
fn whole_export_carries_the_stored_checkpoints_and_a_cut_tail_fails_them() {
    let sandbox = mixed();
    let key = sandbox.root.join("k");
    run_expecting(sandbox.bare().args(["keygen", "--out"]).arg(&key), 0);
    run_expecting(
        &mut sandbox.gavel(&["checkpoint", "--key", key.to_str().unwrap()]),
        0,
    );
    let lines = json_lines(&run_expecting(&mut sandbox.gavel(&["export"]), 0));
    assert_eq!(lines[1]["record"], "checkpoint");
    let public = format!("{}.pub", key.display());
    let file = write_lines(&sandbox, "all.jsonl", &lines);
    let (exit, report) = verify_export(&sandbox, &file, &["--public-key", &public]);
    assert_eq!(exit, 0, "{report}");
    assert_eq!(report["stored_checkpoints"], 1);
    assert_eq!(report["signature_checked"], true);
    let mut cut = lines.clone();
    cut.truncate(lines.len() - 2);
    let file = write_lines(&sandbox, "cut.jsonl", &cut);
    let (exit, report) = verify_export(&sandbox, &file, &[]);
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "checkpoint_truncated", "{report}");
}

#[test]
fn filtered_export_honours_the_filters_says_so_and_verifies_leaf_by_leaf() {
    let sandbox = mixed();
    let output = run_expecting(&mut sandbox.gavel(&["export", "--tool", "bash"]), 0);
    let lines = json_lines(&output);
    assert_eq!(lines[0]["record"], "header");
    assert_eq!(lines[0]["whole_chain"], false);
    assert_eq!(lines[0]["selection"]["tool"], "bash");
    let calls: std::collections::BTreeSet<&str> = lines[1..]
        .iter()
        .map(|l| l["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        calls.into_iter().collect::<Vec<_>>(),
        ["c4-bash-cancelled", "c5-sudo", "c8-exit-3"]
    );
    let file = write_lines(&sandbox, "bash.jsonl", &lines);
    let (exit, report) = verify_export(&sandbox, &file, &[]);
    assert_eq!(exit, 0, "{report}");
    assert_eq!(report["whole_chain"], false);
    assert_eq!(report["rows"], json!(lines.len() - 1));
    assert!(report.get("head").is_none(), "{report}");
    let human = stdout(&run_expecting(
        &mut sandbox.gavel(&["verify", "--export", file.to_str().unwrap()]),
        0,
    ));
    assert!(human.contains("not a whole chain"), "{human}");

    // --limit and --since are honoured too.
    let limited = json_lines(&run_expecting(
        &mut sandbox.gavel(&["export", "--limit", "1"]),
        0,
    ));
    assert!(limited[1..].iter().all(|l| l["call_id"] == "c1-read"));
    let future = json_lines(&run_expecting(
        &mut sandbox.gavel(&["export", "--since", "2999-01-01"]),
        0,
    ));
    assert_eq!(future.len(), 1, "only the header");

    // An edited line in a filtered export is caught at its seq.
    let mut edited = lines.clone();
    let seq = edited[2]["seq"].as_u64().unwrap();
    edited[2]["ts_us"] = json!(edited[2]["ts_us"].as_i64().unwrap() + 1);
    let file = write_lines(&sandbox, "edited.jsonl", &edited);
    let (exit, report) = verify_export(&sandbox, &file, &[]);
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "content_mismatch", "{report}");
    assert_eq!(report["first_bad_seq"], seq, "{report}");

    // A checkpoint cannot be proven from a selection.
    let err = crate::support::assert_one_line_error(&mut sandbox.gavel(&[
        "verify",
        "--export",
        file.to_str().unwrap(),
        "--checkpoint",
        file.to_str().unwrap(),
    ]));
    assert!(err.contains("filtered"), "{err}");
}

#[test]
fn csv_export_neutralizes_a_leading_tab_and_cr_too() {
    let sandbox = Sandbox::new();
    for (id, tool) in [
        ("t1", "\tcmd"),
        ("t2", "\rcmd"),
        ("t3", "=1+1"),
        ("t4", "@x"),
    ] {
        run_expecting(&mut sandbox.gavel(&["run", tool, "{}", "--call-id", id]), 3);
    }
    let csv = stdout(&run_expecting(
        &mut sandbox.gavel(&["export", "--format", "csv"]),
        0,
    ));
    let records = parse_csv(&csv);
    let tools: Vec<&str> = records[1..]
        .iter()
        .filter(|r| r[3] == "decision")
        .map(|r| r[5].as_str())
        .collect();
    assert_eq!(tools, ["'\tcmd", "'\rcmd", "'=1+1", "'@x"]);
}

#[test]
fn explain_says_when_a_recorded_policy_text_fails_its_digest() {
    let sandbox = mixed();
    let conn = Connection::open(&sandbox.db).unwrap();
    conn.execute_batch(
        "DROP TRIGGER policies_no_update;
         UPDATE policies SET source = replace(source, 'deny', 'allow');",
    )
    .unwrap();
    drop(conn);
    let text = stdout(&run_expecting(
        &mut sandbox.gavel(&["explain", "c3-write-rejected"]),
        0,
    ));
    assert!(text.contains("does not match its digest"), "{text}");
    assert!(!text.contains("was not recorded"), "{text}");
    let value = json(&run_expecting(
        &mut sandbox.gavel(&["explain", "c3-write-rejected", "--json"]),
        0,
    ));
    assert_eq!(value["policy_text"], "tampered");
}

#[test]
fn the_export_of_a_deeply_nested_honest_call_verifies() {
    // Arguments as deep as gavel reads at all: the export line holds them
    // one level deeper than the database does.
    let sandbox = Sandbox::new();
    let depth = 125;
    let args = format!(
        r#"{{"path":"a.txt","x":{}1{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let out = sandbox
        .gavel(&["run", "read_file", &args, "--json"])
        .output()
        .unwrap();
    assert!(out.status.code().is_some(), "{}", stderr(&out));
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
    let export = run_expecting(&mut sandbox.gavel(&["export"]), 0);
    let file = sandbox.root.join("deep.jsonl");
    std::fs::write(&file, &export.stdout).unwrap();
    let (exit, report) = verify_export(&sandbox, &file, &[]);
    assert_eq!((exit, &report["ok"]), (0, &json!(true)), "{report}");

    // A line nested past any payload's depth is refused, not read.
    let text = String::from_utf8(export.stdout).unwrap();
    let deeper = text
        .replacen(&"[".repeat(depth), &"[".repeat(depth + 200), 1)
        .replacen(&"]".repeat(depth), &"]".repeat(depth + 200), 1);
    std::fs::write(&file, deeper).unwrap();
    let (exit, report) = verify_export(&sandbox, &file, &[]);
    assert_eq!(exit, 1, "{report}");
}
