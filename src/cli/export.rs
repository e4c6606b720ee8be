//! `gavel export`: every event with its hashes, as JSON lines or CSV.

use clap::{Args, ValueEnum};

use gavel::digest::hex;
use gavel::policy::cases::PolicyCase;
use gavel::store::StoredEvent;

use super::query::{QueryArgs, format_time};
use super::{Exit, Global, render};

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Jsonl,
    Csv,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Output format
    #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
    pub format: ExportFormat,
    /// Write recorded requests with their facts and decisions as `gavel policy test` cases (JSON lines)
    #[arg(long)]
    pub requests: bool,
    /// Which calls to export with --requests
    #[command(flatten)]
    pub query: QueryArgs,
}

const CSV_HEADER: &str =
    "seq,ts,ts_us,kind,call_id,tool,action,rule_id,approval,status,payload,log_id,leaf,chain";

/// One CSV field. A field a spreadsheet would run as a formula (`=`, `+`,
/// `-`, `@` first) is quoted with a leading `'`; the other columns (hashes,
/// `ts_us`) still let anyone recompute every hash from the export.
fn csv_field(text: &str) -> String {
    let guarded;
    let text = if text.starts_with(['=', '+', '-', '@']) {
        guarded = format!("'{text}");
        &guarded
    } else {
        text
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

fn csv_row(e: &StoredEvent) -> String {
    let opt = |v: &Option<String>| csv_field(v.as_deref().unwrap_or(""));
    [
        e.seq.to_string(),
        format_time(e.ts_us),
        e.ts_us.to_string(),
        csv_field(&e.kind),
        csv_field(&e.call_id),
        opt(&e.tool),
        opt(&e.action),
        opt(&e.rule_id),
        opt(&e.approval),
        opt(&e.status),
        csv_field(&String::from_utf8_lossy(&e.payload)),
        hex(&e.log_id),
        hex(&e.leaf),
        hex(&e.chain),
    ]
    .join(",")
}

pub fn run(global: &Global, args: ExportArgs) -> anyhow::Result<Exit> {
    let store = global.read_store()?;
    if args.requests {
        store.for_each_call(&args.query.to_query()?, |call| -> anyhow::Result<()> {
            let case = PolicyCase {
                name: None,
                call_id: Some(call.call_id),
                tool: call.tool,
                arguments: call.request.arguments,
                facts: Some(call.decision.facts),
                action: call.decision.action,
                rule_id: Some(call.decision.rule_id),
                reason: Some(call.decision.reason),
            };
            Ok(render::json(&serde_json::to_value(&case)?)?)
        })?;
        return Ok(Exit::Ok);
    }
    if args.format == ExportFormat::Csv {
        render::line(CSV_HEADER)?;
    }
    store.for_each_event(|event| -> anyhow::Result<()> {
        match args.format {
            ExportFormat::Csv => render::line(&csv_row(&event))?,
            ExportFormat::Jsonl => render::json(&serde_json::json!({
                "seq": event.seq,
                "ts": format_time(event.ts_us),
                "ts_us": event.ts_us,
                "kind": event.kind,
                "call_id": event.call_id,
                "tool": event.tool,
                "action": event.action,
                "rule_id": event.rule_id,
                "approval": event.approval,
                "status": event.status,
                "payload": event.payload_json(),
                "log_id": hex(&event.log_id),
                "leaf": hex(&event.leaf),
                "chain": hex(&event.chain),
            }))?,
        }
        Ok(())
    })?;
    Ok(Exit::Ok)
}
