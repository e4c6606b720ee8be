//! Admission: what an allow becomes once it is known whether the kernel
//! can hold the command to its sandbox. Pure: the enforcement is given
//! (live, [`super::kernel::Enforcement`] of this machine; in replay, the
//! one the decision recorded).
//!
//! A `bash` allow whose rule names no profile but whose command is proven
//! to only read gets `read-only` (marked `implied`). An allow that relies
//! on its sandbox (a rule named the profile, and the command is not
//! proven to only read) where the kernel cannot enforce it is asked (or
//! denied, per the policy's `[sandbox] unenforceable`), never run
//! uncontained; a proven read-only command's allow stands on its proof.

use super::kernel::Enforcement;
use super::{READ_ONLY, SandboxRecord, Spec};
use crate::facts::{Access, Facts};
use crate::policy::{Action, Decision};
use crate::request::ToolRequest;

/// Records on `decision` the sandbox it runs under and what is enforced
/// of it (`enforcement` is asked only when there is a sandbox), turning an
/// allow that relies on an unenforceable sandbox into `unenforceable` (ask
/// or deny).
pub fn admit(
    decision: &mut Decision,
    request: &ToolRequest,
    facts: &Facts,
    enforcement: impl FnOnce(&SandboxRecord) -> Enforcement,
    unenforceable: Action,
) {
    if decision.action != Action::Allow {
        return;
    }
    // A command proven to only read does not rely on its sandbox, whether
    // a rule named it or not: the proof stands without the kernel.
    let proven = request.name == "bash" && proven_read_only(facts);
    if decision.sandbox.is_none() && proven {
        let mut record =
            SandboxRecord::new(READ_ONLY, &Spec::read_only(), request.str_arg("command"));
        record.implied = true;
        decision.sandbox = Some(record);
    }
    let Some(record) = decision.sandbox.as_mut() else {
        return;
    };
    let enforcement = &enforcement(record);
    record.enforcement = Some(enforcement.as_str().to_owned());
    record.missing = match enforcement {
        Enforcement::Full => Vec::new(),
        Enforcement::Partial { missing } | Enforcement::Unavailable { missing } => missing.clone(),
    };
    if matches!(enforcement, Enforcement::Unavailable { .. }) && !proven {
        let verb = if unenforceable == Action::Deny {
            "denied"
        } else {
            "asked"
        };
        decision.reason = format!(
            "{}; but this kernel cannot enforce its sandbox `{}` (missing: {}), so it is {verb} rather than run uncontained",
            decision.reason,
            record.profile,
            record.missing.join("; ")
        );
        decision.action = unenforceable.max(Action::Ask);
    }
}

/// What can be enforced of `record` for a command in `workspace` on this
/// machine: the kernel's support ([`super::kernel::enforcement_here`]),
/// and, for a profile that writes, whether every never-writable path can
/// be protected (one missing in a writable folder could be created).
pub fn enforcement_in(record: &SandboxRecord, workspace: &std::path::Path) -> Enforcement {
    let kernel = super::kernel::enforcement_here();
    if matches!(kernel, Enforcement::Unavailable { .. }) || record.spec.write.is_empty() {
        return kernel.clone();
    }
    let unprotectable = super::launch::home().and_then(|home| {
        super::launch::Resolved::new(&record.spec, workspace, &home, &[], &[]).map(|_| ())
    });
    match unprotectable {
        Ok(()) => kernel.clone(),
        Err(err) => Enforcement::Unavailable {
            missing: vec![err.to_string()],
        },
    }
}

/// The sandbox an allowed call runs in: `Some` for an allow whose sandbox
/// the kernel enforces; `None` for anything else (not allowed, no sandbox,
/// or an implied one the kernel cannot enforce).
pub fn contained(decision: &Decision) -> Option<&SandboxRecord> {
    decision
        .sandbox
        .as_ref()
        .filter(|s| decision.action == Action::Allow && s.enforced())
}

/// Whether the facts prove a `bash` command only reads: fully parsed,
/// every program one with a model, nothing unprovable, no redirection that
/// writes, and every path it names known to be read (or listed).
pub fn proven_read_only(facts: &Facts) -> bool {
    let Some(shell) = &facts.shell else {
        return false;
    };
    !shell.commands.is_empty()
        && shell
            .commands
            .iter()
            .all(|c| crate::shell::programs::read(c).is_some())
        && shell.unprovable.is_empty()
        && shell.unjudgeable.is_none()
        && facts.unprovable.is_empty()
        && !shell.all_redirects().any(|r| r.writes())
        && facts
            .paths
            .iter()
            .all(|p| matches!(p.access, Some(Access::Read | Access::List)))
}
