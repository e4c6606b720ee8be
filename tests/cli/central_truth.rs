//! The central store tells the truth (issue 24): its reading commands
//! check what they read and mark what they could not verify, refusals are
//! visible to the owner and to `push --wait`, `report` and `audit` take
//! every log, and a host is told when its log no longer matches what it
//! pushed. Against a real PostgreSQL server; same skip rule and per-test
//! schema as `central.rs`.

use postgres::Client;
use serde_json::Value;

use crate::central::{Team, append_calls, expect, json_out, push_all, setup_hosts};
use crate::support::{stderr, stdout};

/// A team of `n` hosts, each with `calls` calls pushed and ingested.
fn team_with_calls(n: usize, calls: usize) -> Option<Team> {
    let team = setup_hosts(n)?;
    for (i, host) in team.hosts.iter().enumerate() {
        append_calls(&host.db, i * 1000, calls);
    }
    push_all(&team, 0..n);
    team.ingest(0);
    Some(team)
}

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
