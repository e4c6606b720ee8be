//! One call, every front-end: the hook of each client, `run`, `serve`, a
//! resident gavel and `mcp` all hand it to the same session service, so
//! each records the same decision as the same events in the same order.
//! (That they all reach it through `Service::call`, and nothing else runs
//! the pipeline, is checked on the source by `architecture.rs`.)

use serde_json::{Value, json};

use crate::support::{Sandbox, code, json_lines, stderr};

/// A policy that denies the call alike whatever the front-end names it.
const POLICY: &str = r#"
name = "frontends"

[[rules]]
id = "same.deny"
action = "deny"
tools = ["bash", "mcp__*"]
reason = "denied alike"
"#;

fn fresh() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", POLICY);
    sandbox
}

/// The chained events of the call (a front-end may record more beside
/// it: a hook on a new log notes that it started mid-session, the MCP
/// proxy the server's tool definitions): kind, decision and result.
fn events(sandbox: &Sandbox) -> Vec<Value> {
    let out = sandbox.gavel(&["export"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json_lines(&out)
        .into_iter()
        .filter(|line| line["record"] == "event")
        .filter(|line| {
            ["request", "decision", "result"].contains(&line["kind"].as_str().unwrap_or(""))
        })
        .map(|line| {
            json!({
                "kind": line["kind"],
                "action": line["action"],
                "rule_id": line["rule_id"],
                "reason": line["payload"]["reason"],
                "status": line["payload"]["status"],
                "content": line["payload"]["content"],
            })
        })
        .collect()
}

/// What every front-end must have recorded for the denied call.
fn expected() -> Vec<Value> {
    let blocked = "Permission blocked [same.deny]: denied alike (approval=not_required)";
    vec![
        json!({"kind": "request", "action": null, "rule_id": null, "reason": null, "status": null, "content": null}),
        json!({"kind": "decision", "action": "deny", "rule_id": "same.deny", "reason": "denied alike", "status": null, "content": null}),
        json!({"kind": "result", "action": null, "rule_id": null, "reason": null, "status": "blocked", "content": blocked}),
    ]
}

#[test]
fn one_call_records_the_same_through_every_front_end() {
    let mut seen: Vec<(String, Vec<Value>)> = Vec::new();

    for client in crate::clients::CLIENTS {
        let sandbox = fresh();
        let (answer, reason) = crate::clients::pre(&sandbox, client, "ls", "c1", &[]);
        assert_eq!(answer, "deny", "{}: {reason}", client.name);
        assert!(
            reason.starts_with("[same.deny]"),
            "{}: {reason}",
            client.name
        );
        seen.push((format!("hook {}", client.name), events(&sandbox)));
    }

    let sandbox = fresh();
    let out = sandbox
        .gavel(&["run", "bash", r#"{"command":"ls"}"#, "--call-id", "c1"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    seen.push(("run".to_owned(), events(&sandbox)));

    let sandbox = fresh();
    let out = sandbox
        .gavel(&["serve", "--stdio"])
        .write_stdin("{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"bash\",\"input\":{\"command\":\"ls\"}}\n")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&reply["action"], &reply["rule_id"]),
        (&json!("deny"), &json!("same.deny"))
    );
    seen.push(("serve".to_owned(), events(&sandbox)));

    let sandbox = fresh();
    let resident = crate::resident::Resident::start(&sandbox);
    let out = sandbox
        .gavel(&["run", "bash", r#"{"command":"ls"}"#, "--call-id", "c1"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let said = resident.stop();
    assert!(
        said.contains("answered 1 calls"),
        "the resident gavel: {said}"
    );
    seen.push(("resident run".to_owned(), events(&sandbox)));

    if crate::mcp::node_available() {
        let sandbox = fresh();
        let server = crate::mcp::server();
        let mut mcp = crate::mcp::Client::start(
            &sandbox,
            &[],
            &["--name", "fs"],
            &crate::mcp::words(&server),
        );
        mcp.initialize(json!({}));
        let response = mcp.call("echo", json!({"text": "hi"}));
        assert_eq!(response["result"]["isError"], json!(true), "{response}");
        assert!(crate::mcp::text(&response).contains("[same.deny]"));
        mcp.close();
        seen.push(("mcp".to_owned(), events(&sandbox)));
    } else {
        eprintln!("skipped: the mcp front-end (node is not installed)");
    }

    for (front, recorded) in &seen {
        assert_eq!(recorded, &expected(), "{front}");
    }
}
