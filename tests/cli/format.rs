//! Record format 2 and the logs written before it: a format-1 log made by
//! the last release (fixtures/v1/, dumped as SQL text from the file that
//! binary wrote) verifies as it is, takes new calls as format 2 after one
//! chained `format` row, and verifies again, by gavel and by the
//! independent scripts/verify_chain.py, as a database and as an export.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::Value;

use crate::store::{assert_tampered, attacker, both_agree, both_agree_db, sha256_file};
use crate::support::{Sandbox, json_lines, run_expecting, stdout};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/v1")
        .join(name)
}

/// The sandbox's database, restored from the format-1 fixture: the bytes
/// of every row as the old release stored them, its pragmas, WAL mode.
fn v1_log() -> Sandbox {
    let sandbox = Sandbox::new();
    let dump = std::fs::read_to_string(fixture("audit.sql")).unwrap();
    let conn = Connection::open(&sandbox.db).unwrap();
    conn.execute_batch(&dump).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(conn);
    sandbox
}

/// `--public-key v1.key.pub --checkpoint v1.cp`: the old release's signed checkpoint.
fn signed() -> Vec<std::ffi::OsString> {
    vec![
        "--public-key".into(),
        fixture("v1.key.pub").into(),
        "--checkpoint".into(),
        fixture("v1.cp").into(),
    ]
}

fn os(args: &[std::ffi::OsString]) -> Vec<&std::ffi::OsStr> {
    args.iter().map(|a| a.as_os_str()).collect()
}

/// Both verifiers, plain and with the old checkpoint and key; returns gavel's plain report.
fn verified(sandbox: &Sandbox, what: &str) -> Value {
    let plain = both_agree_db(sandbox, what, &[], &sandbox.db);
    assert_eq!(plain["ok"], true, "{what}: {plain}");
    let with_key = both_agree_db(sandbox, what, &os(&signed()), &sandbox.db);
    assert_eq!(with_key["ok"], true, "{what}: {with_key}");
    assert_eq!(with_key["checkpoint"]["holds"], true, "{what}: {with_key}");
    assert_eq!(with_key["signature_checked"], true);
    plain
}

fn rows(sandbox: &Sandbox) -> Vec<(u64, String, Option<String>, Value)> {
    let conn = Connection::open(&sandbox.db).unwrap();
    conn.prepare("SELECT seq, kind, user, payload FROM events ORDER BY seq")
        .unwrap()
        .query_map([], |r| {
            let payload: Vec<u8> = r.get(3)?;
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                serde_json::from_slice(&payload).unwrap(),
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_v1_log_from_the_last_release_verifies_takes_new_calls_and_verifies_again() {
    let sandbox = v1_log();
    let before = verified(&sandbox, "the v1 log as the old release left it");
    assert_eq!(before["rows"], 21);
    // Reading it changes nothing: no migration, no format row.
    let digest = sha256_file(&sandbox.db);
    let calls = json_lines(&run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0));
    assert_eq!(calls.len(), 6);
    assert!(calls.iter().all(|c| c["principal"].is_null()));
    run_expecting(&mut sandbox.gavel(&["explain", "v1-ask"]), 0);
    assert_eq!(sha256_file(&sandbox.db), digest);

    // New calls: one `format` row, in format 1, then format-2 rows.
    crate::store::record_reads_from(&sandbox, 1, 2);
    let after = verified(&sandbox, "the v1 log continued as v2");
    assert_eq!(after["rows"], 21 + 1 + 6);
    let rows = rows(&sandbox);
    let switches: Vec<&(u64, String, Option<String>, Value)> =
        rows.iter().filter(|r| r.1 == "format").collect();
    assert_eq!(switches.len(), 1, "one switch, however many writers came");
    assert_eq!(switches[0].0, 22);
    assert_eq!(switches[0].3["format"], 2);
    assert_eq!(switches[0].3["previous"], 1);
    assert!(switches[0].2.is_none(), "the switch row is format 1");
    assert!(rows.iter().filter(|r| r.0 < 22).all(|r| r.2.is_none()));
    assert!(rows.iter().filter(|r| r.0 > 22).all(|r| r.2.is_some()));

    // The old calls and the new are one listing; the filters see the new.
    let calls = json_lines(&run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0));
    assert_eq!(calls.len(), 8);
    let cli = json_lines(&run_expecting(
        &mut sandbox.gavel(&["log", "--json", "--client", "cli"]),
        0,
    ));
    assert_eq!(cli.len(), 2);

    // Exports of the mixed log: whole (verified as a chain), and filtered.
    for (name, filter) in [("whole", None), ("filtered", Some("read_file"))] {
        let mut args = vec!["export"];
        if let Some(tool) = filter {
            args.extend(["--tool", tool]);
        }
        let export = sandbox.root.join(format!("{name}.jsonl"));
        let text = stdout(&run_expecting(&mut sandbox.gavel(&args), 0));
        std::fs::write(&export, &text).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["format"], 1, "the log's own format");
        let formats: Vec<i64> = lines[1..]
            .iter()
            .filter(|l| l["record"] == "event")
            .map(|l| l["format"].as_i64().unwrap())
            .collect();
        assert!(formats.contains(&1) && formats.contains(&2), "{formats:?}");
        let report = both_agree(&sandbox, name, &["--export".as_ref(), export.as_os_str()]);
        assert_eq!(report["ok"], true, "{name}: {report}");
    }
}

#[test]
fn tampering_across_the_format_switch_is_caught_at_its_row() {
    let fresh = || {
        let sandbox = v1_log();
        crate::store::record_reads_from(&sandbox, 1, 1);
        sandbox
    };
    let cases: [(&str, &str, Option<u64>); 5] = [
        // A v1 row does not hash the provenance columns: one set there is refused.
        (
            "UPDATE events SET user = 'mallory' WHERE seq = 3",
            "content_mismatch",
            Some(3),
        ),
        // A v2 row hashes them.
        (
            "UPDATE events SET host = 'elsewhere' WHERE seq = 24",
            "content_mismatch",
            Some(24),
        ),
        // The switch row's own bytes are chained like any other.
        (
            "UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT), '\"format\":2', '\"format\":3') AS BLOB) WHERE seq = 22",
            "content_mismatch",
            Some(22),
        ),
        // Without the switch row, the rows after it no longer follow.
        ("DELETE FROM events WHERE seq = 22", "seq_gap", Some(22)),
        // Claiming the whole log is format 2 changes its genesis.
        (
            "DROP TRIGGER log_meta_no_update; UPDATE log_meta SET format = 2",
            "identity_mismatch",
            None,
        ),
    ];
    for (statement, problem, seq) in cases {
        let sandbox = fresh();
        attacker(&sandbox.db).execute_batch(statement).unwrap();
        assert_tampered(&sandbox, &[], problem, seq);
        both_agree_db(&sandbox, statement, &[], &sandbox.db);
    }
}

#[test]
fn documented_vectors_are_what_the_independent_verifier_prints() {
    let Ok(output) = std::process::Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/verify_chain.py"))
        .arg("--vector")
        .output()
    else {
        eprintln!("note: python3 is not on PATH; skipping");
        return;
    };
    let printed = String::from_utf8(output.stdout).unwrap();
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/record-format.md"),
    )
    .unwrap();
    for line in printed.lines().filter(|l| l.contains(" = ")) {
        let value = line.split(" = ").nth(1).unwrap();
        assert!(doc.contains(value), "docs/record-format.md lacks {line}");
    }
    assert_eq!(printed.matches("genesis =").count(), 2, "{printed}");
}

/// A call that asks, rejected, in a log found in `mode`: answered at once
/// (not after the 30 s busy timeout), recorded, and the log still verifies
/// (both verifiers) and is in WAL mode from then on.
fn ask_in_journal_mode(sandbox: &Sandbox, what: &str) {
    let started = std::time::Instant::now();
    let out = run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "write_file",
            r#"{"path":"c.txt","content":"no"}"#,
            "--reject",
            "--call-id",
            "asked",
            "--json",
        ]),
        3,
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{what}: took {:?}",
        started.elapsed()
    );
    let line = json_lines(&out).pop().unwrap();
    assert_eq!(line["recorded"], true, "{what}: {line}");
    assert_eq!(line["approval"], "rejected", "{what}: {line}");
    let events = json_lines(&run_expecting(&mut sandbox.gavel(&["export"]), 0));
    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e["call_id"] == "asked")
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["request", "decision", "approval", "result"],
        "{what}"
    );
    let plain = both_agree_db(sandbox, what, &[], &sandbox.db);
    assert_eq!(plain["ok"], true, "{what}: {plain}");
    let conn = Connection::open(&sandbox.db).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal", "{what}");
}

#[test]
fn an_asked_call_deadlocked_on_a_log_in_rollback_journal_mode() {
    // The format-1 fixture as `sqlite3` loads it: journal mode `delete`.
    let sandbox = Sandbox::new();
    let dump = std::fs::read_to_string(fixture("audit.sql")).unwrap();
    let conn = Connection::open(&sandbox.db).unwrap();
    conn.execute_batch(&dump).unwrap();
    drop(conn);
    ask_in_journal_mode(&sandbox, "v1 dump loaded as shipped");

    // A log gavel made, switched to each rollback journal mode.
    for mode in ["delete", "truncate", "persist"] {
        let sandbox = Sandbox::new();
        run_expecting(
            &mut sandbox.gavel(&["run", "read_file", r#"{"path":"notes.txt"}"#]),
            0,
        );
        let conn = Connection::open(&sandbox.db).unwrap();
        let now: String = conn
            .query_row(&format!("PRAGMA journal_mode = {mode}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(now, mode);
        drop(conn);
        ask_in_journal_mode(&sandbox, mode);
    }
}
