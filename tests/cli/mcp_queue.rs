//! `gavel mcp --ask wait`: an asked MCP call waits in the pending queue
//! while the session goes on, and `gavel approve` / `gavel reject` from
//! another process decides whether the real server (node,
//! `fixtures/mcp/test-server.js`) ever sees it.

use std::time::Duration;

use serde_json::{Value, json};

use super::approvals::wait_for_pending;
use super::mcp::{Client, POLICY, log, node_available, text, verify};
use crate::support::*;

fn server() -> Vec<String> {
    vec![
        "node".to_owned(),
        fixture("mcp/test-server.js").display().to_string(),
    ]
}

fn policy(sandbox: &Sandbox, extra: &str) -> String {
    let path = sandbox.root.join("policy.toml");
    std::fs::write(&path, format!("{POLICY}{extra}")).unwrap();
    path.display().to_string()
}

/// The approval rows of call `id`, in order.
fn approval_rows(sandbox: &Sandbox, id: &str) -> Vec<Value> {
    let shown = json(&run_expecting(
        &mut sandbox.gavel(&["show", id, "--json"]),
        0,
    ));
    shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "approval")
        .map(|e| e["payload"].clone())
        .collect()
}

/// Starts a session, then runs `answer` on the call once it is pending,
/// from another thread (as another terminal would), while the client waits
/// for the call's response.
fn asked_call(
    sandbox: &Sandbox,
    mcp_args: &[&str],
    capabilities: Value,
    path: &str,
    answer: &[&str],
) -> (Value, Value, Vec<Value>) {
    let policy = policy(sandbox, "");
    let server = server();
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let mut client = Client::start(sandbox, &["--policy", &policy], mcp_args, &server);
    client.initialize(capabilities);
    client.elicitation_answer = json!({"action": "accept", "content": {"approve": true}});
    let (response, listed) = std::thread::scope(|scope| {
        let answering = scope.spawn(|| {
            let listed = wait_for_pending(sandbox, 1);
            let id = listed[0]["call_id"].as_str().unwrap().to_owned();
            // Not sent on while it waits.
            std::thread::sleep(Duration::from_millis(300));
            assert!(
                !sandbox.ws.join(path).exists(),
                "forwarded before an answer"
            );
            let mut args: Vec<&str> = answer.to_vec();
            args.insert(1, &id);
            run_expecting(&mut sandbox.gavel(&args), 0);
            listed
        });
        let response = client.call("touch", json!({"path": path}));
        (response, answering.join().unwrap())
    });
    let others = std::mem::take(&mut client.others);
    assert_eq!(client.close(), Some(0));
    (response, listed[0].clone(), others)
}

#[test]
fn an_asked_mcp_call_waits_until_gavel_approve_and_then_runs_on_the_server() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let (response, pending, _) = asked_call(
        &sandbox,
        &["--ask", "wait=30s"],
        json!({}),
        "approved.txt",
        &["approve", "--yes"],
    );
    assert_eq!(pending["tool"], "mcp__test__touch");
    assert_eq!(pending["rule_id"], "test.touch");
    assert_eq!(pending["arguments"]["path"], "approved.txt");
    assert_eq!(text(&response), "touched approved.txt", "{response}");
    assert_eq!(response["result"]["isError"], false);
    assert!(sandbox.ws.join("approved.txt").exists());
    let calls = log(&sandbox);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["approval"], "approved");
    assert_eq!(calls[0]["status"], "succeeded");
    let rows = approval_rows(&sandbox, calls[0]["call_id"].as_str().unwrap());
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        (&rows[0]["status"], &rows[0]["channel"]),
        (&json!("pending"), &json!("queue"))
    );
    assert_eq!(
        (&rows[1]["status"], &rows[1]["channel"]),
        (&json!("approved"), &json!("cli"))
    );
    assert_eq!(rows[1]["arguments_sha256"], pending["arguments_sha256"]);
    verify(&sandbox);
}

#[test]
fn a_rejected_mcp_call_is_an_error_result_and_never_reaches_the_server_even_with_elicitation() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    // The client offers elicitation and would approve: `--ask wait` wins,
    // the person at the queue decides.
    let (response, _, others) = asked_call(
        &sandbox,
        &["--ask", "wait=30s"],
        json!({"elicitation": {}}),
        "rejected.txt",
        &["reject", "--yes", "--reason", "not that file"],
    );
    assert_eq!(response["result"]["isError"], true, "{response}");
    let said = text(&response);
    assert!(said.contains("[test.touch]"), "{said}");
    assert!(said.contains("rejected by"), "{said}");
    assert!(said.contains("not that file"), "{said}");
    assert!(
        others.iter().all(|m| m["method"] != "elicitation/create"),
        "the client was asked too: {others:?}"
    );
    assert!(!sandbox.ws.join("rejected.txt").exists());
    let calls = log(&sandbox);
    assert_eq!(calls[0]["approval"], "rejected");
    assert_eq!(calls[0]["status"], "blocked");
    let rows = approval_rows(&sandbox, calls[0]["call_id"].as_str().unwrap());
    assert_eq!(rows[1]["channel"], "cli");
    assert_eq!(rows[1]["reason"], "not that file");
    verify(&sandbox);
}

#[test]
fn the_policys_approval_wait_queues_mcp_asks_and_an_unanswered_one_ends_cancelled_by_timeout() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let policy = policy(&sandbox, "\n[approval]\nwait = \"1s\"\n");
    let server = server();
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let mut client = Client::start(&sandbox, &["--policy", &policy], &[], &server);
    client.initialize(json!({}));
    let started = std::time::Instant::now();
    let response = client.call("touch", json!({"path": "late.txt"}));
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "did not wait"
    );
    assert_eq!(response["result"]["isError"], true, "{response}");
    assert!(
        text(&response).contains("nobody answered in time"),
        "{response}"
    );
    // The session goes on: an allowed call still runs.
    assert_eq!(
        text(&client.call("echo", json!({"text": "after"}))),
        "after"
    );
    assert_eq!(client.close(), Some(0));
    assert!(!sandbox.ws.join("late.txt").exists());
    let calls = log(&sandbox);
    assert_eq!(calls[0]["approval"], "cancelled");
    assert_eq!(calls[0]["status"], "blocked");
    let rows = approval_rows(&sandbox, calls[0]["call_id"].as_str().unwrap());
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[1]["cause"], "timeout");
    // Too late for an answer now.
    let line = assert_one_line_error(&mut sandbox.gavel(&[
        "approve",
        calls[0]["call_id"].as_str().unwrap(),
        "--yes",
    ]));
    assert!(line.contains("already cancelled"), "{line}");
    verify(&sandbox);
}

#[test]
fn a_waiting_mcp_call_the_client_leaves_is_cancelled_and_not_pending() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let policy = policy(&sandbox, "");
    let server = server();
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let mut client = Client::start(
        &sandbox,
        &["--policy", &policy],
        &["--ask", "wait=60s"],
        &server,
    );
    client.initialize(json!({}));
    client.send(&json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                        "params": {"name": "touch", "arguments": {"path": "gone.txt"}}}));
    wait_for_pending(&sandbox, 1);
    assert_eq!(client.close(), Some(0));
    assert!(
        json_lines(&run_expecting(
            &mut sandbox.gavel(&["pending", "--json"]),
            0
        ))
        .is_empty()
    );
    let calls = log(&sandbox);
    assert_eq!(calls[0]["approval"], "cancelled");
    assert_eq!(calls[0]["status"], "blocked");
    let rows = approval_rows(&sandbox, calls[0]["call_id"].as_str().unwrap());
    assert_eq!(rows[1]["cause"], "eof");
    assert!(!sandbox.ws.join("gone.txt").exists());
    verify(&sandbox);
}
