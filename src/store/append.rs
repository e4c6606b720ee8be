//! Appending events: read the chain head and insert in one `BEGIN
//! IMMEDIATE` transaction, so concurrent writers queue up instead of forking
//! the chain, and a batch lands whole or not at all.

use rusqlite::{Connection, OptionalExtension, params};

use super::{Durability, Store, StoreError, StoredEvent, set_synchronous, sql};
use crate::audit::{ApprovalRecord, AuditError, AuditSink, Event, EventBody, Factor, FormatRecord};
use crate::chain::{EventFields, FORMAT_CALL_ID, FORMAT_KIND, FORMAT_VERSION, Hash, Who, link};

/// The typed columns of an event, taken from its body.
struct Columns<'a> {
    action: Option<&'a str>,
    rule_id: Option<&'a str>,
    approval: Option<&'a str>,
    status: Option<&'a str>,
}

fn columns(body: &EventBody) -> Columns<'_> {
    let mut columns = Columns {
        action: None,
        rule_id: None,
        approval: None,
        status: None,
    };
    match body {
        EventBody::Decision(d) => {
            columns.action = Some(d.action.as_str());
            columns.rule_id = Some(&d.rule_id);
        }
        EventBody::Approval(a) => columns.approval = Some(a.status.as_str()),
        EventBody::Result(r) => columns.status = Some(r.status.as_str()),
        EventBody::Request(_)
        | EventBody::Lifecycle(_)
        | EventBody::Anomaly(_)
        | EventBody::Format(_)
        | EventBody::Grant(_)
        | EventBody::Revocation(_)
        | EventBody::Refused(_)
        | EventBody::Enrolment(_) => {}
    }
    columns
}

impl Store {
    /// After a commit: keeps the leaves for the next checkpoint and counts
    /// the commit for the WAL checkpoints.
    fn committed(&mut self, seq: u64, leaves: Vec<Hash>) {
        self.appended.record(seq, leaves);
        if let Some(checkpointer) = &mut self.checkpointer {
            checkpointer.committed();
        }
    }

    /// Appends `events` in order, atomically; returns the seq of the last.
    ///
    /// Under `Durability::Full`, a batch of results alone is not synced on
    /// its own: nothing waits on it, and the next commit or the close syncs
    /// it. Everything that must be on disk before a call runs is synced.
    pub fn append(&mut self, events: &[Event]) -> Result<u64, StoreError> {
        let full = self.durability == Some(Durability::Full);
        let relax = full
            && events
                .iter()
                .all(|e| matches!(e.body, EventBody::Result(_)));
        if relax != self.relaxed {
            set_synchronous(
                &self.conn,
                if relax {
                    Durability::Normal
                } else {
                    Durability::Full
                },
            )?;
            self.relaxed = relax;
        }
        let appended = self.append_now(events);
        if relax {
            // Back to syncing now, or at the next write-ahead append if this
            // fails: the batch is committed either way, and reporting an
            // error here would make a caller write it again.
            if set_synchronous(&self.conn, Durability::Full).is_ok() {
                self.relaxed = false;
            }
        }
        appended
    }

    fn append_now(&mut self, events: &[Event]) -> Result<u64, StoreError> {
        let tx = Immediate::begin(&self.conn).map_err(sql("starting an append"))?;
        let mut leaves = Vec::new();
        let seq = insert_all(
            &tx,
            &self.identity,
            &self.path,
            self.redactor.as_ref(),
            &mut self.secrets,
            events,
            &mut leaves,
        )?;
        tx.commit().map_err(sql("committing an append"))?;
        self.committed(seq, leaves);
        Ok(seq)
    }

    /// Reads the events of `call_id` and appends what `build` makes of them,
    /// in one `BEGIN IMMEDIATE` transaction: no other writer can add to the
    /// call in between (two reports of one call cannot both complete it).
    pub fn append_for_call(
        &mut self,
        call_id: &str,
        build: impl FnOnce(&[StoredEvent]) -> Vec<Event>,
    ) -> Result<u64, StoreError> {
        let tx = Immediate::begin(&self.conn).map_err(sql("starting an append"))?;
        let existing = {
            let text = format!(
                "SELECT {} FROM events WHERE call_id = ?1 ORDER BY seq",
                StoredEvent::COLUMNS
            );
            let mut statement = tx
                .prepare_cached(&text)
                .map_err(sql("preparing a lookup"))?;
            statement
                .query_map([call_id], StoredEvent::from_row)
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(sql("reading a call's events"))?
        };
        let mut leaves = Vec::new();
        let seq = insert_all(
            &tx,
            &self.identity,
            &self.path,
            self.redactor.as_ref(),
            &mut self.secrets,
            &build(&existing),
            &mut leaves,
        )?;
        tx.commit().map_err(sql("committing an append"))?;
        self.committed(seq, leaves);
        Ok(seq)
    }
}

/// A `BEGIN IMMEDIATE` transaction, begun and committed through cached
/// statements (a `rusqlite::Transaction` parses both anew on every
/// append); rolled back when dropped uncommitted.
struct Immediate<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> Immediate<'c> {
    fn begin(conn: &'c Connection) -> rusqlite::Result<Self> {
        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        Ok(Self { conn, open: true })
    }

    fn commit(mut self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("COMMIT")?.execute([])?;
        self.open = false;
        Ok(())
    }
}

impl std::ops::Deref for Immediate<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Immediate<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

/// A client's call, for matching a completion that carries no call id:
/// the recorded requests whose `client` block has this client, session,
/// tool and input digest.
#[derive(Debug, Clone, Copy)]
pub struct ClientKey<'a> {
    pub client: &'a str,
    pub session_id: &'a str,
    pub tool: &'a str,
    pub input_sha256: &'a str,
}

impl Store {
    /// Reads every call recorded under `key` (oldest first, each with its
    /// events) and appends what `build` makes of them, in one `BEGIN
    /// IMMEDIATE` transaction: two completions cannot both claim one call.
    pub fn append_for_client_calls(
        &mut self,
        key: ClientKey<'_>,
        build: impl FnOnce(&[(String, Vec<StoredEvent>)]) -> Vec<Event>,
    ) -> Result<u64, StoreError> {
        let tx = Immediate::begin(&self.conn).map_err(sql("starting an append"))?;
        let calls = {
            let mut ids = tx
                .prepare_cached(
                    "SELECT call_id FROM events
                     WHERE kind = 'request' AND json_valid(CAST(payload AS TEXT))
                       AND json_extract(CAST(payload AS TEXT), '$.client.client') = ?1
                       AND json_extract(CAST(payload AS TEXT), '$.client.session_id') = ?2
                       AND json_extract(CAST(payload AS TEXT), '$.client.tool') = ?3
                       AND json_extract(CAST(payload AS TEXT), '$.client.input_sha256') = ?4
                     ORDER BY seq",
                )
                .map_err(sql("preparing a lookup"))?;
            let ids: Vec<String> = ids
                .query_map(
                    params![key.client, key.session_id, key.tool, key.input_sha256],
                    |row| row.get(0),
                )
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(sql("finding a client's calls"))?;
            let text = format!(
                "SELECT {} FROM events WHERE call_id = ?1 ORDER BY seq",
                StoredEvent::COLUMNS
            );
            let mut events = tx
                .prepare_cached(&text)
                .map_err(sql("preparing a lookup"))?;
            let mut calls = Vec::with_capacity(ids.len());
            for id in ids {
                let found = events
                    .query_map([&id], StoredEvent::from_row)
                    .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                    .map_err(sql("reading a call's events"))?;
                calls.push((id, found));
            }
            calls
        };
        let mut leaves = Vec::new();
        let seq = insert_all(
            &tx,
            &self.identity,
            &self.path,
            self.redactor.as_ref(),
            &mut self.secrets,
            &build(&calls),
            &mut leaves,
        )?;
        tx.commit().map_err(sql("committing an append"))?;
        self.committed(seq, leaves);
        Ok(seq)
    }
}

/// Chains and inserts `events` after the current head, inside `tx`.
fn insert_all(
    tx: &Connection,
    identity: &super::LogIdentity,
    path: &std::path::Path,
    redactor: Option<&crate::redact::Redactor>,
    secrets: &mut super::RecentSecrets,
    events: &[Event],
    leaves: &mut Vec<Hash>,
) -> Result<u64, StoreError> {
    let log_id = &identity.log_id;
    let head: Option<(u64, Vec<u8>)> = tx
        .prepare_cached("SELECT seq, chain FROM events ORDER BY seq DESC LIMIT 1")
        .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .map_err(sql("reading the chain head"))?;
    let (mut seq, mut previous): (u64, Hash) = match head {
        None => (0, identity.genesis),
        Some((seq, chain)) => {
            let chain = chain.try_into().map_err(|_| StoreError::Damaged {
                path: path.display().to_string(),
                detail: format!("the chain value of seq {seq} is not 32 bytes"),
            })?;
            (seq, chain)
        }
    };
    // A log of an older format is continued in this one: the first append
    // records the switch as a chained row, in the old format, before the
    // batch (docs/record-format.md, "Format 2").
    let mut format = identity.format;
    let switch;
    let mut events = events;
    if format < FORMAT_VERSION {
        if switched_at(tx)?.is_some() {
            format = FORMAT_VERSION;
        } else {
            let mut with_switch = vec![Event::now(
                FORMAT_CALL_ID,
                None,
                EventBody::Format(FormatRecord {
                    format: FORMAT_VERSION,
                    previous: format,
                    gavel: env!("CARGO_PKG_VERSION").to_owned(),
                }),
            )];
            with_switch.extend_from_slice(events);
            switch = with_switch;
            events = &switch;
        }
    }
    {
        let mut exists = tx
            .prepare_cached("SELECT 1 FROM events WHERE call_id = ?1 AND kind = 'request'")
            .map_err(sql("preparing a lookup"))?;
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO events (seq, log_id, ts_us, kind, call_id, tool, action, rule_id,
                                     approval, status, payload, leaf, chain,
                                     user, host, client, session, agent)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,
                         ?14, ?15, ?16, ?17, ?18)",
            )
            .map_err(sql("preparing an insert"))?;
        // Secrets are taken out before hashing: what is stored and chained
        // is the redacted payload (docs/record-format.md, "Redaction").
        let mut redacted = redact_batch(tx, redactor, secrets, events)?.into_iter();
        for event in events {
            if matches!(event.body, EventBody::Request(_))
                && exists
                    .exists([&event.call_id])
                    .map_err(sql("looking up a call"))?
            {
                return Err(StoreError::DuplicateCall {
                    call_id: event.call_id.clone(),
                });
            }
            seq += 1;
            // Format 1 has no provenance columns: they stay NULL there.
            let principal = event.principal.as_deref().filter(|_| format >= 2);
            let who = Who {
                user: principal.map(|p| p.user.as_str()),
                host: principal.map(|p| p.host.as_str()),
                client: principal.map(|p| p.client.as_str()),
                session: principal.and_then(|p| p.session.as_deref()),
                agent: principal.and_then(|p| p.agent_id.as_deref()),
            };
            let payload = match redacted.next().flatten() {
                Some(payload) => payload,
                None => event.body.to_json(),
            };
            let typed = columns(&event.body);
            let fields = EventFields {
                seq,
                log_id,
                ts_us: event.ts_us,
                kind: event.body.kind(),
                call_id: &event.call_id,
                tool: event.tool.as_deref(),
                action: typed.action,
                rule_id: typed.rule_id,
                approval: typed.approval,
                status: typed.status,
                payload: &payload,
                format,
                who,
            };
            let leaf = fields.leaf_hash();
            previous = link(&previous, &leaf);
            leaves.push(leaf);
            if let EventBody::Format(switch) = &event.body {
                format = switch.format;
            }
            insert
                .execute(params![
                    seq,
                    log_id,
                    fields.ts_us,
                    fields.kind,
                    fields.call_id,
                    fields.tool,
                    fields.action,
                    fields.rule_id,
                    fields.approval,
                    fields.status,
                    &payload,
                    &leaf[..],
                    &previous[..],
                    who.user,
                    who.host,
                    who.client,
                    who.session,
                    who.agent
                ])
                .map_err(sql("appending an event"))?;
            if let EventBody::Approval(ApprovalRecord {
                factor: Some(Factor::Totp),
                step: Some(step),
                approver: Some(name),
                ..
            }) = &event.body
            {
                // The TOTP steps approvers used (migration 0008): one use each.
                let used = tx
                    .prepare_cached(super::queue::TOTP_STEP_USED)
                    .and_then(|mut s| s.exists(params![name, step]))
                    .map_err(sql("looking up a code"))?;
                if used {
                    return Err(StoreError::CodeReused {
                        name: name.clone(),
                        step: *step,
                    });
                }
                tx.prepare_cached("INSERT INTO totp_steps (name, step, seq) VALUES (?1, ?2, ?3)")
                    .and_then(|mut s| s.execute(params![name, step, seq]))
                    .map_err(sql("appending a used code"))?;
            }
            if let (EventBody::Decision(decision), Some(session)) = (&event.body, who.session)
                && decision.action != crate::policy::Action::Deny
            {
                // What flow rules read (migration 0007).
                for label in &decision.labels {
                    tx.prepare_cached(
                        "INSERT OR IGNORE INTO session_labels (session, label, seq, call_id)
                         VALUES (?1, ?2, ?3, ?4)",
                    )
                    .and_then(|mut s| s.execute(params![session, label, seq, event.call_id]))
                    .map_err(sql("appending a session label"))?;
                }
            }
        }
    }
    Ok(seq)
}

/// The seq of the row that switched the log's format, if one did (the
/// first `format` row: a later one would be a tampering `verify` reports).
pub(super) fn switched_at(conn: &rusqlite::Connection) -> Result<Option<u64>, StoreError> {
    // The first row of kind `format`, whatever its call id says
    // (docs/record-format.md, "Format 2"); only format-1 logs ask.
    conn.prepare_cached("SELECT min(seq) FROM events WHERE kind = ?1")
        .and_then(|mut s| s.query_row([FORMAT_KIND], |r| r.get(0)))
        .map_err(sql("looking up a format switch"))
}

/// The stored payload of each event of a batch, redacted; `None` where it
/// is stored as serialized (no redactor, or a tool the policy keeps whole).
fn redact_batch(
    tx: &Connection,
    redactor: Option<&crate::redact::Redactor>,
    secrets: &mut super::RecentSecrets,
    events: &[Event],
) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
    let Some(redactor) = redactor.filter(|r| !r.settings().disabled) else {
        return Ok(vec![None; events.len()]);
    };
    let settings = redactor.settings();
    let by_path = if settings.keeps_any_path() {
        calls_kept_by_path(tx, settings, events)?
    } else {
        Default::default()
    };
    let kept: Vec<bool> = events
        .iter()
        .map(|e| settings.keeps(e.tool.as_deref()) || by_path.contains(e.call_id.as_str()))
        .collect();
    let payloads = events
        .iter()
        .zip(&kept)
        .map(|(e, kept)| (!kept).then(|| e.body.to_json()))
        .collect();
    // Secrets found earlier in this process for these calls (a result
    // quoting a command in another form than its request) are taken out too.
    let calls: Vec<&str> = events.iter().map(|e| e.call_id.as_str()).collect();
    let mut found = secrets.take(&calls);
    let redacted = redactor.redact_batch(payloads, &mut found);
    secrets.keep(&calls, found);
    Ok(redacted
        .into_iter()
        .zip(kept)
        .zip(events)
        .map(|(((payload, _), kept), event)| {
            (!kept).then(|| match event.body.key_material() {
                Some(field) => with_field_of(payload, field, &event.body),
                None => payload,
            })
        })
        .collect())
}

/// `redacted` with its `field` as `body` has it: key material is kept
/// exact, whatever redaction took out of the rest of the payload.
fn with_field_of(redacted: Vec<u8>, field: &str, body: &crate::audit::EventBody) -> Vec<u8> {
    let original: Option<serde_json::Value> = serde_json::from_slice(&body.to_json()).ok();
    let mut value: serde_json::Map<String, serde_json::Value> =
        match serde_json::from_slice(&redacted) {
            Ok(value) => value,
            Err(_) => return redacted,
        };
    match original.as_ref().and_then(|o| o.get(field)) {
        Some(exact) if value.get(field) != Some(exact) => {
            value.insert(field.to_owned(), exact.clone());
            serde_json::to_vec(&value).unwrap_or(redacted)
        }
        _ => redacted,
    }
}

/// The calls of `events` on a file whose path the policy keeps whole
/// (`[redact] keep_paths`): the path a request names (`path`, `file_path`,
/// `notebook_path`), as given or relative to the workspace (its decision's
/// facts). A call whose request is not in the batch (its result, an
/// approval, a hook's completion) is judged by its stored request.
fn calls_kept_by_path<'e>(
    tx: &Connection,
    settings: &crate::redact::Settings,
    events: &'e [Event],
) -> Result<std::collections::HashSet<&'e str>, StoreError> {
    use std::collections::{HashMap, HashSet};
    let mut candidates: HashMap<&str, Vec<String>> = HashMap::new();
    for event in events {
        if let EventBody::Request(r) = &event.body {
            candidates
                .entry(&event.call_id)
                .or_default()
                .extend(path_arguments(&r.arguments));
        }
    }
    for event in events {
        if let EventBody::Decision(d) = &event.body
            && let Some(paths) = candidates.get_mut(event.call_id.as_str())
        {
            let relative: Vec<String> = d
                .facts
                .paths
                .iter()
                .filter(|p| paths.contains(&p.requested))
                .filter_map(|p| p.relative.clone())
                .collect();
            paths.extend(relative);
        }
    }
    let mut kept = HashSet::new();
    for event in events {
        let call = event.call_id.as_str();
        if kept.contains(call) {
            continue;
        }
        if !candidates.contains_key(call) {
            let stored = stored_paths(tx, call)?;
            candidates.insert(call, stored);
        }
        if candidates[call].iter().any(|p| settings.keeps_path(p)) {
            kept.insert(call);
        }
    }
    Ok(kept)
}

/// The file paths a request's arguments name.
fn path_arguments(arguments: &serde_json::Value) -> Vec<String> {
    ["path", "file_path", "notebook_path"]
        .iter()
        .filter_map(|key| arguments.get(key)?.as_str().map(str::to_owned))
        .collect()
}

/// The paths of a stored call: its request's path arguments, and their
/// workspace-relative forms from its decision.
fn stored_paths(tx: &Connection, call_id: &str) -> Result<Vec<String>, StoreError> {
    let mut statement = tx
        .prepare_cached(
            "SELECT kind, payload FROM events WHERE call_id = ?1
             AND kind IN ('request', 'decision') ORDER BY seq LIMIT 2",
        )
        .map_err(sql("preparing a lookup"))?;
    let rows: Vec<(String, Vec<u8>)> = statement
        .query_map([call_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .map_err(sql("reading a call's request"))?;
    let mut paths = Vec::new();
    for (kind, payload) in &rows {
        match EventBody::from_json(kind, payload) {
            Ok(EventBody::Request(r)) => paths.extend(path_arguments(&r.arguments)),
            Ok(EventBody::Decision(d)) => paths.extend(
                d.facts
                    .paths
                    .iter()
                    .filter(|p| paths.contains(&p.requested))
                    .filter_map(|p| p.relative.clone())
                    .collect::<Vec<_>>(),
            ),
            _ => {}
        }
    }
    Ok(paths)
}

impl Store {
    /// Whether the log has recorded the policy with this digest.
    pub fn knows_policy(&self, digest: &str) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached("SELECT 1 FROM policies WHERE digest = ?1")
            .and_then(|mut s| s.exists([digest]))
            .map_err(sql("looking up the policy"))
    }

    /// Keeps the text of `policy` and of the layers above it (once per
    /// digest), so `explain` and replay can show exactly what decided a
    /// recorded call.
    pub fn remember_policy(&mut self, policy: &crate::policy::Policy) -> Result<(), StoreError> {
        for layer in policy.layers() {
            self.remember_policy(&layer.policy)?;
        }
        for shadow in policy.shadows() {
            self.remember_policy(&shadow.policy)?;
        }
        let reference = policy.reference();
        // A read first: most runs find the policy known and need no write lock.
        let known = self
            .conn
            .prepare_cached("SELECT 1 FROM policies WHERE digest = ?1")
            .and_then(|mut s| s.exists([&reference.digest]))
            .map_err(sql("looking up the policy"))?;
        if known {
            return Ok(());
        }
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO policies (digest, name, source, first_seen_us)
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    reference.digest,
                    reference.name,
                    policy.source(),
                    chrono::Utc::now().timestamp_micros()
                ])
            })
            .map_err(sql("remembering the policy"))?;
        Ok(())
    }
}

impl AuditSink for Store {
    fn append(&mut self, events: &[Event]) -> Result<(), AuditError> {
        Store::append(self, events)
            .map(|_| ())
            .map_err(|e| AuditError(Box::new(e)))
    }

    fn session_history(
        &mut self,
        session: &str,
        labels: &[String],
    ) -> Result<Option<(u64, crate::policy::History)>, AuditError> {
        Store::session_history(self, session, labels)
            .map(Some)
            .map_err(|e| AuditError(Box::new(e)))
    }
}
