//! `gavel export`: every event with its hashes, as JSON lines or CSV, or
//! the events of the calls a filter selects. The JSON-lines form carries the
//! stored bytes exactly (`gavel::archive`), so `gavel verify --export`
//! checks it with no database.

use clap::{Args, ValueEnum};
use serde_json::{Map, Value};

use gavel::export::{Export, Format, Line};

use super::{Exit, Global, QueryArgs, render};

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Jsonl,
    Csv,
    /// OCSF 1.9 events, one per row, each carrying its row (docs/siem.md)
    Ocsf,
    /// OpenTelemetry traces as one OTLP/JSON request: an `execute_tool` span per call
    #[value(name = "otlp-json")]
    OtlpJson,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Output format
    #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
    pub format: ExportFormat,
    /// Write recorded requests with their facts and decisions as `gavel policy test` cases (JSON lines)
    #[arg(long)]
    pub requests: bool,
    /// Which calls to export: only their events (a filtered export is not a
    /// whole chain; its events verify one by one)
    #[command(flatten)]
    pub query: QueryArgs,
}

/// The filters given, as the export header records them; `None` when there are none.
fn selection(query: &QueryArgs) -> anyhow::Result<Option<Value>> {
    let resolved = query.to_query()?;
    let mut out = Map::new();
    for (name, value) in query.given() {
        if let Some(value) = value {
            out.insert(name.replace('-', "_"), value.clone().into());
        }
    }
    if let Some(limit) = query.limit {
        out.insert("limit".into(), limit.into());
    }
    if let Some(since) = resolved.since {
        out.insert("since_us".into(), since.into());
    }
    if let Some(until) = resolved.until {
        out.insert("until_us".into(), until.into());
    }
    Ok((!out.is_empty()).then_some(Value::Object(out)))
}

pub fn run(global: &Global, args: ExportArgs) -> anyhow::Result<Exit> {
    let mut source = global.source(&args.query.schema, args.query.selection(), args.query.read)?;
    if let Some(integrity) = source.opened() {
        super::warn(integrity);
    }
    source
        .reading()?
        .for_each_log(&args.query.to_query()?, |log| {
            let export = Export {
                format: match args.format {
                    ExportFormat::Jsonl => Format::Jsonl,
                    ExportFormat::Csv => Format::Csv,
                    ExportFormat::Ocsf => Format::Ocsf,
                    ExportFormat::OtlpJson => Format::OtlpJson,
                },
                requests: args.requests,
                query: log.query,
                selection: selection(&args.query)?,
                first: log.index == 0,
            };
            // A bar on stderr when it is a terminal and the log is long, as `verify` shows.
            let bar = render::progress_bar(log.store, "exporting")?;
            let mut progress = |done| {
                if let Some(bar) = &bar {
                    bar.set_position(done);
                }
            };
            gavel::export::export(log.store, &export, &mut progress, &mut |line| {
                match line {
                    Line::Json(value) => render::json(&value),
                    Line::Text(text) => render::line(&text),
                }
                .map_err(anyhow::Error::from)
            })?;
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            Ok::<_, anyhow::Error>(())
        })?;
    Ok(Exit::Ok)
}
