//! The coding-agent preset against a hostile workspace (issue 23): what an
//! agent does all day is allowed, and no program's own options, stdin, a
//! committed symlink or an option-named file turn an allow into a write,
//! an execution or a read outside the workspace or of gavel's record.
//! Decided by the real binary (`gavel check`) in a real workspace.

use std::os::unix::fs::symlink;

use serde_json::json;

use crate::support::{Sandbox, json, run_expecting};

/// A workspace holding the preset as `gavel.toml`, a committed symlink to
/// a folder outside, a file named like an option, and a record.
fn hostile() -> Sandbox {
    let sandbox = Sandbox::new();
    let preset = run_expecting(
        sandbox
            .bare()
            .args(["policy", "show", "--preset", "coding-agent"]),
        0,
    );
    std::fs::write(sandbox.ws.join("gavel.toml"), &preset.stdout).unwrap();
    sandbox.write("src/main.rs", "fn main() {}\n");
    sandbox.write("src/lib.rs", "pub fn parse() {}\n");
    sandbox.write("README.md", "# demo\n");
    sandbox.write("-ogavel.toml", "");
    sandbox.write(".gavel/audit.db", "record");
    symlink(&sandbox.outside, sandbox.ws.join("link_out")).unwrap();
    sandbox
}

/// `gavel check` of `tool` with `arguments`: (action, rule id, reason).
fn decide(sandbox: &Sandbox, tool: &str, arguments: serde_json::Value) -> (String, String, String) {
    let output = run_expecting(
        &mut sandbox.gavel(&["check", tool, &arguments.to_string(), "--json"]),
        0,
    );
    let decision = json(&output);
    let field = |k: &str| decision[k].as_str().unwrap_or_default().to_owned();
    (field("action"), field("rule_id"), field("reason"))
}

fn bash(sandbox: &Sandbox, command: &str) -> (String, String, String) {
    decide(sandbox, "bash", json!({ "command": command }))
}

#[test]
fn what_agents_do_all_day_is_allowed() {
    let sandbox = hostile();
    for command in [
        "ls",
        "ls -la src",
        "cat gavel.toml",
        "ls 2>/dev/null",
        "git log -5 2>/dev/null",
        "cd src && ls",
        "find . -name '*.rs'",
        "git log --oneline -- gavel.toml",
        "grep -rn --exclude-dir=.gavel foo .",
        "grep -rn 'gavel.toml' src",
        "tree -I .gavel",
        "rg -n parse src",
        "rg foo",
        "sed -n '1,5p' src/main.rs",
        "head -20 README.md | wc -l",
        "git status --short",
        "git branch -a",
        "wc -l src/*.rs",
    ] {
        let (action, rule, reason) = bash(&sandbox, command);
        assert_eq!(
            (action.as_str(), rule.as_str()),
            ("allow", "bash.read_only"),
            "{command}: {reason}"
        );
    }
    let (action, _, reason) = decide(&sandbox, "glob", json!({ "pattern": "**/*.rs" }));
    assert_eq!(action, "allow", "{reason}");
    let (action, _, reason) = decide(&sandbox, "read_file", json!({ "path": "gavel.toml" }));
    assert_eq!(action, "allow", "{reason}");
}

#[test]
fn globs_over_a_folder_with_an_outside_symlink_ask_but_are_never_denied() {
    let sandbox = hostile();
    for command in ["ls *", "grep -rn foo *", "wc -l *", "du -sh *"] {
        let (action, rule, reason) = bash(&sandbox, command);
        assert_eq!(action, "ask", "{command}: {rule} {reason}");
        assert!(reason.contains("link_out"), "{command}: {reason}");
    }
}

#[test]
fn options_that_run_write_or_read_lists_are_not_allowed() {
    let sandbox = hostile();
    for (command, phrase) in [
        (
            "rg --pre=sh foo src/main.rs",
            "`rg --pre` runs another program",
        ),
        ("rg --pre=rm -l . src", "`rg --pre` runs another program"),
        ("rg --hostname-bin=id foo", "runs another program"),
        (
            "sort -S1 --compress-program=sh README.md",
            "runs another program",
        ),
        ("tree -o .git/hooks/pre-commit", "`tree -o` writes a file"),
        ("file -C", "writes a file"),
        ("date -s 2020-01-01", "sets the system clock"),
        ("git branch -D main", "deletes a branch"),
        ("git branch --set-upstream-to=origin/main", "configuration"),
        ("git log --output=notes.md", "writes a file"),
        ("git -c core.pager=sh log", "configuration"),
        ("sort --files0-from=-", "names of the files"),
        ("wc --files0-from=-", "names of the files"),
        ("file -f -", "names of the files"),
        ("sha256sum -c sums.txt", "reads the names"),
        ("find . -exec cat {} ;", "runs a program"),
        ("find . -delete", "removes files"),
        (
            "echo -e '--output=gavel\\x2etoml' | xargs git log -1",
            "`xargs` appends words",
        ),
        ("sort -u [-]o* README.md", "would read as an option"),
        ("cargo metadata", "Cargo.lock"),
        ("grep -r '' .", "gavel's record"),
        ("rg --hidden foo", "gavel's record"),
    ] {
        let (action, rule, reason) = bash(&sandbox, command);
        assert_eq!(
            (action.as_str(), rule.as_str()),
            ("ask", "bash.unprovable"),
            "{command}: {reason}"
        );
        assert!(reason.contains(phrase), "{command}: {reason}");
    }
}

#[test]
fn a_walk_that_follows_a_symlink_out_is_asked() {
    let sandbox = hostile();
    for command in [
        "grep -R secret .",
        "rg -L secret",
        "ls -LR",
        "du -L",
        "tree -l",
        "diff -rN src .",
        "find -L . -name '*.txt'",
    ] {
        let (action, rule, reason) = bash(&sandbox, command);
        assert_eq!(
            (action.as_str(), rule.as_str()),
            ("ask", "bash.outside_workspace"),
            "{command}: {reason}"
        );
        assert!(reason.contains("link_out"), "{command}: {reason}");
    }
    // Without following, the same walks stay inside.
    for command in [
        "grep -r --exclude-dir=.gavel secret .",
        "ls -R src",
        "du -s src",
    ] {
        let (action, _, reason) = bash(&sandbox, command);
        assert_eq!(action, "allow", "{command}: {reason}");
    }
}

#[test]
fn the_record_and_the_policy_stay_protected() {
    let sandbox = hostile();
    for command in [
        "cat .gavel/audit.db",
        "echo x >> gavel.toml",
        "sort -o gavel.toml README.md",
        "sed -i s/deny/allow/ gavel.toml",
        "git log --output=gavel.toml",
        "cp README.md gavel.toml",
        "ls .gavel",
    ] {
        let (action, rule, reason) = bash(&sandbox, command);
        assert_eq!(
            (action.as_str(), rule.as_str()),
            ("deny", "path.protected"),
            "{command}: {reason}"
        );
    }
    for (tool, arguments) in [
        ("write_file", json!({ "path": "gavel.toml", "content": "" })),
        ("read_file", json!({ "path": ".gavel/audit.db" })),
    ] {
        let (action, rule, reason) = decide(&sandbox, tool, arguments);
        assert_eq!(
            (action.as_str(), rule.as_str()),
            ("deny", "path.protected"),
            "{tool}: {reason}"
        );
    }
    let (action, rule, _) = bash(&sandbox, "sudo ls");
    assert_eq!((action.as_str(), rule.as_str()), ("deny", "bash.hard_deny"));
    let (action, rule, _) = bash(&sandbox, "echo x | xargs rm -rf /");
    assert_eq!((action.as_str(), rule.as_str()), ("deny", "bash.hard_deny"));
}

#[test]
fn lint_warns_about_unscoped_and_unmodelled_shell_allows() {
    let sandbox = Sandbox::new();
    let builtin = run_expecting(sandbox.bare().args(["policy", "show", "--builtin"]), 0);
    let mut text = String::from_utf8(builtin.stdout).unwrap();
    text.push_str(
        "\n[[rules]]\nid = \"bash.grep\"\naction = \"allow\"\ntools = [\"bash\"]\n\
         command_prefix = [[\"grep\"], [\"make\"]]\nreason = \"grep\"\n",
    );
    let policy = sandbox.root.join("loose.toml");
    std::fs::write(&policy, text).unwrap();
    let output = run_expecting(
        &mut sandbox.gavel(&[
            "policy",
            "lint",
            policy.to_str().unwrap(),
            "--no-usage",
            "--json",
        ]),
        0,
    );
    let findings = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(findings.contains("unscoped_shell_allow"), "{findings}");
    assert!(findings.contains("unmodelled_program"), "{findings}");
    assert!(findings.contains("`make`"), "{findings}");
}

/// The usability corpus: read-only commands agents really send, each with
/// its source (`fixtures/shell/usability/commands.tsv`, checked under
/// strace in the repository `make-fixture.sh` builds). The preset must
/// allow at least 95% of them without a prompt and deny none.
#[test]
fn the_preset_allows_what_agents_really_send() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let made = std::process::Command::new("bash")
        .arg(crate::support::fixture("shell/usability/make-fixture.sh"))
        .arg(&repo)
        .output()
        .expect("run make-fixture.sh");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    std::fs::write(
        repo.join("gavel.toml"),
        gavel::policy::CODING_AGENT_POLICY_TOML,
    )
    .unwrap();
    std::fs::create_dir_all(repo.join(".gavel")).unwrap();
    std::fs::write(repo.join(".gavel/audit.db"), "record").unwrap();
    let policy =
        gavel::Policy::from_toml(gavel::policy::CODING_AGENT_POLICY_TOML, "preset").unwrap();
    let workspace = gavel::Workspace::open(&repo).unwrap();
    let corpus =
        std::fs::read_to_string(crate::support::fixture("shell/usability/commands.tsv")).unwrap();
    let commands: Vec<&str> = corpus
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split('\t').next())
        .collect();
    assert!(commands.len() >= 500, "{} commands", commands.len());
    let mut misses = Vec::new();
    let mut denied = Vec::new();
    for command in &commands {
        let request = gavel::ToolRequest::new("u", "bash", json!({ "command": command }));
        let decision = policy.decide(&request, &workspace.facts(&request));
        match decision.action {
            gavel::Action::Allow => {}
            gavel::Action::Ask => misses.push(format!("{command}  ->  {}", decision.reason)),
            gavel::Action::Deny => denied.push(format!("{command}  ->  {}", decision.reason)),
        }
    }
    let allowed = commands.len() - misses.len() - denied.len();
    let share = allowed as f64 / commands.len() as f64;
    println!(
        "usability: the preset allows {allowed} of {} agent commands ({:.1}%), asks {}, denies {}",
        commands.len(),
        share * 100.0,
        misses.len(),
        denied.len()
    );
    for miss in misses.iter().chain(&denied) {
        println!("  not allowed: {miss}");
    }
    assert!(denied.is_empty(), "denied: {denied:#?}");
    assert!(share >= 0.95, "only {:.1}% allowed", share * 100.0);
}
