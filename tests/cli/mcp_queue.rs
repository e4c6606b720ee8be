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

/// `gavel ARGS CALL_ID` (the call inserted after the first word) for the
/// first call `gavel pending` lists, run once one is pending, from another
/// thread; its exit code and stderr.
fn answer_pending<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    sandbox: &'s Sandbox,
    args: &'s [&'s [&'s str]],
) -> std::thread::ScopedJoinHandle<'s, Vec<(i32, String)>> {
    scope.spawn(move || {
        let listed = wait_for_pending(sandbox, 1);
        let id = listed[0]["call_id"].as_str().unwrap().to_owned();
        args.iter()
            .map(|args| {
                let mut args: Vec<&str> = args.to_vec();
                args.insert(1, &id);
                let out = sandbox.gavel(&args).output().unwrap();
                (code(&out), stderr(&out))
            })
            .collect()
    })
}

/// The one grant `gavel grants --json` lists.
fn only_grant(sandbox: &Sandbox) -> Value {
    let listed = json_lines(&run_expecting(&mut sandbox.gavel(&["grants", "--json"]), 0));
    assert_eq!(listed.len(), 1, "{listed:?}");
    listed[0].clone()
}

#[test]
fn a_grant_for_an_mcp_tool_covers_its_later_calls_but_never_a_changed_definition() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let policy = policy(&sandbox, "");
    let server = server();
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let global = ["--policy", policy.as_str()];

    // The first touch waits; its approval grants the tool for an hour.
    let mut client = Client::start(&sandbox, &global, &["--ask", "wait=30s"], &server);
    client.initialize(json!({}));
    let answers: &[&[&str]] = &[&["approve", "--yes", "--grant", "tool", "--for", "1h"]];
    let first = std::thread::scope(|scope| {
        let answering = answer_pending(scope, &sandbox, answers);
        let response = client.call("touch", json!({"path": "a.txt"}));
        assert_eq!(answering.join().unwrap()[0].0, 0);
        response
    });
    assert_eq!(text(&first), "touched a.txt", "{first}");
    let grant = only_grant(&sandbox);
    assert_eq!(
        grant["scope"],
        json!({"type": "tool", "tool": "mcp__test__touch"})
    );
    let rule = format!("grant.{}", grant["grant"].as_str().unwrap());
    // Other arguments, no wait: the grant allows it.
    let started = std::time::Instant::now();
    assert_eq!(
        text(&client.call("touch", json!({"path": "b.txt"}))),
        "touched b.txt"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(client.close(), Some(0));

    // The server now describes the tool differently: the changed definition
    // is asked whatever the grant says, and no grant can be made from it.
    let changed = [("TOUCH_DESCRIPTION", "Creates a file, and more")];
    let mut client =
        Client::start_with(&sandbox, &global, &["--ask", "wait=30s"], &server, &changed);
    client.initialize(json!({}));
    let answers: &[&[&str]] = &[
        &["approve", "--yes", "--grant", "tool"],
        &["reject", "--yes"],
    ];
    let (refused, results) = std::thread::scope(|scope| {
        let answering = answer_pending(scope, &sandbox, answers);
        let response = client.call("touch", json!({"path": "c.txt"}));
        (response, answering.join().unwrap())
    });
    assert_eq!(
        results[0].0, 2,
        "a grant was made from a changed definition"
    );
    assert!(
        results[0].1.contains("mcp.definition_changed"),
        "{}",
        results[0].1
    );
    assert_eq!(results[1].0, 0, "{}", results[1].1);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(client.close(), Some(0));
    assert!(!sandbox.ws.join("c.txt").exists());

    // Seen once, the new definition is the known one: the grant covers again.
    let mut client =
        Client::start_with(&sandbox, &global, &["--ask", "wait=30s"], &server, &changed);
    client.initialize(json!({}));
    assert_eq!(
        text(&client.call("touch", json!({"path": "d.txt"}))),
        "touched d.txt"
    );
    assert_eq!(client.close(), Some(0));

    let calls = log(&sandbox);
    let rules: Vec<&str> = calls
        .iter()
        .map(|c| c["rule_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        [
            "test.touch",
            rule.as_str(),
            "mcp.definition_changed",
            rule.as_str()
        ],
        "{calls:?}"
    );
    assert_eq!(only_grant(&sandbox)["used"], 2);
    verify(&sandbox);
}

#[test]
fn a_paths_grant_covers_an_mcp_tools_declared_path_arguments_under_its_glob() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.ws.join("src")).unwrap();
    let policy = policy(
        &sandbox,
        "\n[[paths]]\ntools = [\"mcp__test__touch\"]\nwrite = [\"path\"]\n",
    );
    let server = server();
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let mut client = Client::start(
        &sandbox,
        &["--policy", &policy],
        &["--ask", "wait=30s"],
        &server,
    );
    client.initialize(json!({}));
    let answers: &[&[&str]] = &[&["approve", "--yes", "--grant", "paths=src/*"]];
    std::thread::scope(|scope| {
        let answering = answer_pending(scope, &sandbox, answers);
        assert_eq!(
            text(&client.call("touch", json!({"path": "src/a.txt"}))),
            "touched src/a.txt"
        );
        assert_eq!(answering.join().unwrap()[0].0, 0);
    });
    assert_eq!(
        text(&client.call("touch", json!({"path": "src/b.txt"}))),
        "touched src/b.txt"
    );
    // Outside the glob: asked again, and rejected.
    let answers: &[&[&str]] = &[&["reject", "--yes"]];
    let outside = std::thread::scope(|scope| {
        let answering = answer_pending(scope, &sandbox, answers);
        let response = client.call("touch", json!({"path": "top.txt"}));
        assert_eq!(answering.join().unwrap()[0].0, 0);
        response
    });
    assert_eq!(outside["result"]["isError"], true, "{outside}");
    assert_eq!(client.close(), Some(0));
    assert!(!sandbox.ws.join("top.txt").exists());
    let calls = log(&sandbox);
    let grant = only_grant(&sandbox);
    assert_eq!(grant["scope"]["type"], "paths");
    assert_eq!(
        calls[1]["rule_id"],
        format!("grant.{}", grant["grant"].as_str().unwrap())
    );
    assert_eq!(calls[2]["rule_id"], "test.touch");
    verify(&sandbox);
}

#[test]
fn a_tool_grant_is_only_for_an_mcp_tool_and_a_paths_grant_needs_a_path() {
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
        &["--ask", "wait=30s"],
        &server,
    );
    client.initialize(json!({}));
    // touch declares no path arguments here.
    let answers: &[&[&str]] = &[
        &["approve", "--yes", "--grant", "paths=**"],
        &["reject", "--yes"],
    ];
    let results = std::thread::scope(|scope| {
        let answering = answer_pending(scope, &sandbox, answers);
        client.call("touch", json!({"path": "x.txt"}));
        answering.join().unwrap()
    });
    assert_eq!(results[0].0, 2);
    assert!(results[0].1.contains("names no path"), "{}", results[0].1);
    assert_eq!(client.close(), Some(0));
    // A built-in tool is not granted whole.
    let args = json!({"path": "out.txt", "content": "x"}).to_string();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(["run", "write_file", &args, "--ask", "wait=30s"])
        .arg("--workspace")
        .arg(&sandbox.ws)
        .arg("--db")
        .arg(&sandbox.db)
        .env("GAVEL_CHECKPOINT_EVERY", "0")
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let listed = wait_for_pending(&sandbox, 1);
    let id = listed[0]["call_id"].as_str().unwrap();
    let line =
        assert_one_line_error(&mut sandbox.gavel(&["approve", id, "--yes", "--grant", "tool"]));
    assert!(line.contains("only an MCP server's tool"), "{line}");
    run_expecting(&mut sandbox.gavel(&["reject", id, "--yes"]), 0);
    let _ = child.wait_with_output();
    assert!(json_lines(&run_expecting(&mut sandbox.gavel(&["grants", "--json"]), 0)).is_empty());
}

/// Runs `answer` (`approve --yes`, `reject --yes`, …, the call id put
/// second) once a call is pending, while the real MCP Inspector CLI calls
/// the filesystem server's `write_file` on `path` through `gavel mcp --ask
/// wait`; what the Inspector printed, and the answer's exit code.
fn inspector_write(
    sandbox: &Sandbox,
    bins: &(std::path::PathBuf, std::path::PathBuf),
    path: &str,
    answer: Option<&[&str]>,
) -> (Value, Option<i32>) {
    let mut server = super::mcp_real::filesystem(sandbox, &bins.1);
    let at = server.iter().position(|w| w == "mcp").unwrap() + 1;
    server.splice(at..at, ["--ask".to_owned(), "wait=60s".to_owned()]);
    let target = sandbox.ws.join(path).display().to_string();
    let method = [
        "--method",
        "tools/call",
        "--tool-name",
        "write_file",
        "--tool-arg",
        &format!("path={target}"),
        "--tool-arg",
        "content=from the inspector",
    ];
    std::thread::scope(|scope| {
        let answering = answer.map(|answer| {
            scope.spawn(move || {
                let listed = wait_for_pending(sandbox, 1);
                let id = listed[0]["call_id"].as_str().unwrap().to_owned();
                assert!(!sandbox.ws.join(path).exists(), "written before an answer");
                let mut args: Vec<&str> = answer.to_vec();
                args.insert(1, &id);
                code(&sandbox.gavel(&args).output().unwrap())
            })
        });
        let (_, printed) = super::mcp_real::inspector(sandbox, &bins.0, &[], &server, &method);
        (printed, answering.map(|a| a.join().unwrap()))
    })
}

#[test]
#[ignore = "needs the MCP programs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn the_real_inspector_waits_for_gavel_approve_and_a_paths_grant_covers_the_next_write() {
    let Some(bins) = super::mcp_real::programs() else {
        return;
    };
    let sandbox = Sandbox::new();
    // Approved from another process, with a grant for `*.txt` for an hour
    // (each Inspector call is a new proxy session).
    let grant: &[&str] = &["approve", "--yes", "--grant", "paths=*.txt", "--for", "1h"];
    let (approved, answered) = inspector_write(&sandbox, &bins, "first.txt", Some(grant));
    assert_eq!(answered, Some(0));
    assert_ne!(approved["isError"], true, "{approved}");
    assert_eq!(sandbox.read("first.txt"), "from the inspector");
    // Covered by the grant: written without anybody asked.
    let (granted, _) = inspector_write(&sandbox, &bins, "second.txt", None);
    assert_ne!(granted["isError"], true, "{granted}");
    assert_eq!(sandbox.read("second.txt"), "from the inspector");
    // Outside the glob: asked again, and rejected, never written.
    let (rejected, answered) =
        inspector_write(&sandbox, &bins, "third.md", Some(&["reject", "--yes"]));
    assert_eq!(answered, Some(0));
    assert_eq!(rejected["isError"], true, "{rejected}");
    assert!(
        super::mcp_real::text(&rejected).contains("rejected by"),
        "{rejected}"
    );
    assert!(!sandbox.ws.join("third.md").exists());

    let calls = log(&sandbox);
    let rows: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|c| {
            (
                c["rule_id"].as_str().unwrap(),
                c["approval"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
            )
        })
        .collect();
    let grant = only_grant(&sandbox);
    let rule = format!("grant.{}", grant["grant"].as_str().unwrap());
    assert_eq!(
        rows,
        [
            ("path.write_requires_approval", "approved", "succeeded"),
            (rule.as_str(), "not_required", "succeeded"),
            ("path.write_requires_approval", "rejected", "blocked"),
        ]
    );
    verify(&sandbox);
}
