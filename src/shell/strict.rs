//! A second, strict reading of a script, straight from its bytes.
//!
//! tree-sitter-bash recovers from errors and reads some bytes differently
//! from bash (CR, FF and VT are blanks to it, word bytes to bash; it loses
//! the end of a partly quoted heredoc delimiter; ...). An allow decision
//! must rest on what bash itself would run, so this reader follows bash's
//! own definitions for a deliberately small subset of the language:
//!
//! - blanks are space and tab; newline ends a command; the metacharacters
//!   are `| & ; ( ) < >`, space, tab and newline;
//! - backslash-newline is removed (outside single quotes and comments);
//! - a comment starts at a `#` that begins a word and runs to the newline;
//! - words: plain bytes, `\x` escapes, `'...'`, `"..."` whose content is
//!   literal or a simple `$NAME`/`${NAME}`, `$'...'` without `\c`, `\u`,
//!   `\U` or NUL, simple `$NAME`, `${NAME}`, `${#NAME}`, globs (kept as
//!   patterns), tilde;
//! - operators `; & && || | |&`, newline, `!`, `( )`, `{ }`, `if then elif
//!   else fi`, `while until do done`;
//! - `for NAME in WORDS; do LIST; done` over literal words and globs (see
//!   `loops.rs`): LIST is read once per word, with the word in place of
//!   `$NAME` and `${NAME}`;
//! - redirections with a descriptor prefix, file targets, duplications,
//!   here-strings and heredocs (delimiter quote removal, `<<-` tab
//!   stripping, bodies that are literal).
//!
//! Everything else (substitutions, `${` operators, arithmetic, `[[`, `((`,
//! other `for` loops, `case`, functions, `coproc`, arrays, brace expansion, control
//! bytes outside quotes, ...) is refused with a phrase naming it. The
//! caller compares this reading with the tree-sitter walk; an allow needs
//! both to agree.

use super::Redirect;
use super::loops;
use super::word::{
    Binding, Bound, Item, Known, SNIPPET_CHARS, Word, ansi_c, lookup, snippet, unescape_backticks,
};

/// One simple command as bash would run it, before wrappers are stripped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Command {
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// The names of the variables assigned before the command name
    /// (`a=1 b+=2 ls`: `a`, `b`).
    pub assignments: Vec<String>,
}

/// The strict reading of a whole script.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Reading {
    pub commands: Vec<Command>,
    /// Redirections on no simple command (`> f`, `{ } > f`).
    pub bare: Vec<Redirect>,
    /// Where each `$(`, `<(` or `>(` read as a script starts (long
    /// scripts only, see [`Reader::min_part`]), in source order.
    pub substitutions: Vec<usize>,
    /// The byte ranges of the backquoted substitutions read as scripts,
    /// outermost only, in source order.
    pub backticks: Vec<(usize, usize)>,
    /// Whether the reader refused only because the script ends inside a
    /// construct or after an operator: bash then reads to the end, reports
    /// a syntax error and runs nothing from that line on, so no other
    /// reading of the rest can find commands that run.
    pub unfinished: bool,
    /// Whether the reader stopped at substitutions nested more than
    /// [`MAX_SUBSTITUTION_NESTING`] levels deep.
    pub too_deep: bool,
}

/// Reads `src`, or names the first construct outside the subset.
#[cfg(test)]
pub(super) fn read(src: &str) -> Result<Reading, String> {
    let (reading, refused) = read_bound(src, &[]);
    match refused {
        Some(phrase) => Err(phrase),
        None => Ok(reading),
    }
}

/// Reads `src`, inside the body of loops whose variables are bound (the
/// text of a `[ ... ]` in a loop's body); on a construct outside the
/// subset, also names it and returns the commands completed before it
/// (bash runs those as read).
pub(super) fn read_bound(src: &str, bindings: &[Binding]) -> (Reading, Option<String>) {
    loops::scope(|| {
        let mut reader = Reader::new(src, None, 0);
        reader.bindings = bindings.to_vec();
        let refused = reader.run().err();
        (reader.out, refused)
    })
}

/// A place where the script can be cut in two without changing how either
/// part reads: `end` is where the text before it ends, `next` where the
/// text after it starts. The bytes between them (a control operator) are
/// in neither part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Split {
    pub end: usize,
    pub next: usize,
    /// How many commands and bare redirections of the reading come
    /// before the cut.
    pub commands: usize,
    pub bare: usize,
}

/// [`read_bound`] without bindings, also listing where the script can be cut (with
/// `Some(min)`): after each top-level command list or pipeline element
/// (`;`, `&`, `&&`, `||`, `|`, `|&`, or a newline and the heredoc bodies
/// it starts), outside every compound command and with no heredoc
/// pending, read before any construct outside the subset. Bash reads the
/// commands on either side of such a cut the same way whatever is on the
/// other side. A cut is listed only when at least `min` bytes follow the
/// previous one, so that the parts are not needlessly small.
pub(super) fn read_with_splits(
    src: &str,
    min: Option<usize>,
) -> (Reading, Option<String>, Vec<Split>) {
    loops::scope(|| {
        let mut reader = Reader::new(src, min, 0);
        let refused = reader.run().err();
        if refused.is_some() {
            // The part the reader refused to read may reach back to the last
            // cut (`ls &&` at the end, `ls | $(x)`): it is read whole.
            reader.splits.pop();
        }
        (reader.out, refused, reader.splits)
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Subshell,
    Group,
    If,
    Loop,
    /// The script inside `$(...)`, `<(...)` or `>(...)`.
    Substitution,
    /// `case ... in ... esac` (long scripts only).
    Case,
    /// `for NAME in WORDS; do` over words it can expand (see [`ForLoop`]).
    For,
}

/// A `for` loop being read (see `loops.rs`): its body is read once
/// without its variable bound, to find where it ends, then once per word
/// with the word bound. In a short script the first reading is dropped;
/// in a long one it stays, so that deny rules see the body as written too.
#[derive(Debug)]
struct ForLoop {
    name: String,
    items: Vec<Item>,
    /// Where the body starts, right after `do`.
    body_start: usize,
    /// The word bound in the pass being read (0 is the first, unbound,
    /// reading; `n` binds `items[n - 1]`).
    pass: usize,
    /// What the reading held when the body started: commands, bare
    /// redirections, and the count of commands read with a variable bound.
    commands: usize,
    bare: usize,
    expanded: usize,
}

/// What an expansion read as text (arithmetic, `${...}` with an
/// operator) has open, innermost last; see [`Reader::expansion`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// `$((` or `((`: closes with `))`.
    Arithmetic,
    /// `(` inside arithmetic.
    Paren,
    /// `$[`, or `[` inside it.
    Bracket,
    /// `${`: closes at the first `}` (bash counts only nested `${`).
    Parameter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of a command: reserved words are recognised; an empty
    /// command here is fine (blank line).
    Start,
    /// After `|`, `&&`, `||`: a command must follow (newlines may come first).
    Need,
    /// Inside a simple command, after its first word or redirection.
    Simple,
    /// After a closing `)`, `}`, `fi` or `done`: only redirections and
    /// operators may follow. Redirections apply to the commands from the
    /// index given.
    Closed(usize),
    /// Inside `case`, where a pattern list or `esac` comes next.
    Pattern,
}

#[derive(Debug, Default)]
struct Current {
    words: Vec<Word>,
    redirects: Vec<Redirect>,
    assignments: Vec<String>,
    /// Whether an assignment was seen: reserved words are no longer
    /// recognised.
    assigned: bool,
}

struct Heredoc {
    delimiter: String,
    strip_tabs: bool,
    quoted: bool,
}

/// A word as read: its value after quote removal, its source bytes, and
/// what is known of it.
struct Read {
    value: String,
    raw_start: usize,
    raw_end: usize,
    known: Known,
    quoted: bool,
    bound: Bound,
}

struct Reader<'s> {
    src: &'s str,
    b: &'s [u8],
    pos: usize,
    out: Reading,
    current: Current,
    frames: Vec<(Frame, usize)>,
    heredocs: Vec<Heredoc>,
    state: State,
    /// Commands that redirections of compound commands may still be
    /// copied onto: nested redirected groups must not make the reading
    /// quadratic.
    attach_budget: usize,
    /// Whether the last operator was `|` or `|&`, after which `!` is a
    /// syntax error.
    after_pipe: bool,
    /// The `for` loops being read, innermost last (one per [`Frame::For`]).
    fors: Vec<ForLoop>,
    /// The loop variables bound, innermost last.
    bindings: Vec<Binding>,
    /// Commands read while a loop variable was bound (see
    /// [`loops::MAX_COMMANDS`]).
    expanded: usize,
    /// Whether, and how far apart, cuts are listed (see [`read_with_splits`]).
    /// With cuts the script is a long one, unprovable whatever its reading,
    /// and read by this reader alone where it can (see `walk.rs`): then
    /// heredocs may be left with nothing after them (bash warns and runs
    /// the command with empty bodies), and function definitions and `for`
    /// headers are read, so that the commands inside are seen without
    /// tree-sitter.
    min_part: Option<usize>,
    /// Where the part after the last cut starts.
    part_start: usize,
    splits: Vec<Split>,
    /// How many substitutions the reader is inside (a backquoted one read
    /// by a reader of its own counts too).
    nesting: usize,
    /// Bytes of substitution and expansion text still copied verbatim
    /// into words (as the walk does: nested `$($(...))` would otherwise
    /// copy each level's text into the word around it).
    verbatim_budget: usize,
}

/// How deeply substitutions are read inside one another. bash itself, with
/// its default 8 MiB stack, crashes parsing 2,000 nested `$(`; a script
/// that nests them deeper than this cannot be judged (see
/// [`Reading::too_deep`]). No script of 16 KiB or less can: each level
/// takes at least three bytes. Nested substitutions are read by recursion,
/// on a stack that grows on the heap as needed ([`stacker`]).
pub(super) const MAX_SUBSTITUTION_NESTING: usize = 8192;

/// Stack left before a nested substitution is read on a new stack segment,
/// and the size of such a segment.
const STACK_RED_ZONE: usize = 64 * 1024;
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// See [`Reader::verbatim_budget`]; the walk's bound.
const VERBATIM_BUDGET: usize = 64 * 1024;

/// Characters kept of a substitution's text once the budget is spent.
const SHORT_VERBATIM_CHARS: usize = 32;

/// See [`Reader::attach_budget`]; the same bound as the walk's.
const MAX_ATTACH_WORK: usize = 1 << 20;

/// Bytes that end an unquoted word.
fn is_meta(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b'|' | b'&' | b';' | b'(' | b')' | b'<' | b'>'
    )
}

/// Bytes a word copies as they are: none that [`Reader::word`] treats
/// apart (metacharacters, quotes, escapes, expansions, globs, braces and
/// the control bytes it refuses).
fn is_plain(c: u8) -> bool {
    !is_meta(c)
        && !matches!(
            c,
            b'\\'
                | b'\''
                | b'"'
                | b'`'
                | b'$'
                | b'*'
                | b'?'
                | b'['
                | b'{'
                | b'}'
                | b','
                | b'.'
                | 0
                | 0x01
                | 0x7f
        )
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_name(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Words that bash reads as syntax at the start of a command and that this
/// reader does not model.
const UNMODELLED_KEYWORDS: &[&str] = &[
    "for", "case", "esac", "select", "function", "coproc", "[[", "]]", "in",
];

impl<'s> Reader<'s> {
    fn new(src: &'s str, min_part: Option<usize>, nesting: usize) -> Self {
        Reader {
            src,
            b: src.as_bytes(),
            pos: 0,
            out: Reading::default(),
            current: Current::default(),
            frames: Vec::new(),
            heredocs: Vec::new(),
            state: State::Start,
            attach_budget: MAX_ATTACH_WORK,
            after_pipe: false,
            fors: Vec::new(),
            bindings: Vec::new(),
            expanded: 0,
            min_part,
            part_start: 0,
            splits: Vec::new(),
            nesting,
            verbatim_budget: VERBATIM_BUDGET.saturating_add(src.len()),
        }
    }

    /// Whether the script is a long one (see [`Reader::min_part`]), in
    /// which substitutions, arithmetic, `${...}` operators and brace
    /// expansion are read for the commands they run.
    fn long(&self) -> bool {
        self.min_part.is_some()
    }

    fn peek(&self, off: usize) -> Option<u8> {
        self.b.get(self.pos + off).copied()
    }

    fn at_continuation(&self, at: usize) -> bool {
        self.b.get(at) == Some(&b'\\') && self.b.get(at + 1) == Some(&b'\n')
    }

    fn near(&self) -> String {
        quote_from(self.b, self.pos)
    }

    fn run(&mut self) -> Result<(), String> {
        loop {
            if self.state == State::Pattern {
                self.case_patterns()?;
                continue;
            }
            self.skip_blanks();
            let Some(c) = self.peek(0) else {
                let finished = self.finish();
                self.out.unfinished = finished.is_err();
                return finished;
            };
            match c {
                b'\n' => {
                    self.pos += 1;
                    if self.state != State::Need {
                        self.end_command("newline")?;
                        self.state = State::Start;
                    }
                    self.read_heredocs()?;
                    self.cut(self.pos, self.pos);
                }
                b'#' => {
                    while self.peek(0).is_some_and(|c| c != b'\n') {
                        self.pos += 1;
                    }
                }
                b';' => {
                    if matches!(self.peek(1), Some(b';' | b'&')) {
                        self.end_case_item()?;
                        continue;
                    }
                    self.operator(1, "`;`", State::Start)?;
                }
                b'&' if self.peek(1) == Some(b'&') => self.operator(2, "`&&`", State::Need)?,
                b'&' if self.peek(1) == Some(b'>') => self.redirect(None)?,
                b'&' => self.operator(1, "`&`", State::Start)?,
                b'|' if self.peek(1) == Some(b'|') => self.operator(2, "`||`", State::Need)?,
                b'|' => {
                    let len = if self.peek(1) == Some(b'&') { 2 } else { 1 };
                    self.operator(len, "`|`", State::Need)?;
                    self.after_pipe = true;
                }
                b'(' => self.open_paren()?,
                b')' => {
                    self.end_command("`)`")?;
                    if self.frames.last().map(|f| f.0) == Some(Frame::Substitution) {
                        if !self.heredocs.is_empty() {
                            return Err("a substitution ends before its heredoc".to_string());
                        }
                        self.frames.pop();
                        self.pos += 1;
                        return Ok(());
                    }
                    self.close(Frame::Subshell, "`)`")?;
                    self.pos += 1;
                }
                b'<' | b'>' if self.long() && self.peek(1) == Some(b'(') => {
                    self.word_or_keyword()?;
                }
                b'<' | b'>' => self.redirect(None)?,
                _ => self.word_or_keyword()?,
            }
        }
    }

    /// Skips spaces, tabs and line continuations.
    fn skip_blanks(&mut self) {
        loop {
            match self.peek(0) {
                Some(b' ' | b'\t') => self.pos += 1,
                Some(b'\\') if self.at_continuation(self.pos) => self.pos += 2,
                _ => return,
            }
        }
    }

    /// A control operator of `len` bytes ending the current command.
    fn operator(&mut self, len: usize, what: &str, next: State) -> Result<(), String> {
        if self.at_continuation(self.pos + len) && len == 1 {
            return Err(format!("line continuation after {what}"));
        }
        self.end_command(what)?;
        let start = self.pos;
        self.pos += len;
        self.state = next;
        self.cut(start, self.pos);
        Ok(())
    }

    /// Lists a cut between `end` and `next` when the reader is at the top
    /// level with no heredoc pending (see [`read_with_splits`]).
    fn cut(&mut self, end: usize, next: usize) {
        let Some(min) = self.min_part else {
            return;
        };
        let mut after = next;
        while matches!(self.b.get(after), Some(b' ' | b'\t')) {
            after += 1;
        }
        if self.frames.is_empty()
            && self.heredocs.is_empty()
            && !self.at_continuation(after)
            && end >= self.part_start.saturating_add(min)
        {
            self.splits.push(Split {
                end,
                next,
                commands: self.out.commands.len(),
                bare: self.out.bare.len(),
            });
            self.part_start = next;
        }
    }

    /// Ends the simple command being read, before `what`.
    fn end_command(&mut self, what: &str) -> Result<(), String> {
        let current = std::mem::take(&mut self.current);
        match self.state {
            State::Simple => {
                if current.words.is_empty() {
                    self.out.bare.extend(current.redirects);
                } else {
                    if !self.bindings.is_empty() {
                        self.expanded += 1;
                    }
                    self.out.commands.push(Command {
                        words: current.words,
                        redirects: current.redirects,
                        assignments: current.assignments,
                    });
                }
                Ok(())
            }
            State::Closed(_) => Ok(()),
            // A blank line, or `( ls; )`.
            State::Start if what == "newline" || what == "`)`" => Ok(()),
            State::Start | State::Need | State::Pattern => {
                Err(format!("syntax: no command before {what}"))
            }
        }
    }

    fn finish(&mut self) -> Result<(), String> {
        if self.state == State::Need {
            return Err("syntax: the script ends after an operator".to_string());
        }
        self.end_command("newline")?;
        if !self.heredocs.is_empty() {
            if self.min_part.is_none() {
                return Err("heredoc without its end".to_string());
            }
            // See `read_heredocs`: the bodies end with the input.
            self.read_heredocs()?;
        }
        if !self.frames.is_empty() {
            return Err("syntax: an unclosed compound command".to_string());
        }
        Ok(())
    }

    fn open_paren(&mut self) -> Result<(), String> {
        if self.long_function_definition() {
            return Ok(());
        }
        if self.long()
            && self.state == State::Simple
            && self.current.words.is_empty()
            && self.current.assigned
            && self.pos > 0
            && self.b[self.pos - 1] == b'='
        {
            return self.long_array();
        }
        if self.state == State::Simple && self.current.words.len() == 1 {
            return Err(format!(
                "function definition `{}()`",
                snippet(&self.current.words[0].text)
            ));
        }
        if !matches!(self.state, State::Start | State::Need) {
            return Err(format!(
                "`(` after a word (function definition, array or pattern) near `{}`",
                self.near()
            ));
        }
        if self.peek(1) == Some(b'(') && self.long() {
            // An arithmetic command runs nothing but the substitutions
            // inside; redirections after it belong to those, or to none.
            let from = self.out.commands.len();
            self.pos += 2;
            self.expansion(Open::Arithmetic, false)?;
            self.state = State::Closed(from);
            return Ok(());
        }
        if self.peek(1) == Some(b'(') || self.at_continuation(self.pos + 1) {
            return Err("arithmetic command `((`".to_string());
        }
        self.pos += 1;
        self.frames.push((Frame::Subshell, self.out.commands.len()));
        self.state = State::Start;
        Ok(())
    }

    /// In a long script (see [`Reader::min_part`]), `name ( )` before a
    /// compound command: the name is dropped and the body is read as the
    /// compound command it is, so deny rules see its commands (bash runs
    /// them when the function is called). A long script is unprovable
    /// anyway; the subset read for an allow does not change.
    fn long_function_definition(&mut self) -> bool {
        if self.min_part.is_none()
            || self.state != State::Simple
            || self.current.words.len() != 1
            || !self.current.redirects.is_empty()
            || self.current.assigned
            || self.current.words[0].known != Known::Literal
        {
            return false;
        }
        let mut at = self.pos + 1;
        while matches!(self.b.get(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        if self.b.get(at) != Some(&b')') {
            return false;
        }
        self.pos = at + 1;
        self.current = Current::default();
        self.state = State::Start;
        true
    }

    /// In a long script, the elements of `NAME=(...)` after an assignment
    /// before the command name: words (their substitutions run), line
    /// ends and comments, up to `)`.
    fn long_array(&mut self) -> Result<(), String> {
        self.pos += 1;
        loop {
            self.skip_blanks_and_lines()?;
            match self.peek(0) {
                Some(b')') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(c) if !is_meta(c) => {
                    self.word()?;
                }
                None => {
                    self.out.unfinished = true;
                    return Err("syntax: the script ends in an array".to_string());
                }
                Some(_) => return Err(format!("array assignment near `{}`", self.near())),
            }
        }
    }

    /// `for NAME in WORDS; do` where the loop can be expanded (see
    /// `loops.rs`): opens [`Frame::For`], whose body is read first with
    /// the variable unbound (see [`ForLoop`]). `None`, with nothing read,
    /// for any other `for`.
    fn for_header(&mut self) -> Result<Option<()>, String> {
        let start = self.pos;
        let held = (
            self.out.commands.len(),
            self.out.bare.len(),
            self.out.substitutions.len(),
            self.out.backticks.len(),
            self.out.unfinished,
            self.out.too_deep,
            self.verbatim_budget,
        );
        match self.expandable_header() {
            Ok(Some(header)) => {
                self.frames.push((Frame::For, self.out.commands.len()));
                self.fors.push(header);
                self.state = State::Start;
                Ok(Some(()))
            }
            // A `for` read otherwise (or refused) is read again from its
            // start; what this reading found is dropped.
            Ok(None) | Err(_) => {
                self.pos = start;
                self.out.commands.truncate(held.0);
                self.out.bare.truncate(held.1);
                self.out.substitutions.truncate(held.2);
                self.out.backticks.truncate(held.3);
                self.out.unfinished = held.4;
                self.out.too_deep = held.5;
                self.verbatim_budget = held.6;
                Ok(None)
            }
        }
    }

    /// The header of an expandable `for` up to and past its `do`, or `None`.
    fn expandable_header(&mut self) -> Result<Option<ForLoop>, String> {
        // A heredoc pending would be read inside the header or the body,
        // and read again with each pass.
        if !self.heredocs.is_empty() {
            return Ok(None);
        }
        let Some(name) = self.plain_word()? else {
            return Ok(None);
        };
        if !loops::name_ok(&name)
            || self.fors.len() >= loops::MAX_DEPTH
            || self.fors.iter().any(|f| f.name == name)
            || lookup(&self.bindings, &name).is_some()
        {
            return Ok(None);
        }
        if self.plain_word()?.as_deref() != Some("in") {
            return Ok(None);
        }
        let mut items = Vec::new();
        loop {
            self.skip_blanks();
            match self.peek(0) {
                Some(b';') if self.peek(1) != Some(b';') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\n') => {
                    self.pos += 1;
                    break;
                }
                Some(c) if is_meta(c) || c == b'#' => return Ok(None),
                None => return Ok(None),
                Some(_) => {
                    let word = self.word()?;
                    let raw = &self.src[word.raw_start..word.raw_end];
                    match loops::item(raw, &word.value, word.known) {
                        Some(item) if items.len() < loops::MAX_ITEMS => items.push(item),
                        _ => return Ok(None),
                    }
                }
            }
        }
        if items.is_empty() {
            return Ok(None);
        }
        // Line ends and comments may come before `do`.
        self.skip_blanks_and_lines()?;
        if self.plain_word()?.as_deref() != Some("do") {
            return Ok(None);
        }
        Ok(Some(ForLoop {
            name,
            items,
            body_start: self.pos,
            pass: 0,
            commands: self.out.commands.len(),
            bare: self.out.bare.len(),
            expanded: self.expanded,
        }))
    }

    /// After blanks, a word written without quotes, escapes or
    /// expansions, or `None`.
    fn plain_word(&mut self) -> Result<Option<String>, String> {
        self.skip_blanks();
        match self.peek(0) {
            Some(c) if !is_meta(c) && c != b'#' => {}
            _ => return Ok(None),
        }
        let word = self.word()?;
        let raw = &self.src[word.raw_start..word.raw_end];
        Ok(
            (!word.quoted && word.known == Known::Literal && raw == word.value)
                .then_some(word.value),
        )
    }

    /// `done` of an expandable `for` loop (see [`ForLoop`]), which starts
    /// at `at`: the body is read again with the next word bound, or the
    /// loop is closed.
    fn end_for(&mut self, at: usize) -> Result<(), String> {
        let Some(last) = self.fors.last() else {
            return Err("syntax: `done` closes nothing".to_string());
        };
        if last.pass == 0 {
            // Inside the first reading of a loop around it, which is
            // dropped or read again, this loop is read once as it is.
            let around_unbound = self.fors[..self.fors.len() - 1].iter().any(|f| f.pass == 0);
            if around_unbound {
                self.fors.pop();
                return self.close(Frame::For, "`done`");
            }
            let body = &self.src[last.body_start..at];
            let expandable = self.heredocs.is_empty()
                && self.expanded <= loops::MAX_COMMANDS
                && loops::expandable(body, &last.name, &last.items);
            if !expandable {
                if !self.long() {
                    return Err(format!(
                        "a `for` loop over `{}` that cannot be expanded",
                        last.name
                    ));
                }
                self.fors.pop();
                return self.close(Frame::For, "`done`");
            }
            if !self.long() {
                // The unbound reading was only to find the body's end.
                self.out.commands.truncate(last.commands);
                self.out.bare.truncate(last.bare);
                self.expanded = last.expanded;
            }
        } else {
            self.bindings.pop();
            let last_pass = last.pass == last.items.len();
            if !last_pass && self.expanded > loops::MAX_COMMANDS && !self.long() {
                return Err(format!(
                    "`for` loops expand to more than {} commands",
                    loops::MAX_COMMANDS
                ));
            }
            if last_pass || self.expanded > loops::MAX_COMMANDS {
                self.fors.pop();
                return self.close(Frame::For, "`done`");
            }
        }
        let Some(f) = self.fors.last_mut() else {
            return Err("syntax: `done` closes nothing".to_string());
        };
        self.bindings.push(Binding {
            name: f.name.clone(),
            item: f.items[f.pass].clone(),
        });
        f.pass += 1;
        self.pos = f.body_start;
        self.state = State::Start;
        self.after_pipe = false;
        Ok(())
    }

    /// In a long script, the header of `for NAME [in WORDS] ; do`: no
    /// command, the loop is then read as `while` loops are. (`for` is
    /// refused otherwise.)
    fn long_for_header(&mut self) -> Result<(), String> {
        self.skip_blanks();
        let name = self.word()?;
        if name.quoted || name.value.is_empty() || !name.value.bytes().all(is_name) {
            return Err("`for` compound command".to_string());
        }
        let mut first = true;
        loop {
            self.skip_blanks();
            match self.peek(0) {
                Some(b';') if self.peek(1) != Some(b';') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\n') => {
                    self.pos += 1;
                    self.read_heredocs()?;
                    break;
                }
                Some(c) if is_meta(c) || c == b'#' => {
                    return Err("`for` compound command".to_string());
                }
                None => return Err("syntax: the script ends in a `for`".to_string()),
                Some(_) => {
                    let word = self.word()?;
                    if first && (word.quoted || word.value != "in") {
                        return Err("`for` compound command".to_string());
                    }
                    first = false;
                }
            }
        }
        self.open(Frame::Loop)
    }

    /// In a long script, `case WORD in`: the word is read (its
    /// substitutions run), then pattern lists and their commands follow.
    fn case_header(&mut self) -> Result<(), String> {
        self.skip_blanks();
        match self.peek(0) {
            Some(c) if !is_meta(c) && c != b'#' => {
                self.word()?;
            }
            _ => return Err("`case` compound command".to_string()),
        }
        self.skip_blanks_and_lines()?;
        match self.peek(0) {
            Some(c) if !is_meta(c) => {
                let word = self.word()?;
                if word.quoted || word.value != "in" {
                    return Err("`case` compound command".to_string());
                }
            }
            _ => return Err("`case` compound command".to_string()),
        }
        self.frames.push((Frame::Case, self.out.commands.len()));
        self.state = State::Pattern;
        Ok(())
    }

    /// Skips blanks, line ends (reading the heredocs they start) and
    /// comments.
    fn skip_blanks_and_lines(&mut self) -> Result<(), String> {
        loop {
            self.skip_blanks();
            match self.peek(0) {
                Some(b'\n') => {
                    self.pos += 1;
                    self.read_heredocs()?;
                }
                Some(b'#') => {
                    while self.peek(0).is_some_and(|c| c != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// Inside `case`, `[(] PATTERN [| PATTERN]... )` or `esac`. The
    /// patterns' substitutions are read (bash expands a pattern to match
    /// it); extended patterns are refused.
    fn case_patterns(&mut self) -> Result<(), String> {
        self.skip_blanks_and_lines()?;
        let Some(c) = self.peek(0) else {
            self.out.unfinished = true;
            return Err("syntax: the script ends in a `case`".to_string());
        };
        // `esac` ends the `case` only as the first word, with no `(`
        // before it; after `(` or `|` it is a pattern.
        let mut first = c != b'(';
        if !first {
            self.pos += 1;
            self.skip_blanks();
        }
        loop {
            match self.peek(0) {
                Some(c) if !is_meta(c) => {
                    let word = self.word()?;
                    if first && !word.quoted && word.value == "esac" {
                        return self.close(Frame::Case, "`esac`");
                    }
                    first = false;
                }
                _ => return Err("`case` pattern".to_string()),
            }
            self.skip_blanks();
            match self.peek(0) {
                Some(b'|') => {
                    self.pos += 1;
                    self.skip_blanks();
                }
                Some(b')') => {
                    self.pos += 1;
                    self.state = State::Start;
                    return Ok(());
                }
                _ => return Err("`case` pattern".to_string()),
            }
        }
    }

    /// `;;`, `;&` or `;;&` at `pos`: the end of a `case` item.
    fn end_case_item(&mut self) -> Result<(), String> {
        if self.frames.last().map(|f| f.0) != Some(Frame::Case) {
            return Err("`;;` or `;&` outside a modelled `case`".to_string());
        }
        // An item may have no command (`a) ;;`).
        if self.state != State::Start {
            self.end_command("`;;`")?;
        }
        self.pos += 2;
        if self.peek(0) == Some(b'&') && self.b[self.pos - 1] == b';' {
            self.pos += 1;
        }
        self.state = State::Pattern;
        Ok(())
    }

    /// In a long script, `[[ ... ]]`: no command, but its words are
    /// expanded, so their substitutions run. `<`, `>`, `&&`, `||` and `!`
    /// are its own operators there. Parentheses, a line end, a comment,
    /// `=~` (whose regular expression has quoting rules of its own) and
    /// anything else unusual are refused.
    fn conditional(&mut self) -> Result<(), String> {
        let from = self.out.commands.len();
        loop {
            self.skip_blanks();
            match self.peek(0) {
                None => {
                    self.out.unfinished = true;
                    return Err("syntax: the script ends in `[[`".to_string());
                }
                Some(b'&') if self.peek(1) == Some(b'&') => self.pos += 2,
                Some(b'|') if self.peek(1) == Some(b'|') => self.pos += 2,
                // Parentheses are refused: after a word they make an
                // extended pattern (`@( ]] )`), which bash reads as one word.
                Some(b'<' | b'>') if self.peek(1) != Some(b'(') => self.pos += 1,
                Some(c) if is_meta(c) || c == b'#' => {
                    return Err(format!("`[[` with `{}`", self.near()));
                }
                Some(_) => {
                    let word = self.word()?;
                    if self.peek(0) == Some(b'(') {
                        self.extended_pattern(&word)?;
                        continue;
                    }
                    if word.quoted {
                        continue;
                    }
                    match word.value.as_str() {
                        "]]" => {
                            self.state = State::Closed(from);
                            return Ok(());
                        }
                        "=~" => return Err("`=~` in `[[`".to_string()),
                        _ => {}
                    }
                }
            }
        }
    }

    /// Inside `[[`, a word right before `(`: bash reads `@(...)`, `!(...)`,
    /// `+(...)`, `*(...)` and `?(...)` as one extended pattern, whatever is
    /// inside (`@( ]] )` does not end the `[[`), and the word goes on
    /// after it. Substitutions inside are read; quotes, `${`, line ends
    /// and any other `(` after a word are refused.
    fn extended_pattern(&mut self, word: &Read) -> Result<(), String> {
        loop {
            let raw = &self.b[word.raw_start..self.pos];
            if !matches!(raw.last(), Some(b'@' | b'!' | b'+' | b'*' | b'?')) {
                return Err(format!("`(` after a word in `[[` near `{}`", self.near()));
            }
            let mut depth = 0usize;
            loop {
                match self.peek(0) {
                    None => {
                        self.out.unfinished = true;
                        return Err("syntax: the script ends in `[[`".to_string());
                    }
                    Some(b'(') => {
                        depth += 1;
                        self.pos += 1;
                    }
                    Some(b')') => {
                        depth -= 1;
                        self.pos += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Some(b'\\') if self.peek(1) != Some(b'\n') => self.pos += 2,
                    Some(b'$') if self.peek(1) == Some(b'(') && self.peek(2) != Some(b'(') => {
                        self.substitution(2)?;
                    }
                    Some(b'\'' | b'"' | b'`' | b'$' | b'\n' | b'\\') => {
                        return Err(format!("extended pattern in `[[` near `{}`", self.near()));
                    }
                    Some(_) => self.pos += 1,
                }
            }
            match self.peek(0) {
                Some(b'(') => {}
                Some(c) if !is_meta(c) => {
                    self.word()?;
                    if self.peek(0) != Some(b'(') {
                        return Ok(());
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// Closes a compound command; following redirections apply to every
    /// command inside it.
    fn close(&mut self, frame: Frame, what: &str) -> Result<(), String> {
        match self.frames.pop() {
            Some((open, from)) if open == frame => {
                self.state = State::Closed(from);
                Ok(())
            }
            _ => Err(format!("syntax: {what} closes nothing")),
        }
    }

    fn word_or_keyword(&mut self) -> Result<(), String> {
        let start = self.pos;
        let word = self.word()?;
        let after_pipe = std::mem::take(&mut self.after_pipe);
        // A descriptor prefix: digits right before `<` or `>`.
        if matches!(self.peek(0), Some(b'<' | b'>')) && !word.quoted {
            let raw = &self.src[word.raw_start..word.raw_end];
            if !raw.is_empty() && raw.bytes().all(|c| c.is_ascii_digit()) {
                return self.redirect(Some(raw.to_string()));
            }
            let digits = !word.value.is_empty() && word.value.bytes().all(|c| c.is_ascii_digit());
            if raw.starts_with('{') || (digits && raw.contains('\\')) {
                return Err(format!("unusual redirection prefix `{}`", snippet(raw)));
            }
        }
        if let State::Closed(_) = self.state {
            self.pos = start;
            return Err(format!(
                "syntax: a word after a compound command near `{}`",
                self.near()
            ));
        }
        let at_start = matches!(self.state, State::Start | State::Need)
            && self.current.words.is_empty()
            && self.current.redirects.is_empty()
            && !self.current.assigned;
        // After the keyword `time` (and `-p`), `!` still negates.
        let after_time = !word.quoted
            && word.bound == Bound::No
            && word.value == "!"
            && self.current.redirects.is_empty()
            && !self.current.assigned
            && self.current.words.first().is_some_and(|w| w.text == "time")
            && self.current.words[1..].iter().all(|w| w.text == "-p");
        if after_time {
            return Ok(());
        }
        // Reserved words are read before expansion: a loop's word in
        // their place is none.
        if at_start && !word.quoted && word.bound == Bound::No {
            match word.value.as_str() {
                "!" if after_pipe => {
                    return Err("syntax: `!` after `|`".to_string());
                }
                "!" => return Ok(()),
                "{" => return self.open(Frame::Group),
                "if" => return self.open(Frame::If),
                "while" | "until" => return self.open(Frame::Loop),
                "then" | "elif" | "else" => return self.inside(Frame::If, &word.value),
                "do" => return self.inside(Frame::Loop, "do"),
                "}" => return self.close(Frame::Group, "`}`"),
                "fi" => return self.close(Frame::If, "`fi`"),
                "done" if self.frames.last().map(|f| f.0) == Some(Frame::For) => {
                    return self.end_for(start);
                }
                "done" => return self.close(Frame::Loop, "`done`"),
                "for" => match self.for_header()? {
                    Some(()) => return Ok(()),
                    None if self.long() => return self.long_for_header(),
                    None => return Err("`for` compound command".to_string()),
                },
                "case" if self.long() => return self.case_header(),
                "esac" if self.long() => return self.close(Frame::Case, "`esac`"),
                "[[" if self.long() => return self.conditional(),
                k if UNMODELLED_KEYWORDS.contains(&k) => {
                    return Err(format!("`{k}` compound command"));
                }
                _ => {}
            }
        }
        let before_name =
            at_start || (self.current.words.is_empty() && self.state == State::Simple);
        if before_name && self.assignment(&word)? {
            let raw = &self.src[word.raw_start..word.raw_end];
            let name = raw.split_once('=').map_or(raw, |(n, _)| n);
            self.current
                .assignments
                .push(name.trim_end_matches('+').to_owned());
            self.current.assigned = true;
            self.state = State::Simple;
            return Ok(());
        }
        self.state = State::Simple;
        self.current.words.push(Word {
            text: word.value,
            known: word.known,
            bound: word.bound,
        });
        Ok(())
    }

    /// Whether `word`, before the command name, is `NAME=value` or
    /// `NAME+=value`; an array element assignment is refused.
    fn assignment(&self, word: &Read) -> Result<bool, String> {
        let raw = &self.b[word.raw_start..word.raw_end];
        if !raw.first().copied().is_some_and(is_name_start) {
            return Ok(false);
        }
        let end = raw.iter().position(|&c| !is_name(c)).unwrap_or(raw.len());
        match &raw[end..] {
            [b'=', ..] | [b'+', b'=', ..] => Ok(true),
            [b'[', ..] if raw.contains(&b'=') => Err("array element assignment".to_string()),
            _ => Ok(false),
        }
    }

    fn open(&mut self, frame: Frame) -> Result<(), String> {
        self.frames.push((frame, self.out.commands.len()));
        self.state = State::Start;
        Ok(())
    }

    fn inside(&mut self, frame: Frame, what: &str) -> Result<(), String> {
        if self.frames.last().map(|f| f.0) != Some(frame) {
            return Err(format!("syntax: `{what}` outside its compound command"));
        }
        self.state = State::Start;
        Ok(())
    }

    /// A redirection operator at `pos` (after its descriptor, if any).
    fn redirect(&mut self, fd: Option<String>) -> Result<(), String> {
        const OPS: &[&str] = &[
            "&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">|", ">&", ">",
        ];
        let rest = &self.b[self.pos..];
        let Some(op) = OPS.iter().find(|op| rest.starts_with(op.as_bytes())) else {
            return Err(format!("unknown redirection near `{}`", self.near()));
        };
        if fd.is_some() && op.starts_with('&') {
            return Err(format!("unknown redirection near `{}`", self.near()));
        }
        let after = self.pos + op.len();
        if self.at_continuation(after) || (op.len() > 1 && self.at_continuation(self.pos + 1)) {
            return Err("line continuation inside a redirection operator".to_string());
        }
        if (op == &"<" || op == &">") && self.b.get(after) == Some(&b'(') {
            return Err("process substitution".to_string());
        }
        self.pos = after;
        self.skip_blanks();
        match self.peek(0) {
            None => return Err("syntax: a redirection without its target".to_string()),
            Some(b'<' | b'>') if self.long() && self.peek(1) == Some(b'(') => {}
            Some(c) if is_meta(c) => {
                return Err("syntax: a redirection without its target".to_string());
            }
            Some(b'#') => {
                return Err("syntax: a comment where a redirection target should be".to_string());
            }
            _ => {}
        }
        let target = self.word()?;
        let from = match self.state {
            State::Closed(from) => Some(from),
            _ => {
                self.state = State::Simple;
                None
            }
        };
        let redirect = match *op {
            "<<" | "<<-" => {
                let raw = &self.src[target.raw_start..target.raw_end];
                if raw.contains(['$', '`']) || target.value.contains('\n') {
                    return Err(format!(
                        "heredoc delimiter `{}` with an expansion",
                        snippet(raw)
                    ));
                }
                self.heredocs.push(Heredoc {
                    delimiter: target.value,
                    strip_tabs: *op == "<<-",
                    quoted: target.quoted,
                });
                None
            }
            "<<<" => None,
            "<&" => None,
            ">&" if is_duplication(&target.value) => None,
            _ => Some(Redirect {
                op: format!("{}{op}", fd.unwrap_or_default()),
                target: target.value,
            }),
        };
        if let Some(redirect) = redirect {
            match from {
                Some(from) if from < self.out.commands.len() => {
                    let work = self.out.commands.len() - from;
                    if work > self.attach_budget {
                        return Err("redirections nested too deeply to attribute".to_string());
                    }
                    self.attach_budget -= work;
                    for command in &mut self.out.commands[from..] {
                        command.redirects.push(redirect.clone());
                    }
                }
                Some(_) => self.out.bare.push(redirect),
                None => self.current.redirects.push(redirect),
            }
        }
        Ok(())
    }

    /// Reads one word at `pos`, which is not a metacharacter.
    fn word(&mut self) -> Result<Read, String> {
        let raw_start = self.pos;
        let mut w = Read {
            value: String::new(),
            raw_start,
            raw_end: raw_start,
            known: Known::Literal,
            quoted: false,
            bound: Bound::No,
        };
        // Unquoted `{` seen, then `,` or `..` after it: brace expansion.
        let mut brace = false;
        let mut brace_list = false;
        let mut bracket = None;
        while let Some(c) = self.peek(0) {
            if is_meta(c) {
                if matches!(c, b'<' | b'>') && self.peek(1) == Some(b'(') && self.long() {
                    let start = self.pos;
                    self.substitution(2)?;
                    self.verbatim(&mut w, start, Known::Substitution);
                    continue;
                }
                break;
            }
            match c {
                b'\\' => match self.peek(1) {
                    Some(b'\n') => self.pos += 2,
                    None => {
                        w.value.push('\\');
                        self.pos += 1;
                    }
                    Some(_) => {
                        w.quoted = true;
                        self.pos += 1;
                        self.push_char(&mut w.value);
                    }
                },
                b'\'' => {
                    w.quoted = true;
                    let end = self.b[self.pos + 1..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .ok_or("unterminated single quote")?;
                    w.value
                        .push_str(&self.src[self.pos + 1..self.pos + 1 + end]);
                    self.pos += end + 2;
                }
                b'"' => {
                    w.quoted = true;
                    self.pos += 1;
                    self.double_quoted(&mut w)?;
                }
                b'`' if self.long() => self.backticks_in(&mut w, false)?,
                b'`' => return Err("backtick command substitution".to_string()),
                b'$' => self.dollar(&mut w, false)?,
                b'*' | b'?' => {
                    w.known = w.known.max(Known::Pattern);
                    w.value.push(c as char);
                    self.pos += 1;
                }
                // A bracket expression needs a `]` after the `[`.
                b'[' => {
                    bracket.get_or_insert(self.pos);
                    w.value.push('[');
                    self.pos += 1;
                }
                b'{' => {
                    brace = true;
                    w.value.push('{');
                    self.pos += 1;
                }
                b',' if brace => {
                    brace_list = true;
                    w.value.push(',');
                    self.pos += 1;
                }
                b'.' if brace && self.peek(1) == Some(b'.') => {
                    brace_list = true;
                    w.value.push('.');
                    self.pos += 1;
                }
                b'}' if brace_list && self.long() => {
                    w.known = w.known.max(Known::Pattern);
                    w.value.push('}');
                    self.pos += 1;
                }
                b'}' if brace_list => return Err("brace expansion".to_string()),
                // CR, FF, VT and the other control bytes are word bytes to
                // bash (only space, tab and newline are blanks); 0x01 and
                // 0x7f are bash's internal quoting markers, and NUL ends
                // the string.
                0 | 0x01 | 0x7f => {
                    return Err(format!("control byte {c:#04x} outside quotes"));
                }
                _ => {
                    // A run of bytes with no meaning to this loop is copied
                    // at once (its end is an ASCII byte: a char boundary).
                    let run = self.b[self.pos..]
                        .iter()
                        .position(|&c| !is_plain(c))
                        .unwrap_or(self.b.len() - self.pos);
                    if run == 0 {
                        self.push_char(&mut w.value);
                    } else {
                        w.value.push_str(&self.src[self.pos..self.pos + run]);
                        self.pos += run;
                    }
                }
            }
        }
        w.raw_end = self.pos;
        if bracket.is_some_and(|at| self.b[at..self.pos].contains(&b']')) {
            w.known = w.known.max(Known::Pattern);
        }
        Ok(w)
    }

    /// Pushes the (possibly multi-byte) character at `pos` and steps over it.
    fn push_char(&mut self, out: &mut String) {
        let rest = &self.src[self.pos..];
        if let Some(ch) = rest.chars().next() {
            out.push(ch);
            self.pos += ch.len_utf8();
        } else {
            self.pos += 1;
        }
    }

    /// The inside of `"..."`, after the opening quote.
    fn double_quoted(&mut self, w: &mut Read) -> Result<(), String> {
        loop {
            let Some(c) = self.peek(0) else {
                self.out.unfinished = true;
                return Err("unterminated double quote".to_string());
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => match self.peek(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(n @ (b'$' | b'`' | b'"' | b'\\')) => {
                        w.value.push(n as char);
                        self.pos += 2;
                    }
                    _ => {
                        w.value.push('\\');
                        self.pos += 1;
                    }
                },
                b'`' if self.long() => self.backticks_in(w, true)?,
                b'`' => return Err("backtick command substitution".to_string()),
                b'$' => self.dollar(w, true)?,
                _ => self.push_char(&mut w.value),
            }
        }
    }

    /// A `$` at `pos`: the simple expansions are kept as written, anything
    /// else is refused.
    fn dollar(&mut self, w: &mut Read, in_quotes: bool) -> Result<(), String> {
        if self.at_continuation(self.pos + 1) {
            return Err("line continuation after `$`".to_string());
        }
        let start = self.pos;
        let next = self.peek(1);
        let long = self.long();
        let len = match next {
            Some(b'(') if self.peek(2) == Some(b'(') && long => {
                return self.expansion_in(w, 3, Open::Arithmetic, in_quotes);
            }
            Some(b'(') if self.peek(2) == Some(b'(') => {
                return Err("arithmetic expansion `$((`".to_string());
            }
            Some(b'(') if long => {
                self.substitution(2)?;
                self.verbatim(w, start, Known::Substitution);
                return Ok(());
            }
            Some(b'(') => return Err("command substitution `$(`".to_string()),
            Some(b'[') if long => return self.expansion_in(w, 2, Open::Bracket, in_quotes),
            Some(b'[') => return Err("arithmetic expansion `$[`".to_string()),
            Some(b'"') if !in_quotes => return Err("translated string `$\"...\"`".to_string()),
            Some(b'\'') if !in_quotes => return self.ansi_c_string(w),
            Some(b'{') => match self.braced(start) {
                Ok(len) => len,
                Err(_) if long => {
                    funsub(self.peek(2))?;
                    return self.expansion_in(w, 2, Open::Parameter, in_quotes);
                }
                Err(phrase) => return Err(phrase),
            },
            Some(c) if is_name_start(c) => {
                1 + self.b[start + 1..]
                    .iter()
                    .position(|&c| !is_name(c))
                    .unwrap_or(self.b.len() - start - 1)
            }
            Some(b'0'..=b'9' | b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-') => 2,
            _ => {
                w.value.push('$');
                self.pos += 1;
                return Ok(());
            }
        };
        let text = &self.src[start..start + len];
        self.pos = start + len;
        let name = match text.strip_prefix("${") {
            Some(inner) => inner.strip_suffix('}'),
            None => text.strip_prefix('$'),
        };
        if let Some(item) = name.and_then(|n| lookup(&self.bindings, n)) {
            // A loop's word (see `loops.rs`); a glob's pattern.
            w.value.push_str(&item.text);
            let bound = if !item.pattern {
                Bound::Value
            } else if in_quotes {
                w.known = w.known.max(Known::Pattern);
                Bound::Value
            } else {
                w.known = w.known.max(Known::Pattern);
                Bound::Split
            };
            w.bound = w.bound.max(bound);
            return Ok(());
        }
        w.value.push_str(text);
        w.known = w.known.max(Known::Variable);
        Ok(())
    }

    /// Reads the script of the substitution whose opening (`$(`, `<(` or
    /// `>(`, `open` bytes) is at `pos`, up to and past its `)`: its
    /// commands are listed before the command whose word holds it, as
    /// bash runs them. Long scripts only; nested substitutions are read by
    /// recursion, so their depth is bounded.
    fn substitution(&mut self, open: usize) -> Result<(), String> {
        self.nest()?;
        if !self.heredocs.is_empty() {
            return Err("a substitution on a line with a heredoc pending".to_string());
        }
        self.out.substitutions.push(self.pos);
        let current = std::mem::take(&mut self.current);
        let state = self.state;
        let after_pipe = std::mem::take(&mut self.after_pipe);
        self.frames
            .push((Frame::Substitution, self.out.commands.len()));
        self.pos += open;
        self.state = State::Start;
        self.nesting += 1;
        // `run` returns at the `)` that closes the frame, or fails.
        let read = stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.run());
        self.nesting -= 1;
        read?;
        self.current = current;
        self.state = state;
        self.after_pipe = after_pipe;
        Ok(())
    }

    /// Refuses one more level of substitution past the bound.
    fn nest(&mut self) -> Result<(), String> {
        if self.nesting < MAX_SUBSTITUTION_NESTING {
            return Ok(());
        }
        self.out.too_deep = true;
        Err(format!(
            "substitutions nested more than {MAX_SUBSTITUTION_NESTING} levels deep, \
             deeper than bash itself can parse"
        ))
    }

    /// A backquoted substitution at `pos` inside a word.
    fn backticks_in(&mut self, w: &mut Read, in_quotes: bool) -> Result<(), String> {
        let start = self.pos;
        self.backticks(in_quotes)?;
        self.verbatim(w, start, Known::Substitution);
        Ok(())
    }

    /// Reads the backquoted substitution at `pos` and steps past it. Bash
    /// removes the backslash before `` ` ``, `\` and `$` and reads the
    /// rest as a script, which a reader of its own reads here.
    fn backticks(&mut self, in_quotes: bool) -> Result<(), String> {
        let start = self.pos;
        let mut end = start + 1;
        loop {
            match self.b.get(end) {
                None => return Err("unterminated backtick command substitution".to_string()),
                Some(b'`') => break,
                Some(b'\\') => end += 2,
                Some(_) => end += 1,
            }
        }
        self.nest()?;
        if !self.heredocs.is_empty() {
            return Err("a substitution on a line with a heredoc pending".to_string());
        }
        let inner = unescape_backticks(&self.src[start + 1..end], in_quotes);
        let mut reader = Reader::new(&inner, self.min_part, self.nesting + 1);
        reader.verbatim_budget = self.verbatim_budget;
        let read = stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || reader.run());
        self.out.too_deep |= reader.out.too_deep;
        read?;
        self.verbatim_budget = reader.verbatim_budget;
        self.out.commands.append(&mut reader.out.commands);
        self.out.bare.append(&mut reader.out.bare);
        self.out.backticks.push((start, end + 1));
        self.pos = end + 1;
        Ok(())
    }

    /// An expansion read as text (see [`Reader::expansion`]) inside a word:
    /// its opening, `open` bytes, is at `pos`.
    fn expansion_in(
        &mut self,
        w: &mut Read,
        open: usize,
        first: Open,
        in_quotes: bool,
    ) -> Result<(), String> {
        let start = self.pos;
        self.pos += open;
        self.expansion(first, in_quotes)?;
        self.verbatim(w, start, Known::Variable);
        Ok(())
    }

    /// Steps past the text of arithmetic (`$((`, `((`, `$[`) or of a
    /// `${...}` with an operator, whose opening `first` is just behind
    /// `pos`, reading every substitution inside as a script. The text
    /// itself runs nothing; where it ends follows bash's matching: `((`
    /// and `$((` close at `))` (one that closes as `)` alone is a
    /// subshell to bash, refused), `$[` at its `]`, and `${` at the first
    /// `}` (bash counts only nested `${`). Nesting is kept on a list, not
    /// by recursion, so arithmetic nested any depth reads in linear time;
    /// quotes inside are refused.
    fn expansion(&mut self, first: Open, in_quotes: bool) -> Result<(), String> {
        let mut open = vec![first];
        while let Some(&top) = open.last() {
            let Some(c) = self.peek(0) else {
                self.out.unfinished = true;
                return Err(match first {
                    Open::Parameter => "unterminated `${`".to_string(),
                    _ => "unterminated arithmetic".to_string(),
                });
            };
            let arithmetic = matches!(top, Open::Arithmetic | Open::Paren);
            match c {
                b'\\' => self.pos += 2,
                b'\'' | b'"' => {
                    return Err("quotes inside arithmetic or a `${...}` operator".to_string());
                }
                b'`' => self.backticks(in_quotes)?,
                b'$' => match (self.peek(1), self.peek(2)) {
                    (Some(b'('), Some(b'(')) => {
                        open.push(Open::Arithmetic);
                        self.pos += 3;
                    }
                    (Some(b'('), _) => self.substitution(2)?,
                    (Some(b'['), _) => {
                        open.push(Open::Bracket);
                        self.pos += 2;
                    }
                    (Some(b'{'), next) => {
                        funsub(next)?;
                        open.push(Open::Parameter);
                        self.pos += 2;
                    }
                    (Some(b'\'' | b'"'), _) => {
                        return Err("quotes inside arithmetic or a `${...}` operator".to_string());
                    }
                    _ => self.pos += 1,
                },
                b'(' if arithmetic => {
                    open.push(Open::Paren);
                    self.pos += 1;
                }
                b')' if arithmetic => {
                    open.pop();
                    if top == Open::Arithmetic {
                        if self.peek(1) != Some(b')') {
                            return Err("`((` that closes as `)`: a subshell to bash".to_string());
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                b'[' if top == Open::Bracket => {
                    open.push(Open::Bracket);
                    self.pos += 1;
                }
                b']' if top == Open::Bracket => {
                    open.pop();
                    self.pos += 1;
                }
                b'}' if top == Open::Parameter => {
                    open.pop();
                    self.pos += 1;
                }
                _ => self.pos += 1,
            }
        }
        Ok(())
    }

    /// Copies the source from `start` to `pos` (a substitution or an
    /// expansion) into `w` while [`Reader::verbatim_budget`] lasts, then
    /// only its start.
    fn verbatim(&mut self, w: &mut Read, start: usize, known: Known) {
        let text = &self.src[start..self.pos];
        if text.len() <= self.verbatim_budget {
            self.verbatim_budget -= text.len();
            w.value.push_str(text);
        } else {
            let mut chars = text.chars();
            w.value.extend(chars.by_ref().take(SHORT_VERBATIM_CHARS));
            if chars.next().is_some() {
                w.value.push('…');
            }
        }
        w.known = w.known.max(known);
    }

    /// `${NAME}`, `${N}` or `${#NAME}` at `start`; its length.
    fn braced(&self, start: usize) -> Result<usize, String> {
        let inner = &self.b[start + 2..];
        let skip = usize::from(inner.first() == Some(&b'#'));
        let body = &inner[skip..];
        let name_len = match body.first() {
            Some(&c) if is_name_start(c) => body.iter().position(|&c| !is_name(c)),
            Some(c) if c.is_ascii_digit() => body.iter().position(|c| !c.is_ascii_digit()),
            _ => None,
        };
        match name_len {
            Some(n) if body.get(n) == Some(&b'}') => Ok(2 + skip + n + 1),
            _ => Err(format!(
                "parameter expansion with an operator `{}`",
                quote_from(self.b, start)
            )),
        }
    }

    /// `$'...'` at `pos`, decoded the way bash does; escapes whose meaning
    /// depends on the locale or that cut the string short are refused.
    fn ansi_c_string(&mut self, w: &mut Read) -> Result<(), String> {
        let body_start = self.pos + 2;
        let mut i = body_start;
        loop {
            match self.b.get(i) {
                None => return Err("unterminated `$'...'` string".to_string()),
                Some(b'\'') => break,
                Some(b'\\') => {
                    match self.b.get(i + 1) {
                        Some(b'c' | b'u' | b'U') => {
                            return Err("`$'...'` with `\\c`, `\\u` or `\\U`".to_string());
                        }
                        None => return Err("unterminated `$'...'` string".to_string()),
                        _ => {}
                    }
                    i += 2;
                }
                Some(_) => i += 1,
            }
        }
        let body = &self.src[body_start..i];
        let mut decoded = Word::literal(String::new());
        ansi_c(body, &mut decoded);
        let nul_free = {
            let mut check = Word::literal(String::new());
            ansi_c(&format!("{body}x"), &mut check);
            check.text.ends_with('x')
        };
        if !nul_free {
            return Err("`$'...'` with a NUL byte".to_string());
        }
        w.quoted = true;
        w.value.push_str(&decoded.text);
        self.pos = i + 1;
        Ok(())
    }

    /// Reads the bodies of the heredocs started on the line that just ended
    /// (`pos` is at the start of the next line).
    fn read_heredocs(&mut self) -> Result<(), String> {
        for doc in std::mem::take(&mut self.heredocs) {
            let body_start = self.pos;
            let mut body_end = self.b.len();
            loop {
                if self.pos >= self.b.len() {
                    if self.long() && self.pos == body_start {
                        // Nothing is left to read: bash warns and runs the
                        // command with an empty body. (A body with text and
                        // no end stays refused, for tree-sitter may read
                        // commands in it.)
                        break;
                    }
                    return Err("heredoc without its end".to_string());
                }
                let end = self.b[self.pos..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(self.b.len(), |n| self.pos + n);
                let mut line = &self.src[self.pos..end];
                let line_start = self.pos;
                self.pos = (end + 1).min(self.b.len());
                if doc.strip_tabs {
                    line = line.trim_start_matches('\t');
                }
                if line == doc.delimiter {
                    body_end = line_start;
                    break;
                }
                if !doc.quoted {
                    literal_body_line(line, self.long())?;
                }
                if end == self.b.len() {
                    return Err("heredoc without its end".to_string());
                }
            }
            if !doc.quoted && self.long() {
                let after = self.pos;
                let read = self.body_substitutions(body_start, body_end);
                if read.is_err() {
                    // Reading past the body's end is no end of the script.
                    self.out.unfinished = false;
                }
                read?;
                self.pos = after;
            }
        }
        Ok(())
    }

    /// In a long script, the substitutions of an unquoted heredoc body
    /// between `start` and `end`, read as scripts: bash expands the body
    /// once it has read it to its delimiter, running them. Quotes are
    /// plain text there.
    fn body_substitutions(&mut self, start: usize, end: usize) -> Result<(), String> {
        self.pos = start;
        while self.pos < end {
            match self.b[self.pos] {
                b'\\' => self.pos += 2,
                b'`' => self.backticks(false)?,
                b'$' => match (self.peek(1), self.peek(2)) {
                    (Some(b'('), Some(b'(')) => {
                        self.pos += 3;
                        self.expansion(Open::Arithmetic, false)?;
                    }
                    (Some(b'('), _) => self.substitution(2)?,
                    (Some(b'['), _) => {
                        self.pos += 2;
                        self.expansion(Open::Bracket, false)?;
                    }
                    (Some(b'{'), next) => {
                        funsub(next)?;
                        self.pos += 2;
                        self.expansion(Open::Parameter, false)?;
                    }
                    _ => self.pos += 1,
                },
                _ => self.pos += 1,
            }
        }
        if self.pos > end {
            return Err("a substitution that runs past its heredoc body".to_string());
        }
        Ok(())
    }
}

/// A line of an unquoted heredoc body must expand to itself: no
/// substitutions, no `${`, no line continuation (which joins lines before
/// bash looks for the delimiter). In a long script only the last is
/// refused: the substitutions are read once the body is complete.
fn literal_body_line(line: &str, long: bool) -> Result<(), String> {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 == b.len() => {
                return Err("line continuation in a heredoc body".to_string());
            }
            b'\\' => i += 1,
            _ if long => {}
            b'`' => return Err("backtick command substitution in a heredoc body".to_string()),
            b'$' if matches!(b.get(i + 1), Some(b'(' | b'[' | b'{')) => {
                return Err(format!(
                    "expansion in a heredoc body `{}`",
                    snippet(&line[i..])
                ));
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// `${` followed by a blank, a line end or `|` runs a command in bash 5.3
/// (`${ cmd; }`, `${| cmd; }`): refused, whatever the bash.
fn funsub(next: Option<u8>) -> Result<(), String> {
    match next {
        Some(b' ' | b'\t' | b'\n' | b'|') => {
            Err("`${` followed by a blank or `|` (a command in bash 5.3)".to_string())
        }
        _ => Ok(()),
    }
}

/// `>&N`, `>&N-` and `>&-` duplicate or close a descriptor; any other
/// target is a file.
fn is_duplication(target: &str) -> bool {
    let t = target.strip_suffix('-').unwrap_or(target);
    t.bytes().all(|c| c.is_ascii_digit())
}

/// A short quote of the source from `at`, for a phrase.
fn quote_from(b: &[u8], at: usize) -> String {
    let start = at.min(b.len());
    let end = (start + 4 * SNIPPET_CHARS).min(b.len());
    snippet(&String::from_utf8_lossy(&b[start..end]))
}
