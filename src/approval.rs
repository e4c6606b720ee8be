//! The approval stage: the only place gavel asks anybody anything.
//!
//! An `Approver` is consulted for `ask` decisions and nothing else: `allow`
//! runs without a prompt and `deny` is blocked without one, so no approver,
//! however it answers, can make a denied call run. Anything but a clear
//! yes (EOF, Ctrl-C, an error, a closed UI) is `cancelled`: fail closed.

use std::fmt;
use std::io::{BufRead, IsTerminal, Write};

use serde::{Deserialize, Serialize};

use crate::policy::{Action, Decision};
use crate::request::ToolRequest;

/// How the approval stage ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// The decision was `allow` or `deny`; nobody was asked.
    NotRequired,
    Approved,
    Rejected,
    /// No answer could be had: EOF, Ctrl-C, no terminal, an approver error.
    Cancelled,
    /// Handed to the client's own prompt (Claude Code); its answer is not yet known.
    Pending,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::NotRequired => "not_required",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Rejected => "rejected",
            ApprovalStatus::Cancelled => "cancelled",
            ApprovalStatus::Pending => "pending",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::NotRequired,
            Self::Approved,
            Self::Rejected,
            Self::Cancelled,
            Self::Pending,
        ]
        .into_iter()
        .find(|status| status.as_str() == s)
    }
}

impl fmt::Display for ApprovalStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Answers `ask` decisions. Implemented by closures, so a test can pass
/// `|_: &ToolRequest, _: &Decision| ApprovalStatus::Approved`.
pub trait Approver {
    /// Returns `Approved`, `Rejected` or `Cancelled`; any other value is
    /// treated as `Cancelled`.
    fn approve(&mut self, request: &ToolRequest, decision: &Decision) -> ApprovalStatus;
}

impl<F> Approver for F
where
    F: FnMut(&ToolRequest, &Decision) -> ApprovalStatus,
{
    fn approve(&mut self, request: &ToolRequest, decision: &Decision) -> ApprovalStatus {
        self(request, decision)
    }
}

/// A decision after the approval stage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    pub decision: Decision,
    pub approval: ApprovalStatus,
    /// Whether the handler may run.
    pub allowed: bool,
}

/// Resolves a decision: asks `approver` only for `ask`.
pub fn resolve(
    request: &ToolRequest,
    decision: Decision,
    approver: &mut dyn Approver,
) -> Resolution {
    let (approval, allowed) = match decision.action {
        Action::Allow => (ApprovalStatus::NotRequired, true),
        Action::Deny => (ApprovalStatus::NotRequired, false),
        Action::Ask => match approver.approve(request, &decision) {
            ApprovalStatus::Approved => (ApprovalStatus::Approved, true),
            ApprovalStatus::Rejected => (ApprovalStatus::Rejected, false),
            _ => (ApprovalStatus::Cancelled, false),
        },
    };
    Resolution {
        decision,
        approval,
        allowed,
    }
}

/// Answers every `ask` the same way, without a prompt (`--approve`, `--reject`).
#[derive(Debug, Clone, Copy)]
pub struct Fixed(pub ApprovalStatus);

impl Approver for Fixed {
    fn approve(&mut self, _: &ToolRequest, _: &Decision) -> ApprovalStatus {
        self.0
    }
}

/// Prompts on stderr and reads `y`/`N` from stdin. Without a terminal on
/// both, it does not prompt at all and the outcome is `cancelled`.
#[derive(Debug, Default, Clone, Copy)]
pub struct TerminalApprover;

impl Approver for TerminalApprover {
    fn approve(&mut self, request: &ToolRequest, decision: &Decision) -> ApprovalStatus {
        if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
            return ApprovalStatus::Cancelled;
        }
        let input = request.arguments.to_string();
        let shown: String = input.chars().take(300).collect();
        let mut err = std::io::stderr().lock();
        let prompt = writeln!(
            err,
            "gavel: approval required [{}]\n  reason: {}\n  tool:   {}\n  input:  {shown}{}",
            decision.rule_id,
            decision.reason,
            request.name,
            if shown.len() < input.len() { "…" } else { "" }
        )
        .and_then(|()| write!(err, "Allow this call? [y/N] "))
        .and_then(|()| err.flush());
        if prompt.is_err() {
            return ApprovalStatus::Cancelled;
        }
        drop(err);
        let mut answer = String::new();
        match std::io::stdin().lock().read_line(&mut answer) {
            Ok(0) | Err(_) => ApprovalStatus::Cancelled,
            Ok(_) => match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => ApprovalStatus::Approved,
                _ => ApprovalStatus::Rejected,
            },
        }
    }
}
