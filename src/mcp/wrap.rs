//! Putting a client's configured MCP servers behind `gavel mcp`, and taking
//! them back out. Claude Code (`.mcp.json`), Cursor (`.cursor/mcp.json`)
//! and Gemini CLI (`.gemini/settings.json`) keep their servers in the same
//! shape, `{"mcpServers": {NAME: {"command", "args", ...}}}`: a stdio
//! server `{"command": C, "args": A}` becomes
//! `{"command": GAVEL, "args": ["mcp", "--name", NAME, "--", C, A...]}`,
//! everything else about it kept. Wrapping a wrapped server changes
//! nothing; unwrapping gives back exactly the command and arguments it had.
//! Pure: the caller reads and writes the file.

use serde_json::{Value, json};

/// A client whose MCP configuration gavel can rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrapClient {
    ClaudeCode,
    Cursor,
    Gemini,
    /// TOML, `[mcp_servers.NAME]` ([`super::wrap_toml`]).
    Codex,
}

impl WrapClient {
    pub const ALL: [WrapClient; 4] = [
        WrapClient::ClaudeCode,
        WrapClient::Cursor,
        WrapClient::Gemini,
        WrapClient::Codex,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WrapClient::ClaudeCode => "claude-code",
            WrapClient::Cursor => "cursor",
            WrapClient::Gemini => "gemini",
            WrapClient::Codex => "codex",
        }
    }

    pub fn by_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The project file that holds the client's MCP servers, relative to the project.
    pub fn config_file(self) -> &'static str {
        match self {
            WrapClient::ClaudeCode => ".mcp.json",
            WrapClient::Cursor => ".cursor/mcp.json",
            WrapClient::Gemini => ".gemini/settings.json",
            WrapClient::Codex => ".codex/config.toml",
        }
    }
}

/// Why a configuration could not be rewritten.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WrapError {
    #[error("the configuration is not a JSON object")]
    NotAnObject,
    #[error("`mcpServers` is not a JSON object")]
    ServersNotAnObject,
}

/// What a rewrite did, server by server.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// Servers changed now.
    pub changed: Vec<String>,
    /// Servers already as asked (wrapped for `wrap`, plain for `unwrap`).
    pub unchanged: Vec<String>,
    /// Servers that are not stdio (a `url`): gavel does not proxy them.
    pub skipped: Vec<String>,
}

/// Whether `server` already runs behind `gavel mcp`.
pub fn is_wrapped(server: &Value) -> bool {
    let program = server.get("command").and_then(Value::as_str).unwrap_or("");
    let args = server.get("args").and_then(Value::as_array);
    let named_gavel = program
        .rsplit('/')
        .next()
        .is_some_and(|name| name.starts_with("gavel"));
    named_gavel
        && args.is_some_and(|a| {
            a.first().and_then(Value::as_str) == Some("mcp")
                && a.iter().any(|w| w.as_str() == Some("--"))
        })
}

/// The command and arguments that run the stdio server `name` behind
/// `gavel`: `None` when it has no string `command`.
pub fn wrapped(name: &str, server: &Value, gavel: &str) -> Option<(Value, Vec<Value>)> {
    let command = server.get("command")?.as_str()?.to_owned();
    let mut args = vec![
        json!("mcp"),
        json!("--name"),
        json!(super::names::sanitize(name)),
        json!("--"),
        json!(command),
    ];
    if let Some(original) = server.get("args").and_then(Value::as_array) {
        args.extend(original.iter().cloned());
    }
    Some((json!(gavel), args))
}

/// The command and arguments a wrapped server had before (no arguments:
/// an empty list, for an `args` to leave out).
pub fn unwrapped(server: &Value) -> Option<(Value, Vec<Value>)> {
    let args = server.get("args")?.as_array()?;
    let split = args.iter().position(|w| w.as_str() == Some("--"))?;
    let mut original = args[split + 1..].iter();
    let command = original.next()?.clone();
    Some((command, original.cloned().collect()))
}

/// Puts every stdio server of `config` behind `gavel` (the path of the
/// gavel binary to run).
pub fn wrap(config: &mut Value, gavel: &str) -> Result<Rewrite, WrapError> {
    rewrite(config, |name, server| {
        if is_wrapped(server) {
            return Some(false);
        }
        let (command, args) = wrapped(name, server, gavel)?;
        server["command"] = command;
        server["args"] = Value::Array(args);
        Some(true)
    })
}

/// Takes every wrapped server of `config` back out from behind gavel.
pub fn unwrap(config: &mut Value) -> Result<Rewrite, WrapError> {
    rewrite(config, |_, server| {
        if !is_wrapped(server) {
            return server.get("command").map(|_| false);
        }
        let (command, rest) = unwrapped(server)?;
        server["command"] = command;
        match server.as_object_mut() {
            Some(object) if rest.is_empty() => {
                object.remove("args");
            }
            _ => server["args"] = Value::Array(rest),
        }
        Some(true)
    })
}

/// Applies `change` to each server: `Some(true)` changed, `Some(false)`
/// already as asked, `None` not a stdio server.
fn rewrite(
    config: &mut Value,
    mut change: impl FnMut(&str, &mut Value) -> Option<bool>,
) -> Result<Rewrite, WrapError> {
    let object = config.as_object_mut().ok_or(WrapError::NotAnObject)?;
    let mut done = Rewrite::default();
    let Some(servers) = object.get_mut("mcpServers") else {
        return Ok(done);
    };
    let servers = servers
        .as_object_mut()
        .ok_or(WrapError::ServersNotAnObject)?;
    for (name, server) in servers.iter_mut() {
        let stdio = server.is_object()
            && server.get("url").is_none()
            && server.get("command").is_some_and(Value::is_string);
        let outcome = if stdio { change(name, server) } else { None };
        match outcome {
            Some(true) => done.changed.push(name.clone()),
            Some(false) => done.unchanged.push(name.clone()),
            None => done.skipped.push(name.clone()),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Value {
        json!({"mcpServers": {
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                           "env": {"A": "1"}},
            "plain": {"type": "stdio", "command": "my-server"},
            "remote": {"type": "http", "url": "https://example.com/mcp"},
        }, "other": true})
    }

    #[test]
    fn wrapping_is_idempotent_and_unwrapping_restores_the_file() {
        let original = config();
        let mut config = original.clone();
        let done = wrap(&mut config, "/usr/bin/gavel").unwrap();
        assert_eq!(done.changed, ["filesystem", "plain"]);
        assert_eq!(done.skipped, ["remote"]);
        assert_eq!(
            config["mcpServers"]["filesystem"],
            json!({"command": "/usr/bin/gavel",
                   "args": ["mcp", "--name", "filesystem", "--", "npx", "-y",
                            "@modelcontextprotocol/server-filesystem", "."],
                   "env": {"A": "1"}})
        );
        let once = config.clone();
        let again = wrap(&mut config, "/usr/bin/gavel").unwrap();
        assert!(again.changed.is_empty());
        assert_eq!(config, once);
        let undone = unwrap(&mut config).unwrap();
        assert_eq!(undone.changed, ["filesystem", "plain"]);
        assert_eq!(config, original);
        assert!(unwrap(&mut config).unwrap().changed.is_empty());
    }

    #[test]
    fn a_file_without_servers_or_of_another_shape() {
        let mut empty = json!({});
        assert_eq!(wrap(&mut empty, "gavel").unwrap(), Rewrite::default());
        assert_eq!(wrap(&mut json!([]), "gavel"), Err(WrapError::NotAnObject));
        assert_eq!(
            wrap(&mut json!({"mcpServers": []}), "gavel"),
            Err(WrapError::ServersNotAnObject)
        );
    }
}
