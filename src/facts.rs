//! What the filesystem says about a request: the canonical workspace root
//! and where each path argument really points. Facts are gathered here,
//! outside the policy, and handed to it; replay hands in recorded facts
//! instead, which is what makes a replayed decision exact.
//!
//! Resolution fails closed: a path that cannot be resolved (a symlink loop,
//! an unreadable link) is reported as outside the workspace.

pub mod git;
pub mod pattern;
mod workspace;

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::request::ToolRequest;

use crate::shell::{self, CommandAnalysis, operands, programs};
pub use workspace::Workspace;

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
    /// What the filesystem makes unprovable about a shell command: a glob
    /// that expands to a word read as an option, a walk that would read
    /// gavel's record, a folder too big to check for symlinks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unprovable: Vec<String>,
    /// For a call through `gavel mcp`: the server, the tool, and the digest
    /// of the tool definition the call ran under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpFacts>,
}

/// What the proxy knows of an MCP call's tool (`gavel mcp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpFacts {
    /// The server's name (`NAME` in `mcp__NAME__TOOL`).
    pub server: String,
    /// The tool's name as the server gave it.
    pub tool: String,
    /// SHA-256 (hex) of the tool's definition as the server last listed
    /// it in this session; absent when it listed none for this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_sha256: Option<String>,
    /// The digest the log held for this tool before this session's
    /// listing changed it: set exactly when the definition changed since
    /// the log last saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_sha256: Option<String>,
}

impl McpFacts {
    /// Whether the tool's definition changed since the log last saw it.
    pub fn definition_changed(&self) -> bool {
        self.previous_sha256.is_some()
    }
}

/// How a request uses a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read: its contents (for a folder, what is below it read as contents).
    Read,
    /// Created, changed or removed.
    Write,
    /// Listed: only its name and metadata are read (`ls`, `stat`, `find`,
    /// the `glob` tool, a shell pattern's expansion), never its contents.
    List,
}

impl Access {
    /// How the use reads in explanations.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "written",
            Access::List => "listed",
        }
    }
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
    /// The folder a relative path was taken from, when a `cd` earlier in
    /// the script moved away from where the request starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// How the request uses the path, when that is known: a file tool's
    /// own, a redirection's, or what a program's model says of its word.
    /// Absent for a word of a program without a model, which may be
    /// either (and for facts recorded before uses were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<Access>,
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
                cwd: None,
                access: tool_access(&request.name),
            })
            .into_iter()
            .collect();
        Self {
            workspace: workspace.to_owned(),
            paths,
            shell: None,
            shell_sha256: None,
            unprovable: Vec::new(),
            mcp: None,
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
                unprovable: self.unprovable.clone(),
                mcp: self.mcp.clone(),
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

/// At most this many paths are resolved for one request; beyond it one
/// unresolved fact says so, and the request can satisfy no allow rule.
pub const MAX_PATHS: usize = 4096;
/// A path longer than this (bytes) cannot be opened (`ENAMETOOLONG`), so it
/// is not resolved; its fact is unresolved, which fails closed.
pub const PATH_MAX: usize = 4096;
/// At most this many matches of one pattern are recorded as facts (symlinks
/// met on the way are always recorded); a pattern matching more is
/// unprovable.
const MAX_PATTERN_FACTS: usize = 256;
/// At most this many folder entries are read to expand the patterns of one
/// request (as many as the `glob` handler walks); beyond it the pattern
/// fails closed.
const MAX_LISTED: usize = 100_000;
/// At most this many distinct folders a script may be in at one point
/// (after several literal `cd`s); beyond it the folder is unknown.
const MAX_CWDS: usize = 8;

/// Where the relative paths of one part of a script start.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Base {
    /// Where the request starts (the workspace's current folder).
    Start,
    /// A folder a literal `cd` went to (absolute, resolved).
    Dir(PathBuf),
    /// After a `cd` whose folder is not known: relative paths are not resolved.
    Unknown(String),
}

/// Turns path text into facts: from the filesystem, or lexically for
/// examples.
trait Resolver {
    /// The fact for `scoped` (the part of `requested` naming a path),
    /// relative paths taken from `base`.
    fn fact(&self, requested: &str, scoped: &str, base: &Base) -> PathFact;
    /// Where `cd dir` from `base` goes.
    fn enter(&self, base: &Base, dir: &str) -> Base;
    /// The names in folder `dir` (relative to `base`), each with whether it
    /// is a symlink and whether it is a folder not reached by a symlink;
    /// `None` when folders are not read (lexical facts).
    fn list(&self, base: &Base, dir: &str) -> Option<Vec<(String, bool, bool)>>;
    /// Whether folders are read at all ([`Resolver::list`] answering
    /// `None` then means the folder is not there).
    fn lists(&self) -> bool {
        true
    }
    /// What the configuration of the repository a `git` command run from
    /// `base` at `location` finds makes git run, one phrase each
    /// ([`git::config_programs`]); lexical facts read no file and find none.
    fn git_programs(&self, base: &Base, location: &programs::GitLocation) -> Vec<String>;
}

/// How a file tool uses its path: `None` for any other tool.
fn tool_access(tool: &str) -> Option<Access> {
    match tool {
        "read_file" => Some(Access::Read),
        // It answers with names that match, never with contents.
        "glob" => Some(Access::List),
        "write_file" | "edit_file" | "apply_patch" => Some(Access::Write),
        _ => None,
    }
}

/// The facts of `request`: a file tool's path argument (for `glob`, what
/// its pattern could reach), or for `bash` the paths of every simple
/// command (see [`collect_shell`]), each resolved from the folder the
/// script is in at that point.
fn gather(workspace: String, request: &ToolRequest, resolver: &impl Resolver) -> Facts {
    let mut collector = Collector::new(resolver, &workspace);
    collector.access = tool_access(&request.name);
    let mut shell_analysis = None;
    if request.name == "bash" {
        if let Some(command) = request.str_arg("command") {
            let analysis = shell::analyze(command);
            collect_shell(&mut collector, &analysis);
            shell_analysis = Some(analysis);
        }
    } else if request.name == "apply_patch" {
        // Every file a patch (or a multi-edit) touches is a path of the call.
        for raw in patch_paths(request) {
            collector.push(resolver.fact(raw, raw, &Base::Start));
        }
    } else if let Some(field) = path_argument(&request.name)
        && let Some(raw) = request.str_arg(field)
    {
        if request.name == "glob" {
            collector.glob(raw);
        } else {
            collector.push(resolver.fact(raw, raw, &Base::Start));
        }
    }
    let (paths, unprovable) = (collector.paths, collector.unprovable);
    Facts {
        workspace,
        paths,
        shell: shell_analysis,
        shell_sha256: None,
        unprovable,
        mcp: None,
    }
}

/// The paths of a parsed script, command by command, following literal
/// `cd`s: a relative path is resolved from every folder the script may be
/// in at that point (a `cd` may fail, or run in a subshell).
///
/// For a program with a model that proves its invocation (no hazard), the
/// paths are exactly the files it reads, each a read, and the folders it
/// walks are checked (symlinks leaving the workspace, gavel's record); for
/// any other, every word may be a path, read or written. Redirections and
/// written operands are always listed with their use; a redirection to a
/// harmless device (`/dev/null`, ...) touches no file and is not listed. A
/// pattern before `--` whose matches start with `-` is unprovable: the
/// program would read the match as an option.
fn collect_shell<R: Resolver>(collector: &mut Collector<'_, R>, analysis: &CommandAnalysis) {
    let mut bases = vec![Base::Start];
    let mut every_base = bases.clone();
    for command in &analysis.commands {
        let reading = match judged(command) {
            Judged::Modelled(reading) => Some(reading),
            Judged::NotModelled | Judged::OutsideModel(_) => None,
        };
        for base in &bases {
            for r in &command.redirects {
                if operands::is_harmless_target(&r.target) {
                    continue;
                }
                collector.access = Some(if r.writes() {
                    Access::Write
                } else {
                    Access::Read
                });
                collector.word(&r.target, base);
            }
            for operand in operands::operands(command) {
                collector.access = Some(if operand.writes {
                    Access::Write
                } else {
                    Access::Read
                });
                collector.word(&operand.path, base);
            }
            match &reading {
                Some(reading) => {
                    collector.access = Some(Access::Read);
                    for path in &reading.reads {
                        collector.word(path, base);
                    }
                    for path in &reading.lists {
                        // `tree` opens each path it is named: a file (not
                        // a folder it lists) is read.
                        let opened = command.program() == "tree"
                            && collector.resolver.lists()
                            && collector.resolver.list(base, path).is_none();
                        collector.access = Some(if opened { Access::Read } else { Access::List });
                        collector.word(path, base);
                    }
                    for walk in &reading.walks {
                        collector.access = Some(if walk.contents {
                            Access::Read
                        } else {
                            Access::List
                        });
                        collector.walk(walk, command.program(), base);
                    }
                }
                None => {
                    collector.access = None;
                    for word in operands::path_words(command) {
                        collector.word(word, base);
                    }
                }
            }
            // Bash expands every pattern, whatever the program makes of the
            // names (`echo -- link_out/*` lists a folder outside); before
            // `--`, a name starting with `-` is read as an option. The
            // expansion itself only lists folders: what the program opens
            // among the names is its own use, above.
            collector.access = Some(Access::List);
            let mut options_end = false;
            for arg in command.args() {
                options_end |= arg == "--";
                if pattern::is_pattern(arg) {
                    collector.word(arg, base);
                    if !options_end {
                        collector.option_like(arg, command.program(), base);
                    }
                }
            }
        }
        // The repository's own configuration may make git run programs.
        if let Some(location) = programs::git_location(&command.words) {
            for base in &bases {
                for why in collector.resolver.git_programs(base, &location) {
                    collector.unprovable(why);
                }
            }
        }
        if let Some(target) = operands::cd_target(command) {
            let mut next = bases.clone();
            for base in &bases {
                let entered = match &target {
                    operands::CdTarget::Literal(dir) => collector.resolver.enter(base, dir),
                    operands::CdTarget::Unknown => {
                        Base::Unknown(format!("after `{}`", command.words.join(" ")))
                    }
                };
                if !next.contains(&entered) {
                    next.push(entered);
                }
            }
            if next.len() > MAX_CWDS {
                next.truncate(MAX_CWDS - 1);
                next.push(Base::Unknown(format!(
                    "after more than {MAX_CWDS} possible folders"
                )));
            }
            for base in &next {
                if !every_base.contains(base) {
                    every_base.push(base.clone());
                }
            }
            bases = next;
        }
    }
    // A bare redirection's place in the script is not recorded: every folder.
    for redirect in &analysis.bare_redirects {
        if operands::is_harmless_target(&redirect.target) {
            continue;
        }
        collector.access = Some(if redirect.writes() {
            Access::Write
        } else {
            Access::Read
        });
        for base in &every_base {
            collector.word(&redirect.target, base);
        }
    }
}

/// How facts take the words of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// A model proves the command a read: only the words it names as files
    /// and folders are paths (listed with their use).
    Modelled(programs::Reading),
    /// No model of the program: any word may be a path, and each is
    /// resolved and judged as one whose use is unknown (`access` absent).
    NotModelled,
    /// A model of the program, but this use is outside it (the phrases say
    /// why): any word may be a path, as for [`Judged::NotModelled`].
    OutsideModel(Vec<String>),
}

/// How [`Workspace::facts`] takes the words of `command`. Written operands
/// and redirections are paths whatever this says.
pub fn judged(command: &shell::SimpleCommand) -> Judged {
    match programs::read(command) {
        Some(reading) if reading.hazards.is_empty() => Judged::Modelled(reading),
        Some(reading) => Judged::OutsideModel(reading.hazards),
        None => Judged::NotModelled,
    }
}

/// Facts being collected, without duplicates, up to [`MAX_PATHS`].
struct Collector<'r, R> {
    resolver: &'r R,
    /// The canonical workspace root.
    workspace: &'r str,
    paths: Vec<PathFact>,
    unprovable: Vec<String>,
    /// The use stamped on the facts pushed now.
    access: Option<Access>,
    /// Words already resolved, with their use: `seen[0]` for those that do
    /// not depend on the folder, `seen[1 + i]` for those taken from `bases[i]`.
    seen: Vec<HashSet<(String, Option<Access>)>>,
    bases: Vec<Base>,
    /// Patterns already expanded, with the folder they were taken from: the
    /// same pattern again reaches nothing more (`ls *.rs *.rs ...`). Each
    /// keeps its first match that starts with `-`, if any.
    patterns: HashMap<(Base, String), Option<String>>,
    /// Walks already checked.
    walked: HashSet<(Base, String, bool)>,
    listed: usize,
    full: bool,
}

impl<'r, R: Resolver> Collector<'r, R> {
    fn new(resolver: &'r R, workspace: &'r str) -> Self {
        Self {
            resolver,
            workspace,
            paths: Vec::new(),
            unprovable: Vec::new(),
            access: None,
            seen: vec![HashSet::new()],
            bases: Vec::new(),
            patterns: HashMap::new(),
            walked: HashSet::new(),
            listed: 0,
            full: false,
        }
    }

    fn push(&mut self, mut fact: PathFact) {
        if self.full {
            return;
        }
        if self.paths.len() >= MAX_PATHS {
            self.full = true;
            self.paths.push(failed(
                "(more paths)",
                format!("the request names more than {MAX_PATHS} paths; the rest are not resolved"),
            ));
            return;
        }
        if fact.error.is_none() {
            fact.access = self.access;
        }
        self.paths.push(fact);
    }

    /// Says once that `why`.
    fn unprovable(&mut self, why: String) {
        if !self.unprovable.contains(&why) && self.unprovable.len() < MAX_UNPROVABLE {
            self.unprovable.push(why);
        }
    }

    /// One path word from `base`: itself, and when it is a pattern, what it
    /// could match.
    fn word(&mut self, word: &str, base: &Base) {
        // `$PWD/src/x` where the folder is known names `src/x` there and
        // nothing else: no expansion is left to doubt.
        if let Some(spelled) = current_folder_spelling(word, base)
            && !has_expansion(&spelled)
            && spelled != word
        {
            self.word(&spelled, base);
            return;
        }
        self.plain(word, base);
        if pattern::is_pattern(word)
            && !self.full
            && !self.patterns.contains_key(&(base.clone(), word.to_owned()))
        {
            let dashed = self.pattern(word, base);
            self.patterns
                .insert((base.clone(), word.to_owned()), dashed);
        }
        if let Some(spelled) = current_folder_spelling(word, base) {
            self.plain(&spelled, base);
        }
    }

    /// Says that `program` would read pattern `word` as an option, when one
    /// of its matches starts with `-`.
    fn option_like(&mut self, word: &str, program: &str, base: &Base) {
        if let Some(Some(dashed)) = self.patterns.get(&(base.clone(), word.to_owned())) {
            let why = format!(
                "the pattern `{}` matches `{}`, which `{program}` would read as an option",
                clip(word),
                clip(dashed)
            );
            self.unprovable(why);
        }
    }

    /// `word` taken literally, once per folder it depends on.
    fn plain(&mut self, word: &str, base: &Base) {
        if self.full || word.is_empty() {
            return;
        }
        let independent = word.starts_with('/') || word.starts_with('~');
        let slot = if independent {
            0
        } else {
            match self.bases.iter().position(|b| b == base) {
                Some(i) => i + 1,
                None => {
                    self.bases.push(base.clone());
                    self.seen.push(HashSet::new());
                    self.bases.len()
                }
            }
        };
        let key = (word.to_owned(), self.access);
        if self.seen[slot].contains(&key) {
            return;
        }
        let fact = self.resolver.fact(word, word, base);
        self.seen[slot].insert(key);
        self.push(fact);
        if has_expansion(word) {
            // Resolved as text above, so deny rules still see `.gavel/$x`;
            // this fact keeps an allow from trusting it.
            self.fail(word, format!("`{}` depends on an expansion", clip(word)));
        }
    }

    fn fail(&mut self, requested: &str, why: String) {
        if self.seen[0].insert((format!("{requested}\0{why}"), None)) {
            self.push(failed(requested, why));
        }
    }

    /// The `glob` tool's pattern: the static prefix of the pattern as
    /// written (the first fact, which reasons name), then what each brace
    /// alternative could reach.
    fn glob(&mut self, raw: &str) {
        let fact = self.resolver.fact(raw, static_prefix(raw), &Base::Start);
        self.push(fact);
        self.pattern(raw, &Base::Start);
    }

    /// What pattern `word` could match: brace alternatives, the literal
    /// folder each starts from, and the names it matches in the folders as
    /// they are now, each resolved (through any symlink on the way), all of
    /// them or the pattern is unprovable. A wildcard that could match `..`, a `..` after a
    /// wildcard, or a pattern too big to expand fails closed. Returns the
    /// first match that starts with `-`.
    fn pattern(&mut self, word: &str, base: &Base) -> Option<String> {
        let alternatives = match pattern::expand_braces(word) {
            Ok(alternatives) => alternatives,
            Err(why) => {
                self.fail(word, format!("the pattern `{}`: {why}", clip(word)));
                return None;
            }
        };
        let mut dashed = None;
        for alternative in alternatives {
            let split = pattern::split(&alternative);
            let mut prefix = String::from(if split.absolute { "/" } else { "" });
            let mut states: Option<Vec<String>> = None;
            for segment in &split.segments {
                match (segment, states.as_mut()) {
                    (pattern::Segment::Literal(text), None) => push_part(&mut prefix, text),
                    (pattern::Segment::Literal(text), Some(states)) => {
                        if text == ".." {
                            self.fail(
                                word,
                                format!(
                                    "the pattern `{}` climbs with `..` after a wildcard",
                                    clip(word)
                                ),
                            );
                            return dashed;
                        }
                        for state in states.iter_mut() {
                            push_part(state, text);
                        }
                    }
                    (wild, current) => {
                        if let pattern::Segment::Wild(text) = wild
                            && pattern::could_be_dotdot(text)
                        {
                            self.fail(
                                word,
                                format!("the pattern `{}` could match `..`", clip(word)),
                            );
                            return dashed;
                        }
                        let from = current.map_or_else(|| vec![prefix.clone()], |s| s.clone());
                        match self.step(wild, &from, base) {
                            Ok(next) => states = Some(next),
                            Err(why) => {
                                self.fail(word, format!("the pattern `{}`: {why}", clip(word)));
                                return dashed;
                            }
                        }
                    }
                }
            }
            // The folder the pattern starts from, or the literal path.
            let start = if prefix.is_empty() {
                "."
            } else {
                prefix.as_str()
            };
            self.plain(start, base);
            // What the pattern matches: the names its program is given.
            if let Some(states) = &states {
                if dashed.is_none() {
                    dashed = states.iter().find(|s| s.starts_with('-')).cloned();
                }
                if states.len() > MAX_PATTERN_FACTS {
                    self.unprovable(format!(
                        "the pattern `{}` matches more than {MAX_PATTERN_FACTS} names",
                        clip(word)
                    ));
                }
                for state in states.iter().take(MAX_PATTERN_FACTS) {
                    self.plain(state, base);
                }
            }
        }
        dashed
    }

    /// The names one wildcard segment (or `**`) matches below each of
    /// `from`. A symlink matched is a name like any other: the next part
    /// reads through it (`**` matches it but does not walk below it, as
    /// node-glob and bash's globstar do), and what the whole pattern
    /// finally matches through it is resolved where it leads.
    fn step(
        &mut self,
        segment: &pattern::Segment,
        from: &[String],
        base: &Base,
    ) -> Result<Vec<String>, String> {
        let matcher = match segment {
            pattern::Segment::Wild(text) => Some(
                pattern::SegmentMatcher::new(text)
                    .ok_or_else(|| "a wildcard part is too long to match".to_owned())?,
            ),
            _ => None,
        };
        let mut next = Vec::new();
        let mut frontier: Vec<String> = from.to_vec();
        if matcher.is_none() {
            // `**` matches no folder at all, too.
            next.extend(from.iter().cloned());
        }
        let mut visited: HashSet<String> = HashSet::new();
        while let Some(dir) = frontier.pop() {
            if !visited.insert(dir.clone()) {
                continue;
            }
            let listing = if dir.is_empty() { "." } else { dir.as_str() };
            let Some(entries) = self.resolver.list(base, listing) else {
                continue;
            };
            self.listed += entries.len();
            if self.listed > MAX_LISTED {
                return Err(format!(
                    "matching reads more than {MAX_LISTED} folder entries"
                ));
            }
            for (name, symlink, folder) in entries {
                let hit = match &matcher {
                    Some(m) => m.matches(&name),
                    None => !name.starts_with('.'),
                };
                if !hit {
                    continue;
                }
                if dir.len() + name.len() >= PATH_MAX {
                    // No such path can be opened (a symlink loop matched
                    // over and over): the names stop here.
                    continue;
                }
                let path = join(&dir, &name);
                if matcher.is_none() && folder && !symlink {
                    frontier.push(path.clone());
                }
                next.push(path);
            }
        }
        Ok(next)
    }

    /// Checks a folder a program walks (its root is already a fact): the
    /// symlinks a following walk meets, each a fact (one leaving the
    /// workspace is outside), and, for a walk that reads contents, whether
    /// it reaches gavel's record in `<workspace>/.gavel` without the
    /// command leaving it out.
    fn walk(&mut self, walk: &programs::Walk, program: &str, base: &Base) {
        if self.full
            || !self
                .walked
                .insert((base.clone(), walk.root.clone(), walk.follows))
        {
            return;
        }
        let root = self.resolver.fact(&walk.root, &walk.root, base);
        // A root outside the workspace is already an outside fact: nothing
        // below it can make the command more allowed, and it is not read.
        let Some(resolved) = root
            .resolved
            .filter(|_| root.error.is_none() && root.inside)
        else {
            return;
        };
        if walk.contents {
            self.record_reach(walk, program, Path::new(&resolved));
        }
        if walk.follows {
            self.follow(walk, &resolved);
        }
    }

    /// Whether a content-reading walk from `root` reads gavel's record.
    fn record_reach(&mut self, walk: &programs::Walk, program: &str, root: &Path) {
        let record = Path::new(self.workspace).join(RECORD_FOLDER);
        if !record.starts_with(root) {
            return;
        }
        if walk.skips_hidden || walk.excludes.iter().any(|g| excludes_record(g)) {
            return;
        }
        let names: Option<Vec<String>> = if self.resolver.lists() {
            match self.resolver.list(&Base::Start, &record.to_string_lossy()) {
                Some(entries) => Some(entries.into_iter().map(|(n, _, _)| n).collect()),
                // No record there: nothing to protect.
                None => return,
            }
        } else {
            None
        };
        if !walk.includes.is_empty()
            && let Some(names) = &names
        {
            let included = |name: &str| walk.includes.iter().any(|g| glob_matches(g, name));
            if !names.iter().any(|n| included(n)) {
                return;
            }
        }
        let hint = match program {
            "rg" => "`-g '!.gavel'`",
            "diff" => "`-x .gavel`",
            _ => "`--exclude-dir=.gavel`",
        };
        self.unprovable(format!(
            "`{program}` would read gavel's record in `{RECORD_FOLDER}/` below `{}` (leave it out: {hint})",
            clip(&walk.root)
        ));
    }

    /// Every symlink a following walk from `root` meets, resolved; folders
    /// inside the workspace reached through one are walked too.
    fn follow(&mut self, walk: &programs::Walk, root: &str) {
        let mut frontier = vec![(root.to_owned(), walk.root.clone())];
        let mut visited: HashSet<String> = HashSet::new();
        while let Some((dir, shown)) = frontier.pop() {
            if !visited.insert(dir.clone()) {
                continue;
            }
            if self.listed > MAX_LISTED {
                self.unprovable(format!(
                    "the folder `{}` holds more than {MAX_LISTED} entries to check for symlinks",
                    clip(&walk.root)
                ));
                return;
            }
            let Some(entries) = self.resolver.list(&Base::Start, &dir) else {
                continue;
            };
            self.listed += entries.len();
            if self.listed > MAX_LISTED {
                self.unprovable(format!(
                    "the folder `{}` holds more than {MAX_LISTED} entries to check for symlinks",
                    clip(&walk.root)
                ));
                return;
            }
            for (name, symlink, folder) in entries {
                if (walk.skips_hidden && name.starts_with('.'))
                    || walk.excludes.iter().any(|g| glob_matches(g, &name))
                {
                    continue;
                }
                let path = join(&dir, &name);
                let shown_path = join(&shown, &name);
                if symlink {
                    let fact = self.resolver.fact(&shown_path, &path, &Base::Start);
                    let into = fact
                        .resolved
                        .clone()
                        .filter(|_| fact.inside && fact.error.is_none());
                    self.push(fact);
                    if let Some(into) = into {
                        frontier.push((into, shown_path));
                    }
                } else if folder {
                    frontier.push((path, shown_path));
                }
            }
        }
    }
}

/// Where gavel keeps its record in a workspace.
pub const RECORD_FOLDER: &str = ".gavel";

/// At most this many phrases of what the filesystem makes unprovable.
const MAX_UNPROVABLE: usize = 8;

/// Whether glob `glob` (as `grep --exclude-dir`, `tree -I` or `rg -g '!…'`
/// write it) leaves out the record folder.
fn excludes_record(glob: &str) -> bool {
    glob.split('|').any(|alternative| {
        let trimmed = alternative
            .trim_start_matches("./")
            .trim_start_matches("**/")
            .trim_end_matches("/**")
            .trim_end_matches("/*")
            .trim_end_matches('/');
        glob_matches(trimmed, RECORD_FOLDER)
    })
}

/// Whether shell-style glob `glob` matches the name `name`.
fn glob_matches(glob: &str, name: &str) -> bool {
    globset::Glob::new(glob).is_ok_and(|g| g.compile_matcher().is_match(name))
}

/// `word` with a leading spelling of the current folder (`~+`, `$PWD`,
/// `${PWD}`, `$(pwd)`, `` `pwd` ``) written as the folder, when the folder
/// is known: `rm $PWD/.gavel/audit.db` names the record.
fn current_folder_spelling(word: &str, base: &Base) -> Option<String> {
    const SPELLINGS: &[&str] = &["~+", "${PWD}", "$PWD", "$(pwd)", "`pwd`", "\"$PWD\""];
    let rest = SPELLINGS.iter().find_map(|s| {
        word.strip_prefix(s)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
    })?;
    let dir = match base {
        Base::Dir(dir) => format!("{}", dir.display()),
        Base::Start => ".".to_owned(),
        Base::Unknown(_) => return None,
    };
    Some(format!("{dir}{rest}"))
}

/// Appends `/name` to `path` in place (no `/` after an empty path or a
/// trailing one), so a pattern of many parts is built in linear time.
fn push_part(path: &mut String, name: &str) {
    if !path.is_empty() && !path.ends_with('/') {
        path.push('/');
    }
    path.push_str(name);
}

/// `dir/name`, without a leading `/` for an empty `dir`.
fn join(dir: &str, name: &str) -> String {
    match dir {
        "" => name.to_owned(),
        d if d.ends_with('/') => format!("{d}{name}"),
        d => format!("{d}/{name}"),
    }
}

/// At most 80 characters of a word, for reasons.
fn clip(word: &str) -> String {
    match word.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &word[..cut]),
        None => word.to_owned(),
    }
}

/// A fact that could not be resolved, and why: it is outside, which fails
/// closed.
fn failed(requested: &str, why: String) -> PathFact {
    // Nothing matches an unresolved path by its text beyond PATH_MAX, so a
    // huge one is recorded cut, not stored a second time.
    let requested = if requested.len() > PATH_MAX {
        clip(requested)
    } else {
        requested.to_owned()
    };
    PathFact {
        requested,
        resolved: None,
        inside: false,
        relative: None,
        error: Some(why),
        cwd: None,
        access: None,
    }
}

/// The workspace root that lexical facts pretend to have.
pub const EXAMPLE_WORKSPACE: &str = "/workspace";

/// Facts worked out from the request text alone, without the filesystem:
/// paths are joined to `/workspace` and `..` applied lexically; `~` counts
/// as outside. Used to check a policy's inline examples at load time.
pub fn lexical_facts(request: &ToolRequest) -> Facts {
    gather(EXAMPLE_WORKSPACE.to_owned(), request, &Lexical)
}

/// [`lexical_facts`] with the paths a policy declares for the tool
/// (`[[paths]]`), for its examples.
pub fn lexical_facts_with(request: &ToolRequest, declared: &[(String, Access)]) -> Facts {
    let mut facts = lexical_facts(request);
    add_declared(&mut facts, request, declared, &Lexical);
    facts
}

/// Adds to `facts` the arguments of `request` that `declared` names as
/// paths: a string is one path, a list of strings one per entry; a
/// declared argument that is present but neither is a path that cannot be
/// resolved (outside, so no allow rule can match it).
fn add_declared(
    facts: &mut Facts,
    request: &ToolRequest,
    declared: &[(String, Access)],
    resolver: &impl Resolver,
) {
    if declared.is_empty() {
        return;
    }
    let workspace = facts.workspace.clone();
    let mut collector = Collector::new(resolver, &workspace);
    for (name, access) in declared {
        collector.access = Some(*access);
        let Some(value) = request.arguments.get(name) else {
            continue;
        };
        let values: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            single => vec![single],
        };
        for value in values {
            match value.as_str() {
                Some(raw) => collector.push(resolver.fact(raw, raw, &Base::Start)),
                None => {
                    let mut fact = failed(
                        &clip(&value.to_string()),
                        format!("argument `{name}` is declared a path but is not a string"),
                    );
                    fact.access = Some(*access);
                    collector.push(fact);
                }
            }
        }
    }
    facts.paths.extend(collector.paths);
}

/// Resolution from text alone.
struct Lexical;

impl Lexical {
    fn start(base: &Base) -> Option<PathBuf> {
        match base {
            Base::Start => Some(PathBuf::from(EXAMPLE_WORKSPACE)),
            Base::Dir(dir) => Some(dir.clone()),
            Base::Unknown(_) => None,
        }
    }

    fn normalize(from: &Path, path: &str) -> PathBuf {
        let mut resolved = PathBuf::from("/");
        for part in from.join(path).components() {
            match part {
                Component::ParentDir => {
                    resolved.pop();
                }
                Component::Normal(name) => resolved.push(name),
                _ => {}
            }
        }
        resolved
    }
}

impl Resolver for Lexical {
    fn fact(&self, raw: &str, scoped: &str, base: &Base) -> PathFact {
        if scoped.starts_with('~') {
            return failed(raw, "`~` is not resolved in examples".to_owned());
        }
        let Some(from) = Lexical::start(base)
            .filter(|_| !scoped.starts_with('/'))
            .or_else(|| scoped.starts_with('/').then(|| PathBuf::from("/")))
        else {
            return unknown_base(raw, base);
        };
        let resolved = Lexical::normalize(&from, scoped);
        let root = Path::new(EXAMPLE_WORKSPACE);
        let relative = resolved
            .strip_prefix(root)
            .ok()
            .map(|rel| match rel.to_string_lossy() {
                r if r.is_empty() => ".".to_owned(),
                r => r.into_owned(),
            });
        PathFact {
            requested: raw.to_owned(),
            resolved: Some(resolved.to_string_lossy().into_owned()),
            inside: relative.is_some(),
            relative,
            error: None,
            cwd: base_shown(base),
            access: None,
        }
    }

    fn enter(&self, base: &Base, dir: &str) -> Base {
        match (Lexical::start(base), dir.starts_with('/')) {
            (_, true) => Base::Dir(Lexical::normalize(Path::new("/"), dir)),
            (Some(from), false) => Base::Dir(Lexical::normalize(&from, dir)),
            (None, false) => base.clone(),
        }
    }

    fn list(&self, _: &Base, _: &str) -> Option<Vec<(String, bool, bool)>> {
        None
    }

    fn lists(&self) -> bool {
        false
    }

    fn git_programs(&self, _: &Base, _: &programs::GitLocation) -> Vec<String> {
        Vec::new()
    }
}

/// The fact of a relative path after a `cd` to an unknown folder.
fn unknown_base(raw: &str, base: &Base) -> PathFact {
    let why = match base {
        Base::Unknown(why) => why.as_str(),
        _ => "",
    };
    failed(
        raw,
        format!("a relative path {why} is taken from an unknown folder"),
    )
}

/// How a fact records the folder its relative path was taken from.
fn base_shown(base: &Base) -> Option<String> {
    match base {
        Base::Dir(dir) => Some(dir.to_string_lossy().into_owned()),
        _ => None,
    }
}

/// The `paths` of an `apply_patch` request: its non-empty strings.
pub fn patch_paths(request: &ToolRequest) -> impl Iterator<Item = &str> {
    request
        .arguments
        .get("paths")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|p| !p.is_empty())
}

/// Tools whose `path` (or `pattern` for `glob`) argument is scoped to the workspace.
pub fn path_argument(tool: &str) -> Option<&'static str> {
    match tool {
        "read_file" | "write_file" | "edit_file" => Some("path"),
        "glob" => Some("pattern"),
        _ => None,
    }
}

/// Whether `word` holds an expansion whose value is not known here
/// (`$name`, `${...}`, `$(...)`, `` `...` ``): the path it names is then
/// not proven, whatever it resolves to as text.
fn has_expansion(word: &str) -> bool {
    word.contains('`')
        || word.as_bytes().windows(2).any(|w| {
            w[0] == b'$' && (w[1].is_ascii_alphanumeric() || b"_{(@*#?!$-".contains(&w[1]))
        })
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

#[cfg(test)]
mod tests;
