//! The call service every front-end drives: `hook <client>`, `run`,
//! `serve`, the resident gavel and `mcp` read their input, open a
//! [`Service`] from one [`Setup`], hand each call to [`Service::call`], and
//! write their answer. Everything that happens to a call between its input
//! and its record happens here, once: the workspace, the policy under its
//! layers and shadows, the store (opened, or kept open by a resident
//! gavel), the principal, grants, the decision and its write-ahead record,
//! where an ask goes (a prompt, the pending queue, the client's own
//! prompt, a refusal), execution, redaction and the automatic checkpoints.
//!
//! It knows nothing of clap, terminals' rendering or a front-end's wire
//! format; the front-ends know nothing of the pipeline's order.

mod ask;
mod checkpoints;
mod pool;
mod service;
mod setup;

use std::path::PathBuf;

pub use ask::{AskWait, DEFAULT_WAIT, HookAsk, RunAsks, hook_wait_for, parse_ask_wait};
pub(crate) use checkpoints::chain;
pub use checkpoints::{CHECKPOINT_EVERY_VAR, auto_checkpoint};
pub use pool::StorePool;
pub use service::{Ask, Call, Governed, Service};
pub use setup::Setup;

use crate::checkpoint::CheckpointError;
use crate::clients::HookError;
use crate::layers::LayerError;
use crate::policy::PolicyError;
use crate::store::StoreError;

/// Why a session could not be opened, or a call could not be governed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot read the current directory")]
    CurrentDir(#[source] std::io::Error),
    #[error("cannot open workspace `{}`", path.display())]
    Workspace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "this command reads a local audit database; a central store (postgres://…) is read by log, show, explain, stats, replay, export, report, audit and verify"
    )]
    CentralNotLocal,
    #[error(
        "this gavel was built without the `postgres` feature: it cannot read a central store (postgres://…)"
    )]
    NoCentral,
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Layers(#[from] LayerError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Hook(#[from] HookError),
    #[error(transparent)]
    Audit(#[from] crate::audit::AuditError),
    #[error(transparent)]
    Approvals(#[from] crate::approvals::ApprovalsError),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A call that cannot go on, in words a person reads (a resident
    /// gavel that went away, a reused id).
    #[error("{0}")]
    Call(String),
}

#[cfg(test)]
mod tests;
