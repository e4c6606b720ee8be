//! The central store tells the truth (issue 24): its reading commands
//! check what they read and mark what they could not verify, refusals are
//! visible to the owner and to `push --wait`, `report` and `audit` take
//! every log, and a host is told when its log no longer matches what it
//! pushed. Against a real PostgreSQL server; same skip rule and per-test
//! schema as `central.rs`.

use postgres::Client;
use serde_json::Value;

use crate::central::{
    Team, append_calls, expect, json_out, push_all, setup_hosts, team_with_calls,
};
use crate::support::{stderr, stdout};

/// `gavel ARGS --db <central URL>`.
fn read(team: &Team, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = team.gavel(args);
    cmd.args(["--db", &team.url]);
    cmd
}

/// The log id (hex) of host `i`'s log.
fn log_of(team: &Team, i: usize) -> String {
    team.client()
        .query_one(
            "SELECT encode(log_id, 'hex') FROM logs WHERE host = $1",
            &[&team.hosts[i].name],
        )
        .unwrap()
        .get(0)
}

/// Runs `sql` as the owner with the append-only triggers off.
fn tamper(team: &Team, sql: &str) {
    let mut client: Client = team.client();
    client
        .batch_execute(&format!("SET session_replication_role = replica; {sql}"))
        .unwrap();
}

/// JSON lines on stdout.
fn lines(output: &std::process::Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn an_edited_central_row_is_flagged_by_log_stats_show_and_explain() {
    let Some(team) = team_with_calls(2, 8) else {
        return;
    };
    // h0's call c3 was denied (its decision is seq 11); the owner makes it an allow.
    let log0 = log_of(&team, 0);
    tamper(
        &team,
        &format!(
            "UPDATE events SET action = 'allow', rule_id = 'bash.read_only'
              WHERE log_id = decode('{log0}', 'hex') AND seq = 11"
        ),
    );
    let before = expect(&mut read(&team, &["log", "--json"]), 0);
    let err = stderr(&before);
    assert!(
        err.contains("does not verify") && err.contains("at seq 11") && err.contains("`h0`"),
        "{err}"
    );
    let rows = lines(&before);
    assert_eq!(rows.len(), 16);
    for row in &rows {
        let (host, seq) = (
            row["central"]["host"].as_str().unwrap(),
            row["central"]["seq"].as_u64().unwrap(),
        );
        let expected = !(host == "h0" && seq >= 11);
        assert_eq!(row["verified"], expected, "{row}");
    }
    // The table marks the call and says why.
    let table = stdout(&expect(read(&team, &["log"]).env("COLUMNS", "250"), 0));
    assert!(table.contains("!! c3"), "{table}");
    assert!(
        table.contains("past the first row that does not verify"),
        "{table}"
    );

    // A filter on the edited column refuses rather than hide c3.
    let out = expect(&mut read(&team, &["log", "--action", "deny"]), 2);
    assert!(
        stderr(&out).contains("refusing to filter"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    // The other host's log verifies: its filters run.
    let log1 = log_of(&team, 1);
    let denied = expect(
        &mut read(
            &team,
            &["log", "--action", "deny", "--log", &log1, "--json"],
        ),
        0,
    );
    assert_eq!(lines(&denied).len(), 2);
    assert!(stderr(&denied).is_empty(), "{}", stderr(&denied));
    // --no-verify filters anyway, on the rows as they are.
    let anyway = expect(
        &mut read(&team, &["log", "--action", "deny", "--no-verify", "--json"]),
        0,
    );
    assert_eq!(lines(&anyway).len(), 3);

    // stats says its counts read unverified rows.
    let stats = expect(&mut read(&team, &["stats", "--json"]), 0);
    assert_eq!(json_out(&stats)["verified"], false);
    assert!(stderr(&stats).contains("at seq 11"), "{}", stderr(&stats));
    let human = stdout(&expect(&mut read(&team, &["stats"]), 0));
    assert!(human.contains("may have been edited"), "{human}");
    let err = stderr(&expect(&mut read(&team, &["stats", "--action", "deny"]), 2));
    assert!(err.contains("refusing to filter"), "{err}");

    // show and explain mark the call.
    let explain = expect(&mut read(&team, &["explain", "c3", "--log", &log0]), 0);
    assert!(
        stdout(&explain).contains("!! UNVERIFIED"),
        "{}",
        stdout(&explain)
    );
    let explain = expect(
        &mut read(&team, &["explain", "c3", "--log", &log0, "--json"]),
        0,
    );
    assert_eq!(json_out(&explain)["verified"], false);
    let explain = expect(
        &mut read(&team, &["explain", "c1", "--log", &log0, "--json"]),
        0,
    );
    assert_eq!(json_out(&explain)["verified"], true);

    // Rows past the head (no host checkpoint vouches for them) are flagged too.
    tamper(
        &team,
        &format!(
            "UPDATE events SET action = 'deny', rule_id = 'bash.hard_deny'
              WHERE log_id = decode('{log0}', 'hex') AND seq = 11;
             UPDATE logs SET size = size - 3 WHERE log_id = decode('{log0}', 'hex')"
        ),
    );
    let out = expect(&mut read(&team, &["log", "--json", "--log", &log0]), 0);
    assert!(stderr(&out).contains("head_mismatch"), "{}", stderr(&out));
    let unverified: Vec<u64> = lines(&out)
        .iter()
        .filter(|r| r["verified"] == false)
        .map(|r| r["central"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(unverified, [23]);
}

/// `gavel push` of host `i`'s log signed with `key`, and `extra` arguments.
fn push_cmd(team: &Team, i: usize, key: &std::path::Path, extra: &[&str]) -> assert_cmd::Command {
    let host = &team.hosts[i];
    let mut cmd = team.gavel(&[
        "push",
        "--to",
        &host.url,
        "--key",
        key.to_str().unwrap(),
        "--db",
        host.db.to_str().unwrap(),
    ]);
    cmd.args(extra);
    cmd
}

/// Runs `waiting` (a `push --wait`) while ingest passes run, until it ends.
fn wait_while_ingesting(team: &Team, mut waiting: assert_cmd::Command) -> std::process::Output {
    let child = std::thread::spawn(move || waiting.output().unwrap());
    for _ in 0..600 {
        if child.is_finished() {
            break;
        }
        let out = team
            .gavel(&[
                "central",
                "ingest",
                "--key",
                team.central_key.to_str().unwrap(),
                "--db",
                &team.url,
            ])
            .output()
            .unwrap();
        assert!(
            matches!(crate::support::code(&out), 0 | 1),
            "{}",
            stderr(&out)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.join().unwrap()
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn a_refused_push_is_listed_by_central_logs_and_fails_push_wait() {
    let Some(mut team) = setup_hosts(1) else {
        return;
    };
    team.enroll("h1");
    append_calls(&team.hosts[0].db, 1, 3);
    let wrong = team.hosts[1].key.clone();
    // h0 pushes with h1's key: its rows wait in the inbox, not accepted yet.
    expect(&mut push_cmd(&team, 0, &wrong, &[]), 0);
    // `push --wait` has nothing new to send, but waits for what is not
    // accepted: the refusal ends it, exit 1, one line naming it.
    let out = wait_while_ingesting(&team, push_cmd(&team, 0, &wrong, &["--wait", "60"]));
    assert_eq!(
        crate::support::code(&out),
        1,
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("refused the push") && err.contains("checkpoint_signature"),
        "{err}"
    );
    assert!(stdout(&out).contains("REFUSED"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("accepted:"), "{}", stdout(&out));

    // `central logs` lists the log it never accepted, refused, and why.
    let listed = json_out(&expect(
        &mut team.gavel(&["central", "logs", "--db", &team.url, "--format", "json"]),
        0,
    ));
    let refused: Vec<&Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["host"] == "h0")
        .collect();
    assert_eq!(refused.len(), 1, "{listed}");
    assert_eq!(refused[0]["accepted"], false, "{listed}");
    assert_eq!(refused[0]["refused"], true, "{listed}");
    assert!(
        refused[0]["origin"].as_str().unwrap().starts_with("gavel/"),
        "{listed}"
    );
    assert_eq!(
        refused[0]["last_refusal"]["problem"], "checkpoint_signature",
        "{listed}"
    );
    let table = stdout(&expect(
        team.gavel(&["central", "logs", "--db", &team.url])
            .env("COLUMNS", "250"),
        0,
    ));
    assert!(
        table.contains("REFUSED") && table.contains("checkpoint_signature"),
        "{table}"
    );

    // With no ingest running, a later `push --wait` times out naming the
    // refusal that stands.
    let out = expect(&mut push_cmd(&team, 0, &wrong, &["--wait", "1"]), 2);
    let err = stderr(&out);
    assert!(
        err.contains("has not ingested") && err.contains("checkpoint_signature"),
        "{err}"
    );
    // A plain push says so too.
    let out = expect(&mut push_cmd(&team, 0, &wrong, &[]), 0);
    assert!(
        stderr(&out).contains("refused an earlier push"),
        "{}",
        stderr(&out)
    );

    // What waits in the inbox is refused again; pushed with its own key,
    // the log is accepted and the refusal is over.
    team.ingest(1);
    let own = team.hosts[0].key.clone();
    let out = wait_while_ingesting(&team, push_cmd(&team, 0, &own, &["--wait", "60"]));
    assert_eq!(crate::support::code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("accepted:"), "{}", stdout(&out));
    let listed = json_out(&expect(
        &mut team.gavel(&["central", "logs", "--db", &team.url, "--format", "json"]),
        0,
    ));
    let h0: Vec<&Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["host"] == "h0")
        .collect();
    assert_eq!(h0.len(), 1, "{listed}");
    assert_eq!(h0[0]["accepted"], true, "{listed}");
    assert_eq!(h0[0]["refused"], false, "{listed}");
    assert_eq!(h0[0]["size"], 9, "{listed}");
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn a_host_whose_pushed_rows_were_edited_is_told_its_log_diverges() {
    let Some(team) = team_with_calls(2, 3) else {
        return;
    };
    // h0 edits a pushed row in place (its chain column kept): nothing new
    // to send, but the push says the log diverges, naming the seq.
    let db = &team.hosts[0].db;
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(
            "DROP TRIGGER events_no_update; UPDATE events SET ts_us = ts_us + 1 WHERE seq = 2;",
        )
        .unwrap();
    let key = team.hosts[0].key.clone();
    let out = expect(&mut push_cmd(&team, 0, &key, &[]), 2);
    let err = stderr(&out);
    assert!(
        err.contains("diverges from what the central store holds") && err.contains("at seq 2"),
        "{err}"
    );
    assert!(!stdout(&out).contains("nothing new"), "{}", stdout(&out));

    // h1 rewrites a pushed row and re-chains it, as with its key: the push
    // sends it all, says the log diverges (exit 1), and `--wait` names the
    // first row the central side found different.
    crate::central::rewrite_row(&team.hosts[1].db, 5);
    let key = team.hosts[1].key.clone();
    let out = expect(&mut push_cmd(&team, 1, &key, &["--json"]), 1);
    assert_eq!(json_out(&out)["diverged"], true);
    assert!(
        stderr(&out).contains("diverges from what the central store holds"),
        "{}",
        stderr(&out)
    );
    let out = wait_while_ingesting(&team, push_cmd(&team, 1, &key, &["--wait", "60"]));
    assert_eq!(crate::support::code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("rewritten at seq 5"),
        "{}",
        stderr(&out)
    );
}

#[test]
#[ignore = "needs PostgreSQL: GAVEL_TEST_POSTGRES=postgres://… cargo test -- --ignored (CI runs it)"]
fn report_and_audit_take_every_log_per_host_or_per_log() {
    let Some(team) = team_with_calls(2, 8) else {
        return;
    };
    let (log0, log1) = (log_of(&team, 0), log_of(&team, 1));
    // audit: every log, one host's, one log; each verified in full.
    let all = json_out(&expect(&mut read(&team, &["audit", "--format", "json"]), 0));
    assert_eq!(all["verified"], true, "{all}");
    assert_eq!(all["ok"], true, "{all}");
    let logs = all["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 2, "{all}");
    assert_eq!(logs[0]["host"], "h0");
    assert_eq!(logs[1]["host"], "h1");
    let one = json_out(&expect(
        &mut read(&team, &["audit", "--format", "json", "--host", "h1"]),
        0,
    ));
    assert_eq!(one["logs"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["logs"][0]["host"], "h1");
    let one = json_out(&expect(
        &mut read(&team, &["audit", "--format", "json", "--log", &log0]),
        0,
    ));
    assert_eq!(one["logs"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["logs"][0]["host"], "h0");
    let err = stderr(&expect(&mut read(&team, &["audit", "--host", "nobody"]), 2));
    assert!(err.contains("`nobody`"), "{err}");
    let table = stdout(&expect(&mut read(&team, &["audit"]), 0));
    assert!(table.contains("No anomalies"), "{table}");

    // report: several logs make an index page linking one page per log.
    let index = team.dir.path().join("all.html");
    expect(
        &mut read(&team, &["report", "--html", index.to_str().unwrap()]),
        0,
    );
    let text = std::fs::read_to_string(&index).unwrap();
    let page0 = format!("all-h0-{}.html", &log0[..12]);
    let page1 = format!("all-h1-{}.html", &log1[..12]);
    assert!(text.contains(&page0) && text.contains(&page1), "{text}");
    assert!(text.contains("Every one of the 2 logs verifies"), "{text}");
    for page in [&page0, &page1] {
        let html = std::fs::read_to_string(team.dir.path().join(page)).unwrap();
        assert!(html.contains("bash.hard_deny"), "{page}");
    }
    let one = team.dir.path().join("h1.html");
    expect(
        &mut read(
            &team,
            &["report", "--html", one.to_str().unwrap(), "--log", &log1],
        ),
        0,
    );
    assert!(std::fs::read_to_string(&one).unwrap().contains(&log1));

    // An edited row of h0's log: audit and report fail on it (exit 1),
    // naming host, log and seq; h1's log alone still passes.
    tamper(
        &team,
        &format!(
            "UPDATE events SET action = 'allow', rule_id = 'bash.read_only'
              WHERE log_id = decode('{log0}', 'hex') AND seq = 11"
        ),
    );
    let all = json_out(&expect(&mut read(&team, &["audit", "--format", "json"]), 1));
    assert_eq!(all["verified"], false, "{all}");
    assert_eq!(all["integrity"]["first_bad_seq"], 11, "{all}");
    assert_eq!(all["integrity"]["central"]["host"], "h0", "{all}");
    assert_eq!(all["logs"][0]["verified"], false, "{all}");
    assert_eq!(all["logs"][1]["verified"], true, "{all}");
    let table = stdout(&expect(&mut read(&team, &["audit"]), 1));
    assert!(
        table.contains("does not verify") && table.contains("`h0`") && table.contains("at seq 11"),
        "{table}"
    );
    let lines = stdout(&expect(&mut read(&team, &["audit", "--json"]), 1));
    assert!(lines.starts_with(r#"{"integrity""#), "{lines}");
    expect(&mut read(&team, &["audit", "--host", "h1"]), 0);
    // A second completion of h1's call c1001, pushed and accepted: an
    // anomaly of h1's log (exit 4), told by host and log.
    let mut store =
        gavel::store::Store::open(&team.hosts[1].db, gavel::store::Durability::Normal).unwrap();
    store
        .append(&[gavel::audit::Event::now(
            "c1001",
            Some("bash"),
            gavel::audit::EventBody::Result(gavel::audit::ResultRecord::from_result(
                &gavel::ToolResult {
                    status: gavel::audit::ExecutionStatus::Succeeded,
                    content: "again\n".into(),
                    exit_code: Some(0),
                    duration_ms: 1,
                },
            )),
        )])
        .unwrap();
    drop(store);
    push_all(&team, 1..2);
    team.ingest(0);
    let h1 = json_out(&expect(
        &mut read(&team, &["audit", "--host", "h1", "--format", "json"]),
        4,
    ));
    assert_eq!(h1["verified"], true, "{h1}");
    assert_eq!(h1["anomalies"][0]["call_id"], "c1001", "{h1}");
    assert_eq!(h1["anomalies"][0]["central"]["host"], "h1", "{h1}");
    let table = stdout(&expect(&mut read(&team, &["audit", "--host", "h1"]), 4));
    assert!(table.contains("c1001") && table.contains("host"), "{table}");
    // A log that does not verify outranks anomalies elsewhere.
    expect(&mut read(&team, &["audit"]), 1);

    let out = expect(
        &mut read(&team, &["report", "--html", index.to_str().unwrap()]),
        1,
    );
    assert!(
        stderr(&out).contains("1 of them do not verify"),
        "{}",
        stderr(&out)
    );
    let text = std::fs::read_to_string(&index).unwrap();
    assert!(text.contains("1 of 2 logs do NOT verify"), "{text}");
    expect(
        &mut read(
            &team,
            &["report", "--html", one.to_str().unwrap(), "--host", "h1"],
        ),
        0,
    );
}
