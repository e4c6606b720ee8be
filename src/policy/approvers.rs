//! `approvers` and `quorum` on an ask rule: which enrolled people may
//! answer its calls, and how many distinct ones must approve. A call such
//! a rule asks about is approved only by answers that prove a second factor
//! (docs/approvals.md, "Approvers"): a terminal's or a client's own prompt
//! does not count. Pure.

use serde::{Deserialize, Serialize};

/// Who must approve a call, as the deciding rule says.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Approvers {
    /// The enrolled people who may approve; `*` is any enrolled person.
    pub names: Vec<String>,
    /// How many distinct people must approve.
    pub quorum: u32,
}

impl Approvers {
    /// Reads a rule's `approvers` and `quorum`; `None` when it has neither.
    pub(super) fn from_file(
        names: Option<Vec<String>>,
        quorum: Option<u32>,
        action: super::Action,
    ) -> Result<Option<Self>, String> {
        let Some(names) = names else {
            return match quorum {
                Some(_) => Err("`quorum` needs `approvers`, the people who may approve".into()),
                None => Ok(None),
            };
        };
        if action != super::Action::Ask {
            return Err(
                "`approvers` is only for ask rules (nobody answers an allow or a deny)".into(),
            );
        }
        super::patterns::non_empty_list("approvers", &names)?;
        if let Some(bad) = names.iter().find(|n| *n != "*" && !valid_name(n)) {
            return Err(format!(
                "`approvers`: `{bad}` is not a name (letters, digits, `.`, `_`, `-`; at most 64) or `*`"
            ));
        }
        let quorum = quorum.unwrap_or(1);
        let listed = names.iter().filter(|n| *n != "*").count();
        if quorum == 0 || (!names.iter().any(|n| n == "*") && quorum as usize > listed) {
            return Err(format!(
                "`quorum = {quorum}` cannot be met by the {listed} approver(s) named"
            ));
        }
        Ok(Some(Self { names, quorum }))
    }

    /// Whether the enrolled person `name` may approve.
    pub fn admits(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == "*" || n == name)
    }
}

/// A person's name as gavel keeps it: letters, digits, `.`, `_`, `-`, at most 64.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}
