//! One proxied MCP session, without I/O: lines in (from the client or from
//! the server), lines out (to either), every `tools/call` through the
//! governed pipeline and into the record. [`super::relay`] owns the pipes
//! and the clock; this owns what a message means.
//!
//! A `tools/call` is decided and recorded (request and decision, written
//! ahead) before anything is sent on: allowed, the client's line goes to
//! the server as it came, and the server's response (or error, or the
//! server's end, or the timeout) is the call's result; denied, the client
//! gets a tool result with `isError` and gavel's rule id and reason, and
//! the server never sees the call; asked, the client is asked through
//! `elicitation/create` when it declared that capability, and the call is
//! refused as "needs approval" when it did not. Every other message is
//! relayed untouched.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::definitions::{self, Definitions};
use super::jsonrpc::{self, Message};
use super::names;
use super::results::{blocked, elicitation, failed, server_result, unrecorded};
use crate::approval::{ApprovalChannel, ApprovalStatus, CancelCause};
use crate::audit::{
    AnomalyKind, AnomalyRecord, ApprovalRecord, AuditError, ClientCall, Event, EventBody,
    ExecutionStatus, INLINE_CLIENT_INPUT, ResultRecord, ToolResult,
};
use crate::policy::{Action, Decision};
use crate::principal::Principal;
use crate::request::ToolRequest;
use crate::runner::{AskRoute, blocked_content, new_call_id};
use crate::session::{Ask, Call, Governed, Service};

mod queue;
use queue::Queued;

/// The `client` gavel records for calls that came through the proxy.
pub const CLIENT: &str = "mcp";

/// The prefix of the ids of gavel's own requests to the client.
const ASK_ID_PREFIX: &str = "gavel-ask-";
/// The prefix of the ids of gavel's own `tools/list` requests to the server.
const LIST_ID_PREFIX: &str = "gavel-list-";
/// At most this many pages of a `tools/list` gavel asks for itself.
const MAX_LIST_PAGES: u32 = 10;
/// How long gavel waits for its own `tools/list` before deciding without it.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// How a session is run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The server's name in tool names (`mcp__NAME__TOOL`).
    pub server: String,
    /// How long a forwarded call may wait for the server, and an ask for
    /// the client's answer.
    pub timeout: Duration,
    /// This session's id, recorded with each call.
    pub session_id: String,
}

/// A line to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    Client(String),
    Server(String),
    /// A diagnostic for gavel's stderr.
    Note(String),
}

/// What ended the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The server closed its output or exited.
    ServerGone,
    /// The client closed its end.
    ClientGone,
}

/// A call forwarded to the server, waiting for its response.
#[derive(Debug)]
struct OpenCall {
    call_id: String,
    tool: String,
    request_id: Value,
    started: Instant,
    deadline: Instant,
    anomaly: Option<Anomaly>,
}

/// A call whose approval was asked of the client.
#[derive(Debug)]
struct Asking {
    open: OpenCall,
    /// The client's `tools/call` line, sent on when approved.
    line: String,
    decision: Decision,
}

/// What a call carries to its anomaly row, when it ran under a tool
/// definition that changed since the log last saw it.
#[derive(Debug, Clone)]
struct Anomaly {
    detail: String,
    client: ClientCall,
}

/// Client messages held while gavel lists the server's tools itself: a
/// call to a tool whose definition this session has not seen is decided
/// only once its definition is known (a client that kept the list from an
/// earlier session is not asked to list it again).
#[derive(Debug)]
struct Held {
    /// The id of gavel's `tools/list` request.
    list_id: String,
    pages: u32,
    /// The client's lines, in order, from the call that started the listing.
    queue: Vec<String>,
    deadline: Instant,
}

/// One proxied session.
pub struct Session {
    service: Service,
    who: Option<Arc<Principal>>,
    config: Config,
    /// Whether the client declared `elicitation` (form mode) in `initialize`.
    elicitation: bool,
    /// The client's `clientInfo.name`, when it gave one.
    client_name: Option<String>,
    /// Forwarded calls, by the key of the client's id.
    calls: HashMap<String, OpenCall>,
    /// Calls waiting for an approval, by the id of gavel's elicitation.
    asks: HashMap<String, Asking>,
    /// Ids of calls answered by gavel (a timeout, a cancellation): the
    /// server's late response to one is not sent on.
    answered: HashSet<String>,
    /// The client's `tools/list` requests waiting for their response.
    lists: HashSet<String>,
    definitions: Definitions,
    next_ask: u64,
    held: Option<Held>,
    /// Whether a whole `tools/list` was seen in this session.
    listed: bool,
    /// With `--ask wait`: how long an asked call waits in the pending queue.
    wait: Option<Duration>,
    /// Calls waiting in the pending queue, by call id.
    queued: HashMap<String, Queued>,
}

impl Session {
    pub fn new(service: Service, config: Config) -> Self {
        let who = service.principal();
        let definitions = Definitions::new(&config.server);
        Self {
            service,
            who,
            config,
            elicitation: false,
            client_name: None,
            calls: HashMap::new(),
            asks: HashMap::new(),
            answered: HashSet::new(),
            lists: HashSet::new(),
            definitions,
            next_ask: 0,
            held: None,
            listed: false,
            wait: None,
            queued: HashMap::new(),
        }
    }

    /// Asks go to the pending queue (`gavel approve` / `gavel reject` / the
    /// approval page) and wait there for at most `wait`, whether or not the
    /// client offers elicitation: the person at the queue is the one the
    /// `--ask wait` named.
    pub fn with_queue(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }

    /// The store the session records in.
    pub fn store_mut(&mut self) -> &mut crate::store::Store {
        self.service.store()
    }

    /// The session's end: a signed checkpoint vouches for what it recorded.
    pub fn close(self) {
        self.service.close();
    }

    /// Whether any call waits for the server or for an approval.
    pub fn is_idle(&self) -> bool {
        self.calls.is_empty()
            && self.asks.is_empty()
            && self.held.is_none()
            && self.queued.is_empty()
    }

    /// When the next forwarded call or ask times out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.calls
            .values()
            .map(|c| c.deadline)
            .chain(self.asks.values().map(|a| a.open.deadline))
            .chain(self.held.as_ref().map(|h| h.deadline))
            .chain(self.queued.values().map(|q| q.next_poll))
            .min()
    }

    /// A line from the client.
    pub fn from_client(&mut self, line: &str, now: Instant) -> Vec<Out> {
        if line.trim().is_empty() {
            return Vec::new();
        }
        if let Some(held) = &mut self.held {
            held.queue.push(line.to_owned());
            return Vec::new();
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(err) => {
                return vec![Out::Client(jsonrpc::error(
                    &Value::Null,
                    jsonrpc::PARSE_ERROR,
                    &format!("gavel: the message is not JSON: {err}"),
                ))];
            }
        };
        match jsonrpc::classify(&value) {
            Message::Request {
                id,
                method: "tools/call",
                params,
            } => self.call(id, params, line, now),
            Message::Request {
                method: "initialize",
                params,
                ..
            } => {
                self.initialize(params);
                vec![Out::Server(line.to_owned())]
            }
            Message::Request {
                id,
                method: "tools/list",
                ..
            } => {
                self.lists.insert(jsonrpc::id_key(id));
                vec![Out::Server(line.to_owned())]
            }
            Message::Notification {
                method: "notifications/cancelled",
                params,
            } => self.cancelled(params, line),
            Message::Response { id, result, error }
                if id.as_str().is_some_and(|id| self.asks.contains_key(id)) =>
            {
                let id = id.as_str().unwrap_or_default().to_owned();
                self.answer(&id, result, error, now)
            }
            Message::Batch(items) if items.iter().any(is_tools_call) => {
                vec![Out::Client(jsonrpc::error(
                    &Value::Null,
                    jsonrpc::INVALID_REQUEST,
                    "gavel: a JSON-RPC batch may not carry tools/call; send each call alone",
                ))]
            }
            _ => vec![Out::Server(line.to_owned())],
        }
    }

    /// A line from the server. A line that is not a JSON-RPC message is
    /// never relayed: the open call it answers (by the id it seems to carry,
    /// else every forwarded call, whose response it may have been) fails
    /// with a JSON-RPC error and is recorded `failed`.
    pub fn from_server(&mut self, line: &str) -> Vec<Out> {
        if line.trim().is_empty() {
            return Vec::new();
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return self.stray(line);
        };
        match jsonrpc::classify(&value) {
            Message::Response { id, result, error } => self.response(line, id, result, error),
            // Each message of a batch on its own: a response in it completes
            // its call like any other.
            Message::Batch(items) => {
                let lines: Vec<String> = items.iter().map(Value::to_string).collect();
                lines
                    .iter()
                    .flat_map(|item| self.from_server(item))
                    .collect()
            }
            Message::Request { .. } | Message::Notification { .. } => {
                vec![Out::Client(line.to_owned())]
            }
            Message::Other if jsonrpc::is_error_for_no_request(&value) => {
                vec![Out::Client(line.to_owned())]
            }
            Message::Other => self.stray(line),
        }
    }

    /// A line from the server that is not a JSON-RPC message: dropped with a
    /// note; the calls it may have answered fail.
    fn stray(&mut self, line: &str) -> Vec<Out> {
        let shown: String = line.chars().take(120).collect();
        let guessed = jsonrpc::stray_id(line).map(|id| jsonrpc::id_key(&id));
        let held = self
            .held
            .as_ref()
            .map(|h| jsonrpc::id_key(&Value::String(h.list_id.clone())));
        let listing = guessed
            .as_ref()
            .is_some_and(|key| self.lists.contains(key) || held.as_ref() == Some(key));
        let keys: Vec<String> = match &guessed {
            Some(key) if self.calls.contains_key(key) => vec![key.clone()],
            _ if listing => Vec::new(),
            _ => self.calls.keys().cloned().collect(),
        };
        let mut out = vec![Out::Note(format!(
            "the server sent a line that is not JSON-RPC, not relayed{}: {shown}",
            if keys.is_empty() {
                String::new()
            } else {
                format!("; failing {} open call(s)", keys.len())
            }
        ))];
        for key in keys {
            let Some(call) = self.calls.remove(&key) else {
                continue;
            };
            let message = format!(
                "gavel: the MCP server answered `{}` with a line that is not JSON-RPC",
                call.tool
            );
            out.push(Out::Server(jsonrpc::notification(
                "notifications/cancelled",
                json!({"requestId": call.request_id, "reason": message}),
            )));
            out.push(Out::Client(jsonrpc::error(
                &call.request_id,
                jsonrpc::INTERNAL_ERROR,
                &message,
            )));
            self.answered.insert(key);
            let result = failed(message, call.started.elapsed());
            out.extend(self.finish(call, &result));
        }
        // gavel's own listing the line was for: decided without it.
        if listing && guessed == held {
            out.extend(self.release(Instant::now()));
        }
        // The client's `tools/list` the line was for gets an error.
        if let Some(key) = guessed
            && self.lists.remove(&key)
            && let Ok(id) = serde_json::from_str::<Value>(&key)
        {
            self.answered.insert(key);
            out.push(Out::Client(jsonrpc::error(
                &id,
                jsonrpc::INTERNAL_ERROR,
                "gavel: the MCP server answered with a line that is not JSON-RPC",
            )));
        }
        out
    }

    /// A response from the server.
    fn response(
        &mut self,
        line: &str,
        id: &Value,
        result: Option<&Value>,
        error: Option<&Value>,
    ) -> Vec<Out> {
        let key = jsonrpc::id_key(id);
        if self
            .held
            .as_ref()
            .is_some_and(|h| id.as_str() == Some(h.list_id.as_str()))
        {
            return self.listed_by_gavel(result);
        }
        if let Some(call) = self.calls.remove(&key) {
            let result = server_result(result, error, call.started.elapsed());
            let call_id = call.call_id.clone();
            let mut out = self.finish(call, &result);
            let reference = self.service.store().receipt_reference(&call_id);
            out.push(Out::Client(with_receipt(line, reference.ok().flatten())));
            return out;
        }
        if self.answered.remove(&key) {
            // gavel already answered this call (timeout, cancellation).
            return vec![Out::Note(format!(
                "dropped the server's late response to request {key}"
            ))];
        }
        let mut out = Vec::new();
        if self.lists.remove(&key)
            && let Some(tools) = result
                .and_then(|r| r.get("tools"))
                .and_then(Value::as_array)
        {
            let who = self.who.clone();
            if let Err(err) = self
                .definitions
                .seen(tools, self.service.store(), who.as_ref())
            {
                out.push(Out::Note(format!(
                    "cannot record the server's tool definitions: {err}"
                )));
            }
            if result.and_then(|r| r.get("nextCursor")).is_none() {
                self.listed = true;
            }
        }
        out.push(Out::Client(line.to_owned()));
        out
    }

    /// Fails every forwarded call and ask whose time is up.
    pub fn expire(&mut self, now: Instant) -> Vec<Out> {
        let mut out = Vec::new();
        if self.held.as_ref().is_some_and(|h| h.deadline <= now) {
            out.push(Out::Note(
                "the server did not list its tools in time; calls are decided without their definitions".to_owned(),
            ));
            out.extend(self.release(now));
        }
        let late: Vec<String> = self
            .calls
            .iter()
            .filter(|(_, c)| c.deadline <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in late {
            let Some(call) = self.calls.remove(&key) else {
                continue;
            };
            let message = format!(
                "gavel: the MCP server did not answer `{}` within {} s",
                call.tool,
                self.config.timeout.as_secs()
            );
            out.push(Out::Server(jsonrpc::notification(
                "notifications/cancelled",
                json!({"requestId": call.request_id, "reason": message}),
            )));
            out.push(Out::Client(jsonrpc::error(
                &call.request_id,
                jsonrpc::INTERNAL_ERROR,
                &message,
            )));
            self.answered.insert(key);
            let result = failed(message, call.started.elapsed());
            out.extend(self.finish(call, &result));
        }
        let late: Vec<String> = self
            .asks
            .iter()
            .filter(|(_, a)| a.open.deadline <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for id in late {
            out.extend(self.refuse(&id, ApprovalStatus::Cancelled, Some(CancelCause::Timeout)));
        }
        out.extend(self.poll_queue(now));
        out
    }

    /// Completes every open call when one side is gone: forwarded calls
    /// fail, asks are cancelled. When the server is gone the client is
    /// told, call by call.
    pub fn end(&mut self, end: End) -> Vec<Out> {
        // Held lines are handled first: their calls are decided and recorded.
        let mut out = self.release(Instant::now());
        let (message, cause) = match end {
            End::ServerGone => (
                "gavel: the MCP server exited before answering",
                CancelCause::Error,
            ),
            End::ClientGone => (
                "gavel: the client disconnected before the server answered",
                CancelCause::Eof,
            ),
        };
        let ids: Vec<String> = self.asks.keys().cloned().collect();
        for id in ids {
            out.extend(self.refuse(&id, ApprovalStatus::Cancelled, Some(cause)));
        }
        out.extend(self.stop_queue(cause));
        let calls: Vec<OpenCall> = self.calls.drain().map(|(_, call)| call).collect();
        for call in calls {
            if end == End::ServerGone {
                out.push(Out::Client(jsonrpc::error(
                    &call.request_id,
                    jsonrpc::INTERNAL_ERROR,
                    message,
                )));
            }
            let result = failed(message.to_owned(), call.started.elapsed());
            out.extend(self.finish(call, &result));
        }
        if end == End::ClientGone {
            out.retain(|o| !matches!(o, Out::Client(_)));
        }
        out
    }

    /// Notes what the client declared in `initialize`.
    fn initialize(&mut self, params: Option<&Value>) {
        let capabilities = params.and_then(|p| p.get("capabilities"));
        self.elicitation = capabilities
            .and_then(|c| c.get("elicitation"))
            .and_then(Value::as_object)
            // 2025-11-25 names modes; an empty object means form mode.
            .is_some_and(|e| e.is_empty() || e.contains_key("form") || !e.contains_key("url"));
        let info = params.and_then(|p| p.get("clientInfo"));
        let field = |name: &str| info.and_then(|i| i.get(name)).and_then(Value::as_str);
        self.client_name = field("name").map(str::to_owned);
        // The client the calls come through, as it names itself: the
        // principal's `client_version` (its `client` stays `mcp`).
        if let (Some(name), Some(principal)) = (field("name"), self.service.runner().principal()) {
            let named = match field("version") {
                Some(version) => format!("{name} {version}"),
                None => name.to_owned(),
            };
            let principal = principal.clone().with_client_version(Some(&named));
            self.service.runner_mut().set_principal(principal);
            self.who = self.service.principal();
        }
    }

    /// Lists the server's tools (page `pages`, after `cursor`) before the
    /// held call is decided.
    fn list_tools(
        &mut self,
        cursor: Option<&Value>,
        queue: Vec<String>,
        pages: u32,
        now: Instant,
    ) -> Vec<Out> {
        self.next_ask += 1;
        let list_id = format!("{LIST_ID_PREFIX}{}", self.next_ask);
        let params = match cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let request = jsonrpc::request(&list_id, "tools/list", params);
        self.held = Some(Held {
            list_id,
            pages,
            queue,
            deadline: now + self.config.timeout.min(LIST_TIMEOUT),
        });
        vec![Out::Server(request)]
    }

    /// The server's answer to gavel's own `tools/list`: never relayed.
    fn listed_by_gavel(&mut self, result: Option<&Value>) -> Vec<Out> {
        let now = Instant::now();
        let mut out = Vec::new();
        if let Some(tools) = result
            .and_then(|r| r.get("tools"))
            .and_then(Value::as_array)
        {
            let who = self.who.clone();
            if let Err(err) = self
                .definitions
                .seen(tools, self.service.store(), who.as_ref())
            {
                out.push(Out::Note(format!(
                    "cannot record the server's tool definitions: {err}"
                )));
            }
        }
        let cursor = result
            .and_then(|r| r.get("nextCursor"))
            .filter(|c| !c.is_null())
            .cloned();
        let pages = self.held.as_ref().map_or(0, |h| h.pages);
        if let Some(cursor) = cursor
            && pages < MAX_LIST_PAGES
            && let Some(held) = self.held.take()
        {
            out.extend(self.list_tools(Some(&cursor), held.queue, pages + 1, now));
            return out;
        }
        out.extend(self.release(now));
        out
    }

    /// Ends a hold: the held lines are handled in order.
    fn release(&mut self, now: Instant) -> Vec<Out> {
        let Some(held) = self.held.take() else {
            return Vec::new();
        };
        self.listed = true;
        let mut out = Vec::new();
        for line in held.queue {
            out.extend(self.from_client(&line, now));
        }
        out
    }

    /// A `tools/call`: decided and recorded, then sent on, refused or asked.
    fn call(&mut self, id: &Value, params: Option<&Value>, line: &str, now: Instant) -> Vec<Out> {
        let Some(tool) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
            return vec![Out::Client(jsonrpc::error(
                id,
                jsonrpc::INVALID_PARAMS,
                "gavel: tools/call needs `params.name`, a string",
            ))];
        };
        if !self.listed && !self.definitions.knows(tool) {
            return self.list_tools(None, vec![line.to_owned()], 1, now);
        }
        let key = jsonrpc::id_key(id);
        if self.calls.contains_key(&key)
            || self.asks.values().any(|a| a.open.request_id == *id)
            || self.queued.values().any(|q| q.open.request_id == *id)
        {
            return vec![Out::Client(jsonrpc::error(
                id,
                jsonrpc::INVALID_REQUEST,
                "gavel: this request id is already in use by a call in progress",
            ))];
        }
        let arguments = params
            .and_then(|p| p.get("arguments"))
            .cloned()
            .unwrap_or_else(|| json!({}));
        let gavel_tool = names::tool_name(&self.config.server, tool);
        let call_id = new_call_id();
        let request = ToolRequest::new(jsonrpc::id_text(id), &gavel_tool, arguments.clone());
        let client = ClientCall::new(
            CLIENT,
            tool,
            &arguments,
            Some(&self.config.session_id),
            self.service
                .runner()
                .max_argument_bytes()
                .min(INLINE_CLIENT_INPUT),
        );
        let mcp = self.definitions.facts(tool);
        let anomaly = mcp
            .as_ref()
            .filter(|m| m.definition_changed())
            .map(|m| Anomaly {
                detail: definitions::changed_detail(tool, m),
                client: client.clone(),
            });
        let route = if let Some(wait) = self.wait {
            AskRoute::Queue {
                until_us: crate::approvals::until_us(wait),
            }
        } else if self.elicitation {
            AskRoute::Elsewhere
        } else {
            AskRoute::Refuse {
                why: format!(
                    "needs approval: the MCP client{} did not offer elicitation, so gavel cannot ask anybody and refused the call",
                    self.client_name
                        .as_deref()
                        .map(|n| format!(" `{n}`"))
                        .unwrap_or_default()
                ),
            }
        };
        let call = Call {
            client: Some(client),
            mcp,
            ..Call::new(&call_id, &request)
        };
        let decision = match self.service.call(call, Ask::Route(route.clone())) {
            Ok(Governed::Recorded { decision, .. }) => *decision,
            Ok(Governed::Ran(outcome)) => outcome.decision().clone(),
            Err(err) => return vec![Out::Client(unrecorded(id, &err))],
        };
        let open = OpenCall {
            call_id,
            tool: gavel_tool,
            request_id: id.clone(),
            started: now,
            deadline: now + self.config.timeout,
            anomaly,
        };
        match (decision.action, route) {
            (Action::Allow, _) => {
                self.calls.insert(key, open);
                vec![Out::Server(line.to_owned())]
            }
            (Action::Deny, _) => {
                let text = blocked_content(&decision, ApprovalStatus::NotRequired);
                let mut out = self.anomaly_row(&open, ExecutionStatus::Blocked, &text);
                out.push(Out::Client(jsonrpc::tool_error(id, &text)));
                out
            }
            (Action::Ask, AskRoute::Queue { .. }) => self.enqueue(open, line, decision, now),
            (Action::Ask, AskRoute::Refuse { why }) => self.refused(id, &open, &decision, &why),
            (Action::Ask, AskRoute::Elsewhere) if decision.approvers.is_some() => {
                let why = crate::runner::needs_approvers(&decision);
                self.refused(id, &open, &decision, &why)
            }
            (Action::Ask, _) => {
                self.next_ask += 1;
                let ask_id = format!("{ASK_ID_PREFIX}{}", self.next_ask);
                let ask = elicitation(
                    &ask_id,
                    &request,
                    &decision,
                    open.anomaly.as_ref().map(|a| a.detail.as_str()),
                );
                self.asks.insert(
                    ask_id,
                    Asking {
                        open,
                        line: line.to_owned(),
                        decision,
                    },
                );
                vec![Out::Client(ask)]
            }
        }
    }

    /// The client's answer to an elicitation gavel sent.
    fn answer(
        &mut self,
        ask_id: &str,
        result: Option<&Value>,
        error: Option<&Value>,
        now: Instant,
    ) -> Vec<Out> {
        let (status, cause) = match (result, error) {
            (Some(result), _) => match result.get("action").and_then(Value::as_str) {
                Some("accept") => {
                    match result.pointer("/content/approve").and_then(Value::as_bool) {
                        Some(true) => (ApprovalStatus::Approved, None),
                        Some(false) => (ApprovalStatus::Rejected, None),
                        None => (ApprovalStatus::Cancelled, Some(CancelCause::Malformed)),
                    }
                }
                Some("decline") => (ApprovalStatus::Rejected, None),
                Some("cancel") => (ApprovalStatus::Cancelled, Some(CancelCause::Interrupt)),
                _ => (ApprovalStatus::Cancelled, Some(CancelCause::Malformed)),
            },
            (None, _) => (ApprovalStatus::Cancelled, Some(CancelCause::Error)),
        };
        if status != ApprovalStatus::Approved {
            return self.refuse(ask_id, status, cause);
        }
        let Some(asking) = self.asks.remove(ask_id) else {
            return Vec::new();
        };
        let Asking { mut open, line, .. } = asking;
        let approval = self.approval_event(&open, ApprovalStatus::Approved, None);
        if let Err(err) = self.service.store().append(&[approval]) {
            return vec![Out::Client(unrecorded(
                &open.request_id,
                &AuditError(Box::new(err)),
            ))];
        }
        open.started = now;
        open.deadline = now + self.config.timeout;
        self.calls.insert(jsonrpc::id_key(&open.request_id), open);
        vec![Out::Server(line)]
    }

    /// Closes an ask that was not approved: its approval and a `blocked`
    /// result are recorded, and the client is told the call did not run.
    fn refuse(
        &mut self,
        ask_id: &str,
        status: ApprovalStatus,
        cause: Option<CancelCause>,
    ) -> Vec<Out> {
        let Some(asking) = self.asks.remove(ask_id) else {
            return Vec::new();
        };
        let text = blocked_content(&asking.decision, status);
        let open = &asking.open;
        let approval = self.approval_event(open, status, cause);
        let result = self.event(
            open,
            EventBody::Result(ResultRecord::from_result(&blocked(&text))),
        );
        let mut out = Vec::new();
        if let Err(err) = self.service.store().append(&[approval, result]) {
            out.push(Out::Note(format!("cannot record the end of an ask: {err}")));
        }
        out.extend(self.anomaly_row(open, ExecutionStatus::Blocked, &text));
        out.push(Out::Client(jsonrpc::tool_error(&open.request_id, &text)));
        out
    }

    /// The client cancelled a request: a forwarded call fails (the server
    /// is told), an ask is cancelled (the server never saw it).
    fn cancelled(&mut self, params: Option<&Value>, line: &str) -> Vec<Out> {
        let Some(id) = params.and_then(|p| p.get("requestId")) else {
            return vec![Out::Server(line.to_owned())];
        };
        let key = jsonrpc::id_key(id);
        if let Some(call) = self.calls.remove(&key) {
            self.answered.insert(key);
            let result = failed(
                "cancelled by the client before the server answered".to_owned(),
                call.started.elapsed(),
            );
            let mut out = self.finish(call, &result);
            out.push(Out::Server(line.to_owned()));
            return out;
        }
        let queued = self
            .queued
            .iter()
            .find(|(_, q)| q.open.request_id == *id)
            .map(|(k, _)| k.clone());
        if let Some(call_id) = queued {
            let mut out = self.unqueue(&call_id, CancelCause::Interrupt);
            // The client no longer wants an answer to the call.
            out.retain(|o| !matches!(o, Out::Client(_)));
            return out;
        }
        let asked = self
            .asks
            .iter()
            .find(|(_, a)| a.open.request_id == *id)
            .map(|(k, _)| k.clone());
        match asked {
            Some(ask_id) => {
                let mut out = self.refuse(
                    &ask_id,
                    ApprovalStatus::Cancelled,
                    Some(CancelCause::Interrupt),
                );
                // The client no longer wants an answer to the call.
                out.retain(|o| !matches!(o, Out::Client(_)));
                out
            }
            None => vec![Out::Server(line.to_owned())],
        }
    }

    /// Records a forwarded call's result (and its anomaly, if it ran under a
    /// changed definition).
    fn finish(&mut self, call: OpenCall, result: &ToolResult) -> Vec<Out> {
        let event = self.event(&call, EventBody::Result(ResultRecord::from_result(result)));
        let mut out = Vec::new();
        if let Err(err) = self.service.store().append(&[event]) {
            out.push(Out::Note(format!(
                "cannot record the result of `{}`: {err}",
                call.tool
            )));
        }
        out.extend(self.anomaly_row(&call, result.status, &result.content));
        out
    }

    /// The anomaly row of a call that ran (or was refused) under a tool
    /// definition that changed since the log last saw it.
    /// The answer to a call nobody here may approve: refused, `why` said.
    fn refused(&mut self, id: &Value, open: &OpenCall, decision: &Decision, why: &str) -> Vec<Out> {
        let text = format!(
            "{why}. {}",
            blocked_content(decision, ApprovalStatus::Cancelled)
        );
        let mut out = self.anomaly_row(open, ExecutionStatus::Blocked, why);
        out.push(Out::Client(jsonrpc::tool_error(id, &text)));
        out
    }

    fn anomaly_row(&mut self, call: &OpenCall, status: ExecutionStatus, content: &str) -> Vec<Out> {
        let Some(anomaly) = &call.anomaly else {
            return Vec::new();
        };
        let result = ToolResult {
            status,
            content: content.to_owned(),
            exit_code: None,
            duration_ms: u64::try_from(call.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        let event = self.event(
            call,
            EventBody::Anomaly(AnomalyRecord {
                anomaly: AnomalyKind::DefinitionChanged,
                detail: anomaly.detail.clone(),
                event: "tools/call".to_owned(),
                tool_use_id: jsonrpc::id_text(&call.request_id),
                client: anomaly.client.clone(),
                mismatched: Vec::new(),
                result: ResultRecord::from_result(&result),
            }),
        );
        match self.service.store().append(&[event]) {
            Ok(_) => Vec::new(),
            Err(err) => vec![Out::Note(format!("cannot record an anomaly: {err}"))],
        }
    }

    fn approval_event(
        &self,
        call: &OpenCall,
        status: ApprovalStatus,
        cause: Option<CancelCause>,
    ) -> Event {
        let mut record = ApprovalRecord::new(status, ApprovalChannel::ClientElicitation);
        record.approver = self.client_name.clone();
        record.cause = cause;
        self.event(call, EventBody::Approval(record))
    }

    fn event(&self, call: &OpenCall, body: EventBody) -> Event {
        Event::now(&call.call_id, Some(&call.tool), body).by(self.who.as_ref())
    }
}

/// A server's `tools/call` response with the call's receipt reference in
/// its result's `_meta` (`gavel/receipt`, docs/receipts.md); the line as it
/// came when it has no result object or its `_meta` is not an object.
fn with_receipt(line: &str, reference: Option<crate::receipt::Reference>) -> String {
    let (Some(reference), Ok(mut value)) = (reference, serde_json::from_str::<Value>(line)) else {
        return line.to_owned();
    };
    let Some(result) = value.get_mut("result").and_then(Value::as_object_mut) else {
        return line.to_owned();
    };
    match result
        .entry("_meta")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    {
        Some(meta) => {
            meta.insert("gavel/receipt".to_owned(), json!(reference));
            value.to_string()
        }
        None => line.to_owned(),
    }
}

/// Whether a batch item is a `tools/call` request.
fn is_tools_call(item: &Value) -> bool {
    matches!(
        jsonrpc::classify(item),
        Message::Request {
            method: "tools/call",
            ..
        }
    )
}
