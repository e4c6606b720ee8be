//! Reading the central store: the calls of many hosts' logs, listed and
//! counted by SQL on PostgreSQL with the same filters and the same meaning
//! as the local store (`store::AuditQuery`), each row told by the enrolled
//! host and log it came from. Owns the read side's SQL; knows nothing of
//! the CLI.

use std::fmt::Write as _;

use postgres::types::ToSql;
use postgres::{Client, GenericClient, IsolationLevel, Transaction};

use crate::store::{AuditQuery, Listed, LogIdentity, RawCall, Stats, Store, StoredEvent, assemble};

/// Why the central store could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{context}: {source}")]
    Sql {
        context: &'static str,
        source: postgres::Error,
    },
    #[error(
        "no log in the central store matches `{selector}` (a log id in hex, or a prefix of its origin)"
    )]
    UnknownLog { selector: String },
    #[error("`{selector}` matches {count} logs in the central store ({origins}); give more of it")]
    AmbiguousLog {
        selector: String,
        count: usize,
        origins: String,
    },
    #[error("no call `{call_id}` in the central store")]
    UnknownCall { call_id: String },
    #[error("call `{call_id}` is in {count} logs ({logs}); pick one with --log")]
    AmbiguousCall {
        call_id: String,
        count: usize,
        logs: String,
    },
    #[error("the central store is damaged: {detail}")]
    Damaged { detail: String },
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// Attaches what was being done to a PostgreSQL error.
pub(crate) fn sql(context: &'static str) -> impl FnOnce(postgres::Error) -> ReadError {
    move |source| ReadError::Sql { context, source }
}

/// A read-only transaction on one snapshot of the store: everything read
/// through it sees the same committed state, whatever ingest or retention
/// commits meanwhile. `logs` and `events` (with every partition) are
/// locked for reading before the snapshot is taken, so a retention run
/// either committed before it (its cuts and dropped partitions both seen)
/// or waits for it to end (neither seen).
pub fn snapshot(client: &mut Client) -> Result<Transaction<'_>, ReadError> {
    let mut tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(sql("starting a read-only snapshot"))?;
    tx.batch_execute("LOCK TABLE logs, events IN ACCESS SHARE MODE")
        .map_err(sql("locking logs and events for reading"))?;
    Ok(tx)
}

/// Where a row of the central store comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The enrolled host that pushed it (not the host name recorded in the row).
    pub host: String,
    /// The origin of its log (`gavel/<hex log id>`).
    pub origin: String,
    pub log_id: Vec<u8>,
    /// Its seq in that log.
    pub seq: u64,
}

/// One log of the central store, as `--log` and `--host` find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRef {
    pub log_id: Vec<u8>,
    pub host: String,
    pub origin: String,
}

/// The log `selector` names: its id in hex, or a unique prefix of its origin.
pub fn resolve_log(client: &mut impl GenericClient, selector: &str) -> Result<LogRef, ReadError> {
    let rows = client
        .query(
            "SELECT log_id, host, origin FROM logs
              WHERE encode(log_id, 'hex') = lower($1) OR starts_with(origin, $1)
              ORDER BY host, origin",
            &[&selector],
        )
        .map_err(sql("finding the log"))?;
    let logs = log_refs(&rows);
    match logs.len() {
        0 => Err(ReadError::UnknownLog {
            selector: selector.to_owned(),
        }),
        1 => Ok(logs.into_iter().next().expect("one element, checked above")),
        count => Err(ReadError::AmbiguousLog {
            selector: selector.to_owned(),
            count,
            origins: first_logs(&logs),
        }),
    }
}

/// Bound parameters of a statement being built, `$1`, `$2`, ..., with
/// their SQL literals (for running the same statement in `psql`).
#[derive(Default)]
pub struct Params {
    values: Vec<Box<dyn ToSql + Sync>>,
    literals: Vec<String>,
}

/// A value that can be bound, and written as an SQL literal.
pub trait Literal: ToSql + Sync + 'static {
    fn literal(&self) -> String;
}

impl Literal for String {
    fn literal(&self) -> String {
        format!("'{}'", self.replace('\'', "''"))
    }
}

impl Literal for i64 {
    fn literal(&self) -> String {
        format!("{self}::bigint")
    }
}

impl Literal for Vec<u8> {
    fn literal(&self) -> String {
        format!("'\\x{}'::bytea", crate::digest::hex(self))
    }
}

impl Params {
    fn bind(&mut self, value: impl Literal) -> String {
        self.literals.push(value.literal());
        self.values.push(Box::new(value));
        format!("${}", self.values.len())
    }

    /// The values, in order, for `Client::query_raw`.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &(dyn ToSql + Sync)> {
        self.values
            .iter()
            .map(|b| b.as_ref() as &(dyn ToSql + Sync))
    }
}

/// The payload `column` as JSON (`jsonb`), NULL when jsonb cannot hold it
/// (`gavel_jsonb` in migration 0002: a `\u0000` escape, bytes that are not
/// UTF-8), so such a row never fails the statement for every other row.
fn json(column: &str) -> String {
    format!("gavel_jsonb({column})")
}

/// The listing: decision rows (and lifecycle rows with `{kinds}`), each with
/// what its call's other events say, and the first anomaly of every call
/// with no decision; the same columns and meaning as the local store's
/// `CALLS_SQL`, per log.
const CALLS_SQL: &str = "
SELECT c.ts_us, c.log_id, c.seq, c.call_id, c.tool, c.payload, c.kind, c.request_payload,
       c.call_approval, c.call_status, c.anomaly_kinds, c.result_count, c.refused_count, c.enrolled,
       c.origin,
       c.rule_id, c.action
FROM (
  SELECT d.ts_us, d.log_id, d.seq, d.call_id, d.tool, d.payload, d.kind, d.rule_id, d.action,
    d.session, d.host, l.host AS enrolled, l.origin,
    (SELECT q.payload FROM events q
      WHERE q.log_id = d.log_id AND q.call_id = d.call_id AND q.kind = 'request'
      ORDER BY q.seq LIMIT 1) AS request_payload,
    COALESCE((SELECT a.approval FROM events a
      WHERE a.log_id = d.log_id AND a.call_id = d.call_id AND a.kind = 'approval'
      ORDER BY a.seq DESC LIMIT 1),
      CASE WHEN d.action = 'ask' THEN 'pending' ELSE 'not_required' END) AS call_approval,
    CASE WHEN d.kind = 'lifecycle' THEN 'lifecycle' ELSE
      COALESCE((SELECT r.status FROM events r
        WHERE r.log_id = d.log_id AND r.call_id = d.call_id AND r.kind = 'result'
        ORDER BY r.seq LIMIT 1), 'incomplete') END AS call_status,
    {anomalies} AS anomaly_kinds,
    (SELECT count(*) FROM events r
      WHERE r.log_id = d.log_id AND r.call_id = d.call_id AND r.kind = 'result') AS result_count,
    (SELECT COALESCE(sum(
        CASE WHEN jsonb_typeof(gavel_jsonb(x.payload) -> 'attempts') = 'array'
          THEN jsonb_array_length(gavel_jsonb(x.payload) -> 'attempts') ELSE 0 END
        + CASE WHEN jsonb_typeof(gavel_jsonb(x.payload) -> 'more') = 'number'
          THEN GREATEST(0, LEAST((gavel_jsonb(x.payload) ->> 'more')::numeric, 1000000000000))
          ELSE 0 END), 0)::bigint
      FROM events x WHERE x.log_id = d.log_id AND x.call_id = d.call_id AND x.kind = 'refused')
      AS refused_count
  FROM events d JOIN logs l ON l.log_id = d.log_id
  WHERE d.kind {kinds} {decision_filters}
  {ungoverned}
) c
WHERE true {call_filters}
ORDER BY c.ts_us {order}, c.log_id {order}, c.seq {order}
{limit}";

/// The anomaly kinds of the call of row `d`, in order.
const ANOMALIES_OF_D: &str = "ARRAY(SELECT gavel_jsonb(x.payload) ->> 'anomaly'
      FROM events x WHERE x.log_id = d.log_id AND x.call_id = d.call_id AND x.kind = 'anomaly'
      ORDER BY x.seq)";

/// The rows `CALLS_SQL` adds for calls gavel never decided.
const UNGOVERNED_ROWS: &str = "UNION ALL
  SELECT d.ts_us, d.log_id, d.seq, d.call_id, d.tool, d.payload, d.kind, d.rule_id, d.action,
    d.session, d.host, l.host AS enrolled, l.origin, NULL::bytea AS request_payload,
    NULL::text AS call_approval, 'ungoverned' AS call_status, {anomalies} AS anomaly_kinds,
    0::bigint AS result_count, 0::bigint AS refused_count
  FROM events d JOIN logs l ON l.log_id = d.log_id
  WHERE d.kind = 'anomaly'
    AND NOT EXISTS (SELECT 1 FROM events e
      WHERE e.log_id = d.log_id AND e.call_id = d.call_id AND e.kind = 'decision')
    AND NOT EXISTS (SELECT 1 FROM events e
      WHERE e.log_id = d.log_id AND e.call_id = d.call_id AND e.kind = 'anomaly' AND e.seq < d.seq)
    {decision_filters}";

/// A statement and its parameters.
pub struct Statement {
    pub text: String,
    pub params: Params,
}

impl Statement {
    /// The statement with its parameters written in as literals: the very
    /// SQL gavel runs, for `psql` (the benchmark's baseline).
    pub fn inlined(&self) -> String {
        let mut text = self.text.clone();
        // The highest first, so that `$1` never eats the start of `$12`.
        for (i, literal) in self.params.literals.iter().enumerate().rev() {
            text = text.replace(&format!("${}", i + 1), literal);
        }
        text
    }
}

/// The listing statement for `query` over `log` (every log when `None`),
/// with lifecycle events when `events`.
pub fn calls_statement(
    query: &AuditQuery,
    log: Option<&LogRef>,
    ungoverned: bool,
    events: bool,
) -> Statement {
    let mut params = Params::default();
    let mut decision_filters = String::new();
    if let Some(log) = log {
        let p = params.bind(log.log_id.clone());
        let _ = write!(decision_filters, " AND d.log_id = {p}");
    }
    for (column, value) in [
        ("d.tool", &query.tool),
        ("d.rule_id", &query.rule_id),
        ("d.action", &query.action),
        ("d.call_id", &query.call_id),
        ("d.\"user\"", &query.user),
        ("d.client", &query.client),
        ("d.agent", &query.agent),
    ] {
        if let Some(value) = value {
            let p = params.bind(value.clone());
            let _ = write!(decision_filters, " AND {column} = {p}");
        }
    }
    decision_filters.push_str(&query.mcp_conditions("d.tool", "strpos", |v| params.bind(v)));
    if let Some(since) = query.since {
        let p = params.bind(since);
        let _ = write!(decision_filters, " AND d.ts_us >= {p}");
    }
    if let Some(until) = query.until {
        let p = params.bind(until);
        let _ = write!(decision_filters, " AND d.ts_us < {p}");
    }
    let mut call_filters = String::new();
    if let Some(host) = &query.host {
        // The enrolled host, the recorded host name, or the host id in the request.
        let p = params.bind(host.clone());
        let _ = write!(
            call_filters,
            " AND (c.enrolled = {p} OR c.host = {p} OR (c.kind <> 'lifecycle'
                 AND {} -> 'principal' ->> 'host_id' = {p}))",
            json("c.request_payload")
        );
    }
    for (column, value) in [
        ("c.call_approval", &query.approval),
        ("c.call_status", &query.status),
    ] {
        if let Some(value) = value {
            let p = params.bind(value.clone());
            let _ = write!(call_filters, " AND {column} = {p}");
        }
    }
    if query.anomalies {
        call_filters.push_str(" AND (cardinality(c.anomaly_kinds) > 0 OR c.result_count > 1)");
    }
    if let Some(session) = &query.session {
        let p = params.bind(session.clone());
        let _ = write!(
            call_filters,
            " AND COALESCE(c.session, CASE c.kind
                 WHEN 'decision' THEN {} -> 'client' ->> 'session_id'
                 WHEN 'anomaly' THEN {} -> 'client' ->> 'session_id'
                 ELSE c.call_id END) = {p}",
            json("c.request_payload"),
            json("c.payload"),
        );
    }
    if let Some(grep) = &query.grep {
        let p = params.bind(grep.clone());
        let _ = write!(
            call_filters,
            " AND EXISTS (SELECT 1 FROM jsonb_path_query(
                 CASE c.kind WHEN 'decision' THEN {req} -> 'arguments'
                   WHEN 'anomaly' THEN {own} -> 'client' -> 'input'
                   ELSE {own} -> 'data' END, 'strict $.**') AS t(v)
               WHERE jsonb_typeof(t.v) IN ('string', 'number', 'boolean')
                 AND strpos(t.v #>> '{{}}', {p}) > 0)",
            req = json("c.request_payload"),
            own = json("c.payload"),
        );
    }
    let limit = match query.limit {
        Some(n) => format!("LIMIT {}", params.bind(n.min(i64::MAX as u64) as i64)),
        None => String::new(),
    };
    let ungoverned =
        ungoverned && query.rule_id.is_none() && query.action.is_none() && query.approval.is_none();
    let lifecycle = events && !query.selects_calls_only();
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
        .replace("{decision_filters}", &decision_filters)
        .replace("{call_filters}", &call_filters)
        .replace("{limit}", &limit);
    Statement { text, params }
}

/// Every call matching `query` (and with `events` the session events among
/// them) in `log` or in every log, oldest first by time (then log and seq),
/// one at a time as PostgreSQL sends them, each with where it comes from.
pub fn for_each_listed<E: From<ReadError>>(
    client: &mut Client,
    query: &AuditQuery,
    log: Option<&LogRef>,
    events: bool,
    mut each: impl FnMut(Located, Listed) -> Result<(), E>,
) -> Result<(), E> {
    let statement = calls_statement(query, log, true, events);
    let mut rows = client
        .query_raw(statement.text.as_str(), statement.params.values())
        .map_err(sql("querying calls"))?;
    use postgres::fallible_iterator::FallibleIterator as _;
    while let Some(row) = rows.next().map_err(sql("reading calls"))? {
        let (located, listed) = listed_row(&row)?;
        each(located, listed)?;
    }
    Ok(())
}

fn listed_row(row: &postgres::Row) -> Result<(Located, Listed), ReadError> {
    let read = || -> Result<_, postgres::Error> {
        Ok((
            row.try_get::<_, i64>(0)?,
            row.try_get::<_, Vec<u8>>(1)?,
            row.try_get::<_, i64>(2)?,
            row.try_get::<_, String>(3)?,
            row.try_get::<_, Option<String>>(4)?,
            row.try_get::<_, Vec<u8>>(5)?,
            row.try_get::<_, String>(6)?,
            row.try_get::<_, Option<Vec<u8>>>(7)?,
            row.try_get::<_, Option<String>>(8)?,
            row.try_get::<_, String>(9)?,
            row.try_get::<_, Vec<Option<String>>>(10)?,
            row.try_get::<_, i64>(11)?,
            row.try_get::<_, i64>(12)?,
            row.try_get::<_, String>(13)?,
            row.try_get::<_, String>(14)?,
        ))
    };
    let (
        ts_us,
        log_id,
        seq,
        call_id,
        tool,
        payload,
        kind,
        request,
        approval,
        status,
        anomalies,
        results,
        refused,
        host,
        origin,
    ) = read().map_err(sql("reading a call"))?;
    let seq = u64::try_from(seq).unwrap_or_default();
    let listed = assemble(RawCall {
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
        results: u64::try_from(results).unwrap_or_default(),
        refused: u64::try_from(refused).unwrap_or_default(),
    })
    .map_err(|detail| ReadError::Damaged {
        detail: format!("call `{call_id}` of {origin} (host {host}, seq {seq}): {detail}"),
    })?;
    Ok((
        Located {
            host,
            origin,
            log_id,
            seq,
        },
        listed,
    ))
}

/// The counts of `stats`, computed by PostgreSQL in one statement over the
/// listing: the same counts the local store gives for the same calls.
const STATS_SQL: &str = "
WITH calls AS ({calls}),
counted AS (
  SELECT COALESCE(tool, '') AS tool, rule_id, action, call_approval, call_status,
    CASE WHEN cardinality(anomaly_kinds) = 0 AND result_count > 1 THEN
      ARRAY[CASE WHEN call_status = 'blocked' THEN 'ran_despite_deny' ELSE 'second_completion' END]
    ELSE anomaly_kinds END AS anomalies
  FROM calls
)
SELECT 'calls', NULL, count(*) FROM counted
UNION ALL SELECT 'anomalous', NULL, count(*) FROM counted WHERE cardinality(anomalies) > 0
UNION ALL SELECT 'rule', rule_id, count(*) FROM counted WHERE call_status <> 'ungoverned' GROUP BY 2
UNION ALL SELECT 'action', action, count(*) FROM counted WHERE call_status <> 'ungoverned' GROUP BY 2
UNION ALL SELECT 'approval', call_approval, count(*) FROM counted WHERE call_status <> 'ungoverned' GROUP BY 2
UNION ALL SELECT 'status', call_status, count(*) FROM counted GROUP BY 2
UNION ALL SELECT 'tool', tool, count(*) FROM counted GROUP BY 2
UNION ALL SELECT 'anomaly', k, count(*) FROM counted, unnest(anomalies) AS k GROUP BY 2";

/// The `stats` statement for `query` over `log` (every log when `None`).
pub fn stats_statement(query: &AuditQuery, log: Option<&LogRef>) -> Statement {
    let query = AuditQuery {
        newest_first: false,
        ..query.clone()
    };
    let calls = calls_statement(&query, log, true, false);
    // The listing's columns are what is counted; its order is not needed.
    let inner = match calls.text.rfind("ORDER BY") {
        Some(at) if query.limit.is_none() => calls.text[..at].to_owned(),
        _ => calls.text,
    };
    Statement {
        text: STATS_SQL.replace("{calls}", &inner),
        params: calls.params,
    }
}

/// Counts per rule, action, approval, status, tool and anomaly over the
/// calls `query` selects in `log` or in every log.
pub fn stats(
    client: &mut Client,
    query: &AuditQuery,
    log: Option<&LogRef>,
) -> Result<Stats, ReadError> {
    let statement = stats_statement(query, log);
    let rows = client
        .query_raw(statement.text.as_str(), statement.params.values())
        .map_err(sql("counting calls"))?;
    use postgres::fallible_iterator::FallibleIterator as _;
    let rows: Vec<postgres::Row> = rows.collect().map_err(sql("counting calls"))?;
    let mut stats = Stats::default();
    for row in rows {
        let group: String = row.get(0);
        let key: Option<String> = row.get(1);
        let count = u64::try_from(row.get::<_, i64>(2)).unwrap_or_default();
        let key = key.unwrap_or_default();
        match group.as_str() {
            "calls" => stats.calls = count,
            "anomalous" => stats.anomalous_calls = count,
            "rule" => *stats.by_rule.entry(key).or_default() += count,
            "action" => *stats.by_action.entry(key).or_default() += count,
            "approval" => *stats.by_approval.entry(key).or_default() += count,
            "status" => *stats.by_status.entry(key).or_default() += count,
            "tool" => *stats.by_tool.entry(key).or_default() += count,
            _ => *stats.by_anomaly.entry(key).or_default() += count,
        }
    }
    Ok(stats)
}

/// Every log of the central store with its enrolled host, by host then origin.
pub fn logs(client: &mut impl GenericClient, host: Option<&str>) -> Result<Vec<LogRef>, ReadError> {
    let rows = client
        .query(
            "SELECT log_id, host, origin FROM logs WHERE $1::text IS NULL OR host = $1
              ORDER BY host, origin",
            &[&host],
        )
        .map_err(sql("listing logs"))?;
    Ok(rows
        .iter()
        .map(|r| LogRef {
            log_id: r.get(0),
            host: r.get(1),
            origin: r.get(2),
        })
        .collect())
}

/// The logs that hold call `call_id` (only `log`, when given).
pub fn logs_of_call(
    client: &mut impl GenericClient,
    call_id: &str,
    log: Option<&LogRef>,
) -> Result<LogRef, ReadError> {
    let log_id = log.map(|l| l.log_id.clone());
    let rows = client
        .query(
            "SELECT l.log_id, l.host, l.origin FROM logs l
              WHERE ($2::bytea IS NULL OR l.log_id = $2)
                AND EXISTS (SELECT 1 FROM events e WHERE e.log_id = l.log_id AND e.call_id = $1)
              ORDER BY l.host, l.origin",
            &[&call_id, &log_id],
        )
        .map_err(sql("finding the call"))?;
    let logs = log_refs(&rows);
    match logs.len() {
        0 => Err(ReadError::UnknownCall {
            call_id: call_id.to_owned(),
        }),
        1 => Ok(logs.into_iter().next().expect("one element, checked above")),
        count => Err(ReadError::AmbiguousCall {
            call_id: call_id.to_owned(),
            count,
            logs: first_logs(&logs),
        }),
    }
}

/// An in-memory copy of `log` (only the events of `call_id`, when given),
/// read in `snapshot` (see [`snapshot`]),
/// with its host checkpoints and every recorded policy text, for the
/// commands that run on a local store.
pub fn mirror(
    snapshot: &mut Transaction<'_>,
    log: &LogRef,
    call_id: Option<&str>,
) -> Result<Store, ReadError> {
    let row = snapshot
        .query_one(
            "SELECT origin, format, created_us, genesis FROM logs WHERE log_id = $1",
            &[&log.log_id],
        )
        .map_err(sql("reading a log"))?;
    let genesis: Vec<u8> = row.get(3);
    let identity = LogIdentity {
        log_id: log.log_id.clone(),
        origin: row.get(0),
        format: u32::try_from(row.get::<_, i32>(1)).unwrap_or(0),
        created_us: row.get(2),
        genesis: <[u8; 32]>::try_from(genesis.as_slice()).map_err(|_| ReadError::Damaged {
            detail: format!("the genesis of {} is not 32 bytes", log.origin),
        })?,
    };
    let rows = snapshot
        .query(
            "SELECT seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status,
                    payload, leaf, chain, \"user\", host, client, session, agent
               FROM events WHERE log_id = $1 AND ($2::text IS NULL OR call_id = $2) ORDER BY seq",
            &[&log.log_id, &call_id],
        )
        .map_err(sql("reading a log's events"))?;
    let events = rows
        .iter()
        .map(|r| -> Result<StoredEvent, postgres::Error> {
            Ok(StoredEvent {
                seq: u64::try_from(r.try_get::<_, i64>(0)?).unwrap_or_default(),
                log_id: r.try_get(1)?,
                ts_us: r.try_get(2)?,
                kind: r.try_get(3)?,
                call_id: r.try_get(4)?,
                tool: r.try_get(5)?,
                action: r.try_get(6)?,
                rule_id: r.try_get(7)?,
                approval: r.try_get(8)?,
                status: r.try_get(9)?,
                payload: r.try_get(10)?,
                leaf: r.try_get(11)?,
                chain: r.try_get(12)?,
                user: r.try_get(13)?,
                host: r.try_get(14)?,
                client: r.try_get(15)?,
                session: r.try_get(16)?,
                agent: r.try_get(17)?,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(sql("reading a log's events"))?;
    drop(rows);
    let checkpoints: Vec<crate::store::CheckpointCopy> = snapshot
        .query(
            "SELECT size, root, note, accepted_us FROM checkpoints WHERE log_id = $1 ORDER BY id",
            &[&log.log_id],
        )
        .map_err(sql("reading checkpoints"))?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    let policies: Vec<crate::store::PolicyRow> = snapshot
        .query(
            "SELECT digest, name, source, first_seen_us FROM policies ORDER BY digest",
            &[],
        )
        .map_err(sql("reading policies"))?
        .iter()
        .map(|r| crate::store::PolicyRow {
            digest: r.get(0),
            name: r.get(1),
            source: r.get(2),
            first_seen_us: r.get(3),
        })
        .collect();
    Ok(Store::mirror(&identity, events, &checkpoints, &policies)?)
}

/// The logs of rows `(log_id, host, origin)`.
fn log_refs(rows: &[postgres::Row]) -> Vec<LogRef> {
    rows.iter()
        .map(|r| LogRef {
            log_id: r.get(0),
            host: r.get(1),
            origin: r.get(2),
        })
        .collect()
}

/// The first few of `logs`, named for a message that asks to pick one.
fn first_logs(logs: &[LogRef]) -> String {
    logs.iter()
        .take(5)
        .map(|l| format!("{} of {}", l.origin, l.host))
        .collect::<Vec<_>>()
        .join(", ")
}
