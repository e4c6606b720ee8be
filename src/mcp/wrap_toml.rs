//! `gavel mcp wrap codex`: Codex keeps its MCP servers in TOML
//! (`[mcp_servers.NAME]` tables with `command` and `args`). The file is
//! edited in place, line by line, so its comments and layout survive: in
//! each server's table, the `command` line and the `args` entry (which may
//! span lines) are replaced, nothing else. A server written another way (an
//! inline table, a dotted key) is left as it is and reported skipped. The
//! result is read back and must hold exactly the servers intended, or
//! nothing is written.

use serde_json::Value;

use super::wrap::{Rewrite, is_wrapped, unwrapped, wrapped};

/// Why a Codex configuration could not be rewritten.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TomlWrapError {
    #[error("the configuration is not TOML: {0}")]
    NotToml(String),
    #[error("`mcp_servers` is not a table")]
    ServersNotATable,
    #[error("the rewritten configuration does not hold what was intended; nothing was written")]
    Unexpected,
}

/// Wraps (`wrap = true`) or unwraps every stdio server of the Codex
/// configuration `text`: the new text and what changed.
pub fn rewrite(text: &str, gavel: &str, wrap: bool) -> Result<(String, Rewrite), TomlWrapError> {
    let config = parse(text)?;
    let mut done = Rewrite::default();
    let Some(servers) = config.get("mcp_servers") else {
        return Ok((text.to_owned(), done));
    };
    let servers = servers.as_object().ok_or(TomlWrapError::ServersNotATable)?;
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut expected = config.clone();
    for (name, server) in servers {
        let stdio =
            server.get("url").is_none() && server.get("command").is_some_and(Value::is_string);
        if !stdio {
            done.skipped.push(name.clone());
            continue;
        }
        let target = if wrap {
            (!is_wrapped(server))
                .then(|| wrapped(name, server, gavel))
                .flatten()
        } else if is_wrapped(server) {
            unwrapped(server)
        } else {
            None
        };
        let Some((command, args)) = target else {
            done.unchanged.push(name.clone());
            continue;
        };
        if !edit_table(&mut lines, name, &command, &args) {
            done.skipped.push(name.clone());
            continue;
        }
        let entry = &mut expected["mcp_servers"][name.as_str()];
        entry["command"] = command;
        match (entry.as_object_mut(), args.is_empty()) {
            (Some(object), true) => {
                object.remove("args");
            }
            _ => entry["args"] = Value::Array(args),
        }
        done.changed.push(name.clone());
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    if parse(&out)? != expected {
        return Err(TomlWrapError::Unexpected);
    }
    Ok((out, done))
}

/// The configuration `text` holds, as JSON.
pub fn parse(text: &str) -> Result<Value, TomlWrapError> {
    let table: toml::Table =
        toml::from_str(text).map_err(|e| TomlWrapError::NotToml(e.message().to_owned()))?;
    serde_json::to_value(table).map_err(|e| TomlWrapError::NotToml(e.to_string()))
}

/// Rewrites the `command` and `args` of the table `[mcp_servers.NAME]`;
/// false when the server is not written as such a table.
fn edit_table(lines: &mut Vec<String>, name: &str, command: &Value, args: &[Value]) -> bool {
    let Some(start) = lines.iter().position(|l| is_header(l, name)) else {
        return false;
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .map_or(lines.len(), |i| start + 1 + i);
    let Some(command_line) = (start + 1..end).find(|&i| key_of(&lines[i]) == Some("command"))
    else {
        return false;
    };
    let args_range = (start + 1..end)
        .find(|&i| key_of(&lines[i]) == Some("args"))
        .and_then(|i| value_end(lines, i, end).map(|last| i..last + 1));
    let command_text = format!("command = {}", toml_value(command));
    let args_text = (!args.is_empty()).then(|| format!("args = {}", toml_array(args)));
    // Replace the later entry first, so the earlier one's place holds.
    match args_range {
        Some(range) if range.start > command_line => {
            replace(lines, range, args_text);
            lines[command_line] = command_text;
        }
        Some(range) => {
            lines[command_line] = command_text;
            replace(lines, range, args_text);
        }
        None => {
            lines[command_line] = command_text;
            if let Some(args_text) = args_text {
                lines.insert(command_line + 1, args_text);
            }
        }
    }
    true
}

fn replace(lines: &mut Vec<String>, range: std::ops::Range<usize>, with: Option<String>) {
    lines.splice(range, with);
}

/// Whether `line` is the header `[mcp_servers.NAME]` (NAME bare or quoted).
fn is_header(line: &str, name: &str) -> bool {
    let line = strip_comment(line).trim();
    let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) else {
        return false;
    };
    if inner.starts_with('[') {
        return false;
    }
    let Some((table, key)) = inner.split_once('.') else {
        return false;
    };
    if table.trim() != "mcp_servers" {
        return false;
    }
    let key = key.trim();
    let unquoted = key
        .strip_prefix('"')
        .and_then(|k| k.strip_suffix('"'))
        .or_else(|| key.strip_prefix('\'').and_then(|k| k.strip_suffix('\'')))
        .unwrap_or(key);
    unquoted == name
}

/// The bare key a `key = value` line sets.
fn key_of(line: &str) -> Option<&str> {
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    (!key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    .then_some(key)
}

/// The line on which the value begun on line `first` ends (arrays may span
/// lines), within `end`.
fn value_end(lines: &[String], first: usize, end: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut started = false;
    for (i, line) in lines.iter().enumerate().take(end).skip(first) {
        let text = if i == first {
            line.split_once('=').map_or("", |(_, v)| v)
        } else {
            line.as_str()
        };
        let mut quote: Option<char> = None;
        let mut escaped = false;
        for c in text.chars() {
            match quote {
                Some('"') if escaped => escaped = false,
                Some('"') if c == '\\' => escaped = true,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    '"' | '\'' => quote = Some(c),
                    '#' => break,
                    '[' => {
                        depth += 1;
                        started = true;
                    }
                    ']' => depth -= 1,
                    c if !c.is_whitespace() => started = true,
                    _ => {}
                },
            }
        }
        if started && depth <= 0 {
            return Some(i);
        }
    }
    None
}

fn strip_comment(line: &str) -> &str {
    // Headers hold no strings with `#` in the names gavel rewrites.
    line.split('#').next().unwrap_or(line)
}

fn toml_value(value: &Value) -> String {
    match value {
        Value::String(s) => toml::Value::String(s.clone()).to_string(),
        other => other.to_string(),
    }
}

fn toml_array(items: &[Value]) -> String {
    let items: Vec<String> = items.iter().map(toml_value).collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODEX: &str = r#"# my Codex settings
model = "o4"

[mcp_servers.filesystem]
# the project's files
command = "npx"
args = [
  "-y", # latest
  "@modelcontextprotocol/server-filesystem",
  ".",
]
env = { "A" = "1" }

[mcp_servers."git"]
command = "uvx"

[mcp_servers.remote]
url = "https://example.com/mcp"

[profiles.x]
model = "o3"
"#;

    #[test]
    fn codex_servers_are_wrapped_in_place_and_unwrapped_back() {
        let (wrapped_text, done) = rewrite(CODEX, "/usr/bin/gavel", true).unwrap();
        assert_eq!(done.changed, ["filesystem", "git"]);
        assert_eq!(done.skipped, ["remote"]);
        assert!(wrapped_text.starts_with("# my Codex settings\nmodel = \"o4\"\n"));
        assert!(wrapped_text.contains("# the project's files\ncommand = \"/usr/bin/gavel\"\nargs = [\"mcp\", \"--name\", \"filesystem\", \"--\", \"npx\", \"-y\", \"@modelcontextprotocol/server-filesystem\", \".\"]\nenv = { \"A\" = \"1\" }"), "{wrapped_text}");
        assert!(wrapped_text.contains("command = \"/usr/bin/gavel\"\nargs = [\"mcp\", \"--name\", \"git\", \"--\", \"uvx\"]\n"), "{wrapped_text}");
        let (again, done) = rewrite(&wrapped_text, "/usr/bin/gavel", true).unwrap();
        assert!(done.changed.is_empty());
        assert_eq!(again, wrapped_text);
        let (back, done) = rewrite(&wrapped_text, "", false).unwrap();
        assert_eq!(done.changed, ["filesystem", "git"]);
        assert_eq!(parse(&back).unwrap(), parse(CODEX).unwrap());
        assert!(back.contains("# the project's files\ncommand = \"npx\"\n"));
        assert!(back.contains("[profiles.x]\nmodel = \"o3\"\n"));
    }

    #[test]
    fn a_server_not_written_as_a_table_is_left_alone() {
        let inline = "mcp_servers = { fs = { command = \"npx\" } }\n";
        let (out, done) = rewrite(inline, "/usr/bin/gavel", true).unwrap();
        assert_eq!(out, inline);
        assert_eq!(done.skipped, ["fs"]);
        assert!(matches!(
            rewrite("[[x", "g", true),
            Err(TomlWrapError::NotToml(_))
        ));
        let (out, done) = rewrite("model = \"o3\"\n", "g", true).unwrap();
        assert_eq!(
            (out.as_str(), done),
            ("model = \"o3\"\n", Rewrite::default())
        );
    }
}
