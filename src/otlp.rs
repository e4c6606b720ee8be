//! The record as OpenTelemetry traces: one `execute_tool` span per
//! governed call, after the GenAI semantic conventions, with gavel's
//! verdict as a `guardrail` event and the recorded principal as the
//! resource. Built from the chained rows in one pass ([`Spans`]), encoded
//! as OTLP/JSON (`gavel export --format otlp-json`) or as the OTLP/HTTP
//! protobuf body (`gavel push --otlp`).
//!
//! What `push --otlp` sends, once per span id, is planned here ([`Due`],
//! [`PushState`]): a call once its result is recorded; a call still open
//! after a grace period (an agent killed mid-call, an ask nobody answered)
//! as an incomplete span; and, for a call sent incomplete whose result came
//! later, that result as a `gavel.late_result` child span of it, never the
//! call's span again.
//!
//! The protobuf encoding is written here, for the few messages of
//! `ExportTraceServiceRequest` gavel fills: the OpenTelemetry Rust crates
//! that carry those messages bring the SDK and an async runtime with them,
//! which a synchronous CLI run once per call should not pay for. The tests
//! decode what is sent with the OpenTelemetry project's own Python
//! bindings. docs/siem.md has the attribute mapping.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::store::StoredEvent;

/// One call as a span.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: Vec<Attribute>,
    /// The `guardrail` event: its time and attributes.
    pub guardrail: Option<(u64, Vec<Attribute>)>,
    /// `Some(true)` ok, `Some(false)` error, `None` unset (not completed).
    pub ok: Option<bool>,
    pub status_message: String,
    /// The resource attributes: who made the call.
    pub resource: Vec<Attribute>,
    /// The seq of the row that completed the call (its result), or of its
    /// last row: what `push --otlp` resumes after.
    pub completed_at: u64,
    pub complete: bool,
    /// The call the span is about.
    pub call_id: String,
    /// The span this one belongs under (a late result's call span).
    pub parent_span_id: Option<[u8; 8]>,
    /// What the span says of its call.
    pub sent: Sent,
}

/// What a span says of its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// The call, completed: its result is in it.
    Complete,
    /// The call, with no result yet (`gavel.status` = `incomplete`).
    Incomplete,
    /// The result of a call sent before as [`Sent::Incomplete`], as a child
    /// span of it (`gavel.late_result`).
    LateResult,
}

/// An attribute: its key and value.
pub type Attribute = (String, AnyValue);

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyValue {
    Str(String),
    Int(i64),
}

fn s(key: &str, value: impl Into<String>) -> Attribute {
    (key.to_owned(), AnyValue::Str(value.into()))
}

fn id<const N: usize>(parts: &[&[u8]]) -> [u8; N] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    let digest = hasher.finalize();
    let mut out = [0u8; N];
    out.copy_from_slice(&digest[..N]);
    out
}

fn nanos(ts_us: i64) -> u64 {
    u64::try_from(ts_us).unwrap_or(0).saturating_mul(1000)
}

/// A call being gathered from its rows.
struct Open {
    span: Span,
    /// The seq of its request, its key in [`Spans::order`].
    request: u64,
}

/// Builds spans from a log's rows in seq order: a call's span is finished
/// at its result ([`Spans::push`] returns it then); [`Spans::finish`]
/// returns the calls that never completed.
#[derive(Default)]
pub struct Spans {
    open: HashMap<String, Open>,
    order: BTreeMap<u64, String>,
}

impl Spans {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in one row; returns the span of the call it completes.
    pub fn push(&mut self, row: &StoredEvent) -> Option<Span> {
        let payload: Value = serde_json::from_slice(&row.payload).unwrap_or(Value::Null);
        match row.kind.as_str() {
            "request" => {
                let span = request_span(row, &payload);
                self.order.insert(row.seq, row.call_id.clone());
                self.open.insert(
                    row.call_id.clone(),
                    Open {
                        span,
                        request: row.seq,
                    },
                );
                None
            }
            "decision" => {
                let span = &mut self.open.get_mut(&row.call_id)?.span;
                let mut attributes = vec![
                    s("gavel.rule_id", row.rule_id.clone().unwrap_or_default()),
                    s("gavel.action", row.action.clone().unwrap_or_default()),
                    s("gavel.reason", payload["reason"].as_str().unwrap_or("")),
                    s(
                        "gavel.policy.name",
                        payload["policy"]["name"].as_str().unwrap_or(""),
                    ),
                    s(
                        "gavel.policy.digest",
                        payload["policy"]["digest"].as_str().unwrap_or(""),
                    ),
                ];
                if let Some(layer) = payload["layer"].as_str() {
                    attributes.push(s("gavel.policy.layer", layer));
                }
                span.attributes
                    .push(s("gavel.rule_id", row.rule_id.clone().unwrap_or_default()));
                span.attributes
                    .push(s("gavel.action", row.action.clone().unwrap_or_default()));
                span.guardrail = Some((nanos(row.ts_us), attributes));
                span.completed_at = row.seq;
                None
            }
            "approval" => {
                let span = &mut self.open.get_mut(&row.call_id)?.span;
                let approval = row.approval.clone().unwrap_or_default();
                if let Some((_, attributes)) = &mut span.guardrail {
                    attributes.retain(|(k, _)| k != "gavel.approval");
                    attributes.push(s("gavel.approval", approval.clone()));
                    if let Some(channel) = payload["channel"].as_str() {
                        attributes.push(s("gavel.approval.channel", channel));
                    }
                }
                span.attributes.retain(|(k, _)| k != "gavel.approval");
                span.attributes.push(s("gavel.approval", approval));
                span.completed_at = row.seq;
                None
            }
            "result" => {
                let open = self.open.remove(&row.call_id)?;
                self.order.remove(&open.request);
                let mut span = open.span;
                let status = row.status.clone().unwrap_or_default();
                span.end_ns = nanos(row.ts_us).max(span.start_ns);
                span.ok = Some(status == "succeeded");
                if status != "succeeded" {
                    span.status_message = status.clone();
                }
                if let Some(code) = payload["exit_code"].as_i64() {
                    span.attributes
                        .push(("gavel.exit_code".into(), AnyValue::Int(code)));
                }
                span.attributes.push(s("gavel.status", status));
                span.completed_at = row.seq;
                span.complete = true;
                span.sent = Sent::Complete;
                Some(span)
            }
            _ => None,
        }
    }

    /// The calls that never completed, oldest first, with no status.
    pub fn finish(mut self) -> Vec<Span> {
        let order = std::mem::take(&mut self.order);
        order
            .into_values()
            .filter_map(|id| self.open.remove(&id).map(|open| open.span))
            .map(|mut span| {
                span.attributes.push(s("gavel.status", "incomplete"));
                span
            })
            .collect()
    }
}

/// The span that carries the result of `call` (a completed call's span)
/// when the call was already sent incomplete: a child of that span, with an
/// id of its own, from the call's start to its result, named
/// `gavel.late_result`. It repeats no `gen_ai.operation.name`, so a
/// consumer counting tool executions counts the call once.
pub fn late_result(call: &Span) -> Span {
    let keep = [
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.conversation.id",
        "gavel.call_id",
        "gavel.log_id",
        "gavel.mcp.server",
        "gavel.rule_id",
        "gavel.action",
        "gavel.approval",
        "gavel.status",
        "gavel.exit_code",
    ];
    let log_id = call
        .attributes
        .iter()
        .find_map(|(k, v)| match (k.as_str(), v) {
            ("gavel.log_id", AnyValue::Str(id)) => Some(id.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let mut attributes: Vec<Attribute> = call
        .attributes
        .iter()
        .filter(|(k, _)| keep.contains(&k.as_str()))
        .cloned()
        .collect();
    attributes.push(s("gavel.late_result_of", crate::digest::hex(&call.span_id)));
    attributes.push((
        "gavel.seq".into(),
        AnyValue::Int(i64::try_from(call.completed_at).unwrap_or(i64::MAX)),
    ));
    Span {
        trace_id: call.trace_id,
        span_id: id(&[
            b"gavel/late-result",
            log_id.as_bytes(),
            call.call_id.as_bytes(),
        ]),
        name: "gavel.late_result".to_owned(),
        guardrail: None,
        attributes,
        parent_span_id: Some(call.span_id),
        sent: Sent::LateResult,
        ..call.clone()
    }
}

/// What `push --otlp` already sent to one endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushState {
    /// Every call whose result is at or before this seq was sent (as its
    /// span, or as the late result of a call sent incomplete).
    pub sent_through: u64,
    /// Calls sent incomplete whose result has not been sent yet.
    pub incomplete: std::collections::BTreeSet<String>,
}

impl PushState {
    /// What was sent to `url`, as kept at `path` (nothing yet: none).
    pub fn read(path: &std::path::Path) -> std::io::Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(err) => return Err(err),
        };
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Self {
            sent_through: value["sent_through"].as_u64().unwrap_or(0),
            incomplete: value["incomplete"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        })
    }

    /// Keeps the state at `path` (written to a new file, then renamed over
    /// the old one).
    pub fn write(&self, path: &std::path::Path, url: &str) -> std::io::Result<()> {
        let tmp = path.with_extension("tmp");
        let text = json!({
            "url": url,
            "sent_through": self.sent_through,
            "incomplete": self.incomplete,
        });
        std::fs::write(&tmp, text.to_string())?;
        std::fs::rename(tmp, path)
    }

    /// Takes in a batch of spans the endpoint accepted.
    pub fn sent(&mut self, batch: &[Span]) {
        for span in batch {
            match span.sent {
                Sent::Complete => {
                    self.sent_through = self.sent_through.max(span.completed_at);
                }
                Sent::LateResult => {
                    self.sent_through = self.sent_through.max(span.completed_at);
                    self.incomplete.remove(&span.call_id);
                }
                Sent::Incomplete => {
                    self.incomplete.insert(span.call_id.clone());
                }
            }
        }
    }
}

/// The spans a push sends, from the log's rows in seq order: each call
/// completed after [`PushState::sent_through`] (a call sent incomplete
/// before: its late result instead), then each call still open whose
/// request is at or before `cutoff_ns` and was not sent incomplete yet.
pub struct Due<'a> {
    spans: Spans,
    state: &'a PushState,
    cutoff_ns: u64,
    due: Vec<Span>,
}

impl<'a> Due<'a> {
    pub fn new(state: &'a PushState, cutoff_ns: u64) -> Self {
        Self {
            spans: Spans::new(),
            state,
            cutoff_ns,
            due: Vec::new(),
        }
    }

    /// Takes in one row.
    pub fn push(&mut self, row: &StoredEvent) {
        if let Some(span) = self.spans.push(row)
            && span.completed_at > self.state.sent_through
        {
            self.due
                .push(if self.state.incomplete.contains(&span.call_id) {
                    late_result(&span)
                } else {
                    span
                });
        }
    }

    /// The spans to send, in that order.
    pub fn finish(self) -> Vec<Span> {
        let Self {
            spans,
            state,
            cutoff_ns,
            mut due,
        } = self;
        due.extend(spans.finish().into_iter().filter(|span| {
            span.start_ns <= cutoff_ns && !state.incomplete.contains(&span.call_id)
        }));
        due
    }
}

fn request_span(row: &StoredEvent, payload: &Value) -> Span {
    let tool = row.tool.clone().unwrap_or_default();
    let log_id = crate::digest::hex(&row.log_id);
    let session = row.session.clone().unwrap_or_default();
    let mut attributes = vec![
        s("gen_ai.operation.name", "execute_tool"),
        s(
            "gen_ai.tool.call.id",
            payload["tool_use_id"].as_str().unwrap_or(&row.call_id),
        ),
        s("gavel.call_id", row.call_id.clone()),
        s("gavel.log_id", log_id.clone()),
        (
            "gavel.seq".into(),
            AnyValue::Int(i64::try_from(row.seq).unwrap_or(i64::MAX)),
        ),
    ];
    // MCP tools arrive as `mcp__SERVER__TOOL` (Claude Code's convention).
    match tool
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    {
        Some((server, name)) => {
            attributes.push(s("gen_ai.tool.name", name));
            attributes.push(s("gen_ai.tool.type", "extension"));
            attributes.push(s("mcp.method.name", "tools/call"));
            attributes.push(s("gavel.mcp.server", server));
        }
        None => {
            attributes.push(s("gen_ai.tool.name", tool.clone()));
            attributes.push(s("gen_ai.tool.type", "function"));
        }
    }
    if !session.is_empty() {
        attributes.push(s("gen_ai.conversation.id", session.clone()));
    }
    let mut resource = vec![
        s("service.name", "gavel"),
        s("service.version", env!("CARGO_PKG_VERSION")),
    ];
    let principal = &payload["principal"];
    for (key, value) in [
        (
            "user.name",
            row.user.as_deref().or(principal["user"].as_str()),
        ),
        (
            "host.name",
            row.host.as_deref().or(principal["host"].as_str()),
        ),
        ("host.id", principal["host_id"].as_str()),
        (
            "gen_ai.agent.name",
            row.client.as_deref().or(principal["client"].as_str()),
        ),
    ] {
        if let Some(value) = value {
            resource.push(s(key, value));
        }
    }
    let start = nanos(row.ts_us);
    Span {
        trace_id: id(&[b"gavel/trace", log_id.as_bytes(), session.as_bytes()]),
        span_id: id(&[b"gavel/span", log_id.as_bytes(), row.call_id.as_bytes()]),
        name: format!("execute_tool {tool}"),
        start_ns: start,
        end_ns: start,
        attributes,
        guardrail: None,
        ok: None,
        status_message: String::new(),
        resource,
        completed_at: row.seq,
        complete: false,
        call_id: row.call_id.clone(),
        parent_span_id: None,
        sent: Sent::Incomplete,
    }
}

fn json_value(value: &AnyValue) -> Value {
    match value {
        AnyValue::Str(text) => json!({"stringValue": text}),
        AnyValue::Int(n) => json!({"intValue": n.to_string()}),
    }
}

fn json_attributes(attributes: &[Attribute]) -> Value {
    attributes
        .iter()
        .map(|(k, v)| json!({"key": k, "value": json_value(v)}))
        .collect()
}

/// Spans grouped by resource, in first-seen order.
fn by_resource(spans: &[Span]) -> Vec<(&[Attribute], Vec<&Span>)> {
    let mut groups: Vec<(&[Attribute], Vec<&Span>)> = Vec::new();
    for span in spans {
        match groups
            .iter_mut()
            .find(|(r, _)| *r == span.resource.as_slice())
        {
            Some((_, list)) => list.push(span),
            None => groups.push((&span.resource, vec![span])),
        }
    }
    groups
}

/// `spans` as one OTLP/JSON `ExportTraceServiceRequest`.
pub fn to_json(spans: &[Span]) -> Value {
    let resource_spans: Vec<Value> = by_resource(spans)
        .into_iter()
        .map(|(resource, spans)| {
            json!({
                "resource": {"attributes": json_attributes(resource)},
                "scopeSpans": [{
                    "scope": {"name": "gavel", "version": env!("CARGO_PKG_VERSION")},
                    "spans": spans.iter().map(|span| span_json(span)).collect::<Vec<_>>(),
                }],
            })
        })
        .collect();
    json!({ "resourceSpans": resource_spans })
}

fn span_json(span: &Span) -> Value {
    let mut value = json!({
        "traceId": crate::digest::hex(&span.trace_id),
        "spanId": crate::digest::hex(&span.span_id),
        "name": span.name,
        "kind": 1,
        "startTimeUnixNano": span.start_ns.to_string(),
        "endTimeUnixNano": span.end_ns.to_string(),
        "attributes": json_attributes(&span.attributes),
    });
    if let Some(parent) = &span.parent_span_id {
        value["parentSpanId"] = json!(crate::digest::hex(parent));
    }
    if let Some((time, attributes)) = &span.guardrail {
        value["events"] = json!([{
            "timeUnixNano": time.to_string(),
            "name": "guardrail",
            "attributes": json_attributes(attributes),
        }]);
    }
    if let Some(ok) = span.ok {
        value["status"] = if ok {
            json!({"code": 1})
        } else {
            json!({"code": 2, "message": span.status_message})
        };
    }
    value
}

/// A protobuf message being written: fields in number order.
#[derive(Default)]
struct Proto(Vec<u8>);

impl Proto {
    fn varint(&mut self, mut n: u64) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, bytes: &[u8]) {
        self.key(field, 2);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    fn message(&mut self, field: u32, message: Proto) {
        self.bytes(field, &message.0);
    }

    fn uint(&mut self, field: u32, n: u64) {
        self.key(field, 0);
        self.varint(n);
    }

    fn fixed64(&mut self, field: u32, n: u64) {
        self.key(field, 1);
        self.0.extend_from_slice(&n.to_le_bytes());
    }
}

fn proto_value(value: &AnyValue) -> Proto {
    let mut out = Proto::default();
    match value {
        AnyValue::Str(text) => out.bytes(1, text.as_bytes()),
        // int_value = 3, an int64 as a varint (two's complement).
        AnyValue::Int(n) => out.uint(3, *n as u64),
    }
    out
}

fn proto_attribute(key: &str, value: &AnyValue) -> Proto {
    let mut out = Proto::default();
    out.bytes(1, key.as_bytes());
    out.message(2, proto_value(value));
    out
}

fn proto_span(span: &Span) -> Proto {
    let mut out = Proto::default();
    out.bytes(1, &span.trace_id);
    out.bytes(2, &span.span_id);
    if let Some(parent) = &span.parent_span_id {
        out.bytes(4, parent);
    }
    out.bytes(5, span.name.as_bytes());
    out.uint(6, 1); // SPAN_KIND_INTERNAL
    out.fixed64(7, span.start_ns);
    out.fixed64(8, span.end_ns);
    for (key, value) in &span.attributes {
        out.message(9, proto_attribute(key, value));
    }
    if let Some((time, attributes)) = &span.guardrail {
        let mut event = Proto::default();
        event.fixed64(1, *time);
        event.bytes(2, b"guardrail");
        for (key, value) in attributes {
            event.message(3, proto_attribute(key, value));
        }
        out.message(11, event);
    }
    if let Some(ok) = span.ok {
        let mut status = Proto::default();
        if !ok {
            status.bytes(2, span.status_message.as_bytes());
        }
        status.uint(3, if ok { 1 } else { 2 });
        out.message(15, status);
    }
    out
}

/// `spans` as the protobuf body of an OTLP/HTTP `ExportTraceServiceRequest`.
pub fn to_protobuf(spans: &[Span]) -> Vec<u8> {
    let mut request = Proto::default();
    for (resource, spans) in by_resource(spans) {
        let mut resource_message = Proto::default();
        for (key, value) in resource {
            resource_message.message(1, proto_attribute(key, value));
        }
        let mut scope = Proto::default();
        scope.bytes(1, b"gavel");
        scope.bytes(2, env!("CARGO_PKG_VERSION").as_bytes());
        let mut scope_spans = Proto::default();
        scope_spans.message(1, scope);
        for span in spans {
            scope_spans.message(2, proto_span(span));
        }
        let mut resource_spans = Proto::default();
        resource_spans.message(1, resource_message);
        resource_spans.message(2, scope_spans);
        request.message(1, resource_spans);
    }
    request.0
}

/// Where `push --otlp` keeps what it sent to `url`: beside the database,
/// one file per endpoint.
pub fn state_path(db: &std::path::Path, url: &str) -> std::path::PathBuf {
    let tag = crate::digest::hex(&id::<6>(&[url.as_bytes()]));
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".otlp-{tag}"));
    db.with_file_name(name)
}
