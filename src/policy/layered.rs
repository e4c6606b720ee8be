//! Layered policies: policies above the project's (an organisation's, a
//! user's) that the project can tighten but never loosen.
//!
//! Each layer is decided on its own, on the same request and facts. A layer
//! above the project abstains where none of its rules matches (it speaks
//! only to what it names); the project's policy keeps its default deny. The
//! decision is the strictest of them (`deny` over `ask` over `allow`), and
//! among equally strict ones the highest layer's, so a deny anywhere wins,
//! an ask above cannot become an allow below, and an allow above can be
//! narrowed below. Which layer decided and every layer's digest go with the
//! decision into the record.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{Action, Decision, Policy, RuleTrace};
use crate::facts::Facts;
use crate::request::ToolRequest;

/// The name of the project's own layer in decisions and traces.
pub const PROJECT_LAYER: &str = "project";

/// A policy above the project's.
#[derive(Debug, Clone)]
pub struct Layer {
    /// `system`, `admin` or `user` (see `gavel::layers`).
    pub name: String,
    /// The file it was read from.
    pub path: String,
    pub policy: Policy,
}

/// A policy decided beside the enforced one on every live call, never
/// enforced: its verdicts are recorded on the call's decision event.
#[derive(Debug, Clone)]
pub struct Shadow {
    pub name: String,
    /// The file it was read from.
    pub path: String,
    pub policy: Policy,
}

/// One layer of a layered decision, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerRef {
    pub layer: String,
    /// The file, or `<built-in default>`.
    pub path: String,
    /// SHA-256 (hex) of the layer's policy text.
    pub digest: String,
}

/// What a shadow policy would have decided on a live call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShadowVerdict {
    /// The shadow's name.
    pub name: String,
    pub action: Action,
    pub rule_id: String,
    /// SHA-256 (hex) of the shadow policy's text.
    pub digest: String,
}

impl Policy {
    /// This policy as the project's layer under `above` (top first).
    pub fn with_layers(mut self, above: Vec<Layer>) -> Self {
        self.above = above;
        self
    }

    /// The layers above this policy, top first.
    pub fn layers(&self) -> &[Layer] {
        &self.above
    }

    /// This policy with `shadows` decided beside it on live calls.
    pub fn with_shadows(mut self, shadows: Vec<Shadow>) -> Self {
        self.shadows = shadows;
        self
    }

    /// The shadow policies decided beside this one.
    pub fn shadows(&self) -> &[Shadow] {
        &self.shadows
    }

    /// The `[[shadow]]` entries of this policy's file, as written.
    pub fn shadow_specs(&self) -> &[super::ShadowSpec] {
        &self.shadow_specs
    }

    /// Where this policy was read from (`<built-in default>` for the built-in one).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Where each rule is written, by id: its file and the line its table
    /// begins on (`None` when the text gives none). This policy's own rules
    /// first, then each layer's, top first; the first of an id wins. Rules
    /// no file holds (gavel's floor, `default.deny`, a policy compiled in)
    /// are not listed.
    pub fn rule_sites(&self) -> HashMap<String, (String, Option<usize>)> {
        let mut sites = HashMap::new();
        let files = std::iter::once((self.origin.as_str(), self))
            .chain(self.above.iter().map(|l| (l.path.as_str(), &l.policy)))
            .filter(|(path, _)| !path.starts_with('<'));
        for (path, policy) in files {
            let lines = super::file::rule_lines(&policy.source);
            for rule in &policy.rules {
                sites
                    .entry(rule.id.clone())
                    .or_insert_with(|| (path.to_owned(), lines.get(&rule.id).copied()));
            }
        }
        sites
    }

    /// What each shadow policy decides on `request` with `facts`.
    pub fn shadow_verdicts(&self, request: &ToolRequest, facts: &Facts) -> Vec<ShadowVerdict> {
        self.shadows
            .iter()
            .map(|s| s.policy.shadow_verdict(&s.name, request, facts))
            .collect()
    }

    /// Every layer a decision consults, top first, the project's last;
    /// empty when there is none above the project.
    pub fn layer_refs(&self) -> Vec<LayerRef> {
        if self.above.is_empty() {
            return Vec::new();
        }
        let project = LayerRef {
            layer: PROJECT_LAYER.to_owned(),
            path: self.origin.clone(),
            digest: self.reference.digest.clone(),
        };
        self.above
            .iter()
            .map(|l| LayerRef {
                layer: l.name.clone(),
                path: l.path.clone(),
                digest: l.policy.reference.digest.clone(),
            })
            .chain(std::iter::once(project))
            .collect()
    }

    /// What this policy decides as a shadow of a live call.
    pub fn shadow_verdict(
        &self,
        name: &str,
        request: &ToolRequest,
        facts: &Facts,
    ) -> ShadowVerdict {
        let decision = self.decide(request, facts);
        ShadowVerdict {
            name: name.to_owned(),
            action: decision.action,
            rule_id: decision.rule_id,
            digest: self.reference.digest.clone(),
        }
    }
}

/// One step of the order in which a policy's rules take effect, with the
/// layers combined ([`Policy::effective_order`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectiveRule {
    /// `built-in` (gavel's floor), `system`, `admin`, `user` or `project`.
    pub layer: String,
    pub rule_id: String,
    pub action: Action,
    /// When the rule decides, in a phrase: "first", "when it is the
    /// first rule of its layer to match", ...
    pub when: String,
}

impl Policy {
    /// The rules in the order they take effect, as one list a reader can
    /// follow top down: gavel's floor first (its deny decides at once, its
    /// ask unless a layer denies); then, for a policy alone, its rules in
    /// order and its default deny; with layers, every layer's deny rules
    /// (top layer first) and the project's default deny, then their ask
    /// rules, then their allow rules, since a call gets the strictest of
    /// each layer's first match. Within a layer a rule still decides only
    /// when it is the first of that layer to match.
    pub fn effective_order(&self) -> Vec<EffectiveRule> {
        let step = |layer: &str, rule: &super::Rule, when: &str| EffectiveRule {
            layer: layer.to_owned(),
            rule_id: rule.id.clone(),
            action: rule.action,
            when: when.to_owned(),
        };
        let mut order: Vec<EffectiveRule> = super::floor()
            .rules()
            .iter()
            .map(|rule| {
                let when = match rule.action {
                    Action::Deny => "before any policy: its deny is final",
                    _ => "before any policy, unless a layer denies the call",
                };
                step(super::FLOOR_LAYER, rule, when)
            })
            .collect();
        if self.above.is_empty() {
            order.extend(
                self.rules
                    .iter()
                    .map(|rule| step(PROJECT_LAYER, rule, "when no rule before it matches")),
            );
        } else {
            let layers: Vec<(&str, &Policy)> = self
                .above
                .iter()
                .map(|l| (l.name.as_str(), &l.policy))
                .chain(std::iter::once((PROJECT_LAYER, self)))
                .collect();
            for action in [Action::Deny, Action::Ask, Action::Allow] {
                for (name, policy) in &layers {
                    let when = if action == Action::Allow && *name != PROJECT_LAYER {
                        "when it is the first rule of its layer to match, no layer is stricter, \
                         and the project's first match is an allow too"
                    } else {
                        "when it is the first rule of its layer to match and no layer is stricter"
                    };
                    order.extend(
                        policy
                            .rules
                            .iter()
                            .filter(|r| r.action == action)
                            .map(|rule| step(name, rule, when)),
                    );
                }
                // The project's default deny is a deny like the others.
                if action == Action::Deny {
                    order.push(default_deny());
                }
            }
            return order;
        }
        order.push(default_deny());
        order
    }
}

/// The project's default deny as a step of [`Policy::effective_order`].
fn default_deny() -> EffectiveRule {
    EffectiveRule {
        layer: PROJECT_LAYER.to_owned(),
        rule_id: super::DEFAULT_DENY.to_owned(),
        action: Action::Deny,
        when: "when none of the project's rules matches".to_owned(),
    }
}

/// The layered decision of `project` (which has layers above it).
pub(super) fn decide(
    project: &Policy,
    request: &ToolRequest,
    facts: &Facts,
    at: &super::At<'_>,
    mut trace: Option<&mut Vec<RuleTrace>>,
) -> Decision {
    let mut decided: Option<Decision> = None;
    for layer in &project.above {
        let Some(mut decision) =
            layer
                .policy
                .first_match(request, facts, at, trace.as_deref_mut(), Some(&layer.name))
        else {
            continue;
        };
        if decided.as_ref().is_none_or(|d| decision.action > d.action) {
            decision.layer = Some(layer.name.clone());
            decided = Some(decision);
        }
    }
    let own = project
        .first_match(request, facts, at, trace, Some(PROJECT_LAYER))
        .unwrap_or_else(|| project.unmatched(request));
    let mut decision = match decided {
        Some(above) if above.action >= own.action => above,
        _ => Decision {
            layer: Some(PROJECT_LAYER.to_owned()),
            ..own
        },
    };
    decision.layers = project.layer_refs();
    decision
}

#[cfg(test)]
mod tests;
