//! gavel governs the tool calls of AI agents. Every call goes through three
//! separate stages: the **policy** decides (`allow`, `ask`, `deny`, with a
//! stable rule id and a reason), **approval** is asked only for `ask`, and
//! **execution** runs the handler only when allowed and always returns a
//! result (`blocked`, `succeeded`, `failed`). Every step is appended to an
//! audit record.

pub mod approval;
pub mod approvals;
pub mod archive;
pub mod audit;
#[cfg(feature = "postgres")]
pub mod central;
pub mod chain;
pub mod checkpoint;
pub mod ci;
pub mod clients;
pub mod cosign;
pub mod demo;
pub mod digest;
pub mod doctor;
pub mod explain;
pub mod export;
pub mod facts;
pub mod files;
pub mod frontend;
pub mod hooks;
pub mod inclusion;
pub mod install;
pub mod layers;
pub mod listing;
pub mod mcp;
pub mod ocsf;
pub mod otlp;
pub mod policy;
pub mod principal;
pub mod receipt;
pub mod redact;
pub mod replay;
pub mod report;
pub mod request;
pub mod runner;
pub mod sandbox;
pub mod session;
pub mod shell;
pub mod source;
pub mod store;
pub mod suggest;
pub mod text;
pub mod tools;

pub use approval::{ApprovalStatus, Approver, Resolution};
pub use audit::{AuditSink, Event, ExecutionStatus, ToolResult};
pub use facts::{Facts, Workspace};
pub use policy::{Action, Decision, Policy};
pub use request::ToolRequest;
pub use runner::{CallOutcome, GovernedRunner};
