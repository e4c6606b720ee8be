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
    /// The factors an answer counts with (`passkey`, `totp`); empty: either.
    /// `factors = ["passkey"]` refuses codes, and so `gavel approve` on a
    /// terminal: only the person's authenticator, through the page, counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub factors: Vec<String>,
}

/// The second factors an answer may prove.
pub const FACTORS: [&str; 2] = ["passkey", "totp"];

impl Approvers {
    /// Reads a rule's `approvers` and `quorum`; `None` when it has neither.
    pub(super) fn from_file(
        names: Option<Vec<String>>,
        quorum: Option<u32>,
        factors: Option<Vec<String>>,
        action: super::Action,
    ) -> Result<Option<Self>, String> {
        let Some(names) = names else {
            return match (quorum, factors) {
                (Some(_), _) => {
                    Err("`quorum` needs `approvers`, the people who may approve".into())
                }
                (_, Some(_)) => {
                    Err("`factors` needs `approvers`, the people who may approve".into())
                }
                (None, None) => Ok(None),
            };
        };
        let factors = factors.unwrap_or_default();
        if let Some(bad) = factors.iter().find(|f| !FACTORS.contains(&f.as_str())) {
            return Err(format!(
                "`factors`: `{bad}` is not a factor (`passkey`, `totp`)"
            ));
        }

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
        let mut factors = factors;
        factors.sort();
        factors.dedup();
        Ok(Some(Self {
            names,
            quorum,
            factors,
        }))
    }

    /// Whether an answer proving `factor` counts.
    pub fn accepts_factor(&self, factor: &str) -> bool {
        self.factors.is_empty() || self.factors.iter().any(|f| f == factor)
    }

    /// How many kinds of factor count: fewer is stricter.
    pub fn factor_count(&self) -> usize {
        FACTORS.iter().filter(|f| self.accepts_factor(f)).count()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Action;

    fn names(list: &[&str]) -> Option<Vec<String>> {
        Some(list.iter().map(|n| (*n).to_owned()).collect())
    }

    #[test]
    fn factors_are_checked_and_narrow_what_counts() {
        let passkey = Approvers::from_file(
            names(&["alice"]),
            None,
            names(&["passkey", "passkey"]),
            Action::Ask,
        )
        .unwrap()
        .unwrap();
        assert_eq!(passkey.factors, ["passkey"]);
        assert!(passkey.accepts_factor("passkey"));
        assert!(!passkey.accepts_factor("totp"));
        assert_eq!(passkey.factor_count(), 1);
        let either = Approvers::from_file(names(&["alice"]), None, None, Action::Ask)
            .unwrap()
            .unwrap();
        assert!(either.accepts_factor("totp") && either.accepts_factor("passkey"));
        let refused = [
            Approvers::from_file(None, None, names(&["passkey"]), Action::Ask),
            Approvers::from_file(names(&["alice"]), None, names(&["sms"]), Action::Ask),
        ];
        for result in refused {
            assert!(result.is_err(), "{result:?}");
        }
    }
}
