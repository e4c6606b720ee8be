//! The file tools: `read_file`, `write_file`, `edit_file` and `glob`. Each
//! resolves its path again at execution and refuses one outside the workspace.

use std::path::Path;

use serde_json::Value;

use super::{ToolContext, ToolError, ToolHandler, ToolOutput, arg, cap};
use crate::facts::pattern::{self, Segment, SegmentMatcher};
use crate::facts::static_prefix;

fn io(action: &'static str, path: &str) -> impl FnOnce(std::io::Error) -> ToolError {
    let path = path.to_owned();
    move |source| ToolError::Io {
        action,
        path,
        source,
    }
}

/// Reads a text file, optionally only its first `limit` lines.
#[derive(Debug, Clone, Copy)]
pub struct ReadFile;

impl ToolHandler for ReadFile {
    fn call(&self, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let raw = arg(arguments, "path")?;
        let path = context.scoped_path(raw)?;
        let bytes = std::fs::read(&path).map_err(io("cannot read", raw))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let text = match arguments.get("limit").and_then(Value::as_u64) {
            Some(limit) => text
                .split_inclusive('\n')
                .take(usize::try_from(limit).unwrap_or(usize::MAX))
                .collect(),
            None => text,
        };
        Ok(ToolOutput::text(cap(text, context.output_limit)))
    }
}

/// Writes `content` to a file, creating parent folders.
#[derive(Debug, Clone, Copy)]
pub struct WriteFile;

impl ToolHandler for WriteFile {
    fn call(&self, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let raw = arg(arguments, "path")?;
        let content = arg(arguments, "content")?;
        let path = context.scoped_path(raw)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io("cannot create folders for", raw))?;
        }
        std::fs::write(&path, content).map_err(io("cannot write", raw))?;
        Ok(ToolOutput::text(format!(
            "wrote {} bytes to {raw}",
            content.len()
        )))
    }
}

/// Replaces `old_text` with `new_text`, which must occur exactly once.
#[derive(Debug, Clone, Copy)]
pub struct EditFile;

impl ToolHandler for EditFile {
    fn call(&self, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let raw = arg(arguments, "path")?;
        let old = arg(arguments, "old_text")?;
        // Required: a missing replacement must never read as "delete".
        let new = arg(arguments, "new_text")?;
        let path = context.scoped_path(raw)?;
        let text = std::fs::read_to_string(&path).map_err(io("cannot read", raw))?;
        match text.matches(old).count() {
            0 => Err(ToolError::NotFound {
                text: old.to_owned(),
                path: raw.to_owned(),
            }),
            1 => {
                std::fs::write(&path, text.replacen(old, new, 1))
                    .map_err(io("cannot write", raw))?;
                Ok(ToolOutput::text(format!("edited {raw}")))
            }
            count => Err(ToolError::Ambiguous {
                text: old.to_owned(),
                path: raw.to_owned(),
                count,
            }),
        }
    }
}

/// Lists workspace files matching a glob, as workspace-relative paths.
#[derive(Debug, Clone, Copy)]
pub struct Glob;

/// Stop walking after this many entries, so a huge tree cannot stall a call.
const MAX_ENTRIES: usize = 100_000;

impl ToolHandler for Glob {
    fn call(&self, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let pattern = arg(arguments, "pattern")?;
        let base = context.scoped_path(static_prefix(pattern))?;
        let root = context.workspace.root();
        // Match against the pattern made workspace-relative, as the files are.
        let relative_pattern = match Path::new(pattern).is_absolute() {
            true => Path::new(pattern)
                .strip_prefix(root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| pattern.to_owned()),
            false => pattern.trim_start_matches("./").to_owned(),
        };
        let matcher = PathPattern::new(&relative_pattern).map_err(|detail| ToolError::Pattern {
            pattern: pattern.to_owned(),
            detail,
        })?;
        let mut matches = Vec::new();
        let mut stack = vec![base];
        let mut seen = 0;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_ENTRIES {
                    break;
                }
                let path = entry.path();
                let Ok(relative) = path.strip_prefix(root) else {
                    continue;
                };
                if matcher.matches(relative) {
                    matches.push(relative.to_string_lossy().into_owned());
                }
                // Do not follow symlinked folders: they may lead outside.
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(path);
                }
            }
        }
        matches.sort();
        Ok(ToolOutput::text(cap(
            matches.join("\n"),
            context.output_limit,
        )))
    }
}

/// One part of a compiled pattern.
enum Part {
    Literal(String),
    Wild(SegmentMatcher),
    Globstar,
}

/// A glob over workspace-relative paths with bash's rules: braces expand,
/// `*`, `?` and `[...]` match within one name and never a leading `.`
/// (`*/audit.db` does not match `.gavel/audit.db`), `**` matches any number
/// of folders whose names do not start with `.`.
struct PathPattern {
    alternatives: Vec<Vec<Part>>,
}

impl PathPattern {
    fn new(pattern: &str) -> Result<Self, String> {
        let mut alternatives = Vec::new();
        for alternative in pattern::expand_braces(pattern)? {
            let parts = pattern::split(&alternative)
                .segments
                .into_iter()
                .map(|segment| match segment {
                    Segment::Literal(text) => Ok(Part::Literal(text)),
                    Segment::Globstar => Ok(Part::Globstar),
                    Segment::Wild(text) => SegmentMatcher::new(&text)
                        .map(Part::Wild)
                        .ok_or_else(|| format!("the wildcard part `{text}` is too long")),
                })
                .filter(|part| !matches!(part, Ok(Part::Literal(t)) if t == "."))
                .collect::<Result<Vec<_>, String>>()?;
            alternatives.push(parts);
        }
        Ok(Self { alternatives })
    }

    fn matches(&self, path: &Path) -> bool {
        let names: Vec<String> = path
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        self.alternatives
            .iter()
            .any(|parts| matches_parts(parts, &names))
    }
}

/// Whether `parts` match all of `names`: a table over (part, name)
/// positions, filled from the end, so `**` costs no backtracking.
fn matches_parts(parts: &[Part], names: &[String]) -> bool {
    let width = names.len() + 1;
    // done[i * width + j]: parts[i..] match names[j..].
    let mut done = vec![false; (parts.len() + 1) * width];
    done[parts.len() * width + names.len()] = true;
    for i in (0..parts.len()).rev() {
        for j in (0..=names.len()).rev() {
            let rest = |k: usize| done[(i + 1) * width + k];
            done[i * width + j] = match &parts[i] {
                Part::Literal(text) => j < names.len() && names[j] == *text && rest(j + 1),
                Part::Wild(matcher) => j < names.len() && matcher.matches(&names[j]) && rest(j + 1),
                Part::Globstar => {
                    rest(j)
                        || (j < names.len()
                            && !names[j].starts_with('.')
                            && done[i * width + j + 1])
                }
            };
        }
    }
    done[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(pattern: &str, path: &str) -> bool {
        PathPattern::new(pattern).unwrap().matches(Path::new(path))
    }

    #[test]
    fn patterns_follow_bash_dot_rules() {
        assert!(!hit("*/audit.db", ".gavel/audit.db"));
        assert!(hit(".g*/audit.db", ".gavel/audit.db"));
        assert!(!hit("*", ".gavel"));
        assert!(!hit("**/*.db", ".gavel/audit.db"));
        assert!(hit("**/*.rs", "src/a/b.rs"));
        assert!(hit("**/*.rs", "b.rs"));
        assert!(hit("src/**/*.rs", "src/b.rs"));
        assert!(hit("{src,docs}/*.md", "docs/a.md"));
        assert!(!hit("*.rs", "src/a.rs"));
        assert!(hit("notes.txt", "notes.txt"));
    }
}
