//! Approvers: people enrolled with a second factor (`gavel approvers add`),
//! whose answers the rules naming `approvers` count (docs/approvals.md,
//! "Approvers").
//!
//! An enrolment is a chained `enrolment` row under the call id
//! [`APPROVERS_CALL`]: the name, the factor and the SHA-256 of the key,
//! never the key. A TOTP secret is kept outside the log and the workspace,
//! in the user's key folder, one file per person and log, mode 0600
//! ([`secret_path`]); the person's authenticator app holds the other copy.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::ApprovalsError;
use super::totp::{Totp, base32, from_base32};
use crate::approval::ApprovalStatus;
use crate::audit::{
    ApprovalRecord, EnrolmentRecord, Event, EventBody, Factor, PasskeyAssertion, PasskeyKey,
};
use crate::digest::{hex, sha256};
use crate::principal::Principal;
use crate::store::{Store, StoreError};

/// The call id every enrolment row is recorded under: found by one index lookup.
pub const APPROVERS_CALL: &str = "approvers";

/// A person enrolled now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Enrolled {
    pub name: String,
    pub factor: Factor,
    pub key_sha256: String,
    pub enrolled_by: String,
    /// A passkey's credential.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passkey: Option<PasskeyKey>,
    /// The seq and time of the enrolment row.
    pub seq: u64,
    pub ts_us: i64,
}

/// Everyone enrolled now: each name's last enrolment row, unless it
/// removed them. An unreadable row is skipped (`gavel verify` names it).
pub fn enrolled(store: &Store) -> Result<Vec<Enrolled>, StoreError> {
    let mut people: Vec<Enrolled> = Vec::new();
    let rows = match store.call_events(APPROVERS_CALL) {
        Err(StoreError::UnknownCall { .. }) => Vec::new(),
        rows => rows?,
    };
    for row in rows {
        let Ok(EventBody::Enrolment(record)) = EventBody::from_json(&row.kind, &row.payload) else {
            continue;
        };
        people.retain(|p| p.name != record.name);
        if !record.removed {
            people.push(Enrolled {
                name: record.name,
                factor: record.factor,
                key_sha256: record.key_sha256,
                enrolled_by: record.enrolled_by,
                passkey: record.passkey,
                seq: row.seq,
                ts_us: row.ts_us,
            });
        }
    }
    Ok(people)
}

/// Refuses `name` for a new enrolment: not a name, or enrolled already.
fn check_new_name(store: &Store, name: &str) -> Result<(), ApprovalsError> {
    let refuse = |why: String| ApprovalsError::Enrolment {
        name: name.to_owned(),
        why,
    };
    if !crate::policy::valid_name(name) {
        return Err(refuse(
            "a name is letters, digits, `.`, `_` and `-`, at most 64, not starting with `.`".into(),
        ));
    }
    if enrolled(store)?.iter().any(|p| p.name == name) {
        return Err(refuse(format!(
            "already enrolled; `gavel approvers remove {name}` first"
        )));
    }
    Ok(())
}

/// Where the TOTP secret of `name` for the log `log_id` is kept:
/// `<user keys>/<log id>.approvers/<name>.totp`; `None` without a home folder.
pub fn secret_path(log_id: &[u8], name: &str) -> Option<PathBuf> {
    let dir = crate::store::user_keys_dir()?;
    Some(
        dir.join(format!("{}.approvers", hex(log_id)))
            .join(format!("{name}.totp")),
    )
}

/// Enrols `name` with a new TOTP secret: writes the secret (mode 0600),
/// then records the enrolment. Returns the generator, for the person's app.
pub fn enrol_totp(
    store: &mut Store,
    name: &str,
    by: &Arc<Principal>,
) -> Result<Totp, ApprovalsError> {
    let refuse = |why: String| ApprovalsError::Enrolment {
        name: name.to_owned(),
        why,
    };
    check_new_name(store, name)?;
    let path = secret_path(&store.identity().log_id, name).ok_or_else(|| {
        refuse("no home folder to keep the secret in (set HOME or XDG_DATA_HOME)".into())
    })?;
    let mut secret = vec![0u8; 20];
    getrandom::fill(&mut secret).map_err(|e| refuse(format!("no randomness: {e}")))?;
    write_secret(&path, &base32(&secret)).map_err(|e| {
        refuse(format!(
            "cannot write its secret to `{}`: {e}",
            path.display()
        ))
    })?;
    let record = EnrolmentRecord {
        name: name.to_owned(),
        factor: Factor::Totp,
        key_sha256: hex(&sha256(&secret)),
        enrolled_by: by.user.clone(),
        removed: false,
        passkey: None,
    };
    store.append(&[Event::now(APPROVERS_CALL, None, EventBody::Enrolment(record)).by(Some(by))])?;
    Ok(Totp::new(secret))
}

/// Records that `name` approves nothing from now on, and deletes their
/// TOTP secret.
pub fn remove(store: &mut Store, name: &str, by: &Arc<Principal>) -> Result<(), ApprovalsError> {
    let Some(person) = enrolled(store)?.into_iter().find(|p| p.name == name) else {
        return Err(ApprovalsError::Enrolment {
            name: name.to_owned(),
            why: "not enrolled".into(),
        });
    };
    let record = EnrolmentRecord {
        name: name.to_owned(),
        factor: person.factor,
        key_sha256: person.key_sha256,
        enrolled_by: by.user.clone(),
        removed: true,
        passkey: person.passkey,
    };
    store.append(&[Event::now(APPROVERS_CALL, None, EventBody::Enrolment(record)).by(Some(by))])?;
    if let Some(path) = secret_path(&store.identity().log_id, name) {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// The TOTP time step `code` proves for enrolled `name` at `unix_secs`:
/// the secret must be the enrolled one (its digest), and the step not one
/// this person used before (checked again, atomically, when the answer is
/// appended).
pub fn check_totp(
    store: &Store,
    name: &str,
    code: &str,
    unix_secs: u64,
) -> Result<u64, ApprovalsError> {
    let refuse = |why: &str| ApprovalsError::Factor {
        name: name.to_owned(),
        why: why.to_owned(),
    };
    let person = enrolled(store)?
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| refuse("is not an enrolled approver (`gavel approvers add`)"))?;
    if person.factor != Factor::Totp {
        return Err(refuse(
            "is enrolled with a passkey, not an authenticator code",
        ));
    }
    let secret = secret_path(&store.identity().log_id, name)
        .and_then(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| from_base32(&text))
        .ok_or_else(|| refuse("has no TOTP secret on this machine"))?;
    if hex(&sha256(&secret)) != person.key_sha256 {
        return Err(refuse(
            "has a TOTP secret on this machine that is not the enrolled one",
        ));
    }
    let step = Totp::new(secret)
        .check(code, unix_secs)
        .ok_or_else(|| refuse("gave a code that is not theirs now"))?;
    if store.totp_step_used(name, step)? {
        return Err(StoreError::CodeReused {
            name: name.to_owned(),
            step,
        }
        .into());
    }
    Ok(step)
}

/// Writes `text` to `path` (mode 0600, its folder 0700), replacing it.
fn write_secret(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    crate::store::prepare_key_dir(path)?;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".new");
    let temporary = PathBuf::from(temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
}

/// The proof that enrolled `name` gave `code` now (`now_us`): see [`check_totp`].
pub fn prove(
    store: &Store,
    name: &str,
    code: &str,
    now_us: i64,
) -> Result<super::Proof, ApprovalsError> {
    let secs = u64::try_from(now_us / 1_000_000).unwrap_or(0);
    Ok(super::Proof {
        factor: Factor::Totp,
        step: Some(check_totp(store, name, code, secs)?),
        assertion: None,
    })
}

/// How long a passkey enrolment code (`gavel approvers add --passkey`) stays good.
pub const ENROLMENT_LASTS_US: i64 = 15 * 60 * 1_000_000;

fn enrolment_path(store: &Store, name: &str) -> Option<PathBuf> {
    secret_path(&store.identity().log_id, name).map(|p| p.with_extension("enrol"))
}

/// Starts enrolling `name` with a passkey: a one-time code, good for
/// [`ENROLMENT_LASTS_US`], that the approval page's `/enrol` takes (its
/// digest and expiry are kept beside the TOTP secrets, mode 0600).
pub fn start_passkey_enrolment(
    store: &Store,
    name: &str,
    now_us: i64,
) -> Result<String, ApprovalsError> {
    let refuse = |why: String| ApprovalsError::Enrolment {
        name: name.to_owned(),
        why,
    };
    check_new_name(store, name)?;
    let path = enrolment_path(store, name).ok_or_else(|| {
        refuse("no home folder to keep the code in (set HOME or XDG_DATA_HOME)".into())
    })?;
    let mut code = [0u8; 16];
    getrandom::fill(&mut code).map_err(|e| refuse(format!("no randomness: {e}")))?;
    let code = hex(&code);
    let line = format!(
        "{} {}\n",
        hex(&sha256(code.as_bytes())),
        now_us + ENROLMENT_LASTS_US
    );
    write_secret(&path, &line)
        .map_err(|e| refuse(format!("cannot write `{}`: {e}", path.display())))?;
    Ok(code)
}

/// Whether `code` is the enrolment code of `name`, not yet expired.
pub fn check_enrolment_code(
    store: &Store,
    name: &str,
    code: &str,
    now_us: i64,
) -> Result<(), ApprovalsError> {
    let refuse = |why: &str| ApprovalsError::Enrolment {
        name: name.to_owned(),
        why: why.to_owned(),
    };
    if !crate::policy::valid_name(name) {
        return Err(refuse("is not a name"));
    }
    let text = enrolment_path(store, name)
        .and_then(|path| std::fs::read_to_string(path).ok())
        .ok_or_else(|| refuse("has no enrolment under way (`gavel approvers add --passkey`)"))?;
    let (digest, until) = text.trim().split_once(' ').unwrap_or_default();
    let until: i64 = until.parse().unwrap_or(0);
    let given = hex(&sha256(code.as_bytes()));
    if !crate::digest::same_secret(digest.as_bytes(), given.as_bytes()) {
        return Err(refuse("gave a code that is not its enrolment code"));
    }
    if now_us > until {
        return Err(refuse("gave an enrolment code that expired"));
    }
    Ok(())
}

/// Enrols `name` with `credential`, made for `rp_id` with the enrolment
/// `code`: records it and ends the enrolment (the code is taken once).
pub fn enrol_passkey(
    store: &mut Store,
    name: &str,
    code: &str,
    credential: &super::passkey::Credential,
    rp_id: &str,
    by: &Arc<Principal>,
    now_us: i64,
) -> Result<(), ApprovalsError> {
    check_enrolment_code(store, name, code, now_us)?;
    if enrolled(store)?.iter().any(|p| p.name == name) {
        return Err(ApprovalsError::Enrolment {
            name: name.to_owned(),
            why: "already enrolled".into(),
        });
    }
    use super::passkey::b64url;
    let id = b64url(&credential.id);
    if passkeys_ever(store)?
        .iter()
        .any(|held| held.key.credential_id == id)
    {
        return Err(ApprovalsError::Enrolment {
            name: name.to_owned(),
            why: "offered a passkey credential already enrolled; make a new passkey".into(),
        });
    }
    let record = EnrolmentRecord {
        name: name.to_owned(),
        factor: Factor::Passkey,
        key_sha256: hex(&sha256(&credential.public_key)),
        enrolled_by: by.user.clone(),
        removed: false,
        passkey: Some(PasskeyKey {
            credential_id: id,
            public_key: b64url(&credential.public_key),
            rp_id: rp_id.to_owned(),
        }),
    };
    if let Some(path) = enrolment_path(store, name) {
        let _ = std::fs::remove_file(path);
    }
    store.append(&[Event::now(APPROVERS_CALL, None, EventBody::Enrolment(record)).by(Some(by))])?;
    Ok(())
}

/// The challenge a passkey signs to answer a call: SHA-256 of the call,
/// the digests of its arguments and policy as shown, the answer, and a
/// one-time `nonce`. Anyone holding the log recomputes it.
pub fn passkey_challenge(
    call_id: &str,
    arguments_sha256: &str,
    policy_digest: &str,
    approved: bool,
    nonce: &[u8],
) -> [u8; 32] {
    let answer = if approved { "approved" } else { "rejected" };
    let mut text =
        format!("gavel approval\n{call_id}\n{arguments_sha256}\n{policy_digest}\n{answer}\n")
            .into_bytes();
    text.extend_from_slice(nonce);
    sha256(&text)
}

/// The enrolled person `assertion` is from, when it is their passkey's
/// signature over `pending`'s challenge for this answer (made on the site
/// `rp`): their name, and the proof to record.
pub fn prove_passkey(
    store: &Store,
    rp: super::passkey::RelyingParty,
    pending: &super::Pending,
    approved: bool,
    assertion: PasskeyAssertion,
) -> Result<(String, super::Proof), ApprovalsError> {
    let mut holders = enrolled(store)?.into_iter().filter(|p| {
        p.passkey
            .as_ref()
            .is_some_and(|k| k.credential_id == assertion.credential_id && k.rp_id == rp.id)
    });
    let (Some(person), None) = (holders.next(), holders.next()) else {
        return Err(ApprovalsError::Factor {
            name: "?".into(),
            why: "used a passkey that is not exactly one enrolled approver's for this site".into(),
        });
    };
    let key = person.passkey.as_ref().ok_or(ApprovalsError::Factor {
        name: person.name.clone(),
        why: "has no passkey".into(),
    })?;
    let call = [
        pending.call_id.as_str(),
        &pending.arguments_sha256,
        &pending.policy_digest,
    ];
    check_assertion(key, rp, call, approved, &assertion).map_err(|e| ApprovalsError::Factor {
        name: person.name.clone(),
        why: format!("gave a passkey answer that does not verify: {e}"),
    })?;
    Ok((
        person.name,
        super::Proof {
            factor: Factor::Passkey,
            step: None,
            assertion: Some(assertion),
        },
    ))
}

/// Whether `assertion` is `key`'s signature, made on `rp`, of the answer
/// (`approved` or not) to `call`: its id and the digests of its arguments
/// and policy.
fn check_assertion(
    key: &PasskeyKey,
    rp: super::passkey::RelyingParty,
    [call_id, arguments_sha256, policy_digest]: [&str; 3],
    approved: bool,
    assertion: &PasskeyAssertion,
) -> Result<(), super::passkey::PasskeyError> {
    use super::passkey::{Credential, PasskeyError, from_b64url, verify_assertion};
    if assertion.credential_id != key.credential_id {
        return Err(PasskeyError::Key);
    }
    let bytes = |text: &str| from_b64url(text).ok_or(PasskeyError::AuthenticatorData);
    let credential = Credential {
        id: bytes(&key.credential_id)?,
        public_key: bytes(&key.public_key)?,
    };
    let challenge = passkey_challenge(
        call_id,
        arguments_sha256,
        policy_digest,
        approved,
        &bytes(&assertion.nonce)?,
    );
    verify_assertion(
        rp,
        &challenge,
        &credential,
        &bytes(&assertion.authenticator_data)?,
        &bytes(&assertion.client_data_json)?,
        &bytes(&assertion.signature)?,
    )
    .map(|_| ())
}

/// A call the record shows approved whose rule named approvers, without
/// enough of them: who counted, against what was needed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shortfall {
    pub call_id: String,
    /// The distinct enrolled people whose factor-backed approvals counted.
    pub counted: Vec<String>,
    pub needed: crate::policy::Approvers,
}

/// Every approved call whose rule named approvers and a quorum that the
/// record does not show met: distinct named people, each proving a second
/// factor, each answer bound to the call's arguments and policy. What
/// `gavel verify` fails on, beside the chain.
pub fn quorum_shortfalls(store: &Store) -> Result<Vec<Shortfall>, StoreError> {
    let mut short = Vec::new();
    let keys = passkeys_ever(store)?;
    for call_id in store.calls_needing_approvers()? {
        let events = store.call_events(&call_id)?;
        let body = |kind: &str| {
            events
                .iter()
                .filter(|e| e.kind == kind)
                .filter_map(|e| EventBody::from_json(kind, &e.payload).ok())
                .collect::<Vec<_>>()
        };
        let (Some(EventBody::Request(request)), Some(EventBody::Decision(decision))) = (
            body("request").into_iter().next(),
            body("decision").into_iter().next(),
        ) else {
            continue;
        };
        let Some(needed) = decision.approvers else {
            continue;
        };
        let answers: Vec<(u64, ApprovalRecord)> = events
            .iter()
            .filter(|e| e.kind == "approval")
            .filter_map(|e| match EventBody::from_json(&e.kind, &e.payload) {
                Ok(EventBody::Approval(a)) => Some((e.seq, a)),
                _ => None,
            })
            .collect();
        if !answers
            .iter()
            .any(|(_, a)| a.status == ApprovalStatus::Approved)
        {
            continue;
        }
        let digest = super::arguments_digest(&request.arguments);
        let call = [call_id.as_str(), &digest, &decision.policy.digest];
        let mut counted: Vec<String> = Vec::new();
        for (seq, answer) in &answers {
            let counts = (answer.vote || answer.status == ApprovalStatus::Approved)
                && matches!(answer.factor, Some(Factor::Totp | Factor::Passkey))
                && answer.arguments_sha256.as_deref() == Some(digest.as_str())
                && answer.policy_digest.as_deref() == Some(decision.policy.digest.as_str())
                && answer
                    .factor
                    .is_some_and(|f| needed.accepts_factor(f.as_str()))
                && (answer.factor != Some(Factor::Passkey) || signed(answer, *seq, &keys, call));
            if let Some(name) = answer
                .approver
                .as_ref()
                .filter(|n| counts && needed.admits(n) && !counted.contains(n))
            {
                counted.push(name.clone());
            }
        }
        if counted.len() < needed.quorum as usize {
            short.push(Shortfall {
                call_id,
                counted,
                needed,
            });
        }
    }
    Ok(short)
}

/// A passkey as the log held it: whose, and from which row until which
/// (its removal), so that an answer counts only with the key its person
/// held when they gave it.
struct HeldKey {
    name: String,
    key: PasskeyKey,
    from: u64,
    until: Option<u64>,
}

/// Every passkey ever enrolled, with its person and when they held it.
fn passkeys_ever(store: &Store) -> Result<Vec<HeldKey>, StoreError> {
    let rows = match store.call_events(APPROVERS_CALL) {
        Err(StoreError::UnknownCall { .. }) => Vec::new(),
        rows => rows?,
    };
    let mut held: Vec<HeldKey> = Vec::new();
    for row in &rows {
        let Ok(EventBody::Enrolment(record)) = EventBody::from_json(&row.kind, &row.payload) else {
            continue;
        };
        // A name's new enrolment or removal ends the key it held.
        for open in held
            .iter_mut()
            .filter(|h| h.name == record.name && h.until.is_none())
        {
            open.until = Some(row.seq);
        }
        if let (false, Some(key)) = (record.removed, record.passkey) {
            held.push(HeldKey {
                name: record.name,
                key,
                from: row.seq,
                until: None,
            });
        }
    }
    Ok(held)
}

/// Whether a recorded passkey answer (row `seq`) is its approver's
/// signature over this call with the key they held then, checked from the
/// log alone: the origin it was made on must be `https://` and the key's
/// site.
fn signed(answer: &ApprovalRecord, seq: u64, keys: &[HeldKey], call: [&str; 3]) -> bool {
    let Some(assertion) = &answer.assertion else {
        return false;
    };
    let origin = super::passkey::from_b64url(&assertion.client_data_json)
        .and_then(|json| super::passkey::client_data(&json).ok())
        .map(|data| data.origin)
        .unwrap_or_default();
    keys.iter()
        .filter(|held| answer.approver.as_ref() == Some(&held.name))
        .filter(|held| held.from < seq && held.until.is_none_or(|until| seq < until))
        .any(|held| {
            let site = super::Origin::parse(&origin)
                .filter(|o| o.https)
                .map(|o| o.host);
            let rp = super::passkey::RelyingParty {
                id: &held.key.rp_id,
                origin: &origin,
            };
            site.as_deref() == Some(held.key.rp_id.as_str())
                && check_assertion(&held.key, rp, call, true, assertion).is_ok()
        })
}

/// `alice or bob`, `2 of alice, bob, carol`, `any enrolled approver`.
pub fn describe_approvers(need: &crate::policy::Approvers) -> String {
    let names = if need.names.iter().any(|n| n == "*") {
        "any enrolled approver".to_owned()
    } else {
        need.names.join(", ")
    };
    let who = match need.quorum {
        1 => names,
        n => format!("{n} distinct people of {names}"),
    };
    match need.factors.as_slice() {
        [] => who,
        factors => format!("{who}, with {}", factors.join(" or ")),
    }
}
