//! Baseline (c), the floor of verify and replay: a plain ordered scan of the
//! events table of a gavel log, re-hashing every row (SHA-256 over every
//! field, length-prefixed, and a SHA-256 link) on one core.
//!
//! usage: baseline-scan --db FILE

use std::path::PathBuf;
use std::time::Instant;

use gavel_bench::required;
use gavel_bench::rows::{Fields, leaf, link};
use rusqlite::{Connection, OpenFlags};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let db = PathBuf::from(required(&args, "--db", "baseline-scan --db FILE"));
    let started = Instant::now();
    let conn = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut statement = conn.prepare(
        "SELECT seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval,
                status, payload, leaf, chain
         FROM events ORDER BY seq",
    )?;
    let mut cursor = statement.query([])?;
    let mut previous = [0u8; 32];
    let mut rows: u64 = 0;
    let mut stored_bytes: u64 = 0;
    while let Some(row) = cursor.next()? {
        let fields = Fields {
            seq: row.get(0)?,
            log_id: row.get_ref(1)?.as_blob()?,
            ts_us: row.get(2)?,
            kind: row.get_ref(3)?.as_bytes()?,
            call_id: row.get_ref(4)?.as_bytes()?,
            optional: [
                row.get_ref(5)?.as_bytes_or_null()?,
                row.get_ref(6)?.as_bytes_or_null()?,
                row.get_ref(7)?.as_bytes_or_null()?,
                row.get_ref(8)?.as_bytes_or_null()?,
                row.get_ref(9)?.as_bytes_or_null()?,
            ],
            payload: row.get_ref(10)?.as_blob()?,
        };
        previous = link(&previous, &leaf(&fields));
        stored_bytes +=
            (row.get_ref(11)?.as_blob()?.len() + row.get_ref(12)?.as_blob()?.len()) as u64;
        rows += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{{\"events\":{rows},\"seconds\":{seconds},\"events_per_s\":{},\"head_byte\":{},\"hash_bytes\":{stored_bytes}}}",
        rows as f64 / seconds,
        previous[0]
    );
    Ok(())
}
