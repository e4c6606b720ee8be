//! The client side of `gavel mcp --upstream URL`: gavel speaks MCP's
//! Streamable HTTP to the remote server. Each message the session sends on
//! is POSTed to the one endpoint, in order (the next is sent once the
//! previous one's response has begun); the response is a `202`, one JSON
//! message, or an event stream read on its own thread, its messages handed
//! back as the server's. `Mcp-Session-Id` and `MCP-Protocol-Version` are
//! sent as the session holds them; a GET opens the server's own stream;
//! a DELETE ends the session.
//!
//! An upstream that cannot be reached, answers an HTTP error, sends what is
//! not JSON-RPC, or ends its answer without a response never leaves a
//! request waiting: the request gets a JSON-RPC error (`-32603`, its text
//! starting `gavel:`), which the session records as the call's `failed`
//! result and relays to the client. What is not JSON-RPC is never handed
//! on (on the server's own stream it is only a note).

use std::io::BufReader;
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

use serde_json::Value;

use super::jsonrpc::{self, Message};
use super::sse::Events;

/// How long connecting to the upstream may take.
const CONNECT: Duration = Duration::from_secs(10);
/// How much of an error response's body is read for its message.
const ERROR_BODY: u64 = 64 * 1024;

/// What the upstream said, for the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstreamed {
    /// The upstream named the session (its `Mcp-Session-Id`).
    Session(String),
    /// A message to hand to the session as the server's.
    Line(String),
    /// A diagnostic for gavel's stderr.
    Note(String),
    /// A GET stream opened (`Ok`), or the HTTP status it was refused with
    /// (502 when the upstream could not be reached).
    GetOpened(Result<(), u16>),
    /// A GET stream ended.
    GetEnded,
}

/// One thing the upstream said, with the session and the client stream
/// (gavel's numbers) it belongs to.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub conn: u64,
    pub stream: Option<u64>,
    pub what: Upstreamed,
}

/// Where deliveries go.
pub type Sink = Arc<dyn Fn(Delivery) + Send + Sync>;

/// A message to POST.
#[derive(Debug, Clone)]
pub struct Job {
    pub line: String,
    /// The client stream the answer belongs to.
    pub stream: Option<u64>,
    pub session: Option<String>,
    pub headers: Headers,
}

/// The client's headers passed on to the upstream.
#[derive(Debug, Clone, Default)]
pub struct Headers {
    /// `MCP-Protocol-Version`.
    pub protocol: Option<String>,
    /// `Authorization`: a bearer token the client holds for the upstream.
    pub authorization: Option<String>,
}

/// The remote server.
pub struct Upstream {
    url: String,
    post: ureq::Agent,
    get: ureq::Agent,
    /// The most bytes one response (or one event) may carry.
    max_bytes: u64,
}

impl Upstream {
    /// The server at `url`; a call's answer may take `timeout` (the body of
    /// an event stream a little longer: the session times the call out).
    pub fn new(url: &str, timeout: Duration, max_bytes: u64) -> Self {
        let agent = |body: Option<Duration>, response: Duration| {
            ureq::Agent::new_with_config(
                ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .max_redirects(0)
                    .timeout_connect(Some(CONNECT))
                    .timeout_recv_response(Some(response))
                    .timeout_recv_body(body)
                    .build(),
            )
        };
        Self {
            url: url.to_owned(),
            post: agent(Some(timeout + Duration::from_secs(30)), timeout),
            get: agent(None, CONNECT * 3),
            max_bytes,
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Starts the POSTing worker of session `conn`: jobs are sent in order.
    pub fn start(self: &Arc<Self>, conn: u64, sink: Sink) -> Sender<Job> {
        let (tx, rx) = mpsc::channel::<Job>();
        let upstream = Arc::clone(self);
        std::thread::spawn(move || {
            for job in rx {
                upstream.post(conn, job, &sink);
            }
        });
        tx
    }

    /// POSTs one message; its answer goes to `sink`.
    fn post(self: &Arc<Self>, conn: u64, job: Job, sink: &Sink) {
        let id = serde_json::from_str::<Value>(&job.line)
            .ok()
            .and_then(|value| match jsonrpc::classify(&value) {
                Message::Request { id, .. } => Some(id.clone()),
                _ => None,
            });
        let answer = Answer {
            conn,
            stream: job.stream,
            id,
            sink: Arc::clone(sink),
            url: self.url.clone(),
        };
        let request = with_headers(
            self.post
                .post(&self.url)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream"),
            job.session.as_deref(),
            &job.headers,
        );
        let response = match request.send(job.line.as_bytes()) {
            Ok(response) => response,
            Err(err) => return answer.fail(&format!("cannot reach the upstream: {err}")),
        };
        if let Some(session) = header(&response, "mcp-session-id") {
            answer.deliver(Upstreamed::Session(session));
        }
        let status = response.status().as_u16();
        let kind = header(&response, "content-type")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let mut body = response.into_body();
        if !(200..300).contains(&status) {
            let text = body
                .with_config()
                .limit(ERROR_BODY)
                .read_to_string()
                .unwrap_or_default();
            return answer.fail(&http_error(status, &text));
        }
        if status == 202 || answer.id.is_none() {
            // A notification or a response: nothing to wait for. An answer
            // the upstream gives anyway is relayed.
            if kind.starts_with("application/json")
                && let Ok(text) = body.with_config().limit(self.max_bytes).read_to_string()
                && !text.trim().is_empty()
            {
                answer.messages(&text);
            }
            return;
        }
        if kind.starts_with("text/event-stream") {
            let reader = body.into_with_config().limit(u64::MAX).reader();
            let limit = usize::try_from(self.max_bytes).unwrap_or(usize::MAX);
            // Read on its own thread: the upstream may ask the client
            // something on this stream and wait for an answer that is the
            // next job.
            std::thread::spawn(move || {
                let mut answered = false;
                for event in Events::new(BufReader::new(reader)).with_limit(limit) {
                    match event {
                        Ok(data) => answered |= answer.message(&data),
                        Err(err) => {
                            answer.deliver(Upstreamed::Note(format!("the upstream's {err}")));
                            break;
                        }
                    }
                }
                if !answered {
                    answer.fail("the upstream ended its event stream without answering");
                }
            });
            return;
        }
        if kind.starts_with("application/json") {
            match body.with_config().limit(self.max_bytes).read_to_string() {
                Ok(text) => {
                    if !answer.messages(&text) {
                        answer.fail("the upstream's answer is not the JSON-RPC response");
                    }
                }
                Err(err) => answer.fail(&format!("cannot read the upstream's answer: {err}")),
            }
            return;
        }
        answer.fail(&format!(
            "the upstream answered with content type `{kind}`, neither JSON nor an event stream"
        ));
    }

    /// Opens the upstream's own stream (GET) for the client stream `stream`;
    /// what it says goes to `sink`, starting with [`Upstreamed::GetOpened`].
    pub fn open_get(
        self: &Arc<Self>,
        conn: u64,
        stream: u64,
        session: Option<String>,
        headers: Headers,
        sink: Sink,
    ) {
        let upstream = Arc::clone(self);
        std::thread::spawn(move || {
            let deliver = |what| {
                sink(Delivery {
                    conn,
                    stream: Some(stream),
                    what,
                });
            };
            let request = with_headers(
                upstream
                    .get
                    .get(&upstream.url)
                    .header("Accept", "text/event-stream"),
                session.as_deref(),
                &headers,
            );
            let response = match request.call() {
                Ok(response) => response,
                Err(err) => {
                    deliver(Upstreamed::Note(format!(
                        "cannot open the upstream's stream: {err}"
                    )));
                    return deliver(Upstreamed::GetOpened(Err(502)));
                }
            };
            let status = response.status().as_u16();
            let kind = header(&response, "content-type")
                .unwrap_or_default()
                .to_ascii_lowercase();
            if status != 200 || !kind.starts_with("text/event-stream") {
                let status = if status == 200 { 502 } else { status };
                return deliver(Upstreamed::GetOpened(Err(status)));
            }
            deliver(Upstreamed::GetOpened(Ok(())));
            let reader = response
                .into_body()
                .into_with_config()
                .limit(u64::MAX)
                .reader();
            let limit = usize::try_from(upstream.max_bytes).unwrap_or(usize::MAX);
            for event in Events::new(BufReader::new(reader)).with_limit(limit) {
                match event {
                    Ok(data)
                        if serde_json::from_str::<Value>(&data)
                            .is_ok_and(|value| jsonrpc::is_message(&value)) =>
                    {
                        deliver(Upstreamed::Line(data));
                    }
                    // An event without data primes reconnection (MCP
                    // 2025-11-25): nothing to hand on.
                    Ok(data) if data.trim().is_empty() => {}
                    // Its stream answers no request: only a note.
                    Ok(data) => deliver(Upstreamed::Note(format!(
                        "{}: {}",
                        upstream.url,
                        not_json_rpc(&data)
                    ))),
                    Err(_) => break,
                }
            }
            deliver(Upstreamed::GetEnded);
        });
    }

    /// Ends the upstream's session (DELETE); the HTTP status it answered.
    pub fn delete(&self, session: &str, headers: &Headers) -> Result<u16, String> {
        let request = with_headers(self.post.delete(&self.url), Some(session), headers);
        match request.call() {
            Ok(mut response) => {
                let _ = response
                    .body_mut()
                    .with_config()
                    .limit(ERROR_BODY)
                    .read_to_vec();
                Ok(response.status().as_u16())
            }
            Err(err) => Err(format!("cannot reach the upstream: {err}")),
        }
    }
}

/// Where one POST's answer goes, and what it answers.
struct Answer {
    conn: u64,
    stream: Option<u64>,
    /// The id of the request POSTed, when it was one.
    id: Option<Value>,
    sink: Sink,
    url: String,
}

impl Answer {
    fn deliver(&self, what: Upstreamed) {
        (self.sink)(Delivery {
            conn: self.conn,
            stream: self.stream,
            what,
        });
    }

    /// Hands on one message; whether the request is answered now. What is
    /// not a JSON-RPC message is not handed on: the request fails instead.
    fn message(&self, text: &str) -> bool {
        // An event without data primes reconnection (MCP 2025-11-25): it
        // answers nothing and is not handed on.
        if text.trim().is_empty() {
            return false;
        }
        let value = match serde_json::from_str::<Value>(text) {
            Ok(value) if jsonrpc::is_message(&value) => value,
            _ => {
                self.fail(&not_json_rpc(text));
                return true;
            }
        };
        let answers = self.id.as_ref().is_some_and(|id| {
            matches!(jsonrpc::classify(&value), Message::Response { id: got, .. } if got == id)
        });
        self.deliver(Upstreamed::Line(text.to_owned()));
        answers
    }

    /// Hands on a JSON body (one message, or a batch of them); whether it
    /// held the response to the request.
    fn messages(&self, text: &str) -> bool {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => items
                .iter()
                .fold(false, |seen, item| self.message(&item.to_string()) | seen),
            Ok(_) => self.message(text),
            Err(_) => false,
        }
    }

    /// The request did not get its response: the session gets a JSON-RPC
    /// error in its stead (a notification or response only a note).
    fn fail(&self, why: &str) {
        self.deliver(Upstreamed::Note(format!("{}: {why}", self.url)));
        if let Some(id) = &self.id {
            self.deliver(Upstreamed::Line(jsonrpc::error(
                id,
                jsonrpc::INTERNAL_ERROR,
                &format!("gavel: {why}"),
            )));
        }
    }
}

fn with_headers<B>(
    mut request: ureq::RequestBuilder<B>,
    session: Option<&str>,
    headers: &Headers,
) -> ureq::RequestBuilder<B> {
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    if let Some(protocol) = &headers.protocol {
        request = request.header("MCP-Protocol-Version", protocol);
    }
    if let Some(authorization) = &headers.authorization {
        request = request.header("Authorization", authorization);
    }
    request
}

fn header(response: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_owned())
}

/// Why a message the upstream sent was not handed on, with its start.
fn not_json_rpc(text: &str) -> String {
    let shown: String = text.trim().chars().take(120).collect();
    format!("the upstream sent what is not JSON-RPC: {shown}")
}

/// The text of an HTTP error answer: the status, and the JSON-RPC error's
/// message when the body carries one (else the body's start).
fn http_error(status: u16, body: &str) -> String {
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| body.trim().chars().take(200).collect());
    let gone = if status == 404 {
        " (the upstream no longer knows this session; start a new one)"
    } else {
        ""
    };
    if message.is_empty() {
        format!("the upstream answered HTTP {status}{gone}")
    } else {
        format!("the upstream answered HTTP {status}{gone}: {message}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_error_says_the_json_rpc_message_or_the_body() {
        assert_eq!(
            http_error(
                400,
                r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#
            ),
            "the upstream answered HTTP 400: Bad Request: No valid session ID provided"
        );
        assert_eq!(
            http_error(502, "  Bad gateway\n"),
            "the upstream answered HTTP 502: Bad gateway"
        );
        assert!(http_error(404, "").contains("no longer knows this session"));
    }

    /// An SSE event without data (a server priming reconnection, MCP
    /// 2025-11-25) was taken for a message that is not JSON-RPC, and the
    /// request failed.
    #[test]
    fn an_event_without_data_is_skipped_not_refused() {
        let delivered = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&delivered);
        let answer = Answer {
            conn: 1,
            stream: None,
            id: Some(serde_json::json!(7)),
            sink: Arc::new(move |d: Delivery| seen.lock().unwrap().push(format!("{:?}", d.what))),
            url: "http://upstream".into(),
        };
        assert!(!answer.message(""));
        assert!(!answer.message("  \n"));
        assert!(delivered.lock().unwrap().is_empty());
        assert!(answer.message(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#));
        assert_eq!(delivered.lock().unwrap().len(), 1);
    }
}
