//! Session flows: labels put on calls, and rules on what earlier calls of
//! the same session did. Pure.
//!
//! A `[[labels]]` entry has a rule's conditions and no action: every entry
//! that holds for a call gives it its `labels`, whatever rule then decides
//! (its path and command conditions hold when any path or command meets
//! them, as a deny's do: a label says what a call may do). A rule's own
//! `labels` are added when that rule decides. The record keeps each
//! decision's labels; later calls of the session read them as their
//! [`History`]. A rule's flow conditions:
//!
//! - `after = [L, ...]` holds when an earlier call of the session set one
//!   of the labels (the decision names that call: [`After`]);
//! - `not_after = [L, ...]` holds when none did;
//! - `labelled = [L, ...]` holds when this call carries one of them (from
//!   the `[[labels]]` entries; a rule's own `labels` come after the decision).
//!
//! A history that could not be read never satisfies an allow's flow
//! condition and always satisfies an ask's or deny's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Action;
use super::patterns::non_empty_list;

/// The earlier call of the session whose label made an `after` condition hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct After {
    pub label: String,
    pub call_id: String,
}

/// What earlier calls of a session did, as flow conditions read it: each
/// label set, with the first call that set it. Calls that did not take
/// place (denied, rejected, cancelled, blocked) set nothing; the record's
/// readers leave them out (docs/flows.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    set: BTreeMap<String, String>,
    unknown: bool,
}

impl History {
    /// A fresh session's history: nothing set.
    pub const fn empty() -> Self {
        Self {
            set: BTreeMap::new(),
            unknown: false,
        }
    }

    /// A history that could not be read: see the module's last paragraph.
    pub fn unknown() -> Self {
        Self {
            set: BTreeMap::new(),
            unknown: true,
        }
    }

    /// Adds the labels of call `call_id`, which came after those added before.
    pub fn add(&mut self, call_id: &str, labels: &[String]) {
        for label in labels {
            self.set
                .entry(label.clone())
                .or_insert_with(|| call_id.to_owned());
        }
    }

    /// The first call that set `label`, if one did.
    pub fn set_by(&self, label: &str) -> Option<&str> {
        self.set.get(label).map(String::as_str)
    }

    /// Each label set, with the first call that set it, by label.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.set.iter().map(|(l, c)| (l.as_str(), c.as_str()))
    }

    pub fn is_unknown(&self) -> bool {
        self.unknown
    }
}

/// A rule's flow conditions, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FlowCondition {
    pub after: Vec<String>,
    pub not_after: Vec<String>,
    pub labelled: Vec<String>,
}

impl FlowCondition {
    /// Reads a rule's `after`, `not_after` and `labelled`; `None` when it has none.
    pub(super) fn from_file(
        after: Option<Vec<String>>,
        not_after: Option<Vec<String>>,
        labelled: Option<Vec<String>>,
    ) -> Result<Option<Self>, String> {
        if after.is_none() && not_after.is_none() && labelled.is_none() {
            return Ok(None);
        }
        let read = |key: &str, list: Option<Vec<String>>| -> Result<Vec<String>, String> {
            let Some(list) = list else {
                return Ok(Vec::new());
            };
            non_empty_list(key, &list)?;
            check_labels(key, &list)?;
            Ok(list)
        };
        Ok(Some(Self {
            after: read("after", after)?,
            not_after: read("not_after", not_after)?,
            labelled: read("labelled", labelled)?,
        }))
    }

    /// Whether the condition holds for a call carrying `labels`, made
    /// after `history`, under a rule of `action`: `Ok` with the earlier
    /// call an `after` relied on, else why not (for `explain`).
    pub(super) fn check(
        &self,
        action: Action,
        history: &History,
        labels: &[String],
    ) -> Result<Option<After>, String> {
        if !self.labelled.is_empty() && !self.labelled.iter().any(|l| labels.contains(l)) {
            return Err(format!(
                "the call carries none of the labels {}",
                list(&self.labelled)
            ));
        }
        let needs_history = !self.after.is_empty() || !self.not_after.is_empty();
        if needs_history && history.unknown {
            // Fail closed: an allow never relies on a history it cannot read.
            return if action == Action::Allow {
                Err("the session's history could not be read".to_owned())
            } else {
                Ok(None)
            };
        }
        let mut cause = None;
        if !self.after.is_empty() {
            let found = self
                .after
                .iter()
                .find_map(|label| Some((label, history.set_by(label)?)));
            let Some((label, call_id)) = found else {
                return Err(format!(
                    "no earlier call of the session set {}",
                    list(&self.after)
                ));
            };
            cause = Some(After {
                label: label.clone(),
                call_id: call_id.to_owned(),
            });
        }
        if let Some((label, call_id)) = self
            .not_after
            .iter()
            .find_map(|label| Some((label, history.set_by(label)?)))
        {
            return Err(format!(
                "call {call_id} earlier in the session set `{label}`"
            ));
        }
        Ok(cause)
    }
}

/// Refuses a label that is empty or holds a blank or a control character.
pub(super) fn check_labels(key: &str, labels: &[String]) -> Result<(), String> {
    match labels
        .iter()
        .find(|l| l.is_empty() || l.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        Some(bad) => Err(format!(
            "`{key}`: label {bad:?} must be non-empty, without blanks"
        )),
        None => Ok(()),
    }
}

fn list(labels: &[String]) -> String {
    let shown: Vec<String> = labels.iter().map(|l| format!("`{l}`")).collect();
    format!("[{}]", shown.join(", "))
}

/// The `{after}` placeholder of a reason: the label and the call that set it.
pub(super) fn describe(after: Option<&After>) -> String {
    match after {
        Some(a) => format!("`{}` set by call {}", a.label, a.call_id),
        None => "history unknown".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn after_names_the_first_call_that_set_a_label() {
        let mut history = History::default();
        history.add("c1", &labels(&["egress"]));
        history.add("c2", &labels(&["private"]));
        history.add("c3", &labels(&["private"]));
        let flow = FlowCondition::from_file(Some(labels(&["private"])), None, None)
            .unwrap()
            .unwrap();
        let cause = flow.check(Action::Deny, &history, &[]).unwrap().unwrap();
        assert_eq!(
            (cause.label.as_str(), cause.call_id.as_str()),
            ("private", "c2")
        );
        let fresh = History::default();
        assert!(flow.check(Action::Deny, &fresh, &[]).is_err());
        let not = FlowCondition::from_file(None, Some(labels(&["private"])), None)
            .unwrap()
            .unwrap();
        assert!(not.check(Action::Allow, &fresh, &[]).is_ok());
        let why = not.check(Action::Allow, &history, &[]).unwrap_err();
        assert!(why.contains("c2"), "{why}");
    }

    #[test]
    fn labelled_reads_the_call_itself() {
        let flow = FlowCondition::from_file(None, None, Some(labels(&["egress"])))
            .unwrap()
            .unwrap();
        let history = History::default();
        assert!(
            flow.check(Action::Ask, &history, &labels(&["egress"]))
                .is_ok()
        );
        assert!(
            flow.check(Action::Ask, &history, &labels(&["other"]))
                .is_err()
        );
    }

    #[test]
    fn an_unknown_history_fails_closed() {
        let unknown = History::unknown();
        for flow in [
            FlowCondition::from_file(Some(labels(&["p"])), None, None),
            FlowCondition::from_file(None, Some(labels(&["p"])), None),
        ] {
            let flow = flow.unwrap().unwrap();
            assert!(flow.check(Action::Allow, &unknown, &[]).is_err());
            assert_eq!(flow.check(Action::Deny, &unknown, &[]), Ok(None));
            assert_eq!(flow.check(Action::Ask, &unknown, &[]), Ok(None));
        }
    }

    #[test]
    fn bad_labels_are_refused() {
        assert!(FlowCondition::from_file(Some(vec![]), None, None).is_err());
        assert!(FlowCondition::from_file(Some(labels(&["a b"])), None, None).is_err());
        assert!(FlowCondition::from_file(None, None, Some(labels(&[""]))).is_err());
        assert_eq!(FlowCondition::from_file(None, None, None), Ok(None));
    }
}
