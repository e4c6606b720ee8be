//! The records of approvals: a person's (or a channel's) answer to an
//! asked call, and the enrolment of the people who answer with a second
//! factor (docs/record-format.md, "approval" and "enrolment").

use serde::{Deserialize, Serialize};

use super::{ApprovalChannel, ApprovalStatus, CancelCause};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    pub status: ApprovalStatus,
    /// How the answer came (format 2; absent only in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<ApprovalChannel>,
    /// Who answered, where known (the OS user at a terminal, a client's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// For `cancelled`: why no answer could be had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<CancelCause>,
    /// For `pending` in the queue (channel `queue`): when the wait ends,
    /// microseconds since the Unix epoch, UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_us: Option<i64>,
    /// For an answer from the queue (channel `cli` or `web`): SHA-256 (hex)
    /// of the compact JSON of the request's recorded `arguments`, the
    /// arguments the answer is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_sha256: Option<String>,
    /// For an answer from the queue: the digest of the policy that asked
    /// (the decision's `policy.digest`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_digest: Option<String>,
    /// For an answer from the queue: why, in the answerer's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The second factor the approver proved they hold: `totp`,
    /// `passkey`; `terminal` for an enrolled person's answer without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<Factor>,
    /// For a TOTP answer: the time step of the code given (each is taken once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// One person's approval of a call that needs more (`quorum`): the
    /// call stays pending (this row's status) until enough distinct people
    /// approved.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vote: bool,
    /// For a passkey answer: what the authenticator signed, verifiable
    /// with the enrolled public key by anyone holding the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion: Option<PasskeyAssertion>,
}

/// A passkey's signed answer (docs/approvals.md, "Passkeys"): the
/// challenge it signed is SHA-256 of the call it answers (see
/// `approvals::passkey_challenge`) and `nonce`. Binary fields base64url.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasskeyAssertion {
    pub credential_id: String,
    pub authenticator_data: String,
    pub client_data_json: String,
    pub signature: String,
    pub nonce: String,
}

/// What a person proves they hold when they approve (docs/approvals.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Factor {
    /// A code of their authenticator app (RFC 6238).
    Totp,
    /// A WebAuthn credential.
    Passkey,
    /// Nothing beyond the terminal: a `gavel approve` without a code.
    Terminal,
}

impl Factor {
    pub fn as_str(self) -> &'static str {
        match self {
            Factor::Totp => "totp",
            Factor::Passkey => "passkey",
            Factor::Terminal => "terminal",
        }
    }
}

/// A person enrolled as an approver (`gavel approvers add`), or removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnrolmentRecord {
    pub name: String,
    pub factor: Factor,
    /// SHA-256 (hex) of the enrolled secret or public key: which key, never the key.
    pub key_sha256: String,
    /// Who enrolled them (the OS user).
    pub enrolled_by: String,
    /// The enrolment ends here: the name approves nothing from this row on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
    /// A passkey's credential: its id, its public key and the site it is
    /// bound to. Public, so kept in the record (an approval is verified
    /// from the log alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passkey: Option<PasskeyKey>,
}

/// An enrolled passkey (docs/approvals.md, "Passkeys").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasskeyKey {
    /// The credential id, base64url.
    pub credential_id: String,
    /// The public key as a COSE key, base64url; `key_sha256` is its digest.
    pub public_key: String,
    /// The RP ID (host name) it was made for.
    pub rp_id: String,
}

impl ApprovalRecord {
    /// An answer that came through `channel`.
    pub fn new(status: ApprovalStatus, channel: ApprovalChannel) -> Self {
        Self {
            status,
            channel: Some(channel),
            approver: None,
            cause: None,
            until_us: None,
            arguments_sha256: None,
            policy_digest: None,
            reason: None,
            factor: None,
            step: None,
            vote: false,
            assertion: None,
        }
    }
}
