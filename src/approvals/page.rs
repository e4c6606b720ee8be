//! The approval page (`gavel approvals --listen`): a small HTTP/1.1 server
//! over `std::net` that shows the calls waiting in the queue, live, and
//! records a person's approve / reject / grant with channel `web` and the
//! token's name.
//!
//! Access needs the token (header `X-Gavel-Token`, compared in constant
//! time); the page itself holds no data and reads the token from the URL's
//! fragment, which browsers never send. Against cross-site forgery: every
//! API request needs the token header (a cross-site form or `no-cors`
//! fetch cannot set it, and no CORS header is ever sent), the `Host` must
//! be the address the page listens on (DNS rebinding), and an answer must
//! carry an `Origin` of that same address and a JSON body.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{GrantAsk, GrantKind, QueueAnswer};
use crate::approval::{ApprovalChannel, ApprovalStatus};
use crate::principal::Principal;
use crate::store::Store;

/// What the page answers with.
pub struct PageConfig {
    /// The secret every API request must carry.
    pub token: String,
    /// The token's name: recorded as the approver.
    pub name: String,
    /// The `Host` values the page answers to (`127.0.0.1:PORT`, `localhost:PORT`).
    pub hosts: Vec<String>,
    /// Recorded as the answerer's provenance.
    pub principal: Arc<Principal>,
}

/// One request, as much of it as the page reads.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    fn json(status: u16, value: serde_json::Value) -> Self {
        Self {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    fn refused(status: u16, why: &str) -> Self {
        Self::json(status, json!({ "error": why }))
    }
}

const MAX_BODY: usize = 64 * 1024;
const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");

/// The body of `POST /api/answer`.
#[derive(Debug, Deserialize)]
struct AnswerBody {
    call_id: String,
    approved: bool,
    arguments_sha256: String,
    #[serde(default)]
    reason: Option<String>,
    /// `call`, `command` or `tool`: a grant with the approval (for the session when
    /// the call has one, else for an hour).
    #[serde(default)]
    grant: Option<String>,
    /// An enrolled approver answering with their authenticator's code:
    /// recorded under their name with factor `totp`, not the token's.
    #[serde(default)]
    approver: Option<String>,
    #[serde(default)]
    code: Option<String>,
}

/// Whether `a` and `b` are equal, in time that depends on their length only.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Answers one request.
pub fn handle(config: &PageConfig, store: &mut Store, request: &Request) -> Response {
    let host_ok = request
        .header("host")
        .is_some_and(|h| config.hosts.iter().any(|allowed| allowed == h));
    if !host_ok {
        return Response::refused(421, "unknown host");
    }
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/") => {
            return Response {
                status: 200,
                content_type: "text/html; charset=utf-8",
                body: PAGE.as_bytes().to_vec(),
            };
        }
        ("GET", "/app.js") => {
            return Response {
                status: 200,
                content_type: "text/javascript; charset=utf-8",
                body: SCRIPT.as_bytes().to_vec(),
            };
        }
        _ => {}
    }
    let token_ok = request
        .header("x-gavel-token")
        .is_some_and(|t| same_secret(t, &config.token));
    if !token_ok {
        return Response::refused(403, "a token is needed");
    }
    if request
        .header("sec-fetch-site")
        .is_some_and(|s| s != "same-origin" && s != "none")
    {
        return Response::refused(403, "cross-site request");
    }
    let now = chrono::Utc::now().timestamp_micros();
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/api/pending") => match super::pending(store, now) {
            Ok(waiting) => Response::json(200, json!(waiting)),
            Err(err) => Response::refused(500, &err.to_string()),
        },
        ("POST", "/api/answer") => {
            let origin_ok = request.header("origin").is_some_and(|origin| {
                config
                    .hosts
                    .iter()
                    .any(|host| origin == format!("http://{host}"))
            });
            if !origin_ok {
                return Response::refused(403, "cross-origin request");
            }
            if !request
                .header("content-type")
                .is_some_and(|c| c.starts_with("application/json"))
            {
                return Response::refused(415, "a JSON body is needed");
            }
            let Ok(body) = serde_json::from_slice::<AnswerBody>(&request.body) else {
                return Response::refused(400, "not an answer");
            };
            answer(config, store, body, now)
        }
        _ => Response::refused(404, "no such page"),
    }
}

fn answer(config: &PageConfig, store: &mut Store, body: AnswerBody, now: i64) -> Response {
    let grant = match body.grant.as_deref() {
        None | Some("") => None,
        Some("call") => Some(GrantKind::Call),
        Some("command") => Some(GrantKind::Command),
        Some("tool") => Some(GrantKind::Tool),
        Some(_) => return Response::refused(400, "a grant is `call`, `command` or `tool`"),
    };
    // A code proves the person; the token alone proves only the page.
    let (approver, proof) = match (&body.approver, &body.code) {
        (Some(name), Some(code)) => match super::approvers::prove(store, name, code, now) {
            Ok(proof) => (name.clone(), Some(proof)),
            Err(err) => return Response::refused(403, &err.to_string()),
        },
        (None, None) => (config.name.clone(), None),
        _ => {
            return Response::refused(400, "an approver's answer needs both `approver` and `code`");
        }
    };
    let session = store
        .call_events(&body.call_id)
        .ok()
        .and_then(|events| super::pending_of(&events))
        .and_then(|p| p.session);
    let answer = QueueAnswer {
        status: if body.approved {
            ApprovalStatus::Approved
        } else {
            ApprovalStatus::Rejected
        },
        channel: ApprovalChannel::Web,
        approver,
        proof,
        reason: body.reason,
        arguments_sha256: Some(body.arguments_sha256),
        grant: grant.filter(|_| body.approved).map(|kind| GrantAsk {
            kind,
            session: session.is_some(),
            lasts: session.is_none().then_some(Duration::from_secs(3600)),
            uses: None,
        }),
    };
    match super::answer(store, &body.call_id, &answer, Some(&config.principal), now) {
        Ok(pending) => Response::json(
            200,
            json!({
                "call_id": pending.call_id,
                "approval": pending.recorded_status(answer.status),
                "channel": "web",
            }),
        ),
        Err(err) => Response::refused(409, &err.to_string()),
    }
}

/// Reads one request from `stream` (headers, and a body of at most 64 KiB).
pub fn read_request(stream: &TcpStream) -> std::io::Result<Request> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.take(MAX_BODY as u64 + 16 * 1024));
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        if headers.len() > 100 {
            break;
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_BODY);
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    Ok(Request {
        method,
        path,
        headers,
        body,
    })
}

fn write_response(mut stream: &TcpStream, response: &Response) -> std::io::Result<()> {
    let reason = match response.status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        _ => "Error",
    };
    write!(
        stream,
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n\
         X-Frame-Options: DENY\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n\
         Content-Security-Policy: default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'\r\n\
         Connection: close\r\n\r\n",
        response.status,
        response.content_type,
        response.body.len()
    )?;
    stream.write_all(&response.body)?;
    stream.flush()
}

/// Serves the page on `listener` until the process ends, one request at a time.
pub fn serve(listener: TcpListener, config: &PageConfig, store: &mut Store) -> std::io::Result<()> {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let response = match read_request(&stream) {
            Ok(request) => handle(config, store, &request),
            Err(_) => Response::refused(400, "unreadable request"),
        };
        let _ = write_response(&stream, &response);
    }
    Ok(())
}
