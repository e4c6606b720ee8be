//! Rule conditions over parsed shell commands (`command_prefix`,
//! `commands`, `unprovable`). The parse itself is a fact, made by
//! `crate::shell` when facts are gathered; this module only judges it.
//!
//! How a condition over simple commands holds depends on the rule's action:
//! a `deny` or `ask` rule holds when **any** simple command matches (those
//! inside substitutions and `sh -c` scripts included); an `allow` rule holds
//! only when **every** simple command matches, nothing was unprovable, and
//! no redirection writes a file.

use std::collections::HashMap;

use super::Action;
use super::patterns::{Globs, Patterns};
use crate::facts::Facts;
use crate::shell::operands::{is_harmless_target, operands};
use crate::shell::{Redirect, SimpleCommand, programs};

/// One entry of a `commands` list: every field present must hold.
#[derive(Debug, Clone)]
pub(super) struct CommandMatcher {
    /// The words must start with these.
    pub prefix: Option<Vec<String>>,
    /// Globs on the program name (`words[0]`).
    pub program: Option<Patterns<Globs>>,
    /// Each group needs one of its flags among the arguments
    /// (`-r` also matches inside `-rf`; `--force` also as `--force=...`).
    pub flags: Vec<Vec<String>>,
    /// Globs of which some argument must match one.
    pub args: Option<Patterns<Globs>>,
    /// Globs the program's subcommand must match, as the program's model
    /// reads it past the options before it ([`programs::subcommand`]).
    /// Where there is no model, or it cannot read the words, a deny or ask
    /// rule matches when any argument matches (it cannot be dodged by an
    /// option the model does not know), an allow rule only when the first
    /// argument does.
    pub subcommand: Option<Patterns<Globs>>,
    /// Globs of which some written redirection target must match one.
    pub redirect: Option<Patterns<Globs>>,
    /// Globs of which some file the command writes (a written redirection
    /// target or a written operand such as `dd of=`, `tee FILE`, `cp`'s
    /// destination), as written or as resolved, must match one. Writes to
    /// the harmless devices (`/dev/null`, ...) are not file writes.
    pub writes: Option<Patterns<Globs>>,
    /// How the entry reads, for explanations.
    pub shown: String,
}

/// Whether a redirection writes something other than a harmless device
/// (only the exact spellings `/dev/null`, `/dev/fd/N`, ... are harmless).
fn writes_a_file(redirect: &Redirect) -> bool {
    redirect.writes() && !is_harmless_target(&redirect.target)
}

/// The files `command` writes: written redirection targets and written
/// operands, harmless devices left out.
fn written_files(command: &SimpleCommand) -> Vec<String> {
    let mut files: Vec<String> = command
        .redirects
        .iter()
        .filter(|r| writes_a_file(r))
        .map(|r| r.target.clone())
        .collect();
    files.extend(
        operands(command)
            .into_iter()
            .filter(|o| o.writes && !is_harmless_target(&o.path))
            .map(|o| o.path),
    );
    files
}

/// Where each path text of the facts resolved (one text may resolve in
/// several folders), looked up once per path instead of scanning all facts.
pub(super) struct Resolutions<'a>(HashMap<&'a str, Vec<&'a str>>);

impl<'a> Resolutions<'a> {
    pub(super) fn new(facts: &'a Facts) -> Self {
        let mut map: HashMap<&str, Vec<&str>> = HashMap::new();
        for fact in &facts.paths {
            if let Some(resolved) = fact.resolved.as_deref() {
                map.entry(fact.requested.as_str())
                    .or_default()
                    .push(resolved);
            }
        }
        Self(map)
    }

    /// Whether `text`, or any resolution of it, matches `globs`.
    fn matches(&self, globs: &Patterns<Globs>, text: &str) -> bool {
        globs.is_match(text)
            || self
                .0
                .get(text)
                .is_some_and(|all| all.iter().any(|resolved| globs.is_match(resolved)))
    }
}

impl CommandMatcher {
    /// The matcher's glob lists.
    pub(super) fn glob_lists(&self) -> impl Iterator<Item = &Patterns<Globs>> {
        [
            &self.program,
            &self.args,
            &self.subcommand,
            &self.redirect,
            &self.writes,
        ]
        .into_iter()
        .flatten()
    }

    fn matches(
        &self,
        command: &SimpleCommand,
        resolutions: &Resolutions<'_>,
        loose_flags: bool,
    ) -> bool {
        if let Some(prefix) = &self.prefix
            && !command.words.starts_with(prefix)
            && !programs::canonical(&command.words).is_some_and(|w| w.starts_with(prefix))
        {
            return false;
        }
        if let Some(program) = &self.program
            && !program.is_match(command.program())
        {
            return false;
        }
        if !self.flags.iter().all(|group| {
            group
                .iter()
                .any(|flag| has_flag(command.args(), flag, loose_flags))
        }) {
            return false;
        }
        if let Some(args) = &self.args
            && !command.args().iter().any(|a| args.is_match(a))
        {
            return false;
        }
        if let Some(subcommands) = &self.subcommand
            && !subcommand_matches(subcommands, command, loose_flags)
        {
            return false;
        }
        if let Some(targets) = &self.redirect {
            let hit = command
                .redirects
                .iter()
                .filter(|r| r.writes())
                .any(|r| resolutions.matches(targets, &r.target));
            if !hit {
                return false;
            }
        }
        if let Some(targets) = &self.writes
            && !written_files(command)
                .iter()
                .any(|file| resolutions.matches(targets, file))
        {
            return false;
        }
        true
    }
}

impl CommandMatcher {
    /// Whether every simple command `other` matches, this entry provably
    /// matches too (under the same or a looser quantifier), from the
    /// entries as written: each condition of this entry is one of
    /// `other`'s, or implied by one (a shorter prefix, fewer globs or
    /// flags). `["cat"]` covers `["cat", "notes.txt"]`.
    pub(super) fn covers(&self, other: &CommandMatcher) -> bool {
        let globs =
            |mine: &Option<Patterns<Globs>>, theirs: &Option<Patterns<Globs>>| match (mine, theirs)
            {
                (None, _) => true,
                (Some(mine), Some(theirs)) => mine.covers(theirs),
                (Some(_), None) => false,
            };
        let prefix = match (&self.prefix, &other.prefix) {
            (None, _) => true,
            (Some(mine), Some(theirs)) => theirs.starts_with(mine),
            (Some(_), None) => false,
        };
        // A program glob is implied by the other's program globs, or by the
        // first word of its prefix.
        let program = match (&self.program, &other.program, &other.prefix) {
            (None, _, _) => true,
            (Some(mine), Some(theirs), _) => mine.covers(theirs),
            (Some(mine), None, Some(prefix)) => prefix.first().is_some_and(|p| mine.is_match(p)),
            (Some(_), None, None) => false,
        };
        // Each group of mine needs a group of theirs whose every flag is in it.
        let flags = self.flags.iter().all(|group| {
            other
                .flags
                .iter()
                .any(|theirs| theirs.iter().all(|f| group.contains(f)))
        });
        prefix
            && program
            && flags
            && globs(&self.args, &other.args)
            && globs(&self.subcommand, &other.subcommand)
            && globs(&self.redirect, &other.redirect)
            && globs(&self.writes, &other.writes)
    }

    /// The entry as a policy file writes it: `{ program = ["rm"], flags = [...] }`,
    /// or a `command_prefix` entry's word list.
    pub(super) fn written(&self, prefix_entry: bool) -> String {
        let quote = |list: &[String]| {
            let items: Vec<String> = list
                .iter()
                .map(|s| serde_json::Value::String(s.clone()).to_string())
                .collect();
            format!("[{}]", items.join(", "))
        };
        if prefix_entry {
            return quote(self.prefix.as_deref().unwrap_or_default());
        }
        let mut fields = Vec::new();
        if let Some(prefix) = &self.prefix {
            fields.push(format!("prefix = {}", quote(prefix)));
        }
        if let Some(program) = &self.program {
            fields.push(format!("program = {}", quote(&program.written)));
        }
        if !self.flags.is_empty() {
            let groups: Vec<String> = self.flags.iter().map(|g| quote(g)).collect();
            fields.push(format!("flags = [{}]", groups.join(", ")));
        }
        for (key, globs) in [
            ("args", &self.args),
            ("subcommand", &self.subcommand),
            ("redirect", &self.redirect),
            ("writes", &self.writes),
        ] {
            if let Some(globs) = globs {
                fields.push(format!("{key} = {}", quote(&globs.written)));
            }
        }
        format!("{{ {} }}", fields.join(", "))
    }
}

/// One simple command (or the redirections carried by none) and the index
/// of the entry it matched.
pub(super) struct Hit {
    pub command: String,
    pub entry: usize,
}

/// How a simple command reads in an explanation: its words, then its redirections.
pub(crate) fn shown_command(command: &SimpleCommand) -> String {
    let mut text = command.words.join(" ");
    for r in &command.redirects {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&format!("{} {}", r.op, r.target));
    }
    text
}

/// The simple commands that matched an entry of `matchers`, with the first
/// entry each matched, under the quantifier of `action` (for a deny or ask,
/// the commands that made the rule hold; for an allow, every command). Call
/// it for a rule that matched.
pub(super) fn hits(matchers: &[CommandMatcher], action: Action, facts: &Facts) -> Vec<Hit> {
    let Some(shell) = &facts.shell else {
        return Vec::new();
    };
    let loose = action != Action::Allow;
    let resolutions = Resolutions::new(facts);
    let mut hits: Vec<Hit> = shell
        .commands
        .iter()
        .filter_map(|command| {
            let entry = matchers
                .iter()
                .position(|m| m.matches(command, &resolutions, loose))?;
            Some(Hit {
                command: shown_command(command),
                entry,
            })
        })
        .collect();
    if action != Action::Allow && !shell.bare_redirects.is_empty() {
        let bare = SimpleCommand {
            words: Vec::new(),
            redirects: shell.bare_redirects.clone(),
            assignments: Vec::new(),
            path: None,
        };
        let entry = matchers.iter().position(|m| {
            m.prefix.is_none()
                && m.program.is_none()
                && m.flags.is_empty()
                && m.args.is_none()
                && m.subcommand.is_none()
                && (m.redirect.is_some() || m.writes.is_some())
                && m.matches(&bare, &resolutions, loose)
        });
        if let Some(entry) = entry {
            hits.push(Hit {
                command: shown_command(&bare),
                entry,
            });
        }
    }
    hits
}

/// Whether `command`'s subcommand matches `globs` (see
/// [`CommandMatcher::subcommand`]); `loose` for deny and ask rules.
fn subcommand_matches(globs: &Patterns<Globs>, command: &SimpleCommand, loose: bool) -> bool {
    match programs::subcommand(&command.words) {
        Some(programs::Subcommand::Named(word)) => globs.is_match(word),
        Some(programs::Subcommand::Absent) => false,
        Some(programs::Subcommand::Unreadable) | None if loose => {
            command.args().iter().any(|a| globs.is_match(a))
        }
        Some(programs::Subcommand::Unreadable) => false,
        None => command
            .args()
            .first()
            .is_some_and(|a| !a.starts_with('-') && globs.is_match(a)),
    }
}

/// Whether `flag` is among `args`, before any `--` that ends the options.
/// With `loose`, a long flag also matches an abbreviation of it (`--recu`
/// for `--recursive`), as GNU getopt accepts: deny and ask rules must not
/// be dodged that way.
fn has_flag(args: &[String], flag: &str, loose: bool) -> bool {
    let long = flag.starts_with("--");
    let short = (!long && flag.len() == 2 && flag.starts_with('-')).then(|| &flag[1..]);
    for arg in args {
        if arg == "--" {
            return false;
        }
        if long {
            let name = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n);
            let abbreviated =
                loose && name.len() > 2 && name.starts_with("--") && flag.starts_with(name);
            if name == flag || abbreviated {
                return true;
            }
        } else if let Some(letter) = short {
            if arg.len() > 1
                && arg.starts_with('-')
                && !arg.starts_with("--")
                && arg[1..].contains(letter)
            {
                return true;
            }
        } else if arg == flag {
            return true;
        }
    }
    false
}

/// Why a shell condition did not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ShellMiss {
    /// The request is not a parsed shell command.
    NotShell,
    /// No simple command matched (deny/ask).
    NoneMatched,
    /// This simple command matched no entry (allow).
    Unmatched(usize),
    /// Something in the command could not be proven (allow).
    Unprovable,
    /// This command's redirection writes a file (allow).
    WritesFile(usize, usize),
    /// A redirection carried by no command writes a file (allow).
    BareRedirect(usize),
    /// This command writes a file through an argument (allow): `tee f`,
    /// `sort -o f`, `git diff --output=f`, `sed -i`, ...
    WritesOperand(usize),
    /// This command sets variables or names its program by a path (allow).
    Unpinned(usize),
    /// No simple command at all (allow).
    Empty,
    /// `unprovable = true|false` did not hold.
    ProvabilityDiffers,
}

/// Checks `matchers` against the parsed command in `facts` with the quantifier `action` calls for.
pub(super) fn check(
    matchers: &[CommandMatcher],
    action: Action,
    facts: &Facts,
    held: Option<Held>,
) -> Result<(), ShellMiss> {
    let Some(shell) = &facts.shell else {
        return Err(ShellMiss::NotShell);
    };
    let loose = action != Action::Allow;
    let resolutions = Resolutions::new(facts);
    let matches = |c: &SimpleCommand| matchers.iter().any(|m| m.matches(c, &resolutions, loose));
    match action {
        Action::Deny | Action::Ask => {
            // Redirections carried by no command are judged as a command
            // with no words, so that `redirect` entries still see them.
            let bare = SimpleCommand {
                words: Vec::new(),
                redirects: shell.bare_redirects.clone(),
                assignments: Vec::new(),
                path: None,
            };
            let bare_hit = !bare.redirects.is_empty()
                && matchers
                    .iter()
                    .filter(|m| m.prefix.is_none() && m.program.is_none())
                    .filter(|m| m.flags.is_empty() && m.args.is_none())
                    .filter(|m| m.subcommand.is_none())
                    .filter(|m| m.redirect.is_some() || m.writes.is_some())
                    .any(|m| m.matches(&bare, &resolutions, loose));
            if bare_hit || shell.commands.iter().any(matches) {
                Ok(())
            } else {
                Err(ShellMiss::NoneMatched)
            }
        }
        Action::Allow => {
            if shell.commands.is_empty() {
                return Err(ShellMiss::Empty);
            }
            let unproven = match held {
                None => has_unproven(facts),
                // The kernel holds what the models cannot prove; the
                // text must still be read in full.
                Some(Held::Writes) => !shell.unprovable.is_empty(),
                // Read-only holds an `xargs` pipeline (its appended words
                // cannot write or reach out); what a program's model says
                // runs, writes or is not known is still asked (it would
                // mostly fail).
                Some(Held::ReadOnly) => {
                    shell
                        .unprovable
                        .iter()
                        .any(|p| p != crate::shell::XARGS_INPUT)
                        || !facts.unprovable.is_empty()
                        || shell
                            .commands
                            .iter()
                            .any(|c| programs::read(c).is_some_and(|r| !r.hazards.is_empty()))
                }
            };
            if unproven {
                return Err(ShellMiss::Unprovable);
            }
            // A write the text names is still proven or asked, whatever
            // the sandbox: a contained rule runs a build's own writes, not
            // the agent's (`echo x > src/main.rs`).
            if let Some(r) = shell.bare_redirects.iter().position(writes_a_file) {
                return Err(ShellMiss::BareRedirect(r));
            }
            for (i, command) in shell.commands.iter().enumerate() {
                if let Some(r) = command.redirects.iter().position(writes_a_file) {
                    return Err(ShellMiss::WritesFile(i, r));
                }
                if operands(command)
                    .iter()
                    .any(|o| o.writes && !is_harmless_target(&o.path))
                {
                    return Err(ShellMiss::WritesOperand(i));
                }
                // `PATH=x ls` or `./ls` may run something other than `ls`.
                if !command.assignments.is_empty() || command.path.is_some() {
                    return Err(ShellMiss::Unpinned(i));
                }
                if !matches(command) {
                    return Err(ShellMiss::Unmatched(i));
                }
            }
            Ok(())
        }
    }
}

/// What an allow rule's sandbox holds a command to, so that the rule need
/// not prove it: when the profile writes, what the programs' models cannot
/// prove (an option that runs or writes, an unproven walk); the writes the
/// command's text names (redirections, written operands) are still judged
/// as without a sandbox. A profile that writes nothing holds an `xargs` pipeline
/// and programs without a model, and still needs the command's text read
/// in full, no hazard a model names and no proven write: those would
/// mostly fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    ReadOnly,
    Writes,
}

/// Checks `unprovable = wanted`.
pub(super) fn check_unprovable(wanted: bool, facts: &Facts) -> Result<(), ShellMiss> {
    match &facts.shell {
        None => Err(ShellMiss::NotShell),
        Some(_) if has_unproven(facts) == wanted => Ok(()),
        Some(_) => Err(ShellMiss::ProvabilityDiffers),
    }
}

/// Everything that keeps a shell command from being proven, as phrases:
/// what the shell reader could not read, what a program's model says is
/// more than a read (an option that runs, writes or reads a list of files,
/// or is not known), and what the filesystem adds (a glob read as an
/// option, a walk into gavel's record).
pub(crate) fn unproven(facts: &Facts) -> Vec<String> {
    let Some(shell) = &facts.shell else {
        return Vec::new();
    };
    let mut all = shell.unprovable.clone();
    for command in &shell.commands {
        if let Some(reading) = programs::read(command) {
            all.extend(reading.hazards);
        }
    }
    all.extend(facts.unprovable.iter().cloned());
    all
}

/// Whether [`unproven`] would say anything, without building its phrases
/// when the reader already could not read the command.
fn has_unproven(facts: &Facts) -> bool {
    let Some(shell) = &facts.shell else {
        return false;
    };
    !shell.unprovable.is_empty()
        || !facts.unprovable.is_empty()
        || shell
            .commands
            .iter()
            .any(|c| programs::read(c).is_some_and(|r| !r.hazards.is_empty()))
}

impl ShellMiss {
    pub(super) fn describe(self, matchers: &[CommandMatcher], facts: &Facts) -> String {
        let shell = facts.shell.as_ref();
        let command = |i: usize| {
            shell
                .and_then(|s| s.commands.get(i))
                .map_or_else(String::new, |c| c.words.join(" "))
        };
        let entries = matchers
            .iter()
            .map(|m| m.shown.as_str())
            .collect::<Vec<_>>()
            .join(" | ");
        match self {
            ShellMiss::NotShell => "the request is not a shell command".to_owned(),
            ShellMiss::NoneMatched => format!("no simple command matches [{entries}]"),
            ShellMiss::Unmatched(i) => {
                format!(
                    "simple command `{}` matches none of [{entries}]",
                    command(i)
                )
            }
            ShellMiss::Unprovable => format!("cannot prove what runs: {}", unprovable_text(facts)),
            ShellMiss::WritesFile(i, r) => {
                let target = shell
                    .and_then(|s| s.commands.get(i))
                    .and_then(|c| c.redirects.get(r))
                    .map_or_else(String::new, |r| format!("{} {}", r.op, r.target));
                format!("`{}` redirects into a file (`{target}`)", command(i))
            }
            ShellMiss::BareRedirect(r) => {
                let target = shell
                    .and_then(|s| s.bare_redirects.get(r))
                    .map_or_else(String::new, |r| format!("{} {}", r.op, r.target));
                format!("a redirection outside any command writes a file (`{target}`)")
            }
            ShellMiss::WritesOperand(i) => {
                let files = shell
                    .and_then(|s| s.commands.get(i))
                    .map(written_files)
                    .unwrap_or_default();
                format!(
                    "`{}` writes a file through its arguments (`{}`)",
                    command(i),
                    files.join("`, `")
                )
            }
            ShellMiss::Unpinned(i) => format!(
                "`{}` sets variables or names its program by a path, so what runs is not pinned down",
                command(i)
            ),
            ShellMiss::Empty => "the command runs nothing".to_owned(),
            ShellMiss::ProvabilityDiffers => match shell {
                Some(_) if !has_unproven(facts) => {
                    "everything in the command is understood".to_owned()
                }
                _ => format!(
                    "the command is not fully understood: {}",
                    unprovable_text(facts)
                ),
            },
        }
    }
}

/// What could not be proven, for reasons and explanations.
pub(crate) fn unprovable_text(facts: &Facts) -> String {
    unproven(facts).join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn flags_match_combined_separate_and_long_forms() {
        let cases: [&[&str]; 5] = [
            &["-rf", "x"],
            &["-r", "-f", "x"],
            &["-f", "-R", "x"],
            &["--recursive", "--force", "x"],
            &["-fr"],
        ];
        for args in cases {
            let args = words(args);
            let recursive = ["-r", "-R", "--recursive"]
                .iter()
                .any(|f| has_flag(&args, f, false));
            let force = ["-f", "--force"].iter().any(|f| has_flag(&args, f, false));
            assert!(recursive && force, "{args:?}");
        }
        assert!(
            !has_flag(&words(&["--", "-rf"]), "-r", true),
            "after `--` nothing is a flag"
        );
        assert!(
            !has_flag(&words(&["--from"]), "-f", true),
            "long options are not short flags"
        );
        assert!(has_flag(&words(&["--force=yes"]), "--force", false));
        assert!(
            has_flag(&words(&["--recu"]), "--recursive", true),
            "GNU abbreviations, for deny"
        );
        assert!(
            !has_flag(&words(&["--recu"]), "--recursive", false),
            "but never for allow"
        );
        assert!(!has_flag(&words(&["--"]), "--force", true));
    }
}
