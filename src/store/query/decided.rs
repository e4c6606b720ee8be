//! What replay reads: each decided call with its request, in one ordered
//! scan over request and decision rows.

use rusqlite::types::Value as SqlValue;
use rusqlite::{Row, params_from_iter};

use super::AuditQuery;
use crate::audit::{DecisionRecord, EventBody, RequestRecord};
use crate::store::{Store, StoreError, sql};

/// What [`Store::for_each_decided_call_with_outcomes`] hands on, in seq order.
#[derive(Debug, Clone)]
pub enum Scanned {
    /// A decided call, when its decision row is read.
    Call(Box<DecidedCall>),
    /// A later row of a call: an approval (its status: `approved`,
    /// `rejected`, `cancelled`, `pending`) or a result (its status:
    /// `succeeded`, `failed`, `blocked`). A call may have several of each;
    /// the last approval and the first result are the call's, as `log`
    /// reads them.
    Outcome {
        call_id: String,
        approval: Option<String>,
        status: Option<String>,
    },
}

/// A call's request and decision: what replay needs, without its outcome.
#[derive(Debug, Clone)]
pub struct DecidedCall {
    /// The seq of one of its rows (request or decision, appended together):
    /// what orders it against grant and revocation rows.
    pub seq: u64,
    /// When it was decided, microseconds since the epoch.
    pub ts_us: i64,
    pub call_id: String,
    pub tool: String,
    pub request: RequestRecord,
    /// The decision, its facts whole (`Facts::restore`).
    pub decision: DecisionRecord,
    /// A long command's parse, recorded by digest, differs from its parse now.
    pub parse_differs: bool,
}

impl Store {
    /// Every decided call matching `query`, oldest first, with its request.
    ///
    /// One ordered scan over request and decision rows (the two are always
    /// appended together), instead of an index lookup per call; filters on
    /// the outcome (`approval`, `status`), one `call_id`, a session, a text
    /// in the arguments or newest-first order fall back to `for_each_call`.
    pub fn for_each_decided_call<E: From<StoreError>>(
        &self,
        query: &AuditQuery,
        mut each: impl FnMut(DecidedCall) -> Result<(), E>,
    ) -> Result<(), E> {
        self.scan_decided(query, false, |scanned| match scanned {
            Scanned::Call(call) => each(*call),
            Scanned::Outcome { .. } => Ok(()),
        })
    }

    /// [`Store::for_each_decided_call`], with each call's approvals and
    /// results handed on too, as they come in the record (after its
    /// decision): still one ordered scan, now over the approval and result
    /// rows as well, whose typed columns say all that is needed of them.
    pub fn for_each_decided_call_with_outcomes<E: From<StoreError>>(
        &self,
        query: &AuditQuery,
        each: impl FnMut(Scanned) -> Result<(), E>,
    ) -> Result<(), E> {
        self.scan_decided(query, true, each)
    }

    fn scan_decided<E: From<StoreError>>(
        &self,
        query: &AuditQuery,
        outcomes: bool,
        mut each: impl FnMut(Scanned) -> Result<(), E>,
    ) -> Result<(), E> {
        if query.reads_beyond_the_decision() || query.newest_first {
            return self.for_each_call(query, |call| {
                let outcome = Scanned::Outcome {
                    call_id: call.call_id.clone(),
                    approval: Some(call.approval),
                    status: Some(call.status),
                };
                each(Scanned::Call(Box::new(DecidedCall {
                    seq: call.seq,
                    ts_us: call.ts_us,
                    call_id: call.call_id,
                    tool: call.tool,
                    request: call.request,
                    decision: call.decision,
                    parse_differs: call.parse_differs,
                })))?;
                if outcomes { each(outcome) } else { Ok(()) }
            });
        }
        let mut params: Vec<SqlValue> = Vec::new();
        let mut filters = String::new();
        if let Some(tool) = &query.tool {
            params.push(SqlValue::Text(tool.clone()));
            filters.push_str(&format!(" AND tool = ?{}", params.len()));
        }
        filters.push_str(&query.mcp_conditions("tool", "instr", |v| {
            params.push(SqlValue::Text(v));
            format!("?{}", params.len())
        }));
        let kinds = if outcomes {
            "'request', 'decision', 'approval', 'result'"
        } else {
            "'request', 'decision'"
        };
        let text = format!(
            "SELECT seq, kind, call_id, tool, action, rule_id, ts_us, payload, approval, status
             FROM events WHERE kind IN ({kinds}) {filters} ORDER BY seq"
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
            if kind == "approval" || kind == "result" {
                let column = if kind == "approval" { 8 } else { 9 };
                let value = row
                    .get::<_, Option<String>>(column)
                    .map_err(sql("reading a call"))?;
                let (approval, status) = if kind == "approval" {
                    (value, None)
                } else {
                    (None, value)
                };
                each(Scanned::Outcome {
                    call_id,
                    approval,
                    status,
                })?;
                continue;
            }
            let payload = row
                .get_ref(7)
                .and_then(|v| v.as_blob().map_err(Into::into))
                .map_err(sql("reading a call"))?;
            let damaged = |detail: String| StoreError::Damaged {
                path: self.path.display().to_string(),
                detail: format!("call `{call_id}` (seq {seq}): {detail}"),
            };
            let body = EventBody::from_json(&kind, payload).map_err(damaged)?;
            let mut decision = match body {
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
                let parse_differs = decision.facts.restore(&request.arguments) == Some(false);
                each(Scanned::Call(Box::new(DecidedCall {
                    seq,
                    ts_us,
                    call_id,
                    tool: tool.unwrap_or_default(),
                    request,
                    decision,
                    parse_differs,
                })))?;
            }
        }
        Ok(())
    }
}
