//! What a repository's own configuration makes `git` run. `git status`,
//! `git diff` and `git log -p` run the programs named by keys such as
//! `core.fsmonitor`, `core.pager`, `diff.<driver>.textconv`,
//! `filter.<driver>.smudge`: a repository written by anyone (a clone's
//! `.git/config` is not, but one the agent wrote, or one outside the
//! workspace named by `git -C`, is) turns a read into code execution.
//!
//! Facts read the configuration files git would read for the repository
//! (its `config`, the worktree's `config.worktree`, and every file they
//! include, conditional includes taken as always included) and say which
//! such key is set; the command is then unprovable, so no allow rule
//! holds and no grant covers it. The user's own configuration
//! (`~/.gitconfig`, `/etc/gitconfig`) is the user's, and is not read.
//! The parse is pure ([`programs_in`]); only [`config_programs`] opens files.

use std::path::{Path, PathBuf};

/// How deep `include.path` is followed (git's own limit is 10).
const MAX_INCLUDE_DEPTH: usize = 10;
/// At most this many bytes of one configuration file are read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

use crate::shell::programs::GitLocation as Location;

/// One key of a configuration file: `section`, `subsection`, `name`
/// (section and name lowercased, as git compares them), and its value
/// (`None` for a bare key, which is boolean true).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    section: String,
    subsection: Option<String>,
    name: String,
    value: Option<String>,
}

impl Entry {
    /// The key as git names it: `diff.pdf.textconv`.
    fn key(&self) -> String {
        match &self.subsection {
            Some(sub) => format!("{}.{sub}.{}", self.section, self.name),
            None => format!("{}.{}", self.section, self.name),
        }
    }

    /// Whether the key names a program git may run.
    fn runs_program(&self) -> bool {
        let sub = self.subsection.is_some();
        let value = self.value.as_deref().unwrap_or("").trim();
        match (self.section.as_str(), self.name.as_str()) {
            // `true` runs git's own daemon; a boolean names no program.
            ("core", "fsmonitor") => !is_boolean(value),
            (
                "core",
                "pager"
                | "sshcommand"
                | "gitproxy"
                | "askpass"
                | "hookspath"
                | "editor"
                | "alternaterefscommand",
            ) => true,
            ("sequence", "editor") | ("diff", "external") | ("interactive", "difffilter") => !sub,
            ("web", "browser") | ("uploadpack", "packobjectshook") => !sub,
            ("pager", _) => true,
            ("alias", _) => value.starts_with('!'),
            ("diff", "textconv" | "command") | ("merge", "driver") => sub,
            ("filter", "clean" | "smudge" | "process") => sub,
            ("difftool" | "mergetool" | "man" | "browser", "cmd" | "path") => sub,
            ("remote", "receivepack" | "uploadpack") => sub,
            ("gpg", "program") | ("credential", "helper") => true,
            _ => false,
        }
    }

    /// Whether the key includes another file: `include.path`,
    /// `includeIf.<condition>.path`.
    fn includes(&self) -> Option<&str> {
        let include = matches!(
            (self.section.as_str(), &self.subsection),
            ("include", None) | ("includeif", Some(_))
        );
        (include && self.name == "path")
            .then_some(self.value.as_deref())
            .flatten()
    }
}

/// Whether a configuration value is a boolean as git reads one.
fn is_boolean(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "" | "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0"
    )
}

/// The keys of a configuration file's text, as git's parser reads them
/// (sections `[name]`, `[name "sub"]` and `[name.sub]`, `key = value`,
/// bare `key`, `#` and `;` comments, quotes, `\` line continuations).
fn entries(text: &str) -> Vec<Entry> {
    let mut found = Vec::new();
    let mut section = String::new();
    let mut subsection: Option<String> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut rest = line.trim_start();
        if let Some(header) = rest.strip_prefix('[') {
            let Some(close) = header.find(']') else {
                continue;
            };
            let inside = &header[..close];
            rest = header[close + 1..].trim_start();
            match inside.split_once(char::is_whitespace) {
                Some((name, sub)) => {
                    section = name.to_ascii_lowercase();
                    let sub = sub.trim().trim_matches('"').replace("\\\"", "\"");
                    subsection = Some(sub.replace("\\\\", "\\"));
                }
                None => match inside.split_once('.') {
                    Some((name, sub)) => {
                        section = name.to_ascii_lowercase();
                        subsection = Some(sub.to_ascii_lowercase());
                    }
                    None => {
                        section = inside.to_ascii_lowercase();
                        subsection = None;
                    }
                },
            }
            // A key may follow the header on the same line.
        }
        if rest.is_empty() || rest.starts_with(['#', ';']) || section.is_empty() {
            continue;
        }
        let (name, raw) = match rest.split_once('=') {
            Some((name, raw)) => (name.trim(), Some(raw.to_owned())),
            None => (rest.trim(), None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            continue;
        }
        let value = raw.map(|mut raw| {
            // A trailing backslash continues the value on the next line.
            while raw.trim_end().ends_with('\\') && !raw.trim_end().ends_with("\\\\") {
                let trimmed = raw.trim_end();
                raw = trimmed[..trimmed.len() - 1].to_owned();
                match lines.next() {
                    Some(next) => raw.push_str(next),
                    None => break,
                }
            }
            value_text(&raw)
        });
        found.push(Entry {
            section: section.clone(),
            subsection: subsection.clone(),
            name: name.to_ascii_lowercase(),
            value,
        });
    }
    found
}

/// A value as git reads it: quotes removed, escapes applied, a comment
/// outside quotes cut, surrounding blanks trimmed.
fn value_text(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

/// The keys of `text` that name a program git runs, and the files it
/// includes (as written).
pub fn programs_in(text: &str) -> (Vec<String>, Vec<String>) {
    let entries = entries(text);
    let programs = entries
        .iter()
        .filter(|e| e.runs_program())
        .map(Entry::key)
        .collect();
    let includes = entries
        .iter()
        .filter_map(|e| e.includes().map(str::to_owned))
        .collect();
    (programs, includes)
}

/// The repository's git folder for a command run in `start` (already
/// joined with its `-C` folders): `git_dir` when given, else the first
/// `.git` (a folder, or a file saying `gitdir: PATH`) from `start` up, or
/// `start` itself when it is a bare repository. `None` outside any.
fn git_dir(start: &Path, git_dir: Option<&str>) -> Option<PathBuf> {
    if let Some(dir) = git_dir {
        return Some(start.join(dir));
    }
    let mut dir = Some(start);
    while let Some(here) = dir {
        let dot_git = here.join(".git");
        if dot_git.is_dir() {
            return Some(dot_git);
        }
        if dot_git.is_file() {
            let text = read(&dot_git)?;
            let target = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
            return Some(here.join(target));
        }
        if here.join("HEAD").is_file()
            && here.join("objects").is_dir()
            && here.join("config").is_file()
        {
            return Some(here.to_owned());
        }
        dir = here.parent();
    }
    None
}

/// At most [`MAX_CONFIG_BYTES`] of `path`, when it is a readable file.
fn read(path: &Path) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(MAX_CONFIG_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

/// What the repository of a `git` command run in `start` would run by
/// its own configuration, one phrase per key: "git config runs a
/// program: `core.fsmonitor` (in `/repo/.git/config`)". Empty outside a
/// repository or when no such key is set.
pub fn config_programs(start: &Path, location: &Location) -> Vec<String> {
    let mut start = start.to_owned();
    for dir in &location.dirs {
        start = start.join(dir);
    }
    let Some(git) = git_dir(&start, location.git_dir.as_deref()) else {
        return Vec::new();
    };
    // A linked worktree's folder names the repository's in `commondir`.
    let common = read(&git.join("commondir"))
        .map(|c| git.join(c.trim()))
        .unwrap_or_else(|| git.clone());
    let mut files = vec![
        common.join("config"),
        common.join("config.worktree"),
        git.join("config.worktree"),
    ];
    files.dedup();
    let mut phrases = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut queue: Vec<(PathBuf, usize)> = files.into_iter().map(|f| (f, 0)).collect();
    while let Some((file, depth)) = queue.pop() {
        if seen.contains(&file) || depth > MAX_INCLUDE_DEPTH {
            continue;
        }
        seen.push(file.clone());
        let Some(text) = read(&file) else { continue };
        let (programs, includes) = programs_in(&text);
        for key in programs {
            phrases.push(format!(
                "git config runs a program: `{key}` (in `{}`)",
                file.display()
            ));
        }
        let folder = file.parent().unwrap_or(Path::new("/")).to_owned();
        for include in includes {
            let path = match include.strip_prefix("~/") {
                Some(rest) => match std::env::var_os("HOME") {
                    Some(home) => PathBuf::from(home).join(rest),
                    None => continue,
                },
                None => folder.join(include),
            };
            queue.push((path, depth + 1));
        }
    }
    phrases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_run_programs_are_found_in_every_spelling() {
        let text = r#"
[core]
	repositoryformatversion = 0
	fsmonitor = "./evil.sh"
[Core]
	Pager = less -R
[diff "pdf"]
	textconv = pdftotext
[filter.lfs]
	smudge = git-lfs smudge -- %f
[alias]
	st = status
	boom = !sh -c 'rm -rf /'
[include]
	path = extra.cfg
[includeIf "gitdir:~/work/"]
	path = ../work.cfg
[remote "origin"]
	url = https://example.com/x.git
[core] editor = vim
"#;
        let (programs, includes) = programs_in(text);
        assert_eq!(
            programs,
            [
                "core.fsmonitor",
                "core.pager",
                "diff.pdf.textconv",
                "filter.lfs.smudge",
                "alias.boom",
                "core.editor"
            ]
        );
        assert_eq!(includes, ["extra.cfg", "../work.cfg"]);
    }

    #[test]
    fn booleans_and_plain_settings_run_nothing() {
        let text = "[core]\n\tfsmonitor = true\n\tbare = false\n\tautocrlf\n[diff]\n\trenames = copies\n[user]\n\tname = A # pager = x\n";
        assert_eq!(programs_in(text).0, Vec::<String>::new());
        let text = "[core]\n\tfsmonitor = false\n[color]\n\tpager = true\n";
        assert_eq!(programs_in(text).0, Vec::<String>::new());
    }

    #[test]
    fn a_value_continued_on_the_next_line_is_one_value() {
        let text = "[core]\n\tsshCommand = ssh \\\n  -i key\n[diff]\n\texternal = x\n";
        assert_eq!(programs_in(text).0, ["core.sshcommand", "diff.external"]);
    }
}
