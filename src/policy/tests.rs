use serde_json::json;

use super::*;
use crate::facts::PathFact;

fn facts_inside(path: &str) -> Facts {
    Facts {
        workspace: "/ws".into(),
        paths: vec![PathFact {
            requested: path.into(),
            resolved: Some(format!("/ws/{path}")),
            inside: true,
            relative: Some(path.into()),
            error: None,
            cwd: None,
            access: None,
        }],
        shell: None,
        shell_sha256: None,
        unprovable: Vec::new(),
        mcp: None,
    }
}

fn facts_outside(path: &str) -> Facts {
    Facts {
        workspace: "/ws".into(),
        paths: vec![PathFact {
            requested: path.into(),
            resolved: Some("/etc/passwd".into()),
            inside: false,
            relative: None,
            error: None,
            cwd: None,
            access: None,
        }],
        shell: None,
        shell_sha256: None,
        unprovable: Vec::new(),
        mcp: None,
    }
}

fn no_paths() -> Facts {
    Facts {
        workspace: "/ws".into(),
        paths: vec![],
        shell: None,
        shell_sha256: None,
        unprovable: Vec::new(),
        mcp: None,
    }
}

/// Facts worked out from the request alone (shell parse included).
fn lexical(request: &ToolRequest) -> Facts {
    crate::facts::lexical_facts(request)
}

fn bash(command: &str) -> ToolRequest {
    ToolRequest::new("t1", "bash", json!({ "command": command }))
}

#[test]
fn builtin_policy_loads_with_the_seed_rule_ids_in_order() {
    let policy = Policy::builtin();
    let ids: Vec<&str> = policy.rules().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "bash.hard_deny",
            "bash.self_approval",
            "path.protected",
            "path.outside_workspace",
            "mcp.definition_changed",
            "path.read_allow",
            "path.write_requires_approval",
            "mcp.filesystem_allowed_directories",
            "mcp.requires_approval",
            "bash.unprovable",
            "bash.requires_approval"
        ]
    );
    assert_eq!(policy.reference().digest.len(), 64);
}

#[test]
fn the_builtin_policys_examples_hold() {
    let checked = Policy::from_toml(DEFAULT_POLICY_TOML, "default.toml").unwrap();
    assert_eq!(checked.reference(), Policy::builtin().reference());
}

#[test]
fn the_coding_agent_presets_examples_hold() {
    let policy =
        Policy::from_toml(crate::policy::CODING_AGENT_POLICY_TOML, "coding-agent.toml").unwrap();
    assert_eq!(policy.reference().name, "gavel-coding-agent");
}

#[test]
fn hard_denies_are_structured_decisions() {
    let policy = Policy::builtin();
    for command in [
        "sudo ls",
        "rm -rf /",
        "rm -fr x",
        "reboot",
        "mkfs.ext4 /dev/sda1",
        "dd if=/dev/zero of=/dev/sda",
        "echo x > /dev/sda",
    ] {
        let request = bash(command);
        let decision = policy.decide(&request, &lexical(&request));
        assert_eq!(decision.action, Action::Deny, "{command}");
        assert_eq!(decision.rule_id, "bash.hard_deny", "{command}");
        assert!(decision.reason.contains(command), "{}", decision.reason);
    }
}

#[test]
fn shell_is_never_allowed_from_its_first_token() {
    let policy = Policy::builtin();
    for command in ["ls", "cat README.md", "git status", "python3 script.py"] {
        let request = bash(command);
        let decision = policy.decide(&request, &lexical(&request));
        assert_eq!(decision.action, Action::Ask, "{command}");
        assert_eq!(decision.rule_id, "bash.requires_approval");
    }
}

#[test]
fn reads_inside_are_allowed_writes_asked_outside_denied() {
    let policy = Policy::builtin();
    let read = ToolRequest::new("1", "read_file", json!({"path": "a.txt"}));
    assert_eq!(
        policy.decide(&read, &facts_inside("a.txt")).rule_id,
        "path.read_allow"
    );
    let write = ToolRequest::new("2", "write_file", json!({"path": "a.txt", "content": ""}));
    let decision = policy.decide(&write, &facts_inside("a.txt"));
    assert_eq!(
        (decision.action, decision.rule_id.as_str()),
        (Action::Ask, "path.write_requires_approval")
    );
    let escape = ToolRequest::new("3", "read_file", json!({"path": "../../etc/passwd"}));
    let decision = policy.decide(&escape, &facts_outside("../../etc/passwd"));
    assert_eq!(
        (decision.action, decision.rule_id.as_str()),
        (Action::Deny, "path.outside_workspace")
    );
    assert!(decision.reason.contains("`/ws`"), "{}", decision.reason);
}

#[test]
fn unmatched_tools_fail_closed_with_a_reason() {
    let decision =
        Policy::builtin().decide(&ToolRequest::new("1", "deploy", json!({})), &no_paths());
    assert_eq!(decision.action, Action::Deny);
    assert_eq!(decision.rule_id, DEFAULT_DENY);
    assert_eq!(decision.reason, "no permission rule matched tool `deploy`");
}

#[test]
fn arguments_that_cannot_be_judged_are_denied() {
    let policy = Policy::builtin();
    let cases = [
        ("bash", json!("ls")),
        ("bash", json!({})),
        ("bash", json!({"command": ""})),
        ("bash", json!({"command": " \t\n "})),
        ("bash", json!({"command": 3})),
        ("read_file", json!({"path": null})),
        ("write_file", json!([])),
        ("glob", json!({"path": "x"})),
        ("anything", json!(null)),
    ];
    for (tool, arguments) in cases {
        let decision = policy.decide(&ToolRequest::new("1", tool, arguments.clone()), &no_paths());
        assert_eq!(decision.rule_id, INVALID_ARGUMENTS, "{tool} {arguments}");
        assert_eq!(decision.action, Action::Deny);
    }
}

#[test]
fn explain_says_why_earlier_rules_did_not_match() {
    let policy = Policy::builtin();
    let request = ToolRequest::new("1", "write_file", json!({"path": "a.txt", "content": ""}));
    let (decision, trace) = policy.explain(&request, &facts_inside("a.txt"));
    assert_eq!(decision.rule_id, "path.write_requires_approval");
    assert_eq!(trace.len(), 7);
    assert!(
        trace[1]
            .detail
            .contains("tool `write_file` is not one of [bash]"),
        "{:?}",
        trace[1]
    );
    assert!(
        trace[2]
            .detail
            .contains(
                "matches none of [.gavel (read or written), .gavel/** (read or written), gavel.toml (written)]"
            ),
        "{:?}",
        trace[2]
    );
    assert!(
        trace[4]
            .detail
            .contains("tool `write_file` is not one of [mcp__*]"),
        "{:?}",
        trace[4]
    );
    let trace = [&trace[0], &trace[3], &trace[5], &trace[6]];
    assert!(
        trace[0]
            .detail
            .contains("tool `write_file` is not one of [bash]"),
        "{:?}",
        trace[0]
    );
    assert!(trace[1].detail.contains("not outside"), "{:?}", trace[1]);
    assert!(
        trace[2]
            .detail
            .contains("not one of [read_file, glob, mcp__filesystem__read_*"),
        "{:?}",
        trace[2]
    );
    assert!(trace[3].matched);
}

#[test]
fn bad_files_are_refused_with_file_rule_and_problem() {
    let cases = [
        (
            "name = 'x'\n[[rules]]\nid = 'a.b'\naction = 'alow'\nreason = 'r'\n",
            "rule `a.b`: unknown action `alow`",
        ),
        (
            "name = 'x'\n[[rules]]\nid = 'a.b'\naction = 'allow'\nreason = 'r'\ncolour = 1\n",
            "rule `a.b`: unknown field `colour`",
        ),
        (
            "name = 'x'\n[[rules]]\nid = 'a.b'\naction = 'allow'\nreason = 'r'\ncommand_regex = ['(']\n",
            "rule `a.b`: invalid regex `(`",
        ),
        (
            "name = 'x'\n[[rules]]\nid = 'a.b'\naction = 'allow'\nreason = 'r'\npath_glob = ['a[']\n",
            "rule `a.b`: invalid glob `a[`",
        ),
        (
            "name = 'x'\n[[rules]]\nid = 'a'\naction = 'allow'\nreason = 'r'\n[[rules]]\nid = 'a'\naction = 'deny'\nreason = 'r'\n",
            "rule `a`: duplicate rule id",
        ),
        (
            "name = 'x'\n[[rules]]\nid = 'a'\naction = 'allow'\n",
            "rule `a`: missing field `reason`",
        ),
        ("name = 'x'\nrules = [\n", "policy `p.toml`: line 2"),
        ("rules = []\n", "missing `name`"),
        ("name = 'x'\nextra = 1\n", "unknown key `extra`"),
        (
            "name = 'x'\n[[rules]]\nid = 'g'\naction = 'allow'\nreason = 'r'\ncommand_regex = ['^git status']\n",
            "rule `g`: an allow rule that applies to `bash` cannot judge it by `command_regex`",
        ),
        (
            "name = 'x'\n[[rules]]\nid = 'd'\naction = 'allow'\ntools = ['write_file', 'bash']\npath_glob = ['docs/**']\nreason = 'r'\n",
            "rule `d`: an allow rule that applies to `bash`",
        ),
    ];
    for (text, expected) in cases {
        let err = Policy::from_toml(text, "p.toml").unwrap_err().to_string();
        assert!(
            err.contains(expected),
            "{err:?} should contain {expected:?}"
        );
        assert!(err.starts_with("policy `p.toml`"), "{err}");
        assert!(!err.contains('\n'), "one line: {err:?}");
    }
}

#[test]
fn tool_globs_and_path_globs_match() {
    let text = r#"
name = "t"
[[rules]]
id = "mcp.allow"
action = "allow"
tools = ["mcp__*"]
reason = "mcp tools are fine"
[[rules]]
id = "docs.write"
action = "allow"
tools = ["write_file"]
path_scope = "inside"
path_glob = ["**/*.md"]
reason = "docs are fine"
"#;
    let policy = Policy::from_toml(text, "t.toml").unwrap();
    let mcp = ToolRequest::new("1", "mcp__github__search", json!({}));
    assert_eq!(policy.decide(&mcp, &no_paths()).rule_id, "mcp.allow");
    let md = ToolRequest::new(
        "2",
        "write_file",
        json!({"path": "docs/a.md", "content": ""}),
    );
    assert_eq!(
        policy.decide(&md, &facts_inside("docs/a.md")).rule_id,
        "docs.write"
    );
    let rs = ToolRequest::new(
        "3",
        "write_file",
        json!({"path": "src/a.rs", "content": ""}),
    );
    assert_eq!(
        policy.decide(&rs, &facts_inside("src/a.rs")).rule_id,
        DEFAULT_DENY
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            ".{0,40}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                prop::collection::hash_map(
                    "(command|path|pattern|content|[a-z]{1,6})",
                    inner,
                    0..6
                )
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn decide_never_panics_on_arbitrary_arguments(
            tool in prop_oneof![Just("bash".to_owned()), Just("read_file".to_owned()), Just("glob".to_owned()), "[a-z_]{1,12}"],
            arguments in json_value(),
        ) {
            let policy = Policy::builtin();
            let request = ToolRequest::new("p", tool, arguments);
            let decision = policy.decide(&request, &lexical(&request));
            prop_assert!(!decision.rule_id.is_empty());
            prop_assert!(!decision.reason.is_empty());
        }

        #[test]
        fn an_earlier_matching_rule_always_wins(
            actions in prop::collection::vec(0usize..3, 1..8),
            first_match in 0usize..8,
        ) {
            // Rules before `first_match` name another tool; every rule from it on matches.
            let names = ["allow", "ask", "deny"];
            let mut text = String::from("name = \"p\"\n");
            for (i, a) in actions.iter().enumerate() {
                let tool = if i < first_match { "other" } else { "bash" };
                text.push_str(&format!(
                    "[[rules]]\nid = \"r{i}\"\naction = \"{}\"\ntools = [\"{tool}\"]\nreason = \"rule {i}\"\n",
                    names[*a]
                ));
            }
            let policy = Policy::from_toml(&text, "p.toml").unwrap();
            let decision = policy.decide(&bash("ls"), &no_paths());
            if first_match < actions.len() {
                prop_assert_eq!(decision.rule_id, format!("r{first_match}"));
                prop_assert_eq!(decision.action.as_str(), names[actions[first_match]]);
            } else {
                prop_assert_eq!(decision.rule_id, DEFAULT_DENY);
            }
        }
    }
}

#[test]
fn inline_examples_that_fail_refuse_the_policy() {
    let text = r#"
name = "x"
[[rules]]
id = "curl.deny"
action = "deny"
tools = ["bash"]
command_regex = ['\bcurl\b']
reason = "no network"
examples = [
  { tool = "bash", arguments = { command = "curl x" }, matches = true },
  { tool = "bash", arguments = { command = "wget x" }, matches = true },
]
"#;
    let err = Policy::from_toml(text, "x.toml").unwrap_err().to_string();
    assert!(
        err.contains(
            "rule `curl.deny`: example 2 (bash {\"command\":\"wget x\"}) should match but does not"
        ),
        "{err}"
    );
    let inverted = text.replace("wget x\" }, matches = true", "wget x\" }, matches = false");
    assert!(Policy::from_toml(&inverted, "x.toml").is_ok());
    let wrong = text.replace("curl x\" }, matches = true", "curl x\" }, matches = false");
    let err = Policy::from_toml(&wrong, "x.toml").unwrap_err().to_string();
    assert!(
        err.contains("example 1 (bash {\"command\":\"curl x\"}) should not match but does"),
        "{err}"
    );
}

/// A per-call load leaves globs uncompiled until a rule uses them. A bad
/// glob is still refused before any call is decided (`check_deferred`, run
/// for a policy the log has not recorded), and should a policy reach a
/// decision with one anyway, the rule holding it denies instead of
/// deciding nothing.
#[test]
fn a_bad_glob_left_for_later_is_refused_and_never_decides() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gavel.toml");
    std::fs::write(
        &path,
        "name = 'x'\n\
         [[rules]]\nid = 'docs.read'\naction = 'allow'\ntools = ['read_file']\n\
         path_glob = ['docs/**', 'a[']\nreason = 'r'\n\
         [[rules]]\nid = 'all.read'\naction = 'allow'\ntools = ['read_file']\nreason = 'r'\n",
    )
    .unwrap();
    let policy = Policy::load_unchecked(&path).expect("the shape is fine");
    let err = policy.check_deferred().unwrap_err().to_string();
    assert!(
        err.contains("rule `docs.read`: invalid glob `a[` in `path_glob`"),
        "{err}"
    );

    let read = ToolRequest::new("1", "read_file", json!({"path": "docs/a.md"}));
    let decision = policy.decide(&read, &facts_inside("docs/a.md"));
    assert_eq!(decision.action, Action::Deny);
    assert_eq!(decision.rule_id, "default.deny");
    assert!(
        decision
            .reason
            .contains("rule `docs.read` cannot be applied: invalid glob `a[`"),
        "{}",
        decision.reason
    );
}

#[test]
fn lexical_facts_for_examples_need_no_filesystem() {
    let request = ToolRequest::new("e", "read_file", json!({"path": "a/../../b"}));
    let facts = crate::facts::lexical_facts(&request);
    assert!(!facts.paths[0].inside);
    let request = ToolRequest::new("e", "glob", json!({"pattern": "src/**/*.rs"}));
    assert_eq!(
        crate::facts::lexical_facts(&request).paths[0]
            .relative
            .as_deref(),
        Some("src")
    );
}

fn allow_list() -> Policy {
    Policy::from_toml(
        r#"
name = "allow-list"
[[rules]]
id = "safe"
action = "allow"
tools = ["bash"]
command_prefix = [["ls"], ["echo"], ["git", "diff"], ["sort"], ["tee"], ["dd"]]
reason = "read-only"
[[rules]]
id = "other"
action = "ask"
reason = "other"
"#,
        "allow-list.toml",
    )
    .unwrap()
}

#[test]
fn an_allow_refuses_written_operands_and_non_exact_devices() {
    let policy = allow_list();
    for command in [
        "git diff --output=FILE",
        "git diff --output FILE",
        "sort -o out in",
        "ls | tee out",
        "dd if=x of=y",
        "ls > /dev/fd/../x",
        "echo x > /dev//null",
        "echo x > /dev/./null",
        "echo x >> /dev/fd/1x",
    ] {
        let request = bash(command);
        let (decision, trace) = policy.explain(&request, &lexical(&request));
        assert_eq!(decision.rule_id, "other", "{command}");
        assert!(!trace[0].matched, "{command}");
    }
    for command in [
        "git diff --stat",
        "ls 2>/dev/null",
        "echo x > /dev/fd/2",
        "ls | tee /dev/null",
        "dd if=/dev/zero of=/dev/null count=1",
        "sort in",
    ] {
        let request = bash(command);
        let decision = policy.decide(&request, &lexical(&request));
        assert_eq!(decision.rule_id, "safe", "{command}");
    }
    let request = bash("sort -o out in");
    let (_, trace) = policy.explain(&request, &lexical(&request));
    assert!(
        trace[0].detail.contains("`sort -o` writes a file"),
        "{}",
        trace[0].detail
    );
}

#[test]
fn disk_writes_are_judged_on_resolved_paths_and_harmless_devices_pass() {
    let policy = Policy::builtin();
    for command in [
        "dd of=//dev/sda",
        "dd if=x of=/dev/../dev/sda",
        "cd /dev; echo x > sda",
        "cd /; cat img > dev/mmcblk0",
        "tee /dev/xvda",
        "cp img /dev/mapper/root",
    ] {
        let request = bash(command);
        let decision = policy.decide(&request, &lexical(&request));
        assert_eq!(decision.rule_id, "bash.hard_deny", "{command}");
    }
    for command in [
        "dd if=/dev/zero of=/dev/null",
        "dd of=/dev/stdout",
        "dd if=/dev/sda of=/dev/null",
    ] {
        let request = bash(command);
        let decision = policy.decide(&request, &lexical(&request));
        assert_eq!(decision.rule_id, "bash.requires_approval", "{command}");
    }
}

#[test]
fn protected_files_are_denied_through_any_argument() {
    let policy = Policy::builtin();
    for command in [
        "rm .gavel/audit.db",
        "truncate -s0 .gavel/audit.db",
        "sed -i s/a/b/ gavel.toml",
        "cp x gavel.toml",
        "sqlite3 .gavel/audit.db 'drop trigger x'",
        "rm ./.gavel/../.gavel/audit.db",
        "cd .gavel && rm audit.db",
        "rm {x,.gavel}/audit.db",
        "tool --db=.gavel/audit.db",
    ] {
        let request = bash(command);
        let decision = policy.decide(&request, &lexical(&request));
        assert_eq!(decision.rule_id, "path.protected", "{command}");
    }
    let request = bash("rm -v a .gavel/audit.db");
    let decision = policy.decide(&request, &lexical(&request));
    assert!(
        decision.reason.contains("`.gavel/audit.db`"),
        "{}",
        decision.reason
    );
}

#[test]
fn declared_path_arguments_are_checked_when_the_policy_loads() {
    let base = "name = 'p'\n";
    for (table, problem) in [
        (
            "[[paths]]\ntools = []\nread = ['path']\n",
            "must name at least one tool",
        ),
        ("[[paths]]\ntools = ['t']\n", "at least one argument"),
        (
            "[[paths]]\ntools = ['t']\nread = ['']\n",
            "must not be empty",
        ),
        (
            "[[paths]]\ntools = ['t']\nread = ['p']\nother = 1\n",
            "other",
        ),
    ] {
        let err = Policy::from_toml(&format!("{base}{table}"), "p.toml").unwrap_err();
        assert!(err.to_string().contains(problem), "{table}: {err}");
    }
    let policy = Policy::from_toml(
        "name = 'p'\n[[paths]]\ntools = ['mcp__fs__*']\nread = ['path', 'paths']\n\
         [[paths]]\ntools = ['mcp__fs__move']\nwrite = ['source', 'path']\n",
        "p.toml",
    )
    .unwrap();
    use crate::facts::Access::{Read, Write};
    assert_eq!(
        policy.path_arguments("mcp__fs__move"),
        [
            ("path".to_owned(), Read),
            ("paths".to_owned(), Read),
            ("source".to_owned(), Write),
            ("path".to_owned(), Write),
        ]
    );
    assert!(policy.path_arguments("read_file").is_empty());
    // A declared argument that is not a path string is an unresolved path.
    let request = ToolRequest::new("1", "mcp__fs__read", json!({"path": {"x": 1}}));
    let facts = crate::facts::lexical_facts_with(&request, &policy.path_arguments(&request.name));
    assert_eq!(facts.paths.len(), 1);
    assert!(!facts.paths[0].inside);
    assert!(
        facts.paths[0]
            .error
            .as_deref()
            .unwrap()
            .contains("not a string")
    );
}

#[test]
fn a_subcommand_condition_fails_closed_for_deny_and_strict_for_allow() {
    let policy = Policy::from_toml(
        r#"
name = "subcommands"
[[rules]]
id = "deny.publish"
action = "deny"
tools = ["bash"]
commands = [{ program = ["cargo", "gavel"], subcommand = ["publish", "pending"] }]
reason = "no"
[[rules]]
id = "allow.test"
action = "allow"
tools = ["bash"]
commands = [{ program = ["cargo"], subcommand = ["test"] }]
reason = "yes"
"#,
        "test",
    )
    .unwrap();
    let rule = |command: &str| {
        let request = bash(command);
        policy.decide(&request, &lexical(&request)).rule_id
    };
    // No model of cargo's options: any argument for a deny, the first for an allow.
    assert_eq!(rule("cargo publish"), "deny.publish");
    assert_eq!(rule("cargo +nightly publish"), "deny.publish");
    assert_eq!(rule("cargo test"), "allow.test");
    assert_eq!(rule("cargo --offline test"), "default.deny");
    // gavel's model: its options are read, and what it cannot read fails closed.
    assert_eq!(rule("gavel --db x pending c"), "deny.publish");
    assert_eq!(rule("gavel --unknown pending c"), "deny.publish");
    assert_eq!(rule("gavel log --grep pending"), "default.deny");
    assert_eq!(rule("gavel --db pending log"), "default.deny");
    // The approval subcommands are the floor's, whatever the policy says.
    assert_eq!(rule("gavel --db x approve c"), "bash.self_approval");
}

/// `args` (issue 41): conditions on argument values by JSON pointer.
mod args {
    use super::*;

    const POLICY: &str = r##"
name = "args"

[[rules]]
id = "slack.no_big_payments"
action = "deny"
reason = "payments above 100 are refused"
tools = ["mcp__pay__send"]
args = [{ pointer = "/amount", min = 100.01 }]

[[rules]]
id = "pay.small"
action = "allow"
reason = "small payments"
tools = ["mcp__pay__send"]
args = [{ pointer = "/amount", max = 100 }, { pointer = "/currency", any_of = ["EUR", "USD"] }]

[[rules]]
id = "slack.eng"
action = "allow"
reason = "posting to engineering channels"
tools = ["mcp__slack__post"]
args = [{ pointer = "/channel", glob = "#eng-*" }, { pointer = "/thread/ts", present = false }]

[[rules]]
id = "repo.ours"
action = "ask"
reason = "a repository of ours"
tools = ["mcp__gh__*"]
args = [{ pointer = "/repo", regex = "^acme/" }]
"##;

    fn policy() -> Policy {
        Policy::from_toml(POLICY, "args.toml").unwrap()
    }

    fn decide(tool: &str, arguments: Value) -> Decision {
        policy().decide(&ToolRequest::new("c", tool, arguments), &no_paths())
    }

    #[test]
    fn argument_values_decide() {
        let d = decide(
            "mcp__slack__post",
            json!({"channel": "#eng-core", "text": "hi"}),
        );
        assert_eq!((d.action, d.rule_id.as_str()), (Action::Allow, "slack.eng"));
        // Another channel, or a reply in a thread: no rule allows it.
        assert_eq!(
            decide("mcp__slack__post", json!({"channel": "#ops"})).rule_id,
            "default.deny"
        );
        let threaded = json!({"channel": "#eng-core", "thread": {"ts": "1"}});
        assert_eq!(decide("mcp__slack__post", threaded).rule_id, "default.deny");
        let d = decide("mcp__pay__send", json!({"amount": 40, "currency": "EUR"}));
        assert_eq!(d.rule_id, "pay.small");
        let d = decide("mcp__pay__send", json!({"amount": 400, "currency": "EUR"}));
        assert_eq!(
            (d.action, d.rule_id.as_str()),
            (Action::Deny, "slack.no_big_payments")
        );
        assert_eq!(
            decide("mcp__pay__send", json!({"amount": 40, "currency": "GBP"})).rule_id,
            "default.deny"
        );
        assert_eq!(
            decide("mcp__gh__issue", json!({"repo": "acme/web"})).action,
            Action::Ask
        );
        assert_eq!(
            decide("mcp__gh__issue", json!({"repo": "evil/acme"})).rule_id,
            "default.deny"
        );
    }

    /// A missing pointer, or a value of another type, never satisfies an
    /// allow; another type always satisfies a deny (it cannot be judged).
    #[test]
    fn what_cannot_be_judged_is_never_allowed() {
        assert_eq!(
            decide("mcp__slack__post", json!({"text": "hi"})).rule_id,
            "default.deny"
        );
        assert_eq!(
            decide("mcp__slack__post", json!({"channel": ["#eng-core"]})).rule_id,
            "default.deny"
        );
        // Arguments that are not an object are not judged at all.
        assert_eq!(
            decide("mcp__slack__post", json!("#eng-core")).rule_id,
            "request.invalid_arguments"
        );
        let d = decide("mcp__pay__send", json!({"amount": "40", "currency": "EUR"}));
        assert_eq!(
            (d.action, d.rule_id.as_str()),
            (Action::Deny, "slack.no_big_payments")
        );
        // A missing amount is not a big one, nor an allowed one.
        assert_eq!(
            decide("mcp__pay__send", json!({"currency": "EUR"})).rule_id,
            "default.deny"
        );
        // A number is a number however it is written.
        let d = decide(
            "mcp__pay__send",
            json!({"amount": 100.0, "currency": "USD"}),
        );
        assert_eq!(d.rule_id, "pay.small");
    }

    #[test]
    fn explain_names_the_argument_that_failed() {
        let request = ToolRequest::new("c", "mcp__slack__post", json!({"channel": "#ops"}));
        let (_, trace) = policy().explain(&request, &no_paths());
        let eng = trace.iter().find(|t| t.rule_id == "slack.eng").unwrap();
        assert_eq!(
            eng.detail,
            "argument `/channel` is \"#ops\", which matches none of `#eng-*`"
        );
        let request = ToolRequest::new(
            "c",
            "mcp__pay__send",
            json!({"amount": 400, "currency": "EUR"}),
        );
        let (_, trace) = policy().explain(&request, &no_paths());
        assert!(trace[0].matched);
    }

    #[test]
    fn bad_entries_are_refused_when_the_policy_loads() {
        for (args, expected) in [
            ("[{ pointer = \"amount\", max = 1 }]", "starts with `/`"),
            ("[{ pointer = \"/a\" }]", "give a test"),
            (
                "[{ pointer = \"/a\", min = 5, max = 1 }]",
                "`min` is above `max`",
            ),
            ("[{ pointer = \"/a\", regex = \"(\" }]", "invalid regex"),
            ("[{ pointer = \"/a\", any_of = [] }]", "empty list"),
            (
                "[{ pointer = \"/a\", present = false, glob = \"x\" }]",
                "no value to test",
            ),
            ("[{ pointer = \"/a\", shape = 1 }]", "unknown field"),
            ("[]", "empty list"),
        ] {
            let text = format!(
                "name = \"p\"\n[[rules]]\nid = \"r\"\naction = \"allow\"\nreason = \"r\"\nargs = {args}\n"
            );
            let err = Policy::from_toml(&text, "p.toml").unwrap_err().to_string();
            assert!(err.contains(expected), "{args}: {err}");
        }
    }

    /// An earlier rule with fewer `args` entries shadows a later one with
    /// more; one with an entry the later lacks does not.
    #[test]
    fn lint_sees_argument_conditions() {
        let text = r##"
name = "p"

[[rules]]
id = "a"
action = "deny"
reason = "a"
args = [{ pointer = "/x", glob = "p*" }]

[[rules]]
id = "b"
action = "deny"
reason = "b"
args = [{ pointer = "/x", glob = "p*" }, { pointer = "/y", max = 3 }]

[[rules]]
id = "c"
action = "deny"
reason = "c"
args = [{ pointer = "/z", max = 3 }]
"##;
        let policy = Policy::from_toml(text, "p.toml").unwrap();
        let rules = policy.rules();
        assert!(lint::shadows(&rules[0], &rules[1]));
        assert!(!lint::shadows(&rules[1], &rules[0]));
        assert!(!lint::shadows(&rules[0], &rules[2]));
    }
}

/// `who` (issue 41): conditions on the principal that made the call.
mod who {
    use super::*;
    use crate::principal::Principal;

    fn principal(client: &str, agent_type: Option<&str>) -> Principal {
        Principal {
            user: "dev".into(),
            uid: 1000,
            host: "box".into(),
            host_id: "00".repeat(16),
            gavel: "0".into(),
            client: client.into(),
            client_version: None,
            session: Some("s1".into()),
            agent_id: agent_type.map(|_| "agent_1".into()),
            agent_type: agent_type.map(str::to_owned),
            policy: None,
        }
    }

    const POLICY: &str = r#"
name = "who"

[[rules]]
id = "subagents.no_writes"
action = "deny"
tools = ["write_file"]
who = { subagent = true }
reason = "subagents do not write"

[[rules]]
id = "reviewers.read"
action = "allow"
tools = ["read_file"]
who = { client = ["claude-code"], agent_type = ["review*"] }
reason = "reviewers read"

[[rules]]
id = "writes"
action = "allow"
tools = ["write_file"]
who = { user = ["dev"], host = ["box"] }
reason = "dev writes on box"
"#;

    #[test]
    fn the_principal_decides() {
        let policy = Policy::from_toml(POLICY, "who.toml").unwrap();
        let write = ToolRequest::new("c", "write_file", json!({"path": "a", "content": "x"}));
        let read = ToolRequest::new("c", "read_file", json!({"path": "a"}));
        let facts = facts_inside("a");
        let main = principal("claude-code", None);
        let reviewer = principal("claude-code", Some("reviewer"));
        let explorer = principal("claude-code", Some("Explore"));
        assert_eq!(
            policy.decide_as(&write, &facts, Some(&main)).rule_id,
            "writes"
        );
        assert_eq!(
            policy.decide_as(&write, &facts, Some(&reviewer)).rule_id,
            "subagents.no_writes"
        );
        assert_eq!(
            policy.decide_as(&read, &facts, Some(&reviewer)).rule_id,
            "reviewers.read"
        );
        assert_eq!(
            policy.decide_as(&read, &facts, Some(&explorer)).rule_id,
            "default.deny"
        );
        // No principal: no `who` condition holds.
        assert_eq!(policy.decide(&write, &facts).rule_id, "default.deny");
        let (_, trace) = policy.explain_as(&read, &facts, Some(&explorer));
        let tried = trace
            .iter()
            .find(|t| t.rule_id == "reviewers.read")
            .unwrap();
        assert_eq!(
            tried.detail,
            "`agent_type` is `Explore`, which matches none of [review*]"
        );
    }

    #[test]
    fn lint_warns_of_fields_a_client_never_sends() {
        let text = r#"
name = "p"

[[rules]]
id = "copilot.subagents"
action = "deny"
who = { client = ["copilot", "cursor"], agent_type = ["*"] }
reason = "never holds"

[[rules]]
id = "claude.subagents"
action = "deny"
who = { client = ["claude-code"], agent_type = ["*"] }
reason = "holds"
"#;
        let policy = Policy::from_toml(text, "p.toml").unwrap();
        let findings: Vec<(String, String)> = lint::lint(&policy)
            .into_iter()
            .filter(|f| f.kind == lint::LintKind::NeverSent)
            .map(|f| (f.rule_id, f.message))
            .collect();
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].0, "copilot.subagents");
        assert!(
            findings[0]
                .1
                .contains("`agent_type`, which copilot, cursor never send"),
            "{findings:?}"
        );
        let empty =
            "name = \"p\"\n[[rules]]\nid = \"r\"\naction = \"deny\"\nreason = \"r\"\nwho = {}\n";
        let err = Policy::from_toml(empty, "p.toml").unwrap_err().to_string();
        assert!(err.contains("`who` names no field"), "{err}");
    }
}

mod flows {
    use super::*;

    const FLOWS: &str = r#"
name = "flows"

[[labels]]
id = "label.secrets"
labels = ["private"]
content_glob = ["**/.env"]

[[labels]]
id = "label.egress"
labels = ["egress"]
tools = ["web_fetch"]

[[rules]]
id = "flow.egress_after_private"
action = "deny"
labelled = ["egress"]
after = ["private"]
reason = "{tool} after {after}"

[[rules]]
id = "fetch.clean"
action = "allow"
tools = ["web_fetch"]
not_after = ["private"]
labels = ["fetched"]
reason = "nothing private read yet"

[[rules]]
id = "read"
action = "allow"
tools = ["read_file"]
path_scope = "inside"
reason = "reads"

[[rules]]
id = "fetch.ask"
action = "ask"
tools = ["web_fetch"]
reason = "ask"
"#;

    fn fetch() -> ToolRequest {
        ToolRequest::new("t", "web_fetch", json!({"url": "https://x"}))
    }

    #[test]
    fn a_flow_rule_holds_after_a_labelled_call_and_names_it() {
        let policy = Policy::from_toml(FLOWS, "flows.toml").unwrap();
        let read = ToolRequest::new("r", "read_file", json!({"path": ".env"}));
        let read_decision = policy.decide(&read, &facts_inside(".env"));
        assert_eq!(read_decision.rule_id, "read");
        assert_eq!(read_decision.labels, vec!["private".to_owned()]);

        let fresh = policy.decide(&fetch(), &no_paths());
        assert_eq!(
            (fresh.action, fresh.rule_id.as_str()),
            (Action::Allow, "fetch.clean")
        );
        // The `[[labels]]` entry's label first, then the deciding rule's own.
        assert_eq!(
            fresh.labels,
            vec!["egress".to_owned(), "fetched".to_owned()]
        );
        assert_eq!(fresh.after, None);

        let mut history = History::default();
        history.add("call-1", &read_decision.labels);
        let after = policy.decide_in(&fetch(), &no_paths(), None, &history);
        assert_eq!(
            (after.action, after.rule_id.as_str()),
            (Action::Deny, "flow.egress_after_private")
        );
        assert_eq!(
            after.after,
            Some(After {
                label: "private".into(),
                call_id: "call-1".into()
            })
        );
        assert_eq!(after.reason, "web_fetch after `private` set by call call-1");
        let (_, trace) = policy.explain_in(&fetch(), &no_paths(), None, &History::default());
        let missed = trace
            .iter()
            .find(|t| t.rule_id == "flow.egress_after_private")
            .unwrap();
        assert_eq!(
            missed.detail,
            "no earlier call of the session set [`private`]"
        );
    }

    #[test]
    fn an_unknown_history_never_allows_by_flow_and_always_denies() {
        let policy = Policy::from_toml(FLOWS, "flows.toml").unwrap();
        let unknown = History::unknown();
        let decision = policy.decide_in(&fetch(), &no_paths(), None, &unknown);
        assert_eq!(decision.rule_id, "flow.egress_after_private");
        assert_eq!(decision.action, Action::Deny);
        assert_eq!(decision.after, None);
        assert!(policy.reads_history());
        assert!(!Policy::builtin().reads_history());
    }

    #[test]
    fn label_entries_label_and_never_decide() {
        for (text, problem) in [
            (
                "labels = [\"x\"]\naction = \"deny\"",
                "`action` is not for a [[labels]] entry",
            ),
            (
                "labels = [\"x\"]\nafter = [\"y\"]",
                "`after` is not for a [[labels]] entry",
            ),
            ("tools = [\"bash\"]", "needs `labels`"),
            ("labels = [\"a b\"]", "must be non-empty, without blanks"),
        ] {
            let policy = format!("name = \"p\"\n[[labels]]\nid = \"l\"\n{text}\n");
            let err = Policy::from_toml(&policy, "p.toml")
                .unwrap_err()
                .to_string();
            assert!(err.contains(problem), "{text}: {err}");
        }
        // A policy whose only entries label calls decides nothing by them.
        let only = "name = \"p\"\n[[labels]]\nid = \"l\"\nlabels = [\"x\"]\n";
        let policy = Policy::from_toml(only, "p.toml").unwrap();
        let decision = policy.decide(&fetch(), &no_paths());
        assert_eq!(
            (decision.rule_id.as_str(), decision.labels.clone()),
            (DEFAULT_DENY, vec!["x".to_owned()])
        );
    }

    #[test]
    fn lint_names_a_label_nothing_gives_and_shadowing_respects_flows() {
        let text = format!(
            "{FLOWS}\n[[rules]]\nid = \"typo\"\naction = \"deny\"\nafter = [\"privte\"]\nreason = \"r\"\n\n[[rules]]\nid = \"own\"\naction = \"deny\"\nlabelled = [\"fetched\"]\nreason = \"r\"\n"
        );
        let policy = Policy::from_toml(&text, "p.toml").unwrap();
        let findings = lint::lint(&policy);
        let unknown: Vec<&str> = findings
            .iter()
            .filter(|f| f.kind == lint::LintKind::UnknownLabel)
            .map(|f| f.rule_id.as_str())
            .collect();
        // `fetched` is a rule's label: `labelled` reads only `[[labels]]` entries.
        assert_eq!(unknown, vec!["typo", "own"]);
        // `fetch.ask` comes after a flow rule for the same tool, which does
        // not shadow it: the flow condition holds only sometimes.
        assert!(
            !findings
                .iter()
                .any(|f| f.kind == lint::LintKind::Shadowed && f.rule_id == "fetch.ask")
        );
    }

    #[test]
    fn diff_calls_a_dropped_flow_condition_widened() {
        let old = Policy::from_toml(FLOWS, "old.toml").unwrap();
        let new_text = FLOWS.replace("not_after = [\"private\"]\n", "");
        let new = Policy::from_toml(&new_text, "new.toml").unwrap();
        let changes = diff::rule_changes(&old, &new);
        let clean = changes.iter().find(|c| c.rule_id == "fetch.clean").unwrap();
        assert_eq!(clean.kind, diff::RuleChangeKind::Widened);
        // The sample decides each request after the labels the flows read, too.
        let without_flow = FLOWS
            .replace(
                "\nafter = [\"private\"]\n",
                "\ntools = [\"no_such_tool\"]\n",
            )
            .replace("{tool} after {after}", "no flow");
        let without_flow = Policy::from_toml(&without_flow, "n.toml").unwrap();
        let (_, samples) = diff::sample_changes(&old, &without_flow);
        assert!(
            samples.iter().any(|c| c.tool == "web_fetch"
                && c.after == vec!["private".to_owned()]
                && c.from.1 == "flow.egress_after_private"),
            "{samples:?}"
        );
        let relabelled = FLOWS.replace("labels = [\"egress\"]", "labels = [\"net\"]");
        let relabelled = Policy::from_toml(&relabelled, "r.toml");
        // The flow rule now reads a label nothing gives: still loads (lint warns).
        let changes = diff::rule_changes(&old, &relabelled.unwrap());
        let entry = changes
            .iter()
            .find(|c| c.rule_id == "label.egress")
            .unwrap();
        assert_eq!(entry.kind, diff::RuleChangeKind::Changed);
    }

    #[test]
    fn a_case_gives_its_history_as_calls_or_labels() {
        let policy = Policy::from_toml(FLOWS, "flows.toml").unwrap();
        let case = |history: serde_json::Value| -> cases::PolicyCase {
            serde_json::from_value(json!({
                "tool": "web_fetch", "arguments": {"url": "https://x"},
                "history": history, "action": "deny"
            }))
            .unwrap()
        };
        for history in [
            json!([{"tool": "read_file", "arguments": {"path": ".env"}}]),
            json!(["private"]),
        ] {
            let decision = policy.decide_case(&case(history.clone()), 0, &no_paths());
            assert_eq!(decision.rule_id, "flow.egress_after_private", "{history}");
        }
        let clean = json!([{"tool": "read_file", "arguments": {"path": "README.md"}}]);
        let decision = policy.decide_case(&case(clean), 0, &no_paths());
        assert_eq!(decision.rule_id, "fetch.clean");
    }
}

#[test]
fn approval_notify_is_read_and_checked() {
    let load = |table: &str| Policy::from_toml(&format!("name = \"p\"\n{table}"), "p.toml");
    let policy = load("[approval]\nwait = \"10m\"\n[approval.notify]\nurl = \"https://hooks.example.com/x\"\nformat = \"slack\"\ntimeout = \"2s\"\n").unwrap();
    assert_eq!(
        policy.approval_wait(),
        Some(std::time::Duration::from_secs(600))
    );
    assert_eq!(
        policy.approval_notify(),
        Some(&Notify {
            target: NotifyTarget::Url("https://hooks.example.com/x".into()),
            format: NotifyFormat::Slack,
            timeout: std::time::Duration::from_secs(2),
        })
    );
    let policy = load("[approval.notify]\nurl_env = \"GAVEL_NOTIFY_URL\"\n").unwrap();
    assert_eq!(policy.approval_wait(), None);
    assert_eq!(
        policy.approval_notify(),
        Some(&Notify {
            target: NotifyTarget::Env("GAVEL_NOTIFY_URL".into()),
            format: NotifyFormat::Json,
            timeout: std::time::Duration::from_secs(5),
        })
    );
    assert_eq!(load("").unwrap().approval_notify(), None);

    for (table, problem) in [
        (
            "url = \"https://h/x\"\nurl_env = \"U\"",
            "[approval.notify]: set `url` or `url_env`, not both",
        ),
        ("format = \"json\"", "[approval.notify]: needs `url`"),
        (
            "url = \"https://h/x\"\nformat = \"teams\"",
            "[approval.notify]: format `teams` is not one of json, slack, discord, ntfy",
        ),
        (
            "url = \"ftp://h/SECRET\"",
            "[approval.notify]: url must start with http:// or https://",
        ),
        ("url = \"https:///x\"", "[approval.notify]: url has no host"),
        (
            "url = \"https://h/x\"\ntimeout = \"2m\"",
            "[approval.notify]: timeout `2m` is more than 60s",
        ),
        (
            "url = \"https://h/x\"\ntimeout = \"0s\"",
            "[approval.notify]: timeout",
        ),
        (
            "url = \"https://h/x\"\nretries = 3",
            "[approval.notify]: unknown field `retries`",
        ),
        ("url_env = \"\"", "[approval.notify]: url_env `` is not"),
    ] {
        let err = load(&format!("[approval.notify]\n{table}\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(problem), "{table}: {err}");
        assert!(!err.contains("SECRET"), "{table}: {err}");
    }
}

mod label_approvers {
    use super::*;

    const PER_LABEL: &str = r#"
name = "per-label"

[[labels]]
id = "label.prod"
labels = ["prod"]
content_glob = ["deploy/**"]
approvers = ["alice", "bob", "carol"]
quorum = 2

[[rules]]
id = "write.one"
action = "ask"
tools = ["write_file"]
approvers = ["alice", "dave"]
reason = "one person"

[[rules]]
id = "read"
action = "allow"
tools = ["read_file"]
reason = "reads"
"#;

    fn write(path: &str) -> ToolRequest {
        ToolRequest::new("w", "write_file", json!({"path": path, "content": "x"}))
    }

    #[test]
    fn a_labels_approvers_bind_an_ask_on_its_calls_and_the_stricter_stands() {
        let policy = Policy::from_toml(PER_LABEL, "per-label.toml").unwrap();
        let prod = policy.decide(&write("deploy/app.yaml"), &facts_inside("deploy/app.yaml"));
        assert_eq!(prod.action, Action::Ask);
        let need = prod.approvers.expect("the label's approvers");
        assert_eq!((need.quorum, need.names.len()), (2, 3), "{need:?}");
        // Elsewhere the rule's own stand.
        let other = policy.decide(&write("src/a.rs"), &facts_inside("src/a.rs"));
        assert_eq!(other.approvers.unwrap().names, ["alice", "dave"]);
        // An allow needs nobody, labelled or not.
        let read = ToolRequest::new("r", "read_file", json!({"path": "deploy/app.yaml"}));
        let allowed = policy.decide(&read, &facts_inside("deploy/app.yaml"));
        assert_eq!((allowed.action, allowed.approvers), (Action::Allow, None));
        // A label's approvers are checked like a rule's.
        let bad = PER_LABEL.replace("quorum = 2", "quorum = 4");
        assert!(Policy::from_toml(&bad, "bad.toml").is_err());
    }
}
