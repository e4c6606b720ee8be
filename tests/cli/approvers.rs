//! Approvers with a second factor, through the real binary: people enrolled
//! with a TOTP secret (`gavel approvers add`), a rule that needs two of
//! them, and every way around it refused: an answer without a code, a
//! stranger's, a reused code, the same person twice, a flag, a client's own
//! prompt, the approval page's token alone.

use std::process::Child;

use serde_json::{Value, json};

use gavel::approvals::totp::{Totp, from_base32};

use crate::approvals::wait_for_pending;
use crate::support::*;

pub const TWO_PERSON: &str = r#"name = "two-person"

[[rules]]
id = "write.two_person"
action = "ask"
tools = ["write_file", "Write"]
approvers = ["alice", "bob", "carol"]
quorum = 2
reason = "writes need two people"

[[rules]]
id = "read"
action = "allow"
tools = ["read_file"]
reason = "reads"
"#;

/// Enrols `name`; the generator their authenticator app would read from
/// the URI `approvers add` printed.
pub fn enrol(sandbox: &Sandbox, name: &str) -> Totp {
    let output = run_expecting(&mut sandbox.gavel(&["approvers", "add", name]), 0);
    let text = stdout(&output);
    let uri = text
        .lines()
        .find(|l| l.starts_with("otpauth://totp/"))
        .expect("the URI is printed");
    let secret = uri
        .split("secret=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    Totp::new(from_base32(secret).unwrap())
}

pub fn code_now(totp: &Totp) -> String {
    let now = chrono::Utc::now().timestamp() as u64;
    totp.code_at(totp.step(now))
}

/// `gavel run write_file` of `content` to `out.txt` as call `id`, under
/// `--ask WAIT`, in the background.
fn spawn_write(sandbox: &Sandbox, id: &str, wait: &str) -> Child {
    spawn_write_to(sandbox, id, "out.txt", "both agreed\n", wait)
}

/// `gavel run write_file` of `content` to `path` as call `id`, under
/// `--ask WAIT`, in the background.
pub fn spawn_write_to(sandbox: &Sandbox, id: &str, path: &str, content: &str, wait: &str) -> Child {
    let arguments = json!({"path": path, "content": content}).to_string();
    sandbox.spawn(&[
        "run",
        "write_file",
        &arguments,
        "--call-id",
        id,
        "--ask",
        wait,
        "--json",
    ])
}

fn answer(sandbox: &Sandbox, verb: &str, id: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec![verb, id, "-y", "--json"];
    args.extend_from_slice(extra);
    let output = sandbox.gavel(&args).output().unwrap();
    (
        code(&output),
        format!("{}{}", stdout(&output), stderr(&output)),
    )
}

#[test]
fn two_enrolled_people_with_their_codes_approve_and_nothing_else_does() {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", TWO_PERSON);
    let alice = enrol(&sandbox, "alice");
    let bob = enrol(&sandbox, "bob");
    let listed = json_lines(&run_expecting(
        &mut sandbox.gavel(&["approvers", "list", "--json"]),
        0,
    ));
    let names: Vec<&str> = listed.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["alice", "bob"]);
    // The secret is kept owner-only, outside the workspace and the log.
    let secrets = std::fs::read_dir(sandbox.root.join("data/gavel/keys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".approvers"))
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(secrets.join("alice.totp"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let child = spawn_write(&sandbox, "w1", "wait=60s");
    wait_for_pending(&sandbox, 1);
    // The terminal alone, a wrong code, a stranger: none counts.
    let (status, said) = answer(&sandbox, "approve", "w1", &[]);
    assert_eq!(status, 2, "{said}");
    assert!(said.contains("without a second factor"), "{said}");
    let wrong = if code_now(&alice) == "000000" {
        "111111"
    } else {
        "000000"
    };
    let (status, said) = answer(
        &sandbox,
        "approve",
        "w1",
        &["--as", "alice", "--code", wrong],
    );
    assert_eq!(status, 2, "{said}");
    let (status, said) = answer(
        &sandbox,
        "approve",
        "w1",
        &["--as", "carol", "--code", "123456"],
    );
    assert_eq!(status, 2, "{said}");
    assert!(said.contains("not an enrolled approver"), "{said}");

    let alice_code = code_now(&alice);
    let (status, said) = answer(
        &sandbox,
        "approve",
        "w1",
        &["--as", "alice", "--code", &alice_code],
    );
    assert_eq!(status, 0, "{said}");
    let vote: Value = serde_json::from_str(said.lines().next().unwrap()).unwrap();
    assert_eq!(
        (vote["approval"].as_str(), vote["votes"].as_u64()),
        (Some("pending"), Some(1))
    );
    // Still waiting, and listed so, with who approved so far.
    let listed = wait_for_pending(&sandbox, 1);
    assert_eq!(listed[0]["votes"], json!(["alice"]), "{listed:?}");
    // One person twice does not make two.
    let (status, said) = answer(
        &sandbox,
        "approve",
        "w1",
        &["--as", "alice", "--code", &alice_code],
    );
    assert_eq!(status, 2, "{said}");
    assert!(
        !sandbox.ws.join("out.txt").exists(),
        "nothing ran on one approval"
    );

    let (status, said) = answer(
        &sandbox,
        "approve",
        "w1",
        &["--as", "bob", "--code", &code_now(&bob)],
    );
    assert_eq!(status, 0, "{said}");
    let output = child.wait_with_output().unwrap();
    let outcome = json(&output);
    assert_eq!(outcome["approval"], "approved", "{outcome}");
    assert_eq!(outcome["status"], "succeeded", "{outcome}");
    assert_eq!(sandbox.read("out.txt"), "both agreed\n");

    // The record holds each approver, their factor and time.
    let explained = json(&run_expecting(
        &mut sandbox.gavel(&["explain", "w1", "--json"]),
        0,
    ));
    assert_eq!(explained["approver"]["approver"], "bob", "{explained}");
    assert_eq!(explained["approver"]["factor"], "totp", "{explained}");
    let shown = stdout(&run_expecting(&mut sandbox.gavel(&["explain", "w1"]), 0));
    assert!(
        shown.contains("after an approval via cli by `alice` with totp"),
        "{shown}"
    );
    // Its quorum is in the record: `verify` passes.
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
    // The evidence report names each approver, channel and factor.
    let html = sandbox.root.join("report.html");
    run_expecting(
        &mut sandbox.gavel(&["report", "--html", html.to_str().unwrap()]),
        0,
    );
    let html = std::fs::read_to_string(html).unwrap();
    assert!(
        html.contains("voted by alice (cli, totp)"),
        "no vote in the report"
    );
    assert!(
        html.contains("approved by bob (cli, totp)"),
        "no approval in the report"
    );
    assert!(
        html.contains("needs 2 distinct people of alice, bob, carol"),
        "no quorum in the report"
    );

    // A code is taken once: alice's, used above, approves nothing else.
    let child = spawn_write(&sandbox, "w2", "wait=4s");
    wait_for_pending(&sandbox, 1);
    let (status, said) = answer(
        &sandbox,
        "approve",
        "w2",
        &["--as", "alice", "--code", &alice_code],
    );
    assert_eq!(status, 2, "{said}");
    assert!(said.contains("already used"), "{said}");
    let output = child.wait_with_output().unwrap();
    assert_eq!(json(&output)["approval"], "cancelled");
}

#[test]
fn no_other_channel_can_answer_a_call_that_needs_approvers() {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", TWO_PERSON);
    // A flag answers for everyone: not counted, nothing prompted, blocked.
    let output = sandbox
        .gavel(&[
            "run",
            "write_file",
            r#"{"path":"x.txt","content":"x"}"#,
            "--approve",
            "--json",
        ])
        .output()
        .unwrap();
    let outcome = json(&output);
    assert_eq!(outcome["approval"], "cancelled", "{outcome}");
    assert_eq!(outcome["status"], "blocked", "{outcome}");
    assert!(!sandbox.ws.join("x.txt").exists());
    let explained = json(&run_expecting(
        &mut sandbox.gavel(&["explain", outcome["call_id"].as_str().unwrap(), "--json"]),
        0,
    ));
    assert_eq!(
        explained["approver"]["cause"], "factor_required",
        "{explained}"
    );

    // Claude Code's own prompt is not asked: the hook denies and says how.
    let payload = tool_payload(
        &sandbox,
        "pre_tool_use.json",
        "cc-write",
        "Write",
        json!({"file_path": sandbox.ws.join("y.txt"), "content": "y"}),
    );
    let output = run_expecting(
        sandbox
            .gavel(&["hook", "claude-code"])
            .write_stdin(payload.to_string()),
        0,
    );
    let answer = json(&output)["hookSpecificOutput"].clone();
    assert_eq!(answer["permissionDecision"], "deny", "{answer}");
    assert!(
        answer["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("2 distinct people of alice, bob, carol"),
        "{answer}"
    );
}

/// The approval page's token is what a governed agent of the same OS user
/// could read: with it alone, the page refuses to approve a call that needs
/// approvers; with an enrolled person's code, it counts that person.
#[test]
fn the_page_token_alone_cannot_approve_a_call_that_needs_approvers() {
    use std::io::{Read, Write};
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", TWO_PERSON);
    let alice = enrol(&sandbox, "alice");
    let (mut page, address, token) = crate::approvals_page::start_page(&sandbox);
    let child = spawn_write(&sandbox, "p1", "wait=6s");
    let waiting = wait_for_pending(&sandbox, 1);
    let digest = waiting[0]["arguments_sha256"].as_str().unwrap().to_owned();
    let post = |body: Value| -> String {
        let body = body.to_string();
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "POST /api/answer HTTP/1.1\r\nHost: {address}\r\nX-Gavel-Token: {token}\r\nOrigin: http://{address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        reply
    };
    let token_only = post(json!({"call_id": "p1", "approved": true, "arguments_sha256": digest}));
    assert!(token_only.starts_with("HTTP/1.1 409"), "{token_only}");
    assert!(token_only.contains("second factor"), "{token_only}");
    let with_code = post(
        json!({"call_id": "p1", "approved": true, "arguments_sha256": digest,
                                "approver": "alice", "code": code_now(&alice)}),
    );
    assert!(with_code.starts_with("HTTP/1.1 200"), "{with_code}");
    // One of two: the wait ends unanswered, nothing written.
    let output = child.wait_with_output().unwrap();
    assert_eq!(json(&output)["approval"], "cancelled");
    assert!(!sandbox.ws.join("out.txt").exists());
    let _ = page.kill();
    let _ = page.wait();
}

/// An approval written around the queue's checks (here by the library,
/// straight into the record: one person, no second) lets the call run, but
/// `gavel verify` then fails on it, naming the call and the shortfall; a
/// record whose quorum was met verifies.
#[test]
fn verify_fails_an_approval_short_of_its_quorum() {
    use gavel::audit::{ApprovalRecord, Event, EventBody, Factor};
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", TWO_PERSON);
    let child = spawn_write(&sandbox, "forged", "wait=30s");
    let waiting = wait_for_pending(&sandbox, 1);
    let mut record = ApprovalRecord::new(
        gavel::ApprovalStatus::Approved,
        gavel::approval::ApprovalChannel::Cli,
    );
    record.approver = Some("alice".into());
    record.factor = Some(Factor::Totp);
    record.arguments_sha256 = waiting[0]["arguments_sha256"].as_str().map(str::to_owned);
    record.policy_digest = waiting[0]["policy_digest"].as_str().map(str::to_owned);
    let mut store =
        gavel::store::Store::open(&sandbox.db, gavel::store::Durability::Normal).unwrap();
    store
        .append(&[Event::now(
            "forged",
            Some("write_file"),
            EventBody::Approval(record),
        )])
        .unwrap();
    drop(store);
    let output = child.wait_with_output().unwrap();
    assert_eq!(json(&output)["approval"], "approved");
    let verified = sandbox.gavel(&["verify"]).output().unwrap();
    assert_eq!(code(&verified), 1, "{}", stdout(&verified));
    assert!(
        stderr(&verified).contains("QUORUM: call `forged` was approved by 1 of 2 needed"),
        "{}",
        stderr(&verified)
    );
}

/// `factors = ["passkey"]`: a code, and so `gavel approve` on a terminal,
/// does not count; replay under the rule without it reports the loosening.
#[test]
fn a_rule_counting_only_passkeys_refuses_terminal_codes() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "gavel.toml",
        &TWO_PERSON
            .replace("quorum = 2", "quorum = 1\nfactors = [\"passkey\"]")
            .replace("name = \"two-person\"", "name = \"passkeys-only\""),
    );
    let alice = enrol(&sandbox, "alice");
    let child = spawn_write(&sandbox, "p1", "wait=4s");
    wait_for_pending(&sandbox, 1);
    let (status, said) = answer(
        &sandbox,
        "approve",
        "p1",
        &["--as", "alice", "--code", &code_now(&alice)],
    );
    assert_eq!(status, 2, "{said}");
    assert!(said.contains("counts only passkey answers"), "{said}");
    let output = child.wait_with_output().unwrap();
    assert_eq!(json(&output)["approval"], "cancelled");
    assert!(!sandbox.ws.join("out.txt").exists());

    sandbox.write(
        "either.toml",
        &TWO_PERSON.replace("quorum = 2", "quorum = 1"),
    );
    let either = sandbox.ws.join("either.toml");
    let drift = json(&run_expecting(
        &mut sandbox.gavel(&["replay", "--policy", either.to_str().unwrap(), "--json"]),
        1,
    ));
    let changed = drift["transitions"].to_string();
    assert!(changed.contains("loosened"), "{drift}");
}

/// A governed agent of the same OS user, through the real Claude Code
/// hook under the coding-agent preset: it may not read the approvers'
/// secrets or the page's token, nor run what would answer its own call
/// (`gavel approve`, a POST to the page) or enrol itself in a person's
/// place (`gavel approvers`); each is refused, never allowed.
#[test]
fn a_governed_agent_cannot_reach_the_factors_or_answer_for_itself() {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", gavel::policy::CODING_AGENT_POLICY_TOML);
    enrol(&sandbox, "bob");
    let (mut page, address, token) = crate::approvals_page::start_page(&sandbox);
    let secret = std::fs::read_dir(sandbox.root.join("data/gavel/keys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".approvers"))
        .unwrap()
        .join("bob.totp");
    let token_file = sandbox.root.join("state/approvals-token");
    let attempts = [
        ("Read", json!({"file_path": secret})),
        ("Read", json!({"file_path": token_file})),
        (
            "Bash",
            json!({"command": format!("cat {}", secret.display())}),
        ),
        (
            "Bash",
            json!({"command": format!("cat {}", token_file.display())}),
        ),
        (
            "Bash",
            json!({"command": "gavel approve c1 --as bob --code 123456 -y"}),
        ),
        (
            "Bash",
            json!({"command": format!(
                "curl -s -H 'X-Gavel-Token: {token}' -H 'Origin: http://{address}' \
                 -H 'Content-Type: application/json' -d '{{\"call_id\":\"c1\",\"approved\":true}}' \
                 http://{address}/api/answer"
            )}),
        ),
    ];
    for (n, (tool, input)) in attempts.into_iter().enumerate() {
        let payload = tool_payload(
            &sandbox,
            "pre_tool_use.json",
            &format!("a{n}"),
            tool,
            input.clone(),
        );
        let output = run_expecting(
            sandbox
                .gavel(&["hook", "claude-code"])
                .write_stdin(payload.to_string()),
            0,
        );
        let answer = json(&output)["hookSpecificOutput"]["permissionDecision"].clone();
        assert_ne!(answer, "allow", "{tool} {input} was allowed");
        if input["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("gavel "))
        {
            assert_eq!(answer, "deny", "{input}");
        }
    }
    let _ = page.kill();
    let _ = page.wait();
}
