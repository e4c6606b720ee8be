//! Reading the record: calls assembled from their events, a call's events,
//! every event in order, and counts. Filters are a plain struct the CLI fills.

use std::collections::BTreeMap;

use rusqlite::types::Value as SqlValue;
use rusqlite::{OptionalExtension, Row, params_from_iter};
use serde::Serialize;

use super::{Store, StoreError, sql};
use crate::audit::{DecisionRecord, EventBody, RequestRecord};

/// Which calls to select. Every field present must hold.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Calls decided at or after this time (microseconds since the epoch, UTC).
    pub since: Option<i64>,
    /// Calls decided before this time.
    pub until: Option<i64>,
    pub tool: Option<String>,
    pub rule_id: Option<String>,
    pub action: Option<String>,
    /// `not_required`, `approved`, `rejected`, `cancelled` or `pending`.
    pub approval: Option<String>,
    /// `blocked`, `succeeded`, `failed` or `incomplete`.
    pub status: Option<String>,
    pub call_id: Option<String>,
    pub limit: Option<u64>,
}

/// One call, assembled from its events.
#[derive(Debug, Clone, Serialize)]
pub struct CallSummary {
    /// Seq of the call's decision event.
    pub seq: u64,
    pub call_id: String,
    pub ts_us: i64,
    pub tool: String,
    pub request: RequestRecord,
    pub decision: DecisionRecord,
    /// The last approval recorded; `not_required` for allow and deny, `pending` for an unanswered ask.
    pub approval: String,
    /// The result's status, or `incomplete` when no result was recorded.
    pub status: String,
}

/// One stored row, as it is on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub seq: u64,
    pub log_id: Vec<u8>,
    pub ts_us: i64,
    pub kind: String,
    pub call_id: String,
    pub tool: Option<String>,
    pub action: Option<String>,
    pub rule_id: Option<String>,
    pub approval: Option<String>,
    pub status: Option<String>,
    pub payload: Vec<u8>,
    pub leaf: Vec<u8>,
    pub chain: Vec<u8>,
}

impl StoredEvent {
    pub(super) const COLUMNS: &'static str = "seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status, payload, leaf, chain";

    pub(super) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            seq: row.get(0)?,
            log_id: row.get(1)?,
            ts_us: row.get(2)?,
            kind: row.get(3)?,
            call_id: row.get(4)?,
            tool: row.get(5)?,
            action: row.get(6)?,
            rule_id: row.get(7)?,
            approval: row.get(8)?,
            status: row.get(9)?,
            payload: row.get(10)?,
            leaf: row.get(11)?,
            chain: row.get(12)?,
        })
    }

    /// The payload as a JSON value (`null` if it does not parse).
    pub fn payload_json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.payload).unwrap_or(serde_json::Value::Null)
    }
}

/// Counts over a selection of calls.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    pub calls: u64,
    pub by_rule: BTreeMap<String, u64>,
    pub by_action: BTreeMap<String, u64>,
    pub by_approval: BTreeMap<String, u64>,
    pub by_status: BTreeMap<String, u64>,
    pub by_tool: BTreeMap<String, u64>,
}

const CALLS_SQL: &str = "
SELECT * FROM (
  SELECT d.seq, d.call_id, d.ts_us, d.tool, d.payload,
    (SELECT q.payload FROM events q
      WHERE q.call_id = d.call_id AND q.kind = 'request' ORDER BY q.seq LIMIT 1) AS request,
    COALESCE((SELECT a.approval FROM events a
      WHERE a.call_id = d.call_id AND a.kind = 'approval' ORDER BY a.seq DESC LIMIT 1),
      CASE WHEN d.action = 'ask' THEN 'pending' ELSE 'not_required' END) AS approval,
    COALESCE((SELECT r.status FROM events r
      WHERE r.call_id = d.call_id AND r.kind = 'result' ORDER BY r.seq DESC LIMIT 1),
      'incomplete') AS status
  FROM events d
  WHERE d.kind = 'decision' {decision_filters}
) AS c
WHERE 1 = 1 {call_filters}
ORDER BY c.seq
{limit}";

impl Store {
    /// Calls matching `query`, oldest first, one at a time.
    pub fn for_each_call<E: From<StoreError>>(
        &self,
        query: &AuditQuery,
        mut each: impl FnMut(CallSummary) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut params: Vec<SqlValue> = Vec::new();
        let mut bind = |value: SqlValue| {
            params.push(value);
            format!("?{}", params.len())
        };
        let mut decision_filters = String::new();
        for (column, value) in [
            ("d.tool", &query.tool),
            ("d.rule_id", &query.rule_id),
            ("d.action", &query.action),
            ("d.call_id", &query.call_id),
        ] {
            if let Some(value) = value {
                let p = bind(SqlValue::Text(value.clone()));
                decision_filters.push_str(&format!(" AND {column} = {p}"));
            }
        }
        if let Some(since) = query.since {
            let p = bind(SqlValue::Integer(since));
            decision_filters.push_str(&format!(" AND d.ts_us >= {p}"));
        }
        if let Some(until) = query.until {
            let p = bind(SqlValue::Integer(until));
            decision_filters.push_str(&format!(" AND d.ts_us < {p}"));
        }
        let mut call_filters = String::new();
        for (column, value) in [("c.approval", &query.approval), ("c.status", &query.status)] {
            if let Some(value) = value {
                let p = bind(SqlValue::Text(value.clone()));
                call_filters.push_str(&format!(" AND {column} = {p}"));
            }
        }
        let limit = match query.limit {
            Some(n) => format!(
                "LIMIT {}",
                bind(SqlValue::Integer(n.min(i64::MAX as u64) as i64))
            ),
            None => String::new(),
        };
        let text = CALLS_SQL
            .replace("{decision_filters}", &decision_filters)
            .replace("{call_filters}", &call_filters)
            .replace("{limit}", &limit);

        let mut statement = self
            .conn
            .prepare_cached(&text)
            .map_err(sql("preparing a query"))?;
        let mut rows = statement
            .query(params_from_iter(params))
            .map_err(sql("querying calls"))?;
        while let Some(row) = rows.next().map_err(sql("reading calls"))? {
            let summary = self.summary(row)?;
            each(summary)?;
        }
        Ok(())
    }

    fn summary(&self, row: &Row<'_>) -> Result<CallSummary, StoreError> {
        let read = |row: &Row<'_>| -> rusqlite::Result<_> {
            Ok((
                row.get::<_, u64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, Vec<u8>>(4)?,
                row.get::<_, Option<Vec<u8>>>(5)?,
                row.get::<_, String>(6)?,
                row.get::<_, String>(7)?,
            ))
        };
        let (seq, call_id, ts_us, tool, decision, request, approval, status) =
            read(row).map_err(sql("reading a call"))?;
        let damaged = |detail: String| StoreError::Damaged {
            path: self.path.display().to_string(),
            detail: format!("call `{call_id}` (seq {seq}): {detail}"),
        };
        let decision = match EventBody::from_json("decision", &decision).map_err(damaged)? {
            EventBody::Decision(d) => d,
            _ => unreachable!("from_json(\"decision\") returns a decision"),
        };
        let request = match request {
            Some(bytes) => match EventBody::from_json("request", &bytes).map_err(damaged)? {
                EventBody::Request(r) => r,
                _ => unreachable!("from_json(\"request\") returns a request"),
            },
            None => return Err(damaged("the decision has no request".into())),
        };
        Ok(CallSummary {
            seq,
            call_id: call_id.clone(),
            ts_us,
            tool: tool.unwrap_or_default(),
            request,
            decision,
            approval,
            status,
        })
    }

    /// Calls matching `query`, oldest first.
    pub fn calls(&self, query: &AuditQuery) -> Result<Vec<CallSummary>, StoreError> {
        let mut calls = Vec::new();
        self.for_each_call(query, |call| {
            calls.push(call);
            Ok::<_, StoreError>(())
        })?;
        Ok(calls)
    }

    /// Every event of one call, in order.
    pub fn call_events(&self, call_id: &str) -> Result<Vec<StoredEvent>, StoreError> {
        let text = format!(
            "SELECT {} FROM events WHERE call_id = ?1 ORDER BY seq",
            StoredEvent::COLUMNS
        );
        let mut statement = self.conn.prepare(&text).map_err(sql("preparing a query"))?;
        let events = statement
            .query_map([call_id], StoredEvent::from_row)
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(sql("reading a call's events"))?;
        if events.is_empty() {
            return Err(StoreError::UnknownCall {
                call_id: call_id.to_owned(),
            });
        }
        Ok(events)
    }

    /// Every event in seq order, one at a time.
    pub fn for_each_event<E: From<StoreError>>(
        &self,
        mut each: impl FnMut(StoredEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        let text = format!("SELECT {} FROM events ORDER BY seq", StoredEvent::COLUMNS);
        let mut statement = self.conn.prepare(&text).map_err(sql("preparing a scan"))?;
        let mut rows = statement.query([]).map_err(sql("scanning events"))?;
        while let Some(row) = rows.next().map_err(sql("scanning events"))? {
            each(StoredEvent::from_row(row).map_err(sql("reading an event"))?)?;
        }
        Ok(())
    }

    /// The number of events in the log.
    pub fn event_count(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT count(*) FROM events", [], |row| row.get(0))
            .map_err(sql("counting events"))
    }

    /// Counts per rule, action, approval, status and tool over `query`.
    pub fn stats(&self, query: &AuditQuery) -> Result<Stats, StoreError> {
        let mut stats = Stats::default();
        self.for_each_call(query, |call| {
            stats.calls += 1;
            *stats.by_rule.entry(call.decision.rule_id).or_default() += 1;
            *stats
                .by_action
                .entry(call.decision.action.as_str().to_owned())
                .or_default() += 1;
            *stats.by_approval.entry(call.approval).or_default() += 1;
            *stats.by_status.entry(call.status).or_default() += 1;
            *stats.by_tool.entry(call.tool).or_default() += 1;
            Ok::<_, StoreError>(())
        })?;
        Ok(stats)
    }
}

impl Store {
    /// The policy text recorded under `digest`, if its SHA-256 still matches.
    pub fn policy_source(&self, digest: &str) -> Result<Option<String>, StoreError> {
        let source: Option<String> = self
            .conn
            .query_row(
                "SELECT source FROM policies WHERE digest = ?1",
                [digest],
                |row| row.get(0),
            )
            .optional()
            .map_err(sql("reading a policy"))?;
        Ok(source
            .filter(|text| crate::digest::hex(&crate::digest::sha256(text.as_bytes())) == digest))
    }
}

/// A call's request and decision: what replay needs, without its outcome.
#[derive(Debug, Clone)]
pub struct DecidedCall {
    pub call_id: String,
    pub tool: String,
    pub request: RequestRecord,
    pub decision: DecisionRecord,
}

impl Store {
    /// Every decided call matching `query`, oldest first, with its request.
    ///
    /// One ordered scan over request and decision rows (the two are always
    /// appended together), instead of an index lookup per call; filters on
    /// the outcome (`approval`, `status`) or one `call_id` fall back to
    /// `for_each_call`.
    pub fn for_each_decided_call<E: From<StoreError>>(
        &self,
        query: &AuditQuery,
        mut each: impl FnMut(DecidedCall) -> Result<(), E>,
    ) -> Result<(), E> {
        if query.approval.is_some() || query.status.is_some() || query.call_id.is_some() {
            return self.for_each_call(query, |call| {
                each(DecidedCall {
                    call_id: call.call_id,
                    tool: call.tool,
                    request: call.request,
                    decision: call.decision,
                })
            });
        }
        let mut params: Vec<SqlValue> = Vec::new();
        let mut filters = String::new();
        if let Some(tool) = &query.tool {
            params.push(SqlValue::Text(tool.clone()));
            filters.push_str(&format!(" AND tool = ?{}", params.len()));
        }
        let text = format!(
            "SELECT seq, kind, call_id, tool, action, rule_id, ts_us, payload FROM events
             WHERE kind IN ('request', 'decision') {filters} ORDER BY seq"
        );
        let mut statement = self.conn.prepare(&text).map_err(sql("preparing a scan"))?;
        let mut rows = statement
            .query(params_from_iter(params))
            .map_err(sql("scanning calls"))?;
        let mut requests: std::collections::HashMap<String, RequestRecord> = Default::default();
        let mut emitted = 0u64;
        while let Some(row) = rows.next().map_err(sql("scanning calls"))? {
            if query.limit.is_some_and(|limit| emitted >= limit) {
                break;
            }
            let read = |row: &Row<'_>| -> rusqlite::Result<_> {
                Ok((
                    row.get::<_, u64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, Option<String>>(3)?,
                    row.get::<_, Option<String>>(4)?,
                    row.get::<_, Option<String>>(5)?,
                    row.get::<_, i64>(6)?,
                ))
            };
            let (seq, kind, call_id, tool, action, rule_id, ts_us) =
                read(row).map_err(sql("reading a call"))?;
            let payload = row
                .get_ref(7)
                .and_then(|v| v.as_blob().map_err(Into::into))
                .map_err(sql("reading a call"))?;
            let damaged = |detail: String| StoreError::Damaged {
                path: self.path.display().to_string(),
                detail: format!("call `{call_id}` (seq {seq}): {detail}"),
            };
            let body = EventBody::from_json(&kind, payload).map_err(damaged)?;
            let decision = match body {
                EventBody::Request(request) => {
                    requests.insert(call_id, request);
                    continue;
                }
                EventBody::Decision(decision) => decision,
                _ => continue,
            };
            let Some(request) = requests.remove(&call_id) else {
                return Err(damaged("the decision has no request".into()).into());
            };
            let selected = query
                .rule_id
                .as_ref()
                .is_none_or(|r| Some(r) == rule_id.as_ref())
                && query
                    .action
                    .as_ref()
                    .is_none_or(|a| Some(a) == action.as_ref())
                && query.since.is_none_or(|since| ts_us >= since)
                && query.until.is_none_or(|until| ts_us < until);
            if selected {
                emitted += 1;
                each(DecidedCall {
                    call_id,
                    tool: tool.unwrap_or_default(),
                    request,
                    decision,
                })?;
            }
        }
        Ok(())
    }
}
