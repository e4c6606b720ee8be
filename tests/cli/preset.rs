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
        ("tree -o notes/tree.txt", "`tree -o` writes a file"),
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
        ("sort -u [-]o* README.md", "would read as an option"),
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
    // What the kernel holds instead of a proof (issue 38): an `xargs`
    // pipeline in `read-only` (its appended words can neither write nor
    // reach out), a build command in `build`.
    for (command, contained) in [
        (
            "echo -e '--output=gavel\\x2etoml' | xargs git log -1",
            "bash.read_only",
        ),
        ("cargo metadata", "bash.contained_build"),
        // Its walk would read gavel's record, which is hidden in a sandbox.
        ("grep -r '' .", "bash.contained_build"),
    ] {
        let (action, rule, reason) = bash(&sandbox, command);
        assert_eq!(
            (action.as_str(), rule.as_str()),
            ("allow", contained),
            "{command}: {reason}"
        );
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
        "grep -r x .gavel",
        "head -c 16 .gavel/audit.db",
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

/// Issue 39, item 4: `ls -d .*` and `find . -maxdepth 1 -type f -name ".*"`
/// (real Claude Code commands) were denied by `path.protected`, as if
/// printing the name `.gavel` read the record. A listing of names is not a
/// read: the models mark such operands listed, and `path.protected` denies
/// only what reads or writes the contents.
#[test]
fn names_only_listings_of_the_record_are_not_denied() {
    let sandbox = hostile();
    for command in [
        "ls -d .*",
        "find . -maxdepth 1 -type f -name \".*\"",
        "ls -la .gavel",
        "ls -d .gavel",
        "find .gavel -maxdepth 1",
        "stat .gavel/audit.db",
        "test -f .gavel/audit.db && echo yes",
        "du -sh .gavel",
        "tree -a .gavel",
        "echo .gavel/*",
        "cd .gavel && ls",
    ] {
        let (action, rule, reason) = bash(&sandbox, command);
        assert_eq!(
            (action.as_str(), rule.as_str()),
            ("allow", "bash.read_only"),
            "{command}: {reason}"
        );
    }
    // The glob tool and the MCP filesystem server's listings answer with
    // names and metadata, never contents.
    for (tool, arguments) in [
        ("glob", json!({ "pattern": ".gavel/*" })),
        (
            "mcp__filesystem__list_directory",
            json!({ "path": ".gavel" }),
        ),
        (
            "mcp__filesystem__directory_tree",
            json!({ "path": ".gavel" }),
        ),
        (
            "mcp__filesystem__get_file_info",
            json!({ "path": ".gavel/audit.db" }),
        ),
    ] {
        let (action, rule, reason) = decide(&sandbox, tool, arguments);
        assert_eq!(
            (action.as_str(), rule.as_str()),
            ("allow", "path.read_allow"),
            "{tool}: {reason}"
        );
    }
    let (action, rule, reason) = decide(
        &sandbox,
        "mcp__filesystem__read_text_file",
        json!({ "path": ".gavel/audit.db" }),
    );
    assert_eq!(
        (action.as_str(), rule.as_str()),
        ("deny", "path.protected"),
        "{reason}"
    );
    // What opens the record is still denied, in any spelling.
    for command in [
        "cat .gavel/*",
        "cd .gavel && cat audit.db",
        "grep -r x .gavel",
        "wc -c .gavel/audit.db",
        "file .gavel/audit.db",
        "sqlite3 .gavel/audit.db .dump",
        "cat < .gavel/audit.db",
    ] {
        let (action, rule, reason) = bash(&sandbox, command);
        assert_eq!(
            (action.as_str(), rule.as_str()),
            ("deny", "path.protected"),
            "{command}: {reason}"
        );
    }
}

/// A git repository in the sandbox's workspace (or `dir`), with one commit.
fn repository(dir: &std::path::Path) {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    std::fs::create_dir_all(dir).unwrap();
    git(&["init", "-q"]);
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "one"]);
}

/// Appends `text` to the repository's `.git/config` in `dir`.
fn configure(dir: &std::path::Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(".git/config"))
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// Issue 39, item 5: `git status`, `git diff`, `git log -p` run the
/// programs a repository's own configuration names (`core.fsmonitor`,
/// `diff.*.textconv`, `core.pager`, ...), and the git model trusted any
/// configuration: a `["git", "status"]` rule allowed `git -C
/// /tmp/repo-with-fsmonitor status`, and a `.git/config` written once made
/// every later allowed `git status` run code. Facts now read the
/// repository's configuration (and what it includes) and make such a
/// command unprovable; writes to `.git/config` and `.git/hooks/` are the
/// floor's `path.git_config` ask.
#[test]
fn git_is_not_trusted_with_a_configuration_that_runs_programs() {
    let sandbox = hostile();
    repository(&sandbox.ws);
    let status_only = sandbox.root.join("git-status.toml");
    std::fs::write(
        &status_only,
        "name = \"git-status\"\n[[rules]]\nid = \"git.status\"\naction = \"allow\"\ntools = [\"bash\"]\n\
         command_prefix = [[\"git\", \"status\"], [\"git\", \"diff\"], [\"git\", \"log\"]]\nreason = \"ok\"\n",
    )
    .unwrap();
    let status_only = status_only.display().to_string();
    let under = |policy: &str, command: &str| {
        let args = json!({ "command": command }).to_string();
        let report = json(&run_expecting(
            &mut sandbox.gavel(&["check", "bash", &args, "--json", "--policy", policy]),
            0,
        ));
        (
            report["action"].as_str().unwrap().to_owned(),
            report["rule_id"].as_str().unwrap().to_owned(),
            report["reason"].as_str().unwrap().to_owned(),
        )
    };
    // A clean repository: read-only git is allowed.
    for command in ["git status", "git diff", "git log -p -1"] {
        let (action, _, reason) = bash(&sandbox, command);
        assert_eq!(action, "allow", "{command}: {reason}");
        assert_eq!(under(&status_only, command).0, "allow", "{command}");
    }
    // Another repository, outside, whose configuration runs a program.
    let outside = sandbox.outside.join("repo-with-fsmonitor");
    repository(&outside);
    configure(&outside, "[core]\n\tfsmonitor = ./fsmonitor.sh\n");
    let command = format!("git -C {} status", outside.display());
    let (action, rule, reason) = under(&status_only, &command);
    assert_ne!(action, "allow", "{command}: {rule} {reason}");
    // The workspace's own repository, one key at a time.
    for (config, key) in [
        ("[core]\n\tfsmonitor = \"./x.sh\"\n", "core.fsmonitor"),
        ("[diff \"pdf\"]\n\ttextconv = ./x.sh\n", "diff.pdf.textconv"),
        ("[Core]\n\tPager = ./x.sh\n", "core.pager"),
        (
            "[filter \"lfs\"]\n\tsmudge = ./x.sh %f\n",
            "filter.lfs.smudge",
        ),
        ("[diff]\n\texternal = ./x.sh\n", "diff.external"),
        ("[core]\n\tsshCommand = ./x.sh\n", "core.sshcommand"),
        ("[core]\n\thooksPath = hooks\n", "core.hookspath"),
        ("[include]\n\tpath = ../included.cfg\n", "core.pager"),
    ] {
        let original = std::fs::read_to_string(sandbox.ws.join(".git/config")).unwrap();
        sandbox.write("included.cfg", "[core]\n\tpager = ./x.sh\n");
        configure(&sandbox.ws, config);
        for command in [
            "git status",
            "git diff",
            "git log -p -1",
            "git --no-pager log",
        ] {
            let (action, rule, reason) = bash(&sandbox, command);
            assert_eq!(
                (action.as_str(), rule.as_str()),
                ("ask", "bash.unprovable"),
                "{config}{command}: {reason}"
            );
            assert!(
                reason.contains(&format!("`{key}`")),
                "{config}{command}: {reason}"
            );
            let (action, _, reason) = under(&status_only, command);
            assert_ne!(action, "allow", "{config}{command}: {reason}");
        }
        std::fs::write(sandbox.ws.join(".git/config"), original).unwrap();
    }
    // Settings that name no program change nothing.
    configure(
        &sandbox.ws,
        "[core]\n\tfsmonitor = false\n\tautocrlf = input\n[color]\n\tpager = true\n",
    );
    assert_eq!(bash(&sandbox, "git status").0, "allow");
    // Configuration given on the command line is not proven either.
    for command in [
        "git -c core.fsmonitor=./x.sh status",
        "git --config-env=core.pager=X log",
    ] {
        let (action, rule, reason) = under(&status_only, command);
        assert_ne!(action, "allow", "{command}: {rule} {reason}");
    }
    // Writing what git runs is asked by its own rule, whatever else allows.
    for (tool, arguments) in [
        (
            "write_file",
            json!({ "path": ".git/config", "content": "" }),
        ),
        (
            "edit_file",
            json!({ "path": ".git/config", "old_text": "a", "new_text": "b" }),
        ),
        (
            "write_file",
            json!({ "path": ".git/hooks/pre-commit", "content": "" }),
        ),
        (
            "bash",
            json!({ "command": "echo '[core] pager = x' >> .git/config" }),
        ),
        (
            "bash",
            json!({ "command": "tree -o .git/hooks/pre-commit" }),
        ),
        (
            "bash",
            json!({ "command": "cp a.txt .git/hooks/post-checkout" }),
        ),
    ] {
        let (action, rule, reason) = decide(&sandbox, tool, arguments.clone());
        assert_eq!(
            (action.as_str(), rule.as_str()),
            ("ask", "path.git_config"),
            "{tool} {arguments}: {reason}"
        );
    }
    assert!(gavel::approvals::grants::NEVER_GRANTED.contains(&"path.git_config"));
}

/// Issue 39, item 6: read-only git commands agents send that had no model,
/// so the preset asked about each.
#[test]
fn git_stash_show_remote_show_ref_and_check_ignore_are_read_only() {
    let sandbox = hostile();
    repository(&sandbox.ws);
    for command in [
        "git stash show -p stash@{0}",
        "git stash show --stat",
        "git stash list",
        "git stash list --oneline",
        "git remote -v",
        "git remote",
        "git remote get-url origin",
        "git remote show -n origin",
        "git show-ref --verify --quiet refs/heads/main",
        "git show-ref --tags -d",
        "git check-ignore -v src/main.rs",
        "git check-ignore -q target",
        "git for-each-ref --sort=-committerdate --format='%(refname:short)' refs/heads/",
    ] {
        let (action, rule, reason) = bash(&sandbox, command);
        assert_eq!(
            (action.as_str(), rule.as_str()),
            ("allow", "bash.read_only"),
            "{command}: {reason}"
        );
    }
    for command in [
        "git stash",
        "git stash pop",
        "git stash drop stash@{0}",
        "git stash -p",
        "git remote add x https://example.com/x.git",
        "git remote -v add x y",
        "git remote set-url origin y",
        "git remote remove origin",
        "git remote show origin",
        "git remote prune origin",
        "git show-ref --output=x",
        "git check-ignore -v ../x",
    ] {
        let (action, _, reason) = bash(&sandbox, command);
        assert_eq!(action, "ask", "{command}: {reason}");
    }
}
