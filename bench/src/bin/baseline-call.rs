//! Baseline (a), the floor of one governed call: start a process, open the
//! same database gavel writes (WAL, the same `synchronous`), insert three
//! rows equivalent to an allowed `read_file` (request, decision, result) in
//! one transaction, exit. The rows go to a table of their own
//! (`floor_events`, same columns and indexes as `events`) so gavel's chain
//! is untouched.
//!
//! usage: baseline-call --db FILE [--durability full|normal] [--init]

use std::path::PathBuf;
use std::time::Duration;

use gavel_bench::rows::{self, Row};
use gavel_bench::{flag, required};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use serde_json::json;

const USAGE: &str = "baseline-call --db FILE [--durability full|normal] [--init]";
const TABLE: &str = "floor_events";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let db = PathBuf::from(required(&args, "--db", USAGE));
    let sync = match flag(&args, "--durability").as_deref() {
        None | Some("full") => "FULL",
        Some("normal") => "NORMAL",
        Some(other) => return Err(format!("unknown durability `{other}`").into()),
    };
    let mut conn = Connection::open_with_flags(
        &db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(30))?;
    if args.iter().any(|a| a == "--init") {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        rows::create_table(&conn, TABLE)?;
        return Ok(());
    }
    conn.pragma_update(None, "synchronous", sync)?;

    let call_id = format!("call_{:x}_{:x}", rows::now_us(), std::process::id());
    let log_id = vec![7u8; 16];
    let content = "// a.txt: a line of plausible source text for the benchmark\n".repeat(2);
    let request = json!({"tool_use_id": call_id, "arguments": {"path": "a.txt"}});
    let decision = json!({
        "action": "allow", "rule_id": "path.read_allow",
        "reason": "read_file only reads inside the workspace",
        "policy": {"name": "gavel-default", "digest": "0".repeat(64)},
        "facts": {"workspace": "/tmp/bench/ws", "paths": [{
            "requested": "a.txt", "resolved": "/tmp/bench/ws/a.txt", "inside": true, "relative": "a.txt"}]},
    });
    let result = json!({"status": "succeeded", "content": content, "duration_ms": 0});

    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let head: Option<(u64, Vec<u8>)> = tx
        .prepare_cached(&format!(
            "SELECT seq, chain FROM {TABLE} ORDER BY seq DESC LIMIT 1"
        ))?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let (mut seq, mut previous) = match head {
        Some((seq, chain)) => (seq, chain.try_into().unwrap_or([0u8; 32])),
        None => (0, [0u8; 32]),
    };
    {
        let mut insert = tx.prepare_cached(&rows::insert_sql(TABLE))?;
        let parts = [
            ("request", None, None, request),
            ("decision", Some("allow"), Some("path.read_allow"), decision),
            ("result", None, None, result),
        ];
        for (kind, action, rule_id, payload) in parts {
            seq += 1;
            let row = Row {
                seq,
                log_id: log_id.clone(),
                ts_us: rows::now_us(),
                kind: kind.into(),
                call_id: call_id.clone(),
                tool: Some("read_file".into()),
                action: action.map(str::to_owned),
                rule_id: rule_id.map(str::to_owned),
                approval: None,
                status: (kind == "result").then(|| "succeeded".to_owned()),
                payload: serde_json::to_vec(&payload)?,
            };
            previous = row.insert(&mut insert, &previous)?;
        }
    }
    tx.commit()?;
    println!("{{\"seq\":{seq}}}");
    Ok(())
}
