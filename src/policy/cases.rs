//! Policy regression cases: a request, optional facts, and the decision
//! expected of it. Written by hand (TOML) or exported from recorded
//! traffic (JSONL, `gavel export --requests`), run by `gavel policy test`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Action, Decision, Policy};
use crate::facts::Facts;
use crate::principal::Principal;
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
    /// Who made the call, for rules with `who` conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub who: Option<CaseWho>,
    /// What happened earlier in the session, oldest first, for flow rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<CaseEarlier>,
    /// The expected action.
    pub action: Action,
    /// The expected rule, when it matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<String>,
    /// The recorded reason, for reading; not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// An earlier call of a case's session: a call, which the policy labels
/// (on the facts its words give, as inline examples are), or a label it set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CaseEarlier {
    Label(String),
    Call {
        tool: String,
        #[serde(default)]
        arguments: Value,
    },
}

/// Who made a case's call: the principal's fields a `who` condition reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseWho {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl CaseWho {
    /// The fields of a recorded principal.
    pub fn of(who: &Principal) -> Self {
        Self {
            client: Some(who.client.clone()),
            agent_type: who.agent_type.clone(),
            agent_id: who.agent_id.clone(),
            session: who.session.clone(),
            user: Some(who.user.clone()),
            host: Some(who.host.clone()),
        }
    }

    /// A principal with these fields (the others empty).
    pub fn principal(&self) -> Principal {
        Principal {
            user: self.user.clone().unwrap_or_default(),
            uid: 0,
            host: self.host.clone().unwrap_or_default(),
            host_id: String::new(),
            gavel: String::new(),
            client: self.client.clone().unwrap_or_default(),
            client_version: None,
            session: self.session.clone(),
            agent_id: self.agent_id.clone(),
            agent_type: self.agent_type.clone(),
            policy: None,
        }
    }
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
        let who = case.who.as_ref().map(CaseWho::principal);
        let mut history = super::History::default();
        for (n, earlier) in case.history.iter().enumerate() {
            let id = format!("history #{}", n + 1);
            match earlier {
                CaseEarlier::Label(label) => history.add(&id, std::slice::from_ref(label)),
                CaseEarlier::Call { tool, arguments } => {
                    let request = ToolRequest::new(id.clone(), tool, arguments.clone());
                    let facts = crate::facts::lexical_facts_with(
                        &request,
                        &self.path_arguments(&request.name),
                    );
                    let earlier = self.decide_in(&request, &facts, who.as_ref(), &history);
                    history.add(&id, &earlier.labels);
                }
            }
        }
        self.decide_in(&case.request(index), facts, who.as_ref(), &history)
    }
}

/// The outcome a failing case is to expect from now on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The case's index, as `parse_cases` numbers them.
    pub index: usize,
    pub action: Action,
    pub rule_id: String,
    pub reason: String,
}

/// Where a TOML case's expectations are written, as byte ranges.
#[derive(Deserialize)]
struct CaseSpans {
    action: toml::Spanned<toml::Value>,
    rule_id: Option<toml::Spanned<toml::Value>>,
}

#[derive(Deserialize)]
struct FileSpans {
    cases: Vec<CaseSpans>,
}

/// `text` (a cases file as `parse_cases` reads it) with the expected
/// outcomes of the `accepted` cases rewritten: the action, and the rule id
/// where the case names one (a case without `rule_id` keeps accepting any
/// rule). Everything else (comments, other cases, their order) is kept.
/// In JSON lines, a rewritten line's `reason` follows the new decision too.
pub fn accept(text: &str, toml: bool, accepted: &[Accepted]) -> Result<String, String> {
    if toml {
        accept_toml(text, accepted)
    } else {
        accept_json_lines(text, accepted)
    }
}

fn toml_string(text: &str) -> String {
    // A JSON string is a TOML basic string: the same quotes and escapes.
    Value::String(text.to_owned()).to_string()
}

fn accept_toml(text: &str, accepted: &[Accepted]) -> Result<String, String> {
    let spans: FileSpans = toml::from_str(text).map_err(|e| e.message().replace('\n', " "))?;
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for update in accepted {
        let case = spans
            .cases
            .get(update.index)
            .ok_or_else(|| format!("no case #{}", update.index + 1))?;
        edits.push((case.action.span(), toml_string(update.action.as_str())));
        if let Some(rule) = &case.rule_id {
            edits.push((rule.span(), toml_string(&update.rule_id)));
        }
    }
    // Last edit first, so earlier spans stay where they are.
    edits.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
    let mut out = text.to_owned();
    for (span, replacement) in edits {
        if out.get(span.clone()).is_none() {
            return Err("a case's span is not inside the file".into());
        }
        out.replace_range(span, &replacement);
    }
    Ok(out)
}

fn accept_json_lines(text: &str, accepted: &[Accepted]) -> Result<String, String> {
    // Looked up by case index: an exported file may hold 100k cases.
    let by_index: std::collections::HashMap<usize, &Accepted> =
        accepted.iter().map(|a| (a.index, a)).collect();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if body.trim().is_empty() {
            out.push_str(line);
            continue;
        }
        match by_index.get(&index) {
            None => out.push_str(line),
            Some(update) => {
                let mut case: Value = serde_json::from_str(body)
                    .map_err(|e| format!("line of case #{}: {e}", index + 1))?;
                let Some(object) = case.as_object_mut() else {
                    return Err(format!("case #{} is not a JSON object", index + 1));
                };
                object.insert("action".into(), update.action.as_str().into());
                if object.contains_key("rule_id") {
                    object.insert("rule_id".into(), update.rule_id.clone().into());
                }
                if object.contains_key("reason") {
                    object.insert("reason".into(), update.reason.clone().into());
                }
                out.push_str(&case.to_string());
                out.push_str(&line[body.len()..]);
            }
        }
        index += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(index: usize, action: Action, rule: &str) -> Accepted {
        Accepted {
            index,
            action,
            rule_id: rule.into(),
            reason: "new".into(),
        }
    }

    #[test]
    fn accepting_toml_rewrites_only_the_expectations() {
        let text = "# header\n[[cases]]\nname = \"a\" # keep\ntool = \"bash\"\narguments = { command = \"ls\" }\naction = \"allow\"\nrule_id = \"x\"\n\n[[cases]]\ntool = \"t\"\naction = 'deny'\n";
        let out = accept(
            text,
            true,
            &[
                update(0, Action::Ask, "bash.requires_approval"),
                update(1, Action::Allow, "y"),
            ],
        )
        .unwrap();
        assert_eq!(
            out,
            "# header\n[[cases]]\nname = \"a\" # keep\ntool = \"bash\"\narguments = { command = \"ls\" }\naction = \"ask\"\nrule_id = \"bash.requires_approval\"\n\n[[cases]]\ntool = \"t\"\naction = \"allow\"\n"
        );
        assert_eq!(parse_cases(&out, true).unwrap().len(), 2);
    }

    #[test]
    fn accepting_json_lines_keeps_other_lines_byte_for_byte() {
        let text = "{\"tool\":\"a\",\"action\":\"allow\"}\n\n{ \"tool\": \"b\", \"action\": \"deny\", \"rule_id\": \"r\", \"reason\": \"old\" }\n";
        let out = accept(text, false, &[update(1, Action::Ask, "s")]).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "{\"tool\":\"a\",\"action\":\"allow\"}");
        assert_eq!(lines[1], "");
        let case: Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(case["action"], "ask");
        assert_eq!(case["rule_id"], "s");
        assert_eq!(case["reason"], "new");
        assert!(out.ends_with('\n'));
    }
}
