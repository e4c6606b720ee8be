//! `[approval.notify]`: where a call waiting in the pending queue is
//! announced (a webhook), in which shape, and how long a send may take.
//! Plain data, read and checked here; sending is `approvals::notify`'s.
//! Pure: a `url_env` names a variable, read only when a message is sent.

use std::time::Duration;

use serde::Deserialize;

/// How long a send may take when the policy does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest `timeout` a policy may set.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);

/// A policy's `[approval.notify]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notify {
    /// Where messages go.
    pub target: NotifyTarget,
    /// The shape of the message.
    pub format: NotifyFormat,
    /// How long one send may take in all (connect, send, answer).
    pub timeout: Duration,
}

/// Where a webhook's URL comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyTarget {
    /// `url`: written in the policy (checked to be http:// or https://).
    Url(String),
    /// `url_env`: read from this environment variable at send time, so the
    /// secret stays out of the project.
    Env(String),
}

/// `format`: the receiver a message is shaped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NotifyFormat {
    /// gavel's own JSON object (`"type": "gavel.pending"`).
    #[default]
    Json,
    /// A Slack incoming webhook (`{"text": …}`, mrkdwn).
    Slack,
    /// A Discord webhook (`{"content": …}`).
    Discord,
    /// An ntfy topic (a plain-text body, `Title` and `Click` headers).
    Ntfy,
}

impl NotifyFormat {
    /// Every format, as written in a policy.
    pub const ALL: [Self; 4] = [Self::Json, Self::Slack, Self::Discord, Self::Ntfy];

    /// The name a policy writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Slack => "slack",
            Self::Discord => "discord",
            Self::Ntfy => "ntfy",
        }
    }
}

/// The table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NotifyFile {
    url: Option<String>,
    url_env: Option<String>,
    format: Option<String>,
    timeout: Option<String>,
}

impl Notify {
    /// Reads and checks the table; a problem is named without the
    /// `[approval.notify]: ` the caller puts before it.
    pub(super) fn from_file(spec: NotifyFile) -> Result<Self, String> {
        let target = match (spec.url, spec.url_env) {
            (Some(url), None) => {
                check_url(&url).map_err(|e| format!("url {e}"))?;
                NotifyTarget::Url(url)
            }
            (None, Some(name)) => {
                if name.is_empty() || name.contains(['=', '\0']) {
                    return Err(format!(
                        "url_env `{name}` is not an environment variable's name"
                    ));
                }
                NotifyTarget::Env(name)
            }
            (Some(_), Some(_)) => return Err("set `url` or `url_env`, not both".into()),
            (None, None) => {
                return Err("needs `url`, or `url_env` naming the variable that holds it".into());
            }
        };
        let format = match spec.format {
            None => NotifyFormat::default(),
            Some(text) => NotifyFormat::ALL
                .into_iter()
                .find(|f| f.as_str() == text)
                .ok_or_else(|| {
                    format!("format `{text}` is not one of json, slack, discord, ntfy")
                })?,
        };
        let timeout = match spec.timeout {
            None => DEFAULT_TIMEOUT,
            Some(text) => {
                let timeout = super::parse_wait(&text).map_err(|e| format!("timeout {e}"))?;
                if timeout > MAX_TIMEOUT {
                    return Err(format!("timeout `{text}` is more than 60s"));
                }
                timeout
            }
        };
        Ok(Self {
            target,
            format,
            timeout,
        })
    }
}

/// Checks that `url` is an http:// or https:// URL with a host. The
/// problem never repeats the URL (a webhook's URL is a secret).
pub fn check_url(url: &str) -> Result<(), String> {
    let rest = ["http://", "https://"]
        .into_iter()
        .find_map(|scheme| {
            url.get(..scheme.len())
                .filter(|s| s.eq_ignore_ascii_case(scheme))
                .map(|_| &url[scheme.len()..])
        })
        .ok_or("must start with http:// or https://")?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.rsplit('@').next().is_none_or(str::is_empty) {
        return Err("has no host".into());
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("holds a space or a control character".into());
    }
    Ok(())
}
