//! `gavel demo`'s scripted session: six calls that show each stage of the
//! pipeline on the built-in policy, in a fresh workspace, through the same
//! session service as every front-end, and the policy change it replays.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::approval::Fixed;
use crate::facts::Workspace;
use crate::policy::{DEFAULT_POLICY_TOML, Policy};
use crate::runner::CallOutcome;
use crate::session::{Ask, Call, Governed, Service, SessionError, Setup};
use crate::store::Durability;
use crate::tools::Registry;
use crate::{ApprovalStatus, ToolRequest};

/// Why the demo could not run.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("{0}. Choose an empty or new folder, or pass --force")]
    Used(String),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the demo's call `{0}` did not run here")]
    NotRun(String),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Audit(#[from] crate::audit::AuditError),
}

/// One scripted step: a call and how a user would answer if asked.
pub struct Step {
    pub what: &'static str,
    pub tool: &'static str,
    pub arguments: Value,
    pub answer: ApprovalStatus,
}

pub fn script() -> Vec<Step> {
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
pub fn policy_change() -> String {
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
pub fn refuse_used_folder(dir: &Path) -> Result<(), DemoError> {
    let mut entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(DemoError::Io {
                what: format!("cannot read demo folder `{}`", dir.display()),
                source,
            });
        }
    };
    if dir.join(".gavel").exists() {
        return Err(DemoError::Used(format!(
            "`{}` holds a gavel log (.gavel/); the demo would add its calls to it",
            dir.display()
        )));
    }
    if entries.next().is_some() {
        return Err(DemoError::Used(format!(
            "`{}` is not empty; the demo writes notes.txt and report.md there",
            dir.display()
        )));
    }
    Ok(())
}

/// Makes the demo's workspace in `dir` (with its `notes.txt`) and opens the
/// session service on it, deciding by the built-in policy whatever else is
/// configured, recording into `db` (default `.gavel/audit.db` in `dir`).
pub fn open(dir: &Path, db: Option<PathBuf>) -> Result<(Service, PathBuf), DemoError> {
    let io = |what: String| move |source| DemoError::Io { what, source };
    std::fs::create_dir_all(dir).map_err(io(format!(
        "cannot create demo workspace `{}`",
        dir.display()
    )))?;
    std::fs::write(
        dir.join("notes.txt"),
        "remember: the policy decides, the user approves\n",
    )
    .map_err(io("cannot write the demo's notes.txt".to_owned()))?;
    let workspace =
        Workspace::open(dir).map_err(io("cannot open the demo workspace".to_owned()))?;
    let db = db.unwrap_or_else(|| workspace.root().join(".gavel").join("audit.db"));
    let setup = Setup {
        workspace: Some(dir.to_owned()),
        db: Some(db.clone()),
        durability: Durability::Normal,
        ..Setup::default()
    };
    let store = setup.open_store()?;
    let service = Service::with(
        &setup,
        "cli",
        Registry::builtin(),
        workspace,
        Policy::builtin(),
        store,
    )?;
    Ok((service, db))
}

/// Runs step `step` of the script as call `call_id`, its ask answered as
/// the step says.
pub fn run_step(
    service: &mut Service,
    call_id: String,
    step: &Step,
) -> Result<CallOutcome, DemoError> {
    let request = ToolRequest::new(call_id, step.tool, step.arguments.clone());
    let governed = service.call(
        Call::new(&request.tool_use_id, &request),
        Ask::Now(&mut Fixed(step.answer)),
    )?;
    match governed {
        Governed::Ran(outcome) => Ok(*outcome),
        Governed::Recorded { .. } => Err(DemoError::NotRun(request.tool_use_id)),
    }
}
