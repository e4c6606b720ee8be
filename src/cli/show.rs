//! `gavel show` (every event of a call, with hashes) and `gavel explain`
//! (why a call ended as it did, in plain words).

use clap::Args;
use serde_json::{Value, json};

use gavel::archive::format_time;
use gavel::digest::hex;
use gavel::source::{CallLog, CentralLog, Selection, Source};
use gavel::store::StoredEvent;

use super::{Exit, FormatArgs, Global, ReadArgs, SchemaArg, render, warn};

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The call id
    pub call_id: String,
    /// With a central --db (postgres://…): the log that holds the call, by
    /// its id (hex) or a prefix of its origin, when several logs have a call with this id
    #[arg(long, value_name = "ID|ORIGIN")]
    pub log: Option<String>,
    #[command(flatten)]
    pub schema: SchemaArg,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The call id
    pub call_id: String,
    /// With a central --db (postgres://…): the log that holds the call, by
    /// its id (hex) or a prefix of its origin, when several logs have a call with this id
    #[arg(long, value_name = "ID|ORIGIN")]
    pub log: Option<String>,
    #[command(flatten)]
    pub schema: SchemaArg,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

fn event_json(event: &StoredEvent) -> Value {
    json!({
        "seq": event.seq,
        "ts": format_time(event.ts_us),
        "kind": event.kind,
        "call_id": event.call_id,
        "tool": event.tool,
        "action": event.action,
        "rule_id": event.rule_id,
        "approval": event.approval,
        "status": event.status,
        "user": event.user,
        "host": event.host,
        "client": event.client,
        "session": event.session,
        "agent": event.agent,
        "payload": event.payload_json(),
        "leaf": hex(&event.leaf),
        "chain": hex(&event.chain),
    })
}

/// The first 8 bytes in hex; a damaged, shorter value is shown whole.
fn short_hex(bytes: &[u8]) -> String {
    hex(&bytes[..bytes.len().min(8)])
}

/// The source to read call `call_id` from: the local log, or a central
/// store (its log `--log` names, when several hold the call).
fn call_source(
    global: &Global,
    read: ReadArgs,
    log: Option<&str>,
    schema: &SchemaArg,
) -> anyhow::Result<Source> {
    let selection = Selection {
        log: log.map(str::to_owned),
        ..Selection::default()
    };
    global.source(schema, selection, read)
}

/// The call's log, its bounded check warned about on stderr.
fn call_log<'a>(source: &'a mut Source, call_id: &str) -> anyhow::Result<CallLog<'a>> {
    let log = source.call(call_id)?;
    if let Some(integrity) = &log.integrity {
        warn(integrity);
    }
    Ok(log)
}

/// Prints `value`, saying which enrolled host and log it comes from when central.
fn emit(mut value: Value, from: &Option<CentralLog>) -> anyhow::Result<()> {
    if let (Some(from), Some(object)) = (from, value.as_object_mut()) {
        object.insert(
            "central".into(),
            json!({ "host": from.host, "log": from.origin }),
        );
    }
    Ok(render::json(&value)?)
}

/// In a table: which enrolled host and log the call comes from, when central.
fn from_line(from: &Option<CentralLog>) -> anyhow::Result<()> {
    if let Some(from) = from {
        render::line(&render::escape(&format!(
            "from host `{}`, log {}",
            from.host, from.origin
        )))?;
    }
    Ok(())
}

pub fn show(global: &Global, args: ShowArgs) -> anyhow::Result<Exit> {
    let mut source = call_source(global, args.read, args.log.as_deref(), &args.schema)?;
    let log = call_log(&mut source, &args.call_id)?;
    let (store, from, integrity) = (log.store(), &log.from, log.integrity.clone());
    let events = store.call_events(&args.call_id)?;
    store.check_unchanged()?;
    if args.format.is_json() {
        emit(
            json!({
                "call_id": args.call_id,
                "events": events
                    .iter()
                    .map(|e| {
                        let mut value = event_json(e);
                        if let (Some(integrity), Some(object)) =
                            (&integrity, value.as_object_mut())
                        {
                            object.insert("verified".into(), json!(!integrity.unverified(e.seq)));
                        }
                        value
                    })
                    .collect::<Vec<_>>(),
            }),
            from,
        )?;
        return Ok(Exit::Ok);
    }
    from_line(from)?;
    render::table_dropping(
        &["seq", "time", "kind", "payload", "leaf", "chain"],
        events.iter().map(|e| {
            let mark = if integrity.as_ref().is_some_and(|i| i.unverified(e.seq)) {
                " !!"
            } else {
                ""
            };
            [
                format!("{}{mark}", e.seq),
                format_time(e.ts_us),
                e.kind.clone(),
                render::cell(&String::from_utf8_lossy(&e.payload), 70),
                short_hex(&e.leaf),
                short_hex(&e.chain),
            ]
        }),
        // Narrow: the leaf hash, then the time go first; the chain hash stays.
        &[4, 1],
    )?;
    if let Some(integrity) = integrity.filter(|i| events.iter().any(|e| i.unverified(e.seq))) {
        render::line(&format!(
            "!! rows marked `!!` are past the first row that does not verify ({}): they may have been edited",
            render::escape(&integrity.text)
        ))?;
    }
    Ok(Exit::Ok)
}

pub fn explain(global: &Global, args: ExplainArgs) -> anyhow::Result<Exit> {
    let mut source = call_source(global, args.read, args.log.as_deref(), &args.schema)?;
    let log = call_log(&mut source, &args.call_id)?;
    let explained = gavel::explain::explain(log.store(), &args.call_id, log.integrity.as_ref())?;
    if args.format.is_json() {
        emit(explained.json, &log.from)?;
    } else {
        from_line(&log.from)?;
        render::text(&explained.lines)?;
    }
    Ok(Exit::Ok)
}
