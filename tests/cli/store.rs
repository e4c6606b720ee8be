//! The audit store through the real binary: every call recorded with its
//! rule, reason, approval and status; a killed run; concurrent writers; file
//! modes; refusing files that are not ours; the independent Python verifier.
//! Also the store helpers the `query` and `tamper` tests share.

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{Sandbox, code, json, json_lines, run_expecting, stderr, stdout};

/// One call of [`record_mix`]: its id and what the record must say of it.
pub struct Expected {
    pub call_id: &'static str,
    pub tool: &'static str,
    pub arguments: Value,
    pub action: &'static str,
    pub rule_id: &'static str,
    pub approval: &'static str,
    pub status: &'static str,
}

/// Records eight calls covering every action, approval and status, in this
/// order, and returns what each must look like in the record.
pub fn record_mix(sandbox: &Sandbox) -> Vec<Expected> {
    let calls = [
        (
            "c1-read",
            "read_file",
            json!({"path": "notes.txt"}),
            None,
            0,
            ("allow", "path.read_allow", "not_required", "succeeded"),
        ),
        (
            "c2-write-approved",
            "write_file",
            json!({"path": "out.txt", "content": "x"}),
            Some("--approve"),
            0,
            (
                "ask",
                "path.write_requires_approval",
                "approved",
                "succeeded",
            ),
        ),
        (
            "c3-write-rejected",
            "write_file",
            json!({"path": "rejected.txt", "content": "x"}),
            Some("--reject"),
            3,
            ("ask", "path.write_requires_approval", "rejected", "blocked"),
        ),
        (
            "c4-bash-cancelled",
            "bash",
            json!({"command": "echo hi"}),
            None,
            3,
            ("ask", "bash.requires_approval", "cancelled", "blocked"),
        ),
        (
            "c5-sudo",
            "bash",
            json!({"command": "sudo rm -rf /"}),
            Some("--approve"),
            3,
            ("deny", "bash.hard_deny", "not_required", "blocked"),
        ),
        (
            "c6-escape",
            "read_file",
            json!({"path": "../outside/secret.txt"}),
            None,
            3,
            ("deny", "path.outside_workspace", "not_required", "blocked"),
        ),
        (
            "c7-unknown",
            "frobnicate",
            json!({"x": 1}),
            Some("--approve"),
            3,
            ("deny", "default.deny", "not_required", "blocked"),
        ),
        (
            "c8-exit-3",
            "bash",
            json!({"command": "exit 3"}),
            Some("--approve"),
            1,
            ("ask", "bash.requires_approval", "approved", "failed"),
        ),
    ];
    calls
        .into_iter()
        .map(
            |(call_id, tool, arguments, flag, exit, (action, rule_id, approval, status))| {
                let args = arguments.to_string();
                let mut cmd = sandbox.gavel(&["run", tool, &args, "--call-id", call_id]);
                if let Some(flag) = flag {
                    cmd.arg(flag);
                }
                // No terminal: an `ask` without --approve/--reject is cancelled.
                cmd.write_stdin("");
                run_expecting(&mut cmd, exit);
                Expected {
                    call_id,
                    tool,
                    arguments,
                    action,
                    rule_id,
                    approval,
                    status,
                }
            },
        )
        .collect()
}

/// Records `n` allowed reads with ids `r1`, `r2`, ...: three events each.
pub fn record_reads(sandbox: &Sandbox, n: usize) {
    record_reads_from(sandbox, 1, n);
}

/// Records `n` allowed reads with ids `r<first>`, `r<first + 1>`, ...
pub fn record_reads_from(sandbox: &Sandbox, first: usize, n: usize) {
    for i in first..first + n {
        run_expecting(
            &mut sandbox.gavel(&[
                "run",
                "read_file",
                r#"{"path":"notes.txt"}"#,
                "--call-id",
                &format!("r{i}"),
            ]),
            0,
        );
    }
}

/// `gavel log --json EXTRA...`: the recorded calls as JSON lines.
pub fn log(sandbox: &Sandbox, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["log", "--json"];
    args.extend_from_slice(extra);
    json_lines(&run_expecting(&mut sandbox.gavel(&args), 0))
}

/// The call ids of `calls`, in order.
pub fn ids(calls: &[Value]) -> Vec<String> {
    calls
        .iter()
        .map(|c| c["call_id"].as_str().expect("call_id is text").to_owned())
        .collect()
}

/// `gavel verify --json EXTRA...`: the exit code and the report.
pub fn verify(sandbox: &Sandbox, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["verify", "--json"];
    args.extend_from_slice(extra);
    let output = sandbox.gavel(&args).output().expect("run gavel verify");
    let exit = code(&output);
    assert!(
        exit == 0 || exit == 1,
        "verify could not run (exit {exit}): {}",
        stderr(&output)
    );
    (exit, json(&output))
}

/// Asserts `gavel verify` finds `problem` at `seq` (exit 1).
pub fn assert_tampered(sandbox: &Sandbox, extra: &[&str], problem: &str, seq: Option<u64>) {
    let (exit, report) = verify(sandbox, extra);
    assert_eq!(exit, 1, "verify should fail: {report}");
    assert_eq!(report["ok"], false, "{report}");
    assert_eq!(report["problem"], problem, "{report}");
    assert_eq!(report["first_bad_seq"], json!(seq), "{report}");
}

/// Asserts `gavel verify` finds the log intact (exit 0).
pub fn assert_intact(sandbox: &Sandbox, extra: &[&str]) -> Value {
    let (exit, report) = verify(sandbox, extra);
    assert_eq!(exit, 0, "verify should pass: {report}");
    assert_eq!(report["ok"], true, "{report}");
    report
}

/// A raw connection to `db`, as an attacker with write access has it: the
/// triggers that refuse edits are dropped first.
pub fn attacker(db: &Path) -> Connection {
    let conn = Connection::open(db).expect("open the database with rusqlite");
    conn.execute_batch("DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete;")
        .expect("drop the append-only triggers");
    conn
}

/// The number of rows in `events`.
pub fn event_count(db: &Path) -> u64 {
    Connection::open(db)
        .expect("open the database")
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .expect("count events")
}

pub fn sha256_file(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read the file");
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `path` with `suffix` appended (`audit.db` -> `audit.db-wal`).
pub fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[test]
fn every_call_is_recorded_in_order_with_rule_reason_approval_and_status() {
    let sandbox = Sandbox::new();
    let expected = record_mix(&sandbox);
    let calls = log(&sandbox, &[]);
    assert_eq!(
        ids(&calls),
        expected.iter().map(|e| e.call_id).collect::<Vec<_>>()
    );
    let mut last_ts = String::new();
    for (call, want) in calls.iter().zip(&expected) {
        let keys: Vec<&str> = call
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for key in [
            "call_id",
            "ts",
            "tool",
            "arguments",
            "action",
            "rule_id",
            "reason",
            "approval",
            "status",
            "policy",
        ] {
            assert!(keys.contains(&key), "{key} missing from {call}");
        }
        assert_eq!(call["tool"], want.tool, "{call}");
        assert_eq!(call["arguments"], want.arguments, "{call}");
        assert_eq!(call["action"], want.action, "{call}");
        assert_eq!(call["rule_id"], want.rule_id, "{call}");
        assert_eq!(call["approval"], want.approval, "{call}");
        assert_eq!(call["status"], want.status, "{call}");
        assert!(
            !call["reason"].as_str().unwrap().is_empty(),
            "a reason is recorded: {call}"
        );
        assert_eq!(call["policy"]["name"], "gavel-default");
        assert_eq!(call["policy"]["digest"].as_str().unwrap().len(), 64);
        let ts = call["ts"].as_str().unwrap().to_owned();
        assert!(ts.ends_with('Z') && ts > last_ts, "{ts} after {last_ts}");
        last_ts = ts;
    }
    let reason = |i: usize| calls[i]["reason"].as_str().unwrap().to_owned();
    assert!(reason(4).contains("sudo rm -rf /"), "{}", reason(4));
    assert!(reason(5).contains("../outside/secret.txt"), "{}", reason(5));
    assert!(reason(6).contains("frobnicate"), "{}", reason(6));
    assert_intact(&sandbox, &[]);
}

#[test]
fn every_call_has_its_events_request_decision_approval_result() {
    let sandbox = Sandbox::new();
    record_mix(&sandbox);
    let conn = Connection::open(&sandbox.db).unwrap();
    let kinds = |call: &str| -> Vec<String> {
        conn.prepare("SELECT kind FROM events WHERE call_id = ?1 ORDER BY seq")
            .unwrap()
            .query_map([call], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(kinds("c1-read"), ["request", "decision", "result"]);
    assert_eq!(
        kinds("c2-write-approved"),
        ["request", "decision", "approval", "result"]
    );
    assert_eq!(
        kinds("c4-bash-cancelled"),
        ["request", "decision", "approval", "result"]
    );
    assert_eq!(kinds("c5-sudo"), ["request", "decision", "result"]);
    let seqs: Vec<u64> = conn
        .prepare("SELECT seq FROM events ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

#[test]
fn check_records_nothing() {
    let sandbox = Sandbox::new();
    run_expecting(
        &mut sandbox.gavel(&["check", "read_file", r#"{"path":"notes.txt"}"#]),
        0,
    );
    run_expecting(
        &mut sandbox.gavel(&["check", "bash", r#"{"command":"sudo ls"}"#]),
        0,
    );
    assert!(!sandbox.db.exists(), "check created the database");
    record_reads(&sandbox, 1);
    let before = event_count(&sandbox.db);
    run_expecting(
        &mut sandbox.gavel(&["check", "write_file", r#"{"path":"a","content":"b"}"#]),
        0,
    );
    assert_eq!(event_count(&sandbox.db), before);
    assert_eq!(ids(&log(&sandbox, &[])), ["r1"]);
}

#[test]
fn untouched_triggers_refuse_update_and_delete() {
    let sandbox = Sandbox::new();
    record_reads(&sandbox, 2);
    let conn = Connection::open(&sandbox.db).unwrap();
    for statement in [
        "UPDATE events SET rule_id = 'x' WHERE seq = 2",
        "DELETE FROM events WHERE seq = 6",
        "UPDATE log_meta SET origin = 'x'",
        "DELETE FROM log_meta",
    ] {
        let err = conn
            .execute(statement, [])
            .expect_err("the trigger refuses the edit");
        let text = err.to_string();
        assert!(text.contains("gavel: "), "{statement}: {text}");
    }
    drop(conn);
    assert_eq!(event_count(&sandbox.db), 6);
    assert_intact(&sandbox, &[]);
}

#[test]
fn killed_run_leaves_an_incomplete_approved_call_and_a_valid_chain() {
    let sandbox = Sandbox::new();
    // `$$` is the shell, which `exec` turns into the sleep: its pid is the
    // process group the bash tool created, so the test can clean it up.
    let command = json!({"command": "echo $$ > sleeper.pid; exec sleep 30"}).to_string();
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_gavel"))
        .args(["run", "bash", &command, "--approve", "--call-id", "slow"])
        .arg("--workspace")
        .arg(&sandbox.ws)
        .arg("--db")
        .arg(&sandbox.db)
        .env_remove("GAVEL_DB")
        .env_remove("GAVEL_POLICY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn gavel run");
    let pid_file = sandbox.ws.join("sleeper.pid");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "the call never started");
        assert!(child.try_wait().unwrap().is_none(), "gavel run ended early");
        if sandbox.db.exists() && pid_file.exists() {
            let output = sandbox.gavel(&["log", "--json", "--call", "slow"]).output();
            if let Ok(output) = output
                && code(&output) == 0
                && json_lines(&output)
                    .first()
                    .is_some_and(|c| c["approval"] == "approved")
            {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL gavel");
    child.wait().unwrap();
    // The sleep outlives gavel; end its process group.
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    unsafe { libc::kill(-pgid, libc::SIGKILL) };

    let calls = log(&sandbox, &[]);
    assert_eq!(ids(&calls), ["slow"]);
    assert_eq!(calls[0]["approval"], "approved");
    assert_eq!(calls[0]["status"], "incomplete");
    assert_eq!(calls[0]["rule_id"], "bash.requires_approval");
    let report = assert_intact(&sandbox, &[]);
    assert_eq!(report["rows"], 3, "request, decision, approval: {report}");
    assert_eq!(ids(&log(&sandbox, &["--status", "incomplete"])), ["slow"]);
    let explained = stdout(&run_expecting(&mut sandbox.gavel(&["explain", "slow"]), 0));
    assert!(explained.contains("incomplete"), "{explained}");
}

#[test]
fn six_concurrent_writers_record_all_150_calls_in_one_valid_chain() {
    let sandbox = Sandbox::new();
    let script = r#"
        set -e
        i=0
        while [ $i -lt 25 ]; do
            i=$((i + 1))
            "$GAVEL" run read_file '{"path":"notes.txt"}' --call-id "w$1-$i" \
                --workspace "$WS" --db "$DB" > /dev/null
        done
    "#;
    let writers: Vec<_> = (1..=6)
        .map(|w| {
            StdCommand::new("sh")
                .args(["-c", script, "writer", &w.to_string()])
                .env("GAVEL", env!("CARGO_BIN_EXE_gavel"))
                .env("WS", &sandbox.ws)
                .env("DB", &sandbox.db)
                .env_remove("GAVEL_DB")
                .env_remove("GAVEL_POLICY")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a writer")
        })
        .collect();
    for writer in writers {
        let output = writer.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "a writer failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let calls = log(&sandbox, &[]);
    assert_eq!(calls.len(), 150);
    let mut seen = ids(&calls);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 150, "every call once");
    for w in 1..=6 {
        // Each writer's calls keep their order.
        let mine: Vec<String> = ids(&calls)
            .into_iter()
            .filter(|id| id.starts_with(&format!("w{w}-")))
            .collect();
        let want: Vec<String> = (1..=25).map(|i| format!("w{w}-{i}")).collect();
        assert_eq!(mine, want);
    }
    assert!(calls.iter().all(|c| c["status"] == "succeeded"));
    let report = assert_intact(&sandbox, &[]);
    assert_eq!(report["rows"], 450, "{report}");
}

#[test]
fn default_database_is_mode_0600_in_a_0700_folder() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    // No --db: the default `.gavel/audit.db` in the workspace.
    run_expecting(
        sandbox
            .bare()
            .args(["run", "read_file", r#"{"path":"notes.txt"}"#])
            .arg("--workspace")
            .arg(&sandbox.ws),
        0,
    );
    let dir = sandbox.ws.join(".gavel");
    let db = dir.join("audit.db");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700, "folder mode {:o}", mode(&dir));
    assert_eq!(mode(&db), 0o600, "database mode {:o}", mode(&db));
    for suffix in ["-wal", "-shm"] {
        let side = sibling(&db, suffix);
        if side.exists() {
            assert_eq!(
                mode(&side) & 0o077,
                0,
                "{} mode {:o}",
                side.display(),
                mode(&side)
            );
        }
    }
    // A --db in folders that do not exist yet gets the same modes.
    let nested = sandbox.root.join("a").join("b").join("audit.db");
    run_expecting(
        sandbox
            .bare()
            .args(["run", "read_file", r#"{"path":"notes.txt"}"#])
            .arg("--workspace")
            .arg(&sandbox.ws)
            .arg("--db")
            .arg(&nested),
        0,
    );
    assert_eq!(mode(nested.parent().unwrap()), 0o700);
    assert_eq!(mode(&nested), 0o600);
}

/// Runs writing and reading commands against `db` and insists each is
/// refused with exit 2 and one stderr line containing `expect`, leaving the
/// file byte for byte as it was and, when `check_sides`, creating no
/// `-wal`, `-shm` or `-journal` file beside it.
fn assert_refused_untouched(sandbox: &Sandbox, db: &Path, expect: &str, check_sides: bool) {
    let before = sha256_file(db);
    let sides_before: Vec<bool> = ["-wal", "-shm", "-journal"]
        .iter()
        .map(|s| sibling(db, s).exists())
        .collect();
    let db_arg = db.to_str().unwrap();
    let key = sandbox.root.join("refusal-key");
    if !key.exists() {
        run_expecting(sandbox.bare().arg("keygen").arg("--out").arg(&key), 0);
    }
    let key_arg = key.to_str().unwrap();
    let commands: [&[&str]; 6] = [
        &[
            "run",
            "write_file",
            r#"{"path":"made.txt","content":"x"}"#,
            "--approve",
        ],
        &["log", "--json"],
        &["verify"],
        &["stats", "--json"],
        &["export"],
        &["checkpoint", "--key", key_arg],
    ];
    for args in commands {
        let output = sandbox
            .bare()
            .args(args)
            .arg("--workspace")
            .arg(&sandbox.ws)
            .arg("--db")
            .arg(db_arg)
            .output()
            .unwrap();
        let err = stderr(&output);
        assert_eq!(code(&output), 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("gavel: "), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(output.stdout.is_empty(), "{args:?}: {}", stdout(&output));
        assert_eq!(sha256_file(db), before, "{args:?} changed the file");
        let sides: Vec<bool> = ["-wal", "-shm", "-journal"]
            .iter()
            .map(|s| sibling(db, s).exists())
            .collect();
        if check_sides {
            assert_eq!(sides, sides_before, "{args:?} left side files");
        }
    }
    assert!(
        !sandbox.ws.join("made.txt").exists(),
        "the call ran without a record"
    );
}

#[test]
fn random_bytes_file_is_refused_and_left_unchanged() {
    let sandbox = Sandbox::new();
    let db = sandbox.root.join("random.bin");
    let bytes: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&db, &bytes).unwrap();
    assert_refused_untouched(&sandbox, &db, "is not a gavel audit database", true);
    assert_eq!(std::fs::read(&db).unwrap(), bytes);
}

#[test]
fn text_file_is_refused_and_left_unchanged() {
    let sandbox = Sandbox::new();
    let db = sandbox.root.join("notes.db");
    std::fs::write(&db, "not a database, just some text\n").unwrap();
    assert_refused_untouched(&sandbox, &db, "is not a gavel audit database", true);
}

#[test]
fn someone_elses_sqlite_database_is_refused_and_left_unchanged() {
    let sandbox = Sandbox::new();
    let db = sandbox.root.join("theirs.db");
    {
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE contacts (name TEXT, phone TEXT);
             INSERT INTO contacts VALUES ('ada', '123');",
        )
        .unwrap();
    }
    assert_refused_untouched(&sandbox, &db, "is not a gavel audit database", true);
    let conn = Connection::open(&db).unwrap();
    let name: String = conn
        .query_row("SELECT name FROM contacts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(name, "ada");
}

#[test]
fn someone_elses_wal_sqlite_database_is_refused_and_left_unchanged() {
    let sandbox = Sandbox::new();
    let db = sandbox.root.join("theirs-wal.db");
    {
        let conn = Connection::open(&db).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    // Side files: see the ignored test below.
    assert_refused_untouched(&sandbox, &db, "is not a gavel audit database", false);
}

#[test]
fn database_from_a_newer_gavel_is_refused_and_left_unchanged() {
    let sandbox = Sandbox::new();
    record_reads(&sandbox, 1);
    {
        let conn = Connection::open(&sandbox.db).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    assert!(!sibling(&sandbox.db, "-wal").exists());
    assert_refused_untouched(&sandbox, &sandbox.db, "newer gavel", false);
    let err = stderr(&run_expecting(&mut sandbox.gavel(&["log"]), 2));
    assert!(err.contains("schema 99"), "{err}");
}

#[test]
fn refused_wal_databases_get_no_side_files_from_read_only_commands() {
    let sandbox = Sandbox::new();
    let theirs = sandbox.root.join("theirs-wal.db");
    {
        let conn = Connection::open(&theirs).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    assert!(!sibling(&theirs, "-wal").exists());
    assert_refused_untouched(&sandbox, &theirs, "is not a gavel audit database", true);

    record_reads(&sandbox, 1);
    {
        let conn = Connection::open(&sandbox.db).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    assert!(!sibling(&sandbox.db, "-wal").exists());
    assert_refused_untouched(&sandbox, &sandbox.db, "newer gavel", true);
}

/// `scripts/verify_chain.py ARGS`: its exit code and output, or `None`
/// without python3.
fn python_verifier(args: &[&std::ffi::OsStr]) -> Option<(i32, String)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/verify_chain.py");
    match StdCommand::new("python3").arg(&script).args(args).output() {
        Ok(output) => Some((
            output.status.code().expect("python3 exited"),
            format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        )),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("note: python3 is not on PATH; skipping the independent verifier");
            None
        }
        Err(err) => panic!("cannot run python3: {err}"),
    }
}

fn python_verify(db: &Path) -> Option<(i32, String)> {
    python_verifier(&[db.as_os_str()])
}

/// The fields of a verify report both verifiers must agree on (`detail` is prose).
fn comparable(report: &Value) -> Value {
    let mut report = report.clone();
    report.as_object_mut().unwrap().remove("detail");
    report
}

/// `gavel verify --json ARGS` and `verify_chain.py --json ARGS` give the same
/// report; returns gavel's.
pub fn both_agree(sandbox: &Sandbox, what: &str, args: &[&std::ffi::OsStr]) -> Value {
    let output = sandbox
        .bare()
        .args(["verify", "--json"])
        .args(args)
        .arg("--workspace")
        .arg(&sandbox.ws)
        .output()
        .unwrap();
    let exit = code(&output);
    assert!(exit == 0 || exit == 1, "{what}: {}", stderr(&output));
    let gavel = json(&output);
    let mut py_args: Vec<&std::ffi::OsStr> = vec!["--json".as_ref()];
    py_args.extend_from_slice(args);
    let Some((py_exit, text)) = python_verifier(&py_args) else {
        return gavel;
    };
    let python: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{what}: python printed no report ({e}): {text}"));
    assert_eq!(comparable(&python), comparable(&gavel), "{what}");
    assert_eq!(py_exit, exit, "{what}");
    gavel
}

#[test]
fn python_verifier_agrees_with_gavel_verify() {
    let sandbox = Sandbox::new();
    record_mix(&sandbox);
    let report = assert_intact(&sandbox, &[]);
    let Some((exit, text)) = python_verify(&sandbox.db) else {
        return;
    };
    assert_eq!(exit, 0, "{text}");
    assert_eq!(text.trim(), format!("ok: {} rows", report["rows"]));

    // The same tampering, judged by both.
    let tampers: [(&str, &str, u64); 3] = [
        (
            "UPDATE events SET ts_us = ts_us + 1 WHERE seq = 7",
            "content_mismatch",
            7,
        ),
        ("DELETE FROM events WHERE seq = 5", "seq_gap", 5),
        (
            "UPDATE events SET log_id = zeroblob(16) WHERE seq = 3",
            "log_id_mismatch",
            3,
        ),
    ];
    for (statement, problem, seq) in tampers {
        let copy = sandbox.root.join(format!("copy-{seq}.db"));
        std::fs::copy(&sandbox.db, &copy).unwrap();
        attacker(&copy).execute(statement, []).unwrap();
        let output = sandbox
            .bare()
            .args(["verify", "--json", "--workspace"])
            .arg(&sandbox.ws)
            .arg("--db")
            .arg(&copy)
            .output()
            .unwrap();
        assert_eq!(code(&output), 1, "{statement}");
        let report = json(&output);
        assert_eq!(report["problem"], problem, "{report}");
        assert_eq!(report["first_bad_seq"], seq, "{report}");
        let (exit, text) = python_verify(&copy).unwrap();
        assert_eq!(exit, 1, "{statement}: {text}");
        assert_eq!(
            text.trim(),
            format!("{problem} at seq {seq}"),
            "{statement}"
        );
    }
}

/// A log of the eight mixed calls, a stored checkpoint signed by `k` (also
/// written to `cp`), and two more calls after it. Returns the key's public file.
fn checkpointed_mix(sandbox: &Sandbox) -> (PathBuf, PathBuf, u64) {
    record_mix(sandbox);
    let key = sandbox.root.join("k");
    run_expecting(sandbox.bare().args(["keygen", "--out"]).arg(&key), 0);
    let cp = run_expecting(
        &mut sandbox.gavel(&["checkpoint", "--key", key.to_str().unwrap()]),
        0,
    );
    let cp_file = sandbox.root.join("cp");
    std::fs::write(&cp_file, &cp.stdout).unwrap();
    let size = event_count(&sandbox.db);
    record_reads_from(sandbox, 100, 2);
    let other = sandbox.root.join("other");
    run_expecting(sandbox.bare().args(["keygen", "--out"]).arg(&other), 0);
    (sibling(&key, ".pub"), cp_file, size)
}

#[test]
#[ignore = "slow: a plain `cargo test` leaves it out; `cargo test -- --ignored` (and CI) runs it"]
fn python_verifier_agrees_with_gavel_on_every_tampered_copy() {
    let sandbox = Sandbox::new();
    let (public, cp, size) = checkpointed_mix(&sandbox);
    let other = sandbox.root.join("other.pub");
    let cut = format!("DELETE FROM events WHERE seq > {}", size - 2);
    let tampers: Vec<&str> = vec![
        "SELECT 1",
        "UPDATE events SET ts_us = ts_us + 1 WHERE seq = 7",
        "DELETE FROM events WHERE seq = 5",
        "UPDATE events SET log_id = zeroblob(16) WHERE seq = 3",
        "UPDATE events SET payload = CAST(payload AS TEXT) WHERE seq = 4",
        "UPDATE events SET kind = CAST(kind AS BLOB) WHERE seq = 2",
        "UPDATE events SET tool = CAST(tool AS BLOB) WHERE seq = 2",
        "UPDATE events SET leaf = hex(leaf) WHERE seq = 9",
        "UPDATE events SET chain = zeroblob(32) WHERE seq = 6",
        "UPDATE events SET chain = zeroblob(31) WHERE seq = 6",
        "UPDATE events SET leaf = zeroblob(32) WHERE seq = 6",
        "UPDATE events SET ts_us = ts_us + 0.5 WHERE seq = 8",
        "UPDATE events SET call_id = CAST(X'ff' AS TEXT) WHERE seq = 8",
        "UPDATE events SET seq = seq + 100 WHERE seq = (SELECT max(seq) FROM events)",
        "INSERT INTO events SELECT seq + 1000, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status, payload, leaf, chain, user, host, client, session, agent FROM events WHERE seq = 3",
        &cut,
        "DELETE FROM events",
        "DROP TRIGGER checkpoints_no_update; UPDATE checkpoints SET root = zeroblob(32)",
        "DROP TRIGGER checkpoints_no_update; UPDATE checkpoints SET note = 'x'",
        "DROP TRIGGER checkpoints_no_update; UPDATE checkpoints SET root = hex(root)",
        "DROP TRIGGER checkpoints_no_update; UPDATE checkpoints SET size = size - 1",
        "INSERT INTO checkpoints (size, root, note, created_us) SELECT size, root, note, created_us FROM checkpoints",
        "DROP TRIGGER log_meta_no_update; UPDATE log_meta SET format = 3",
        "DROP TRIGGER log_meta_no_update; UPDATE log_meta SET format = 1",
        "UPDATE events SET user = 'mallory' WHERE seq = 4",
        "UPDATE events SET agent = 'a1' WHERE seq = 5",
        "DROP TRIGGER log_meta_no_update; UPDATE log_meta SET origin = 'gavel/x'",
        "DROP TRIGGER log_meta_no_update; UPDATE log_meta SET genesis = zeroblob(32)",
        "DROP TRIGGER log_meta_no_update; UPDATE log_meta SET genesis = hex(genesis)",
        "DROP TRIGGER log_meta_no_delete; DELETE FROM log_meta",
    ];
    let mut problems = std::collections::BTreeSet::new();
    for (i, statement) in tampers.iter().enumerate() {
        let copy = sandbox.root.join(format!("copy-{i}.db"));
        std::fs::copy(&sandbox.db, &copy).unwrap();
        attacker(&copy).execute_batch(statement).unwrap();
        let flag_sets: [Vec<&std::ffi::OsStr>; 3] = [
            vec![],
            vec!["--public-key".as_ref(), other.as_os_str()],
            vec![
                "--checkpoint".as_ref(),
                cp.as_os_str(),
                "--public-key".as_ref(),
                public.as_os_str(),
            ],
        ];
        for flags in flag_sets {
            let report = both_agree_db(&sandbox, statement, &flags, &copy);
            problems.insert(report["problem"].as_str().unwrap_or("ok").to_owned());
        }
    }
    for problem in [
        "ok",
        "content_mismatch",
        "seq_gap",
        "log_id_mismatch",
        "chain_break",
        "checkpoint_truncated",
        "checkpoint_mismatch",
        "checkpoint_signature",
        "unknown_format",
        "identity_mismatch",
    ] {
        assert!(
            problems.contains(problem),
            "no case reported {problem}: {problems:?}"
        );
    }
}

/// [`both_agree`] for a database: gavel gets `--db DB`, Python `DB`.
pub fn both_agree_db(
    sandbox: &Sandbox,
    what: &str,
    flags: &[&std::ffi::OsStr],
    db: &Path,
) -> Value {
    let output = sandbox
        .bare()
        .args(["verify", "--json"])
        .args(flags)
        .arg("--db")
        .arg(db)
        .arg("--workspace")
        .arg(&sandbox.ws)
        .output()
        .unwrap();
    let exit = code(&output);
    assert!(exit == 0 || exit == 1, "{what}: {}", stderr(&output));
    let gavel = json(&output);
    let mut py_args: Vec<&std::ffi::OsStr> = vec!["--json".as_ref()];
    py_args.extend_from_slice(flags);
    py_args.push(db.as_os_str());
    let Some((py_exit, text)) = python_verifier(&py_args) else {
        return gavel;
    };
    let python: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{what} {flags:?}: python printed no report ({e}): {text}"));
    assert_eq!(comparable(&python), comparable(&gavel), "{what} {flags:?}");
    assert_eq!(py_exit, exit, "{what} {flags:?}");
    gavel
}

#[test]
#[ignore = "slow: a plain `cargo test` leaves it out; `cargo test -- --ignored` (and CI) runs it"]
fn python_verifier_agrees_with_gavel_on_every_tampered_export() {
    let sandbox = Sandbox::new();
    let (public, cp, size) = checkpointed_mix(&sandbox);
    let whole = json_lines(&run_expecting(&mut sandbox.gavel(&["export"]), 0));
    let filtered = json_lines(&run_expecting(
        &mut sandbox.gavel(&["export", "--tool", "write_file"]),
        0,
    ));
    type Edit = Box<dyn Fn(&mut Vec<Value>)>;
    let edits: Vec<(&str, bool, Edit)> = vec![
        ("untouched", true, Box::new(|_| {})),
        ("filtered untouched", false, Box::new(|_| {})),
        (
            "payload_raw",
            true,
            Box::new(|l| {
                let raw = l[6]["payload_raw"].as_str().unwrap().to_owned() + " ";
                l[6]["payload_raw"] = raw.into();
            }),
        ),
        (
            "payload copy",
            true,
            Box::new(|l| l[6]["payload"] = json!({"forged": true})),
        ),
        (
            "ts",
            true,
            Box::new(|l| l[4]["ts"] = "2000-01-01T00:00:00.000000Z".into()),
        ),
        ("ts_us", false, Box::new(|l| l[2]["ts_us"] = json!(1))),
        ("ts_us type", true, Box::new(|l| l[3]["ts_us"] = json!("1"))),
        (
            "dropped line",
            true,
            Box::new(|l| {
                l.remove(5);
            }),
        ),
        (
            "dropped filtered line",
            false,
            Box::new(|l| {
                l.remove(1);
            }),
        ),
        (
            "cut tail",
            true,
            Box::new(move |l| l.truncate(size as usize - 1)),
        ),
        ("format", true, Box::new(|l| l[0]["format"] = json!(3))),
        ("old format", true, Box::new(|l| l[0]["format"] = json!(1))),
        ("line format", true, Box::new(|l| l[3]["format"] = json!(1))),
        ("user", true, Box::new(|l| l[3]["user"] = "mallory".into())),
        (
            "filtered line format",
            false,
            Box::new(|l| l[1]["format"] = json!(1)),
        ),
        (
            "filtered user",
            false,
            Box::new(|l| l[1]["user"] = "mallory".into()),
        ),
        (
            "origin",
            true,
            Box::new(|l| l[0]["origin"] = "gavel/x".into()),
        ),
        (
            "genesis",
            false,
            Box::new(|l| l[0]["genesis"] = json!("00".repeat(32))),
        ),
        (
            "checkpoint note",
            true,
            Box::new(|l| l[1]["note"] = "x".into()),
        ),
        (
            "checkpoint root",
            true,
            Box::new(|l| l[1]["root"] = json!("00".repeat(32))),
        ),
        (
            "dropped checkpoint",
            true,
            Box::new(|l| {
                l.remove(1);
            }),
        ),
        (
            "leaf",
            true,
            Box::new(|l| l[3]["leaf"] = json!("00".repeat(32))),
        ),
        (
            "chain",
            false,
            Box::new(|l| l[2]["chain"] = json!("00".repeat(32))),
        ),
        (
            "log_id",
            true,
            Box::new(|l| l[3]["log_id"] = json!("00".repeat(16))),
        ),
        ("swapped", true, Box::new(|l| l.swap(3, 4))),
        (
            "not an event",
            true,
            Box::new(|l| l[3] = json!({"record": "other"})),
        ),
        (
            "payload as hex",
            true,
            Box::new(|l| {
                let raw = l[3]["payload_raw"].as_str().unwrap().to_owned();
                l[3].as_object_mut().unwrap().remove("payload_raw");
                l[3]["payload_hex"] = raw
                    .bytes()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
                    .into();
            }),
        ),
    ];
    let mut problems = std::collections::BTreeSet::new();
    for (i, (what, is_whole, edit)) in edits.iter().enumerate() {
        let mut lines = if *is_whole {
            whole.clone()
        } else {
            filtered.clone()
        };
        edit(&mut lines);
        let file = sandbox.root.join(format!("export-{i}.jsonl"));
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&file, text).unwrap();
        let mut flag_sets: Vec<Vec<&std::ffi::OsStr>> =
            vec![vec!["--export".as_ref(), file.as_os_str()]];
        if *is_whole {
            flag_sets.push(vec![
                "--export".as_ref(),
                file.as_os_str(),
                "--checkpoint".as_ref(),
                cp.as_os_str(),
                "--public-key".as_ref(),
                public.as_os_str(),
            ]);
        }
        for flags in flag_sets {
            let report = both_agree(&sandbox, what, &flags);
            problems.insert(report["problem"].as_str().unwrap_or("ok").to_owned());
        }
    }
    for problem in [
        "ok",
        "content_mismatch",
        "seq_gap",
        "log_id_mismatch",
        "chain_break",
        "checkpoint_truncated",
        "checkpoint_mismatch",
        "unknown_format",
        "identity_mismatch",
    ] {
        assert!(
            problems.contains(problem),
            "no export case reported {problem}: {problems:?}"
        );
    }
}

#[test]
fn reused_call_id_is_refused_and_the_call_does_not_run() {
    let sandbox = Sandbox::new();
    record_reads(&sandbox, 1);
    let output = run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "write_file",
            r#"{"path":"second.txt","content":"x"}"#,
            "--approve",
            "--call-id",
            "r1",
        ]),
        2,
    );
    let err = stderr(&output);
    assert!(err.contains("call id `r1` was already used"), "{err}");
    assert!(!sandbox.ws.join("second.txt").exists(), "the call ran");
    assert_eq!(ids(&log(&sandbox, &[])), ["r1"]);
    assert_eq!(event_count(&sandbox.db), 3);
    assert_intact(&sandbox, &[]);
}

#[test]
fn zero_length_database_is_refused_by_run_like_verify_and_left_empty() {
    let sandbox = Sandbox::new();
    let db = sandbox.root.join("empty.db");
    std::fs::write(&db, b"").unwrap();
    assert_refused_untouched(&sandbox, &db, "is an empty file", true);
    assert_eq!(std::fs::metadata(&db).unwrap().len(), 0);
}

/// `gavel ARGS` run as the unprivileged user `nobody` through `setpriv`, or
/// `None` when that is not possible here (not root, or no `setpriv`):
/// root's writes ignore file modes, so only another user proves a read-only
/// folder is really read-only.
fn as_nobody(sandbox: &Sandbox, args: &[&str]) -> Option<std::process::Output> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("note: not root; skipping the unprivileged-user check");
        return None;
    }
    let output = StdCommand::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_gavel"))
        .args(args)
        .arg("--workspace")
        .arg(&sandbox.ws)
        .arg("--db")
        .arg(&sandbox.db)
        .env_remove("GAVEL_DB")
        .env_remove("GAVEL_POLICY")
        .current_dir("/")
        .output();
    match output {
        Ok(output) => Some(output),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("note: no setpriv; skipping the unprivileged-user check");
            None
        }
        Err(err) => panic!("cannot run setpriv: {err}"),
    }
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn read_only_commands_work_on_a_log_in_a_folder_they_cannot_write() {
    let sandbox = Sandbox::new();
    record_mix(&sandbox);
    assert!(!sibling(&sandbox.db, "-wal").exists());
    let before = sha256_file(&sandbox.db);
    // Commands run as root may make side files in a writable folder; this
    // one is read-only to its reader: folder 0555, file 0444.
    chmod(&sandbox.root, 0o555);
    chmod(&sandbox.db, 0o444);
    chmod(&sandbox.ws, 0o755);
    let files = listing(&sandbox.root);
    let commands: [&[&str]; 8] = [
        &["verify", "--json"],
        &["log", "--json"],
        &["show", "c1-read"],
        &["explain", "c2-write-approved"],
        &["stats", "--json"],
        &["export"],
        &["replay", "--format", "json", "--fail-on", "never"],
        &["export", "--format", "csv"],
    ];
    let mut ran = false;
    for args in commands {
        let Some(output) = as_nobody(&sandbox, args) else {
            break;
        };
        ran = true;
        assert_eq!(code(&output), 0, "{args:?}: {}", stderr(&output));
        assert!(!output.stdout.is_empty(), "{args:?}");
        assert_eq!(listing(&sandbox.root), files, "{args:?} made a file");
        assert_eq!(sha256_file(&sandbox.db), before, "{args:?} changed the log");
    }
    if ran {
        let output = as_nobody(&sandbox, &["verify", "--json"]).unwrap();
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["ok"], true, "{report}");
        assert_eq!(
            report["rows"],
            json!(json_lines(&run_expecting(&mut sandbox.gavel(&["export"]), 0)).len() - 1)
        );
        // A writer is refused there, with one line.
        let output = as_nobody(&sandbox, &["run", "read_file", r#"{"path":"notes.txt"}"#]).unwrap();
        assert_eq!(code(&output), 2, "{}", stderr(&output));
        assert_eq!(stderr(&output).lines().count(), 1, "{}", stderr(&output));
        assert_eq!(sha256_file(&sandbox.db), before);
    }
    // Root, too, reads it without making side files or changing a byte.
    for args in commands {
        run_expecting(&mut sandbox.gavel(args), 0);
        assert_eq!(listing(&sandbox.root), files, "{args:?} made a file");
    }
    assert_eq!(sha256_file(&sandbox.db), before);
    chmod(&sandbox.root, 0o755);
    chmod(&sandbox.db, 0o600);
}

#[test]
fn read_only_commands_make_no_side_files_in_a_writable_folder() {
    let sandbox = Sandbox::new();
    record_mix(&sandbox);
    let before = sha256_file(&sandbox.db);
    let files = listing(&sandbox.root);
    assert!(
        !files
            .iter()
            .any(|f| f.ends_with("-wal") || f.ends_with("-shm")),
        "{files:?}"
    );
    for args in [
        &["verify"][..],
        &["log"],
        &["show", "c1-read"],
        &["explain", "c1-read"],
        &["stats"],
        &["export"],
        &["replay", "--fail-on", "never"],
    ] {
        run_expecting(&mut sandbox.gavel(args), 0);
        assert_eq!(listing(&sandbox.root), files, "{args:?} made a file");
    }
    assert_eq!(sha256_file(&sandbox.db), before);
}

#[test]
fn log_with_a_wal_its_reader_cannot_apply_gets_one_clear_line() {
    let sandbox = Sandbox::new();
    record_reads(&sandbox, 2);
    // A writer's WAL left behind (a crash, or a writer still running), with
    // no shared-memory index, in a folder the reader cannot write.
    std::fs::write(sibling(&sandbox.db, "-wal"), b"").unwrap();
    chmod(&sandbox.root, 0o555);
    chmod(&sandbox.ws, 0o755);
    chmod(&sandbox.db, 0o444);
    chmod(&sibling(&sandbox.db, "-wal"), 0o444);
    let output = as_nobody(&sandbox, &["log"]);
    chmod(&sandbox.root, 0o755);
    let Some(output) = output else { return };
    let err = stderr(&output);
    assert_eq!(code(&output), 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("write-ahead log"), "{err}");
    assert!(err.contains("cannot create or use"), "{err}");
}

#[test]
fn loose_modes_on_gavel_s_own_folder_and_database_are_tightened_and_said() {
    let sandbox = Sandbox::new();
    let run = |sandbox: &Sandbox| {
        sandbox
            .bare()
            .args(["run", "read_file", r#"{"path":"notes.txt"}"#])
            .arg("--workspace")
            .arg(&sandbox.ws)
            .output()
            .unwrap()
    };
    assert_eq!(code(&run(&sandbox)), 0);
    let dir = sandbox.ws.join(".gavel");
    let db = dir.join("audit.db");
    chmod(&dir, 0o755);
    chmod(&db, 0o644);
    let output = run(&sandbox);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("tightened"), "{err}");
    assert!(
        err.contains("0755 -> 0700") && err.contains("0644 -> 0600"),
        "{err}"
    );
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&db), 0o600);
    // Already tight: nothing said.
    let output = run(&sandbox);
    assert!(stderr(&output).is_empty(), "{}", stderr(&output));
}

#[test]
fn loose_database_that_cannot_be_tightened_is_refused() {
    let sandbox = Sandbox::new();
    record_reads(&sandbox, 1);
    // Someone else's (root's) log, readable and writable by everyone: the
    // unprivileged user can write it but not change its mode.
    chmod(&sandbox.root, 0o777);
    chmod(&sandbox.ws, 0o777);
    chmod(&sandbox.db, 0o666);
    let before = sha256_file(&sandbox.db);
    let Some(output) = as_nobody(&sandbox, &["run", "read_file", r#"{"path":"notes.txt"}"#]) else {
        return;
    };
    let err = stderr(&output);
    assert_eq!(code(&output), 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("mode 0666") && err.contains("cannot be tightened"),
        "{err}"
    );
    assert_eq!(sha256_file(&sandbox.db), before);
    chmod(&sandbox.root, 0o755);
}

#[test]
fn log_at_a_path_with_uri_characters_is_read_where_it_is() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root.join("we?ird #dir %41 é");
    std::fs::create_dir(&dir).unwrap();
    let db = dir.join("audit?.db");
    let gavel = |args: &[&str]| {
        let mut cmd = sandbox.bare();
        cmd.args(args)
            .arg("--workspace")
            .arg(&sandbox.ws)
            .arg("--db")
            .arg(&db);
        cmd
    };
    run_expecting(
        &mut gavel(&["run", "read_file", r#"{"path":"notes.txt"}"#]),
        0,
    );
    let report = json(&run_expecting(&mut gavel(&["verify", "--json"]), 0));
    assert_eq!(report["rows"], 3, "{report}");
    let calls = json_lines(&run_expecting(&mut gavel(&["log", "--json"]), 0));
    assert_eq!(calls.len(), 1);
    // Nothing was created anywhere else (a misread URI would open another file).
    // (The redaction key lives beside the log, by design.)
    assert_eq!(listing(&dir), ["audit?.db", "audit?.db.redact-key"]);
}

/// A verifier key file naming the 32 bytes `public` (hex) as `gavel`.
fn key_file(dir: &Path, label: &str, public: &str) -> PathBuf {
    use base64::Engine as _;
    let mut data = vec![0x01u8];
    data.extend((0..32).map(|i| u8::from_str_radix(&public[2 * i..2 * i + 2], 16).unwrap()));
    let id = Sha256::digest([b"gavel\n".as_slice(), &data].concat());
    let text = format!(
        "gavel+{}+{}\n",
        id[..4]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
        base64::engine::general_purpose::STANDARD.encode(&data)
    );
    let path = dir.join(format!("{label}.pub"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_verifier_key_whose_y_is_not_reduced_was_accepted() {
    let sandbox = Sandbox::new();
    record_mix(&sandbox);
    let y_at_least_p = format!("f0{}7f", "ff".repeat(30)); // y = 3 + p
    let small_order = "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05";
    for (label, public) in [("unreduced", y_at_least_p.as_str()), ("small", small_order)] {
        let key = key_file(&sandbox.root, label, public);
        let out = sandbox
            .gavel(&["verify", "--public-key", key.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{label}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("Ed25519"),
            "{label}: {}",
            stderr(&out)
        );
        let args = [
            "--public-key".as_ref(),
            key.as_os_str(),
            sandbox.db.as_os_str(),
        ];
        if let Some((exit, text)) = python_verifier(&args) {
            assert_eq!(exit, 2, "{label}: {text}");
        }
    }
}

/// The log's id, as its export names it.
fn log_id(sandbox: &Sandbox) -> String {
    let header = json_lines(&run_expecting(&mut sandbox.gavel(&["export"]), 0)).remove(0);
    header["log_id"].as_str().unwrap().to_owned()
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_checkpoint_key_sat_beside_the_log_where_its_rewriter_could_resign() {
    let sandbox = Sandbox::new();
    let read = |id: &str| {
        let mut cmd = sandbox.gavel(&[
            "run",
            "read_file",
            r#"{"path":"notes.txt"}"#,
            "--call-id",
            id,
        ]);
        cmd.env("GAVEL_CHECKPOINT_EVERY", "1");
        run_expecting(&mut cmd, 0);
    };
    read("first");
    read("second");
    let beside = sandbox.root.join("audit.db.checkpoint-key");
    assert!(!beside.exists(), "a key beside the log");
    let keys = sandbox.root.join("data/gavel/keys");
    let key = keys.join(format!("{}.checkpoint-key", log_id(&sandbox)));
    let public = keys.join(format!("{}.checkpoint-key.pub", log_id(&sandbox)));
    assert_eq!(mode_of(&keys), 0o700);
    assert_eq!(mode_of(&sandbox.root.join("data/gavel")), 0o700);
    assert_eq!(mode_of(&key), 0o600);
    assert!(
        std::fs::read_to_string(&public)
            .unwrap()
            .starts_with("gavel+")
    );
    let report = both_agree_db(
        &sandbox,
        "the user key",
        &["--public-key".as_ref(), public.as_os_str()],
        &sandbox.db,
    );
    assert_eq!(report["signature_checked"], true, "{report}");
    assert_eq!(report["stored_checkpoints"], 2, "{report}");
    let doctor = json(
        &sandbox
            .gavel(&["doctor", "--format", "json"])
            .output()
            .unwrap(),
    );
    let check = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "checkpoint key")
        .cloned()
        .unwrap_or_default();
    assert_eq!(check["status"], "ok", "{doctor}");

    // A log an older gavel left with its key beside it: still used (its
    // checkpoints keep verifying with that key), and doctor says to move it.
    let old = Sandbox::new();
    run_expecting(
        &mut old.gavel(&["run", "read_file", r#"{"path":"notes.txt"}"#]),
        0,
    );
    let beside = old.root.join("audit.db.checkpoint-key");
    run_expecting(
        old.bare()
            .args(["keygen", "--name", "gavel", "--out"])
            .arg(&beside),
        0,
    );
    let mut cmd = old.gavel(&["run", "read_file", r#"{"path":"notes.txt"}"#]);
    cmd.env("GAVEL_CHECKPOINT_EVERY", "1");
    run_expecting(&mut cmd, 0);
    assert!(
        !old.root
            .join("data/gavel/keys")
            .join(format!("{}.checkpoint-key", log_id(&old)))
            .exists()
    );
    let public = old.root.join("audit.db.checkpoint-key.pub");
    let report = both_agree_db(
        &old,
        "the key beside",
        &["--public-key".as_ref(), public.as_os_str()],
        &old.db,
    );
    assert_eq!(
        (&report["ok"], &report["signature_checked"]),
        (&json!(true), &json!(true)),
        "{report}"
    );
    let doctor = json(&old.gavel(&["doctor", "--format", "json"]).output().unwrap());
    let check = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "checkpoint key")
        .cloned()
        .unwrap_or_default();
    assert_eq!(check["status"], "warn", "{doctor}");
    assert!(
        check["message"].as_str().unwrap().contains("re-sign"),
        "{check}"
    );
}
