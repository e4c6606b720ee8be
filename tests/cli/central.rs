//! The central store (issue 16), write side: `gavel central init|enroll`,
//! `gavel push`, `gavel central ingest` against a real PostgreSQL server.
//!
//! `GAVEL_TEST_POSTGRES` names the server (CI:
//! `postgres://postgres@127.0.0.1:5432/test`); without it every test here
//! prints "skipped: GAVEL_TEST_POSTGRES is not set" and passes, unless
//! `GAVEL_REQUIRE_POSTGRES=1`, when it fails. Each test works in a fresh
//! schema (and inbox schema) with a random name and roles with a random
//! suffix, and drops them all at the end, so tests run in parallel.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU64, Ordering};

use gavel::chain::{EventFields, Who, link};
use postgres::{Client, NoTls};
use rusqlite::Connection;
use serde_json::Value;

pub use crate::support::append_calls;
use crate::support::{code, stderr, stdout};

/// The PostgreSQL server under test, or `None` (the test is skipped).
pub fn server() -> Option<String> {
    match std::env::var("GAVEL_TEST_POSTGRES") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("GAVEL_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                "GAVEL_REQUIRE_POSTGRES=1 but GAVEL_TEST_POSTGRES is not set"
            );
            println!("skipped: GAVEL_TEST_POSTGRES is not set");
            None
        }
    }
}

/// A name nobody else uses: pid, time and a counter.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{prefix}{:x}{:x}{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// `base` with `?options=-csearch_path=SCHEMA` added.
pub fn with_schema(base: &str, schema: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options=-csearch_path%3D{schema}")
}

/// One enrolled host: its name, role, key, local database and push URL.
pub struct Host {
    pub name: String,
    pub role: String,
    pub key: PathBuf,
    pub db: PathBuf,
    pub url: String,
}

/// A central store in a fresh schema with a central key, and its hosts;
/// dropped (schemas and roles) with the value.
pub struct Team {
    pub dir: tempfile::TempDir,
    /// The server's URL as given.
    pub base: String,
    /// The owner's URL, selecting the schema.
    pub url: String,
    pub schema: String,
    pub central_key: PathBuf,
    pub hosts: Vec<Host>,
}

/// `gavel ARGS` with a clean environment in `dir`.
pub fn gavel(dir: &Path, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_gavel"));
    cmd.env_remove("GAVEL_DB")
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_PUSH_URL")
        .env_remove("GAVEL_PUSH_KEY")
        .env_remove("GAVEL_CENTRAL_KEY")
        .current_dir(dir)
        .args(args);
    cmd
}

/// Runs `cmd`, insisting on `expected`; returns the output.
pub fn expect(cmd: &mut assert_cmd::Command, expected: i32) -> Output {
    let output = cmd.output().expect("run gavel");
    assert_eq!(
        code(&output),
        expected,
        "unexpected exit\nstdout: {}\nstderr: {}",
        stdout(&output),
        stderr(&output)
    );
    output
}

/// stdout as one JSON value.
pub fn json_out(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(output)))
}

/// Makes a central store (`gavel central init`) and enrolls `n` hosts
/// `h0`..`h{n-1}` (`gavel keygen`, `gavel central enroll --role`), each with
/// an empty local database path. `None` when no server is configured.
pub fn setup_hosts(n: usize) -> Option<Team> {
    let base = server()?;
    let dir = tempfile::tempdir().unwrap();
    let schema = unique("gt_");
    let url = with_schema(&base, &schema);
    let central_key = dir.path().join("central.key");
    expect(
        &mut gavel(
            dir.path(),
            &["keygen", "--out", "central.key", "--name", "central.test"],
        ),
        0,
    );
    let mut team = Team {
        base,
        url,
        schema,
        central_key,
        hosts: Vec::new(),
        dir,
    };
    expect(
        &mut team.gavel(&[
            "central",
            "init",
            "--key",
            "central.key",
            "--db",
            &team.url.clone(),
        ]),
        0,
    );
    for i in 0..n {
        team.enroll(&format!("h{i}"));
    }
    Some(team)
}

impl Team {
    pub fn gavel(&self, args: &[&str]) -> assert_cmd::Command {
        gavel(self.dir.path(), args)
    }

    /// Enrolls host `name` with a new key and a role with a random suffix.
    pub fn enroll(&mut self, name: &str) -> &Host {
        let key = self.dir.path().join(format!("{name}.key"));
        expect(
            &mut self.gavel(&[
                "keygen",
                "--out",
                key.to_str().unwrap(),
                "--name",
                &format!("{name}.host.test"),
            ]),
            0,
        );
        let role = format!("{}_{name}", self.schema);
        let out = expect(
            &mut self.gavel(&[
                "central",
                "enroll",
                name,
                "--public-key",
                &format!("{}.pub", key.display()),
                "--role",
                &role,
                "--db",
                &self.url,
            ]),
            0,
        );
        let text = stdout(&out);
        let url = text
            .split("--to '")
            .nth(1)
            .and_then(|rest| rest.split('\'').next())
            .unwrap_or_else(|| panic!("enroll printed no push URL: {text}"))
            .to_owned();
        self.hosts.push(Host {
            name: name.to_owned(),
            role,
            key,
            db: self.dir.path().join(format!("{name}.db")),
            url,
        });
        self.hosts.last().unwrap()
    }

    /// A connection as the owner, in the schema.
    pub fn client(&self) -> Client {
        let mut client = Client::connect(&self.base, NoTls).expect("connect to PostgreSQL");
        client
            .batch_execute(&format!("SET search_path TO \"{}\"", self.schema))
            .unwrap();
        client
    }

    /// `gavel push --json` for host `i`, expecting `exit`.
    pub fn push(&self, i: usize, exit: i32) -> Value {
        let host = &self.hosts[i];
        json_out(&expect(
            &mut self.gavel(&[
                "push",
                "--to",
                &host.url,
                "--key",
                host.key.to_str().unwrap(),
                "--db",
                host.db.to_str().unwrap(),
                "--json",
            ]),
            exit,
        ))
    }

    /// `gavel central ingest --json`, expecting `exit`.
    pub fn ingest(&self, exit: i32) -> Value {
        json_out(&expect(
            &mut self.gavel(&[
                "central",
                "ingest",
                "--key",
                self.central_key.to_str().unwrap(),
                "--db",
                &self.url,
                "--json",
            ]),
            exit,
        ))
    }

    /// The accepted size of each log, by host name.
    pub fn central_sizes(&self) -> std::collections::BTreeMap<String, i64> {
        self.client()
            .query(
                "SELECT host, sum(size)::bigint FROM logs GROUP BY host",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    }

    /// The rows in `events` for host `name`'s logs.
    pub fn central_rows(&self, name: &str) -> i64 {
        self.client()
            .query_one(
                "SELECT count(*) FROM events e JOIN logs l USING (log_id) WHERE l.host = $1",
                &[&name],
            )
            .unwrap()
            .get(0)
    }

    /// Every refusal: (host, problem, first_seq).
    pub fn refusals(&self) -> Vec<(String, String, Option<i64>)> {
        self.client()
            .query(
                "SELECT host, problem, first_seq FROM refusals ORDER BY id",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        let Ok(mut client) = Client::connect(&self.base, NoTls) else {
            return;
        };
        let inbox = format!("{}_inbox", self.schema);
        let _ = client.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS \"{}\" CASCADE; DROP SCHEMA IF EXISTS \"{inbox}\" CASCADE;",
            self.schema
        ));
        for host in &self.hosts {
            let _ = client.batch_execute(&format!(
                "DROP OWNED BY \"{0}\"; DROP ROLE IF EXISTS \"{0}\";",
                host.role
            ));
        }
    }
}

/// The rows in a local log.
pub fn local_rows(db: &Path) -> i64 {
    Connection::open(db)
        .unwrap()
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap()
}

/// Rewrites the payload of row `seq` as an attacker with the host's key
/// would: the row's leaf and every later chain value recomputed (so the
/// local log verifies again), the old checkpoints deleted.
pub fn rewrite_row(db: &Path, seq: i64) {
    let conn = Connection::open(db).unwrap();
    conn.execute_batch(
        "DROP TRIGGER events_no_update; DROP TRIGGER checkpoints_no_delete;
         DELETE FROM checkpoints;",
    )
    .unwrap();
    conn.execute(
        "UPDATE events SET payload = CAST('{\"rewritten\":true}' AS BLOB) WHERE seq = ?1",
        [seq],
    )
    .unwrap();
    rechain_from(&conn, seq);
}

/// Recomputes leaf and chain of every row from `seq` on (format-2 rows).
fn rechain_from(conn: &Connection, seq: i64) {
    conn.execute_batch("BEGIN").unwrap();
    let mut previous: [u8; 32] = if seq == 1 {
        conn.query_row("SELECT genesis FROM log_meta", [], |r| {
            r.get::<_, Vec<u8>>(0)
        })
        .unwrap()
        .try_into()
        .unwrap()
    } else {
        conn.query_row("SELECT chain FROM events WHERE seq = ?1", [seq - 1], |r| {
            r.get::<_, Vec<u8>>(0)
        })
        .unwrap()
        .try_into()
        .unwrap()
    };
    type Fields = (
        i64,
        Vec<u8>,
        i64,
        String,
        String,
        [Option<String>; 5],
        [Option<String>; 5],
        Vec<u8>,
    );
    let rows: Vec<Fields> = conn
        .prepare(
            "SELECT seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status,
                    user, host, client, session, agent, payload FROM events WHERE seq >= ?1 ORDER BY seq",
        )
        .unwrap()
        .query_map([seq], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                [r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?],
                [r.get(10)?, r.get(11)?, r.get(12)?, r.get(13)?, r.get(14)?],
                r.get(15)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (seq, log_id, ts_us, kind, call_id, opt, who, payload) in rows {
        let fields = EventFields {
            seq: seq as u64,
            log_id: &log_id,
            ts_us,
            kind: &kind,
            call_id: &call_id,
            tool: opt[0].as_deref(),
            action: opt[1].as_deref(),
            rule_id: opt[2].as_deref(),
            approval: opt[3].as_deref(),
            status: opt[4].as_deref(),
            payload: &payload,
            format: 2,
            who: Who {
                user: who[0].as_deref(),
                host: who[1].as_deref(),
                client: who[2].as_deref(),
                session: who[3].as_deref(),
                agent: who[4].as_deref(),
            },
        };
        let leaf = fields.leaf_hash();
        let chain = link(&previous, &leaf);
        conn.execute(
            "UPDATE events SET leaf = ?2, chain = ?3 WHERE seq = ?1",
            rusqlite::params![seq, &leaf[..], &chain[..]],
        )
        .unwrap();
        previous = chain;
    }
    conn.execute_batch("COMMIT").unwrap();
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn push_ingest_then_a_second_push_adds_nothing() {
    let Some(team) = setup_hosts(1) else { return };
    let host = &team.hosts[0];
    append_calls(&host.db, 1, 20);
    let first = team.push(0, 0);
    assert_eq!(first["sent"], 60, "{first}");
    assert_eq!(first["checkpoint"], 60, "{first}");
    assert_eq!(first["host"], "h0");
    // Pushed, not yet ingested: pushing again sends nothing.
    let again = team.push(0, 0);
    assert_eq!(again["sent"], 0, "{again}");
    assert_eq!(again["checkpoint"], Value::Null, "{again}");

    let ingested = team.ingest(0);
    assert_eq!(ingested["rows"], 60, "{ingested}");
    assert_eq!(ingested["accepted"][0]["host"], "h0");
    assert_eq!(ingested["central_size"], 1);
    assert_eq!(team.central_rows("h0"), 60);
    // Nothing waits: a second pass accepts nothing and signs nothing.
    let idle = team.ingest(0);
    assert_eq!(idle["rows"], 0, "{idle}");
    assert_eq!(idle["central_size"], Value::Null);

    // The next push adds nothing and keeps the cosignature.
    let after = team.push(0, 0);
    assert_eq!(after["sent"], 0, "{after}");
    assert_eq!(after["acked"], 60);
    assert_eq!(after["cosigned"], 1);
    assert_eq!(team.central_rows("h0"), 60);
    let cosigned = std::fs::read_to_string(format!("{}.cosigned", host.db.display())).unwrap();
    let lines: Vec<Value> = cosigned
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    let central_pub =
        gavel::checkpoint::read_verifier_key(&team.dir.path().join("central.key.pub")).unwrap();
    let note = lines[0]["note"].as_str().unwrap();
    let body = gavel::central::cosign::note_body(note).unwrap();
    gavel::central::cosign::verify(
        &central_pub,
        body,
        lines[0]["cosignature"].as_str().unwrap(),
    )
    .expect("the cosignature verifies with the central key");
    let host_pub =
        gavel::checkpoint::read_verifier_key(Path::new(&format!("{}.pub", host.key.display())))
            .unwrap();
    assert_eq!(gavel::checkpoint::open(note, &host_pub).unwrap().size, 60);

    // The central log holds that checkpoint, and its checkpoint is signed by the central key.
    let mut client = team.client();
    let row = client
        .query_one(
            "SELECT note FROM central_checkpoints ORDER BY id DESC LIMIT 1",
            &[],
        )
        .unwrap();
    let central_cp = gavel::checkpoint::open(&row.get::<_, String>(0), &central_pub).unwrap();
    assert_eq!(central_cp.size, 1);
    let leaf: Vec<u8> = client
        .query_one("SELECT leaf FROM central_log WHERE seq = 1", &[])
        .unwrap()
        .get(0);
    assert_eq!(leaf, gavel::central::cosign::central_leaf(note).to_vec());
    assert_eq!(
        central_cp.root.to_vec(),
        leaf,
        "a one-leaf tree's root is its leaf"
    );

    // `central logs` lists the host with its size.
    let listed = expect(
        &mut team.gavel(&["central", "logs", "--db", &team.url, "--format", "json"]),
        0,
    );
    let listed = json_out(&listed);
    assert_eq!(listed[0]["host"], "h0");
    assert_eq!(listed[0]["size"], 60);
    assert_eq!(listed[0]["last_refusal"], Value::Null);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn cosigned_keeps_one_verified_line_per_accepted_checkpoint() {
    let Some(team) = setup_hosts(1) else { return };
    let host = &team.hosts[0];
    let cosigned = format!("{}.cosigned", host.db.display());
    let central_pub = team.dir.path().join("central.key.pub");
    // Two accepted batches, each with its checkpoint.
    for first in [1, 6] {
        append_calls(&host.db, first, 5);
        team.push(0, 0);
        team.ingest(0);
    }
    // (The second push already kept the first cosignature; start afresh.)
    std::fs::remove_file(&cosigned).unwrap();
    // A central key the host pinned that is not the store's: nothing is kept.
    expect(
        &mut team.gavel(&["keygen", "--out", "other.key", "--name", "central.test"]),
        0,
    );
    let args = |central: &str| {
        vec![
            "push".to_owned(),
            "--to".into(),
            host.url.clone(),
            "--key".into(),
            host.key.display().to_string(),
            "--db".into(),
            host.db.display().to_string(),
            "--central-key".into(),
            central.to_owned(),
            "--json".into(),
        ]
    };
    let refused = expect(
        &mut team.gavel(
            &args("other.key.pub")
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        ),
        2,
    );
    assert!(
        stderr(&refused).contains("does not verify with the central key"),
        "{}",
        stderr(&refused)
    );
    assert!(
        !Path::new(&cosigned).exists() || std::fs::read_to_string(&cosigned).unwrap().is_empty()
    );

    // With the right key, one line per accepted checkpoint, in order; a
    // partial last line (a crash mid-write) is cut off and written again.
    let central = central_pub.display().to_string();
    let pushed = json_out(&expect(
        &mut team.gavel(
            &args(&central)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        ),
        0,
    ));
    assert_eq!(pushed["cosigned"], 2, "{pushed}");
    let text = std::fs::read_to_string(&cosigned).unwrap();
    let sizes: Vec<i64> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["size"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(sizes, [15, 30]);
    let second = text.lines().nth(1).unwrap();
    let first_line = text.lines().next().unwrap();
    std::fs::write(&cosigned, format!("{first_line}\n{}", &second[..20])).unwrap();
    let again = team.push(0, 0);
    assert_eq!(again["cosigned"], 1, "{again}");
    assert_eq!(std::fs::read_to_string(&cosigned).unwrap(), text);
    // Nothing new: nothing written.
    assert_eq!(team.push(0, 0)["cosigned"], 0);
    assert_eq!(std::fs::read_to_string(&cosigned).unwrap(), text);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn an_offline_host_catches_up_with_nothing_lost() {
    let Some(team) = setup_hosts(1) else { return };
    let db = &team.hosts[0].db;
    append_calls(db, 1, 10);
    team.push(0, 0);
    team.ingest(0);
    // Offline: calls pile up locally, over several sessions.
    append_calls(db, 11, 30);
    append_calls(db, 41, 5);
    let late = team.push(0, 0);
    assert_eq!(late["first_sent"], 31, "{late}");
    assert_eq!(late["sent"], 105, "{late}");
    team.ingest(0);
    assert_eq!(team.central_rows("h0"), local_rows(db));
    assert_eq!(team.central_sizes()["h0"], 135);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn host_role_can_only_fill_its_own_inbox() {
    let Some(team) = setup_hosts(2) else { return };
    append_calls(&team.hosts[0].db, 1, 2);
    team.push(0, 0);
    team.ingest(0);
    let as_host =
        |i: usize| Client::connect(&team.hosts[i].url, NoTls).expect("connect as the host role");
    let mut h1 = as_host(1);
    let schema = &team.schema;
    for sql in [
        format!("SELECT count(*) FROM \"{schema}\".events"),
        format!("DELETE FROM \"{schema}\".events"),
        format!("SELECT count(*) FROM \"{schema}_inbox\".h0_events"),
        format!("SELECT * FROM \"{schema}_inbox\".h0_heads"),
        format!("DELETE FROM \"{schema}_inbox\".h1_events"),
        format!("UPDATE \"{schema}_inbox\".h1_checkpoints SET size = 0"),
    ] {
        let err = h1.batch_execute(&sql).expect_err(&sql);
        assert!(
            format!("{err:?}").contains("permission denied"),
            "{sql}: {err:?}"
        );
    }
    // Its own heads view shows its own logs only (none yet).
    let rows = h1
        .query(&format!("SELECT * FROM \"{schema}_inbox\".h1_heads"), &[])
        .unwrap();
    assert!(rows.is_empty());
    // Even the owner cannot update or delete accepted events by accident.
    let mut owner = team.client();
    let err = owner
        .batch_execute("UPDATE events SET kind = 'x'")
        .unwrap_err();
    assert!(format!("{err:?}").contains("append-only"), "{err:?}");
    let err = owner.batch_execute("DELETE FROM events").unwrap_err();
    assert!(format!("{err:?}").contains("append-only"), "{err:?}");
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn a_rewritten_pushed_row_is_refused_naming_host_and_seq_on_every_push() {
    let Some(team) = setup_hosts(1) else { return };
    let db = &team.hosts[0].db;
    append_calls(db, 1, 10);
    team.push(0, 0);
    team.ingest(0);
    // The host rewrites row 5, re-chains and re-signs: its log verifies locally.
    rewrite_row(db, 5);
    append_calls(db, 11, 2);
    // Sent whole, and the push says the log diverges (exit 1).
    let pushed = team.push(0, 1);
    assert_eq!(pushed["diverged"], true, "{pushed}");
    assert_eq!(pushed["first_sent"], 1, "{pushed}");
    let refused = team.ingest(1);
    assert_eq!(refused["refused"][0]["problem"], "rewritten", "{refused}");
    assert_eq!(refused["refused"][0]["first_seq"], 5, "{refused}");
    assert_eq!(refused["refused"][0]["host"], "h0");
    assert_eq!(
        team.refusals(),
        [("h0".into(), "rewritten".into(), Some(5))]
    );
    // Nothing of it was accepted; the evidence is kept.
    assert_eq!(team.central_rows("h0"), 30);
    let kept: i64 = team
        .client()
        .query_one("SELECT count(*) FROM refused_events", &[])
        .unwrap()
        .get(0);
    assert_eq!(kept, 32, "rows 5..36, from the first differing seq on");
    // Every later push is refused again, and `push --wait` says so (exit 1).
    let host = &team.hosts[0];
    let mut waiting = team.gavel(&[
        "push",
        "--to",
        &host.url,
        "--key",
        host.key.to_str().unwrap(),
        "--db",
        host.db.to_str().unwrap(),
        "--wait",
        "60",
    ]);
    let child = std::thread::spawn(move || waiting.output().unwrap());
    // Ingest until the push landed and was refused.
    for _ in 0..300 {
        let out = team
            .gavel(&[
                "central",
                "ingest",
                "--key",
                "central.key",
                "--db",
                &team.url,
                "--json",
            ])
            .output()
            .unwrap();
        if code(&out) == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = child.join().unwrap();
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("REFUSED (rewritten)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(team.refusals().len(), 2);
    let listed = json_out(&expect(
        &mut team.gavel(&["central", "logs", "--db", &team.url, "--format", "json"]),
        0,
    ));
    assert_eq!(listed[0]["last_refusal"]["problem"], "rewritten");
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn an_edited_row_the_host_did_not_rechain_is_not_pushed() {
    let Some(team) = setup_hosts(1) else { return };
    let db = &team.hosts[0].db;
    append_calls(db, 1, 3);
    team.push(0, 0);
    team.ingest(0);
    let conn = Connection::open(db).unwrap();
    conn.execute_batch(
        "DROP TRIGGER events_no_update; UPDATE events SET ts_us = ts_us + 1 WHERE seq = 2;",
    )
    .unwrap();
    append_calls(db, 4, 1);
    let host = &team.hosts[0];
    let out = expect(
        &mut team.gavel(&[
            "push",
            "--to",
            &host.url,
            "--key",
            host.key.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ]),
        2,
    );
    assert!(stderr(&out).contains("does not verify"), "{}", stderr(&out));
    assert_eq!(team.central_rows("h0"), 9);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn refusal_evidence_is_capped_and_a_batch_is_one_central_leaf() {
    let Some(team) = setup_hosts(1) else { return };
    let db = &team.hosts[0].db;
    append_calls(db, 1, 2);
    team.push(0, 0);
    append_calls(db, 3, 2);
    team.push(0, 0);
    // Two checkpoints waiting (6 and 12): one batch, one cosigned checkpoint, one central leaf.
    let taken = team.ingest(0);
    assert_eq!(taken["rows"], 12, "{taken}");
    let mut client = team.client();
    let count = |client: &mut Client, table: &str| -> i64 {
        client
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0)
    };
    assert_eq!(count(&mut client, "checkpoints"), 1);
    assert_eq!(count(&mut client, "central_log"), 1);
    let size: i64 = client
        .query_one("SELECT size FROM checkpoints", &[])
        .unwrap()
        .get(0);
    assert_eq!(size, 12, "the largest checkpoint of the batch");

    // A rewrite resending 1,200+ rows keeps 1,000 of them, from the first differing seq.
    rewrite_row(db, 5);
    append_calls(db, 5, 400);
    team.push(0, 1);
    let refused = team.ingest(1);
    assert_eq!(refused["refused"][0]["rows"], 1000, "{refused}");
    let first: i64 = client
        .query_one("SELECT min(seq) FROM refused_events", &[])
        .unwrap()
        .get(0);
    assert_eq!(first, 5);
    let inbox: i64 = count(&mut client, &format!("\"{}_inbox\".h0_events", team.schema));
    assert_eq!(inbox, 0, "the inbox is emptied");
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn one_hosts_error_does_not_stop_the_pass_and_unsigned_leaves_get_signed() {
    let Some(team) = setup_hosts(2) else { return };
    for i in 0..2 {
        append_calls(&team.hosts[i].db, 1, 2);
        team.push(i, 0);
    }
    // h0's inbox is broken; h1 is still taken, and the pass exits 2 naming h0.
    let mut client = team.client();
    client
        .batch_execute(&format!(
            "DROP TABLE \"{}_inbox\".h0_checkpoints CASCADE",
            team.schema
        ))
        .unwrap();
    let out = expect(
        &mut team.gavel(&[
            "central",
            "ingest",
            "--key",
            team.central_key.to_str().unwrap(),
            "--db",
            &team.url,
            "--json",
        ]),
        2,
    );
    let pass = json_out(&out);
    assert_eq!(pass["accepted"][0]["host"], "h1", "{pass}");
    assert_eq!(pass["errors"][0]["host"], "h0", "{pass}");
    assert!(stderr(&out).contains("host `h0`"), "{}", stderr(&out));
    assert_eq!(pass["central_size"], 1, "{pass}");
    // A crash after the accept, before the central checkpoint: the next pass signs it.
    client
        .batch_execute(
            "DROP TRIGGER central_checkpoints_append_only ON central_checkpoints;
             DELETE FROM central_checkpoints;",
        )
        .unwrap();
    let out = expect(
        &mut team.gavel(&[
            "central",
            "ingest",
            "--key",
            team.central_key.to_str().unwrap(),
            "--db",
            &team.url,
            "--json",
        ]),
        2,
    );
    assert_eq!(json_out(&out)["central_size"], 1);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn a_truncated_log_is_refused() {
    let Some(team) = setup_hosts(1) else { return };
    let db = &team.hosts[0].db;
    append_calls(db, 1, 10);
    team.push(0, 0);
    team.ingest(0);
    let conn = Connection::open(db).unwrap();
    conn.execute_batch(
        "DROP TRIGGER events_no_delete; DROP TRIGGER checkpoints_no_delete;
         DELETE FROM events WHERE seq > 20; DELETE FROM checkpoints;",
    )
    .unwrap();
    drop(conn);
    let pushed = team.push(0, 1);
    assert_eq!(pushed["diverged"], true, "{pushed}");
    let refused = team.ingest(1);
    assert_eq!(refused["refused"][0]["problem"], "truncated", "{refused}");
    assert_eq!(team.central_sizes()["h0"], 30);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn a_fork_that_does_not_continue_the_accepted_chain_is_refused() {
    let Some(team) = setup_hosts(1) else { return };
    let host = &team.hosts[0];
    append_calls(&host.db, 1, 5);
    // A copy of the log, taken now, goes its own way.
    let copy = team.dir.path().join("copy.db");
    std::fs::copy(&host.db, &copy).unwrap();
    append_calls(&host.db, 6, 5);
    team.push(0, 0);
    team.ingest(0);
    append_calls(&copy, 100, 8);
    // The copy's rows after the accepted size, and a checkpoint over them,
    // land in the inbox as a pusher that does not compare heads would send them.
    let out = expect(
        &mut team.gavel(&[
            "checkpoint",
            "--key",
            host.key.to_str().unwrap(),
            "--db",
            copy.to_str().unwrap(),
        ]),
        0,
    );
    let note = format!("{}\n", stdout(&out).trim_end());
    let url = &host.url;
    let mut as_host = Client::connect(url, NoTls).unwrap();
    let inbox = format!("\"{}_inbox\"", team.schema);
    let conn = Connection::open(&copy).unwrap();
    let rows: Vec<gavel::central::Row> = conn
        .prepare(
            "SELECT log_id, seq, ts_us, kind, call_id, tool, action, rule_id, approval, status,
                    user, host, client, session, agent, payload, leaf, chain
             FROM events WHERE seq > 30 ORDER BY seq",
        )
        .unwrap()
        .query_map([], |r| {
            Ok(gavel::central::Row {
                log_id: r.get(0)?,
                seq: r.get(1)?,
                ts_us: r.get(2)?,
                kind: r.get(3)?,
                call_id: r.get(4)?,
                tool: r.get(5)?,
                action: r.get(6)?,
                rule_id: r.get(7)?,
                approval: r.get(8)?,
                status: r.get(9)?,
                user: r.get(10)?,
                host: r.get(11)?,
                client: r.get(12)?,
                session: r.get(13)?,
                agent: r.get(14)?,
                payload: r.get(15)?,
                leaf: r.get(16)?,
                chain: r.get(17)?,
            })
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 9);
    let insert = format!(
        "INSERT INTO {inbox}.h0_events ({}) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18)",
        gavel::central::ROW_COLUMNS
    );
    for r in &rows {
        as_host
            .execute(
                &insert,
                &[
                    &r.log_id,
                    &r.seq,
                    &r.ts_us,
                    &r.kind,
                    &r.call_id,
                    &r.tool,
                    &r.action,
                    &r.rule_id,
                    &r.approval,
                    &r.status,
                    &r.user,
                    &r.host,
                    &r.client,
                    &r.session,
                    &r.agent,
                    &r.payload,
                    &r.leaf,
                    &r.chain,
                ],
            )
            .unwrap();
    }
    as_host
        .execute(
            &format!("INSERT INTO {inbox}.h0_checkpoints (log_id, size, note, pushed_us) SELECT log_id, 39, $1, 0 FROM {inbox}.h0_heads"),
            &[&note],
        )
        .unwrap();
    let refused = team.ingest(1);
    assert_eq!(refused["refused"][0]["problem"], "fork", "{refused}");
    assert_eq!(refused["refused"][0]["first_seq"], 31, "{refused}");
    assert_eq!(team.central_sizes()["h0"], 30);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn a_checkpoint_not_signed_by_the_enrolled_key_is_refused() {
    let Some(mut team) = setup_hosts(1) else {
        return;
    };
    team.enroll("h1");
    append_calls(&team.hosts[0].db, 1, 3);
    // h0 pushes with h1's key: its role, another host's key.
    let host = &team.hosts[0];
    expect(
        &mut team.gavel(&[
            "push",
            "--to",
            &host.url,
            "--key",
            team.hosts[1].key.to_str().unwrap(),
            "--db",
            host.db.to_str().unwrap(),
        ]),
        0,
    );
    let refused = team.ingest(1);
    assert_eq!(
        refused["refused"][0]["problem"], "checkpoint_signature",
        "{refused}"
    );
    assert!(team.central_sizes().is_empty());
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn another_hosts_log_is_refused_as_unknown() {
    let Some(team) = setup_hosts(2) else { return };
    append_calls(&team.hosts[0].db, 1, 3);
    team.push(0, 0);
    team.ingest(0);
    // h1 pushes a copy of h0's log, signed with h1's own key.
    std::fs::copy(&team.hosts[0].db, &team.hosts[1].db).unwrap();
    let conn = Connection::open(&team.hosts[1].db).unwrap();
    conn.execute_batch("DROP TRIGGER checkpoints_no_delete; DELETE FROM checkpoints;")
        .unwrap();
    drop(conn);
    append_calls(&team.hosts[1].db, 10, 1);
    team.push(1, 0);
    let refused = team.ingest(1);
    assert_eq!(refused["refused"][0]["problem"], "unknown_log", "{refused}");
    assert_eq!(refused["refused"][0]["host"], "h1");
    assert_eq!(team.central_sizes()["h0"], 9);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn rows_without_a_checkpoint_do_not_claim_a_log_for_another_host() {
    let Some(team) = setup_hosts(2) else { return };
    append_calls(&team.hosts[0].db, 1, 3);
    team.push(0, 0);
    // h1 sends h0's log identity and rows, but no checkpoint (it cannot sign one with h0's key).
    let inbox = format!("\"{}_inbox\"", team.schema);
    team.client()
        .batch_execute(&format!(
            "INSERT INTO {inbox}.h1_logs SELECT * FROM {inbox}.h0_logs;
             INSERT INTO {inbox}.h1_events SELECT * FROM {inbox}.h0_events;
             DELETE FROM {inbox}.h0_events; DELETE FROM {inbox}.h0_checkpoints; DELETE FROM {inbox}.h0_logs;"
        ))
        .unwrap();
    let idle = team.ingest(0);
    assert_eq!(idle["rows"], 0, "{idle}");
    let logs: i64 = team
        .client()
        .query_one("SELECT count(*) FROM logs", &[])
        .unwrap()
        .get(0);
    assert_eq!(logs, 0, "rows waiting for a checkpoint registered a log");
    // h0 pushes again and its log is its own; h1's copy is refused.
    team.push(0, 0);
    let taken = json_out(&expect(
        &mut team.gavel(&[
            "central",
            "ingest",
            "--key",
            team.central_key.to_str().unwrap(),
            "--db",
            &team.url,
            "--jobs",
            "1",
            "--json",
        ]),
        1,
    ));
    assert_eq!(taken["accepted"][0]["host"], "h0", "{taken}");
    assert_eq!(taken["refused"][0]["host"], "h1", "{taken}");
    assert_eq!(taken["refused"][0]["problem"], "unknown_log", "{taken}");
    assert_eq!(team.central_rows("h0"), 9);
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn enroll_refuses_powerful_and_existing_roles() {
    let Some(team) = setup_hosts(0) else { return };
    expect(
        &mut team.gavel(&["keygen", "--out", "x.key", "--name", "x.host.test"]),
        0,
    );
    let enroll = |name: &str, role: &str, existing: bool| {
        let mut args = vec![
            "central",
            "enroll",
            name,
            "--public-key",
            "x.key.pub",
            "--role",
            role,
            "--db",
            &team.url,
        ];
        if existing {
            args.push("--existing-role");
        }
        let mut cmd = team.gavel(&args);
        cmd.output().expect("run gavel")
    };
    let plain = format!("{}_plain", team.schema);
    let member = format!("{}_member", team.schema);
    let mut client = team.client();
    let owner: String = client
        .query_one("SELECT current_user::text", &[])
        .unwrap()
        .get(0);
    client
        .batch_execute(&format!(
            "CREATE ROLE \"{plain}\" LOGIN; CREATE ROLE \"{member}\" LOGIN; GRANT \"{owner}\" TO \"{member}\";"
        ))
        .unwrap();
    let cases = [
        ("a", "postgres", true, "is a superuser"),
        ("b", member.as_str(), true, "is a member of the owner role"),
        ("c", plain.as_str(), false, "--existing-role"),
    ];
    for (name, role, existing, why) in cases {
        let out = enroll(name, role, existing);
        assert_eq!(code(&out), 2, "{role}: {}", stdout(&out));
        assert!(stderr(&out).contains(why), "{role}: {}", stderr(&out));
    }
    let hosts: i64 = client
        .query_one("SELECT count(*) FROM hosts", &[])
        .unwrap()
        .get(0);
    assert_eq!(hosts, 0, "a refused enrollment left a host");
    let out = enroll("c", &plain, true);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("(existing role)"));
    let _ = client.batch_execute(&format!(
        "DROP OWNED BY \"{plain}\"; DROP ROLE \"{plain}\"; DROP ROLE \"{member}\";"
    ));
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn a_v1_log_pushes_and_its_format_switch_verifies_centrally() {
    let Some(team) = setup_hosts(1) else { return };
    let db = &team.hosts[0].db;
    let dump = std::fs::read_to_string(crate::support::fixture("v1/audit.sql")).unwrap();
    Connection::open(db).unwrap().execute_batch(&dump).unwrap();
    let before = local_rows(db);
    // Pushed as format 1, then continued by this gavel (a `format` row, then format 2).
    team.push(0, 0);
    team.ingest(0);
    append_calls(db, 1, 4);
    let after = local_rows(db);
    assert_eq!(after, before + 1 + 12);
    team.push(0, 0);
    let ingested = team.ingest(0);
    assert_eq!(ingested["rows"], 13, "{ingested}");
    let row = team
        .client()
        .query_one(
            "SELECT format, size, switch_seq, switch_format FROM logs",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 1);
    assert_eq!(row.get::<_, i64>(1), after);
    assert_eq!(row.get::<_, Option<i64>>(2), Some(before + 1));
    assert_eq!(row.get::<_, Option<i32>>(3), Some(2));
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn init_refuses_another_key_and_a_newer_store() {
    let Some(team) = setup_hosts(0) else { return };
    expect(
        &mut team.gavel(&["keygen", "--out", "other.key", "--name", "other"]),
        0,
    );
    let out = expect(
        &mut team.gavel(&["central", "init", "--key", "other.key", "--db", &team.url]),
        2,
    );
    assert!(
        stderr(&out).contains("already initialized"),
        "{}",
        stderr(&out)
    );
    // Bad names are one-line errors.
    let out = expect(
        &mut team.gavel(&[
            "central",
            "enroll",
            "Bad-Name",
            "--public-key",
            "other.key.pub",
            "--db",
            &team.url,
        ]),
        2,
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    team.client()
        .execute(
            "INSERT INTO gavel_migrations (version, name, applied_us) VALUES (99, 'future', 0)",
            &[],
        )
        .unwrap();
    let out = expect(&mut team.gavel(&["central", "logs", "--db", &team.url]), 2);
    assert!(
        stderr(&out).contains("newer than this gavel"),
        "{}",
        stderr(&out)
    );
    let out = expect(
        &mut team.gavel(&["central", "init", "--key", "central.key", "--db", &team.url]),
        2,
    );
    assert!(
        stderr(&out).contains("newer than this gavel"),
        "{}",
        stderr(&out)
    );
}

/// Scale: `GAVEL_CENTRAL_SCALE_HOSTS` hosts (20) × `GAVEL_CENTRAL_SCALE_CALLS`
/// calls (10,000) pushing concurrently while ingest runs; a host offline
/// for the first half catches up, a host that rewrote a pushed row is
/// refused, a second push adds nothing, central sizes equal local sizes.
#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn scale_twenty_hosts_push_concurrently() {
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let hosts = env("GAVEL_CENTRAL_SCALE_HOSTS", 20).max(3);
    let calls = env("GAVEL_CENTRAL_SCALE_CALLS", 10_000).max(10);
    let Some(team) = setup_hosts(hosts) else {
        return;
    };
    let half = calls / 2;
    let clock = std::time::Instant::now();
    let phase = |what: &str| println!("scale: {what} at {:.1}s", clock.elapsed().as_secs_f64());
    // First half: every host records; all but host 0 (offline) push.
    std::thread::scope(|s| {
        for host in &team.hosts {
            s.spawn(|| append_calls(&host.db, 1, half));
        }
    });
    phase("first half recorded");
    push_all(&team, 1..hosts);
    phase("first half pushed");
    team.ingest(0);
    phase("first half ingested");
    // Host 1 rewrites a row it pushed; everyone records the second half.
    rewrite_row(&team.hosts[1].db, 7);
    std::thread::scope(|s| {
        for host in &team.hosts {
            s.spawn(|| append_calls(&host.db, half + 1, calls - half));
        }
    });
    phase("second half recorded");
    // All push concurrently while ingest passes run.
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                let out = team
                    .gavel(&[
                        "central",
                        "ingest",
                        "--key",
                        "central.key",
                        "--db",
                        &team.url,
                    ])
                    .output()
                    .unwrap();
                assert!(matches!(code(&out), 0 | 1), "{}", stderr(&out));
            }
        });
        push_all_but_diverged(&team, 0..hosts, &[1]);
        phase("second half pushed");
        done.store(true, Ordering::Relaxed);
    });
    phase("second half ingested");
    let _ = team
        .gavel(&[
            "central",
            "ingest",
            "--key",
            "central.key",
            "--db",
            &team.url,
        ])
        .output();
    let sizes = team.central_sizes();
    for (i, host) in team.hosts.iter().enumerate() {
        let local = local_rows(&host.db);
        if i == 1 {
            assert_eq!(
                sizes[&host.name],
                (half * 3) as i64,
                "the rewriter keeps its first half"
            );
        } else {
            assert_eq!(sizes[&host.name], local, "host {}", host.name);
            assert_eq!(team.central_rows(&host.name), local);
        }
    }
    let refusals = team.refusals();
    assert!(!refusals.is_empty());
    assert!(
        refusals
            .iter()
            .all(|(h, p, seq)| h == "h1" && p == "rewritten" && *seq == Some(7)),
        "{refusals:?}"
    );
    // A second push adds nothing (the rewriter's is refused again).
    let before: i64 = team
        .client()
        .query_one("SELECT count(*) FROM events", &[])
        .unwrap()
        .get(0);
    for i in (0..hosts).filter(|&i| i != 1) {
        let again = team.push(i, 0);
        assert_eq!(again["sent"], 0, "{again}");
    }
    let idle = team.ingest(0);
    assert_eq!(idle["rows"], 0, "{idle}");
    let after: i64 = team
        .client()
        .query_one("SELECT count(*) FROM events", &[])
        .unwrap()
        .get(0);
    assert_eq!(before, after);
    // Read side: every chain verifies centrally; central stats is the sum
    // of the hosts' (the rewriter's central part counted as stored).
    crate::central_read::every_chain_verifies_and_stats_add_up(&team, &[1]);
}

/// Pushes hosts `range` concurrently (`gavel push`, each its own process).
/// A team of `n` hosts, each with `calls` calls pushed and ingested.
pub fn team_with_calls(n: usize, calls: usize) -> Option<Team> {
    let team = setup_hosts(n)?;
    for (i, host) in team.hosts.iter().enumerate() {
        append_calls(&host.db, i * 1000, calls);
    }
    push_all(&team, 0..n);
    team.ingest(0);
    Some(team)
}

pub fn push_all(team: &Team, range: std::ops::Range<usize>) {
    push_all_but_diverged(team, range, &[]);
}

/// [`push_all`], where the hosts `diverged` rewrote rows they had pushed:
/// their push sends everything and says the log diverges (exit 1).
pub fn push_all_but_diverged(team: &Team, range: std::ops::Range<usize>, diverged: &[usize]) {
    std::thread::scope(|s| {
        for i in range {
            let host = &team.hosts[i];
            let mut cmd = team.gavel(&[
                "push",
                "--to",
                &host.url,
                "--key",
                host.key.to_str().unwrap(),
                "--db",
                host.db.to_str().unwrap(),
            ]);
            let expected = if diverged.contains(&i) { 1 } else { 0 };
            s.spawn(move || {
                let out = cmd.output().unwrap();
                assert_eq!(code(&out), expected, "push {}: {}", i, stderr(&out));
                if expected == 1 {
                    assert!(stderr(&out).contains("diverges"), "{}", stderr(&out));
                }
            });
        }
    });
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn a_receipt_of_a_cosigned_checkpoint_verifies_host_and_central_two_of_two() {
    let Some(team) = setup_hosts(1) else { return };
    let host = &team.hosts[0];
    append_calls(&host.db, 1, 5);
    team.push(0, 0);
    team.ingest(0);
    // The next push keeps the central store's cosignature in DB.cosigned.
    append_calls(&host.db, 6, 1);
    team.push(0, 0);
    let receipt = team.dir.path().join("c2.receipt");
    expect(
        &mut team.gavel(&[
            "receipt",
            "c2",
            "--db",
            host.db.to_str().unwrap(),
            "--out",
            receipt.to_str().unwrap(),
        ]),
        0,
    );
    let text = std::fs::read_to_string(&receipt).unwrap();
    assert!(text.contains("\u{2014} central.test "), "{text}");
    let host_pub = format!("{}.pub", host.key.display());
    let central_pub = team.dir.path().join("central.key.pub");
    let central_pub = central_pub.to_str().unwrap();
    let verify = |keys: &[&str], policy: &[&str], exit: i32| {
        let mut args = vec!["verify", "--json", "--receipt", receipt.to_str().unwrap()];
        for key in keys {
            args.extend(["--public-key", key]);
        }
        args.extend(policy);
        json_out(&expect(&mut team.gavel(&args), exit))
    };
    let both = verify(&[&host_pub, central_pub], &["--policy", "2-of-2"], 0);
    assert_eq!(both["signers"][1]["name"], "central.test", "{both}");
    assert!(both["signers"][1]["cosigned_at"].as_u64().unwrap() > 1_700_000_000);
    // The host's key alone cannot check the central line.
    let alone = verify(&[&host_pub], &[], 1);
    assert_eq!(alone["problem"], "unknown_signer", "{alone}");
    // Without the cosignature, 2-of-2 is not met.
    let stripped: String = text
        .lines()
        .filter(|l| !l.starts_with("\u{2014} central.test "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&receipt, stripped).unwrap();
    let short = verify(&[&host_pub, central_pub], &["--policy", "2-of-2"], 1);
    assert_eq!(short["problem"], "quorum", "{short}");
    assert_eq!(verify(&[&host_pub, central_pub], &[], 0)["ok"], true);
    // The same under a C2SP tlog-policy naming the host's log and the central witness.
    std::fs::write(&receipt, &text).unwrap();
    let policy = team.dir.path().join("trust.policy");
    std::fs::write(
        &policy,
        format!(
            "log {}\nwitness central {}\nquorum central\n",
            std::fs::read_to_string(&host_pub).unwrap().trim(),
            std::fs::read_to_string(central_pub).unwrap().trim()
        ),
    )
    .unwrap();
    assert_eq!(
        verify(&[], &["--policy", policy.to_str().unwrap()], 0)["ok"],
        true
    );
}
