//! `gavel policy suggest` against real records: calls approved through a
//! Claude Code hook (the client runs them, so nothing here runs them),
//! rejected through `gavel run --reject`, left unanswered, denied.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support::{
    Sandbox, assert_one_line_error, code, json, json_lines, run_expecting, stderr, stdout,
    tool_payload,
};

/// One Claude Code hook event for `tool` with `input`, in `session`.
fn hook(sandbox: &Sandbox, fixture: &str, id: &str, session: &str, tool: &str, input: &Value) {
    let mut payload = tool_payload(sandbox, fixture, id, tool, input.clone());
    payload["session_id"] = json!(session);
    let out = sandbox
        .gavel(&["hook", "claude-code"])
        .write_stdin(payload.to_string())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{id}: {}", stderr(&out));
}

/// A call the policy asks about, approved in Claude Code's prompt: the
/// client ran it and reported it (its completion records the approval).
fn approved(sandbox: &Sandbox, id: &str, session: &str, command: &str) {
    approved_tool(sandbox, id, session, "Bash", &json!({ "command": command }));
}

fn approved_tool(sandbox: &Sandbox, id: &str, session: &str, tool: &str, input: &Value) {
    hook(sandbox, "pre_tool_use.json", id, session, tool, input);
    hook(sandbox, "post_tool_use.json", id, session, tool, input);
}

/// A call asked in Claude Code's prompt that never ran: no answer recorded.
fn unanswered(sandbox: &Sandbox, id: &str, session: &str, command: &str) {
    hook(
        sandbox,
        "pre_tool_use.json",
        id,
        session,
        "Bash",
        &json!({ "command": command }),
    );
}

/// A call rejected at gavel's own prompt (nothing runs).
fn rejected(sandbox: &Sandbox, id: &str, command: &str) {
    let args = json!({ "command": command }).to_string();
    let out = sandbox
        .gavel(&["run", "bash", &args, "--reject", "--call-id", id])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{id}: {}", stderr(&out));
}

fn suggest(sandbox: &Sandbox, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["policy", "suggest"];
    args.extend_from_slice(extra);
    run_expecting(&mut sandbox.gavel(&args), 0)
}

fn suggest_json(sandbox: &Sandbox, extra: &[&str]) -> Value {
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    json(&suggest(sandbox, &args))
}

/// A record with a proposal on each rung and calls that must stop others:
/// `cargo test` in four variants, `git push origin main` three times (and
/// a rejected forced push), `npm run` scripts with one rejected, writes
/// under `src/`, a call left unanswered and a hard deny.
fn mixed_record(sandbox: &Sandbox) {
    let s = "s-1";
    for (i, c) in [
        "cargo test",
        "cargo test --release",
        "cargo test -p core",
        "cargo test -p cli -- --nocapture",
    ]
    .iter()
    .enumerate()
    {
        approved(sandbox, &format!("ct{i}"), s, c);
    }
    for i in 0..3 {
        approved(sandbox, &format!("gp{i}"), s, "git push origin main");
    }
    rejected(sandbox, "gpf", "git push --force origin main");
    for (i, c) in ["npm run build", "npm run lint", "npm run fmt"]
        .iter()
        .enumerate()
    {
        approved(sandbox, &format!("nr{i}"), s, c);
    }
    rejected(sandbox, "nrd", "npm run deploy");
    for (i, p) in ["src/a.rs", "src/b.rs", "src/deep/c.rs"].iter().enumerate() {
        let path = sandbox.ws.join(p).display().to_string();
        approved_tool(
            sandbox,
            &format!("w{i}"),
            s,
            "Write",
            &json!({ "file_path": path, "content": "x" }),
        );
    }
    unanswered(sandbox, "mk0", s, "make deploy-prod");
    let out = sandbox
        .gavel(&[
            "run",
            "bash",
            r#"{"command":"rm -rf /"}"#,
            "--call-id",
            "rm0",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
}

fn proposal<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("no proposal `{id}` in {report:#}"))
}

fn ids(list: &Value) -> BTreeSet<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn suggest_proposes_each_rung_with_its_proof_and_the_alternatives_it_did_not_choose() {
    let sandbox = Sandbox::new();
    mixed_record(&sandbox);
    let report = suggest_json(&sandbox, &[]);

    let cargo = proposal(&report, "suggest.bash.cargo-test");
    assert_eq!(cargo["rung"], "command");
    assert_eq!(cargo["rule"]["command_prefix"], json!([["cargo", "test"]]));
    assert_eq!(
        cargo["rule"]["sandbox"], "workspace-write",
        "cargo test is not proven read-only"
    );
    assert_eq!(cargo["before"], "bash.requires_approval");
    let proof = &cargo["proof"];
    assert_eq!(proof["calls"], 4);
    assert_eq!(proof["variants"], 4);
    assert_eq!(
        ids(&proof["call_ids"]),
        ["ct0", "ct1", "ct2", "ct3"].map(String::from).into()
    );
    assert_eq!(proof["sessions"], json!(["s-1"]));
    assert_eq!(proof["covered"], json!([]));
    assert!(proof["checked"].as_u64().unwrap() >= 4, "{proof}");
    assert_eq!(proof["policy_before"], report["policy"]["before"]);
    assert_ne!(proof["policy_after"], proof["policy_before"]);
    assert_eq!(
        (
            proof["loosened_unapproved"].as_u64(),
            proof["denies_lost"].as_u64()
        ),
        (Some(0), Some(0))
    );
    let broader = cargo["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["relation"] == "broader")
        .unwrap();
    assert_eq!(broader["shape"], "cargo *");

    // A forced push was rejected: only the exact push is proposed, and why
    // not the wider one is said.
    let push = proposal(&report, "suggest.bash.git-push-origin-main");
    assert_eq!(push["rung"], "exact");
    assert_eq!(push["proof"]["calls"], 3);
    assert!(
        push["alternatives"][0]["why"]
            .as_str()
            .unwrap()
            .contains("git push --force"),
        "{push:#}"
    );

    // `npm run deploy` was rejected: no `npm run *`, and the reason names the call.
    let npm: Vec<&Value> = report["not_proposed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["shape"].as_str().unwrap().starts_with("npm run"))
        .collect();
    assert!(!npm.is_empty(), "{report:#}");
    assert!(
        npm.iter().all(|n| n["why"]
            .as_str()
            .unwrap()
            .contains("rejected at call `nrd`")),
        "{npm:#?}"
    );
    assert!(
        report["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| !p["shape"].as_str().unwrap().starts_with("npm")),
        "{report:#}"
    );

    let writes = proposal(&report, "suggest.write_file.src-rs");
    assert_eq!(writes["rule"]["path_glob"], "src/**/*.rs");
    assert_eq!(writes["proof"]["calls"], 3);

    assert_eq!(report["replay"]["loosened_unapproved"], 0);
    assert_eq!(report["replay"]["denies_lost"], 0);
    assert_eq!(report["replay"]["tightened"], 0);
    assert_eq!(report["replay"]["loosened"], 10);
}

#[test]
fn suggest_output_is_byte_identical_for_the_same_record_and_policy() {
    let sandbox = Sandbox::new();
    mixed_record(&sandbox);
    let first = suggest(&sandbox, &[]);
    let second = suggest(&sandbox, &[]);
    assert_eq!(stdout(&first), stdout(&second));
    assert!(
        stdout(&first).contains("+id = \"suggest.bash.cargo-test\""),
        "{}",
        stdout(&first)
    );
    let first = suggest(&sandbox, &["--format", "json"]);
    let second = suggest(&sandbox, &["--format", "json"]);
    assert_eq!(first.stdout, second.stdout);
    assert!(!json(&first)["proposals"].as_array().unwrap().is_empty());
}

#[test]
fn a_floor_program_approved_many_times_is_never_proposed() {
    let sandbox = Sandbox::new();
    let commands = [
        "python3 build.py --n 1",
        "python3 build.py --n 2",
        "python3 tools/gen.py",
        "python3 -c 'print(1)'",
        "npx prettier --write src",
        "npx prettier --check src",
        "npx eslint .",
        "pnpm dlx create-thing a",
        "pnpm dlx create-thing b",
        "pnpm dlx create-thing c",
        "node scripts/a.js",
        "node scripts/b.js",
        "node scripts/c.js",
        "cargo --version",
        "cargo --help",
        "cargo -V",
        "docker rm a",
        "docker rm b",
        "docker rm c",
    ];
    for round in 0..2 {
        for (i, c) in commands.iter().enumerate() {
            approved(&sandbox, &format!("f{round}-{i}"), "s", c);
        }
    }
    let report = suggest_json(&sandbox, &["--min-support", "1"]);
    assert_eq!(report["proposals"], json!([]), "{report:#}");
    let floor: BTreeSet<&str> = report["not_proposed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["why"].as_str().unwrap().starts_with("floor:"))
        .map(|n| n["shape"].as_str().unwrap())
        .collect();
    for shape in ["python3", "npx", "pnpm dlx", "node", "cargo", "docker rm"] {
        assert!(
            floor
                .iter()
                .any(|s| *s == shape || s.starts_with(&format!("{shape} "))),
            "{shape} not refused by the floor: {report:#}"
        );
    }
}

#[test]
fn replay_under_applied_proposals_is_looser_only_on_approved_calls() {
    let sandbox = Sandbox::new();
    mixed_record(&sandbox);
    let report = suggest_json(&sandbox, &[]);
    let all: Vec<String> = report["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["index"].to_string())
        .collect();
    assert!(all.len() >= 3, "{report:#}");
    let approved_ids: BTreeSet<String> = report["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| ids(&p["proof"]["call_ids"]))
        .collect();
    let applied = json(&suggest(&sandbox, &["--apply", &all.join(","), "--json"]));
    assert_eq!(applied["policy_after"], report["policy"]["after"]);
    assert!(sandbox.ws.join("gavel.toml").exists());

    // The replay command itself, under the written policy (the one in force now).
    let out = sandbox
        .gavel(&["replay", "--calls", "--fail-on", "never"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let changes = json_lines(&out);
    assert!(!changes.is_empty());
    for change in &changes {
        assert_eq!(change["direction"], "loosened", "{change}");
        assert_ne!(change["from"]["action"], "deny", "{change}");
        let id = change["call_id"].as_str().unwrap();
        assert!(approved_ids.contains(id), "{id} loosened but not approved");
    }
    let loosened: BTreeSet<String> = changes
        .iter()
        .map(|c| c["call_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(loosened, approved_ids);
    for rejected in ["gpf", "nrd", "mk0", "rm0"] {
        assert!(!loosened.contains(rejected));
    }
}

#[test]
fn applying_writes_the_rules_keeping_comments_and_a_chained_record_naming_the_proposal() {
    let sandbox = Sandbox::new();
    let policy = format!(
        "# our team's policy: keep this line\n{}",
        gavel::policy::DEFAULT_POLICY_TOML
    );
    sandbox.write("gavel.toml", &policy);
    mixed_record(&sandbox);
    let report = suggest_json(&sandbox, &[]);
    let cargo = proposal(&report, "suggest.bash.cargo-test");
    let index = cargo["index"].to_string();
    let out = suggest(&sandbox, &["--apply", &index, "--format", "json"]);
    let applied = json(&out);
    assert_eq!(applied["applied"], json!([cargo["index"]]));
    assert_eq!(applied["policy_before"], report["policy"]["before"]);
    assert_eq!(
        applied["policy_after"], cargo["proof"]["policy_after"],
        "the file written is the one the proof decided the record under"
    );

    let written = sandbox.read("gavel.toml");
    assert!(written.starts_with("# our team's policy: keep this line\n"));
    assert_eq!(
        gavel::digest::hex(&gavel::digest::sha256(written.as_bytes())),
        applied["policy_after"].as_str().unwrap()
    );
    let rules: Vec<String> = gavel::Policy::from_toml(&written, "gavel.toml")
        .unwrap()
        .rules()
        .iter()
        .map(|r| r.id.clone())
        .collect();
    let before: Vec<String> = gavel::Policy::builtin()
        .rules()
        .iter()
        .map(|r| r.id.clone())
        .collect();
    let at = before
        .iter()
        .position(|r| r == "bash.requires_approval")
        .unwrap();
    let mut expected = before.clone();
    expected.insert(at, "suggest.bash.cargo-test".into());
    assert_eq!(
        rules, expected,
        "only the rule is added, before the rule that asked"
    );
    // The comments of the file, every one, are still there.
    for line in policy.lines().filter(|l| l.trim_start().starts_with('#')) {
        assert!(written.contains(line), "lost comment: {line}");
    }

    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
    let out = sandbox
        .gavel(&["export", "--format", "jsonl"])
        .output()
        .unwrap();
    let event = json_lines(&out)
        .into_iter()
        .filter(|e| e["kind"] == "lifecycle")
        .map(|e| e["payload"].clone())
        .find(|p| p["event"] == "policy_suggestion_applied")
        .expect("the application is recorded");
    let data = &event["data"];
    assert_eq!(data["proposals"][0]["digest"], cargo["digest"]);
    assert_eq!(data["proposals"][0]["rule"], "suggest.bash.cargo-test");
    assert_eq!(data["proposal_digest"], applied["proposal_digest"]);
    assert_eq!(data["policy_before"], report["policy"]["before"]);
    assert_eq!(data["policy_after"], applied["policy_after"]);
    assert_eq!(data["applied_by"], applied["applied_by"]);
    assert!(!data["applied_by"].as_str().unwrap().is_empty());

    // What it allows now is allowed; the next suggest no longer proposes it.
    let again = suggest_json(&sandbox, &[]);
    assert!(
        again["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["shape"] != "cargo test *"),
        "{again:#}"
    );
}

#[test]
fn a_shadow_application_leaves_enforcement_as_it_was() {
    let sandbox = Sandbox::new();
    mixed_record(&sandbox);
    let report = suggest_json(&sandbox, &[]);
    let index = proposal(&report, "suggest.bash.cargo-test")["index"].to_string();
    let applied = json(&suggest(
        &sandbox,
        &["--apply", &index, "--shadow", "--format", "json"],
    ));
    assert!(
        applied["shadow"]
            .as_str()
            .unwrap()
            .ends_with("gavel.suggested.toml")
    );
    let shadow = sandbox.read("gavel.suggested.toml");
    assert!(shadow.contains("suggest.bash.cargo-test"));
    let project = sandbox.read("gavel.toml");
    assert!(!project.contains("suggest.bash.cargo-test"));
    assert!(project.contains("name = \"suggested\""));
    let out = run_expecting(
        &mut sandbox.gavel(&[
            "check",
            "bash",
            r#"{"command":"cargo test -p x"}"#,
            "--json",
        ]),
        0,
    );
    assert_eq!(json(&out)["action"], "ask", "enforced as before");
    // A live call now carries the shadow's verdict.
    approved(&sandbox, "live", "s-2", "cargo test -p live");
    let out = sandbox
        .gavel(&[
            "replay",
            "--shadow",
            "suggested",
            "--format",
            "json",
            "--fail-on",
            "never",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["loosened"], 1);
}

#[test]
fn holdout_measures_the_later_part_of_each_session_honestly() {
    let sandbox = Sandbox::new();
    // Ten calls of one session: seven to learn from, three held out, one
    // of them a rejected call the learned rule would allow.
    for i in 0..7 {
        approved(
            &sandbox,
            &format!("t{i}"),
            "s-h",
            &format!("cargo test -p crate{i}"),
        );
    }
    approved(&sandbox, "h0", "s-h", "cargo test -p late0");
    unanswered(&sandbox, "h1", "s-h", "cargo test -p nobody-answered");
    approved(&sandbox, "h2", "s-h", "make build");
    let report = suggest_json(&sandbox, &["--holdout", "0.3"]);
    let holdout = &report["holdout"];
    assert_eq!(holdout["train_calls"], 7, "{holdout}");
    assert_eq!(holdout["held_out_calls"], 3);
    assert_eq!(holdout["held_out_approved"], 2);
    assert_eq!(
        holdout["prompts_avoided"], 1,
        "h0 is allowed, make build is not"
    );
    assert_eq!(
        holdout["unanswered_allowed"], 1,
        "h1: reported, never hidden"
    );
    assert_eq!(holdout["negatives_allowed"], 0);
    assert_eq!(holdout["rules_added"], 1);
    assert_eq!(holdout["distinct_approved"], 7);
    assert_eq!(holdout["rules_unused"], 0);
    assert_eq!(
        proposal(&report, "suggest.bash.cargo-test")["held_out_calls"],
        2
    );
}

#[test]
fn unused_allow_rules_are_proposed_for_removal_with_what_would_get_stricter() {
    let sandbox = Sandbox::new();
    // An allow rule for a tool called once, long before the window.
    let policy = gavel::policy::DEFAULT_POLICY_TOML.replacen(
        "[[rules]]",
        "[[rules]]\nid = \"deploy.allow\"\naction = \"allow\"\ntools = [\"deploy\"]\nreason = \"deploys are fine\"\n\n[[rules]]",
        1,
    );
    sandbox.write("gavel.toml", &policy);
    // A grant given long before the window and never used since.
    {
        use gavel::audit::{ApprovalChannel, Event, EventBody, GrantRecord, GrantScope};
        let mut store =
            gavel::store::Store::open(&sandbox.db, gavel::store::Durability::Normal).unwrap();
        let grant = GrantRecord {
            grant: "g0000beef".into(),
            scope: GrantScope::Command {
                words: vec!["make".into(), "release".into()],
            },
            session: None,
            until_us: None,
            uses: None,
            created_by: "someone".into(),
            channel: ApprovalChannel::Cli,
            call_id: "earlier".into(),
        };
        store
            .append(&[Event::now("grant/g0000beef", None, EventBody::Grant(grant))])
            .unwrap();
    }
    let out = sandbox
        .gavel(&["run", "deploy", r#"{"env":"prod"}"#, "--call-id", "d0"])
        .output()
        .unwrap();
    assert!(matches!(code(&out), 0 | 1), "{}", stderr(&out));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    mixed_record(&sandbox);
    let report = suggest_json(&sandbox, &["--unused-for", "1s"]);
    let removal = report["removals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "deploy.allow")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(removal["kind"], "rule");
    assert_eq!(removal["uses"], 1);
    assert_eq!(
        removal["stricter_calls"],
        json!(["d0"]),
        "the replay says what tightens"
    );
    let index = removal["index"].to_string();
    let grant = report["removals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "g0000beef")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(grant["kind"], "grant");
    assert_eq!(
        grant["stricter"], 0,
        "a revocation now changes no recorded call"
    );
    let both = format!("{index},{}", grant["index"]);
    // The same options find the same numbers.
    suggest(&sandbox, &["--unused-for", "1s", "--apply", &both]);
    assert!(!sandbox.read("gavel.toml").contains("deploy.allow"));
    let grants = json(&run_expecting(
        &mut sandbox.gavel(&["grants", "--format", "json"]),
        0,
    ));
    assert!(grants.to_string().contains("revoked"), "{grants}");
    run_expecting(&mut sandbox.gavel(&["verify"]), 0);
}

#[test]
fn bad_input_is_a_one_line_error() {
    let sandbox = Sandbox::new();
    mixed_record(&sandbox);
    for args in [
        &["policy", "suggest", "--holdout", "1.5"][..],
        &["policy", "suggest", "--holdout", "0"],
        &["policy", "suggest", "--min-support", "0"],
        &["policy", "suggest", "--unused-for", "soon"],
        &["policy", "suggest", "--unused-for", "0d"],
        &["policy", "suggest", "--apply", "99"],
        &["policy", "suggest", "--anomalies"],
        &["policy", "suggest", "--since", "yesterday-ish"],
    ] {
        let err = assert_one_line_error(&mut sandbox.gavel(args));
        assert!(!err.contains("panick"), "{args:?}: {err}");
    }
    let empty = Sandbox::new();
    assert_one_line_error(&mut empty.gavel(&["policy", "suggest"]));
}

#[test]
fn a_record_that_does_not_verify_teaches_nothing() {
    let sandbox = Sandbox::new();
    for i in 0..3 {
        rejected(&sandbox, &format!("x{i}"), &format!("cargo test -p x{i}"));
    }
    // An editor turns the rejections into approvals.
    crate::store::attacker(&sandbox.db)
        .execute(
            "UPDATE events SET approval = 'approved' WHERE kind = 'approval'",
            [],
        )
        .unwrap();
    let err = assert_one_line_error(&mut sandbox.gavel(&["policy", "suggest"]));
    assert!(err.contains("does not verify"), "{err}");
}

#[test]
fn filters_choose_what_is_learned_from_and_the_whole_record_is_the_check() {
    let sandbox = Sandbox::new();
    for (i, c) in ["make build", "make build -j4", "make build V=1"]
        .iter()
        .enumerate()
    {
        approved(&sandbox, &format!("a{i}"), "mine", c);
    }
    for (i, c) in ["cargo check", "cargo check -q", "cargo check --tests"]
        .iter()
        .enumerate()
    {
        approved(&sandbox, &format!("b{i}"), "theirs", c);
    }
    // Rejected in a session the filter leaves out: it still stops `make build *`.
    rejected(&sandbox, "r0", "make build deploy=prod");
    let mine = suggest_json(&sandbox, &["--session", "mine"]);
    assert_eq!(mine["record"]["selected"], 3, "{mine:#}");
    assert_eq!(mine["proposals"], json!([]), "{mine:#}");
    assert!(
        mine["not_proposed"]
            .to_string()
            .contains("rejected at call `r0`"),
        "{mine:#}"
    );
    let theirs = suggest_json(&sandbox, &["--session", "theirs"]);
    let only: Vec<&Value> = theirs["proposals"].as_array().unwrap().iter().collect();
    assert_eq!(only.len(), 1, "{theirs:#}");
    assert_eq!(only[0]["shape"], "cargo check *");
    assert_eq!(only[0]["proof"]["sessions"], json!(["theirs"]));
}

#[test]
fn suggest_selects_the_calls_log_selects() {
    let sandbox = Sandbox::new();
    mixed_record(&sandbox);
    approved(&sandbox, "other", "s-2", "cargo test -p other");
    let filters: &[&[&str]] = &[
        &[],
        &["--session", "s-1"],
        &["--session", "s-2"],
        &["--tool", "bash"],
        &["--tool", "write_file"],
        &["--rule", "bash.requires_approval"],
        &["--action", "deny"],
        &["--approval", "approved"],
        &["--approval", "rejected"],
        &["--status", "succeeded"],
        &["--client", "cli"],
        &["--grep", "cargo"],
        &["--call", "gp1"],
        &["--limit", "5"],
    ];
    for filter in filters {
        let mut args = vec!["log", "--format", "jsonl"];
        args.extend_from_slice(filter);
        let listed = json_lines(&run_expecting(&mut sandbox.gavel(&args), 0)).len();
        let report = suggest_json(&sandbox, filter);
        assert_eq!(
            report["record"]["selected"].as_u64(),
            Some(listed as u64),
            "{filter:?}"
        );
    }
}

#[test]
fn a_layer_above_the_project_is_never_edited() {
    let sandbox = Sandbox::new();
    mixed_record(&sandbox);
    let user = sandbox.root.join("config/gavel/policy.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, gavel::policy::DEFAULT_POLICY_TOML).unwrap();
    let before = std::fs::read_to_string(&user).unwrap();
    let user = user.display().to_string();
    // Its own asks now come from the user layer too: nothing to learn,
    // and nothing it would let `--apply` write.
    let report = suggest_json(&sandbox, &["--policy", &user]);
    assert_eq!(report["proposals"], json!([]));
    let err = assert_one_line_error(
        &mut sandbox.gavel(&["policy", "suggest", "--policy", &user, "--apply", "1"]),
    );
    assert!(err.contains("user layer"), "{err}");
    assert_eq!(std::fs::read_to_string(&user).unwrap(), before);
}
