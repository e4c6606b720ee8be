//! `gavel mcp --listen --upstream`: the MCP sessions of a Streamable HTTP
//! proxy, on one thread. Each client session (one `initialize`, then the
//! `Mcp-Session-Id` the upstream gave it, passed through both ways) has its
//! own [`Session`], the same one the stdio proxy runs, so every
//! `tools/call` is decided, asked and recorded write-ahead exactly as over
//! stdio; this file only says where each message goes.
//!
//! A client POST carrying requests gets its answer on its own HTTP
//! response: the responses to its requests (by id), and whatever else is
//! said about them meanwhile (gavel's `elicitation/create` for an ask, the
//! upstream's requests and notifications on that call's stream). Messages
//! for nobody in particular go to the client's GET stream when it has one.
//! A POST of notifications or responses is answered `202` once handled.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::http::{Incoming, Method, Reply};
use super::jsonrpc::{self, Message};
use super::relay::recv_until;
use super::session::{End, Out, Session};
use super::upstream::{Delivery, Headers, Job, Sink, Upstream, Upstreamed};

/// How long gavel waits for the upstream to hear that its sessions ended
/// when gavel stops.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Makes and ends the sessions of the clients that connect.
pub trait Sessions {
    /// A new session, for a client's `initialize`.
    fn open(&mut self) -> Result<Session, String>;
    /// A session the client ended (`DELETE`).
    fn close(&mut self, session: Session);
}

/// How the hub runs.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// A session with nothing in progress that the client has not used for
    /// this long is ended (as a DELETE would end it): its record is closed
    /// and the upstream told. Clients that never send DELETE (most) would
    /// otherwise hold a session, its database connection and its thread
    /// for as long as gavel runs.
    pub idle: Duration,
    /// Whether SIGINT and SIGTERM end every session and return (Unix).
    pub stop_on_signals: bool,
}

enum Event {
    Client(Incoming),
    Upstream(Delivery),
    /// SIGINT or SIGTERM.
    Stop,
}

/// One client session.
struct Conn {
    session: Session,
    /// The upstream's `Mcp-Session-Id`, which the client uses too.
    upstream_session: Option<String>,
    /// The client's headers for the upstream, as last sent.
    headers: Headers,
    /// The client requests waiting for their response: id key → stream.
    pending: HashMap<String, u64>,
    jobs: Sender<Job>,
    /// The client's GET stream, when open.
    get: Option<u64>,
    /// When the client last sent anything for this session.
    used: Instant,
}

impl Conn {
    /// Keeps the headers the client sent for the upstream; the session is
    /// in use.
    fn remember(&mut self, incoming: &Incoming) {
        self.used = Instant::now();
        if incoming.protocol.is_some() {
            self.headers.protocol.clone_from(&incoming.protocol);
        }
        if incoming.authorization.is_some() {
            self.headers
                .authorization
                .clone_from(&incoming.authorization);
        }
    }
}

/// An HTTP answer in progress.
struct Stream {
    conn: u64,
    reply: Sender<Reply>,
}

/// The hub's state.
struct Hub<'a> {
    upstream: Arc<Upstream>,
    sessions: &'a mut dyn Sessions,
    notes: &'a mut dyn Write,
    sink: Sink,
    conns: HashMap<u64, Conn>,
    by_session: HashMap<String, u64>,
    /// The session of an upstream that names none (stateless).
    unnamed: Option<u64>,
    streams: HashMap<u64, Stream>,
    next: u64,
    idle: Duration,
}

/// Serves the clients that connect through `serve` (which gets the function
/// requests are handed to) until it returns.
pub fn run(
    upstream: Upstream,
    sessions: &mut dyn Sessions,
    notes: &mut dyn Write,
    options: Options,
    serve: impl FnOnce(Arc<dyn Fn(Incoming) + Send + Sync>) + Send + 'static,
) {
    let (tx, rx) = mpsc::channel::<Event>();
    // Before any thread starts, so that all of them leave the signals to
    // the one that waits for them.
    #[cfg(unix)]
    if options.stop_on_signals {
        stop_on_signals(tx.clone());
    }
    let client_tx = tx.clone();
    let hub_fn: Arc<dyn Fn(Incoming) + Send + Sync> = Arc::new(move |incoming| {
        let _ = client_tx.send(Event::Client(incoming));
    });
    let sink: Sink = Arc::new(move |delivery| {
        let _ = tx.send(Event::Upstream(delivery));
    });
    std::thread::spawn(move || serve(hub_fn));
    let mut hub = Hub {
        upstream: Arc::new(upstream),
        sessions,
        notes,
        sink,
        conns: HashMap::new(),
        by_session: HashMap::new(),
        unnamed: None,
        streams: HashMap::new(),
        next: 0,
        idle: options.idle,
    };
    while let Ok(event) = recv_until(&rx, hub.next_deadline()) {
        match event {
            Some(Event::Client(incoming)) => hub.client(incoming),
            Some(Event::Upstream(delivery)) => hub.upstream(delivery),
            Some(Event::Stop) => break,
            None => {}
        }
        hub.expire();
    }
    hub.stop();
}

/// Blocks SIGINT and SIGTERM in this thread (and so in every thread it
/// starts) and waits for them on a thread of their own, which tells the hub.
#[cfg(unix)]
fn stop_on_signals(tx: Sender<Event>) {
    // SAFETY: sigemptyset, sigaddset and pthread_sigmask only write the set
    // they are given (a local) and this thread's mask.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    std::thread::spawn(move || {
        let mut signal = 0;
        // SAFETY: sigwait reads the set and writes the signal, both locals.
        unsafe { libc::sigwait(&set, &mut signal) };
        let _ = tx.send(Event::Stop);
    });
}

impl Hub<'_> {
    fn note(&mut self, note: &str) {
        let _ = writeln!(self.notes, "gavel mcp: {note}");
    }

    fn next_id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.conns
            .values()
            .filter_map(|c| c.session.next_deadline())
            .chain(self.conns.values().filter_map(|c| self.idle_deadline(c)))
            .min()
    }

    /// When an idle session ends: one with nothing in progress.
    fn idle_deadline(&self, c: &Conn) -> Option<Instant> {
        (c.session.is_idle() && c.pending.is_empty()).then(|| c.used + self.idle)
    }

    /// Fails what has waited too long; ends idle sessions.
    fn expire(&mut self) {
        let now = Instant::now();
        let idle: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| self.idle_deadline(c).is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        for conn in idle {
            if let Some(session) = self.close(conn) {
                let _ = self.delete_upstream(session);
            }
        }
        let due: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| c.session.next_deadline().is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        for conn in due {
            if let Some(c) = self.conns.get_mut(&conn) {
                let out = c.session.expire(now);
                self.dispatch(conn, None, out);
            }
        }
    }

    /// A request from a client.
    fn client(&mut self, incoming: Incoming) {
        match incoming.method {
            Method::Post => self.post(incoming),
            Method::Get => self.get(incoming),
            Method::Delete => self.delete(incoming),
        }
    }

    /// The session a request names; `None` after answering `404`.
    fn named(&mut self, incoming: &Incoming) -> Option<Option<u64>> {
        match &incoming.session {
            Some(session) => match self.by_session.get(session) {
                Some(conn) => Some(Some(*conn)),
                None => {
                    let body = jsonrpc::error(
                        &Value::Null,
                        -32001,
                        &format!("gavel: no session `{session}`; send initialize again"),
                    );
                    let _ = incoming.reply.send(Reply::Status {
                        code: 404,
                        body: Some(body),
                        session: None,
                    });
                    None
                }
            },
            None => Some(self.unnamed),
        }
    }

    /// The open connection `incoming` names, for a GET or DELETE; else it
    /// is answered (404 for an unknown session, 405 with none open) and `None`.
    fn open_conn(&mut self, incoming: &Incoming) -> Option<u64> {
        let named = self.named(incoming)?;
        let conn = named.filter(|c| self.conns.contains_key(c));
        if conn.is_none() {
            let _ = incoming.reply.send(Reply::Status {
                code: 405,
                body: None,
                session: None,
            });
        }
        conn
    }

    fn post(&mut self, incoming: Incoming) {
        let value: Value = match serde_json::from_str(&incoming.body) {
            Ok(value) => value,
            Err(err) => {
                let body = jsonrpc::error(
                    &Value::Null,
                    jsonrpc::PARSE_ERROR,
                    &format!("gavel: the message is not JSON: {err}"),
                );
                let _ = incoming.reply.send(Reply::Status {
                    code: 400,
                    body: Some(body),
                    session: None,
                });
                return;
            }
        };
        let Some(named) = self.named(&incoming) else {
            return;
        };
        let initialize = matches!(
            jsonrpc::classify(&value),
            Message::Request {
                method: "initialize",
                ..
            }
        );
        let conn = match named {
            Some(conn) if !(initialize && incoming.session.is_none()) => conn,
            _ => match self.open() {
                Ok(conn) => {
                    // Until the upstream names it, requests that name no
                    // session are this one's.
                    self.unnamed = Some(conn);
                    conn
                }
                Err(err) => {
                    let body = jsonrpc::error(
                        request_ids(&value).first().unwrap_or(&Value::Null),
                        jsonrpc::INTERNAL_ERROR,
                        &format!("gavel: cannot start a session: {err}"),
                    );
                    let _ = incoming.reply.send(Reply::Status {
                        code: 500,
                        body: Some(body),
                        session: None,
                    });
                    return;
                }
            },
        };
        let ids = request_ids(&value);
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.remember(&incoming);
        if let Some(id) = ids
            .iter()
            .find(|id| c.pending.contains_key(&jsonrpc::id_key(id)))
        {
            let _ = incoming.reply.send(Reply::Frame {
                line: jsonrpc::error(
                    id,
                    jsonrpc::INVALID_REQUEST,
                    "gavel: this request id is already in use by a request in progress",
                ),
                last: true,
                session: c.upstream_session.clone(),
            });
            return;
        }
        let stream = if ids.is_empty() {
            None
        } else {
            let stream = self.next_id();
            if let Some(c) = self.conns.get_mut(&conn) {
                for id in &ids {
                    c.pending.insert(jsonrpc::id_key(id), stream);
                }
            }
            self.streams.insert(
                stream,
                Stream {
                    conn,
                    reply: incoming.reply.clone(),
                },
            );
            Some(stream)
        };
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let out = c.session.from_client(&incoming.body, Instant::now());
        self.dispatch(conn, stream, out);
        if stream.is_none() {
            let session = self
                .conns
                .get(&conn)
                .and_then(|c| c.upstream_session.clone());
            let _ = incoming.reply.send(Reply::Status {
                code: 202,
                body: None,
                session,
            });
        }
    }

    /// A new client session, its upstream worker started.
    fn open(&mut self) -> Result<u64, String> {
        let session = self.sessions.open()?;
        let conn = self.next_id();
        let jobs = self.upstream.start(conn, Arc::clone(&self.sink));
        self.conns.insert(
            conn,
            Conn {
                session,
                upstream_session: None,
                headers: Headers::default(),
                pending: HashMap::new(),
                jobs,
                get: None,
                used: Instant::now(),
            },
        );
        Ok(conn)
    }

    fn get(&mut self, incoming: Incoming) {
        let Some(conn) = self.open_conn(&incoming) else {
            return;
        };
        let stream = self.next_id();
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.remember(&incoming);
        self.streams.insert(
            stream,
            Stream {
                conn,
                reply: incoming.reply,
            },
        );
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        self.upstream.open_get(
            conn,
            stream,
            c.upstream_session.clone(),
            c.headers.clone(),
            Arc::clone(&self.sink),
        );
    }

    fn delete(&mut self, incoming: Incoming) {
        let Some(conn) = self.open_conn(&incoming) else {
            return;
        };
        if let Some(c) = self.conns.get_mut(&conn) {
            c.remember(&incoming);
        }
        let reply = incoming.reply;
        match self.close(conn) {
            Some(session) => {
                let done = self.delete_upstream(session);
                std::thread::spawn(move || {
                    let code = done.join().ok().flatten().unwrap_or(502);
                    let _ = reply.send(Reply::Status {
                        code,
                        body: None,
                        session: None,
                    });
                });
            }
            None => {
                let _ = reply.send(Reply::Status {
                    code: 200,
                    body: None,
                    session: None,
                });
            }
        }
    }

    /// Ends a session: its open calls are recorded `failed`, its asks
    /// `cancelled`, its streams closed. The upstream session to delete.
    fn close(&mut self, conn: u64) -> Option<(String, Headers)> {
        let mut c = self.conns.remove(&conn)?;
        // Requests still waiting are answered: the session is over.
        for (key, stream) in c.pending.drain() {
            let id = serde_json::from_str(&key).unwrap_or(Value::Null);
            if let Some(s) = self.streams.remove(&stream) {
                let _ = s.reply.send(Reply::Frame {
                    line: jsonrpc::error(
                        &id,
                        jsonrpc::INTERNAL_ERROR,
                        "gavel: the session ended before the server answered",
                    ),
                    last: true,
                    session: None,
                });
            }
        }
        let streams: Vec<u64> = self
            .streams
            .iter()
            .filter(|(_, s)| s.conn == conn)
            .map(|(id, _)| *id)
            .collect();
        for stream in streams {
            if let Some(s) = self.streams.remove(&stream) {
                let _ = s.reply.send(Reply::Close);
            }
        }
        if let Some(session) = &c.upstream_session {
            self.by_session.remove(session);
        }
        if self.unnamed == Some(conn) {
            self.unnamed = None;
        }
        for out in c.session.end(End::ClientGone) {
            if let Out::Note(note) = out {
                self.note(&note);
            }
        }
        self.sessions.close(c.session);
        c.upstream_session.map(|session| (session, c.headers))
    }

    /// Deletes an upstream session on a thread of its own; the status.
    fn delete_upstream(
        &self,
        (session, headers): (String, Headers),
    ) -> std::thread::JoinHandle<Option<u16>> {
        let upstream = Arc::clone(&self.upstream);
        std::thread::spawn(move || upstream.delete(&session, &headers).ok())
    }

    /// Ends every session, giving the upstream a moment to hear of it.
    fn stop(&mut self) {
        let conns: Vec<u64> = self.conns.keys().copied().collect();
        let mut deletes = Vec::new();
        for conn in conns {
            if let Some(session) = self.close(conn) {
                deletes.push(self.delete_upstream(session));
            }
        }
        let until = Instant::now() + STOP_GRACE;
        while deletes.iter().any(|d| !d.is_finished()) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Something the upstream said.
    fn upstream(&mut self, delivery: Delivery) {
        let Delivery { conn, stream, what } = delivery;
        if !self.conns.contains_key(&conn) {
            // The session ended meanwhile.
            return;
        }
        match what {
            Upstreamed::Note(note) => self.note(&note),
            Upstreamed::Session(session) => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                if self.unnamed == Some(conn) {
                    self.unnamed = None;
                }
                if c.upstream_session.is_none() {
                    c.upstream_session = Some(session.clone());
                    self.by_session.insert(session, conn);
                }
            }
            Upstreamed::Line(line) => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                let out = c.session.from_server(&line);
                self.dispatch(conn, stream, out);
            }
            Upstreamed::GetOpened(opened) => {
                let Some(stream) = stream else { return };
                let session = self
                    .conns
                    .get(&conn)
                    .and_then(|c| c.upstream_session.clone());
                match opened {
                    Ok(()) => {
                        if let Some(c) = self.conns.get_mut(&conn) {
                            c.get = Some(stream);
                        }
                        if let Some(s) = self.streams.get(&stream) {
                            let _ = s.reply.send(Reply::Open { session });
                        }
                    }
                    Err(code) => {
                        if let Some(s) = self.streams.remove(&stream) {
                            let _ = s.reply.send(Reply::Status {
                                code,
                                body: None,
                                session,
                            });
                        }
                    }
                }
            }
            Upstreamed::GetEnded => {
                if let Some(stream) = stream
                    && let Some(s) = self.streams.remove(&stream)
                {
                    let _ = s.reply.send(Reply::Close);
                }
                if let Some(c) = self.conns.get_mut(&conn)
                    && c.get == stream
                {
                    c.get = None;
                }
            }
        }
    }

    /// Sends what the session said where it goes: lines for the server to
    /// the upstream worker, lines for the client to the stream that waits
    /// for them.
    fn dispatch(&mut self, conn: u64, context: Option<u64>, out: Vec<Out>) {
        for out in out {
            match out {
                Out::Note(note) => self.note(&note),
                Out::Server(line) => self.send_upstream(conn, context, line),
                Out::Client(line) => self.send_client(conn, context, line),
            }
        }
    }

    fn send_upstream(&mut self, conn: u64, context: Option<u64>, line: String) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        // A client request's answer belongs to the stream it came on.
        let stream = serde_json::from_str::<Value>(&line)
            .ok()
            .and_then(|value| match jsonrpc::classify(&value) {
                Message::Request { id, .. } => c.pending.get(&jsonrpc::id_key(id)).copied(),
                _ => None,
            })
            .or(context);
        let _ = c.jobs.send(Job {
            line,
            stream,
            session: c.upstream_session.clone(),
            headers: c.headers.clone(),
        });
    }

    fn send_client(&mut self, conn: u64, context: Option<u64>, line: String) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let value = serde_json::from_str::<Value>(&line).ok();
        let response = value.as_ref().and_then(|v| match jsonrpc::classify(v) {
            Message::Response { id, .. } => Some(jsonrpc::id_key(id)),
            _ => None,
        });
        let null_response = value
            .as_ref()
            .is_some_and(|v| v.get("id") == Some(&Value::Null) && v.get("error").is_some());
        let (stream, last) = if let Some(key) = response {
            let Some(stream) = c.pending.remove(&key) else {
                self.note(&format!(
                    "dropped a response to request {key}, which no client waits for"
                ));
                return;
            };
            (stream, !c.pending.values().any(|s| *s == stream))
        } else if null_response && let Some(stream) = context {
            // An error for no request (a parse error, a refused batch) ends
            // the answer it was given on.
            c.pending.retain(|_, s| *s != stream);
            (stream, true)
        } else {
            // A request or notification for the client: on the stream it
            // concerns, else the GET stream, else any answer still open.
            let open = |s: &u64| self.streams.contains_key(s);
            let target = context
                .filter(open)
                .or(c.get.filter(open))
                .or_else(|| c.pending.values().copied().find(open));
            let Some(stream) = target else {
                self.note("dropped a message for the client, which has no stream open to take it");
                return;
            };
            (stream, false)
        };
        let session = c.upstream_session.clone();
        let Some(s) = self.streams.get(&stream) else {
            return;
        };
        let sent = s.reply.send(Reply::Frame {
            line,
            last,
            session,
        });
        if last || sent.is_err() {
            self.streams.remove(&stream);
        }
    }
}

/// The ids of the requests in a POST body (one message or a batch).
fn request_ids(value: &Value) -> Vec<Value> {
    let items = match value {
        Value::Array(items) => items.as_slice(),
        one => std::slice::from_ref(one),
    };
    items
        .iter()
        .filter_map(|item| match jsonrpc::classify(item) {
            Message::Request { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}
