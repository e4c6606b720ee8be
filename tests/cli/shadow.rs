//! Shadow policies: decided beside the enforced policy on every live call,
//! never enforced, their verdicts recorded on the call's decision event and
//! reported by `replay --shadow`.

use serde_json::{Value, json};

use crate::support::{Sandbox, code, json, json_lines, stderr};

/// A candidate that would forbid the shell outright and reads under `src/`.
const STRICT: &str = r#"
name = "strict"
[[rules]]
id = "strict.no_shell"
action = "deny"
tools = ["bash"]
reason = "no shell at all"
[[rules]]
id = "strict.no_src"
action = "deny"
tools = ["read_file"]
path_glob = ["src/**"]
reason = "src is off limits"
[[rules]]
id = "strict.read"
action = "allow"
tools = ["read_file"]
path_scope = "inside"
reason = "reads inside"
"#;

/// `count` calls of a session: reads inside and outside, shell commands,
/// an unknown tool.
fn session(count: usize) -> String {
    (0..count)
        .map(|i| {
            let (name, input) = match i % 5 {
                0 => ("read_file", json!({"path": "notes.txt"})),
                1 => ("read_file", json!({"path": "src/lib.rs"})),
                2 => ("bash", json!({"command": "ls src"})),
                3 => ("bash", json!({"command": "rm -rf /"})),
                _ => ("web_fetch", json!({"url": "https://example.com"})),
            };
            json!({"type": "tool_use", "id": format!("c{i}"), "name": name, "input": input})
                .to_string()
                + "\n"
        })
        .collect()
}

#[test]
fn a_shadow_records_a_verdict_on_every_call_and_reports_what_a_replay_of_it_would() {
    let sandbox = Sandbox::new();
    sandbox.write("src/lib.rs", "fn main() {}\n");
    sandbox.write("gavel.toml", gavel::policy::CODING_AGENT_POLICY_TOML);
    let strict = sandbox.root.join("strict.toml");
    std::fs::write(&strict, STRICT).unwrap();

    let shadow_flag = format!("--shadow-policy={}", strict.display());
    let out = sandbox
        .gavel(&["serve", "--stdio", "--durability", "normal", &shadow_flag])
        .write_stdin(session(1000))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Never enforced: the shell runs as the project's policy says.
    let answers = json_lines(&out);
    let ls = answers.iter().find(|a| a["call_id"] == "c2").unwrap();
    assert_eq!(ls["action"], "allow", "{ls}");
    assert_eq!(ls["status"], "succeeded");

    // A verdict on every decision event.
    let out = sandbox.gavel(&["export"]).output().unwrap();
    let decisions: Vec<Value> = json_lines(&out)
        .into_iter()
        .filter(|e| e["kind"] == "decision")
        .collect();
    assert_eq!(decisions.len(), 1000);
    for decision in &decisions {
        let shadow = &decision["payload"]["shadow"];
        assert_eq!(shadow.as_array().map(Vec::len), Some(1), "{decision}");
        assert_eq!(shadow[0]["name"], "strict");
        assert_eq!(shadow[0]["digest"].as_str().unwrap().len(), 64);
    }
    let ls = decisions.iter().find(|d| d["call_id"] == "c2").unwrap();
    assert_eq!(ls["payload"]["shadow"][0]["rule_id"], "strict.no_shell");
    assert_eq!(ls["payload"]["shadow"][0]["action"], "deny");
    let out = sandbox.gavel(&["verify"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    // The shadow's report equals a replay of the same policy on the same log.
    let report = |args: &[&str]| {
        let out = sandbox
            .gavel(&["replay", "--format", "json", "--fail-on", "never"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        json(&out)
    };
    let shadow = report(&["--shadow", "strict"]);
    let replayed = report(&["--policy", strict.to_str().unwrap()]);
    for key in [
        "total",
        "unchanged",
        "changed",
        "loosened",
        "tightened",
        "rerouted",
    ] {
        assert_eq!(shadow[key], replayed[key], "{key}");
    }
    // bash (200 ls), src reads (200) and the ask of web_fetch (200) tighten.
    assert_eq!(shadow["tightened"], 600);
    assert_eq!(shadow["rerouted"], 400);
    assert_eq!(
        shadow["policy"]["current"]["digest"],
        replayed["policy"]["current"]["digest"]
    );
    let transitions = |r: &Value| -> Vec<(Value, Value, Value, Value)> {
        r["transitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["from"].clone(),
                    t["to"].clone(),
                    t["direction"].clone(),
                    t["count"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(transitions(&shadow), transitions(&replayed));
    assert_eq!(shadow["facts"], "shadow");

    // A name no call recorded compares nothing.
    let none = report(&["--shadow", "other"]);
    assert_eq!(none["total"], 0);

    // The HTML report has the same counts in its shadow section.
    let html_path = sandbox.root.join("report.html");
    let out = sandbox
        .bare()
        .args(["report", "--html"])
        .arg(&html_path)
        .arg("--db")
        .arg(&sandbox.db)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let html = std::fs::read_to_string(&html_path).unwrap();
    let section = &html[html
        .find("<section id=\"shadows\">")
        .expect("a shadow section")..];
    assert!(section.contains("data-shadow=\"total\">1000<"), "{section}");
    assert!(section.contains("strict.no_shell"));
}

#[test]
fn a_shadow_named_in_the_policy_file_is_decided_beside_it() {
    let sandbox = Sandbox::new();
    sandbox.write("candidates/strict.toml", STRICT);
    sandbox.write(
        "gavel.toml",
        &format!(
            "{}\n[[shadow]]\nname = \"next\"\npath = \"candidates/strict.toml\"\n",
            gavel::policy::CODING_AGENT_POLICY_TOML
        ),
    );
    let out = sandbox
        .gavel(&["run", "bash", r#"{"command":"ls"}"#, "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = sandbox.gavel(&["export"]).output().unwrap();
    let decision = json_lines(&out)
        .into_iter()
        .find(|e| e["kind"] == "decision")
        .unwrap();
    assert_eq!(decision["payload"]["shadow"][0]["name"], "next");
    assert_eq!(
        decision["payload"]["shadow"][0]["rule_id"],
        "strict.no_shell"
    );
    // `check` says what the shadow would decide, too.
    let out = sandbox
        .gavel(&["check", "bash", r#"{"command":"ls"}"#, "--json"])
        .output()
        .unwrap();
    let checked = json(&out);
    assert_eq!(checked["action"], "allow");
    assert_eq!(checked["shadow"][0]["rule_id"], "strict.no_shell");

    // A shadow that cannot be read stops gavel, naming it.
    std::fs::remove_file(sandbox.ws.join("candidates/strict.toml")).unwrap();
    let out = sandbox
        .gavel(&["run", "bash", r#"{"command":"ls"}"#])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("shadow policy `next`"),
        "{}",
        stderr(&out)
    );
}
