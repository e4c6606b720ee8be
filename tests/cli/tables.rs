//! Tables that fit (issue 30): every table-printing command, at 80 and 120
//! columns, keeps its table lines within the width and never breaks a word
//! inside a cell: every word it shows is a word of the same table printed
//! `--wide`, or a prefix of one ending in `…`. Piped output without
//! `$COLUMNS` stays within 160 columns unless `--wide`. The human layout is
//! snapshotted where it holds no temporary path.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::support::{Sandbox, fixture, run_expecting, stdout, tool_payload};

/// The box-drawing characters a table is made of.
const BORDERS: &[char] = &['│', '┌', '┐', '└', '┘', '├', '┤', '┬', '┴', '┼', '─'];

/// The lines of `text` that belong to a table.
fn table_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| l.starts_with(BORDERS))
}

/// The words of the cells of every table in `text`.
fn cell_words(text: &str) -> Vec<&str> {
    table_lines(text)
        .flat_map(|l| l.split(|c: char| c.is_whitespace() || BORDERS.contains(&c)))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Panics when a word of `narrow`'s tables is neither a word of `wide`'s
/// nor a prefix of one cut with `…`: a word broken across lines
/// (`ran_without_deci` then `sion`) is neither. A date is also whole
/// without its year (narrow `log` tables leave it out); `same` rewrites
/// what differs between the two runs (made-up ids) in both.
fn assert_words_whole(what: &str, narrow: &str, wide: &str, same: &[(&str, &str)]) {
    let same: Vec<(regex::Regex, &str)> = same
        .iter()
        .map(|(from, to)| (regex::Regex::new(from).unwrap(), *to))
        .collect();
    let rewrite = |text: &str| {
        same.iter().fold(text.to_owned(), |t, (from, to)| {
            from.replace_all(&t, *to).into_owned()
        })
    };
    let (narrow, wide) = (rewrite(narrow), rewrite(wide));
    let year = regex::Regex::new(r"\b\d{4}-(\d{2}-\d{2})\b").unwrap();
    let mut whole: HashSet<String> = HashSet::new();
    for word in cell_words(&wide) {
        whole.insert(word.to_owned());
        whole.insert(year.replace_all(word, "$1").into_owned());
    }
    for word in cell_words(&narrow) {
        if whole.contains(word) {
            continue;
        }
        let cut = word
            .strip_suffix('…')
            .is_some_and(|stem| whole.iter().any(|w| w.starts_with(stem)));
        assert!(
            cut,
            "{what}: `{word}` is not a whole word of the table, nor one cut with `…`:\n{narrow}\n--- wide:\n{wide}"
        );
    }
}

fn assert_fits(what: &str, text: &str, columns: usize) {
    for line in table_lines(text) {
        assert!(
            line.chars().count() <= columns,
            "{what}: a table line is wider than {columns}:\n{text}"
        );
    }
}

/// The reviewer's mix of calls, a long command, and two anomalies: a
/// denied call that ran and a tool that ran without a decision.
fn recorded() -> Sandbox {
    let sandbox = Sandbox::new();
    crate::store::record_mix(&sandbox);
    let long = json!({
        "command": "grep --recursive --line-number 'needle in a haystack' src tests docs && echo everything is searched"
    });
    let sudo = json!({"command": "sudo rm -rf /var/tmp/x"});
    let hook = |payload: Value| {
        run_expecting(
            sandbox
                .gavel(&["hook", "claude-code"])
                .write_stdin(payload.to_string()),
            0,
        );
    };
    hook(tool_payload(
        &sandbox,
        "pre_tool_use.json",
        "t_long",
        "Bash",
        long,
    ));
    hook(tool_payload(
        &sandbox,
        "pre_tool_use.json",
        "t_denied",
        "Bash",
        sudo.clone(),
    ));
    hook(tool_payload(
        &sandbox,
        "post_tool_use.json",
        "t_denied",
        "Bash",
        sudo,
    ));
    hook(tool_payload(
        &sandbox,
        "post_tool_use.json",
        "t_orphan",
        "Bash",
        json!({"command": "rm notes.txt"}),
    ));
    sandbox
}

/// Every table-printing command over a recorded sandbox, with the exit it ends in.
fn commands() -> Vec<(Vec<String>, i32)> {
    let changed = fixture("replay/changed.toml").display().to_string();
    let cases = fixture("replay/cases.toml").display().to_string();
    let owned = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    vec![
        (owned(&["log"]), 0),
        (owned(&["log", "--events", "--newest-first"]), 0),
        (owned(&["stats"]), 0),
        (owned(&["audit"]), 4),
        (
            owned(&["replay", "--policy", &changed, "--fail-on", "never"]),
            0,
        ),
        (owned(&["show", "c2-write-approved"]), 0),
        (
            owned(&[
                "check",
                "bash",
                r#"{"command":"rm -rf build && head -5 notes.txt"}"#,
                "--explain",
            ]),
            0,
        ),
        (
            owned(&[
                "run",
                "read_file",
                r#"{"path":"notes.txt"}"#,
                "--call-id",
                "again",
            ]),
            0,
        ),
        (owned(&["policy", "test", &cases]), 0),
    ]
}

/// Runs `args` over `sandbox` at `columns` (`None`: piped, no `$COLUMNS`).
fn output(sandbox: &Sandbox, args: &[String], columns: Option<usize>, code: i32) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = sandbox.gavel(&args);
    if let Some(columns) = columns {
        cmd.env("COLUMNS", columns.to_string());
    }
    stdout(&run_expecting(&mut cmd, code))
}

#[test]
fn every_table_fits_80_and_120_columns_with_its_words_whole() {
    let sandbox = recorded();
    for (args, code) in commands() {
        // `run` records a call: run it once per width under its own id.
        let mut wide_args = args.clone();
        wide_args.push("--wide".to_owned());
        let wide = output(&sandbox, &unique(&wide_args, "wide"), None, code);
        for columns in [80, 120] {
            let what = format!("{} at {columns}", args.join(" "));
            let text = output(
                &sandbox,
                &unique(&args, &columns.to_string()),
                Some(columns),
                code,
            );
            assert!(table_lines(&text).count() > 0, "{what}: no table:\n{text}");
            assert_fits(&what, &text, columns);
            assert_words_whole(&what, &text, &wide, &[(r"again-[a-z0-9-]+", "again")]);
        }
    }
}

/// `args` with a `run`'s call id made unique by `suffix`.
fn unique(args: &[String], suffix: &str) -> Vec<String> {
    args.iter()
        .map(|a| match a.as_str() {
            "again" => format!("again-{suffix}"),
            _ => a.clone(),
        })
        .collect()
}

#[test]
fn the_demo_table_fits_80_and_120_columns_with_its_words_whole() {
    let sandbox = Sandbox::new();
    let demo = |extra: &[&str], columns: Option<usize>| {
        let mut args = vec!["demo"];
        args.extend_from_slice(extra);
        let mut cmd = sandbox.bare();
        cmd.args(&args);
        if let Some(columns) = columns {
            cmd.env("COLUMNS", columns.to_string());
        }
        stdout(&run_expecting(&mut cmd, 0))
    };
    let wide = demo(&["--wide"], None);
    for columns in [80, 120] {
        let text = demo(&[], Some(columns));
        let what = format!("demo at {columns}");
        assert_fits(&what, &text, columns);
        assert_words_whole(&what, &text, &wide, &[(r"demo-[0-9a-f]+", "demo-X")]);
        let mut settings = snapshot_settings();
        settings.add_filter(r"/\S*gavel-demo-\d+", "[DEMO]");
        settings.add_filter(r"[0-9a-f]{16}…", "[HEX]…");
        settings
            .bind(|| insta::assert_snapshot!(format!("tables_demo_{columns}"), table_only(&text)));
    }
}

/// Piped, without `$COLUMNS`: at most 160 columns; `--wide` lifts that.
#[test]
fn piped_tables_fit_160_columns_unless_wide() {
    let sandbox = recorded();
    for (args, code) in commands() {
        let text = output(&sandbox, &unique(&args, "piped"), None, code);
        let what = format!("{} piped", args.join(" "));
        assert_fits(&what, &text, 160);
        let mut wide_args = unique(&args, "piped-wide");
        wide_args.push("--wide".to_owned());
        let wide = output(&sandbox, &wide_args, None, code);
        assert_words_whole(&what, &text, &wide, &[(r"again-[a-z0-9-]+", "again")]);
    }
    let log = output(&sandbox, &["log".to_owned()], None, 0);
    let wide = output(&sandbox, &["log".to_owned(), "--wide".to_owned()], None, 0);
    let widest = |t: &str| t.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest(&wide) > 160, "{wide}");
    assert!(widest(&log) <= 160, "{log}");
    // `--wide` adds who made each call.
    assert!(wide.lines().nth(1).unwrap().contains("│ who"), "{wide}");
}

/// At 100 columns `log` keeps the rule column whole: the call narrows and
/// free text goes first.
#[test]
fn log_keeps_rule_ids_whole_at_100_columns() {
    let sandbox = recorded();
    for columns in [100, 120] {
        let text = output(&sandbox, &["log".to_owned()], Some(columns), 0);
        assert!(text.lines().nth(1).unwrap().contains("│ rule"), "{text}");
        for rule in [
            "path.write_requires_approval",
            "path.outside_workspace",
            "bash.hard_deny",
        ] {
            assert!(
                text.contains(&format!("│ {rule} ")),
                "{columns}: {rule}\n{text}"
            );
        }
    }
}

/// The check itself catches what the issue saw: a word broken across the
/// lines of a wrapped cell.
#[test]
fn the_word_check_catches_a_word_broken_across_lines() {
    let wide = "│ seq │ anomaly              │\n│ 7   │ ran_without_decision │\n";
    let broken =
        "│ seq │ anomaly          │\n│ 7   │ ran_without_deci │\n│     │ sion             │\n";
    let cut = "│ seq │ anomaly      │\n│ 7   │ ran_without… │\n";
    assert_words_whole("cut", cut, wide, &[]);
    let caught = std::panic::catch_unwind(|| assert_words_whole("broken", broken, wide, &[]));
    assert!(caught.is_err());
}

fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    // Times keep their length, so the layout is what is checked.
    settings.add_filter(
        r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}",
        "YYYY-MM-DD hh:mm:ss",
    );
    settings.add_filter(r"\d{2}-\d{2} \d{2}:\d{2}:\d{2}", "MM-DD hh:mm:ss");
    // A time wrapped onto two lines.
    settings.add_filter(r"\d{4}-\d{2}-\d{2}", "YYYY-MM-DD");
    settings.add_filter(r"\d{2}:\d{2}:\d{2}", "hh:mm:ss");
    // The demo's call ids, made up per run.
    settings.add_filter(r"demo-[0-9a-f]{8}", "demo-XXXXXXXX");
    settings
}

/// The table lines of `text`, the rest left out.
fn table_only(text: &str) -> String {
    table_lines(text).collect::<Vec<_>>().join("\n")
}

/// The layouts of the tables that hold no temporary path, at 80 and 120.
#[test]
fn table_layouts_at_80_and_120_columns() {
    let sandbox = recorded();
    let changed = fixture("replay/changed.toml").display().to_string();
    let owned = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    for (name, args, code) in [
        ("log", owned(&["log"]), 0),
        ("stats", owned(&["stats", "--tool", "bash"]), 0),
        ("audit", owned(&["audit"]), 4),
        (
            "replay",
            owned(&["replay", "--policy", &changed, "--fail-on", "never"]),
            0,
        ),
    ] {
        for columns in [80, 120] {
            let text = output(&sandbox, &args, Some(columns), code);
            snapshot_settings().bind(|| {
                insta::assert_snapshot!(format!("tables_{name}_{columns}"), table_only(&text))
            });
        }
    }
}

/// Text output too (`explain`, `check --explain`), piped: lines wrap at
/// spaces, and a long list after its `|`, within 160 columns; `--wide`
/// keeps each line whole.
#[test]
fn explanations_fit_160_columns_piped_unless_wide() {
    let sandbox = recorded();
    let widest = |t: &str| t.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    for args in [
        &["explain", "c4-bash-cancelled"][..],
        &[
            "check",
            "bash",
            r#"{"command":"head -5 notes.txt"}"#,
            "--explain",
        ],
    ] {
        let text = stdout(&run_expecting(&mut sandbox.gavel(args), 0));
        assert!(widest(&text) <= 160, "{args:?}:\n{text}");
        let mut wide_args = args.to_vec();
        wide_args.push("--wide");
        let wide = stdout(&run_expecting(&mut sandbox.gavel(&wide_args), 0));
        assert!(widest(&wide) > 160, "{args:?}:\n{wide}");
        // The same words, on more lines.
        let words = |t: &str| {
            t.split(|c: char| c.is_whitespace() || BORDERS.contains(&c) || c == '|')
                .filter(|w| !w.is_empty() && !w.ends_with('…'))
                .map(str::to_owned)
                .collect::<HashSet<_>>()
        };
        assert!(words(&text).is_subset(&words(&wide)), "{args:?}");
    }
}
