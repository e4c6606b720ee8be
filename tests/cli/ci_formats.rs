//! `--format junit|sarif|github` of the gating commands (`replay`, `policy
//! test`, `policy lint`, `policy diff`, `verify`): JUnit XML validated
//! against the vendored Ant JUnit schema by xmllint, SARIF against the
//! vendored SARIF 2.1.0 schema, GitHub workflow commands read back line
//! by line; in each, failures exactly where the command's gate fails (its
//! exit code), located in the policy file at the rule's line.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::store::attacker;
use crate::support::{Sandbox, assert_one_line_error, code, record, stderr, stdout};

fn schema(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/schemas")
        .join(name)
}

/// One test case of a JUnit report: its name, class and failure message.
#[derive(Debug)]
struct Case {
    name: String,
    classname: String,
    failure: Option<String>,
}

/// Checks `xml` against tests/schemas/JUnit.xsd with xmllint (skipped,
/// saying so, where xmllint is not installed: `.ci/run` installs it), and
/// reads back its test cases; the suite's counts must be theirs.
fn junit(sandbox: &Sandbox, output: &Output) -> Vec<Case> {
    let xml = stdout(output);
    match xmllint(sandbox, &xml) {
        Some(checked) => checked.unwrap_or_else(|e| panic!("invalid JUnit XML: {e}\n{xml}")),
        None => eprintln!(
            "skipped: validating JUnit XML against tests/schemas/JUnit.xsd needs xmllint \
             (Debian: apt-get install libxml2-utils)"
        ),
    }
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}: {xml}"));
    let suite = doc.root_element();
    assert_eq!(suite.tag_name().name(), "testsuite");
    let cases: Vec<Case> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| Case {
            name: n.attribute("name").unwrap().to_owned(),
            classname: n.attribute("classname").unwrap().to_owned(),
            failure: n
                .children()
                .find(|c| c.has_tag_name("failure"))
                .map(|f| f.attribute("message").unwrap().to_owned()),
        })
        .collect();
    let count = |name: &str| suite.attribute(name).unwrap().parse::<usize>().unwrap();
    assert_eq!(count("tests"), cases.len());
    assert_eq!(
        count("failures"),
        cases.iter().filter(|c| c.failure.is_some()).count()
    );
    cases
}

/// `xml` checked against tests/schemas/JUnit.xsd by xmllint; `None`
/// without xmllint.
fn xmllint(sandbox: &Sandbox, xml: &str) -> Option<Result<(), String>> {
    let file = sandbox.root.join("report.xml");
    std::fs::write(&file, xml).unwrap();
    let checked = std::process::Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(schema("JUnit.xsd"))
        .arg(&file)
        .output()
        .ok()?;
    Some(match checked.status.success() {
        true => Ok(()),
        false => Err(stderr(&checked)),
    })
}

/// The errors of `log` against the vendored SARIF 2.1.0 schema.
fn sarif_errors(log: &Value) -> Vec<String> {
    let text = std::fs::read_to_string(schema("sarif-schema-2.1.0.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    validator
        .iter_errors(log)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// The SARIF log on stdout, validated against the vendored 2.1.0 schema;
/// its results.
fn sarif(output: &Output) -> Vec<Value> {
    let log: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(output)));
    let errors = sarif_errors(&log);
    assert!(errors.is_empty(), "invalid SARIF: {errors:#?}\n{log:#}");
    assert_eq!(log["version"], "2.1.0");
    log["runs"][0]["results"].as_array().unwrap().clone()
}

/// A SARIF result's file and line.
fn place(result: &Value) -> (String, Option<u64>) {
    let location = &result["locations"][0]["physicalLocation"];
    (
        location["artifactLocation"]["uri"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        location["region"]["startLine"].as_u64(),
    )
}

fn levels(results: &[Value], level: &str) -> usize {
    results.iter().filter(|r| r["level"] == level).count()
}

/// The annotation lines (`::error …`) of a GitHub report, by command.
fn annotations<'a>(text: &'a str, command: &str) -> Vec<&'a str> {
    let prefix = format!("::{command} ");
    text.lines().filter(|l| l.starts_with(&prefix)).collect()
}

/// A read, a hard-denied command and a write (asked, rejected), recorded
/// under the built-in policy.
fn three_calls(sandbox: &Sandbox) {
    record(sandbox, "r1", "read_file", json!({"path": "notes.txt"}));
    record(sandbox, "b1", "bash", json!({"command": "rm -rf /"}));
    record(
        sandbox,
        "w1",
        "write_file",
        json!({"path": "out.txt", "content": "x"}),
    );
}

/// A policy (in the sandbox, next to the workspace) whose rule on line 9
/// allows everything: the command and the write are loosened, the read
/// rerouted to `read` on line 3.
const LOOSE: &str = r#"name = "loose"

[[rules]]
id = "read"
action = "allow"
reason = "reads"
tools = ["read_file"]

[[rules]]
id = "everything"
action = "allow"
reason = "all <&> more"
"#;

fn run(sandbox: &Sandbox, args: &[&str], expected: i32) -> Output {
    let output = sandbox.gavel(args).output().unwrap();
    assert_eq!(
        code(&output),
        expected,
        "{args:?}\nstdout: {}\nstderr: {}",
        stdout(&output),
        stderr(&output)
    );
    output
}

#[test]
fn replay_reports_a_case_per_call_and_fails_exactly_the_loosened_ones() {
    let sandbox = Sandbox::new();
    three_calls(&sandbox);
    std::fs::write(sandbox.root.join("loose.toml"), LOOSE).unwrap();
    let gate = ["replay", "--policy", "loose.toml", "--fail-on", "loosened"];

    let cases = junit(
        &sandbox,
        &run(&sandbox, &[&gate[..], &["--format", "junit"]].concat(), 1),
    );
    assert_eq!(cases.len(), 3, "one test case per call: {cases:?}");
    let failed: Vec<&str> = cases
        .iter()
        .filter(|c| c.failure.is_some())
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        failed,
        ["call b1: bash rm -rf /", "call w1: write_file out.txt"]
    );
    let read = cases
        .iter()
        .find(|c| c.name.starts_with("call r1"))
        .unwrap();
    assert_eq!(read.classname, "gavel.replay.rerouted");
    assert!(
        read.failure.is_none(),
        "a rerouted call does not fail --fail-on loosened"
    );

    let results = sarif(&run(
        &sandbox,
        &[&gate[..], &["--format", "sarif"]].concat(),
        1,
    ));
    assert_eq!(results.len(), 3, "{results:#?}");
    assert_eq!(levels(&results, "error"), 2);
    for result in results.iter().filter(|r| r["level"] == "error") {
        assert_eq!(result["ruleId"], "replay.loosened");
        assert_eq!(place(result), ("loose.toml".to_owned(), Some(9)));
    }
    let read = results.iter().find(|r| r["level"] == "note").unwrap();
    assert_eq!(place(read), ("loose.toml".to_owned(), Some(3)));

    let output = run(&sandbox, &[&gate[..], &["--format", "github"]].concat(), 1);
    let text = stdout(&output);
    let errors = annotations(&text, "error");
    assert_eq!(errors.len(), 2, "{text}");
    assert!(
        errors[0].starts_with("::error file=loose.toml,line=9,title=gavel replay%3A call b1%3A bash rm -rf /::loosened: recorded deny `bash.hard_deny`, now allow `everything`"),
        "{text}"
    );
    assert_eq!(annotations(&text, "notice").len(), 1, "{text}");

    // Any drift fails the default gate: the rerouted read too.
    let cases = junit(
        &sandbox,
        &run(
            &sandbox,
            &["replay", "--policy", "loose.toml", "--format", "junit"],
            1,
        ),
    );
    assert_eq!(cases.iter().filter(|c| c.failure.is_some()).count(), 3);
    // Under the policy they were recorded with: every case passes.
    let output = run(&sandbox, &["replay", "--format", "junit"], 0);
    let cases = junit(&sandbox, &output);
    assert_eq!(cases.len(), 3);
    assert!(
        cases
            .iter()
            .all(|c| c.failure.is_none() && c.classname == "gavel.replay.unchanged")
    );
    assert!(sarif(&run(&sandbox, &["replay", "--format", "sarif"], 0)).is_empty());
}

#[test]
fn replay_of_an_export_gates_as_replay_of_its_database() {
    let sandbox = Sandbox::new();
    three_calls(&sandbox);
    std::fs::write(sandbox.root.join("loose.toml"), LOOSE).unwrap();
    let export = run(&sandbox, &["export"], 0);
    std::fs::write(sandbox.root.join("reference.jsonl"), &export.stdout).unwrap();
    let filtered = run(&sandbox, &["export", "--tool", "write_file"], 0);
    std::fs::write(sandbox.root.join("writes.jsonl"), &filtered.stdout).unwrap();
    let gate = [
        "replay",
        "--policy",
        "loose.toml",
        "--fail-on",
        "loosened",
        "--format",
        "junit",
    ];
    let from_db = junit(&sandbox, &run(&sandbox, &gate, 1));
    let mut args = gate.to_vec();
    args.extend(["--export", "reference.jsonl"]);
    // No database at all: the export is the record.
    std::fs::remove_file(&sandbox.db).unwrap();
    let from_export = junit(&sandbox, &run(&sandbox, &args, 1));
    let names = |cases: &[Case]| -> Vec<(String, bool)> {
        cases
            .iter()
            .map(|c| (c.name.clone(), c.failure.is_some()))
            .collect()
    };
    assert_eq!(names(&from_db), names(&from_export));

    // A filtered export (its events verified one by one) replays its calls.
    let mut writes = gate.to_vec();
    writes.extend(["--export", "writes.jsonl"]);
    let cases = junit(&sandbox, &run(&sandbox, &writes, 1));
    assert_eq!(
        names(&cases),
        [("call w1: write_file out.txt".to_owned(), true)]
    );

    // An edited export is refused, not replayed.
    let text = String::from_utf8(export.stdout).unwrap();
    let edited = text.replacen("rm -rf /", "rm -rf ~", 2);
    assert_ne!(edited, text);
    std::fs::write(sandbox.root.join("reference.jsonl"), edited).unwrap();
    let err = assert_one_line_error(&mut sandbox.gavel(&args));
    assert!(err.contains("does not verify"), "{err}");
}

/// Cases against the policy in the workspace's gavel.toml (the built-in
/// one, written out): the second case fails.
const CASES: &str = r#"[[cases]]
name = "read notes"
tool = "read_file"
arguments = { path = "notes.txt" }
action = "allow"

[[cases]]
name = "hard deny"
tool = "bash"
arguments = { command = "sudo rm -rf /" }
action = "allow"

[[cases]]
name = "unknown tool"
tool = "deploy"
action = "deny"
"#;

/// The line a rule begins on in `text`.
fn line_of(text: &str, id: &str) -> u64 {
    let at = text.find(&format!("id = \"{id}\"")).unwrap();
    let header = text[..at].rfind("[[rules]]").unwrap();
    text[..header].matches('\n').count() as u64 + 1
}

#[test]
fn policy_test_fails_exactly_the_failing_case_at_the_rule_that_decided() {
    let sandbox = Sandbox::new();
    let policy =
        String::from_utf8(run(&sandbox, &["policy", "show", "--builtin"], 0).stdout).unwrap();
    sandbox.write("gavel.toml", &policy);
    std::fs::write(sandbox.root.join("cases.toml"), CASES).unwrap();
    let test = ["policy", "test", "cases.toml", "--format"];

    let cases = junit(
        &sandbox,
        &run(&sandbox, &[&test[..], &["junit"]].concat(), 1),
    );
    assert_eq!(cases.len(), 3);
    let failed: Vec<&Case> = cases.iter().filter(|c| c.failure.is_some()).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].name, "case hard deny: bash sudo rm -rf /");
    assert!(
        failed[0]
            .failure
            .as_deref()
            .unwrap()
            .contains("expected allow (any rule), got deny `bash.hard_deny`"),
        "{failed:?}"
    );

    let results = sarif(&run(&sandbox, &[&test[..], &["sarif"]].concat(), 1));
    assert_eq!(results.len(), 1);
    assert_eq!(
        place(&results[0]),
        (
            "ws/gavel.toml".to_owned(),
            Some(line_of(&policy, "bash.hard_deny"))
        ),
        "relative to the current folder"
    );
    let text = stdout(&run(&sandbox, &[&test[..], &["github"]].concat(), 1));
    let errors = annotations(&text, "error");
    assert_eq!(errors.len(), 1, "{text}");
    assert!(
        errors[0].starts_with(&format!(
            "::error file=ws/gavel.toml,line={},title=gavel policy test%3A case hard deny%3A bash sudo rm -rf /::failed: expected allow",
            line_of(&policy, "bash.hard_deny")
        )),
        "{text}"
    );

    // Passing cases: a report without failures, and exit 0.
    std::fs::write(
        sandbox.root.join("cases.toml"),
        CASES.replace(
            "action = \"allow\"\n\n[[cases]]\nname = \"unknown",
            "action = \"deny\"\n\n[[cases]]\nname = \"unknown",
        ),
    )
    .unwrap();
    let cases = junit(
        &sandbox,
        &run(&sandbox, &[&test[..], &["junit"]].concat(), 0),
    );
    assert!(cases.iter().all(|c| c.failure.is_none()), "{cases:?}");
    assert!(
        annotations(
            &stdout(&run(&sandbox, &[&test[..], &["github"]].concat(), 0)),
            "error"
        )
        .is_empty()
    );

    // Rewriting the cases is not a report.
    let err =
        assert_one_line_error(&mut sandbox.gavel(&[&test[..], &["junit", "--accept"]].concat()));
    assert!(err.contains("--accept"), "{err}");
}

/// A policy whose second rule can never decide (line 9), behind an
/// unconditional allow (line 3).
const SHADOWED: &str = r#"name = "shadowed"

[[rules]]
id = "anything"
action = "allow"
reason = "all"

[[rules]]
id = "never.reached"
action = "deny"
reason = "too late"
tools = ["bash"]
"#;

#[test]
fn lint_findings_fail_only_under_strict() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.root.join("shadowed.toml"), SHADOWED).unwrap();
    let lint = ["policy", "lint", "shadowed.toml", "--no-usage", "--format"];

    let cases = junit(
        &sandbox,
        &run(&sandbox, &[&lint[..], &["junit", "--strict"]].concat(), 1),
    );
    let classes: Vec<&str> = cases.iter().map(|c| c.classname.as_str()).collect();
    assert_eq!(
        classes,
        ["gavel.lint.unconditional_allow", "gavel.lint.shadowed"]
    );
    assert!(cases.iter().all(|c| c.failure.is_some()), "{cases:?}");

    let results = sarif(&run(
        &sandbox,
        &[&lint[..], &["sarif", "--strict"]].concat(),
        1,
    ));
    let places: Vec<(String, Option<u64>)> = results.iter().map(place).collect();
    assert_eq!(
        places,
        [
            ("shadowed.toml".to_owned(), Some(3)),
            ("shadowed.toml".to_owned(), Some(8))
        ]
    );
    assert_eq!(levels(&results, "error"), 2);

    // Without --strict the same findings are warnings, and lint passes.
    let cases = junit(
        &sandbox,
        &run(&sandbox, &[&lint[..], &["junit"]].concat(), 0),
    );
    assert_eq!(cases.len(), 2);
    assert!(cases.iter().all(|c| c.failure.is_none()));
    let results = sarif(&run(&sandbox, &[&lint[..], &["sarif"]].concat(), 0));
    assert_eq!(levels(&results, "warning"), 2);
    let text = stdout(&run(&sandbox, &[&lint[..], &["github"]].concat(), 0));
    assert_eq!(annotations(&text, "warning").len(), 2, "{text}");
    assert!(annotations(&text, "error").is_empty(), "{text}");
    assert!(
        annotations(&text, "warning")[1].starts_with("::warning file=shadowed.toml,line=8,title=gavel policy lint%3A rule never.reached%3A shadowed::"),
        "{text}"
    );
}

#[test]
fn diff_reports_changes_and_never_fails() {
    let sandbox = Sandbox::new();
    three_calls(&sandbox);
    let old = String::from_utf8(run(&sandbox, &["policy", "show", "--builtin"], 0).stdout).unwrap();
    std::fs::write(sandbox.root.join("old.toml"), &old).unwrap();
    std::fs::write(sandbox.root.join("new.toml"), LOOSE).unwrap();
    let diff = ["policy", "diff", "old.toml", "new.toml", "--format"];

    let cases = junit(
        &sandbox,
        &run(&sandbox, &[&diff[..], &["junit"]].concat(), 0),
    );
    assert!(
        cases.iter().all(|c| c.failure.is_none()),
        "diff has no gate"
    );
    assert!(
        cases
            .iter()
            .any(|c| c.name == "rule everything" && c.classname == "gavel.diff.rule")
    );
    assert!(
        cases
            .iter()
            .any(|c| c.name == "call b1: bash rm -rf /" && c.classname == "gavel.diff.call")
    );

    let results = sarif(&run(&sandbox, &[&diff[..], &["sarif"]].concat(), 0));
    assert_eq!(levels(&results, "error"), 0);
    let call = results
        .iter()
        .find(|r| {
            r["ruleId"] == "diff.call"
                && r["message"]["text"]
                    .as_str()
                    .unwrap()
                    .starts_with("call b1:")
        })
        .unwrap();
    assert_eq!(call["level"], "warning", "a loosened call: {call}");
    assert_eq!(place(call), ("new.toml".to_owned(), Some(9)));
    let removed = results
        .iter()
        .find(|r| {
            r["message"]["text"]
                .as_str()
                .unwrap()
                .contains("`bash.hard_deny` removed")
        })
        .unwrap();
    assert_eq!(
        place(removed),
        ("old.toml".to_owned(), Some(line_of(&old, "bash.hard_deny"))),
        "a removed rule is where it was"
    );
    let text = stdout(&run(&sandbox, &[&diff[..], &["github"]].concat(), 0));
    assert!(annotations(&text, "error").is_empty(), "{text}");
    assert!(!annotations(&text, "warning").is_empty(), "{text}");
}

#[test]
fn a_broken_verify_fails_the_chain_check_and_nothing_after_it() {
    let sandbox = Sandbox::new();
    three_calls(&sandbox);
    let cases = junit(
        &sandbox,
        &run(&sandbox, &["verify", "--format", "junit"], 0),
    );
    let classes: Vec<&str> = cases.iter().map(|c| c.classname.as_str()).collect();
    assert_eq!(
        classes,
        [
            "gavel.verify.identity",
            "gavel.verify.chain",
            "gavel.verify.checkpoints"
        ]
    );
    assert!(cases.iter().all(|c| c.failure.is_none()));
    assert!(sarif(&run(&sandbox, &["verify", "--format", "sarif"], 0)).is_empty());

    attacker(&sandbox.db)
        .execute(
            "UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT),
                 'rm -rf /', 'rm -rf ~') AS BLOB) WHERE seq = (SELECT min(seq) FROM events WHERE call_id = 'b1')",
            [],
        )
        .unwrap();
    let cases = junit(
        &sandbox,
        &run(&sandbox, &["verify", "--format", "junit"], 1),
    );
    let classes: Vec<&str> = cases.iter().map(|c| c.classname.as_str()).collect();
    assert_eq!(
        classes,
        ["gavel.verify.identity", "gavel.verify.chain"],
        "checkpoints were not reached"
    );
    assert!(cases[0].failure.is_none());
    assert!(
        cases[1]
            .failure
            .as_deref()
            .unwrap()
            .starts_with("tampered: content_mismatch at seq "),
        "{cases:?}"
    );
    let results = sarif(&run(&sandbox, &["verify", "--format", "sarif"], 1));
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["ruleId"], "verify.chain");
    // The log is located relative to the current folder (the sandbox).
    assert_eq!(place(&results[0]), ("audit.db".to_owned(), None));
    let text = stdout(&run(&sandbox, &["verify", "--format", "github"], 1));
    assert_eq!(annotations(&text, "error").len(), 1, "{text}");
    let db = sandbox.db.display().to_string();
    assert!(
        annotations(&text, "error")[0].starts_with(&format!(
            "::error file=audit.db,title=gavel verify%3A chain of {db}::tampered: content_mismatch"
        )),
        "{text}"
    );
}

#[test]
fn github_annotations_escape_what_the_record_holds() {
    let sandbox = Sandbox::new();
    record(
        &sandbox,
        "id%1,a:b",
        "bash",
        json!({"command": "echo 100%\r\n::set-output name=x::y"}),
    );
    let text = stdout(&run(
        &sandbox,
        &[
            "replay",
            "--policy",
            &write_loose(&sandbox),
            "--format",
            "github",
        ],
        1,
    ));
    let errors = annotations(&text, "error");
    assert_eq!(errors.len(), 1, "one line per annotation: {text}");
    assert!(
        errors[0].starts_with("::error file=loose.toml,line=9,title=gavel replay%3A call id%251%2Ca%3Ab%3A bash echo 100%25 %3A%3Aset-output name=x%3A%3Ay::loosened: "),
        "{text}"
    );
    assert_eq!(
        text.lines().count(),
        2,
        "the annotation and the summary: {text}"
    );
}

fn write_loose(sandbox: &Sandbox) -> String {
    std::fs::write(sandbox.root.join("loose.toml"), LOOSE).unwrap();
    "loose.toml".to_owned()
}

#[test]
fn ci_formats_refuse_what_they_cannot_report() {
    let sandbox = Sandbox::new();
    three_calls(&sandbox);
    for format in ["junit", "sarif", "github"] {
        let err =
            assert_one_line_error(&mut sandbox.gavel(&["replay", "--calls", "--format", format]));
        assert!(err.contains("--calls"), "{err}");
    }
    let output = sandbox
        .gavel(&["replay", "--format", "xml"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "an unknown format is a usage error");
    // `--json` keeps meaning JSON lines, whatever --format says.
    let output = run(
        &sandbox,
        &[
            "policy",
            "lint",
            "--no-usage",
            "--format",
            "junit",
            "--json",
        ],
        0,
    );
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["ok"], true);
}

#[test]
fn the_vendored_schemas_reject_what_ci_systems_would() {
    let sandbox = Sandbox::new();
    record(&sandbox, "r1", "read_file", json!({"path": "notes.txt"}));
    let output = run(&sandbox, &["verify", "--format", "sarif"], 0);
    let mut log: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(sarif_errors(&log).is_empty());
    log["runs"][0]["results"] = json!([{"message": {"text": "x"}, "level": "fatal"}]);
    assert!(!sarif_errors(&log).is_empty(), "an unknown level");
    log["version"] = json!("2.0.0");
    log["runs"][0]["results"] = json!([]);
    assert!(!sarif_errors(&log).is_empty(), "another version");

    let xml = stdout(&run(&sandbox, &["verify", "--format", "junit"], 0));
    let Some(checked) = xmllint(&sandbox, &xml) else {
        eprintln!(
            "skipped: checking JUnit.xsd with xmllint (Debian: apt-get install libxml2-utils)"
        );
        return;
    };
    checked.unwrap();
    let without_properties = xml
        .replace("<properties>", "<x>")
        .replace("</properties>", "</x>");
    assert!(xmllint(&sandbox, &without_properties).unwrap().is_err());
    let bad_time = xml.replacen("time=\"0\"", "time=\"soon\"", 1);
    assert!(xmllint(&sandbox, &bad_time).unwrap().is_err());
}
