//! `gavel mcp wrap` for the clients that keep their servers in JSON
//! (Claude Code, Cursor, Gemini CLI): the file is edited in place, so its
//! key order, indentation and (where the client accepts them: JSON with
//! `//` and `/* */` comments and trailing commas) comments survive. In each
//! server's object only the `command` value and the `args` value are
//! replaced (an `args` member is added after `command`, or taken out);
//! every other byte stays. The result is read back and must hold exactly
//! the servers intended, or nothing is written.

use serde_json::Value;

use super::wrap::{self, Rewrite, WrapError};

/// Why a JSON configuration could not be rewritten.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JsonWrapError {
    #[error("the configuration is not JSON: {0}")]
    NotJson(String),
    #[error(transparent)]
    Shape(#[from] WrapError),
    #[error("the rewritten configuration does not hold what was intended; nothing was written")]
    Unexpected,
}

/// The configuration `text` holds (comments and trailing commas allowed).
pub fn parse(text: &str) -> Result<Value, JsonWrapError> {
    serde_json::from_str(&blank(text)).map_err(|e| JsonWrapError::NotJson(e.to_string()))
}

/// Wraps (`wrap = true`) or unwraps every stdio server of the JSON
/// configuration `text`: the new text and what changed.
pub fn rewrite(text: &str, gavel: &str, wrap: bool) -> Result<(String, Rewrite), JsonWrapError> {
    let mut expected = parse(text)?;
    let done = if wrap {
        wrap::wrap(&mut expected, gavel)?
    } else {
        wrap::unwrap(&mut expected)?
    };
    if done.changed.is_empty() {
        return Ok((text.to_owned(), done));
    }
    let blanked = blank(text);
    let root = Scanner::new(&blanked)
        .document()
        .ok_or(JsonWrapError::Unexpected)?;
    let servers = root.member("mcpServers").ok_or(JsonWrapError::Unexpected)?;
    let mut edits: Vec<Edit> = Vec::new();
    for name in &done.changed {
        let server = servers.member(name).ok_or(JsonWrapError::Unexpected)?;
        let target = &expected["mcpServers"][name.as_str()];
        edits.extend(server_edits(text, server, target).ok_or(JsonWrapError::Unexpected)?);
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.start));
    let mut out = text.to_owned();
    for edit in edits {
        out.replace_range(edit.start..edit.end, &edit.with);
    }
    if parse(&out)? != expected {
        return Err(JsonWrapError::Unexpected);
    }
    Ok((out, done))
}

/// Replaces `[start, end)` of the text with `with`.
struct Edit {
    start: usize,
    end: usize,
    with: String,
}

/// The edits that give the server `node` the `command` and `args` of
/// `target` (no `args` in `target`: the member is taken out).
fn server_edits(text: &str, node: &Node, target: &Value) -> Option<Vec<Edit>> {
    let Kind::Object(members) = &node.kind else {
        return None;
    };
    let command_at = members.iter().rposition(|m| m.key == "command")?;
    let command = &members[command_at];
    let mut edits = vec![Edit {
        start: command.value.start,
        end: command.value.end,
        with: target.get("command")?.to_string(),
    }];
    let args = target.get("args").and_then(Value::as_array);
    match (members.iter().rposition(|m| m.key == "args"), args) {
        (Some(at), Some(args)) => edits.push(Edit {
            start: members[at].value.start,
            end: members[at].value.end,
            with: array(args),
        }),
        (Some(at), None) => {
            // Out with the member and the comma that joins it to a neighbour.
            let (start, end) = match (members.get(at + 1), at.checked_sub(1)) {
                (Some(next), _) => (members[at].key_start, next.key_start),
                (None, Some(previous)) => (members[previous].value.end, members[at].value.end),
                (None, None) => (members[at].key_start, members[at].value.end),
            };
            edits.push(Edit {
                start,
                end,
                with: String::new(),
            });
        }
        (None, Some(args)) => {
            // After `command`, on a line of its own when `command` has one.
            let line_start = text[..command.key_start].rfind('\n').map_or(0, |i| i + 1);
            let indent = &text[line_start..command.key_start];
            let separator = if indent.chars().all(|c| c == ' ' || c == '\t') && line_start > 0 {
                format!("\n{indent}")
            } else {
                " ".to_owned()
            };
            edits.push(Edit {
                start: command.value.end,
                end: command.value.end,
                with: format!(",{separator}\"args\": {}", array(args)),
            });
        }
        (None, None) => {}
    }
    Some(edits)
}

/// An array on one line, as people write argument lists.
fn array(items: &[Value]) -> String {
    let items: Vec<String> = items.iter().map(Value::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// `text` with its comments and trailing commas turned into spaces, byte
/// for byte (so every offset still points at the same place): plain JSON.
fn blank(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut last_comma: Option<usize> = None;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = string_end(bytes, i);
                last_comma = None;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |e| i + 2 + e + 2);
                for byte in &mut out[i..end] {
                    if *byte != b'\n' {
                        *byte = b' ';
                    }
                }
                i = end;
                continue;
            }
            b',' => last_comma = Some(i),
            b'}' | b']' => {
                if let Some(comma) = last_comma.take() {
                    out[comma] = b' ';
                }
            }
            b if b.is_ascii_whitespace() => {}
            _ => last_comma = None,
        }
        i += 1;
    }
    // Only ASCII bytes were replaced, each whole character of a comment.
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// The offset just past the string that starts at `start` (a `"`).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// A value of the document and where it is.
#[derive(Debug)]
struct Node {
    start: usize,
    end: usize,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Object(Vec<Member>),
    Array,
    Scalar,
}

#[derive(Debug)]
struct Member {
    key: String,
    key_start: usize,
    value: Node,
}

impl Node {
    /// The value of the last member named `key` (the one a parser keeps).
    fn member(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Object(members) => members
                .iter()
                .rev()
                .find(|m| m.key == key)
                .map(|m| &m.value),
            _ => None,
        }
    }
}

/// Where each value of plain JSON (comments blanked) is.
struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    fn document(mut self) -> Option<Node> {
        let node = self.value(0)?;
        self.skip();
        (self.at == self.text.len()).then_some(node)
    }

    fn skip(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth > 128 {
            return None;
        }
        self.skip();
        let start = self.at;
        let kind = match self.peek()? {
            b'{' => {
                self.at += 1;
                let mut members = Vec::new();
                loop {
                    self.skip();
                    match self.peek()? {
                        b'}' => break,
                        b',' if !members.is_empty() => {
                            self.at += 1;
                            continue;
                        }
                        b'"' => {}
                        _ => return None,
                    }
                    let key_start = self.at;
                    self.at = string_end(self.text.as_bytes(), key_start);
                    let key: String = serde_json::from_str(&self.text[key_start..self.at]).ok()?;
                    self.skip();
                    if self.peek()? != b':' {
                        return None;
                    }
                    self.at += 1;
                    let value = self.value(depth + 1)?;
                    members.push(Member {
                        key,
                        key_start,
                        value,
                    });
                }
                self.at += 1;
                Kind::Object(members)
            }
            b'[' => {
                self.at += 1;
                loop {
                    self.skip();
                    match self.peek()? {
                        b']' => break,
                        b',' => self.at += 1,
                        _ => {
                            self.value(depth + 1)?;
                        }
                    }
                }
                self.at += 1;
                Kind::Array
            }
            b'"' => {
                self.at = string_end(self.text.as_bytes(), start);
                Kind::Scalar
            }
            _ => {
                let rest = &self.text[self.at..];
                let len = rest
                    .find(|c: char| c.is_whitespace() || matches!(c, ',' | '}' | ']'))
                    .unwrap_or(rest.len());
                if len == 0 {
                    return None;
                }
                self.at += len;
                Kind::Scalar
            }
        };
        Some(Node {
            start,
            end: self.at,
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: &str = r#"{
  // Gemini CLI accepts comments.
  "theme": "dark",
  "mcpServers": {
    "zeta": {
      "command": "npx", /* pinned */
      "args": ["-y", "zeta-server@1.2.3"],
      "env": { "A": "1" },
    },
    "alpha": {"type": "stdio", "command": "my-server"},
    "remote": { "url": "https://example.com/mcp" }
  },
  "afterwards": [1, 2, 3]
}
"#;

    #[test]
    fn servers_are_wrapped_in_place_keeping_order_layout_and_comments() {
        let (wrapped, done) = rewrite(SETTINGS, "/usr/bin/gavel", true).unwrap();
        assert_eq!(done.changed, ["alpha", "zeta"]);
        assert_eq!(done.skipped, ["remote"]);
        let expected = SETTINGS
            .replace(
                r#""command": "npx", /* pinned */
      "args": ["-y", "zeta-server@1.2.3"],"#,
                r#""command": "/usr/bin/gavel", /* pinned */
      "args": ["mcp", "--name", "zeta", "--", "npx", "-y", "zeta-server@1.2.3"],"#,
            )
            .replace(
                r#""command": "my-server"}"#,
                r#""command": "/usr/bin/gavel", "args": ["mcp", "--name", "alpha", "--", "my-server"]}"#,
            );
        assert_eq!(wrapped, expected);
        let (again, done) = rewrite(&wrapped, "/usr/bin/gavel", true).unwrap();
        assert!(done.changed.is_empty());
        assert_eq!(again, wrapped);
        let (back, done) = rewrite(&wrapped, "", false).unwrap();
        assert_eq!(done.changed, ["alpha", "zeta"]);
        assert_eq!(back, SETTINGS);
    }

    #[test]
    fn an_args_member_is_added_on_its_own_line_and_taken_out_with_its_comma() {
        let text = "{\n  \"mcpServers\": {\n    \"s\": {\n      \"command\": \"run\",\n      \"env\": {}\n    }\n  }\n}\n";
        let (wrapped, _) = rewrite(text, "gavel", true).unwrap();
        assert_eq!(
            wrapped,
            "{\n  \"mcpServers\": {\n    \"s\": {\n      \"command\": \"gavel\",\n      \"args\": [\"mcp\", \"--name\", \"s\", \"--\", \"run\"],\n      \"env\": {}\n    }\n  }\n}\n"
        );
        assert_eq!(rewrite(&wrapped, "", false).unwrap().0, text);
        let last = "{\"mcpServers\": {\"s\": {\"env\": {}, \"command\": \"run\"}}}";
        let (wrapped, _) = rewrite(last, "gavel", true).unwrap();
        assert_eq!(rewrite(&wrapped, "", false).unwrap().0, last);
    }

    #[test]
    fn what_is_not_json_or_not_of_the_shape_is_refused() {
        assert!(matches!(
            rewrite("{", "g", true),
            Err(JsonWrapError::NotJson(_))
        ));
        assert_eq!(
            rewrite("[]", "g", true),
            Err(JsonWrapError::Shape(WrapError::NotAnObject))
        );
        let (out, done) = rewrite("{ \"x\": 1 } // nothing\n", "g", true).unwrap();
        assert_eq!(out, "{ \"x\": 1 } // nothing\n");
        assert_eq!(done, Rewrite::default());
        // `//` inside a string is no comment.
        let url = r#"{"mcpServers": {"s": {"command": "a//b", "args": ["http://x"]}}}"#;
        let (wrapped, _) = rewrite(url, "g", true).unwrap();
        assert!(
            wrapped.contains(r#""--", "a//b", "http://x"]"#),
            "{wrapped}"
        );
    }
}
