//! `who`: a rule's conditions on who made the call, as the record keeps
//! it (the principal): the client, the subagent and its type, the
//! session, the OS user and the host. Each field is a list of globs (`*`
//! matches any character); all fields given must match. A field the call
//! does not carry (a main agent has no `agent_type`, `gavel run` no
//! session) matches nothing, and a call with no principal at all matches
//! no `who` condition. Pure.

use serde::Deserialize;

use super::patterns::{Globs, Patterns};
use crate::principal::Principal;

/// The fields of a `who` condition a rule gave.
#[derive(Debug, Clone)]
pub(super) struct WhoCondition {
    pub fields: Vec<(WhoField, Patterns<Globs>)>,
    /// `subagent = true|false`: made by a subagent (an `agent_id`) or not.
    pub subagent: Option<bool>,
}

/// A field of the principal a `who` condition can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WhoField {
    Client,
    AgentType,
    AgentId,
    Session,
    User,
    Host,
}

impl WhoField {
    pub(super) fn name(self) -> &'static str {
        match self {
            WhoField::Client => "client",
            WhoField::AgentType => "agent_type",
            WhoField::AgentId => "agent_id",
            WhoField::Session => "session",
            WhoField::User => "user",
            WhoField::Host => "host",
        }
    }

    fn of(self, who: &Principal) -> Option<&str> {
        match self {
            WhoField::Client => Some(&who.client),
            WhoField::AgentType => who.agent_type.as_deref(),
            WhoField::AgentId => who.agent_id.as_deref(),
            WhoField::Session => who.session.as_deref(),
            WhoField::User => Some(&who.user),
            WhoField::Host => Some(&who.host),
        }
    }
}

impl WhoCondition {
    /// `Ok` when `who` meets every field; else why not, for `explain`.
    pub(super) fn check(&self, who: Option<&Principal>) -> Result<(), String> {
        let Some(who) = who else {
            return Err("the call names no principal (who made it)".into());
        };
        if let Some(wanted) = self.subagent
            && who.agent_id.is_some() != wanted
        {
            return Err(if wanted {
                "the call was not made by a subagent".into()
            } else {
                format!(
                    "the call was made by subagent `{}`",
                    who.agent_id.as_deref().unwrap_or_default()
                )
            });
        }
        for (field, globs) in &self.fields {
            match field.of(who) {
                None => return Err(format!("the call has no `{}`", field.name())),
                Some(value) if !globs.is_match(value) => {
                    return Err(format!(
                        "`{}` is `{value}`, which matches none of [{}]",
                        field.name(),
                        globs.written.join(", ")
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// When every client the condition names is one that never sends a
    /// field it tests (only Claude Code and Codex say which subagent made a
    /// call): what `policy lint` says.
    pub(super) fn never_sent(&self) -> Option<String> {
        /// The clients that send `agent_id` and `agent_type`.
        const SENDS_AGENT: [&str; 2] = ["claude-code", "codex"];
        let clients = self
            .fields
            .iter()
            .find(|(f, _)| *f == WhoField::Client)
            .map(|(_, g)| &g.written)?;
        let literal = |c: &String| !c.contains(['*', '?', '[', '{']);
        if !clients.iter().all(literal) || clients.iter().any(|c| SENDS_AGENT.contains(&c.as_str()))
        {
            return None;
        }
        let tested = self
            .fields
            .iter()
            .map(|(f, _)| *f)
            .find(|f| matches!(f, WhoField::AgentType | WhoField::AgentId))
            .map(WhoField::name)
            .or_else(|| (self.subagent == Some(true)).then_some("agent_id"))?;
        Some(format!(
            "tests `{tested}`, which {} never send{}",
            clients.join(", "),
            if clients.len() == 1 { "s" } else { "" }
        ))
    }

    /// The condition as written, to compare two rules'.
    pub(super) fn written(&self) -> Vec<String> {
        let mut parts: Vec<String> = self
            .fields
            .iter()
            .map(|(f, g)| format!("{} = [{}]", f.name(), g.written.join(", ")))
            .collect();
        if let Some(subagent) = self.subagent {
            parts.push(format!("subagent = {subagent}"));
        }
        parts
    }
}

/// `who`: globs on the principal's fields, and whether a subagent made the call.
#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct WhoFile {
    client: Option<Vec<String>>,
    agent_type: Option<Vec<String>>,
    agent_id: Option<Vec<String>>,
    session: Option<Vec<String>>,
    user: Option<Vec<String>>,
    host: Option<Vec<String>>,
    subagent: Option<bool>,
}

impl WhoCondition {
    /// A `who` table as the policy file writes it, checked.
    pub(super) fn from_file(spec: WhoFile) -> Result<Self, String> {
        let mut fields = Vec::new();
        for (field, globs_written) in [
            (WhoField::Client, spec.client),
            (WhoField::AgentType, spec.agent_type),
            (WhoField::AgentId, spec.agent_id),
            (WhoField::Session, spec.session),
            (WhoField::User, spec.user),
            (WhoField::Host, spec.host),
        ] {
            if let Some(written) = globs_written {
                fields.push((field, super::patterns::globs("who", written, false)?));
            }
        }
        if fields.is_empty() && spec.subagent.is_none() {
            return Err(
            "`who` names no field: client, agent_type, agent_id, session, user, host or subagent"
                .into(),
        );
        }
        Ok(WhoCondition {
            fields,
            subagent: spec.subagent,
        })
    }
}
