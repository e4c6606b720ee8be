//! The grants a replay re-checks: which grant covered an asked call at its
//! place in the record (given before it, not revoked, not expired, under its
//! use limit), and the calls that depended on one.

use serde::Serialize;

use super::Verdict;
use crate::facts::Facts;
use crate::policy::Decision;
use crate::request::ToolRequest;
use crate::store::{DecidedCall, Store, StoreError};

/// A call that depended on a grant, and what the current policy and the
/// grant's limits say of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantedCall {
    pub call_id: String,
    pub grant: String,
    /// Whether the grant allowed it when it was recorded (`grant.<ID>`).
    pub recorded: bool,
    /// Whether the grant allows it in this replay.
    pub covered: bool,
    /// Why the grant does not allow it in this replay: `revoked`,
    /// `expired`, `used up (N of N uses)`, `not given yet`, `the policy no
    /// longer asks`, `no such grant in the record`, `replayed without grants`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lapsed: Option<String>,
    /// The current policy's own decision (before any grant).
    pub now: Verdict,
}

/// The grants of a log, as replay judges them: each with the seqs of the
/// decisions it made (its uses), to count the uses before any call.
pub(super) struct GrantBook {
    grants: Vec<(crate::approvals::grants::Grant, Vec<u64>)>,
}

impl GrantBook {
    pub(super) fn load(store: &Store) -> Result<Self, StoreError> {
        let mut grants = Vec::new();
        for grant in crate::approvals::grants(store)? {
            let rule = format!(
                "{}{}",
                crate::approvals::grants::GRANT_RULE_PREFIX,
                grant.record.grant
            );
            let uses = store.decision_seqs_by_rule(&rule)?;
            grants.push((grant, uses));
        }
        Ok(Self { grants })
    }

    /// For an asked call: the grant that covers it at its place in the
    /// record, or else the grants whose scope covers it, each with why it
    /// did not. Grants given after the call are not looked at.
    pub(super) fn judge(
        &self,
        call: &DecidedCall,
        request: &ToolRequest,
        facts: &Facts,
        decision: &Decision,
    ) -> Result<&crate::approvals::grants::Grant, Vec<(&str, String)>> {
        use crate::approvals::grants::{applies, lapsed_at};
        let session = call
            .request
            .principal
            .as_ref()
            .and_then(|p| p.session.as_deref());
        let mut lapsed = Vec::new();
        for (grant, uses) in &self.grants {
            if grant.seq > call.seq || !applies(grant, request, facts, decision, session) {
                continue;
            }
            let before = uses.partition_point(|s| *s < call.seq) as u64;
            match lapsed_at(grant, call.seq, call.ts_us, before) {
                None => return Ok(grant),
                Some(why) => lapsed.push((grant.record.grant.as_str(), why)),
            }
        }
        Err(lapsed)
    }

    pub(super) fn knows(&self, grant: &str) -> bool {
        self.grants.iter().any(|(g, _)| g.record.grant == grant)
    }
}

/// Whether a replay counts the grants recorded in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grants {
    /// A call a grant allowed that the policy still asks about stays allowed by it.
    AsRecorded,
    /// Every call is re-decided by the policy alone (`--no-grants`).
    Ignored,
}
