//! `gavel doctor` through the real binary in a temporary git repository: a
//! workspace set up by `gavel init claude-code` passes; then each thing
//! broken (the database's mode, the `.gitignore` line, the hook's binary)
//! is named with what to do, and the exit turns 1. The issue's first-hour
//! trap: `init` from a build folder, then `cargo clean`, then a hook call.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{Sandbox, code, copy_gavel, hook_payload, output, stderr, stdout};

/// A sandbox whose workspace is a git repository, with a home folder of
/// its own (no user-level hooks).
fn repo() -> Sandbox {
    let sandbox = Sandbox::new();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&sandbox.ws)
        .output()
        .expect("git runs");
    assert!(
        git.status.success(),
        "{}",
        String::from_utf8_lossy(&git.stderr)
    );
    std::fs::create_dir(sandbox.root.join("home")).unwrap();
    sandbox
}

/// `gavel ARGS --workspace WS` run by `binary`, with the sandbox's home,
/// no gavel on `PATH` and the workspace's own database.
fn gavel(sandbox: &Sandbox, binary: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(binary);
    cmd.args(args)
        .arg("--workspace")
        .arg(&sandbox.ws)
        .current_dir(&sandbox.ws)
        .env("HOME", sandbox.root.join("home"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GAVEL_ADMIN_POLICY")
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env_remove("GAVEL_DB")
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_CHECKPOINT_EVERY")
        .env_remove("COLUMNS");
    cmd
}

/// A Claude Code `PreToolUse` for a read of `notes.txt`, through `binary`.
fn read_call(sandbox: &Sandbox, binary: &Path) {
    let mut payload = hook_payload(sandbox, "pre_tool_use.json");
    payload["tool_name"] = "Read".into();
    payload["tool_input"] =
        serde_json::json!({"file_path": sandbox.ws.join("notes.txt").to_string_lossy()});
    let input = sandbox.root.join("payload.json");
    std::fs::write(&input, payload.to_string()).unwrap();
    let out = output(
        gavel(sandbox, binary, &["hook", "claude-code"])
            .stdin(std::fs::File::open(&input).unwrap()),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("\"allow\""), "{}", stdout(&out));
}

/// `gavel doctor --format json` by `binary`: its exit and checks.
fn doctor(sandbox: &Sandbox, binary: &Path) -> (i32, Vec<Value>) {
    let out = output(&mut gavel(sandbox, binary, &["doctor", "--format", "json"]));
    let report: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
    assert_eq!(report["ok"], code(&out) == 0, "{report}");
    (code(&out), report["checks"].as_array().unwrap().clone())
}

/// The status of the check called `name` (panics when it is not there once).
fn status<'a>(checks: &'a [Value], name: &str) -> &'a Value {
    let found: Vec<&Value> = checks.iter().filter(|c| c["check"] == name).collect();
    assert_eq!(found.len(), 1, "{name}: {checks:#?}");
    found[0]
}

#[test]
fn doctor_passes_an_initialised_workspace_and_names_each_thing_broken() {
    let sandbox = repo();
    // gavel installed outside any build folder.
    let bin = copy_gavel(&sandbox.root.join("bin"));
    let out = output(&mut gavel(&sandbox, &bin, &["init", "claude-code"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    read_call(&sandbox, &bin);

    let (exit, checks) = doctor(&sandbox, &bin);
    assert_eq!(exit, 0, "{checks:#?}");
    for check in &checks {
        assert_eq!(check["status"], "ok", "{checks:#?}");
    }
    for name in [
        "hooks claude-code",
        "policy",
        "policy lint",
        "log",
        "checkpoint",
        "git",
        "modes",
    ] {
        status(&checks, name);
    }

    // The database readable by others.
    let db = sandbox.ws.join(".gavel/audit.db");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    // `.gavel/` no longer ignored.
    let ignore = std::fs::read_to_string(sandbox.ws.join(".gitignore")).unwrap();
    let kept: String = ignore
        .lines()
        .filter(|l| l.trim() != ".gavel/")
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(sandbox.ws.join(".gitignore"), kept).unwrap();
    // The hook pointed at a binary that is not there.
    let settings = sandbox.ws.join(".claude/settings.json");
    let text = std::fs::read_to_string(&settings).unwrap();
    let missing = sandbox.root.join("gone/gavel");
    std::fs::write(
        &settings,
        text.replace(
            &bin.to_string_lossy().to_string(),
            &missing.to_string_lossy(),
        ),
    )
    .unwrap();

    let (exit, checks) = doctor(&sandbox, &bin);
    assert_eq!(exit, 1, "{checks:#?}");
    let modes = status(&checks, "modes");
    assert_eq!(modes["status"], "fail");
    assert!(
        modes["message"].as_str().unwrap().contains("audit.db")
            && modes["message"].as_str().unwrap().contains("644"),
        "{modes}"
    );
    assert!(
        modes["fix"].as_str().unwrap().contains("chmod 600"),
        "{modes}"
    );
    let git = status(&checks, "git");
    assert_eq!(git["status"], "fail");
    assert!(
        git["message"].as_str().unwrap().contains("not ignored"),
        "{git}"
    );
    let hooks = status(&checks, "hooks claude-code");
    assert_eq!(hooks["status"], "fail");
    assert!(
        hooks["message"]
            .as_str()
            .unwrap()
            .contains(&*missing.to_string_lossy()),
        "{hooks}"
    );
    assert!(
        hooks["fix"]
            .as_str()
            .unwrap()
            .contains("gavel init claude-code --force"),
        "{hooks}"
    );
    // The same, for people: one line per check, then the counts.
    let out = output(&mut gavel(&sandbox, &bin, &["doctor"]));
    assert_eq!(code(&out), 1);
    let text = stdout(&out);
    for line in [
        "fail  hooks claude-code: ",
        "fail  git: ",
        "fail  modes: ",
        "ok    policy: ",
        "ok    log: ",
    ] {
        assert!(text.lines().any(|l| l.starts_with(line)), "{line}\n{text}");
    }
    assert!(text.contains("3 fail"), "{text}");
    // doctor changed nothing.
    let mode = std::fs::metadata(&db).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
}

#[test]
fn doctor_says_what_is_missing_in_an_empty_workspace() {
    let sandbox = repo();
    let bin = copy_gavel(&sandbox.root.join("bin"));
    let (exit, checks) = doctor(&sandbox, &bin);
    // `.gavel/` is not ignored yet: the first call would make a record git commits.
    assert_eq!(exit, 1, "{checks:#?}");
    let hooks = status(&checks, "hooks");
    assert_eq!(hooks["status"], "warn");
    assert!(
        hooks["fix"].as_str().unwrap().contains("gavel init"),
        "{hooks}"
    );
    // No log yet: nothing to verify.
    assert_eq!(status(&checks, "log")["status"], "ok");
    assert_eq!(status(&checks, "git")["status"], "fail");
    // A log with no checkpoint: a cut tail could not be detected.
    let out = output(
        gavel(
            &sandbox,
            &bin,
            &["run", "read_file", r#"{"path":"notes.txt"}"#],
        )
        .env("GAVEL_CHECKPOINT_EVERY", "0"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (_, checks) = doctor(&sandbox, &bin);
    let checkpoint = status(&checks, "checkpoint");
    assert_eq!(checkpoint["status"], "warn", "{checkpoint}");
    assert!(
        checkpoint["fix"]
            .as_str()
            .unwrap()
            .contains("gavel checkpoint --key"),
        "{checkpoint}"
    );
}

/// A layer above the project is named; one that cannot be used fails the
/// policy check, naming its file (every call would fail closed).
#[test]
fn doctor_names_the_layers_and_fails_on_an_unusable_one() {
    let sandbox = repo();
    let bin = copy_gavel(&sandbox.root.join("bin"));
    let dir = sandbox.root.join("home/.config/gavel");
    std::fs::create_dir_all(&dir).unwrap();
    let layer = dir.join("policy.toml");
    std::fs::write(
        &layer,
        "name = \"mine\"\n[[rules]]\nid = \"mine.no_curl\"\naction = \"deny\"\ntools = [\"bash\"]\ncommands = [{ program = [\"curl\"] }]\nreason = \"no\"\n",
    )
    .unwrap();
    let (_, checks) = doctor(&sandbox, &bin);
    let layers = status(&checks, "policy layers");
    assert_eq!(layers["status"], "ok", "{layers}");
    assert!(
        layers["message"]
            .as_str()
            .unwrap()
            .contains(&layer.display().to_string()),
        "{layers}"
    );
    std::fs::write(&layer, "name = \"mine\"\nrules = 3\n").unwrap();
    let (exit, checks) = doctor(&sandbox, &bin);
    assert_eq!(exit, 1);
    let policy = status(&checks, "policy");
    assert_eq!(policy["status"], "fail", "{policy}");
    assert!(
        policy["message"]
            .as_str()
            .unwrap()
            .contains(&layer.display().to_string()),
        "{policy}"
    );
}

/// Issue 30, done when: in a fresh git repository, `gavel init claude-code`
/// from a build folder, then `cargo clean` of that build, then a hook call.
/// `init` warned; the hook no longer runs gavel; `doctor` and `init --check`
/// both name the broken hook.
#[test]
fn after_cargo_clean_of_the_build_init_used_doctor_and_check_name_the_broken_hook() {
    let sandbox = repo();
    let build = sandbox.root.join("project/target/release");
    let built = copy_gavel(&build);
    let out = output(&mut gavel(&sandbox, &built, &["init", "claude-code"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("build folder"), "{}", stderr(&out));
    read_call(&sandbox, &built);
    // Before the clean, doctor already warns about where the hooks point.
    let (exit, checks) = doctor(&sandbox, &built);
    assert_eq!(exit, 0, "{checks:#?}");
    let hooks = status(&checks, "hooks claude-code");
    assert_eq!(hooks["status"], "warn", "{hooks}");
    assert!(
        hooks["message"].as_str().unwrap().contains("build folder"),
        "{hooks}"
    );

    // `cargo clean`.
    std::fs::remove_dir_all(sandbox.root.join("project/target")).unwrap();

    // A hook call, as Claude Code makes it: the command from the settings, by a shell.
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(sandbox.ws.join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    let command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let hook = Command::new("sh")
        .args(["-c", &command])
        .current_dir(&sandbox.ws)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&hook), 127, "the hook no longer runs gavel: {command}");

    // Another gavel (the one under test) diagnoses it.
    let under_test = Path::new(env!("CARGO_BIN_EXE_gavel"));
    let (exit, checks) = doctor(&sandbox, under_test);
    assert_eq!(exit, 1, "{checks:#?}");
    let hooks = status(&checks, "hooks claude-code");
    assert_eq!(hooks["status"], "fail", "{hooks}");
    assert!(
        hooks["message"]
            .as_str()
            .unwrap()
            .contains(&*built.to_string_lossy()),
        "{hooks}"
    );
    let out = output(&mut gavel(
        &sandbox,
        under_test,
        &["init", "claude-code", "--check"],
    ));
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(stdout(&out).contains("BROKEN"), "{}", stdout(&out));
}
