//! The approval stage: the only place gavel asks anybody anything.
//!
//! An `Approver` is consulted for `ask` decisions and nothing else: `allow`
//! runs without a prompt and `deny` is blocked without one, so no approver,
//! however it answers, can make a denied call run. Anything but a clear
//! yes (EOF, Ctrl-C, an error, a closed UI) is `cancelled`: fail closed.
//!
//! What an answer is called in the record (its status, channel and cancel
//! cause) is the record's vocabulary, kept in `audit` and re-exported here.

use std::io::{IsTerminal, Write};

use serde::{Deserialize, Serialize};

use crate::audit::ApprovalRecord;
pub use crate::audit::{ApprovalChannel, ApprovalStatus, CancelCause};
use crate::policy::{Action, Decision};
use crate::request::ToolRequest;

/// Who answered an `ask`, how, and why it was cancelled when it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub channel: ApprovalChannel,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<CancelCause>,
}

/// Answers `ask` decisions. Implemented by closures, so a test can pass
/// `|_: &ToolRequest, _: &Decision| ApprovalStatus::Approved`.
pub trait Approver {
    /// Returns `Approved`, `Rejected` or `Cancelled`; any other value is
    /// treated as `Cancelled`.
    fn approve(&mut self, request: &ToolRequest, decision: &Decision) -> ApprovalStatus;

    /// How this approver answers; recorded with each answer.
    fn channel(&self) -> ApprovalChannel {
        ApprovalChannel::Api
    }

    /// Who gave the last answer, where known.
    fn approver(&self) -> Option<String> {
        None
    }

    /// Why the last answer was `cancelled`, where known.
    fn cause(&self) -> Option<CancelCause> {
        None
    }

    /// For an approver that is answered through the record (the pending
    /// queue): the `pending` approval row to write ahead with the request
    /// and decision of `call_id`, so another process can find and answer it.
    fn pending(&mut self, _call_id: &str) -> Option<ApprovalRecord> {
        None
    }

    /// Answers the ask of `call_id`; approvers that do not need the call's
    /// id answer through [`Approver::approve`].
    fn approve_call(
        &mut self,
        _call_id: &str,
        request: &ToolRequest,
        decision: &Decision,
    ) -> ApprovalStatus {
        self.approve(request, decision)
    }

    /// Whether the last answer is already in the record (written by whoever
    /// answered, or by the approver itself): the runner then does not write it.
    fn recorded(&self) -> bool {
        false
    }

    /// Whether its answers are checked for the approvers a rule names (each
    /// an enrolled person proving a second factor, up to the quorum): only
    /// the pending queue's are. Any other approver is never asked about such a call.
    fn checks_approvers(&self) -> bool {
        false
    }
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
    /// For an `ask`: who answered it, how, and why it was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
}

/// Resolves a decision: asks `approver` only for `ask`.
pub fn resolve(
    request: &ToolRequest,
    decision: Decision,
    approver: &mut dyn Approver,
) -> Resolution {
    resolve_call(&request.tool_use_id, request, decision, approver)
}

/// [`resolve`] for the call recorded as `call_id`.
pub fn resolve_call(
    call_id: &str,
    request: &ToolRequest,
    decision: Decision,
    approver: &mut dyn Approver,
) -> Resolution {
    let (approval, allowed) = match decision.action {
        Action::Allow => (ApprovalStatus::NotRequired, true),
        Action::Deny => (ApprovalStatus::NotRequired, false),
        // Nobody this approver can put forward counts: not asked at all.
        Action::Ask if decision.approvers.is_some() && !approver.checks_approvers() => {
            (ApprovalStatus::Cancelled, false)
        }
        Action::Ask => match approver.approve_call(call_id, request, &decision) {
            ApprovalStatus::Approved => (ApprovalStatus::Approved, true),
            ApprovalStatus::Rejected => (ApprovalStatus::Rejected, false),
            _ => (ApprovalStatus::Cancelled, false),
        },
    };
    let unanswerable = decision.approvers.is_some() && !approver.checks_approvers();
    let answer = (decision.action == Action::Ask).then(|| Answer {
        channel: approver.channel(),
        approver: (!unanswerable).then(|| approver.approver()).flatten(),
        cause: match approval {
            ApprovalStatus::Cancelled if unanswerable => Some(CancelCause::FactorRequired),
            ApprovalStatus::Cancelled => Some(approver.cause().unwrap_or(CancelCause::Error)),
            _ => None,
        },
    });
    Resolution {
        decision,
        approval,
        allowed,
        answer,
    }
}

/// Answers every `ask` the same way, without a prompt (`--approve`, `--reject`).
#[derive(Debug, Clone, Copy)]
pub struct Fixed(pub ApprovalStatus);

impl Approver for Fixed {
    fn approve(&mut self, _: &ToolRequest, _: &Decision) -> ApprovalStatus {
        self.0
    }

    fn channel(&self) -> ApprovalChannel {
        ApprovalChannel::Flag
    }

    fn approver(&self) -> Option<String> {
        Some(crate::principal::Principal::current("cli").user)
    }

    fn cause(&self) -> Option<CancelCause> {
        Some(CancelCause::Error)
    }
}

/// Prompts on stderr and reads `y`/`N` from stdin. Without a terminal on
/// both, it does not prompt at all and the outcome is `cancelled`
/// (cause `no_tty`), said in one line on stderr.
#[derive(Debug, Default, Clone, Copy)]
pub struct TerminalApprover {
    cause: Option<CancelCause>,
    answered: bool,
}

impl TerminalApprover {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Approver for TerminalApprover {
    fn channel(&self) -> ApprovalChannel {
        ApprovalChannel::Tty
    }

    fn approver(&self) -> Option<String> {
        self.answered
            .then(|| crate::principal::Principal::current("cli").user)
    }

    fn cause(&self) -> Option<CancelCause> {
        self.cause
    }

    fn approve(&mut self, request: &ToolRequest, decision: &Decision) -> ApprovalStatus {
        self.cause = None;
        self.answered = false;
        if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
            self.cause = Some(CancelCause::NoTty);
            let _ = writeln!(
                std::io::stderr(),
                "gavel: `{}` needs approval [{}] and there is no terminal to ask on; cancelled (pass --approve or --reject to answer without a prompt)",
                request.name,
                decision.rule_id
            );
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
            self.cause = Some(CancelCause::Error);
            return ApprovalStatus::Cancelled;
        }
        drop(err);
        match read_answer() {
            Err(cause) => {
                let _ = writeln!(std::io::stderr());
                self.cause = Some(cause);
                ApprovalStatus::Cancelled
            }
            Ok(answer) => {
                self.answered = true;
                match answer.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => ApprovalStatus::Approved,
                    _ => ApprovalStatus::Rejected,
                }
            }
        }
    }
}

/// Reads one line from the terminal; why not on EOF, an error, or Ctrl-C.
///
/// While it waits, SIGINT gets a handler without `SA_RESTART`, so Ctrl-C
/// interrupts the read (answer: cancelled) instead of killing gavel with
/// the decision recorded and no approval.
fn read_answer() -> Result<String, CancelCause> {
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
fn read_line_unbuffered() -> Result<String, CancelCause> {
    let mut line = Vec::new();
    loop {
        let mut byte = 0u8;
        // SAFETY: reads at most one byte into a live local.
        let n = unsafe { libc::read(0, (&mut byte as *mut u8).cast(), 1) };
        match n {
            1 if byte == b'\n' => return Ok(String::from_utf8_lossy(&line).into_owned()),
            1 if line.len() < 4096 => line.push(byte),
            1 => {}
            0 => return Err(CancelCause::Eof),
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
                return Err(CancelCause::Interrupt);
            }
            _ => return Err(CancelCause::Error),
        }
    }
}
