//! The central store (issue 16), read side: `log`, `stats`, `show`,
//! `explain`, `replay`, `export`, `report` and `verify` with `--db
//! postgres://…`, and `gavel central retain`, against a real PostgreSQL
//! server. Same skip rule and per-test schema as `central.rs`.

use postgres::Client;
use serde_json::Value;

use crate::central::{
    Team, append_calls, expect, json_out, push_all, setup_hosts, team_with_calls,
};
use crate::support::{stderr, stdout};

impl Team {
    /// `gavel ARGS --db <central URL>`.
    fn read(&self, args: &[&str]) -> assert_cmd::Command {
        let mut cmd = self.gavel(args);
        cmd.args(["--db", &self.url]);
        cmd
    }

    /// `gavel verify --db <central URL> --json` and its report.
    fn verify(&self, exit: i32) -> Value {
        json_out(&expect(
            &mut self.read(&[
                "verify",
                "--public-key",
                &format!("{}.pub", self.central_key.display()),
                "--json",
            ]),
            exit,
        ))
    }

    /// The log id (hex) of host `i`'s log.
    fn log_of(&self, i: usize) -> String {
        let row = self
            .client()
            .query_one(
                "SELECT encode(log_id, 'hex') FROM logs WHERE host = $1",
                &[&self.hosts[i].name],
            )
            .unwrap();
        row.get(0)
    }
}

/// Runs `tamper` as the owner with the append-only triggers off, then
/// `verify`, then `undo`; returns the report.
fn tampered(team: &Team, tamper: &str, undo: &str) -> Value {
    let mut client: Client = team.client();
    let off = "SET session_replication_role = replica;";
    client.batch_execute(&format!("{off} {tamper}")).unwrap();
    let report = team.verify(1);
    client.batch_execute(&format!("{off} {undo}")).unwrap();
    report
}

/// What an owner could do past ingest: moves host `i`'s pushed rows from
/// its inbox into `events` and moves the log's head (size, chain, Merkle
/// frontier) over them exactly as ingest would, registering the log if it
/// is new, but records no host checkpoint; then empties the inbox.
fn smuggle(team: &Team, i: usize) {
    use gavel::central::{Head, ROW_COLUMNS, Row};
    let mut client: Client = team.client();
    let inbox = format!("\"{}_inbox\".\"{}", team.schema, team.hosts[i].name);
    let mut tx = client.transaction().unwrap();
    let ids: Vec<Vec<u8>> = tx
        .query(&format!("SELECT log_id FROM {inbox}_logs\""), &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    for log_id in ids {
        let stored = tx
            .query_opt(
                "SELECT size, chain, frontier, format FROM logs WHERE log_id = $1",
                &[&log_id],
            )
            .unwrap();
        let mut head = match stored {
            Some(r) => Head::from_stored(
                r.get(0),
                &r.get::<_, Vec<u8>>(1),
                &r.get::<_, Vec<u8>>(2),
                r.get(3),
                None,
                None,
            )
            .unwrap(),
            None => {
                tx.execute(
                    &format!(
                        "INSERT INTO logs (log_id, host, origin, format, created_us, genesis, size, chain, frontier)
                         SELECT log_id, $2, origin, format, created_us, genesis, 0, genesis, ''::bytea
                           FROM {inbox}_logs\" WHERE log_id = $1"
                    ),
                    &[&log_id, &team.hosts[i].name],
                )
                .unwrap();
                let r = tx
                    .query_one(
                        "SELECT genesis, format FROM logs WHERE log_id = $1",
                        &[&log_id],
                    )
                    .unwrap();
                let genesis: Vec<u8> = r.get(0);
                Head::new(
                    genesis.try_into().unwrap(),
                    u32::try_from(r.get::<_, i32>(1)).unwrap(),
                )
            }
        };
        let rows = tx
            .query(
                &format!(
                    "SELECT {ROW_COLUMNS} FROM {inbox}_events\" WHERE log_id = $1 AND seq > $2 ORDER BY seq"
                ),
                &[&log_id, &(head.size as i64)],
            )
            .unwrap();
        for row in &rows {
            head.extend(&log_id, &Row::from_pg(row).unwrap()).unwrap();
        }
        tx.execute(
            &format!(
                "INSERT INTO events ({ROW_COLUMNS}, part_us)
                 SELECT {ROW_COLUMNS}, (SELECT COALESCE(max(part_us), 0) FROM events)
                   FROM {inbox}_events\" WHERE log_id = $1 AND seq > (SELECT size FROM logs WHERE log_id = $1)"
            ),
            &[&log_id],
        )
        .unwrap();
        tx.execute(
            "UPDATE logs SET size = $2, chain = $3, frontier = $4 WHERE log_id = $1",
            &[
                &log_id,
                &(head.size as i64),
                &&head.chain[..],
                &head.frontier_bytes(),
            ],
        )
        .unwrap();
    }
    for table in ["events", "checkpoints", "logs"] {
        tx.batch_execute(&format!("DELETE FROM {inbox}_{table}\""))
            .unwrap();
    }
    tx.commit().unwrap();
}

fn local_stats(team: &Team, i: usize) -> Value {
    counts(json_out(&expect(
        &mut team.gavel(&[
            "stats",
            "--json",
            "--db",
            team.hosts[i].db.to_str().unwrap(),
        ]),
        0,
    )))
}

/// The counts of a `stats --json` object, which must say that what it
/// read verified (a local log's and a central store's stats both do).
fn counts(mut stats: Value) -> Value {
    assert_eq!(stats["verified"], true, "{stats}");
    stats.as_object_mut().unwrap().remove("verified");
    stats
}

/// Adds every count of `b` into `a` (two `stats --json` objects).
fn add_stats(a: &mut Value, b: &Value) {
    for (key, value) in b.as_object().unwrap() {
        match value {
            Value::Number(n) => {
                let sum = a[key].as_u64().unwrap_or(0) + n.as_u64().unwrap();
                a[key] = sum.into();
            }
            Value::Object(map) => {
                for (k, v) in map {
                    let sum = a[key][k].as_u64().unwrap_or(0) + v.as_u64().unwrap();
                    a[key][k] = sum.into();
                }
            }
            _ => {}
        }
    }
}

/// After any pushes: `verify --db` passes over every log, the central
/// stats of each host equals its local stats (except `differ`, hosts whose
/// local log no longer matches what was accepted), and the central stats of
/// all equals the sum of the central stats of each.
pub fn every_chain_verifies_and_stats_add_up(team: &Team, differ: &[usize]) {
    let report = team.verify(0);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["logs"], team.hosts.len());
    let central = counts(json_out(&expect(&mut team.read(&["stats", "--json"]), 0)));
    let mut sum = serde_json::json!({});
    for (i, host) in team.hosts.iter().enumerate() {
        let one = counts(json_out(&expect(
            &mut team.read(&["stats", "--json", "--host", &host.name]),
            0,
        )));
        if !differ.contains(&i) {
            assert_eq!(one, local_stats(team, i), "host {}", host.name);
        }
        add_stats(&mut sum, &one);
    }
    for key in ["by_anomaly"] {
        if sum.get(key).is_none() {
            sum[key] = serde_json::json!({});
        }
    }
    assert_eq!(central, sum);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn central_log_and_stats_span_hosts_and_name_where_each_row_comes_from() {
    let Some(team) = team_with_calls(3, 40) else {
        return;
    };
    // Every call of every host, each told by its enrolled host, log and seq.
    let rows: Vec<Value> = stdout(&expect(&mut team.read(&["log", "--json"]), 0))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 120);
    for (i, host) in team.hosts.iter().enumerate() {
        let mine: Vec<&Value> = rows
            .iter()
            .filter(|r| r["central"]["host"] == host.name.as_str())
            .collect();
        assert_eq!(mine.len(), 40, "host {}", host.name);
        assert!(mine.iter().all(|r| {
            r["central"]["log"]
                .as_str()
                .unwrap()
                .ends_with(&team.log_of(i))
        }));
    }
    // --host by enrolled name, --log by id prefix of the origin, --rule, --tail.
    let host1 = stdout(&expect(
        &mut team.read(&["log", "--json", "--host", &team.hosts[1].name]),
        0,
    ));
    assert_eq!(host1.lines().count(), 40);
    let prefix = format!("gavel/{}", &team.log_of(2)[..10]);
    let log2 = stdout(&expect(
        &mut team.read(&["log", "--json", "--log", &prefix]),
        0,
    ));
    assert_eq!(log2.lines().count(), 40);
    assert!(log2.lines().all(|l| l.contains(&team.hosts[2].name)));
    let denied = stdout(&expect(
        &mut team.read(&["log", "--json", "--rule", "bash.hard_deny"]),
        0,
    ));
    assert_eq!(denied.lines().count(), 30);
    let tail = stdout(&expect(
        &mut team.read(&["log", "--json", "--tail", "5"]),
        0,
    ));
    assert_eq!(tail.lines().count(), 5);
    // The table has a host column.
    let table = stdout(&expect(
        team.read(&["log", "--limit", "3"]).env("COLUMNS", "250"),
        0,
    ));
    assert!(table.contains("host"), "{table}");

    // Central stats is the sum of the hosts' local stats, and every chain verifies.
    let central = counts(json_out(&expect(&mut team.read(&["stats", "--json"]), 0)));
    let mut sum = local_stats(&team, 0);
    for i in 1..3 {
        add_stats(&mut sum, &local_stats(&team, i));
    }
    assert_eq!(central, sum);
    every_chain_verifies_and_stats_add_up(&team, &[]);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn show_explain_replay_export_and_report_read_the_central_store() {
    let Some(team) = team_with_calls(2, 12) else {
        return;
    };
    // Both hosts have a call `c0`..: ids are per log, so --log picks one.
    append_calls(&team.hosts[1].db, 0, 1);
    push_all(&team, 1..2);
    team.ingest(0);
    let err = stderr(&expect(&mut team.read(&["show", "c0"]), 2));
    assert!(err.contains("pick one with --log"), "{err}");
    let log0 = team.log_of(0);
    let shown = json_out(&expect(
        &mut team.read(&["show", "c0", "--log", &log0, "--json"]),
        0,
    ));
    assert_eq!(shown["central"]["host"], team.hosts[0].name.as_str());
    assert_eq!(shown["events"].as_array().unwrap().len(), 3);
    let explained = stdout(&expect(
        &mut team.read(&["explain", "c3", "--log", &log0]),
        0,
    ));
    assert!(explained.contains(&format!("from host `{}`", team.hosts[0].name)));
    assert!(explained.contains("bash.hard_deny"), "{explained}");
    let err = stderr(&expect(&mut team.read(&["show", "nope"]), 2));
    assert!(err.contains("no call `nope`"), "{err}");

    // Replay: every log, its drift told by host and log.
    let replay = json_out(&expect(
        &mut team.read(&["replay", "--json", "--fail-on", "never"]),
        0,
    ));
    let logs = replay["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 2);
    assert_eq!(logs[0]["host"], team.hosts[0].name.as_str());
    assert_eq!(logs[0]["total"], 12);
    assert_eq!(logs[1]["total"], 13);
    assert_eq!(replay["verified"], true);
    // For CI: a test case per call of every log, named by its host and log.
    let xml = stdout(&expect(
        &mut team.read(&["replay", "--format", "junit", "--fail-on", "never"]),
        0,
    ));
    assert_eq!(xml.matches("<testcase ").count(), 25, "{xml}");
    assert!(
        xml.contains(&format!("name=\"host `{}`, log ", team.hosts[1].name)),
        "{xml}"
    );
    let key = format!("{}.pub", team.central_key.display());
    let xml = stdout(&expect(
        &mut team.read(&["verify", "--public-key", &key, "--format", "junit"]),
        0,
    ));
    assert!(
        xml.contains("tests=\"1\" failures=\"0\"") && xml.contains("name=\"central store\""),
        "{xml}"
    );

    // Export one log: an archive `verify --export` checks with no database.
    let archive = team.dir.path().join("h1.jsonl");
    let out = expect(&mut team.read(&["export", "--log", &team.log_of(1)]), 0);
    std::fs::write(&archive, &out.stdout).unwrap();
    let verified = stdout(&expect(
        &mut team.gavel(&["verify", "--export", archive.to_str().unwrap()]),
        0,
    ));
    assert!(verified.starts_with("ok: 39 events"), "{verified}");
    // CSV across hosts: one header, every row.
    let csv = stdout(&expect(&mut team.read(&["export", "--format", "csv"]), 0));
    assert_eq!(csv.lines().count(), 1 + 36 + 39);

    // A report of several logs: a page per log beside FILE, FILE their index
    // (central_truth.rs tests it further); of one host's log: that page.
    let page = team.dir.path().join("r.html");
    let err = stderr(&expect(
        &mut team.read(&["report", "--html", page.to_str().unwrap()]),
        0,
    ));
    assert!(err.contains("the index of 2 logs' pages"), "{err}");
    expect(
        &mut team.read(&[
            "report",
            "--html",
            page.to_str().unwrap(),
            "--host",
            &team.hosts[0].name,
        ]),
        0,
    );
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .contains("bash.hard_deny")
    );
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn central_verify_names_host_log_and_seq_of_every_kind_of_tampering() {
    let Some(team) = team_with_calls(2, 20) else {
        return;
    };
    let intact = team.verify(0);
    assert_eq!(intact["ok"], true);
    assert_eq!(intact["logs"], 2);
    assert_eq!(intact["events"], 120);
    assert_eq!(intact["checkpoints"], 2);
    assert_eq!(intact["central_log"], 2);
    assert_eq!(intact["central_key_given"], true);
    let host = team.hosts[1].name.as_str();
    let log = format!("gavel/{}", team.log_of(1));
    let id = format!("decode('{}', 'hex')", team.log_of(1));

    // An edited payload.
    let report = tampered(
        &team,
        &format!(
            "UPDATE events SET payload = payload || ' '::bytea WHERE log_id = {id} AND seq = 7"
        ),
        &format!(
            "UPDATE events SET payload = substring(payload FROM 1 FOR length(payload) - 1) WHERE log_id = {id} AND seq = 7"
        ),
    );
    assert_eq!(report["problem"], "content_mismatch");
    assert_eq!(report["host"], host);
    assert_eq!(report["origin"], log.as_str());
    assert_eq!(report["first_bad_seq"], 7);

    // A deleted row (kept aside and put back).
    let report = tampered(
        &team,
        &format!(
            "CREATE TABLE aside AS SELECT * FROM events WHERE log_id = {id} AND seq = 11;
             DELETE FROM events WHERE log_id = {id} AND seq = 11;"
        ),
        "INSERT INTO events SELECT * FROM aside; DROP TABLE aside;",
    );
    assert_eq!(report["problem"], "seq_gap");
    assert_eq!(report["first_bad_seq"], 11);
    assert_eq!(report["host"], host);

    // The last row deleted: the head says more.
    let report = tampered(
        &team,
        &format!(
            "CREATE TABLE aside AS SELECT * FROM events WHERE log_id = {id} AND seq = 60;
             DELETE FROM events WHERE log_id = {id} AND seq = 60;"
        ),
        "INSERT INTO events SELECT * FROM aside; DROP TABLE aside;",
    );
    assert_eq!(report["problem"], "checkpoint_truncated");
    assert_eq!(report["first_bad_seq"], 60);

    // Two rows swapped (their contents trade seq).
    let swap = format!(
        "UPDATE events SET seq = CASE seq WHEN 4 THEN -5 ELSE -4 END WHERE log_id = {id} AND seq IN (4, 5);
         UPDATE events SET seq = -seq WHERE log_id = {id} AND seq < 0;"
    );
    let report = tampered(&team, &swap, &swap);
    assert_eq!(report["problem"], "content_mismatch");
    assert_eq!(report["first_bad_seq"], 4);

    // An edited host checkpoint note.
    let report = tampered(
        &team,
        &format!(
            "UPDATE checkpoints SET note = replace(note, E'\\n60\\n', E'\\n59\\n') WHERE log_id = {id}"
        ),
        &format!(
            "UPDATE checkpoints SET note = replace(note, E'\\n59\\n', E'\\n60\\n') WHERE log_id = {id}"
        ),
    );
    assert_eq!(report["problem"], "checkpoint_signature");
    assert_eq!(report["host"], host);

    // An edited central log row.
    let report = tampered(
        &team,
        "UPDATE central_log SET note = note || ' ' WHERE seq = 2",
        "UPDATE central_log SET note = substring(note FROM 1 FOR length(note) - 1) WHERE seq = 2",
    );
    assert_eq!(report["problem"], "content_mismatch");
    assert_eq!(report["first_bad_seq"], 2);
    assert!(
        report["origin"]
            .as_str()
            .unwrap()
            .starts_with("gavel-central/")
    );

    // Rows of a log no enrolled host has, spliced in.
    let report = tampered(
        &team,
        &format!(
            "CREATE TABLE aside AS SELECT * FROM events WHERE log_id = {id} AND seq = 3;
             UPDATE aside SET log_id = '\\x00'::bytea;
             INSERT INTO events SELECT * FROM aside;"
        ),
        "DELETE FROM events WHERE log_id = '\\x00'::bytea; DROP TABLE aside;",
    );
    assert_eq!(report["problem"], "unknown_log");
    assert_eq!(report["origin"], "gavel/00");

    // Another central key than the one the reviewer holds.
    expect(
        &mut team.gavel(&["keygen", "--out", "other.key", "--name", "other"]),
        0,
    );
    let report = json_out(&expect(
        &mut team.read(&["verify", "--public-key", "other.key.pub", "--json"]),
        1,
    ));
    assert_eq!(report["problem"], "central_key");

    // The human form names the break too, and everything is whole again.
    let report = team.verify(0);
    assert_eq!(report["ok"], true);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn retention_drops_old_partitions_and_verify_starts_at_the_cut() {
    let Some(team) = team_with_calls(2, 10) else {
        return;
    };
    // What was accepted so far is moved to a partition of an old month,
    // as if it had been accepted then.
    let mut client = team.client();
    client
        .batch_execute(
            "SET session_replication_role = replica;
             CREATE TABLE events_202001 PARTITION OF events
               FOR VALUES FROM (1577836800000000) TO (1580515200000000);
             UPDATE events SET part_us = 1577836800000001;",
        )
        .unwrap();
    // More calls, accepted now.
    for (i, host) in team.hosts.iter().enumerate() {
        append_calls(&host.db, 500 + i * 1000, 5);
    }
    push_all(&team, 0..2);
    team.ingest(0);
    let now = chrono::Utc::now().format("%Y-%m").to_string();
    let key = team.central_key.to_str().unwrap().to_owned();
    let out = json_out(&expect(
        &mut team.read(&[
            "central", "retain", "--before", &now, "--key", &key, "--json",
        ]),
        0,
    ));
    assert_eq!(out["partitions"], serde_json::json!(["events_202001"]));
    let cuts = out["cuts"].as_array().unwrap();
    assert_eq!(cuts.len(), 2);
    assert!(cuts.iter().all(|c| c["size"] == 30 && c["dropped"] == 30));
    let report = team.verify(0);
    assert_eq!(report["cut_logs"], 2);
    assert_eq!(report["events"], 30);
    // The listing holds what is left; a second run drops nothing.
    let rows = stdout(&expect(&mut team.read(&["log", "--json"]), 0));
    assert_eq!(rows.lines().count(), 10);
    let again = json_out(&expect(
        &mut team.read(&[
            "central", "retain", "--before", &now, "--key", &key, "--json",
        ]),
        0,
    ));
    assert_eq!(again["partitions"], serde_json::json!([]));
    // Pushing more after the cut still verifies from it.
    append_calls(&team.hosts[0].db, 900, 2);
    push_all(&team, 0..1);
    team.ingest(0);
    assert_eq!(team.verify(0)["events"], 36);

    // A forged cut is caught: the note no longer matches the stored chain.
    let report = tampered(
        &team,
        &format!(
            "UPDATE logs SET cut_chain = sha256(cut_chain) WHERE host = '{}'",
            team.hosts[1].name
        ),
        "SELECT 1",
    );
    assert_eq!(report["problem"], "cut");
    assert_eq!(report["host"], team.hosts[1].name.as_str());

    // A future month, a bad month and a wrong key are refused.
    for (before, key) in [("2999-01", key.as_str()), ("2020-13", key.as_str())] {
        let err = stderr(&expect(
            &mut team.read(&["central", "retain", "--before", before, "--key", key]),
            2,
        ));
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    expect(
        &mut team.gavel(&["keygen", "--out", "other.key", "--name", "other"]),
        0,
    );
    let err = stderr(&expect(
        &mut team.read(&["central", "retain", "--before", &now, "--key", "other.key"]),
        2,
    ));
    assert!(err.contains("is not the central key"), "{err}");
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn central_read_errors_are_one_line() {
    let Some(team) = team_with_calls(1, 2) else {
        return;
    };
    for args in [
        &["log", "--log", "gavel/ffff"][..],
        &["stats", "--log", "nothing"][..],
        &["verify", "--checkpoint", "x.note"][..],
    ] {
        let err = stderr(&expect(&mut team.read(args), 2));
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("gavel: "), "{err}");
    }
    // --log needs a central store.
    let err = stderr(&expect(
        &mut team.gavel(&[
            "log",
            "--log",
            "x",
            "--db",
            team.hosts[0].db.to_str().unwrap(),
        ]),
        2,
    ));
    assert!(
        err.contains("--log picks a log of a central store"),
        "{err}"
    );
    // A writing command refuses a central --db.
    let err = stderr(&expect(
        &mut team.read(&["run", "read_file", "{\"path\":\"x\"}"]),
        2,
    ));
    assert!(err.contains("reads a local audit database"), "{err}");
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn verify_refuses_rows_no_host_checkpoint_vouches_for() {
    let Some(team) = team_with_calls(2, 3) else {
        return;
    };
    assert_eq!(team.verify(0)["ok"], true);
    // The owner appends rows 10..=12 of host 0 and moves its head over them.
    append_calls(&team.hosts[0].db, 100, 1);
    push_all(&team, 0..1);
    smuggle(&team, 0);
    let report = team.verify(1);
    assert_eq!(report["problem"], "unvouched_rows", "{report}");
    assert_eq!(report["host"], team.hosts[0].name.as_str());
    assert_eq!(
        report["origin"],
        format!("gavel/{}", team.log_of(0)).as_str()
    );
    assert_eq!(report["first_bad_seq"], 10);

    // A log put in whole, with no host checkpoint at all.
    let team = setup_hosts(2).unwrap();
    append_calls(&team.hosts[0].db, 0, 3);
    append_calls(&team.hosts[1].db, 1000, 3);
    push_all(&team, 0..1);
    team.ingest(0);
    push_all(&team, 1..2);
    smuggle(&team, 1);
    let report = team.verify(1);
    assert_eq!(report["problem"], "unvouched_rows", "{report}");
    assert_eq!(report["host"], team.hosts[1].name.as_str());
    assert_eq!(
        report["origin"],
        format!("gavel/{}", team.log_of(1)).as_str()
    );
    assert_eq!(report["first_bad_seq"], 1);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn verify_during_an_ingest_is_never_tampered() {
    let Some(team) = team_with_calls(2, 50) else {
        return;
    };
    for round in 1..=4 {
        for i in 0..2 {
            append_calls(&team.hosts[i].db, round * 10_000 + i * 1000, 300);
        }
        push_all(&team, 0..2);
        // Ingest and verify at once: verify sees the store before or after
        // each batch, never half of one.
        let mut ingest = team.gavel(&[
            "central",
            "ingest",
            "--key",
            team.central_key.to_str().unwrap(),
            "--db",
            &team.url,
        ]);
        std::thread::scope(|s| {
            let ingesting = s.spawn(move || ingest.output().unwrap());
            for _ in 0..3 {
                let report = team.verify(0);
                assert_eq!(report["ok"], true, "round {round}: {report}");
            }
            let out = ingesting.join().unwrap();
            assert_eq!(crate::support::code(&out), 0, "{}", stderr(&out));
        });
    }
    let report = team.verify(0);
    assert_eq!(report["events"], 2 * 3 * (50 + 4 * 300));
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn a_payload_jsonb_refuses_does_not_break_listings_for_everyone() {
    let Some(team) = setup_hosts(2) else {
        return;
    };
    append_calls(&team.hosts[0].db, 0, 5);
    append_calls(&team.hosts[1].db, 1000, 5);
    // A `\u0000` escape: valid JSON, which PostgreSQL's jsonb refuses.
    gavel_run(&team, 1, "nul1", r#"{"path":"x\u0000y"}"#);
    push_all(&team, 0..2);
    team.ingest(0);
    let listed = |args: &[&str]| -> Vec<Value> {
        let mut all = vec!["log", "--json"];
        all.extend_from_slice(args);
        stdout(&expect(&mut team.read(&all), 0))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let has_nul = |rows: &[Value]| rows.iter().any(|r| r["call_id"] == "nul1");
    let all = listed(&[]);
    assert_eq!(all.len(), 11);
    assert!(has_nul(&all));
    let host1 = listed(&["--host", &team.hosts[1].name]);
    assert_eq!(host1.len(), 6);
    assert!(has_nul(&host1));
    assert_eq!(listed(&["--host", &team.hosts[0].name]).len(), 5);
    // Filters that read payloads as JSON run over every host's rows.
    assert_eq!(listed(&["--grep", "echo 3"]).len(), 1);
    assert_eq!(listed(&["--session", "none-such"]).len(), 0);
    assert_eq!(listed(&["--tool", "read_file"]).len(), 1);
    let stats = json_out(&expect(&mut team.read(&["stats", "--json"]), 0));
    assert_eq!(stats["calls"], 11, "{stats}");
    assert_eq!(stats["by_tool"]["read_file"], 1, "{stats}");
    let shown = stdout(&expect(&mut team.read(&["show", "nul1", "--json"]), 0));
    assert!(shown.contains("nul1"), "{shown}");
    assert_eq!(team.verify(0)["ok"], true);
}

/// `gavel run TOOL ARGS --call-id ID` on host `i`'s local log.
fn gavel_run(team: &Team, i: usize, id: &str, args: &str) {
    let out = team
        .gavel(&[
            "run",
            "read_file",
            args,
            "--call-id",
            id,
            "--db",
            team.hosts[i].db.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    // Denied (outside the workspace): exit 3, and recorded all the same.
    assert_eq!(crate::support::code(&out), 3, "gavel run: {}", stderr(&out));
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn retention_keeps_the_partitions_one_log_needs_and_drops_the_rest() {
    let Some(team) = team_with_calls(2, 10) else {
        return;
    };
    // Host 0's rows go to January 2020; host 1's seq 16..30 to February
    // 2020 while its seq 1..15 stay in this month's partition (accept times
    // that went backwards: cutting it at 30 would leave a hole).
    let id1 = format!("decode('{}', 'hex')", team.log_of(1));
    team.client()
        .batch_execute(&format!(
            "SET session_replication_role = replica;
             CREATE TABLE events_202001 PARTITION OF events
               FOR VALUES FROM (1577836800000000) TO (1580515200000000);
             CREATE TABLE events_202002 PARTITION OF events
               FOR VALUES FROM (1580515200000000) TO (1583020800000000);
             UPDATE events SET part_us = 1577836800000001 WHERE log_id <> {id1};
             UPDATE events SET part_us = 1580515200000001 WHERE log_id = {id1} AND seq > 15;"
        ))
        .unwrap();
    let now = chrono::Utc::now().format("%Y-%m").to_string();
    let key = team.central_key.to_str().unwrap().to_owned();
    let out = json_out(&expect(
        &mut team.read(&[
            "central", "retain", "--before", &now, "--key", &key, "--json",
        ]),
        1,
    ));
    assert_eq!(
        out["partitions"],
        serde_json::json!(["events_202001"]),
        "{out}"
    );
    assert_eq!(out["cuts"].as_array().unwrap().len(), 1, "{out}");
    assert_eq!(out["cuts"][0]["host"], team.hosts[0].name.as_str());
    assert_eq!(out["cuts"][0]["size"], 30);
    let held = out["held"].as_array().unwrap();
    assert_eq!(held.len(), 1, "{out}");
    assert_eq!(held[0]["host"], team.hosts[1].name.as_str());
    assert_eq!(
        held[0]["partition"],
        format!("events_{}", now.replace('-', "")).as_str()
    );
    let report = team.verify(0);
    assert_eq!(report["cut_logs"], 1, "{report}");
    assert_eq!(report["events"], 30);

    // A damaged genesis is refused by name, and nothing is dropped.
    team.client()
        .batch_execute(&format!(
            "SET session_replication_role = replica;
             UPDATE events SET part_us = 1580515200000001 WHERE log_id = {id1};
             UPDATE logs SET genesis = '\\x00'::bytea WHERE log_id = {id1};"
        ))
        .unwrap();
    let err = stderr(&expect(
        &mut team.read(&["central", "retain", "--before", &now, "--key", &key]),
        2,
    ));
    assert!(err.contains("damaged") && err.contains("genesis"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let partitions: i64 = team
        .client()
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename = 'events_202002' AND schemaname = $1",
            &[&team.schema],
        )
        .unwrap()
        .get(0);
    assert_eq!(partitions, 1, "nothing was dropped");
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn schema_selects_the_store_on_the_reading_commands_as_on_central() {
    let Some(team) = team_with_calls(1, 3) else {
        return;
    };
    // The server's URL without a search_path, and --schema: the same store.
    let read = |args: &[&str], exit: i32| {
        let mut cmd = team.gavel(args);
        cmd.args(["--db", &team.base, "--schema", &team.schema]);
        expect(&mut cmd, exit)
    };
    assert_eq!(stdout(&read(&["log", "--json"], 0)).lines().count(), 3);
    assert_eq!(json_out(&read(&["stats", "--json"], 0))["calls"], 3);
    assert_eq!(json_out(&read(&["verify", "--json"], 0))["ok"], true);
    assert!(stdout(&read(&["show", "c1", "--json"], 0)).contains("c1"));
    // --schema wins over the URL's search_path, as on `gavel central`.
    let mut cmd = team.gavel(&["stats", "--json", "--schema", "none_such"]);
    cmd.args(["--db", &team.url]);
    let err = stderr(&expect(&mut cmd, 2));
    assert!(err.contains("none_such"), "{err}");
    // A local store has no schema.
    let mut cmd = team.gavel(&["log", "--schema", "x"]);
    cmd.args(["--db", team.hosts[0].db.to_str().unwrap()]);
    let err = stderr(&expect(&mut cmd, 2));
    assert!(err.contains("--schema selects"), "{err}");
}

/// `replay --shadow NAME` on the central store reads the verdicts a host's
/// shadow policy recorded, as the host's own replay does.
#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn replay_shadow_reads_the_recorded_verdicts_on_the_central_store() {
    let Some(team) = setup_hosts(1) else {
        return;
    };
    let ws = team.dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let strict = team.dir.path().join("strict.toml");
    std::fs::write(
        &strict,
        "name = \"strict\"\n[[rules]]\nid = \"strict.no_shell\"\naction = \"deny\"\ntools = [\"bash\"]\nreason = \"no shell\"\n",
    )
    .unwrap();
    let session: String = (0..20)
        .map(|i| {
            let (name, input) = if i % 2 == 0 {
                ("bash", serde_json::json!({"command": "ls"}))
            } else {
                ("read_file", serde_json::json!({"path": "nope.txt"}))
            };
            serde_json::json!({"type": "tool_use", "id": format!("s{i}"), "name": name, "input": input})
                .to_string()
                + "\n"
        })
        .collect();
    let host = &team.hosts[0];
    let out = team
        .gavel(&["serve", "--stdio", "--durability", "normal"])
        .args([
            "--db",
            host.db.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
        ])
        .arg(format!("--shadow-policy={}", strict.display()))
        .write_stdin(session)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    push_all(&team, 0..1);
    team.ingest(0);

    let args = [
        "replay",
        "--shadow",
        "strict",
        "--json",
        "--fail-on",
        "never",
    ];
    let central = json_out(&expect(&mut team.read(&args), 0));
    let local = json_out(&expect(
        team.gavel(&args).args(["--db", host.db.to_str().unwrap()]),
        0,
    ));
    let log = &central["logs"][0];
    for key in ["total", "changed", "tightened", "loosened", "rerouted"] {
        assert_eq!(log[key], local[key], "{key}");
    }
    // `ls` asked, reads allowed: strict denies both.
    assert_eq!(log["total"], 20);
    assert_eq!(log["tightened"], 20);
}

/// An OCSF export carries the central store's cosignature of a checkpoint
/// it has (`<db>.cosigned`), and still verifies.
#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn an_ocsf_export_carries_the_central_cosignatures() {
    let Some(team) = team_with_calls(1, 5) else {
        return;
    };
    let host = &team.hosts[0];
    // The push after the ingest fetches the cosignature.
    push_all(&team, 0..1);
    let cosigned = std::fs::read_to_string(format!("{}.cosigned", host.db.display())).unwrap();
    assert!(!cosigned.trim().is_empty());
    let out = expect(
        &mut team.gavel(&[
            "export",
            "--format",
            "ocsf",
            "--db",
            host.db.to_str().unwrap(),
        ]),
        0,
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let cosigned_events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| {
            e["unmapped"]["gavel_checkpoints"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["cosignature"].is_string()))
        })
        .collect();
    assert!(!cosigned_events.is_empty(), "{text}");
    let signature = &cosigned_events[0]["attestation_list"][0]["signatures"][0];
    assert!(
        signature["algorithm"]
            .as_str()
            .unwrap()
            .contains("cosigned")
    );
    let path = team.dir.path().join("h0.ocsf.jsonl");
    std::fs::write(&path, &text).unwrap();
    expect(
        &mut team.gavel(&["verify", "--ocsf", path.to_str().unwrap()]),
        0,
    );
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn central_log_filters_mcp_servers_and_tools_as_the_local_log_does() {
    let Some(team) = crate::central::setup_hosts(1) else {
        return;
    };
    let db = team.hosts[0].db.to_str().unwrap().to_owned();
    for (id, tool) in [
        ("m1", "mcp__github__create_issue"),
        ("m2", "mcp__fs__read_file"),
        ("m3", "mcp__a_b__read_file"),
        ("m4", "read_file"),
    ] {
        let out = team
            .gavel(&["run", tool, "{}", "--reject", "--call-id", id, "--db", &db])
            .output()
            .unwrap();
        assert!(
            matches!(crate::support::code(&out), 0 | 1 | 3),
            "gavel run: {}",
            stderr(&out)
        );
    }
    push_all(&team, 0..1);
    team.ingest(0);
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["log", "--json"];
        all.extend(args);
        let out = expect(&mut team.read(&all), 0);
        crate::support::json_lines(&out)
            .iter()
            .map(|c| c["call_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&["--server", "fs"]), ["m2"]);
    assert_eq!(ids(&["--server", "a_b"]), ["m3"]);
    assert_eq!(ids(&["--mcp-tool", "read_file"]), ["m2", "m3"]);
    assert_eq!(
        ids(&["--server", "github", "--mcp-tool", "create_issue"]),
        ["m1"]
    );
    assert!(ids(&["--server", "read_file"]).is_empty());
    let logged = json_out(&expect(
        &mut team.read(&["log", "--json", "--call", "m1"]),
        0,
    ));
    assert_eq!(logged["mcp"]["server"], "github");
    let stats = json_out(&expect(
        &mut team.read(&["stats", "--json", "--mcp-tool", "read_file"]),
        0,
    ));
    assert_eq!(stats["calls"], 2, "{stats}");
}
