//! A client's MCP configuration file through `gavel mcp wrap` and `unwrap`,
//! its bytes kept: both edit the file in place ([`super::wrap_json`],
//! [`super::wrap_toml`]), and `unwrap` gives back the very bytes `wrap`
//! found (its backup) when the file is still exactly what `wrap` made of
//! them. When the file changed since, the servers are taken out in place
//! and the caller says so. Pure: the caller reads and writes the files.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::wrap::{Rewrite, WrapClient, is_wrapped};
use super::wrap_json::{self, JsonWrapError};
use super::wrap_toml::{self, TomlWrapError};

/// Why a configuration could not be rewritten.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WrapFileError {
    #[error(transparent)]
    Json(#[from] JsonWrapError),
    #[error(transparent)]
    Toml(#[from] TomlWrapError),
}

/// Wraps (`wrap = true`) or unwraps every stdio server of `client`'s
/// configuration `text`, in place: the new text and what changed.
pub fn rewrite(
    client: WrapClient,
    text: &str,
    gavel: &str,
    wrap: bool,
) -> Result<(String, Rewrite), WrapFileError> {
    Ok(match client {
        WrapClient::Codex => wrap_toml::rewrite(text, gavel, wrap)?,
        _ => wrap_json::rewrite(text, gavel, wrap)?,
    })
}

/// What `unwrap` makes of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unwrapped {
    /// The file is exactly what `wrap` made of the backup: the backup's
    /// bytes, as they were (the servers `wrap` changed).
    Restored { text: String, done: Rewrite },
    /// The servers taken out in place; `changed_since_wrap` when there is
    /// a backup the file no longer matches (edited since `wrap`, or wrapped
    /// by another gavel), so it was not restored from it.
    InPlace {
        text: String,
        done: Rewrite,
        changed_since_wrap: bool,
    },
}

/// Unwraps `client`'s configuration `text`; `backup` is the file as `wrap`
/// found it, when it was kept.
pub fn unwrap(
    client: WrapClient,
    text: &str,
    backup: Option<&str>,
) -> Result<Unwrapped, WrapFileError> {
    let (unwrapped, done) = rewrite(client, text, "", false)?;
    if let Some(backup) = backup {
        if is_wrap_of(client, text, backup) {
            // `wrap` changed exactly the servers `unwrap` takes out.
            return Ok(Unwrapped::Restored {
                text: backup.to_owned(),
                done,
            });
        }
        return Ok(Unwrapped::InPlace {
            text: unwrapped,
            done,
            changed_since_wrap: true,
        });
    }
    Ok(Unwrapped::InPlace {
        text: unwrapped,
        done,
        changed_since_wrap: false,
    })
}

/// Whether `text` is exactly what `wrap` makes of `original` (with the
/// gavel its wrapped servers run), and `wrap` changed something.
pub fn is_wrap_of(client: WrapClient, text: &str, original: &str) -> bool {
    gavels(client, text).iter().any(|gavel| {
        rewrite(client, original, gavel, true)
            .is_ok_and(|(wrapped, done)| !done.changed.is_empty() && wrapped == text)
    })
}

/// The gavel commands the wrapped servers of `text` run.
fn gavels(client: WrapClient, text: &str) -> Vec<String> {
    let (config, key) = match client {
        WrapClient::Codex => (wrap_toml::parse(text).ok(), "mcp_servers"),
        _ => (wrap_json::parse(text).ok(), "mcpServers"),
    };
    let mut found: Vec<String> = config
        .as_ref()
        .and_then(|c| c.get(key))
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|servers| servers.values())
        .filter(|server| is_wrapped(server))
        .filter_map(|server| server.get("command").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Whether `text` has a server behind gavel.
pub fn has_wrapped(client: WrapClient, text: &str) -> bool {
    !gavels(client, text).is_empty()
}

/// What `gavel mcp wrap` or `unwrap` did to a client's configuration file:
/// the servers, and what a person should be told beyond them.
#[derive(Debug)]
pub struct Applied {
    pub done: Rewrite,
    pub notes: Vec<String>,
}

/// Why a configuration file could not be wrapped or unwrapped.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("cannot {what} `{}`", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot rewrite `{}`", path.display())]
    Rewrite {
        path: PathBuf,
        #[source]
        source: WrapFileError,
    },
}

/// Wraps the stdio servers of `client` in `file` behind the gavel at
/// `wrap_with` (keeping the file as it was, the first time, in
/// `FILE.gavel-backup`), or, with `None`, unwraps them: the backup's bytes
/// when the file is still what wrap made of it, else in place. The file is
/// replaced atomically, and only when it changes.
pub fn apply(
    client: WrapClient,
    file: &Path,
    wrap_with: Option<&str>,
) -> Result<Applied, ApplyError> {
    let io = |what: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| ApplyError::Io { what, path, source }
    };
    let rewrite = |source| ApplyError::Rewrite {
        path: file.to_owned(),
        source,
    };
    let text = std::fs::read_to_string(file).map_err(io("read", file))?;
    let backup = PathBuf::from(format!("{}.gavel-backup", file.display()));
    let mut notes = Vec::new();
    let mut restored = false;
    let (out, done) = match wrap_with {
        Some(gavel) => {
            let (out, done) = self::rewrite(client, &text, gavel, true).map_err(rewrite)?;
            // The file as it was before gavel: kept from the first wrap (a file
            // with no server behind gavel yet), for `unwrap` to give back.
            if !done.changed.is_empty() && !has_wrapped(client, &text) {
                std::fs::write(&backup, &text).map_err(io("write the backup", &backup))?;
            }
            (out, done)
        }
        None => {
            let kept = match std::fs::read_to_string(&backup) {
                Ok(kept) => Some(kept),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
                Err(err) => return Err(io("read the backup", &backup)(err)),
            };
            match unwrap(client, &text, kept.as_deref()).map_err(rewrite)? {
                Unwrapped::Restored { text, done } => {
                    restored = true;
                    notes.push(format!(
                        "restored exactly as it was before `gavel mcp wrap` (from `{}`, now removed)",
                        backup.display()
                    ));
                    (text, done)
                }
                Unwrapped::InPlace {
                    text,
                    done,
                    changed_since_wrap,
                } => {
                    if changed_since_wrap && !done.changed.is_empty() {
                        notes.push(format!(
                            "the file changed since `gavel mcp wrap`, so it was not restored from `{}`: \
                             the servers were taken out in place and the rest kept as it is now; \
                             the file from before wrap is still in the backup",
                            backup.display()
                        ));
                    }
                    (text, done)
                }
            }
        }
    };
    if out != text {
        let temporary = PathBuf::from(format!("{}.gavel-tmp", file.display()));
        std::fs::write(&temporary, &out).map_err(io("write", &temporary))?;
        std::fs::rename(&temporary, file).map_err(io("replace", file))?;
    }
    if restored {
        std::fs::remove_file(&backup).map_err(io("remove the backup", &backup))?;
    }
    Ok(Applied { done, notes })
}

/// The client's configuration file for the workspace at `root`: the
/// project's; for Codex, the project's `.codex/config.toml` when there is
/// one, else `$CODEX_HOME/config.toml` (`~/.codex/config.toml`), `None`
/// when neither variable says where that is.
pub fn config_file(client: WrapClient, root: &Path) -> Option<PathBuf> {
    let project = root.join(client.config_file());
    if client != WrapClient::Codex || project.exists() {
        return Some(project);
    }
    let home = std::env::var_os("CODEX_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")))?;
    Some(home.join("config.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrap_gives_back_the_bytes_wrap_found_unless_the_file_changed_since() {
        let original = "{\"mcpServers\":{\"b\":{\"command\":\"x\",\"args\":[ \"1\" ]},\n\"a\":{\"command\":\"y\"}}}";
        let (wrapped, _) = rewrite(WrapClient::Cursor, original, "/g/gavel", true).unwrap();
        assert!(is_wrap_of(WrapClient::Cursor, &wrapped, original));
        let restored = unwrap(WrapClient::Cursor, &wrapped, Some(original)).unwrap();
        assert!(
            matches!(&restored, Unwrapped::Restored { text, done } if text == original && done.changed == ["a", "b"]),
            "{restored:?}"
        );
        // Edited since: taken out in place, and said.
        let edited = wrapped.replace("\"a\":", "\"c\":{\"command\":\"z\"},\"a\":");
        let Unwrapped::InPlace {
            text,
            changed_since_wrap,
            ..
        } = unwrap(WrapClient::Cursor, &edited, Some(original)).unwrap()
        else {
            panic!("restored an edited file");
        };
        assert!(changed_since_wrap);
        assert!(text.contains("\"c\":{\"command\":\"z\"}"), "{text}");
        assert!(!has_wrapped(WrapClient::Cursor, &text));
    }

    #[test]
    fn codex_toml_is_restored_with_its_comments() {
        let original = "# mine\n[mcp_servers.fs]\ncommand = \"npx\" # pinned\nargs = [\n  \"-y\", # latest\n  \"fs\",\n]\n";
        let (wrapped, _) = rewrite(WrapClient::Codex, original, "/g/gavel", true).unwrap();
        let restored = unwrap(WrapClient::Codex, &wrapped, Some(original)).unwrap();
        assert!(matches!(restored, Unwrapped::Restored { text, .. } if text == original));
    }
}
