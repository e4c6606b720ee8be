//! OpenTelemetry (issue 29): `export --format otlp-json` and `push --otlp`
//! to a local OTLP/HTTP receiver, the bodies decoded with the
//! OpenTelemetry project's Python bindings (`scripts/otlp_decode.py`).
//! Without them (`pip install opentelemetry-proto`) the decoding check is
//! skipped, unless `GAVEL_REQUIRE_OTLP_PROTO` is set (CI sets it).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::support::{Sandbox, code, json, stderr, stdout};

/// A receiver on 127.0.0.1 that answers `status` to each POST and keeps
/// each body in `dir` (`body-N.bin`).
struct Receiver {
    url: String,
    bodies: Arc<Mutex<Vec<PathBuf>>>,
    status: Arc<Mutex<u16>>,
}

impl Receiver {
    fn start(dir: &Path) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let status = Arc::new(Mutex::new(200u16));
        let (kept, answer, dir) = (bodies.clone(), status.clone(), dir.to_owned());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                let mut length = 0usize;
                let mut path = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(p) = line.split_whitespace().nth(1) {
                    path = p.to_owned();
                }
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap() == 0 || line.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0u8; length];
                reader.read_exact(&mut body).unwrap();
                let status = *answer.lock().unwrap();
                if status == 200 && path == "/v1/traces" {
                    let mut kept = kept.lock().unwrap();
                    let file = dir.join(format!("body-{}.bin", kept.len()));
                    std::fs::write(&file, &body).unwrap();
                    kept.push(file);
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
            }
        });
        Receiver {
            url,
            bodies,
            status,
        }
    }
}

/// The spans of the bodies, decoded by the OpenTelemetry Python bindings;
/// `None` when they are not installed (and not required).
fn decoded(bodies: &[PathBuf]) -> Option<Vec<Value>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/otlp_decode.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .args(bodies)
        .output()
        .ok()?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("No module named") && std::env::var_os("GAVEL_REQUIRE_OTLP_PROTO").is_none()
        {
            eprintln!("note: opentelemetry-proto is not installed; skipping the decoding check");
            return None;
        }
        panic!("otlp_decode.py failed: {err}");
    }
    Some(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

fn session(sandbox: &Sandbox, first: usize, n: usize) {
    let lines: String = (first..first + n)
        .map(|i| {
            let (name, input) = match i % 3 {
                0 => ("read_file", serde_json::json!({"path": "notes.txt"})),
                1 => ("bash", serde_json::json!({"command": "rm -rf /"})),
                _ => ("mcp__github__search", serde_json::json!({"q": "x"})),
            };
            serde_json::json!({"type": "tool_use", "id": format!("t{i}"), "name": name, "input": input})
                .to_string()
                + "\n"
        })
        .collect();
    let out = sandbox
        .gavel(&["serve", "--stdio", "--durability", "normal"])
        .write_stdin(lines)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

fn push(sandbox: &Sandbox, url: &str) -> std::process::Output {
    sandbox
        .gavel(&[
            "push",
            "--otlp",
            url,
            "--otlp-header",
            "Authorization=Bearer t",
            "--json",
        ])
        .output()
        .unwrap()
}

#[test]
fn export_otlp_json_has_one_execute_tool_span_per_call_with_its_verdict() {
    let sandbox = Sandbox::new();
    session(&sandbox, 0, 6);
    let out = sandbox
        .gavel(&["export", "--format", "otlp-json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let request = json(&out);
    let spans: Vec<&Value> = request["resourceSpans"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["scopeSpans"][0]["spans"].as_array().unwrap())
        .collect();
    assert_eq!(spans.len(), 6);
    let attribute = |span: &Value, key: &str| -> Value {
        span["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == key)
            .map(|a| a["value"]["stringValue"].clone())
            .unwrap_or(Value::Null)
    };
    let denied = spans
        .iter()
        .find(|s| s["name"] == "execute_tool bash")
        .unwrap();
    assert_eq!(attribute(denied, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attribute(denied, "gavel.rule_id"), "bash.hard_deny");
    assert_eq!(denied["status"]["code"], 2);
    assert_eq!(denied["events"][0]["name"], "guardrail");
    assert_eq!(denied["traceId"].as_str().unwrap().len(), 32);
    assert_eq!(denied["spanId"].as_str().unwrap().len(), 16);
    let mcp = spans
        .iter()
        .find(|s| s["name"] == "execute_tool mcp__github__search")
        .unwrap();
    assert_eq!(attribute(mcp, "gen_ai.tool.name"), "search");
    assert_eq!(attribute(mcp, "mcp.method.name"), "tools/call");
    let resource = &request["resourceSpans"][0]["resource"]["attributes"];
    assert!(
        resource
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["key"] == "user.name")
    );
}

#[test]
fn push_otlp_sends_each_completed_call_once_and_resumes_after_a_refusal() {
    let sandbox = Sandbox::new();
    let receiver = Receiver::start(&sandbox.root);
    session(&sandbox, 0, 9);
    let out = push(&sandbox, &receiver.url);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["sent"], 9);
    // Nothing new: nothing sent.
    let out = push(&sandbox, &receiver.url);
    assert_eq!(json(&out)["sent"], 0);
    // A refusal sends nothing and loses nothing.
    session(&sandbox, 9, 3);
    *receiver.status.lock().unwrap() = 503;
    let out = push(&sandbox, &receiver.url);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(stderr(&out).contains("503"), "{}", stderr(&out));
    *receiver.status.lock().unwrap() = 200;
    let out = push(&sandbox, &receiver.url);
    assert_eq!(json(&out)["sent"], 3);

    let bodies = receiver.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "one request per push that had spans");
    let Some(spans) = decoded(&bodies) else {
        return;
    };
    assert_eq!(spans.len(), 12);
    let mut ids: Vec<&str> = spans
        .iter()
        .map(|s| s["span_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 12, "no span sent twice");
    // What was sent is what `export --format otlp-json` says.
    let out = sandbox
        .gavel(&["export", "--format", "otlp-json"])
        .output()
        .unwrap();
    let exported = json(&out);
    let exported: Vec<&Value> = exported["resourceSpans"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["scopeSpans"][0]["spans"].as_array().unwrap())
        .collect();
    for span in &spans {
        let twin = exported
            .iter()
            .find(|e| e["spanId"] == span["span_id"])
            .expect("the same span ids");
        assert_eq!(twin["name"], span["name"]);
        assert_eq!(twin["traceId"], span["trace_id"]);
        assert_eq!(twin["startTimeUnixNano"], span["start"].to_string());
        let attributes = twin["attributes"].as_array().unwrap();
        assert_eq!(
            attributes.len(),
            span["attributes"].as_object().unwrap().len()
        );
        assert_eq!(span["events"][0]["name"], "guardrail");
        assert_eq!(span["kind"], 1);
    }
    let denied = spans
        .iter()
        .find(|s| s["name"] == "execute_tool bash")
        .unwrap();
    assert_eq!(denied["attributes"]["gavel.rule_id"], "bash.hard_deny");
    assert_eq!(denied["status"]["code"], 2);
    assert_eq!(denied["resource"]["service.name"], "gavel");
}

/// One Claude Code hook event for the call `id` (`PreToolUse` or
/// `PostToolUse` of `ls`).
fn hook(sandbox: &Sandbox, fixture: &str, id: &str) {
    let mut payload = crate::support::hook_payload(sandbox, fixture);
    payload["tool_use_id"] = id.into();
    let out = sandbox
        .gavel(&["hook", "claude-code"])
        .write_stdin(payload.to_string())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

fn push_with(sandbox: &Sandbox, url: &str, extra: &[&str]) -> Value {
    let mut args = vec!["push", "--otlp", url, "--json"];
    args.extend(extra);
    let out = sandbox.gavel(&args).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json(&out)
}

/// Issue 39: a call that never completes (an agent killed mid-call, an ask
/// nobody answered) never reached the SIEM. After the grace period it is
/// sent once, marked incomplete; a result that comes later is sent once, as
/// a `gavel.late_result` child span, never as the call's span again.
#[test]
fn push_otlp_sends_a_call_that_never_completes_once_marked_incomplete() {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", gavel::policy::CODING_AGENT_POLICY_TOML);
    let receiver = Receiver::start(&sandbox.root);
    hook(&sandbox, "pre_tool_use.json", "toolu_done");
    hook(&sandbox, "post_tool_use.json", "toolu_done");
    hook(&sandbox, "pre_tool_use.json", "toolu_open");
    // Within the grace period (10 minutes by default): only the completed call.
    let pushed = push_with(&sandbox, &receiver.url, &[]);
    assert_eq!(
        (pushed["sent"].as_u64(), pushed["incomplete"].as_u64()),
        (Some(1), Some(0)),
        "{pushed}"
    );
    // Past it: the open call, marked incomplete, once.
    let pushed = push_with(&sandbox, &receiver.url, &["--incomplete-after", "0"]);
    assert_eq!(
        (pushed["sent"].as_u64(), pushed["incomplete"].as_u64()),
        (Some(1), Some(1)),
        "{pushed}"
    );
    let pushed = push_with(&sandbox, &receiver.url, &["--incomplete-after", "0"]);
    assert_eq!(pushed["sent"], 0, "{pushed}");
    // Its result comes after all: sent once, as the late result.
    hook(&sandbox, "post_tool_use.json", "toolu_open");
    let pushed = push_with(&sandbox, &receiver.url, &["--incomplete-after", "0"]);
    assert_eq!(
        (pushed["sent"].as_u64(), pushed["late_results"].as_u64()),
        (Some(1), Some(1)),
        "{pushed}"
    );
    assert_eq!(pushed["open"], 0, "{pushed}");
    let pushed = push_with(&sandbox, &receiver.url, &["--incomplete-after", "0"]);
    assert_eq!(pushed["sent"], 0, "{pushed}");

    let bodies = receiver.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 3);
    let Some(spans) = decoded(&bodies) else {
        return;
    };
    assert_eq!(spans.len(), 3);
    let mut ids: Vec<&str> = spans
        .iter()
        .map(|s| s["span_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "no span id sent twice: {spans:#?}");
    let open = &spans[1];
    assert_eq!(open["name"], "execute_tool bash");
    assert_eq!(open["attributes"]["gavel.status"], "incomplete");
    assert_eq!(open["attributes"]["gen_ai.tool.call.id"], "toolu_open");
    assert_eq!(open["status"]["code"], 0, "unset: no result yet");
    let late = &spans[2];
    assert_eq!(late["name"], "gavel.late_result");
    assert_eq!(late["parent_span_id"], open["span_id"]);
    assert_eq!(late["trace_id"], open["trace_id"]);
    assert_eq!(late["attributes"]["gavel.late_result_of"], open["span_id"]);
    assert_eq!(late["attributes"]["gavel.status"], "succeeded");
    assert_eq!(late["status"]["code"], 1);
    assert!(late["attributes"].get("gen_ai.operation.name").is_none());
}
