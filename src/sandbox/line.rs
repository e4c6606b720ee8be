//! The command line that runs a recorded call under `gavel exec`, as a
//! hook's answer rewrites an allowed command to it, and reading one back
//! (a client reports the rewritten input when the call completes). Pure.
//!
//! ```text
//! '<gavel>' exec --db '<db>' --call-id '<id>' -- '<command>'
//! ```
//!
//! Every variable word is single-quoted (a `'` inside becomes `'\''`), so
//! the line means the same to any POSIX shell; `gavel exec` then holds the
//! command to the decision (`super::bind`).

/// A call's command under `gavel exec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecLine {
    /// The absolute path of the gavel that runs it.
    pub gavel: String,
    /// The absolute path of the database that records the call.
    pub db: String,
    pub call_id: String,
    /// The command exactly as decided.
    pub command: String,
}

impl ExecLine {
    /// The line a shell runs.
    pub fn render(&self) -> String {
        format!(
            "{} exec --db {} --call-id {} -- {}",
            quote(&self.gavel),
            quote(&self.db),
            quote(&self.call_id),
            quote(&self.command)
        )
    }

    /// A line [`ExecLine::render`] made, read back; `None` for anything else.
    pub fn parse(line: &str) -> Option<ExecLine> {
        let (gavel, rest) = unquote(line)?;
        let rest = rest.strip_prefix(" exec --db ")?;
        let (db, rest) = unquote(rest)?;
        let rest = rest.strip_prefix(" --call-id ")?;
        let (call_id, rest) = unquote(rest)?;
        let rest = rest.strip_prefix(" -- ")?;
        let (command, rest) = unquote(rest)?;
        rest.is_empty().then_some(ExecLine {
            gavel,
            db,
            call_id,
            command,
        })
    }
}

/// `word` single-quoted for a POSIX shell.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The word [`quote`] made at the start of `text`, and what follows it.
fn unquote(text: &str) -> Option<(String, &str)> {
    let mut word = String::new();
    let mut rest = text.strip_prefix('\'')?;
    loop {
        let end = rest.find('\'')?;
        word.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        match rest.strip_prefix(r"\''") {
            Some(more) => {
                word.push('\'');
                rest = more;
            }
            None => return Some((word, rest)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(command: &str) -> ExecLine {
        ExecLine {
            gavel: "/opt/it's/gavel".into(),
            db: "/w/.gavel/audit.db".into(),
            call_id: "toolu_01".into(),
            command: command.into(),
        }
    }

    #[test]
    fn a_line_reads_back_as_it_was_made() {
        for command in [
            "ls",
            "perl -e 'print \"a\\n\"'",
            "echo '' ''\\'' x",
            "a\nb",
            "",
        ] {
            let made = line(command);
            let text = made.render();
            assert_eq!(ExecLine::parse(&text), Some(made), "{text}");
        }
        assert_eq!(
            line("echo 'hi'").render(),
            r"'/opt/it'\''s/gavel' exec --db '/w/.gavel/audit.db' --call-id 'toolu_01' -- 'echo '\''hi'\'''"
        );
    }

    #[test]
    fn a_shell_reads_the_line_as_its_words() {
        let made = line("echo 'a b' \"$HOME\" \\ ;");
        let output = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "for w in {}; do printf '<%s>' \"$w\"; done",
                made.render()
            ))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!(
                "<{}><exec><--db><{}><--call-id><{}><--><{}>",
                made.gavel, made.db, made.call_id, made.command
            )
        );
    }

    #[test]
    fn anything_else_is_not_a_line() {
        let text = line("ls").render();
        for other in [
            "ls",
            &text[1..],
            &format!("{text} ; rm -rf x"),
            &text.replace(" exec ", " run "),
            &text.replace("' -- '", "' '"),
            "'g' exec --db 'd' --call-id 'i' -- 'unterminated",
        ] {
            assert_eq!(ExecLine::parse(other), None, "{other}");
        }
    }
}
