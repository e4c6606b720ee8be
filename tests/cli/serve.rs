//! `gavel serve --stdio`: a whole session over JSON lines, then the record.

use std::path::PathBuf;
use std::process::Output;

use assert_cmd::Command;
use serde_json::{Value, json};

struct Env {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    db: PathBuf,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(ws.join("a.txt"), "hello\n").unwrap();
        let db = dir.path().join("audit.db");
        Self { _dir: dir, ws, db }
    }

    fn gavel(&self) -> Command {
        let mut cmd = Command::cargo_bin("gavel").unwrap();
        cmd.env_remove("GAVEL_POLICY")
            .env_remove("GAVEL_DB")
            .arg("--workspace")
            .arg(&self.ws)
            .arg("--db")
            .arg(&self.db);
        cmd
    }

    /// Runs a session: `lines` in, every output line parsed.
    fn serve(&self, lines: &[String], extra: &[&str]) -> Vec<Value> {
        let out = self
            .gavel()
            .args(["serve", "--stdio"])
            .args(extra)
            .write_stdin(lines.join("\n") + "\n")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        crate::support::json_lines(&out)
    }

    fn log(&self) -> Vec<Value> {
        let out = self.gavel().args(["log", "--json"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        crate::support::json_lines(&out)
    }

    fn verify(&self) {
        let out = self.gavel().arg("verify").output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
}

fn stderr(out: &Output) -> String {
    crate::support::stderr(out)
}

fn lines(values: &[Value]) -> Vec<String> {
    values.iter().map(Value::to_string).collect()
}

const ASK_REASON: &str = "write_file mutates workspace content and requires user approval";

#[test]
fn serve_stdio_full_session() {
    let env = Env::new();
    let mut input = lines(&[
        json!({"type":"tool_use","id":"toolu_read","name":"read_file","input":{"path":"a.txt"}}),
        json!({"type":"tool_use","id":"toolu_write","name":"write_file","input":{"path":"b.txt","content":"yes"}}),
        json!({"type":"approval","id":"toolu_write","approved":true}),
        json!({"type":"tool_use","id":"toolu_no","name":"write_file","input":{"path":"c.txt","content":"no"}}),
        json!({"type":"approval","id":"toolu_no","approved":false}),
    ]);
    input.push("this is not json".to_owned());
    input.extend(lines(&[json!({
        "type":"function_call","call_id":"call_openai","name":"read_file",
        "arguments":"{\"path\":\"b.txt\"}"
    })]));
    let mut out = env.serve(&input, &["--durability", "normal"]);
    assert_eq!(out.len(), 7, "{out:#?}");
    // Each answer says where its receipt is: its call, the log, the leaf
    // of its first row (no checkpoint yet: the session's end signs it).
    let mut indexes = Vec::new();
    for line in out.iter_mut().filter(|l| l["type"] == "tool_result") {
        let receipt = line.as_object_mut().unwrap().remove("receipt").unwrap();
        assert_eq!(receipt["call_id"], line["call_id"]);
        assert!(receipt["log"].as_str().unwrap().starts_with("gavel/"));
        assert!(receipt.get("checkpoint").is_none(), "{receipt}");
        indexes.push(receipt["index"].as_u64().unwrap());
    }
    assert_eq!(indexes.len(), 4);
    assert!(indexes.windows(2).all(|w| w[0] < w[1]), "{indexes:?}");

    assert_eq!(
        out[0],
        json!({
            "type": "tool_result", "tool_use_id": "toolu_read", "content": "hello\n",
            "is_error": false, "call_id": "toolu_read", "action": "allow",
            "rule_id": "path.read_allow", "reason": "read_file only reads inside the workspace",
            "approval": "not_required", "status": "succeeded",
        })
    );
    assert_eq!(
        out[1],
        json!({
            "type": "approval_request", "id": "toolu_write",
            "rule_id": "path.write_requires_approval", "reason": ASK_REASON,
            "tool": "write_file", "input": {"path":"b.txt","content":"yes"},
        })
    );
    assert_eq!(
        out[2],
        json!({
            "type": "tool_result", "tool_use_id": "toolu_write", "content": "wrote 3 bytes to b.txt",
            "is_error": false, "call_id": "toolu_write", "action": "ask",
            "rule_id": "path.write_requires_approval", "reason": ASK_REASON,
            "approval": "approved", "status": "succeeded",
        })
    );
    assert_eq!(out[3]["type"], "approval_request");
    assert_eq!(out[3]["id"], "toolu_no");
    assert_eq!(
        out[4],
        json!({
            "type": "tool_result", "tool_use_id": "toolu_no",
            "content": format!("Permission blocked [path.write_requires_approval]: {ASK_REASON} (approval=rejected)"),
            "is_error": true, "call_id": "toolu_no", "action": "ask",
            "rule_id": "path.write_requires_approval", "reason": ASK_REASON,
            "approval": "rejected", "status": "blocked",
        })
    );
    assert_eq!(out[5]["type"], "error");
    assert!(
        out[5]["error"].as_str().unwrap().contains("not JSON"),
        "{}",
        out[5]
    );
    assert_eq!(out[6]["tool_use_id"], "call_openai");
    assert_eq!(out[6]["content"], "yes");
    assert_eq!(out[6]["status"], "succeeded");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("b.txt")).unwrap(),
        "yes"
    );
    assert!(!env.ws.join("c.txt").exists());

    let calls = env.log();
    let summary: Vec<(&str, &str, &str, &str)> = calls
        .iter()
        .map(|c| {
            (
                c["call_id"].as_str().unwrap(),
                c["action"].as_str().unwrap(),
                c["approval"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("toolu_read", "allow", "not_required", "succeeded"),
            ("toolu_write", "ask", "approved", "succeeded"),
            ("toolu_no", "ask", "rejected", "blocked"),
            ("call_openai", "allow", "not_required", "succeeded"),
        ]
    );
    env.verify();
}

#[test]
fn serve_stdio_ask_at_end_of_input_is_cancelled() {
    let env = Env::new();
    let out = env.serve(
        &lines(&[json!({"type":"tool_use","id":"t1","name":"bash","input":{"command":"touch x"}})]),
        &[],
    );
    let types: Vec<&str> = out.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["approval_request", "error", "tool_result"]);
    assert_eq!(out[2]["approval"], "cancelled");
    assert_eq!(out[2]["status"], "blocked");
    assert!(!env.ws.join("x").exists());
    assert_eq!(env.log()[0]["approval"], "cancelled");
}

#[test]
fn serve_stdio_malformed_approval_is_cancelled_and_the_server_goes_on() {
    let env = Env::new();
    let out = env.serve(
        &lines(&[
            json!({"type":"tool_use","id":"t1","name":"bash","input":{"command":"touch x"}}),
            json!({"type":"approval","id":"someone-else","approved":true}),
            json!({"type":"tool_use","id":"t2","name":"bash","input":{"command":"sudo ls"}}),
            json!({"type":"approval","id":"t2","approved":true}),
            json!({"type":"tool_use","id":"t2","name":"read_file","input":{"path":"a.txt"}}),
            json!({"type":"tool_use","name":"read_file"}),
        ]),
        &[],
    );
    let types: Vec<&str> = out.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "approval_request",
            "error",
            "tool_result",
            "tool_result",
            "error",
            "error",
            "error"
        ],
        "{out:#?}"
    );
    assert_eq!(out[2]["approval"], "cancelled");
    // A deny asks nobody: the approval line after it is not a request.
    assert_eq!(out[3]["rule_id"], "bash.hard_deny");
    assert_eq!(out[3]["status"], "blocked");
    assert!(
        out[4]["error"]
            .as_str()
            .unwrap()
            .contains("no approval was requested")
    );
    // A second call with the same id is refused, not recorded twice.
    assert!(
        out[5]["error"]
            .as_str()
            .unwrap()
            .contains("call id `t2` was already used")
    );
    assert_eq!(out[5]["id"], "t2");
    assert!(out[6]["error"].as_str().unwrap().contains("`id`"));
    assert!(!env.ws.join("x").exists());
    assert_eq!(env.log().len(), 2);
    env.verify();
}

#[test]
fn serve_request_sent_instead_of_an_approval_cancels_the_pending_call_and_is_handled() {
    let env = Env::new();
    let lines = [
        json!({"type":"tool_use","id":"w1","name":"write_file","input":{"path":"x.txt","content":"x"}}),
        json!({"type":"tool_use","id":"early","name":"read_file","input":{"path":"a.txt"}}),
        json!({"type":"approval","id":"w1","approved":true}),
    ]
    .map(|v| v.to_string());
    let out = env.serve(&lines, &[]);
    let types: Vec<&str> = out.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "approval_request",
            "error",
            "tool_result",
            "tool_result",
            "error"
        ],
        "{out:#?}"
    );
    assert_eq!(out[1]["id"], "w1");
    assert!(
        out[1]["error"]
            .as_str()
            .unwrap()
            .contains("`w1` is cancelled"),
        "{out:#?}"
    );
    assert_eq!(
        (
            out[2]["call_id"].as_str(),
            out[2]["approval"].as_str(),
            out[2]["status"].as_str()
        ),
        (Some("w1"), Some("cancelled"), Some("blocked"))
    );
    assert_eq!(
        (out[3]["call_id"].as_str(), out[3]["status"].as_str()),
        (Some("early"), Some("succeeded"))
    );
    assert_eq!(out[3]["content"], "hello\n");
    // The approval that came too late answers nothing.
    assert!(
        out[4]["error"]
            .as_str()
            .unwrap()
            .contains("no approval was requested")
    );
    assert!(!env.ws.join("x.txt").exists());
    let calls: Vec<(String, String)> = env
        .log()
        .iter()
        .map(|c| {
            (
                c["call_id"].as_str().unwrap().to_owned(),
                c["approval"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("w1".to_owned(), "cancelled".to_owned()),
            ("early".to_owned(), "not_required".to_owned())
        ],
        "both requests are recorded; none is dropped"
    );
    env.verify();
}

/// A long session's WAL is folded back into the database file while the
/// session goes on, by serve's checkpoint thread, well before the writer's
/// own threshold (10,000 pages; these calls write about 6,000); at the
/// end the writer closes last, so no `-wal` is left and the chain verifies.
#[test]
fn serve_folds_its_wal_into_the_database_while_the_session_goes_on() {
    use std::io::{BufRead, BufReader, Write};
    use std::time::{Duration, Instant};

    let env = Env::new();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("gavel"))
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--db")
        .arg(&env.db)
        .args(["serve", "--stdio", "--durability", "normal"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let calls = 1_200;
    let mut reply = String::new();
    let mut size_at_start = None;
    for i in 0..calls {
        let line = json!({"type": "tool_use", "id": format!("r{i}"), "name": "read_file",
                          "input": {"path": "a.txt"}});
        writeln!(input, "{line}").unwrap();
        reply.clear();
        output.read_line(&mut reply).unwrap();
        assert!(reply.contains("\"succeeded\""), "{reply}");
        if i == 0 {
            size_at_start = Some(std::fs::metadata(&env.db).unwrap().len());
        }
    }
    // The session is still open: only a checkpoint writes the main file.
    let size_at_start = size_at_start.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let grown = loop {
        let size = std::fs::metadata(&env.db).unwrap().len();
        if size > size_at_start || Instant::now() > deadline {
            break size;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        grown > size_at_start,
        "the database file stayed at {size_at_start} bytes while {calls} calls were recorded"
    );
    drop(input);
    assert!(child.wait().unwrap().success());
    assert!(
        !env.db.with_extension("db-wal").exists(),
        "a -wal file was left"
    );
    assert_eq!(env.log().len(), calls);
    env.verify();
}
