//! Where gavel is installed for an agent client: the client's hook file,
//! the gavel program its hook commands run, and whether that program still
//! resolves to the gavel expected. Shared by `gavel init` (and its
//! `--check`) and `gavel doctor`, so that the two can never disagree on
//! what a working hook is.
//!
//! "This gavel" is a file: the running binary, or another that is the same
//! gavel (the same file after symlinks, the same bytes, or the same
//! `--version`), so a copy in a build folder and the one installed on
//! `PATH` count as one, and the one on `PATH` is preferred.
//!
//! Reads files and `PATH` (and runs a `gavel --version` found there);
//! writes nothing, decides nothing about calls.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::clients::Client;

/// Why a client's hook file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("cannot read `{path}`")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not JSON; fix or move it first")]
    NotJson {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("`{path}` is not a JSON object; fix or move it first")]
    NotObject { path: String },
}

/// The JSON object in a client's settings file at `path`; `None` when
/// there is no file, an empty object for an empty one.
pub fn read_settings(path: &Path) -> Result<Option<Value>, InstallError> {
    let shown = || path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(InstallError::Read {
                path: shown(),
                source,
            });
        }
    };
    if text.trim().is_empty() {
        return Ok(Some(Value::Object(Map::new())));
    }
    let value: Value = serde_json::from_str(&text).map_err(|source| InstallError::NotJson {
        path: shown(),
        source,
    })?;
    if !value.is_object() {
        return Err(InstallError::NotObject { path: shown() });
    }
    Ok(Some(value))
}

/// The program each installed hook command of `client` in `settings`
/// runs, as written (`gavel`, `/usr/local/bin/gavel`), each once.
pub fn installed_programs(client: &dyn Client, settings: &Value) -> Vec<String> {
    let marker = format!(" hook {}", client.name());
    let mut found = Vec::new();
    let mut stack = vec![settings];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(text) => {
                if let Some(at) = text.find(&marker) {
                    let program = text[..at].trim().trim_matches(['\'', '"']).to_owned();
                    if !found.contains(&program) {
                        found.push(program);
                    }
                }
            }
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    found
}

/// The first executable file named `name` on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| {
                std::fs::metadata(candidate)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    })
}

/// How another binary is the same gavel as this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Same {
    /// The same file, after symlinks.
    File,
    /// Another file with the same bytes (a copy, `cargo install` of the same build).
    Contents,
    /// Another build that says it is the same version (`gavel 0.1.0`).
    Version(String),
}

/// What this gavel answers to `--version`.
pub fn version_line() -> String {
    format!("gavel {}", env!("CARGO_PKG_VERSION"))
}

/// Whether `other` is the same gavel as `this` (canonical), and how.
pub fn same_gavel(this: &Path, other: &Path) -> Option<Same> {
    let other = std::fs::canonicalize(other).ok()?;
    if other == this {
        return Some(Same::File);
    }
    if same_bytes(this, &other) {
        return Some(Same::Contents);
    }
    let version = version_of(&other)?;
    (version == version_line()).then_some(Same::Version(version))
}

/// Whether two files hold the same bytes.
fn same_bytes(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if ma.len() != mb.len() {
        return false;
    }
    let (Ok(fa), Ok(fb)) = (std::fs::File::open(a), std::fs::File::open(b)) else {
        return false;
    };
    let (mut ra, mut rb) = (
        std::io::BufReader::with_capacity(1 << 16, fa),
        std::io::BufReader::with_capacity(1 << 16, fb),
    );
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let (Ok(na), Ok(nb)) = (read_full(&mut ra, &mut ba), read_full(&mut rb, &mut bb)) else {
            return false;
        };
        if na != nb || ba[..na] != bb[..nb] {
            return false;
        }
        if na == 0 {
            return true;
        }
    }
}

/// Reads until `buf` is full or the input ends; how much was read.
fn read_full(input: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The first line `program --version` prints, within two seconds.
fn version_of(program: &Path) -> Option<String> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    use wait_timeout::ChildExt;
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let status = match child.wait_timeout(std::time::Duration::from_secs(2)) {
        Ok(Some(status)) => status,
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
    };
    let mut out = String::new();
    child
        .stdout
        .take()?
        .take(4096)
        .read_to_string(&mut out)
        .ok()?;
    status
        .success()
        .then(|| out.lines().next().unwrap_or_default().trim().to_owned())
}

/// The `gavel` on `PATH` when it is the same gavel as `this` (canonical).
pub fn gavel_on_path(this: &Path) -> Option<(PathBuf, Same)> {
    let found = which("gavel")?;
    let same = same_gavel(this, &found)?;
    Some((found, same))
}

/// The file a hook command's program names: a path as written, a bare
/// name looked up on `PATH`.
pub fn locate(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        which(program)
    }
}

/// Whether `binary` lies in a cargo build folder (`…/target/release/gavel`),
/// which `cargo clean` removes.
pub fn in_build_folder(binary: &Path) -> bool {
    binary.components().any(|c| c.as_os_str() == "target")
        && binary
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|d| d == "release" || d == "debug" || d == "dist")
}

/// What a hook command's program runs now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runs {
    /// The gavel expected ([`same_gavel`]: the same file, bytes or version).
    This,
    /// Another program, at this path.
    Other(PathBuf),
    /// Nothing: no such file, or no such program on `PATH`. The client
    /// then fails to run the hook, and most run the tool anyway.
    Missing,
}

/// What `program`, as a hook command writes it, runs: a path is taken as
/// written, a bare name is looked up on `PATH`; `this` is the gavel
/// expected, canonical.
pub fn resolve_program(program: &str, this: &Path) -> Runs {
    match locate(program).as_deref().map(std::fs::canonicalize) {
        Some(Ok(found)) if same_gavel(this, &found).is_some() => Runs::This,
        Some(Ok(found)) => Runs::Other(found),
        _ => Runs::Missing,
    }
}

/// One client's gavel hooks in one settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hooks {
    /// The file does not exist.
    NoFile,
    /// The file exists and runs no `gavel hook <client>` command.
    NoGavelHook,
    /// Each program the hook commands run, and what it runs now.
    Installed(Vec<(String, Runs)>),
}

/// The gavel hooks of `client` in the settings file at `path`, each
/// program resolved against `this` (the gavel expected, canonical).
pub fn hooks(client: &dyn Client, path: &Path, this: &Path) -> Result<Hooks, InstallError> {
    let Some(settings) = read_settings(path)? else {
        return Ok(Hooks::NoFile);
    };
    let programs = installed_programs(client, &settings);
    if programs.is_empty() {
        return Ok(Hooks::NoGavelHook);
    }
    Ok(Hooks::Installed(
        programs
            .into_iter()
            .map(|program| {
                let runs = resolve_program(&program, this);
                (program, runs)
            })
            .collect(),
    ))
}

/// `existing` with gavel's hooks for each event of `ours`: entries that
/// already run `hook <client>` are replaced, every other entry is kept.
pub fn merge_hooks(client: &dyn Client, existing: Option<Value>, ours: &Value) -> Value {
    let Some(mut merged) = existing else {
        return ours.clone();
    };
    let marker = format!(" hook {}", client.name());
    let Some(object) = merged.as_object_mut() else {
        return ours.clone();
    };
    for (key, value) in ours.as_object().into_iter().flatten() {
        if key != "hooks" {
            object.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    let hooks = object
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    if !hooks.is_object() {
        *hooks = Value::Object(Map::new());
    }
    let Some(hooks) = hooks.as_object_mut() else {
        return merged;
    };
    for (event, entries) in ours
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let list = hooks
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Some(list) = list.as_array_mut() {
            list.retain(|entry| !entry.to_string().contains(&marker));
            list.extend(entries.as_array().into_iter().flatten().cloned());
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_program_is_found_in_any_hook_entry_and_resolved() {
        let client = crate::clients::by_name("claude-code").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let this = dir.path().join("gavel");
        std::fs::write(&this, "").unwrap();
        let this = this.canonicalize().unwrap();
        let settings = serde_json::json!({"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": format!("'{}' hook claude-code", this.display())},
            {"type": "command", "command": "/nowhere/gavel hook claude-code"},
            {"type": "command", "command": "other-tool --flag"},
        ]}]}});
        let programs = installed_programs(client, &settings);
        assert_eq!(programs.len(), 2, "{programs:?}");
        let runs: Vec<Runs> = programs.iter().map(|p| resolve_program(p, &this)).collect();
        assert!(runs.contains(&Runs::This));
        assert!(runs.contains(&Runs::Missing));
        assert!(in_build_folder(Path::new("/src/app/target/release/gavel")));
        assert!(!in_build_folder(Path::new("/usr/local/bin/gavel")));
    }
}
