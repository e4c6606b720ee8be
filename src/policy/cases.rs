//! Policy regression cases: a request, optional facts, and the decision
//! expected of it. Written by hand (TOML) or exported from recorded
//! traffic (JSONL, `gavel export --requests`), run by `gavel policy test`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Action, Decision, Policy};
use crate::facts::Facts;
use crate::request::ToolRequest;

/// One case: what is asked and what must be decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyCase {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The recorded call this case came from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    pub tool: String,
    #[serde(default)]
    pub arguments: Value,
    /// The facts to decide on; without them, facts are gathered from the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<Facts>,
    /// The expected action.
    pub action: Action,
    /// The expected rule, when it matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<String>,
    /// The recorded reason, for reading; not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    cases: Vec<PolicyCase>,
}

impl PolicyCase {
    /// A short label: the name, else the call id, else the case number.
    pub fn label(&self, index: usize) -> String {
        self.name
            .clone()
            .or_else(|| self.call_id.clone())
            .unwrap_or_else(|| format!("#{}", index + 1))
    }

    pub fn request(&self, index: usize) -> ToolRequest {
        ToolRequest::new(self.label(index), &self.tool, self.arguments.clone())
    }

    /// Whether `decision` is what this case expects.
    pub fn passes(&self, decision: &Decision) -> bool {
        decision.action == self.action
            && self
                .rule_id
                .as_ref()
                .is_none_or(|rule| *rule == decision.rule_id)
    }
}

/// Parses cases from TOML (`[[cases]]` tables) or JSON lines (one case per line).
pub fn parse_cases(text: &str, toml: bool) -> Result<Vec<PolicyCase>, String> {
    if toml {
        let file: CaseFile = toml::from_str(text).map_err(|e| e.message().replace('\n', " "))?;
        return Ok(file.cases);
    }
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1)))
        .collect()
}

impl Policy {
    /// Decides a case on `facts` (the case's own, or gathered by the caller).
    pub fn decide_case(&self, case: &PolicyCase, index: usize, facts: &Facts) -> Decision {
        self.decide(&case.request(index), facts)
    }
}
