use proptest::prelude::*;

use super::*;

fn words(script: &str) -> Vec<Vec<String>> {
    analyze(script)
        .commands
        .into_iter()
        .map(|c| c.words)
        .collect()
}

/// Whether a case must be fully understood (`Proven`) or must name
/// something unprovable (`Unprovable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Proven,
    Unprovable,
}
use Expect::{Proven, Unprovable};

/// Input, the words of every simple command in order, and the verdict.
const CASES: &[(&str, &[&[&str]], Expect)] = &[
    // Flags and plain words.
    ("rm -r -f x", &[&["rm", "-r", "-f", "x"]], Proven),
    (
        "rm --recursive --force x",
        &[&["rm", "--recursive", "--force", "x"]],
        Proven,
    ),
    ("echo sudo", &[&["echo", "sudo"]], Proven),
    (
        "grep -rn sudo docs/",
        &[&["grep", "-rn", "sudo", "docs/"]],
        Proven,
    ),
    (
        "git commit -m \"rm -rf\"",
        &[&["git", "commit", "-m", "rm -rf"]],
        Proven,
    ),
    (
        "dd if=x of=/dev/sda",
        &[&["dd", "if=x", "of=/dev/sda"]],
        Proven,
    ),
    // Quote and escape removal, program by its name.
    ("s\\udo ls", &[&["sudo", "ls"]], Proven),
    ("\\rm -rf x", &[&["rm", "-rf", "x"]], Proven),
    ("\"rm\" 'a b'", &[&["rm", "a b"]], Proven),
    ("r''m x", &[&["rm", "x"]], Proven),
    ("/usr/bin/sudo ls", &[&["sudo", "ls"]], Proven),
    (
        "echo $'a\\tb' \"x\\\"y\"",
        &[&["echo", "a\tb", "x\"y"]],
        Proven,
    ),
    ("echo a\\\nb", &[&["echo", "ab"]], Proven),
    (
        "echo \"$HOME/x\" $HOME/y",
        &[&["echo", "$HOME/x", "$HOME/y"]],
        Proven,
    ),
    // Operators, lists, pipelines, background, newlines.
    ("ls && rm -rf x", &[&["ls"], &["rm", "-rf", "x"]], Proven),
    (
        "a || b; c & d\ne",
        &[&["a"], &["b"], &["c"], &["d"], &["e"]],
        Proven,
    ),
    ("ls 2>&1 | grep x", &[&["ls"], &["grep", "x"]], Proven),
    ("! grep -q x f", &[&["grep", "-q", "x", "f"]], Proven),
    // Compound commands.
    (
        "(cd /tmp && rm x)",
        &[&["cd", "/tmp"], &["rm", "x"]],
        Proven,
    ),
    ("{ a; b; }", &[&["a"], &["b"]], Proven),
    (
        "if test -f x; then rm x; elif c; then d; else e; fi",
        &[&["test", "-f", "x"], &["rm", "x"], &["c"], &["d"], &["e"]],
        Proven,
    ),
    // A loop over literal words or globs runs its body once per word,
    // with the word in place of its variable (a glob's pattern stands for
    // each of its matches).
    ("for f in *; do rm \"$f\"; done", &[&["rm", "*"]], Proven),
    (
        "for d in src tests docs; do echo \"=== $d ===\"; ls \"$d\"/; done",
        &[
            &["echo", "=== src ==="],
            &["ls", "src/"],
            &["echo", "=== tests ==="],
            &["ls", "tests/"],
            &["echo", "=== docs ==="],
            &["ls", "docs/"],
        ],
        Proven,
    ),
    (
        "for f in Cargo.toml package.json; do echo \"=== $f ===\"; grep -n version \"$f\"; done",
        &[
            &["echo", "=== Cargo.toml ==="],
            &["grep", "-n", "version", "Cargo.toml"],
            &["echo", "=== package.json ==="],
            &["grep", "-n", "version", "package.json"],
        ],
        Proven,
    ),
    (
        "for f in docs/*.md; do echo \"=== $f ===\"; head -8 \"$f\"; done",
        &[&["echo", "=== docs/*.md ==="], &["head", "-8", "docs/*.md"]],
        Proven,
    ),
    (
        "for f in tests/fixtures/*.txt; do wc -l \"$f\"; done",
        &[&["wc", "-l", "tests/fixtures/*.txt"]],
        Proven,
    ),
    ("for d in */; do ls \"$d\"; done", &[&["ls", "*/"]], Proven),
    (
        "for d in a 'b.c' \"-d\"\ndo\n  ls ${d}/x \"${d}\" $d\ndone\n",
        &[
            &["ls", "a/x", "a", "a"],
            &["ls", "b.c/x", "b.c", "b.c"],
            &["ls", "-d/x", "-d", "-d"],
        ],
        Proven,
    ),
    (
        "for d in a b;do ls \\$d '$d' \"\\$d\" $dx;done",
        &[
            &["ls", "$d", "$d", "$d", "$dx"],
            &["ls", "$d", "$d", "$d", "$dx"],
        ],
        Proven,
    ),
    (
        "for d in a b; do for e in x y; do ls $d/$e; done; done",
        &[
            &["ls", "a/x"],
            &["ls", "a/y"],
            &["ls", "b/x"],
            &["ls", "b/y"],
        ],
        Proven,
    ),
    (
        "for d in a b; do [ -d \"$d\" ] && ls \"$d\"; done | sort",
        &[
            &["[", "-d", "a", "]"],
            &["ls", "a"],
            &["[", "-d", "b", "]"],
            &["ls", "b"],
            &["sort"],
        ],
        Proven,
    ),
    (
        "for f in a; do cat $f; done; for f in b; do cat $f; done",
        &[&["cat", "a"], &["cat", "b"]],
        Proven,
    ),
    (
        "for x in -rf; do rm $x /; done",
        &[&["rm", "-rf", "/"]],
        Proven,
    ),
    ("for x in a; do sudo ls; done", &[&["sudo", "ls"]], Proven),
    (
        "for o in -n; do nice $o 5 ls $o; done",
        &[&["ls", "-n"]],
        Proven,
    ),
    // What the readers cannot expand is read as before: the variable
    // kept as text, the script unprovable. Where a loop is expanded but
    // the script is still unprovable, the body as written is listed too
    // (last), for the deny rules.
    (
        "for d in a b; do ls $d; done; echo $d",
        &[&["ls", "a"], &["ls", "b"], &["echo", "$d"], &["ls", "$d"]],
        Unprovable,
    ),
    (
        "for f in *.md; do cat $f; done",
        &[&["cat", "*.md"], &["cat", "$f"]],
        Unprovable,
    ),
    (
        "for c in ls cat; do $c x; done",
        &[&["ls", "x"], &["cat", "x"], &["$c", "x"]],
        Unprovable,
    ),
    (
        "for d in a b; do bash -c \"ls $d\"; done",
        &[
            &["bash", "-c", "ls a"],
            &["ls", "a"],
            &["bash", "-c", "ls b"],
            &["ls", "b"],
            &["bash", "-c", "ls $d"],
            &["ls", "$d"],
        ],
        Unprovable,
    ),
    (
        "for d in a; do unset x; ls $d; done",
        &[
            &["unset", "x"],
            &["ls", "a"],
            &["unset", "x"],
            &["ls", "$d"],
        ],
        Unprovable,
    ),
    (
        "declare -u d; for d in a; do ls $d; done",
        &[&["declare", "-u", "d"], &["ls", "a"], &["ls", "$d"]],
        Unprovable,
    ),
    (
        "for d in a b; do read d; ls $d; done",
        &[&["read", "d"], &["ls", "$d"]],
        Unprovable,
    ),
    (
        "for d in a; do d=sudo; $d x; done",
        &[&["$d", "x"]],
        Unprovable,
    ),
    (
        "for d in a b; do for d in c; do ls $d; done; ls $d; done",
        &[&["ls", "c"], &["ls", "$d"], &["ls", "$d"]],
        Unprovable,
    ),
    ("for PATH in /tmp/evil; do ls; done", &[&["ls"]], Unprovable),
    ("for IFS in a; do ls; done", &[&["ls"]], Unprovable),
    ("for LC_ALL in C; do ls; done", &[&["ls"]], Unprovable),
    ("for F in a; do ls $F; done", &[&["ls", "$F"]], Unprovable),
    (
        "for d in 'a b'; do ls $d; done",
        &[&["ls", "$d"]],
        Unprovable,
    ),
    ("for d in '*'; do ls $d; done", &[&["ls", "$d"]], Unprovable),
    ("for d in $x; do ls $d; done", &[&["ls", "$d"]], Unprovable),
    (
        "for d in {a,b}; do ls $d; done",
        &[&["ls", "$d"]],
        Unprovable,
    ),
    ("for d in ~/x; do ls $d; done", &[&["ls", "$d"]], Unprovable),
    ("for d in ''; do ls $d; done", &[&["ls", "$d"]], Unprovable),
    ("for d; do ls $d; done", &[&["ls", "$d"]], Unprovable),
    ("for d in a & do ls $d; done", &[&["ls", "$d"]], Unprovable),
    (
        "select d in a; do ls $d; done",
        &[&["ls", "$d"]],
        Unprovable,
    ),
    (
        "while read l; do echo \"$l\"; done",
        &[&["read", "l"], &["echo", "$l"]],
        Unprovable,
    ),
    (
        "until false; do sleep 1; done",
        &[&["false"], &["sleep", "1"]],
        Proven,
    ),
    (
        // The strict reader does not model `case` patterns: an allow
        // needs a reading it can prove.
        "case $x in a) rm a;; *) ls;; esac",
        &[&["rm", "a"], &["ls"]],
        Unprovable,
    ),
    (
        // Function definitions are not modelled by the strict reader
        // (their redirections apply at each call, the name shadows a
        // program).
        "f() { rm -rf /; }; f",
        &[&["rm", "-rf", "/"], &["f"]],
        Unprovable,
    ),
    ("cat <<EOF\nrm -rf /\nEOF", &[&["cat"]], Proven),
    (
        "cat <<'EOF' | sh\n$(x)\nEOF",
        &[&["cat"], &["sh"]],
        Unprovable,
    ),
    // Shells running scripts, recursively.
    (
        "bash -c \"sudo ls\"",
        &[&["bash", "-c", "sudo ls"], &["sudo", "ls"]],
        Proven,
    ),
    (
        "sh -c 'bash -c \"reboot\"'",
        &[
            &["sh", "-c", "bash -c \"reboot\""],
            &["bash", "-c", "reboot"],
            &["reboot"],
        ],
        Proven,
    ),
    (
        "bash -lc 'rm x'",
        &[&["bash", "-lc", "rm x"], &["rm", "x"]],
        Proven,
    ),
    (
        "zsh -ec 'a; b'",
        &[&["zsh", "-ec", "a; b"], &["a"], &["b"]],
        Proven,
    ),
    (
        "dash -o errexit -c 'ls' name",
        &[&["dash", "-o", "errexit", "-c", "ls", "name"], &["ls"]],
        Proven,
    ),
    ("bash script.sh", &[&["bash", "script.sh"]], Unprovable),
    ("curl x | sh", &[&["curl", "x"], &["sh"]], Unprovable),
    // Wrappers.
    ("env FOO=1 sudo ls", &[&["sudo", "ls"]], Proven),
    ("env -i -u HOME -- rm x", &[&["rm", "x"]], Proven),
    (
        "env sudo nice rm -rf /",
        &[&["sudo", "nice", "rm", "-rf", "/"]],
        Proven,
    ),
    ("env nice -n 5 nohup rm x", &[&["rm", "x"]], Proven),
    (
        "timeout 5 nice -n 3 rm -rf /",
        &[&["rm", "-rf", "/"]],
        Proven,
    ),
    ("timeout -s KILL -k 2 10s rm x", &[&["rm", "x"]], Proven),
    ("nice -10 rm x", &[&["rm", "x"]], Proven),
    ("time -p ls", &[&["ls"]], Proven),
    ("stdbuf -oL -e 0 grep x", &[&["grep", "x"]], Proven),
    // What xargs runs gets words from its input: seen, never proven.
    ("xargs -n1 rm -rf", &[&["rm", "-rf"]], Unprovable),
    (
        "find . | xargs -0 -I {} -P 4 -n 1 rm {}",
        &[&["find", "."], &["rm", "{}"]],
        Unprovable,
    ),
    ("command rm x", &[&["rm", "x"]], Proven),
    ("command -v rm", &[&["command", "-v", "rm"]], Proven),
    ("builtin exec /bin/rm x", &[&["rm", "x"]], Proven),
    ("FOO=1 BAR=2 rm x", &[&["rm", "x"]], Proven),
    ("/usr/bin/env /bin/rm x", &[&["rm", "x"]], Proven),
    ("env", &[&["env"]], Proven),
    ("env -S 'rm -rf /'", &[&["rm", "-rf", "/"]], Unprovable),
    ("command -p -- rm x", &[&["rm", "x"]], Proven),
    ("exec -a name rm x", &[&["rm", "x"]], Proven),
    (
        "sudo -u root rm x",
        &[&["sudo", "-u", "root", "rm", "x"]],
        Proven,
    ),
    ("nohup rm x &", &[&["rm", "x"]], Proven),
    ("time", &[&["time"]], Proven),
    // Without a command, xargs runs `echo`.
    ("xargs", &[&["echo"]], Proven),
    ("exec 3>&1", &[&["exec"]], Proven),
    // Declarations.
    // An exported assignment may change what later commands run.
    ("export A=1 B", &[&["export", "A=1", "B"]], Unprovable),
    // Unprovable: substitutions, variable names, eval, source.
    (
        "echo $(sudo ls)",
        &[&["echo", "$(sudo ls)"], &["sudo", "ls"]],
        Unprovable,
    ),
    ("echo `id`", &[&["echo", "`id`"], &["id"]], Unprovable),
    (
        "diff <(ls a) <(ls b)",
        &[&["diff", "<(ls a)", "<(ls b)"], &["ls", "a"], &["ls", "b"]],
        Unprovable,
    ),
    ("x=$(curl y)", &[&["curl", "y"]], Unprovable),
    ("$CMD arg", &[&["$CMD", "arg"]], Unprovable),
    ("env $CMD arg", &[&["$CMD", "arg"]], Unprovable),
    ("/bin/r? x", &[&["/bin/r?", "x"]], Unprovable),
    ("eval \"x\"", &[&["eval", "x"], &["x"]], Unprovable),
    (
        "eval 'sudo reboot'",
        &[&["eval", "sudo reboot"], &["sudo", "reboot"]],
        Unprovable,
    ),
    ("source x.sh", &[&["source", "x.sh"]], Unprovable),
    (". ./x.sh", &[&[".", "./x.sh"]], Unprovable),
    (
        "bash -c \"$X\"",
        &[&["bash", "-c", "$X"], &["$X"]],
        Unprovable,
    ),
    // Parse errors keep what could be recovered.
    ("if (ls; echo", &[&["ls"], &["echo"]], Unprovable),
    ("echo 'unterminated", &[&["echo"]], Unprovable),
    ("r\\\nm -rf /", &[&["rm", "-rf", "/"]], Proven),
];

#[test]
fn table_of_commands() {
    let mut failures = Vec::new();
    for &(script, expected, expect) in CASES {
        let got = analyze(script);
        let got_words: Vec<Vec<&str>> = got
            .commands
            .iter()
            .map(|c| c.words.iter().map(String::as_str).collect())
            .collect();
        let want: Vec<Vec<&str>> = expected.iter().map(|c| c.to_vec()).collect();
        let verdict = if got.unprovable.is_empty() {
            Proven
        } else {
            Unprovable
        };
        if got_words != want || verdict != expect {
            failures.push(format!(
                "{script:?}\n   got {got_words:?} {verdict:?} {:?}\n  want {want:?} {expect:?}",
                got.unprovable
            ));
        }
    }
    assert!(CASES.len() >= 40);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn redirects(script: &str) -> Vec<Vec<(String, String)>> {
    analyze(script)
        .commands
        .into_iter()
        .map(|c| c.redirects.into_iter().map(|r| (r.op, r.target)).collect())
        .collect()
}

fn r(op: &str, target: &str) -> (String, String) {
    (op.to_string(), target.to_string())
}

#[test]
fn redirections_attach_to_their_command() {
    assert_eq!(
        redirects("echo x > /dev/sda"),
        vec![vec![r(">", "/dev/sda")]]
    );
    assert_eq!(
        redirects("ls 2> err.log >> \"out file\" < in"),
        vec![vec![r("2>", "err.log"), r(">>", "out file"), r("<", "in")]]
    );
    assert_eq!(
        redirects("a &> x; b &>> y; c >| z; d >&w"),
        vec![
            vec![r("&>", "x")],
            vec![r("&>>", "y")],
            vec![r(">|", "z")],
            vec![r(">&", "w")]
        ]
    );
    assert_eq!(redirects("> f echo hi"), vec![vec![r(">", "f")]]);
}

#[test]
fn descriptor_duplications_and_heredocs_are_not_listed() {
    assert_eq!(
        redirects("ls 2>&1 >&2 2>&- <&0"),
        vec![Vec::<(String, String)>::new()]
    );
    assert_eq!(
        redirects("cat <<EOF\nx\nEOF"),
        vec![Vec::<(String, String)>::new()]
    );
}

#[test]
fn read_write_redirect_is_listed_but_unsupported_by_the_grammar() {
    let got = analyze("cat <> f");
    assert_eq!(
        got.commands[0].redirects,
        vec![Redirect {
            op: "<>".into(),
            target: "f".into()
        }]
    );
    assert!(got.commands[0].redirects[0].writes());
}

#[test]
fn trailing_redirection_of_a_pipeline_belongs_to_its_last_command() {
    assert_eq!(redirects("a | b > f 2>&1"), vec![vec![], vec![r(">", "f")]]);
}

#[test]
fn redirection_of_a_group_applies_to_each_command_inside() {
    assert_eq!(
        redirects("{ a; b > x; } > f"),
        vec![vec![r(">", "f")], vec![r(">", "x"), r(">", "f")]]
    );
    assert_eq!(
        redirects("while read l; do echo \"$l\"; done < in > out"),
        vec![
            vec![r("<", "in"), r(">", "out")],
            vec![r("<", "in"), r(">", "out")]
        ]
    );
}

#[test]
fn writes_is_false_only_for_input() {
    let w = |op: &str| {
        Redirect {
            op: op.into(),
            target: "t".into(),
        }
        .writes()
    };
    assert!(!w("<"));
    assert!(!w("0<"));
    for op in [">", ">>", ">|", "&>", "&>>", "<>", "2>", "1>>", ">&"] {
        assert!(w(op), "{op}");
    }
}

#[test]
fn phrases_name_what_is_unprovable() {
    let u = |s: &str| analyze(s).unprovable;
    assert_eq!(
        u("echo $(curl x)"),
        vec!["command substitution `$(curl x)`"]
    );
    assert_eq!(u("$CMD arg"), vec!["command name is a variable `$CMD`"]);
    assert_eq!(u("source x.sh"), vec!["source `x.sh`"]);
    assert_eq!(u("eval x"), vec!["eval `x`"]);
    assert!(u("echo 'x").iter().any(|p| p.starts_with("parse error")));
    assert!(u("a\0b").iter().any(|p| p.contains("NUL")));
}

#[test]
fn substitution_in_a_string_or_redirect_target_is_found() {
    assert_eq!(
        words("echo \"a $(sudo id) b\" > $(mktemp)"),
        vec![
            vec!["echo".to_string(), "a $(sudo id) b".to_string()],
            vec!["sudo".to_string(), "id".to_string()],
            vec!["mktemp".to_string()],
        ]
    );
}

#[test]
fn shell_nesting_is_capped() {
    let mut script = "reboot".to_string();
    for _ in 0..(MAX_NESTING + 3) {
        script = format!("sh -c {}", shell_quote(&script));
    }
    let got = analyze(&script);
    assert!(
        got.unprovable
            .iter()
            .any(|p| p.contains("nested more than"))
    );
    assert!(!got.commands.iter().any(|c| c.program() == "reboot"));
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    for (open, close) in [("( ", ")"), ("$(", ")"), ("{ ", "; }"), ("\"$(", ")\"")] {
        let n = 100_000;
        let script = format!("{}ls{}", open.repeat(n), close.repeat(n));
        let got = analyze(&script);
        if open.contains("$(") {
            // Deeper than bash can parse: not judged (see `strict.rs`).
            assert!(got.unjudgeable.is_some(), "{open}");
        } else {
            assert!(got.commands.iter().any(|c| c.program() == "ls"), "{open}");
        }
        let unbalanced = analyze(&open.repeat(n));
        assert!(!unbalanced.unprovable.is_empty(), "{open}");
    }
}

#[test]
fn large_input_is_analysed() {
    let script = "echo 'a b' && rm -f x; ".repeat(40_000);
    assert!(script.len() > 900_000);
    let got = analyze(&script);
    assert_eq!(got.commands.len(), 80_000);
    // Read by the strict reader alone, it is every command but no proof.
    assert_eq!(
        got.unprovable,
        ["a script of more than 16 KiB is read without a second opinion"]
    );
    let small = "echo 'a b' && rm -f x; ".repeat(500);
    assert!(small.len() < 16 * 1024);
    assert!(analyze(&small).unprovable.is_empty());
}

#[test]
fn serializes_without_empty_redirects() {
    let got = analyze("ls > f; pwd");
    let json = serde_json::to_string(&got).unwrap_or_default();
    assert_eq!(
        json,
        r#"{"commands":[{"words":["ls"],"redirects":[{"op":">","target":"f"}]},{"words":["pwd"]}],"unprovable":[]}"#
    );
    let back: CommandAnalysis = serde_json::from_str(&json).unwrap_or_default();
    assert_eq!(back, got);
}

fn safe_word() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_./-]{0,8}"
}

proptest! {
    #[test]
    fn analyze_never_panics(script in "\\PC*") {
        let _ = analyze(&script);
    }

    #[test]
    fn analyze_never_panics_on_shell_punctuation(
        script in "[ a-z$`'\"\\\\(){}<>|&;!*?\\[\\]\\n\\x00=-]{0,200}"
    ) {
        let _ = analyze(&script);
    }

    #[test]
    fn analyze_never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = analyze(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn plain_list_and_pipeline_yield_its_parts(
        a in proptest::collection::vec(safe_word(), 1..4),
        b in proptest::collection::vec(safe_word(), 1..4),
        c in proptest::collection::vec(safe_word(), 1..4),
    ) {
        // Programs that this module strips or treats specially are kept out.
        let special = |w: &[String]| {
            let name = w[0].rsplit('/').next().unwrap_or("");
            ["env", "command", "builtin", "exec", "nohup", "nice", "time", "timeout",
             "stdbuf", "xargs", "eval", "source", "bash", "sh", "zsh", "dash", "ksh",
             "case", "if", "for", "while", "until", "do", "done", "then", "fi", "esac",
             "select", "function", "in", "elif", "else", "export", "declare", "local",
             "readonly", "typeset", "unset"]
                .contains(&name) || name.is_empty()
        };
        prop_assume!(!special(&a) && !special(&b) && !special(&c));
        let script = format!("{} && {} | {}", a.join(" "), b.join(" "), c.join(" "));
        let got = analyze(&script);
        prop_assert!(got.unprovable.is_empty(), "{:?}", got.unprovable);
        // Programs are named without their directory.
        let expected: Vec<Vec<String>> = [a, b, c]
            .into_iter()
            .map(|mut w| {
                w[0] = wrappers::program_name(&w[0]).to_string();
                w
            })
            .collect();
        prop_assert_eq!(words(&script), expected);
    }
}

#[test]
#[ignore = "slow: a plain `cargo test` leaves it out; `cargo test -- --ignored` (and CI) runs it"]
fn pathological_inputs_are_cut_off() {
    // Each of these sends the grammar's lexer into rescanning the rest of
    // the input at every token; unbounded, the first takes minutes. (A
    // construct the strict reader refuses comes first, so that tree-sitter
    // parses it all.)
    for unit in ["<<", "x=(", "$[", "<<<"] {
        let got = analyze(&format!("coproc ls; {}", unit.repeat(100_000)));
        assert!(
            got.unprovable.iter().any(|p| p.contains("too costly")),
            "{unit}: {:?}",
            got.unprovable
        );
    }
}

/// Rough timings, for tuning by hand:
/// `cargo test --release --lib shell::tests::timings -- --ignored --nocapture`.
#[test]
#[ignore = "rough timings printed for tuning by hand; benches/ measure, this asserts nothing"]
fn timings() {
    let typical = [
        "ls -la",
        "git commit -m \"fix: thing\" && git push origin main",
        "find . -name '*.rs' | xargs grep -n unwrap | head -20",
        "cd /tmp && timeout 5 env FOO=1 nice -n 3 bash -c 'rm -rf x; echo $(date)' > out.log 2>&1",
    ];
    for s in typical {
        let n = 2000;
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(analyze(s));
        }
        println!("{:?} per call: {s}", t.elapsed() / n);
    }
    let body = "line $x with 'quotes' and `and` $(stuff)\n".repeat(10_000);
    let large = [
        "echo 'a b' && rm -f x; ".repeat(40_000),
        format!("cat > f <<EOF\n{body}EOF\n"),
        "$(".repeat(100_000),
        "x=(".repeat(100_000),
        "<<".repeat(100_000),
    ];
    for s in large {
        let t = std::time::Instant::now();
        let got = analyze(&s);
        let (checks, read) = walk::parse_checks(&s);
        println!(
            "{:?}.. ({} bytes): {:?}, {} commands, {checks} checks, {read} bytes read",
            &s[..4],
            s.len(),
            t.elapsed(),
            got.commands.len()
        );
    }
}

#[test]
fn a_redirect_after_a_list_belongs_to_its_last_command_only() {
    let analysis = analyze("ls && echo $(id) > out.txt");
    let with_redirect: Vec<&str> = analysis
        .commands
        .iter()
        .filter(|c| !c.redirects.is_empty())
        .map(|c| c.program())
        .collect();
    assert_eq!(with_redirect, ["echo"]);
    let analysis = analyze("a; b || c > f");
    let with_redirect: Vec<&str> = analysis
        .commands
        .iter()
        .filter(|c| !c.redirects.is_empty())
        .map(|c| c.program())
        .collect();
    assert_eq!(with_redirect, ["c"]);
}

/// tree-sitter-bash's scanner once read past its character tables (and
/// crashed) on `{` followed by a wide character, found by
/// `analyze_never_panics`; non-ASCII text now reaches the parser as ASCII.
#[test]
fn wide_characters_never_reach_the_grammar_scanner_but_words_keep_them() {
    for script in [
        "{\u{10FFFF}..",
        "{1\u{2028}",
        "echo {\u{1F600}..9}",
        "\u{FFFF}{\u{FFFF}",
    ] {
        let _ = analyze(script);
    }
    let analysis = analyze("écho «sudo» && grep ü f");
    let words: Vec<&Vec<String>> = analysis.commands.iter().map(|c| &c.words).collect();
    assert_eq!(
        words,
        [
            &vec!["écho".to_owned(), "«sudo»".to_owned()],
            &vec!["grep".to_owned(), "ü".to_owned(), "f".to_owned()]
        ]
    );
}

/// Nested expansions and substitutions of every kind, and a 1 MB command:
/// the text scanned by the walk (whole-node searches, nested parses) stays
/// within a small multiple of the input, so nothing is quadratic.
#[test]
#[ignore = "slow: a plain `cargo test` leaves it out; `cargo test -- --ignored` (and CI) runs it"]
fn nested_expansions_and_large_commands_take_linear_work() {
    let n = 80_000;
    let inputs = [
        format!("echo {}1{}", "$((".repeat(n), "))".repeat(n)),
        format!("echo {}", "$((".repeat(n)),
        format!("echo {}x{}", "${x:-".repeat(n), "}".repeat(n)),
        format!("echo {}x{}", "$[".repeat(n), "]".repeat(n)),
        format!("cat <<EOF\n{}\nEOF\n", "`a ${x:-`".repeat(n)),
        // Hidden substitutions that all differ: each is read as a script.
        format!(
            "cat <<EOF\n{}\nEOF\n",
            (0..n / 4).map(|i| format!("`a{i}`")).collect::<String>()
        ),
        format!("(({}1{}))", "(".repeat(n), ")".repeat(n)),
        format!("{}1{}", "((".repeat(n), "))".repeat(n)),
        format!("{}ls{}", "{ ((x=1)); ".repeat(n / 4), " }".repeat(n / 4)),
        "echo 'a b' && rm -f x > out; ".repeat(36_000),
        format!("ls {}", "a/".repeat(500_000)),
        // Every command read differently by the two readers.
        "ls\r x; ".repeat(125_000),
        format!("{}ls; ls{}", "{ ".repeat(20_000), "; } > f".repeat(20_000)),
    ];
    for script in &inputs {
        let started = std::time::Instant::now();
        let (got, work) = walk::analyze_counting(script);
        let elapsed = started.elapsed();
        eprintln!(
            "{:?}…: {} bytes, {work} bytes scanned, {} commands, {elapsed:?}",
            &script[..12],
            script.len(),
            got.commands.len()
        );
        assert!(
            work <= 12 * script.len() + (1 << 20),
            "{:?}…: {work} bytes scanned for {}",
            &script[..12],
            script.len()
        );
    }
}

fn bare(script: &str) -> Vec<(String, String)> {
    analyze(script)
        .bare_redirects
        .iter()
        .map(|r| (r.op.clone(), r.target.clone()))
        .collect()
}

#[test]
fn redirections_on_no_simple_command_are_bare() {
    assert_eq!(bare("> f"), vec![r(">", "f")]);
    assert_eq!(
        bare("ls; > .gavel/audit.db"),
        vec![r(">", ".gavel/audit.db")]
    );
    assert_eq!(bare("2> f;wc"), vec![r("2>", "f")]);
    assert_eq!(bare("[[ x ]] > f"), vec![r(">", "f")]);
    assert_eq!(bare("((1)) > f; ls"), vec![r(">", "f")]);
    assert_eq!(bare("x=1 > f"), vec![r(">", "f")]);
    assert_eq!(bare("f() { ls; } > f"), vec![r(">", "f")]);
    // `[` is a simple command: the redirection is its own.
    assert_eq!(
        redirects("ls && [ 1 ] > x"),
        vec![vec![], vec![r(">", "x")]]
    );
    assert_eq!(
        words("[ -f x ] && cat x"),
        vec![vec!["[", "-f", "x", "]"], vec!["cat", "x"]]
    );
    assert!(analyze("[ -f x ] && cat x").unprovable.is_empty());
    // On a command, a redirection is the command's.
    assert_eq!(bare("{ true; } > f"), vec![]);
    assert_eq!(redirects("{ true; } > f"), vec![vec![r(">", "f")]]);
}

#[test]
fn heredoc_first_keeps_the_redirections_and_words_after_it() {
    assert_eq!(
        redirects("cat <<EOF > out.txt\nhi\nEOF\n"),
        vec![vec![r(">", "out.txt")]]
    );
    assert_eq!(
        redirects("cat <<EOF >> ~/.bashrc\nexport X=1\nEOF\n"),
        vec![vec![r(">>", "~/.bashrc")]]
    );
    assert_eq!(
        words("rm <<EOF -rf x\nhi\nEOF\n"),
        vec![vec!["rm", "-rf", "x"]]
    );
    let got = analyze("cat <<EOF > f a.txt\nhi\nEOF\n");
    assert_eq!(got.commands[0].words, vec!["cat", "a.txt"]);
    assert!(got.unprovable.is_empty(), "{:?}", got.unprovable);
}

#[test]
fn a_line_continuation_in_a_redirection_is_removed() {
    assert_eq!(
        redirects("ls > \\\n/dev/sda"),
        vec![vec![r(">", "/dev/sda")]]
    );
    assert_eq!(
        redirects("ls > /dev/s\\\nda"),
        vec![vec![r(">", "/dev/sda")]]
    );
}

/// Commands that bash runs but tree-sitter hides: the walk must list them
/// (for deny rules), and the script is never provable.
#[test]
fn hidden_commands_are_seen() {
    for script in [
        "ls\r#; sudo ls",
        "ls\u{c}#; sudo ls",
        "ls\u{b}#; sudo ls",
        "echo a\\\n#; sudo ls",
        "ls\n\\sudo ls",
        "echo ${PWD#$(sudo ls)}",
        "echo ${PWD#`sudo ls`}",
        "echo \"${x:-'$(sudo ls)'}\"",
        "echo ${x:-${y:-$(sudo ls)}}",
        "cat <<EOF\n`sudo ls`\nEOF\n",
        "cat <<-EOF\n\t`sudo ls`\nEOF\n",
        "cat <<E\"OF\"\nhi\nEOF\nsudo ls\nE\"OF\"\n",
        "head -n 1 <<E'O'F\nEOF\nsudo ls\n",
        "echo 'a[$(sudo ls)]'; echo $(( _ ))",
        "echo '$(sudo ls)'; echo ${_@P}",
        "echo 'a[$(sudo ls)]'; [[ _ -eq 1 ]] && ls",
        "coproc sudo ls",
        "echo `echo \\`sudo ls\\``",
        "echo $((sudo ls) )",
        // A partly quoted delimiter before a construct the strict reader
        // refuses: the walk finds bash's end of the heredoc itself.
        "cat <<E\"OF\" ${x:-a}\nhi\nEOF\nsudo ls\nE\"OF\"\n",
        "cat <<-E'O'F\n\tEOF\nsudo ls\nE'O'F\n",
        "coproc { sudo ls; }",
        "coproc NAME while true; do sudo ls; done",
        "unset 'a[$(sudo ls)]'",
        "test -v 'a[$(sudo ls)]'",
        "echo 'a[$(sudo ls)]'; let _",
        "trap 'sudo ls' EXIT; ls",
        "echo 'a[$(sudo ls)]'; declare -i x; x=_",
        // Read by bash before a construct the strict reader refuses.
        "ls\n\\sudo ls; echo ${x:-a}",
    ] {
        let got = analyze(script);
        assert!(
            got.commands.iter().any(|c| c.words == ["sudo", "ls"]),
            "{script:?}: {:?}",
            got.commands
        );
        assert!(!got.unprovable.is_empty(), "{script:?}");
    }
}

/// tree-sitter-bash's lexer reads a line end followed by a backslash
/// (or by line continuations) into the next word, joining the next line
/// to the command before it: `ls x<newline>\\rm y` became one command
/// `ls x <newline>rm y`, and after a construct the strict reader refuses
/// (`$(date)`) nothing else read the line, so deny rules never saw `rm`.
/// The walk ends the command where bash does, wherever tree-sitter hung
/// the line: on a command, a declaration or a redirection's destinations.
#[test]
fn a_line_joined_by_the_parser_is_a_command_of_its_own() {
    for (script, expected) in [
        (
            "echo $(date)\n\\rm -rf /",
            &[&["echo", "$(date)"][..], &["rm", "-rf", "/"], &["date"]][..],
        ),
        (
            "echo $(date)\nls\n\\\n\\s\\udo ls",
            &[&["echo", "$(date)"], &["date"], &["ls"], &["sudo", "ls"]],
        ),
        (
            "echo $(date)\nls x # c\n\\sudo ls",
            &[
                &["echo", "$(date)"],
                &["date"],
                &["ls", "x"],
                &["sudo", "ls"],
            ],
        ),
        (
            "echo $(date)\nexport x\n\\sudo ls",
            &[
                &["echo", "$(date)"],
                &["date"],
                &["export", "x"],
                &["sudo", "ls"],
            ],
        ),
        (
            "echo $(date)\nx=1\n\\sudo ls",
            &[&["echo", "$(date)"], &["date"], &["sudo", "ls"]],
        ),
        (
            "echo $(date)\nls x\n\\a\n\\b\n\\sudo ls",
            &[
                &["echo", "$(date)"],
                &["date"],
                &["ls", "x"],
                &["a"],
                &["b"],
                &["sudo", "ls"],
            ],
        ),
    ] {
        let got = analyze(script);
        let words: Vec<Vec<String>> = got.commands.iter().map(|c| c.words.clone()).collect();
        assert_eq!(words, expected, "{script:?}");
        assert!(
            got.unprovable.iter().any(|p| p.contains("joins a line")),
            "{script:?}: {:?}",
            got.unprovable
        );
    }
    // A line hung on a redirection's destinations keeps its own redirections.
    assert_eq!(
        redirects("echo $(date)\nls > f\n\\rm x > g"),
        vec![vec![], vec![], vec![r(">", "f")], vec![r(">", "g")]]
    );
    assert_eq!(
        words("echo $(date)\nls > f\n\\rm x > g"),
        vec![
            vec!["echo", "$(date)"],
            vec!["date"],
            vec!["ls"],
            vec!["rm", "x"]
        ]
    );
}

/// `{ cat <<EOF > f; }` is an `ERROR` to tree-sitter, with the redirection
/// inside it: bash still opens `f`, so the walk keeps it (bare), and deny
/// rules see it even where the strict reader refused earlier.
#[test]
fn a_redirection_left_in_a_parse_error_is_kept() {
    let got = analyze("echo $(date)\n{ cat <<EOF > gavel.toml; }\nx\nEOF\n");
    assert!(
        got.all_redirects()
            .any(|r| r.op == ">" && r.target == "gavel.toml"),
        "{got:?}"
    );
}

#[test]
fn time_and_negation_run_their_command() {
    // Bash runs `sudo ls`, and both readings agree on it.
    assert_eq!(words("time ! sudo ls"), vec![vec!["sudo", "ls"]]);
    assert_eq!(words("time -p ! ls"), vec![vec!["ls"]]);
    assert_eq!(words("! ! sudo ls"), vec![vec!["sudo", "ls"]]);
    // A quoted `!` is a program name, but words no longer show quoting:
    // a `!` read as a command name is unprovable.
    assert!(!analyze("'!' ls").unprovable.is_empty());
    // `!` after `|` is a syntax error to bash.
    assert!(!analyze("ls | ! grep x").unprovable.is_empty());
}

#[test]
fn a_quoted_heredoc_body_is_text() {
    let got = analyze("cat <<'EOF'\n`sudo ls` $(rm -rf /)\nEOF\n");
    assert_eq!(
        words("cat <<'EOF'\n`sudo ls` $(rm -rf /)\nEOF\n"),
        vec![vec!["cat"]]
    );
    assert!(got.unprovable.is_empty(), "{:?}", got.unprovable);
}

/// The strict reader refuses what it does not model, naming it.
#[test]
fn the_strict_reader_names_what_it_does_not_model() {
    for (script, phrase) in [
        ("echo ${x:-a}", "parameter expansion with an operator"),
        ("echo $((1))", "arithmetic expansion"),
        ("echo {a,b}", "brace expansion"),
        ("case x in a) ls;; esac", "`case`"),
        ("echo $'\\u00e9'", "`\\u`"),
        ("cat <<E\"OF\"\nhi\nE\"OF\"\n", "heredoc without its end"),
        ("a[1]=x ls", "array element assignment"),
        ("echo $\"x\"", "translated string"),
        ("ls <(pwd)", "process substitution"),
    ] {
        let got = analyze(script);
        assert!(
            got.unprovable.iter().any(|p| p.contains(phrase)),
            "{script:?}: {:?}",
            got.unprovable
        );
    }
}

#[test]
fn the_strict_reader_follows_bash() {
    let read = |s: &str| {
        strict::read(s).map(|r| {
            r.commands
                .into_iter()
                .map(|c| c.words.into_iter().map(|w| w.text).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        read("ls\r#; sudo ls"),
        Ok(vec![
            vec!["ls\r#".to_string()],
            vec!["sudo".into(), "ls".into()]
        ])
    );
    assert_eq!(
        read("echo a\\\n#b c"),
        Ok(vec![vec!["echo".to_string(), "a#b".into(), "c".into()]])
    );
    assert_eq!(read("ls \\\n# c"), Ok(vec![vec!["ls".to_string()]]));
    assert_eq!(
        read("x=1 y+=2 ls 2>/dev/null"),
        Ok(vec![vec!["ls".to_string()]])
    );
    assert_eq!(
        read("! time -p ls"),
        Ok(vec![vec!["time".to_string(), "-p".into(), "ls".into()]])
    );
    assert_eq!(
        read("cat <<E\"OF\" a\nEOF\nsudo ls\n"),
        Ok(vec![
            vec!["cat".to_string(), "a".into()],
            vec!["sudo".into(), "ls".into()]
        ])
    );
    assert_eq!(
        read("echo $'a\\x41\\'b'"),
        Ok(vec![vec!["echo".to_string(), "aA'b".into()]])
    );
    assert!(read("echo $'a\\0b'").is_err());
    assert!(read("ls; ;").is_err());
    assert!(read("ls |").is_err());
    assert!(read("{ ls; } x").is_err());
    let reading = strict::read("{ a; b > x; } 2> f; > g").unwrap_or_default();
    let redirects: Vec<Vec<(String, String)>> = reading
        .commands
        .iter()
        .map(|c| {
            c.redirects
                .iter()
                .map(|r| (r.op.clone(), r.target.clone()))
                .collect()
        })
        .collect();
    assert_eq!(
        redirects,
        vec![vec![r("2>", "f")], vec![r(">", "x"), r("2>", "f")]]
    );
    assert_eq!(
        reading.bare,
        vec![Redirect {
            op: ">".into(),
            target: "g".into()
        }]
    );
}

/// Every command of the shell fixtures: the corpus, the differential
/// harness's counterexamples, and the table above.
fn fixture_commands() -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Case {
        command: String,
    }
    #[derive(serde::Deserialize)]
    struct Cases {
        case: Vec<Case>,
    }
    let shell = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/shell");
    let mut files: Vec<_> = std::fs::read_dir(shell.join("corpus"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.push(shell.join("differential-counterexamples.toml"));
    files.sort();
    let mut commands: Vec<String> = CASES.iter().map(|c| c.0.to_string()).collect();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let cases: Cases = toml::from_str(&text).unwrap();
        commands.extend(cases.case.into_iter().map(|c| c.command));
    }
    commands
}

#[test]
fn a_script_parsed_in_parts_sees_what_the_whole_parse_sees() {
    // Read as a long script (past a threshold of one byte): the strict
    // reader alone where it reads the script, or every part before its
    // last cut, and tree-sitter in parts cut where the strict reader
    // allows for the rest; against one parse of the whole script: every
    // fixture alone, and each with the next one after each control
    // operator. Where the strict reader refuses before any cut, the two
    // are the same; otherwise the script is unprovable and every program
    // the whole parse found is still found (where tree-sitter misreads a
    // cut, as `$'\\' ; sudo x`, the parts may find more, and where the
    // whole parse broke down, less of what it recovered).
    let commands = fixture_commands();
    assert!(commands.len() > 300, "{} fixture commands", commands.len());
    let mut scripts = commands.clone();
    for (i, pair) in commands.windows(2).enumerate() {
        let op = ["; ", "\n", " && ", " || ", " | ", " & ", " |& "][i % 7];
        scripts.push(format!("{}{op}{}", pair[0], pair[1]));
        scripts.push(format!("ls -l{op}{}{op}echo x", pair[0]));
    }
    let programs = |a: &CommandAnalysis| -> std::collections::BTreeSet<String> {
        a.commands.iter().map(|c| c.program().to_string()).collect()
    };
    let mut cut = 0;
    let mut failures = Vec::new();
    for script in &scripts {
        let whole = walk::analyze_in_parts(script, 0, usize::MAX);
        let parts = walk::analyze_in_parts(script, 0, 1);
        let (_, refused, splits) = strict::read_with_splits(script, Some(1));
        let unfinished = strict::read_with_splits(script, Some(1)).0.unfinished;
        let ok = if refused.is_some() && splits.is_empty() && !unfinished {
            // Both parsed by tree-sitter alone; the phrase naming what the
            // strict reader refused may differ, as a long script's reading
            // goes further.
            whole.commands == parts.commands
                && whole.bare_redirects == parts.bare_redirects
                && whole.unprovable.is_empty() == parts.unprovable.is_empty()
        } else {
            cut += 1;
            // Where the whole parse itself went wrong (a parse error, or a
            // reading bash does not share), what it recovered may be no
            // command at all (a heredoc's delimiter line read as one).
            let broken = whole
                .unprovable
                .iter()
                .any(|p| p.starts_with("parse error") || p.contains("two readings"));
            // Where the strict reader read the whole script (bash's
            // reading), tree-sitter's may still see more: it ends a heredoc
            // at a line that only starts with the delimiter (`EOF && ls`),
            // where bash reads on to the real end.
            let heredoc_misread = refused.is_none() && script.contains("<<");
            !parts.unprovable.is_empty()
                && (broken || heredoc_misread || programs(&whole).is_subset(&programs(&parts)))
        };
        if !ok {
            failures.push(format!(
                "{script:?}\n  whole {:?} {:?}\n  parts {:?} {:?}",
                whole.commands, whole.unprovable, parts.commands, parts.unprovable
            ));
        }
    }
    assert!(cut > scripts.len() / 2, "only {cut} scripts were cut");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The strict reading of `src` as part of a long script (no cuts): the
/// words of each command, or the phrase it refused with.
fn read_long(src: &str) -> Result<Vec<Vec<String>>, String> {
    let (reading, refused, _) = strict::read_with_splits(src, Some(usize::MAX));
    match refused {
        Some(phrase) => Err(phrase),
        None => Ok(reading
            .commands
            .into_iter()
            .map(|c| c.words.into_iter().map(|w| w.text).collect())
            .collect()),
    }
}

fn programs_of(commands: &[Vec<String>]) -> Vec<&str> {
    commands.iter().map(|c| c[0].as_str()).collect()
}

#[test]
fn a_long_script_is_read_inside_substitutions_and_expansions() {
    for (script, expected) in [
        ("echo $(sudo ls)", &["sudo", "echo"][..]),
        ("echo \"a$(id; rm x)b\" c", &["id", "rm", "echo"]),
        ("cat <(ls) >(wc) x<(id)", &["ls", "wc", "id", "cat"]),
        ("diff < <(ls) x", &["ls", "diff"]),
        ("echo `sudo ls`", &["sudo", "echo"]),
        ("echo `echo \\`rm x\\``", &["rm", "echo", "echo"]),
        ("echo \"`id`\"", &["id", "echo"]),
        ("echo $(( $(id) + $((1 + (2))) ))", &["id", "echo"]),
        ("echo $[ 1 + a[$(id)] ]", &["id", "echo"]),
        ("echo ${PWD#$(rm -rf x)} ${x:-`id`}", &["rm", "id", "echo"]),
        ("echo ${x:-${y:-$(id)}}", &["id", "echo"]),
        ("(( x = $(id) )) && ls", &["id", "ls"]),
        ("((((ls)))); echo", &["echo"]),
        ("echo {a,b}{c,d} $( (ls) )", &["ls", "echo"]),
        ("echo $(cat <<E\n$x )\nE\n) x", &["cat", "echo"]),
        ("f() { echo $(sudo ls); }", &["sudo", "echo"]),
        (
            "case $(id) in a|$(wc)) ls;; (b) ;; c) rm x;& *) cat ;;& esac; echo",
            &["id", "wc", "ls", "rm", "cat", "echo"],
        ),
        ("case x\nin\n# c\na)\nls\n;;\nesac > f", &["ls"]),
        ("case x in a) ls\nesac", &["ls"]),
        (
            "[[ -f $(id) && x < y || ! -n `wc` ]] && ls",
            &["id", "wc", "ls"],
        ),
        ("if [[ $x == y ]]; then rm x; fi", &["rm"]),
        ("x=\"$([[ a == @( ]] ) ]] ; sudo reboot)\"", &["sudo"]),
        ("[[ $x == +(a|$(id))*@(b) ]] && ls", &["id", "ls"]),
        // The heredoc's body comes before the line after the header.
        (
            "cat <<EOF; for x in a\nEOF\ndo sudo reboot; done\nEOF",
            &["cat", "sudo", "EOF"],
        ),
        (
            "cat <<E > f; ls\n'$(id)' `wc`\n${x:-$(rm x)} $((1))\nE\necho",
            &["cat", "ls", "id", "wc", "rm", "echo"],
        ),
        ("cat <<'E'\n$(id)\nE\n", &["cat"]),
        (
            "a=(x $(id)\n# c\n[k]=`wc`) b+=() ls \"${a[@]}\"",
            &["id", "wc", "ls"],
        ),
        ("a=(1 2); echo", &["echo"]),
        ("cat <<E\n$(id\n)\nE\n", &["cat", "id"]),
    ] {
        let read = read_long(script);
        let Ok(commands) = &read else {
            panic!("{script:?}: {read:?}");
        };
        assert_eq!(programs_of(commands), expected, "{script:?}: {commands:?}");
    }
    // A short script gets the same reading for its deny side where the
    // strict reader refuses (tree-sitter misreads this one).
    let short = analyze("cat <<EOF; for x in a\nEOF\ndo sudo reboot; done\nEOF");
    assert!(short.commands.iter().any(|c| c.program() == "sudo"));
    // The word holding a substitution keeps its text and is not literal.
    let (reading, _, _) = strict::read_with_splits("$(echo sudo) reboot", Some(usize::MAX));
    let outer = &reading.commands[1].words[0];
    assert_eq!(
        (outer.text.as_str(), outer.known),
        ("$(echo sudo)", word::Known::Substitution)
    );
}

#[test]
fn a_long_script_refuses_what_it_cannot_match_like_bash() {
    for script in [
        "echo $((id) )",
        "((id) ); ls",
        "echo ${x:-'}'}",
        "echo \"${x:-'$(id)'}\"",
        "echo $(( \"1\" ))",
        "echo $(ls",
        "echo `ls",
        "echo ${x",
        "echo $((1)",
        "cat <<E $(ls\n)\nE\n",
        "case x in @(a|b)) ls;; esac",
        "case x in a) { ls;; } esac",
        "case x in a) ls;; esac x",
        "[[ $x =~ ^(a|b)$ ]]",
        "[[ ( x ) ]]",
        "[[ a == x( b ) ]]",
        "[[ a == @(b)(c) ]]",
        "[[ a == @('b') ]]",
        "echo ${ ls; }",
        "echo ${| ls; }",
        "[[ -f x\n]]",
        "[[ x ]] y",
        "ls;; echo",
        "cat <<E\n$(id\nE\n)\nE\n",
        "cat <<E\na\\\nE\nE\n",
        "a=(x=(1))",
        "ls a=(1)",
    ] {
        assert!(
            read_long(script).is_err(),
            "{script:?}: {:?}",
            read_long(script)
        );
    }
    // A script that ends inside a construct: bash runs nothing from its
    // last line on, so nothing else need read the rest.
    for (script, unfinished) in [
        ("ls\necho $((1 +", true),
        ("ls\necho \"$(id; ", true),
        ("ls; { echo ${x:-", true),
        ("ls &&", true),
        ("cat <<E\n$(id\nE\nls\n", false),
        ("echo $((x) )", false),
        ("echo 'x", false),
    ] {
        let (reading, refused, _) = strict::read_with_splits(script, Some(usize::MAX));
        assert!(refused.is_some(), "{script:?}");
        assert_eq!(reading.unfinished, unfinished, "{script:?}: {refused:?}");
    }
    // Substitutions nest as deep as the input goes, on a stack that grows
    // (bash itself crashes on 2,000); arithmetic and `${` without
    // recursion.
    let deep = |open: &str, core: &str, close: &str, n: usize| {
        format!("echo {}{core}{}", open.repeat(n), close.repeat(n))
    };
    assert_eq!(
        read_long(&deep("$(", "sudo x", ")", 8_000)).map(|c| c.len()),
        Ok(8_001)
    );
    let (reading, refused, _) =
        strict::read_with_splits(&deep("$(", "sudo x", ")", 9_000), Some(usize::MAX));
    assert!(reading.too_deep, "{refused:?}");
    assert_eq!(
        read_long(&deep("$((", "$(id)", "))", 100_000)).map(|c| programs_of(&c).join(" ")),
        Ok("id echo".to_string())
    );
    assert!(read_long(&deep("${x:-", "x", "}", 100_000)).is_ok());
}

#[test]
fn a_long_script_finds_commands_inside_substitutions_without_tree_sitter() {
    // Past the threshold, the strict reader reads these alone: deny rules
    // still see the commands in substitutions and expansions.
    let pad = "ls; ".repeat(5000);
    for (inside, program) in [
        ("echo $(sudo reboot)", "sudo"),
        ("echo ${PWD#`rm -rf /`}", "rm"),
        ("echo $(( $(shutdown now) ))", "shutdown"),
        ("cat <(sudo ls)", "sudo"),
    ] {
        let script = format!("{pad}{inside}; {pad}");
        let got = analyze(&script);
        assert!(
            got.unprovable
                .iter()
                .any(|p| p.contains("without a second opinion")),
            "{inside:?}: {:?}",
            got.unprovable
        );
        assert!(
            got.commands.iter().any(|c| c.program() == program),
            "{inside:?}: {program} not found"
        );
    }
}

/// The deny rules judge what a loop runs, word by word.
#[test]
fn loops_are_judged_by_what_each_pass_runs() {
    use crate::policy::{Action, Policy};
    let builtin = Policy::builtin();
    let preset =
        Policy::from_toml(crate::policy::CODING_AGENT_POLICY_TOML, "coding-agent.toml").unwrap();
    for command in [
        "for x in a; do sudo ls; done",
        "for x in -rf; do rm $x /; done",
        "for x in a -rf; do rm $x \"$x\"; done",
        "for f in *; do rm -rf \"$f\"; done",
        "for d in sda; do echo x > /dev/$d; done",
        // Expanded but unprovable: the body as written is judged too.
        "v=sda; declare -n d; for d in v; do echo x > /dev/$d; done",
        "for d in null; do read d; echo x > /dev/$d; done",
        "for d in null; do unset x; echo x > /dev/$d; done",
    ] {
        let request =
            crate::ToolRequest::new("t", "bash", serde_json::json!({ "command": command }));
        let facts = crate::facts::lexical_facts(&request);
        for policy in [&builtin, &preset] {
            let decision = policy.decide(&request, &facts);
            assert_eq!(decision.action, Action::Deny, "{command}");
            assert_eq!(decision.rule_id, "bash.hard_deny", "{command}");
        }
    }
}

#[test]
fn a_loops_redirections_are_substituted_and_attached() {
    assert_eq!(
        redirects("for d in a b; do ls \"$d\" > \"$d.txt\" 2>>${d}.err; done"),
        vec![
            vec![r(">", "a.txt"), r("2>>", "a.err")],
            vec![r(">", "b.txt"), r("2>>", "b.err")],
        ]
    );
    assert_eq!(
        redirects("for d in a b; do ls $d; echo; done > out"),
        vec![vec![r(">", "out")]; 4]
    );
    assert!(
        analyze("for d in a b; do ls $d; done > out")
            .unprovable
            .is_empty()
    );
    assert_eq!(
        bare("for d in a b; do > $d; done"),
        vec![r(">", "a"), r(">", "b")]
    );
}

/// The strict reader reads a loop's body once to find its end, then once
/// per word; in a long script the first reading stays, for the deny side.
#[test]
fn the_strict_reader_expands_loops() {
    let read = |s: &str| {
        strict::read(s).map(|r| {
            r.commands
                .into_iter()
                .map(|c| c.words.into_iter().map(|w| w.text).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        read("for d in a b; do ls $d; done; ls"),
        Ok(vec![
            vec!["ls".to_string(), "a".into()],
            vec!["ls".into(), "b".into()],
            vec!["ls".into()]
        ])
    );
    assert_eq!(
        read_long("for d in a b; do ls $d; done"),
        Ok(vec![
            vec!["ls".to_string(), "$d".into()],
            vec!["ls".into(), "a".into()],
            vec!["ls".into(), "b".into()],
        ])
    );
    for refused in [
        "for d in $x; do ls; done",
        "for d in a; do for d in b; do ls; done; done",
        "for d in a; do read d; done",
        "for d in a; do cat <<EOF; done\nx\nEOF\n",
        "for d in a & do ls; done",
    ] {
        assert!(read(refused).is_err(), "{refused:?}");
    }
    // A loop's word is never a reserved word.
    assert_eq!(
        read("for k in if '!'; do $k ls; done"),
        Ok(vec![
            vec!["if".to_string(), "ls".into()],
            vec!["!".into(), "ls".into()]
        ])
    );
}

/// Expansion is bounded: words per loop, commands listed, and the text
/// read again over a script and the scripts nested in it.
#[test]
fn loop_expansion_is_bounded() {
    let items = |n: usize| {
        (0..n)
            .map(|i| format!("i{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let many = format!("for d in {}; do ls $d; done", items(64));
    let got = analyze(&many);
    assert!(got.unprovable.is_empty(), "{:?}", got.unprovable);
    assert_eq!(got.commands.len(), 64);
    let too_many = format!("for d in {}; do ls $d; done", items(65));
    let got = analyze(&too_many);
    assert!(!got.unprovable.is_empty());
    assert_eq!(words(&too_many), vec![vec!["ls", "$d"]]);
    // 20 passes of 15 commands: past 256, the rest is read as written, and
    // what comes last in the body is still seen.
    let body = "ls $d; ".repeat(14);
    let big = format!("for d in {}; do {body}sudo reboot $d; done", items(20));
    let got = analyze(&big);
    assert!(
        got.unprovable
            .iter()
            .any(|p| p.contains("more than 256 commands")),
        "{:?}",
        got.unprovable
    );
    assert!(
        got.commands
            .iter()
            .any(|c| c.words == ["sudo", "reboot", "$d"])
    );
    // Nested loops and nested scripts share one budget: this stays quick.
    let mut nested = "ls $a $b $c".to_string();
    for name in ["c", "b", "a"] {
        nested = format!("for {name} in {}; do {nested}; done", items(64));
    }
    let started = std::time::Instant::now();
    let got = analyze(&nested);
    assert!(!got.unprovable.is_empty());
    assert!(got.commands.len() < 2_000, "{}", got.commands.len());
    let mut shells = "ls $x".to_string();
    for _ in 0..6 {
        shells = format!(
            "for x in {}; do bash -c {}; done",
            items(64),
            shell_quote(&shells)
        );
    }
    let got = analyze(&shells);
    assert!(!got.unprovable.is_empty());
    assert!(got.commands.len() < 20_000, "{}", got.commands.len());
    // Loops nested deeply, or one after another, in a short script and in
    // a long one.
    let nest = |n: usize| {
        let open: String = (0..n).map(|i| format!("for d{i} in a b; do ")).collect();
        format!("{open}ls{}", "; done".repeat(n))
    };
    let many = |n: usize| vec!["for d in a b; do ls $d; done"; n].join("; ");
    for script in [nest(600), nest(20_000), many(500), many(40_000)] {
        let got = analyze(&script);
        assert!(!got.unprovable.is_empty());
        assert!(got.commands.len() <= 40_000 + 300, "{}", got.commands.len());
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}
