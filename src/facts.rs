//! What the filesystem says about a request: the canonical workspace root
//! and where each path argument really points. Facts are gathered here,
//! outside the policy, and handed to it; replay hands in recorded facts
//! instead, which is what makes a replayed decision exact.
//!
//! Resolution fails closed: a path that cannot be resolved (a symlink loop,
//! an unreadable link) is reported as outside the workspace.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::request::ToolRequest;
use crate::shell::{self, CommandAnalysis};

/// The facts a decision used. Recorded with every decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facts {
    /// The canonical workspace root.
    pub workspace: String,
    /// Paths the request touches, resolved: a file tool's path, or the
    /// targets of a shell command's redirections.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathFact>,
    /// For `bash`: the simple commands the command string would run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<CommandAnalysis>,
    /// Recorded instead of `shell` for a command longer than
    /// `INLINE_PARSE_LIMIT`: the SHA-256 (hex) of the parse's JSON. The
    /// request holds the command once; the parse is that command parsed
    /// again, and the digest says whether it is the parse that decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_sha256: Option<String>,
}

/// Commands longer than this (bytes) have their parse recorded by digest
/// only, so a long command is not stored a second time in its decision.
pub const INLINE_PARSE_LIMIT: usize = 64 * 1024;

/// One path argument and where it resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathFact {
    /// The path as the request gave it.
    pub requested: String,
    /// The resolved absolute path, or `None` when resolution failed.
    pub resolved: Option<String>,
    /// Whether the resolved path lies inside the workspace root.
    pub inside: bool,
    /// The resolved path relative to the workspace (`.` for the root itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative: Option<String>,
    /// Why resolution failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Facts {
    /// Facts for a request whose workspace cannot be opened: every path it
    /// names is unresolved and so outside (fail closed).
    pub fn unresolvable(workspace: &str, request: &ToolRequest, error: &str) -> Self {
        let paths = path_argument(&request.name)
            .and_then(|field| request.str_arg(field))
            .map(|raw| PathFact {
                requested: raw.to_owned(),
                resolved: None,
                inside: false,
                relative: None,
                error: Some(error.to_owned()),
            })
            .into_iter()
            .collect();
        Self {
            workspace: workspace.to_owned(),
            paths,
            shell: None,
            shell_sha256: None,
        }
    }

    /// The facts as a decision records them: the parse of a command longer
    /// than `INLINE_PARSE_LIMIT` is replaced by its digest (`restore`
    /// brings it back from the request).
    pub fn for_record(&self, request: &ToolRequest) -> Facts {
        let long = request
            .str_arg("command")
            .is_some_and(|c| c.len() > INLINE_PARSE_LIMIT);
        match &self.shell {
            Some(shell) if long => Facts {
                workspace: self.workspace.clone(),
                paths: self.paths.clone(),
                shell: None,
                shell_sha256: Some(parse_digest(shell)),
            },
            _ => self.clone(),
        }
    }

    /// Recorded facts made whole: a parse recorded by digest is parsed again
    /// from the request's `command`. `Some(true)` when that parse has the
    /// recorded digest (the facts are exactly those that decided),
    /// `Some(false)` when the parser now reads the command differently,
    /// `None` when nothing was recorded by digest.
    pub fn restore(&mut self, arguments: &serde_json::Value) -> Option<bool> {
        let digest = self.shell_sha256.as_ref()?;
        if self.shell.is_some() {
            return None;
        }
        let command = arguments.get("command")?.as_str()?;
        let analysis = shell::analyze(command);
        let exact = parse_digest(&analysis) == *digest;
        self.shell = Some(analysis);
        Some(exact)
    }
}

/// SHA-256 (hex) of a parse's JSON.
fn parse_digest(analysis: &CommandAnalysis) -> String {
    // A parse holds only strings, lists and booleans, which always serialize.
    let bytes = serde_json::to_vec(analysis).unwrap_or_default();
    crate::digest::hex(&crate::digest::sha256(&bytes))
}

/// The facts of `request`, with `resolve(raw, scoped)` turning each path it
/// names into a `PathFact`: a file tool's path argument (for `glob`, its
/// static prefix), or each redirection target of a parsed shell command.
fn gather(
    workspace: String,
    request: &ToolRequest,
    resolve: impl Fn(&str, &str) -> PathFact,
) -> Facts {
    let mut facts = Facts {
        workspace,
        paths: Vec::new(),
        shell: None,
        shell_sha256: None,
    };
    if request.name == "bash" {
        if let Some(command) = request.str_arg("command") {
            let analysis = shell::analyze(command);
            for redirect in analysis.all_redirects() {
                if !facts.paths.iter().any(|p| p.requested == redirect.target) {
                    facts
                        .paths
                        .push(resolve(&redirect.target, &redirect.target));
                }
            }
            facts.shell = Some(analysis);
        }
    } else if let Some(field) = path_argument(&request.name)
        && let Some(raw) = request.str_arg(field)
    {
        let scoped = if request.name == "glob" {
            static_prefix(raw)
        } else {
            raw
        };
        let mut fact = resolve(raw, scoped);
        if request.name == "glob" && climbs_after_wildcard(raw, scoped) {
            // `*/../../x` leaves the static prefix behind: fail closed.
            fact.inside = false;
            fact.relative = None;
            fact.error = Some("the pattern climbs with `..` after a wildcard".to_owned());
        }
        facts.paths.push(fact);
    }
    facts
}

/// Whether a glob pattern has a `..` part after its static prefix.
fn climbs_after_wildcard(pattern: &str, prefix: &str) -> bool {
    let rest = if prefix == "." {
        pattern
    } else {
        pattern.get(prefix.len()..).unwrap_or("")
    };
    rest.split('/').any(|part| part == "..")
}

/// The workspace root that lexical facts pretend to have.
pub const EXAMPLE_WORKSPACE: &str = "/workspace";

/// Facts worked out from the request text alone, without the filesystem:
/// paths are joined to `/workspace` and `..` applied lexically; `~` counts
/// as outside. Used to check a policy's inline examples at load time.
pub fn lexical_facts(request: &ToolRequest) -> Facts {
    gather(EXAMPLE_WORKSPACE.to_owned(), request, lexical_path_fact)
}

fn lexical_path_fact(raw: &str, scoped: &str) -> PathFact {
    let root = Path::new(EXAMPLE_WORKSPACE);
    let home = scoped.starts_with('~');
    let mut resolved = PathBuf::from("/");
    if !home {
        for part in root.join(scoped).components() {
            match part {
                Component::ParentDir => {
                    resolved.pop();
                }
                Component::Normal(name) => resolved.push(name),
                _ => {}
            }
        }
    }
    let relative = resolved
        .strip_prefix(root)
        .ok()
        .filter(|_| !home)
        .map(|rel| match rel.to_string_lossy() {
            r if r.is_empty() => ".".to_owned(),
            r => r.into_owned(),
        });
    PathFact {
        requested: raw.to_owned(),
        resolved: (!home).then(|| resolved.to_string_lossy().into_owned()),
        inside: relative.is_some(),
        relative,
        error: home.then(|| "`~` is not resolved in examples".to_owned()),
    }
}

/// Tools whose `path` (or `pattern` for `glob`) argument is scoped to the workspace.
pub fn path_argument(tool: &str) -> Option<&'static str> {
    match tool {
        "read_file" | "write_file" | "edit_file" => Some("path"),
        "glob" => Some("pattern"),
        _ => None,
    }
}

/// A workspace root, canonicalized once.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// Where relative paths start: the root, unless the caller runs
    /// elsewhere inside it (a Claude Code session that did `cd src`).
    cwd: PathBuf,
}

impl Workspace {
    /// Canonicalizes `dir`; it must exist.
    pub fn open(dir: &Path) -> io::Result<Self> {
        let root = std::fs::canonicalize(dir)?;
        Ok(Self {
            cwd: root.clone(),
            root,
        })
    }

    /// The same workspace, with relative paths taken from `cwd` (which must
    /// exist). The boundary stays the root: a `cwd` outside it only means
    /// relative paths start outside, and are judged as such.
    pub fn with_cwd(mut self, cwd: &Path) -> io::Result<Self> {
        self.cwd = std::fs::canonicalize(self.root.join(cwd))?;
        Ok(self)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Gathers the facts for `request` from the filesystem as it is now.
    pub fn facts(&self, request: &ToolRequest) -> Facts {
        gather(
            self.root.to_string_lossy().into_owned(),
            request,
            |raw, scoped| self.path_fact(raw, scoped),
        )
    }

    /// Resolves `scoped` (the part of `requested` that names a path) and
    /// says whether it stays inside the workspace.
    pub fn path_fact(&self, requested: &str, scoped: &str) -> PathFact {
        match self.resolve(scoped) {
            Ok(resolved) => {
                let relative = resolved.strip_prefix(&self.root).ok().map(|rel| {
                    if rel.as_os_str().is_empty() {
                        ".".to_owned()
                    } else {
                        rel.to_string_lossy().into_owned()
                    }
                });
                PathFact {
                    requested: requested.to_owned(),
                    inside: relative.is_some(),
                    resolved: Some(resolved.to_string_lossy().into_owned()),
                    relative,
                    error: None,
                }
            }
            Err(err) => PathFact {
                requested: requested.to_owned(),
                resolved: None,
                inside: false,
                relative: None,
                error: Some(err.to_string()),
            },
        }
    }

    /// Resolves a path argument: relative to the root, `~` expanded,
    /// existing symlinks followed, `..` applied after them. A final part that
    /// does not exist yet is fine.
    pub fn resolve(&self, raw: &str) -> io::Result<PathBuf> {
        let expanded = expand_home(raw);
        let joined = if expanded.is_absolute() {
            expanded
        } else {
            self.cwd.join(expanded)
        };
        // The root is canonical: only the parts after it need looking at.
        match joined.strip_prefix(&self.root) {
            Ok(rest) => resolve_lenient(self.root.clone(), rest),
            Err(_) => resolve_lenient(PathBuf::from("/"), &joined),
        }
    }
}

fn expand_home(raw: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    match raw.strip_prefix('~') {
        Some("") => home().unwrap_or_else(|| PathBuf::from(raw)),
        Some(rest) if rest.starts_with('/') => match home() {
            Some(h) => h.join(rest.trim_start_matches('/')),
            None => PathBuf::from(raw),
        },
        _ => PathBuf::from(raw),
    }
}

/// The longest leading part of a glob pattern without wildcards, e.g.
/// `../outside` for `../outside/*.txt`; `.` when the first part has one.
pub fn static_prefix(pattern: &str) -> &str {
    let wild = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    match pattern[..wild].rfind('/') {
        _ if wild == pattern.len() => pattern,
        Some(0) => "/",
        Some(slash) => &pattern[..slash],
        None => ".",
    }
}

/// Like Python's `Path.resolve(strict=False)`: follows symlinks that exist,
/// keeps a missing tail as written, and reports loops as errors. A `..`
/// that climbs out of a missing tail lands back on real folders, where
/// symlinks are followed again (`nope/../link/x` goes where `link` points).
/// `base` must be canonical (no symlinks, no `..`); `path` is taken relative to it.
fn resolve_lenient(base: PathBuf, path: &Path) -> io::Result<PathBuf> {
    const MAX_LINKS: usize = 40;
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_components(&mut pending, path, false);
    let mut out = base;
    let mut links = 0;
    // How many trailing parts of `out` do not exist.
    let mut missing = 0usize;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            out.pop();
            missing = missing.saturating_sub(1);
            continue;
        }
        let next = out.join(&part);
        if missing > 0 {
            out = next;
            missing += 1;
            continue;
        }
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io::Error::other(format!(
                        "too many levels of symbolic links at `{}`",
                        next.display()
                    )));
                }
                let target = std::fs::read_link(&next)?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push_components(&mut pending, &target, true);
            }
            Ok(_) => out = next,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                missing = 1;
                out = next;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(out)
}

/// Queues the normal and `..` parts of `path`, at the front when `front`.
fn push_components(queue: &mut VecDeque<OsString>, path: &Path, front: bool) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect();
    if front {
        for part in parts.into_iter().rev() {
            queue.push_front(part);
        }
    } else {
        queue.extend(parts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        let ws = Workspace::open(&dir.path().join("ws")).unwrap();
        (dir, ws)
    }

    #[test]
    fn a_long_commands_parse_is_recorded_by_digest_and_restored_exactly() {
        let (_dir, ws) = workspace();
        let command = format!("echo {} > out.txt", "word ".repeat(INLINE_PARSE_LIMIT / 4));
        let request = ToolRequest::new("c", "bash", serde_json::json!({ "command": command }));
        let facts = ws.facts(&request);
        let mut recorded = facts.for_record(&request);
        assert!(recorded.shell.is_none());
        assert_eq!(recorded.paths, facts.paths);
        let bytes = serde_json::to_vec(&recorded).unwrap();
        assert!(bytes.len() < 2048, "{} bytes", bytes.len());
        assert_eq!(recorded.restore(&request.arguments), Some(true));
        assert_eq!(recorded.shell, facts.shell);
        // Another command under the same digest is not the parse that decided.
        let mut forged = facts.for_record(&request);
        let other = serde_json::json!({ "command": "echo other" });
        assert_eq!(forged.restore(&other), Some(false));
        // Short commands keep their parse inline.
        let short = ToolRequest::new("c", "bash", serde_json::json!({ "command": "ls" }));
        let mut inline = ws.facts(&short).for_record(&short);
        assert!(inline.shell.is_some());
        assert_eq!(inline.restore(&short.arguments), None);
    }

    #[test]
    fn static_prefix_stops_before_the_first_wildcard() {
        assert_eq!(static_prefix("../outside/*.txt"), "../outside");
        assert_eq!(static_prefix("src/**/*.rs"), "src");
        assert_eq!(static_prefix("*.rs"), ".");
        assert_eq!(static_prefix("/etc/*"), "/etc");
        assert_eq!(static_prefix("/*"), "/");
        assert_eq!(static_prefix("README.md"), "README.md");
    }

    #[test]
    fn traversal_and_absolute_paths_are_outside() {
        let (_dir, ws) = workspace();
        assert!(ws.path_fact("a/b.txt", "a/b.txt").inside);
        assert!(!ws.path_fact("../x", "../x").inside);
        assert!(!ws.path_fact("/etc/hosts", "/etc/hosts").inside);
        assert!(ws.path_fact("a/../b", "a/../b").inside);
        assert_eq!(ws.path_fact(".", ".").relative.as_deref(), Some("."));
    }

    #[test]
    fn symlinks_are_followed_before_dotdot() {
        let (dir, ws) = workspace();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        symlink(dir.path().join("outside"), ws.root().join("link")).unwrap();
        assert!(!ws.path_fact("link/new.txt", "link/new.txt").inside);
        // `inner/..` where inner points outside: `..` applies to the target.
        std::fs::create_dir_all(dir.path().join("outside/deep")).unwrap();
        symlink(dir.path().join("outside/deep"), ws.root().join("inner")).unwrap();
        assert!(!ws.path_fact("inner/../x", "inner/../x").inside);
    }

    #[test]
    fn climbing_out_of_a_missing_folder_follows_symlinks_again() {
        let (dir, ws) = workspace();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        symlink(dir.path().join("outside"), ws.root().join("link_out")).unwrap();
        let fact = ws.path_fact("nope/../link_out/secret.txt", "nope/../link_out/secret.txt");
        assert!(!fact.inside, "{fact:?}");
        assert!(
            ws.path_fact("nope/deeper/../../a.txt", "nope/deeper/../../a.txt")
                .inside
        );
    }

    #[test]
    fn a_glob_that_climbs_after_a_wildcard_is_outside() {
        let (_dir, ws) = workspace();
        let request =
            ToolRequest::new("g", "glob", serde_json::json!({"pattern": "*/../../etc/*"}));
        assert!(!ws.facts(&request).paths[0].inside);
        let request = ToolRequest::new("g", "glob", serde_json::json!({"pattern": "src/**/*.rs"}));
        assert!(ws.facts(&request).paths[0].inside);
    }

    #[test]
    fn symlink_loops_fail_closed() {
        let (_dir, ws) = workspace();
        symlink("b", ws.root().join("a")).unwrap();
        symlink("a", ws.root().join("b")).unwrap();
        let fact = ws.path_fact("a/x", "a/x");
        assert!(!fact.inside);
        assert!(fact.error.is_some());
    }
}
