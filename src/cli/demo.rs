//! `gavel demo`: a short scripted session in a fresh temporary workspace,
//! showing each stage of the pipeline on the built-in policy.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use serde_json::{Value, json};

use gavel::approval::Fixed;
use gavel::policy::{DEFAULT_POLICY_TOML, Policy};
use gavel::replay::{self, FactSource};
use gavel::session::{Ask, Call, Governed, Service};
use gavel::tools::Registry;
use gavel::{ApprovalStatus, ToolRequest, Workspace};

use gavel::store::{AuditQuery, Durability};

use gavel::frontend::run::outcome_json;

use super::{Exit, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Where to create the demo workspace [default: a new temporary folder]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Run in --dir even if it is not empty: the demo writes notes.txt and
    /// report.md there and appends its calls to .gavel/audit.db
    #[arg(long, requires = "dir")]
    pub force: bool,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// One scripted step: a call and how a user would answer if asked.
struct Step {
    what: &'static str,
    tool: &'static str,
    arguments: Value,
    answer: ApprovalStatus,
}

fn script() -> Vec<Step> {
    vec![
        Step {
            what: "read a file in the workspace",
            tool: "read_file",
            arguments: json!({"path": "notes.txt"}),
            answer: ApprovalStatus::Cancelled,
        },
        Step {
            what: "write a file, user approves",
            tool: "write_file",
            arguments: json!({"path": "report.md", "content": "# Report\nall good\n"}),
            answer: ApprovalStatus::Approved,
        },
        Step {
            what: "write a file, user rejects",
            tool: "write_file",
            arguments: json!({"path": "notes.txt", "content": "overwritten"}),
            answer: ApprovalStatus::Rejected,
        },
        Step {
            what: "hard-denied command (approval cannot help)",
            tool: "bash",
            arguments: json!({"command": "rm -rf ./build"}),
            answer: ApprovalStatus::Approved,
        },
        Step {
            what: "path escape",
            tool: "read_file",
            arguments: json!({"path": "../../etc/passwd"}),
            answer: ApprovalStatus::Approved,
        },
        Step {
            what: "unknown tool",
            tool: "deploy",
            arguments: json!({"env": "prod"}),
            answer: ApprovalStatus::Approved,
        },
    ]
}

/// The built-in policy with one rule that allows more and one that denies more.
fn demo_policy_change() -> String {
    let allow_docs = r#"[[rules]]
id = "docs.write_allow"
action = "allow"
tools = ["write_file", "edit_file"]
path_scope = "inside"
path_glob = ["**/*.md"]
reason = "markdown in the workspace may be written freely"

"#;
    let deny_notes = r#"[[rules]]
id = "notes.private"
action = "deny"
tools = ["read_file"]
path_glob = ["notes.txt"]
reason = "notes.txt is private"

"#;
    DEFAULT_POLICY_TOML
        .replacen(
            "name = \"gavel-default\"",
            "name = \"gavel-demo-change\"",
            1,
        )
        .replacen(
            "[[rules]]\nid = \"path.read_allow\"",
            &format!("{deny_notes}[[rules]]\nid = \"path.read_allow\""),
            1,
        )
        .replacen(
            "[[rules]]\nid = \"path.write_requires_approval\"",
            &format!("{allow_docs}[[rules]]\nid = \"path.write_requires_approval\""),
            1,
        )
}

/// Refuses a folder that already holds anything (an audit log above all):
/// the demo would overwrite `notes.txt` and append its calls to the log.
fn refuse_used_folder(dir: &Path) -> anyhow::Result<()> {
    let mut entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read demo folder `{}`", dir.display()));
        }
    };
    if dir.join(".gavel").exists() {
        anyhow::bail!(
            "`{}` holds a gavel log (.gavel/); the demo would add its calls to it. Choose an empty or new folder, or pass --force",
            dir.display()
        );
    }
    if entries.next().is_some() {
        anyhow::bail!(
            "`{}` is not empty; the demo writes notes.txt and report.md there. Choose an empty or new folder, or pass --force",
            dir.display()
        );
    }
    Ok(())
}

pub fn run(global: &Global, args: DemoArgs) -> anyhow::Result<Exit> {
    let dir = match args.dir {
        Some(dir) => {
            if !args.force {
                refuse_used_folder(&dir)?;
            }
            dir
        }
        None => std::env::temp_dir().join(format!("gavel-demo-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create demo workspace `{}`", dir.display()))?;
    std::fs::write(
        dir.join("notes.txt"),
        "remember: the policy decides, the user approves\n",
    )
    .context("cannot write the demo's notes.txt")?;
    let workspace = Workspace::open(&dir).context("cannot open the demo workspace")?;
    let db = global
        .db
        .clone()
        .unwrap_or_else(|| workspace.root().join(".gavel").join("audit.db"));
    // The demo always decides by the built-in policy, whatever --policy says.
    let setup = gavel::session::Setup {
        workspace: Some(dir.clone()),
        db: Some(db.clone()),
        durability: Durability::Normal,
        ..gavel::session::Setup::default()
    };
    let store = setup.open_store()?;
    let mut service = Service::with(
        &setup,
        "cli",
        Registry::builtin(),
        workspace,
        Policy::builtin(),
        store,
    )?;

    let json = args.format.is_json();
    let mut rows = Vec::new();
    // Call ids unique to this run, so a demo can be run again into the same
    // folder; always 8 hex digits, so they line up.
    let run = format!(
        "{:08x}",
        chrono::Utc::now().timestamp_micros() & 0xffff_ffff
    );
    let call_id = |index: usize| format!("demo-{run}-{}", index + 1);
    for (index, step) in script().into_iter().enumerate() {
        let request = ToolRequest::new(call_id(index), step.tool, step.arguments);
        let governed = service.call(
            Call::new(&request.tool_use_id, &request),
            Ask::Now(&mut Fixed(step.answer)),
        )?;
        let Governed::Ran(outcome) = governed else {
            anyhow::bail!("the demo's call `{}` did not run here", request.tool_use_id);
        };
        if json {
            render::json(&outcome_json(&outcome))?;
            continue;
        }
        let decision = outcome.decision();
        rows.push([
            (index + 1).to_string(),
            step.what.to_owned(),
            format!(
                "{} {}",
                step.tool,
                render::cell(&request.arguments.to_string(), 40)
            ),
            decision.action.to_string(),
            decision.rule_id.clone(),
            outcome.resolution.approval.to_string(),
            outcome.result.status.as_str().to_owned(),
        ]);
    }
    // A signed checkpoint vouches for the session, as after any hook.
    let store = service.store();
    gavel::session::auto_checkpoint(store, 1);
    let report = store.verify(&gavel::store::VerifyOptions::default(), &mut |_| {})?;
    if json {
        render::json(&serde_json::to_value(&report)?)?;
        return Ok(if report.ok { Exit::Ok } else { Exit::Failed });
    }
    render::line(&format!("gavel demo: workspace {}", dir.display()))?;
    render::line("\n1. Six calls through policy -> approval -> execution:")?;
    render::table_dropping(
        &["#", "step", "call", "action", "rule", "approval", "status"],
        rows,
        // Narrow: approval, then status go first; the rule stays.
        &[5, 6],
    )?;
    render::line(&format!(
        "\n2. Recorded as {} hash-chained events in {}",
        report.rows,
        db.display()
    ))?;
    let events = store.event_count()?;
    render::line(&format!(
        "\n3. gavel verify: {}",
        if report.ok {
            format!("ok, {events} events, chain intact")
        } else {
            format!("TAMPERED: {:?}", report.problem)
        }
    ))?;
    let changed = Policy::from_toml(&demo_policy_change(), "demo change")?;
    let drift = replay::replay(
        store,
        &AuditQuery::default(),
        &changed,
        FactSource::Recorded,
        &mut |_| {},
    )?;
    render::line(
        "\n4. gavel replay under a changed policy (markdown writes allowed, notes.txt private):",
    )?;
    render::drift_table(&drift, false)?;
    // Runnable as printed: the gavel on PATH, else this binary's path.
    let gavel = super::gavel_command();
    let db = gavel::clients::shell_word(&db.to_string_lossy());
    render::line(&format!(
        "\nTry: {gavel} log --db {db}\n     {gavel} explain {} --db {db}\n     {gavel} verify --db {db}",
        call_id(3)
    ))?;
    Ok(if report.ok { Exit::Ok } else { Exit::Failed })
}
