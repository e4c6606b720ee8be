//! Paths in requests, through the real binary against a real workspace with
//! symlinks: gavel's own files in any spelling, disks in any spelling,
//! written operands under an allow-list, glob patterns judged by what they
//! could match, blank commands, and decision time on huge paths.

use std::os::unix::fs::symlink;

use serde_json::{Value, json};

use gavel::{Action, Policy, ToolRequest, Workspace};

use crate::support::{Sandbox, fixture, json, run_expecting};

/// A sandbox holding gavel's own files (`gavel.toml`, `.gavel/audit.db`),
/// a symlink `g` to `.gavel`, and `link` to the folder outside.
fn protected_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write(".gavel/audit.db", "record");
    sandbox.write("gavel.toml.example", "");
    sandbox.write("src/main.rs", "");
    symlink(sandbox.ws.join(".gavel"), sandbox.ws.join("g")).unwrap();
    symlink(&sandbox.outside, sandbox.ws.join("link")).unwrap();
    sandbox
}

/// `gavel check TOOL ARGS --json` under the built-in policy (or `policy`).
fn check(sandbox: &Sandbox, tool: &str, arguments: Value, policy: Option<&str>) -> Value {
    let mut cmd = sandbox.gavel(&["check", tool, &arguments.to_string(), "--json"]);
    if let Some(policy) = policy {
        cmd.arg("--policy").arg(policy);
    }
    json(&run_expecting(&mut cmd, 0))
}

fn decided(report: &Value) -> String {
    format!(
        "{} {}",
        report["action"].as_str().unwrap_or("?"),
        report["rule_id"].as_str().unwrap_or("?")
    )
}

fn bash(sandbox: &Sandbox, command: &str) -> String {
    decided(&check(sandbox, "bash", json!({ "command": command }), None))
}

#[test]
fn gavels_own_files_are_denied_in_any_spelling() {
    let sandbox = protected_sandbox();
    // The built-in policy is used: no gavel.toml in the workspace. One is
    // written only for the cases that need it, under another name first.
    let ws = sandbox.ws.display().to_string();
    for command in [
        "rm .gavel/audit.db".to_owned(),
        "rm ./.gavel/../.gavel/audit.db".to_owned(),
        format!("rm {ws}/.gavel/audit.db"),
        format!("cd {ws} && rm .gavel/audit.db"),
        "rm g/audit.db".to_owned(),
        "cd g && rm audit.db".to_owned(),
        "cd src; cd ../.gavel; truncate -s0 audit.db".to_owned(),
        "rm .g*/audit.db".to_owned(),
        "rm .[g]avel/audit.db".to_owned(),
        "rm {.gavel,x}/audit.db".to_owned(),
        "sqlite3 .gavel/audit.db 'drop trigger x'".to_owned(),
        "dd if=/dev/zero of=g/audit.db".to_owned(),
        "git diff --output=./g/audit.db".to_owned(),
        "cp x .gavel/../gavel.toml".to_owned(),
        "sed -i s/a/b/ src/../gavel.toml".to_owned(),
    ] {
        assert_eq!(bash(&sandbox, &command), "deny path.protected", "{command}");
    }
    // `*` matches the symlink `g`, so this reaches the record...
    assert_eq!(bash(&sandbox, "cat */audit.db"), "deny path.protected");
    // ...but never `.gavel` itself: bash's `*` skips dot names.
    std::fs::remove_file(sandbox.ws.join("g")).unwrap();
    assert_eq!(
        bash(&sandbox, "cat */audit.db"),
        "ask bash.requires_approval"
    );
}

#[test]
fn a_pattern_that_may_write_the_policy_file_is_denied() {
    let sandbox = protected_sandbox();
    // With gavel.toml present the workspace's own policy would decide:
    // point --policy at the built-in rules written out.
    let policy = sandbox.root.join("builtin.toml");
    std::fs::write(&policy, gavel::policy::DEFAULT_POLICY_TOML).unwrap();
    sandbox.write("gavel.toml", "name = \"x\"\n");
    let policy = policy.display().to_string();
    for command in [
        "rm *",
        "cp x {gavel,other}.toml",
        "touch gavel.t?ml",
        "mycmd *.toml",
    ] {
        let report = check(
            &sandbox,
            "bash",
            json!({ "command": command }),
            Some(&policy),
        );
        assert_eq!(decided(&report), "deny path.protected", "{command}");
    }
    // Reading the policy through a pattern is no write.
    for command in ["cat gavel.t?ml", "ls *.toml"] {
        let report = check(
            &sandbox,
            "bash",
            json!({ "command": command }),
            Some(&policy),
        );
        assert_eq!(decided(&report), "ask bash.requires_approval", "{command}");
    }
    let report = check(
        &sandbox,
        "bash",
        json!({ "command": "ls src/*" }),
        Some(&policy),
    );
    assert_eq!(decided(&report), "ask bash.requires_approval");
}

#[test]
fn disks_are_denied_in_any_spelling_and_harmless_devices_are_not() {
    let sandbox = Sandbox::new();
    for command in [
        "dd of=//dev/sda",
        "dd if=img of=/dev/../dev/sda",
        "cd /dev; echo x > sda",
        "cd /dev && dd if=img of=./nvme0n1",
        "tee /dev/xvda < img",
        "cat img > /dev/mapper/root",
    ] {
        assert_eq!(bash(&sandbox, command), "deny bash.hard_deny", "{command}");
    }
    for command in [
        "dd if=/dev/zero of=/dev/null",
        "dd of=/dev/stdout",
        "echo x > /dev/fd/2",
    ] {
        assert_eq!(
            bash(&sandbox, command),
            "ask bash.requires_approval",
            "{command}"
        );
    }
}

#[test]
fn an_allow_list_refuses_written_operands_and_device_tricks() {
    let sandbox = Sandbox::new();
    let prefix = fixture("shell/prefix-policy.toml").display().to_string();
    let decide = |command: &str| {
        decided(&check(
            &sandbox,
            "bash",
            json!({ "command": command }),
            Some(&prefix),
        ))
    };
    for command in [
        "git diff --output=FILE",
        "git diff --output FILE",
        "git diff --out=FILE",
        "ls &>/dev/fd/../root/x",
        "echo x > /dev//null",
        "echo x > /dev/fd/1/../x",
    ] {
        assert_eq!(decide(command), "ask bash.other", "{command}");
        assert!(!sandbox.ws.join("FILE").exists());
    }
    for command in ["git diff --stat", "ls 2>/dev/null", "echo x >/dev/fd/2"] {
        assert_eq!(decide(command), "allow safe.allow", "{command}");
    }
}

#[test]
fn an_allow_inside_the_workspace_follows_cd_and_symlinks() {
    let sandbox = protected_sandbox();
    let policy = sandbox.root.join("inside.toml");
    std::fs::write(
        &policy,
        r#"name = "inside"
[[rules]]
id = "read.inside"
action = "allow"
tools = ["bash"]
commands = [{ program = ["cat", "ls"] }]
path_scope = "inside"
reason = "reads inside"
[[rules]]
id = "other"
action = "ask"
reason = "other"
"#,
    )
    .unwrap();
    let policy = policy.display().to_string();
    let decide = |command: &str| {
        decided(&check(
            &sandbox,
            "bash",
            json!({ "command": command }),
            Some(&policy),
        ))
    };
    assert_eq!(decide("cat notes.txt"), "allow read.inside");
    assert_eq!(decide("cat src/main.rs"), "allow read.inside");
    for command in [
        "cat link/secret.txt",
        "cd link; cat secret.txt",
        "cd ..; cat outside/secret.txt",
        "cd $HOME; cat notes.txt",
        "cat {..,x}/outside/secret.txt",
        "cat [.][.]/outside/secret.txt",
        "cat $HOME/.ssh/id_rsa",
        "cat ${X}notes.txt",
        "cat `pwd`/../outside/secret.txt",
        "cat ~root/.ssh/id_rsa",
        "cat ~/.bashrc",
    ] {
        assert_eq!(decide(command), "ask other", "{command}");
    }
    // `*` may reach the record through `g`: gavel's floor denies that under
    // any policy, this one included.
    assert_eq!(decide("cat */secret.txt"), "deny path.protected");
}

#[test]
fn glob_patterns_are_judged_by_what_they_could_match() {
    let sandbox = protected_sandbox();
    let glob = |pattern: &str| {
        decided(&check(
            &sandbox,
            "glob",
            json!({ "pattern": pattern }),
            None,
        ))
    };
    for pattern in [
        "{..,x}/{..,x}/etc/*",
        "[.][.]/*",
        ".\\./*",
        "l*/secret.txt",
        "l?nk/*",
        "src/../../*",
    ] {
        assert_eq!(glob(pattern), "deny path.outside_workspace", "{pattern}");
    }
    // `*` matches both `g` (to .gavel) and `link` (outside): denied either way.
    assert_eq!(check_action(&sandbox, "*/secret.txt"), "deny");
    assert_eq!(check_action(&sandbox, "**/secret.txt"), "deny");
    // The glob tool answers with names, never contents: listing the
    // record's names is not reading it (issue 39, item 4).
    assert_eq!(glob(".g*/*"), "allow path.read_allow");
    assert_eq!(glob("g/*"), "allow path.read_allow");
    assert_eq!(glob("src/**/*.rs"), "allow path.read_allow");
    assert_eq!(glob("*.txt"), "allow path.read_allow");
}

#[test]
fn the_glob_tool_lists_no_dot_entries_for_a_wildcard() {
    let sandbox = Sandbox::new();
    sandbox.write(".gavel/audit.db", "record");
    sandbox.write("sub/audit.db", "");
    let output = run_expecting(
        &mut sandbox.gavel(&["run", "glob", r#"{"pattern":"*/audit.db"}"#, "--json"]),
        0,
    );
    let report = json(&output);
    assert_eq!(report["rule_id"], "path.read_allow");
    assert_eq!(report["content"], "sub/audit.db");
}

#[test]
fn a_command_without_words_is_invalid() {
    let sandbox = Sandbox::new();
    for command in ["", "   ", "\n\t \n"] {
        assert_eq!(
            bash(&sandbox, command),
            "deny request.invalid_arguments",
            "{command:?}"
        );
    }
}

fn check_action(sandbox: &Sandbox, pattern: &str) -> String {
    let report = check(sandbox, "glob", json!({ "pattern": pattern }), None);
    report["action"].as_str().unwrap_or("?").to_owned()
}

/// ` f0 f1 ...`: `count` file names.
fn many_files(count: usize) -> String {
    (0..count).map(|i| format!(" f{i}")).collect()
}

/// Through the library: a single argument this large cannot be passed to a
/// process (`MAX_ARG_STRLEN`). How long these take is measured by the
/// criterion bench (`bench/benches/scaling.rs`), not here.
#[test]
fn huge_paths_and_patterns_are_decided_and_never_allowed() {
    let sandbox = Sandbox::new();
    let workspace = Workspace::open(&sandbox.ws).unwrap();
    let policy = Policy::builtin();
    let long = "a/".repeat(400_000);
    for (tool, arguments) in [
        ("bash", json!({ "command": format!("cat {long}x") })),
        ("bash", json!({ "command": format!("echo x > {long}x") })),
        ("bash", json!({ "command": format!("cd {long} && cat x") })),
        ("read_file", json!({ "path": format!("{long}x") })),
        ("glob", json!({ "pattern": format!("{long}*") })),
        ("glob", json!({ "pattern": "{a,b}".repeat(100_000) })),
        (
            "bash",
            json!({ "command": format!("ls {}", "x ".repeat(20_000)) }),
        ),
        (
            "bash",
            json!({ "command": format!("ls {}", "{a,b}".repeat(20_000)) }),
        ),
        (
            "bash",
            json!({ "command": format!("touch{}", many_files(20_000)) }),
        ),
    ] {
        let request = ToolRequest::new("t", tool, arguments);
        let decision = policy.decide(&request, &workspace.facts(&request));
        assert_ne!(decision.action, Action::Allow, "{tool}");
    }
    // Many wildcard parts that match nothing: allowed.
    let request = ToolRequest::new("t", "glob", json!({ "pattern": "*/".repeat(400_000) }));
    let decision = policy.decide(&request, &workspace.facts(&request));
    assert_eq!(decision.rule_id, "path.read_allow");
}

/// `gavel explain` of a `bash` call recorded as rejected: its lines about paths.
fn explained_paths(sandbox: &Sandbox, id: &str, command: &str) -> Vec<String> {
    run_expecting(
        &mut sandbox.gavel(&[
            "run",
            "bash",
            &json!({ "command": command }).to_string(),
            "--reject",
            "--call-id",
            id,
        ]),
        3,
    );
    let text = crate::support::stdout(&run_expecting(&mut sandbox.gavel(&["explain", id]), 0));
    text.lines()
        .take_while(|l| !l.starts_with("  the command runs"))
        .filter(|l| l.contains("path") || l.contains("word `"))
        .map(str::to_owned)
        .collect()
}

/// Issue 30: `explain` said "path `f` resolved to …/f" for `rm -rf`'s
/// option letters, `head -5`'s count and `grep`'s pattern. It now lists
/// only the words the facts judged as paths, with their use; for a program
/// without a model it says so, and names only words that would lie outside.
#[test]
fn explain_lists_only_the_words_judged_as_paths() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.ws.join("foo")).unwrap();
    let ws = sandbox.ws.display().to_string();

    let rm = explained_paths(&sandbox, "rm", "rm -rf foo");
    assert_eq!(
        rm[0],
        format!("  path `foo` (written) resolved to `{ws}/foo`, inside the workspace `{ws}`"),
        "{rm:#?}"
    );
    assert!(
        rm[1].contains("gavel knows only which paths `rm` writes"),
        "{rm:#?}"
    );
    assert_eq!(rm.len(), 2, "{rm:#?}");

    for (id, command) in [
        ("head", "head -5 notes.txt"),
        ("grep", "grep foo notes.txt"),
    ] {
        let lines = explained_paths(&sandbox, id, command);
        assert_eq!(
            lines,
            [format!(
                "  path `notes.txt` (read) resolved to `{ws}/notes.txt`, inside the workspace `{ws}`"
            )],
            "{command}"
        );
    }

    // No model: no word is invented as a path; one that would lie outside is named.
    let unknown = explained_paths(&sandbox, "frob", "frobtool -q a ../outside/secret.txt");
    assert!(
        unknown
            .iter()
            .all(|l| !l.contains("`-q`") && !l.contains("`a`") && !l.starts_with("  path")),
        "{unknown:#?}"
    );
    assert!(
        unknown.iter().any(|l| l
            .starts_with("  word `../outside/secret.txt`, if it is a path, is `")
            && l.contains("outside the workspace")),
        "{unknown:#?}"
    );
    assert!(
        unknown
            .iter()
            .any(|l| l.contains("gavel has no model of `frobtool`")),
        "{unknown:#?}"
    );
    for line in rm.iter().chain(&unknown) {
        assert!(
            !line.contains("`-rf`") && !line.contains("path `f`"),
            "{line}"
        );
    }
}
