//! One-time links to one waiting call, sent by `[approval.notify]`
//! (docs/approvals.md, "Notifications").
//!
//! A link is `ORIGIN/#call=ID&link=MAC`: MAC is an HMAC-SHA-256, under a
//! key derived from the page's token (new at each start), of the call id,
//! the digests of its arguments and policy, and the end of its wait. The
//! page takes a link once, and only while the call waits with those same
//! arguments under that same policy; in exchange it gives a view of that
//! one call, where an answer still needs an approver's passkey or code.

use hmac::{KeyInit as _, Mac as _};

use super::Pending;
use super::notify::{self, Notice, NotifyError};
use crate::digest::{hex, sha256};
use crate::policy::Notify;
use crate::store::{Store, StoreError};

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The key the page's links are made and checked with.
#[derive(Clone)]
pub struct LinkKey([u8; 32]);

impl LinkKey {
    /// The key of the page whose token is `token`.
    pub fn from_token(token: &str) -> Self {
        Self(sha256(format!("gavel approval link\n{token}").as_bytes()))
    }

    /// The MAC a link to `pending` carries.
    pub fn mac(&self, pending: &Pending) -> String {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(
            format!(
                "{}\n{}\n{}\n{}",
                pending.call_id, pending.arguments_sha256, pending.policy_digest, pending.until_us
            )
            .as_bytes(),
        );
        hex(&mac.finalize().into_bytes())
    }

    /// The link to `pending` on the page at `origin`.
    pub fn link(&self, origin: &str, pending: &Pending) -> String {
        format!(
            "{origin}/#call={}&link={}",
            pending.call_id,
            self.mac(pending)
        )
    }

    /// Whether `mac` is a link to `pending` as it waits now.
    pub fn holds(&self, pending: &Pending, mac: &str) -> bool {
        crate::digest::same_secret(self.mac(pending).as_bytes(), mac.as_bytes())
    }
}

/// What one pass of [`notify_new`] did for a call.
#[derive(Debug)]
pub struct Sent {
    pub call_id: String,
    pub outcome: Result<(), NotifyError>,
}

/// Sends one message for each call waiting now that `sent` does not hold
/// yet, with a link to it on the page at `origin`, and adds it to `sent`
/// whatever the outcome (a failed delivery is reported, not retried, and
/// approves nothing).
pub fn notify_new(
    store: &Store,
    notify: &Notify,
    key: &LinkKey,
    origin: &str,
    sent: &mut Vec<String>,
    now_us: i64,
) -> Result<Vec<Sent>, StoreError> {
    let waiting = super::pending(store, now_us)?;
    sent.retain(|id| waiting.iter().any(|p| &p.call_id == id));
    let mut done = Vec::new();
    for pending in &waiting {
        if sent.contains(&pending.call_id) {
            continue;
        }
        sent.push(pending.call_id.clone());
        let link = key.link(origin, pending);
        let who = match (&pending.user, &pending.client) {
            (Some(user), Some(client)) => format!("{user} via {client}"),
            (Some(user), None) => user.clone(),
            (None, Some(client)) => client.clone(),
            (None, None) => "?".to_owned(),
        };
        let notice = Notice {
            call_id: &pending.call_id,
            tool: &pending.tool,
            arguments: &pending.arguments,
            rule_id: &pending.rule_id,
            reason: &pending.reason,
            who: &who,
            link: &link,
            expires_us: pending.until_us,
        };
        done.push(Sent {
            call_id: pending.call_id.clone(),
            outcome: notify::send(notify, &notice),
        });
    }
    Ok(done)
}

/// Runs [`notify_new`] twice a second until the process ends, reading the
/// log at `db`; says on stderr what it sent and what failed (a failure
/// approves nothing: the call waits as before).
pub fn notify_loop(db: &std::path::Path, notify: &Notify, key: &LinkKey, origin: &str) {
    let mut sent = Vec::new();
    let mut store = None;
    loop {
        if store.is_none() {
            store = Store::open_read_only(db).ok();
        }
        if let Some(reader) = &store {
            let now = chrono::Utc::now().timestamp_micros();
            match notify_new(reader, notify, key, origin, &mut sent, now) {
                Ok(done) => {
                    for sent in done {
                        match sent.outcome {
                            Ok(()) => {
                                eprintln!("gavel: notified the webhook of call {}", sent.call_id)
                            }
                            Err(err) => eprintln!(
                                "gavel: could not notify of call {}: {err}; it waits unanswered",
                                sent.call_id
                            ),
                        }
                    }
                }
                Err(err) => {
                    eprintln!("gavel: notifications: {err}");
                    store = None;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}
