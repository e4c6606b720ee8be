//! The models read command lines as the programs do.

use super::*;

fn reading(line: &str) -> Reading {
    let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    read_words(&words).unwrap_or_else(|| panic!("`{line}` has a model"))
}

fn proven(line: &str) {
    let r = reading(line);
    assert!(r.hazards.is_empty(), "`{line}`: {:?}", r.hazards);
}

fn refused(line: &str, phrase: &str) {
    let r = reading(line);
    assert!(
        r.hazards.iter().any(|h| h.contains(phrase)),
        "`{line}`: {:?} lacks {phrase:?}",
        r.hazards
    );
}

#[test]
fn read_only_uses_are_proven() {
    for line in [
        "ls -la",
        "ls -la src",
        "ls --color=auto -1",
        "cat -n src/main.rs",
        "head -20 README.md",
        "head -n 5 a b",
        "tail -f log.txt",
        "wc -l src/main.rs",
        "grep -rn foo src",
        "grep -5 -e foo -e bar a",
        "grep -rn --include=*.rs --exclude-dir=.gavel foo .",
        "rg -n foo src",
        "rg --files",
        "rg -l foo -g *.rs",
        "find . -name *.rs -type f",
        "find src -maxdepth 2 -type d -print",
        "tree -L 2 -I target",
        "du -sh src",
        "sort -u a",
        "sort -k2,2 -t: a",
        "uniq -c a",
        "diff -u a b",
        "sha256sum a",
        "date +%Y",
        "date -u",
        "sed -n 1,40p a",
        "sed s/a/b/g a",
        "echo -e --output=x",
        "git status --short",
        "git log --oneline -5",
        "git log -p -1 -- src/main.rs",
        "git diff --stat HEAD~1",
        "git show HEAD --stat",
        "git branch -a",
        "git branch --list feat*",
        "git rev-parse --abbrev-ref HEAD",
        "git ls-files",
        "git blame -L 1,20 src/lib.rs",
        "git --no-pager log -3",
        "cd src",
    ] {
        proven(line);
    }
}

#[test]
fn options_that_run_write_or_read_lists_are_hazards() {
    refused("rg --pre=sh foo x", "runs another program");
    refused("rg --pre sh foo x", "runs another program");
    refused("rg --hostname-bin=x foo", "runs another program");
    refused("rg -z foo", "runs another program");
    refused("sort -S1 --compress-program=sh a", "runs another program");
    refused("sort --compress=sh a", "runs another program");
    refused("sort -o gavel.toml a", "writes a file");
    refused("sort -ogavel.toml a", "writes a file");
    refused("sort --files0-from=- ", "names of the files");
    refused("wc --files0-from=-", "names of the files");
    refused("du --files0-from=-", "names of the files");
    refused("file -f -", "names of the files");
    refused("file -C", "writes a file");
    refused("sha256sum -c sums", "reads the names");
    refused("tree -o .git/hooks/pre-commit", "writes a file");
    refused("tree -R -L 1", "runs tree again");
    refused("date -s 2020-01-01", "sets the system clock");
    refused("date 0101000026", "sets the system clock");
    refused("diff -l a b", "runs another program");
    refused("find . -exec rm {} ;", "runs a program");
    refused("find . -delete", "removes files");
    refused("find . -fprint out", "writes a file");
    refused("find . -newer", "lacks its argument");
    refused("sed -i s/a/b/ f", "writes a file");
    refused("sed s/a/b/w out f", "not proven");
    refused("sed 1e id f", "not proven");
    refused("uniq a b", "writes its second operand");
    refused("git branch -D main", "deletes a branch");
    refused("git branch -f main HEAD", "forces");
    refused("git branch -m a b", "renames");
    refused("git branch --set-upstream-to=origin/x", "configuration");
    refused("git branch --edit-description", "editor");
    refused("git branch newname", "creates a branch");
    refused("git log --output=gavel.toml", "writes a file");
    refused("git diff --ext-diff", "runs another program");
    refused("git diff --textconv", "runs another program");
    refused("git log --show-signature", "runs another program");
    refused("git -c core.pager=sh log", "configuration");
    refused("git -p log", "pager");
    refused("git log --help", "manual");
    refused("cargo metadata", "Cargo.lock");
    refused("cargo tree", "Cargo.lock");
}

#[test]
fn unknown_options_are_hazards() {
    refused("ls --frobnicate", "is not known");
    refused("cat -Z a", "is not known");
    refused("git log --frob", "is not known");
    refused("find . -frob", "is not known");
    refused("git --frob status", "is not known");
}

#[test]
fn operands_are_files_patterns_or_text_as_the_program_reads_them() {
    assert_eq!(reading("grep -rn gavel.toml src").reads, ["src"]);
    assert_eq!(reading("grep -e x a b").reads, ["a", "b"]);
    assert_eq!(reading("grep -f pats a").reads, ["pats", "a"]);
    assert_eq!(reading("rg foo").reads, ["."]);
    assert_eq!(reading("echo gavel.toml").reads, Vec::<String>::new());
    assert_eq!(reading("basename /etc/passwd").reads, Vec::<String>::new());
    // Names and metadata only: listed, not read.
    assert_eq!(reading("ls").lists, ["."]);
    assert_eq!(reading("ls").reads, Vec::<String>::new());
    assert_eq!(reading("find . -name gavel.toml").lists, ["."]);
    assert_eq!(reading("stat -c %s a").lists, ["a"]);
    assert_eq!(reading("test -f a").lists, ["a"]);
    assert_eq!(reading("du --exclude-from=x .").reads, ["x"]);
    assert_eq!(
        reading("git log --oneline -- gavel.toml").reads,
        ["gavel.toml"]
    );
    assert_eq!(reading("sed -n 1,4p a").reads, ["a"]);
}

#[test]
fn walks_say_what_they_follow_and_skip() {
    let walk = |line: &str| reading(line).walks;
    assert!(walk("grep foo a").is_empty());
    let w = &walk("grep -r foo .")[0];
    assert!(!w.follows && w.contents && !w.skips_hidden);
    assert!(walk("grep -R foo .")[0].follows);
    assert!(walk("grep -rL foo .")[0].root == ".");
    assert!(!walk("rg foo")[0].follows && walk("rg foo")[0].skips_hidden);
    assert!(walk("rg -L foo")[0].follows);
    assert!(!walk("rg --hidden foo")[0].skips_hidden);
    assert!(!walk("rg -uu foo")[0].skips_hidden);
    assert!(!walk("rg -g * foo")[0].skips_hidden);
    assert_eq!(walk("rg -g !.gavel foo")[0].excludes, [".gavel"]);
    assert!(walk("ls -LR")[0].follows);
    assert!(!walk("ls -R")[0].follows && !walk("ls -R")[0].contents);
    assert!(walk("ls -L").is_empty());
    assert!(walk("du -L")[0].follows);
    assert!(walk("tree -l")[0].follows);
    assert!(walk("diff -r a b")[0].follows);
    assert!(!walk("diff -r --no-dereference a b")[0].follows);
    assert!(walk("find -L .")[0].follows);
    assert!(walk("find . -follow")[0].follows);
    assert_eq!(
        walk("grep -r --exclude-dir=.gavel foo .")[0].excludes,
        [".gavel"]
    );
    assert_eq!(walk("tree -I .gavel")[0].excludes, [".gavel"]);
}

#[test]
fn programs_without_a_model_have_none() {
    for line in [
        "cargo build",
        "git commit -m x",
        "python3 x.py",
        "make",
        "awk 1 f",
    ] {
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        assert!(read_words(&words).is_none(), "{line}");
    }
    assert!(is_modelled(&["git".into(), "log".into()]));
    assert!(!is_modelled(&["git".into(), "push".into()]));
    assert!(!is_modelled(&["git".into()]));
    assert!(is_modelled(&["rg".into()]));
}

proptest::proptest! {
    #[test]
    fn models_never_panic(words in proptest::collection::vec("[-a-zA-Z=/.*!0-9é]{0,8}", 0..8)) {
        for program in ["ls", "grep", "rg", "find", "tree", "sed", "git", "sort", "date", "cd", "head"] {
            let mut with = vec![program.to_owned()];
            with.extend(words.iter().cloned());
            let _ = read_words(&with);
        }
    }
}

/// docs/shell.md's table of modelled programs, as the models say it.
fn table() -> String {
    let mut text = String::from("| program | what an allow may use |\n| --- | --- |\n");
    for (names, summary) in documented() {
        let names: Vec<String> = names.split(", ").map(|n| format!("`{n}`")).collect();
        text.push_str(&format!("| {} | {summary} |\n", names.join(", ")));
    }
    text
}

#[test]
fn the_docs_table_lists_every_model() {
    let docs = include_str!("../../../docs/shell.md");
    let table = table();
    assert!(
        docs.contains(&table),
        "docs/shell.md lacks the table of programs; it should read:\n{table}"
    );
}

#[test]
fn gavels_subcommand_is_read_past_its_own_options_as_clap_reads_them() {
    let sub = |line: &str| -> Subcommand<'static> {
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        let words: &'static [String] = Box::leak(words.into_boxed_slice());
        subcommand(words).unwrap_or_else(|| panic!("`{line}` has a model"))
    };
    for (line, expected) in [
        ("gavel approve c1", Subcommand::Named("approve")),
        ("gavel log --grep approve", Subcommand::Named("log")),
        ("gavel --db approve log", Subcommand::Named("log")),
        ("gavel --db=x --wide reject c", Subcommand::Named("reject")),
        ("gavel -hV approve", Subcommand::Named("approve")),
        ("gavel --policy p.toml", Subcommand::Absent),
        ("gavel", Subcommand::Absent),
        // What gavel's parser would refuse is not read at all.
        ("gavel --dbx x approve", Subcommand::Unreadable),
        ("gavel --d x approve", Subcommand::Unreadable),
        ("gavel --wide=yes approve", Subcommand::Unreadable),
        ("gavel --db", Subcommand::Unreadable),
        ("gavel -x approve", Subcommand::Unreadable),
        ("gavel -- approve", Subcommand::Unreadable),
    ] {
        assert_eq!(sub(line), expected, "{line}");
    }
    assert_eq!(subcommand(&["cargo".to_owned(), "test".to_owned()]), None);
}
