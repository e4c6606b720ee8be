//! What a reviewer asks of the record (issue 14): `log` shows what each call
//! ran, newest first with `--tail`, by session, by a text in its arguments,
//! with session events on request, in a table that fits the terminal and
//! streams; reading commands warn when the chain's recent rows do not
//! verify. Through the real binary, against real SQLite files.

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::store::{ids, log, record_mix, record_reads, record_reads_from};
use crate::support::{Sandbox, hook_payload, json_lines, run_expecting, stderr, stdout};

fn mixed() -> Sandbox {
    let sandbox = Sandbox::new();
    record_mix(&sandbox);
    sandbox
}

/// A Claude Code hook payload from `fixtures/clients/claude-code/` in `session`.
fn payload(sandbox: &Sandbox, fixture: &str, session: &str) -> Value {
    let mut value = hook_payload(sandbox, fixture);
    value["session_id"] = json!(session);
    value
}

fn hook(sandbox: &Sandbox, payload: &Value) {
    run_expecting(
        sandbox
            .gavel(&["hook", "claude-code"])
            .write_stdin(payload.to_string()),
        0,
    );
}

/// A `PreToolUse` of `tool` with `input` in `session`.
fn pre(sandbox: &Sandbox, session: &str, id: &str, tool: &str, input: Value) -> Value {
    let mut value = payload(sandbox, "pre_tool_use.json", session);
    value["tool_use_id"] = json!(id);
    value["tool_name"] = json!(tool);
    value["tool_input"] = input;
    value
}

/// Two sessions: `s-one` starts, gets a prompt, runs `ls` and reads a
/// file, stops; `s-two` runs a command with terminal controls in it.
fn two_sessions() -> Sandbox {
    let sandbox = Sandbox::new();
    hook(&sandbox, &payload(&sandbox, "session_start.json", "s-one"));
    hook(
        &sandbox,
        &payload(&sandbox, "user_prompt_submit.json", "s-one"),
    );
    hook(
        &sandbox,
        &pre(
            &sandbox,
            "s-one",
            "t1",
            "Bash",
            json!({"command": "ls src/secrets"}),
        ),
    );
    let notes = sandbox.ws.join("notes.txt").to_string_lossy().into_owned();
    hook(
        &sandbox,
        &pre(&sandbox, "s-one", "t2", "Read", json!({"file_path": notes})),
    );
    hook(&sandbox, &payload(&sandbox, "stop.json", "s-one"));
    hook(
        &sandbox,
        &pre(
            &sandbox,
            "s-two",
            "t3",
            "Bash",
            json!({"command": "printf '\u{1b}[2J'\necho done"}),
        ),
    );
    sandbox
}

/// `gavel log ARGS` as a table `COLUMNS` wide (`None`: no width set).
fn table(sandbox: &Sandbox, columns: Option<&str>, args: &[&str]) -> String {
    let mut all = vec!["log"];
    all.extend_from_slice(args);
    let mut cmd = sandbox.gavel(&all);
    cmd.env_remove("COLUMNS");
    if let Some(columns) = columns {
        cmd.env("COLUMNS", columns);
    }
    stdout(&run_expecting(&mut cmd, 0))
}

/// The table's rows, without its header.
fn rows(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with('│'))
        .skip(1)
        .collect()
}

fn widest_line(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn log_table_has_a_call_column_with_the_command_path_or_pattern() {
    let sandbox = mixed();
    let text = table(&sandbox, Some("300"), &[]);
    let header = text.lines().nth(1).unwrap();
    for column in [
        "time (UTC)",
        "id",
        "tool",
        "call",
        "action",
        "rule",
        "status",
    ] {
        assert!(header.contains(column), "{header}");
    }
    let row = |id: &str| {
        text.lines()
            .find(|l| l.contains(id))
            .unwrap_or_else(|| panic!("no row for {id}:\n{text}"))
            .to_owned()
    };
    assert!(row("c1-read").contains("│ notes.txt "), "{text}");
    assert!(row("c5-sudo").contains("│ sudo rm -rf / "), "{text}");
    assert!(
        row("c6-escape").contains("│ ../outside/secret.txt "),
        "{text}"
    );
    assert!(
        row("c7-unknown").contains('{'),
        "other tools show their arguments as JSON"
    );
}

#[test]
fn log_call_column_is_one_line_with_terminal_controls_escaped() {
    let sandbox = two_sessions();
    let text = table(&sandbox, Some("300"), &[]);
    assert!(!text.contains('\u{1b}'), "{text}");
    let row = text.lines().find(|l| l.contains("│ t3 ")).unwrap();
    assert!(row.contains(r"printf '\u{1b}[2J' echo done"), "{row}");
    // Claude Code's Read shows its file path.
    let read = text.lines().find(|l| l.contains("│ t2 ")).unwrap();
    assert!(read.contains("notes.txt"), "{read}");
}

#[test]
fn log_tail_gives_the_newest_calls_newest_first() {
    let sandbox = mixed();
    assert_eq!(
        ids(&log(&sandbox, &["--tail", "2"])),
        ["c8-exit-3", "c7-unknown"]
    );
    assert_eq!(
        ids(&log(&sandbox, &["--tail", "2", "--action", "deny"])),
        ["c7-unknown", "c6-escape"]
    );
    assert_eq!(
        ids(&log(&sandbox, &["--newest-first", "--limit", "1"])),
        ["c8-exit-3"]
    );
    // --limit still means the oldest N, and says so.
    assert_eq!(ids(&log(&sandbox, &["--limit", "1"])), ["c1-read"]);
    let help = stdout(&run_expecting(&mut sandbox.gavel(&["log", "--help"]), 0));
    assert!(help.contains("the oldest N"), "{help}");
    assert!(help.contains("--tail <N>"), "{help}");
    let both = run_expecting(
        &mut sandbox.gavel(&["log", "--tail", "1", "--limit", "1"]),
        2,
    );
    assert!(
        stderr(&both).contains("cannot be used with"),
        "{}",
        stderr(&both)
    );
    // The table too.
    let text = table(&sandbox, Some("300"), &["--tail", "3"]);
    let rows = rows(&text);
    assert_eq!(rows.len(), 3, "{text}");
    assert!(
        rows[0].contains("c8-exit-3") && rows[2].contains("c6-escape"),
        "{text}"
    );
}

#[test]
fn log_session_keeps_one_sessions_calls() {
    let sandbox = two_sessions();
    assert_eq!(ids(&log(&sandbox, &["--session", "s-one"])), ["t1", "t2"]);
    assert_eq!(ids(&log(&sandbox, &["--session", "s-two"])), ["t3"]);
    assert!(log(&sandbox, &["--session", "s-nobody"]).is_empty());
}

#[test]
fn log_grep_searches_argument_values() {
    let sandbox = mixed();
    assert_eq!(ids(&log(&sandbox, &["--grep", "secret"])), ["c6-escape"]);
    assert_eq!(ids(&log(&sandbox, &["--grep", "rm -rf"])), ["c5-sudo"]);
    assert_eq!(
        ids(&log(&sandbox, &["--grep", ".txt", "--tail", "2"])),
        ["c6-escape", "c3-write-rejected"]
    );
    // Values, not keys; case-sensitive.
    assert!(log(&sandbox, &["--grep", "command"]).is_empty());
    assert!(log(&sandbox, &["--grep", "SECRET"]).is_empty());
    let sessions = two_sessions();
    assert_eq!(ids(&log(&sessions, &["--grep", "src/secrets"])), ["t1"]);
}

#[test]
fn log_events_lists_session_events_among_the_calls() {
    let sandbox = two_sessions();
    let rows = log(&sandbox, &["--events"]);
    let kinds: Vec<String> = rows
        .iter()
        .map(|r| match r["kind"].as_str() {
            Some("lifecycle") => format!(
                "{}:{}",
                r["session_id"].as_str().unwrap(),
                r["event"].as_str().unwrap()
            ),
            _ => r["call_id"].as_str().unwrap().to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "s-one:SessionStart",
            "s-one:UserPromptSubmit",
            "t1",
            "t2",
            "s-one:Stop",
            "t3"
        ]
    );
    // Without --events, calls only; a filter only calls match leaves events out.
    assert_eq!(ids(&log(&sandbox, &[])), ["t1", "t2", "t3"]);
    assert_eq!(
        ids(&log(&sandbox, &["--events", "--tool", "bash"])),
        ["t1", "t3"]
    );
    let newest = log(&sandbox, &["--events", "--session", "s-one", "--tail", "2"]);
    assert_eq!(newest[0]["event"], "Stop");
    assert_eq!(newest[1]["call_id"], "t2");
    let text = table(&sandbox, Some("300"), &["--events"]);
    let prompt = text
        .lines()
        .find(|l| l.contains("UserPromptSubmit"))
        .unwrap();
    assert!(prompt.contains("List the files"), "{text}");
}

#[test]
fn log_with_no_match_says_so_instead_of_an_unclosed_table() {
    let sandbox = mixed();
    assert_eq!(
        table(&sandbox, None, &["--tool", "nothing"]),
        "no calls match\n"
    );
    let json = stdout(&run_expecting(
        &mut sandbox.gavel(&["log", "--format", "json", "--tool", "nothing"]),
        0,
    ));
    assert_eq!(json.trim(), "[]");
    let jsonl = stdout(&run_expecting(
        &mut sandbox.gavel(&["log", "--json", "--tool", "nothing"]),
        0,
    ));
    assert_eq!(jsonl, "");
}

#[test]
fn log_table_fits_columns_and_is_closed() {
    let sandbox = mixed();
    for columns in [60usize, 80, 120, 200] {
        let text = table(&sandbox, Some(&columns.to_string()), &[]);
        assert!(widest_line(&text) <= columns, "{columns}:\n{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with('┌') && lines[0].ends_with('┐'),
            "{text}"
        );
        let last = lines.iter().rposition(|l| l.starts_with('└')).unwrap();
        assert!(lines[last].ends_with('┘'), "{text}");
        // Every row is there, one line each, the call column kept.
        assert_eq!(rows(&text).len(), 8, "{text}");
        assert!(lines[1].contains("call"), "{text}");
    }
    let wide = table(&sandbox, Some("200"), &[]);
    assert!(wide.contains("│ c2-write-approved │"), "{wide}");
    assert!(wide.contains("│ sudo rm -rf / "), "{wide}");
    // Not a terminal and no COLUMNS: 160 columns, the rule and approval kept.
    let free = table(&sandbox, None, &[]);
    assert!(widest_line(&free) <= 160, "{free}");
    assert!(free.contains("path.write_requires_approval"), "{free}");
    assert!(free.contains("approval"), "{free}");
    // --wide: nothing is narrowed.
    let whole = table(&sandbox, None, &["--wide"]);
    assert!(widest_line(&whole) > 160, "{whole}");
    assert!(whole.contains("│ reason"), "{whole}");
}

#[test]
fn log_times_are_labelled_utc_and_since_a_date_is_utc_midnight() {
    let sandbox = mixed();
    let help = stdout(&run_expecting(&mut sandbox.gavel(&["log", "--help"]), 0));
    assert!(help.contains("00:00 UTC"), "{help}");
    let text = table(&sandbox, None, &[]);
    assert!(
        text.lines().nth(1).unwrap().contains("time (UTC)"),
        "{text}"
    );
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    assert_eq!(log(&sandbox, &["--since", &today]).len(), 8);
    assert!(log(&sandbox, &["--since", &tomorrow]).is_empty());
}

#[test]
fn log_json_array_is_streamed_whole() {
    let sandbox = mixed();
    let array: Value = serde_json::from_str(&stdout(&run_expecting(
        &mut sandbox.gavel(&["log", "--format", "json"]),
        0,
    )))
    .unwrap();
    let lines = json_lines(&run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0));
    assert_eq!(array, Value::Array(lines));
}

#[test]
fn log_table_streams_past_its_first_rows() {
    // More rows than the widths are set from: later rows keep the layout.
    let sandbox = Sandbox::new();
    record_reads(&sandbox, 60);
    let text = table(&sandbox, Some("100"), &[]);
    let widths: Vec<usize> = text.lines().map(|l| l.chars().count()).collect();
    assert!(widths.iter().all(|w| *w == widths[0]), "{text}");
    assert_eq!(rows(&text).len(), 60);
}

/// Edits a row behind gavel's back, as someone with write access could.
fn tamper(sandbox: &Sandbox, sql: &str) {
    let conn = Connection::open(&sandbox.db).unwrap();
    conn.execute_batch(&format!(
        "DROP TRIGGER IF EXISTS events_no_update; DROP TRIGGER IF EXISTS events_no_delete; {sql}"
    ))
    .unwrap();
}

/// The reading commands, each with what it needs to answer.
const READERS: [&[&str]; 7] = [
    &["log"],
    &["log", "--json", "--tail", "2"],
    &["stats"],
    &["show", "c3-write-rejected"],
    &["explain", "c3-write-rejected"],
    &["export"],
    &["replay", "--skip-verify", "--fail-on", "never"],
];

#[test]
fn reading_commands_warn_once_when_recent_rows_do_not_verify() {
    let sandbox = mixed();
    let mut clean = Vec::new();
    for args in READERS {
        let output = run_expecting(&mut sandbox.gavel(args), 0);
        assert_eq!(stderr(&output), "", "{args:?} on an intact log");
        clean.push(stdout(&output));
    }
    // The third call's decision row, its recorded time moved by 1 µs.
    let seq: i64 = Connection::open(&sandbox.db)
        .unwrap()
        .query_row(
            "SELECT seq FROM events WHERE call_id = 'c3-write-rejected' AND kind = 'decision'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    tamper(
        &sandbox,
        &format!("UPDATE events SET ts_us = ts_us + 1 WHERE seq = {seq}"),
    );
    for args in READERS {
        let output = run_expecting(&mut sandbox.gavel(args), 0);
        let err = stderr(&output);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("gavel: warning: the log does not verify: content_mismatch"),
            "{args:?}: {err}"
        );
        assert!(err.contains(&format!("at seq {seq}")), "{args:?}: {err}");
        // --no-verify: no check, no warning.
        let mut quiet: Vec<&str> = args.to_vec();
        quiet.push("--no-verify");
        let output = run_expecting(&mut sandbox.gavel(&quiet), 0);
        assert_eq!(stderr(&output), "", "{quiet:?}");
    }
    // What the table says is unchanged (a moved time shows the same second or the next).
    let text = table(&sandbox, None, &["--no-verify"]);
    assert_eq!(rows(&text).len(), rows(&clean[0]).len());
}

#[test]
fn a_log_cut_below_its_stored_checkpoint_is_named_by_reading_commands() {
    let sandbox = Sandbox::new();
    record_reads(&sandbox, 3);
    let key = sandbox.root.join("k");
    run_expecting(
        &mut sandbox.gavel(&["keygen", "--out", key.to_str().unwrap()]),
        0,
    );
    run_expecting(
        &mut sandbox.gavel(&["checkpoint", "--key", key.to_str().unwrap()]),
        0,
    );
    record_reads_from(&sandbox, 4, 1);
    assert_eq!(stderr(&run_expecting(&mut sandbox.gavel(&["log"]), 0)), "");
    // Rows after the checkpoint are checked: a chain value rewritten there is found.
    tamper(
        &sandbox,
        "UPDATE events SET chain = zeroblob(32) WHERE seq = 11",
    );
    let err = stderr(&run_expecting(&mut sandbox.gavel(&["stats"]), 0));
    assert!(
        err.contains("chain_break at seq 11") || err.contains("at seq 11"),
        "{err}"
    );
    // The tail cut below what the checkpoint vouches for.
    tamper(&sandbox, "DELETE FROM events WHERE seq > 6");
    let err = stderr(&run_expecting(&mut sandbox.gavel(&["log"]), 0));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("checkpoint_truncated at seq 7"), "{err}");
}

#[test]
fn an_edit_anywhere_in_a_short_log_is_found_by_the_cheap_check() {
    // With no checkpoint the newest 10,000 rows are read (the bound is
    // tested in the library): a short log is read whole.
    let sandbox = mixed();
    tamper(
        &sandbox,
        "UPDATE events SET ts_us = ts_us + 1 WHERE seq = 1",
    );
    let err = stderr(&run_expecting(&mut sandbox.gavel(&["log"]), 0));
    assert!(
        err.contains("at seq 1:"),
        "a short log is read whole: {err}"
    );
    let (code, report) = crate::store::verify(&sandbox, &[]);
    assert_eq!(code, 1);
    assert_eq!(report["first_bad_seq"], 1);
}

#[test]
#[ignore = "slow: a plain `cargo test` leaves it out; `cargo test -- --ignored` (and CI) runs it"]
fn export_of_a_long_log_shows_progress_on_a_terminal_only() {
    use gavel::audit::{Event, EventBody, LifecycleRecord};
    let sandbox = Sandbox::new();
    let n = 200_000;
    {
        let mut store =
            gavel::store::Store::open(&sandbox.db, gavel::store::Durability::Normal).unwrap();
        let event = Event::now(
            "s",
            None,
            EventBody::Lifecycle(LifecycleRecord {
                event: "Stop".into(),
                data: Value::Null,
            }),
        );
        let batch: Vec<Event> = (0..20_000).map(|_| event.clone()).collect();
        for _ in 0..n / batch.len() {
            store.append(&batch).unwrap();
        }
    }
    // stderr not a terminal: no bar.
    let output = run_expecting(&mut sandbox.gavel(&["export", "--no-verify"]), 0);
    assert_eq!(stderr(&output), "");
    assert_eq!(stdout(&output).lines().count(), n + 1);
    // stderr a terminal (`script` gives gavel one; stdout goes to a file): a bar.
    let out = sandbox.root.join("export.jsonl");
    let command = format!(
        "{} export --no-verify --db '{}' --workspace '{}' > '{}'",
        env!("CARGO_BIN_EXE_gavel"),
        sandbox.db.display(),
        sandbox.ws.display(),
        out.display()
    );
    let terminal = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("util-linux `script` runs");
    let shown = String::from_utf8_lossy(&terminal.stdout);
    assert!(shown.contains("exporting"), "{shown}");
    assert!(shown.contains("events"), "{shown}");
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(written.lines().count(), n + 1);
    assert!(!written.contains("exporting"));
}

/// `log` over the mix at `columns`, times filtered to placeholders of
/// their own length so the layout is what is checked.
fn log_snapshot(columns: &str, name: &str) {
    let sandbox = mixed();
    let text = table(&sandbox, Some(columns), &[]);
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.add_filter(
        r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}",
        "YYYY-MM-DD hh:mm:ss",
    );
    settings.add_filter(r"\d{2}-\d{2} \d{2}:\d{2}:\d{2}", "MM-DD hh:mm:ss");
    settings.add_filter(&regex::escape(&sandbox.root.display().to_string()), "[TMP]");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

#[test]
fn log_table_at_80_columns() {
    log_snapshot("80", "log_80_columns");
}

#[test]
fn log_table_at_200_columns() {
    log_snapshot("200", "log_200_columns");
}

#[test]
fn log_local_shows_the_local_time_and_says_so() {
    let sandbox = mixed();
    let utc = table(&sandbox, Some("200"), &["--tail", "1"]);
    let mut cmd = sandbox.gavel(&["log", "--tail", "1", "--local"]);
    cmd.env("COLUMNS", "200").env("TZ", "UTC-9");
    let local = stdout(&run_expecting(&mut cmd, 0));
    assert!(
        local.lines().nth(1).unwrap().contains("time (local)"),
        "{local}"
    );
    let time = |text: &str| {
        let row = rows(text)[0].to_owned();
        let cell = row.split('│').nth(1).unwrap().trim().to_owned();
        chrono::NaiveDateTime::parse_from_str(&cell, "%Y-%m-%d %H:%M:%S").unwrap()
    };
    assert_eq!(time(&local) - time(&utc), chrono::Duration::hours(9));
}

#[test]
fn session_and_grep_select_for_stats_export_and_replay_too() {
    let sandbox = two_sessions();
    let stats: Value = serde_json::from_str(&stdout(&run_expecting(
        &mut sandbox.gavel(&["stats", "--json", "--session", "s-one"]),
        0,
    )))
    .unwrap();
    assert_eq!(stats["calls"], 2);
    let export = json_lines(&run_expecting(
        &mut sandbox.gavel(&["export", "--grep", "src/secrets"]),
        0,
    ));
    assert_eq!(export[0]["selection"]["grep"], "src/secrets");
    assert!(
        export[1..].iter().all(|e| e["call_id"] == "t1"),
        "{export:?}"
    );
    assert!(export.len() > 2);
    let replay = json_lines(&run_expecting(
        &mut sandbox.gavel(&[
            "replay",
            "--json",
            "--fail-on",
            "never",
            "--session",
            "s-two",
        ]),
        0,
    ));
    assert_eq!(replay[0]["total"], 1, "{replay:?}");
    let replay = json_lines(&run_expecting(
        &mut sandbox.gavel(&["replay", "--json", "--fail-on", "never", "--grep", "ls src"]),
        0,
    ));
    assert_eq!(replay[0]["total"], 1, "{replay:?}");
}

#[test]
fn other_tables_fit_columns_by_wrapping_their_widest_cells() {
    let sandbox = mixed();
    for args in [
        &["show", "c2-write-approved"][..],
        &["stats"],
        &[
            "check",
            "write_file",
            r#"{"path":"notes.txt","content":"x"}"#,
            "--explain",
        ],
    ] {
        let mut cmd = sandbox.gavel(args);
        cmd.env("COLUMNS", "70");
        let text = stdout(&run_expecting(&mut cmd, 0));
        let tables = text.lines().filter(|l| l.starts_with(['┌', '│', '└', '├']));
        for line in tables {
            assert!(line.chars().count() <= 70, "{args:?}:\n{text}");
        }
        // Without a width, the same rows, unwrapped.
        let mut cmd = sandbox.gavel(args);
        cmd.env_remove("COLUMNS");
        let free = stdout(&run_expecting(&mut cmd, 0));
        assert!(widest_line(&free) >= widest_line(&text), "{args:?}");
    }
    // The reason is kept whole, on more lines.
    let mut cmd = sandbox.gavel(&[
        "check",
        "write_file",
        r#"{"path":"notes.txt","content":"x"}"#,
    ]);
    cmd.env("COLUMNS", "50");
    let text = stdout(&run_expecting(&mut cmd, 0));
    let words: String = text
        .lines()
        .filter(|l| l.starts_with('│'))
        .map(|l| l.split('│').nth(2).unwrap_or("").trim().to_owned())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        words.contains("write_file mutates workspace content and requires user approval"),
        "{text}"
    );
}

#[test]
fn stats_with_no_match_says_so() {
    let sandbox = mixed();
    let output = run_expecting(&mut sandbox.gavel(&["stats", "--tool", "nothing"]), 0);
    assert_eq!(stdout(&output), "no calls match\n");
    let json: Value = serde_json::from_str(&stdout(&run_expecting(
        &mut sandbox.gavel(&["stats", "--json", "--tool", "nothing"]),
        0,
    )))
    .unwrap();
    assert_eq!(json["calls"], 0);
}
