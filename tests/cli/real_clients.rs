//! End-to-end tests against the real agent CLIs from the npm registry
//! (Claude Code, Codex CLI, Gemini CLI, Copilot CLI, pinned in
//! `fixtures/clients/real/clients.txt`), each run headless against the
//! scripted model server of `real_clients_model` with `gavel hook <client>`
//! as its hook. In one session the model asks for `sudo ls` (hard denied:
//! must not run, and the deny reason must reach the model), an ask-level
//! write (must not run unapproved, and is never recorded as approved), and a
//! read inside the workspace (runs, its call completes as succeeded); then
//! `gavel verify` and `gavel audit` must find the record whole. Each client
//! also makes two identical reads in one model response (parallel calls,
//! told apart only by their order where the client sends no call id), and
//! both must complete. Copilot CLI runs both sessions twice: with its own
//! camelCase hooks and with its Claude-compatible (PascalCase) ones. Claude Code
//! also runs the session in `bypassPermissions` mode (its own checks off),
//! and under a broken policy, where every call must be blocked (fail
//! closed); and after `gavel init claude-code`, `ls` and `git status` must
//! run without a prompt.
//!
//! Claude Code, Codex, Gemini CLI and Copilot CLI also run with `hook --ask wait`: the
//! asked write waits in the pending queue while another process answers it
//! with `gavel approve` (it runs, `succeeded`, approval channel `cli`),
//! `gavel reject` (blocked), or not at all (`cancelled`, cause `timeout`).
//!
//! The CLIs come from `scripts/install-clients` (into `$GAVEL_CLIENTS_CACHE`,
//! default `target/clients`). Without them a test says so and passes, unless
//! `GAVEL_REQUIRE_CLIENTS=1` (set by `.ci/run`), which makes it fail. A test
//! whose `gavel hook <client>` (or `gavel init`) does not exist yet says so
//! and passes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use wait_timeout::ChildExt;

use super::real_clients_model::{ModelServer, Step};
use super::support::{
    Sandbox, fixture, fixtures_in, json as parse_json, json_lines, run_expecting,
};

/// How long one client session may take before it is killed and the test fails.
const SESSION_TIMEOUT: Duration = Duration::from_secs(180);

/// The prompt; the scripted model ignores it.
const PROMPT: &str = "Check the workspace.";

/// The shell command every client's model asks for first: hard denied.
const DENIED: &str = "sudo ls";
/// The ask-level command: a write the policy asks about. Had it run, `ran.txt` would exist.
const ASKED: &str = "echo ran > ran.txt";

/// One pinned client of `fixtures/clients/real/clients.txt`.
struct Pin {
    package: String,
    version: String,
    bin: String,
}

fn pin(client: &str) -> Pin {
    let text = std::fs::read_to_string(fixture("clients/real/clients.txt")).unwrap();
    text.lines()
        .map(str::split_whitespace)
        .filter_map(|mut words| {
            let name = words.next()?;
            (name == client).then(|| Pin {
                package: words.next().unwrap().to_owned(),
                version: words.next().unwrap().to_owned(),
                bin: words.next().unwrap().to_owned(),
            })
        })
        .next()
        .unwrap_or_else(|| panic!("no pin for `{client}` in clients.txt"))
}

fn cache() -> PathBuf {
    std::env::var_os("GAVEL_CLIENTS_CACHE")
        .filter(|dir| !dir.is_empty())
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/clients"),
            PathBuf::from,
        )
}

/// Skips the test (with `why` on stderr), or fails it under `GAVEL_REQUIRE_CLIENTS=1`.
pub(super) fn skip_unless_required(why: &str) {
    if std::env::var("GAVEL_REQUIRE_CLIENTS").is_ok_and(|v| v == "1") {
        panic!("GAVEL_REQUIRE_CLIENTS=1, but {why}");
    }
    eprintln!("skipped: {why}");
}

/// The installed binary of `client` at its pinned version, or `None` when
/// the test must skip.
pub(super) fn installed(client: &str) -> Option<PathBuf> {
    let pin = pin(client);
    let dir = cache().join(client);
    let bin = dir.join("node_modules/.bin").join(&pin.bin);
    let manifest = dir
        .join("node_modules")
        .join(&pin.package)
        .join("package.json");
    let version = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|v| v["version"].as_str().map(str::to_owned));
    if bin.exists() && version.as_deref() == Some(pin.version.as_str()) {
        return Some(bin);
    }
    skip_unless_required(&format!(
        "{}@{} is not installed in {} (run scripts/install-clients)",
        pin.package,
        pin.version,
        dir.display()
    ));
    None
}

/// `s` quoted for a POSIX shell.
pub(super) fn shell_word(s: &Path) -> String {
    format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"))
}

/// The tests' policy: the built-in one, plus `cat` allowed inside the workspace.
fn policy() -> PathBuf {
    fixture("clients/real/policy.toml")
}

/// `<gavel> hook <client> [extra] --db DB --policy POLICY --workspace WS`:
/// the sandbox's record, `policy`, the sandbox's workspace.
pub(super) fn hook_command(sandbox: &Sandbox, client: &str, extra: &str, policy: &Path) -> String {
    format!(
        "{} hook {client}{extra} --db {} --policy {} --workspace {}",
        shell_word(Path::new(env!("CARGO_BIN_EXE_gavel"))),
        shell_word(&sandbox.db),
        shell_word(policy),
        shell_word(&sandbox.ws),
    )
}

/// A command for a client: a clean environment (PATH only, for node, and a
/// HOME of its own in the sandbox), run from the workspace.
pub(super) fn client_command(sandbox: &Sandbox, bin: &Path) -> Command {
    let home = sandbox.root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("LANG", "C.UTF-8")
        .current_dir(&sandbox.ws)
        .stdin(std::process::Stdio::null());
    cmd
}

/// What a client run printed.
pub(super) struct Run {
    pub(super) stdout: String,
    pub(super) stderr: String,
}

/// Runs `cmd` to its end within `SESSION_TIMEOUT`, insisting on exit 0;
/// failures show the client's output and what the model server saw.
pub(super) fn run_client(
    sandbox: &Sandbox,
    mut cmd: Command,
    what: &str,
    server: &ModelServer,
) -> Run {
    let out_path = sandbox.root.join(format!("{what}.stdout"));
    let err_path = sandbox.root.join(format!("{what}.stderr"));
    cmd.stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let status = child.wait_timeout(SESSION_TIMEOUT).unwrap();
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let run = Run {
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    };
    let problem = match status {
        None => Some(format!("did not finish within {SESSION_TIMEOUT:?}")),
        Some(status) if !status.success() => Some(format!("exited with {status}")),
        Some(_) => None,
    };
    if let Some(problem) = problem {
        panic!(
            "{what} {problem}\n--- stdout:\n{}\n--- stderr:\n{}\n--- model requests:\n{}",
            tail(&run.stdout),
            tail(&run.stderr),
            server.summary()
        );
    }
    run
}

/// About the last 4000 bytes of `text` (cut at a character boundary).
pub(super) fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(4000);
    let start = (start..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    &text[start..]
}

/// The model's script: the denied command, the asked command, the read, then done.
fn script(shell: &str, shell_input: &str, read: Step) -> Vec<Step> {
    vec![
        Step::tool(shell, json!({ shell_input: DENIED })),
        Step::tool(shell, json!({ shell_input: ASKED })),
        read,
        Step::Text("All done.".to_owned()),
    ]
}

/// The one recorded call (`gavel log --json`) whose arguments mention `needle`.
pub(super) fn call(sandbox: &Sandbox, needle: &str, context: &str) -> Value {
    let output = run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0);
    let rows = json_lines(&output);
    let matching: Vec<&Value> = rows
        .iter()
        .filter(|row| row["arguments"].to_string().contains(needle))
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "expected one recorded call mentioning `{needle}`, got {}\nall calls: {rows:#?}\n{context}",
        matching.len()
    );
    matching[0].clone()
}

/// The checks every client's session must pass. `read_needle` picks the
/// read call out of the log.
fn check_session(sandbox: &Sandbox, server: &ModelServer, run: &Run, read_needle: &str) {
    let context = format!(
        "--- client stdout:\n{}\n--- client stderr:\n{}\n--- model requests:\n{}",
        tail(&run.stdout),
        tail(&run.stderr),
        server.summary()
    );

    // The hard-denied command never ran; the model was told why.
    let denied = call(sandbox, DENIED, &context);
    assert_eq!(denied["action"], "deny", "{denied:#}\n{context}");
    assert_eq!(denied["rule_id"], "bash.hard_deny", "{denied:#}\n{context}");
    assert_eq!(denied["status"], "blocked", "{denied:#}\n{context}");
    let told = server.tool_result(0).unwrap_or_default();
    assert!(
        told.contains("command matches a non-overridable deny rule"),
        "the deny reason did not reach the model: {told:?}\n{context}"
    );

    // The ask never ran and is not recorded as approved.
    let asked = call(sandbox, "echo ran", &context);
    assert_eq!(asked["action"], "ask", "{asked:#}\n{context}");
    assert_eq!(
        asked["rule_id"], "bash.requires_approval",
        "{asked:#}\n{context}"
    );
    assert_ne!(asked["approval"], "approved", "{asked:#}\n{context}");
    assert!(
        !matches!(asked["status"].as_str(), Some("succeeded" | "failed")),
        "an unapproved ask is recorded as run: {asked:#}\n{context}"
    );
    assert!(
        !sandbox.ws.join("ran.txt").exists(),
        "the unapproved command ran\n{context}"
    );
    // Whatever the client makes of it, the model learns that approval is missing.
    let told = server.tool_result(1).unwrap_or_default();
    assert!(
        told.contains("approval"),
        "the model was not told the call needs approval: {told:?}\n{context}"
    );

    // The read ran, its call completed, and the model saw the file.
    let read = call(sandbox, read_needle, &context);
    assert_eq!(read["action"], "allow", "{read:#}\n{context}");
    assert_eq!(read["status"], "succeeded", "{read:#}\n{context}");
    let told = server.tool_result(2).unwrap_or_default();
    assert!(
        told.contains("hello from the workspace"),
        "the model did not get the file: {told:?}\n{context}"
    );

    // The record is whole, and nothing ran outside what gavel decided.
    let verify = parse_json(&run_expecting(&mut sandbox.gavel(&["verify", "--json"]), 0));
    assert_eq!(verify["ok"], true, "{verify:#}");
    run_expecting(&mut sandbox.gavel(&["audit"]), 0);
}

/// Two identical reads in one model response (for clients without call
/// ids, the completions can only be told apart by their order).
fn parallel_reads(read: Step) -> Vec<Step> {
    vec![
        Step::Parallel(vec![read.clone(), read]),
        Step::Text("All done.".to_owned()),
    ]
}

/// Both parallel reads ran, each recorded as its own call that completed,
/// with nothing left over as an anomaly.
fn check_parallel_reads(sandbox: &Sandbox, server: &ModelServer, run: &Run, needle: &str) {
    let context = format!(
        "--- client stderr:\n{}\n--- model requests:\n{}",
        tail(&run.stderr),
        server.summary()
    );
    let rows = json_lines(&run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0));
    let reads: Vec<&Value> = rows
        .iter()
        .filter(|row| row["arguments"].to_string().contains(needle))
        .collect();
    assert_eq!(reads.len(), 2, "{rows:#?}\n{context}");
    for read in reads {
        assert_eq!(read["action"], "allow", "{read:#}\n{context}");
        assert_eq!(read["status"], "succeeded", "{read:#}\n{context}");
    }
    for n in 0..2 {
        let told = server.tool_result(n).unwrap_or_default();
        assert!(
            told.contains("hello from the workspace"),
            "read {n}: {told:?}\n{context}"
        );
    }
    let verify = parse_json(&run_expecting(&mut sandbox.gavel(&["verify", "--json"]), 0));
    assert_eq!(verify["ok"], true, "{verify:#}");
    run_expecting(&mut sandbox.gavel(&["audit"]), 0);
}

/// Claude Code's hook settings: every event gavel records, to `command`.
pub(super) fn claude_settings(command: &str) -> Value {
    let hook = json!([{ "type": "command", "command": command }]);
    let mut hooks = serde_json::Map::new();
    for event in ["PreToolUse", "PostToolUse", "PostToolUseFailure"] {
        hooks.insert(event.into(), json!([{ "matcher": "*", "hooks": hook }]));
    }
    for event in ["PostToolBatch", "UserPromptSubmit", "SessionStart", "Stop"] {
        hooks.insert(event.into(), json!([{ "hooks": hook }]));
    }
    json!({ "hooks": hooks })
}

/// `claude -p` in the workspace against `server`.
pub(super) fn claude_command(sandbox: &Sandbox, bin: &Path, server: &ModelServer) -> Command {
    let mut cmd = client_command(sandbox, bin);
    cmd.env("ANTHROPIC_BASE_URL", &server.url)
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        // Lets `--permission-mode bypassPermissions` run as root (CI does).
        .env("IS_SANDBOX", "1")
        .args(["-p", PROMPT, "--output-format", "json"]);
    cmd
}

/// Runs `claude -p` on the scripted `server` with gavel as the project's
/// hooks under `policy`; `args` are further flags. Returns the run and
/// Claude Code's JSON result.
pub(super) fn claude_session(
    sandbox: &Sandbox,
    bin: &Path,
    server: &ModelServer,
    policy: &Path,
    args: &[&str],
) -> (Run, Value) {
    let settings = claude_settings(&hook_command(sandbox, "claude-code", "", policy));
    sandbox.write(".claude/settings.json", &settings.to_string());
    let mut cmd = claude_command(sandbox, bin, server);
    cmd.args(args);
    let run = run_client(sandbox, cmd, "claude", server);
    let result = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("claude -p printed no JSON result ({e}): {}", run.stdout));
    (run, result)
}

/// The calls Claude Code reports it refused: each one's command or file path.
fn refused(result: &Value) -> Vec<String> {
    result["permission_denials"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            let input = &d["tool_input"];
            input["command"]
                .as_str()
                .or(input["file_path"].as_str())
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// The session of every test: deny, ask, then read `notes.txt` with `Read`.
fn claude_script(sandbox: &Sandbox) -> Vec<Step> {
    let notes = sandbox.ws.join("notes.txt");
    script(
        "Bash",
        "command",
        Step::tool("Read", json!({ "file_path": notes })),
    )
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn claude_code_denies_asks_and_allows_for_real() {
    let Some(bin) = installed("claude-code") else {
        return;
    };
    let sandbox = Sandbox::new();
    let server = ModelServer::start(claude_script(&sandbox));
    let (run, result) = claude_session(&sandbox, &bin, &server, &policy(), &[]);
    // Claude Code's own account: the two refused calls, and nothing else.
    assert_eq!(refused(&result), [DENIED, ASKED], "{result:#}");
    check_session(&sandbox, &server, &run, "notes.txt");
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn claude_code_bypass_permissions_mode_still_denies_and_never_runs_an_ask() {
    let Some(bin) = installed("claude-code") else {
        return;
    };
    let sandbox = Sandbox::new();
    let server = ModelServer::start(claude_script(&sandbox));
    let (run, result) = claude_session(
        &sandbox,
        &bin,
        &server,
        &policy(),
        &["--permission-mode", "bypassPermissions"],
    );
    assert_eq!(refused(&result), [DENIED, ASKED], "{result:#}");
    check_session(&sandbox, &server, &run, "notes.txt");
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn claude_code_fails_closed_on_a_broken_policy() {
    let Some(bin) = installed("claude-code") else {
        return;
    };
    let sandbox = Sandbox::new();
    let broken = sandbox.root.join("broken.toml");
    std::fs::write(&broken, "[[rules]\nid = \"half a table\"\n").unwrap();
    let notes = sandbox.ws.join("notes.txt");
    let server = ModelServer::start(vec![
        Step::tool("Bash", json!({ "command": ASKED })),
        Step::tool("Read", json!({ "file_path": notes })),
        Step::Text("All done.".to_owned()),
    ]);
    // Even with Claude Code's own checks off, nothing runs.
    let (run, result) = claude_session(
        &sandbox,
        &bin,
        &server,
        &broken,
        &["--permission-mode", "bypassPermissions"],
    );
    let notes = notes.to_string_lossy();
    assert_eq!(refused(&result), [ASKED, &*notes], "{result:#}");
    assert!(
        !sandbox.ws.join("ran.txt").exists(),
        "a call ran under a broken policy\n{}",
        run.stderr
    );
    // The model is told gavel's one-line error, which names the policy.
    for step in 0..2 {
        let told = server.tool_result(step).unwrap_or_default();
        assert!(
            told.contains("gavel:") && told.contains("broken.toml"),
            "step {step}: the model was told {told:?}\n{}",
            server.summary()
        );
    }
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn claude_code_parallel_identical_reads_each_complete() {
    let Some(bin) = installed("claude-code") else {
        return;
    };
    let sandbox = Sandbox::new();
    let notes = sandbox.ws.join("notes.txt");
    let read = Step::tool("Read", json!({ "file_path": notes }));
    let server = ModelServer::start(parallel_reads(read));
    let (run, result) = claude_session(&sandbox, &bin, &server, &policy(), &[]);
    assert_eq!(refused(&result), Vec::<String>::new(), "{result:#}");
    check_parallel_reads(&sandbox, &server, &run, "notes.txt");
}

/// Runs `codex exec` on the scripted `server` with gavel as its hooks.
fn codex_session(sandbox: &Sandbox, bin: &Path, server: &ModelServer) -> Run {
    codex_session_with(sandbox, bin, server, "", &policy())
}

/// [`codex_session`] with `extra` after `hook codex` (`--ask wait=60s`),
/// Codex's hook timeout above any wait, and `policy`.
pub(super) fn codex_session_with(
    sandbox: &Sandbox,
    bin: &Path,
    server: &ModelServer,
    extra: &str,
    policy: &Path,
) -> Run {
    let codex_home = sandbox.root.join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            r#"model = "gpt-5.5"
model_provider = "scripted"
[model_providers.scripted]
name = "scripted"
base_url = "{}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
request_max_retries = 0
stream_max_retries = 0
[features]
hooks = true
"#,
            server.url
        ),
    )
    .unwrap();
    let command = hook_command(sandbox, "codex", extra, policy);
    let hook = json!([{ "hooks": [{ "type": "command", "command": command, "timeout": 90 }] }]);
    let hooks = json!({ "hooks": {
        "SessionStart": hook, "UserPromptSubmit": hook, "PreToolUse": hook,
        "PermissionRequest": hook, "PostToolUse": hook, "Stop": hook,
    }});
    std::fs::write(codex_home.join("hooks.json"), hooks.to_string()).unwrap();

    let mut cmd = client_command(sandbox, bin);
    // No sandbox of Codex's own: had the hook let the ask through, it would
    // write ran.txt. Hooks run without the interactive trust review only
    // with --dangerously-bypass-hook-trust.
    cmd.env("CODEX_HOME", &codex_home)
        .env("SCRIPTED_API_KEY", "sk-scripted")
        .args([
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            "--sandbox",
            "danger-full-access",
            PROMPT,
        ]);
    run_client(sandbox, cmd, "codex", server)
}

/// Codex's model has no file-reading tool: it reads with `cat`, which the
/// tests' policy allows inside the workspace.
const CODEX_READ: &str = "cat notes.txt";

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn codex_denies_asks_and_allows_for_real() {
    let Some(bin) = installed("codex") else {
        return;
    };
    let sandbox = Sandbox::new();
    let read = Step::tool("exec_command", json!({ "cmd": CODEX_READ }));
    let server = ModelServer::start(script("exec_command", "cmd", read));
    let run = codex_session(&sandbox, &bin, &server);
    check_session(&sandbox, &server, &run, CODEX_READ);
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn codex_parallel_identical_reads_each_complete() {
    let Some(bin) = installed("codex") else {
        return;
    };
    let sandbox = Sandbox::new();
    let read = Step::tool("exec_command", json!({ "cmd": CODEX_READ }));
    let server = ModelServer::start(parallel_reads(read));
    let run = codex_session(&sandbox, &bin, &server);
    check_parallel_reads(&sandbox, &server, &run, CODEX_READ);
}

/// Runs `gemini -p` on the scripted `server` with gavel as its hooks.
fn gemini_session(sandbox: &Sandbox, bin: &Path, server: &ModelServer) -> Run {
    gemini_session_with(sandbox, bin, server, "", &policy())
}

/// [`gemini_session`] with `extra` after `hook gemini` (`--ask wait=60s`),
/// Gemini's hook timeout (milliseconds) above any wait, and `policy`.
pub(super) fn gemini_session_with(
    sandbox: &Sandbox,
    bin: &Path,
    server: &ModelServer,
    extra: &str,
    policy: &Path,
) -> Run {
    let command = hook_command(sandbox, "gemini", extra, policy);
    let hook = json!([{ "type": "command", "command": command, "timeout": 90_000 }]);
    let mut hooks = serde_json::Map::new();
    for event in ["BeforeTool", "AfterTool"] {
        hooks.insert(event.into(), json!([{ "matcher": ".*", "hooks": hook }]));
    }
    for event in ["SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"] {
        hooks.insert(event.into(), json!([{ "hooks": hook }]));
    }
    let settings = json!({
        "security": { "auth": { "selectedType": "gemini-api-key" } },
        "hooks": hooks,
    });
    let home = sandbox.root.join("home");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).unwrap();

    let mut cmd = client_command(sandbox, bin);
    // A fixed model: with `auto`, a router first asks a small model for a
    // JSON routing answer. Headless Gemini offers its shell tool only in
    // yolo mode, so gavel is the only guard.
    cmd.env("GEMINI_API_KEY", "scripted")
        .env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .args(["-p", PROMPT, "--output-format", "json", "--skip-trust"])
        .args(["-m", "gemini-2.5-pro", "--approval-mode", "yolo"]);
    run_client(sandbox, cmd, "gemini", server)
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn gemini_denies_asks_and_allows_for_real() {
    let Some(bin) = installed("gemini") else {
        return;
    };
    let sandbox = Sandbox::new();
    let read = Step::tool("read_file", json!({ "file_path": "notes.txt" }));
    let server = ModelServer::start(script("run_shell_command", "command", read));
    let run = gemini_session(&sandbox, &bin, &server);
    check_session(&sandbox, &server, &run, "notes.txt");
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn gemini_parallel_identical_reads_each_complete() {
    let Some(bin) = installed("gemini") else {
        return;
    };
    let sandbox = Sandbox::new();
    let read = Step::tool("read_file", json!({ "file_path": "notes.txt" }));
    let server = ModelServer::start(parallel_reads(read));
    let run = gemini_session(&sandbox, &bin, &server);
    check_parallel_reads(&sandbox, &server, &run, "notes.txt");
}

/// Runs `copilot -p` on the scripted `server` with `hooks` (a hooks file's
/// JSON) as its personal hooks.
fn copilot_run(sandbox: &Sandbox, bin: &Path, server: &ModelServer, hooks: &Value) -> Run {
    // Personal hooks: repository hooks (.github/hooks/) load in `-p` only
    // with --trust-folder.
    let copilot_home = sandbox.root.join("copilot-home");
    std::fs::create_dir_all(copilot_home.join("hooks")).unwrap();
    std::fs::write(copilot_home.join("hooks/gavel.json"), hooks.to_string()).unwrap();

    let mut cmd = client_command(sandbox, bin);
    // BYOK against the scripted Anthropic endpoint, offline (no GitHub
    // sign-in, telemetry or update). `--allow-all-tools` lets the tools run
    // without Copilot's own approval, so gavel is the only guard. The
    // binary unpacks itself once into the shared cache.
    cmd.env("COPILOT_HOME", &copilot_home)
        .env("COPILOT_CACHE_HOME", cache().join("copilot/cache"))
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_PROVIDER_TYPE", "anthropic")
        .env("COPILOT_PROVIDER_BASE_URL", &server.url)
        .env("COPILOT_PROVIDER_API_KEY", "sk-scripted")
        .env("COPILOT_MODEL", "claude-sonnet-4.5")
        .args(["-p", PROMPT, "--allow-all-tools"]);
    run_client(sandbox, cmd, "copilot", server)
}

/// Runs `copilot -p` on the scripted `server` with gavel as its hooks.
fn copilot_session(sandbox: &Sandbox, bin: &Path, server: &ModelServer) -> Run {
    copilot_session_with(sandbox, bin, server, "", &policy())
}

/// [`copilot_session`] with `extra` after each hook command (`--ask wait=60s`),
/// Copilot's hook timeout above any wait, and `policy`.
pub(super) fn copilot_session_with(
    sandbox: &Sandbox,
    bin: &Path,
    server: &ModelServer,
    extra: &str,
    policy: &Path,
) -> Run {
    // Copilot's payloads carry no event name: the command says which.
    let mut hooks = serde_json::Map::new();
    for event in [
        "sessionStart",
        "userPromptSubmitted",
        "preToolUse",
        "postToolUse",
        "postToolUseFailure",
        "sessionEnd",
    ] {
        let command = hook_command(
            sandbox,
            "copilot",
            &format!(" --event {event}{extra}"),
            policy,
        );
        hooks.insert(
            event.into(),
            json!([{ "type": "command", "bash": command, "timeoutSec": 90 }]),
        );
    }
    copilot_run(
        sandbox,
        bin,
        server,
        &json!({ "version": 1, "hooks": hooks }),
    )
}

/// Copilot's Claude-compatible hooks file: PascalCase events in Claude
/// Code's nested `matcher` / `hooks` groups, every one to `command`.
/// Copilot then sends snake_case payloads that name their event
/// (`hook_event_name`), so the command needs no `--event`.
fn copilot_claude_hooks(command: &str) -> Value {
    let hook = json!([{ "type": "command", "command": command, "timeout": 60 }]);
    let mut hooks = serde_json::Map::new();
    for event in ["PreToolUse", "PostToolUse", "PostToolUseFailure"] {
        hooks.insert(event.into(), json!([{ "matcher": "*", "hooks": hook }]));
    }
    for event in ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"] {
        hooks.insert(event.into(), json!([{ "hooks": hook }]));
    }
    json!({ "hooks": hooks })
}

/// Runs `copilot -p` on the scripted `server` with `gavel hook copilot`
/// as its Claude-compatible hooks, under `policy`.
pub(super) fn copilot_claude_session(
    sandbox: &Sandbox,
    bin: &Path,
    server: &ModelServer,
    policy: &Path,
) -> Run {
    let command = hook_command(sandbox, "copilot", "", policy);
    copilot_run(sandbox, bin, server, &copilot_claude_hooks(&command))
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn copilot_denies_asks_and_allows_for_real() {
    let Some(bin) = installed("copilot") else {
        return;
    };
    let sandbox = Sandbox::new();
    let read = Step::tool("view", json!({ "path": sandbox.ws.join("notes.txt") }));
    let server = ModelServer::start(script("bash", "command", read));
    let run = copilot_session(&sandbox, &bin, &server);
    check_session(&sandbox, &server, &run, "notes.txt");
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn copilot_parallel_identical_reads_each_complete() {
    let Some(bin) = installed("copilot") else {
        return;
    };
    let sandbox = Sandbox::new();
    let read = Step::tool("view", json!({ "path": sandbox.ws.join("notes.txt") }));
    let server = ModelServer::start(parallel_reads(read));
    let run = copilot_session(&sandbox, &bin, &server);
    check_parallel_reads(&sandbox, &server, &run, "notes.txt");
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn copilot_claude_format_hooks_deny_ask_and_allow_for_real() {
    let Some(bin) = installed("copilot") else {
        return;
    };
    let sandbox = Sandbox::new();
    // The model calls Copilot's own tools; the hooks see them as `Bash` and `Read`.
    let read = Step::tool("view", json!({ "path": sandbox.ws.join("notes.txt") }));
    let server = ModelServer::start(script("bash", "command", read));
    let run = copilot_claude_session(&sandbox, &bin, &server, &policy());
    check_session(&sandbox, &server, &run, "notes.txt");
    // The model is told which rule denied it.
    let told = server.tool_result(0).unwrap_or_default();
    assert!(
        told.contains("bash.hard_deny"),
        "the rule id did not reach the model: {told:?}\n{}",
        server.summary()
    );
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn copilot_claude_format_parallel_identical_reads_each_complete() {
    let Some(bin) = installed("copilot") else {
        return;
    };
    let sandbox = Sandbox::new();
    let read = Step::tool("view", json!({ "path": sandbox.ws.join("notes.txt") }));
    let server = ModelServer::start(parallel_reads(read));
    let run = copilot_claude_session(&sandbox, &bin, &server, &policy());
    check_parallel_reads(&sandbox, &server, &run, "notes.txt");
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn gavel_init_claude_code_allows_ls_and_git_status_without_a_prompt() {
    let Some(bin) = installed("claude-code") else {
        return;
    };
    let sandbox = Sandbox::new();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&sandbox.ws)
        .output()
        .unwrap();
    assert!(git.status.success(), "git init: {git:?}");
    // `gavel init` as a user would run it, from the project, nothing else edited.
    let init = sandbox
        .bare()
        .args(["init", "claude-code"])
        .current_dir(&sandbox.ws)
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "gavel init claude-code failed: {}",
        String::from_utf8_lossy(&init.stderr)
    );

    let server = ModelServer::start(vec![
        Step::tool("Bash", json!({ "command": "ls" })),
        Step::tool("Bash", json!({ "command": "git status" })),
        Step::Text("All done.".to_owned()),
    ]);
    // The project's hooks keep the record in the project (.gavel/audit.db).
    let run = run_client(
        &sandbox,
        claude_command(&sandbox, &bin, &server),
        "claude",
        &server,
    );
    let result: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("claude -p printed no JSON result ({e}): {}", run.stdout));
    assert_eq!(
        result["permission_denials"],
        json!([]),
        "ls or git status was refused: {result:#}\n{}",
        server.summary()
    );
    assert!(
        server
            .tool_result(0)
            .unwrap_or_default()
            .contains("notes.txt"),
        "ls did not run: {}",
        server.summary()
    );
    assert!(
        server.tool_result(1).unwrap_or_default().contains("branch"),
        "git status did not run: {}",
        server.summary()
    );
    let db = sandbox.ws.join(".gavel/audit.db");
    let log = sandbox
        .bare()
        .args(["log", "--json", "--db"])
        .arg(&db)
        .arg("--workspace")
        .arg(&sandbox.ws)
        .output()
        .unwrap();
    let rows = json_lines(&log);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    for row in &rows {
        assert_eq!(row["action"], "allow", "{row:#}");
        assert_eq!(row["status"], "succeeded", "{row:#}");
    }
    let verify = sandbox
        .bare()
        .args(["verify", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(verify.status.success(), "{verify:?}");
}

/// The event a captured payload file was sent for: `<tag>-<NN>-<event>.json`.
fn captured_event(file: &Path) -> String {
    let stem = file.file_stem().unwrap().to_string_lossy();
    stem.splitn(3, '-').nth(2).unwrap().to_owned()
}

/// Whether `event` is the one before a tool runs, in any client's spelling.
fn is_pre_event(event: &str) -> bool {
    matches!(event, "PreToolUse" | "preToolUse" | "BeforeTool")
}

/// The captured session `tag` of `client`, its payload files in order.
fn captured_session(client: &str, tag: &str) -> Vec<PathBuf> {
    fixtures_in(&format!("clients/real/{client}"), "json")
        .into_iter()
        .filter(|f| {
            f.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{tag}-"))
        })
        .collect()
}

/// A captured payload with its placeholders filled in for `sandbox`.
fn captured_payload(sandbox: &Sandbox, file: &Path) -> String {
    std::fs::read_to_string(file)
        .unwrap()
        .replace("${WORKSPACE}", &sandbox.ws.to_string_lossy())
        .replace("${HOME}", &sandbox.root.join("home").to_string_lossy())
        .replace(
            "${COPILOT_HOME}",
            &sandbox.root.join("copilot-home").to_string_lossy(),
        )
}

#[test]
fn captured_real_sessions_replay_through_the_hook_and_verify() {
    // Needs no client: the payloads the real CLIs sent, in their order
    // (fixtures/clients/real/<client>/), go through `gavel hook <client>`.
    for client in ["claude-code", "codex", "gemini", "copilot"] {
        let dir = format!("clients/real/{client}");
        let tags: std::collections::BTreeSet<String> = fixtures_in(&dir, "json")
            .iter()
            .map(|f| {
                f.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .split('-')
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        for tag in tags {
            let sandbox = Sandbox::new();
            for file in captured_session(client, &tag) {
                let event = captured_event(&file);
                let payload = captured_payload(&sandbox, &file);
                let mut cmd = sandbox.gavel(&["hook", client]);
                cmd.arg("--policy").arg(policy());
                // Copilot's camelCase payloads do not name their event;
                // its Claude-compatible ones do.
                if client == "copilot" && !payload.contains("\"hook_event_name\"") {
                    cmd.args(["--event", &event]);
                }
                let output = cmd.write_stdin(payload).output().unwrap();
                let code = output.status.code();
                let accepted = if is_pre_event(&event) {
                    matches!(code, Some(0 | 2))
                } else {
                    code == Some(0)
                };
                assert!(
                    accepted,
                    "{}: exit {code:?}\nstdout: {}\nstderr: {}",
                    file.display(),
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            let verify = parse_json(&run_expecting(&mut sandbox.gavel(&["verify", "--json"]), 0));
            assert_eq!(verify["ok"], true, "{client} {tag}: {verify:#}");
            let rows = json_lines(&run_expecting(&mut sandbox.gavel(&["log", "--json"]), 0));
            let sudo: Vec<&Value> = rows
                .iter()
                .filter(|row| row["arguments"].to_string().contains(DENIED))
                .collect();
            assert!(
                sudo.iter().any(|row| row["action"] == "deny"),
                "{client} {tag}: `{DENIED}` was not denied: {rows:#?}"
            );
            // In the `ran` sessions the client ran everything (the capture
            // hook allowed it), so the record must say that a denied call ran.
            if tag == "ran" {
                assert!(
                    sudo.iter()
                        .any(|row| row["anomalies"].to_string().contains("ran_despite_deny")),
                    "{client}: the denied call that ran is no anomaly: {rows:#?}"
                );
            }
        }
    }
}

#[test]
fn copilot_claude_format_captured_payloads_get_the_rules_that_decide() {
    // Needs no client: the session Copilot CLI sent to its Claude-compatible
    // hooks (fixtures/clients/real/copilot/pascal-*), in order, to
    // `gavel hook copilot` with no `--event`, as its hooks file runs it.
    let sandbox = Sandbox::new();
    let mut answers = Vec::new();
    for file in captured_session("copilot", "pascal") {
        let mut cmd = sandbox.gavel(&["hook", "copilot"]);
        cmd.arg("--policy").arg(policy());
        let output = cmd
            .write_stdin(captured_payload(&sandbox, &file))
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}: {}",
            file.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        if is_pre_event(&captured_event(&file)) {
            let answer: Value = serde_json::from_slice(&output.stdout)
                .unwrap_or_else(|e| panic!("{}: no JSON answer ({e}): {output:?}", file.display()));
            answers.push(answer);
        }
    }
    let decisions: Vec<(&str, &str)> = answers
        .iter()
        .map(|a| {
            (
                a["permissionDecision"].as_str().unwrap_or_default(),
                a["permissionDecisionReason"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    // `Bash` `sudo ls`, `Bash` `echo ran > ran.txt`, `Read` of notes.txt.
    assert_eq!(decisions.len(), 3, "{answers:#?}");
    assert_eq!(decisions[0].0, "deny", "{answers:#?}");
    assert!(decisions[0].1.contains("[bash.hard_deny]"), "{answers:#?}");
    assert_eq!(decisions[1].0, "deny", "{answers:#?}");
    assert!(
        decisions[1].1.contains("[bash.requires_approval]"),
        "{answers:#?}"
    );
    assert_eq!(decisions[2].0, "allow", "{answers:#?}");

    let context = "(replayed capture)";
    let denied = call(&sandbox, DENIED, context);
    assert_eq!(denied["rule_id"], "bash.hard_deny", "{denied:#}");
    assert_eq!(denied["status"], "blocked", "{denied:#}");
    // The read is governed as gavel's `read_file` and its completion matched.
    let read = call(&sandbox, "notes.txt", context);
    assert_eq!(read["tool"], "read_file", "{read:#}");
    assert_eq!(read["action"], "allow", "{read:#}");
    assert_eq!(read["status"], "succeeded", "{read:#}");
    let verify = parse_json(&run_expecting(&mut sandbox.gavel(&["verify", "--json"]), 0));
    assert_eq!(verify["ok"], true, "{verify:#}");
}

/// While a client session runs: answers the first call that waits in the
/// pending queue with `gavel approve` or `gavel reject` from this other
/// process, or leaves it unanswered (`None`).
fn answer_when_pending(
    sandbox: &Sandbox,
    verb: Option<&'static str>,
) -> std::thread::JoinHandle<Option<String>> {
    let gavel = env!("CARGO_BIN_EXE_gavel");
    let (ws, db) = (sandbox.ws.clone(), sandbox.db.clone());
    std::thread::spawn(move || {
        let verb = verb?;
        let started = std::time::Instant::now();
        while started.elapsed() < SESSION_TIMEOUT {
            let output = Command::new(gavel)
                .args(["pending", "--json", "--workspace"])
                .arg(&ws)
                .arg("--db")
                .arg(&db)
                .output()
                .ok()?;
            let listed: Vec<Value> = String::from_utf8_lossy(&output.stdout)
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            if let Some(id) = listed.first().and_then(|c| c["call_id"].as_str()) {
                let answered = Command::new(gavel)
                    .args([verb, id, "--yes", "--workspace"])
                    .arg(&ws)
                    .arg("--db")
                    .arg(&db)
                    .status()
                    .ok()?;
                assert!(answered.success(), "gavel {verb} {id} failed");
                return Some(id.to_owned());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        None
    })
}

/// The model asks for the ask-level write, then says it is done.
fn asked_write(shell: &str, shell_input: &str) -> Vec<Step> {
    vec![
        Step::tool(shell, json!({ shell_input: ASKED })),
        Step::Text("All done.".to_owned()),
    ]
}

/// The asked write's call after `verb` (or no answer): run, channel `cli`,
/// for an approval; blocked otherwise; the record whole.
fn check_waited(sandbox: &Sandbox, server: &ModelServer, run: &Run, verb: Option<&str>) {
    let context = format!(
        "--- client stdout:\n{}\n--- client stderr:\n{}\n--- model requests:\n{}",
        tail(&run.stdout),
        tail(&run.stderr),
        server.summary()
    );
    let asked = call(sandbox, "echo ran", &context);
    let id = asked["call_id"].as_str().unwrap();
    let shown = parse_json(&run_expecting(
        &mut sandbox.gavel(&["show", id, "--json"]),
        0,
    ));
    let events = shown.get("events").cloned().unwrap_or(shown);
    let approvals: Vec<Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "approval")
        .map(|e| e["payload"].clone())
        .collect();
    assert_eq!(
        approvals[0]["status"], "pending",
        "{approvals:?}\n{context}"
    );
    assert_eq!(approvals[0]["channel"], "queue", "{approvals:?}\n{context}");
    match verb {
        Some("approve") => {
            assert_eq!(asked["approval"], "approved", "{asked:#}\n{context}");
            assert_eq!(asked["status"], "succeeded", "{asked:#}\n{context}");
            assert_eq!(approvals[1]["channel"], "cli", "{approvals:?}");
            assert!(
                sandbox.ws.join("ran.txt").exists(),
                "the approved write did not run\n{context}"
            );
        }
        Some(_) => {
            assert_eq!(asked["approval"], "rejected", "{asked:#}\n{context}");
            assert_eq!(asked["status"], "blocked", "{asked:#}\n{context}");
            assert!(
                !sandbox.ws.join("ran.txt").exists(),
                "a rejected write ran\n{context}"
            );
        }
        None => {
            assert_eq!(asked["approval"], "cancelled", "{asked:#}\n{context}");
            assert_eq!(asked["status"], "blocked", "{asked:#}\n{context}");
            assert_eq!(approvals[1]["cause"], "timeout", "{approvals:?}");
            assert!(
                !sandbox.ws.join("ran.txt").exists(),
                "an unanswered write ran\n{context}"
            );
        }
    }
    let verify = parse_json(&run_expecting(&mut sandbox.gavel(&["verify", "--json"]), 0));
    assert_eq!(verify["ok"], true, "{verify:#}");
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn codex_asked_write_waits_for_gavel_approve_from_another_process() {
    let Some(bin) = installed("codex") else {
        return;
    };
    for (verb, wait) in [
        (Some("approve"), "60s"),
        (Some("reject"), "60s"),
        (None, "2s"),
    ] {
        let sandbox = Sandbox::new();
        let server = ModelServer::start(asked_write("exec_command", "cmd"));
        let answerer = answer_when_pending(&sandbox, verb);
        let run = codex_session_with(
            &sandbox,
            &bin,
            &server,
            &format!(" --ask wait={wait}"),
            &policy(),
        );
        assert_eq!(answerer.join().unwrap().is_some(), verb.is_some());
        check_waited(&sandbox, &server, &run, verb);
    }
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn gemini_asked_write_waits_for_gavel_approve_from_another_process() {
    let Some(bin) = installed("gemini") else {
        return;
    };
    for (verb, wait) in [
        (Some("approve"), "60s"),
        (Some("reject"), "60s"),
        (None, "2s"),
    ] {
        let sandbox = Sandbox::new();
        let server = ModelServer::start(asked_write("run_shell_command", "command"));
        let answerer = answer_when_pending(&sandbox, verb);
        let run = gemini_session_with(
            &sandbox,
            &bin,
            &server,
            &format!(" --ask wait={wait}"),
            &policy(),
        );
        assert_eq!(answerer.join().unwrap().is_some(), verb.is_some());
        check_waited(&sandbox, &server, &run, verb);
    }
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn copilot_asked_write_waits_for_gavel_approve_from_another_process() {
    let Some(bin) = installed("copilot") else {
        return;
    };
    for (verb, wait) in [
        (Some("approve"), "60s"),
        (Some("reject"), "60s"),
        (None, "2s"),
    ] {
        let sandbox = Sandbox::new();
        let server = ModelServer::start(asked_write("bash", "command"));
        let answerer = answer_when_pending(&sandbox, verb);
        let run = copilot_session_with(
            &sandbox,
            &bin,
            &server,
            &format!(" --ask wait={wait}"),
            &policy(),
        );
        assert_eq!(answerer.join().unwrap().is_some(), verb.is_some());
        check_waited(&sandbox, &server, &run, verb);
    }
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn claude_code_asked_write_waits_for_gavel_approve_from_another_process() {
    let Some(bin) = installed("claude-code") else {
        return;
    };
    for (verb, wait) in [
        (Some("approve"), "60s"),
        (Some("reject"), "60s"),
        (None, "2s"),
    ] {
        let sandbox = Sandbox::new();
        let server = ModelServer::start(asked_write("Bash", "command"));
        let command = hook_command(
            &sandbox,
            "claude-code",
            &format!(" --ask wait={wait}"),
            &policy(),
        );
        let mut settings = claude_settings(&command);
        // Claude Code's hook timeout (seconds) above the wait.
        for groups in settings["hooks"].as_object_mut().unwrap().values_mut() {
            for group in groups.as_array_mut().unwrap() {
                for hook in group["hooks"].as_array_mut().unwrap() {
                    hook["timeout"] = json!(90);
                }
            }
        }
        sandbox.write(".claude/settings.json", &settings.to_string());
        let answerer = answer_when_pending(&sandbox, verb);
        let run = run_client(
            &sandbox,
            claude_command(&sandbox, &bin, &server),
            "claude",
            &server,
        );
        assert_eq!(answerer.join().unwrap().is_some(), verb.is_some());
        check_waited(&sandbox, &server, &run, verb);
    }
}
