//! Shell understanding: the corpus in `fixtures/shell/corpus/*.toml` under the
//! built-in policy and a prefix-rule policy, through the public API and the
//! binary; and the property that an allow means every simple command matched.

use proptest::prelude::*;
use serde::Deserialize;
use serde_json::json;

use gavel::facts::lexical_facts;
use gavel::{Action, Policy, ToolRequest, Workspace};

use crate::support::{Sandbox, fixture, json, run_expecting};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    why: String,
    command: String,
    default: String,
    prefix: String,
}

#[derive(Deserialize)]
struct Corpus {
    case: Vec<Case>,
}

/// Every case of every file in `fixtures/shell/corpus/`, file by file in
/// name order.
fn corpus() -> Vec<Case> {
    let mut files: Vec<_> = std::fs::read_dir(fixture("shell/corpus"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            let corpus: Corpus =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            corpus.case
        })
        .collect()
}

fn prefix_policy() -> Policy {
    Policy::load(&fixture("shell/prefix-policy.toml")).unwrap()
}

#[test]
fn the_corpus_is_decided_as_expected_under_both_policies() {
    let cases = corpus();
    assert!(
        cases.len() >= 60,
        "the corpus holds {} commands",
        cases.len()
    );
    let sandbox = Sandbox::new();
    let workspace = Workspace::open(&sandbox.ws).unwrap();
    let (builtin, prefix) = (Policy::builtin(), prefix_policy());
    let mut wrong = Vec::new();
    for case in &cases {
        let request = ToolRequest::new("c", "bash", json!({ "command": case.command }));
        let facts = workspace.facts(&request);
        for (policy, expected) in [(&builtin, &case.default), (&prefix, &case.prefix)] {
            let decision = policy.decide(&request, &facts);
            let got = format!("{} {}", decision.action, decision.rule_id);
            if got != *expected {
                wrong.push(format!(
                    "{:?} ({}) under `{}`: expected {expected}, got {got}",
                    case.command,
                    case.why,
                    policy.reference().name
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// A script past 16 KiB is read without tree-sitter's second opinion
/// where the strict reader reads it (`src/shell/walk.rs`): every denied
/// case of the corpus is still denied, by the same rule, at the start, in
/// the middle and at the end of a long list, and before a construct the
/// strict reader refuses.
#[test]
#[ignore = "slow: a plain `cargo test` leaves it out; `cargo test -- --ignored` (and CI) runs it"]
fn denied_cases_stay_denied_inside_long_scripts() {
    let cases = corpus();
    let denied: Vec<&Case> = cases
        .iter()
        .filter(|c| c.default.starts_with("deny"))
        // Only blanks: embedded, no longer a command without words.
        .filter(|c| !c.default.ends_with("request.invalid_arguments"))
        .collect();
    assert!(denied.len() >= 40, "{} denied cases", denied.len());
    let sandbox = Sandbox::new();
    let workspace = Workspace::open(&sandbox.ws).unwrap();
    let builtin = Policy::builtin();
    // 17 KB each, in long words so that the test stays fast: past the
    // 16 KiB threshold, and cut once per pad.
    let word = "a".repeat(1_000);
    let lines = format!("ls -l {word}\n").repeat(17);
    let list = format!("ls -l {word}; ").repeat(17);
    let refused = "select x in a; do echo $x; done\n";
    let mut wrong = Vec::new();
    for case in &denied {
        let c = &case.command;
        let scripts = [
            // At the start, the middle (with cuts on both sides) and the
            // end of a long script: read by the strict reader alone
            // unless it refuses the case.
            format!("{c}\n{lines}"),
            format!("{lines}{c}\n{lines}{lines}"),
            format!("{list}{c}"),
            // Before a refused construct: the part with the case is read
            // by the strict reader alone.
            format!("{lines}{c}\n{lines}{lines}{refused}"),
            // After one: only tree-sitter's walk reads the case, right
            // after the refused line and further on.
            format!("{lines}{refused}{c}\n{lines}"),
            format!("{lines}{refused}{lines}{c}\n{lines}"),
        ];
        for script in scripts {
            assert!(script.len() > 16 * 1024);
            let request = ToolRequest::new("c", "bash", json!({ "command": script }));
            let decision = builtin.decide(&request, &workspace.facts(&request));
            let got = format!("{} {}", decision.action, decision.rule_id);
            if got != case.default {
                let at = script.find(c.as_str()).unwrap_or(0);
                wrong.push(format!(
                    "{c:?} ({}) at byte {at} of {}: expected {}, got {got}",
                    case.why,
                    script.len(),
                    case.default
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn unprovable_commands_say_what_could_not_be_proven() {
    let request = ToolRequest::new(
        "c",
        "bash",
        json!({ "command": "echo $(curl -s x) && eval \"$Y\"" }),
    );
    let decision = Policy::builtin().decide(&request, &lexical_facts(&request));
    assert_eq!(decision.rule_id, "bash.unprovable");
    assert!(
        decision.reason.contains("command substitution"),
        "{}",
        decision.reason
    );
    assert!(decision.reason.contains("eval"), "{}", decision.reason);
}

#[test]
fn the_binary_records_the_parsed_commands_as_facts() {
    let sandbox = Sandbox::new();
    let output = run_expecting(
        &mut sandbox.gavel(&[
            "check",
            "bash",
            r#"{"command":"env FOO=1 nice s\\udo ls > out.txt"}"#,
            "--json",
        ]),
        0,
    );
    let report = json(&output);
    assert_eq!(report["rule_id"], "bash.hard_deny");
    assert_eq!(
        report["facts"]["shell"]["commands"][0]["words"],
        json!(["sudo", "ls"])
    );
    let target = &report["facts"]["paths"][0];
    assert_eq!(target["requested"], "out.txt");
    assert_eq!(target["inside"], true);
}

/// Simple commands built from words the prefix policy allows, and some it does not.
fn command() -> impl Strategy<Value = String> {
    let program = prop_oneof![
        Just("ls"),
        Just("cat"),
        Just("git status"),
        Just("git push"),
        Just("echo"),
        Just("rm"),
        Just("python3"),
        Just("curl"),
        Just("$X"),
        Just("sudo"),
    ];
    let arg = prop_oneof![
        Just("a.txt"),
        Just("-la"),
        Just("'q w'"),
        Just("$(ls)"),
        Just("`id`"),
        Just("> out.txt"),
        Just("2>&1"),
        Just("< in.txt"),
        Just("\"x y\""),
    ];
    (program, prop::collection::vec(arg, 0..3)).prop_map(|(p, args)| {
        let mut words = vec![p.to_owned()];
        words.extend(args.into_iter().map(str::to_owned));
        words.join(" ")
    })
}

fn script() -> impl Strategy<Value = String> {
    let op = prop_oneof![
        Just(" && "),
        Just(" || "),
        Just(" | "),
        Just("; "),
        Just("\n")
    ];
    (command(), prop::collection::vec((op, command()), 0..4)).prop_map(|(first, rest)| {
        let mut text = first;
        for (op, next) in rest {
            text.push_str(op);
            text.push_str(&next);
        }
        text
    })
}

const ALLOWED: &[&[&str]] = &[
    &["git", "status"],
    &["git", "diff"],
    &["ls"],
    &["cat"],
    &["grep"],
    &["echo"],
    &["wc"],
];

proptest! {
    #[test]
    fn an_allow_means_every_simple_command_matched(script in script()) {
        let policy = prefix_policy();
        let request = ToolRequest::new("p", "bash", json!({ "command": script }));
        let facts = lexical_facts(&request);
        let decision = policy.decide(&request, &facts);
        if decision.action == Action::Allow {
            let shell = facts.shell.as_ref().unwrap();
            prop_assert!(shell.unprovable.is_empty(), "{script:?}");
            prop_assert!(!shell.commands.is_empty());
            for c in &shell.commands {
                prop_assert!(
                    ALLOWED.iter().any(|p| c.words.len() >= p.len() && c.words.iter().zip(p.iter()).all(|(w, p)| w == p)),
                    "{script:?}: {:?} is not allowed", c.words
                );
                prop_assert!(c.redirects.iter().all(|r| !r.writes() || r.target == "/dev/null"), "{script:?}");
            }
        }
    }
}

#[test]
fn explain_shows_the_parsed_commands_and_what_could_not_be_proven() {
    let sandbox = Sandbox::new();
    run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "bash",
            r#"{"command":"ls && echo $(whoami)"}"#,
            "--reject",
            "--call-id",
            "e1",
        ]),
        3,
    );
    let text = crate::support::stdout(&run_expecting(&mut sandbox.gavel(&["explain", "e1"]), 0));
    assert!(text.contains("the command runs, as parsed:"), "{text}");
    assert!(text.contains("    - whoami"), "{text}");
    assert!(
        text.contains("cannot prove: command substitution `$(whoami)`"),
        "{text}"
    );
    assert!(text.contains("by rule `bash.unprovable`"), "{text}");
}

/// Bash crashes parsing 2,000 nested `$(`; past 8,192 levels (a script of
/// more than 16 KiB) a command cannot be judged and is denied whatever
/// the rules, closed or not. Below that, the substitutions are read.
#[test]
fn substitutions_nested_deeper_than_bash_can_parse_are_denied() {
    let nest = |n: usize, close: bool| {
        let closing = if close { ")".repeat(n) } else { String::new() };
        format!("echo {}ls{closing}", "$(".repeat(n))
    };
    let sandbox = Sandbox::new();
    for (command, rule) in [
        (nest(9_000, true), "request.invalid_arguments"),
        (nest(9_000, false), "request.invalid_arguments"),
        (nest(5_000, true), "bash.unprovable"),
        (format!("ls; {}", nest(8_000, true)), "bash.unprovable"),
    ] {
        let args = json!({ "command": command }).to_string();
        let report = json(&run_expecting(
            &mut sandbox.gavel(&["check", "bash", &args, "--json"]),
            0,
        ));
        assert_eq!(report["rule_id"], rule, "{}", report["reason"]);
        if rule == "request.invalid_arguments" {
            assert_eq!(report["action"], "deny");
            let reason = report["reason"].as_str().unwrap_or_default();
            assert!(reason.contains("nested more than 8192"), "{reason}");
        }
    }
}
