//! Finds and reads the policy layers above a project's, failing closed.
//!
//! From the top:
//!
//! | layer | file | who may own it |
//! |---|---|---|
//! | `system` | `/etc/gavel/policy.toml` | root |
//! | `admin` | the file `$GAVEL_ADMIN_POLICY` names | root |
//! | `user` | `$XDG_CONFIG_HOME/gavel/policy.toml`, else `~/.config/gavel/policy.toml` | the user or root |
//!
//! A layer whose file does not exist is absent. One that exists but cannot
//! be read, does not parse, is writable by anyone but its owner, sits in a
//! folder others can write, is owned by someone it may not be (the
//! `system` and `admin` layers by anyone but root: an agent running as the
//! owner could rewrite them), or is a symbolic link into the workspace is
//! an error that names the file: gavel stops rather than decide without
//! it. `$GAVEL_ADMIN_POLICY` can add a layer, never remove one, so an
//! agent that sets it gains nothing; the `user` layer is a person's own
//! defaults, not a control over that person's agent.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::policy::{Layer, Policy, PolicyError, Shadow};

/// The system layer's file.
pub const SYSTEM_POLICY: &str = "/etc/gavel/policy.toml";
/// Names a file read as the `admin` layer, below `system`.
pub const ADMIN_POLICY_VAR: &str = "GAVEL_ADMIN_POLICY";

/// Why a layer cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    #[error("{layer} policy `{path}` cannot be read: {source}")]
    Read {
        layer: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("{layer} policy `{path}` is unsafe: {problem}; gavel will not decide without it")]
    Unsafe {
        layer: &'static str,
        path: String,
        problem: String,
    },
    #[error("{layer} policy: {source}")]
    Policy {
        layer: &'static str,
        source: PolicyError,
    },
    #[error("shadow policy `{name}`: {problem}")]
    Shadow { name: String, problem: String },
}

/// Where each layer's file is looked for, top first.
pub fn candidates() -> Vec<(&'static str, PathBuf)> {
    let mut found = vec![("system", PathBuf::from(SYSTEM_POLICY))];
    if let Some(path) = std::env::var_os(ADMIN_POLICY_VAR).filter(|p| !p.is_empty()) {
        found.push(("admin", PathBuf::from(path)));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    if let Some(config) = config {
        found.push(("user", config.join("gavel").join("policy.toml")));
    }
    found
}

/// The layers above the project in `workspace`, top first, each checked
/// and read; their globs and inline examples are left, as the project's
/// are, for `Policy::check_deferred` when the log has not recorded them.
pub fn discover(workspace: &Path) -> Result<Vec<Layer>, LayerError> {
    let mut layers = Vec::new();
    for (layer, path) in candidates() {
        let shown = path.display().to_string();
        match std::fs::symlink_metadata(&path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            // A home this process cannot enter holds no defaults it could
            // read; the layers a person does not own still fail closed.
            Err(err) if layer == "user" && err.kind() == std::io::ErrorKind::PermissionDenied => {
                continue;
            }
            Err(source) => {
                return Err(LayerError::Read {
                    layer,
                    path: shown,
                    source,
                });
            }
            Ok(_) => {}
        }
        check(layer, &path, workspace)?;
        let policy =
            Policy::load_unchecked(&path).map_err(|source| LayerError::Policy { layer, source })?;
        layers.push(Layer {
            name: layer.to_owned(),
            path: shown,
            policy,
        });
    }
    Ok(layers)
}

/// Refuses a layer file that someone other than its rightful owner could
/// change, or that the workspace holds.
fn check(layer: &'static str, path: &Path, workspace: &Path) -> Result<(), LayerError> {
    let unsafe_because = |problem: String| LayerError::Unsafe {
        layer,
        path: path.display().to_string(),
        problem,
    };
    let read_error = |source| LayerError::Read {
        layer,
        path: path.display().to_string(),
        source,
    };
    let real = path.canonicalize().map_err(read_error)?;
    let workspace = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_owned());
    if real.starts_with(&workspace) {
        return Err(unsafe_because(format!(
            "it is inside the workspace `{}`, which the agent can write",
            workspace.display()
        )));
    }
    let meta = std::fs::metadata(&real).map_err(read_error)?;
    if !meta.is_file() {
        return Err(unsafe_because("it is not a regular file".into()));
    }
    let me = current_uid();
    let owner_ok = |uid: u32| match layer {
        "user" => uid == 0 || uid == me,
        _ => uid == 0,
    };
    let rightful = if layer == "user" {
        "root or you"
    } else {
        "root"
    };
    if !owner_ok(meta.uid()) {
        return Err(unsafe_because(format!(
            "it is owned by uid {}, not {rightful}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(unsafe_because(format!(
            "its mode {:04o} lets others than its owner write it",
            meta.mode() & 0o7777
        )));
    }
    if let Some(dir) = real.parent() {
        let dir_meta = std::fs::metadata(dir).map_err(read_error)?;
        if !owner_ok(dir_meta.uid()) || dir_meta.mode() & 0o022 != 0 {
            return Err(unsafe_because(format!(
                "its folder `{}` (uid {}, mode {:04o}) lets others than {rightful} replace it",
                dir.display(),
                dir_meta.uid(),
                dir_meta.mode() & 0o7777
            )));
        }
    }
    Ok(())
}

fn current_uid() -> u32 {
    // SAFETY: geteuid cannot fail and has no preconditions.
    unsafe { libc::geteuid() }
}

/// The shadow policies of `policy`: the `[[shadow]]` entries of each layer
/// above it and of its own file (each `path` relative to the file that
/// names it), then `extra` files (`--shadow-policy`, named by their stem).
/// A shadow that cannot be read stops gavel, as a layer does: a candidate
/// policy that silently decided nothing would report nothing.
pub fn shadows(policy: &Policy, extra: &[PathBuf]) -> Result<Vec<Shadow>, LayerError> {
    let mut wanted: Vec<(String, PathBuf)> = Vec::new();
    let named = policy
        .layers()
        .iter()
        .map(|l| (&l.policy, Path::new(&l.path)))
        .chain(std::iter::once((policy, Path::new(policy.origin()))));
    for (holder, file) in named {
        let base = file.parent().unwrap_or(Path::new("."));
        for spec in holder.shadow_specs() {
            wanted.push((spec.name.clone(), base.join(&spec.path)));
        }
    }
    for path in extra {
        let name = path
            .file_stem()
            .map_or_else(|| "shadow".to_owned(), |s| s.to_string_lossy().into_owned());
        wanted.push((name, path.clone()));
    }
    let mut shadows: Vec<Shadow> = Vec::with_capacity(wanted.len());
    for (name, path) in wanted {
        if shadows.iter().any(|s| s.name == name) {
            return Err(LayerError::Shadow {
                name,
                problem: "two shadows have this name".into(),
            });
        }
        let policy = Policy::load_unchecked(&path).map_err(|e| LayerError::Shadow {
            name: name.clone(),
            problem: e.to_string(),
        })?;
        shadows.push(Shadow {
            name,
            path: path.display().to_string(),
            policy,
        });
    }
    Ok(shadows)
}
