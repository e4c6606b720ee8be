//! `gavel push --otlp URL`: the log's calls as OpenTelemetry traces, sent
//! to an OTLP/HTTP endpoint (protobuf), each completed call once.
//!
//! What was sent is remembered beside the database (`DB.otlp-<tag>`): the
//! seq through which every call that completed was sent, written after the
//! endpoint accepted a batch. A push starts after it, so nothing is sent
//! twice; a push that dies between the endpoint's answer and that write
//! sends the batch again, with the same trace and span ids (derived from
//! the log and the call), which a collector takes as the same spans. A
//! call is sent once its result is recorded.

use std::time::Duration;

use serde_json::json;

use gavel::otlp::{Spans, record_sent, sent_through, state_path, to_protobuf};

use super::{Exit, FormatArgs, Global, render};

/// Spans per request.
const BATCH: usize = 512;

pub fn run(
    global: &Global,
    url: &str,
    headers: &[String],
    every: Option<u64>,
    format: &FormatArgs,
) -> anyhow::Result<Exit> {
    let endpoint = if url.trim_end_matches('/').ends_with("/v1/traces") {
        url.to_owned()
    } else {
        format!("{}/v1/traces", url.trim_end_matches('/'))
    };
    let headers = headers
        .iter()
        .map(|h| {
            h.split_once('=')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .ok_or_else(|| anyhow::anyhow!("--otlp-header `{h}` is not NAME=VALUE"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let Some(every) = every else {
        return once(global, &endpoint, &headers, format);
    };
    loop {
        if let Err(err) = once(global, &endpoint, &headers, format) {
            eprintln!("gavel: push failed: {}", super::one_line(&err));
        }
        std::thread::sleep(Duration::from_secs(every));
    }
}

fn once(
    global: &Global,
    endpoint: &str,
    headers: &[(String, String)],
    format: &FormatArgs,
) -> anyhow::Result<Exit> {
    let db = global.db_path()?;
    if !db.exists() {
        anyhow::bail!("no audit database at `{}`: nothing to push", db.display());
    }
    let store = global.read_store()?;
    let state = state_path(&db, endpoint);
    let from = sent_through(&state)?;
    let mut spans = Spans::new();
    let mut due = Vec::new();
    store.for_each_event(|event| -> anyhow::Result<()> {
        if let Some(span) = spans.push(&event)
            && span.completed_at > from
        {
            due.push(span);
        }
        Ok(())
    })?;
    store.check_unchanged()?;
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .http_status_as_error(false)
            .build(),
    );
    let mut sent = 0usize;
    let mut through = from;
    for batch in due.chunks(BATCH) {
        let mut request = agent
            .post(endpoint)
            .header("Content-Type", "application/x-protobuf");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = request
            .send(&to_protobuf(batch)[..])
            .map_err(|e| anyhow::anyhow!("cannot reach `{endpoint}`: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            anyhow::bail!(
                "`{endpoint}` answered {status} after {sent} spans were sent; the rest are sent at the next push"
            );
        }
        through = batch
            .iter()
            .map(|s| s.completed_at)
            .max()
            .unwrap_or(through);
        record_sent(&state, endpoint, through)?;
        sent += batch.len();
    }
    if format.is_json() {
        render::json(&json!({"endpoint": endpoint, "sent": sent, "through": through}))?;
    } else {
        render::line(&format!(
            "pushed {sent} span(s) to {endpoint}; every call completed through seq {through} has been sent"
        ))?;
    }
    Ok(Exit::Ok)
}
