//! `gavel report --html`: the evidence page, through the binary, on the
//! demo's database (plus a hostile command). Its numbers are checked
//! against `gavel stats --json`, `gavel verify --json` and `gavel replay
//! --json`; then headless Chromium renders it (skipped, saying so, when
//! `chromium` is missing, unless GAVEL_REQUIRE_CHROMIUM=1).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::Value;

use crate::support::{Sandbox, code, fixture, json, run_expecting, stderr};

/// The command a hostile agent asked for: it must reach the page as text.
const HOSTILE: &str = "echo </code><script>alert('pwned')</script><img src=http://evil.example/x>";

/// The demo's database in `sandbox`, with one more call whose command is hostile markup.
fn demo_db(sandbox: &Sandbox) -> PathBuf {
    let dir = sandbox.root.join("demo");
    run_expecting(
        sandbox
            .bare()
            .args(["demo", "--dir", dir.to_str().unwrap()]),
        0,
    );
    let db = dir.join(".gavel").join("audit.db");
    let arguments = serde_json::json!({ "command": HOSTILE }).to_string();
    let output = sandbox
        .bare()
        .args(["run", "bash", &arguments, "--workspace"])
        .arg(&dir)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        code(&output) != 2,
        "the hostile call was not recorded: {}",
        stderr(&output)
    );
    db
}

/// Writes the report of `db` to `name` in the sandbox; returns its path, text and exit code.
fn report(sandbox: &Sandbox, db: &Path, name: &str, extra: &[&str]) -> (PathBuf, String, i32) {
    let out = sandbox.root.join(name);
    let output = sandbox
        .bare()
        .args(["report", "--html"])
        .arg(&out)
        .arg("--db")
        .arg(db)
        .args(extra)
        .output()
        .unwrap();
    let code = code(&output);
    assert!(code == 0 || code == 1, "report failed: {}", stderr(&output));
    let html = std::fs::read_to_string(&out).expect("the report is written");
    (out, html, code)
}

fn stats(sandbox: &Sandbox, db: &Path, extra: &[&str]) -> Value {
    json(&run_expecting(
        sandbox
            .bare()
            .args(["stats", "--json", "--db"])
            .arg(db)
            .args(extra),
        0,
    ))
}

/// Every `data-stat` number on a page, by name.
fn page_stats(html: &str) -> BTreeMap<String, u64> {
    let re = Regex::new(r#"data-stat="([^"]+)"[^>]*>([0-9]+)<"#).unwrap();
    re.captures_iter(html)
        .map(|c| (c[1].to_owned(), c[2].parse().unwrap()))
        .collect()
}

/// `gavel stats --json` flattened the way the page names its numbers.
fn expected_stats(stats: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for key in ["calls", "anomalous_calls"] {
        out.insert(key.to_owned(), stats[key].as_u64().unwrap());
    }
    for group in [
        "by_action",
        "by_rule",
        "by_tool",
        "by_approval",
        "by_status",
        "by_anomaly",
    ] {
        for (label, count) in stats[group].as_object().unwrap() {
            out.insert(format!("{group}.{label}"), count.as_u64().unwrap());
        }
    }
    out
}

/// The page's numbers that `gavel stats` also gives must equal it, and the page must show all of them.
fn assert_numbers_agree(html: &str, stats: &Value) {
    let shown = page_stats(html);
    for (name, value) in expected_stats(stats) {
        assert_eq!(shown.get(&name), Some(&value), "`{name}` on the page");
    }
}

fn tamper(db: &Path, seq: u64) {
    crate::store::attacker(db)
        .execute(
            "UPDATE events SET ts_us = ts_us - 3600000000 WHERE seq = ?1",
            [seq],
        )
        .unwrap();
}

fn verify_json(sandbox: &Sandbox, db: &Path) -> Value {
    let output = sandbox
        .bare()
        .args(["verify", "--json", "--db"])
        .arg(db)
        .output()
        .unwrap();
    json(&output)
}

#[test]
fn report_of_the_demo_shows_each_section_with_the_numbers_of_stats() {
    let sandbox = Sandbox::new();
    let db = demo_db(&sandbox);
    let (_, html, code) = report(&sandbox, &db, "report.html", &[]);
    assert_eq!(code, 0);
    for needle in [
        r#"<section id="integrity">"#,
        r#"id="verify" data-ok="true""#,
        r#"<section id="activity">"#,
        "<svg",
        r#"<section id="anomalies">"#,
        r#"<table id="call-table">"#,
        r#"<details class="call" id="call-"#,
        r#"<section id="policy">"#,
        "path.write_requires_approval",
        "bash.hard_deny",
        "Top denied commands",
        "rm -rf .&#x2f;build",
        "scripts&#x2f;verify_chain.py",
        // `gavel run` and the demo record their principal's client, `cli`.
        r#"<table data-group="by_client"><tr><th>client</th><th class="n">calls</th></tr>
<tr><td>cli</td><td class="n">7</td></tr>"#,
    ] {
        assert!(html.contains(needle), "the report lacks `{needle}`");
    }
    let db_text = db.display().to_string().replace('/', "&#x2f;");
    assert!(html.contains(&format!("gavel verify --db {db_text}")));
    assert_numbers_agree(&html, &stats(&sandbox, &db, &[]));
    // The counts are the whole log's, not the table's.
    assert!(!html.contains(r#"id="cap-note""#));
}

#[test]
fn report_escapes_hostile_text_from_the_record() {
    let sandbox = Sandbox::new();
    let db = demo_db(&sandbox);
    let (_, html, _) = report(&sandbox, &db, "report.html", &[]);
    assert!(
        !html.contains("<script>alert"),
        "raw script from the record"
    );
    assert!(
        !html.contains("<img src=http://evil"),
        "raw markup from the record"
    );
    assert!(
        html.contains("&lt;script&gt;alert("),
        "the command is shown, escaped"
    );
    // The page's own little script is its only one.
    assert_eq!(html.matches("<script").count(), 1);
}

#[test]
fn report_is_byte_identical_for_the_same_database_but_its_generation_line() {
    let sandbox = Sandbox::new();
    let db = demo_db(&sandbox);
    let (_, first, _) = report(&sandbox, &db, "a.html", &[]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (_, second, _) = report(&sandbox, &db, "b.html", &[]);
    let differing: Vec<(&str, &str)> = first
        .lines()
        .zip(second.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(first.lines().count(), second.lines().count());
    assert!(differing.len() <= 1, "lines differ: {differing:?}");
    for (a, _) in differing {
        assert!(
            a.contains(r#"id="generated""#),
            "a line other than the generation time differs: {a}"
        );
    }
}

#[test]
fn report_fetches_nothing_from_anywhere() {
    let sandbox = Sandbox::new();
    let db = demo_db(&sandbox);
    let (_, html, _) = report(&sandbox, &db, "report.html", &[]);
    assert!(
        html.contains(r#"content="default-src 'none';"#),
        "a strict CSP"
    );
    // Text from the record is escaped, so every `<` left opens one of the page's own tags.
    let tags = Regex::new(r"<[a-zA-Z][^>]*>").unwrap();
    let external =
        Regex::new(r#"(?i)(src|href|action|xlink:href)\s*=\s*["']?\s*(https?:|//)"#).unwrap();
    let mut hits: Vec<&str> = tags
        .find_iter(&html)
        .map(|m| m.as_str())
        .filter(|tag| external.is_match(tag))
        .collect();
    hits.extend(
        Regex::new(r"url\(|@import")
            .unwrap()
            .find_iter(&html)
            .map(|m| m.as_str()),
    );
    assert!(hits.is_empty(), "external references: {hits:?}");
}

#[test]
fn report_of_a_tampered_log_shows_the_banner_with_the_first_bad_seq_and_exits_1() {
    let sandbox = Sandbox::new();
    let db = demo_db(&sandbox);
    tamper(&db, 5);
    let verify = verify_json(&sandbox, &db);
    assert_eq!(verify["first_bad_seq"], 5, "{verify}");
    let (_, html, code) = report(&sandbox, &db, "report.html", &[]);
    assert_eq!(code, 1);
    assert!(html.contains(r#"id="verify" data-ok="false" data-first-bad-seq="5""#));
    assert!(html.contains(&format!(
        r#"data-problem="{}""#,
        verify["problem"].as_str().unwrap()
    )));
    assert!(html.contains(r#"<span id="first-bad-seq">5</span>"#));
}

#[test]
fn report_filters_select_the_same_calls_as_stats() {
    let sandbox = Sandbox::new();
    let db = demo_db(&sandbox);
    for filters in [
        &["--action", "deny"][..],
        &["--tool", "write_file"][..],
        &["--since", "1d", "--until", "2999-01-01"][..],
    ] {
        let (_, html, _) = report(&sandbox, &db, "report.html", filters);
        assert_numbers_agree(&html, &stats(&sandbox, &db, filters));
        assert!(html.contains(r#"id="filters""#));
    }
}

#[test]
fn report_caps_the_calls_table_with_a_note_and_still_counts_everything() {
    let sandbox = Sandbox::new();
    let db = demo_db(&sandbox);
    let (_, html, _) = report(&sandbox, &db, "report.html", &["--max-rows", "2"]);
    let all = stats(&sandbox, &db, &[]);
    assert_numbers_agree(&html, &all);
    assert!(html.contains(r#"id="cap-note""#));
    let body = html.split(r#"<table id="call-table">"#).nth(1).unwrap();
    let body = body.split("</table>").next().unwrap();
    assert_eq!(body.matches("<tr><td class=\"n\">").count(), 2);
}

#[test]
fn report_with_compare_policy_shows_the_drift_replay_reports() {
    let sandbox = Sandbox::new();
    let db = demo_db(&sandbox);
    let old = fixture("policies/deploy-allow.toml");
    let (_, html, _) = report(
        &sandbox,
        &db,
        "report.html",
        &["--compare-policy", old.to_str().unwrap()],
    );
    let replay = json(
        &sandbox
            .bare()
            .args(["replay", "--json", "--policy"])
            .arg(&old)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap(),
    );
    assert!(html.contains(r#"<section id="drift">"#));
    for key in ["total", "unchanged", "loosened", "tightened", "rerouted"] {
        let want = format!(
            r#"data-drift="{key}"{}>{}<"#,
            "",
            replay[key].as_u64().unwrap()
        );
        let re = Regex::new(&format!(r#"data-drift="{key}"[^>]*>([0-9]+)<"#)).unwrap();
        let shown = re.captures(&html).map(|c| c[1].to_owned());
        assert_eq!(
            shown.as_deref(),
            Some(replay[key].to_string().as_str()),
            "{want}"
        );
    }
}

// Headless Chromium.

/// The `chromium` binary, or `None` (after saying so) when it is missing
/// and GAVEL_REQUIRE_CHROMIUM is not set.
fn chromium(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromium"))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("GAVEL_REQUIRE_CHROMIUM").is_none(),
            "GAVEL_REQUIRE_CHROMIUM is set but `chromium` is not on PATH"
        );
        eprintln!("SKIPPED {test}: `chromium` is not installed (apt-get install chromium)");
    }
    found
}

/// Chromium's flags for a quiet, hermetic headless run in `profile`.
fn headless(chromium: &Path, profile: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--no-first-run",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// Renders `page` and returns the DOM after its script ran, and the URLs
/// of the requests the page itself made (Chromium's own background
/// requests have no origin as initiator and are left out).
fn render(chromium: &Path, dir: &Path, page: &Path) -> (String, Vec<String>) {
    let netlog = dir.join("net.json");
    let output = headless(chromium, &dir.join("profile"))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(output.status.success(), "chromium: {output:?}");
    let log: Value = serde_json::from_slice(&std::fs::read(&netlog).unwrap())
        .expect("chromium's net log is JSON");
    let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].clone();
    let requests = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == start)
        .filter_map(|e| {
            let url = e["params"]["url"].as_str()?;
            let initiator = e["params"]["initiator"].as_str().unwrap_or_default();
            (initiator != "not an origin" && url != format!("file://{}", page.display()))
                .then(|| url.to_owned())
        })
        .collect();
    (String::from_utf8(output.stdout).unwrap(), requests)
}

#[test]
fn chromium_counts_a_page_request_so_a_zero_means_something() {
    let Some(chromium) = chromium("chromium_counts_a_page_request_so_a_zero_means_something")
    else {
        return;
    };
    let sandbox = Sandbox::new();
    let page = sandbox.root.join("control.html");
    std::fs::write(
        &page,
        r#"<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png"></body></html>"#,
    )
    .unwrap();
    let (_, requests) = render(&chromium, &sandbox.root, &page);
    assert_eq!(requests, ["http://127.0.0.1:9/x.png"]);
}

#[test]
fn chromium_renders_the_demo_report_with_the_numbers_of_stats_and_no_request() {
    let Some(chromium) =
        chromium("chromium_renders_the_demo_report_with_the_numbers_of_stats_and_no_request")
    else {
        return;
    };
    let sandbox = Sandbox::new();
    let db = demo_db(&sandbox);
    let (page, _, _) = report(&sandbox, &db, "report.html", &[]);
    let (dom, requests) = render(&chromium, &sandbox.root, &page);
    assert_eq!(requests, Vec::<String>::new(), "the page made requests");
    assert_numbers_agree(&dom, &stats(&sandbox, &db, &[]));
    // The inline script ran: its filter box is shown and counts the rows.
    assert!(
        dom.contains(r#"<div class="toolbar">"#),
        "the toolbar is unhidden"
    );
    assert!(dom.contains("7 of 7 rows"), "the script counted the rows");
    // No injected element from the record made it into the DOM.
    assert!(!dom.contains("evil.example/x\">"));
    assert_eq!(dom.matches("<script").count(), 1);
    let shot = sandbox.root.join("report.png");
    let output = headless(&chromium, &sandbox.root.join("profile"))
        .arg("--window-size=1280,2000")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "chromium: {output:?}");
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
}

#[test]
fn chromium_shows_the_tampered_banner_with_the_first_bad_seq() {
    let Some(chromium) = chromium("chromium_shows_the_tampered_banner_with_the_first_bad_seq")
    else {
        return;
    };
    let sandbox = Sandbox::new();
    let db = demo_db(&sandbox);
    let copy = sandbox.root.join("copy.db");
    std::fs::copy(&db, &copy).unwrap();
    tamper(&copy, 7);
    let (page, _, code) = report(&sandbox, &copy, "tampered.html", &[]);
    assert_eq!(code, 1);
    let (dom, requests) = render(&chromium, &sandbox.root, &page);
    assert!(requests.is_empty(), "{requests:?}");
    let verify = verify_json(&sandbox, &copy);
    assert_eq!(verify["first_bad_seq"], 7);
    assert!(
        dom.contains(r#"class="banner bad" id="verify" data-ok="false" data-first-bad-seq="7""#)
    );
    assert!(dom.contains(r#"<span id="first-bad-seq">7</span>"#));
}

/// The page tells who, as recorded: each call's user and host, approvers
/// where an approval row names one, rows past a tampered one marked; and
/// it is no more readable than its database.
#[test]
fn report_tells_who_from_the_record_and_keeps_the_database_mode() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    let db = demo_db(&sandbox);
    let (out, html, _) = report(&sandbox, &db, "who.html", &[]);
    assert!(
        !html.contains("the record holds no user or host"),
        "a sentence the data contradicts"
    );
    assert!(!html.contains("Approver identities are not recorded"));
    let user = run_expecting(
        sandbox
            .bare()
            .args(["log", "--json", "--limit", "1", "--db"])
            .arg(&db),
        0,
    );
    let first: Value =
        serde_json::from_slice(user.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    let who = format!(
        "{}@{}",
        first["principal"]["user"].as_str().unwrap(),
        first["principal"]["host"].as_str().unwrap()
    );
    assert!(
        html.contains(r#"data-group="by_who""#),
        "no user@host table"
    );
    assert!(html.contains(&who), "{who} not on the page");
    // The demo answers its asks with a flag: the approval rows say so.
    assert!(
        html.contains("approved by") || html.contains("(flag)"),
        "no approver shown"
    );
    let db_mode = std::fs::metadata(&db).unwrap().permissions().mode() & 0o777;
    let page_mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        page_mode,
        db_mode & 0o666,
        "page {page_mode:o}, database {db_mode:o}"
    );

    tamper(&db, 5);
    let (_, html, code) = report(&sandbox, &db, "tampered.html", &[]);
    assert_eq!(code, 1);
    assert!(
        html.contains("UNVERIFIED"),
        "rows past the bad one are not marked"
    );
}
