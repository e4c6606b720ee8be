//! `gavel exec`: GTFOBins-style escapes, each allowed by the policy under
//! `read-only` and under `workspace-write`, recorded through the Claude Code
//! hook (which decides and records without running anything), then run
//! through `gavel exec`. Every effect is checked from outside: the
//! filesystem, and whether a listening socket got a connection. The tests
//! run as root on CI: the sandbox confines root too.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Output;

use serde_json::json;

use crate::support::{Sandbox, code, stderr, stdout};

const PROFILES: [&str; 2] = ["read-only", "workspace-write"];

/// A workspace whose policy allows every `perl` command under `profile`,
/// with the files the sandbox must protect in place.
fn workspace(profile: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.write(
        "gavel.toml",
        &format!(
            "name = \"escapes\"\n\
             [[rules]]\nid = \"perl.contained\"\naction = \"allow\"\ntools = [\"bash\"]\n\
             commands = [{{ program = [\"perl\"] }}]\nsandbox = \"{profile}\"\nreason = \"contained\"\n\
             [[rules]]\nid = \"cat.plain\"\naction = \"allow\"\ntools = [\"bash\"]\n\
             command_prefix = [[\"cat\"]]\nreason = \"reads\"\n"
        ),
    );
    sb.write(".git/config", "[core]\n");
    std::fs::create_dir_all(sb.ws.join(".git/hooks")).unwrap();
    sb
}

/// Decides and records `command` as call `id` through the Claude Code
/// hook; returns the decision it answered.
fn decide(sb: &Sandbox, id: &str, command: &str) -> String {
    let event = json!({
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": id,
        "session_id": "sandbox-tests",
        "cwd": sb.ws,
    });
    let output = sb
        .gavel(&["hook", "claude-code"])
        .write_stdin(event.to_string())
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let answer: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    answer["hookSpecificOutput"]["permissionDecision"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn exec(sb: &Sandbox, id: &str) -> Output {
    sb.gavel(&["exec", "--call-id", id]).output().unwrap()
}

/// `gavel exec --call-id ID -- COMMAND`: the command last.
fn exec_given(sb: &Sandbox, id: &str, command: &str) -> Output {
    sb.bare()
        .arg("--workspace")
        .arg(&sb.ws)
        .arg("--db")
        .arg(&sb.db)
        .args(["exec", "--call-id", id, "--", command])
        .output()
        .unwrap()
}

/// Decides `script` (Perl) allowed and runs it through `gavel exec`.
fn escape(sb: &Sandbox, id: &str, script: &str) -> Output {
    let command = format!("perl -e '{script}'");
    assert_eq!(decide(sb, id, &command), "allow", "{command}");
    let output = exec(sb, id);
    assert!(
        matches!(code(&output), 0..=123),
        "{id}: gavel exec refused: {}",
        stderr(&output)
    );
    output
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn writes_renames_deletes_and_mode_changes_outside_the_workspace_have_no_effect() {
    for profile in PROFILES {
        let sb = workspace(profile);
        let out = sb.outside.display().to_string();
        let secret = sb.outside.join("secret.txt");
        let before = std::fs::metadata(&secret).unwrap().modified().unwrap();
        let tmp_marker = format!("/tmp/gavel-sandbox-escape-{}", std::process::id());
        let script = format!(
            "open(F, \">{out}/new.txt\"); open(G, \">>{out}/secret.txt\") and print G \"x\"; \
             rename(\"{out}/secret.txt\", \"{out}/moved.txt\"); unlink(\"{out}/secret.txt\"); \
             chmod(0777, \"{out}/secret.txt\"); chown(1, 1, \"{out}/secret.txt\"); \
             utime(1, 1, \"{out}/secret.txt\"); mkdir(\"{out}/dir\"); \
             symlink(\"/etc/passwd\", \"{out}/link\"); link(\"{out}/secret.txt\", \"{out}/hard\"); \
             open(T, \">{tmp_marker}\"); truncate(\"{out}/secret.txt\", 0);"
        );
        escape(&sb, "outside", &script);
        let mut names: Vec<String> = std::fs::read_dir(&sb.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["secret.txt"], "{profile}");
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "top secret\n");
        assert_eq!(mode(&secret), 0o644, "{profile}");
        assert_eq!(
            std::fs::metadata(&secret).unwrap().modified().unwrap(),
            before
        );
        assert!(
            !Path::new(&tmp_marker).exists(),
            "{profile}: wrote the shared /tmp"
        );
    }
}

#[test]
fn gavel_files_git_config_and_hooks_are_never_writable() {
    for profile in PROFILES {
        let sb = workspace(profile);
        let policy = sb.read("gavel.toml");
        let script = "open(A, \">>gavel.toml\") and print A \"x\"; chmod(0777, \"gavel.toml\"); \
             rename(\"gavel.toml\", \"moved.toml\"); unlink(\"gavel.toml\"); \
             open(B, \">.git/hooks/pre-commit\"); chmod(0755, \".git/hooks/pre-commit\"); \
             open(C, \">>.git/config\") and print C \"[core]\\n\\tfsmonitor = touch /tmp/x\\n\"; \
             rename(\".git/hooks\", \"hooks-moved\"); mkdir(\".gavel/evil\"); \
             rename(\".gavel\", \"gavel-moved\");";
        escape(&sb, "own-files", script);
        assert_eq!(sb.read("gavel.toml"), policy, "{profile}");
        assert_eq!(mode(&sb.ws.join("gavel.toml")), 0o644, "{profile}");
        assert_eq!(sb.read(".git/config"), "[core]\n", "{profile}");
        assert_eq!(
            std::fs::read_dir(sb.ws.join(".git/hooks")).unwrap().count(),
            0,
            "{profile}"
        );
        assert!(!sb.ws.join(".gavel/evil").exists(), "{profile}");
        assert!(!sb.ws.join("moved.toml").exists() && !sb.ws.join("hooks-moved").exists());
        assert!(!sb.ws.join("gavel-moved").exists(), "{profile}");
    }
}

#[test]
fn writes_inside_the_workspace_follow_the_profile() {
    for profile in PROFILES {
        let sb = workspace(profile);
        let script = "open(F, \">made.txt\") and print F \"made\"; close(F); \
             open(T, \">$ENV{TMPDIR}/t\") and print \"tmp ok\\n\"; \
             unlink(\"notes.txt\"); chmod(0600, \"notes.txt\");";
        let output = escape(&sb, "inside", script);
        let writable = profile == "workspace-write";
        assert_eq!(sb.ws.join("made.txt").exists(), writable, "{profile}");
        assert_eq!(sb.ws.join("notes.txt").exists(), !writable, "{profile}");
        assert_eq!(stdout(&output).contains("tmp ok"), writable, "{profile}");
        // The private temporary folder is gone afterwards.
        let tmp = sb.ws.join(".gavel/tmp");
        assert!(!tmp.exists() || std::fs::read_dir(&tmp).unwrap().count() == 0);
    }
}

#[test]
fn symlinks_out_of_the_workspace_do_not_lead_out() {
    for profile in PROFILES {
        let sb = workspace(profile);
        std::os::unix::fs::symlink(&sb.outside, sb.ws.join("door")).unwrap();
        let out = sb.outside.display().to_string();
        let script = format!(
            "open(F, \">door/through.txt\"); open(S, \"<door/secret.txt\") and print <S>; \
             symlink(\"{out}\", \"door2\"); open(G, \">door2/through2.txt\"); \
             rename(\"door/secret.txt\", \"stolen.txt\");"
        );
        let output = escape(&sb, "symlinks", &script);
        assert!(!sb.outside.join("through.txt").exists(), "{profile}");
        assert!(!sb.outside.join("through2.txt").exists(), "{profile}");
        assert!(sb.outside.join("secret.txt").exists(), "{profile}");
        assert!(
            !stdout(&output).contains("top secret"),
            "{profile}: read outside"
        );
    }
}

#[test]
fn programs_outside_the_exec_paths_do_not_run() {
    for profile in PROFILES {
        let sb = workspace(profile);
        for (dir, name) in [(&sb.ws, "tool.sh"), (&sb.outside, "tool.sh")] {
            let path = dir.join(name);
            std::fs::write(&path, "#!/bin/sh\necho RAN-UNCONTAINED\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let copy = sb.ws.join("mytrue");
        std::fs::copy("/bin/echo", &copy).unwrap();
        let out = sb.outside.display().to_string();
        let script = format!(
            "system(\"./tool.sh\"); system(\"{out}/tool.sh\"); system(\"./mytrue\", \"RAN-UNCONTAINED\"); \
             print \"done\\n\";"
        );
        let output = escape(&sb, "exec", &script);
        assert!(
            stdout(&output).contains("done"),
            "{profile}: {}",
            stderr(&output)
        );
        assert!(
            !stdout(&output).contains("RAN-UNCONTAINED"),
            "{profile}: {}",
            stdout(&output)
        );
    }
}

#[test]
fn tcp_connections_do_not_reach_a_listener() {
    for profile in PROFILES {
        let sb = workspace(profile);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let script = format!(
            "use Socket; socket(S, PF_INET, SOCK_STREAM, 6) and \
             connect(S, pack_sockaddr_in({port}, inet_aton(\"127.0.0.1\"))) and print \"CONNECTED\\n\"; \
             system(\"bash\", \"-c\", \"echo x > /dev/tcp/127.0.0.1/{port}\"); print \"done\\n\";"
        );
        let output = escape(&sb, "tcp", &script);
        assert!(
            stdout(&output).contains("done"),
            "{profile}: {}",
            stderr(&output)
        );
        listener.set_nonblocking(true).unwrap();
        match listener.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("{profile}: the listener got a connection: {other:?}"),
        }
        assert!(!stdout(&output).contains("CONNECTED"));
    }
}

#[test]
fn the_command_runs_with_its_own_output_and_exit_status() {
    let sb = workspace("read-only");
    let output = escape(
        &sb,
        "status",
        "print \"out\\n\"; print STDERR \"err\\n\"; exit 7;",
    );
    assert_eq!(code(&output), 7);
    assert_eq!(stdout(&output), "out\n");
    assert_eq!(stderr(&output), "err\n");
    // The command given explicitly must be the one decided, byte for byte.
    let command = "perl -e 'print \"again\\n\"'";
    assert_eq!(decide(&sb, "given", command), "allow");
    let output = exec_given(&sb, "given", command);
    assert_eq!((code(&output), stdout(&output).as_str()), (0, "again\n"));
}

#[test]
fn a_forged_reused_or_mismatched_call_id_runs_nothing() {
    let sb = workspace("workspace-write");
    let marker = "open(F, \">ran.txt\");";
    let refused = |output: &Output, what: &str| {
        assert_eq!(code(output), 125, "{what}: {}", stderr(output));
        assert_eq!(stderr(output).lines().count(), 1, "{what}: one line");
        assert!(!sb.ws.join("ran.txt").exists(), "{what}: it ran");
    };
    // Another command than the one decided.
    assert_eq!(decide(&sb, "decided", "perl -e 'print 1'"), "allow");
    // Unknown id.
    refused(&exec(&sb, "never-recorded"), "forged");
    let other = format!("perl -e '{marker}'");
    let output = exec_given(&sb, "decided", &other);
    refused(&output, "mismatch");
    let output = exec_given(&sb, "decided", "perl -e 'print 1' ");
    refused(&output, "one byte more");
    // An id used again for another command: the record refuses the second
    // call, and the id stays bound to the first command.
    assert_eq!(decide(&sb, "reused", "perl -e 'print 1'"), "allow");
    let event = json!({
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": other}, "tool_use_id": "reused",
        "session_id": "sandbox-tests", "cwd": sb.ws,
    });
    let again = sb
        .gavel(&["hook", "claude-code"])
        .write_stdin(event.to_string())
        .output()
        .unwrap();
    assert_ne!(code(&again), 0, "a second call under one id was recorded");
    refused(&exec_given(&sb, "reused", &other), "reused");
    // Denied, and allowed without a sandbox by a rule on an unprovable
    // command: neither runs.
    assert_eq!(decide(&sb, "denied", "touch ran.txt"), "deny");
    refused(&exec(&sb, "denied"), "denied");
}

#[test]
fn an_allow_without_a_sandbox_runs_read_only_only_when_proven() {
    let sb = workspace("workspace-write");
    assert_eq!(decide(&sb, "plain", "cat notes.txt"), "allow");
    let output = exec(&sb, "plain");
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout(&output), "hello from the workspace\n");
    let secret = sb.outside.join("secret.txt").display().to_string();
    assert_eq!(decide(&sb, "plain-out", &format!("cat {secret}")), "allow");
    let output = exec(&sb, "plain-out");
    assert_ne!(code(&output), 0);
    assert!(!stdout(&output).contains("top secret"), "read outside");
}

#[test]
fn without_landlock_nothing_runs_and_exec_says_why() {
    let sb = workspace("workspace-write");
    assert_eq!(
        decide(&sb, "nolandlock", "perl -e 'open(F, \">ran.txt\")'"),
        "allow"
    );
    // A seccomp filter answering ENOSYS to landlock_create_ruleset, as a
    // kernel without Landlock does, installed in gavel's process before it
    // starts: gavel cannot tell it from a real kernel.
    let filter = gavel::sandbox::seccomp::Filter::without_landlock();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gavel"));
    cmd.args(["exec", "--call-id", "nolandlock", "--workspace"])
        .arg(&sb.ws)
        .arg("--db")
        .arg(&sb.db)
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB");
    // SAFETY: installing the filter is two system calls, no allocation.
    unsafe {
        cmd.pre_exec(move || filter.install());
    }
    let output = cmd.output().unwrap();
    assert_eq!(code(&output), 124, "{}", stderr(&output));
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("enforcement unavailable") && err.contains("landlock"),
        "{err}"
    );
    assert!(!sb.ws.join("ran.txt").exists());
}

#[test]
fn the_decision_records_the_sandbox_and_its_digest() {
    let sb = workspace("read-only");
    assert_eq!(decide(&sb, "recorded", "perl -e 'print 1'"), "allow");
    assert_eq!(decide(&sb, "plain", "cat notes.txt"), "allow");
    let output = sb
        .gavel(&["show", "recorded", "--format", "json"])
        .output()
        .unwrap();
    let text = stdout(&output);
    let events: serde_json::Value = serde_json::from_str(&text).unwrap();
    let decision = events["events"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["kind"] == "decision")
        .unwrap_or_else(|| panic!("no decision in {text}"));
    let sandbox = &decision["payload"]["sandbox"];
    assert_eq!(sandbox["profile"], "read-only");
    let spec = gavel::sandbox::Spec::read_only();
    assert_eq!(sandbox["sha256"], spec.digest());
    assert_eq!(sandbox["spec"]["network"], false);
    assert_eq!(sandbox["enforcement"], "full", "this kernel enforces it");
    assert!(sandbox.get("implied").is_none(), "a rule named it");
    // A proven read-only command allowed by a rule naming no profile gets
    // `read-only`, marked implied.
    let output = sb
        .gavel(&["show", "plain", "--format", "json"])
        .output()
        .unwrap();
    let events: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let decision = events["events"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["kind"] == "decision")
        .unwrap();
    assert_eq!(decision["payload"]["sandbox"]["profile"], "read-only");
    assert_eq!(decision["payload"]["sandbox"]["implied"], true);
    // And the chain, with the new field, still verifies (gavel's verifier).
    let output = sb.gavel(&["verify"]).output().unwrap();
    assert_eq!(code(&output), 0, "{}", stdout(&output));
}

#[test]
fn doctor_reports_what_the_kernel_enforces() {
    let sb = workspace("read-only");
    let output = sb.gavel(&["doctor", "--format", "json"]).output().unwrap();
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "sandbox")
        .expect("a sandbox check");
    let abi = gavel::sandbox::kernel::landlock_abi();
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .contains(&format!("landlock ABI {abi}")),
        "{check}"
    );
    // This machine and CI have Landlock 6+, seccomp and user namespaces.
    if abi >= 6 {
        assert_eq!(check["status"], "ok", "{check}");
    }
}

#[test]
fn an_unknown_profile_or_a_sandbox_on_a_deny_is_refused_when_the_policy_loads() {
    let sb = Sandbox::new();
    let rule = |action: &str, profile: &str| {
        format!(
            "name = \"p\"\n[[rules]]\nid = \"r\"\naction = \"{action}\"\ntools = [\"bash\"]\n\
             commands = [{{ program = [\"perl\"] }}]\nsandbox = \"{profile}\"\nreason = \"x\"\n"
        )
    };
    let path = sb.write("p.toml", &rule("allow", "nope"));
    let output = sb
        .gavel(&["policy", "validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("unknown sandbox profile `nope`"),
        "{}",
        stderr(&output)
    );
    let path = sb.write("p.toml", &rule("deny", "read-only"));
    let output = sb
        .gavel(&["policy", "validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("only for allow rules"),
        "{}",
        stderr(&output)
    );
    // A profile of the policy's own, over a base, validates.
    let own = format!(
        "{}[sandbox.profiles.build]\nbase = \"workspace-write\"\nwrite = [\"~/.cache/x\"]\n",
        rule("allow", "build")
    );
    let path = sb.write("p.toml", &own);
    let output = sb
        .gavel(&["policy", "validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
}

#[test]
fn replay_counts_a_wider_sandbox_as_loosening() {
    let sb = workspace("read-only");
    assert_eq!(decide(&sb, "widen", "perl -e 'print 1'"), "allow");
    let wider = sb
        .read("gavel.toml")
        .replace("\"read-only\"", "\"workspace-write\"");
    let path = sb.write("wider.toml", &wider);
    let output = sb
        .gavel(&[
            "replay",
            "--policy",
            path.to_str().unwrap(),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let text = stdout(&output);
    assert_eq!(code(&output), 1, "{text}");
    assert!(text.contains("\"loosened\""), "{text}");
    // The same policy back: nothing moved.
    let output = sb.gavel(&["replay", "--format", "json"]).output().unwrap();
    assert_eq!(code(&output), 0, "{}", stdout(&output));
}

/// `gavel run` under Landlock hidden by a seccomp filter (as a kernel
/// without it answers): `gavel` is started inside the filter.
fn run_without_landlock(sb: &Sandbox, args: &[&str]) -> Output {
    let filter = gavel::sandbox::seccomp::Filter::without_landlock();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gavel"));
    cmd.args(args)
        .arg("--workspace")
        .arg(&sb.ws)
        .arg("--db")
        .arg(&sb.db)
        .env("GAVEL_CHECKPOINT_EVERY", "0")
        .env("XDG_DATA_HOME", sb.root.join("data"))
        .env("XDG_CONFIG_HOME", sb.root.join("config"))
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .env_remove("GAVEL_ADMIN_POLICY");
    // SAFETY: installing the filter is two system calls, no allocation.
    unsafe {
        cmd.pre_exec(move || filter.install());
    }
    cmd.output().unwrap()
}

/// The id of the newest call.
fn last_call_id(sb: &Sandbox) -> String {
    let output = sb.gavel(&["log", "--json"]).output().unwrap();
    let text = stdout(&output);
    let last = text.lines().last().unwrap_or_default();
    let row: serde_json::Value = serde_json::from_str(last).unwrap_or_else(|_| panic!("{last}"));
    row["call_id"].as_str().unwrap().to_owned()
}

/// The payloads of call `id`'s events of `kind`, as `gavel show --format
/// json` gives them.
fn events_of(sb: &Sandbox, id: &str, kind: &str) -> Vec<serde_json::Value> {
    let output = sb
        .gavel(&["show", id, "--format", "json"])
        .output()
        .unwrap();
    let events: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    events["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == kind)
        .map(|e| e["payload"].clone())
        .collect()
}

/// The decision of the newest call.
fn last_decision(sb: &Sandbox) -> serde_json::Value {
    events_of(sb, &last_call_id(sb), "decision").remove(0)
}

#[test]
fn run_executes_an_allowed_command_inside_its_sandbox() {
    let sb = workspace("workspace-write");
    let outside = sb.root.join("outside.txt");
    let script = format!(
        "perl -e 'open(F, \">inside.txt\") or die; print F 1; close F; open(G, \">{}\") or die \"refused: $!\\n\"'",
        outside.display()
    );
    let output = sb
        .gavel(&["run", "bash", &json!({ "command": script }).to_string()])
        .output()
        .unwrap();
    // The command ran (its write inside the workspace happened) and its
    // write outside was refused by the kernel: the call failed with the
    // command's own error.
    assert_eq!(sb.read("inside.txt"), "1");
    assert!(!outside.exists(), "written outside the sandbox");
    let text = stdout(&output);
    assert!(text.contains("refused: Read-only file system"), "{text}");
    let decision = last_decision(&sb);
    assert_eq!(decision["rule_id"], "perl.contained");
    assert_eq!(decision["sandbox"]["profile"], "workspace-write");
    assert_eq!(decision["sandbox"]["enforcement"], "full");
}

#[test]
fn run_contains_a_proven_read_only_command_read_only() {
    let sb = workspace("read-only");
    sb.write("notes.txt", "top\n");
    let output = sb
        .gavel(&["run", "bash", r#"{"command":"cat notes.txt"}"#])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(stdout(&output).contains("top"));
    let decision = last_decision(&sb);
    assert_eq!(decision["sandbox"]["implied"], true);
    assert_eq!(decision["sandbox"]["profile"], "read-only");
}

#[test]
fn without_landlock_a_contained_allow_is_asked_and_nothing_runs() {
    let sb = workspace("workspace-write");
    let command = json!({ "command": "perl -e 'open(F, \">ran.txt\")'" }).to_string();
    let output = run_without_landlock(&sb, &["run", "bash", &command, "--reject"]);
    assert_ne!(code(&output), 0);
    assert!(!sb.ws.join("ran.txt").exists(), "ran uncontained");
    let decision = last_decision(&sb);
    assert_eq!(decision["action"], "ask", "{decision}");
    assert_eq!(decision["rule_id"], "perl.contained");
    assert_eq!(decision["sandbox"]["enforcement"], "unavailable");
    let missing = decision["sandbox"]["missing"].to_string();
    assert!(missing.contains("landlock"), "{missing}");
    assert!(
        decision["reason"]
            .as_str()
            .unwrap()
            .contains("cannot enforce its sandbox"),
        "{decision}"
    );
    // The hook asks the client instead of allowing.
    let event = json!({
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "perl -e 1"},
        "tool_use_id": "hook-nolandlock",
        "session_id": "sandbox-tests",
        "cwd": sb.ws,
    });
    let filter = gavel::sandbox::seccomp::Filter::without_landlock();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gavel"));
    cmd.args(["hook", "claude-code", "--workspace"])
        .arg(&sb.ws)
        .arg("--db")
        .arg(&sb.db)
        .env("GAVEL_CHECKPOINT_EVERY", "0")
        .env("XDG_DATA_HOME", sb.root.join("data"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    // SAFETY: as above.
    unsafe {
        cmd.pre_exec(move || filter.install());
    }
    let mut child = cmd.spawn().unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "ask",
        "{answer}"
    );
}

#[test]
fn a_policy_may_deny_what_the_kernel_cannot_contain() {
    let sb = workspace("workspace-write");
    let policy = sb.read("gavel.toml");
    sb.write(
        "gavel.toml",
        &format!("{policy}[sandbox]\nunenforceable = \"deny\"\n"),
    );
    let command = json!({ "command": "perl -e 1" }).to_string();
    let output = run_without_landlock(&sb, &["run", "bash", &command, "--approve"]);
    assert_ne!(code(&output), 0);
    let decision = last_decision(&sb);
    assert_eq!(decision["action"], "deny", "{decision}");
    // `allow` is not a choice.
    sb.write(
        "gavel.toml",
        &format!("{policy}[sandbox]\nunenforceable = \"allow\"\n"),
    );
    let output = sb.gavel(&["policy", "validate"]).output().unwrap();
    assert_ne!(code(&output), 0);
    assert!(
        stderr(&output).contains("unenforceable"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_contained_command_cannot_read_gavels_record() {
    let sb = workspace("read-only");
    sb.write(".gavel/audit.db.redact-key", "secret-key");
    let script =
        "perl -e 'open(F, \"<.gavel/audit.db.redact-key\") or die \"hidden: $!\\n\"; print <F>'";
    let output = sb
        .gavel(&["run", "bash", &json!({ "command": script }).to_string()])
        .output()
        .unwrap();
    let text = stdout(&output);
    assert!(!text.contains("secret-key"), "{text}");
    assert!(text.contains("hidden:"), "{text}");
}

#[test]
fn a_writable_workspace_missing_what_must_stay_read_only_is_asked() {
    // No `.git`: a command that may write the workspace could make
    // `.git/config` (which names programs git runs) or `.git/hooks`.
    let sb = workspace("workspace-write");
    std::fs::remove_dir_all(sb.ws.join(".git")).unwrap();
    let command = json!({ "command": "perl -e 'open(F, \">made.txt\")'" }).to_string();
    let output = sb
        .gavel(&["run", "bash", &command, "--reject"])
        .output()
        .unwrap();
    assert_ne!(code(&output), 0);
    assert!(!sb.ws.join("made.txt").exists());
    let decision = last_decision(&sb);
    assert_eq!(decision["action"], "ask", "{decision}");
    assert_eq!(decision["sandbox"]["enforcement"], "unavailable");
    assert!(
        decision["sandbox"]["missing"].to_string().contains(".git"),
        "{decision}"
    );
}

/// A workspace under the coding-agent preset, as `gavel init` writes it.
fn preset_workspace() -> Sandbox {
    let sb = Sandbox::new();
    let output = sb
        .bare()
        .args(["policy", "show", "--preset", "coding-agent"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    sb.write("gavel.toml", &stdout(&output));
    sb.write(".git/config", "[core]\n");
    std::fs::create_dir_all(sb.ws.join(".git/hooks")).unwrap();
    sb
}

#[test]
fn the_preset_runs_a_build_contained_instead_of_asking() {
    let sb = preset_workspace();
    let outside = sb.root.join("outside.txt");
    sb.write(
        "Makefile",
        &format!(
            "all:\n\techo built > out.txt\n\t-echo escaped > {}\n\t-echo hook > .git/hooks/pre-commit\n",
            outside.display()
        ),
    );
    let output = sb
        .gavel(&["run", "bash", r#"{"command":"make 2>&1 | tail -5"}"#])
        .output()
        .unwrap();
    let decision = last_decision(&sb);
    assert_eq!(decision["rule_id"], "bash.contained_build", "{decision}");
    assert_eq!(decision["action"], "allow");
    assert_eq!(decision["sandbox"]["profile"], "build");
    assert_eq!(sb.read("out.txt"), "built\n", "{}", stdout(&output));
    assert!(!outside.exists(), "the build wrote outside the workspace");
    assert!(!sb.ws.join(".git/hooks/pre-commit").exists());
    // Without Landlock the same command is asked, and nothing runs.
    std::fs::remove_file(sb.ws.join("out.txt")).unwrap();
    let output = run_without_landlock(
        &sb,
        &[
            "run",
            "bash",
            r#"{"command":"make 2>&1 | tail -5"}"#,
            "--reject",
        ],
    );
    assert_ne!(code(&output), 0, "{}{}", stdout(&output), stderr(&output));
    assert!(!sb.ws.join("out.txt").exists());
    assert_eq!(last_decision(&sb)["action"], "ask");
}

#[test]
fn the_preset_runs_an_unprovable_read_only_looking_command_read_only() {
    let sb = preset_workspace();
    sb.write("a.txt", "hello\n");
    let command = "find . -name '*.txt' | xargs grep -n hello";
    let output = sb
        .gavel(&["run", "bash", &json!({ "command": command }).to_string()])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}{}", stdout(&output), stderr(&output));
    assert!(stdout(&output).contains("a.txt:1:hello"));
    let decision = last_decision(&sb);
    assert_eq!(decision["rule_id"], "bash.read_only", "{decision}");
    assert_eq!(decision["sandbox"]["profile"], "read-only");
    // One whose model says it writes is still asked.
    let output = sb
        .gavel(&[
            "run",
            "bash",
            r#"{"command":"sed -i s/hello/bye/ a.txt"}"#,
            "--reject",
        ])
        .output()
        .unwrap();
    assert_ne!(code(&output), 0);
    assert_eq!(last_decision(&sb)["action"], "ask");
    assert_eq!(sb.read("a.txt"), "hello\n");
}

/// Perl that tries a write outside, a removal outside and a socket, then
/// writes inside the workspace.
fn trespass(sb: &Sandbox) -> String {
    let outside = sb.root.join("outside.txt");
    std::fs::write(sb.root.join("victim.txt"), "v").unwrap();
    format!(
        "perl -e 'open(F, \">{out}\"); unlink(\"{victim}\"); socket(S, 2, 1, 0); open(G, \">inside.txt\") or die; print \"done\\n\"'",
        out = outside.display(),
        victim = sb.root.join("victim.txt").display(),
    )
}

#[test]
fn every_refused_attempt_is_recorded_on_its_call_when_gavel_runs_it() {
    let sb = workspace("workspace-write");
    let command = trespass(&sb);
    let output = sb
        .gavel(&["run", "bash", &json!({ "command": command }).to_string()])
        .output()
        .unwrap();
    assert!(stdout(&output).contains("done"), "{}", stdout(&output));
    assert!(!sb.root.join("outside.txt").exists());
    assert!(sb.root.join("victim.txt").exists());
    let id = last_call_id(&sb);
    let refused = events_of(&sb, &id, "refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    let attempts = refused[0]["attempts"].as_array().unwrap();
    let has = |op: &str, target: &str| {
        attempts.iter().any(|a| {
            a["operation"] == op
                && a["target"].as_str().unwrap().contains(target)
                && a["program"].as_str().unwrap().ends_with("perl")
        })
    };
    assert!(has("write", "outside.txt"), "{attempts:?}");
    assert!(has("remove", "victim.txt"), "{attempts:?}");
    assert!(has("network", "socket(inet)"), "{attempts:?}");
    assert!(
        !attempts
            .iter()
            .any(|a| a["target"].as_str().unwrap().ends_with("inside.txt")),
        "a permitted write is not a refusal: {attempts:?}"
    );
    // The result says it ran contained; explain shows what was refused.
    let output = sb.gavel(&["explain", &id]).output().unwrap();
    let text = stdout(&output);
    assert!(
        text.contains("REFUSED by the sandbox `workspace-write`"),
        "{text}"
    );
    assert!(text.contains("outside.txt"), "{text}");
    // `log` counts them on the call's row, in its table and its JSON; the
    // report shows them on the call and in its detail.
    let output = sb.gavel(&["log", "--format", "json"]).output().unwrap();
    let calls: Vec<serde_json::Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let listed = calls.iter().find(|c| c["call_id"] == id.as_str()).unwrap();
    let count = listed["refused"].as_u64().unwrap();
    assert_eq!(count, attempts.len() as u64, "{listed}");
    let table = stdout(&sb.gavel(&["log", "--wide"]).output().unwrap());
    assert!(table.contains(&format!("({count} refused)")), "{table}");
    let report = sb.root.join("report.html");
    let output = sb
        .gavel(&["report", "--html", report.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        html.contains(&format!("({count} refused by the sandbox)")),
        "the report's call row"
    );
    assert!(
        html.contains("Refused by the sandbox (seq"),
        "the call's detail"
    );
    // And the chain, with the new event, verifies.
    let output = sb.gavel(&["verify"]).output().unwrap();
    assert_eq!(code(&output), 0, "{}", stdout(&output));
}

#[test]
fn every_refused_attempt_is_recorded_on_its_call_when_gavel_exec_runs_it() {
    let sb = workspace("read-only");
    let command = trespass(&sb);
    assert_eq!(decide(&sb, "exec-refused", &command), "allow");
    let output = exec(&sb, "exec-refused");
    assert_ne!(code(&output), 124, "{}", stderr(&output));
    assert!(!sb.root.join("outside.txt").exists());
    // One event per attempt, each written while the command waited in the
    // call the sandbox refused: on record as soon as the command is over.
    let refused = events_of(&sb, "exec-refused", "refused");
    assert!(refused.len() >= 3, "{refused:?}");
    assert!(
        refused.iter().all(|r| r["profile"] == "read-only"),
        "{refused:?}"
    );
    assert!(
        refused
            .iter()
            .all(|r| r["attempts"].as_array().map(Vec::len) == Some(1))
    );
    let text: String = refused.iter().map(|r| r["attempts"].to_string()).collect();
    assert!(
        text.contains("outside.txt") && text.contains("victim.txt"),
        "{text}"
    );
    // Read-only: the write inside the workspace is refused too.
    assert!(text.contains("inside.txt"), "{text}");
}

#[test]
fn a_program_the_sandbox_may_not_execute_fails_as_bash_says_and_is_recorded() {
    let sb = Sandbox::new();
    sb.write(
        "gavel.toml",
        "name = \"tools\"\n\
         [[rules]]\nid = \"tool.contained\"\naction = \"allow\"\ntools = [\"bash\"]\n\
         commands = [{ program = [\"tool.sh\"] }]\nsandbox = \"read-only\"\nreason = \"contained\"\n",
    );
    let bin = sb.ws.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let tool = bin.join("tool.sh");
    std::fs::write(&tool, "#!/bin/sh\necho RAN-UNCONTAINED\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(decide(&sb, "tool", "tool.sh"), "allow");
    // Found on PATH in the workspace, which is not an exec path of
    // `read-only`: answered as bash answers a program it may not execute.
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let output = sb
        .gavel(&["exec", "--call-id", "tool"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert_eq!(code(&output), 126, "{}", stderr(&output));
    assert!(!stdout(&output).contains("RAN-UNCONTAINED"));
    assert!(
        stderr(&output).contains("tool.sh: Permission denied"),
        "{}",
        stderr(&output)
    );
    let refused = events_of(&sb, "tool", "refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    let attempt = &refused[0]["attempts"][0];
    assert_eq!(attempt["operation"], "exec", "{attempt}");
    assert!(
        attempt["target"]
            .as_str()
            .unwrap()
            .ends_with("/bin/tool.sh"),
        "{attempt}"
    );
}

/// The observer beside a contained command lets go of the command's
/// descriptors before the command starts: it holds none of the pipes its
/// caller reads the output from (its standard output and error, and one
/// more it was handed), so a client that reads the output to its end
/// never waits for the observer (checked from outside, in `/proc`).
#[test]
fn the_observer_holds_none_of_the_commands_pipes() {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let sb = workspace("read-only");
    assert_eq!(decide(&sb, "observer-fds", "perl -e 'sleep 30'"), "allow");
    // A pipe the launcher inherits beyond its standard three.
    let mut ends = [0; 2];
    // SAFETY: room for two descriptors.
    assert_eq!(
        unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) },
        0
    );
    let extra = ends[1];
    let mut command = sb.bare_std();
    command
        .args(["exec", "--call-id", "observer-fds", "--workspace"])
        .arg(&sb.ws)
        .arg("--db")
        .arg(&sb.db)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: one fcntl in the forked child: the pipe's end is inherited.
    unsafe {
        command.pre_exec(move || {
            libc::fcntl(extra, libc::F_SETFD, 0);
            Ok(())
        });
    }
    let mut child = command.spawn().expect("start gavel exec");
    // SAFETY: the test's own descriptors, the child holds its copy.
    unsafe { [libc::close(ends[0]), libc::close(ends[1])] };
    let pid = child.id().to_string();
    let proc_text = |path: String| std::fs::read_to_string(path).unwrap_or_default();
    // The command is running (the launcher has become it), and its one
    // child is the observer.
    let observer = (0..500).find_map(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        if proc_text(format!("/proc/{pid}/comm")).trim() != "perl" {
            return None;
        }
        std::fs::read_dir("/proc")
            .ok()?
            .flatten()
            .find_map(|entry| {
                let status = proc_text(format!("{}/status", entry.path().display()));
                status
                    .lines()
                    .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["PPid:", pid.as_str()])
                    .then(|| entry.path())
            })
    });
    let held: Vec<String> = observer
        .iter()
        .flat_map(|dir| {
            std::fs::read_dir(dir.join("fd"))
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .map(|target| target.display().to_string())
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    assert!(observer.is_some(), "no observer beside the command");
    assert!(
        !held.iter().any(|target| target.starts_with("pipe:")),
        "the observer holds a pipe: {held:?}"
    );
    assert_eq!(
        held.iter().filter(|t| *t == "/dev/null").count(),
        3,
        "{held:?}"
    );
}

#[test]
fn a_contained_command_cannot_read_its_observers_memory() {
    // The observer holds the launcher's old memory, the secret that let
    // the launcher's own `execve` past the filter among it.
    let sb = workspace("read-only");
    let script = "for $d (glob \"/proc/[0-9]*\") { open(C, \"$d/comm\") or next; $c = <C>; \
                  next unless $c =~ /gavel-observer/; print \"observer\\n\"; \
                  print open(M, \"$d/mem\") ? \"READ\\n\" : \"refused\\n\"; }";
    let output = escape(&sb, "observer-mem", script);
    let out = stdout(&output);
    assert!(out.contains("observer\nrefused\n"), "{out}");
    assert!(!out.contains("READ"), "{out}");
}
