//! A deterministic mix of tool calls shaped like an agent's session, and the
//! workspace it runs in. Per 100 calls: 45 reads and 8 globs inside the
//! workspace (allowed), 7 escapes (denied), 12 writes and 4 edits (asked:
//! most approved), 15 other shell commands (asked: rejected, so the harness
//! never spawns a shell), 4 hard-denied shell commands, 4 unknown tools and
//! 1 call with invalid arguments.

use std::path::Path;

use gavel::policy::{Action, Policy};
use gavel::{ToolRequest, Workspace};
use serde_json::{Value, json};

use crate::Rng;

/// The rule `gavel log --rule` selects in the benchmark (about 4% of calls).
pub const SELECTIVE_RULE: &str = "bash.hard_deny";

/// Files of the benchmark workspace and their sizes in bytes.
const FILES: &[(&str, usize)] = &[
    ("README.md", 1_800),
    ("Cargo.toml", 600),
    ("src/main.rs", 2_400),
    ("src/lib.rs", 6_000),
    ("src/parse.rs", 9_000),
    ("docs/guide.md", 4_000),
    ("a.txt", 120),
];

/// Creates the workspace's files (idempotent).
pub fn setup_workspace(dir: &Path) -> std::io::Result<()> {
    for (name, size) in FILES {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let line = format!("// {name}: a line of plausible source text for the benchmark\n");
        let text: String = line.chars().cycle().take(*size).collect();
        std::fs::write(path, text)?;
    }
    std::fs::create_dir_all(dir.join("notes"))?;
    Ok(())
}

/// One call of the mix: the request and, for an `ask`, the answer.
#[derive(Debug, Clone)]
pub struct Call {
    pub request: ToolRequest,
    /// `Some(approved)` when the policy asks about this call.
    pub answer: Option<bool>,
}

impl Call {
    /// Events the call records: request, decision, approval (asks only), result.
    pub fn events(&self) -> u64 {
        if self.answer.is_some() { 4 } else { 3 }
    }

    /// The `tool_use` line `gavel serve --stdio` reads.
    pub fn request_line(&self) -> String {
        json!({
            "type": "tool_use",
            "id": self.request.tool_use_id,
            "name": self.request.name,
            "input": self.request.arguments,
        })
        .to_string()
    }

    /// The `approval` line that answers this call's `approval_request`.
    pub fn approval_line(&self) -> Option<String> {
        self.answer.map(|approved| {
            json!({"type": "approval", "id": self.request.tool_use_id, "approved": approved})
                .to_string()
        })
    }
}

/// One of `items`, uniformly.
fn pick<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    items[rng.below(items.len() as u64) as usize]
}

/// The tool and arguments of one call drawn from the mix.
pub fn draw(rng: &mut Rng, n: u64) -> (&'static str, Value) {
    let roll = rng.below(100);
    match roll {
        0..45 => {
            let file = FILES[rng.below(FILES.len() as u64) as usize].0;
            ("read_file", json!({ "path": file }))
        }
        45..53 => (
            "glob",
            json!({ "pattern": pick(rng, &["src/**/*.rs", "*.md", "docs/*", "**/*.toml"]) }),
        ),
        53..59 => (
            "read_file",
            json!({ "path": pick(rng, &["../secret.txt", "/etc/passwd", "~/.ssh/id_rsa", "src/../../x"]) }),
        ),
        59..60 => ("glob", json!({ "pattern": "/etc/*" })),
        60..72 => (
            "write_file",
            json!({
                "path": format!("notes/n{}.md", n % 32),
                "content": format!("# note {n}\n\nwritten by the benchmark mix; {}\n", "x".repeat(120)),
            }),
        ),
        72..76 => (
            "edit_file",
            json!({
                "path": "src/main.rs",
                "old_text": "plausible source",
                "new_text": "plausible source",
            }),
        ),
        76..91 => (
            "bash",
            json!({ "command": pick(rng, &["cargo test", "ls -la src", "git status", "cargo build --release", "grep -rn TODO src"]) }),
        ),
        91..95 => (
            "bash",
            json!({ "command": pick(rng, &["sudo rm -rf /var/log", "rm -rf /", "cd /tmp && sudo make install", "dd if=/dev/zero of=/dev/sda"]) }),
        ),
        95..99 => (
            pick(
                rng,
                &["mcp__github__create_issue", "WebFetch", "notebook_edit"],
            ),
            json!({ "title": "benchmark", "body": "an unknown tool" }),
        ),
        _ => ("read_file", json!({})),
    }
}

/// Calls of the mix until they record at least `events` events. Asks are
/// approved, except shell commands (rejected: the harness never spawns a
/// shell) and one write in five (rejected).
pub fn calls(workspace: &Workspace, events: u64, id_prefix: &str, seed: u64) -> Vec<Call> {
    let policy = Policy::builtin();
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut total = 0;
    let mut n = 0u64;
    while total < events {
        n += 1;
        let (tool, arguments) = draw(&mut rng, n);
        let request = ToolRequest::new(format!("{id_prefix}{n}"), tool, arguments);
        let decision = policy.decide(&request, &workspace.facts(&request));
        let answer = (decision.action == Action::Ask).then(|| match tool {
            "bash" => false,
            "write_file" => rng.below(5) != 0,
            _ => true,
        });
        let call = Call { request, answer };
        total += call.events();
        out.push(call);
    }
    out
}

/// Twelve requests, one of each kind in the mix, for the decide benchmarks.
pub fn decide_requests() -> Vec<ToolRequest> {
    let r = |id: &str, tool: &str, args: Value| ToolRequest::new(id, tool, args);
    vec![
        r("d1", "read_file", json!({"path": "src/main.rs"})),
        r("d2", "glob", json!({"pattern": "src/**/*.rs"})),
        r("d3", "read_file", json!({"path": "../secret.txt"})),
        r("d4", "glob", json!({"pattern": "/etc/*"})),
        r(
            "d5",
            "write_file",
            json!({"path": "notes/a.md", "content": "hello"}),
        ),
        r(
            "d6",
            "edit_file",
            json!({"path": "src/lib.rs", "old_text": "a", "new_text": "b"}),
        ),
        r("d7", "bash", json!({"command": "cargo test --workspace"})),
        r(
            "d8",
            "bash",
            json!({"command": "cd /tmp && sudo make install"}),
        ),
        r("d9", "bash", json!({"command": "rm -rf /"})),
        r(
            "d10",
            "mcp__github__create_issue",
            json!({"title": "x", "body": "y"}),
        ),
        r("d11", "read_file", json!({})),
        r(
            "d12",
            "bash",
            json!({"command": "echo $(git rev-parse HEAD) > notes/head.txt"}),
        ),
    ]
}
