//! The central store's ingest rate against a raw `COPY` of the same rows,
//! measured in the same run on the same server (docs/performance.md).
//!
//! Setup (untimed): `--hosts` local logs of `--calls` calls each (request,
//! decision, result), written through gavel's library; a fresh schema per
//! run with `central init` and the hosts enrolled, through the library. A
//! first untimed push signs each log's checkpoint, as any first push does.
//!
//! Timed, per run, in a fresh schema:
//! - gavel: every host's `gavel push` at once (one process each), then one
//!   `gavel central ingest`: rows verified (leaf, chain, Merkle root against
//!   the signed checkpoint) and moved into the partitioned, indexed `events`;
//! - raw (e): the same rows read from the same SQLite files and sent with
//!   binary `COPY` into `raw_events`, an unindexed, unpartitioned copy of
//!   `events` (`CREATE TABLE … (LIKE events)`), one connection per host at once;
//! - raw (i): the same, into the same indexed, partitioned `events` table of
//!   another fresh central store (its month partition made first): what
//!   accepting the rows without any verification costs.
//!
//! Prints one JSON object: rows, median seconds and rows/s of each, ratios.
//!
//! usage: central --url postgres://… --gavel PATH [--hosts 4] [--calls 25000] [--runs 3]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use gavel::audit::{
    DecisionRecord, Event, EventBody, ExecutionStatus, RequestRecord, ResultRecord,
};
use gavel::central::Central;
use gavel::checkpoint::{SigningKey, write_keypair};
use gavel::store::{Durability, Store};
use gavel::{Facts, ToolResult};
use gavel_bench::{flag, required};
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls};

const USAGE: &str =
    "central --url postgres://… --gavel PATH [--hosts 4] [--calls 25000] [--runs 3]";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let url = required(&args, "--url", USAGE);
    let gavel = PathBuf::from(required(&args, "--gavel", USAGE));
    let hosts: usize = flag(&args, "--hosts").map_or(Ok(4), |s| s.parse())?;
    let calls: usize = flag(&args, "--calls").map_or(Ok(25_000), |s| s.parse())?;
    let runs: usize = flag(&args, "--runs").map_or(Ok(3), |s| s.parse())?;

    let dir = tempfile_dir()?;
    let central_key = SigningKey::generate("central.bench")?;
    let mut keys = Vec::new();
    let mut dbs = Vec::new();
    for i in 0..hosts {
        let key = SigningKey::generate(&format!("h{i}.bench"))?;
        let path = dir.join(format!("h{i}.key"));
        write_keypair(&path, &key)?;
        keys.push((key, path));
        let db = dir.join(format!("h{i}.db"));
        append_calls(&db, calls)?;
        dbs.push(db);
    }
    let rows: u64 = dbs.iter().map(|db| count(db)).sum::<Result<u64, _>>()?;

    let mut gavel_times = Vec::new();
    let mut raw_times = Vec::new();
    let mut indexed_times = Vec::new();
    for run in 0..=runs {
        let schema = format!("bench_central_{}_{run}", std::process::id());
        let mut central = Central::connect(&url, Some(&schema))?;
        central.init(&central_key)?;
        let mut roles = Vec::new();
        for (i, (key, _)) in keys.iter().enumerate() {
            let role = format!("{schema}_h{i}");
            central.enroll(&format!("h{i}"), &key.verifier(), Some(&role), false)?;
            roles.push(role);
        }
        let owner = with_schema(&url, &schema);
        let started = Instant::now();
        std::thread::scope(|s| -> Result<(), String> {
            let pushes: Vec<_> = (0..hosts)
                .map(|i| {
                    let mut cmd = Command::new(&gavel);
                    cmd.args(["push", "--to", &as_role(&url, &roles[i]), "--key"])
                        .arg(&keys[i].1)
                        .arg("--db")
                        .arg(&dbs[i]);
                    s.spawn(move || run_ok(&mut cmd))
                })
                .collect();
            for push in pushes {
                push.join().map_err(|_| "a push thread panicked")??;
            }
            Ok(())
        })?;
        let push_s = started.elapsed().as_secs_f64();
        let key_path = dir.join("central.key");
        if !key_path.exists() {
            write_keypair(&key_path, &central_key)?;
        }
        run_ok(
            Command::new(&gavel)
                .args(["central", "ingest", "--key"])
                .arg(&key_path)
                .args(["--db", &owner]),
        )?;
        let gavel_s = started.elapsed().as_secs_f64();
        let accepted: i64 = central
            .client()
            .query_one("SELECT count(*) FROM events", &[])?
            .get(0);
        assert_eq!(accepted as u64, rows, "every row accepted");

        central
            .client()
            .batch_execute("CREATE TABLE raw_events (LIKE events)")?;
        let started = Instant::now();
        std::thread::scope(|s| -> Result<(), String> {
            let copies: Vec<_> = dbs
                .iter()
                .map(|db| {
                    let owner = owner.clone();
                    s.spawn(move || raw_copy(&owner, db, "raw_events").map_err(|e| e.to_string()))
                })
                .collect();
            for copy in copies {
                copy.join().map_err(|_| "a copy thread panicked")??;
            }
            Ok(())
        })?;
        let raw_s = started.elapsed().as_secs_f64();

        // (i): into the same indexed, partitioned events, of another store.
        let raw_schema = format!("{schema}_raw");
        let mut raw_store = Central::connect(&url, Some(&raw_schema))?;
        raw_store.init(&central_key)?;
        gavel::central::ingest::ensure_partition(&mut raw_store, gavel_bench::rows::now_us())?;
        let raw_owner = with_schema(&url, &raw_schema);
        let started = Instant::now();
        std::thread::scope(|s| -> Result<(), String> {
            let copies: Vec<_> = dbs
                .iter()
                .map(|db| {
                    let owner = raw_owner.clone();
                    s.spawn(move || raw_copy(&owner, db, "events").map_err(|e| e.to_string()))
                })
                .collect();
            for copy in copies {
                copy.join().map_err(|_| "a copy thread panicked")??;
            }
            Ok(())
        })?;
        let indexed_s = started.elapsed().as_secs_f64();
        drop(raw_store);
        if run > 0 {
            gavel_times.push(gavel_s);
            raw_times.push(raw_s);
            indexed_times.push(indexed_s);
        }
        eprintln!(
            "run {run}{}: gavel {gavel_s:.2} s (push {push_s:.2} s), raw COPY unindexed {raw_s:.2} s, into indexed events {indexed_s:.2} s",
            if run == 0 { " (warm-up)" } else { "" }
        );
        drop(central);
        let mut admin = Client::connect(&url, NoTls)?;
        admin.batch_execute(&format!(
            "DROP SCHEMA \"{schema}\" CASCADE; DROP SCHEMA \"{schema}_inbox\" CASCADE;
             DROP SCHEMA \"{schema}_raw\" CASCADE;"
        ))?;
        for role in &roles {
            admin.batch_execute(&format!("DROP OWNED BY \"{role}\"; DROP ROLE \"{role}\";"))?;
        }
    }
    let gavel_s = median(&mut gavel_times);
    let raw_s = median(&mut raw_times);
    let indexed_s = median(&mut indexed_times);
    let gavel_rate = rows as f64 / gavel_s;
    let raw_rate = rows as f64 / raw_s;
    let indexed_rate = rows as f64 / indexed_s;
    println!(
        "{}",
        serde_json::json!({
            "hosts": hosts,
            "rows": rows,
            "runs": runs,
            "gavel_push_ingest_s": gavel_s,
            "gavel_rows_per_s": gavel_rate,
            "raw_copy_s": raw_s,
            "raw_rows_per_s": raw_rate,
            "ratio": gavel_rate / raw_rate,
            "indexed_copy_s": indexed_s,
            "indexed_rows_per_s": indexed_rate,
            "ratio_indexed": gavel_rate / indexed_rate,
        })
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

fn tempfile_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("gavel-bench-central-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn run_ok(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn with_schema(base: &str, schema: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options=-csearch_path%3D{schema}")
}

/// `postgres://USER@rest` as `postgres://ROLE@rest` (no password).
fn as_role(base: &str, role: &str) -> String {
    let (scheme, rest) = base.split_once("://").unwrap_or(("postgres", base));
    let rest = rest.split_once('@').map_or(rest, |(_, r)| r);
    format!("{scheme}://{role}@{rest}")
}

fn count(db: &Path) -> rusqlite::Result<u64> {
    rusqlite::Connection::open(db)?.query_row("SELECT count(*) FROM events", [], |r| r.get(0))
}

/// A baseline: every row of `db`, sent with binary COPY into `table`.
fn raw_copy(url: &str, db: &Path, table: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut client = Client::connect(url, NoTls)?;
    let conn = rusqlite::Connection::open(db)?;
    let mut statement = conn.prepare(
        "SELECT log_id, seq, ts_us, kind, call_id, tool, action, rule_id, approval, status,
                user, host, client, session, agent, payload, leaf, chain FROM events ORDER BY seq",
    )?;
    let mut rows = statement.query([])?;
    let sink = client.copy_in(&format!(
        "COPY {table} ({}, part_us) FROM STDIN (FORMAT binary)",
        gavel::central::ROW_COLUMNS
    ))?;
    let mut types = vec![Type::BYTEA, Type::INT8, Type::INT8];
    types.extend(std::iter::repeat_n(Type::TEXT, 12));
    types.extend([Type::BYTEA, Type::BYTEA, Type::BYTEA, Type::INT8]);
    let mut writer = BinaryCopyInWriter::new(sink, &types);
    let part_us = gavel_bench::rows::now_us();
    while let Some(row) = rows.next()? {
        let log_id: Vec<u8> = row.get(0)?;
        let seq: i64 = row.get(1)?;
        let ts: i64 = row.get(2)?;
        let text: Vec<Option<String>> = (3..15).map(|i| row.get(i)).collect::<Result<_, _>>()?;
        let blobs: Vec<Vec<u8>> = (15..18).map(|i| row.get(i)).collect::<Result<_, _>>()?;
        let mut values: Vec<&(dyn ToSql + Sync)> = vec![&log_id, &seq, &ts];
        values.extend(text.iter().map(|t| t as &(dyn ToSql + Sync)));
        values.extend(blobs.iter().map(|b| b as &(dyn ToSql + Sync)));
        values.push(&part_us);
        writer.write(&values)?;
    }
    writer.finish()?;
    Ok(())
}

/// `n` calls (request, decision, result) appended through the library.
fn append_calls(db: &Path, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut store = Store::open(db, Durability::Normal)?;
    let policy = gavel::policy::Policy::builtin().reference().clone();
    let mut batch = Vec::with_capacity(3000);
    for i in 0..n {
        let id = format!("c{i}");
        let deny = i % 4 == 3;
        batch.push(Event::now(
            &id,
            Some("bash"),
            EventBody::Request(RequestRecord {
                tool_use_id: id.clone(),
                arguments: serde_json::json!({"command": format!("cat src/file{i}.rs | grep -n fn")}),
                client: None,
                arguments_bytes: None,
                arguments_sha256: None,
                principal: None,
            }),
        ));
        batch.push(Event::now(
            &id,
            Some("bash"),
            EventBody::Decision(DecisionRecord {
                action: if deny {
                    gavel::Action::Deny
                } else {
                    gavel::Action::Allow
                },
                rule_id: if deny {
                    "bash.hard_deny".into()
                } else {
                    "bash.read_only".into()
                },
                reason: "bench".into(),
                policy: policy.clone(),
                facts: Facts {
                    workspace: "/ws".into(),
                    paths: vec![],
                    shell: None,
                    shell_sha256: None,
                    unprovable: vec![],
                    mcp: None,
                },
                layer: None,
                layers: Vec::new(),
                shadow: Vec::new(),
                sandbox: None,
                labels: Vec::new(),
                after: None,
                approvers: None,
                history_through: None,
            }),
        ));
        batch.push(Event::now(
            &id,
            Some("bash"),
            EventBody::Result(ResultRecord::from_result(&ToolResult {
                status: if deny {
                    ExecutionStatus::Blocked
                } else {
                    ExecutionStatus::Succeeded
                },
                content: "fn main() {}\n".repeat(8),
                exit_code: Some(0),
                duration_ms: 3,
            })),
        ));
        if batch.len() >= 3000 {
            store.append(&batch)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        store.append(&batch)?;
    }
    Ok(())
}
