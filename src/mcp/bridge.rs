//! `gavel mcp --upstream URL` without `--listen`: stdio to the client (it
//! starts gavel as its server, as for any stdio server), MCP's Streamable
//! HTTP to the remote server. One [`Session`], the same as every other
//! proxy's, between the client's lines and the [`Upstream`]; so a client
//! configured with a remote server's URL can be given a command instead
//! (`gavel mcp wrap` does that) and every call is governed the same way.
//!
//! The upstream's `Mcp-Session-Id` and the negotiated protocol version are
//! sent with every request; its own stream (GET) is opened once the
//! session is initialized, when it offers one; the client's end deletes
//! the upstream session.

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::jsonrpc::{self, Message};
use super::relay::{Ended, RelayError, read_lines, recv_until};
use super::session::{End, Out, Session};
use super::upstream::{Delivery, Headers, Job, Sink, Upstream, Upstreamed};

/// How long gavel waits for the upstream to hear that the session ended.
const GRACE: Duration = Duration::from_secs(2);

enum Event {
    Client(Vec<u8>),
    ClientEof,
    Upstream(Delivery),
}

/// Runs `session` between the client (`client_in`, `client_out`) and the
/// upstream until the client's input ends.
pub fn run(
    session: &mut Session,
    upstream: Upstream,
    client_in: impl Read + Send + 'static,
    client_out: &mut dyn Write,
    notes: &mut dyn Write,
) -> Result<Ended, RelayError> {
    let (tx, rx) = mpsc::channel::<Event>();
    read_lines(client_in, tx.clone(), Event::Client, Event::ClientEof);
    let sink: Sink = Arc::new(move |delivery| {
        let _ = tx.send(Event::Upstream(delivery));
    });
    let upstream = Arc::new(upstream);
    let jobs = upstream.start(0, Arc::clone(&sink));
    let mut bridge = Bridge {
        upstream_session: None,
        headers: Headers::default(),
        stream_opened: false,
        client_out,
        client_open: true,
        notes,
    };
    while let Ok(event) = recv_until(&rx, session.next_deadline()) {
        let out = match event {
            None => session.expire(Instant::now()),
            Some(Event::Client(bytes)) => match String::from_utf8(bytes) {
                Ok(text) => session.from_client(&text, Instant::now()),
                // Not UTF-8, so not JSON: answered as a parse error.
                Err(_) => session.from_client("\u{0}", Instant::now()),
            },
            Some(Event::ClientEof) => break,
            Some(Event::Upstream(Delivery { what, .. })) => match what {
                Upstreamed::Session(id) => {
                    bridge.upstream_session.get_or_insert(id);
                    Vec::new()
                }
                Upstreamed::Line(line) => {
                    bridge.negotiated(&line);
                    session.from_server(&line)
                }
                Upstreamed::Note(note) => vec![Out::Note(note)],
                Upstreamed::GetOpened(Ok(())) | Upstreamed::GetEnded => Vec::new(),
                // No server stream: everything comes on the calls' answers.
                Upstreamed::GetOpened(Err(_)) => Vec::new(),
            },
        };
        bridge.send(out, &jobs)?;
        if !bridge.stream_opened && bridge.headers.protocol.is_some() {
            bridge.stream_opened = true;
            upstream.open_get(
                0,
                0,
                bridge.upstream_session.clone(),
                bridge.headers.clone(),
                Arc::clone(&sink),
            );
        }
        if !bridge.client_open {
            break;
        }
    }
    // Calls still open fail, asks are cancelled; the upstream is told.
    let out = session.end(End::ClientGone);
    let _ = bridge.send(out, &jobs);
    if let Some(id) = bridge.upstream_session.take() {
        let headers = bridge.headers.clone();
        let done = std::thread::spawn(move || upstream.delete(&id, &headers));
        let until = Instant::now() + GRACE;
        while !done.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Ok(Ended {
        by: End::ClientGone,
        server_status: None,
    })
}

/// The bridge's side of the session.
struct Bridge<'a> {
    upstream_session: Option<String>,
    headers: Headers,
    stream_opened: bool,
    client_out: &'a mut dyn Write,
    /// False once a write to the client failed.
    client_open: bool,
    notes: &'a mut dyn Write,
}

impl Bridge<'_> {
    /// Notes the protocol version the upstream answered `initialize` with.
    fn negotiated(&mut self, line: &str) {
        if self.headers.protocol.is_some() {
            return;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return;
        };
        if let Message::Response {
            result: Some(result),
            ..
        } = jsonrpc::classify(&value)
            && result.get("serverInfo").is_some()
            && let Some(version) = result.get("protocolVersion").and_then(Value::as_str)
        {
            self.headers.protocol = Some(version.to_owned());
        }
    }

    fn send(&mut self, out: Vec<Out>, jobs: &mpsc::Sender<Job>) -> Result<(), RelayError> {
        for out in out {
            match out {
                Out::Client(line) if self.client_open => {
                    let written =
                        writeln!(self.client_out, "{line}").and_then(|()| self.client_out.flush());
                    if written.is_err() {
                        self.client_open = false;
                    }
                }
                Out::Client(_) => {}
                Out::Server(line) => {
                    let _ = jobs.send(Job {
                        line,
                        stream: None,
                        session: self.upstream_session.clone(),
                        headers: self.headers.clone(),
                    });
                }
                Out::Note(note) => {
                    let _ = writeln!(self.notes, "gavel mcp: {note}");
                }
            }
        }
        Ok(())
    }
}
