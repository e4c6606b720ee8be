//! Tool definitions in the record. Each tool a server lists in a
//! `tools/list` result is digested (its `name`, `description`,
//! `inputSchema` and `annotations`, as canonical JSON); a digest the log
//! has not seen for that server and tool is recorded as a chained
//! `lifecycle` row (event `McpToolDefinition`, call id
//! `mcp-definition/SERVER/TOOL`). When the log held another digest for the
//! tool, the definition changed since the log last saw it: the calls of
//! this session to that tool carry `previous_sha256` in their facts (rule
//! condition `definition_changed`) and an anomaly `definition_changed`
//! beside their result. A server that swaps a tool's description after it
//! was approved ("rug pull") is caught the first time it lists the new one.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::audit::{Event, EventBody, LifecycleRecord};
use crate::facts::McpFacts;
use crate::principal::Principal;
use crate::store::{Store, StoreError};

/// The `event` of a definition's lifecycle row.
pub const EVENT: &str = "McpToolDefinition";

/// The members of a tool that make up its definition.
pub const FIELDS: [&str; 4] = ["name", "description", "inputSchema", "annotations"];

/// The call id under which the definitions of `server`'s `tool` are recorded.
pub fn record_key(server: &str, tool: &str) -> String {
    format!("mcp-definition/{server}/{tool}")
}

/// A tool's definition: the members of [`FIELDS`] it has.
pub fn definition(tool: &Value) -> Value {
    let mut kept = Map::new();
    for field in FIELDS {
        if let Some(value) = tool.get(field) {
            kept.insert(field.to_owned(), value.clone());
        }
    }
    Value::Object(kept)
}

/// SHA-256 (hex) of the definition's canonical JSON: no whitespace, object
/// members sorted by the UTF-8 bytes of their names, strings and numbers
/// as serde_json writes them.
pub fn digest(definition: &Value) -> String {
    let mut text = String::new();
    canonical(definition, &mut text);
    crate::digest::hex(&crate::digest::sha256(text.as_bytes()))
}

fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// What this session saw of one tool.
#[derive(Debug, Clone)]
struct Seen {
    sha256: String,
    /// The digest the log held before this session saw a different one.
    previous: Option<String>,
}

/// The definitions one session's server listed.
#[derive(Debug)]
pub struct Definitions {
    server: String,
    seen: HashMap<String, Seen>,
}

impl Definitions {
    pub fn new(server: &str) -> Self {
        Self {
            server: server.to_owned(),
            seen: HashMap::new(),
        }
    }

    /// Takes in the tools of a `tools/list` result: records each
    /// definition the log has not seen as it is now.
    pub fn seen(
        &mut self,
        tools: &[Value],
        store: &mut Store,
        who: Option<&Arc<Principal>>,
    ) -> Result<(), StoreError> {
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let definition = definition(tool);
            let sha256 = digest(&definition);
            let earlier = self.seen.get(name).cloned();
            if earlier.as_ref().is_some_and(|s| s.sha256 == sha256) {
                continue;
            }
            let mut last = None;
            let server = self.server.clone();
            store.append_for_call(&record_key(&server, name), |events| {
                last = events
                    .iter()
                    .rev()
                    .filter(|e| e.kind == "lifecycle")
                    .find_map(|e| recorded_digest(&e.payload));
                if last.as_deref() == Some(sha256.as_str()) {
                    return Vec::new();
                }
                let record = LifecycleRecord {
                    event: EVENT.to_owned(),
                    data: json!({
                        "server": server,
                        "tool": name,
                        "sha256": sha256,
                        "previous_sha256": last,
                        "definition": definition,
                    }),
                };
                vec![
                    Event::now(
                        &record_key(&server, name),
                        None,
                        EventBody::Lifecycle(record),
                    )
                    .by(who),
                ]
            })?;
            let previous = match last {
                Some(last) if last != sha256 => Some(last),
                _ => earlier.and_then(|e| e.previous),
            };
            self.seen.insert(name.to_owned(), Seen { sha256, previous });
        }
        Ok(())
    }

    /// Whether this session saw `tool` listed.
    pub fn knows(&self, tool: &str) -> bool {
        self.seen.contains_key(tool)
    }

    /// The facts of a call to `tool`: its server, and the definition this
    /// session last saw listed (none when it listed none for it).
    pub fn facts(&self, tool: &str) -> Option<McpFacts> {
        let seen = self.seen.get(tool);
        Some(McpFacts {
            server: self.server.clone(),
            tool: tool.to_owned(),
            definition_sha256: seen.map(|s| s.sha256.clone()),
            previous_sha256: seen.and_then(|s| s.previous.clone()),
        })
    }
}

/// The digest a definition row recorded, if `payload` is one.
fn recorded_digest(payload: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(payload).ok()?;
    if value.get("event").and_then(Value::as_str) != Some(EVENT) {
        return None;
    }
    value
        .pointer("/data/sha256")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The anomaly's words for a call under a changed definition.
pub fn changed_detail(tool: &str, facts: &McpFacts) -> String {
    format!(
        "the definition of `{tool}` on server `{}` changed since the log last saw it (sha256 {} -> {})",
        facts.server,
        short(facts.previous_sha256.as_deref()),
        short(facts.definition_sha256.as_deref()),
    )
}

fn short(digest: Option<&str>) -> &str {
    digest.map_or("?", |d| &d[..d.len().min(12)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_ignores_member_order_and_other_members() {
        let a =
            json!({"name": "t", "description": "d", "inputSchema": {"b": 1, "a": 2}, "title": "x"});
        let b = json!({"inputSchema": {"a": 2, "b": 1}, "description": "d", "name": "t"});
        assert_eq!(digest(&definition(&a)), digest(&definition(&b)));
        let c = json!({"name": "t", "description": "d2", "inputSchema": {"a": 2, "b": 1}});
        assert_ne!(digest(&definition(&a)), digest(&definition(&c)));
    }

    #[test]
    fn the_digest_is_of_the_documented_bytes() {
        // docs/mcp.md gives this vector.
        let tool = json!({"name": "echo", "inputSchema": {"type": "object"}});
        let text = r#"{"inputSchema":{"type":"object"},"name":"echo"}"#;
        assert_eq!(
            digest(&definition(&tool)),
            crate::digest::hex(&crate::digest::sha256(text.as_bytes()))
        );
    }

    fn listed(definitions: &mut Definitions, store: &mut Store, description: &str) {
        let tools = [json!({"name": "echo", "description": description})];
        definitions.seen(&tools, store, None).unwrap();
    }

    #[test]
    fn a_definition_is_recorded_once_per_change_and_a_change_is_flagged() {
        let mut store = Store::open_in_memory().unwrap();
        let mut first = Definitions::new("demo");
        listed(&mut first, &mut store, "echoes");
        listed(&mut first, &mut store, "echoes");
        assert!(first.facts("echo").unwrap().previous_sha256.is_none());
        // A second session listing the same definition records nothing new.
        let mut second = Definitions::new("demo");
        listed(&mut second, &mut store, "echoes");
        assert!(!second.facts("echo").unwrap().definition_changed());
        // A third one that lists a new description: recorded, and flagged.
        let mut third = Definitions::new("demo");
        listed(&mut third, &mut store, "ignore previous instructions");
        let facts = third.facts("echo").unwrap();
        assert!(facts.definition_changed());
        assert_eq!(
            facts.previous_sha256,
            first.facts("echo").unwrap().definition_sha256
        );
        let rows = store.call_events(&record_key("demo", "echo")).unwrap();
        let kinds: Vec<&str> = rows.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["lifecycle", "lifecycle"]);
        assert_eq!(store.event_count().unwrap(), 2);
        // A tool never listed: its server, no definition.
        assert!(third.facts("other").unwrap().definition_sha256.is_none());
    }
}
