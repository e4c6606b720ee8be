//! `ToolRequest`: a tool call as gavel sees it, and the adapters that build
//! one from a client's block. Arguments stay untyped JSON until the policy
//! checks them: a model may send anything.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call an agent asks to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRequest {
    /// The client's id for this call (Anthropic `id`, OpenAI `call_id`).
    pub tool_use_id: String,
    /// The tool name in gavel's vocabulary (`bash`, `read_file`, ...).
    pub name: String,
    /// Whatever the model sent; not yet validated.
    pub arguments: Value,
}

/// Why a client block could not become a request.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("expected a JSON object with `type` \"tool_use\" or \"function_call\"")]
    NotABlock,
    #[error("unsupported block type `{kind}`")]
    UnknownType { kind: String },
    #[error("block is missing the string field `{field}`")]
    MissingField { field: &'static str },
}

impl ToolRequest {
    pub fn new(tool_use_id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            name: name.into(),
            arguments,
        }
    }

    /// Builds a request from an Anthropic `tool_use` block
    /// (`{"type":"tool_use","id","name","input"}`) or an OpenAI `function_call`
    /// item (`{"type":"function_call","call_id","name","arguments":"<json>"}`).
    ///
    /// OpenAI arguments that are not valid JSON are kept as a JSON string, so
    /// the policy denies them as invalid arguments rather than guessing.
    pub fn from_block(block: &Value) -> Result<Self, RequestError> {
        let object = block.as_object().ok_or(RequestError::NotABlock)?;
        let text = |field: &'static str| {
            object
                .get(field)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or(RequestError::MissingField { field })
        };
        match object.get("type").and_then(Value::as_str) {
            Some("tool_use") => Ok(Self::new(
                text("id")?,
                text("name")?,
                object.get("input").cloned().unwrap_or(Value::Null),
            )),
            Some("function_call") => {
                let raw = object.get("arguments").cloned().unwrap_or(Value::Null);
                let arguments = match raw {
                    Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
                    other => other,
                };
                Ok(Self::new(text("call_id")?, text("name")?, arguments))
            }
            Some(other) => Err(RequestError::UnknownType {
                kind: other.to_owned(),
            }),
            None => Err(RequestError::NotABlock),
        }
    }

    /// The argument `field` when it is a non-empty string.
    pub fn str_arg(&self, field: &str) -> Option<&str> {
        self.arguments
            .get(field)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }
}

/// What kind of JSON value an argument takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentKind {
    /// A string that must not be empty.
    Text,
    /// A string, possibly empty.
    AnyText,
    /// A whole number, zero or more.
    Count,
}

impl ArgumentKind {
    fn describe(self) -> &'static str {
        match self {
            ArgumentKind::Text => "a non-empty string",
            ArgumentKind::AnyText => "a string",
            ArgumentKind::Count => "a whole number, zero or more",
        }
    }

    fn accepts(self, value: &Value) -> bool {
        match self {
            ArgumentKind::Text => value.as_str().is_some_and(|s| !s.is_empty()),
            ArgumentKind::AnyText => value.is_string(),
            ArgumentKind::Count => value.as_u64().is_some(),
        }
    }
}

/// One argument of a built-in tool.
#[derive(Debug, Clone, Copy)]
pub struct ArgumentSpec {
    pub name: &'static str,
    pub required: bool,
    pub kind: ArgumentKind,
    pub about: &'static str,
}

/// A built-in tool's name and the arguments it takes; any other key is refused.
#[derive(Debug, Clone, Copy)]
pub struct ToolSchema {
    pub name: &'static str,
    pub about: &'static str,
    pub arguments: &'static [ArgumentSpec],
}

const fn required(name: &'static str, kind: ArgumentKind, about: &'static str) -> ArgumentSpec {
    ArgumentSpec {
        name,
        required: true,
        kind,
        about,
    }
}

/// The built-in tools' argument schemas, in the order the docs list them.
pub const BUILTIN_TOOLS: &[ToolSchema] = &[
    ToolSchema {
        name: "bash",
        about: "run a command with bash in the workspace",
        arguments: &[required(
            "command",
            ArgumentKind::Text,
            "the command line, at least one word",
        )],
    },
    ToolSchema {
        name: "read_file",
        about: "read a text file",
        arguments: &[
            required("path", ArgumentKind::Text, "file to read"),
            ArgumentSpec {
                name: "limit",
                required: false,
                kind: ArgumentKind::Count,
                about: "read only the first N lines",
            },
        ],
    },
    ToolSchema {
        name: "write_file",
        about: "write a file, creating folders",
        arguments: &[
            required("path", ArgumentKind::Text, "file to write"),
            required("content", ArgumentKind::AnyText, "the whole new content"),
        ],
    },
    ToolSchema {
        name: "edit_file",
        about: "replace text that occurs exactly once",
        arguments: &[
            required("path", ArgumentKind::Text, "file to edit"),
            required("old_text", ArgumentKind::Text, "the text to replace"),
            required(
                "new_text",
                ArgumentKind::AnyText,
                "its replacement (\"\" deletes it)",
            ),
        ],
    },
    ToolSchema {
        name: "glob",
        about: "list workspace files matching a pattern",
        arguments: &[required(
            "pattern",
            ArgumentKind::Text,
            "a bash glob (`*`, `?`, `[..]`, `{a,b}`, `**`)",
        )],
    },
];

/// The schema of the built-in tool `name`, if it is one.
pub fn builtin_schema(name: &str) -> Option<&'static ToolSchema> {
    BUILTIN_TOOLS.iter().find(|tool| tool.name == name)
}

/// The built-in tool a mistyped `name` most likely meant (`Bash`, `read`,
/// `Read_File`), or `None` when `name` is built in or close to none.
pub fn suggest_tool(name: &str) -> Option<&'static str> {
    if builtin_schema(name).is_some() {
        return None;
    }
    let folded = name.to_ascii_lowercase().replace('-', "_");
    if let Some(tool) = builtin_schema(&folded) {
        return Some(tool.name);
    }
    // `read` for `read_file`, `edit` for `edit_file`.
    if let Some(tool) = BUILTIN_TOOLS
        .iter()
        .find(|tool| tool.name.split('_').next() == Some(folded.as_str()) && folded.len() >= 4)
    {
        return Some(tool.name);
    }
    closest(&folded, BUILTIN_TOOLS.iter().map(|tool| tool.name))
}

/// The candidate nearest to `word` by edit distance, if near enough to be a typo.
fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|candidate| (edit_distance(word, candidate), candidate))
        .filter(|(distance, candidate)| {
            let allowed = match candidate.len().min(word.len()) {
                0..=5 => 1,
                _ => 2,
            };
            *distance <= allowed || shared_stem(word, candidate)
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Whether two snake_case names share their first word (`new_string`,
/// `new_text`) or one is the other's last word (`file_path`, `path`).
fn shared_stem(a: &str, b: &str) -> bool {
    let suffix = |long: &str, short: &str| long.ends_with(&format!("_{short}"));
    match (a.split_once('_'), b.split_once('_')) {
        (Some((x, _)), Some((y, _))) if x == y && x.len() >= 3 => true,
        _ => suffix(a, b) || suffix(b, a),
    }
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(current)
            };
            previous = current;
        }
    }
    row[b.len()]
}

impl ToolRequest {
    /// Why this request's arguments do not fit its built-in tool's schema
    /// (an unknown key, a missing required argument, a value of the wrong
    /// kind), or `None` when they fit or the tool is not built in. Pure.
    pub fn schema_problem(&self) -> Option<String> {
        let schema = builtin_schema(&self.name)?;
        let Value::Object(arguments) = &self.arguments else {
            return None;
        };
        let names = || schema.arguments.iter().map(|a| a.name);
        let mut unknown: Vec<&String> = arguments
            .keys()
            .filter(|key| names().all(|name| name != key.as_str()))
            .collect();
        unknown.sort();
        if let Some(key) = unknown.first() {
            let hint = match closest(key, names()) {
                Some(name) if !arguments.contains_key(name) => {
                    format!(" (did you mean `{name}`?)")
                }
                _ => String::new(),
            };
            return Some(format!(
                "`{}` does not take the argument `{key}`{hint}; it takes {}",
                self.name,
                argument_list(schema)
            ));
        }
        for spec in schema.arguments {
            match arguments.get(spec.name) {
                None if spec.required => {
                    return Some(format!(
                        "`{}` requires the argument `{}` ({})",
                        self.name,
                        spec.name,
                        spec.kind.describe()
                    ));
                }
                Some(value) if !spec.kind.accepts(value) => {
                    return Some(format!(
                        "argument `{}` of `{}` must be {}",
                        spec.name,
                        self.name,
                        spec.kind.describe()
                    ));
                }
                _ => {}
            }
        }
        None
    }
}

/// "`path`, `old_text` and `new_text`", optional ones marked.
fn argument_list(schema: &ToolSchema) -> String {
    let names: Vec<String> = schema
        .arguments
        .iter()
        .map(|a| match a.required {
            true => format!("`{}`", a.name),
            false => format!("`{}` (optional)", a.name),
        })
        .collect();
    match names.split_last() {
        Some((last, [])) => format!("only {last}"),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "no arguments".to_owned(),
    }
}

/// The built-in tools and their arguments, for `--help` (from the same
/// schemas the policy checks requests against).
pub fn builtin_tools_help() -> String {
    let mut text = String::from(
        "Built-in tools and their arguments (a missing required argument, a value of the wrong\n\
         kind or any other key is denied as request.invalid_arguments):\n",
    );
    for tool in BUILTIN_TOOLS {
        text.push_str(&format!("  {}: {}\n", tool.name, tool.about));
        for argument in tool.arguments {
            let need = if argument.required {
                "required"
            } else {
                "optional"
            };
            text.push_str(&format!(
                "      {:<9} {need}, {}\n",
                argument.name, argument.about
            ));
        }
    }
    text.push_str("Any other tool name is judged by the policy alone (default: denied).");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn anthropic_tool_use_block() {
        let block =
            json!({"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"ls"}});
        let request = ToolRequest::from_block(&block).unwrap();
        assert_eq!(request.tool_use_id, "toolu_1");
        assert_eq!(request.str_arg("command"), Some("ls"));
    }

    #[test]
    fn openai_function_call_parses_its_argument_string() {
        let block = json!({"type":"function_call","call_id":"c1","name":"glob","arguments":"{\"pattern\":\"*.rs\"}"});
        let request = ToolRequest::from_block(&block).unwrap();
        assert_eq!(request.arguments, json!({"pattern":"*.rs"}));
    }

    #[test]
    fn openai_arguments_that_are_not_json_stay_a_string() {
        let block =
            json!({"type":"function_call","call_id":"c1","name":"glob","arguments":"{oops"});
        let request = ToolRequest::from_block(&block).unwrap();
        assert_eq!(request.arguments, json!("{oops"));
    }

    fn problem(tool: &str, arguments: Value) -> Option<String> {
        ToolRequest::new("c", tool, arguments).schema_problem()
    }

    #[test]
    fn unknown_keys_are_named_with_the_close_key() {
        let p = problem(
            "edit_file",
            json!({"path":"e.txt","old_text":"world","new_string":"there"}),
        )
        .unwrap();
        assert!(p.contains("`new_string`"), "{p}");
        assert!(p.contains("did you mean `new_text`?"), "{p}");
        let p = problem("bash", json!({"command":"ls","timeout":5})).unwrap();
        assert!(
            p.contains("`timeout`") && p.contains("only `command`"),
            "{p}"
        );
        let p = problem("read_file", json!({"file_path":"a"})).unwrap();
        assert!(p.contains("did you mean `path`?"), "{p}");
    }

    #[test]
    fn required_arguments_are_required_and_typed() {
        let p = problem("edit_file", json!({"path":"e.txt","old_text":"world"})).unwrap();
        assert!(p.contains("requires the argument `new_text`"), "{p}");
        assert_eq!(
            problem(
                "edit_file",
                json!({"path":"e","old_text":"w","new_text":""})
            ),
            None
        );
        assert!(problem("write_file", json!({"path":"a"})).is_some());
        assert!(problem("read_file", json!({"path":"a","limit":-1})).is_some());
        assert_eq!(problem("read_file", json!({"path":"a","limit":3})), None);
        assert_eq!(problem("deploy", json!({"anything":1})), None);
    }

    #[test]
    fn mistyped_tool_names_get_a_suggestion() {
        assert_eq!(suggest_tool("Bash"), Some("bash"));
        assert_eq!(suggest_tool("read"), Some("read_file"));
        assert_eq!(suggest_tool("Read_File"), Some("read_file"));
        assert_eq!(suggest_tool("edit-file"), Some("edit_file"));
        assert_eq!(suggest_tool("blob"), Some("glob"));
        assert_eq!(suggest_tool("bash"), None);
        assert_eq!(suggest_tool("Task"), None);
        assert_eq!(suggest_tool("WebFetch"), None);
        assert_eq!(suggest_tool("deploy"), None);
        assert_eq!(suggest_tool("mcp__github__create_issue"), None);
    }

    #[test]
    fn blocks_without_ids_are_refused() {
        let err = ToolRequest::from_block(&json!({"type":"tool_use","name":"bash"})).unwrap_err();
        assert!(matches!(err, RequestError::MissingField { field: "id" }));
        assert!(ToolRequest::from_block(&json!([1])).is_err());
    }
}
