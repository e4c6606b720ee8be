//! The rewrite under the real agent CLIs (pinned in
//! `fixtures/clients/real/clients.txt`, scripted model server, as
//! `real_clients`): the policy allows `perl` under `workspace-write`, so
//! the hook answers the model's shell call with its command rewritten to
//! run under `gavel exec`. The command writes a file inside the workspace
//! (it appears) and one beside it (the kernel refuses: it never appears),
//! and says what happened to each; the model must receive the command's
//! own words, and the call is completed as decided (no anomaly). Claude
//! Code also sends the call with `dangerouslyDisableSandbox: true`: it is
//! contained all the same. Copilot CLI runs with its own camelCase hooks
//! and its Claude-compatible ones.

use std::path::PathBuf;

use serde_json::json;

use super::real_clients::{
    Run, call, claude_session, codex_session_with, copilot_claude_session, copilot_session_with,
    gemini_session_with, installed, tail,
};
use super::real_clients_model::{ModelServer, Step};
use super::support::{Sandbox, json as parse_json, run_expecting};

/// A workspace whose policy (`gavel.toml`) allows `perl` under
/// `workspace-write` and asks for any other shell command, with the
/// files the sandbox protects in place. Returns the policy's path.
fn workspace(sandbox: &Sandbox) -> PathBuf {
    let policy = sandbox.write(
        "gavel.toml",
        "name = \"real-clients-exec\"\n\
         [[rules]]\nid = \"perl.contained\"\naction = \"allow\"\ntools = [\"bash\"]\n\
         commands = [{ program = [\"perl\"] }]\nsandbox = \"workspace-write\"\n\
         reason = \"perl runs contained\"\n\
         [[rules]]\nid = \"bash.requires_approval\"\naction = \"ask\"\ntools = [\"bash\"]\n\
         reason = \"approval required\"\n",
    );
    sandbox.write(".git/config", "[core]\n");
    std::fs::create_dir_all(sandbox.ws.join(".git/hooks")).unwrap();
    policy
}

/// A Perl command that writes `inside` (in the workspace) and `outside`
/// (beside it), saying what became of each, and exits 3.
fn writes(sandbox: &Sandbox, inside: &str, outside: &str) -> String {
    format!(
        "perl -e 'open(I, \">{inside}\") and print \"inside: written\\n\"; \
         open(O, \">{}/{outside}\") and print \"outside: written\\n\" \
         or print \"outside: $!\\n\"; exit 3'",
        sandbox.outside.display()
    )
}

/// The checks of a session whose model ran `writes(inside, outside)` as
/// its tool result number `n`.
fn check_contained(
    sandbox: &Sandbox,
    server: &ModelServer,
    run: &Run,
    n: usize,
    (inside, outside): (&str, &str),
) {
    let context = format!(
        "--- client stdout:\n{}\n--- client stderr:\n{}\n--- model requests:\n{}",
        tail(&run.stdout),
        tail(&run.stderr),
        server.summary()
    );
    // The kernel, not the client, stopped the write outside.
    assert!(
        sandbox.ws.join(inside).exists(),
        "the write inside the workspace did not happen\n{context}"
    );
    assert!(
        !sandbox.outside.join(outside).exists(),
        "the write outside the profile went through\n{context}"
    );
    // The model got the command's own words.
    let told = server.tool_result(n).unwrap_or_default();
    assert!(
        told.contains("inside: written") && told.contains("outside: "),
        "the model was not told the command's output: {told:?}\n{context}"
    );
    assert!(
        !told.contains("outside: written"),
        "the model was told the write outside worked: {told:?}\n{context}"
    );
    // Recorded as decided, under its sandbox, and completed as that call.
    let recorded = call(sandbox, outside, &context);
    assert_eq!(recorded["action"], "allow", "{recorded:#}\n{context}");
    assert_eq!(recorded["rule_id"], "perl.contained", "{recorded:#}");
    assert!(
        matches!(recorded["status"].as_str(), Some("succeeded" | "failed")),
        "the call was not completed: {recorded:#}\n{context}"
    );
    assert_eq!(recorded["anomalies"], json!([]), "{recorded:#}\n{context}");
    let id = recorded["call_id"].as_str().unwrap();
    let shown = parse_json(&run_expecting(
        &mut sandbox.gavel(&["show", id, "--json"]),
        0,
    ));
    let sandboxed = shown.to_string();
    assert!(
        sandboxed.contains("\"profile\":\"workspace-write\"")
            && sandboxed.contains("\"enforcement\":\"full\""),
        "{shown:#}"
    );
    let verify = parse_json(&run_expecting(&mut sandbox.gavel(&["verify", "--json"]), 0));
    assert_eq!(verify["ok"], true, "{verify:#}");
}

/// One contained shell call by the model's `shell` tool (`input` its
/// command field), then done.
fn one_call(shell: &str, input: &str, command: &str) -> Vec<Step> {
    vec![
        Step::tool(shell, json!({ input: command })),
        Step::Text("All done.".to_owned()),
    ]
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn claude_code_runs_an_allowed_command_contained_even_unsandboxed() {
    let Some(bin) = installed("claude-code") else {
        return;
    };
    let sandbox = Sandbox::new();
    let policy = workspace(&sandbox);
    let first = writes(&sandbox, "inside.txt", "escaped.txt");
    let second = writes(&sandbox, "inside2.txt", "escaped2.txt");
    let server = ModelServer::start(vec![
        Step::tool("Bash", json!({ "command": first })),
        // The model asks Claude Code to run it outside Claude Code's own
        // sandbox: gavel's stands.
        Step::tool(
            "Bash",
            json!({ "command": second, "dangerouslyDisableSandbox": true }),
        ),
        Step::Text("All done.".to_owned()),
    ]);
    let (run, result) = claude_session(&sandbox, &bin, &server, &policy, &[]);
    assert_eq!(result["permission_denials"], json!([]), "{result:#}");
    check_contained(&sandbox, &server, &run, 0, ("inside.txt", "escaped.txt"));
    check_contained(&sandbox, &server, &run, 1, ("inside2.txt", "escaped2.txt"));
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn codex_runs_an_allowed_command_contained() {
    let Some(bin) = installed("codex") else {
        return;
    };
    let sandbox = Sandbox::new();
    let policy = workspace(&sandbox);
    let command = writes(&sandbox, "inside.txt", "escaped.txt");
    let server = ModelServer::start(one_call("exec_command", "cmd", &command));
    let run = codex_session_with(&sandbox, &bin, &server, "", &policy);
    check_contained(&sandbox, &server, &run, 0, ("inside.txt", "escaped.txt"));
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn gemini_runs_an_allowed_command_contained() {
    let Some(bin) = installed("gemini") else {
        return;
    };
    let sandbox = Sandbox::new();
    let policy = workspace(&sandbox);
    let command = writes(&sandbox, "inside.txt", "escaped.txt");
    let server = ModelServer::start(one_call("run_shell_command", "command", &command));
    let run = gemini_session_with(&sandbox, &bin, &server, "", &policy);
    check_contained(&sandbox, &server, &run, 0, ("inside.txt", "escaped.txt"));
}

#[test]
#[ignore = "needs the agent CLIs: scripts/install-clients, then cargo test -- --ignored (CI runs it)"]
fn copilot_runs_an_allowed_command_contained() {
    let Some(bin) = installed("copilot") else {
        return;
    };
    for claude_format in [false, true] {
        let sandbox = Sandbox::new();
        let policy = workspace(&sandbox);
        let command = writes(&sandbox, "inside.txt", "escaped.txt");
        let server = ModelServer::start(one_call("bash", "command", &command));
        let run = match claude_format {
            false => copilot_session_with(&sandbox, &bin, &server, "", &policy),
            true => copilot_claude_session(&sandbox, &bin, &server, &policy),
        };
        check_contained(&sandbox, &server, &run, 0, ("inside.txt", "escaped.txt"));
    }
}
