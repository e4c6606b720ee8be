//! A scripted model server for the real-client tests: plain HTTP/1.1 on
//! 127.0.0.1 (std `TcpListener`, one thread per connection), speaking just
//! enough of three wire formats for an agent CLI to run a scripted turn:
//!
//! - Anthropic Messages (`POST /v1/messages`, SSE when `stream` is true, and
//!   `/v1/messages/count_tokens`): Claude Code, Copilot CLI (BYOK `anthropic`);
//! - OpenAI Responses (`POST /v1/responses`, SSE): Codex CLI;
//! - Gemini (`POST /v1beta/models/M:streamGenerateContent?alt=sse` and
//!   `:generateContent`): Gemini CLI.
//!
//! The script is a list of steps, each a tool call, parallel tool calls or
//! a final text. Which step a request gets follows from the number of tool
//! results it already carries, so
//! the clients' retries and side requests (titles, summaries: those that
//! offer no tools, which get a short text) cannot shift the script. Every
//! request is kept, so a test can read what the model was told after each
//! step.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};

/// One scripted model turn.
#[derive(Debug, Clone)]
pub enum Step {
    /// Call the tool `name` with `input`.
    Tool { name: String, input: Value },
    /// Call several tools at once, in one response (only `Tool` steps).
    Parallel(Vec<Step>),
    /// Answer with text, ending the turn.
    Text(String),
}

impl Step {
    pub fn tool(name: &str, input: Value) -> Self {
        Self::Tool {
            name: name.to_owned(),
            input,
        }
    }

    /// The tool calls of the step, as `(name, input)`.
    fn calls(&self) -> Vec<(&str, &Value)> {
        match self {
            Step::Tool { name, input } => vec![(name.as_str(), input)],
            Step::Parallel(steps) => steps.iter().flat_map(Step::calls).collect(),
            Step::Text(_) => Vec::new(),
        }
    }
}

/// The step answering a request that carries `results` tool results: the
/// one whose calls start there (a text "done" past the end of the script).
fn step_for(script: &[Step], results: usize) -> Step {
    let mut start = 0;
    for step in script {
        if start == results {
            return step.clone();
        }
        start += step.calls().len();
    }
    Step::Text("done".to_owned())
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// The body as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
}

impl Recorded {
    /// Whether the request offers tools (the agent's own turn, not a side request).
    pub fn offers_tools(&self) -> bool {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| !tools.is_empty())
    }

    /// The tool results the request carries, oldest first, each as the text
    /// the model reads.
    pub fn tool_results(&self) -> Vec<String> {
        let mut results = Vec::new();
        // Anthropic: `tool_result` blocks in user messages.
        for message in array(&self.body, "messages") {
            for block in message
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                    results.push(content_text(block.get("content")));
                }
            }
        }
        // OpenAI Responses: `function_call_output` / `custom_tool_call_output` items.
        for item in array(&self.body, "input") {
            if matches!(
                item.get("type").and_then(Value::as_str),
                Some("function_call_output" | "custom_tool_call_output")
            ) {
                results.push(content_text(item.get("output")));
            }
        }
        // Gemini: `functionResponse` parts.
        for content in array(&self.body, "contents") {
            for part in array(content, "parts") {
                if let Some(response) = part.get("functionResponse") {
                    results.push(content_text(response.get("response")));
                }
            }
        }
        results
    }
}

fn array<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A tool result's content as text: a string as is, text blocks joined,
/// anything else as JSON.
fn content_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|block| match block.get("text").and_then(Value::as_str) {
                Some(text) => text.to_owned(),
                None => block.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
    }
}

/// The running server; stops accepting when dropped.
pub struct ModelServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl ModelServer {
    pub fn start(script: Vec<Step>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the model server");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let script = Arc::new(script);
        {
            let (requests, stop) = (requests.clone(), stop.clone());
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (requests, script) = (requests.clone(), script.clone());
                    thread::spawn(move || serve(stream, &script, &requests));
                }
            });
        }
        Self {
            url: format!("http://127.0.0.1:{port}"),
            requests,
            stop,
            port,
        }
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// What the model was told of its `n`th tool call (0-based, in the
    /// script's order): the `n`th tool result in the last agent request
    /// that carries it.
    pub fn tool_result(&self, n: usize) -> Option<String> {
        self.requests()
            .iter()
            .rev()
            .filter(|r| r.offers_tools())
            .find_map(|r| r.tool_results().get(n).cloned())
    }

    /// The requests as a short listing, for failure messages.
    pub fn summary(&self) -> String {
        self.requests()
            .iter()
            .map(|r| {
                format!(
                    "{} (tools: {}, results: {:?})",
                    r.path,
                    r.offers_tools(),
                    r.tool_results()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Serves requests on one connection until the client closes it.
fn serve(stream: TcpStream, script: &[Step], requests: &Mutex<Vec<Recorded>>) {
    let mut writer = match stream.try_clone() {
        Ok(writer) => writer,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    while let Some((path, body)) = read_request(&mut reader) {
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let recorded = Recorded { path, body };
        requests.lock().unwrap().push(recorded.clone());
        let (content_type, response) = respond(&recorded, script);
        let head = format!(
            "HTTP/1.1 {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
            if content_type.is_empty() {
                "404 Not Found"
            } else {
                "200 OK"
            },
            response.len()
        );
        if writer
            .write_all(head.as_bytes())
            .and_then(|()| writer.write_all(response.as_bytes()))
            .and_then(|()| writer.flush())
            .is_err()
        {
            return;
        }
    }
}

/// Reads one request: its path and body (`Content-Length` or chunked).
/// `None` at the end of the connection or on anything unreadable.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, Vec<u8>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1)?.to_owned();
    let (mut length, mut chunked) = (0usize, false);
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok()?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body).ok()?;
    }
    Some((path, body))
}

/// The content type and body answering `request`; an empty content type
/// is a 404.
fn respond(request: &Recorded, script: &[Step]) -> (&'static str, String) {
    let step = if request.offers_tools() {
        step_for(script, request.tool_results().len())
    } else {
        Step::Text("ok".to_owned())
    };
    let n = request.tool_results().len();
    let path = request.path.as_str();
    let stream = request.body.get("stream").and_then(Value::as_bool) == Some(true);
    if path.contains("/messages/count_tokens") {
        ("application/json", json!({"input_tokens": 1}).to_string())
    } else if path.contains("/messages") {
        anthropic(&step, n, stream, &request.body)
    } else if path.contains("/responses") {
        ("text/event-stream", openai_responses(&step, n))
    } else if path.contains(":streamGenerateContent") {
        ("text/event-stream", sse(&[gemini(&step)], false))
    } else if path.contains(":generateContent") {
        ("application/json", gemini(&step).to_string())
    } else {
        ("", json!({"error": "not scripted"}).to_string())
    }
}

/// Server-sent events, named by their `type` when `named`.
fn sse(events: &[Value], named: bool) -> String {
    let mut out = String::new();
    for event in events {
        if named {
            out.push_str(&format!(
                "event: {}\n",
                event["type"].as_str().unwrap_or("")
            ));
        }
        out.push_str(&format!("data: {event}\n\n"));
    }
    out
}

fn anthropic(step: &Step, n: usize, stream: bool, body: &Value) -> (&'static str, String) {
    let calls = step.calls();
    // Each block as it starts streaming, its delta, and whole.
    let blocks: Vec<(Value, Value, Value)> = match step {
        Step::Text(text) => vec![(
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            json!({"type": "text", "text": text}),
        )],
        _ => calls
            .iter()
            .enumerate()
            .map(|(i, (name, input))| {
                let id = format!("toolu_{n:02}_{i}");
                (
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    json!({"type": "input_json_delta", "partial_json": input.to_string()}),
                    json!({"type": "tool_use", "id": id, "name": name, "input": input}),
                )
            })
            .collect(),
    };
    let stop = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    let model = body.get("model").cloned().unwrap_or(json!("scripted"));
    let usage = json!({"input_tokens": 1, "output_tokens": 1});
    if !stream {
        let content: Vec<&Value> = blocks.iter().map(|(_, _, whole)| whole).collect();
        let message = json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
            "model": model, "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": usage});
        return ("application/json", message.to_string());
    }
    let message = json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage});
    let mut events = vec![json!({"type": "message_start", "message": message})];
    for (index, (start, delta, _)) in blocks.iter().enumerate() {
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 1}}));
    events.push(json!({"type": "message_stop"}));
    ("text/event-stream", sse(&events, true))
}

fn openai_responses(step: &Step, n: usize) -> String {
    let items: Vec<Value> = match step {
        Step::Text(text) => vec![json!({"type": "message", "id": format!("msg_{n}"),
            "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]})],
        _ => step
            .calls()
            .iter()
            .enumerate()
            .map(|(i, (name, input))| {
                json!({"type": "function_call", "id": format!("fc_{n}_{i}"),
                    "call_id": format!("call_{n:02}_{i}"), "name": name,
                    "arguments": input.to_string(), "status": "completed"})
            })
            .collect(),
    };
    let response = json!({"id": format!("resp_{n}"), "object": "response",
        "status": "in_progress", "output": [], "model": "scripted"});
    let mut done = response.clone();
    done["status"] = json!("completed");
    done["output"] = json!(items);
    done["usage"] = json!({"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0}});
    let mut events = vec![json!({"type": "response.created", "response": response})];
    for (index, item) in items.iter().enumerate() {
        events.push(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": item}),
        );
        events.push(
            json!({"type": "response.output_item.done", "output_index": index,
            "item": item}),
        );
    }
    events.push(json!({"type": "response.completed", "response": done}));
    for (sequence, event) in events.iter_mut().enumerate() {
        event["sequence_number"] = json!(sequence);
    }
    sse(&events, true)
}

fn gemini(step: &Step) -> Value {
    let parts: Vec<Value> = match step {
        Step::Text(text) => vec![json!({"text": text})],
        _ => step
            .calls()
            .iter()
            .map(|(name, input)| json!({"functionCall": {"name": name, "args": input}}))
            .collect(),
    };
    json!({"candidates": [{"content": {"role": "model", "parts": parts},
        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}})
}
