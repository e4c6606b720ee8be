//! Redaction before hashing: the secret shapes of `fixtures/secrets/corpus.txt`
//! sent through `run`, `serve` and every `hook <client>` leave no raw byte in
//! the database, its WAL or any reading command's output, while the log
//! verifies and every decision is the one made without redaction.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{Sandbox, code, json_lines, run_expecting, stderr, stdout};

struct Case {
    /// What is sent, with newlines.
    text: String,
    /// What must appear nowhere in the record.
    secrets: Vec<String>,
}

fn corpus() -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/secrets/corpus.txt");
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| Case {
            text: line.replace("[[", "").replace("]]", "").replace('⏎', "\n"),
            secrets: line
                .split("[[")
                .skip(1)
                .filter_map(|s| s.split("]]").next())
                .map(str::to_owned)
                .collect(),
        })
        .collect()
}

/// A policy file: the built-in default with a `[redact]` table.
fn policy(sandbox: &Sandbox, redact: &str) -> String {
    let default = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/policy/default.toml"),
    )
    .unwrap();
    let path = sandbox.root.join("policy.toml");
    std::fs::write(&path, format!("{default}\n[redact]\n{redact}\n")).unwrap();
    path.to_string_lossy().into_owned()
}

fn hook_payload(sandbox: &Sandbox, fixture: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/clients/claude-code")
        .join(fixture);
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text.replace("${WORKSPACE}", &sandbox.ws.to_string_lossy())).unwrap()
}

/// Sends every case through `run`, `serve` and `hook claude-code`; returns
/// the `(call_id, action, rule_id)` of every decision as the clients saw it.
fn send_everything(sandbox: &Sandbox, cases: &[Case], policy: &str) -> Vec<(String, Value)> {
    let mut decisions = Vec::new();
    let with_policy = |args: &[&str]| {
        let mut cmd = sandbox.gavel(args);
        cmd.arg("--policy").arg(policy);
        cmd
    };
    let mut serve_lines = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        // `run`: the text as a command (never approved), then as file content
        // written (approved) and read back, so it lands in results too.
        for (id, tool, args, flag) in [
            (
                format!("bash-{i}"),
                "bash",
                json!({"command": case.text}),
                "--reject",
            ),
            (
                format!("write-{i}"),
                "write_file",
                json!({"path": format!("f{i}.env"), "content": case.text}),
                "--approve",
            ),
            (
                format!("read-{i}"),
                "read_file",
                json!({"path": format!("f{i}.env")}),
                "--approve",
            ),
        ] {
            let out = with_policy(&[
                "run",
                tool,
                &args.to_string(),
                flag,
                "--call-id",
                &id,
                "--json",
            ])
            .output()
            .unwrap();
            let line = json_lines(&out).pop().unwrap_or(Value::Null);
            decisions.push((id, json!([line["action"], line["rule_id"]])));
        }
        serve_lines.push(
            json!({"type":"tool_use","id":format!("serve-read-{i}"),"name":"read_file",
                   "input":{"path":format!("f{i}.env")}})
            .to_string(),
        );
        serve_lines.push(
            json!({"type":"tool_use","id":format!("serve-write-{i}"),"name":"write_file",
                   "input":{"path":format!("s{i}.txt"),"content":case.text}})
            .to_string(),
        );
        serve_lines.push(
            json!({"type":"approval","id":format!("serve-write-{i}"),"approved":true}).to_string(),
        );

        // `hook claude-code`: the text as a Bash command, its output, and a prompt.
        let id = format!("toolu_{i}");
        let mut pre = hook_payload(sandbox, "pre_tool_use.json");
        pre["tool_use_id"] = json!(id);
        pre["tool_name"] = json!("Bash");
        pre["tool_input"] = json!({"command": case.text, "description": "x"});
        let out = with_policy(&["hook", "claude-code"])
            .write_stdin(pre.to_string())
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        decisions.push((
            id.clone(),
            answer["hookSpecificOutput"]["permissionDecision"].clone(),
        ));
        let mut post = hook_payload(sandbox, "post_tool_use.json");
        post["tool_use_id"] = json!(id);
        post["tool_name"] = json!("Bash");
        post["tool_input"] = json!({"command": case.text, "description": "x"});
        post["tool_response"]["stdout"] = json!(case.text);
        let out = with_policy(&["hook", "claude-code"])
            .write_stdin(post.to_string())
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let mut prompt = hook_payload(sandbox, "user_prompt_submit.json");
        prompt["prompt"] = json!(case.text);
        let out = with_policy(&["hook", "claude-code"])
            .write_stdin(prompt.to_string())
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let out = with_policy(&["serve", "--stdio"])
        .write_stdin(serve_lines.join("\n") + "\n")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for line in json_lines(&out) {
        if line["type"] == "tool_result" {
            decisions.push((
                line["call_id"].as_str().unwrap_or("?").to_owned(),
                json!([line["action"], line["rule_id"]]),
            ));
        }
    }
    decisions
}

/// Every place a raw secret could be: the database file, its WAL, and the
/// output of every reading command.
fn everything_stored(sandbox: &Sandbox, call_ids: &[String]) -> Vec<(String, Vec<u8>)> {
    let mut places = vec![("database".to_owned(), std::fs::read(&sandbox.db).unwrap())];
    for suffix in ["-wal", "-journal"] {
        let mut name = sandbox.db.as_os_str().to_owned();
        name.push(suffix);
        if let Ok(bytes) = std::fs::read(&name) {
            places.push((format!("database{suffix}"), bytes));
        }
    }
    let mut read = |label: String, args: &[&str]| {
        let out = run_expecting(&mut sandbox.gavel(args), 0);
        places.push((label, out.stdout));
    };
    read("export jsonl".into(), &["export"]);
    read("export csv".into(), &["export", "--format", "csv"]);
    read("export --requests".into(), &["export", "--requests"]);
    read("log".into(), &["log", "--events"]);
    read("log --json".into(), &["log", "--json", "--events"]);
    for id in call_ids {
        read(format!("show {id}"), &["show", id, "--json"]);
        read(format!("show {id} (table)"), &["show", id]);
        read(format!("explain {id}"), &["explain", id]);
    }
    places
}

#[test]
#[ignore = "slow: a plain `cargo test` leaves it out; `cargo test -- --ignored` (and CI) runs it"]
fn no_raw_secret_is_stored_and_decisions_are_unchanged() {
    let cases = corpus();
    assert!(cases.len() >= 50, "{} cases", cases.len());

    let redacted = Sandbox::new();
    let redacted_policy = policy(&redacted, "enabled = true");
    let with = send_everything(&redacted, &cases, &redacted_policy);
    let kept = Sandbox::new();
    let kept_policy = policy(&kept, "enabled = false");
    let without = send_everything(&kept, &cases, &kept_policy);
    assert_eq!(with.len(), without.len());
    assert_eq!(with, without, "decisions differ with redaction");

    let report = serde_json::from_slice::<Value>(
        &run_expecting(&mut redacted.gavel(&["verify", "--json"]), 0).stdout,
    )
    .unwrap();
    assert_eq!(report["ok"], true, "{report}");

    // Checked against the log kept whole: every secret is really there,
    // so its absence from the redacted log is meaningful.
    let kept_db = std::fs::read(&kept.db).unwrap();
    let contains = |hay: &[u8], needle: &str| {
        hay.windows(needle.len())
            .any(|window| window == needle.as_bytes())
    };
    let first_secret = &cases[0].secrets[0];
    assert!(
        contains(&kept_db, first_secret),
        "the opt-out log keeps secrets"
    );

    let ids: Vec<String> = (0..cases.len())
        .flat_map(|i| {
            [
                format!("bash-{i}"),
                format!("toolu_{i}"),
                format!("serve-write-{i}"),
            ]
        })
        .collect();
    let places = everything_stored(&redacted, &ids);
    let mut leaks = Vec::new();
    for case in &cases {
        for secret in &case.secrets {
            for (place, bytes) in &places {
                if contains(bytes, secret) {
                    leaks.push(format!("{secret} in {place}"));
                }
            }
        }
    }
    assert!(leaks.is_empty(), "{} leaks: {leaks:#?}", leaks.len());

    // The markers are there, with their counts.
    let export = String::from_utf8(
        places[1..]
            .iter()
            .find(|(p, _)| p == "export jsonl")
            .unwrap()
            .1
            .clone(),
    )
    .unwrap();
    assert!(export.contains("«redacted:"), "no marker in the export");
    let shown = json_lines(&run_expecting(
        &mut redacted.gavel(&["show", "bash-0", "--json"]),
        0,
    ));
    let request = shown[0]["events"]
        .as_array()
        .and_then(|events| events.iter().find(|e| e["kind"] == "request"))
        .unwrap_or_else(|| panic!("{shown:#?}"));
    assert!(
        request["payload"]["redactions"].as_u64() > Some(0),
        "{request}"
    );

    // Every Claude Code completion matched its redacted request: no anomaly.
    let anomalies = json_lines(&run_expecting(
        &mut redacted.gavel(&["log", "--anomalies", "--json"]),
        0,
    ));
    assert!(anomalies.is_empty(), "{anomalies:#?}");

    // Replay under the recording policy: nothing changes.
    let out = redacted
        .gavel(&["replay", "--policy", &redacted_policy, "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["changed"], 0, "{report}");
}

#[test]
fn the_redaction_key_is_beside_the_log_and_private() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "bash",
            r#"{"command":"echo DB_PASSWORD=hunter2hunter2"}"#,
            "--approve",
        ]),
        0,
    );
    let mut key = sandbox.db.as_os_str().to_owned();
    key.push(".redact-key");
    let meta = std::fs::metadata(&key).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&key).unwrap().trim().len(), 64);
    let db = std::fs::read(&sandbox.db).unwrap();
    assert!(!db.windows(14).any(|w| w == b"hunter2hunter2"));
    // Equal secrets correlate: a second call gets the same tag.
    run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "bash",
            r#"{"command":"echo DB_PASSWORD=hunter2hunter2 again"}"#,
            "--approve",
        ]),
        0,
    );
    let export = stdout(&run_expecting(&mut sandbox.gavel(&["export"]), 0));
    let tags: std::collections::BTreeSet<&str> = export
        .split('«')
        .skip(1)
        .filter_map(|s| s.split('»').next())
        .filter_map(|marker| marker.rsplit(':').next())
        .collect();
    assert_eq!(tags.len(), 1, "{tags:?}");
}

#[test]
fn a_policy_with_a_bad_redact_pattern_is_refused() {
    let sandbox = Sandbox::new();
    let path = policy(&sandbox, "patterns = [\"(unclosed\"]");
    let out = sandbox
        .gavel(&[
            "run",
            "read_file",
            r#"{"path":"notes.txt"}"#,
            "--policy",
            &path,
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("[redact]"), "{}", stderr(&out));
}

#[test]
fn a_policy_pattern_redacts_and_kept_tools_are_stored_whole() {
    let sandbox = Sandbox::new();
    let path = policy(
        &sandbox,
        "patterns = ['INTERNAL-[0-9]{6}']\nkeep_tools = [\"write_file\"]",
    );
    for args in [
        ["run", "bash", r#"{"command":"echo INTERNAL-123456"}"#],
        [
            "run",
            "write_file",
            r#"{"path":"k.txt","content":"DB_PASSWORD=keptkeptkept"}"#,
        ],
    ] {
        let mut cmd = sandbox.gavel(&args);
        cmd.args(["--approve", "--policy", &path]);
        run_expecting(&mut cmd, 0);
    }
    let export = stdout(&run_expecting(&mut sandbox.gavel(&["export"]), 0));
    assert!(!export.contains("INTERNAL-123456"), "{export}");
    assert!(export.contains("«redacted:policy:"), "{export}");
    assert!(export.contains("keptkeptkept"), "{export}");
}

#[test]
fn keep_paths_stores_the_calls_on_those_paths_whole_and_redacts_the_rest() {
    let sandbox = Sandbox::new();
    let path = policy(&sandbox, "keep_paths = [\"fixtures/**\"]");
    let secret = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";
    let body = format!("token = \"{secret}\"\n");
    sandbox.write("fixtures/token.txt", &body);
    sandbox.write("src/token.txt", &body);
    for (id, file) in [
        ("kept", "fixtures/token.txt"),
        ("redacted", "./src/token.txt"),
    ] {
        let arguments = serde_json::json!({ "path": file }).to_string();
        let mut cmd = sandbox.gavel(&["run", "read_file", &arguments, "--call-id", id]);
        cmd.args(["--policy", &path]);
        run_expecting(&mut cmd, 0);
    }
    let shown = |id: &str| {
        stdout(&run_expecting(
            &mut sandbox.gavel(&["show", id, "--json"]),
            0,
        ))
    };
    let kept = shown("kept");
    assert!(
        kept.contains(secret),
        "the kept call's result is whole: {kept}"
    );
    let redacted = shown("redacted");
    assert!(!redacted.contains(secret), "{redacted}");
    assert!(redacted.contains("«redacted:github_token:"), "{redacted}");
    crate::store::assert_intact(&sandbox, &[]);
    // A glob that does not compile is refused when the policy loads.
    let bad = policy(&sandbox, "keep_paths = [\"a[\"]");
    let mut cmd = sandbox.gavel(&["check", "read_file", r#"{"path":"a"}"#]);
    cmd.args(["--policy", &bad]);
    let err = crate::support::assert_one_line_error(&mut cmd);
    assert!(err.contains("keep_paths"), "{err}");
}

/// `template` of `client` with `${WORKSPACE}`, `${ID}` and `${COMMAND}`
/// filled in every string, also inside a string that holds JSON
/// (Copilot's `toolArgs`).
fn client_payload(
    sandbox: &Sandbox,
    client: &str,
    template: &str,
    command: &str,
    id: &str,
) -> Value {
    fn fill(value: &mut Value, command: &str) {
        match value {
            Value::String(s) => {
                if let Ok(mut inner @ Value::Object(_)) = serde_json::from_str::<Value>(s) {
                    fill(&mut inner, command);
                    *s = inner.to_string();
                } else {
                    *s = s.replace("${COMMAND}", command);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| fill(v, command)),
            Value::Object(map) => map.values_mut().for_each(|v| fill(v, command)),
            _ => {}
        }
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/clients")
        .join(client)
        .join(format!("{template}.json"));
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("${WORKSPACE}", &sandbox.ws.to_string_lossy())
        .replace("${ID}", id);
    let mut value: Value = serde_json::from_str(&text).unwrap();
    fill(&mut value, command);
    value
}

/// The verdict a client's answer carries; silence (Codex) lets it run.
fn verdict(answer: &[u8]) -> String {
    let Ok(answer) = serde_json::from_slice::<Value>(answer) else {
        return "allow".into();
    };
    let inner = answer.get("hookSpecificOutput").unwrap_or(&answer);
    ["permissionDecision", "decision", "permission"]
        .iter()
        .find_map(|key| inner[key].as_str())
        .unwrap_or("allow")
        .to_owned()
}

/// Every corpus case as a shell command through the Codex, Gemini CLI,
/// Copilot CLI and Cursor adapters, and its output back: no raw secret in
/// the record or any reading of it, the log verifies, and every verdict is
/// the one given without redaction.
#[test]
#[ignore = "slow: a plain `cargo test` leaves it out; `cargo test -- --ignored` (and CI) runs it"]
fn every_client_adapter_redacts_before_hashing() {
    let cases = corpus();
    let clients: [(&str, &[&str], &[&str]); 4] = [
        ("codex", &[], &[]),
        ("gemini", &["--ask", "prompt"], &[]),
        (
            "copilot",
            &["--ask", "prompt", "--event", "preToolUse"],
            &["--event", "postToolUse"],
        ),
        ("cursor", &[], &[]),
    ];
    let send = |sandbox: &Sandbox, policy: &str| -> Vec<String> {
        let mut verdicts = Vec::new();
        for (i, case) in cases.iter().enumerate() {
            for (client, pre_args, post_args) in clients {
                let id = format!("{client}-{i}");
                let hook = |args: &[&str], payload: Value| {
                    let out = sandbox
                        .gavel(&["hook", client])
                        .args(args)
                        .arg("--policy")
                        .arg(policy)
                        .write_stdin(payload.to_string())
                        .output()
                        .unwrap();
                    assert_eq!(code(&out), 0, "{client}: {}", stderr(&out));
                    out.stdout
                };
                let pre = client_payload(sandbox, client, "shell_pre", &case.text, &id);
                let verdict = verdict(&hook(pre_args, pre));
                if verdict != "deny" {
                    let post = client_payload(sandbox, client, "shell_post", &case.text, &id);
                    hook(post_args, post);
                }
                verdicts.push(format!("{client} {i} {verdict}"));
            }
        }
        verdicts
    };
    let redacted = Sandbox::new();
    let with = send(&redacted, &policy(&redacted, "enabled = true"));
    let kept = Sandbox::new();
    let without = send(&kept, &policy(&kept, "enabled = false"));
    assert_eq!(with, without, "verdicts differ with redaction");
    assert!(with.iter().any(|v| !v.ends_with("deny")), "{with:?}");

    let report = serde_json::from_slice::<Value>(
        &run_expecting(&mut redacted.gavel(&["verify", "--json"]), 0).stdout,
    )
    .unwrap();
    assert_eq!(report["ok"], true, "{report}");

    let contains = |hay: &[u8], needle: &str| {
        hay.windows(needle.len())
            .any(|window| window == needle.as_bytes())
    };
    let kept_db = std::fs::read(&kept.db).unwrap();
    assert!(
        contains(&kept_db, &cases[0].secrets[0]),
        "the opt-out log keeps secrets"
    );

    let ids: Vec<String> = json_lines(&run_expecting(&mut redacted.gavel(&["log", "--json"]), 0))
        .iter()
        .filter_map(|line| line["call_id"].as_str().map(str::to_owned))
        .collect();
    assert!(
        ids.len() >= cases.len() * clients.len(),
        "{} calls",
        ids.len()
    );
    let places = everything_stored(&redacted, &ids);
    let leaks: Vec<String> = cases
        .iter()
        .flat_map(|case| &case.secrets)
        .flat_map(|secret| {
            places
                .iter()
                .filter(|(_, bytes)| contains(bytes, secret))
                .map(move |(place, _)| format!("{secret} in {place}"))
        })
        .collect();
    assert!(leaks.is_empty(), "{} leaks: {leaks:#?}", leaks.len());
}

/// `n` random letters and digits.
fn random_alphanumeric(n: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).unwrap();
    bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

/// The secrets of `secrets` found anywhere a raw byte could be kept.
fn raw_in_record(sandbox: &Sandbox, secrets: &[String]) -> Vec<String> {
    let places = everything_stored(sandbox, &[]);
    secrets
        .iter()
        .flat_map(|secret| {
            places
                .iter()
                .filter(move |(_, bytes)| {
                    bytes.windows(secret.len()).any(|w| w == secret.as_bytes())
                })
                .map(move |(place, _)| format!("{secret} in {place}"))
        })
        .collect()
}

#[test]
fn a_cookie_header_left_session_ids_raw_in_the_record() {
    // The values are random: before, the entropy detector cut the header
    // as the facts repeat it into tokens and took a value or left it, by
    // its entropy (a third of them stayed raw).
    let sandbox = Sandbox::new();
    let mut secrets = Vec::new();
    for _ in 0..12 {
        let (a, b) = (random_alphanumeric(32), random_alphanumeric(32));
        let command =
            format!("curl -H \"Cookie: sessionid={a}; csrftoken={b}\" https://app.example.com/");
        let args = json!({ "command": command }).to_string();
        run_expecting(&mut sandbox.gavel(&["run", "bash", &args, "--reject"]), 3);
        secrets.extend([a, b]);
    }
    let leaks = raw_in_record(&sandbox, &secrets);
    assert!(leaks.is_empty(), "{leaks:#?}");
}

#[test]
fn a_sendgrid_key_reached_the_record_in_clear() {
    let sandbox = Sandbox::new();
    let mut secrets = Vec::new();
    for i in 0..4 {
        // Its id and its secret part are separate tokens to the entropy
        // detector: the id (22 bytes, too short) was kept raw.
        let (id, secret) = (random_alphanumeric(22), random_alphanumeric(43));
        let key = format!("SG.{id}.{secret}");
        let command = match i % 2 {
            0 => format!("echo {key}"),
            _ => format!("curl -d 'api_user=x' --data-urlencode k={key} https://api.sendgrid.com"),
        };
        let args = json!({ "command": command }).to_string();
        run_expecting(&mut sandbox.gavel(&["run", "bash", &args, "--reject"]), 3);
        secrets.extend([id, secret]);
    }
    let leaks = raw_in_record(&sandbox, &secrets);
    assert!(leaks.is_empty(), "{leaks:#?}");
}

#[test]
fn paths_with_a_random_folder_name_were_recorded_as_a_marker() {
    // The sandbox itself lives in a folder named by `mktemp` (`.tmpXXXXXX`);
    // one more such folder, its name as random as a token's.
    let sandbox = Sandbox::new();
    let folder = format!("gavel-first-hour-{}", random_alphanumeric(8));
    let readme = sandbox.write(&format!("{folder}/ws/README.md"), "# hi\n");
    let readme = readme.to_string_lossy().into_owned();
    let args = json!({ "path": readme }).to_string();
    run_expecting(
        &mut sandbox.gavel(&["run", "read_file", &args, "--call-id", "read"]),
        0,
    );
    let command = format!("cat {readme} | head -n 3");
    let args = json!({ "command": command }).to_string();
    run_expecting(
        &mut sandbox.gavel(&["run", "bash", &args, "--reject", "--call-id", "bash"]),
        3,
    );
    let events = json_lines(&run_expecting(&mut sandbox.gavel(&["export"]), 0));
    let request = |id: &str| {
        events
            .iter()
            .find(|e| e["call_id"] == id && e["kind"] == "request")
            .unwrap_or_else(|| panic!("no request of {id}"))
            .clone()
    };
    let read = request("read");
    assert_eq!(read["payload"]["arguments"]["path"], readme, "{read}");
    let bash = request("bash");
    assert_eq!(bash["payload"]["arguments"]["command"], command, "{bash}");
    let text = events.iter().map(Value::to_string).collect::<String>();
    assert!(!text.contains("redacted"), "{text}");
}
