//! Who answers an ask, as a front-end's options say: `run`'s `--approve`,
//! `--reject`, `--ask wait` or a prompt; a hook's `auto`, `prompt`, `deny`
//! or `wait`; and how long a call waits in the pending queue.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `--ask wait[=DURATION]`: an asked call waits in the pending queue for
/// `gavel approve` / `gavel reject` (or the approval page), for at most
/// DURATION; unanswered, it is `cancelled` (cause `timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AskWait(pub Option<Duration>);

impl AskWait {
    /// The wait, or `default` for a bare `wait`.
    pub fn or(self, default: Duration) -> Duration {
        self.0.unwrap_or(default)
    }
}

/// Reads `wait` or `wait=DURATION` (`60s`, `5m`, `1h`).
pub fn parse_ask_wait(text: &str) -> Result<AskWait, String> {
    match text.split_once('=') {
        None if text == "wait" => Ok(AskWait(None)),
        Some(("wait", duration)) => crate::policy::parse_wait(duration).map(|d| AskWait(Some(d))),
        _ => Err(format!(
            "`{text}` is not `wait` or `wait=DURATION` (e.g. wait=60s)"
        )),
    }
}

/// How long a bare `--ask wait` waits where the client sets no limit (`run`, `serve`).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(600);

/// How long a hook of `client` waits for an answer under `--ask wait`: as
/// asked, or 10 s less than the client's hook timeout.
pub fn hook_wait_for(client: &str, wait: AskWait) -> Duration {
    let limit = crate::clients::hook_timeout(client).default;
    wait.or(limit
        .saturating_sub(Duration::from_secs(10))
        .max(Duration::from_secs(1)))
}

/// A hook's `--ask`: what an `ask` becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookAsk {
    /// The client's own prompt where it always can, else denied as "needs approval".
    Auto,
    /// The client's own prompt also where it prompts only in interactive sessions.
    Prompt,
    /// Never handed to the client's prompt.
    Deny,
    /// The pending queue.
    Wait(AskWait),
}

impl HookAsk {
    /// Reads `auto`, `prompt`, `deny` or `wait[=DURATION]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "auto" => Ok(Self::Auto),
            "prompt" => Ok(Self::Prompt),
            "deny" => Ok(Self::Deny),
            _ if text.starts_with("wait") => parse_ask_wait(text).map(Self::Wait),
            _ => Err(format!(
                "`{text}` is not one of auto, prompt, deny, wait[=DURATION]"
            )),
        }
    }

    /// The text [`HookAsk::parse`] reads back.
    pub fn text(self) -> String {
        match self {
            Self::Auto => "auto".to_owned(),
            Self::Prompt => "prompt".to_owned(),
            Self::Deny => "deny".to_owned(),
            Self::Wait(AskWait(None)) => "wait".to_owned(),
            Self::Wait(AskWait(Some(wait))) => format!("wait={}ms", wait.as_millis()),
        }
    }
}

/// Who answers `run`'s ask, as its options say.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunAsks {
    /// `--approve`.
    Approve,
    /// `--reject`.
    Reject,
    /// `--ask wait[=DURATION]`: the pending queue.
    Wait(Option<Duration>),
    /// The policy's `[approval] wait` if it has one, else a prompt on the caller's terminal.
    Prompt,
}
