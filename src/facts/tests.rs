use super::*;
use std::os::unix::fs::symlink;

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let ws = Workspace::open(&dir.path().join("ws")).unwrap();
    (dir, ws)
}

#[test]
fn a_long_commands_parse_is_recorded_by_digest_and_restored_exactly() {
    let (_dir, ws) = workspace();
    let command = format!("echo {} > out.txt", "word ".repeat(INLINE_PARSE_LIMIT / 4));
    let request = ToolRequest::new("c", "bash", serde_json::json!({ "command": command }));
    let facts = ws.facts(&request);
    let mut recorded = facts.for_record(&request);
    assert!(recorded.shell.is_none());
    assert_eq!(recorded.paths, facts.paths);
    let bytes = serde_json::to_vec(&recorded).unwrap();
    assert!(bytes.len() < 2048, "{} bytes", bytes.len());
    assert_eq!(recorded.restore(&request.arguments), Some(true));
    assert_eq!(recorded.shell, facts.shell);
    // Another command under the same digest is not the parse that decided.
    let mut forged = facts.for_record(&request);
    let other = serde_json::json!({ "command": "echo other" });
    assert_eq!(forged.restore(&other), Some(false));
    // Short commands keep their parse inline.
    let short = ToolRequest::new("c", "bash", serde_json::json!({ "command": "ls" }));
    let mut inline = ws.facts(&short).for_record(&short);
    assert!(inline.shell.is_some());
    assert_eq!(inline.restore(&short.arguments), None);
}

#[test]
fn static_prefix_stops_before_the_first_wildcard() {
    assert_eq!(static_prefix("../outside/*.txt"), "../outside");
    assert_eq!(static_prefix("src/**/*.rs"), "src");
    assert_eq!(static_prefix("*.rs"), ".");
    assert_eq!(static_prefix("/etc/*"), "/etc");
    assert_eq!(static_prefix("/*"), "/");
    assert_eq!(static_prefix("README.md"), "README.md");
}

#[test]
fn traversal_and_absolute_paths_are_outside() {
    let (_dir, ws) = workspace();
    assert!(ws.path_fact("a/b.txt", "a/b.txt").inside);
    assert!(!ws.path_fact("../x", "../x").inside);
    assert!(!ws.path_fact("/etc/hosts", "/etc/hosts").inside);
    assert!(ws.path_fact("a/../b", "a/../b").inside);
    assert_eq!(ws.path_fact(".", ".").relative.as_deref(), Some("."));
}

#[test]
fn symlinks_are_followed_before_dotdot() {
    let (dir, ws) = workspace();
    std::fs::create_dir(dir.path().join("outside")).unwrap();
    symlink(dir.path().join("outside"), ws.root().join("link")).unwrap();
    assert!(!ws.path_fact("link/new.txt", "link/new.txt").inside);
    // `inner/..` where inner points outside: `..` applies to the target.
    std::fs::create_dir_all(dir.path().join("outside/deep")).unwrap();
    symlink(dir.path().join("outside/deep"), ws.root().join("inner")).unwrap();
    assert!(!ws.path_fact("inner/../x", "inner/../x").inside);
}

#[test]
fn climbing_out_of_a_missing_folder_follows_symlinks_again() {
    let (dir, ws) = workspace();
    std::fs::create_dir(dir.path().join("outside")).unwrap();
    symlink(dir.path().join("outside"), ws.root().join("link_out")).unwrap();
    let fact = ws.path_fact("nope/../link_out/secret.txt", "nope/../link_out/secret.txt");
    assert!(!fact.inside, "{fact:?}");
    assert!(
        ws.path_fact("nope/deeper/../../a.txt", "nope/deeper/../../a.txt")
            .inside
    );
}

#[test]
fn a_glob_that_climbs_after_a_wildcard_is_outside() {
    let (_dir, ws) = workspace();
    let request = ToolRequest::new("g", "glob", serde_json::json!({"pattern": "*/../../etc/*"}));
    assert!(ws.facts(&request).paths.iter().any(|p| !p.inside));
    let request = ToolRequest::new("g", "glob", serde_json::json!({"pattern": "src/**/*.rs"}));
    assert!(ws.facts(&request).paths.iter().all(|p| p.inside));
}

fn glob_outside(ws: &Workspace, pattern: &str) -> bool {
    let request = ToolRequest::new("g", "glob", serde_json::json!({ "pattern": pattern }));
    ws.facts(&request).paths.iter().any(|p| !p.inside)
}

#[test]
fn a_glob_is_judged_by_what_it_could_match() {
    let (dir, ws) = workspace();
    std::fs::create_dir_all(ws.root().join("src/deep")).unwrap();
    std::fs::create_dir(dir.path().join("outside")).unwrap();
    std::fs::write(dir.path().join("outside/secret.txt"), "x").unwrap();
    for pattern in [
        "{..,x}/{..,x}/etc/*",
        "[.][.]/*",
        ".\\./*",
        "src/{..,x}/../*",
    ] {
        assert!(glob_outside(&ws, pattern), "{pattern}");
    }
    for pattern in ["src/**/*.rs", "*.md", "{src,docs}/*", ".*"] {
        assert!(!glob_outside(&ws, pattern), "{pattern}");
    }
    // A wildcard that matches a symlink leading out.
    symlink(dir.path().join("outside"), ws.root().join("src/link")).unwrap();
    assert!(glob_outside(&ws, "*/*/secret.txt"));
    assert!(glob_outside(&ws, "src/**/*.txt"));
    assert!(glob_outside(&ws, "s?c/l*/*"));
    // What matters is what the pattern matches: nothing through the
    // link ends in `.rs`.
    assert!(!glob_outside(&ws, "**/*.rs"));
    assert!(!glob_outside(&ws, "src/**/*.rs"));
}

fn bash_facts(ws: &Workspace, command: &str) -> Vec<PathFact> {
    let request = ToolRequest::new("b", "bash", serde_json::json!({ "command": command }));
    ws.facts(&request).paths
}

fn resolves_to(facts: &[PathFact], want: &str) -> bool {
    facts.iter().any(|p| p.resolved.as_deref() == Some(want))
}

#[test]
fn shell_arguments_operands_and_cds_are_resolved() {
    let (_dir, ws) = workspace();
    std::fs::create_dir(ws.root().join(".gavel")).unwrap();
    std::fs::write(ws.root().join(".gavel/audit.db"), "x").unwrap();
    std::fs::write(ws.root().join("gavel.toml"), "x").unwrap();
    let root = ws.root().to_string_lossy().into_owned();
    let db = format!("{root}/.gavel/audit.db");
    assert!(resolves_to(
        &bash_facts(&ws, "dd if=x of=//dev/sda"),
        "/dev/sda"
    ));
    assert!(resolves_to(
        &bash_facts(&ws, "cd /dev; echo x > sda"),
        "/dev/sda"
    ));
    assert!(resolves_to(
        &bash_facts(&ws, "cd .gavel && rm audit.db"),
        &db
    ));
    assert!(resolves_to(
        &bash_facts(&ws, "rm ./.gavel/../.gavel/audit.db"),
        &db
    ));
    assert!(resolves_to(&bash_facts(&ws, "rm {.gavel,x}/audit.db"), &db));
    assert!(resolves_to(&bash_facts(&ws, "rm .g*/audit.db"), &db));
    assert!(resolves_to(
        &bash_facts(&ws, "git diff --output=.gavel/audit.db"),
        &db
    ));
    assert!(resolves_to(
        &bash_facts(&ws, "ls *"),
        &format!("{root}/gavel.toml")
    ));
    assert!(!resolves_to(&bash_facts(&ws, "ls */audit.db"), &db));
    // A `cd` to a folder not known: relative paths after it fail closed.
    let after = bash_facts(&ws, "cd $X; rm audit.db");
    assert!(
        after
            .iter()
            .any(|p| p.requested == "audit.db" && p.resolved.is_none())
    );
}

#[test]
fn a_pattern_over_a_symlink_loop_is_bounded() {
    let (_dir, ws) = workspace();
    symlink(".", ws.root().join("loop")).unwrap();
    let request = ToolRequest::new(
        "g",
        "glob",
        serde_json::json!({ "pattern": format!("{}x", "*/".repeat(50_000)) }),
    );
    let facts = ws.facts(&request);
    assert!(facts.paths.len() <= MAX_PATHS + 1);
}

#[test]
fn long_paths_and_many_paths_are_bounded() {
    let (_dir, ws) = workspace();
    let long = "a/".repeat(400_000);
    let facts = bash_facts(&ws, &format!("cat {long}"));
    assert!(
        facts
            .iter()
            .any(|p| p.resolved.is_none() && p.error.is_some())
    );
    let many: String = (0..MAX_PATHS + 10).map(|i| format!(" f{i}")).collect();
    let facts = bash_facts(&ws, &format!("cat{many}"));
    assert_eq!(facts.len(), MAX_PATHS + 1);
    assert!(
        facts
            .last()
            .unwrap()
            .error
            .as_deref()
            .unwrap()
            .contains("more than")
    );
}

#[test]
fn symlink_loops_fail_closed() {
    let (_dir, ws) = workspace();
    symlink("b", ws.root().join("a")).unwrap();
    symlink("a", ws.root().join("b")).unwrap();
    let fact = ws.path_fact("a/x", "a/x");
    assert!(!fact.inside);
    assert!(fact.error.is_some());
}

proptest::proptest! {
    // Each case builds a workspace on disk: 64 cases in a plain run
    // (`PROPTEST_CASES` sets more; CI runs 256).
    #![proptest_config(proptest::test_runner::Config::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(64)
    ))]
    #[test]
    fn gathering_facts_never_panics(text in "[a-c ./*?{},\\[\\]$~>;&|-]{0,40}") {
        let (_dir, ws) = workspace();
        std::fs::create_dir(ws.root().join("a")).unwrap();
        symlink("..", ws.root().join("b")).unwrap();
        for (tool, field) in [("bash", "command"), ("glob", "pattern"), ("read_file", "path")] {
            let request = ToolRequest::new("p", tool, serde_json::json!({ field: text }));
            let _ = ws.facts(&request);
            let _ = lexical_facts(&request);
        }
    }
}
