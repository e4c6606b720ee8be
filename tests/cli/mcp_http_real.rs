//! `gavel mcp --listen --upstream` between real programs from the npm
//! registry, pinned in `fixtures/clients/real/clients.txt`: the
//! "everything" reference server (`@modelcontextprotocol/server-everything`)
//! serving Streamable HTTP, driven by the MCP Inspector's CLI with
//! `--transport http` through `gavel mcp --listen`, by a scripted HTTP
//! client answering elicitations, and by Claude Code through `gavel mcp
//! --upstream` started as its stdio server. An allowed call runs and completes
//! `succeeded` on the session the server started (the server refuses any
//! request without it), a denied call never reaches the server and its
//! reason reaches the client, and `gavel verify` finds the record whole.
//! Like the other real-client tests these skip with a note without the
//! programs, unless `GAVEL_REQUIRE_CLIENTS=1`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mcp::{log, verify};
use super::mcp_http::{call, initialize_with, post, post_streaming};
use super::mcp_real::{inspector, text};
use super::real_clients::{claude_command, installed, run_client, tail};
use super::real_clients_model::{ModelServer, Step};
use super::support::Sandbox;

const POLICY: &str = r#"
name = "mcp-http-real"

[[rules]]
id = "everything.echo"
action = "allow"
tools = ["mcp__everything__echo"]
reason = "{tool} only echoes"

[[rules]]
id = "everything.no_sums"
action = "deny"
tools = ["mcp__everything__get-sum"]
reason = "{tool} is not for this project"
"#;

/// A process killed when dropped, with what it printed.
struct Running {
    child: Child,
    output: Arc<Mutex<String>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// Starts `command`, collecting stdout and stderr, until a line
    /// containing `ready` appears; that line.
    fn start(mut command: Command, ready: &str) -> (Self, String) {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the program");
        let output = Arc::new(Mutex::new(String::new()));
        for pipe in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let output = Arc::clone(&output);
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    let mut output = output.lock().unwrap();
                    output.push_str(&line);
                    output.push('\n');
                }
            });
        }
        let running = Self { child, output };
        let started = Instant::now();
        loop {
            let text = running.output();
            if let Some(line) = text.lines().find(|l| l.contains(ready)) {
                return (running, line.to_owned());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no `{ready}` in:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The everything server on a free port; its endpoint.
fn everything(bin: &Path) -> (Running, String) {
    let port = free_port();
    let mut command = Command::new(bin);
    command.arg("streamableHttp").env("PORT", port.to_string());
    let (running, _) = Running::start(command, "listening on port");
    (running, format!("http://127.0.0.1:{port}/mcp"))
}

/// gavel in front of `upstream`; its endpoint.
fn proxy(sandbox: &Sandbox, upstream: &str) -> (Running, String) {
    proxy_with(sandbox, upstream, POLICY)
}

/// gavel in front of `upstream` under `policy`; its endpoint.
fn proxy_with(sandbox: &Sandbox, upstream: &str, policy: &str) -> (Running, String) {
    let text = policy;
    let policy = sandbox.root.join("policy.toml");
    std::fs::write(&policy, text).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_gavel"));
    command
        .env("GAVEL_CHECKPOINT_EVERY", "0")
        .arg("--workspace")
        .arg(&sandbox.ws)
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--policy")
        .arg(&policy)
        .args(["mcp", "--name", "everything", "--listen", "127.0.0.1:0"])
        .args(["--upstream", upstream]);
    let (running, line) = Running::start(command, "listening on http://");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    (running, url)
}

#[test]
#[ignore = "needs the MCP programs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn the_inspector_calls_the_everything_server_over_http_through_gavel() {
    let Some(inspector_bin) = installed("mcp-inspector") else {
        return;
    };
    let Some(everything_bin) = installed("mcp-everything") else {
        return;
    };
    let sandbox = Sandbox::new();
    let (server, upstream) = everything(&everything_bin);
    let (gavel, url) = proxy(&sandbox, &upstream);
    let over_http = |method: &[&str]| {
        let mut target = vec![url.clone(), "--transport".to_owned(), "http".to_owned()];
        target.extend(method.iter().map(|m| (*m).to_owned()));
        let (split, rest) = target.split_at(3);
        let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
        inspector(&sandbox, &inspector_bin, &[], split, &rest)
    };

    let (exit, listed) = over_http(&["--method", "tools/list"]);
    assert_eq!(exit, 0, "{listed}");
    assert!(listed["tools"].to_string().contains("get-sum"), "{listed}");

    let (exit, echoed) = over_http(&[
        "--method",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "message=through gavel",
    ]);
    assert_eq!(exit, 0, "{echoed}");
    assert_eq!(text(&echoed), "Echo: through gavel", "{echoed}");

    let (_, summed) = over_http(&[
        "--method",
        "tools/call",
        "--tool-name",
        "get-sum",
        "--tool-arg",
        "a=1",
        "b=2",
    ]);
    assert_eq!(summed["isError"], true, "{summed}");
    assert!(text(&summed).contains("[everything.no_sums]"), "{summed}");
    assert!(
        text(&summed).contains("is not for this project"),
        "{summed}"
    );

    let calls = log(&sandbox);
    let rows: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap(),
                c["rule_id"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("mcp__everything__echo", "everything.echo", "succeeded"),
            ("mcp__everything__get-sum", "everything.no_sums", "blocked"),
        ],
        "{}",
        gavel.output()
    );
    // Three Inspector runs, three sessions the server started; every other
    // request named its session (the server answers 400 to one that does not).
    let said = server.output();
    assert_eq!(
        said.matches("Session initialized with ID").count(),
        3,
        "{said}"
    );
    assert!(!said.contains("No valid session ID"), "{said}");
    assert!(
        !said.contains("get-sum"),
        "the denied call reached the server"
    );
    let summary: Vec<Value> = calls.iter().map(|c| c["arguments"].clone()).collect();
    assert_eq!(summary[1]["a"], 1, "{summary:?}");
    drop(gavel);
    verify(&sandbox);
}

#[test]
#[ignore = "needs the MCP programs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn over_http_the_everything_servers_elicitation_and_gavels_own_ask_share_the_calls_stream() {
    let Some(everything_bin) = installed("mcp-everything") else {
        return;
    };
    let sandbox = Sandbox::new();
    let (server, upstream) = everything(&everything_bin);
    let policy = format!(
        "{POLICY}\n{}",
        r#"
[[rules]]
id = "everything.elicit"
action = "allow"
tools = ["mcp__everything__trigger-elicitation-request"]
reason = "{tool} asks the user itself"

[[rules]]
id = "everything.env_asked"
action = "ask"
tools = ["mcp__everything__get-env"]
reason = "{tool} shows the server's environment"
"#
    );
    let (gavel, url) = proxy_with(&sandbox, &upstream, &policy);
    let (session, info) = initialize_with(&url, true);
    assert!(
        info["name"].as_str().unwrap().contains("everything"),
        "{info}"
    );

    // The server's own elicitation passes through, on the call's stream,
    // and the client's answer reaches the server.
    let (rx, reader) = post_streaming(
        &url,
        &session,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "trigger-elicitation-request", "arguments": {}}}),
    );
    let asked = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert!(!asked["id"].to_string().contains("gavel"), "{asked}");
    let answered = post(
        &url,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": asked["id"],
                "result": {"action": "accept", "content": {"name": "Ada"}}}),
    );
    assert_eq!(answered.status, 202, "{answered:?}");
    let result = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    reader.join().unwrap();
    assert_eq!(result["id"], 1, "{result}");
    assert!(result.to_string().contains("Ada"), "{result}");

    // gavel's own ask, approved through elicitation: the call runs.
    let (rx, reader) = post_streaming(
        &url,
        &session,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "get-env", "arguments": {}}}),
    );
    let ask = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(
        ask["id"].as_str().unwrap().starts_with("gavel-ask-"),
        "{ask}"
    );
    assert!(
        ask["params"]["message"]
            .as_str()
            .unwrap()
            .contains("[everything.env_asked]"),
        "{ask}"
    );
    post(
        &url,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": ask["id"],
                "result": {"action": "accept", "content": {"approve": true}}}),
    );
    let result = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    reader.join().unwrap();
    assert_eq!(result["id"], 2, "{result}");
    assert!(result["result"]["isError"] != true, "{result}");
    // A denied call: the reason, never the server.
    let denied = call(&url, &session, 3, "get-sum", json!({"a": 1, "b": 2}));
    assert!(
        super::mcp_http::text(&denied).contains("[everything.no_sums]"),
        "{denied:?}"
    );

    let calls = log(&sandbox);
    let rows: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap(),
                c["approval"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "mcp__everything__trigger-elicitation-request",
                "not_required",
                "succeeded"
            ),
            ("mcp__everything__get-env", "approved", "succeeded"),
            ("mcp__everything__get-sum", "not_required", "blocked"),
        ],
        "{}\n{}",
        gavel.output(),
        server.output()
    );
    drop(gavel);
    verify(&sandbox);
}

#[test]
#[ignore = "needs the MCP programs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn claude_code_reaches_the_everything_server_over_http_through_gavel_on_stdio() {
    let Some(everything_bin) = installed("mcp-everything") else {
        return;
    };
    let Some(claude) = installed("claude-code") else {
        return;
    };
    let sandbox = Sandbox::new();
    let (server, upstream) = everything(&everything_bin);
    let policy = sandbox.root.join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let model = ModelServer::start(vec![
        Step::tool("mcp__everything__echo", json!({"message": "over http"})),
        Step::tool("mcp__everything__get-sum", json!({"a": 1, "b": 2})),
        Step::Text("All done.".to_owned()),
    ]);
    // Claude Code starts `gavel mcp --upstream URL` as a stdio server.
    let config = json!({"mcpServers": {"everything": {
        "type": "stdio",
        "command": env!("CARGO_BIN_EXE_gavel"),
        "args": [
            "--workspace", sandbox.ws, "--db", sandbox.db, "--policy", policy,
            "mcp", "--name", "everything", "--upstream", upstream,
        ],
        "env": {"GAVEL_CHECKPOINT_EVERY": "0"},
    }}});
    let config_path = sandbox.root.join("mcp.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let mut cmd = claude_command(&sandbox, &claude, &model);
    cmd.arg("--mcp-config")
        .arg(&config_path)
        .arg("--strict-mcp-config")
        .args(["--allowedTools", "mcp__everything"]);
    let run = run_client(&sandbox, cmd, "claude", &model);
    let context = format!(
        "--- stdout:\n{}\n--- stderr:\n{}\n--- model requests:\n{}\n--- server:\n{}",
        tail(&run.stdout),
        tail(&run.stderr),
        model.summary(),
        server.output()
    );
    let echoed = model.tool_result(0).unwrap_or_default();
    assert!(echoed.contains("Echo: over http"), "{echoed}\n{context}");
    let denied = model.tool_result(1).unwrap_or_default();
    assert!(denied.contains("everything.no_sums"), "{denied}\n{context}");

    let calls = log(&sandbox);
    let rows: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rows,
        [
            ("mcp__everything__echo", "succeeded"),
            ("mcp__everything__get-sum", "blocked"),
        ],
        "{context}"
    );
    assert_eq!(calls[0]["principal"]["client"], "mcp");
    let said = server.output();
    assert!(!said.contains("No valid session ID"), "{said}");
    verify(&sandbox);
}
