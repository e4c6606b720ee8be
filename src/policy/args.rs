//! `args`: a rule's conditions on the values of a call's arguments, each
//! found by a JSON pointer (RFC 6901): a glob or a regular expression on a
//! string, a list of allowed values, numeric bounds, presence. For every
//! tool, MCP tools included. Pure: it reads the request's arguments only.
//!
//! An argument that is missing never satisfies a test of its value. One
//! of another type (a number where a string is matched, a list where a
//! value is expected) never satisfies an `allow`, and always satisfies an
//! `ask` or a `deny`: a value gavel cannot judge is not let through.

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use super::Action;
use super::patterns::{Globs, Patterns};

/// One entry of `args`: a pointer and the tests its value must pass.
#[derive(Debug, Clone)]
pub(super) struct ArgCondition {
    pub pointer: String,
    pub glob: Option<Patterns<Globs>>,
    pub regex: Option<Regex>,
    pub any_of: Option<Vec<Value>>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub present: Option<bool>,
}

/// How a value failed a test: what the explanation says after "argument
/// `/pointer` …".
pub(super) type ArgMiss = String;

impl ArgCondition {
    /// `Ok` when the call's `arguments` pass every test of the entry, under
    /// a rule of `action`; else why not.
    pub(super) fn check(&self, arguments: &Value, action: Action) -> Result<(), ArgMiss> {
        let value = arguments.pointer(&self.pointer);
        if let Some(wanted) = self.present
            && value.is_some() != wanted
        {
            return Err(if wanted {
                "is missing".into()
            } else {
                format!("is present ({})", shown(value))
            });
        }
        let Some(value) = value else {
            return if self.tests_value() {
                Err("is missing".into())
            } else {
                Ok(())
            };
        };
        // A value of a type the test cannot judge: no for an allow, yes otherwise.
        let unjudged = |what: &str| {
            if action == Action::Allow {
                Err(format!("is {}, not {what}", shown(Some(value))))
            } else {
                Ok(())
            }
        };
        if self.glob.is_some() || self.regex.is_some() {
            let Value::String(text) = value else {
                return unjudged("a string");
            };
            if let Some(glob) = &self.glob
                && !glob.is_match(text)
            {
                return Err(format!(
                    "is {}, which matches none of {}",
                    shown(Some(value)),
                    list(&glob.written)
                ));
            }
            if let Some(regex) = &self.regex
                && !regex.is_match(text)
            {
                return Err(format!(
                    "is {}, which `{}` does not match",
                    shown(Some(value)),
                    regex.as_str()
                ));
            }
        }
        if let Some(allowed) = &self.any_of {
            if !allowed.iter().any(|a| same_type(a, value)) {
                return unjudged("of the type of the values listed");
            }
            if !allowed.iter().any(|a| equal(a, value)) {
                let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
                return Err(format!(
                    "is {}, which is none of {}",
                    shown(Some(value)),
                    listed.join(", ")
                ));
            }
        }
        if self.min.is_some() || self.max.is_some() {
            let Some(number) = value.as_f64() else {
                return unjudged("a number");
            };
            if let Some(min) = self.min
                && number < min
            {
                return Err(format!("is {}, below {min}", shown(Some(value))));
            }
            if let Some(max) = self.max
                && number > max
            {
                return Err(format!("is {}, above {max}", shown(Some(value))));
            }
        }
        Ok(())
    }

    /// Whether the entry tests the value (beyond its presence).
    fn tests_value(&self) -> bool {
        self.glob.is_some()
            || self.regex.is_some()
            || self.any_of.is_some()
            || self.min.is_some()
            || self.max.is_some()
    }

    /// The entry as a policy writes it, to compare two rules' entries.
    pub(super) fn written(&self) -> String {
        let mut parts = vec![format!("pointer = {:?}", self.pointer)];
        if let Some(glob) = &self.glob {
            parts.push(format!("glob = {:?}", glob.written.join(" ")));
        }
        if let Some(regex) = &self.regex {
            parts.push(format!("regex = {:?}", regex.as_str()));
        }
        if let Some(values) = &self.any_of {
            parts.push(format!("any_of = {}", Value::Array(values.clone())));
        }
        if let Some(min) = self.min {
            parts.push(format!("min = {min}"));
        }
        if let Some(max) = self.max {
            parts.push(format!("max = {max}"));
        }
        if let Some(present) = self.present {
            parts.push(format!("present = {present}"));
        }
        format!("{{ {} }}", parts.join(", "))
    }

    /// Every glob of the entry, to compile and check with the rule's.
    pub(super) fn globs(&self) -> Option<&Patterns<Globs>> {
        self.glob.as_ref()
    }
}

/// Whether two JSON values are of one type (numbers of any kind alike).
fn same_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// JSON equality, with numbers compared by value (`100` is `100.0`).
fn equal(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

/// A value as the explanation shows it: JSON, cut at 80 characters.
fn shown(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "missing".into();
    };
    let text = value.to_string();
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One entry of `args`: a JSON pointer into the arguments and the tests
/// its value must pass (docs: README, "Conditions on argument values").
#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct ArgFile {
    pointer: String,
    glob: Option<String>,
    regex: Option<String>,
    any_of: Option<Vec<serde_json::Value>>,
    min: Option<f64>,
    max: Option<f64>,
    present: Option<bool>,
}

impl ArgCondition {
    /// An `args` entry as the policy file writes it, checked.
    pub(super) fn from_file(spec: ArgFile) -> Result<Self, String> {
        let at = |problem: &str| format!("`args` entry `{}`: {problem}", spec.pointer);
        if !(spec.pointer.is_empty() || spec.pointer.starts_with('/')) {
            return Err(at("a pointer is empty or starts with `/` (RFC 6901)"));
        }
        if spec.glob.is_none()
            && spec.regex.is_none()
            && spec.any_of.is_none()
            && spec.min.is_none()
            && spec.max.is_none()
            && spec.present.is_none()
        {
            return Err(at("give a test: glob, regex, any_of, min, max or present"));
        }
        if spec.present == Some(false)
            && (spec.glob.is_some() || spec.regex.is_some() || spec.any_of.is_some())
        {
            return Err(at("`present = false` leaves no value to test"));
        }
        if let (Some(min), Some(max)) = (spec.min, spec.max)
            && min > max
        {
            return Err(at("`min` is above `max`"));
        }
        if spec.min.is_some_and(f64::is_nan) || spec.max.is_some_and(f64::is_nan) {
            return Err(at("a bound is not a number"));
        }
        if spec.any_of.as_ref().is_some_and(Vec::is_empty) {
            return Err(at("`any_of` must not be an empty list"));
        }
        let regex = spec
            .regex
            .as_deref()
            .map(|r| regex::Regex::new(r).map_err(|e| at(&format!("invalid regex: {e}"))))
            .transpose()?;
        Ok(ArgCondition {
            glob: spec
                .glob
                .map(|g| super::patterns::globs("args", vec![g], false))
                .transpose()?,
            regex,
            any_of: spec.any_of,
            min: spec.min,
            max: spec.max,
            present: spec.present,
            pointer: spec.pointer,
        })
    }
}
