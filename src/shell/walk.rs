//! The walk over a tree-sitter-bash syntax tree.
//!
//! The walk keeps its own stack of tasks, so the nesting depth of the input
//! (`((((...` a hundred thousand times) never becomes recursion depth here.
//! The only recursion is into `sh -c` and `eval` scripts, capped at
//! [`MAX_NESTING`].

use std::collections::HashSet;
use std::ops::ControlFlow;

use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

use super::loops;
use super::strict;
use super::word::{
    Binding, Bound, Item, Known, Word, lookup, node_text, slice, snippet, unescape_backticks, word,
};
use super::wrappers::{self, SHELLS, ShellRun};
use super::{CommandAnalysis, MAX_NESTING, Redirect, SimpleCommand};

/// At most this many unprovable phrases are listed; one more says the rest
/// were left out.
const MAX_NOTES: usize = 32;

/// Redirections copied onto commands inside a redirected group
/// (`{ a; b; } > f`) are bounded, so that deeply nested redirected groups
/// cannot make the walk quadratic.
const MAX_ATTACH_WORK: usize = 1 << 20;

/// Bytes of expansion and substitution text copied verbatim into words,
/// on top of the script's own length (see [`word`]).
const VERBATIM_BUDGET: usize = 64 * 1024;

/// Parses and analyses `script`, which sits `depth` scripts deep
/// (0 for the top level).
pub(super) fn analyze_nested(script: &str, depth: usize) -> CommandAnalysis {
    analyze_in_parts(script, depth, MIN_PART)
}

/// A script longer than this is parsed in parts of at least this many
/// bytes, cut where the strict reader proves the top level is cut (see
/// [`strict::read_with_splits`]). tree-sitter's parse of one long list or
/// pipeline keeps a parser stack entry per element (a 1 MiB pipeline took
/// 1.6 s and 400 MB); a part at a time, its trees never hold more than a
/// part, and each is dropped once walked. A script parsed in parts is
/// unprovable: the cuts are the strict reader's, so tree-sitter can no
/// longer disagree with it about them. Deny rules still see every command.
const MIN_PART: usize = 16 * 1024;

/// [`analyze_nested`], parsing in parts of at least `min_part` bytes.
pub(super) fn analyze_in_parts(script: &str, depth: usize, min_part: usize) -> CommandAnalysis {
    // Loops are expanded within one budget for the script and every
    // script nested in it (see `loops.rs`).
    loops::scope(|| read_in_parts(script, depth, min_part))
}

fn read_in_parts(script: &str, depth: usize, min_part: usize) -> CommandAnalysis {
    count_work(script.len());
    let mut walker = Walker {
        src: script,
        depth,
        commands: Vec::new(),
        notes: Vec::new(),
        parse_error_noted: false,
        unjudgeable: None,
        attach_budget: MAX_ATTACH_WORK,
        verbatim_budget: VERBATIM_BUDGET.saturating_add(script.len()),
        raw: Vec::new(),
        bare: Vec::new(),
        scanned_until: 0,
        arith_until: 0,
        extra_args: None,
        coproc_reread: false,
        read_ranges: Vec::new(),
        parsed_substitutions: Vec::new(),
        evaluates_text: evaluates_text_as_code(script),
        seen_hidden: HashSet::new(),
        command_assignments: HashSet::new(),
        spare_stack: Vec::new(),
        compare: true,
        joined_lines: Vec::new(),
        loops: Vec::new(),
        bindings: Vec::new(),
        expanded: 0,
        stash: Vec::new(),
        shadow: Vec::new(),
        shadow_bare: Vec::new(),
        declares: None,
    };
    if script.contains('\0') {
        walker.note("NUL byte in the command".to_string());
    }
    let min = (script.len() > min_part).then_some(min_part);
    let (mut reading, refused, mut splits) = strict::read_with_splits(script, min);
    let mut from = 0;
    if min.is_some() {
        // A long script is unprovable whatever the parse says (see
        // [`MIN_PART`]), so tree-sitter's second reading is not needed
        // where the strict reader, which reads what bash reads, read it
        // all: the whole script, or every part before the last cut
        // ahead of the construct it refused. Only the rest is parsed.
        let strict_until = match (&refused, splits.last()) {
            (None, _) => Some((script.len(), reading.commands.len(), reading.bare.len())),
            // Bash runs nothing past where the script stops making sense,
            // and nothing reads past substitutions nested too deep.
            (Some(phrase), _) if reading.unfinished || reading.too_deep => {
                walker.note(phrase.clone());
                if reading.too_deep {
                    walker.unjudgeable = Some(phrase.clone());
                }
                Some((script.len(), reading.commands.len(), reading.bare.len()))
            }
            (Some(_), Some(cut)) => Some((cut.next, cut.commands, cut.bare)),
            (Some(_), None) => None,
        };
        if let Some((next, commands, bare)) = strict_until {
            // Noted first, so that the phrase is listed whatever follows.
            walker.note(format!(
                "a script of more than {} KiB is read without a second opinion",
                min_part / 1024
            ));
            let rest = strict::Reading {
                commands: reading.commands.split_off(commands),
                bare: reading.bare.split_off(bare),
                ..Default::default()
            };
            let alone = std::mem::replace(&mut reading, rest);
            // The substitutions it read were analysed: the search for
            // text evaluated as code looks only inside them.
            walker
                .parsed_substitutions
                .extend(alone.substitutions.iter().filter(|&&at| at < next));
            for &(start, end) in alone.backticks.iter().filter(|r| r.0 < next) {
                walker.mark_read(start, end);
            }
            walker.strict_alone(alone);
            from = next;
            splits.clear();
        }
    }
    if from < script.len() || script.is_empty() {
        let bytes = parser_bytes(script);
        let mut budget = Budget::new(script.len() - from);
        let mut cursor = Position::default();
        let mut start = from;
        let parts = splits
            .iter()
            .map(|s| (s.end, s.next))
            .chain(std::iter::once((script.len(), script.len())));
        for (end, next) in parts {
            let range = if min.is_some() {
                Some((cursor.at(script, start), cursor.at(script, end)))
            } else {
                None
            };
            start = next;
            match parse(&bytes, range, &mut budget) {
                Ok(tree) => {
                    walker.walk(tree.root_node());
                    walker.extra_args = None;
                    walker.command_assignments.clear();
                }
                Err(ParseFailure::Unavailable) => {
                    walker.note("the shell parser could not run".to_string());
                    return walker.finish();
                }
                Err(ParseFailure::TooCostly(prefix)) => {
                    walker
                        .note("parse error: the script is too costly to parse in full".to_string());
                    if let Some(tree) = prefix {
                        walker.walk(tree.root_node());
                    }
                    return walker.finish();
                }
            }
        }
        if min.is_none() && refused.is_some() {
            // The subset for an allow is refused; for the deny side, the
            // reading a long script gets goes on past it (substitutions,
            // `case`, `[[`, heredoc bodies, `for` headers, read as bash
            // reads them), and every command it finds is seen. It reads the
            // same as the strict reading up to the refusal.
            reading = strict::read_with_splits(script, Some(usize::MAX)).0;
        }
        walker.second_opinion(reading, refused);
    }
    walker.text_evaluated_as_code();
    if !splits.is_empty() {
        // Each part was parsed on its own, cut where the strict reader
        // says the top level is cut: tree-sitter could no longer disagree
        // about the cuts, so the two readings are not independent there.
        walker.note(format!(
            "a script of more than {} KiB is parsed in parts",
            min_part / 1024
        ));
    }
    walker.finish()
}

/// A byte offset with its row and column, as tree-sitter's ranges want them.
#[derive(Debug, Clone, Copy, Default)]
struct Position {
    byte: usize,
    row: usize,
    column: usize,
}

impl Position {
    /// Moves forward to `byte` (never back) and returns the position there.
    fn at(&mut self, src: &str, byte: usize) -> Position {
        let byte = byte.max(self.byte);
        let passed = src.as_bytes().get(self.byte..byte).unwrap_or_default();
        match passed.iter().rposition(|&b| b == b'\n') {
            Some(last) => {
                self.row += passed.iter().filter(|&&b| b == b'\n').count();
                self.column = passed.len() - last - 1;
            }
            None => self.column += passed.len(),
        }
        self.byte = byte;
        *self
    }
}

/// Why a script could not be parsed at all.
#[derive(Debug)]
enum ParseFailure {
    /// The grammar's ABI is not supported by the tree-sitter runtime: a
    /// build-time mismatch that the tests would catch.
    Unavailable,
    /// Parsing this input would cost more than [`parse_budget`] or
    /// [`read_budget`]; the tree of the prefix that was parsed, if any.
    TooCostly(Option<Tree>),
}

/// How many progress checks (one every 100 parser operations) a script of
/// `len` bytes may take. Ordinary scripts, even malformed ones, need well
/// under one check per byte; some pathological inputs (a long run of `<<`)
/// send tree-sitter's error recovery into quadratic time, and are cut off.
/// Counting operations, not time, keeps the result the same on every
/// machine.
fn parse_budget(len: usize) -> usize {
    len.saturating_mul(PARSE_CHECKS_PER_BYTE)
        .saturating_add(PARSE_CHECKS_BASE)
}

const PARSE_CHECKS_PER_BYTE: usize = 2;
const PARSE_CHECKS_BASE: usize = 10_000;

/// What parsing one script may still cost, over all its parts: progress
/// checks ([`parse_budget`]) and bytes read ([`read_budget`]).
struct Budget {
    checks: usize,
    read: usize,
    checks_used: usize,
    read_used: usize,
}

impl Budget {
    fn new(len: usize) -> Self {
        Self {
            checks: parse_budget(len),
            read: read_budget(len),
            checks_used: 0,
            read_used: 0,
        }
    }
}

/// Parses `bytes` (see [`parser_bytes`]), or only the part between two
/// positions (node offsets stay those of the whole script), within
/// `budget`.
fn parse(
    bytes: &[u8],
    range: Option<(Position, Position)>,
    budget: &mut Budget,
) -> Result<Tree, ParseFailure> {
    // A parser is built once per thread: nested scripts (substitutions
    // recovered from expansions and heredoc bodies) can be many and small.
    thread_local! {
        static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
    }
    let cached = PARSER.with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.take()));
    let mut parser = match cached {
        Some(parser) => parser,
        None => {
            let mut parser = Parser::new();
            if parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .is_err()
            {
                return Err(ParseFailure::Unavailable);
            }
            parser
        }
    };
    let result = match range {
        Some((start, end)) => {
            let point = |p: Position| tree_sitter::Point::new(p.row, p.column);
            let part = tree_sitter::Range {
                start_byte: start.byte,
                end_byte: end.byte,
                start_point: point(start),
                end_point: point(end),
            };
            // One range, ordered: tree-sitter accepts it.
            match parser.set_included_ranges(&[part]) {
                Ok(()) => parse_with(&mut parser, bytes, budget),
                Err(_) => Err(ParseFailure::Unavailable),
            }
        }
        None => parse_with(&mut parser, bytes, budget),
    };
    parser.reset();
    if range.is_some() {
        // Back to the whole input for the next script (an empty list means
        // the whole document, and is always accepted).
        let _ = parser.set_included_ranges(&[]);
    }
    PARSER.with(|p| {
        if let Ok(mut slot) = p.try_borrow_mut() {
            *slot = Some(parser);
        }
    });
    result
}

fn parse_with(
    parser: &mut Parser,
    bytes: &[u8],
    budget: &mut Budget,
) -> Result<Tree, ParseFailure> {
    let checks_limit = budget.checks;
    let checks = &mut budget.checks_used;
    let mut progress = |_: &ParseState| {
        *checks += 1;
        if *checks > checks_limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let read_limit = budget.read;
    let served = &mut budget.read_used;
    let tree = parser.parse_with_options(
        &mut |at, _| {
            if *served > read_limit {
                // Ends the input early: the parse completes on a prefix.
                return &[][..];
            }
            let chunk = bytes.get(at..).unwrap_or_default();
            let chunk = &chunk[..chunk.len().min(READ_CHUNK)];
            *served += chunk.len();
            chunk
        },
        None,
        Some(ParseOptions::new().progress_callback(&mut progress)),
    );
    let over = budget.read_used > budget.read;
    match tree {
        Some(_) if over => Err(ParseFailure::TooCostly(tree)),
        Some(tree) => Ok(tree),
        None => Err(ParseFailure::TooCostly(None)),
    }
}

/// The bytes the parser reads: `script` with every non-ASCII byte as `a`.
/// tree-sitter-bash's external scanner calls `isdigit`/`isalpha` on the
/// lookahead character, which is undefined (and can crash) for code points
/// past 255; `a` is a plain word character, as bash treats those bytes. The
/// byte offsets stay the same and every word's text is still cut from the
/// original string.
fn parser_bytes(script: &str) -> Vec<u8> {
    script
        .bytes()
        .map(|b| if b.is_ascii() { b } else { b'a' })
        .collect()
}

/// The input is handed to the parser in chunks of this many bytes, so
/// that re-reading it can be counted.
const READ_CHUNK: usize = 256;

/// How many bytes the parser may read, re-reads included, for a script of
/// `len` bytes. An ordinary script is read two to six times (heredocs are
/// the most); for some inputs (`x=(`, `$[` or `<<` repeated thousands of
/// times) the grammar's lexer rescans to the end of the input at every
/// token: quadratic time, minutes for 200 KB, that neither
/// tree-sitter's operation count nor its progress callback sees. Past the
/// budget the parser is told the input has ended, and what it parsed of the
/// prefix is still walked.
fn read_budget(len: usize) -> usize {
    len.saturating_mul(READ_BYTES_PER_BYTE)
        .saturating_add(READ_BYTES_BASE)
}

const READ_BYTES_PER_BYTE: usize = 32;
const READ_BYTES_BASE: usize = 64 * 1024;

#[cfg(test)]
pub(super) fn parse_checks(script: &str) -> (usize, usize) {
    let mut budget = Budget::new(script.len());
    let _ = parse(&parser_bytes(script), None, &mut budget);
    (budget.checks_used, budget.read_used)
}

enum Task<'t> {
    /// Visit a node; the redirections apply to the commands it contains.
    Visit(Node<'t>, Vec<Redirect>),
    /// Add redirections to every command found from these indices on (of
    /// the commands, and of the commands as read).
    Attach(usize, usize, Vec<Redirect>),
    /// Simple commands on the lines that tree-sitter joined to a
    /// redirection before them (see [`line_end_before`]), taken after the
    /// command of that redirection.
    Lines(Vec<(Vec<Word>, Vec<Redirect>)>),
    /// The next pass over the body of an expanded `for` loop
    /// ([`Walker::loops`]`[at]`): with its `index`th word bound, or, past
    /// the last, the shadow pass (see [`Walker::shadow`]).
    Pass {
        at: usize,
        body: Node<'t>,
        index: usize,
    },
    /// Starts or ends a shadow pass: what it finds is set aside.
    ShadowStart,
    ShadowEnd,
}

/// A `for` loop the walk expands (see `loops.rs`).
struct Planned {
    name: String,
    items: Vec<Item>,
    /// The loop's source range.
    span: (usize, usize),
}

/// What a shadow pass sets aside while it runs.
struct Stash {
    commands: Vec<SimpleCommand>,
    bare: Vec<Redirect>,
    notes: Vec<String>,
    compare: bool,
}

struct Walker<'s> {
    src: &'s str,
    depth: usize,
    commands: Vec<SimpleCommand>,
    notes: Vec<String>,
    parse_error_noted: bool,
    /// See [`CommandAnalysis::unjudgeable`].
    unjudgeable: Option<String>,
    attach_budget: usize,
    verbatim_budget: usize,
    /// Every simple command of this script as read, before wrappers are
    /// stripped: what the strict reading is compared with.
    raw: Vec<strict::Command>,
    /// Redirections on no simple command.
    bare: Vec<Redirect>,
    /// End of the last node whose text was searched for hidden
    /// substitutions: nodes inside it are not searched again, which keeps
    /// the walk linear however deeply expansions nest.
    scanned_until: usize,
    /// The same for the search for assignments in arithmetic.
    arith_until: usize,
    /// Words that tree-sitter hung on a heredoc or a redirection but that
    /// bash passes as arguments to the command (node id of the command).
    extra_args: Option<(usize, Vec<Word>)>,
    /// Source ranges whose substitutions were analysed already (parsed
    /// substitutions, searched expansions and heredoc bodies), in order.
    read_ranges: Vec<(usize, usize)>,
    /// Where the `$(...)` substitutions that tree-sitter parsed (and the
    /// walk visited) start; kept only where [`Walker::evaluates_text`].
    parsed_substitutions: Vec<usize>,
    /// Whether the script may evaluate text as code, so that
    /// [`Walker::text_evaluated_as_code`] searches it.
    evaluates_text: bool,
    /// Hidden scripts analysed already: the same text twice adds nothing.
    seen_hidden: HashSet<String>,
    /// Whether the text after a `coproc` was read again already.
    coproc_reread: bool,
    /// The assignments of the simple commands read so far in this tree
    /// (node ids), still to be visited: an assignment elsewhere may change
    /// what later commands run. Kept here because asking tree-sitter for a
    /// node's parent costs a walk from the root.
    command_assignments: HashSet<usize>,
    /// An empty task stack, kept for its memory (see [`Walker::walk`]).
    spare_stack: Vec<Task<'static>>,
    /// Whether commands are kept in [`Walker::raw`] for the comparison
    /// with the strict reading (not when they come from it).
    compare: bool,
    /// The words of the lines that [`Walker::redirect`] found joined to a
    /// redirection's destination (see [`line_end_before`]), one entry per
    /// line, for its caller to take.
    joined_lines: Vec<Vec<Word>>,
    /// The `for` loops expanded, one entry each time one is (a loop inside
    /// another is expanded once per pass of the outer one).
    loops: Vec<Planned>,
    /// The loop variables bound, innermost last.
    bindings: Vec<Binding>,
    /// Commands read while a loop variable was bound (see
    /// [`loops::MAX_COMMANDS`]).
    expanded: usize,
    /// What the shadow passes under way set aside, innermost last.
    stash: Vec<Stash>,
    /// The commands and bare redirections of the shadow passes: after its
    /// passes with each word bound, the body of an expanded loop is read
    /// once more with its variable unbound, as it was read before loops
    /// were expanded. When the script is unprovable they are listed too,
    /// so that deny rules still see everything the old reading showed
    /// (the values a loop's variable takes are only proven when nothing
    /// else in the script is in doubt).
    shadow: Vec<SimpleCommand>,
    shadow_bare: Vec<Redirect>,
    /// A builtin that sets attributes of variables (`declare -u d` makes
    /// the loop's words upper case), if the script runs one.
    declares: Option<String>,
}

impl<'s> Walker<'s> {
    fn finish(mut self) -> CommandAnalysis {
        if !self.loops.is_empty() {
            if let Some(program) = self.declares.take() {
                self.note(format!(
                    "`{program}` may change the values a loop variable takes"
                ));
            }
            self.later_uses();
        }
        if !self.notes.is_empty() {
            self.commands.append(&mut self.shadow);
            self.bare.append(&mut self.shadow_bare);
        }
        CommandAnalysis {
            commands: self.commands,
            unprovable: self.notes,
            bare_redirects: self.bare,
            unjudgeable: self.unjudgeable,
        }
    }

    fn note(&mut self, phrase: String) {
        if self.notes.len() > MAX_NOTES || self.notes.contains(&phrase) {
            return;
        }
        if self.notes.len() == MAX_NOTES {
            self.notes
                .push("more unprovable parts, not listed".to_string());
        } else {
            self.notes.push(phrase);
        }
    }

    fn text(&self, node: Node<'_>) -> std::borrow::Cow<'s, str> {
        node_text(self.src, node)
    }

    fn walk(&mut self, root: Node<'_>) {
        // The stack's memory is reused from the last tree (an empty vector
        // collected in place): growing a new one for each part of a long
        // script made the allocator merge its free lists over and over.
        let mut stack = recycle(std::mem::take(&mut self.spare_stack));
        stack.push(Task::Visit(root, Vec::new()));
        while let Some(task) = stack.pop() {
            match task {
                Task::Visit(node, redirects) => self.visit(node, redirects, &mut stack),
                Task::Attach(from, raw_from, redirects) => {
                    self.attach(from, raw_from, &redirects);
                }
                Task::Lines(lines) => {
                    for (words, redirects) in lines {
                        self.simple(words, redirects, Vec::new());
                    }
                }
                Task::Pass { at, body, index } => self.pass(at, body, index, &mut stack),
                Task::ShadowStart => {
                    self.stash.push(Stash {
                        commands: std::mem::take(&mut self.commands),
                        bare: std::mem::take(&mut self.bare),
                        notes: std::mem::take(&mut self.notes),
                        compare: self.compare,
                    });
                    self.compare = false;
                }
                Task::ShadowEnd => {
                    if let Some(stash) = self.stash.pop() {
                        let commands = std::mem::replace(&mut self.commands, stash.commands);
                        let bare = std::mem::replace(&mut self.bare, stash.bare);
                        self.shadow.extend(commands);
                        self.shadow_bare.extend(bare);
                        // Its phrases are about a reading that is not
                        // bash's: the loop's own passes say what is.
                        self.notes = stash.notes;
                        self.compare = stash.compare;
                    }
                }
            }
        }
        self.spare_stack = recycle(stack);
    }

    fn attach(&mut self, from: usize, raw_from: usize, redirects: &[Redirect]) {
        let targets = self.commands.len().saturating_sub(from);
        if targets == 0 {
            self.bare.extend_from_slice(redirects);
            return;
        }
        let work = targets.saturating_mul(redirects.len());
        if work > self.attach_budget {
            self.note("redirections nested too deeply to attribute".to_string());
            self.attach_budget = 0;
            return;
        }
        self.attach_budget -= work;
        for command in self.commands.iter_mut().skip(from) {
            command.redirects.extend_from_slice(redirects);
        }
        for command in self.raw.iter_mut().skip(raw_from) {
            command.redirects.extend_from_slice(redirects);
        }
    }

    fn visit<'t>(&mut self, node: Node<'t>, redirects: Vec<Redirect>, stack: &mut Vec<Task<'t>>) {
        if !redirects.is_empty() {
            match node.kind() {
                "command" => {
                    self.command(node, redirects);
                    push_children(node, stack);
                    return;
                }
                // `a | b > f` and `a && b > f` redirect only `b`: tree-sitter
                // hangs the redirection on the whole pipeline or list.
                "pipeline" | "list" => {
                    let mut cursor = node.walk();
                    let parts: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                    let mut redirects = Some(redirects);
                    for part in parts.into_iter().rev() {
                        let own = if part.kind() == "comment" {
                            Vec::new()
                        } else {
                            redirects.take().unwrap_or_default()
                        };
                        stack.push(Task::Visit(part, own));
                    }
                    return;
                }
                _ => stack.push(Task::Attach(self.commands.len(), self.raw.len(), redirects)),
            }
        }
        match node.kind() {
            "command" => self.command(node, Vec::new()),
            "declaration_command" | "unset_command" => self.declaration(node),
            "redirected_statement" => {
                self.redirected(node, stack);
                return;
            }
            "command_substitution" => {
                // A `$(...)` is walked as parsed, but quoted text inside it
                // is not searched (`$(echo '$(x)'; echo $((_)))`): only its
                // start is recorded, and the search for text evaluated as
                // code looks inside it. A backquoted one is read again as
                // a script below, with that search of its own.
                if self.text(node).starts_with('`') {
                    self.mark_read(node.start_byte(), node.end_byte());
                } else if self.evaluates_text {
                    self.parsed_substitutions.push(node.start_byte());
                }
                let phrase = format!("command substitution `{}`", snippet(&self.text(node)));
                self.note(phrase);
                let text = self.text(node);
                if let Some(inner) = text.strip_prefix('`') {
                    // Bash removes the backslash before `` ` ``, `\` and `$`
                    // and parses the rest: nested backticks are commands.
                    let quoted = node.parent().is_some_and(|p| p.kind() == "string");
                    let inner =
                        unescape_backticks(inner.strip_suffix('`').unwrap_or(inner), quoted);
                    self.nested("command substitution", &inner);
                    return;
                }
            }
            "expansion" | "arithmetic_expansion" | "heredoc_body" | "ERROR" => {
                if node.kind() == "ERROR" {
                    self.parse_error(node);
                    self.bare_child_redirects(node);
                }
                if node.kind() == "heredoc_body" {
                    self.heredoc_real_end(node);
                    if heredoc_is_quoted(self.src, node) {
                        return;
                    }
                }
                if node.kind() == "arithmetic_expansion" && self.arithmetic_assigns(node) {
                    let phrase = format!(
                        "arithmetic `{}` assigns variables",
                        snippet(&self.text(node))
                    );
                    self.note(phrase);
                }
                if node.kind() == "expansion" && assigns_default(&self.text(node)) {
                    let phrase = format!(
                        "expansion `{}` assigns a variable",
                        snippet(&self.text(node))
                    );
                    self.note(phrase);
                }
                self.recover_hidden(node);
                if node.kind() == "ERROR" {
                    push_children(node, stack);
                }
                return;
            }
            // tree-sitter takes CR, FF and VT for blanks, so `ls\r# x`
            // looks like a comment; to bash `#` starts a comment only at the
            // start of a word, and `x` runs. A line continuation before `#`
            // joins it to the word before, too.
            "comment" if !starts_a_word(self.src, node.start_byte()) => {
                let text = self.text(node);
                let rest = text.get(1..).unwrap_or_default().to_string();
                self.note(format!(
                    "`#` inside a word is no comment to bash near `{}`",
                    snippet(&text)
                ));
                self.nested("text after a `#` inside a word", &rest);
            }
            "test_command" => self.test_command(node),
            "function_definition" => self.bare_child_redirects(node),
            "for_statement" => {
                if let Some((plan, body)) = self.plan_loop(node) {
                    self.loops.push(plan);
                    stack.push(Task::Pass {
                        at: self.loops.len() - 1,
                        body,
                        index: 0,
                    });
                    return;
                }
                if let Some(variable) = node.child_by_field_name("variable") {
                    let phrase = format!(
                        "loop variable `{}` may change what later commands run",
                        snippet(&self.text(variable))
                    );
                    self.note(phrase);
                }
            }
            "c_style_for_statement" | "compound_statement" if self.arithmetic_assigns(node) => {
                let phrase = format!(
                    "arithmetic `{}` assigns variables",
                    snippet(&self.text(node))
                );
                self.note(phrase);
            }
            "variable_assignment" if !self.command_assignments.remove(&node.id()) => {
                let phrase = format!(
                    "assignment `{}` may change what later commands run",
                    snippet(&self.text(node))
                );
                self.note(phrase);
            }
            "process_substitution" => {
                let phrase = format!("process substitution `{}`", snippet(&self.text(node)));
                self.note(phrase);
            }
            _ if node.is_missing() => self.parse_error(node),
            _ => {}
        }
        push_children(node, stack);
    }

    /// Takes the lines [`Walker::redirect`] found joined to a redirection
    /// as commands of their own, where nothing follows them.
    fn flush_joined_lines(&mut self) {
        for line in std::mem::take(&mut self.joined_lines) {
            self.simple(line, Vec::new(), Vec::new());
        }
    }

    /// The file redirections directly inside a function definition (on
    /// no command) or an `ERROR` node (`{ cat <<EOF > f; }` leaves
    /// `<<EOF > f` unparsed): bash still opens their targets, so they are
    /// kept as bare redirections, which deny rules judge like any other.
    fn bare_child_redirects(&mut self, node: Node<'_>) {
        let mut cursor = node.walk();
        let stray: Vec<Node<'_>> = node
            .named_children(&mut cursor)
            .filter(|c| c.kind() == "file_redirect")
            .collect();
        for child in stray {
            // Words after the target would be the command's arguments:
            // not a command of their own.
            let (redirect, _) = self.redirect(child);
            self.bare.extend(redirect);
            self.flush_joined_lines();
        }
    }

    /// Notes that tree-sitter joined the line that `node` starts (after
    /// the line end found by [`line_end_before`]) to the command before it.
    fn joined_line(&mut self, node: Node<'_>) {
        let text = self.text(node);
        let phrase = format!(
            "the parser joins a line to the command before it near `{}`",
            snippet(text.trim_start())
        );
        self.note(phrase);
    }

    fn parse_error(&mut self, node: Node<'_>) {
        if self.parse_error_noted {
            return;
        }
        self.parse_error_noted = true;
        let phrase = if node.is_missing() {
            format!("parse error: missing `{}`", node.kind())
        } else {
            let text = self.text(node);
            format!("parse error near `{}`", snippet(text.trim()))
        };
        self.note(phrase);
    }

    /// `body > target`: the redirections go to the commands of the body.
    fn redirected<'t>(&mut self, node: Node<'t>, stack: &mut Vec<Task<'t>>) {
        let mut body = None;
        let mut redirects = Vec::new();
        let mut extras = Vec::new();
        // The lines tree-sitter joined to a redirection: each a command of
        // its own, with the redirections and words that follow it.
        let mut lines: Vec<(Vec<Word>, Vec<Redirect>)> = Vec::new();
        let mut rest = Vec::new();
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                let child = cursor.node();
                if cursor.field_name() == Some("body") {
                    body = Some(child);
                } else if child.is_named() || child.is_missing() {
                    match child.kind() {
                        "file_redirect" => {
                            let (redirect, extra) = self.redirect(child);
                            match lines.last_mut() {
                                Some((words, own)) => {
                                    own.extend(redirect);
                                    words.extend(extra);
                                }
                                None => {
                                    redirects.extend(redirect);
                                    extras.extend(extra);
                                }
                            }
                            lines.extend(
                                std::mem::take(&mut self.joined_lines)
                                    .into_iter()
                                    .map(|words| (words, Vec::new())),
                            );
                        }
                        // `cat <<EOF > f a`: tree-sitter hangs what follows
                        // the delimiter on the heredoc; bash reads it as
                        // redirections and arguments of the command.
                        "heredoc_redirect" => {
                            let mut inner = child.walk();
                            for part in child.named_children(&mut inner) {
                                match part.kind() {
                                    "heredoc_start" | "heredoc_body" | "heredoc_end" => {}
                                    "file_redirect" => {
                                        let (redirect, extra) = self.redirect(part);
                                        redirects.extend(redirect);
                                        extras.extend(extra);
                                        self.flush_joined_lines();
                                    }
                                    "herestring_redirect" | "comment" => {}
                                    kind if is_word_kind(kind) => {
                                        extras.push(word(
                                            self.src,
                                            part,
                                            &mut self.verbatim_budget,
                                            &self.bindings,
                                        ));
                                    }
                                    _ => {}
                                }
                            }
                        }
                        _ => {}
                    }
                    rest.push(child);
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        // Body first, then the lines joined to it, then the redirections'
        // own words and heredoc pipelines.
        stack.extend(rest.into_iter().rev().map(|n| Task::Visit(n, Vec::new())));
        if !lines.is_empty() {
            stack.push(Task::Lines(lines));
        }
        match body {
            Some(body) => {
                if !extras.is_empty() {
                    // `a && b <<EOF x`: tree-sitter hangs the heredoc and
                    // the words on the list; for bash they belong to `b`,
                    // like the redirections (see `visit`).
                    let command = last_command(body);
                    if command.kind() == "command" {
                        self.extra_args = Some((command.id(), extras));
                    } else {
                        self.note(format!(
                            "words after a redirection near `{}`",
                            snippet(&self.text(node))
                        ));
                    }
                }
                stack.push(Task::Visit(body, redirects));
            }
            None => self.bare.extend(redirects),
        }
    }

    /// A file redirection, or `None` for descriptor duplications (`2>&1`,
    /// `>&-`) and redirections without a target.
    ///
    /// Also returns the words tree-sitter took as further destinations but
    /// that bash reads as arguments (`> f a`); a destination continued by a
    /// backslash-newline (`> /dev/s\<newline>da`) is one word.
    fn redirect(&mut self, node: Node<'_>) -> (Option<Redirect>, Vec<Word>) {
        let mut descriptor = None;
        let mut destinations = Vec::new();
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                match cursor.field_name() {
                    Some("descriptor") => descriptor = Some(cursor.node()),
                    Some("destination") => destinations.push(cursor.node()),
                    _ => {}
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        let mut extra: Vec<Word> = Vec::new();
        let Some((&destination, others)) = destinations.split_first() else {
            return (None, extra);
        };
        let mut target = word(
            self.src,
            destination,
            &mut self.verbatim_budget,
            &self.bindings,
        )
        .text;
        let mut last_end = destination.end_byte();
        let mut line: Option<Vec<Word>> = None;
        for &other in others {
            let mut next = word(self.src, other, &mut self.verbatim_budget, &self.bindings);
            strip_line_start(self.src, other, &mut next);
            if line_end_before(self.src, last_end, other).is_some() {
                self.joined_line(other);
                self.joined_lines.extend(line.take());
                line = Some(vec![next]);
            } else if let Some(line) = line.as_mut() {
                line.push(next);
            } else if extra.is_empty() && slice(self.src, last_end, other.start_byte()) == "\\\n" {
                target.push_str(&next.text);
            } else {
                extra.push(next);
            }
            last_end = other.end_byte();
        }
        self.joined_lines.extend(line);
        let op_start = descriptor.map_or(node.start_byte(), |d| d.end_byte());
        let bare: String = slice(self.src, op_start, destination.start_byte())
            .replace("\\\n", "")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let numeric = {
            let t = target.strip_suffix('-').unwrap_or(&target);
            !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
        };
        if bare == "<&" || (bare == ">&" && numeric) {
            return (None, extra);
        }
        let op = match descriptor {
            Some(d) => format!("{}{bare}", self.text(d)),
            None => bare,
        };
        (Some(Redirect { op, target }), extra)
    }

    fn command(&mut self, node: Node<'_>, outer: Vec<Redirect>) {
        let mut words: Vec<Word> = Vec::new();
        let mut redirects = Vec::new();
        let mut assignments = Vec::new();
        let mut last_end = None;
        let mut child_end = None;
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                let child = cursor.node();
                // tree-sitter may join the next line to this command; bash
                // ends the command at the line end.
                if child_end.is_some_and(|end| line_end_before(self.src, end, child).is_some()) {
                    self.joined_line(child);
                    self.simple(
                        std::mem::take(&mut words),
                        std::mem::take(&mut redirects),
                        std::mem::take(&mut assignments),
                    );
                    last_end = None;
                }
                child_end = Some(child.end_byte());
                match (cursor.field_name(), child.kind()) {
                    (_, "file_redirect") => {
                        let (redirect, extra) = self.redirect(child);
                        redirects.extend(redirect);
                        words.extend(extra);
                        let mut lines = std::mem::take(&mut self.joined_lines);
                        if let Some(last) = lines.pop() {
                            self.simple(
                                std::mem::take(&mut words),
                                std::mem::take(&mut redirects),
                                std::mem::take(&mut assignments),
                            );
                            for line in lines {
                                self.simple(line, Vec::new(), Vec::new());
                            }
                            words = last;
                            last_end = None;
                        }
                    }
                    (_, "variable_assignment") => {
                        self.command_assignments.insert(child.id());
                        let text = self.text(child);
                        let name = text.split_once('=').map_or(&*text, |(n, _)| n);
                        let name = name.trim_start_matches(['\n', '\r', ' ', '\t']);
                        assignments.push(name.trim_end_matches('+').to_owned());
                    }
                    (Some("name"), _) if child.is_missing() || child.byte_range().is_empty() => {}
                    (Some("name"), _) if !self.coproc_reread && self.text(child) == "coproc" => {
                        self.coproc_reread = true;
                        self.reread_after_coproc(child.end_byte());
                        words.push(word(
                            self.src,
                            child,
                            &mut self.verbatim_budget,
                            &self.bindings,
                        ));
                        last_end = Some(child.end_byte());
                    }
                    // `! ! cmd`, `time ! cmd`: an unquoted `!` where a
                    // pipeline starts negates it; tree-sitter reads it
                    // as a word.
                    (Some("name" | "argument"), _)
                        if self.text(child) == "!" && pipeline_start(&words) => {}
                    (Some("name" | "argument"), _) => {
                        let mut next =
                            word(self.src, child, &mut self.verbatim_budget, &self.bindings);
                        strip_line_start(self.src, child, &mut next);
                        // The grammar reads a line continuation as a word
                        // break; bash removes it first, so `r\<newline>m`
                        // is `rm`.
                        let continued = last_end.is_some_and(|end| {
                            matches!(
                                &*slice(self.src, end, child.start_byte()),
                                "\\\n" | "\\\r\n"
                            )
                        });
                        match words.last_mut() {
                            Some(prev) if continued => {
                                prev.text.push_str(&next.text);
                                prev.known = prev.known.max(next.known);
                            }
                            _ => words.push(next),
                        }
                        last_end = Some(child.end_byte());
                    }
                    _ => {}
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        redirects.extend(outer);
        if let Some((id, extra)) = self.extra_args.take() {
            if id == node.id() {
                words.extend(extra);
            } else {
                self.extra_args = Some((id, extra));
            }
        }
        self.simple(words, redirects, assignments);
    }

    /// `export`, `declare`, `local`, `readonly`, `typeset`, `unset`: listed
    /// as they are, with the keyword as the program.
    fn declaration(&mut self, node: Node<'_>) {
        let mut words = Vec::new();
        let mut redirects = Vec::new();
        // The lines tree-sitter joined to the declaration (see
        // [`line_end_before`]): simple commands of their own.
        let mut lines: Vec<(Vec<Word>, Vec<Redirect>)> = Vec::new();
        let mut child_end = None;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if child_end.is_some_and(|end| line_end_before(self.src, end, child).is_some()) {
                self.joined_line(child);
                lines.push((Vec::new(), Vec::new()));
            }
            child_end = Some(child.end_byte());
            if let Some((line, own)) = lines.last_mut() {
                match child.kind() {
                    "file_redirect" => {
                        let (redirect, extra) = self.redirect(child);
                        own.extend(redirect);
                        line.extend(extra);
                    }
                    "comment" | "herestring_redirect" => {}
                    _ => {
                        let mut next =
                            word(self.src, child, &mut self.verbatim_budget, &self.bindings);
                        strip_line_start(self.src, child, &mut next);
                        line.push(next);
                    }
                }
                lines.extend(
                    std::mem::take(&mut self.joined_lines)
                        .into_iter()
                        .map(|words| (words, Vec::new())),
                );
                continue;
            }
            match child.kind() {
                "file_redirect" => {
                    let (redirect, extra) = self.redirect(child);
                    redirects.extend(redirect);
                    words.extend(extra.into_iter().map(|w| w.text));
                    lines.extend(
                        std::mem::take(&mut self.joined_lines)
                            .into_iter()
                            .map(|words| (words, Vec::new())),
                    );
                }
                "comment" | "herestring_redirect" => {}
                _ if child.is_named() => words
                    .push(word(self.src, child, &mut self.verbatim_budget, &self.bindings).text),
                _ => words.push(self.text(child).into_owned()),
            }
        }
        self.declared(words, redirects);
        for (line, own) in lines {
            self.simple(line, own, Vec::new());
        }
    }

    /// A declaration's words (the keyword first) and redirections.
    fn declared(&mut self, words: Vec<String>, redirects: Vec<Redirect>) {
        let texts: Vec<&str> = words.iter().map(String::as_str).collect();
        if let Some(phrase) = evaluates_text(&texts) {
            self.note(phrase);
        }
        if let Some(&program) = texts.first() {
            self.sets_variables(program);
        }
        if words.is_empty() {
            self.bare.extend(redirects);
            return;
        }
        if self.compare {
            if !self.bindings.is_empty() {
                self.expanded += 1;
            }
            self.raw.push(strict::Command {
                words: words.iter().map(|w| Word::literal(w.clone())).collect(),
                redirects: redirects.clone(),
                assignments: Vec::new(),
            });
        }
        self.commands.push(SimpleCommand {
            words,
            redirects,
            assignments: Vec::new(),
            path: None,
        });
    }

    fn simple(&mut self, words: Vec<Word>, redirects: Vec<Redirect>, assignments: Vec<String>) {
        if !words.is_empty() && self.compare {
            if !self.bindings.is_empty() {
                self.expanded += 1;
            }
            self.raw.push(strict::Command {
                words: words.clone(),
                redirects: redirects.clone(),
                assignments: Vec::new(),
            });
        }
        self.loop_words(&words);
        let mut notes = Vec::new();
        let mut stripped = wrappers::Stripped {
            assignments,
            ..Default::default()
        };
        let words = wrappers::strip(words, &mut notes, &mut stripped);
        for phrase in notes {
            self.note(phrase);
        }
        let Some(first) = words.first() else {
            self.bare.extend(redirects);
            self.bare.append(&mut stripped.writes);
            return;
        };
        let name = snippet(&first.text);
        if first.bound != Bound::No {
            self.note(format!("the program `{name}` comes from a loop variable"));
        }
        match first.known {
            Known::Literal => {}
            Known::Pattern => self.note(format!("command name is a pattern `{name}`")),
            Known::Variable => self.note(format!("command name is a variable `{name}`")),
            Known::Substitution => {
                self.note(format!("command name is a command substitution `{name}`"));
            }
        }
        let mut nested = None;
        // A program a wrapper finds on PATH is never a builtin.
        let builtin = !stripped.external;
        if first.known == Known::Literal {
            let program = first.text.as_str();
            let rest = || {
                words[1..]
                    .iter()
                    .map(|w| w.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            if builtin {
                self.sets_variables(program);
            }
            if builtin
                && (ASSIGNING_BUILTINS.contains(&program)
                    || (program == "printf" && words.iter().any(|w| w.text.starts_with("-v"))))
            {
                self.note(format!("`{program}` assigns variables by name"));
            }
            // `test -v 'a[$(x)]'` evaluates the subscript, and so do the
            // declaration builtins when read as plain commands
            // (`command unset 'a[$(x)]'`).
            let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
            if let Some(phrase) = evaluates_text(&texts) {
                self.note(phrase);
            }
            if builtin && program == "trap" {
                // `trap 'cmd' EXIT` runs `cmd` later, in this shell.
                let mut args = words[1..].iter().map(|w| w.text.as_str());
                let action = args.find(|a| !matches!(*a, "-p" | "-l" | "-P" | "--"));
                if let Some(action) = action.filter(|a| words.len() > 2 && *a != "-") {
                    self.note(format!("`trap` runs `{}` later", snippet(action)));
                    nested = Some(("trap".to_string(), action.to_string()));
                }
            }
            if builtin && program == "eval" {
                let body = rest();
                self.note(format!("eval `{}`", snippet(&body)));
                nested = Some(("eval".to_string(), body));
            } else if builtin && (program == "source" || program == ".") {
                self.note(format!("source `{}`", snippet(&rest())));
            } else if SHELLS.contains(&program) {
                match wrappers::shell_run(&words) {
                    ShellRun::Script(script) => {
                        if script.bound != Bound::No {
                            self.note(format!(
                                "`{program} -c` script holds a loop variable `{}`",
                                snippet(&script.text)
                            ));
                        }
                        if script.known != Known::Literal {
                            self.note(format!(
                                "`{program} -c` script is not a literal `{}`",
                                snippet(&script.text)
                            ));
                        }
                        nested = Some((format!("{program} -c"), script.text.clone()));
                    }
                    ShellRun::File(file) => self.note(format!(
                        "`{program}` runs the script file `{}`",
                        snippet(&file.text)
                    )),
                    ShellRun::Input => {
                        self.note(format!("`{program}` reads commands from its input"));
                    }
                    ShellRun::Nothing => {}
                }
            }
        }
        let mut redirects = redirects;
        redirects.append(&mut stripped.writes);
        self.commands.push(SimpleCommand {
            words: words.into_iter().map(|w| w.text).collect(),
            redirects,
            assignments: stripped.assignments,
            path: stripped.path,
        });
        if let Some((what, script)) = nested {
            self.nested(&what, &script);
        }
    }

    /// What a command's words say about the loops around it: a program
    /// named by a loop variable, or a glob's pattern for an unquoted use
    /// of its variable (bash splits a match holding a blank into words).
    fn loop_words(&mut self, words: &[Word]) {
        if let Some(first) = words.first().filter(|w| w.bound != Bound::No) {
            let phrase = format!(
                "the program `{}` comes from a loop variable",
                snippet(&first.text)
            );
            self.note(phrase);
        }
        if let Some(split) = words.iter().find(|w| w.bound == Bound::Split) {
            let phrase = format!(
                "`{}`: an unquoted loop variable over a pattern splits a match holding a blank",
                snippet(&split.text)
            );
            self.note(phrase);
        }
    }

    /// Notes builtins that set variables or their attributes by name: in
    /// a loop's body they may change its variable (`unset "$v"`), and
    /// `declare -u` anywhere changes the values it takes.
    fn sets_variables(&mut self, program: &str) {
        if matches!(program, "declare" | "typeset" | "local" | "readonly") {
            self.declares.get_or_insert_with(|| program.to_owned());
        }
        let sets = matches!(
            program,
            "unset" | "export" | "readonly" | "declare" | "typeset" | "local" | "wait"
        );
        if sets && let Some(binding) = self.bindings.last() {
            let phrase = format!(
                "`{program}` in a loop may change its variable `{}`",
                binding.name
            );
            self.note(phrase);
        }
    }

    /// The plan for expanding a `for` loop (see `loops.rs`) and its body,
    /// or `None` to read it as written: `for NAME in WORDS; do LIST;
    /// done` with a name and words that qualify, not inside a shadow pass,
    /// not over a name already bound, within the bounds.
    fn plan_loop<'t>(&mut self, node: Node<'t>) -> Option<(Planned, Node<'t>)> {
        if !self.stash.is_empty() || node.has_error() {
            return None;
        }
        let mut cursor = node.walk();
        if node.child(0).map(|c| c.kind()) != Some("for") {
            return None;
        }
        let name = self
            .text(node.child_by_field_name("variable")?)
            .into_owned();
        if !loops::name_ok(&name)
            || self.bindings.len() >= loops::MAX_DEPTH
            || lookup(&self.bindings, &name).is_some()
        {
            return None;
        }
        let values: Vec<Node<'t>> = node.children_by_field_name("value", &mut cursor).collect();
        if values.is_empty() || values.len() > loops::MAX_ITEMS {
            return None;
        }
        // The list ends at `;` or a line end, then more line ends may
        // come before `do` (tree-sitter also takes `&` and `;;`, which
        // are syntax errors to bash).
        let body = node.child_by_field_name("body")?;
        let last = values.last()?.end_byte();
        let gap = slice(self.src, last, body.start_byte()).replace("\\\n", "");
        let gap = gap.trim_start_matches([' ', '\t']);
        let rest = gap.strip_prefix(';').unwrap_or(gap);
        if !(gap.starts_with([';', '\n'])
            && rest.bytes().all(|c| matches!(c, b' ' | b'\t' | b'\n')))
        {
            return None;
        }
        let mut items = Vec::with_capacity(values.len());
        for value in values {
            let raw = self.text(value);
            let mut budget = raw.len();
            let read = word(self.src, value, &mut budget, &[]);
            items.push(loops::item(&raw, &read.text, read.known)?);
        }
        let count = body.child_count();
        let (open, close) = (body.child(0)?, body.child(count.checked_sub(1)?)?);
        if open.kind() != "do" || close.kind() != "done" || close.is_missing() {
            return None;
        }
        if self.expanded > loops::MAX_COMMANDS {
            let phrase = format!(
                "`for` loops expand to more than {} commands",
                loops::MAX_COMMANDS
            );
            self.note(phrase);
            return None;
        }
        let text = slice(self.src, open.end_byte(), close.start_byte());
        if !loops::expandable(&text, &name, &items) {
            return None;
        }
        let span = (node.start_byte(), node.end_byte());
        Some((Planned { name, items, span }, body))
    }

    /// Runs the pass `index` over the body of the loop `at` (see
    /// [`Task::Pass`]); past the bound on commands, the rest of the loop
    /// is read as written.
    fn pass<'t>(&mut self, at: usize, body: Node<'t>, index: usize, stack: &mut Vec<Task<'t>>) {
        if index > 0 {
            self.bindings.pop();
        }
        let plan = &self.loops[at];
        if index == plan.items.len() {
            stack.push(Task::ShadowEnd);
            stack.push(Task::Visit(body, Vec::new()));
            stack.push(Task::ShadowStart);
            return;
        }
        if self.expanded > loops::MAX_COMMANDS {
            let phrase = format!(
                "`for` loops expand to more than {} commands",
                loops::MAX_COMMANDS
            );
            self.note(phrase);
            stack.push(Task::Visit(body, Vec::new()));
            return;
        }
        self.bindings.push(Binding {
            name: plan.name.clone(),
            item: plan.items[index].clone(),
        });
        stack.push(Task::Pass {
            at,
            body,
            index: index + 1,
        });
        stack.push(Task::Visit(body, Vec::new()));
    }

    /// A loop's variable keeps its last word after the loop: a reference
    /// to it anywhere outside the loops expanded over that name (as text,
    /// quoted or not) is unprovable, as every loop was before.
    fn later_uses(&mut self) {
        if !self.notes.is_empty() {
            return;
        }
        let mut spans: std::collections::HashMap<&str, Vec<(usize, usize)>> =
            std::collections::HashMap::new();
        for plan in &self.loops {
            spans.entry(plan.name.as_str()).or_default().push(plan.span);
        }
        count_work(self.src.len());
        let found = loops::all_references(self.src).find(|&(at, name)| {
            spans
                .get(name)
                .is_some_and(|s| !s.iter().any(|&(a, b)| a <= at && at < b))
        });
        if let Some((_, name)) = found {
            let phrase = format!(
                "loop variable `{}` may change what later commands run",
                snippet(name)
            );
            self.note(phrase);
        }
    }

    /// Whether `node`, an arithmetic expansion or command or a C-style
    /// `for`, assigns variables. Arithmetic inside arithmetic already
    /// searched is not searched again, so nesting stays linear.
    fn arithmetic_assigns(&mut self, node: Node<'_>) -> bool {
        let text = self.text(node);
        let t = text.trim_start();
        let arithmetic = t.starts_with("((") || t.starts_with("$((") || t.starts_with("for");
        if !arithmetic || node.start_byte() < self.arith_until {
            return false;
        }
        self.arith_until = node.end_byte();
        count_work(text.len());
        assigns_in_arithmetic(&text)
    }

    /// `[ ... ]` is a simple command to bash (the builtin `[`), but a
    /// `test_command` node to tree-sitter, with expressions rather than
    /// words inside. Its text is read with the strict reader; `[[ ... ]]`,
    /// which evaluates its operands (`-eq` as arithmetic), is unprovable.
    fn test_command(&mut self, node: Node<'_>) {
        let text = self.text(node).into_owned();
        if text.starts_with("[[") {
            self.note(format!("conditional `{}`", snippet(&text)));
            return;
        }
        match strict::read_bound(&text, &self.bindings) {
            (reading, None) if reading.commands.len() == 1 && reading.bare.is_empty() => {
                for command in reading.commands {
                    self.simple(command.words, command.redirects, command.assignments);
                }
            }
            (_, refused) => {
                let why = refused.unwrap_or_else(|| "not one command".to_string());
                self.note(format!("test `{}`: {why}", snippet(&text)));
            }
        }
    }

    /// `coproc [NAME] compound-command`: tree-sitter reads `coproc` as a
    /// command name, and the compound command after it as words and broken
    /// statements (`coproc while true; do sudo ls; done` hides `sudo`). The
    /// rest of the script after `coproc` (and after NAME, when a compound
    /// command follows it) is read again as a script. Done once per
    /// script, so the work stays linear.
    fn reread_after_coproc(&mut self, from: usize) {
        let rest = slice(self.src, from, self.src.len()).into_owned();
        let trimmed = rest.trim_start_matches([' ', '\t']);
        let name_len = trimmed
            .find(|c: char| c.is_whitespace() || "|&;()<>".contains(c))
            .unwrap_or(trimmed.len());
        let after_name = trimmed[name_len..].trim_start_matches([' ', '\t']);
        let compound = after_name.starts_with(['{', '('])
            || ["while", "until", "if", "for", "case", "select", "[["]
                .iter()
                .any(|k| after_name.starts_with(k));
        let script = if compound && name_len > 0 {
            &trimmed[name_len..]
        } else {
            trimmed
        };
        self.nested("coproc", script);
    }

    /// Bash ends a heredoc at the first line equal to its delimiter after
    /// quote removal (`<<E"OF"` ends at `EOF`); tree-sitter may read on.
    /// What follows bash's end, up to where tree-sitter's heredoc ends, is
    /// read as a script.
    fn heredoc_real_end(&mut self, body: Node<'_>) {
        let Some((redirect, start)) = heredoc_start(body) else {
            return;
        };
        let delimiter = unquote_delimiter(&self.text(start));
        let strip_tabs = slice(self.src, redirect.start_byte(), start.start_byte())
            .trim_end()
            .ends_with("<<-");
        let text = self.text(body);
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            offset += line.len();
            let bare = line.strip_suffix('\n').unwrap_or(line);
            let bare = if strip_tabs {
                bare.trim_start_matches('\t')
            } else {
                bare
            };
            if bare == delimiter {
                let from = body.start_byte() + offset;
                if from < redirect.end_byte() {
                    let rest = slice(self.src, from, redirect.end_byte()).into_owned();
                    self.note(format!(
                        "the heredoc ends at `{}` for bash, earlier than parsed",
                        snippet(&delimiter)
                    ));
                    self.nested("text after a heredoc", &rest);
                }
                return;
            }
        }
    }

    /// Finds the substitutions that bash would run inside `node` (an
    /// expansion, arithmetic, heredoc body or unparsed region), where
    /// tree-sitter may hide them, and analyses each as a script. A node
    /// inside one already searched is skipped.
    fn recover_hidden(&mut self, node: Node<'_>) {
        if node.start_byte() < self.scanned_until {
            return;
        }
        self.scanned_until = node.end_byte();
        // An unparsed region may end before the substitution it holds does
        // (`$((sudo ls)` of `$((sudo ls) )`): its search proves nothing
        // about the text around it, which the search for text evaluated
        // as code still looks through.
        if node.kind() != "ERROR" {
            self.mark_read(node.start_byte(), node.end_byte());
        }
        let text = self.text(node);
        count_work(text.len());
        for (_, script) in hidden_scripts(&text, |_| false) {
            if self.seen_hidden.insert(script.clone()) {
                self.note(format!("command substitution `{}`", snippet(&script)));
                self.nested("command substitution", &script);
            }
        }
    }

    /// Records that the substitutions in `start..end` were analysed
    /// already. Ranges come in source order; one inside the last is
    /// covered by it.
    fn mark_read(&mut self, start: usize, end: usize) {
        match self.read_ranges.last() {
            Some(&(_, last_end)) if start < last_end => {}
            _ => self.read_ranges.push((start, end)),
        }
    }

    /// Whether the byte at `at` lies in a range marked by [`mark_read`].
    fn was_read(&self, at: usize) -> bool {
        let i = self.read_ranges.partition_point(|&(start, _)| start <= at);
        i > 0 && at < self.read_ranges[i - 1].1
    }

    /// Reads the script a second time, strictly (see [`strict`]), and
    /// compares: an allow needs both readings to agree. Where they differ,
    /// the strict reading (bash's own) is added, so that deny rules see
    /// what bash would run.
    /// Takes the strict reading of (a prefix of) the script as the
    /// commands bash runs, with no tree-sitter reading to compare it with.
    fn strict_alone(&mut self, reading: strict::Reading) {
        self.compare = false;
        for command in reading.commands {
            self.simple(command.words, command.redirects, command.assignments);
        }
        self.compare = true;
        self.bare.extend(reading.bare);
    }

    fn second_opinion(&mut self, reading: strict::Reading, refused: Option<String>) {
        let walked: Vec<_> = self.raw.iter().map(normal).collect();
        let strict: Vec<_> = reading.commands.iter().map(normal).collect();
        if let Some(phrase) = refused {
            // The walk's own phrases, if any, already say why; this one
            // names what the strict reader does not model.
            if self.notes.is_empty() {
                self.note(phrase);
            }
            // The commands read before the refusal are bash's: deny rules
            // must see them even where tree-sitter read them otherwise.
            // (In a long script they include those inside substitutions,
            // which the walk analyses as scripts of their own: they are
            // compared with every command found.)
            let found: Vec<Normal> = self
                .commands
                .iter()
                .map(|c| normal_of(c.words.clone(), &c.redirects))
                .collect();
            let walked: HashSet<&Normal> = walked.iter().chain(&found).collect();
            for (command, key) in reading.commands.into_iter().zip(&strict) {
                if !walked.contains(key) {
                    self.simple(command.words, command.redirects, command.assignments);
                }
            }
            return;
        }
        let mut walked_bare: Vec<_> = self.bare.iter().map(pair).collect();
        let mut strict_bare: Vec<_> = reading.bare.iter().map(pair).collect();
        walked_bare.sort();
        strict_bare.sort();
        if walked == strict && walked_bare == strict_bare {
            return;
        }
        let near = walked
            .iter()
            .zip(&strict)
            .find(|(a, b)| a != b)
            .or_else(|| strict.first().zip(walked.first()))
            .map_or_else(|| self.src.to_string(), |(_, b)| b.0.join(" "));
        self.note(format!(
            "the two readings of the command disagree near `{}`",
            snippet(&near)
        ));
        let walked: HashSet<&Normal> = walked.iter().collect();
        for (command, key) in reading.commands.into_iter().zip(&strict) {
            if !walked.contains(key) {
                self.simple(command.words, command.redirects, command.assignments);
            }
        }
        let walked_bare: HashSet<(String, String)> = walked_bare.into_iter().collect();
        for redirect in reading.bare {
            if !walked_bare.contains(&pair(&redirect)) {
                self.bare.push(redirect);
            }
        }
    }

    /// Arithmetic (`$((_))`, `((x))`, `[[ x -eq 1 ]]`, subscripts) and
    /// indirection (`${!x}`, `${x@P}`) evaluate the *value* of a variable
    /// as code: `echo 'a[$(rm x)]'; echo $((_))` runs `rm x` from a quoted
    /// argument. When the script holds such a construct, every `$(...)` and
    /// `` `...` `` in its text, quoted or not, is analysed too, so that deny
    /// rules see what might run. (The allow side refuses these constructs,
    /// or notes the subscripts, anyway.)
    fn text_evaluated_as_code(&mut self) {
        if !self.evaluates_text {
            return;
        }
        let src = self.src;
        count_work(src.len());
        let mut parsed = std::mem::take(&mut self.parsed_substitutions);
        parsed.sort_unstable();
        let found = hidden_scripts(src, |at| parsed.binary_search(&at).is_ok());
        for (at, script) in found {
            if !self.was_read(at) && self.seen_hidden.insert(script.clone()) {
                self.nested("text evaluated as code", &script);
            }
        }
    }

    /// Analyses the script run by `sh -c` or `eval`, one level deeper.
    fn nested(&mut self, what: &str, script: &str) {
        if self.depth + 1 > MAX_NESTING {
            self.note(format!(
                "`{what}` script nested more than {MAX_NESTING} levels deep"
            ));
            return;
        }
        // Inside a loop, a nested script is read once per pass: its text
        // comes out of the budget for loops, and its commands count
        // towards the bound on what loops expand to. Past either, the
        // loops around it are read as written from their next pass on.
        let looped = !self.bindings.is_empty();
        if looped && !loops::reserve(script.len()) {
            self.expanded = self.expanded.max(loops::MAX_COMMANDS + 1);
        }
        let inner = analyze_nested(script, self.depth + 1);
        if looped {
            self.expanded = self.expanded.saturating_add(inner.commands.len());
        }
        if self.unjudgeable.is_none() {
            self.unjudgeable = inner.unjudgeable;
        }
        self.commands.extend(inner.commands);
        self.bare.extend(inner.bare_redirects);
        for phrase in inner.unprovable {
            self.note(phrase);
        }
    }
}

/// Whether `script` holds a construct that may evaluate text as code
/// (see [`Walker::text_evaluated_as_code`]): arithmetic, `${...}`
/// (subscripts, offsets, indirection, `@P`), and the builtins that take a
/// variable name, which may carry a subscript (`unset 'a[$(x)]'`,
/// `printf -v`, `read`, `test -v`).
fn evaluates_text_as_code(script: &str) -> bool {
    const EVALUATING: &[&str] = &[
        "((", "$[", "[[", "${", "let", "read", "mapfile", "printf", "declare", "typeset", "local",
        "export", "unset", "test", "[ ", "getopts", "wait", "-v", "trap",
    ];
    EVALUATING.iter().any(|e| script.contains(e))
}

/// Builtins that declare, export or unset variables named in their
/// arguments (a name may carry a subscript, which bash evaluates).
const DECLARING_BUILTINS: &[&str] = &["declare", "typeset", "local", "export", "readonly", "unset"];

/// Why a builtin command (its words after wrappers) may evaluate text as
/// code: `let` and integer or reference declarations evaluate arithmetic
/// (`let _`, `declare -i x; x=_`), and a variable name with a subscript
/// (`unset 'a[$(x)]'`, `test -v`, `wait -p`, `declare`) has its subscript
/// evaluated.
fn evaluates_text(words: &[&str]) -> Option<String> {
    let (&program, args) = words.split_first()?;
    if program == "let" {
        return Some("`let` evaluates its arguments as arithmetic".to_string());
    }
    let declaring = matches!(program, "declare" | "typeset" | "local");
    let flag = |a: &&&str| {
        a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) && a.contains(['i', 'n'])
    };
    if declaring && let Some(flag) = args.iter().find(flag) {
        return Some(format!(
            "`{program} {flag}` makes assignments evaluate text as code"
        ));
    }
    let names_variables = DECLARING_BUILTINS.contains(&program)
        || (matches!(program, "test" | "[") && args.contains(&"-v"))
        || (program == "wait" && args.iter().any(|a| a.starts_with("-p")));
    let arg = args.iter().find(|a| a.contains('['))?;
    names_variables.then(|| format!("`{program}` evaluates the subscript in `{}`", snippet(arg)))
}

/// Builtins that set variables named in their arguments.
const ASSIGNING_BUILTINS: &[&str] = &["read", "mapfile", "readarray", "getopts"];

/// Whether arithmetic text (`((...))`, `$((...))`, a C-style `for`) assigns:
/// `=` that is not `==`, `!=`, `<=`, `>=`, or `++`/`--`. A `{ ...; }` group
/// (the same node kind as `((...))`) does not count.
fn assigns_in_arithmetic(text: &str) -> bool {
    let text = text.trim_start();
    if !(text.starts_with("((") || text.starts_with("$((") || text.starts_with("for")) {
        return false;
    }
    let bytes = text.as_bytes();
    bytes.windows(2).any(|w| w == b"++" || w == b"--")
        || bytes.iter().enumerate().any(|(i, &b)| {
            b == b'='
                && bytes.get(i + 1) != Some(&b'=')
                && !matches!(
                    i.checked_sub(1).map(|j| bytes[j]),
                    Some(b'=' | b'!' | b'<' | b'>')
                )
        })
}

/// Whether a `${...}` expansion assigns a default (`${v=x}`, `${v:=x}`).
fn assigns_default(text: &str) -> bool {
    let Some(inner) = text.strip_prefix("${") else {
        return false;
    };
    let name_end = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(inner.len());
    let rest = &inner[name_end..];
    name_end > 0 && (rest.starts_with('=') || rest.starts_with(":="))
}

/// Pushes the children worth visiting (named ones, and missing tokens that
/// reveal a parse error) so that they are popped in source order.
/// An empty task stack with the memory of `stack`, for nodes of another
/// tree: collecting an emptied vector into one of the same layout reuses
/// its allocation.
#[allow(clippy::unnecessary_filter_map)] // `filter` would keep the type
fn recycle<'b>(mut stack: Vec<Task<'_>>) -> Vec<Task<'b>> {
    stack.clear();
    stack.into_iter().filter_map(|_| None).collect()
}

fn push_children<'t>(node: Node<'t>, stack: &mut Vec<Task<'t>>) {
    let start = stack.len();
    let mut cursor = node.walk();
    stack.extend(
        node.children(&mut cursor)
            .filter(|c| c.is_named() || c.is_missing())
            .map(|c| Task::Visit(c, Vec::new())),
    );
    stack[start..].reverse();
}

/// The command that ends `node`, where `node` is a list or pipeline (or
/// `node` itself): the one that redirections after the list apply to.
fn last_command(node: Node<'_>) -> Node<'_> {
    let mut node = node;
    while matches!(node.kind(), "list" | "pipeline") {
        let mut cursor = node.walk();
        let last = node
            .named_children(&mut cursor)
            .filter(|c| c.kind() != "comment")
            .last();
        match last {
            Some(last) => node = last,
            None => break,
        }
    }
    node
}

/// Node kinds that are words (arguments) to bash.
fn is_word_kind(kind: &str) -> bool {
    matches!(
        kind,
        "word"
            | "number"
            | "string"
            | "raw_string"
            | "ansi_c_string"
            | "translated_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "arithmetic_expansion"
            | "brace_expression"
    )
}

/// Whether the heredoc whose body is `body` has a quoted delimiter, so that
/// its body is literal text.
fn heredoc_is_quoted(src: &str, body: Node<'_>) -> bool {
    heredoc_start(body).is_some_and(|(_, s)| node_text(src, s).contains(['\'', '"', '\\']))
}

/// The delimiter (`heredoc_start`) of the heredoc whose body is `body`,
/// and the node that holds both. That is the body's parent, unless
/// tree-sitter's error recovery wrapped the body in an `ERROR` of its own
/// (`<<E'O'F` with no line `E'O'F`): then the last delimiter before the
/// body in the nearest of a few ancestors.
fn heredoc_start(body: Node<'_>) -> Option<(Node<'_>, Node<'_>)> {
    let mut holder = body.parent()?;
    for _ in 0..4 {
        let mut cursor = holder.walk();
        let start = holder
            .named_children(&mut cursor)
            .filter(|c| c.kind() == "heredoc_start" && c.end_byte() <= body.start_byte())
            .last();
        if let Some(start) = start {
            return Some((holder, start));
        }
        holder = holder.parent()?;
    }
    None
}

/// The scripts that bash would run from `text` (the text of an expansion,
/// arithmetic, heredoc body or unparsed region): the inside of every
/// outermost `$(...)`, `<(...)`, `>(...)` and `` `...` ``. `$((...))` is
/// arithmetic when its parentheses close as `))`, otherwise (`$((cmd) )`)
/// a substitution holding a subshell, as in bash. Quotes are not
/// respected: this looks for hidden commands, it proves nothing. A
/// `$(`, `<(` or `>(` at an offset `walked` is true for (one parsed and
/// walked already) is not returned, but searched inside. Linear:
/// parentheses are matched once, up front, and no byte is scanned twice.
fn hidden_scripts(text: &str, walked: impl Fn(usize) -> bool) -> Vec<(usize, String)> {
    let b = text.as_bytes();
    let mut closes = vec![usize::MAX; b.len()];
    let mut open = Vec::new();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'(' => open.push(i),
            b')' => {
                if let Some(o) = open.pop() {
                    closes[o] = i;
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'$' | b'<' | b'>' if b.get(i + 1) == Some(&b'(') => {
                let close = closes[i + 1];
                if close == usize::MAX {
                    // Unterminated: bash stops with a syntax error and runs
                    // none of it; look on for complete ones inside.
                    i += 2;
                    continue;
                }
                let end = close;
                let arithmetic = b[i] == b'$'
                    && b.get(i + 2) == Some(&b'(')
                    && closes[i + 2] != usize::MAX
                    && closes[i + 2] + 1 == close;
                if arithmetic {
                    // Look inside the arithmetic for substitutions.
                    i += 3;
                    continue;
                }
                if walked(i) {
                    i += 2;
                    continue;
                }
                out.push((i, String::from_utf8_lossy(&b[i + 2..end]).into_owned()));
                i = end + 1;
            }
            b'`' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'`' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(b.len());
                out.push((
                    i,
                    unescape_backticks(&String::from_utf8_lossy(&b[i + 1..end]), false),
                ));
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// A command's words and its redirections in a canonical order, for
/// comparing the two readings.
type Normal = (Vec<String>, Vec<(String, String)>);

fn normal(command: &strict::Command) -> Normal {
    normal_of(
        command.words.iter().map(|w| w.text.clone()).collect(),
        &command.redirects,
    )
}

fn normal_of(words: Vec<String>, redirects: &[Redirect]) -> Normal {
    let mut redirects: Vec<_> = redirects.iter().map(pair).collect();
    redirects.sort();
    (words, redirects)
}

fn pair(r: &Redirect) -> (String, String) {
    (r.op.clone(), r.target.clone())
}

#[cfg(test)]
thread_local! {
    /// Bytes of text scanned by the walk's whole-node searches and by the
    /// parses of nested scripts, for tests that check the work is linear.
    static WORK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
fn count_work(bytes: usize) {
    WORK.with(|w| w.set(w.get().saturating_add(bytes)));
}

#[cfg(not(test))]
fn count_work(_: usize) {}

/// Analyses `script` and returns the bytes scanned along the way (see
/// [`WORK`]).
#[cfg(test)]
pub(super) fn analyze_counting(script: &str) -> (CommandAnalysis, usize) {
    WORK.with(|w| w.set(0));
    let got = analyze_nested(script, 0);
    (got, WORK.with(std::cell::Cell::get))
}

/// Where bash ends a command between the end of its part before `node`
/// (`from`) and `node`: the first unquoted newline in the blanks and line
/// continuations there, or in those `node`'s text starts with.
///
/// tree-sitter-bash's lexer, after a word, reads a newline followed by a
/// backslash as the start of a word (`ls x<newline>\rm -rf /` gives the
/// words `ls`, `x`, `<newline>\rm`, `-rf`, `/`), and skips a newline
/// before a line continuation the same way (`<newline>\<newline>\rm`),
/// so the command on the next line becomes arguments of the command (or
/// destinations of the redirection) before it, and deny rules would never
/// see it as a program. A node of a command never starts after an
/// unquoted newline in bash; where one does, bash runs what follows as a
/// command of its own.
fn line_end_before(src: &str, from: usize, node: Node<'_>) -> Option<usize> {
    let b = src.as_bytes();
    let end = node.end_byte().min(b.len());
    let mut i = from;
    while i < end {
        match b[i] {
            b' ' | b'\t' | b'\r' => i += 1,
            b'\\' if b.get(i + 1) == Some(&b'\n') => i += 2,
            b'\n' => return Some(i),
            _ => return None,
        }
    }
    None
}

/// Removes from `word` the line end (and blanks) that tree-sitter read
/// into the start of `node`'s text (see [`line_end_before`]): the word
/// bash reads starts after them. A word that does not start so is left
/// as it is.
fn strip_line_start(src: &str, node: Node<'_>, word: &mut Word) {
    let text = node_text(src, node);
    let lead = text
        .bytes()
        .take_while(|b| matches!(b, b'\n' | b'\r' | b' ' | b'\t'))
        .count();
    if lead > 0 && text.as_bytes()[..lead].contains(&b'\n') && word.text.starts_with(&text[..lead])
    {
        word.text.drain(..lead);
    }
}

/// Whether a `#` at `at` starts a word for bash: at the start of the
/// script or after a blank (space, tab, newline) or an operator byte,
/// and not after a line continuation.
fn starts_a_word(src: &str, at: usize) -> bool {
    let mut before = &src.as_bytes()[..at.min(src.len())];
    // Line continuations are removed before bash reads words.
    while let [rest @ .., b'\\', b'\n'] = before {
        before = rest;
    }
    match before {
        [] => true,
        [.., c] => matches!(
            c,
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
        ),
    }
}

/// A heredoc delimiter after quote removal, as bash compares it with the
/// lines of the body.
fn unquote_delimiter(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '\'' => out.extend(chars.by_ref().take_while(|&c| c != '\'')),
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(n @ ('$' | '`' | '"' | '\\')) => out.push(n),
                            Some(n) => {
                                out.push('\\');
                                out.push(n);
                            }
                            None => out.push('\\'),
                        },
                        _ => out.push(c),
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Whether the words read so far leave the next word at the start of a
/// pipeline, where bash reads `!` as a reserved word: no words, or only
/// the keyword `time` and its `-p`.
fn pipeline_start(words: &[Word]) -> bool {
    match words.split_first() {
        None => true,
        Some((first, rest)) => first.text == "time" && rest.iter().all(|w| w.text == "-p"),
    }
}
