//! `gavel receipt` and `gavel verify --receipt` (issue 43): a call of a
//! hook session proved offline with only the public key; every changed
//! byte refused; proofs from stored block roots in a log past one block,
//! with the cache damaged or gone; a changed log or an uncovered call refused.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::{Value, json};

use crate::support::{Sandbox, append_calls, code, stderr, stdout, tool_payload};

/// A sandbox whose gavel signs its automatic checkpoints, run from the workspace.
struct Env {
    sandbox: Sandbox,
    ws: PathBuf,
    db: PathBuf,
}

impl Env {
    fn new() -> Self {
        let sandbox = Sandbox::new();
        sandbox.write("a.txt", "hello\n");
        let (ws, db) = (sandbox.ws.clone(), sandbox.db.clone());
        Self { sandbox, ws, db }
    }

    fn gavel(&self, args: &[&str]) -> Command {
        let mut cmd = self.sandbox.bare();
        cmd.env_remove("GAVEL_CHECKPOINT_EVERY")
            .env_remove("CLAUDE_PROJECT_DIR")
            .current_dir(&self.ws)
            .arg("--db")
            .arg(&self.db)
            .args(args);
        cmd
    }

    fn run(&self, args: &[&str], expected: i32) -> Output {
        let out = self.gavel(args).output().unwrap();
        assert_eq!(
            code(&out),
            expected,
            "gavel {args:?}\nstdout: {}\nstderr: {}",
            stdout(&out),
            stderr(&out)
        );
        out
    }

    /// A Claude Code hook call: `PreToolUse`, then `PostToolUse`.
    fn hook_call(&self, id: &str, tool: &str, input: Value) {
        for fixture in ["pre_tool_use.json", "post_tool_use.json"] {
            let payload = tool_payload(&self.sandbox, fixture, id, tool, input.clone());
            let out = self
                .gavel(&["hook", "claude-code"])
                .write_stdin(payload.to_string())
                .output()
                .unwrap();
            assert_eq!(code(&out), 0, "{}", stderr(&out));
        }
    }

    /// The verifier key of the log's automatic checkpoints.
    fn log_key(&self) -> PathBuf {
        let keys = self.sandbox.root.join("data/gavel/keys");
        std::fs::read_dir(&keys)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "pub"))
            .expect("the log's verifier key")
    }

    fn receipt(&self, call_id: &str) -> Vec<u8> {
        self.run(&["receipt", call_id], 0).stdout
    }

    /// `gavel verify --receipt` of `bytes` with `keys`, run from a folder
    /// with no database; its exit code and JSON.
    fn verify(&self, bytes: &[u8], keys: &[&Path], extra: &[&str]) -> (i32, Value) {
        let elsewhere = tempfile::tempdir().unwrap();
        let file = elsewhere.path().join("call.receipt");
        std::fs::write(&file, bytes).unwrap();
        let mut cmd = Command::cargo_bin("gavel").unwrap();
        cmd.env_remove("GAVEL_POLICY")
            .env_remove("GAVEL_DB")
            .current_dir(elsewhere.path())
            .args(["verify", "--json", "--receipt"])
            .arg(&file);
        for key in keys {
            cmd.arg("--public-key").arg(key);
        }
        let out = cmd.args(extra).output().unwrap();
        assert!(
            !elsewhere.path().join(".gavel").exists(),
            "verifying a receipt made a database"
        );
        let value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|_| json!({"stderr": stderr(&out)}));
        (code(&out), value)
    }
}

#[test]
fn a_hook_calls_receipt_proves_it_offline_and_no_changed_byte_passes() {
    let env = Env::new();
    env.hook_call(
        "toolu_read",
        "Read",
        json!({"file_path": env.ws.join("a.txt")}),
    );
    env.hook_call("toolu_ls", "Bash", json!({"command": "ls"}));
    let bytes = env.receipt("toolu_read");
    let key = env.log_key();
    let (exit, checked) = env.verify(&bytes, &[&key], &[]);
    assert_eq!(exit, 0, "{checked}");
    assert_eq!(checked["call_id"], "toolu_read");
    let kinds: Vec<&str> = checked["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["request", "decision", "result"]);
    assert_eq!(checked["events"][1]["rule_id"], "path.read_allow");
    assert_eq!(checked["events"][0]["client"], "claude-code");
    assert_eq!(checked["signers"][0]["name"], "gavel");
    // The text form names the call and its rows.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("r"), &bytes).unwrap();
    let out = Command::cargo_bin("gavel")
        .unwrap()
        .current_dir(elsewhere.path())
        .env_remove("GAVEL_POLICY")
        .args(["verify", "--receipt", "r", "--public-key"])
        .arg(&key)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("ok: call toolu_read proved: 3 rows"),
        "{}",
        stdout(&out)
    );

    // Every single-byte change is refused: each byte flipped in its low
    // bit, and every seventh also in its high bits.
    let trust = gavel::receipt::Trust::from_keys(
        vec![gavel::checkpoint::read_verifier_key(&key).unwrap()],
        None,
    )
    .unwrap();
    assert!(gavel::receipt::verify(&bytes, &trust).is_ok());
    for at in 0..bytes.len() {
        let changes: &[u8] = if at % 7 == 0 {
            &[0x01, 0x20, 0x80]
        } else {
            &[0x01]
        };
        for &change in changes {
            let mut changed = bytes.clone();
            changed[at] ^= change;
            assert!(
                gavel::receipt::verify(&changed, &trust).is_err(),
                "byte {at} ^ {change:#x} passed"
            );
        }
    }
    // Through the binary: the first bad element is named, exit 1.
    let text = String::from_utf8(bytes.clone()).unwrap();
    // The first hash of the second row's proof, changed and still base64.
    let second = text.match_indices("\nindex ").nth(1).unwrap().0 + 1;
    let start = second + text[second..].find('\n').unwrap() + 1;
    let end = start + text[start..].find('\n').unwrap();
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let mut hash = engine.decode(&text[start..end]).unwrap();
    hash[0] ^= 0x01;
    let changed = format!("{}{}{}", &text[..start], engine.encode(hash), &text[end..]);
    let (exit, failure) = env.verify(changed.as_bytes(), &[&key], &[]);
    assert_eq!(exit, 1, "{failure}");
    assert_eq!(failure["ok"], false);
    assert_eq!(failure["problem"], "inclusion");
    assert_eq!(failure["element"], "event 2");
    // Another key: the signature line is by no key given.
    env.run(&["keygen", "--out", "other.key"], 0);
    let (exit, failure) = env.verify(&bytes, &[&env.ws.join("other.key.pub")], &[]);
    assert_eq!(
        (exit, &failure["problem"]),
        (1, &json!("unknown_signer")),
        "{failure}"
    );
    // No key at all cannot be checked: exit 2.
    assert_eq!(env.verify(&bytes, &[], &[]).0, 2);
}

#[test]
fn receipts_past_a_block_come_from_stored_roots_and_survive_a_damaged_cache() {
    let env = Env::new();
    // 120 calls, 360 rows: one whole block of 256 leaves and a partial one.
    append_calls(&env.db, 1, 120);
    env.run(&["keygen", "--out", "log.key"], 0);
    env.run(&["checkpoint", "--key", "log.key"], 0);
    let key = env.ws.join("log.key.pub");
    let blocks = || -> i64 {
        rusqlite::Connection::open(&env.db)
            .unwrap()
            .query_row("SELECT count(*) FROM merkle_blocks", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(
        blocks(),
        1,
        "the checkpoint keeps the root of the whole block"
    );
    let proves = |call: &str| {
        let (exit, checked) = env.verify(&env.receipt(call), &[&key], &[]);
        assert_eq!(exit, 0, "{call}: {checked}");
        assert_eq!(checked["call_id"], call);
        assert_eq!(checked["checkpoint"]["size"], 360);
    };
    for call in ["c1", "c85", "c86", "c120"] {
        proves(call);
    }
    // A wrong cached root: the proof is rebuilt from the rows.
    let conn = rusqlite::Connection::open(&env.db).unwrap();
    conn.execute("UPDATE merkle_blocks SET root = zeroblob(32)", [])
        .unwrap();
    proves("c3");
    // No cache at all: computed and kept again.
    conn.execute("DELETE FROM merkle_blocks", []).unwrap();
    proves("c100");
    assert_eq!(blocks(), 1);

    // A row changed under its checkpoint: no receipt, and why.
    conn.execute_batch(
        "DROP TRIGGER events_no_update;
         UPDATE events SET payload = CAST('{}' AS BLOB) WHERE seq = 4;",
    )
    .unwrap();
    let out = env.run(&["receipt", "c2"], 2);
    assert!(
        stderr(&out).contains("row 4 no longer hashes to its stored leaf"),
        "{}",
        stderr(&out)
    );
    // An unknown call.
    let out = env.run(&["receipt", "nope"], 2);
    assert!(stderr(&out).contains("no call `nope`"), "{}", stderr(&out));
}

#[test]
fn a_call_after_the_newest_checkpoint_has_no_receipt_yet_and_dir_writes_the_rest() {
    let env = Env::new();
    append_calls(&env.db, 1, 3);
    env.run(&["keygen", "--out", "log.key"], 0);
    env.run(&["checkpoint", "--key", "log.key"], 0);
    append_calls(&env.db, 4, 1);
    let out = env.run(&["receipt", "c4"], 2);
    assert!(
        stderr(&out).contains("no checkpoint covers call `c4` yet (its last row is 12; the newest checkpoint covers 9)"),
        "{}",
        stderr(&out)
    );
    let out = env.run(&["receipt", "--dir", "receipts"], 0);
    assert!(
        stdout(&out).contains("wrote 3 receipts")
            && stdout(&out).contains("1 calls after the newest checkpoint"),
        "{}",
        stdout(&out)
    );
    let key = env.ws.join("log.key.pub");
    for call in ["c1", "c2", "c3"] {
        let bytes = std::fs::read(env.ws.join("receipts").join(format!("{call}.receipt"))).unwrap();
        assert_eq!(env.verify(&bytes, &[&key], &[]).0, 0, "{call}");
    }
    // Filters pick the calls.
    env.run(&["receipt", "--dir", "denied", "--action", "deny"], 0);
    let names: Vec<String> = std::fs::read_dir(env.ws.join("denied"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["c3.receipt"]);
}
