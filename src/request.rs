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

    #[test]
    fn blocks_without_ids_are_refused() {
        let err = ToolRequest::from_block(&json!({"type":"tool_use","name":"bash"})).unwrap_err();
        assert!(matches!(err, RequestError::MissingField { field: "id" }));
        assert!(ToolRequest::from_block(&json!([1])).is_err());
    }
}
