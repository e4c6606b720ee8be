//! `gavel hook <client>` for every client, through the binary, with payload
//! templates from `fixtures/clients/<client>/` (`${WORKSPACE}`,
//! `${COMMAND}` and `${ID}` filled in), under the coding-agent policy;
//! and `gavel init`.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::support::{Sandbox, code, json_lines, run_expecting, stderr, stdout};

/// One client as the tests drive it.
pub(crate) struct Client {
    pub(crate) name: &'static str,
    /// Extra arguments for its pre- and post-events (Copilot's `--event`).
    pre_args: &'static [&'static str],
    post_args: &'static [&'static str],
    /// What `touch notes.md` (an ask) renders as, by default.
    ask_renders: &'static str,
}

pub(crate) const CLIENTS: &[Client] = &[
    Client {
        name: "claude-code",
        pre_args: &[],
        post_args: &[],
        ask_renders: "ask",
    },
    Client {
        name: "codex",
        pre_args: &[],
        post_args: &[],
        ask_renders: "deny",
    },
    Client {
        name: "gemini",
        pre_args: &[],
        post_args: &[],
        ask_renders: "deny",
    },
    Client {
        name: "copilot",
        pre_args: &["--event", "preToolUse"],
        post_args: &["--event", "postToolUse"],
        ask_renders: "deny",
    },
    Client {
        name: "cursor",
        pre_args: &[],
        post_args: &[],
        ask_renders: "ask",
    },
];

fn client(name: &str) -> &'static Client {
    CLIENTS.iter().find(|c| c.name == name).unwrap()
}

/// A sandbox whose workspace holds `a.txt` and the coding-agent policy.
fn sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello\n");
    sandbox.write("gavel.toml", gavel::policy::CODING_AGENT_POLICY_TOML);
    sandbox
}

/// A payload template of `client`, filled in.
pub(crate) fn payload(
    sandbox: &Sandbox,
    client: &str,
    template: &str,
    command: &str,
    id: &str,
) -> String {
    let path = crate::support::fixture(&format!("clients/{client}/{template}.json"));
    std::fs::read_to_string(path)
        .unwrap()
        .replace("${WORKSPACE}", &sandbox.ws.to_string_lossy())
        .replace("${COMMAND}", command)
        .replace("${ID}", id)
}

fn hook(sandbox: &Sandbox, client: &str, args: &[&str], stdin: &str) -> Output {
    sandbox
        .gavel(&["hook", client])
        .args(args)
        .write_stdin(stdin)
        .output()
        .unwrap()
}

/// The decision a client's answer carries, and its reason; a Codex
/// answer that says nothing lets the call run.
pub(crate) fn decision(client: &str, out: &Output) -> (String, String) {
    assert_eq!(code(out), 0, "{client}: {}", stderr(out));
    let text = stdout(out);
    if text.trim().is_empty() {
        assert_eq!(client, "codex", "only Codex answers an allow with silence");
        return ("allow".into(), String::new());
    }
    let answer: Value = serde_json::from_str(&text).unwrap();
    let field = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    match client {
        "claude-code" | "codex" => (
            field(&answer["hookSpecificOutput"]["permissionDecision"]),
            field(&answer["hookSpecificOutput"]["permissionDecisionReason"]),
        ),
        "gemini" => (field(&answer["decision"]), field(&answer["reason"])),
        "copilot" => (
            field(&answer["permissionDecision"]),
            field(&answer["permissionDecisionReason"]),
        ),
        "cursor" => (
            field(&answer["permission"]),
            field(&answer["agent_message"]),
        ),
        other => panic!("unknown client {other}"),
    }
}

pub(crate) fn pre(
    sandbox: &Sandbox,
    c: &Client,
    command: &str,
    id: &str,
    extra: &[&str],
) -> (String, String) {
    let args: Vec<&str> = c.pre_args.iter().chain(extra).copied().collect();
    let out = hook(
        sandbox,
        c.name,
        &args,
        &payload(sandbox, c.name, "shell_pre", command, id),
    );
    decision(c.name, &out)
}

fn post(sandbox: &Sandbox, c: &Client, template: &str, command: &str, id: &str) {
    let out = hook(
        sandbox,
        c.name,
        c.post_args,
        &payload(sandbox, c.name, template, command, id),
    );
    assert_eq!(code(&out), 0, "{}: {}", c.name, stderr(&out));
    assert!(out.stdout.is_empty(), "{}: {}", c.name, stdout(&out));
}

fn log(sandbox: &Sandbox) -> Vec<Value> {
    let out = sandbox.gavel(&["log", "--json"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json_lines(&out)
}

/// The logged call whose bash command is `command`.
fn call<'a>(calls: &'a [Value], command: &str) -> &'a Value {
    calls
        .iter()
        .find(|c| c["arguments"]["command"] == command)
        .unwrap_or_else(|| panic!("no call `{command}` in {calls:#?}"))
}

fn events(sandbox: &Sandbox) -> Vec<Value> {
    let out = sandbox.gavel(&["export"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut lines = json_lines(&out);
    lines.retain(|line| line["record"] == "event");
    lines
}

fn verify(sandbox: &Sandbox) -> String {
    let out = sandbox.gavel(&["verify"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    stdout(&out)
}

#[test]
fn every_client_denies_asks_as_it_can_allows_and_completes() {
    for c in CLIENTS {
        let sandbox = sandbox();
        let start = hook(
            &sandbox,
            c.name,
            if c.name == "copilot" {
                &["--event", "sessionStart"]
            } else {
                &[]
            },
            &payload(&sandbox, c.name, "session_start", "", ""),
        );
        assert_eq!(code(&start), 0, "{}: {}", c.name, stderr(&start));

        let (answer, reason) = pre(&sandbox, c, "sudo ls", "d1", &[]);
        assert_eq!(answer, "deny", "{}", c.name);
        assert!(
            reason.starts_with("[bash.hard_deny]"),
            "{}: {reason}",
            c.name
        );

        let (answer, reason) = pre(&sandbox, c, "touch notes.md", "a1", &[]);
        assert_eq!(answer, c.ask_renders, "{}: {reason}", c.name);
        assert!(
            reason.starts_with("[bash.requires_approval]"),
            "{}: {reason}",
            c.name
        );
        if answer == "deny" {
            assert!(reason.contains("needs approval"), "{}: {reason}", c.name);
        }

        let (answer, _) = pre(&sandbox, c, "ls", "r1", &[]);
        assert_eq!(answer, "allow", "{}", c.name);
        post(&sandbox, c, "shell_post", "ls", "r1");

        // A completion gavel never decided.
        post(&sandbox, c, "shell_post", "cat a.txt", "u1");

        let calls = log(&sandbox);
        let denied = call(&calls, "sudo ls");
        assert_eq!(
            (&denied["action"], &denied["status"]),
            (&json!("deny"), &json!("blocked")),
            "{}",
            c.name
        );
        let asked = call(&calls, "touch notes.md");
        assert_eq!(asked["action"], "ask", "{}", c.name);
        let expected = match c.ask_renders {
            "ask" => ("pending", "incomplete"),
            _ => ("cancelled", "blocked"),
        };
        assert_eq!(
            (
                asked["approval"].as_str().unwrap(),
                asked["status"].as_str().unwrap()
            ),
            expected,
            "{}",
            c.name
        );
        let read = call(&calls, "ls");
        assert_eq!(
            (&read["rule_id"], &read["status"]),
            (&json!("bash.read_only"), &json!("succeeded")),
            "{}",
            c.name
        );
        let unmatched = calls
            .iter()
            .find(|c| c["status"] == "ungoverned")
            .unwrap_or_else(|| panic!("{}: no ungoverned call in {calls:#?}", c.name));
        assert_eq!(unmatched["anomalies"], json!(["ran_without_decision"]));
        assert!(
            calls.iter().all(|call| call["approval"] != "approved"),
            "{}: nobody approved anything",
            c.name
        );
        // Every request keeps the client's own call.
        let request = events(&sandbox)
            .into_iter()
            .find(|e| e["kind"] == "request")
            .unwrap();
        assert_eq!(request["payload"]["client"]["client"], c.name);
        assert_eq!(request["payload"]["client"]["cwd"], json!(sandbox.ws));
        let verified = verify(&sandbox);
        assert!(!verified.contains("mid-session"), "{}: {verified}", c.name);
    }
}

#[test]
fn gemini_and_copilot_hand_asks_to_their_prompt_when_told_a_person_is_there() {
    for name in ["gemini", "copilot"] {
        let c = client(name);
        let sandbox = sandbox();
        let (answer, reason) = pre(&sandbox, c, "touch notes.md", "a1", &["--ask", "prompt"]);
        assert_eq!(answer, "ask", "{name}: {reason}");
        post(&sandbox, c, "shell_post", "touch notes.md", "a1");
        let calls = log(&sandbox);
        let asked = call(&calls, "touch notes.md");
        assert_eq!(
            (&asked["approval"], &asked["status"]),
            (&json!("approved"), &json!("succeeded")),
            "{name}: it ran, so the client's prompt approved it"
        );
    }
}

#[test]
fn copilot_reports_a_declined_ask_as_denied_and_it_is_rejected() {
    let c = client("copilot");
    let sandbox = sandbox();
    let (answer, _) = pre(&sandbox, c, "touch notes.md", "a1", &["--ask", "prompt"]);
    assert_eq!(answer, "ask");
    post(&sandbox, c, "shell_denied", "touch notes.md", "a1");
    let calls = log(&sandbox);
    let asked = call(&calls, "touch notes.md");
    assert_eq!(
        (&asked["approval"], &asked["status"]),
        (&json!("rejected"), &json!("blocked"))
    );
    assert_eq!(asked["anomalies"], json!([]));
    verify(&sandbox);
}

#[test]
fn a_completion_two_open_calls_could_own_completes_neither() {
    let c = client("gemini");
    let sandbox = sandbox();
    for _ in 0..2 {
        let (answer, _) = pre(&sandbox, c, "touch notes.md", "", &["--ask", "prompt"]);
        assert_eq!(answer, "ask");
    }
    post(&sandbox, c, "shell_post", "touch notes.md", "");
    let calls = log(&sandbox);
    let asked: Vec<&Value> = calls
        .iter()
        .filter(|c| c["arguments"]["command"] == "touch notes.md" && c["action"] == "ask")
        .collect();
    assert_eq!(asked.len(), 2);
    assert!(
        asked
            .iter()
            .all(|c| c["approval"] == "pending" && c["status"] == "incomplete")
    );
    let anomaly = events(&sandbox)
        .into_iter()
        .find(|e| e["kind"] == "anomaly")
        .unwrap();
    assert_eq!(anomaly["payload"]["anomaly"], "ambiguous_completion");
    verify(&sandbox);
}

#[test]
fn identical_allowed_calls_in_parallel_complete_in_order() {
    for name in ["gemini", "copilot", "cursor"] {
        let c = client(name);
        let sandbox = sandbox();
        for id in ["1", "2"] {
            let (answer, _) = pre(&sandbox, c, "ls", id, &[]);
            assert_eq!(answer, "allow", "{name}");
        }
        for id in ["1", "2"] {
            post(&sandbox, c, "shell_post", "ls", id);
        }
        let calls = log(&sandbox);
        assert_eq!(calls.len(), 2, "{name}");
        assert!(
            calls
                .iter()
                .all(|c| c["status"] == "succeeded" && c["anomalies"] == json!([])),
            "{name}: {calls:#?}"
        );
        verify(&sandbox);
    }
}

#[test]
fn identical_calls_one_after_another_each_complete() {
    let c = client("cursor");
    let sandbox = sandbox();
    for round in 0..3 {
        let (answer, _) = pre(&sandbox, c, "ls", &round.to_string(), &[]);
        assert_eq!(answer, "allow");
        post(&sandbox, c, "shell_post", "ls", &round.to_string());
    }
    let calls = log(&sandbox);
    assert_eq!(calls.len(), 3);
    assert!(
        calls.iter().all(|c| c["status"] == "succeeded"),
        "{calls:#?}"
    );
    verify(&sandbox);
}

#[test]
fn a_denied_call_reported_as_run_is_an_anomaly_for_clients_without_ids() {
    let c = client("gemini");
    let sandbox = sandbox();
    let (answer, _) = pre(&sandbox, c, "sudo ls", "", &[]);
    assert_eq!(answer, "deny");
    post(&sandbox, c, "shell_post", "sudo ls", "");
    let calls = log(&sandbox);
    let denied = call(&calls, "sudo ls");
    assert_eq!(denied["status"], "blocked");
    assert_eq!(denied["anomalies"], json!(["ran_despite_deny"]));
}

#[test]
fn codex_apply_patch_is_judged_by_the_files_it_touches() {
    let sandbox = sandbox();
    let out = hook(
        &sandbox,
        "codex",
        &[],
        &payload(&sandbox, "codex", "apply_patch_pre", "", "p1"),
    );
    let (answer, reason) = decision("codex", &out);
    assert_eq!(answer, "deny");
    assert!(
        reason.starts_with("[path.write_requires_approval]") && reason.contains("needs approval"),
        "{reason}"
    );
    let mut outside: Value =
        serde_json::from_str(&payload(&sandbox, "codex", "apply_patch_pre", "", "p2")).unwrap();
    outside["tool_input"]["command"] = json!(
        "*** Begin Patch\n*** Update File: ../outside/secret.txt\n@@\n-a\n+b\n*** End Patch\n"
    );
    let (answer, reason) = decision("codex", &hook(&sandbox, "codex", &[], &outside.to_string()));
    assert_eq!(answer, "deny");
    assert!(reason.starts_with("[path.outside_workspace]"), "{reason}");
    let calls = log(&sandbox);
    assert_eq!(calls[0]["tool"], "apply_patch");
    assert_eq!(
        calls[0]["arguments"]["paths"],
        json!([sandbox.ws.join("notes.md")])
    );
    assert_eq!(
        (&calls[0]["approval"], &calls[0]["status"]),
        (&json!("cancelled"), &json!("blocked"))
    );
}

#[test]
fn codex_permission_requests_deny_what_the_policy_denies_and_leave_the_rest_to_codex() {
    let sandbox = sandbox();
    let ask = |command: &str| {
        hook(
            &sandbox,
            "codex",
            &[],
            &payload(&sandbox, "codex", "permission_request", command, ""),
        )
    };
    let out = ask("sudo ls");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["decision"]["behavior"], "deny");
    let out = ask("touch notes.md");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        out.stdout.is_empty(),
        "the person at Codex's prompt decides"
    );
    let recorded: Vec<Value> = events(&sandbox)
        .into_iter()
        .filter(|e| e["payload"]["event"] == "PermissionRequest")
        .collect();
    assert_eq!(recorded.len(), 2);
    assert_eq!(
        recorded[0]["payload"]["data"]["gavel"]["answer"],
        "denied by gavel"
    );
    assert!(
        log(&sandbox).is_empty(),
        "no call is made approved by a request"
    );
}

#[test]
fn cursor_reads_are_allowed_or_denied_never_asked_and_edits_it_made_are_ungoverned() {
    let sandbox = sandbox();
    let read = |file: &str| {
        hook(
            &sandbox,
            "cursor",
            &[],
            &payload(&sandbox, "cursor", "read_pre", file, "1"),
        )
    };
    let out = read("a.txt");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), r#"{"permission":"allow"}"#);
    // Reading the policy is harmless; reading the record is not.
    let out = read("gavel.toml");
    assert_eq!(stdout(&out).trim(), r#"{"permission":"allow"}"#);
    let out = read(".gavel/audit.db");
    assert_eq!(stdout(&out).trim(), r#"{"permission":"deny"}"#);
    // The read's content came with the event; it is not recorded.
    assert!(
        !events(&sandbox)
            .iter()
            .any(|e| e.to_string().contains("hello"))
    );
    let out = hook(
        &sandbox,
        "cursor",
        &[],
        &payload(&sandbox, "cursor", "after_file_edit", "", "2"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let calls = log(&sandbox);
    let edit = calls.iter().find(|c| c["status"] == "ungoverned").unwrap();
    assert_eq!(edit["tool"], "apply_patch");
    assert_eq!(edit["anomalies"], json!(["ran_without_decision"]));
}

#[test]
fn every_client_fails_closed_on_input_it_cannot_read() {
    let sandbox = sandbox();
    for c in CLIENTS {
        let out = hook(&sandbox, c.name, c.pre_args, "this is not json");
        assert_eq!(code(&out), 2, "{}", c.name);
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{}: {err}", c.name);
        assert!(err.starts_with("gavel: "), "{}: {err}", c.name);
        let printed = stdout(&out);
        match c.name {
            "copilot" => assert!(
                printed.contains(r#""permissionDecision":"deny""#),
                "{printed}"
            ),
            "cursor" => assert!(printed.contains(r#""permission":"deny""#), "{printed}"),
            _ => assert!(printed.is_empty(), "{}: {printed}", c.name),
        }
    }
}

#[test]
fn every_client_fails_closed_on_a_broken_policy() {
    for c in CLIENTS {
        let sandbox = sandbox();
        sandbox.write(
            "gavel.toml",
            "name = \"broken\"\n[[rules]]\nid = \"x\"\naction = \"alow\"\n",
        );
        let out = hook(
            &sandbox,
            c.name,
            c.pre_args,
            &payload(&sandbox, c.name, "shell_pre", "ls", "x1"),
        );
        assert_eq!(code(&out), 2, "{}: {}", c.name, stdout(&out));
        assert!(stderr(&out).contains("gavel.toml"), "{}", c.name);
        assert!(!sandbox.db.exists(), "{}: nothing is recorded", c.name);
    }
}

#[test]
fn claude_code_batch_closes_a_declined_ask_with_what_the_model_was_told() {
    let sandbox = sandbox();
    let fixture = |name: &str| crate::support::hook_payload(&sandbox, name);
    let mut write = fixture("pre_tool_use.json");
    write["tool_use_id"] = json!("toolu_01DECLINEDDECLINEDDECLINED");
    write["tool_name"] = json!("Write");
    write["tool_input"] = json!({"file_path": sandbox.ws.join("a.txt"), "content": "x"});
    let (answer, _) = decision(
        "claude-code",
        &hook(&sandbox, "claude-code", &[], &write.to_string()),
    );
    assert_eq!(answer, "ask");
    let ls = fixture("pre_tool_use.json");
    let (answer, _) = decision(
        "claude-code",
        &hook(&sandbox, "claude-code", &[], &ls.to_string()),
    );
    assert_eq!(answer, "allow");
    let out = hook(
        &sandbox,
        "claude-code",
        &[],
        &fixture("post_tool_use.json").to_string(),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = hook(
        &sandbox,
        "claude-code",
        &[],
        &fixture("post_tool_batch.json").to_string(),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let calls = log(&sandbox);
    let declined = calls
        .iter()
        .find(|c| c["call_id"] == "toolu_01DECLINEDDECLINEDDECLINED")
        .unwrap();
    assert_eq!(
        (&declined["approval"], &declined["status"]),
        (&json!("rejected"), &json!("blocked"))
    );
    let result = events(&sandbox)
        .into_iter()
        .rfind(|e| e["kind"] == "result")
        .unwrap();
    assert!(
        result["payload"]["content"]
            .as_str()
            .unwrap()
            .contains("doesn't want to proceed")
    );
    let ran = calls
        .iter()
        .find(|c| c["call_id"] == "toolu_01ABCDEFGHJKMNPQRSTUVWXYZ")
        .unwrap();
    assert_eq!(ran["status"], "succeeded");
    // A second batch changes nothing.
    hook(
        &sandbox,
        "claude-code",
        &[],
        &fixture("post_tool_batch.json").to_string(),
    );
    assert_eq!(log(&sandbox), calls);
    verify(&sandbox);
}

#[test]
fn claude_code_reused_tool_use_id_is_refused_and_recorded() {
    let sandbox = sandbox();
    let pre = payload(&sandbox, "claude-code", "shell_pre", "ls", "same");
    let (answer, _) = decision("claude-code", &hook(&sandbox, "claude-code", &[], &pre));
    assert_eq!(answer, "allow");
    for _ in 0..3 {
        let again = payload(&sandbox, "claude-code", "shell_pre", "rm notes.md", "same");
        let out = hook(&sandbox, "claude-code", &[], &again);
        assert_eq!(code(&out), 2);
        assert!(
            stderr(&out).contains("was already used"),
            "{}",
            stderr(&out)
        );
    }
    let anomalies: Vec<Value> = events(&sandbox)
        .into_iter()
        .filter(|e| e["kind"] == "anomaly")
        .collect();
    assert_eq!(anomalies.len(), 3, "every refused attempt leaves a trace");
    assert_eq!(anomalies[0]["payload"]["anomaly"], "reused_call_id");
    assert_eq!(
        anomalies[0]["payload"]["client"]["input"]["command"],
        "rm notes.md"
    );
    let calls = log(&sandbox);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["arguments"]["command"], "ls");
    verify(&sandbox);
}

#[test]
fn claude_code_calls_keep_mode_prompt_and_cwd() {
    let sandbox = sandbox();
    let mut pre: Value =
        serde_json::from_str(&payload(&sandbox, "claude-code", "shell_pre", "ls", "m1")).unwrap();
    pre["permission_mode"] = json!("bypassPermissions");
    pre["agent_id"] = json!("agent-1");
    pre["agent_type"] = json!("Explore");
    let out = hook(&sandbox, "claude-code", &[], &pre.to_string());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let request = events(&sandbox)
        .into_iter()
        .find(|e| e["kind"] == "request")
        .unwrap();
    let client = &request["payload"]["client"];
    assert_eq!(client["permission_mode"], "bypassPermissions");
    assert_eq!(client["prompt_id"], "prompt-7");
    assert_eq!(client["cwd"], json!(sandbox.ws));
}

#[test]
fn a_log_started_mid_session_says_so_and_verify_notes_it() {
    let sandbox = sandbox();
    let out = hook(
        &sandbox,
        "claude-code",
        &[],
        &payload(&sandbox, "claude-code", "shell_pre", "ls", "late"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let first = &events(&sandbox)[0];
    assert_eq!(first["kind"], "lifecycle");
    assert_eq!(first["payload"]["event"], "LogStartedMidSession");
    assert_eq!(first["payload"]["data"]["first_event"], "PreToolUse");
    let text = verify(&sandbox);
    assert!(text.starts_with("ok: "), "{text}");
    assert!(text.contains("begins mid-session"), "{text}");
    let out = sandbox.gavel(&["verify", "--json"]).output().unwrap();
    assert_eq!(code(&out), 0);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert_eq!(report["begins_mid_session"]["client"], "claude-code");
}

#[test]
fn policy_show_prints_the_coding_agent_preset() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .gavel(&["policy", "show", "--preset", "coding-agent"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim_end(),
        gavel::policy::CODING_AGENT_POLICY_TOML.trim_end()
    );
}

/// The command `gavel init claude-code` installed for `event`.
fn installed_command(settings: &Value, event: &str) -> String {
    settings["hooks"][event][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn init_claude_code_installs_hooks_and_the_policy_and_ls_runs_without_a_prompt() {
    let sandbox = Sandbox::new();
    let out = sandbox.gavel(&["init", "claude-code"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(".claude/settings.json"), "{text}");
    assert!(text.contains("gavel.toml"), "{text}");
    let settings: Value = serde_json::from_str(&sandbox.read(".claude/settings.json")).unwrap();
    let command = installed_command(&settings, "PreToolUse");
    let binary = command.strip_suffix(" hook claude-code").unwrap();
    assert!(Path::new(binary).is_absolute(), "{command}");
    assert_eq!(settings["hooks"]["PreToolUse"][0]["matcher"], "*");
    assert!(settings["hooks"]["PostToolBatch"].is_array());
    assert_eq!(
        sandbox.read("gavel.toml"),
        gavel::policy::CODING_AGENT_POLICY_TOML
    );

    // The installed command, run as Claude Code runs it, in the project.
    for (id, command_line, expected) in [
        ("t1", "ls", "allow"),
        ("t2", "git status", "allow"),
        ("t3", "sudo ls", "deny"),
    ] {
        let stdin = payload(&sandbox, "claude-code", "shell_pre", command_line, id);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .current_dir(&sandbox.ws)
            .env("CLAUDE_PROJECT_DIR", &sandbox.ws)
            .env_remove("GAVEL_POLICY")
            .env_remove("GAVEL_DB")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(stdin.as_bytes())?;
                child.wait_with_output()
            })
            .unwrap();
        let (answer, reason) = decision("claude-code", &out);
        assert_eq!(answer, expected, "{command_line}: {reason}");
    }
    assert!(sandbox.ws.join(".gavel/audit.db").exists());
}

#[test]
fn init_refuses_to_overwrite_without_force_and_keeps_other_hooks_with_it() {
    let sandbox = Sandbox::new();
    let other = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "./my-linter"}]}]}, "model": "opus"});
    sandbox.write(".claude/settings.json", &other.to_string());
    let err = crate::support::assert_one_line_error(&mut sandbox.gavel(&["init", "claude-code"]));
    assert!(err.contains("--force"), "{err}");
    assert!(
        !sandbox.ws.join("gavel.toml").exists(),
        "nothing is written"
    );
    for _ in 0..2 {
        let out = sandbox
            .gavel(&["init", "claude-code", "--force"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let settings: Value = serde_json::from_str(&sandbox.read(".claude/settings.json")).unwrap();
    assert_eq!(settings["model"], "opus");
    let pre = settings["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2, "the linter, and gavel once: {pre:#?}");
    assert_eq!(pre[0]["hooks"][0]["command"], "./my-linter");
}

#[test]
fn init_writes_each_clients_own_configuration() {
    for (name, path, event) in [
        ("codex", ".codex/hooks.json", "PermissionRequest"),
        ("gemini", ".gemini/settings.json", "BeforeTool"),
        ("copilot", ".github/hooks/gavel.json", "preToolUse"),
        ("cursor", ".cursor/hooks.json", "beforeShellExecution"),
    ] {
        let sandbox = Sandbox::new();
        let out = sandbox.gavel(&["init", name]).output().unwrap();
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        let config: Value = serde_json::from_str(&sandbox.read(path)).unwrap();
        let text = config["hooks"][event].to_string();
        assert!(text.contains(&format!(" hook {name}")), "{name}: {text}");
        if name == "cursor" {
            // Cursor fails open on a hook it stops or that crashes, unless told not to.
            assert_eq!(config["hooks"][event][0]["failClosed"], true, "{text}");
        }
        assert!(stdout(&out).contains(path), "{name}");
    }
}

#[test]
fn every_clients_calls_carry_its_principal_and_approvals_its_channel() {
    for c in CLIENTS {
        let sandbox = sandbox();
        pre(&sandbox, c, "ls", "p1", &[]);
        pre(&sandbox, c, "touch notes.md", "p2", &[]);
        let events = events(&sandbox);
        let request = events.iter().find(|e| e["kind"] == "request").unwrap();
        let principal = &request["payload"]["principal"];
        assert_eq!(principal["client"], c.name, "{principal}");
        assert!(principal["session"].is_string(), "{}: {principal}", c.name);
        let mine = sandbox
            .gavel(&["log", "--json", "--client", c.name])
            .output()
            .unwrap();
        assert_eq!(json_lines(&mine).len(), 2, "{}", c.name);
        let approval = events.iter().find(|e| e["kind"] == "approval").unwrap();
        let approval = &approval["payload"];
        assert_eq!(approval["channel"], "client_prompt", "{}", c.name);
        match c.ask_renders {
            "ask" => assert_eq!(approval["status"], "pending", "{}", c.name),
            _ => assert_eq!(
                (&approval["status"], &approval["cause"]),
                (&json!("cancelled"), &json!("no_tty")),
                "{}",
                c.name
            ),
        }
        if c.name == "cursor" {
            assert_eq!(principal["client_version"], "2.0.77");
            assert_eq!(approval["approver"], "dev@example.com");
        }
    }
}

#[test]
fn a_claude_code_ask_run_under_bypass_permissions_is_approved_client_auto() {
    let sandbox = sandbox();
    let c = client("claude-code");
    let mut pre: Value =
        serde_json::from_str(&payload(&sandbox, c.name, "shell_pre", "touch b.md", "b1")).unwrap();
    pre["agent_id"] = json!("agent-9");
    pre["agent_type"] = json!("Plan");
    let out = hook(&sandbox, c.name, &[], &pre.to_string());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut post: Value =
        serde_json::from_str(&payload(&sandbox, c.name, "shell_post", "touch b.md", "b1")).unwrap();
    post["permission_mode"] = json!("bypassPermissions");
    let out = hook(&sandbox, c.name, &[], &post.to_string());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events = events(&sandbox);
    let approvals: Vec<&Value> = events.iter().filter(|e| e["kind"] == "approval").collect();
    assert_eq!(approvals.len(), 2, "{events:#?}");
    assert_eq!(approvals[1]["payload"]["status"], "approved");
    assert_eq!(approvals[1]["payload"]["channel"], "client_auto");
    let request = events.iter().find(|e| e["kind"] == "request").unwrap();
    assert_eq!(request["payload"]["principal"]["agent_id"], "agent-9");
    assert_eq!(request["payload"]["principal"]["agent_type"], "Plan");
    verify(&sandbox);
}

#[test]
fn init_ignores_the_record_and_force_keeps_a_customised_policy() {
    let sandbox = Sandbox::new();
    sandbox.write(".gitignore", "target/");
    run_expecting(&mut sandbox.gavel(&["init", "claude-code"]), 0);
    let ignore = sandbox.read(".gitignore");
    assert!(ignore.starts_with("target/\n"), "{ignore}");
    assert!(ignore.lines().any(|l| l == ".gavel/"), "{ignore}");
    // Customised, then refreshed with --force: the policy is kept.
    sandbox.write("gavel.toml", "name = \"mine\"\n");
    let out = run_expecting(&mut sandbox.gavel(&["init", "claude-code", "--force"]), 0);
    assert!(stdout(&out).contains("kept"), "{}", stdout(&out));
    assert_eq!(sandbox.read("gavel.toml"), "name = \"mine\"\n");
    assert_eq!(
        sandbox.read(".gitignore").matches(".gavel/").count(),
        1,
        "added once"
    );
    run_expecting(
        &mut sandbox.gavel(&["init", "claude-code", "--force", "--overwrite-policy"]),
        0,
    );
    assert_eq!(
        sandbox.read("gavel.toml"),
        gavel::policy::CODING_AGENT_POLICY_TOML
    );
}

/// `init` from a build folder warns; once that build is gone, `init --check`
/// reports the hook that would leave the client ungoverned.
#[test]
fn init_from_a_build_folder_warns_and_check_reports_the_broken_hook() {
    let sandbox = Sandbox::new();
    let copy = crate::support::copy_gavel(&sandbox.root.join("target/release"));
    let out = crate::support::output(
        std::process::Command::new(&copy)
            .args(["init", "claude-code", "--workspace"])
            .arg(&sandbox.ws)
            .env("PATH", "/usr/bin:/bin")
            .env("GAVEL_CHECKPOINT_EVERY", "0"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("build folder"), "{}", stderr(&out));
    let check = |expect: i32| {
        let out = crate::support::output(
            std::process::Command::new(&copy)
                .args(["init", "claude-code", "--check", "--workspace"])
                .arg(&sandbox.ws)
                .env("PATH", "/usr/bin:/bin"),
        );
        assert_eq!(code(&out), expect, "{}{}", stdout(&out), stderr(&out));
        stdout(&out)
    };
    assert!(check(0).contains("ok: runs this gavel"));
    // `cargo clean`: the binary the hooks name is gone.
    std::fs::remove_file(&copy).unwrap();
    let out = sandbox
        .gavel(&["init", "claude-code", "--check"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(stdout(&out).contains("BROKEN"), "{}", stdout(&out));
}

/// With gavel on PATH, the hooks name `gavel`, which survives a rebuild.
#[test]
fn init_names_the_gavel_on_path() {
    let sandbox = Sandbox::new();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_gavel"))
        .parent()
        .unwrap()
        .to_path_buf();
    let out = sandbox
        .gavel(&["init", "claude-code"])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let settings: Value = serde_json::from_str(&sandbox.read(".claude/settings.json")).unwrap();
    assert_eq!(
        installed_command(&settings, "PreToolUse"),
        "gavel hook claude-code"
    );
    assert!(!stderr(&out).contains("build folder"), "{}", stderr(&out));
}

/// Issue 39: `init` run through a build-folder copy, with the same gavel
/// (a copy of the same file) on PATH, names the PATH one, so the hooks
/// survive `cargo clean`; `--check` through the build copy calls it this
/// gavel. A gavel of another version on PATH is not taken.
#[test]
fn init_through_a_build_folder_copy_prefers_the_same_gavel_on_path() {
    let sandbox = Sandbox::new();
    let built = crate::support::copy_gavel(&sandbox.root.join("project/target/release"));
    let installed = sandbox.root.join("bin");
    crate::support::copy_gavel(&installed);
    let path = format!("{}:/usr/bin:/bin", installed.display());
    let run = |binary: &Path, args: &[&str], path: &str| {
        crate::support::output(
            std::process::Command::new(binary)
                .args(args)
                .arg("--workspace")
                .arg(&sandbox.ws)
                .env("PATH", path)
                .env("GAVEL_CHECKPOINT_EVERY", "0")
                .env_remove("GAVEL_DB")
                .env_remove("GAVEL_POLICY"),
        )
    };
    let out = run(&built, &["init", "claude-code"], &path);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("build folder"), "{}", stderr(&out));
    assert!(stdout(&out).contains("the same gavel"), "{}", stdout(&out));
    let settings: Value = serde_json::from_str(&sandbox.read(".claude/settings.json")).unwrap();
    let command = installed_command(&settings, "PreToolUse");
    assert_eq!(command, "gavel hook claude-code");
    let out = run(&built, &["init", "claude-code", "--check"], &path);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("ok: runs this gavel"),
        "{}",
        stdout(&out)
    );

    // `cargo clean`: the hook still runs gavel, the one on PATH.
    std::fs::remove_dir_all(sandbox.root.join("project/target")).unwrap();
    let stdin = payload(&sandbox, "claude-code", "shell_pre", "ls", "t1");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(&sandbox.ws)
        .env("PATH", &path)
        .env("CLAUDE_PROJECT_DIR", &sandbox.ws)
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(stdin.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(decision("claude-code", &out).0, "allow", "{}", stderr(&out));

    // Another version on PATH: the build copy is named, with the warning.
    let other = sandbox.root.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let fake = other.join("gavel");
    std::fs::write(&fake, "#!/bin/sh\necho 'gavel 0.0.1'\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let built = crate::support::copy_gavel(&sandbox.root.join("project/target/release"));
    let out = run(
        &built,
        &["init", "claude-code", "--force"],
        &format!("{}:/usr/bin:/bin", other.display()),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("another version"), "{}", stderr(&out));
    let settings: Value = serde_json::from_str(&sandbox.read(".claude/settings.json")).unwrap();
    assert_eq!(
        installed_command(&settings, "PreToolUse"),
        format!(
            "{} hook claude-code",
            built.canonicalize().unwrap().display()
        )
    );
}

/// Issue 39: `init` says what an ask becomes for every client (it said
/// nothing for Claude Code and Cursor), and with `--ask wait` that asks wait.
#[test]
fn init_says_what_an_ask_becomes_for_every_client() {
    for (name, says) in [
        ("claude-code", "Claude Code's own permission prompt"),
        ("cursor", "Cursor's own prompt"),
        ("codex", "asks are denied"),
        ("gemini", "asks are denied"),
        ("copilot", "asks are denied"),
    ] {
        let sandbox = Sandbox::new();
        let out = sandbox.gavel(&["init", name]).output().unwrap();
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        let text = stdout(&out);
        let notes: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("note: asks"))
            .collect();
        assert_eq!(notes.len(), 1, "{name}: {}", stdout(&out));
        assert!(notes[0].contains(says), "{name}: {}", notes[0]);
        let waiting = Sandbox::new();
        let out = waiting
            .gavel(&["init", name, "--ask", "wait=30s"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.contains("note: asks wait up to 30 s"),
            "{name}: {text}"
        );
        assert!(
            !text.contains("note: asks go") && !text.contains("note: asks are denied"),
            "{name}: {text}"
        );
    }
}

/// Issue 39: `init` made the checkpoint key but no checkpoint, so a log
/// started unvouched until its first call; now it signs the first one.
#[test]
fn init_signs_the_logs_first_checkpoint() {
    let sandbox = Sandbox::new();
    let out = sandbox.gavel(&["init", "claude-code"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("first checkpoint signed"),
        "{}",
        stdout(&out)
    );
    // The key is the log's own, outside the workspace; init says where.
    let text = stdout(&out);
    let key = text
        .lines()
        .find_map(|l| l.strip_prefix("checkpoint key "))
        .and_then(|l| l.split(':').next())
        .expect("init names the checkpoint key");
    assert!(
        key.starts_with(&*sandbox.root.join("data").to_string_lossy()),
        "{text}"
    );
    let public = format!("{key}.pub");
    let out = sandbox
        .gavel(&["verify", "--json", "--public-key", &public])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["stored_checkpoints"], 1, "{report}");
    assert_eq!(report["signature_checked"], true, "{report}");
    // Again (--force): the log already has one; no second.
    let out = sandbox
        .gavel(&["init", "claude-code", "--force"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = sandbox.gavel(&["verify", "--json"]).output().unwrap();
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["stored_checkpoints"], 1, "{report}");
}

/// Issue 39: Claude Code's `LS` was denied as an unknown tool
/// (`default.deny`; 11 calls in real session logs). It is a listing of its
/// folder, decided like `glob`: inside the workspace it runs, outside it is
/// the workspace boundary's to refuse.
#[test]
fn claude_codes_ls_is_a_listing_not_denied_as_unknown() {
    let sandbox = sandbox();
    std::fs::create_dir_all(sandbox.ws.join("src")).unwrap();
    for (id, path, expected, rule) in [
        (
            "toolu_ls_inside",
            sandbox.ws.join("src"),
            "allow",
            "path.read_allow",
        ),
        (
            "toolu_ls_outside",
            "/etc".into(),
            "deny",
            "path.outside_workspace",
        ),
    ] {
        let mut pre = crate::support::hook_payload(&sandbox, "pre_tool_use.json");
        pre["tool_use_id"] = json!(id);
        pre["tool_name"] = json!("LS");
        pre["tool_input"] = json!({"path": path});
        let out = hook(&sandbox, "claude-code", &[], &pre.to_string());
        let (answer, reason) = decision("claude-code", &out);
        assert_eq!(answer, expected, "{reason}");
        assert!(reason.contains(rule), "{reason}");
    }
    let calls = log(&sandbox);
    assert_eq!(calls[0]["tool"], "glob", "{:#?}", calls[0]);
    assert!(calls.iter().all(|c| c["rule_id"] != "default.deny"));
}
