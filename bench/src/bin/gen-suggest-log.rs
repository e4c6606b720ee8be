//! Records a log shaped for `gavel policy suggest`, in-process through
//! gavel's own recording path (`GovernedRunner`, `Store`, durability
//! normal), with handlers that run nothing: sessions of calls with many
//! shapes to learn from (program and subcommand variants, writes across a
//! tree of folders, an MCP tool), the negatives that must stop some of
//! them (a rejected `npm run deploy`, a rejected forced push, rejected
//! writes under one folder, a rejected MCP tool), floor programs approved
//! often (`python3`, `npx`), hard denies and escapes.
//!
//! usage: gen-suggest-log --workspace DIR --db FILE --events N [--sessions S] [--seed S]

use std::path::PathBuf;
use std::time::Instant;

use gavel::policy::Policy;
use gavel::principal::Principal;
use gavel::store::{Durability, Store};
use gavel::tools::{Registry, ToolContext, ToolError, ToolHandler, ToolOutput};
use gavel::{ApprovalStatus, Decision, GovernedRunner, ToolRequest, Workspace};
use gavel_bench::{Rng, flag, required};
use serde_json::{Value, json};

const USAGE: &str =
    "gen-suggest-log --workspace DIR --db FILE --events N [--sessions S] [--seed S]";

/// A handler that runs nothing and succeeds.
struct Nothing;

impl ToolHandler for Nothing {
    fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

/// One call: the tool, its arguments and, if asked, the answer.
fn draw(rng: &mut Rng, n: u64) -> (String, Value, ApprovalStatus) {
    use ApprovalStatus::{Approved, Cancelled, Rejected};
    let pick =
        |rng: &mut Rng, items: &[&str]| items[rng.below(items.len() as u64) as usize].to_owned();
    let bash = |c: String| ("bash".to_owned(), json!({ "command": c }));
    let (tool, arguments, answer) = match rng.below(100) {
        0..25 => (
            "read_file".to_owned(),
            json!({ "path": pick(rng, &["README.md", "src/lib.rs", "Cargo.toml"]) }),
            Approved,
        ),
        25..40 => {
            let folder = rng.below(40);
            let path = format!("src/m{folder}/f{}.rs", rng.below(25));
            let answer = if folder == 13 { Rejected } else { Approved };
            (
                "write_file".to_owned(),
                json!({ "path": path, "content": "x" }),
                answer,
            )
        }
        40..44 => (
            "edit_file".to_owned(),
            json!({ "path": format!("docs/d{}.md", rng.below(12)), "old_text": "a", "new_text": "b" }),
            Approved,
        ),
        44..52 => {
            let (t, a) = bash(format!("cargo test -p crate{}", rng.below(50)));
            (t, a, Approved)
        }
        52..57 => {
            let script = pick(rng, &["build", "lint", "fmt", "test", "deploy"]);
            let answer = if script == "deploy" {
                Rejected
            } else {
                Approved
            };
            let (t, a) = bash(format!("npm run {script}"));
            (t, a, answer)
        }
        57..61 => {
            let (t, a) = bash(format!("git commit -am 'change {n}'"));
            (t, a, Approved)
        }
        61..64 => {
            let forced = rng.below(10) == 0;
            let (t, a) = bash(if forced {
                "git push --force origin main".to_owned()
            } else {
                "git push origin main".to_owned()
            });
            (t, a, if forced { Rejected } else { Approved })
        }
        64..68 => {
            let (t, a) = bash(format!("make t{} -j{}", rng.below(30), rng.below(9)));
            (t, a, Approved)
        }
        68..72 => {
            let (t, a) = bash(pick(
                rng,
                &[
                    "python3 scripts/gen.py",
                    "python3 -m pytest",
                    "npx prettier --write src",
                ],
            ));
            (t, a, Approved)
        }
        72..76 => {
            let (t, a) = bash(format!("git show {:x}", rng.next_u64() >> 8));
            (t, a, Approved)
        }
        76..84 => {
            let (t, a) = bash(pick(rng, &["rm -rf /", "sudo ls", "cat /etc/passwd"]));
            (t, a, Rejected)
        }
        84..92 => (
            "mcp__github__get_issue".to_owned(),
            json!({ "repo": "app", "number": rng.below(5000) }),
            Approved,
        ),
        92..94 => (
            "mcp__github__delete_repo".to_owned(),
            json!({ "repo": "app" }),
            Rejected,
        ),
        94..97 => {
            let (t, a) = bash(format!("cargo build --release --bin b{}", rng.below(5)));
            (t, a, Cancelled)
        }
        _ => (
            "read_file".to_owned(),
            json!({ "path": "../outside.txt" }),
            Approved,
        ),
    };
    (tool, arguments, answer)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(required(&args, "--workspace", USAGE));
    let db = PathBuf::from(required(&args, "--db", USAGE));
    let events: u64 = required(&args, "--events", USAGE).parse()?;
    let sessions: u64 = flag(&args, "--sessions").map_or(Ok(100), |s| s.parse())?;
    let seed: u64 = flag(&args, "--seed").map_or(Ok(1), |s| s.parse())?;
    std::fs::create_dir_all(&dir)?;
    let workspace = Workspace::open(&dir)?;
    let mut store = Store::open(&db, Durability::Normal)?;
    let runners: Vec<GovernedRunner> = (0..sessions.max(1))
        .map(|s| {
            let mut registry = Registry::empty();
            for tool in [
                "bash",
                "read_file",
                "write_file",
                "edit_file",
                "mcp__github__get_issue",
                "mcp__github__delete_repo",
            ] {
                registry.insert(tool, Nothing);
            }
            let session = format!("session-{s:04}");
            GovernedRunner::new(Policy::builtin(), workspace.clone(), registry)
                .with_principal(Principal::current("bench").with_session(Some(&session)))
        })
        .collect();
    store.remember_policy(runners[0].policy())?;
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    let (mut total, mut n) = (0u64, 0u64);
    // Each session gets a run of calls in turn, so that each one's calls
    // are close in time, as a real session's are.
    let per_session = (events / 3 / runners.len() as u64).max(1);
    while total < events {
        n += 1;
        let runner = &runners[((n / per_session) % runners.len() as u64) as usize];
        let (tool, arguments, answer) = draw(&mut rng, n);
        let request = ToolRequest::new(format!("c{n}"), tool, arguments);
        let mut asked = false;
        let mut approver = |_: &ToolRequest, _: &Decision| {
            asked = true;
            answer
        };
        runner.run(&format!("c{n}"), &request, None, &mut approver, &mut store)?;
        total += if asked { 4 } else { 3 };
    }
    drop(store);
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{{\"calls\":{n},\"events\":{total},\"seconds\":{seconds},\"events_per_s\":{}}}",
        total as f64 / seconds
    );
    Ok(())
}
