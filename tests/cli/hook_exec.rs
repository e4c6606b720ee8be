//! The hooks rewrite a contained allow to run under `gavel exec`: each
//! client's answer carries the command rewritten as `'<gavel>' exec --db
//! '<db>' --call-id '<id>' -- '<command>'`, in the field its hook takes
//! (Claude Code and Codex `updatedInput`, Gemini CLI
//! `hookSpecificOutput.tool_input`, Copilot CLI `modifiedArgs`; Cursor's
//! answer takes none). The rewritten command, run by bash as the client
//! would run it, runs the original contained: its write outside the profile
//! is refused (checked on the filesystem), and its output and exit status
//! are its own. An allow without a sandbox is not rewritten; a tampered
//! rewrite runs nothing (exit 125).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::{Sandbox, code, json_lines, run_expecting, stderr, stdout};

/// A workspace whose policy allows `perl` under `profile`, `python3`
/// without a sandbox (a program without a model: not proven read-only),
/// `cat`, and asks for `rm`; with the files the sandbox protects in place.
fn workspace(profile: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.write(
        "gavel.toml",
        &format!(
            "name = \"hook-exec\"\n\
             [[rules]]\nid = \"perl.contained\"\naction = \"allow\"\ntools = [\"bash\"]\n\
             commands = [{{ program = [\"perl\"] }}]\nsandbox = \"{profile}\"\nreason = \"contained\"\n\
             [[rules]]\nid = \"python.plain\"\naction = \"allow\"\ntools = [\"bash\"]\n\
             commands = [{{ program = [\"python3\"] }}]\nreason = \"no sandbox\"\n\
             [[rules]]\nid = \"cat.plain\"\naction = \"allow\"\ntools = [\"bash\"]\n\
             command_prefix = [[\"cat\"]]\nreason = \"reads\"\n\
             [[rules]]\nid = \"rm.asked\"\naction = \"ask\"\ntools = [\"bash\"]\n\
             command_prefix = [[\"rm\"]]\nreason = \"removes\"\n"
        ),
    );
    sb.write(".git/config", "[core]\n");
    std::fs::create_dir_all(sb.ws.join(".git/hooks")).unwrap();
    sb
}

/// The clients whose hooks take a rewritten input, with the arguments of
/// their pre-event (`copilot-claude`: Copilot's Claude-compatible hooks).
const REWRITING: &[&str] = &[
    "claude-code",
    "codex",
    "gemini",
    "copilot",
    "copilot-claude",
];

/// `client`'s pre-event for a shell `command` run in `cwd`, as call `id`.
fn pre_event(client: &str, cwd: &Path, command: &str, id: &str) -> Value {
    match client {
        "claude-code" => json!({
            "session_id": "hook-exec", "cwd": cwd, "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command, "description": "Run it", "timeout": 60000},
            "tool_use_id": id,
        }),
        "codex" => json!({
            "session_id": "hook-exec", "cwd": cwd, "hook_event_name": "PreToolUse",
            "turn_id": "t1", "tool_name": "Bash", "tool_input": {"command": command},
            "tool_use_id": id,
        }),
        "gemini" => json!({
            "session_id": "hook-exec", "cwd": cwd, "hook_event_name": "BeforeTool",
            "tool_name": "run_shell_command",
            "tool_input": {"command": command, "description": "Run it"},
        }),
        "copilot" => json!({
            "sessionId": "hook-exec", "cwd": cwd, "toolName": "bash",
            "toolArgs": {"command": command, "description": "Run it", "mode": "sync"},
        }),
        "copilot-claude" => json!({
            "hook_event_name": "PreToolUse", "session_id": "hook-exec", "cwd": cwd,
            "tool_name": "Bash", "tool_input": {"command": command},
        }),
        "cursor" => json!({
            "hook_event_name": "beforeShellExecution", "conversation_id": "hook-exec",
            "generation_id": id, "workspace_roots": [cwd], "command": command, "cwd": cwd,
        }),
        other => panic!("unknown client {other}"),
    }
}

/// `gavel hook <client>` on its pre-event; extra `args` after it.
fn hook(sb: &Sandbox, client: &str, event: &Value, args: &[&str]) -> Output {
    let (name, mut hook_args) = match client {
        "copilot" => ("copilot", vec!["--event", "preToolUse"]),
        "copilot-claude" => ("copilot", vec![]),
        other => (other, vec![]),
    };
    hook_args.extend(args);
    let output = sb
        .gavel(&["hook", name])
        .args(&hook_args)
        .write_stdin(event.to_string())
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{client}: {}", stderr(&output));
    output
}

/// What `client`'s answer says: the decision, and the input it rewrote the
/// call to (if it did).
fn answer(client: &str, output: &Output) -> (String, Option<Value>) {
    let text = stdout(output);
    if text.trim().is_empty() {
        assert_eq!(client, "codex", "only Codex answers an allow with silence");
        return ("allow".into(), None);
    }
    let answer: Value = serde_json::from_str(&text).unwrap();
    let decision = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let rewrite = |v: &Value| Some(v.clone()).filter(|v| !v.is_null());
    match client {
        "claude-code" | "codex" => (
            decision(&answer["hookSpecificOutput"]["permissionDecision"]),
            rewrite(&answer["hookSpecificOutput"]["updatedInput"]),
        ),
        "gemini" => (
            decision(&answer["decision"]),
            rewrite(&answer["hookSpecificOutput"]["tool_input"]),
        ),
        "copilot" | "copilot-claude" => (
            decision(&answer["permissionDecision"]),
            rewrite(&answer["modifiedArgs"]),
        ),
        "cursor" => (decision(&answer["permission"]), None),
        other => panic!("unknown client {other}"),
    }
}

/// Decides `command` through `client`'s hook from `cwd`; the decision and
/// the rewritten input.
fn decide(
    sb: &Sandbox,
    client: &str,
    cwd: &Path,
    command: &str,
    id: &str,
) -> (String, Option<Value>) {
    answer(
        client,
        &hook(sb, client, &pre_event(client, cwd, command, id), &[]),
    )
}

/// The rewritten command line of a rewritten input.
fn line(rewrite: &Value) -> String {
    rewrite["command"].as_str().unwrap().to_owned()
}

/// Runs `line` as a client's shell tool runs it: `bash -c LINE` in `cwd`.
fn run_line(line: &str, cwd: &Path) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(line)
        .current_dir(cwd)
        .env_remove("GAVEL_DB")
        .env_remove("GAVEL_POLICY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A Perl command that tries to write outside the workspace, prints on
/// both streams and exits 3.
fn escaping(sb: &Sandbox) -> String {
    format!(
        "perl -e 'open(F, \">{}/escaped.txt\") or print STDERR \"refused: $!\\n\"; \
         print \"out\\n\"; exit 3'",
        sb.outside.display()
    )
}

#[test]
fn each_client_answers_a_contained_allow_with_the_command_under_gavel_exec() {
    for client in REWRITING {
        let sb = workspace("workspace-write");
        let command = escaping(&sb);
        let (decision, rewrite) = decide(&sb, client, &sb.ws, &command, "c1");
        assert_eq!(decision, "allow", "{client}");
        let rewrite = rewrite.unwrap_or_else(|| panic!("{client}: no rewritten input"));
        let line = line(&rewrite);
        // The small launcher installed beside gavel runs it.
        let launcher = std::fs::canonicalize(env!("CARGO_BIN_EXE_gavel-exec")).unwrap();
        assert!(
            line.starts_with(&format!("'{}' exec --db '", launcher.display())),
            "{client}: {line}"
        );
        // The call id the hook recorded is the one the line names.
        let calls = json_lines(&run_expecting(&mut sb.gavel(&["log", "--json"]), 0));
        let id = calls[0]["call_id"].as_str().unwrap();
        assert!(line.contains(&format!("--call-id '{id}' -- '")), "{line}");

        let output = run_line(&line, &sb.ws);
        assert_eq!(code(&output), 3, "{client}: {}", stderr(&output));
        assert_eq!(stdout(&output), "out\n", "{client}");
        assert!(
            stderr(&output).starts_with("refused: "),
            "{client}: {}",
            stderr(&output)
        );
        assert!(
            !sb.outside.join("escaped.txt").exists(),
            "{client}: the write outside the profile went through"
        );
    }
}

#[test]
fn the_rewritten_input_keeps_the_clients_other_fields() {
    let sb = workspace("read-only");
    let command = "perl -e 'print 1'";
    let (_, rewrite) = decide(&sb, "claude-code", &sb.ws, command, "keep");
    let rewrite = rewrite.unwrap();
    assert_eq!(rewrite["description"], "Run it");
    assert_eq!(rewrite["timeout"], 60000);
    let (_, rewrite) = decide(&sb, "copilot", &sb.ws, command, "keep2");
    assert_eq!(rewrite.unwrap()["mode"], "sync");
}

#[test]
fn dangerously_disable_sandbox_does_not_turn_the_rewrite_off() {
    let sb = workspace("read-only");
    let command = escaping(&sb);
    let event = json!({
        "session_id": "hook-exec", "cwd": sb.ws, "permission_mode": "bypassPermissions",
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command, "dangerouslyDisableSandbox": true, "timeout": 5000},
        "tool_use_id": "unsandboxed",
    });
    let (decision, rewrite) = answer("claude-code", &hook(&sb, "claude-code", &event, &[]));
    assert_eq!(decision, "allow");
    let rewrite = rewrite.expect("rewritten whatever dangerouslyDisableSandbox says");
    assert_eq!(rewrite["timeout"], 5000);
    let output = run_line(&line(&rewrite), &sb.ws);
    assert_eq!(code(&output), 3, "{}", stderr(&output));
    assert!(
        !sb.outside.join("escaped.txt").exists(),
        "escaped the sandbox"
    );
}

#[test]
fn an_allow_without_a_sandbox_is_not_rewritten() {
    let sb = workspace("read-only");
    for client in REWRITING.iter().chain(&["cursor"]) {
        let id = format!("plain-{client}");
        let (decision, rewrite) = decide(&sb, client, &sb.ws, "python3 -c pass", &id);
        assert_eq!((decision.as_str(), rewrite), ("allow", None), "{client}");
    }
    // Cursor's answer takes no rewritten input: a contained allow is
    // answered as it was, and runs uncontained (docs/sandbox.md).
    let (decision, rewrite) = decide(&sb, "cursor", &sb.ws, "perl -e 1", "cursor");
    assert_eq!((decision.as_str(), rewrite), ("allow", None));
}

#[test]
fn an_ask_approved_from_the_pending_queue_is_not_rewritten() {
    let sb = workspace("read-only");
    let event = pre_event("claude-code", &sb.ws, "rm notes.txt", "asked");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(["hook", "claude-code", "--ask", "wait=30s", "--workspace"])
        .arg(&sb.ws)
        .arg("--db")
        .arg(&sb.db)
        .current_dir(&sb.root)
        .env("GAVEL_CHECKPOINT_EVERY", "0")
        .env_remove("GAVEL_POLICY")
        .env_remove("GAVEL_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(event.to_string().as_bytes()).unwrap();
    }
    let id = crate::approvals::wait_for_pending(&sb, 1)[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    run_expecting(&mut sb.gavel(&["approve", &id, "--yes"]), 0);
    let output = child.wait_with_output().unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let (decision, rewrite) = answer("claude-code", &output);
    assert_eq!((decision.as_str(), rewrite), ("allow", None));
}

#[test]
fn a_tampered_rewrite_runs_nothing() {
    let sb = workspace("workspace-write");
    let marker = sb.ws.join("ran.txt");
    let command = "perl -e 'print \"decided\\n\"; exit 3'";
    let (_, rewrite) = decide(&sb, "claude-code", &sb.ws, command, "decided");
    let line = line(&rewrite.unwrap());
    // The command's text changed.
    let changed = line.replace("exit 3", "open(F, \">ran.txt\"); exit 4");
    assert_ne!(changed, line);
    let output = run_line(&changed, &sb.ws);
    assert_eq!(code(&output), 125, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("not the one decided"),
        "{}",
        stderr(&output)
    );
    assert!(!marker.exists(), "the changed command ran");
    // Another call's id: one allowed without a sandbox, and one never recorded.
    let (decision, _) = decide(&sb, "claude-code", &sb.ws, "python3 -c pass", "plain");
    assert_eq!(decision, "allow");
    for id in ["plain", "forged"] {
        let other = line.replace("--call-id 'decided'", &format!("--call-id '{id}'"));
        assert_ne!(other, line);
        let output = run_line(&other, &sb.ws);
        assert_eq!(code(&output), 125, "{id}: {}", stderr(&output));
        assert!(stdout(&output).is_empty(), "{id}: it ran");
    }
    // The rewrite as answered runs, with the command's own status.
    let output = run_line(&line, &sb.ws);
    assert_eq!((code(&output), stdout(&output).as_str()), (3, "decided\n"));
}

#[test]
fn the_rewritten_command_runs_in_the_folder_the_call_was_decided_in() {
    let sb = workspace("read-only");
    sb.write("sub/local.txt", "from sub\n");
    let sub = sb.ws.join("sub");
    // Proven read-only: allowed without a profile, run under `read-only`.
    let (decision, rewrite) = decide(&sb, "claude-code", &sub, "cat local.txt", "in-sub");
    assert_eq!(decision, "allow");
    let line = line(&rewrite.expect("a proven read-only command runs contained"));
    for from in [&sub, &sb.ws, &sb.root] {
        let output = run_line(&line, from);
        assert_eq!(
            code(&output),
            0,
            "from {}: {}",
            from.display(),
            stderr(&output)
        );
        assert_eq!(stdout(&output), "from sub\n");
    }
}

#[test]
fn the_completion_of_a_rewritten_call_completes_it() {
    for client in ["claude-code", "codex", "gemini", "copilot"] {
        let sb = workspace("read-only");
        let (_, rewrite) = decide(&sb, client, &sb.ws, "cat notes.txt", "done");
        let rewrite = rewrite.unwrap();
        // The client reports the input it ran: the rewritten one.
        let post = match client {
            "claude-code" => json!({
                "session_id": "hook-exec", "cwd": sb.ws, "hook_event_name": "PostToolUse",
                "tool_name": "Bash", "tool_input": rewrite, "tool_use_id": "done",
                "tool_response": {"stdout": "hello from the workspace", "stderr": ""},
            }),
            "codex" => json!({
                "session_id": "hook-exec", "cwd": sb.ws, "hook_event_name": "PostToolUse",
                "turn_id": "t1", "tool_name": "Bash", "tool_input": rewrite,
                "tool_use_id": "done", "tool_response": "hello from the workspace",
            }),
            "gemini" => json!({
                "session_id": "hook-exec", "cwd": sb.ws, "hook_event_name": "AfterTool",
                "tool_name": "run_shell_command", "tool_input": rewrite,
                "tool_response": {"llmContent": "hello from the workspace"},
            }),
            "copilot" => json!({
                "sessionId": "hook-exec", "cwd": sb.ws, "toolName": "bash",
                "toolArgs": rewrite,
                "toolResult": {"resultType": "success", "textResultForLlm": "hello"},
            }),
            other => panic!("{other}"),
        };
        let mut cmd = sb.gavel(&["hook", client]);
        if client == "copilot" {
            cmd.args(["--event", "postToolUse"]);
        }
        let output = cmd.write_stdin(post.to_string()).output().unwrap();
        assert_eq!(code(&output), 0, "{client}: {}", stderr(&output));
        let calls = json_lines(&run_expecting(&mut sb.gavel(&["log", "--json"]), 0));
        assert_eq!(calls.len(), 1, "{client}: {calls:#?}");
        assert_eq!(calls[0]["status"], "succeeded", "{client}: {:#}", calls[0]);
        assert_eq!(calls[0]["anomalies"], json!([]), "{client}: {:#}", calls[0]);
        run_expecting(&mut sb.gavel(&["verify"]), 0);
    }
}

/// A workspace whose policy allows `printenv` and `perl` contained: under
/// `read-only`, or (`beside_db`) a profile that may also write the
/// database's own folder.
fn plain_workspace(beside_db: bool) -> Sandbox {
    let sb = Sandbox::new();
    let (profile, profiles) = if beside_db {
        let profiles = format!(
            "[sandbox.profiles.beside]\n\
             read = [\".\", \"/usr\", \"/bin\", \"/lib\", \"/lib64\", \"/etc\"]\n\
             write = [\".\", \"{}\"]\nexec = [\"/usr\", \"/bin\"]\n",
            sb.root.display()
        );
        ("beside", profiles)
    } else {
        ("read-only", String::new())
    };
    sb.write(
        "gavel.toml",
        &format!(
            "name = \"hook-exec-plain\"\n\
             [[rules]]\nid = \"contained\"\naction = \"allow\"\ntools = [\"bash\"]\n\
             commands = [{{ program = [\"printenv\"] }}, {{ program = [\"perl\"] }}, \
             {{ program = [\"gavel-no-such-program\"] }}, {{ program = [\"echo\"] }}, \
             {{ program = [\"true\"] }}, {{ program = [\"false\"] }}]\n\
             sandbox = \"{profile}\"\nreason = \"contained\"\n{profiles}"
        ),
    );
    sb.write(".git/config", "[core]\n");
    std::fs::create_dir_all(sb.ws.join(".git/hooks")).unwrap();
    sb
}

/// `bash -c LINE` in the workspace, with `SHLVL` and a `PWD` that is not
/// where it runs (bash sets both for what it starts).
fn bash_in(sb: &Sandbox, line: &str) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(line)
        .current_dir(&sb.ws)
        .env("SHLVL", "5")
        .env("PWD", &sb.outside)
        .env_remove("GAVEL_DB")
        .env_remove("GAVEL_POLICY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Decides `command` through the Claude Code hook as call `id` and runs
/// the rewritten line as [`bash_in`] runs a line.
fn decide_and_run(sb: &Sandbox, command: &str, id: &str) -> Output {
    let (decision, rewrite) = decide(sb, "claude-code", &sb.ws, command, id);
    assert_eq!(decision, "allow", "{command}");
    bash_in(sb, &line(&rewrite.expect("rewritten")))
}

#[test]
fn a_contained_command_sees_what_it_would_see_run_by_bash() {
    let sb = plain_workspace(false);
    // Plain words run without a shell in between, `echo`, `true` and
    // `false` without a process (as bash's builtins), the rest through
    // bash; either way the command sees what `bash -c COMMAND` would show.
    for (n, command) in [
        "printenv SHLVL",
        "printenv _",
        "printenv PWD",
        "printenv SHLVL && printenv PWD",
        "gavel-no-such-program --x",
        "echo -n plain words",
        "echo hi --help",
        "echo --help",
        "echo -neE -e words -n",
        "echo - -- -nx",
        "echo",
        "true --help",
        "true",
        "false",
    ]
    .into_iter()
    .enumerate()
    {
        let contained = decide_and_run(&sb, command, &format!("c{n}"));
        let plain = bash_in(&sb, command);
        assert_eq!(
            code(&contained),
            code(&plain),
            "{command}: {}",
            stderr(&contained)
        );
        assert_eq!(stdout(&contained), stdout(&plain), "{command}");
        if code(&plain) == 127 {
            assert!(
                stderr(&contained).contains("command not found"),
                "{}",
                stderr(&contained)
            );
        }
    }
}

#[test]
fn the_launcher_takes_its_ticket_and_a_command_cannot_leave_one() {
    let sb = plain_workspace(true);
    let tickets = std::path::PathBuf::from(format!("{}.exec", sb.db.display()));
    let (decision, rewrite) = decide(&sb, "claude-code", &sb.ws, "printenv SHLVL", "t1");
    assert_eq!(decision, "allow");
    let line = line(&rewrite.unwrap());
    let held: Vec<_> = std::fs::read_dir(&tickets).unwrap().collect();
    assert_eq!(held.len(), 1, "one ticket for the one call");
    // Taken by the first run; a second run is authorized by the record.
    for _ in 0..2 {
        let output = run_line(&line, &sb.ws);
        assert_eq!(code(&output), 0, "{}", stderr(&output));
        assert_eq!(std::fs::read_dir(&tickets).unwrap().count(), 0);
    }
    // Another command under the same call: nothing runs.
    let other = line.replace("'printenv SHLVL'", "'printenv HOME'");
    assert_eq!(code(&run_line(&other, &sb.ws)), 125);
    // The database's folder is writable here, its tickets' folder is not.
    let script = format!(
        "perl -e 'open(F, \">{root}/beside.txt\") or die; \
         open(G, \">{tickets}/forged\") or print \"refused\\n\"'",
        root = sb.root.display(),
        tickets = tickets.display()
    );
    let output = decide_and_run(&sb, &script, "t2");
    assert_eq!(stdout(&output), "refused\n", "{}", stderr(&output));
    assert!(sb.root.join("beside.txt").exists());
    assert!(!tickets.join("forged").exists());
}

#[test]
fn a_command_that_waits_for_all_of_its_children_is_not_kept_waiting_by_the_observer() {
    let sb = plain_workspace(false);
    // `wait` until none is left (Perl's idiom, Ruby's `Process.waitall`):
    // the observer of the command gavel-exec became is not its child. The
    // alarm turns a hang into a failure.
    let output = decide_and_run(
        &sb,
        "perl -e 'alarm 20; 1 while wait != -1; print qq(none left\\n)'",
        "w1",
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout(&output), "none left\n");
}
