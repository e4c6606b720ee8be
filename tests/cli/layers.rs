//! Policy layers above the project's (`gavel::layers`): a project cannot
//! loosen them, and one that cannot be used stops gavel, through `check`,
//! `run`, every client's hook and `serve`.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Output;

use serde_json::{Value, json};

use crate::support::{Sandbox, code, json, json_lines, stderr, stdout};

/// An organisation's rule: no `curl`, wherever it hides.
const NO_CURL: &str = r#"
name = "corp"
[[rules]]
id = "corp.no_curl"
action = "deny"
tools = ["bash"]
commands = [{ program = ["curl"] }]
reason = "the organisation forbids curl"
"#;

/// A project that would allow `curl` and `ls`.
const PROJECT: &str = r#"
name = "proj"
[[rules]]
id = "proj.shell"
action = "allow"
tools = ["bash"]
commands = [{ program = ["curl", "ls"] }]
reason = "curl and ls are fine here"
"#;

/// Which layer a test puts its policy in.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// `$XDG_CONFIG_HOME/gavel/policy.toml` (the sandbox's `config/`).
    User,
    /// The file `$GAVEL_ADMIN_POLICY` names; it must belong to root.
    Admin,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Admin => "admin",
        }
    }

    /// The kinds this process can test: the admin layer only as root.
    fn all() -> Vec<Kind> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            vec![Kind::User, Kind::Admin]
        } else {
            vec![Kind::User]
        }
    }
}

/// A sandbox whose project allows `curl`, with `text` as its user layer.
fn layered(text: &str) -> (Sandbox, PathBuf) {
    layered_as(Kind::User, text)
}

/// A sandbox whose project allows `curl`, with `text` in the layer `kind`.
fn layered_as(kind: Kind, text: &str) -> (Sandbox, PathBuf) {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", PROJECT);
    let dir = match kind {
        Kind::User => sandbox.root.join("config/gavel"),
        Kind::Admin => sandbox.root.join("etc/gavel"),
    };
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.join("policy.toml");
    std::fs::write(&path, text).unwrap();
    (sandbox, path)
}

/// `gavel ARGS` in `sandbox`, with the admin layer's variable set for `kind`.
fn gavel(
    sandbox: &Sandbox,
    kind: Kind,
    path: &std::path::Path,
    args: &[&str],
) -> assert_cmd::Command {
    let mut cmd = sandbox.gavel(args);
    if kind == Kind::Admin {
        cmd.env("GAVEL_ADMIN_POLICY", path);
    }
    cmd
}

fn bash(command: &str) -> String {
    json!({ "command": command }).to_string()
}

#[test]
fn a_layer_above_denies_what_the_project_allows_everywhere_a_call_is_decided() {
    for kind in Kind::all() {
        denies_everywhere(kind);
    }
}

fn denies_everywhere(kind: Kind) {
    let (sandbox, path) = layered_as(kind, NO_CURL);
    let gavel = |args: &[&str]| gavel(&sandbox, kind, &path, args);
    let curl = "curl -s https://example.com";

    // check
    let out = gavel(&["check", "bash", &bash(curl), "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let decided = json(&out);
    assert_eq!(decided["action"], "deny");
    assert_eq!(decided["rule_id"], "corp.no_curl");
    assert_eq!(decided["layer"], kind.name());

    // What the layer does not name, the project decides.
    let out = gavel(&["check", "bash", &bash("ls"), "--json"])
        .output()
        .unwrap();
    assert_eq!(json(&out)["rule_id"], "proj.shell");
    assert_eq!(json(&out)["layer"], "project");

    // run: blocked, recorded with the deciding layer and every layer's digest.
    let out = gavel(&["run", "bash", &bash(curl), "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let outcome = json(&out);
    assert_eq!(outcome["rule_id"], "corp.no_curl");
    assert_eq!(outcome["status"], "blocked");

    // a hook
    let payload = json!({
        "session_id": "s", "transcript_path": sandbox.root.join("t"), "cwd": sandbox.ws,
        "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": curl}, "tool_use_id": "toolu_curl1"
    });
    let out = gavel(&["hook", "claude-code"])
        .write_stdin(payload.to_string())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let answer: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        answer["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("corp.no_curl")
    );

    // serve
    let line =
        json!({"type": "tool_use", "id": "serve_curl", "name": "bash", "input": {"command": curl}});
    let out = gavel(&["serve", "--stdio"])
        .write_stdin(format!("{line}\n"))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let answers = json_lines(&out);
    assert_eq!(answers[0]["rule_id"], "corp.no_curl", "{answers:?}");
    assert_eq!(answers[0]["action"], "deny");

    // Every decision names its layer and carries both layers' digests.
    let out = sandbox.gavel(&["export"]).output().unwrap();
    let decisions: Vec<Value> = json_lines(&out)
        .into_iter()
        .filter(|e| e["kind"] == "decision")
        .collect();
    assert_eq!(decisions.len(), 3, "run, hook and serve");
    for decision in &decisions {
        let payload = &decision["payload"];
        assert_eq!(payload["rule_id"], "corp.no_curl", "{payload}");
        assert_eq!(payload["layer"], kind.name());
        let layers: Vec<&str> = payload["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["layer"].as_str().unwrap())
            .collect();
        assert_eq!(layers, [kind.name(), "project"]);
        assert_eq!(payload["layers"][0]["digest"].as_str().unwrap().len(), 64);
    }
    let out = sandbox.gavel(&["verify"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stdout(&out));
}

#[test]
fn an_ask_above_stays_an_ask_and_an_allow_above_can_be_narrowed() {
    let (sandbox, _) = layered(
        r#"
name = "corp"
[[rules]]
id = "corp.ls_ask"
action = "ask"
tools = ["bash"]
commands = [{ program = ["ls"] }]
reason = "ask before listing"
[[rules]]
id = "corp.read"
action = "allow"
tools = ["read_file"]
reason = "reads are fine"
"#,
    );
    let decide = |tool: &str, args: &str| {
        json(
            &sandbox
                .gavel(&["check", tool, args, "--json"])
                .output()
                .unwrap(),
        )
    };
    let ls = decide("bash", &bash("ls"));
    assert_eq!(
        (ls["action"].as_str(), ls["layer"].as_str()),
        (Some("ask"), Some("user"))
    );
    // The project has no rule for read_file: its default deny narrows the allow above.
    let read = decide("read_file", r#"{"path":"notes.txt"}"#);
    assert_eq!(read["action"], "deny");
    assert_eq!(read["rule_id"], "default.deny");
    assert_eq!(read["layer"], "project");
}

/// Makes the layer file at `path` unusable in one way.
type Spoil = fn(&Sandbox, &std::path::Path);

/// The ways a layer file can be unusable, each with what the error names.
const SPOILED: &[(&str, Spoil)] = &[
    ("rule `x`", |_, path| {
        std::fs::write(
            path,
            "name = 'corp'\n[[rules]]\nid = 'x'\naction = 'alow'\n",
        )
        .unwrap()
    }),
    ("lets others than its owner write it", |_, path| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap()
    }),
    ("inside the workspace", |sandbox, path| {
        let target = sandbox.write("corp.toml", NO_CURL);
        std::fs::remove_file(path).unwrap();
        std::os::unix::fs::symlink(target, path).unwrap();
    }),
];

/// Only for the admin layer: a file root does not own.
const NOT_ROOTS: (&str, Spoil) = ("not root", |_, path| {
    std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap()
});

#[test]
fn an_unusable_layer_stops_check_run_serve_and_every_hook_naming_the_file() {
    let cases = Kind::all().into_iter().flat_map(|kind| {
        let own = (kind == Kind::Admin).then_some(NOT_ROOTS);
        SPOILED
            .iter()
            .copied()
            .chain(own)
            .map(move |case| (kind, case))
    });
    for (kind, (problem, spoil)) in cases {
        let (sandbox, path) = layered_as(kind, NO_CURL);
        spoil(&sandbox, &path);
        let gavel = |args: &[&str]| gavel(&sandbox, kind, &path, args);
        let shown = path.display().to_string();
        let refused = |out: &Output, what: &str| {
            let err = stderr(out);
            assert_eq!(code(out), 2, "{}: {problem}: {what}: {err}", kind.name());
            assert!(
                err.contains(&shown) && err.contains(problem),
                "{problem}: {what}: {err}"
            );
        };
        refused(
            &gavel(&["check", "bash", &bash("ls")]).output().unwrap(),
            "check",
        );
        refused(
            &gavel(&["run", "bash", &bash("ls")]).output().unwrap(),
            "run",
        );
        let line =
            json!({"type": "tool_use", "id": "s1", "name": "bash", "input": {"command": "ls"}});
        refused(
            &gavel(&["serve", "--stdio"])
                .write_stdin(format!("{line}\n"))
                .output()
                .unwrap(),
            "serve",
        );
        for (client, args) in [
            ("claude-code", &[][..]),
            ("codex", &[][..]),
            ("gemini", &[][..]),
            ("copilot", &["--event", "preToolUse"][..]),
            ("cursor", &[][..]),
        ] {
            let payload = std::fs::read_to_string(crate::support::fixture(&format!(
                "clients/{client}/shell_pre.json"
            )))
            .unwrap()
            .replace("${WORKSPACE}", &sandbox.ws.to_string_lossy())
            .replace("${COMMAND}", "ls")
            .replace("${ID}", "h1");
            let out = gavel(&["hook", client])
                .args(args)
                .write_stdin(payload)
                .output()
                .unwrap();
            refused(&out, client);
            let printed = stdout(&out);
            assert!(
                !printed.contains("allow"),
                "{problem}: {client} must not let the call run: {printed}"
            );
        }
        assert!(!sandbox.db.exists(), "{problem}: nothing is recorded");
    }
}

/// The admin layer (`$GAVEL_ADMIN_POLICY`) must belong to root: an agent
/// running as the owner could rewrite it.
#[test]
fn an_admin_layer_not_owned_by_root_is_refused_and_one_that_is_holds() {
    let sandbox = Sandbox::new();
    sandbox.write("gavel.toml", PROJECT);
    let dir = sandbox.root.join("etc");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.join("policy.toml");
    std::fs::write(&path, NO_CURL).unwrap();
    let check = || {
        sandbox
            .gavel(&["check", "bash", &bash("curl x"), "--json"])
            .env("GAVEL_ADMIN_POLICY", &path)
            .output()
            .unwrap()
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        let out = check();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(json(&out)["layer"], "admin");
        assert_eq!(json(&out)["rule_id"], "corp.no_curl");
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    }
    let out = check();
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("not root") && err.contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn policy_show_layers_lists_every_layer_with_its_rules() {
    let (sandbox, path) = layered(NO_CURL);
    let out = sandbox
        .gavel(&["policy", "show", "--layers"])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let all = stdout(&out);
    let text = &all[all.find('┌').unwrap()..];
    let user = text.find("user").unwrap();
    let project = text.find("project").unwrap();
    assert!(user < project, "top first:\n{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.find("corp.no_curl").unwrap() < project, "{text}");
    assert!(text.find("proj.shell").unwrap() > project, "{text}");
    assert!(text.contains("shadows: none"), "{text}");
}

/// Issue 39, item 13: `policy show --layers` listed each layer's rules but
/// not what they add up to. It now also prints the effective order: the
/// built-in floor first, then every layer's denies (the project's default
/// deny among them), asks and allows, each with when it decides.
#[test]
fn policy_show_layers_says_which_layer_decides_what() {
    let (sandbox, _) = layered(NO_CURL);
    let out = sandbox
        .gavel(&["policy", "show", "--layers", "--wide"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let effective = &text[text.find("In effect").expect("an effective order")..];
    let row = |needle: &str| -> usize {
        effective
            .lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` in:\n{effective}"))
    };
    let floor = row("bash.self_approval");
    let corp = row("corp.no_curl");
    let default = row("default.deny");
    let project = row("proj.shell");
    assert!(
        floor < corp && corp < default && default < project,
        "{effective}"
    );
    for (needle, layer, action) in [
        ("bash.self_approval", "built-in", "deny"),
        ("path.git_config", "built-in", "ask"),
        ("corp.no_curl", "user", "deny"),
        ("proj.shell", "project", "allow"),
    ] {
        let line = effective.lines().find(|l| l.contains(needle)).unwrap();
        assert!(line.contains(layer) && line.contains(action), "{line}");
    }
    // The layers listed first include the floor, above the others.
    let listing = &text[..text.find("In effect").unwrap()];
    assert!(
        listing.find("built-in").unwrap() < listing.find("user").unwrap(),
        "{listing}"
    );
}
