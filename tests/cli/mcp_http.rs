//! `gavel mcp --listen --upstream`: the real binary as a Streamable HTTP
//! proxy between this file (a scripted MCP client over HTTP) and a real
//! HTTP MCP server (`fixtures/mcp/http-server.js`, node's own http module),
//! against a real workspace and SQLite file. Skips with a note where node
//! is missing.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gavel::mcp::sse::Events;
use serde_json::{Value, json};

use super::mcp::{POLICY, log, node_available, verify};
use super::support::{Sandbox, fixture};

/// The HTTP tests' policy: the stdio tests' rules, the HTTP fixture's
/// tools allowed, anything else of it denied.
fn http_policy() -> String {
    format!(
        "{POLICY}\n{}",
        r#"
[[rules]]
id = "http.allow"
action = "allow"
tools = ["mcp__test__stream", "mcp__test__http500", "mcp__test__cut", "mcp__test__garbled"]
reason = "{tool} is harmless"

[[rules]]
id = "http.deny"
action = "deny"
tools = ["mcp__test__*"]
reason = "{tool} is not on the list"
"#
    )
}

/// A process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fixture server, listening on a free port.
struct Upstream {
    _child: Killed,
    url: String,
    requests: PathBuf,
}

impl Upstream {
    fn start(sandbox: &Sandbox) -> Self {
        let requests = sandbox.root.join("upstream-requests.jsonl");
        let mut child = Command::new("node")
            .arg(fixture("mcp/http-server.js"))
            .env("PORT", "0")
            .env("REQUESTS_LOG", &requests)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the HTTP test server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("listening ").unwrap().to_owned();
        Self {
            _child: Killed(child),
            url: format!("http://127.0.0.1:{port}/mcp"),
            requests,
        }
    }

    /// Every request the server got, in order.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.requests)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The bodies of the `tools/call` requests the server got.
    fn calls(&self) -> Vec<Value> {
        self.requests()
            .iter()
            .filter_map(|r| serde_json::from_str::<Value>(r["body"].as_str()?).ok())
            .filter(|b| b["method"] == "tools/call")
            .collect()
    }
}

/// `gavel mcp --listen 127.0.0.1:0 --upstream URL`, its address read from
/// its first line on stderr.
struct Proxy {
    child: Killed,
    url: String,
    notes: mpsc::Receiver<String>,
}

impl Proxy {
    fn start(sandbox: &Sandbox, upstream: &str, args: &[&str]) -> Self {
        let policy = sandbox.root.join("policy.toml");
        std::fs::write(&policy, http_policy()).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_gavel"))
            .env("GAVEL_CHECKPOINT_EVERY", "0")
            .arg("--workspace")
            .arg(&sandbox.ws)
            .arg("--db")
            .arg(&sandbox.db)
            .arg("--policy")
            .arg(&policy)
            .args(["mcp", "--name", "test", "--listen", "127.0.0.1:0"])
            .args(["--upstream", upstream])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start gavel mcp --listen");
        let stderr = child.stderr.take().unwrap();
        let (tx, notes) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = notes
            .recv_timeout(Duration::from_secs(30))
            .expect("gavel mcp --listen says where it listens");
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in `{first}`"))
            .to_owned();
        Self {
            child: Killed(child),
            url,
            notes,
        }
    }

    /// What gavel said on stderr since the last look.
    fn notes(&self) -> String {
        self.notes.try_iter().collect::<Vec<_>>().join("\n")
    }
}

/// What an HTTP answer was.
#[derive(Debug)]
pub(super) struct Answer {
    pub status: u16,
    pub session: Option<String>,
    pub kind: String,
    /// The JSON-RPC messages it carried, in order.
    pub messages: Vec<Value>,
}

pub(super) fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build(),
    )
}

/// POSTs `body` (a JSON-RPC message, or any text) to the proxy.
pub(super) fn post_raw(
    url: &str,
    session: Option<&str>,
    body: &str,
    headers: &[(&str, &str)],
) -> Answer {
    let mut request = agent()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18");
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send(body.as_bytes()).expect("the proxy answers");
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let session = header("mcp-session-id");
    let kind = header("content-type").unwrap_or_default();
    let text = response.into_body().read_to_string().unwrap_or_default();
    let messages = if kind.starts_with("text/event-stream") {
        Events::new(text.as_bytes())
            .map(|e| serde_json::from_str(&e.unwrap()).unwrap())
            .collect()
    } else if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(&text).unwrap_or(Value::String(text))]
    };
    Answer {
        status,
        session,
        kind,
        messages,
    }
}

pub(super) fn post(url: &str, session: Option<&str>, message: &Value) -> Answer {
    post_raw(url, session, &message.to_string(), &[])
}

/// POSTs `message` on a thread and hands on each message of its answer's
/// event stream as it comes; the thread ends with the stream.
pub(super) fn post_streaming(
    url: &str,
    session: &str,
    message: &Value,
) -> (mpsc::Receiver<Value>, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let (url, session, body) = (url.to_owned(), session.to_owned(), message.to_string());
    let reader = std::thread::spawn(move || {
        let response = agent()
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("Mcp-Session-Id", &session)
            .send(body.as_bytes())
            .unwrap();
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let reader = response.into_body().into_reader();
        if !kind.starts_with("text/event-stream") {
            let value: Value = serde_json::from_reader(reader).unwrap();
            let _ = tx.send(value);
            return;
        }
        for event in Events::new(BufReader::new(reader)) {
            let value: Value = serde_json::from_str(&event.unwrap()).unwrap();
            let _ = tx.send(value);
        }
    });
    (rx, reader)
}

/// `initialize` (with or without the elicitation capability) and
/// `notifications/initialized`; the session id and the server's info.
pub(super) fn initialize_with(url: &str, elicitation: bool) -> (String, Value) {
    let capabilities = if elicitation {
        json!({"elicitation": {}})
    } else {
        json!({})
    };
    let answer = post(
        url,
        None,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": capabilities,
            "clientInfo": {"name": "http-test-client", "version": "1.0"},
        }}),
    );
    assert_eq!(answer.status, 200, "{answer:?}");
    let info = answer.messages[0]["result"]["serverInfo"].clone();
    let session = answer
        .session
        .expect("the session id is passed to the client");
    let notified = post(
        url,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(notified.status, 202, "{notified:?}");
    (session, info)
}

/// [`initialize_with`] the fixture server; the session id.
fn initialize(url: &str, elicitation: bool) -> String {
    let (session, info) = initialize_with(url, elicitation);
    assert_eq!(info["name"], "gavel-http-test-server");
    session
}

pub(super) fn call(url: &str, session: &str, id: u64, tool: &str, arguments: Value) -> Answer {
    post(
        url,
        Some(session),
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}}),
    )
}

/// The one response of an answer.
pub(super) fn response(answer: &Answer) -> &Value {
    answer
        .messages
        .iter()
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| panic!("no response in {answer:?}"))
}

pub(super) fn text(answer: &Answer) -> String {
    response(answer)["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The recorded calls as (tool, rule, approval, status).
fn rows(sandbox: &Sandbox) -> Vec<(String, String, String, String)> {
    log(sandbox)
        .iter()
        .map(|c| {
            let field = |name: &str| c[name].as_str().unwrap_or_default().to_owned();
            (
                field("tool"),
                field("rule_id"),
                field("approval"),
                field("status"),
            )
        })
        .collect()
}

#[test]
fn over_http_calls_are_decided_recorded_and_the_session_id_is_kept() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let upstream = Upstream::start(&sandbox);
    let proxy = Proxy::start(&sandbox, &upstream.url, &[]);
    let session = initialize(&proxy.url, false);

    // Allowed, answered as JSON: relayed untouched, on the upstream's session.
    let echo = call(&proxy.url, &session, 1, "echo", json!({"text": "hi"}));
    assert_eq!(echo.status, 200);
    assert!(echo.kind.starts_with("application/json"), "{echo:?}");
    assert_eq!(text(&echo), format!("hi (session {session})"));
    // Allowed, answered as an event stream: the progress notification too.
    let streamed = call(
        &proxy.url,
        &session,
        2,
        "stream",
        json!({"text": "streamed"}),
    );
    assert!(
        streamed.kind.starts_with("text/event-stream"),
        "{streamed:?}"
    );
    assert_eq!(streamed.messages[0]["method"], "notifications/progress");
    assert_eq!(text(&streamed), "streamed");
    // The server's isError is a failed call.
    let failed = call(&proxy.url, &session, 3, "fail", json!({}));
    assert_eq!(response(&failed)["result"]["isError"], true);
    // Denied: answered by gavel with the rule and reason; never forwarded.
    let denied = call(&proxy.url, &session, 4, "touch_secret", json!({}));
    assert_eq!(response(&denied)["result"]["isError"], true, "{denied:?}");
    assert!(text(&denied).contains("[http.deny]"), "{denied:?}");
    assert!(text(&denied).contains("is not on the list"), "{denied:?}");
    // Asked, the client offered no elicitation: refused, never forwarded.
    let written = sandbox.ws.join("written.txt");
    let asked = call(
        &proxy.url,
        &session,
        5,
        "touch",
        json!({"path": written.display().to_string()}),
    );
    assert!(text(&asked).starts_with("needs approval"), "{asked:?}");
    assert!(!written.exists());
    // Everything else passes through.
    // with the client's Authorization passed on.
    let ping = post_raw(
        &proxy.url,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}).to_string(),
        &[("Authorization", "Bearer t0ken")],
    );
    assert_eq!(response(&ping)["result"], json!({}));
    assert_eq!(
        upstream.requests().last().unwrap()["authorization"],
        "Bearer t0ken"
    );

    let forwarded: Vec<Value> = upstream
        .calls()
        .iter()
        .map(|c| c["params"]["name"].clone())
        .collect();
    assert_eq!(forwarded, [json!("echo"), json!("stream"), json!("fail")]);
    // Every request after initialize carried the session id and the
    // protocol version the client sent.
    let requests = upstream.requests();
    assert!(requests[0]["session"].is_null());
    for request in &requests[1..] {
        assert_eq!(request["session"], session.as_str(), "{request}");
        assert_eq!(request["protocol"], "2025-06-18", "{request}");
    }
    let recorded = rows(&sandbox);
    let expected = [
        ("mcp__test__echo", "test.allow", "not_required", "succeeded"),
        (
            "mcp__test__stream",
            "http.allow",
            "not_required",
            "succeeded",
        ),
        ("mcp__test__fail", "test.allow", "not_required", "failed"),
        (
            "mcp__test__touch_secret",
            "http.deny",
            "not_required",
            "blocked",
        ),
        ("mcp__test__touch", "test.touch", "cancelled", "blocked"),
    ];
    let expected: Vec<(String, String, String, String)> = expected
        .iter()
        .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
        .collect();
    assert_eq!(recorded, expected);
    // The tool definitions were listed by gavel itself and recorded.
    assert!(
        requests.iter().any(|r| r["body"]
            .as_str()
            .unwrap_or_default()
            .contains("gavel-list-")),
        "{requests:#?}"
    );

    // DELETE ends the session upstream; the proxy forgets it.
    let deleted = agent()
        .delete(&proxy.url)
        .header("Mcp-Session-Id", &session)
        .call()
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    assert_eq!(upstream.requests().last().unwrap()["method"], "DELETE");
    let gone = call(&proxy.url, &session, 7, "echo", json!({"text": "again"}));
    assert_eq!(gone.status, 404, "{gone:?}");
    drop(proxy);
    verify(&sandbox);
}

#[test]
fn over_http_an_ask_is_elicited_on_the_calls_own_stream() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let upstream = Upstream::start(&sandbox);
    let proxy = Proxy::start(&sandbox, &upstream.url, &[]);
    let session = initialize(&proxy.url, true);

    for (id, approve, file) in [(1, true, "approved.txt"), (2, false, "declined.txt")] {
        let path = sandbox.ws.join(file);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "touch", "arguments": {"path": path.display().to_string()}}});
        // The call's own answer is an event stream: first gavel's
        // elicitation, then, once answered, the call's response.
        let (rx, reader) = post_streaming(&proxy.url, &session, &message);
        let ask = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        assert!(
            ask["params"]["message"]
                .as_str()
                .unwrap()
                .contains("[test.touch]"),
            "{ask}"
        );
        let answered = post(
            &proxy.url,
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": ask["id"],
                    "result": {"action": "accept", "content": {"approve": approve}}}),
        );
        assert_eq!(answered.status, 202, "{answered:?}");
        let result = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        reader.join().unwrap();
        assert_eq!(result["id"], id, "{result}");
        assert_eq!(path.exists(), approve, "{result}");
        if !approve {
            assert_eq!(result["result"]["isError"], true, "{result}");
            assert!(
                result["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("approval=rejected")
            );
        }
    }
    let recorded = rows(&sandbox);
    assert_eq!(recorded[0].2, "approved");
    assert_eq!(recorded[0].3, "succeeded");
    assert_eq!(recorded[1].2, "rejected");
    assert_eq!(recorded[1].3, "blocked");
    assert_eq!(upstream.calls().len(), 1, "only the approved call went on");
    drop(proxy);
    verify(&sandbox);
}

#[test]
fn over_http_a_broken_upstream_fails_the_call_and_never_hangs() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let upstream = Upstream::start(&sandbox);
    let proxy = Proxy::start(&sandbox, &upstream.url, &["--timeout", "2"]);
    let session = initialize(&proxy.url, false);
    let started = Instant::now();
    let mut errors = Vec::new();
    for (id, tool, arguments) in [
        (1, "http500", json!({})),
        (2, "garbage", json!({})),
        (3, "cut", json!({})),
        (4, "slow", json!({"ms": 5000})),
        (5, "garbled", json!({})),
    ] {
        let answer = call(&proxy.url, &session, id, tool, arguments);
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.messages.len(), 1, "{tool}: {answer:?}");
        let error = &response(&answer)["error"];
        assert_eq!(error["code"], -32603, "{tool}: {answer:?}");
        errors.push(error["message"].as_str().unwrap().to_owned());
    }
    assert!(errors[0].contains("HTTP 500"), "{errors:?}");
    assert!(errors[0].contains("the server broke"), "{errors:?}");
    assert!(
        errors[1].contains("not the JSON-RPC response"),
        "{errors:?}"
    );
    assert!(errors[2].contains("without answering"), "{errors:?}");
    assert!(errors[3].contains("within 2 s"), "{errors:?}");
    // An event that is not JSON-RPC fails the call it came for and is never
    // passed on (the test's reader panics on an event that is not JSON).
    assert!(errors[4].contains("not JSON-RPC"), "{errors:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let recorded = rows(&sandbox);
    assert_eq!(recorded.len(), 5);
    for (tool, _, _, status) in &recorded {
        assert_eq!(status, "failed", "{tool}");
    }
    let calls = log(&sandbox);
    let shown = sandbox
        .gavel(&["show", calls[0]["call_id"].as_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let shown = super::support::stdout(&shown);
    assert!(shown.contains("the upstream answered HTTP 500"), "{shown}");
    drop(proxy);
    verify(&sandbox);
}

#[test]
fn over_http_an_unreachable_upstream_and_bad_requests_get_clear_errors() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let proxy = Proxy::start(&sandbox, &format!("http://127.0.0.1:{port}/mcp"), &[]);
    let answer = post(
        &proxy.url,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
    );
    assert_eq!(response(&answer)["error"]["code"], -32603, "{answer:?}");
    assert!(
        response(&answer)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot reach the upstream"),
        "{answer:?}"
    );
    // Not JSON: a parse error, status 400.
    let bad = post_raw(&proxy.url, None, "{not json", &[]);
    assert_eq!(bad.status, 400);
    assert_eq!(bad.messages[0]["error"]["code"], -32700);
    // A session nobody started: 404.
    let unknown = post(
        &proxy.url,
        Some("no-such-session"),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
    );
    assert_eq!(unknown.status, 404);
    // A page of another site: refused (DNS rebinding).
    let foreign = post_raw(&proxy.url, None, "{}", &[("Origin", "http://evil.example")]);
    assert_eq!(foreign.status, 403);
    // A page on this machine (the Inspector's) may: its preflight is
    // answered and every answer names its origin for the browser.
    let preflight = agent()
        .options(&proxy.url)
        .header("Origin", "http://localhost:6274")
        .header("Access-Control-Request-Method", "POST")
        .call()
        .unwrap();
    assert_eq!(preflight.status().as_u16(), 204);
    let allowed = |response: &ureq::http::Response<ureq::Body>, name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(
        allowed(&preflight, "access-control-allow-origin"),
        "http://localhost:6274"
    );
    assert!(allowed(&preflight, "access-control-allow-headers").contains("Mcp-Session-Id"));
    let local = agent()
        .post(&proxy.url)
        .header("Origin", "http://localhost:6274")
        .header("Content-Type", "application/json")
        .send(&b"{not json"[..])
        .unwrap();
    assert_eq!(local.status().as_u16(), 400);
    assert_eq!(
        allowed(&local, "access-control-allow-origin"),
        "http://localhost:6274"
    );
    assert!(allowed(&local, "access-control-expose-headers").contains("Mcp-Session-Id"));
    assert!(proxy.notes().contains("cannot reach the upstream"));
    // A tools/call without a name, through a session that works.
    let upstream = Upstream::start(&sandbox);
    let proxy = Proxy::start(&sandbox, &upstream.url, &[]);
    let session = initialize(&proxy.url, false);
    let nameless = post(
        &proxy.url,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {}}),
    );
    assert_eq!(response(&nameless)["error"]["code"], -32602);
    drop(proxy);
    verify(&sandbox);
}

#[test]
fn listen_needs_an_http_upstream_and_is_loopback_by_default() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .gavel(&["mcp", "--listen", "0", "--upstream", "ftp://x"])
        .output()
        .unwrap();
    assert_eq!(super::support::code(&out), 2);
    assert!(super::support::stderr(&out).contains("http:// or https://"));
    let out = sandbox
        .gavel(&["mcp", "--listen", "0", "--", "node", "x.js"])
        .output()
        .unwrap();
    assert_ne!(super::support::code(&out), 0);
    let _ = &sandbox;
    let mut proxy = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .arg("--workspace")
        .arg(&sandbox.ws)
        .arg("--db")
        .arg(&sandbox.db)
        .args([
            "mcp",
            "--listen",
            "0",
            "--upstream",
            "http://127.0.0.1:9/mcp",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(proxy.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = proxy.kill();
    let _ = proxy.wait();
    assert!(line.contains("http://127.0.0.1:"), "{line}");
    assert!(line.contains("(server `local`)"), "{line}");
}

#[test]
fn over_http_an_idle_session_ends_and_is_deleted_upstream() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let upstream = Upstream::start(&sandbox);
    let proxy = Proxy::start(&sandbox, &upstream.url, &["--session-idle", "1"]);
    let session = initialize(&proxy.url, false);
    let echo = call(&proxy.url, &session, 1, "echo", json!({"text": "hi"}));
    assert_eq!(text(&echo), format!("hi (session {session})"));
    // A call in progress keeps the session: `slow` outlasts the idle time.
    let slow = call(&proxy.url, &session, 2, "slow", json!({"ms": 1500}));
    assert_eq!(text(&slow), "late");
    std::thread::sleep(Duration::from_millis(2500));
    let gone = call(&proxy.url, &session, 3, "echo", json!({"text": "again"}));
    assert_eq!(gone.status, 404, "{gone:?}");
    let deleted: Vec<Value> = upstream
        .requests()
        .into_iter()
        .filter(|r| r["method"] == "DELETE")
        .collect();
    assert_eq!(deleted.len(), 1, "{deleted:?}");
    assert_eq!(deleted[0]["session"], session.as_str());
    drop(proxy);
    verify(&sandbox);
}

#[test]
fn over_http_sigterm_ends_every_session_and_records_what_was_open() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let upstream = Upstream::start(&sandbox);
    let mut proxy = Proxy::start(&sandbox, &upstream.url, &[]);
    let session = initialize(&proxy.url, false);
    let url = proxy.url.clone();
    let in_flight = {
        let session = session.clone();
        std::thread::spawn(move || call(&url, &session, 1, "slow", json!({"ms": 20000})))
    };
    let started = Instant::now();
    while upstream.calls().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the call never reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = proxy.child.0.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let status = loop {
        if let Some(status) = proxy.child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "gavel did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{}", proxy.notes());
    let answer = in_flight.join().unwrap();
    assert_eq!(response(&answer)["error"]["code"], -32603, "{answer:?}");
    let recorded = rows(&sandbox);
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].3, "failed");
    assert_eq!(upstream.requests().last().unwrap()["method"], "DELETE");
    verify(&sandbox);
}

#[test]
fn over_stdio_to_an_http_upstream_calls_are_governed_the_same_way() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let upstream = Upstream::start(&sandbox);
    let policy = sandbox.root.join("policy.toml");
    std::fs::write(&policy, http_policy()).unwrap();
    let policy = policy.display().to_string();
    // `gavel mcp --upstream URL`, started by its client as a stdio server.
    let mut client = super::mcp::Client::start(
        &sandbox,
        &["--policy", &policy],
        &["--name", "test", "--upstream", &upstream.url],
        &[],
    );
    let init = client.initialize(json!({"elicitation": {}}));
    assert_eq!(
        init["result"]["serverInfo"]["name"], "gavel-http-test-server",
        "{init}"
    );
    let echo = client.call("echo", json!({"text": "hi"}));
    let session = upstream.requests()[0]["session"].clone();
    assert!(session.is_null());
    let said = super::mcp::text(&echo).to_owned();
    assert!(said.starts_with("hi (session "), "{echo}");
    let streamed = client.call("stream", json!({"text": "streamed"}));
    assert_eq!(super::mcp::text(&streamed), "streamed", "{streamed}");
    let denied = client.call("touch_secret", json!({}));
    assert!(
        super::mcp::text(&denied).contains("[http.deny]"),
        "{denied}"
    );
    let broken = client.call("http500", json!({}));
    assert_eq!(broken["error"]["code"], -32603, "{broken}");
    // The client declared elicitation and answers `decline`: not run.
    let written = sandbox.ws.join("written.txt");
    let asked = client.call("touch", json!({"path": written.display().to_string()}));
    assert!(
        super::mcp::text(&asked).contains("approval=rejected"),
        "{asked}"
    );
    assert!(!written.exists());
    assert_eq!(client.close(), Some(0));

    // Every request after initialize named the upstream's session and the
    // negotiated version; the client's end deleted the session.
    let requests = upstream.requests();
    let named = requests[1]["session"].as_str().unwrap().to_owned();
    assert!(said.ends_with(&format!("(session {named})")), "{said}");
    for request in &requests[1..] {
        assert_eq!(request["session"], named.as_str(), "{request}");
        assert_eq!(request["protocol"], "2025-06-18", "{request}");
    }
    assert_eq!(requests.last().unwrap()["method"], "DELETE");
    let recorded = rows(&sandbox);
    let statuses: Vec<(&str, &str)> = recorded
        .iter()
        .map(|(tool, _, _, status)| (tool.as_str(), status.as_str()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("mcp__test__echo", "succeeded"),
            ("mcp__test__stream", "succeeded"),
            ("mcp__test__touch_secret", "blocked"),
            ("mcp__test__http500", "failed"),
            ("mcp__test__touch", "blocked"),
        ]
    );
    verify(&sandbox);
}

#[test]
fn over_http_an_asked_call_waits_for_gavel_approve_with_ask_wait() {
    if !node_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let upstream = Upstream::start(&sandbox);
    let proxy = Proxy::start(&sandbox, &upstream.url, &["--ask", "wait=30s"]);
    // The client offers elicitation; the queue is asked all the same.
    let session = initialize(&proxy.url, true);

    for (id, approve, file) in [(1, true, "approved.txt"), (2, false, "rejected.txt")] {
        let path = sandbox.ws.join(file);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "touch", "arguments": {"path": path.display().to_string()}}});
        let (rx, reader) = post_streaming(&proxy.url, &session, &message);
        let listed = crate::approvals::wait_for_pending(&sandbox, 1);
        let call = listed[0]["call_id"].as_str().unwrap().to_owned();
        let verb = if approve { "approve" } else { "reject" };
        let out = sandbox.gavel(&[verb, &call, "--yes"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let result = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        reader.join().unwrap();
        assert_eq!(result["id"], id, "{result}");
        assert_ne!(result["method"], "elicitation/create", "{result}");
        assert_eq!(path.exists(), approve, "{result}");
        if !approve {
            assert_eq!(result["result"]["isError"], true, "{result}");
        }
    }
    let recorded = rows(&sandbox);
    assert_eq!(recorded[0].2, "approved");
    assert_eq!(recorded[0].3, "succeeded");
    assert_eq!(recorded[1].2, "rejected");
    assert_eq!(recorded[1].3, "blocked");
    assert_eq!(upstream.calls().len(), 1, "only the approved call went on");
    drop(proxy);
    verify(&sandbox);
}
