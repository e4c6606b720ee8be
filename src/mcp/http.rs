//! The server side of `gavel mcp --listen`: a small HTTP/1.1 server for
//! MCP's Streamable HTTP transport, on std's `TcpListener`, one thread per
//! connection (keep-alive, `Content-Length` or chunked request bodies).
//! It reads each request, hands POST, GET and DELETE to the session hub
//! ([`super::hub`]) with a channel for the answer, and writes what comes
//! back: a bare status, one JSON message (`application/json`), or an event
//! stream (`text/event-stream`, chunked) when more than the response is to
//! be said (an elicitation, the server's own requests and notifications).
//! Whether the answer is JSON or a stream is decided by its first frame.
//!
//! A request from a browser page (an `Origin` header) is refused unless the
//! origin is loopback or gavel was told to listen beyond loopback, as the
//! transport asks of a local server (DNS rebinding).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use serde_json::Value;

use super::jsonrpc;
use super::sse;

/// The most bytes of a request line and its headers.
const MAX_HEAD: usize = 64 * 1024;
/// How long a kept-alive connection may sit idle.
const IDLE: Duration = Duration::from_secs(300);

/// What the client asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Post,
    Get,
    Delete,
}

/// One request for the hub.
#[derive(Debug)]
pub struct Incoming {
    pub method: Method,
    /// The client's `Mcp-Session-Id`.
    pub session: Option<String>,
    /// The client's `MCP-Protocol-Version`.
    pub protocol: Option<String>,
    /// The client's `Authorization`, for the upstream.
    pub authorization: Option<String>,
    pub body: String,
    pub reply: Sender<Reply>,
}

/// The hub's answer, frame by frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A whole answer: a status, with a JSON body or none.
    Status {
        code: u16,
        body: Option<String>,
        session: Option<String>,
    },
    /// An event stream begins (a GET), with nothing in it yet.
    Open { session: Option<String> },
    /// A message; `last` ends the answer. A first frame that is `last` is
    /// sent as `application/json`, any other starts an event stream.
    Frame {
        line: String,
        last: bool,
        session: Option<String>,
    },
    /// The event stream ends.
    Close,
}

/// Where requests go.
pub type Hub = Arc<dyn Fn(Incoming) + Send + Sync>;

/// How the server behaves.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most bytes of a request body.
    pub max_body: usize,
    /// Whether requests from a non-loopback `Origin` are refused.
    pub loopback_only: bool,
}

/// Accepts connections until the listener fails; each on its own thread.
pub fn serve(listener: TcpListener, hub: Hub, limits: Limits) -> std::io::Result<()> {
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(stream) => stream,
            // A connection that failed before it was accepted is the
            // client's problem; the listener goes on.
            Err(_) => continue,
        };
        let hub = Arc::clone(&hub);
        std::thread::spawn(move || {
            let _ = connection(stream, &hub, limits);
        });
    }
    Ok(())
}

/// Why a request could not be read.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error("the connection closed")]
    Closed,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("malformed request: {0}")]
    Bad(&'static str),
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
}

/// A request as read.
#[derive(Debug)]
struct Request {
    method: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn keep_alive(&self) -> bool {
        !self
            .header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"))
    }
}

/// What every response to one request says besides its own content.
struct Head {
    keep: bool,
    /// A loopback page's origin: answered with CORS headers, so a client
    /// in a browser on this machine (the MCP Inspector's page) can read them.
    origin: Option<String>,
}

impl Head {
    fn of(request: &Request) -> Self {
        Self {
            keep: request.keep_alive(),
            origin: request
                .header("origin")
                .filter(|o| loopback_origin(o))
                .map(str::to_owned),
        }
    }

    /// A connection closed after an unreadable request.
    fn closing() -> Self {
        Self {
            keep: false,
            origin: None,
        }
    }

    /// The header lines every response carries.
    fn lines(&self) -> String {
        let mut lines = String::new();
        if let Some(origin) = &self.origin {
            lines.push_str(&format!(
                "Access-Control-Allow-Origin: {origin}\r\nVary: Origin\r\nAccess-Control-Expose-Headers: Mcp-Session-Id, MCP-Protocol-Version\r\n"
            ));
        }
        if !self.keep {
            lines.push_str("Connection: close\r\n");
        }
        lines
    }
}

/// Serves one connection's requests, one after another.
fn connection(stream: TcpStream, hub: &Hub, limits: Limits) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let request = match read_request(&mut reader, &mut writer, limits.max_body) {
            Ok(request) => request,
            Err(ReadError::Closed | ReadError::Io(_)) => return Ok(()),
            Err(err @ ReadError::TooLarge(_)) => {
                let body = jsonrpc::error(
                    &Value::Null,
                    jsonrpc::INVALID_REQUEST,
                    &format!("gavel: {err}"),
                );
                write_whole(&mut writer, 413, Some(&body), None, &Head::closing())?;
                return Ok(());
            }
            Err(err @ ReadError::Bad(_)) => {
                let body = jsonrpc::error(
                    &Value::Null,
                    jsonrpc::INVALID_REQUEST,
                    &format!("gavel: {err}"),
                );
                write_whole(&mut writer, 400, Some(&body), None, &Head::closing())?;
                return Ok(());
            }
        };
        let head = Head::of(&request);
        if limits.loopback_only
            && let Some(origin) = request.header("origin")
            && !loopback_origin(origin)
        {
            let body = jsonrpc::error(
                &Value::Null,
                jsonrpc::INVALID_REQUEST,
                &format!("gavel: requests from the origin `{origin}` are refused"),
            );
            write_whole(&mut writer, 403, Some(&body), None, &head)?;
        } else {
            answer(&mut writer, request, hub, &head)?;
        }
        if !head.keep {
            return Ok(());
        }
    }
}

/// Hands one request to the hub and writes its answer.
fn answer(writer: &mut TcpStream, request: Request, hub: &Hub, head: &Head) -> std::io::Result<()> {
    let method = match request.method.as_str() {
        "POST" => Method::Post,
        "GET" => Method::Get,
        "DELETE" => Method::Delete,
        // A browser's preflight, from a loopback page.
        "OPTIONS" if head.origin.is_some() => return write_preflight(writer, head),
        _ => {
            return write_whole(writer, 405, None, None, head);
        }
    };
    if method == Method::Get
        && !request
            .header("accept")
            .is_some_and(|a| a.contains("text/event-stream"))
    {
        return write_whole(writer, 405, None, None, head);
    }
    let session = request.header("mcp-session-id").map(str::to_owned);
    let protocol = request.header("mcp-protocol-version").map(str::to_owned);
    let authorization = request.header("authorization").map(str::to_owned);
    let body = match String::from_utf8(request.body) {
        Ok(body) => body,
        Err(_) => {
            let body = jsonrpc::error(
                &Value::Null,
                jsonrpc::PARSE_ERROR,
                "gavel: the request body is not UTF-8",
            );
            return write_whole(writer, 400, Some(&body), None, head);
        }
    };
    let (tx, rx) = mpsc::channel();
    hub(Incoming {
        method,
        session,
        protocol,
        authorization,
        body,
        reply: tx,
    });
    write_reply(writer, &rx, head)
}

/// Writes the hub's frames: a status, one JSON message, or a stream.
fn write_reply(writer: &mut TcpStream, rx: &Receiver<Reply>, head: &Head) -> std::io::Result<()> {
    let first = match rx.recv() {
        Ok(first) => first,
        // The hub dropped the request unanswered.
        Err(_) => return write_whole(writer, 500, None, None, head),
    };
    let first_line = match first {
        Reply::Status {
            code,
            body,
            session,
        } => return write_whole(writer, code, body.as_deref(), session.as_deref(), head),
        Reply::Frame {
            line,
            last: true,
            session,
        } => return write_whole(writer, 200, Some(&line), session.as_deref(), head),
        Reply::Close => return write_whole(writer, 200, None, None, head),
        Reply::Open { session } => {
            write_stream_head(writer, session.as_deref(), head)?;
            None
        }
        Reply::Frame { line, session, .. } => {
            write_stream_head(writer, session.as_deref(), head)?;
            Some(line)
        }
    };
    if let Some(line) = first_line {
        write_chunk(writer, sse::event(&line).as_bytes())?;
    }
    for frame in rx {
        match frame {
            Reply::Frame { line, last, .. } => {
                write_chunk(writer, sse::event(&line).as_bytes())?;
                if last {
                    break;
                }
            }
            Reply::Close | Reply::Status { .. } => break,
            Reply::Open { .. } => {}
        }
    }
    writer.write_all(b"0\r\n\r\n")?;
    writer.flush()
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        _ => "Status",
    }
}

fn write_whole(
    writer: &mut TcpStream,
    code: u16,
    body: Option<&str>,
    session: Option<&str>,
    lines: &Head,
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {code} {}\r\n", reason(code));
    if code == 405 {
        head.push_str("Allow: GET, POST, DELETE\r\n");
    }
    if let Some(session) = session {
        head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    let body = body.unwrap_or_default();
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    head.push_str(&lines.lines());
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    writer.write_all(&out)?;
    writer.flush()
}

fn write_stream_head(
    writer: &mut TcpStream,
    session: Option<&str>,
    lines: &Head,
) -> std::io::Result<()> {
    let mut head = String::from(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n",
    );
    if let Some(session) = session {
        head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    head.push_str(&lines.lines());
    head.push_str("\r\n");
    writer.write_all(head.as_bytes())?;
    writer.flush()
}

/// The answer to a loopback page's CORS preflight.
fn write_preflight(writer: &mut TcpStream, lines: &Head) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 204 No Content\r\nAccess-Control-Allow-Methods: GET, POST, DELETE\r\nAccess-Control-Allow-Headers: Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID\r\nAccess-Control-Max-Age: 600\r\nContent-Length: 0\r\n{}\r\n",
        lines.lines()
    );
    writer.write_all(head.as_bytes())?;
    writer.flush()
}

fn write_chunk(writer: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    let mut out = format!("{:x}\r\n", bytes.len()).into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
    writer.write_all(&out)?;
    writer.flush()
}

/// Reads one request: its line, its headers, its body.
/// A client that sent `Expect: 100-continue` (curl, for a body over 1 KiB)
/// is told to go on through `interim` before its body is read.
fn read_request(
    reader: &mut impl BufRead,
    interim: &mut dyn Write,
    max_body: usize,
) -> Result<Request, ReadError> {
    let mut head = 0usize;
    let mut line = String::new();
    // Blank lines before a request are allowed (RFC 9112 2.2).
    loop {
        line.clear();
        let n = read_line(reader, &mut line, &mut head)?;
        if n == 0 {
            return Err(ReadError::Closed);
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut words = line.split_whitespace();
    let (Some(method), Some(_target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(ReadError::Bad(
            "the request line is not `METHOD TARGET HTTP/1.1`",
        ));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Bad("only HTTP/1.x is spoken"));
    }
    let method = method.to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if read_line(reader, &mut line, &mut head)? == 0 {
            return Err(ReadError::Bad("the headers end early"));
        }
        let text = line.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(ReadError::Bad("a header line has no `:`"));
        };
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let request = Request {
        method,
        headers,
        body: Vec::new(),
    };
    if request
        .header("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        interim.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        interim.flush()?;
    }
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        read_chunked(reader, max_body)?
    } else {
        match request.header("content-length") {
            Some(length) => {
                let length: usize = length
                    .parse()
                    .map_err(|_| ReadError::Bad("`Content-Length` is not a number"))?;
                if length > max_body {
                    return Err(ReadError::TooLarge(max_body));
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body)?;
                body
            }
            None => Vec::new(),
        }
    };
    Ok(Request { body, ..request })
}

/// One line of the head, counted against [`MAX_HEAD`].
fn read_line(
    reader: &mut impl BufRead,
    line: &mut String,
    head: &mut usize,
) -> Result<usize, ReadError> {
    let mut bytes = Vec::new();
    let n = reader
        .by_ref()
        .take(u64::try_from(MAX_HEAD - *head).unwrap_or(0) + 1)
        .read_until(b'\n', &mut bytes)?;
    *head += n;
    if *head > MAX_HEAD {
        return Err(ReadError::Bad("the request head is too large"));
    }
    match String::from_utf8(bytes) {
        Ok(text) => {
            line.push_str(&text);
            Ok(n)
        }
        Err(_) => Err(ReadError::Bad("the request head is not UTF-8")),
    }
}

/// A chunked body (RFC 9112 7.1); trailers are read and dropped.
fn read_chunked(reader: &mut impl BufRead, max_body: usize) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    let mut head = 0usize;
    loop {
        let mut line = String::new();
        if read_line(reader, &mut line, &mut head)? == 0 {
            return Err(ReadError::Bad("the chunked body ends early"));
        }
        let size = line.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size.trim(), 16)
            .map_err(|_| ReadError::Bad("a chunk size is not hexadecimal"))?;
        if size == 0 {
            loop {
                line.clear();
                if read_line(reader, &mut line, &mut head)? == 0 || line.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        if body.len().saturating_add(size) > max_body {
            return Err(ReadError::TooLarge(max_body));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut end = [0u8; 2];
        reader.read_exact(&mut end)?;
        if &end != b"\r\n" {
            return Err(ReadError::Bad("a chunk does not end with CRLF"));
        }
    }
}

/// Whether an `Origin` is a page on this machine.
fn loopback_origin(origin: &str) -> bool {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .unwrap_or(origin);
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => rest.split([':', '/']).next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8], max: usize) -> Result<Request, ReadError> {
        read_request(&mut BufReader::new(text), &mut std::io::sink(), max)
    }

    #[test]
    fn a_request_with_a_length_and_one_with_chunks() {
        let request = read(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\nMcp-Session-Id: abc\r\n\r\n{\"a\":1}",
            100,
        )
        .unwrap();
        assert_eq!(request.method, "POST");
        assert_eq!(request.header("MCP-SESSION-ID"), Some("abc"));
        assert_eq!(request.body, b"{\"a\":1}");
        let request = read(
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4;x=y\r\n\":1}\r\n0\r\nT: 1\r\n\r\n",
            100,
        )
        .unwrap();
        assert_eq!(request.body, b"{\"a\":1}");
    }

    #[test]
    fn a_client_that_expects_100_continue_is_told_to_go_on() {
        let mut interim = Vec::new();
        let request = read_request(
            &mut BufReader::new(
                &b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}"[..],
            ),
            &mut interim,
            100,
        )
        .unwrap();
        assert_eq!(request.body, b"{}");
        assert_eq!(interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[test]
    fn bad_and_large_requests_are_errors_not_panics() {
        for bad in [
            &b"POST\r\n\r\n"[..],
            b"POST / HTTP/2\r\n\r\n",
            b"POST / HTTP/1.1\r\nno colon\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd",
            b"POST / HTTP/1.1\r\nHost",
            b"\xff\xfe / HTTP/1.1\r\n\r\n",
        ] {
            assert!(
                matches!(read(bad, 100), Err(ReadError::Bad(_) | ReadError::Io(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(matches!(
            read(b"POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 100),
            Err(ReadError::TooLarge(100))
        ));
        assert!(matches!(
            read(
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n",
                100
            ),
            Err(ReadError::TooLarge(100))
        ));
        let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(matches!(read(huge.as_bytes(), 100), Err(ReadError::Bad(_))));
        assert!(matches!(read(b"", 100), Err(ReadError::Closed)));
    }

    #[test]
    fn only_loopback_origins_pass() {
        for origin in [
            "http://localhost:6274",
            "http://127.0.0.1",
            "https://[::1]:8080",
            "http://LOCALHOST",
        ] {
            assert!(loopback_origin(origin), "{origin}");
        }
        for origin in [
            "http://evil.example",
            "http://127.0.0.1.evil.example",
            "http://localhost.evil.example:80",
            "null",
        ] {
            assert!(!loopback_origin(origin), "{origin}");
        }
    }
}
