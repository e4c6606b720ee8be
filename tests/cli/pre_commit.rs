//! The project's pre-commit hooks (`.pre-commit-hooks.yaml`) run by the
//! real `pre-commit` on a sample repository: a gavel.toml, its regression
//! cases and a reference record (`gavel export` of a recorded session).
//! `pre-commit run --all-files` passes while gavel.toml decides the
//! recorded calls as they were, and fails, on the replay hook, once it
//! loosens one. The hooks come from a repository holding only the hooks
//! file (as a user's `repo:` and `rev:` name gavel's), so nothing is
//! fetched; the gavel they run is the one built for the tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;

use crate::support::{Sandbox, code, record, stderr, stdout};

/// `pre-commit`: the one on PATH, else one installed from PyPI into a
/// virtualenv under the tests' target folder (kept between runs); `None`,
/// saying why, when neither can be had.
fn pre_commit() -> Option<PathBuf> {
    let works = |program: &Path| {
        Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if works(Path::new("pre-commit")) {
        return Some("pre-commit".into());
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pre-commit-venv");
    let installed = venv.join("bin/pre-commit");
    if !works(&installed) {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success())
            && Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "pre-commit"])
                .status()
                .is_ok_and(|s| s.success());
        if !made || !works(&installed) {
            eprintln!(
                "skipped: the pre-commit hooks test needs pre-commit (pip install pre-commit), \
                 which is not installed and could not be installed here"
            );
            return None;
        }
    }
    Some(installed)
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=gavel tests",
            "-c",
            "user.email=tests@gavel.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
}

/// A repository holding only gavel's hooks file, committed: what a
/// `.pre-commit-config.yaml` names as gavel's `repo` at a `rev`.
fn hooks_repository(sandbox: &Sandbox) -> (PathBuf, String) {
    let dir = sandbox.root.join("gavel-hooks");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml"),
        dir.join(".pre-commit-hooks.yaml"),
    )
    .unwrap();
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "hooks"]);
    let rev = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&dir)
        .output()
        .unwrap();
    (dir, stdout(&rev).trim().to_owned())
}

/// `pre-commit run --all-files` in `repo`, with the tests' gavel first on
/// PATH and nothing of the machine's own (no user policy layer, a fresh
/// pre-commit cache).
fn run_hooks(pre_commit: &Path, sandbox: &Sandbox, repo: &Path) -> Output {
    let gavel = Path::new(env!("CARGO_BIN_EXE_gavel"));
    let path = std::env::join_paths(
        std::iter::once(gavel.parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    Command::new(pre_commit)
        .args(["run", "--all-files", "--color", "never"])
        .current_dir(repo)
        .env("PATH", path)
        .env("PRE_COMMIT_HOME", sandbox.root.join("pre-commit-cache"))
        .env("XDG_CONFIG_HOME", sandbox.root.join("config"))
        .env("XDG_DATA_HOME", sandbox.root.join("data"))
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .env_remove("GAVEL_ADMIN_POLICY")
        .output()
        .expect("run pre-commit")
}

/// Each hook's name with its verdict (`Passed`, `Failed`, `Skipped`...).
fn verdicts(output: &Output) -> Vec<(String, String)> {
    stdout(output)
        .lines()
        .filter_map(|line| {
            let (name, verdict) = line.split_once("..")?;
            let verdict = verdict.trim_start_matches('.').trim();
            let verdict = verdict.split_whitespace().last()?;
            Some((name.trim().to_owned(), verdict.to_owned()))
        })
        .collect()
}

const CASES: &str = r#"[[cases]]
name = "read notes"
tool = "read_file"
arguments = { path = "notes.txt" }
action = "allow"

[[cases]]
name = "unknown tool"
tool = "deploy"
action = "deny"
"#;

/// An allow for writes inside the workspace, before the built-in policy's
/// rules: the recorded write (asked) is loosened.
const LOOSENING: &str = r#"[[rules]]
id = "write.inside"
action = "allow"
reason = "writes inside the workspace are fine"
tools = ["write_file"]
path_scope = "inside"

"#;

#[test]
fn pre_commit_fails_on_a_policy_that_loosens_a_recorded_call_and_passes_otherwise() {
    let Some(pre_commit) = pre_commit() else {
        return;
    };
    let sandbox = Sandbox::new();
    let repo = &sandbox.ws;
    let policy = stdout(
        &sandbox
            .bare()
            .args(["policy", "show", "--builtin"])
            .output()
            .unwrap(),
    );
    sandbox.write("gavel.toml", &policy);
    sandbox.write("gavel.cases.toml", CASES);
    // The reference record: a session under this policy, exported.
    record(&sandbox, "r1", "read_file", json!({"path": "notes.txt"}));
    record(
        &sandbox,
        "w1",
        "write_file",
        json!({"path": "out.txt", "content": "x"}),
    );
    let export = sandbox.gavel(&["export"]).output().unwrap();
    assert_eq!(code(&export), 0, "{}", stderr(&export));
    sandbox.write("gavel.reference.jsonl", &stdout(&export));

    let (hooks, rev) = hooks_repository(&sandbox);
    let ids = [
        "gavel-policy-validate",
        "gavel-policy-lint",
        "gavel-policy-test",
        "gavel-replay",
    ];
    let hooks_list: Vec<String> = ids.iter().map(|id| format!("      - id: {id}\n")).collect();
    sandbox.write(
        ".pre-commit-config.yaml",
        &format!(
            "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n{}",
            hooks.display(),
            hooks_list.concat()
        ),
    );
    git(repo, &["init", "-q"]);
    git(repo, &["add", "."]);
    git(
        repo,
        &["commit", "-q", "-m", "policy, cases, reference record"],
    );

    let passing = run_hooks(&pre_commit, &sandbox, repo);
    let all_passed = [
        ("gavel policy validate", "Passed"),
        ("gavel policy lint", "Passed"),
        ("gavel policy test", "Passed"),
        ("gavel replay", "Passed"),
    ]
    .map(|(a, b)| (a.to_owned(), b.to_owned()));
    assert_eq!(
        verdicts(&passing),
        all_passed,
        "stdout: {}\nstderr: {}",
        stdout(&passing),
        stderr(&passing)
    );
    assert_eq!(code(&passing), 0);

    // The policy now allows the write the record shows was asked about.
    let loosened = policy.replacen("[[rules]]", &format!("{LOOSENING}[[rules]]"), 1);
    assert_ne!(loosened, policy);
    sandbox.write("gavel.toml", &loosened);
    git(repo, &["commit", "-q", "-am", "allow writes"]);
    let failing = run_hooks(&pre_commit, &sandbox, repo);
    let text = stdout(&failing);
    assert_eq!(
        code(&failing),
        1,
        "stdout: {text}\nstderr: {}",
        stderr(&failing)
    );
    let mut expected = all_passed.clone();
    expected[3].1 = "Failed".to_owned();
    assert_eq!(verdicts(&failing), expected, "{text}");
    assert!(text.contains("- hook id: gavel-replay"), "{text}");
    assert!(
        text.contains("loosened 1") && text.contains("write.inside"),
        "the replay says what loosened: {text}"
    );
}
