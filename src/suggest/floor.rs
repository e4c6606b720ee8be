//! What `policy suggest` never proposes, however often it was approved: a
//! shell, an interpreter, an `env`-style wrapper or a package runner (each
//! runs whatever its arguments say, so an allow for it allows anything), a
//! program with subcommands named without one, a destructive shape (one
//! that deletes, kills, rewrites history or publishes), and gavel's own
//! files and git's. The lists are in code, not in a policy, so that no
//! record and no policy can talk the learner into them.
//!
//! Pure: words in, a reason out.

/// Shells: `bash -c X` runs X.
pub const SHELLS: &[&str] = &[
    "bash",
    "sh",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "pwsh",
    "powershell",
];

/// Interpreters: `python -c X` runs X (and so does `python script.py`).
pub const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "pypy",
    "pypy3",
    "ipython",
    "node",
    "nodejs",
    "deno",
    "bun",
    "ts-node",
    "tsx",
    "ruby",
    "irb",
    "perl",
    "php",
    "lua",
    "luajit",
    "R",
    "Rscript",
    "julia",
    "osascript",
    "tclsh",
    "wish",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "java",
    "jshell",
    "groovy",
    "scala",
    "kotlin",
    "swift",
    "erl",
    "escript",
    "elixir",
    "iex",
    "ghci",
    "runghc",
    "guile",
    "racket",
    "sbcl",
    "clisp",
    "expect",
];

/// Wrappers that run their arguments as a command (gavel's reading strips
/// most of them; one left in the words is one it could not strip), and
/// programs that run a command elsewhere or as someone else.
pub const WRAPPERS: &[&str] = &[
    "env",
    "command",
    "builtin",
    "exec",
    "eval",
    "source",
    ".",
    "nohup",
    "nice",
    "time",
    "timeout",
    "stdbuf",
    "xargs",
    "setsid",
    "ionice",
    "taskset",
    "chrt",
    "flock",
    "watch",
    "parallel",
    "sudo",
    "doas",
    "su",
    "runuser",
    "pkexec",
    "chroot",
    "unshare",
    "nsenter",
    "systemd-run",
    "firejail",
    "bwrap",
    "strace",
    "ltrace",
    "gdb",
    "lldb",
    "valgrind",
    "script",
    "ssh",
    "rsh",
    "nc",
    "ncat",
    "socat",
];

/// Package runners: `npx X` fetches X and runs it.
pub const PACKAGE_RUNNERS: &[&str] = &["npx", "pnpx", "bunx", "uvx", "pipx"];

/// Subcommands that run a command or a fetched package: `npm exec X`,
/// `pnpm dlx X`, `uv run X`, `docker run IMAGE X`.
pub const RUNNER_SUBCOMMANDS: &[(&str, &str)] = &[
    ("npm", "exec"),
    ("npm", "x"),
    ("pnpm", "dlx"),
    ("pnpm", "exec"),
    ("yarn", "dlx"),
    ("yarn", "exec"),
    ("bun", "x"),
    ("uv", "run"),
    ("uv", "tool"),
    ("poetry", "run"),
    ("pipenv", "run"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("rye", "run"),
    ("conda", "run"),
    ("mamba", "run"),
    ("mise", "exec"),
    ("mise", "x"),
    ("asdf", "exec"),
    ("nix", "run"),
    ("nix", "shell"),
    ("nix", "develop"),
    ("direnv", "exec"),
    ("go", "run"),
    ("docker", "run"),
    ("docker", "exec"),
    ("podman", "run"),
    ("podman", "exec"),
    ("kubectl", "exec"),
    ("kubectl", "run"),
    ("git", "submodule"),
    ("gh", "extension"),
];

/// Programs whose first word says what they do: named without one, they
/// are not proposed (an allow for `git` would allow `git push --force`).
pub const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "git",
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "go",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "gh",
    "glab",
    "aws",
    "gcloud",
    "az",
    "terraform",
    "tofu",
    "pulumi",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "pdm",
    "hatch",
    "rye",
    "rustup",
    "systemctl",
    "journalctl",
    "apt",
    "apt-get",
    "dnf",
    "yum",
    "brew",
    "dotnet",
    "conda",
    "mamba",
    "deno",
    "nix",
    "gavel",
    "mvn",
    "gradle",
    "composer",
    "bundle",
    "gem",
    "rails",
    "rake",
    "mix",
    "heroku",
    "flyctl",
    "vercel",
    "wrangler",
    "firebase",
    "hg",
    "svn",
    "jj",
    "mise",
    "asdf",
    "direnv",
    "just",
    "task",
    "ruff",
    "buf",
    "sqlx",
    "diesel",
];

/// Programs that delete, overwrite devices, change modes and owners, end
/// processes or change the system, whatever their arguments.
pub const DESTRUCTIVE_PROGRAMS: &[&str] = &[
    "rm",
    "rmdir",
    "shred",
    "unlink",
    "dd",
    "mkfs",
    "fdisk",
    "sfdisk",
    "parted",
    "wipefs",
    "mkswap",
    "truncate",
    "chmod",
    "chown",
    "chgrp",
    "chattr",
    "kill",
    "killall",
    "pkill",
    "reboot",
    "shutdown",
    "poweroff",
    "halt",
    "init",
    "crontab",
    "mount",
    "umount",
    "iptables",
    "ip6tables",
    "nft",
    "ufw",
    "useradd",
    "userdel",
    "usermod",
    "passwd",
    "visudo",
];

/// Subcommand words that delete, end, publish or undo, for any program
/// (`docker rm`, `kubectl delete`, `terraform destroy`, `npm publish`).
pub const DESTRUCTIVE_WORDS: &[&str] = &[
    "delete",
    "destroy",
    "purge",
    "prune",
    "wipe",
    "drop",
    "uninstall",
    "unpublish",
    "publish",
    "remove",
    "rm",
    "rmi",
    "kill",
    "terminate",
    "teardown",
    "erase",
    "clean",
    "reset",
    "restore",
    "filter-branch",
    "filter-repo",
    "stop",
    "disable",
    "mask",
];

/// A program and subcommand that are fine in some uses and destructive
/// with one of these words among their arguments: a rule for the pair
/// would also allow those, so only the exact commands without them are
/// proposed.
pub const DESTRUCTIVE_WHEN: &[(&str, &str, &[&str])] = &[
    (
        "git",
        "push",
        &[
            "--force",
            "-f",
            "--force-with-lease",
            "--force-if-includes",
            "--delete",
            "-d",
            "--mirror",
            "--prune",
        ],
    ),
    (
        "git",
        "checkout",
        &["-f", "--force", "--", ".", "-B", "--orphan"],
    ),
    (
        "git",
        "switch",
        &["-f", "--force", "--discard-changes", "-C"],
    ),
    (
        "git",
        "branch",
        &["-D", "-d", "--delete", "-M", "-f", "--force"],
    ),
    ("git", "tag", &["-d", "--delete", "-f", "--force"]),
    ("git", "stash", &["drop", "clear"]),
    ("git", "worktree", &["remove", "prune"]),
    ("git", "reflog", &["expire", "delete"]),
    ("git", "update-ref", &["-d"]),
    ("git", "gc", &["--prune"]),
    ("git", "rebase", &[]),
    (
        "rsync",
        "",
        &["--delete", "--delete-after", "--remove-source-files"],
    ),
    (
        "find",
        "",
        &["-delete", "-exec", "-execdir", "-ok", "-okdir"],
    ),
];

/// Why no allow may be proposed for the simple command `words` (its
/// program and subcommand as `key` reads them), or `None`.
pub fn refuses(program: &str, subcommand: Option<&str>) -> Option<String> {
    if SHELLS.contains(&program) {
        return Some(format!(
            "`{program}` is a shell: it runs whatever it is given"
        ));
    }
    if INTERPRETERS.contains(&program) || is_versioned_interpreter(program) {
        return Some(format!(
            "`{program}` is an interpreter: it runs whatever it is given"
        ));
    }
    if WRAPPERS.contains(&program) {
        return Some(format!(
            "`{program}` runs another command (a wrapper): allowing it allows anything"
        ));
    }
    if PACKAGE_RUNNERS.contains(&program) {
        return Some(format!(
            "`{program}` is a package runner: it fetches and runs code"
        ));
    }
    if let Some(sub) = subcommand
        && RUNNER_SUBCOMMANDS.contains(&(program, sub))
    {
        return Some(format!(
            "`{program} {sub}` runs a command or a fetched package: allowing it allows anything"
        ));
    }
    if DESTRUCTIVE_PROGRAMS.contains(&program) || program.starts_with("mkfs.") {
        return Some(format!(
            "`{program}` is destructive (it deletes, overwrites, or changes the system)"
        ));
    }
    if let Some(sub) = subcommand
        && DESTRUCTIVE_WORDS.contains(&sub)
    {
        return Some(format!("`{program} {sub}` is destructive"));
    }
    if SUBCOMMAND_PROGRAMS.contains(&program) && subcommand.is_none() {
        return Some(format!(
            "`{program}` has subcommands: an allow for it without one would allow every one"
        ));
    }
    None
}

/// The destructive words a rule for `program subcommand` would also allow
/// (`git push` would allow `git push --force`), or `None` when there are none.
pub fn also_allows(program: &str, subcommand: Option<&str>) -> Option<&'static [&'static str]> {
    let sub = subcommand.unwrap_or("");
    DESTRUCTIVE_WHEN
        .iter()
        .find(|(p, s, _)| *p == program && (*s == sub || s.is_empty()))
        .map(|(_, _, words)| *words)
}

/// The first argument of `args` that makes the pair destructive
/// ([`DESTRUCTIVE_WHEN`]), or any destructive subcommand word among the
/// arguments in a subcommand's place (`gcloud compute instances delete`).
pub fn destructive_argument<'a>(
    program: &str,
    subcommand: Option<&str>,
    args: &'a [String],
) -> Option<&'a str> {
    if let Some(words) = also_allows(program, subcommand) {
        if words.is_empty() {
            return args.first().map(String::as_str).or(Some(""));
        }
        if let Some(hit) = args.iter().find(|a| {
            words.contains(&a.as_str())
                || words
                    .iter()
                    .any(|w| w.starts_with("--") && a.starts_with(&format!("{w}=")))
                || (program == "git" && subcommand == Some("push") && refspec_forces(a))
        }) {
            return Some(hit);
        }
    }
    // A destructive word among the first few plain words: a nested
    // subcommand (`gcloud compute instances delete`, `docker volume rm`).
    args.iter()
        .filter(|a| !a.starts_with('-'))
        .take(4)
        .find(|a| DESTRUCTIVE_WORDS.contains(&a.as_str()))
        .map(String::as_str)
}

/// `+main` and `:branch` refspecs force or delete.
fn refspec_forces(arg: &str) -> bool {
    arg.starts_with('+') || (arg.starts_with(':') && arg.len() > 1)
}

/// `python3.12`, `python2.7`, `ruby3.2`, `node18`.
fn is_versioned_interpreter(program: &str) -> bool {
    ["python", "pypy", "ruby", "perl", "node", "php", "lua"]
        .iter()
        .any(|base| {
            program.strip_prefix(base).is_some_and(|rest| {
                !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit() || c == '.')
            })
        })
}

/// Whether a workspace-relative path is gavel's own (its record, its
/// policy) or git's (its configuration, hooks, objects): no path rule is
/// proposed over it.
pub fn protected_path(relative: &str) -> bool {
    let first = relative.split('/').next().unwrap_or("");
    matches!(first, ".gavel" | ".git" | "gavel.toml")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shells_interpreters_wrappers_and_runners_are_refused() {
        for program in [
            "bash",
            "python3",
            "python3.12",
            "node",
            "env",
            "xargs",
            "npx",
            "uvx",
        ] {
            assert!(refuses(program, None).is_some(), "{program}");
            assert!(refuses(program, Some("x")).is_some(), "{program}");
        }
        assert!(refuses("pnpm", Some("dlx")).is_some());
        assert!(refuses("npm", Some("exec")).is_some());
        assert!(refuses("uv", Some("run")).is_some());
        assert!(
            refuses("cargo", None).is_some(),
            "a bare program with subcommands"
        );
        assert!(refuses("cargo", Some("test")).is_none());
        assert!(refuses("pytest", None).is_none());
        assert!(refuses("rm", Some("x")).is_some());
        assert!(refuses("docker", Some("rm")).is_some());
        assert!(refuses("npm", Some("publish")).is_some());
        assert!(refuses("make", Some("build")).is_none());
    }

    #[test]
    fn a_pair_that_is_destructive_with_a_flag_names_it() {
        let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            destructive_argument("git", Some("push"), &words(&["--force", "origin"])),
            Some("--force")
        );
        assert_eq!(
            destructive_argument("git", Some("push"), &words(&["origin", "+main"])),
            Some("+main")
        );
        assert_eq!(
            destructive_argument("git", Some("push"), &words(&["origin", "main"])),
            None
        );
        assert!(also_allows("git", Some("push")).is_some());
        assert!(also_allows("cargo", Some("test")).is_none());
        assert_eq!(
            destructive_argument(
                "gcloud",
                Some("compute"),
                &words(&["instances", "delete", "x"])
            ),
            Some("delete")
        );
        assert!(protected_path(".gavel/audit.db"));
        assert!(protected_path(".git/config"));
        assert!(!protected_path("src/.gitignore"));
    }
}
