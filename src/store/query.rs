//! Reading the record: calls assembled from their events, a call's events,
//! every event in order, and counts. Filters are a plain struct the CLI fills.

use std::collections::BTreeMap;

use rusqlite::types::Value as SqlValue;
use rusqlite::{OptionalExtension, Row, params_from_iter};
use serde::Serialize;

use super::{Store, StoreError, sql};

mod decided;

use crate::audit::{
    AnomalyKind, AnomalyRecord, DecisionRecord, EventBody, LifecycleRecord, RequestRecord,
};
pub use decided::{DecidedCall, Scanned};

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
    /// `blocked`, `succeeded`, `failed`, `incomplete` or `ungoverned`.
    pub status: Option<String>,
    pub call_id: Option<String>,
    /// Only calls with an anomaly (and ungoverned ones).
    pub anomalies: bool,
    /// Only calls (and lifecycle events) of this client session.
    pub session: Option<String>,
    /// Only calls (and lifecycle events) made by this OS user (format 2 rows).
    pub user: Option<String>,
    /// Only those made on this host (its name, or its host id).
    pub host: Option<String>,
    /// Only those that came through this client (`cli`, `serve`, `claude-code`, ...).
    pub client: Option<String>,
    /// Only those a subagent with this id made.
    pub agent: Option<String>,
    /// Only calls whose arguments hold this text in a value (case-sensitive).
    pub grep: Option<String>,
    /// Only calls of a tool of this MCP server (tool names `mcp__SERVER__TOOL`).
    pub mcp_server: Option<String>,
    /// Only calls of this MCP tool (the `TOOL` of `mcp__SERVER__TOOL`), on any server.
    pub mcp_tool: Option<String>,
    /// Newest first (with `limit`: the newest `limit` rows).
    pub newest_first: bool,
    pub limit: Option<u64>,
}

impl AuditQuery {
    /// Whether a filter only a tool call can match is set (tool, rule,
    /// action, approval, status, call id, anomalies).
    pub fn selects_calls_only(&self) -> bool {
        self.tool.is_some()
            || self.rule_id.is_some()
            || self.action.is_some()
            || self.approval.is_some()
            || self.status.is_some()
            || self.call_id.is_some()
            || self.anomalies
            || self.mcp_server.is_some()
            || self.mcp_tool.is_some()
    }

    /// Whether a filter is set that a call's request and decision rows do
    /// not answer alone (its outcome, its id, its anomalies, who made it,
    /// a text in its arguments).
    pub fn reads_beyond_the_decision(&self) -> bool {
        self.approval.is_some()
            || self.status.is_some()
            || self.call_id.is_some()
            || self.anomalies
            || self.session.is_some()
            || self.user.is_some()
            || self.host.is_some()
            || self.client.is_some()
            || self.agent.is_some()
            || self.grep.is_some()
    }

    /// The conditions of `mcp_server` and `mcp_tool` on the tool name in
    /// `column`, each value bound through `bind`, for a database whose
    /// `position(haystack, needle)` function is `position` (`instr` in
    /// SQLite, `strpos` in PostgreSQL): the server is what lies between
    /// `mcp__` and the next `__`, the tool what follows it, as
    /// [`crate::mcp::names::split_tool_name`] splits them.
    pub fn mcp_conditions(
        &self,
        column: &str,
        position: &str,
        mut bind: impl FnMut(String) -> String,
    ) -> String {
        let split = format!("{position}(substr({column}, 6), '__')");
        let named = format!("substr({column}, 1, 5) = 'mcp__' AND {split} > 1");
        let mut out = String::new();
        if let Some(server) = &self.mcp_server {
            let p = bind(server.clone());
            out.push_str(&format!(
                " AND (CASE WHEN {named} THEN substr({column}, 6, {split} - 1) END) = {p}"
            ));
        }
        if let Some(tool) = &self.mcp_tool {
            let p = bind(tool.clone());
            out.push_str(&format!(
                " AND (CASE WHEN {named} THEN substr({column}, {split} + 7) END) = {p}"
            ));
        }
        out
    }
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
    /// The first result's status, or `incomplete` when no result was recorded.
    /// A later report never replaces it: it is an anomaly, listed in `anomalies`.
    pub status: String,
    /// The call's anomalies, in order (empty for a call that ended as governed).
    pub anomalies: Vec<AnomalyKind>,
    /// The decision recorded a long command's parse by digest, and the
    /// command parses differently now (`decision.facts.shell` is today's parse).
    pub parse_differs: bool,
    /// How many attempts the sandbox refused the command (`refused`
    /// events: the attempts kept and those only counted).
    pub refused: u64,
}

/// A tool a client reports it ran that gavel never decided: an anomaly
/// with no request or decision (status `ungoverned`).
#[derive(Debug, Clone, Serialize)]
pub struct UngovernedCall {
    /// Seq of its first anomaly event.
    pub seq: u64,
    pub call_id: String,
    pub ts_us: i64,
    pub tool: String,
    /// The first report of it.
    pub anomaly: AnomalyRecord,
    /// Every anomaly of the call, in order (the first is `ran_without_decision`).
    pub anomalies: Vec<AnomalyKind>,
}

/// One row of the record's call listing.
// Rows are streamed one at a time; boxing the common variant would cost an
// allocation per row to save space no one holds for long.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum CallEntry {
    /// A call gavel decided.
    Decided(CallSummary),
    /// A call gavel never decided, reported as run.
    Ungoverned(UngovernedCall),
}

impl CallEntry {
    pub fn seq(&self) -> u64 {
        match self {
            CallEntry::Decided(c) => c.seq,
            CallEntry::Ungoverned(u) => u.seq,
        }
    }

    pub fn call_id(&self) -> &str {
        match self {
            CallEntry::Decided(c) => &c.call_id,
            CallEntry::Ungoverned(u) => &u.call_id,
        }
    }

    pub fn status(&self) -> &str {
        match self {
            CallEntry::Decided(c) => &c.status,
            CallEntry::Ungoverned(_) => UNGOVERNED,
        }
    }

    pub fn anomalies(&self) -> &[AnomalyKind] {
        match self {
            CallEntry::Decided(c) => &c.anomalies,
            CallEntry::Ungoverned(u) => &u.anomalies,
        }
    }
}

/// A session event that is not a tool call (a prompt, a session start, a
/// stop), as `log --events` lists it among the calls.
#[derive(Debug, Clone)]
pub struct LifecycleEntry {
    pub seq: u64,
    /// The session it belongs to (stored as its call id).
    pub session: String,
    pub ts_us: i64,
    pub record: LifecycleRecord,
}

/// One row of the listing with lifecycle events: a call or a session event.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Listed {
    Call(CallEntry),
    Lifecycle(LifecycleEntry),
}

/// The status of a call that ran without a decision.
pub const UNGOVERNED: &str = "ungoverned";

/// One anomaly event, with what was decided for its call (if anything).
#[derive(Debug, Clone, Serialize)]
pub struct AnomalyEntry {
    pub seq: u64,
    pub call_id: String,
    pub ts_us: i64,
    pub tool: Option<String>,
    pub record: AnomalyRecord,
    /// The call's recorded decision (`action`, `rule_id`), when it has one.
    pub action: Option<String>,
    pub rule_id: Option<String>,
    /// The call's first recorded result status, when it has one.
    pub recorded_status: Option<String>,
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
    /// Format 2's provenance columns (NULL in format-1 rows).
    pub user: Option<String>,
    pub host: Option<String>,
    pub client: Option<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
}

impl StoredEvent {
    /// The row's fields as the chain encodes them, in record format `format`.
    pub fn fields(&self, format: u32) -> crate::chain::EventFields<'_> {
        crate::chain::EventFields {
            seq: self.seq,
            log_id: &self.log_id,
            ts_us: self.ts_us,
            kind: &self.kind,
            call_id: &self.call_id,
            tool: self.tool.as_deref(),
            action: self.action.as_deref(),
            rule_id: self.rule_id.as_deref(),
            approval: self.approval.as_deref(),
            status: self.status.as_deref(),
            payload: &self.payload,
            format,
            who: crate::chain::Who {
                user: self.user.as_deref(),
                host: self.host.as_deref(),
                client: self.client.as_deref(),
                session: self.session.as_deref(),
                agent: self.agent.as_deref(),
            },
        }
    }

    pub(super) const COLUMNS: &'static str = "seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status, payload, leaf, chain, user, host, client, session, agent";
    /// The same, for a database read (never migrated) at a schema before the provenance columns.
    pub(super) const COLUMNS_BEFORE_PROVENANCE: &'static str = "seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status, payload, leaf, chain, NULL, NULL, NULL, NULL, NULL";

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
            user: row.get(13)?,
            host: row.get(14)?,
            client: row.get(15)?,
            session: row.get(16)?,
            agent: row.get(17)?,
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
    /// Anomalies per kind, over the selected calls.
    pub by_anomaly: BTreeMap<String, u64>,
    /// Selected calls with at least one anomaly (ungoverned ones included).
    pub anomalous_calls: u64,
}

/// Decision rows (and with `{kinds}` `IN ('decision', 'lifecycle')`, the
/// lifecycle rows among them), each with its call's request, last
/// approval, first result status (a later report is an anomaly, never the
/// call's result), anomaly kinds and result count; for `{ungoverned}`,
/// merged in seq order with the first anomaly of each call that has no
/// decision (found through the `events_anomaly` partial index).
///
/// The filters on what is computed (`{call_filters}`) sit in each arm and
/// name its result columns (SQLite reads an alias in WHERE), so both arms
/// come in seq order from an index and SQLite merges them: the first rows
/// (either way, with `LIMIT`) are read at once, never after a sort of the
/// whole log. The aliases differ from the table's own column names, which
/// a bare name in WHERE would mean first.
const CALLS_SQL: &str = "
  SELECT d.seq, d.call_id, d.ts_us, d.tool, d.payload, d.kind,
    (SELECT q.payload FROM events q
      WHERE q.call_id = d.call_id AND q.kind = 'request' ORDER BY q.seq LIMIT 1) AS request_payload,
    COALESCE((SELECT a.approval FROM events a
      WHERE a.call_id = d.call_id AND a.kind = 'approval' ORDER BY a.seq DESC LIMIT 1),
      CASE WHEN d.action = 'ask' THEN 'pending' ELSE 'not_required' END) AS call_approval,
    CASE WHEN d.kind = 'lifecycle' THEN 'lifecycle' ELSE
      COALESCE((SELECT r.status FROM events r
        WHERE r.call_id = d.call_id AND r.kind = 'result' ORDER BY r.seq LIMIT 1),
        'incomplete') END AS call_status,
    {anomalies} AS anomaly_kinds,
    (SELECT count(*) FROM events r
      WHERE r.call_id = d.call_id AND r.kind = 'result') AS result_count,
    {refused} AS refused_count
  FROM events d
  WHERE d.kind {kinds} {decision_filters} {call_filters}
  {ungoverned}
ORDER BY 1 {order}
{limit}";

/// The anomaly kinds of the call `d`, as a JSON array.
const ANOMALIES_OF_D: &str =
    "(SELECT json_group_array(json_extract(CAST(x.payload AS TEXT), '$.anomaly'))
      FROM events x WHERE x.call_id = d.call_id AND x.kind = 'anomaly')";

/// How many attempts the sandbox refused the call `d` (kept and counted
/// beyond them, over its `refused` events). A damaged payload counts what
/// it still says: not JSON, 0; a `more` that is not a count, 0.
fn refused_of_d() -> String {
    let payload = valid_json("x.payload");
    format!(
        "(SELECT COALESCE(sum(COALESCE(json_array_length({payload}, '$.attempts'), 0)
           + CASE WHEN json_type({payload}, '$.more') = 'integer'
               THEN max(0, min(json_extract({payload}, '$.more'), 1000000000000)) ELSE 0 END), 0)
          FROM events x WHERE x.call_id = d.call_id AND x.kind = 'refused')"
    )
}

/// The rows `CALLS_SQL` adds for calls gavel never decided.
const UNGOVERNED_ROWS: &str = "UNION ALL
  SELECT d.seq, d.call_id, d.ts_us, d.tool, d.payload, d.kind, NULL AS request_payload,
    NULL AS call_approval, 'ungoverned' AS call_status, {anomalies} AS anomaly_kinds,
    0 AS result_count, 0 AS refused_count
  FROM events d
  WHERE d.kind = 'anomaly'
    AND NOT EXISTS (SELECT 1 FROM events e WHERE e.call_id = d.call_id AND e.kind = 'decision')
    AND NOT EXISTS (SELECT 1 FROM events e
      WHERE e.call_id = d.call_id AND e.kind = 'anomaly' AND e.seq < d.seq)
    {decision_filters} {call_filters}";

/// `X` when it is valid JSON text, else NULL (so `json_tree` never fails on a damaged row).
fn valid_json(expr: &str) -> String {
    format!("(CASE WHEN json_valid(CAST({expr} AS TEXT)) THEN CAST({expr} AS TEXT) END)")
}

impl Store {
    /// The columns of `StoredEvent`, as this database has them.
    pub(super) fn event_columns(&self) -> &'static str {
        if self.provenance {
            StoredEvent::COLUMNS
        } else {
            StoredEvent::COLUMNS_BEFORE_PROVENANCE
        }
    }

    /// A provenance column of the row `d`, or NULL in a database without them.
    fn who_column(&self, name: &'static str) -> String {
        if self.provenance {
            format!("d.{name}")
        } else {
            "NULL".to_owned()
        }
    }

    /// Decided calls matching `query`, oldest first, one at a time.
    pub fn for_each_call<E: From<StoreError>>(
        &self,
        query: &AuditQuery,
        mut each: impl FnMut(CallSummary) -> Result<(), E>,
    ) -> Result<(), E> {
        self.for_each_row(query, false, false, |entry| match entry {
            Listed::Call(CallEntry::Decided(call)) => each(call),
            _ => Ok(()),
        })
    }

    /// Every call matching `query`, decided or not, oldest first.
    pub fn for_each_entry<E: From<StoreError>>(
        &self,
        query: &AuditQuery,
        mut each: impl FnMut(CallEntry) -> Result<(), E>,
    ) -> Result<(), E> {
        self.for_each_row(query, true, false, |entry| match entry {
            Listed::Call(call) => each(call),
            Listed::Lifecycle(_) => Ok(()),
        })
    }

    /// Every call matching `query`, and with `events` the lifecycle events
    /// (prompts, session starts, stops) among them, in seq order, one at a
    /// time: rows are read as they are handed on, in constant memory. A
    /// filter only a call can match (tool, rule, action, approval, status,
    /// call, anomalies) leaves the lifecycle events out.
    pub fn for_each_listed<E: From<StoreError>>(
        &self,
        query: &AuditQuery,
        events: bool,
        each: impl FnMut(Listed) -> Result<(), E>,
    ) -> Result<(), E> {
        self.for_each_row(query, true, events, each)
    }

    fn for_each_row<E: From<StoreError>>(
        &self,
        query: &AuditQuery,
        ungoverned: bool,
        lifecycle: bool,
        mut each: impl FnMut(Listed) -> Result<(), E>,
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
        decision_filters
            .push_str(&query.mcp_conditions("d.tool", "instr", |v| bind(SqlValue::Text(v))));
        if let Some(since) = query.since {
            let p = bind(SqlValue::Integer(since));
            decision_filters.push_str(&format!(" AND d.ts_us >= {p}"));
        }
        if let Some(until) = query.until {
            let p = bind(SqlValue::Integer(until));
            decision_filters.push_str(&format!(" AND d.ts_us < {p}"));
        }
        for (column, value) in [
            ("user", &query.user),
            ("client", &query.client),
            ("agent", &query.agent),
        ] {
            if let Some(value) = value {
                let p = bind(SqlValue::Text(value.clone()));
                decision_filters.push_str(&format!(" AND {} = {p}", self.who_column(column)));
            }
        }
        if let Some(host) = &query.host {
            // The host name is a column; the host id is in the call's request.
            let p = bind(SqlValue::Text(host.clone()));
            decision_filters.push_str(&format!(
                " AND ({} = {p} OR (d.kind <> 'lifecycle' AND json_extract({}, '$.principal.host_id') = {p}))",
                self.who_column("host"),
                valid_json(
                    "(SELECT q.payload FROM events q WHERE q.call_id = d.call_id AND q.kind = 'request' ORDER BY q.seq LIMIT 1)"
                ),
            ));
        }
        let mut call_filters = String::new();
        for (column, value) in [
            ("call_approval", &query.approval),
            ("call_status", &query.status),
        ] {
            if let Some(value) = value {
                let p = bind(SqlValue::Text(value.clone()));
                call_filters.push_str(&format!(" AND {column} = {p}"));
            }
        }
        if query.anomalies {
            call_filters.push_str(" AND (anomaly_kinds <> '[]' OR result_count > 1)");
        }
        if let Some(session) = &query.session {
            let p = bind(SqlValue::Text(session.clone()));
            call_filters.push_str(&format!(
                " AND COALESCE({}, CASE d.kind
                     WHEN 'decision' THEN json_extract({}, '$.client.session_id')
                     WHEN 'anomaly' THEN json_extract({}, '$.client.session_id')
                     ELSE d.call_id END) = {p}",
                self.who_column("session"),
                valid_json("request_payload"),
                valid_json("d.payload"),
            ));
        }
        if let Some(grep) = &query.grep {
            let p = bind(SqlValue::Text(grep.clone()));
            call_filters.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM json_tree(
                     CASE d.kind WHEN 'decision' THEN {} ELSE {} END,
                     CASE d.kind WHEN 'decision' THEN '$.arguments'
                       WHEN 'anomaly' THEN '$.client.input' ELSE '$.data' END) AS t
                   WHERE t.atom IS NOT NULL AND instr(t.atom, {p}) > 0)",
                valid_json("request_payload"),
                valid_json("d.payload"),
            ));
        }
        let limit = match query.limit {
            Some(n) => format!(
                "LIMIT {}",
                bind(SqlValue::Integer(n.min(i64::MAX as u64) as i64))
            ),
            None => String::new(),
        };
        // An ungoverned call has no rule, action or approval: a filter on
        // one of them cannot select it, and leaving its rows out keeps the
        // partial index on decisions usable for `--rule`.
        let ungoverned = ungoverned
            && query.rule_id.is_none()
            && query.action.is_none()
            && query.approval.is_none();
        let lifecycle = lifecycle && !query.selects_calls_only();
        let text = CALLS_SQL
            .replace(
                "{ungoverned}",
                if ungoverned { UNGOVERNED_ROWS } else { "" },
            )
            .replace(
                "{kinds}",
                if lifecycle {
                    "IN ('decision', 'lifecycle')"
                } else {
                    "= 'decision'"
                },
            )
            .replace("{order}", if query.newest_first { "DESC" } else { "" })
            .replace("{anomalies}", ANOMALIES_OF_D)
            .replace("{refused}", &refused_of_d())
            .replace("{decision_filters}", &decision_filters)
            .replace("{call_filters}", &call_filters)
            .replace("{limit}", &limit);

        // A listing reads the log through SQLite's small page cache, not
        // the memory map a full scan uses: a whole log's pages would
        // otherwise count in the process's resident memory (~1 GB for a
        // million events), while the rows are handed on one at a time.
        self.conn
            .pragma_update(None, "mmap_size", 0)
            .map_err(sql("setting mmap_size"))?;
        let mut statement = self
            .conn
            .prepare_cached(&text)
            .map_err(sql("preparing a query"))?;
        let mut rows = statement
            .query(params_from_iter(params))
            .map_err(sql("querying calls"))?;
        while let Some(row) = rows.next().map_err(sql("reading calls"))? {
            let entry = self.summary(row)?;
            each(entry)?;
        }
        Ok(())
    }

    fn summary(&self, row: &Row<'_>) -> Result<Listed, StoreError> {
        let read = |row: &Row<'_>| -> rusqlite::Result<_> {
            Ok((
                row.get::<_, u64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, Vec<u8>>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, Option<Vec<u8>>>(6)?,
                row.get::<_, Option<String>>(7)?,
                row.get::<_, String>(8)?,
                row.get::<_, Option<String>>(9)?,
                row.get::<_, u64>(10)?,
                // Summed by SQLite: read as a number whatever its type.
                row.get::<_, f64>(11)? as u64,
            ))
        };
        let (
            seq,
            call_id,
            ts_us,
            tool,
            payload,
            kind,
            request,
            approval,
            status,
            anomalies,
            results,
            refused,
        ) = read(row).map_err(sql("reading a call"))?;
        let anomalies = anomalies
            .as_deref()
            .and_then(|text| serde_json::from_str::<Vec<Option<String>>>(text).ok())
            .unwrap_or_default();
        assemble(RawCall {
            seq,
            call_id: &call_id,
            ts_us,
            tool,
            payload: &payload,
            kind: &kind,
            request: request.as_deref(),
            approval,
            status,
            anomalies,
            results,
            refused,
        })
        .map_err(|detail| StoreError::Damaged {
            path: self.path.display().to_string(),
            detail: format!("call `{call_id}` (seq {seq}): {detail}"),
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
            self.event_columns()
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
        let text = format!("SELECT {} FROM events ORDER BY seq", self.event_columns());
        let mut statement = self.conn.prepare(&text).map_err(sql("preparing a scan"))?;
        let mut rows = statement.query([]).map_err(sql("scanning events"))?;
        while let Some(row) = rows.next().map_err(sql("scanning events"))? {
            each(StoredEvent::from_row(row).map_err(sql("reading an event"))?)?;
        }
        Ok(())
    }

    /// The first event of the log (seq 1), if any.
    pub fn first_event(&self) -> Result<Option<StoredEvent>, StoreError> {
        let text = format!(
            "SELECT {} FROM events ORDER BY seq LIMIT 1",
            self.event_columns()
        );
        self.conn
            .query_row(&text, [], StoredEvent::from_row)
            .optional()
            .map_err(sql("reading the first event"))
    }

    /// The number of events in the log.
    pub fn event_count(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT count(*) FROM events", [], |row| row.get(0))
            .map_err(sql("counting events"))
    }

    /// Counts per rule, action, approval, status, tool and anomaly over
    /// `query`. An ungoverned call counts in `calls`, `by_status`
    /// (`ungoverned`), `by_tool` and `by_anomaly`; it has no rule, action
    /// or approval.
    pub fn stats(&self, query: &AuditQuery) -> Result<Stats, StoreError> {
        self.stats_with(query, |_| Ok::<_, StoreError>(()))
    }

    /// [`Store::stats`], handing each selected call to `each` as it is
    /// counted: a caller that needs the calls too (the HTML report) reads
    /// the log once and gets exactly the counts `stats` gives.
    pub fn stats_with<E: From<StoreError>>(
        &self,
        query: &AuditQuery,
        mut each: impl FnMut(&CallEntry) -> Result<(), E>,
    ) -> Result<Stats, E> {
        let mut stats = Stats::default();
        self.for_each_entry(query, |entry| {
            each(&entry)?;
            stats.calls += 1;
            if !entry.anomalies().is_empty() {
                stats.anomalous_calls += 1;
            }
            for kind in entry.anomalies() {
                *stats
                    .by_anomaly
                    .entry(kind.as_str().to_owned())
                    .or_default() += 1;
            }
            match entry {
                CallEntry::Decided(call) => {
                    *stats.by_rule.entry(call.decision.rule_id).or_default() += 1;
                    *stats
                        .by_action
                        .entry(call.decision.action.as_str().to_owned())
                        .or_default() += 1;
                    *stats.by_approval.entry(call.approval).or_default() += 1;
                    *stats.by_status.entry(call.status).or_default() += 1;
                    *stats.by_tool.entry(call.tool).or_default() += 1;
                }
                CallEntry::Ungoverned(call) => {
                    *stats.by_status.entry(UNGOVERNED.to_owned()).or_default() += 1;
                    *stats.by_tool.entry(call.tool).or_default() += 1;
                }
            }
            Ok::<_, E>(())
        })?;
        Ok(stats)
    }

    /// Completions an older gavel recorded as lifecycle notes instead of
    /// anomalies (`no call with this tool_use_id is recorded`, `the call
    /// already has a result`), as `(seq, ts_us, tool_use_id, data)`, oldest first.
    pub fn legacy_completion_notes(
        &self,
        query: &AuditQuery,
    ) -> Result<Vec<(u64, i64, String, serde_json::Value)>, StoreError> {
        let mut statement = self
            .conn
            .prepare(
                "SELECT seq, ts_us, payload FROM events WHERE kind = 'lifecycle'
                   AND json_valid(CAST(payload AS TEXT))
                   AND json_extract(CAST(payload AS TEXT), '$.data.note') IS NOT NULL
                   AND json_extract(CAST(payload AS TEXT), '$.event')
                       IN ('PostToolUse', 'PostToolUseFailure')
                 ORDER BY seq",
            )
            .map_err(sql("preparing a query"))?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, u64>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, Vec<u8>>(2)?,
                ))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(sql("reading lifecycle notes"))?;
        let mut out = Vec::new();
        for (seq, ts_us, payload) in rows {
            let data = serde_json::from_slice::<serde_json::Value>(&payload)
                .ok()
                .and_then(|v| v.get("data").cloned())
                .unwrap_or_default();
            let id = data
                .get("tool_use_id")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let selected = query.call_id.as_ref().is_none_or(|c| *c == id)
                && query.since.is_none_or(|since| ts_us >= since)
                && query.until.is_none_or(|until| ts_us < until);
            if selected {
                out.push((seq, ts_us, id, data));
            }
        }
        Ok(out)
    }

    /// Every anomaly event matching `query` (its time, tool and call id
    /// filters), oldest first, with what was decided for its call.
    pub fn anomalies(&self, query: &AuditQuery) -> Result<Vec<AnomalyEntry>, StoreError> {
        let mut params: Vec<SqlValue> = Vec::new();
        let mut filters = String::new();
        for (column, value) in [("x.tool", &query.tool), ("x.call_id", &query.call_id)] {
            if let Some(value) = value {
                params.push(SqlValue::Text(value.clone()));
                filters.push_str(&format!(" AND {column} = ?{}", params.len()));
            }
        }
        filters.push_str(&query.mcp_conditions("x.tool", "instr", |v| {
            params.push(SqlValue::Text(v));
            format!("?{}", params.len())
        }));
        if let Some(since) = query.since {
            params.push(SqlValue::Integer(since));
            filters.push_str(&format!(" AND x.ts_us >= ?{}", params.len()));
        }
        if let Some(until) = query.until {
            params.push(SqlValue::Integer(until));
            filters.push_str(&format!(" AND x.ts_us < ?{}", params.len()));
        }
        let limit = match query.limit {
            Some(n) => {
                params.push(SqlValue::Integer(n.min(i64::MAX as u64) as i64));
                format!("LIMIT ?{}", params.len())
            }
            None => String::new(),
        };
        let text = format!(
            "SELECT x.seq, x.call_id, x.ts_us, x.tool, x.payload,
               (SELECT d.action FROM events d WHERE d.call_id = x.call_id AND d.kind = 'decision'
                 ORDER BY d.seq LIMIT 1),
               (SELECT d.rule_id FROM events d WHERE d.call_id = x.call_id AND d.kind = 'decision'
                 ORDER BY d.seq LIMIT 1),
               (SELECT r.status FROM events r WHERE r.call_id = x.call_id AND r.kind = 'result'
                 ORDER BY r.seq LIMIT 1)
             FROM events x WHERE x.kind = 'anomaly' {filters} ORDER BY x.seq {limit}"
        );
        let mut statement = self.conn.prepare(&text).map_err(sql("preparing a query"))?;
        let mut rows = statement
            .query(params_from_iter(params))
            .map_err(sql("querying anomalies"))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(sql("reading anomalies"))? {
            let read = |row: &Row<'_>| -> rusqlite::Result<_> {
                Ok((
                    row.get::<_, u64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, Option<String>>(3)?,
                    row.get::<_, Vec<u8>>(4)?,
                    row.get::<_, Option<String>>(5)?,
                    row.get::<_, Option<String>>(6)?,
                    row.get::<_, Option<String>>(7)?,
                ))
            };
            let (seq, call_id, ts_us, tool, payload, action, rule_id, recorded_status) =
                read(row).map_err(sql("reading an anomaly"))?;
            let record = match EventBody::from_json("anomaly", &payload) {
                Ok(EventBody::Anomaly(record)) => record,
                Ok(_) => unreachable!("from_json(\"anomaly\") returns an anomaly"),
                Err(detail) => {
                    return Err(StoreError::Damaged {
                        path: self.path.display().to_string(),
                        detail: format!("call `{call_id}` (seq {seq}): {detail}"),
                    });
                }
            };
            out.push(AnomalyEntry {
                seq,
                call_id,
                ts_us,
                tool,
                record,
                action,
                rule_id,
                recorded_status,
            });
        }
        Ok(out)
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

/// One row of the call listing as the database hands it over: the row
/// (decision, lifecycle or first anomaly) and what was computed for its call.
pub(crate) struct RawCall<'a> {
    pub seq: u64,
    pub call_id: &'a str,
    pub ts_us: i64,
    pub tool: Option<String>,
    pub payload: &'a [u8],
    pub kind: &'a str,
    /// The call's first request's payload.
    pub request: Option<&'a [u8]>,
    /// The last approval, else `pending` or `not_required`.
    pub approval: Option<String>,
    /// The first result's status, else `incomplete` (or `lifecycle`, `ungoverned`).
    pub status: String,
    /// The call's anomaly kinds, in order.
    pub anomalies: Vec<Option<String>>,
    /// How many results the call has.
    pub results: u64,
    /// How many attempts the sandbox refused it.
    pub refused: u64,
}

/// Assembles a listing row into a call (or session event); the error is
/// what is damaged about it. Shared by every backend so that a call reads
/// the same wherever it is stored.
pub(crate) fn assemble(raw: RawCall<'_>) -> Result<Listed, String> {
    let RawCall {
        seq,
        call_id,
        ts_us,
        tool,
        payload,
        kind,
        request,
        approval,
        status,
        anomalies,
        results,
        refused,
    } = raw;
    let mut anomalies: Vec<AnomalyKind> = anomalies
        .into_iter()
        .map(|kind| {
            kind.as_deref()
                .and_then(AnomalyKind::parse)
                .ok_or_else(|| format!("unknown anomaly `{}`", kind.unwrap_or_default()))
        })
        .collect::<Result<_, _>>()?;
    if kind == "lifecycle" {
        let record = match EventBody::from_json("lifecycle", payload)? {
            EventBody::Lifecycle(record) => record,
            _ => unreachable!("from_json(\"lifecycle\") returns a lifecycle record"),
        };
        return Ok(Listed::Lifecycle(LifecycleEntry {
            seq,
            session: call_id.to_owned(),
            ts_us,
            record,
        }));
    }
    if kind == "anomaly" {
        let anomaly = match EventBody::from_json("anomaly", payload)? {
            EventBody::Anomaly(a) => a,
            _ => unreachable!("from_json(\"anomaly\") returns an anomaly"),
        };
        return Ok(Listed::Call(CallEntry::Ungoverned(UngovernedCall {
            seq,
            call_id: call_id.to_owned(),
            ts_us,
            tool: tool.unwrap_or_default(),
            anomaly,
            anomalies,
        })));
    }
    // Logs written before anomalies were recorded as such appended a
    // second result instead: it is shown as the anomaly it was.
    if anomalies.is_empty() && results > 1 {
        anomalies.push(if status == "blocked" {
            AnomalyKind::RanDespiteDeny
        } else {
            AnomalyKind::SecondCompletion
        });
    }
    let approval = approval.unwrap_or_default();
    let mut decision = match EventBody::from_json("decision", payload)? {
        EventBody::Decision(d) => d,
        _ => unreachable!("from_json(\"decision\") returns a decision"),
    };
    let request = match request {
        Some(bytes) => match EventBody::from_json("request", bytes)? {
            EventBody::Request(r) => r,
            _ => unreachable!("from_json(\"request\") returns a request"),
        },
        None => return Err("the decision has no request".into()),
    };
    let parse_differs = decision.facts.restore(&request.arguments) == Some(false);
    Ok(Listed::Call(CallEntry::Decided(CallSummary {
        seq,
        call_id: call_id.to_owned(),
        ts_us,
        tool: tool.unwrap_or_default(),
        request,
        decision,
        approval,
        status,
        anomalies,
        parse_differs,
        refused,
    })))
}
