//! Applying chosen proposals under review: the rules written into the
//! project's policy file (its comments and order kept), or, with a shadow,
//! into a candidate file the project's policy names as `[[shadow]]` so
//! that live calls are decided beside it first; removals taken out; grants
//! revoked. The change is recorded in the log as one chained lifecycle
//! event, `policy_suggestion_applied`, naming the proposals (their
//! digests), who applied them and the policy digests before and after, so
//! that an auditor can see where each rule came from. A layer above the
//! project (system, admin, user) is never edited.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::json;

use crate::audit::{ApprovalChannel, Event, EventBody, LifecycleRecord};
use crate::digest::{hex, sha256};
use crate::policy::{DEFAULT_POLICY_SOURCE, Policy};
use crate::principal::Principal;
use crate::store::{Store, StoreError};

use super::edit::{self, Insert};
use super::{Report, SuggestError};

/// The lifecycle event an application is recorded as.
pub const APPLIED_EVENT: &str = "policy_suggestion_applied";

/// The name of the shadow `--shadow` installs, and its file beside the policy.
pub const SHADOW_NAME: &str = "suggested";
pub const SHADOW_FILE: &str = "gavel.suggested.toml";

/// Why chosen proposals could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("no proposal or removal numbered {index} (1 to {count})")]
    NoSuch { index: usize, count: usize },
    #[error("choose at least one proposal to apply (`--apply 1,3`)")]
    NoneChosen,
    #[error("`{path}` is the {layer} layer's policy, above the project's: gavel never edits it")]
    Layer { layer: String, path: String },
    #[error("`{path}` changed since it was read; run suggest again")]
    Changed { path: String },
    #[error("cannot write `{path}`: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("the policy with the chosen proposals does not load: {0}")]
    Load(String),
    #[error(transparent)]
    Record(#[from] StoreError),
    #[error("a grant's revocation cannot be tried as a shadow: apply {index} without --shadow")]
    ShadowRevoke { index: usize },
    #[error("cannot revoke grant `{grant}`: {problem}")]
    Revoke { grant: String, problem: String },
}

/// What was applied.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    /// The project's policy file, written.
    pub file: String,
    /// The shadow policy file, with `--shadow`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow: Option<String>,
    pub policy_before: String,
    pub policy_after: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow_policy: Option<String>,
    /// SHA-256 over the chosen proposals' digests: what the record names.
    pub proposal_digest: String,
    pub applied: Vec<usize>,
    /// The grants revoked.
    pub revoked: Vec<String>,
    /// The seq of the recorded event.
    pub seq: u64,
    pub applied_by: String,
}

impl Applied {
    /// One line saying what was applied, for people.
    pub fn describe(&self) -> String {
        format!(
            "applied {:?} to `{}`{} (policy {} -> {}{}), recorded at seq {} by {}",
            self.applied,
            self.file,
            self.shadow
                .as_ref()
                .map_or(String::new(), |s| format!(" as the shadow policy `{s}`")),
            &self.policy_before[..12.min(self.policy_before.len())],
            &self.policy_after[..12.min(self.policy_after.len())],
            if self.revoked.is_empty() {
                String::new()
            } else {
                format!("; revoked {}", self.revoked.join(", "))
            },
            self.seq,
            self.applied_by
        )
    }
}

/// Where the project's policy lives: its file, or `workspace/gavel.toml`
/// for the built-in policy (written there on first application).
pub fn project_file(policy: &Policy, workspace: &Path) -> PathBuf {
    if policy.origin() == DEFAULT_POLICY_SOURCE {
        workspace.join("gavel.toml")
    } else {
        PathBuf::from(policy.origin())
    }
}

/// Applies the proposals and removals numbered `chosen` of `report` (made
/// for `policy`) to `file`, or as a shadow of it; records the change in
/// `store` on behalf of `by`.
pub fn apply(
    store: &mut Store,
    report: &Report,
    policy: &Policy,
    file: &Path,
    chosen: &[usize],
    shadow: bool,
    by: &Arc<Principal>,
) -> Result<Applied, SuggestError> {
    refuse_layers(policy, file)?;
    let count = report.proposals.len() + report.removals.len();
    if chosen.is_empty() {
        return Err(ApplyError::NoneChosen.into());
    }
    for &index in chosen {
        if index == 0 || index > count {
            return Err(ApplyError::NoSuch { index, count }.into());
        }
    }
    let on_disk = match std::fs::read_to_string(file) {
        Ok(text) => Some(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(ApplyError::Io {
                path: file.display().to_string(),
                source,
            }
            .into());
        }
    };
    if on_disk.as_deref().is_some_and(|t| t != policy.source())
        || (on_disk.is_none() && policy.origin() != DEFAULT_POLICY_SOURCE)
    {
        return Err(ApplyError::Changed {
            path: file.display().to_string(),
        }
        .into());
    }
    let ids: Vec<&str> = policy.rules().iter().map(|r| r.id.as_str()).collect();
    let proposals: Vec<&super::Proposal> = report
        .proposals
        .iter()
        .filter(|p| chosen.contains(&p.index))
        .collect();
    let removals: Vec<&super::Removal> = report
        .removals
        .iter()
        .filter(|r| chosen.contains(&r.index))
        .collect();
    if let Some(r) = removals.iter().find(|r| shadow && r.kind == "grant") {
        return Err(ApplyError::ShadowRevoke { index: r.index }.into());
    }
    let inserts: Vec<Insert<'_>> = proposals
        .iter()
        .map(|p| Insert {
            before: ids
                .iter()
                .position(|id| *id == p.before)
                .unwrap_or(ids.len()),
            rule: &p.rule,
            comment: super::proof::comment(p.index, p.rung.as_str(), &p.shape, &p.digest),
        })
        .collect();
    let removed: Vec<&str> = removals
        .iter()
        .filter(|r| r.kind == "rule")
        .map(|r| r.id.as_str())
        .collect();
    let candidate = edit::edit(policy.source(), policy.origin(), &ids, &inserts, &removed)?;
    Policy::from_toml(&candidate, &file.display().to_string())
        .map_err(|e| ApplyError::Load(e.to_string()))?;
    let shadow_path = file.with_file_name(SHADOW_FILE);
    let (project_text, shadow_text) = if shadow {
        (
            with_shadow(policy, &file.display().to_string())?,
            Some(candidate),
        )
    } else {
        (candidate, None)
    };
    let before = policy.reference().digest.clone();
    let after = hex(&sha256(project_text.as_bytes()));
    let shadow_digest = shadow_text.as_ref().map(|t| hex(&sha256(t.as_bytes())));
    let mut digests: Vec<(usize, &str)> = proposals
        .iter()
        .map(|p| (p.index, p.digest.as_str()))
        .chain(removals.iter().map(|r| (r.index, r.digest.as_str())))
        .collect();
    digests.sort();
    let proposal_digest = hex(&sha256(
        digests
            .iter()
            .map(|(_, d)| *d)
            .collect::<Vec<_>>()
            .join("\n")
            .as_bytes(),
    ));
    // Written beside, recorded, then moved into place: a change the
    // record does not name is never left in force.
    let project_temp = write_beside(file, &project_text)?;
    let shadow_temp = match &shadow_text {
        Some(text) => match write_beside(&shadow_path, text) {
            Ok(temp) => Some(temp),
            Err(err) => {
                let _ = std::fs::remove_file(&project_temp);
                return Err(err);
            }
        },
        None => None,
    };
    let cleanup = || {
        let _ = std::fs::remove_file(&project_temp);
        if let Some(temp) = &shadow_temp {
            let _ = std::fs::remove_file(temp);
        }
    };
    let mut applied: Vec<usize> = chosen.to_vec();
    applied.sort_unstable();
    applied.dedup();
    let revoked: Vec<String> = removals
        .iter()
        .filter(|r| r.kind == "grant")
        .map(|r| r.id.clone())
        .collect();
    let record = LifecycleRecord {
        event: APPLIED_EVENT.to_owned(),
        data: json!({
            "proposal_digest": proposal_digest,
            "report_digest": report.digest,
            "proposals": proposals.iter().map(|p| json!({
                "index": p.index, "rule": p.id, "digest": p.digest, "change": "add",
                "calls": p.proof.calls,
            })).chain(removals.iter().map(|r| json!({
                "index": r.index, "rule": r.id, "digest": r.digest,
                "change": if r.kind == "rule" { "remove" } else { "revoke" },
            }))).collect::<Vec<_>>(),
            "file": file.display().to_string(),
            "shadow": shadow_text.as_ref().map(|_| shadow_path.display().to_string()),
            "policy_before": before,
            "policy_after": after,
            "shadow_policy": shadow_digest,
            "applied_by": by.user,
        }),
    };
    let call_id = format!("policy-suggest/{}", &proposal_digest[..16]);
    let seq = match store
        .append(&[Event::now(&call_id, None, EventBody::Lifecycle(record)).by(Some(by))])
    {
        Ok(seq) => seq,
        Err(err) => {
            cleanup();
            return Err(ApplyError::Record(err).into());
        }
    };
    let rename = |temp: &Path, to: &Path| {
        std::fs::rename(temp, to).map_err(|source| ApplyError::Io {
            path: to.display().to_string(),
            source,
        })
    };
    if let Some(temp) = &shadow_temp {
        rename(temp, &shadow_path)?;
    }
    rename(&project_temp, file)?;
    for grant in &revoked {
        crate::approvals::revoke(
            store,
            grant,
            &by.user,
            ApprovalChannel::Cli,
            Some(format!(
                "unused in the window `gavel policy suggest` looked at (proposal digest {})",
                &proposal_digest[..16]
            )),
            Some(by),
        )
        .map_err(|e| ApplyError::Revoke {
            grant: grant.clone(),
            problem: e.to_string(),
        })?;
    }
    Ok(Applied {
        file: file.display().to_string(),
        shadow: shadow_text.map(|_| shadow_path.display().to_string()),
        policy_before: before,
        policy_after: after,
        shadow_policy: shadow_digest,
        proposal_digest,
        applied,
        revoked,
        seq,
        applied_by: by.user.clone(),
    })
}

/// Refuses a file that is one of the layers above the project.
fn refuse_layers(policy: &Policy, file: &Path) -> Result<(), ApplyError> {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let target = canonical(file);
    let layers = policy
        .layers()
        .iter()
        .map(|l| (l.name.clone(), PathBuf::from(&l.path)))
        .chain(
            crate::layers::candidates()
                .into_iter()
                .map(|(name, path)| (name.to_owned(), path)),
        );
    for (layer, path) in layers {
        if canonical(&path) == target {
            return Err(ApplyError::Layer {
                layer,
                path: file.display().to_string(),
            });
        }
    }
    Ok(())
}

/// The project's policy text with a `[[shadow]]` entry naming the
/// suggested candidate (kept when it is there already).
fn with_shadow(policy: &Policy, origin: &str) -> Result<String, SuggestError> {
    if policy.shadow_specs().iter().any(|s| s.name == SHADOW_NAME) {
        return Ok(policy.source().to_owned());
    }
    let mut doc: toml_edit::DocumentMut =
        policy
            .source()
            .parse()
            .map_err(|e: toml_edit::TomlError| edit::EditError::Parse {
                origin: origin.to_owned(),
                problem: e.message().to_owned(),
            })?;
    let mut table = toml_edit::Table::new();
    table.insert("name", toml_edit::value(SHADOW_NAME));
    table.insert("path", toml_edit::value(SHADOW_FILE));
    table.decor_mut().set_prefix(
        "\n# Proposed rules, decided beside this policy on every live call and never\n\
         # enforced (`gavel policy suggest --shadow`); `gavel replay --shadow suggested`\n\
         # compares them with what was enforced.\n",
    );
    match doc.get_mut("shadow") {
        Some(toml_edit::Item::ArrayOfTables(array)) => array.push(table),
        Some(_) => {
            return Err(edit::EditError::NotTables {
                origin: origin.to_owned(),
            }
            .into());
        }
        None => {
            let mut array = toml_edit::ArrayOfTables::new();
            array.push(table);
            doc.insert("shadow", toml_edit::Item::ArrayOfTables(array));
        }
    }
    Ok(doc.to_string())
}

/// [`crate::files::write_beside`], its error naming the file.
fn write_beside(path: &Path, text: &str) -> Result<PathBuf, SuggestError> {
    crate::files::write_beside(path, text).map_err(|source| {
        ApplyError::Io {
            path: path.display().to_string(),
            source,
        }
        .into()
    })
}
