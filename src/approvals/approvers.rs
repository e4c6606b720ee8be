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
use crate::audit::{ApprovalRecord, EnrolmentRecord, Event, EventBody, Factor};
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
                seq: row.seq,
                ts_us: row.ts_us,
            });
        }
    }
    Ok(people)
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
    let temporary = path.with_extension("totp.new");
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
    })
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
        let answers: Vec<ApprovalRecord> = body("approval")
            .into_iter()
            .filter_map(|b| match b {
                EventBody::Approval(a) => Some(a),
                _ => None,
            })
            .collect();
        if !answers.iter().any(|a| a.status == ApprovalStatus::Approved) {
            continue;
        }
        let digest = super::arguments_digest(&request.arguments);
        let mut counted: Vec<String> = Vec::new();
        for answer in &answers {
            let counts = (answer.vote || answer.status == ApprovalStatus::Approved)
                && matches!(answer.factor, Some(Factor::Totp | Factor::Passkey))
                && answer.arguments_sha256.as_deref() == Some(digest.as_str())
                && answer.policy_digest.as_deref() == Some(decision.policy.digest.as_str());
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

/// `alice or bob`, `2 of alice, bob, carol`, `any enrolled approver`.
pub fn describe_approvers(need: &crate::policy::Approvers) -> String {
    let names = if need.names.iter().any(|n| n == "*") {
        "any enrolled approver".to_owned()
    } else {
        need.names.join(", ")
    };
    match need.quorum {
        1 => names,
        n => format!("{n} distinct people of {names}"),
    }
}
