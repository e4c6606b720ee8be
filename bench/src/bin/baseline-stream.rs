//! Baseline (b), the floor of streamed recording: the rows of a gavel log
//! (read into memory first, untimed) inserted into a fresh database with the
//! same schema, WAL and `synchronous = NORMAL`, each row hashed and chained
//! with SHA-256, each call's rows (a run of rows with one `call_id`) in a
//! transaction of their own: a governed call must be on disk before it
//! runs, so calls are never batched. `--batch N` puts N calls in each
//! transaction instead (the floor of a recorder allowed to batch).
//!
//! usage: baseline-stream --source GAVEL_DB --out NEW_DB [--events N] [--batch CALLS]

use std::path::PathBuf;
use std::time::Instant;

use gavel_bench::rows::{self, Row};
use gavel_bench::{flag, required};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

const USAGE: &str = "baseline-stream --source GAVEL_DB --out NEW_DB [--events N] [--batch CALLS]";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let source = PathBuf::from(required(&args, "--source", USAGE));
    let out = PathBuf::from(required(&args, "--out", USAGE));
    let limit: i64 = flag(&args, "--events").map_or(Ok(i64::MAX), |s| s.parse())?;
    let batch: usize = flag(&args, "--batch").map_or(Ok(1), |s| s.parse())?;
    if batch == 0 {
        return Err("--batch must be at least 1".into());
    }

    let rows: Vec<Row> = {
        let conn = Connection::open_with_flags(&source, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let mut statement = conn.prepare(&format!(
            "SELECT {} FROM events ORDER BY seq LIMIT ?1",
            rows::COLUMNS
        ))?;
        statement
            .query_map([limit], Row::from_sql)?
            .collect::<rusqlite::Result<_>>()?
    };

    let started = Instant::now();
    let mut conn = Connection::open(&out)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    rows::create_table(&conn, "events")?;
    let mut previous = [0u8; 32];
    for chunk in calls(&rows, batch) {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut insert = tx.prepare_cached(&rows::insert_sql("events"))?;
            for row in chunk {
                previous = row.insert(&mut insert, &previous)?;
            }
        }
        tx.commit()?;
    }
    drop(conn);
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{{\"events\":{},\"seconds\":{seconds},\"events_per_s\":{}}}",
        rows.len(),
        rows.len() as f64 / seconds
    );
    Ok(())
}

/// `rows` cut into runs of `calls` calls each (a call: consecutive rows
/// with one `call_id`).
fn calls(rows: &[Row], calls: usize) -> impl Iterator<Item = &[Row]> {
    let mut rest = rows;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = 0;
        for _ in 0..calls {
            let Some(first) = rest.get(end) else { break };
            end += rest[end..]
                .iter()
                .take_while(|row| row.call_id == first.call_id)
                .count();
        }
        let (chunk, tail) = rest.split_at(end);
        rest = tail;
        Some(chunk)
    })
}
