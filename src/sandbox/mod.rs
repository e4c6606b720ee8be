//! The sandbox a decision carries, and `gavel exec`'s enforcement of it.
//!
//! A [`Spec`] names the paths a command may read, write (create, remove,
//! rename, truncate) and execute, and whether it may use the network. An
//! allow rule names a profile (`sandbox = "NAME"`), built in ([`READ_ONLY`],
//! [`WORKSPACE_WRITE`]) or a policy's `[sandbox.profiles.NAME]`; the
//! decision records the profile's spec and its digest ([`SandboxRecord`]).
//! This module's top level is pure (the policy uses it); [`kernel`] asks the
//! kernel what it supports, [`launch`] turns a recorded spec into a Landlock
//! ruleset, a mount namespace and a seccomp filter in the child before
//! `execve`, and [`seccomp`] builds the filter. docs/sandbox.md is the
//! threat model.

mod admit;
pub mod bind;
pub mod direct;
pub mod exec;
pub mod kernel;
pub mod launch;
pub mod line;
pub mod observe;
mod raw;
pub mod seccomp;
pub mod ticket;

use serde::{Deserialize, Serialize};

pub use admit::{admit, contained, enforcement_in, proven_read_only};

use crate::digest::{hex, sha256};

/// The built-in profile for commands that only read.
pub const READ_ONLY: &str = "read-only";
/// The built-in profile for commands that write inside the workspace.
pub const WORKSPACE_WRITE: &str = "workspace-write";

/// What programs need to start and run: readable in every built-in profile.
pub const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys",
];

/// Toolchains under the home folder: readable in every built-in profile.
pub const TOOLCHAIN_READ: &[&str] = &[
    "~/.cargo",
    "~/.rustup",
    "~/.local/bin",
    "~/.local/lib",
    "~/.nvm",
    "~/.pyenv",
    "~/go",
    "~/.gitconfig",
    "~/.config/git",
];

/// Where programs may be executed from in every built-in profile.
pub const SYSTEM_EXEC: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "~/.cargo/bin",
    "~/.rustup/toolchains",
    "~/.local/bin",
    "~/.nvm",
    "~/.pyenv",
    "~/go/bin",
];

/// Paths never writable, whatever the profile: gavel's own files, git's
/// configuration and hooks, and the files later commands execute. `.`
/// names the workspace, `~` the user's home (from the password database,
/// never `$HOME`). The database, its keys and the layer files are added
/// where they are ([`launch::Protected`]).
pub const NEVER_WRITABLE: &[&str] = &[
    "gavel.toml",
    ".gavel",
    ".git/config",
    ".git/hooks",
    "/etc/gavel",
    "~/.config/gavel",
    "~/.local/share/gavel",
    "~/.bashrc",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.bash_logout",
    "~/.profile",
    "~/.zshrc",
    "~/.zshenv",
    "~/.zprofile",
    "~/.zlogin",
    "~/.config/fish",
    "~/.ssh",
    "~/.gitconfig",
    "~/.config/git",
];

/// What a contained command may do. Paths are as written: workspace-relative
/// (`.` is the workspace), `~/…` (the user's home) or absolute.
///
/// Its canonical form ([`Spec::canonical`]) is compact JSON with the keys
/// in this order (alphabetical) and each list sorted and without duplicates.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Spec {
    pub exec: Vec<String>,
    pub network: bool,
    pub read: Vec<String>,
    pub write: Vec<String>,
}

/// The sandbox recorded on a decision whose allow rule names a profile.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SandboxRecord {
    /// The profile's name.
    pub profile: String,
    /// Its spec, in canonical order.
    pub spec: Spec,
    /// SHA-256 (hex) of the spec's canonical JSON.
    pub sha256: String,
    /// For `bash`: SHA-256 (hex) of the command's UTF-8 bytes as decided,
    /// before any redaction, which `gavel exec` compares with the command
    /// it is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_sha256: Option<String>,
    /// Set when no rule named the profile: the allow stands on the proof
    /// that the command only reads, and `read-only` holds it to that.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub implied: bool,
    /// What the kernel of the machine that decided enforces of the spec:
    /// `full`, `partial` or `unavailable` ([`kernel::Enforcement`]);
    /// absent in records older than it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforcement: Option<String>,
    /// What is missing for `partial` or `unavailable`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// Why a profile is not acceptable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SandboxError {
    #[error("sandbox profile `{name}`: {problem}")]
    Profile { name: String, problem: String },
}

impl Spec {
    /// `read-only`: the workspace and what programs need, no writes, no network.
    pub fn read_only() -> Self {
        let mut read = vec![".".to_owned()];
        read.extend(SYSTEM_READ.iter().map(|s| (*s).to_owned()));
        read.extend(TOOLCHAIN_READ.iter().map(|s| (*s).to_owned()));
        Self {
            exec: SYSTEM_EXEC.iter().map(|s| (*s).to_owned()).collect(),
            network: false,
            read,
            write: Vec::new(),
        }
        .normalized()
    }

    /// `workspace-write`: `read-only` plus writes inside the workspace (and
    /// a private temporary folder, made by `gavel exec`).
    pub fn workspace_write() -> Self {
        Self {
            write: vec![".".to_owned()],
            ..Self::read_only()
        }
        .normalized()
    }

    /// The built-in profile named `name`.
    pub fn builtin(name: &str) -> Option<Self> {
        match name {
            READ_ONLY => Some(Self::read_only()),
            WORKSPACE_WRITE => Some(Self::workspace_write()),
            _ => None,
        }
    }

    /// Sorted, without duplicates: the canonical order.
    pub fn normalized(mut self) -> Self {
        for list in [&mut self.exec, &mut self.read, &mut self.write] {
            list.sort();
            list.dedup();
        }
        self
    }

    /// The canonical JSON bytes (what the digest is of).
    pub fn canonical(&self) -> Vec<u8> {
        let spec = self.clone().normalized();
        // A struct of strings and a bool always serializes.
        serde_json::to_vec(&spec).expect("a spec serializes")
    }

    /// SHA-256 (hex) of [`Spec::canonical`].
    pub fn digest(&self) -> String {
        hex(&sha256(&self.canonical()))
    }

    /// Checks each path is workspace-relative, `~`, `~/…` or absolute, with
    /// no `..` and nothing empty.
    pub fn validate(&self, name: &str) -> Result<(), SandboxError> {
        let problem = |problem: String| SandboxError::Profile {
            name: name.to_owned(),
            problem,
        };
        for (list, paths) in [
            ("read", &self.read),
            ("write", &self.write),
            ("exec", &self.exec),
        ] {
            for path in paths {
                if path.is_empty() || path.contains('\0') {
                    return Err(problem(format!("an empty path in `{list}`")));
                }
                if path.starts_with('~') && path != "~" && !path.starts_with("~/") {
                    return Err(problem(format!(
                        "`{path}` in `{list}`: only `~` and `~/…` name the home folder"
                    )));
                }
                if path.split('/').any(|part| part == "..") {
                    return Err(problem(format!(
                        "`{path}` in `{list}`: `..` is not allowed; name the folder itself"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Whether `self` permits anything `other` does not: a path in one of
    /// its lists that no path in `other`'s same list covers, or the network
    /// where `other` has none. Paths compare as written (`.` covers every
    /// workspace-relative path).
    pub fn wider_than(&self, other: &Spec) -> bool {
        (self.network && !other.network)
            || [
                (&self.read, &other.read),
                (&self.write, &other.write),
                (&self.exec, &other.exec),
            ]
            .iter()
            .any(|(mine, theirs)| mine.iter().any(|p| !theirs.iter().any(|q| covers(q, p))))
    }
}

/// Whether the path `outer` (as written) contains `inner`.
fn covers(outer: &str, inner: &str) -> bool {
    let relative = |p: &str| !p.starts_with('/') && !p.starts_with('~');
    if outer == "." {
        return relative(inner);
    }
    let outer = outer.trim_end_matches('/');
    let inner = inner.trim_end_matches('/');
    let inner = inner.strip_prefix("./").unwrap_or(inner);
    let outer = outer.strip_prefix("./").unwrap_or(outer);
    inner == outer
        || inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('/'))
        || (outer == "/" && inner.starts_with('/'))
}

impl SandboxRecord {
    /// The record of `spec` under `profile`, for a request's `command`.
    pub fn new(profile: &str, spec: &Spec, command: Option<&str>) -> Self {
        let spec = spec.clone().normalized();
        Self {
            profile: profile.to_owned(),
            sha256: spec.digest(),
            spec,
            command_sha256: command.map(|c| hex(&sha256(c.as_bytes()))),
            implied: false,
            enforcement: None,
            missing: Vec::new(),
        }
    }

    /// What the record says the kernel enforced; `None` in older records.
    pub fn enforcement(&self) -> Option<kernel::Enforcement> {
        let missing = self.missing.clone();
        match self.enforcement.as_deref()? {
            "full" => Some(kernel::Enforcement::Full),
            "partial" => Some(kernel::Enforcement::Partial { missing }),
            _ => Some(kernel::Enforcement::Unavailable { missing }),
        }
    }

    /// Whether the command runs contained under this record: the kernel
    /// enforces it (fully or partly), or the record is older than the
    /// enforcement it carries.
    pub fn enforced(&self) -> bool {
        self.enforcement.as_deref() != Some("unavailable")
    }
}

/// How two decisions' sandboxes compare: `Some(true)` when `now` permits
/// more than `before` (a loosening: wider, or no sandbox where there was
/// one), `Some(false)` when strictly narrower, `None` when the same.
pub fn widened(before: Option<&Spec>, now: Option<&Spec>) -> Option<bool> {
    match (before, now) {
        (None, None) => None,
        (Some(_), None) => Some(true),
        (None, Some(_)) => Some(false),
        (Some(b), Some(n)) if b == n => None,
        (Some(b), Some(n)) => Some(n.wider_than(b) || !b.wider_than(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_canonical_and_their_digests_stable() {
        let ro = Spec::read_only();
        assert_eq!(ro, ro.clone().normalized());
        assert!(ro.write.is_empty() && !ro.network);
        let ww = Spec::workspace_write();
        assert_eq!(ww.write, vec![".".to_owned()]);
        assert_eq!(ro.digest(), Spec::read_only().digest());
        assert_ne!(ro.digest(), ww.digest());
        let text = String::from_utf8(ro.canonical()).unwrap();
        assert!(text.starts_with(r#"{"exec":["#), "{text}");
    }

    #[test]
    fn the_canonical_form_ignores_order_and_duplicates() {
        let a = Spec {
            exec: vec![],
            network: false,
            read: vec!["b".into(), "a".into(), "a".into()],
            write: vec![],
        };
        let b = Spec {
            read: vec!["a".into(), "b".into()],
            ..a.clone()
        };
        assert_eq!(a.digest(), b.digest());
        assert_eq!(
            String::from_utf8(a.canonical()).unwrap(),
            r#"{"exec":[],"network":false,"read":["a","b"],"write":[]}"#
        );
    }

    #[test]
    fn wider_is_any_path_not_covered_or_the_network() {
        let ro = Spec::read_only();
        let ww = Spec::workspace_write();
        assert!(ww.wider_than(&ro));
        assert!(!ro.wider_than(&ww));
        let net = Spec {
            network: true,
            ..ro.clone()
        };
        assert!(net.wider_than(&ro));
        let sub = Spec {
            write: vec!["src".into()],
            ..ro.clone()
        };
        assert!(!sub.wider_than(&ww));
        assert!(sub.wider_than(&ro));
        let home = Spec {
            write: vec!["~/.cache".into()],
            ..ro.clone()
        };
        assert!(home.wider_than(&ww), "`.` does not cover the home folder");
        assert_eq!(widened(Some(&ro), Some(&ww)), Some(true));
        assert_eq!(widened(Some(&ww), Some(&ro)), Some(false));
        assert_eq!(widened(Some(&ro), None), Some(true));
        assert_eq!(widened(None, Some(&ro)), Some(false));
        assert_eq!(widened(Some(&ro), Some(&ro)), None);
    }

    #[test]
    fn paths_with_dot_dot_or_a_user_name_are_refused() {
        for bad in ["../x", "a/../../b", "~root/x", ""] {
            let spec = Spec {
                read: vec![bad.into()],
                ..Spec::read_only()
            };
            assert!(spec.validate("p").is_err(), "{bad}");
        }
        assert!(Spec::workspace_write().validate("w").is_ok());
    }
}
