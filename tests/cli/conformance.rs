//! The conformance suite (`fixtures/conformance/`, docs/receipts.md):
//! receipts, exports and databases, valid and tampered, each with the
//! verdict a verifier must give. gavel must give every one, and so must
//! the independent `scripts/verify_chain.py --conformance`.
//!
//! `GAVEL_CONFORMANCE_WRITE=1 cargo test conformance` writes the suite
//! again from fixed keys: receipts of a fresh log, and a tampered copy per
//! case. A receipt case's verdict is the one its tampering is designed to
//! cause; an export's or database's is gavel's report, reviewed when written.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{append_calls, code, stderr, stdout};

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance")
}

/// `gavel verify --json` of one case, run in `dir`.
fn gavel_verdict(case: &Value, dir: &Path) -> Value {
    let file = suite().join(case["file"].as_str().unwrap());
    let mut cmd = assert_cmd::Command::cargo_bin("gavel").unwrap();
    cmd.env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .current_dir(dir)
        .args(["verify", "--json"]);
    match case["kind"].as_str().unwrap() {
        "receipt" => cmd.arg("--receipt").arg(&file),
        "export" => cmd.arg("--export").arg(&file),
        _ => {
            // A copy: reading a database may fold its write-ahead log in.
            let copy = dir.join(file.file_name().unwrap());
            std::fs::copy(&file, &copy).unwrap();
            cmd.arg("--db").arg(&copy)
        }
    };
    for key in case["keys"].as_array().into_iter().flatten() {
        cmd.arg("--public-key")
            .arg(suite().join(key.as_str().unwrap()));
    }
    if let Some(policy) = case["policy"].as_str() {
        let path = suite().join(policy);
        cmd.arg("--policy").arg(if path.exists() {
            path.into_os_string()
        } else {
            policy.into()
        });
    }
    let out = cmd.output().unwrap();
    assert!(
        code(&out) == 0 || code(&out) == 1,
        "{}: exit {}: {}",
        case["name"],
        code(&out),
        stderr(&out)
    );
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    verdict(case["kind"].as_str().unwrap(), &report)
}

/// What a verifier must agree on: ok, and the problem with where it is.
fn verdict(kind: &str, report: &Value) -> Value {
    if report["ok"] == true {
        return json!({"ok": true});
    }
    match kind {
        "receipt" => {
            json!({"ok": false, "problem": report["problem"], "element": report["element"]})
        }
        _ => {
            json!({"ok": false, "problem": report["problem"], "first_bad_seq": report["first_bad_seq"]})
        }
    }
}

#[test]
fn gavel_and_the_python_verifier_give_every_verdict_of_the_suite() {
    if std::env::var("GAVEL_CONFORMANCE_WRITE").as_deref() == Ok("1") {
        write_suite();
    }
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(suite().join("cases.json")).unwrap())
            .unwrap();
    let problems: std::collections::BTreeSet<&str> = cases
        .iter()
        .filter(|c| c["kind"] == "receipt")
        .filter_map(|c| c["expect"]["problem"].as_str())
        .collect();
    // Every way a receipt can fail has a case.
    for problem in [
        "malformed",
        "leaf_data",
        "call_mismatch",
        "index_mismatch",
        "order",
        "checkpoint_malformed",
        "origin_mismatch",
        "inclusion",
        "unknown_signer",
        "signature",
        "quorum",
    ] {
        assert!(problems.contains(problem), "no case for `{problem}`");
    }
    let dir = tempfile::tempdir().unwrap();
    for case in &cases {
        assert_eq!(
            gavel_verdict(case, dir.path()),
            case["expect"],
            "{}",
            case["name"]
        );
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/verify_chain.py");
    match std::process::Command::new("python3")
        .arg(&script)
        .arg("--conformance")
        .arg(suite())
        .output()
    {
        Ok(out) => assert_eq!(
            out.status.code(),
            Some(0),
            "verify_chain.py disagrees:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("note: python3 is not on PATH; skipping the independent verifier");
        }
        Err(e) => panic!("cannot run python3: {e}"),
    }
}

/// Writes the suite: keys, a log of four calls with a checkpoint, the
/// receipts and their tampered copies, exports and databases, `cases.json`.
fn write_suite() {
    use gavel::checkpoint::SigningKey;
    let root = suite();
    let _ = std::fs::remove_dir_all(&root);
    for sub in ["keys", "receipts", "exports", "databases"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    let host = SigningKey::from_seed("conformance.host", &[1u8; 32]).unwrap();
    let central = SigningKey::from_seed("conformance.central", &[2u8; 32]).unwrap();
    let other = SigningKey::from_seed("conformance.host", &[3u8; 32]).unwrap();
    for (name, key) in [("host", &host), ("central", &central), ("other", &other)] {
        std::fs::write(
            root.join(format!("keys/{name}.pub")),
            key.verifier().to_text() + "\n",
        )
        .unwrap();
    }
    std::fs::write(
        root.join("keys/host-and-central.policy"),
        format!(
            "# The host's log, cosigned by the central store.\nlog {}\nwitness central {}\nquorum central\n",
            host.verifier().to_text(),
            central.verifier().to_text()
        ),
    )
    .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    append_calls(&db, 1, 4);
    let mut store = gavel::store::Store::open(&db, gavel::store::Durability::Full).unwrap();
    let (checkpoint, note) = store.checkpoint(&host).unwrap().unwrap();
    let cosignature = gavel::cosign::cosign(&central, &checkpoint.body(), 1_764_892_800);
    let cosigned = [gavel::receipt::CosignedNote {
        size: checkpoint.size,
        note: note.clone(),
        cosignature,
    }];
    let valid = gavel::receipt::make(&store, "c2", &[]).unwrap().to_text();
    let both = gavel::receipt::make(&store, "c2", &cosigned)
        .unwrap()
        .to_text();
    let c3 = gavel::receipt::make(&store, "c3", &[]).unwrap().to_text();
    drop(store);

    let mut cases = Vec::new();
    let mut receipt = |name: &str,
                       text: &str,
                       keys: &[&str],
                       policy: Option<&str>,
                       expect: Value| {
        let file = format!("receipts/{name}.receipt");
        std::fs::write(root.join(&file), text).unwrap();
        let keys: Vec<String> = keys.iter().map(|k| format!("keys/{k}.pub")).collect();
        cases.push(json!({"name": name, "kind": "receipt", "file": file, "keys": keys, "policy": policy, "expect": expect}));
    };
    let fails =
        |problem: &str, element: &str| json!({"ok": false, "problem": problem, "element": element});
    let ok = json!({"ok": true});
    let line_of = |text: &str, prefix: &str, nth: usize| -> usize {
        text.lines()
            .enumerate()
            .filter(|(_, l)| l.starts_with(prefix))
            .nth(nth)
            .unwrap()
            .0
            + 1
    };
    let replace_line = |text: &str, n: usize, with: &str| -> String {
        text.lines()
            .enumerate()
            .map(|(i, l)| {
                if i + 1 == n {
                    format!("{with}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    };
    let line = |text: &str, n: usize| text.lines().nth(n - 1).unwrap().to_owned();

    receipt("valid", &valid, &["host"], None, ok.clone());
    receipt(
        "cosigned-2-of-2",
        &both,
        &["host", "central"],
        Some("2-of-2"),
        ok.clone(),
    );
    receipt(
        "cosigned-tlog-policy",
        &both,
        &[],
        Some("keys/host-and-central.policy"),
        ok.clone(),
    );
    receipt(
        "cosigned-1-of-2",
        &both,
        &["host", "central"],
        None,
        ok.clone(),
    );
    receipt(
        "cosigned-host-key-only",
        &both,
        &["host"],
        None,
        fails("unknown_signer", "event 1 signature 2"),
    );
    receipt(
        "valid-other-key",
        &valid,
        &["other"],
        None,
        fails("unknown_signer", "event 1 signature 1"),
    );
    receipt(
        "valid-2-of-2",
        &valid,
        &["host", "central"],
        Some("2-of-2"),
        fails("quorum", "event 1 checkpoint"),
    );
    receipt(
        "valid-tlog-policy",
        &valid,
        &[],
        Some("keys/host-and-central.policy"),
        fails("quorum", "event 1 checkpoint"),
    );

    receipt(
        "header-version",
        &valid.replacen("gavel-receipt@v1", "gavel-receipt@v2", 1),
        &["host"],
        None,
        fails("malformed", "line 1"),
    );
    receipt(
        "crlf",
        &valid.replace('\n', "\r\n"),
        &["host"],
        None,
        fails("malformed", "line 1"),
    );
    receipt(
        "no-final-newline",
        valid.strip_suffix('\n').unwrap(),
        &["host"],
        None,
        fails("malformed", &format!("line {}", valid.lines().count())),
    );
    receipt(
        "call-unquoted",
        &valid.replacen("call \"c2\"", "call c2", 1),
        &["host"],
        None,
        fails("malformed", "line 2"),
    );
    receipt(
        "events-fewer",
        &valid.replacen("events 3", "events 2", 1),
        &["host"],
        None,
        fails(
            "malformed",
            &format!("line {}", line_of(&valid, "c2sp.org/tlog-proof@v1", 2)),
        ),
    );
    receipt(
        "events-more",
        &valid.replacen("events 3", "events 4", 1),
        &["host"],
        None,
        fails("malformed", &format!("line {}", valid.lines().count() + 1)),
    );
    let n = line_of(&valid, "index ", 0) + 1;
    receipt(
        "path-not-base64",
        &replace_line(&valid, n, "not base64"),
        &["host"],
        None,
        fails("malformed", &format!("line {n}")),
    );
    let n = line_of(&valid, "index ", 0);
    receipt(
        "index-leading-zero",
        &replace_line(&valid, n, &format!("index 0{}", &line(&valid, n)[6..])),
        &["host"],
        None,
        fails("malformed", &format!("line {n}")),
    );

    receipt(
        "call-other",
        &valid.replacen("call \"c2\"", "call \"c3\"", 1),
        &["host"],
        None,
        fails("call_mismatch", "event 1"),
    );
    // A proof of another call's row, in place of the second.
    let second_of = |text: &str| -> (usize, usize) {
        let starts: Vec<usize> = text
            .match_indices("c2sp.org/tlog-proof@v1\n")
            .map(|(i, _)| i)
            .collect();
        (starts[1], starts[2])
    };
    let (a, b) = second_of(&valid);
    let (c, d) = second_of(&c3);
    receipt(
        "row-of-another-call",
        &format!("{}{}{}", &valid[..a], &c3[c..d], &valid[b..]),
        &["host"],
        None,
        fails("call_mismatch", "event 2"),
    );
    // The second and first proofs swapped.
    let first = valid.find("c2sp.org/tlog-proof@v1\n").unwrap();
    receipt(
        "proofs-swapped",
        &format!(
            "{}{}{}{}",
            &valid[..first],
            &valid[a..b],
            &valid[first..a],
            &valid[b..]
        ),
        &["host"],
        None,
        fails("order", "event 2"),
    );
    // A changed leaf: one payload byte, base64 again.
    let extra_line = line_of(&valid, "extra ", 0);
    let data = base64_decode(&line(&valid, extra_line)[6..]);
    let mut changed = data.clone();
    *changed.last_mut().unwrap() ^= 0x01;
    receipt(
        "leaf-payload-changed",
        &replace_line(
            &valid,
            extra_line,
            &format!("extra {}", base64_encode(&changed)),
        ),
        &["host"],
        None,
        fails("inclusion", "event 1"),
    );
    receipt(
        "leaf-cut",
        &replace_line(
            &valid,
            extra_line,
            &format!("extra {}", base64_encode(&data[..data.len() - 1])),
        ),
        &["host"],
        None,
        fails("leaf_data", "event 1"),
    );
    let index_line = line_of(&valid, "index ", 1);
    let index: u64 = line(&valid, index_line)[6..].parse().unwrap();
    receipt(
        "index-changed",
        &replace_line(&valid, index_line, &format!("index {}", index + 1)),
        &["host"],
        None,
        fails("index_mismatch", "event 2"),
    );
    let hash_line = line_of(&valid, "index ", 2) + 1;
    let mut hash = base64_decode(&line(&valid, hash_line));
    hash[0] ^= 0x80;
    receipt(
        "path-hash-changed",
        &replace_line(&valid, hash_line, &base64_encode(&hash)),
        &["host"],
        None,
        fails("inclusion", "event 3"),
    );
    let without: String = valid
        .lines()
        .enumerate()
        .filter(|(i, _)| i + 1 != hash_line)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    receipt(
        "path-hash-removed",
        &without,
        &["host"],
        None,
        fails("inclusion", "event 3"),
    );
    // The checkpoint: its root, its size, its origin, its framing, its signature.
    let origin = checkpoint.origin.clone();
    let size = checkpoint.size.to_string();
    let root_b64 = base64_encode(&checkpoint.root);
    let mut other_root = checkpoint.root;
    other_root[31] ^= 0x01;
    receipt(
        "checkpoint-root-changed",
        &valid.replacen(&root_b64, &base64_encode(&other_root), 1),
        &["host"],
        None,
        fails("inclusion", "event 1"),
    );
    // One more leaf: the first row's path has the same shape in a tree of
    // 13 as of 12, so it still leads to the root; the signature does not hold.
    receipt(
        "checkpoint-size-changed",
        &valid.replacen(
            &format!("{origin}\n{size}\n"),
            &format!("{origin}\n{}\n", checkpoint.size + 1),
            1,
        ),
        &["host"],
        None,
        fails("signature", "event 1 signature 1"),
    );
    // Twice the size: the path is too short for it.
    receipt(
        "checkpoint-size-doubled",
        &valid.replacen(
            &format!("{origin}\n{size}\n"),
            &format!("{origin}\n{}\n", checkpoint.size * 2),
            1,
        ),
        &["host"],
        None,
        fails("inclusion", "event 1"),
    );
    receipt(
        "checkpoint-size-leading-zero",
        &valid.replacen(
            &format!("{origin}\n{size}\n"),
            &format!("{origin}\n0{size}\n"),
            1,
        ),
        &["host"],
        None,
        fails("checkpoint_malformed", "event 1 checkpoint"),
    );
    let other_origin = format!("{origin}0");
    receipt(
        "checkpoint-other-origin",
        &valid.replacen(&format!("{origin}\n"), &format!("{other_origin}\n"), 1),
        &["host"],
        None,
        fails("origin_mismatch", "event 1 checkpoint"),
    );
    let sig_line = line_of(&valid, "\u{2014} ", 1);
    let sig = line(&valid, sig_line);
    let (head, b64) = sig.rsplit_once(' ').unwrap();
    let mut blob = base64_decode(b64);
    *blob.last_mut().unwrap() ^= 0x01;
    receipt(
        "signature-changed",
        &replace_line(
            &valid,
            sig_line,
            &format!("{head} {}", base64_encode(&blob)),
        ),
        &["host"],
        None,
        fails("signature", "event 2 signature 1"),
    );
    blob.truncate(3);
    receipt(
        "signature-too-short",
        &replace_line(
            &valid,
            sig_line,
            &format!("{head} {}", base64_encode(&blob)),
        ),
        &["host"],
        None,
        fails("checkpoint_malformed", "event 2 checkpoint"),
    );
    let cosig_line = line_of(&both, "\u{2014} conformance.central ", 0);
    let cosig = line(&both, cosig_line);
    let (head, b64) = cosig.rsplit_once(' ').unwrap();
    let mut blob = base64_decode(b64);
    blob[5] ^= 0x01; // the cosignature's time
    receipt(
        "cosignature-time-changed",
        &replace_line(
            &both,
            cosig_line,
            &format!("{head} {}", base64_encode(&blob)),
        ),
        &["host", "central"],
        Some("2-of-2"),
        fails("signature", "event 1 signature 2"),
    );
    let stripped: String = both
        .lines()
        .filter(|l| !l.starts_with("\u{2014} conformance.central "))
        .map(|l| format!("{l}\n"))
        .collect();
    receipt(
        "cosignature-removed-2-of-2",
        &stripped,
        &["host", "central"],
        Some("2-of-2"),
        fails("quorum", "event 1 checkpoint"),
    );

    // Exports and databases: gavel's report is the verdict.
    let gavel = |args: &[&std::ffi::OsStr]| {
        assert_cmd::Command::cargo_bin("gavel")
            .unwrap()
            .env_remove("GAVEL_POLICY")
            .env_remove("GAVEL_DB")
            .args(args)
            .output()
            .unwrap()
    };
    let export = gavel(&["--db".as_ref(), db.as_os_str(), "export".as_ref()]).stdout;
    let export = String::from_utf8(export).unwrap();
    let mut extra_cases = Vec::new();
    let mut export_case = |name: &str, text: &str| {
        let file = format!("exports/{name}.jsonl");
        std::fs::write(root.join(&file), text).unwrap();
        extra_cases.push(json!({"name": name, "kind": "export", "file": file, "keys": ["keys/host.pub"], "policy": null}));
    };
    export_case("export-valid", &export);
    export_case(
        "export-payload-changed",
        &export.replacen("echo 2", "echo 9", 1),
    );
    let lines: Vec<&str> = export.lines().collect();
    let event_at = lines
        .iter()
        .position(|l| l.contains("\"record\":\"event\""))
        .unwrap();
    let dropped: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != event_at + 4)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    export_case("export-row-removed", &dropped);
    let mut swapped: Vec<&str> = lines.clone();
    swapped.swap(event_at + 2, event_at + 3);
    export_case("export-rows-swapped", &(swapped.join("\n") + "\n"));
    let cut: String = lines[..lines.len() - 2]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    export_case("export-tail-cut", &cut);

    let mut db_case = |name: &str, edit: &str| {
        let file = format!("databases/{name}.db");
        let path = root.join(&file);
        std::fs::copy(&db, &path).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(edit).unwrap();
        conn.execute_batch("PRAGMA journal_mode = DELETE; VACUUM;")
            .unwrap();
        extra_cases.push(json!({"name": name, "kind": "database", "file": file, "keys": ["keys/host.pub"], "policy": null}));
    };
    db_case("database-valid", "");
    db_case(
        "database-payload-changed",
        "DROP TRIGGER events_no_update; UPDATE events SET payload = CAST('{}' AS BLOB) WHERE seq = 5;",
    );
    db_case(
        "database-tail-cut",
        "DROP TRIGGER events_no_delete; DELETE FROM events WHERE seq > 10;",
    );
    db_case(
        "database-checkpoint-other-key",
        &format!(
            "DROP TRIGGER checkpoints_no_update; UPDATE checkpoints SET note = '{}';",
            other.sign(&checkpoint).unwrap()
        ),
    );
    let scratch = tempfile::tempdir().unwrap();
    for mut case in extra_cases {
        case["expect"] = gavel_verdict(&case, scratch.path());
        cases.push(case);
    }
    std::fs::write(
        root.join("cases.json"),
        serde_json::to_string_pretty(&cases).unwrap() + "\n",
    )
    .unwrap();
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}
