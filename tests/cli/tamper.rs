//! The tamper matrix: raw SQL against a real database file, with the
//! append-only triggers dropped first as an attacker would, and what
//! `gavel verify --json` says about each edit. The chain catches every edit
//! that leaves a stored hash disagreeing with the content, at the exact seq;
//! a signed checkpoint catches a cut tail and a recomputed history.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::store::{assert_intact, assert_tampered, attacker, event_count, record_reads, verify};
use crate::support::{Sandbox, run_expecting, stdout};

/// A sandbox holding four allowed reads, `r1`..`r4`: twelve events, the
/// decisions at seq 2, 5, 8 and 11.
fn four_reads() -> Sandbox {
    let sandbox = Sandbox::new();
    record_reads(&sandbox, 4);
    assert_eq!(event_count(&sandbox.db), 12);
    assert_intact(&sandbox, &[]);
    sandbox
}

/// Writes a key pair to `ROOT/NAME` and `ROOT/NAME.pub`.
fn keygen(sandbox: &Sandbox, name: &str) -> (PathBuf, PathBuf) {
    let key = sandbox.root.join(name);
    run_expecting(
        sandbox
            .bare()
            .args(["keygen", "--name", name, "--out"])
            .arg(&key),
        0,
    );
    let public = sandbox.root.join(format!("{name}.pub"));
    assert!(public.exists());
    (key, public)
}

/// Signs a checkpoint of the log as it is now with `key`; returns its file.
fn checkpoint(sandbox: &Sandbox, key: &Path, file: &str) -> PathBuf {
    let output = run_expecting(
        &mut sandbox.gavel(&["checkpoint", "--key", key.to_str().unwrap()]),
        0,
    );
    let path = sandbox.root.join(file);
    std::fs::write(&path, stdout(&output)).unwrap();
    path
}

/// `--checkpoint CP --public-key PUB` as arguments.
fn with_checkpoint<'a>(cp: &'a Path, public: &'a Path) -> [&'a str; 4] {
    [
        "--checkpoint",
        cp.to_str().unwrap(),
        "--public-key",
        public.to_str().unwrap(),
    ]
}

// The encoding of docs/record-format.md, written here from the document
// alone, so the test does not trust gavel's own hashing.

fn lp(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn opt(out: &mut Vec<u8>, value: &Option<String>) {
    match value {
        None => out.push(0),
        Some(text) => {
            out.push(1);
            lp(out, text.as_bytes());
        }
    }
}

/// One stored row, every column.
#[derive(Debug, Clone)]
struct Row {
    seq: u64,
    log_id: Vec<u8>,
    ts_us: i64,
    kind: String,
    call_id: String,
    tool: Option<String>,
    action: Option<String>,
    rule_id: Option<String>,
    approval: Option<String>,
    status: Option<String>,
    payload: Vec<u8>,
    /// The format-2 provenance columns: user, host, client, session, agent.
    who: [Option<String>; 5],
}

impl Row {
    /// The leaf of a row of a format-2 log (every log these tests make).
    fn leaf(&self) -> [u8; 32] {
        let mut enc = vec![0u8];
        lp(&mut enc, b"gavel/event/v2");
        enc.extend_from_slice(&self.seq.to_be_bytes());
        lp(&mut enc, &self.log_id);
        enc.extend_from_slice(&self.ts_us.to_be_bytes());
        lp(&mut enc, self.kind.as_bytes());
        lp(&mut enc, self.call_id.as_bytes());
        for field in [
            &self.tool,
            &self.action,
            &self.rule_id,
            &self.approval,
            &self.status,
        ] {
            opt(&mut enc, field);
        }
        for field in &self.who {
            opt(&mut enc, field);
        }
        lp(&mut enc, &self.payload);
        Sha256::digest(&enc).into()
    }
}

fn link(previous: &[u8], leaf: &[u8; 32]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"gavel/chain/v1");
    hasher.update(previous);
    hasher.update(leaf);
    hasher.finalize().into()
}

fn rows(conn: &Connection) -> Vec<Row> {
    conn.prepare(
        "SELECT seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status,
                payload, user, host, client, session, agent FROM events ORDER BY seq",
    )
    .unwrap()
    .query_map([], |r| {
        Ok(Row {
            seq: r.get(0)?,
            log_id: r.get(1)?,
            ts_us: r.get(2)?,
            kind: r.get(3)?,
            call_id: r.get(4)?,
            tool: r.get(5)?,
            action: r.get(6)?,
            rule_id: r.get(7)?,
            approval: r.get(8)?,
            status: r.get(9)?,
            payload: r.get(10)?,
            who: [r.get(11)?, r.get(12)?, r.get(13)?, r.get(14)?, r.get(15)?],
        })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// Rewrites every row's `leaf` and `chain` from `from_seq` on, as an
/// attacker who knows the format would after editing history.
fn recompute_from(conn: &Connection, from_seq: u64) {
    let mut previous: Vec<u8> = if from_seq == 1 {
        conn.query_row("SELECT genesis FROM log_meta", [], |r| r.get(0))
            .unwrap()
    } else {
        conn.query_row(
            "SELECT chain FROM events WHERE seq = ?1",
            [from_seq - 1],
            |r| r.get(0),
        )
        .unwrap()
    };
    for row in rows(conn).into_iter().filter(|r| r.seq >= from_seq) {
        let leaf = row.leaf();
        let chain = link(&previous, &leaf);
        conn.execute(
            "UPDATE events SET leaf = ?1, chain = ?2 WHERE seq = ?3",
            params![&leaf[..], &chain[..], row.seq],
        )
        .unwrap();
        previous = chain.to_vec();
    }
}

#[test]
fn recomputation_from_the_document_matches_the_stored_hashes() {
    let sandbox = four_reads();
    let conn = Connection::open(&sandbox.db).unwrap();
    let stored: Vec<(Vec<u8>, Vec<u8>)> = conn
        .prepare("SELECT leaf, chain FROM events ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut previous: Vec<u8> = conn
        .query_row("SELECT genesis FROM log_meta", [], |r| r.get(0))
        .unwrap();
    for (row, (leaf, chain)) in rows(&conn).iter().zip(&stored) {
        assert_eq!(&row.leaf()[..], &leaf[..], "leaf of seq {}", row.seq);
        previous = link(&previous, &row.leaf()).to_vec();
        assert_eq!(&previous, chain, "chain of seq {}", row.seq);
    }
}

#[test]
fn changed_rule_id_in_the_payload_is_a_content_mismatch_at_its_seq() {
    let sandbox = four_reads();
    attacker(&sandbox.db)
        .execute(
            "UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT),
                 'path.read_allow', 'path.read_alloW') AS BLOB) WHERE seq = 5",
            [],
        )
        .unwrap();
    assert_tampered(&sandbox, &[], "content_mismatch", Some(5));
}

#[test]
fn changed_reason_in_the_payload_is_a_content_mismatch_at_its_seq() {
    let sandbox = four_reads();
    attacker(&sandbox.db)
        .execute(
            "UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT),
                 'only reads', 'was approved to read') AS BLOB) WHERE seq = 8",
            [],
        )
        .unwrap();
    assert_tampered(&sandbox, &[], "content_mismatch", Some(8));
}

#[test]
fn changed_typed_column_is_a_content_mismatch_at_its_seq() {
    let sandbox = four_reads();
    attacker(&sandbox.db)
        .execute(
            "UPDATE events SET action = 'deny', rule_id = 'bash.hard_deny' WHERE seq = 11",
            [],
        )
        .unwrap();
    assert_tampered(&sandbox, &[], "content_mismatch", Some(11));
}

#[test]
fn changed_timestamp_is_a_content_mismatch_at_its_seq() {
    let sandbox = four_reads();
    attacker(&sandbox.db)
        .execute(
            "UPDATE events SET ts_us = ts_us - 3600000000 WHERE seq = 4",
            [],
        )
        .unwrap();
    assert_tampered(&sandbox, &[], "content_mismatch", Some(4));
}

#[test]
fn deleted_middle_row_is_a_seq_gap_at_its_seq() {
    let sandbox = four_reads();
    attacker(&sandbox.db)
        .execute("DELETE FROM events WHERE seq = 6", [])
        .unwrap();
    assert_tampered(&sandbox, &[], "seq_gap", Some(6));
}

#[test]
fn deleted_first_row_is_a_seq_gap_at_seq_1() {
    let sandbox = four_reads();
    attacker(&sandbox.db)
        .execute("DELETE FROM events WHERE seq = 1", [])
        .unwrap();
    assert_tampered(&sandbox, &[], "seq_gap", Some(1));
}

#[test]
fn appended_forged_row_is_a_content_mismatch_at_its_seq() {
    let sandbox = four_reads();
    // A copy of the last decision, pasted at the end with its old hashes.
    attacker(&sandbox.db)
        .execute(
            "INSERT INTO events SELECT 13, log_id, ts_us, kind, 'forged', tool, action, rule_id,
                 approval, status, payload, leaf, chain, user, host, client, session, agent FROM events WHERE seq = 11",
            [],
        )
        .unwrap();
    assert_tampered(&sandbox, &[], "content_mismatch", Some(13));
}

#[test]
fn row_inserted_in_the_middle_with_its_own_hashes_is_caught_at_the_next_seq() {
    let sandbox = four_reads();
    let conn = attacker(&sandbox.db);
    // Make room at seq 7, then insert a row whose leaf and chain are right
    // for its place; the rows after it still carry their old hashes.
    conn.execute_batch(
        "UPDATE events SET seq = seq + 1000 WHERE seq >= 7;
         UPDATE events SET seq = seq - 999 WHERE seq >= 1000;
         INSERT INTO events SELECT 7, log_id, ts_us, kind, 'forged', tool, action, rule_id,
             approval, status, payload, leaf, chain, user, host, client, session, agent FROM events WHERE seq = 5;",
    )
    .unwrap();
    let forged = rows(&conn).into_iter().find(|r| r.seq == 7).unwrap();
    let previous: Vec<u8> = conn
        .query_row("SELECT chain FROM events WHERE seq = 6", [], |r| r.get(0))
        .unwrap();
    let leaf = forged.leaf();
    conn.execute(
        "UPDATE events SET leaf = ?1, chain = ?2 WHERE seq = 7",
        params![&leaf[..], &link(&previous, &leaf)[..]],
    )
    .unwrap();
    drop(conn);
    assert_eq!(event_count(&sandbox.db), 13);
    assert_tampered(&sandbox, &[], "content_mismatch", Some(8));
}

#[test]
fn row_inserted_with_a_gap_in_seq_is_a_seq_gap() {
    let sandbox = four_reads();
    attacker(&sandbox.db)
        .execute(
            "INSERT INTO events SELECT 20, log_id, ts_us, kind, call_id, tool, action, rule_id,
                 approval, status, payload, leaf, chain, user, host, client, session, agent FROM events WHERE seq = 12",
            [],
        )
        .unwrap();
    assert_tampered(&sandbox, &[], "seq_gap", Some(13));
}

#[test]
fn swapped_rows_are_a_content_mismatch_at_the_first() {
    let sandbox = four_reads();
    // Rows 5 and 8 (two decisions) trade everything but their seq.
    attacker(&sandbox.db)
        .execute_batch(
            "UPDATE events SET seq = 100 WHERE seq = 5;
             UPDATE events SET seq = 5 WHERE seq = 8;
             UPDATE events SET seq = 8 WHERE seq = 100;",
        )
        .unwrap();
    assert_tampered(&sandbox, &[], "content_mismatch", Some(5));
}

#[test]
fn swapped_payloads_are_a_content_mismatch_at_the_first() {
    let sandbox = four_reads();
    // The requests of `r1` (seq 1) and `r2` (seq 4) trade payloads.
    attacker(&sandbox.db)
        .execute_batch(
            "UPDATE events SET payload = CASE seq
                 WHEN 1 THEN (SELECT payload FROM events WHERE seq = 4)
                 ELSE (SELECT payload FROM events WHERE seq = 1) END
             WHERE seq IN (1, 4);",
        )
        .unwrap();
    let conn = Connection::open(&sandbox.db).unwrap();
    let first: Vec<u8> = conn
        .query_row("SELECT payload FROM events WHERE seq = 1", [], |r| r.get(0))
        .unwrap();
    assert!(String::from_utf8(first).unwrap().contains("\"r2\""));
    assert_tampered(&sandbox, &[], "content_mismatch", Some(1));
}

#[test]
fn cut_tail_passes_the_chain_but_fails_the_checkpoint() {
    let sandbox = four_reads();
    let (key, public) = keygen(&sandbox, "k");
    let cp = checkpoint(&sandbox, &key, "cp");
    attacker(&sandbox.db)
        .execute("DELETE FROM events WHERE seq > 9", [])
        .unwrap();
    // The checkpoint stored in the database catches it without the file...
    let (exit, report) = verify(&sandbox, &[]);
    assert_eq!(
        (exit, report["problem"].as_str()),
        (1, Some("checkpoint_truncated")),
        "{report}"
    );
    // ...until the attacker deletes that too: the chain alone cannot see
    // that rows are missing at the end; the signed file still can.
    Connection::open(&sandbox.db)
        .unwrap()
        .execute_batch("DROP TRIGGER checkpoints_no_delete; DELETE FROM checkpoints;")
        .unwrap();
    assert_intact(&sandbox, &[]);
    let (exit, report) = verify(&sandbox, &with_checkpoint(&cp, &public));
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "checkpoint_truncated", "{report}");
    assert_eq!(report["first_bad_seq"], 10, "{report}");
    assert_eq!(report["checkpoint"]["size"], 12, "{report}");
    assert_eq!(report["checkpoint"]["holds"], false, "{report}");
    assert_eq!(report["signature_checked"], true, "{report}");
}

#[test]
fn recomputed_history_passes_the_chain_but_fails_the_checkpoint() {
    let sandbox = four_reads();
    let (key, public) = keygen(&sandbox, "k");
    let cp = checkpoint(&sandbox, &key, "cp");
    let conn = attacker(&sandbox.db);
    conn.execute(
        "UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT),
             'only reads', 'was told to read') AS BLOB) WHERE seq = 5",
        [],
    )
    .unwrap();
    recompute_from(&conn, 5);
    drop(conn);
    let (exit, report) = verify(&sandbox, &[]);
    assert_eq!(
        (exit, report["problem"].as_str()),
        (1, Some("checkpoint_root_mismatch")),
        "{report}"
    );
    Connection::open(&sandbox.db)
        .unwrap()
        .execute_batch("DROP TRIGGER checkpoints_no_delete; DELETE FROM checkpoints;")
        .unwrap();
    // A consistent rewrite with the stored checkpoint gone: the chain verifies on its own.
    assert_intact(&sandbox, &[]);
    let (exit, report) = verify(&sandbox, &with_checkpoint(&cp, &public));
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "checkpoint_root_mismatch", "{report}");
    assert_eq!(report["checkpoint"]["holds"], false, "{report}");
}

#[test]
fn row_spliced_from_another_log_is_a_log_id_mismatch() {
    let sandbox = four_reads();
    let other = Sandbox::new();
    record_reads(&other, 4);
    let conn = attacker(&sandbox.db);
    conn.execute("ATTACH DATABASE ?1 AS other", [other.db.to_str().unwrap()])
        .unwrap();
    // Row 5 of the other log is the same kind of event, with valid hashes there.
    conn.execute_batch(
        "DELETE FROM events WHERE seq = 5;
         INSERT INTO events SELECT * FROM other.events WHERE seq = 5;
         DETACH DATABASE other;",
    )
    .unwrap();
    drop(conn);
    assert_tampered(&sandbox, &[], "log_id_mismatch", Some(5));
}

#[test]
fn whole_log_replaced_by_another_logs_rows_is_a_log_id_mismatch_at_seq_1() {
    let sandbox = four_reads();
    let other = Sandbox::new();
    record_reads(&other, 4);
    let conn = attacker(&sandbox.db);
    conn.execute("ATTACH DATABASE ?1 AS other", [other.db.to_str().unwrap()])
        .unwrap();
    conn.execute_batch(
        "DELETE FROM events;
         INSERT INTO events SELECT * FROM other.events;
         DETACH DATABASE other;",
    )
    .unwrap();
    drop(conn);
    assert_tampered(&sandbox, &[], "log_id_mismatch", Some(1));
}

#[test]
fn checkpoint_signed_by_another_key_is_refused() {
    let sandbox = four_reads();
    let (key, _) = keygen(&sandbox, "signer");
    let (_, stranger) = keygen(&sandbox, "stranger");
    let cp = checkpoint(&sandbox, &key, "cp");
    let (exit, report) = verify(&sandbox, &with_checkpoint(&cp, &stranger));
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "checkpoint_signature", "{report}");
    assert_eq!(report["ok"], false);
}

#[test]
fn checkpoint_with_an_edited_size_is_refused() {
    let sandbox = four_reads();
    let (key, public) = keygen(&sandbox, "k");
    let cp = checkpoint(&sandbox, &key, "cp");
    let note = std::fs::read_to_string(&cp).unwrap();
    std::fs::write(&cp, note.replacen("\n12\n", "\n9\n", 1)).unwrap();
    let (exit, report) = verify(&sandbox, &with_checkpoint(&cp, &public));
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "checkpoint_signature", "{report}");
}

#[test]
fn growth_past_a_checkpoint_is_fine() {
    let sandbox = four_reads();
    let (key, public) = keygen(&sandbox, "k");
    let cp = checkpoint(&sandbox, &key, "cp");
    run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "read_file",
            r#"{"path":"notes.txt"}"#,
            "--call-id",
            "later",
        ]),
        0,
    );
    let report = assert_intact(&sandbox, &with_checkpoint(&cp, &public));
    assert_eq!(report["rows"], 15);
    assert_eq!(
        report["checkpoint"],
        json!({"origin": report["checkpoint"]["origin"], "size": 12, "holds": true})
    );
    assert_eq!(report["signature_checked"], true);
    let origin = report["checkpoint"]["origin"].as_str().unwrap();
    assert!(origin.starts_with("gavel/"), "{origin}");
}

#[test]
fn checkpoint_of_another_log_is_refused() {
    let sandbox = four_reads();
    let other = Sandbox::new();
    record_reads(&other, 4);
    let (key, public) = keygen(&sandbox, "k");
    let output = run_expecting(
        &mut other.gavel(&["checkpoint", "--key", key.to_str().unwrap()]),
        0,
    );
    let cp = sandbox.root.join("other-cp");
    std::fs::write(&cp, stdout(&output)).unwrap();
    let (exit, report) = verify(&sandbox, &with_checkpoint(&cp, &public));
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "checkpoint_origin", "{report}");
}

#[test]
fn checkpoint_is_refused_for_a_tampered_log() {
    let sandbox = four_reads();
    let (key, _) = keygen(&sandbox, "k");
    attacker(&sandbox.db)
        .execute("UPDATE events SET ts_us = ts_us + 1 WHERE seq = 3", [])
        .unwrap();
    let output = run_expecting(
        &mut sandbox.gavel(&["checkpoint", "--key", key.to_str().unwrap()]),
        2,
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("content_mismatch at seq 3"), "{err}");
    assert!(output.stdout.is_empty());
}

#[test]
fn changed_log_identity_is_an_identity_mismatch() {
    let sandbox = four_reads();
    let conn = Connection::open(&sandbox.db).unwrap();
    conn.execute_batch(
        "DROP TRIGGER log_meta_no_update;
         UPDATE log_meta SET origin = 'gavel/someone-else';",
    )
    .unwrap();
    drop(conn);
    assert_tampered(&sandbox, &[], "identity_mismatch", None);
}

#[test]
fn reidentified_log_is_a_log_id_mismatch_at_seq_1() {
    let sandbox = four_reads();
    let conn = Connection::open(&sandbox.db).unwrap();
    // A new log id, with the origin and genesis that follow from it: every
    // row still carries the old id.
    let log_id = [7u8; 16];
    let origin = format!("gavel/{}", "07".repeat(16));
    let mut enc = Vec::new();
    lp(&mut enc, b"gavel/genesis/v1");
    lp(&mut enc, &log_id);
    lp(&mut enc, origin.as_bytes());
    enc.extend_from_slice(&2u32.to_be_bytes());
    let genesis: [u8; 32] = Sha256::digest(&enc).into();
    conn.execute_batch("DROP TRIGGER log_meta_no_update;")
        .unwrap();
    conn.execute(
        "UPDATE log_meta SET log_id = ?1, origin = ?2, genesis = ?3",
        params![&log_id[..], origin, &genesis[..]],
    )
    .unwrap();
    drop(conn);
    assert_tampered(&sandbox, &[], "log_id_mismatch", Some(1));
}

#[test]
fn deleted_log_identity_is_reported_as_tampered() {
    let sandbox = four_reads();
    let conn = Connection::open(&sandbox.db).unwrap();
    conn.execute_batch("DROP TRIGGER log_meta_no_delete; DELETE FROM log_meta;")
        .unwrap();
    drop(conn);
    let (exit, report) = verify(&sandbox, &[]);
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "identity_mismatch", "{report}");
}

// Stored checkpoint notes, the origin convention, unknown formats and the
// type rule.

/// RFC 6962 Merkle Tree Hash over `leaves`, from docs/checkpoints.md.
fn merkle_root(leaves: &[[u8; 32]]) -> [u8; 32] {
    match leaves.len() {
        0 => Sha256::digest(b"").into(),
        1 => leaves[0],
        n => {
            let mut k = 1;
            while k * 2 < n {
                k *= 2;
            }
            let mut hasher = Sha256::new();
            hasher.update([1u8]);
            hasher.update(merkle_root(&leaves[..k]));
            hasher.update(merkle_root(&leaves[k..]));
            hasher.finalize().into()
        }
    }
}

fn stored_leaves(conn: &Connection, size: u64) -> Vec<[u8; 32]> {
    rows(conn)
        .into_iter()
        .filter(|r| r.seq <= size)
        .map(|r| r.leaf())
        .collect()
}

#[test]
fn rewritten_history_with_a_fixed_root_column_is_caught_by_the_stored_note() {
    let sandbox = four_reads();
    let (key, public) = keygen(&sandbox, "k");
    checkpoint(&sandbox, &key, "cp");
    let conn = attacker(&sandbox.db);
    conn.execute(
        "UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT),
             'only reads', 'was told to read') AS BLOB) WHERE seq = 5",
        [],
    )
    .unwrap();
    recompute_from(&conn, 5);
    // The attacker also fixes the stored root column to the new history...
    let root = merkle_root(&stored_leaves(&conn, 12));
    conn.execute_batch("DROP TRIGGER checkpoints_no_update;")
        .unwrap();
    conn.execute("UPDATE checkpoints SET root = ?1", [&root[..]])
        .unwrap();
    drop(conn);
    // ...but the signed note in the same row still says the old root: no key needed.
    let (exit, report) = verify(&sandbox, &[]);
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "checkpoint_mismatch", "{report}");
    assert_eq!(report["first_bad_seq"], json!(null), "{report}");
    assert_eq!(report["rows"], 0, "{report}");
    assert_eq!(report["stored_checkpoints"], 1, "{report}");

    // Rewriting the note's body to match cannot be signed again: only the key tells.
    let conn = Connection::open(&sandbox.db).unwrap();
    let note: String = conn
        .query_row("SELECT note FROM checkpoints", [], |r| r.get(0))
        .unwrap();
    let mut lines: Vec<String> = note.split('\n').map(str::to_owned).collect();
    lines[2] = base64_std(&root);
    conn.execute("UPDATE checkpoints SET note = ?1", [lines.join("\n")])
        .unwrap();
    drop(conn);
    let report = assert_intact(&sandbox, &[]);
    assert_eq!(report["signature_checked"], false, "{report}");
    let public_arg = ["--public-key", public.to_str().unwrap()];
    let (exit, report) = verify(&sandbox, &public_arg);
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "checkpoint_signature", "{report}");
    assert_eq!(report["signature_checked"], true, "{report}");
}

/// Standard base64 with padding, as checkpoint notes write roots.
fn base64_std(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn public_key_without_a_checkpoint_file_checks_the_stored_notes() {
    let sandbox = four_reads();
    let (key, public) = keygen(&sandbox, "k");
    let (_, other) = keygen(&sandbox, "other");
    checkpoint(&sandbox, &key, "cp");
    let report = assert_intact(&sandbox, &["--public-key", public.to_str().unwrap()]);
    assert_eq!(report["signature_checked"], true, "{report}");
    assert_eq!(report["stored_checkpoints"], 1, "{report}");
    // A key that did not sign the stored note.
    let (exit, report) = verify(&sandbox, &["--public-key", other.to_str().unwrap()]);
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "checkpoint_signature", "{report}");
    // Either of two keys will do.
    assert_intact(
        &sandbox,
        &[
            "--public-key",
            other.to_str().unwrap(),
            "--public-key",
            public.to_str().unwrap(),
        ],
    );
    let human = stdout(&run_expecting(
        &mut sandbox.gavel(&["verify", "--public-key", public.to_str().unwrap()]),
        0,
    ));
    assert!(human.contains("signatures verified"), "{human}");
}

#[test]
fn stored_note_that_does_not_parse_is_a_checkpoint_mismatch() {
    let sandbox = four_reads();
    let (key, _) = keygen(&sandbox, "k");
    checkpoint(&sandbox, &key, "cp");
    let conn = Connection::open(&sandbox.db).unwrap();
    conn.execute_batch(
        "DROP TRIGGER checkpoints_no_update; UPDATE checkpoints SET note = 'nothing signed';",
    )
    .unwrap();
    drop(conn);
    assert_tampered(&sandbox, &[], "checkpoint_mismatch", None);
}

#[test]
fn stored_checkpoint_of_another_log_is_a_checkpoint_origin() {
    // Two logs with the same four calls have different leaves (the log id is
    // hashed into each), so plant a checkpoint of the other log at size 0,
    // whose root is the empty tree's in every log.
    let sandbox = four_reads();
    let other = Sandbox::new();
    let (key, _) = keygen(&other, "k");
    checkpoint(&other, &key, "cp");
    let note: String = Connection::open(&other.db)
        .unwrap()
        .query_row("SELECT note FROM checkpoints", [], |r| r.get(0))
        .unwrap();
    assert!(note.contains("\n0\n"), "{note}");
    let empty: [u8; 32] = Sha256::digest(b"").into();
    Connection::open(&sandbox.db)
        .unwrap()
        .execute(
            "INSERT INTO checkpoints (size, root, note, created_us) VALUES (0, ?1, ?2, 0)",
            params![&empty[..], note],
        )
        .unwrap();
    assert_tampered(&sandbox, &[], "checkpoint_origin", None);
}

#[test]
fn renamed_origin_with_recomputed_genesis_and_chain_is_caught() {
    let sandbox = four_reads();
    let (key, public) = keygen(&sandbox, "k");
    let cp = checkpoint(&sandbox, &key, "cp");
    let conn = Connection::open(&sandbox.db).unwrap();
    let log_id: Vec<u8> = conn
        .query_row("SELECT log_id FROM log_meta", [], |r| r.get(0))
        .unwrap();
    let rename = |conn: &Connection, origin: &str| {
        let mut enc = Vec::new();
        lp(&mut enc, b"gavel/genesis/v1");
        lp(&mut enc, &log_id);
        lp(&mut enc, origin.as_bytes());
        enc.extend_from_slice(&2u32.to_be_bytes());
        let genesis: [u8; 32] = Sha256::digest(&enc).into();
        conn.execute(
            "UPDATE log_meta SET origin = ?1, genesis = ?2",
            params![origin, &genesis[..]],
        )
        .unwrap();
    };
    conn.execute_batch("DROP TRIGGER log_meta_no_update;")
        .unwrap();
    let attacker_conn = attacker(&sandbox.db);
    rename(&conn, "example.com/renamed");
    recompute_from(&attacker_conn, 1);
    // The origin is not the one the log id gives.
    assert_tampered(&sandbox, &[], "identity_mismatch", None);
    // Even with the stored checkpoint gone, the given one names the old origin.
    conn.execute_batch("DROP TRIGGER checkpoints_no_delete; DELETE FROM checkpoints;")
        .unwrap();
    assert_tampered(&sandbox, &[], "identity_mismatch", None);
    let (exit, report) = verify(&sandbox, &with_checkpoint(&cp, &public));
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "identity_mismatch", "{report}");
}

#[test]
fn given_checkpoint_of_a_log_renamed_consistently_is_a_checkpoint_origin() {
    // The whole identity changed and every row re-signed with the new log id:
    // the chain holds on its own; the signed file names the old origin.
    let sandbox = four_reads();
    let (key, public) = keygen(&sandbox, "k");
    let cp = checkpoint(&sandbox, &key, "cp");
    let conn = attacker(&sandbox.db);
    conn.execute_batch(
        "DROP TRIGGER log_meta_no_update; DROP TRIGGER checkpoints_no_delete;
         DELETE FROM checkpoints;",
    )
    .unwrap();
    let log_id = [9u8; 16];
    let origin = format!("gavel/{}", "09".repeat(16));
    let mut enc = Vec::new();
    lp(&mut enc, b"gavel/genesis/v1");
    lp(&mut enc, &log_id);
    lp(&mut enc, origin.as_bytes());
    enc.extend_from_slice(&2u32.to_be_bytes());
    let genesis: [u8; 32] = Sha256::digest(&enc).into();
    conn.execute(
        "UPDATE log_meta SET log_id = ?1, origin = ?2, genesis = ?3",
        params![&log_id[..], origin, &genesis[..]],
    )
    .unwrap();
    conn.execute("UPDATE events SET log_id = ?1", [&log_id[..]])
        .unwrap();
    recompute_from(&conn, 1);
    drop(conn);
    assert_intact(&sandbox, &[]);
    let (exit, report) = verify(&sandbox, &with_checkpoint(&cp, &public));
    assert_eq!(exit, 1, "{report}");
    assert_eq!(report["problem"], "checkpoint_origin", "{report}");
}

#[test]
fn recomputed_log_with_format_3_is_refused_by_verify_and_by_writers() {
    let sandbox = four_reads();
    let conn = Connection::open(&sandbox.db).unwrap();
    let (log_id, origin): (Vec<u8>, String) = conn
        .query_row("SELECT log_id, origin FROM log_meta", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let mut enc = Vec::new();
    lp(&mut enc, b"gavel/genesis/v1");
    lp(&mut enc, &log_id);
    lp(&mut enc, origin.as_bytes());
    enc.extend_from_slice(&3u32.to_be_bytes());
    let genesis: [u8; 32] = Sha256::digest(&enc).into();
    conn.execute_batch("DROP TRIGGER log_meta_no_update;")
        .unwrap();
    conn.execute(
        "UPDATE log_meta SET format = 3, genesis = ?1",
        [&genesis[..]],
    )
    .unwrap();
    recompute_from(&attacker(&sandbox.db), 1);
    drop(conn);
    assert_tampered(&sandbox, &[], "unknown_format", None);
    let before = crate::store::sha256_file(&sandbox.db);
    let err = crate::support::assert_one_line_error(&mut sandbox.gavel(&[
        "run",
        "read_file",
        r#"{"path":"notes.txt"}"#,
    ]));
    assert!(err.contains("record format 3"), "{err}");
    assert_eq!(crate::store::sha256_file(&sandbox.db), before);
    assert_eq!(event_count(&sandbox.db), 12);
}

#[test]
fn column_stored_under_the_wrong_sqlite_type_is_a_content_mismatch() {
    // Same value, another storage class: SQLite would compare it equal in
    // places, the record format does not.
    for (column, value) in [
        ("ts_us", "ts_us + 0.5"),
        ("payload", "CAST(payload AS TEXT)"),
        ("kind", "CAST(kind AS BLOB)"),
        ("leaf", "hex(leaf)"),
    ] {
        let sandbox = four_reads();
        attacker(&sandbox.db)
            .execute(
                &format!("UPDATE events SET {column} = {value} WHERE seq = 7"),
                [],
            )
            .unwrap();
        let (exit, report) = verify(&sandbox, &[]);
        assert_eq!(exit, 1, "{column}: {report}");
        assert_eq!(report["problem"], "content_mismatch", "{column}: {report}");
        assert_eq!(report["first_bad_seq"], 7, "{column}: {report}");
        assert_eq!(report["rows"], 6, "{column}: {report}");
    }
    // A stored checkpoint's note as a BLOB (same bytes) is not a note.
    let sandbox = four_reads();
    let (key, _) = keygen(&sandbox, "k");
    checkpoint(&sandbox, &key, "cp");
    Connection::open(&sandbox.db)
        .unwrap()
        .execute_batch(
            "DROP TRIGGER checkpoints_no_update; UPDATE checkpoints SET note = CAST(note AS BLOB);",
        )
        .unwrap();
    assert_tampered(&sandbox, &[], "checkpoint_mismatch", None);
}

#[test]
fn insert_or_replace_cannot_rewrite_an_event_or_a_checkpoint_with_the_triggers_in_place() {
    let sandbox = four_reads();
    let (key, _) = keygen(&sandbox, "k");
    checkpoint(&sandbox, &key, "cp");
    let conn = Connection::open(&sandbox.db).unwrap();
    let err = conn
        .execute(
            "INSERT OR REPLACE INTO events (seq, log_id, ts_us, kind, call_id, tool, action,
                 rule_id, approval, status, payload, leaf, chain)
             SELECT seq, log_id, ts_us + 1, kind, call_id, tool, action, rule_id, approval,
                    status, payload, leaf, chain FROM events WHERE seq = 5",
            [],
        )
        .unwrap_err();
    assert!(err.to_string().contains("append-only"), "{err}");
    let err = conn
        .execute(
            "INSERT OR REPLACE INTO checkpoints (id, size, root, note, created_us)
             SELECT id, 1, root, note, created_us FROM checkpoints",
            [],
        )
        .unwrap_err();
    assert!(err.to_string().contains("append-only"), "{err}");
    let err = conn
        .execute(
            "INSERT OR REPLACE INTO log_meta (id, log_id, origin, format, created_us, genesis)
             SELECT id, log_id, 'x', format, created_us, genesis FROM log_meta",
            [],
        )
        .unwrap_err();
    assert!(err.to_string().contains("fixed"), "{err}");
    drop(conn);
    assert_intact(&sandbox, &[]);
}

#[test]
fn database_from_before_the_replace_triggers_gets_them_at_the_next_write() {
    // A schema-1 database: no rows yet (a writer that appends nothing made
    // it), none of the later triggers, index or columns.
    let sandbox = Sandbox::new();
    let (key, _) = keygen(&sandbox, "k");
    checkpoint(&sandbox, &key, "empty.cp");
    Connection::open(&sandbox.db)
        .unwrap()
        .execute_batch(
            "DROP TABLE session_labels; DROP TABLE totp_steps;
             DROP TRIGGER events_no_replace; DROP TRIGGER checkpoints_no_replace;
             DROP TRIGGER log_meta_no_replace; DROP TRIGGER policies_no_replace;
             DROP TRIGGER policies_no_update; DROP TRIGGER policies_no_delete;
             DROP INDEX events_anomaly; ALTER TABLE events DROP COLUMN user;
             ALTER TABLE events DROP COLUMN host; ALTER TABLE events DROP COLUMN client;
             ALTER TABLE events DROP COLUMN session; ALTER TABLE events DROP COLUMN agent;
             ALTER TABLE checkpoints DROP COLUMN frontier;
             DROP INDEX checkpoints_size; DROP TABLE merkle_blocks;
             PRAGMA user_version = 1;",
        )
        .unwrap();
    crate::store::record_reads_from(&sandbox, 5, 1);
    let conn = Connection::open(&sandbox.db).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 8, "every later migration was applied");
    let triggers: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%_no_replace'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(triggers, 4);
    drop(conn);
    assert_intact(&sandbox, &[]);
}

/// Every reader tells the truth about an edited row: `audit` fails and
/// says so, `log` marks the call and refuses a filter that the edit could
/// fool, `stats` says its counts read unverified rows.
#[test]
fn readers_mark_an_edited_row_and_audit_fails() {
    let sandbox = four_reads();
    attacker(&sandbox.db)
        .execute(
            "UPDATE events SET action = 'deny', rule_id = 'bash.hard_deny' WHERE seq = 11",
            [],
        )
        .unwrap();
    let audit = sandbox
        .gavel(&["audit", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(crate::support::code(&audit), 1, "{}", stdout(&audit));
    let report: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    assert_eq!(report["verified"], false, "{report}");
    assert_eq!(report["ok"], false, "{report}");
    assert_eq!(report["integrity"]["first_bad_seq"], 11, "{report}");
    let table = sandbox.gavel(&["audit"]).output().unwrap();
    assert_eq!(crate::support::code(&table), 1);
    assert!(
        stdout(&table).contains("does not verify"),
        "{}",
        stdout(&table)
    );

    let lines = sandbox.gavel(&["audit", "--json"]).output().unwrap();
    assert_eq!(crate::support::code(&lines), 1);
    assert!(
        stdout(&lines).starts_with(r#"{"integrity""#),
        "{}",
        stdout(&lines)
    );

    let log = run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0);
    let calls = crate::support::json_lines(&log);
    let marks: Vec<(String, bool)> = calls
        .iter()
        .map(|c| {
            (
                c["call_id"].as_str().unwrap().to_owned(),
                c["verified"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        marks,
        [
            ("r1".to_owned(), true),
            ("r2".to_owned(), true),
            ("r3".to_owned(), true),
            ("r4".to_owned(), false)
        ]
    );
    let table = run_expecting(&mut sandbox.gavel(&["log"]), 0);
    assert!(stdout(&table).contains("!! r4"), "{}", stdout(&table));

    // The edit made r4 a deny: a filter on the edited column refuses
    // rather than list (or hide) it on the attacker's word.
    for filter in [["--action", "deny"], ["--action", "allow"]] {
        let err = crate::support::assert_one_line_error(
            &mut sandbox.gavel(&["log", filter[0], filter[1]]),
        );
        assert!(err.contains("refusing to filter"), "{err}");
    }
    let stats = run_expecting(&mut sandbox.gavel(&["stats", "--json"]), 0);
    let stats = crate::support::json(&stats);
    assert_eq!(stats["verified"], false, "{stats}");

    // `explain` and `show` say which call may have been edited.
    let explain = run_expecting(&mut sandbox.gavel(&["explain", "r4"]), 0);
    assert!(
        stdout(&explain).starts_with("!! UNVERIFIED"),
        "{}",
        stdout(&explain)
    );
    let explain = run_expecting(&mut sandbox.gavel(&["explain", "r4", "--json"]), 0);
    assert_eq!(crate::support::json(&explain)["verified"], false);
    let explain = run_expecting(&mut sandbox.gavel(&["explain", "r1", "--json"]), 0);
    assert_eq!(crate::support::json(&explain)["verified"], true);
    let show = run_expecting(&mut sandbox.gavel(&["show", "r4"]), 0);
    assert!(stdout(&show).contains("11 !!"), "{}", stdout(&show));
}

/// The first row read under the wrong type is tampering at seq 1, not a
/// failure to read (it was exit 2: "reading the first event").
#[test]
fn first_row_stored_under_the_wrong_sqlite_type_is_a_content_mismatch_at_seq_1() {
    for (column, value) in [
        ("ts_us", "ts_us + 0.5"),
        ("payload", "CAST(payload AS TEXT)"),
        ("kind", "CAST(kind AS BLOB)"),
    ] {
        let sandbox = four_reads();
        attacker(&sandbox.db)
            .execute(
                &format!("UPDATE events SET {column} = {value} WHERE seq = 1"),
                [],
            )
            .unwrap();
        assert_tampered(&sandbox, &[], "content_mismatch", Some(1));
    }
}

/// An export header whose `format` is no integer names no known format:
/// `unknown_format` (exit 1), as the docs say, not a read error.
#[test]
fn export_header_with_a_string_format_is_an_unknown_format() {
    let sandbox = four_reads();
    let export = run_expecting(&mut sandbox.gavel(&["export"]), 0);
    let text = stdout(&export);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut header: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    for format in [json!("2"), json!(2.5), serde_json::Value::Null] {
        header["format"] = format.clone();
        lines[0] = header.to_string();
        let path = sandbox.root.join("export.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let out = sandbox
            .gavel(&["verify", "--json", "--export", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(crate::support::code(&out), 1, "{format}: {}", stdout(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["problem"], "unknown_format", "{format}: {report}");
    }
}

#[test]
fn damaged_refused_events_count_only_what_they_still_say() {
    let sandbox = four_reads();
    let conn = attacker(&sandbox.db);
    let attempt = r#"{"operation":"write","target":"/t","program":"/p"}"#;
    for (seq, payload) in [
        (
            13,
            format!(r#"{{"profile":"x","attempts":[{attempt}],"more":-7}}"#),
        ),
        (14, r#"{"attempts":"none","more":1e300}"#.to_owned()),
        (15, "not json".to_owned()),
        (16, r#"{"attempts":[],"more":"5"}"#.to_owned()),
    ] {
        conn.execute(
            "INSERT INTO events SELECT ?1, log_id, ts_us, 'refused', 'r2', tool, NULL, NULL, NULL,
                 NULL, CAST(?2 AS BLOB), leaf, chain, user, host, client, session, agent
             FROM events WHERE seq = 11",
            params![seq, payload],
        )
        .unwrap();
    }
    // The listing still reads every call, and counts the one attempt the
    // damaged events still name.
    let output = run_expecting(&mut sandbox.gavel(&["log", "--format", "json"]), 0);
    let calls: Vec<serde_json::Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let refused: Vec<(String, u64)> = calls
        .iter()
        .map(|c| {
            let id = c["call_id"].as_str().unwrap().to_owned();
            (id, c["refused"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        refused,
        [("r1", 0), ("r2", 1), ("r3", 0), ("r4", 0)].map(|(id, n)| (id.to_owned(), n))
    );
}
