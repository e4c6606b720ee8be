//! Who made a call, from where, through what: the principal and provenance
//! recorded with every call (record format 2). A front end builds one with
//! [`Principal::current`] (the OS user, the host, this gavel) and adds what
//! its client's payload says (`with_session`, `with_agent`,
//! `with_client_version`); nothing here knows of SQL or of any client.
//!
//! The host id is stable across runs: a digest of `/etc/machine-id` (never
//! the id itself, which systemd asks not to expose), else a random id kept
//! in a file beside the database (`<db>.host-id`).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The recorded principal of a call. Serialized into the chained request
/// payload as `principal`; its `user`, `host`, `client`, `session` and
/// `agent_id` are also the typed columns of every row of the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// The OS user name (from the password database, else `$USER`, else the uid).
    pub user: String,
    pub uid: u32,
    /// The host name, as the OS reports it.
    pub host: String,
    /// A stable id of the host: 32 hex digits.
    pub host_id: String,
    /// The gavel version that recorded the call.
    pub gavel: String,
    /// The front end: `cli`, `serve`, `claude-code`, `codex`, `gemini`, `copilot`, `cursor`, ...
    pub client: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// A subagent's id and type, when a subagent made the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// Where the deciding policy came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicySource>,
}

/// Where the policy that decided came from (its digest is in the decision).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicySource {
    /// `flag` (`--policy`), `env` (`$GAVEL_POLICY`), `workspace` (`gavel.toml`) or `builtin`.
    pub layer: String,
    /// The file, canonical where it can be; `None` for the built-in policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// SHA-256 (hex) of the policy text: the `policy.digest` of its decisions.
    pub digest: String,
}

impl Principal {
    /// The principal of this process, for calls that come through `client`.
    /// The host id is the machine id's digest; without one, call
    /// [`Principal::with_host_id_beside`] to use (or make) a kept random id.
    pub fn current(client: &str) -> Self {
        let uid = current_uid();
        Self {
            user: user_name(uid),
            uid,
            host: host_name(),
            host_id: machine_host_id().unwrap_or_default(),
            gavel: env!("CARGO_PKG_VERSION").to_owned(),
            client: client.to_owned(),
            client_version: None,
            session: None,
            agent_id: None,
            agent_type: None,
            policy: None,
        }
    }

    /// When the host has no machine id: a random id kept in `<db>.host-id`
    /// (mode 0600), made on first use. A host id already known is kept.
    pub fn with_host_id_beside(mut self, db: &Path) -> Self {
        if self.host_id.is_empty() {
            self.host_id = kept_host_id(db).unwrap_or_else(|| "unknown".to_owned());
        }
        self
    }

    pub fn with_session(mut self, session: Option<&str>) -> Self {
        self.session = session.filter(|s| !s.is_empty()).map(str::to_owned);
        self
    }

    pub fn with_agent(mut self, id: Option<&str>, kind: Option<&str>) -> Self {
        self.agent_id = id.filter(|s| !s.is_empty()).map(str::to_owned);
        self.agent_type = kind.filter(|s| !s.is_empty()).map(str::to_owned);
        self
    }

    pub fn with_client_version(mut self, version: Option<&str>) -> Self {
        self.client_version = version.filter(|s| !s.is_empty()).map(str::to_owned);
        self
    }

    pub fn with_policy(mut self, policy: PolicySource) -> Self {
        self.policy = Some(policy);
        self
    }
}

fn current_uid() -> u32 {
    // SAFETY: getuid(2) cannot fail and touches no memory.
    unsafe { libc::getuid() }
}

/// The name of `uid` in the password database, else `$USER`, else the uid.
fn user_name(uid: u32) -> String {
    let mut buffer = vec![0u8; 4096];
    // SAFETY: an all-zero passwd is a valid value for getpwuid_r to fill.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to live, correctly sized memory; getpwuid_r
    // writes the strings into `buffer` and sets `found` to `&entry` or null.
    let rc = unsafe {
        libc::getpwuid_r(
            uid,
            &mut entry,
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            &mut found,
        )
    };
    if rc == 0 && !found.is_null() && !entry.pw_name.is_null() {
        // SAFETY: pw_name points into `buffer`, NUL-terminated by getpwuid_r.
        let name = unsafe { std::ffi::CStr::from_ptr(entry.pw_name) };
        if let Ok(name) = name.to_str()
            && !name.is_empty()
        {
            return name.to_owned();
        }
    }
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| uid.to_string())
}

fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: gethostname(2) writes at most `len` bytes into the buffer.
    let rc = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if rc == 0 {
        let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
        if let Ok(name) = std::str::from_utf8(&buffer[..end])
            && !name.is_empty()
        {
            return name.to_owned();
        }
    }
    "unknown".to_owned()
}

/// The first 16 bytes (hex) of SHA-256("gavel/host/v1" ‖ machine id).
fn machine_host_id() -> Option<String> {
    ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .map(|text| text.trim().to_owned())
        .find(|id| !id.is_empty())
        .map(|id| {
            let mut input = b"gavel/host/v1".to_vec();
            input.extend_from_slice(id.as_bytes());
            crate::digest::hex(&crate::digest::sha256(&input)[..16])
        })
}

/// The random host id kept beside the database, made on first use.
fn kept_host_id(db: &Path) -> Option<String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut name = db.as_os_str().to_owned();
    name.push(".host-id");
    let path = std::path::PathBuf::from(name);
    if let Ok(text) = std::fs::read_to_string(&path) {
        let id = text.trim();
        if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some(id.to_owned());
        }
    }
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).ok()?;
    let id = crate::digest::hex(&id);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .ok()?;
    file.write_all(id.as_bytes()).ok()?;
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_principal_names_a_user_and_a_host() {
        let me = Principal::current("cli");
        assert!(!me.user.is_empty());
        assert!(!me.host.is_empty());
        assert_eq!(me.client, "cli");
        assert_eq!(me.gavel, env!("CARGO_PKG_VERSION"));
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("a.db");
        let first = Principal {
            host_id: String::new(),
            ..me.clone()
        }
        .with_host_id_beside(&db);
        let again = Principal {
            host_id: String::new(),
            ..me
        }
        .with_host_id_beside(&db);
        assert_eq!(first.host_id.len(), 32);
        assert_eq!(first.host_id, again.host_id, "the kept id is stable");
    }

    #[test]
    fn empty_client_fields_are_left_out() {
        let p = Principal::current("claude-code")
            .with_session(Some(""))
            .with_agent(Some("a1"), None)
            .with_client_version(None);
        assert_eq!(p.session, None);
        assert_eq!(p.agent_id.as_deref(), Some("a1"));
        let json = serde_json::to_value(&p).unwrap();
        assert!(json.get("session").is_none());
        assert!(json.get("agent_type").is_none());
    }
}
