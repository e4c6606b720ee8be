//! Who made each call (record format 2): every row of a call carries the
//! OS user and the host, through `run`, `serve` and the Claude Code hook;
//! every approval row carries the channel it came through (and, cancelled,
//! why); a subagent's id is recorded; the filters select by them.

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::support::{Sandbox, code, hook_payload, json, json_lines, run_expecting, stderr};

/// Every row of the log: `(seq, kind, user, host, client, session, agent, payload)`.
type Row = (
    u64,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Value,
);

fn rows(sandbox: &Sandbox) -> Vec<Row> {
    let conn = Connection::open(&sandbox.db).unwrap();
    conn.prepare(
        "SELECT seq, kind, user, host, client, session, agent, payload FROM events ORDER BY seq",
    )
    .unwrap()
    .query_map([], |r| {
        let payload: Vec<u8> = r.get(7)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
            serde_json::from_slice(&payload).unwrap(),
        ))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// The user and host names the OS gives this test process.
fn me() -> (String, String) {
    let user = String::from_utf8(
        std::process::Command::new("id")
            .arg("-un")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    (user.trim().to_owned(), host.trim().to_owned())
}

fn hook(sandbox: &Sandbox, payload: &Value) -> std::process::Output {
    sandbox
        .gavel(&["hook", "claude-code"])
        .write_stdin(payload.to_string())
        .output()
        .unwrap()
}

/// Calls through `run` (allow, ask approved by flag, ask with no
/// terminal, deny), `serve` (approved, rejected, cut off by a new
/// request, cut off by the end of input) and the hook (a subagent's read,
/// an ask completed by Claude Code, a prompt).
fn traffic(sandbox: &Sandbox) {
    sandbox.write("a.txt", "a\n");
    for (args, expect) in [
        (vec!["run", "read_file", r#"{"path":"a.txt"}"#], 0),
        (
            vec!["run", "bash", r#"{"command":"echo hi"}"#, "--approve"],
            0,
        ),
        (vec!["run", "bash", r#"{"command":"rm -rf /"}"#], 3),
    ] {
        run_expecting(&mut sandbox.gavel(&args), expect);
    }
    let lines = [
        json!({"type":"tool_use","id":"s-yes","name":"write_file","input":{"path":"b.txt","content":"y"}}),
        json!({"type":"approval","id":"s-yes","approved":true}),
        json!({"type":"tool_use","id":"s-no","name":"write_file","input":{"path":"c.txt","content":"n"}}),
        json!({"type":"approval","id":"s-no","approved":false}),
        json!({"type":"tool_use","id":"s-cut","name":"write_file","input":{"path":"d.txt","content":"n"}}),
        json!({"type":"tool_use","id":"s-eof","name":"write_file","input":{"path":"e.txt","content":"n"}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = sandbox
        .gavel(&["serve", "--stdio"])
        .write_stdin(text)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for fixture in [
        "pre_tool_use_subagent.json",
        "pre_tool_use.json",
        "post_tool_use.json",
        "user_prompt_submit.json",
    ] {
        let out = hook(sandbox, &hook_payload(sandbox, fixture));
        assert_eq!(code(&out), 0, "{fixture}: {}", stderr(&out));
    }
}

#[test]
fn every_row_carries_user_and_host_and_every_approval_a_channel() {
    let sandbox = Sandbox::new();
    // No terminal: the ask is cancelled, and `run` says so.
    let out = sandbox
        .gavel(&[
            "run",
            "bash",
            r#"{"command":"echo hi"}"#,
            "--call-id",
            "no-tty",
        ])
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(code(&out), 3);
    let err = stderr(&out);
    assert!(
        err.contains("no terminal to ask on; cancelled"),
        "run must say why it cancelled: {err}"
    );
    traffic(&sandbox);
    let (user, host) = me();
    let rows = rows(&sandbox);
    assert!(rows.len() > 30, "{}", rows.len());
    for (seq, kind, row_user, row_host, client, ..) in &rows {
        assert_eq!(row_user.as_deref(), Some(user.as_str()), "seq {seq} {kind}");
        assert_eq!(row_host.as_deref(), Some(host.as_str()), "seq {seq} {kind}");
        assert!(
            matches!(client.as_deref(), Some("cli" | "serve" | "claude-code")),
            "seq {seq}: {client:?}"
        );
    }
    // Every request names its principal whole, with the policy that decided.
    for (seq, _, _, _, client, _, _, payload) in rows.iter().filter(|r| r.1 == "request") {
        let principal = &payload["principal"];
        assert_eq!(principal["user"], user.as_str(), "seq {seq}");
        assert_eq!(principal["client"], client.as_deref().unwrap(), "seq {seq}");
        assert_eq!(principal["host_id"].as_str().unwrap().len(), 32);
        assert!(principal["uid"].is_u64());
        assert_eq!(principal["gavel"], env!("CARGO_PKG_VERSION"));
        assert_eq!(principal["policy"]["layer"], "builtin");
        assert_eq!(principal["policy"]["digest"].as_str().unwrap().len(), 64);
    }
    let approvals: Vec<(String, Value)> = rows
        .iter()
        .filter(|r| r.1 == "approval")
        .map(|r| (r.7["status"].as_str().unwrap().to_owned(), r.7.clone()))
        .collect();
    assert!(approvals.len() >= 7, "{approvals:?}");
    for (status, payload) in &approvals {
        assert!(payload["channel"].is_string(), "{payload}");
        if status == "cancelled" {
            assert!(payload["cause"].is_string(), "{payload}");
        }
    }
    let seen: Vec<(&str, &str, &str)> = approvals
        .iter()
        .map(|(status, p)| {
            (
                status.as_str(),
                p["channel"].as_str().unwrap(),
                p["cause"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    for expected in [
        ("cancelled", "tty", "no_tty"),
        ("approved", "flag", "-"),
        ("approved", "serve", "-"),
        ("rejected", "serve", "-"),
        ("cancelled", "serve", "superseded"),
        ("cancelled", "serve", "eof"),
        ("pending", "client_prompt", "-"),
        ("approved", "client_prompt", "-"),
    ] {
        assert!(seen.contains(&expected), "{expected:?} not in {seen:?}");
    }
    // The flag's answer names who gave it.
    let flagged = approvals
        .iter()
        .find(|(_, p)| p["channel"] == "flag")
        .unwrap();
    assert_eq!(flagged.1["approver"], user.as_str());
    crate::store::assert_intact(&sandbox, &[]);
}

#[test]
fn a_claude_code_subagent_call_carries_its_agent_id_and_type() {
    let sandbox = Sandbox::new();
    let payload = hook_payload(&sandbox, "pre_tool_use_subagent.json");
    let out = hook(&sandbox, &payload);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let rows = rows(&sandbox);
    let request = rows.iter().find(|r| r.1 == "request").unwrap();
    assert_eq!(request.4.as_deref(), Some("claude-code"));
    assert_eq!(
        request.5.as_deref(),
        Some(payload["session_id"].as_str().unwrap())
    );
    assert_eq!(request.6.as_deref(), Some("agent_7f3e2a91"));
    assert_eq!(request.7["principal"]["agent_id"], "agent_7f3e2a91");
    assert_eq!(request.7["principal"]["agent_type"], "Explore");
    for row in &rows {
        assert_eq!(row.6.as_deref(), Some("agent_7f3e2a91"), "seq {}", row.0);
    }
    // The reviewer's views name it.
    let call = payload["tool_use_id"].as_str().unwrap();
    let explained = run_expecting(&mut sandbox.gavel(&["explain", call]), 0);
    let text = crate::support::stdout(&explained);
    assert!(
        text.contains("by subagent `agent_7f3e2a91` (Explore)"),
        "{text}"
    );
    let explained = json(&run_expecting(
        &mut sandbox.gavel(&["explain", call, "--json"]),
        0,
    ));
    assert_eq!(explained["principal"]["agent_id"], "agent_7f3e2a91");
    let wide = crate::support::stdout(&run_expecting(
        sandbox.gavel(&["log", "--wide"]).env("COLUMNS", "400"),
        0,
    ));
    assert!(
        wide.contains("via claude-code (agent agent_7f3e2a91"),
        "{wide}"
    );
}

/// The call ids `log --json FILTER` lists.
fn listed(sandbox: &Sandbox, filter: &[&str]) -> Vec<String> {
    let mut args = vec!["log", "--json"];
    args.extend_from_slice(filter);
    json_lines(&run_expecting(&mut sandbox.gavel(&args), 0))
        .iter()
        .map(|c| c["call_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn log_stats_replay_and_export_filter_by_user_host_client_session_and_agent() {
    let sandbox = Sandbox::new();
    traffic(&sandbox);
    let (user, host) = me();
    let all = listed(&sandbox, &[]);
    assert_eq!(all.len(), 9, "{all:?}");
    assert_eq!(listed(&sandbox, &["--user", &user]), all);
    assert!(listed(&sandbox, &["--user", "nobody-else"]).is_empty());
    assert_eq!(listed(&sandbox, &["--host", &host]), all);
    let host_id = rows(&sandbox)[0].7["principal"]["host_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(listed(&sandbox, &["--host", &host_id]), all);
    assert!(listed(&sandbox, &["--host", "elsewhere"]).is_empty());
    assert_eq!(listed(&sandbox, &["--client", "cli"]).len(), 3);
    assert_eq!(
        listed(&sandbox, &["--client", "serve"]),
        ["s-yes", "s-no", "s-cut", "s-eof"]
    );
    let hooked = listed(&sandbox, &["--client", "claude-code"]);
    assert_eq!(hooked.len(), 2);
    assert_eq!(
        listed(&sandbox, &["--agent", "agent_7f3e2a91"]),
        ["toolu_01SUBAGENTREADNOTES00000"]
    );
    assert_eq!(
        listed(
            &sandbox,
            &["--session", "0b1f9c52-6a0e-4d7e-9a43-2f3c1b7d8e90"]
        ),
        hooked
    );
    // The prompt is listed for its user and client, like the calls.
    let events = json_lines(&run_expecting(
        &mut sandbox.gavel(&["log", "--json", "--events", "--client", "claude-code"]),
        0,
    ));
    assert_eq!(events.len(), 3, "{events:?}");

    let stats = json(&run_expecting(
        &mut sandbox.gavel(&["stats", "--json", "--client", "serve"]),
        0,
    ));
    assert_eq!(stats["calls"], 4);
    assert_eq!(stats["by_approval"]["cancelled"], 2);
    let replay = json(&run_expecting(
        &mut sandbox.gavel(&["replay", "--format", "json", "--agent", "agent_7f3e2a91"]),
        0,
    ));
    assert_eq!(replay["total"], 1, "{replay}");
    let cases = json_lines(&run_expecting(
        &mut sandbox.gavel(&["export", "--requests", "--client", "cli"]),
        0,
    ));
    assert_eq!(cases.len(), 3);
    // A filtered export records the filter and verifies.
    let export = run_expecting(&mut sandbox.gavel(&["export", "--user", &user]), 0);
    let lines = json_lines(&export);
    assert_eq!(lines[0]["selection"]["user"], user.as_str());
    assert!(
        lines[1..]
            .iter()
            .all(|l| l["format"] == 2 && l["user"] == user.as_str())
    );
}

/// `who` (issue 41): a Claude Code subagent is denied a write its parent
/// may make, by a rule on `agent_type`; `explain` says why the parent's
/// call did not meet it, a policy test case can give the subagent, and
/// replay under a policy without the rule reports exactly that call as
/// loosened.
#[test]
fn a_subagent_is_denied_a_write_its_parent_may_make() {
    let sandbox = Sandbox::new();
    let policy = r#"
name = "who"

[[rules]]
id = "subagents.read_only"
action = "deny"
tools = ["write_file", "edit_file"]
who = { agent_type = ["Explore", "review*"] }
reason = "a {tool} by an exploring subagent"

[[rules]]
id = "writes.inside"
action = "allow"
tools = ["write_file", "edit_file"]
path_scope = "inside"
reason = "writes inside the workspace"
"#;
    let with_rule = sandbox.write("who.toml", policy);
    let start = policy.find("[[rules]]\nid = \"writes.inside\"").unwrap();
    let without = sandbox.write(
        "without.toml",
        &format!("name = \"who\"\n\n{}", &policy[start..]),
    );
    let write = |id: &str, subagent: bool| {
        let mut payload = hook_payload(&sandbox, "pre_tool_use_subagent.json");
        payload["tool_use_id"] = json!(id);
        payload["tool_name"] = json!("Write");
        payload["tool_input"] = json!({
            "file_path": sandbox.ws.join(format!("{id}.txt")),
            "content": "x",
        });
        if !subagent {
            let object = payload.as_object_mut().unwrap();
            object.remove("agent_id");
            object.remove("agent_type");
        }
        let out = sandbox
            .gavel(&[
                "hook",
                "claude-code",
                "--policy",
                with_rule.to_str().unwrap(),
            ])
            .write_stdin(payload.to_string())
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        answer["hookSpecificOutput"]["permissionDecision"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(write("toolu_parent", false), "allow");
    assert_eq!(write("toolu_subagent", true), "deny");
    let decided = |id: &str| {
        let out = run_expecting(&mut sandbox.gavel(&["explain", id, "--json"]), 0);
        json(&out)
    };
    assert_eq!(decided("toolu_subagent")["rule_id"], "subagents.read_only");
    let parent = decided("toolu_parent");
    assert_eq!(parent["rule_id"], "writes.inside");
    let tried = &parent["trace"][0];
    assert_eq!(tried["rule_id"], "subagents.read_only");
    assert_eq!(tried["detail"], "the call has no `agent_type`", "{parent}");
    // A case can name who made the call.
    let cases = sandbox.write(
        "cases.toml",
        r#"
[[cases]]
tool = "write_file"
arguments = { path = "a.txt", content = "x" }
who = { client = "claude-code", agent_type = "review-bot" }
action = "deny"
rule_id = "subagents.read_only"

[[cases]]
tool = "write_file"
arguments = { path = "a.txt", content = "x" }
action = "allow"
"#,
    );
    run_expecting(
        &mut sandbox.gavel(&[
            "policy",
            "test",
            cases.to_str().unwrap(),
            "--policy",
            with_rule.to_str().unwrap(),
        ]),
        0,
    );
    // Replay without the rule: exactly the subagent's write loosens.
    let out = sandbox
        .gavel(&["replay", "--json", "--policy", without.to_str().unwrap()])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", crate::support::stdout(&out)));
    assert_eq!(report["changed"], 1, "{report}");
    let call = &report["calls"][0];
    assert_eq!(call["call_id"], "toolu_subagent");
    assert_eq!(call["direction"], "loosened");
    assert_eq!(call["from"]["rule_id"], "subagents.read_only");
}

/// `gavel check` decides as `gavel run` would: client `cli`, this user.
#[test]
fn check_decides_as_the_cli_client() {
    let sandbox = Sandbox::new();
    let (user, _) = me();
    let policy = sandbox.write(
        "who.toml",
        &format!(
            "name = \"p\"\n[[rules]]\nid = \"cli.writes\"\naction = \"allow\"\ntools = [\"write_file\"]\n\
             who = {{ client = [\"cli\"], user = [\"{user}\"] }}\nreason = \"r\"\n"
        ),
    );
    let out = run_expecting(
        &mut sandbox.gavel(&[
            "check",
            "write_file",
            r#"{"path":"a.txt","content":"x"}"#,
            "--policy",
            policy.to_str().unwrap(),
            "--json",
        ]),
        0,
    );
    assert_eq!(json(&out)["rule_id"], "cli.writes");
}
