//! The approval stage: the only place gavel asks anybody anything.
//!
//! An `Approver` is consulted for `ask` decisions and nothing else: `allow`
//! runs without a prompt and `deny` is blocked without one, so no approver,
//! however it answers, can make a denied call run. Anything but a clear
//! yes (EOF, Ctrl-C, an error, a closed UI) is `cancelled`: fail closed.

use std::fmt;
use std::io::{IsTerminal, Write};

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
        match read_answer() {
            None => {
                let _ = writeln!(std::io::stderr());
                ApprovalStatus::Cancelled
            }
            Some(answer) => match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => ApprovalStatus::Approved,
                _ => ApprovalStatus::Rejected,
            },
        }
    }
}

/// Reads one line from the terminal; `None` on EOF, an error, or Ctrl-C.
///
/// While it waits, SIGINT gets a handler without `SA_RESTART`, so Ctrl-C
/// interrupts the read (answer: cancelled) instead of killing gavel with
/// the decision recorded and no approval.
fn read_answer() -> Option<String> {
    extern "C" fn interrupted(_: libc::c_int) {}
    // SAFETY: plain sigaction(2) calls with zeroed, then filled, structs; the
    // previous disposition is restored before returning.
    unsafe {
        let mut on_int: libc::sigaction = std::mem::zeroed();
        on_int.sa_sigaction = interrupted as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut on_int.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGINT, &on_int, &mut previous);
        let answer = read_line_unbuffered();
        libc::sigaction(libc::SIGINT, &previous, std::ptr::null_mut());
        answer
    }
}

/// Reads stdin byte by byte up to a newline, without retrying on EINTR.
fn read_line_unbuffered() -> Option<String> {
    let mut line = Vec::new();
    loop {
        let mut byte = 0u8;
        // SAFETY: reads at most one byte into a live local.
        let n = unsafe { libc::read(0, (&mut byte as *mut u8).cast(), 1) };
        match n {
            1 if byte == b'\n' => return Some(String::from_utf8_lossy(&line).into_owned()),
            1 if line.len() < 4096 => line.push(byte),
            1 => {}
            _ => return None,
        }
    }
}
