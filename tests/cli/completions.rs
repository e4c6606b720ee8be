//! `gavel completions` and `gavel man`: the bash completion completes a
//! subcommand in a real bash, and `man -l` renders the man page.

use std::process::Command;

use crate::support::{Sandbox, code, stderr, stdout};

/// What bash's completion offers for the words typed so far.
fn bash_completes(script: &std::path::Path, typed: &[&str]) -> Vec<String> {
    let words = typed.join(" ");
    let program = format!(
        "source {}; COMP_WORDS=({words}); COMP_CWORD={}; COMP_LINE='{words}'; COMP_POINT={}; \
         _gavel gavel {} {}; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        typed.len() - 1,
        words.len(),
        typed[typed.len() - 1],
        typed[typed.len() - 2],
    );
    let out = Command::new("bash")
        .args(["-c", &program])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).lines().map(str::to_owned).collect()
}

#[test]
fn the_bash_completion_completes_a_subcommand_in_a_real_bash() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .bare()
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let script = sandbox.root.join("gavel.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    assert_eq!(bash_completes(&script, &["gavel", "repl"]), ["replay"]);
    let rep = bash_completes(&script, &["gavel", "rep"]);
    assert_eq!(rep, ["replay", "report"]);
    let options = bash_completes(&script, &["gavel", "replay", "--fail"]);
    assert_eq!(options, ["--fail-on"]);
}

#[test]
fn every_shell_gets_a_script() {
    let sandbox = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = sandbox
            .bare()
            .args(["completions", shell])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{shell}: {}", stderr(&out));
        assert!(stdout(&out).contains("replay"), "{shell}");
    }
    let out = sandbox
        .bare()
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "an unknown shell is a usage error");
}

#[test]
fn man_renders_the_man_page() {
    let sandbox = Sandbox::new();
    let out = sandbox.bare().arg("man").output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let page = sandbox.root.join("gavel.1");
    std::fs::write(&page, &out.stdout).unwrap();
    assert!(stdout(&out).starts_with(".ie \\n(.g .ds Aq"), "roff");
    let rendered = Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .output();
    let Ok(rendered) = rendered else {
        eprintln!("skipped: rendering with man (man is not installed)");
        return;
    };
    assert!(rendered.status.success(), "{}", stderr(&rendered));
    let text = stdout(&rendered)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains("NAME"), "{text}");
    assert!(text.contains("gavel - Govern AI agents"), "{text}");
    assert!(text.contains("replay"), "{text}");
}
