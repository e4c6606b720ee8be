//! The built-in floor: the rules gavel decides above every policy and
//! every layer (`floor.toml`), so that what the README calls "denied in
//! every policy" holds whatever rules a policy adds before its own copy:
//! the agent answering gavel's approvals (`bash.self_approval`), gavel's
//! own record and policy (`path.protected`), and writes to what git runs
//! (`path.git_config`, an ask).
//!
//! A floor deny decides at once, like an admin layer's deny. A floor ask
//! is combined as a layer above all others is: the policy's deny still
//! wins, its allow or ask does not. The decision keeps the enforced
//! policy's reference (the floor is part of how this gavel enforces any
//! policy) and names the layer `built-in`. Pure, like the rest of the
//! policy stage.

use std::sync::LazyLock;

use super::{Decision, Policy, RuleTrace};
use crate::facts::Facts;
use crate::request::ToolRequest;

/// The floor's rules, as shipped.
pub const FLOOR_POLICY_TOML: &str = include_str!("floor.toml");

/// The name of the floor in decisions, traces and `policy show --layers`.
pub const FLOOR_LAYER: &str = "built-in";

static FLOOR: LazyLock<Policy> =
    LazyLock::new(|| Policy::compiled_in(FLOOR_POLICY_TOML, "<built-in floor>"));

/// The floor, parsed once.
pub fn floor() -> &'static Policy {
    &FLOOR
}

/// The first floor rule that matches `request`, as a decision of
/// `enforced`; its trace entries go to `trace` only when one matched (a
/// floor that holds nothing is not part of an explanation).
pub(super) fn held(
    enforced: &Policy,
    request: &ToolRequest,
    facts: &Facts,
    at: &super::At<'_>,
    trace: Option<&mut Vec<RuleTrace>>,
) -> Option<Decision> {
    let mut tried = Vec::new();
    let found = floor().first_match(request, facts, at, Some(&mut tried), Some(FLOOR_LAYER))?;
    if let Some(trace) = trace {
        trace.extend(tried);
    }
    Some(Decision {
        policy: enforced.reference.clone(),
        layer: Some(FLOOR_LAYER.to_owned()),
        layers: enforced.layer_refs(),
        ..found
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_parses_with_its_examples_checked() {
        let policy = Policy::from_toml(FLOOR_POLICY_TOML, "floor").unwrap();
        assert_eq!(
            policy
                .rules()
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>(),
            ["bash.self_approval", "path.protected", "path.git_config"]
        );
        assert!(floor().rules().len() == 3);
    }
}
