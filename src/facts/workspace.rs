//! The workspace on disk: its canonical root, and paths resolved in it as
//! the filesystem has them now (symlinks followed, a missing tail kept).
//! Everything else of `facts` judges words without touching the disk.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::*;

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
        gather(self.root.to_string_lossy().into_owned(), request, self)
    }

    /// [`Workspace::facts`], plus the arguments a policy declares to be
    /// paths for this tool (`[[paths]]`, e.g. an MCP server's `path`): each
    /// is a path read or written. An argument that is a string is one path,
    /// a list of strings is one path per entry; a declared argument that is
    /// present but neither is a path that cannot be resolved (outside, so
    /// no allow rule can match it).
    pub fn facts_with(&self, request: &ToolRequest, declared: &[(String, Access)]) -> Facts {
        let mut facts = self.facts(request);
        add_declared(&mut facts, request, declared, self);
        facts
    }

    /// Resolves `scoped` (the part of `requested` that names a path) and
    /// says whether it stays inside the workspace.
    pub fn path_fact(&self, requested: &str, scoped: &str) -> PathFact {
        self.path_fact_from(&self.cwd, requested, scoped)
    }

    /// [`Workspace::path_fact`] with relative paths taken from `cwd`.
    fn path_fact_from(&self, cwd: &Path, requested: &str, scoped: &str) -> PathFact {
        match self.resolve_from(cwd, scoped) {
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
                    cwd: None,
                    access: None,
                }
            }
            Err(err) => failed(requested, err.to_string()),
        }
    }

    /// Resolves a path argument: relative to the root, `~` expanded,
    /// existing symlinks followed, `..` applied after them. A final part that
    /// does not exist yet is fine.
    pub fn resolve(&self, raw: &str) -> io::Result<PathBuf> {
        self.resolve_from(&self.cwd, raw)
    }

    /// [`Workspace::resolve`] with relative paths taken from `cwd`. A path
    /// longer than [`PATH_MAX`] is refused: no program could open it, and
    /// resolving it part by part would cost time for nothing.
    fn resolve_from(&self, cwd: &Path, raw: &str) -> io::Result<PathBuf> {
        if raw.len() > PATH_MAX {
            return Err(io::Error::other(format!(
                "the path is longer than {PATH_MAX} bytes, which no program can open"
            )));
        }
        let expanded = expand_home(raw)?;
        let joined = if expanded.is_absolute() {
            expanded
        } else {
            cwd.join(expanded)
        };
        // The root is canonical: only the parts after it need looking at.
        match joined.strip_prefix(&self.root) {
            Ok(rest) => resolve_lenient(self.root.clone(), rest),
            Err(_) => resolve_lenient(PathBuf::from("/"), &joined),
        }
    }
}

impl Resolver for Workspace {
    fn fact(&self, requested: &str, scoped: &str, base: &Base) -> PathFact {
        let independent = scoped.starts_with('/') || scoped.starts_with('~');
        match base {
            Base::Start => self.path_fact_from(&self.cwd, requested, scoped),
            _ if independent => self.path_fact_from(&self.cwd, requested, scoped),
            Base::Dir(dir) => PathFact {
                cwd: base_shown(base),
                ..self.path_fact_from(dir, requested, scoped)
            },
            Base::Unknown(_) => unknown_base(requested, base),
        }
    }

    fn enter(&self, base: &Base, dir: &str) -> Base {
        let from = match base {
            Base::Start => &self.cwd,
            Base::Dir(from) => from,
            Base::Unknown(_) if dir.starts_with('/') || dir.starts_with('~') => &self.cwd,
            Base::Unknown(_) => return base.clone(),
        };
        match self.resolve_from(from, dir) {
            Ok(resolved) => Base::Dir(resolved),
            Err(err) => Base::Unknown(format!("after `cd {dir}` ({err})")),
        }
    }

    fn git_programs(&self, base: &Base, location: &programs::GitLocation) -> Vec<String> {
        let from = match base {
            Base::Start => &self.cwd,
            Base::Dir(from) => from,
            // An absolute `-C` says where git runs whatever the folder.
            Base::Unknown(_) if location.dirs.first().is_some_and(|d| d.starts_with('/')) => {
                &self.cwd
            }
            Base::Unknown(why) => {
                return vec![format!(
                    "the repository `git` runs in {why} is not known, nor what its configuration runs"
                )];
            }
        };
        // `-C ~/x`: the home folder, as the shell expands it.
        let mut location = location.clone();
        for dir in &mut location.dirs {
            if let Ok(expanded) = expand_home(dir) {
                *dir = expanded.to_string_lossy().into_owned();
            }
        }
        git::config_programs(from, &location)
    }

    fn list(&self, base: &Base, dir: &str) -> Option<Vec<(String, bool, bool)>> {
        let from = match base {
            Base::Start => &self.cwd,
            Base::Dir(from) => from,
            Base::Unknown(_) => return None,
        };
        if dir.len() > PATH_MAX {
            return None;
        }
        let path = from.join(expand_home(dir).ok()?);
        let entries = std::fs::read_dir(path).ok()?;
        Some(
            entries
                .flatten()
                .map(|entry| {
                    let kind = entry.file_type().ok();
                    (
                        entry.file_name().to_string_lossy().into_owned(),
                        kind.is_some_and(|k| k.is_symlink()),
                        kind.is_some_and(|k| k.is_dir()),
                    )
                })
                .collect(),
        )
    }
}

/// `raw` with a leading `~` or `~/` made the home folder. `~user`, `~+`,
/// `~-` and a `~` without `HOME` are not resolved: they fail closed.
fn expand_home(raw: &str) -> io::Result<PathBuf> {
    let Some(rest) = raw.strip_prefix('~') else {
        return Ok(PathBuf::from(raw));
    };
    if !(rest.is_empty() || rest.starts_with('/')) {
        return Err(io::Error::other(format!(
            "`{}` is a tilde expansion not resolved here",
            raw.split('/').next().unwrap_or(raw)
        )));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| io::Error::other("`~` with no HOME set"))?;
    Ok(PathBuf::from(home).join(rest.trim_start_matches('/')))
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
            // A name under a file (`notes.txt/x`) does not exist either.
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
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
