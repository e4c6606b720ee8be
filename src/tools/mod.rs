//! Built-in tool handlers and the registry the runner looks them up in.
//!
//! A handler returns its output or an error; it never decides whether it may
//! run (the runner does) but it does re-check the workspace scope of every
//! path it touches, since the filesystem may have changed since the decision.

mod bash;
mod files;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::facts::Workspace;

pub use bash::Bash;
pub use files::{EditFile, Glob, ReadFile, WriteFile};

/// What a handler produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    /// The process exit code, for tools that run one.
    pub exit_code: Option<i32>,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            exit_code: None,
        }
    }
}

/// Why a handler failed. The runner turns it into a `failed` result.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("missing argument `{0}`")]
    MissingArgument(&'static str),
    #[error("path `{path}` is outside the workspace")]
    OutsideWorkspace { path: String },
    #[error("{action} `{path}`: {source}")]
    Io {
        action: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("`{text}` not found in `{path}`")]
    NotFound { text: String, path: String },
    #[error("`{text}` occurs {count} times in `{path}`; it must occur exactly once")]
    Ambiguous {
        text: String,
        path: String,
        count: usize,
    },
    #[error("invalid glob `{pattern}`: {detail}")]
    Pattern { pattern: String, detail: String },
    #[error("command failed to start: {0}")]
    Spawn(std::io::Error),
    #[error("command timed out after {seconds} s\n{output}")]
    Timeout { seconds: u64, output: String },
    #[error("command exited with code {code}\n{output}")]
    Exit { code: i32, output: String },
    #[error("command was killed by a signal\n{output}")]
    Signal { output: String },
    /// The call's sandbox could not be set up; nothing ran.
    #[error("not run: {0}")]
    Uncontained(String),
    /// The error of a handler that ran in another process, as it reported it.
    #[error("{message}")]
    Elsewhere {
        message: String,
        exit_code: Option<i32>,
    },
}

impl ToolError {
    /// The exit code of a command that ran and failed.
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            ToolError::Exit { code, .. } => Some(*code),
            ToolError::Elsewhere { exit_code, .. } => *exit_code,
            _ => None,
        }
    }
}

/// How long a `bash` command may run before its process group is killed.
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_secs(120);
/// How many bytes of a tool's output are kept (stdout and stderr together, for `bash`).
pub const DEFAULT_OUTPUT_LIMIT: usize = 64 * 1024;

/// What a handler may know about where it runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub workspace: Workspace,
    pub bash_timeout: Duration,
    /// Output beyond this many bytes is cut and marked.
    pub output_limit: usize,
    /// The database the calls are recorded in: never writable by a
    /// contained command, nor its keys.
    pub record: Option<PathBuf>,
}

/// The sandbox one allowed call runs in (docs/sandbox.md), and where the
/// handler leaves what the sandbox refused it.
#[derive(Debug, Clone, Copy)]
pub struct Contained<'a> {
    pub call_id: &'a str,
    pub sandbox: &'a crate::sandbox::SandboxRecord,
    pub observed: &'a std::cell::RefCell<crate::sandbox::observe::Observed>,
}

impl ToolContext {
    pub fn new(workspace: Workspace) -> Self {
        Self {
            workspace,
            bash_timeout: DEFAULT_BASH_TIMEOUT,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            record: None,
        }
    }

    /// The same context for calls recorded in the database `db`.
    pub fn recording_to(mut self, db: PathBuf) -> Self {
        self.record = Some(db);
        self
    }

    /// The same context with other limits.
    pub fn with_limits(mut self, bash_timeout: Duration, output_limit: usize) -> Self {
        self.bash_timeout = bash_timeout;
        self.output_limit = output_limit;
        self
    }

    /// Resolves `raw` and insists it is inside the workspace, now.
    pub fn scoped_path(&self, raw: &str) -> Result<PathBuf, ToolError> {
        let fact = self.workspace.path_fact(raw, raw);
        match (fact.inside, fact.resolved) {
            (true, Some(resolved)) => Ok(PathBuf::from(resolved)),
            _ => Err(ToolError::OutsideWorkspace {
                path: raw.to_owned(),
            }),
        }
    }
}

/// A tool implementation.
pub trait ToolHandler: Send + Sync {
    fn call(&self, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// Runs an allowed call inside its sandbox. A handler that cannot
    /// contain what it runs refuses: nothing runs uncontained that a
    /// decision said must not.
    fn call_contained(
        &self,
        arguments: &Value,
        context: &ToolContext,
        contained: &Contained,
    ) -> Result<ToolOutput, ToolError> {
        let _ = (arguments, context);
        Err(ToolError::Uncontained(format!(
            "this handler cannot run inside sandbox `{}`",
            contained.sandbox.profile
        )))
    }
}

/// Handlers by tool name.
#[derive(Default)]
pub struct Registry {
    handlers: HashMap<String, Box<dyn ToolHandler>>,
}

impl Registry {
    pub fn empty() -> Self {
        Self::default()
    }

    /// `bash`, `read_file`, `write_file`, `edit_file` and `glob`.
    pub fn builtin() -> Self {
        let mut registry = Self::empty();
        registry.insert("bash", Bash);
        registry.insert("read_file", ReadFile);
        registry.insert("write_file", WriteFile);
        registry.insert("edit_file", EditFile);
        registry.insert("glob", Glob);
        registry
    }

    pub fn insert(&mut self, name: &str, handler: impl ToolHandler + 'static) {
        self.handlers.insert(name.to_owned(), Box::new(handler));
    }

    pub fn get(&self, name: &str) -> Option<&dyn ToolHandler> {
        self.handlers.get(name).map(|h| h.as_ref())
    }

    /// The names of the registered tools.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.handlers.keys().map(String::as_str)
    }
}

/// The string argument `field`, which the policy has already required.
fn arg<'a>(arguments: &'a Value, field: &'static str) -> Result<&'a str, ToolError> {
    arguments
        .get(field)
        .and_then(Value::as_str)
        .ok_or(ToolError::MissingArgument(field))
}

/// Cuts `text` to at most `limit` bytes on a character boundary, marking the cut.
fn cap(text: String, limit: usize) -> String {
    cap_counting(text, limit, 0)
}

/// [`cap`] for text that was already cut short of `unread` more bytes.
fn cap_counting(mut text: String, limit: usize, unread: usize) -> String {
    if text.len() > limit {
        let mut cut = limit;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let dropped = (text.len() - cut).saturating_add(unread);
        text.truncate(cut);
        text.push_str(&format!("\n[output truncated: {dropped} more bytes]"));
    }
    text
}
