//! Which arguments of a simple command name paths, and which of those the
//! program writes: `dd of=`, `tee` files, `cp`/`mv`/`install`/`ln`
//! destinations, `sed -i` files, `sort -o`, `git diff --output=`, ...
//!
//! Pure knowledge of programs' command lines: no I/O, no policy. Facts
//! resolve the paths named here; the policy judges them. Option models err
//! towards "written": a long option is recognised by any prefix of its name
//! (GNU getopt accepts unambiguous abbreviations), and a program whose
//! options are not modelled in detail has all its operands written.

use super::SimpleCommand;

/// A path argument of a program, and whether the program may write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operand {
    /// The path as the argument gives it (after quote removal).
    pub path: String,
    /// True when the program may create, truncate, change or remove it.
    pub writes: bool,
}

/// Whether a write to `target` writes no file: only the exact spellings
/// `/dev/null`, `/dev/stdout`, `/dev/stderr`, `/dev/tty` and `/dev/fd/N`
/// (digits only). Any other spelling (`/dev//null`, `/dev/fd/../x`) is a
/// file write, resolved like any path.
pub fn is_harmless_target(target: &str) -> bool {
    match target {
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" => true,
        _ => target
            .strip_prefix("/dev/fd/")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
    }
}

/// Every word of `command` that may name a path: each argument, the value
/// after `=` in `of=x` or `--opt=x`, the attached value of a short option
/// (`-ox`), and each operand [`operands`] finds. Duplicates are possible.
pub fn path_words(command: &SimpleCommand) -> Vec<&str> {
    path_words_of(command.args())
}

/// [`path_words`] over the arguments alone.
fn path_words_of(args: &[String]) -> Vec<&str> {
    let mut words = Vec::new();
    for arg in args {
        words.push(arg.as_str());
        if let Some((_, value)) = arg.split_once('=')
            && !value.is_empty()
        {
            words.push(value);
        }
        if arg.len() > 2 && arg.starts_with('-') && !arg.starts_with("--") {
            words.push(arg.get(2..).unwrap_or(""));
        }
    }
    words.retain(|w| !w.is_empty());
    words
}

/// Where a `cd` or `pushd` takes the shell, as far as its words say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CdTarget {
    /// A folder given literally.
    Literal(String),
    /// `cd` alone, `cd -`, `popd`, or a folder that is not literal text.
    Unknown,
}

/// The folder a `cd`/`pushd`/`popd` changes to, or `None` for any other
/// program.
pub fn cd_target(command: &SimpleCommand) -> Option<CdTarget> {
    cd_target_of(&command.words)
}

/// [`cd_target`] over a command's words (program first).
fn cd_target_of(words: &[String]) -> Option<CdTarget> {
    let program = words.first().map_or("", String::as_str);
    let args = words.get(1..).unwrap_or(&[]);
    // `builtin cd DIR` and `command cd DIR` are `cd DIR`.
    if matches!(program, "builtin" | "command")
        && let Some(inner) = args.first()
        && matches!(inner.as_str(), "cd" | "pushd" | "popd")
    {
        return cd_target_of(args);
    }
    match program {
        "cd" | "pushd" => {}
        "popd" => return Some(CdTarget::Unknown),
        _ => return None,
    }
    let mut operands = args.iter().skip_while(|a| {
        matches!(
            a.as_str(),
            "-L" | "-P" | "-e" | "-@" | "-LP" | "-PL" | "-Pe"
        )
    });
    let first = operands.next();
    let first = match first.map(String::as_str) {
        Some("--") => operands.next().map(String::as_str),
        other => other,
    };
    Some(match first {
        Some(dir) if is_literal_folder(dir) && operands.next().is_none() => {
            CdTarget::Literal(dir.to_owned())
        }
        _ => CdTarget::Unknown,
    })
}

/// A folder name that means what it says: no expansion text left in it, no
/// `-` (the previous folder), no `+N`/`-N` of the folder stack.
fn is_literal_folder(dir: &str) -> bool {
    !dir.is_empty()
        && dir != "-"
        && !dir.starts_with('+')
        && !dir.starts_with('-')
        && !dir.contains(['$', '`', '*', '?', '[', '{', '~'])
}

/// The options of one program that take a value: short letters, and long
/// names (without `--`).
struct Options {
    short: &'static str,
    long: &'static [&'static str],
}

/// Long options whose value, if any, attaches only with `=`: their exact
/// names are never read as abbreviations of an option with a value.
const WITHOUT_VALUE: &[&str] = &[
    "backup",
    "sparse",
    "reflink",
    "preserve",
    "no-preserve",
    "in-place",
    "output-error",
    "color",
    "colour",
];

/// One parsed argument: an option with its value, or an operand.
enum Item<'a> {
    Option(String, Option<&'a str>),
    Operand(&'a str),
}

/// GNU-style parse of `args`: clustered short options, attached or separate
/// values, `--name=value` or `--name value`, abbreviations of long names
/// (any prefix counts, which over-reports values: safe for writes), `--`.
/// Options after operands are still options (GNU permutation).
fn parse<'a>(args: &'a [String], options: &Options) -> Vec<Item<'a>> {
    let mut items = Vec::new();
    let mut iter = args.iter();
    let mut only_operands = false;
    while let Some(arg) = iter.next() {
        if only_operands || arg == "-" || !arg.starts_with('-') {
            items.push(Item::Operand(arg));
        } else if arg == "--" {
            only_operands = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            // An exact name wins over abbreviations, as in getopt.
            let full = if options.long.contains(&name) {
                options.long.iter().find(|o| **o == name)
            } else if WITHOUT_VALUE.contains(&name) {
                None
            } else {
                options
                    .long
                    .iter()
                    .find(|o| !name.is_empty() && o.starts_with(name))
            };
            match (full, value) {
                (Some(full), None) => {
                    let next = iter.next().map(String::as_str);
                    items.push(Item::Option(format!("--{full}"), next));
                }
                (Some(full), Some(v)) => items.push(Item::Option(format!("--{full}"), Some(v))),
                (None, v) => items.push(Item::Option(format!("--{name}"), v)),
            }
        } else {
            let cluster = &arg[1..];
            for (at, letter) in cluster.char_indices() {
                if options.short.contains(letter) {
                    let rest = &cluster[at + letter.len_utf8()..];
                    let value = if rest.is_empty() {
                        iter.next().map(String::as_str)
                    } else {
                        Some(rest)
                    };
                    items.push(Item::Option(format!("-{letter}"), value));
                    break;
                }
                items.push(Item::Option(format!("-{letter}"), None));
            }
        }
    }
    items
}

/// The operands of `items`, in order.
fn operand_words<'a>(items: &[Item<'a>]) -> Vec<&'a str> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Operand(w) => Some(*w),
            Item::Option(..) => None,
        })
        .collect()
}

/// The values of the options in `names` (as `-x` or `--name`).
fn option_values<'a>(items: &[Item<'a>], names: &[&str]) -> Vec<&'a str> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Option(name, Some(value)) if names.contains(&name.as_str()) => Some(*value),
            _ => None,
        })
        .collect()
}

fn has_option(items: &[Item<'_>], names: &[&str]) -> bool {
    items
        .iter()
        .any(|i| matches!(i, Item::Option(name, _) if names.contains(&name.as_str())))
}

fn written(paths: impl IntoIterator<Item = impl Into<String>>) -> Vec<Operand> {
    paths
        .into_iter()
        .map(|p| Operand {
            path: p.into(),
            writes: true,
        })
        .collect()
}

fn read(paths: impl IntoIterator<Item = impl Into<String>>) -> Vec<Operand> {
    paths
        .into_iter()
        .map(|p| Operand {
            path: p.into(),
            writes: false,
        })
        .collect()
}

/// Programs that change every operand they are given (after their mode or
/// owner operand, which is written too: harmless over-reporting).
const WRITES_OPERANDS: &[&str] = &[
    "rm",
    "rmdir",
    "unlink",
    "shred",
    "touch",
    "truncate",
    "mkdir",
    "mkfifo",
    "mknod",
    "chmod",
    "chown",
    "chgrp",
    "chattr",
    "setfacl",
    "gzip",
    "gunzip",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "zstd",
    "unzstd",
    "lzma",
    "split",
    "csplit",
    "mktemp",
    "sqlite3",
    "patch",
    "fallocate",
    "wipefs",
    "mkswap",
    "badblocks",
    "blkdiscard",
    "sfdisk",
    "fdisk",
    "parted",
];

/// The path operands of `command` and whether each is written. Operands of
/// programs not modelled here are not listed (every argument is still a
/// path word, see [`path_words`]).
pub fn operands(command: &SimpleCommand) -> Vec<Operand> {
    operands_of(&command.words)
}

/// [`operands`] over a command's words (program first).
fn operands_of(words: &[String]) -> Vec<Operand> {
    let program = words.first().map_or("", String::as_str);
    let args = words.get(1..).unwrap_or(&[]);
    let no_values = Options {
        short: "",
        long: &[],
    };
    match program {
        // Multi-call binaries run their first argument as the program.
        "busybox" | "toybox" if !args.is_empty() => operands_of(args),
        "dd" => args
            .iter()
            .filter_map(|a| {
                let (key, value) = a.split_once('=')?;
                match key {
                    "of" => Some(Operand {
                        path: value.to_owned(),
                        writes: true,
                    }),
                    "if" => Some(Operand {
                        path: value.to_owned(),
                        writes: false,
                    }),
                    _ => None,
                }
            })
            .collect(),
        "tee" => {
            let items = parse(args, &no_values);
            written(operand_words(&items))
        }
        "cp" | "mv" | "install" | "ln" | "rsync" | "scp" => {
            let options = Options {
                // Options that take a value; GNU's optional ones
                // (`--backup[=CONTROL]`) attach only with `=` and are left out.
                short: match program {
                    "install" => "gmoSt",
                    "rsync" => "eTBfM",
                    "scp" => "cFiJloPSDX",
                    _ => "St",
                },
                long: &[
                    "target-directory",
                    "suffix",
                    "group",
                    "mode",
                    "owner",
                    "temp-dir",
                    "log-file",
                    "partial-dir",
                    "backup-dir",
                ],
            };
            let items = parse(args, &options);
            let operands = operand_words(&items);
            let targets = option_values(&items, &["-t", "--target-directory"]);
            let mut out = written(targets.iter().copied());
            out.extend(written(option_values(
                &items,
                &["--log-file", "--backup-dir", "--temp-dir", "--partial-dir"],
            )));
            let sources_written = program == "mv";
            let (sources, dest) = match (targets.is_empty(), operands.split_last()) {
                (true, Some((last, rest))) if !rest.is_empty() || program != "ln" => {
                    (rest, Some(*last))
                }
                _ => (&operands[..], None),
            };
            out.extend(sources.iter().map(|s| Operand {
                path: (*s).to_owned(),
                // `ln -s target` names its link in the current folder.
                writes: sources_written || (program == "ln" && dest.is_none()),
            }));
            out.extend(written(dest));
            out
        }
        "sed" | "perl" => {
            let options = Options {
                short: if program == "sed" { "efl" } else { "eEIMmx" },
                long: &["expression", "file", "line-length"],
            };
            let items = parse(args, &options);
            let in_place = items.iter().any(|i| match i {
                Item::Option(name, _) => {
                    name == "-i" || (name.len() > 2 && "--in-place".starts_with(name.as_str()))
                }
                Item::Operand(_) => false,
            });
            let mut out = read(option_values(&items, &["-f", "--file"]));
            let files = operand_words(&items);
            out.extend(files.into_iter().map(|f| Operand {
                path: f.to_owned(),
                writes: in_place,
            }));
            out
        }
        "sort" => {
            let options = Options {
                short: "oTkStz",
                long: &[
                    "output",
                    "temporary-directory",
                    "key",
                    "buffer-size",
                    "field-separator",
                    "files0-from",
                    "batch-size",
                    "compress-program",
                    "parallel",
                    "random-source",
                    "sort",
                ],
            };
            let items = parse(args, &options);
            let mut out = written(option_values(
                &items,
                &["-o", "--output", "-T", "--temporary-directory"],
            ));
            out.extend(read(operand_words(&items)));
            out
        }
        "git" => {
            let options = Options {
                short: "oC",
                long: &["output", "output-directory"],
            };
            let items = parse(args, &options);
            let mut out = written(option_values(&items, &["--output", "--output-directory"]));
            let subcommands = operand_words(&items);
            if subcommands.contains(&"format-patch") || subcommands.contains(&"archive") {
                out.extend(written(option_values(&items, &["-o"])));
            }
            out
        }
        "time" => {
            let options = Options {
                short: "o",
                long: &["output", "format"],
            };
            let items = parse(args, &options);
            written(option_values(&items, &["-o", "--output"]))
        }
        "curl" | "wget" => {
            let curl = program == "curl";
            let options = Options {
                short: if curl { "ocDKdHuAeXFT" } else { "OoaPeU" },
                long: &[
                    "output",
                    "output-document",
                    "output-file",
                    "output-dir",
                    "append-output",
                    "directory-prefix",
                    "cookie-jar",
                    "dump-header",
                    "trace",
                    "trace-ascii",
                    "stderr",
                    "config",
                ],
            };
            let items = parse(args, &options);
            let mut names = vec![
                "--output",
                "--output-document",
                "--output-file",
                "--output-dir",
                "--append-output",
                "--directory-prefix",
                "--cookie-jar",
                "--dump-header",
                "--trace",
                "--trace-ascii",
                "--stderr",
            ];
            names.extend(if curl {
                ["-o", "-c", "-D"]
            } else {
                ["-O", "-o", "-a"]
            });
            if !curl {
                names.push("-P");
            }
            let mut out = written(option_values(&items, &names));
            let named_by_url = if curl {
                has_option(&items, &["-O", "--remote-name", "--remote-name-all", "-J"])
            } else {
                !has_option(&items, &["-O", "--output-document", "--spider"])
            };
            if named_by_url {
                // A file named after the URL, in the current folder.
                out.extend(written(["."]));
            }
            out
        }
        "tar" => {
            // Old style: `tar cf archive files`, letters without a dash and
            // their values in order after them.
            let mut args = args.to_vec();
            if let Some(first) = args.first()
                && !first.starts_with('-')
            {
                args[0] = format!("-{first}");
            }
            let options = Options {
                short: "fCTbHKLNgVX",
                long: &["file", "directory", "files-from"],
            };
            let items = parse(&args, &options);
            let mut out = written(option_values(&items, &["-f", "--file"]));
            let extracts = has_option(&items, &["-x", "--extract", "--get"]);
            if extracts {
                // Extraction writes the archive's names into the folder.
                let folders = option_values(&items, &["-C", "--directory"]);
                match folders.is_empty() {
                    true => out.extend(written(["."])),
                    false => out.extend(written(folders)),
                }
            }
            out
        }
        // `uniq IN OUT` and `xxd IN OUT` write their second operand.
        "uniq" | "xxd" => {
            let options = Options {
                short: if program == "uniq" { "fsw" } else { "cglosn" },
                long: &["skip-fields", "skip-chars", "check-chars", "group"],
            };
            let items = parse(args, &options);
            let files = operand_words(&items);
            let mut out = read(files.iter().take(1).copied());
            out.extend(written(files.iter().skip(1).copied()));
            out
        }
        // `-out FILE`: long options with one dash.
        "openssl" => {
            let mut out = Vec::new();
            let mut iter = args.iter();
            while let Some(arg) = iter.next() {
                if matches!(arg.as_str(), "-out" | "-keyout")
                    && let Some(file) = iter.next()
                {
                    out.extend(written([file.as_str()]));
                }
            }
            out
        }
        "sdiff" | "less" | "pandoc" | "zip" => {
            let options = Options {
                short: match program {
                    "less" => "oObhjkpPtTxyz",
                    "zip" => "bnt",
                    _ => "oWw",
                },
                long: &["output", "log-file", "LOG-FILE"],
            };
            let items = parse(args, &options);
            let mut out = written(option_values(
                &items,
                &["-o", "-O", "--output", "--log-file", "--LOG-FILE"],
            ));
            if program == "zip" {
                out.extend(written(operand_words(&items).into_iter().take(1)));
            }
            out
        }
        "find" => {
            let mut out = Vec::new();
            let mut iter = args.iter();
            while let Some(arg) = iter.next() {
                if matches!(arg.as_str(), "-fprint" | "-fprint0" | "-fls" | "-fprintf")
                    && let Some(file) = iter.next()
                {
                    out.push(Operand {
                        path: file.clone(),
                        writes: true,
                    });
                }
            }
            out
        }
        p if WRITES_OPERANDS.contains(&p) => {
            let items = parse(args, &no_values);
            if only_lists(p, &items) {
                return read(operand_words(&items));
            }
            let mut out = written(operand_words(&items));
            if has_option(&items, &["--reference"]) || p == "truncate" || p == "touch" {
                // `-r FILE` / `--reference=FILE` values are read; listed so
                // path rules still see them.
                out.extend(read(option_values(&items, &["--reference", "-r"])));
            }
            out
        }
        _ => Vec::new(),
    }
}

/// Whether a disk tool only reports: `fdisk -l`, `sfdisk -l`, `parted -l`
/// or `parted DEV print`, `wipefs` without `-a`/`-o`, `badblocks` without
/// `-w`/`-n`. Its operands are then read, not written.
fn only_lists(program: &str, items: &[Item<'_>]) -> bool {
    let operands = operand_words(items);
    match program {
        "fdisk" | "sfdisk" => has_option(items, &["-l", "--list"]),
        "parted" => {
            has_option(items, &["-l", "--list"])
                || (operands.len() == 2 && matches!(operands[1], "print" | "p"))
        }
        "wipefs" => !has_option(items, &["-a", "--all", "-o", "--offset", "-b", "--backup"]),
        "badblocks" => !has_option(items, &["-w", "-n"]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn writes(words: &[&str]) -> Vec<String> {
        operands_of(&command(words))
            .into_iter()
            .filter(|o| o.writes)
            .map(|o| o.path)
            .collect()
    }

    #[test]
    fn only_exact_device_spellings_are_harmless() {
        for t in [
            "/dev/null",
            "/dev/stdout",
            "/dev/stderr",
            "/dev/fd/2",
            "/dev/tty",
        ] {
            assert!(is_harmless_target(t), "{t}");
        }
        for t in [
            "/dev/fd/../x",
            "/dev//null",
            "/dev/./null",
            "/dev/fd/",
            "/dev/fd/1x",
            "//dev/null",
            "null",
        ] {
            assert!(!is_harmless_target(t), "{t}");
        }
    }

    #[test]
    fn written_operands_of_common_programs() {
        assert_eq!(
            writes(&["dd", "if=/dev/zero", "of=//dev/sda"]),
            ["//dev/sda"]
        );
        assert_eq!(writes(&["tee", "-a", "a", "b"]), ["a", "b"]);
        assert_eq!(writes(&["cp", "-r", "x", "y", "dir"]), ["dir"]);
        assert_eq!(writes(&["cp", "-t", "dir", "x"]), ["dir"]);
        assert_eq!(writes(&["cp", "--target-dir=d", "x"]), ["d"]);
        assert_eq!(writes(&["mv", "a", "b"]), ["a", "b"]);
        assert_eq!(writes(&["ln", "-s", "target"]), ["target"]);
        assert_eq!(
            writes(&["sed", "-i", "s/a/b/", "gavel.toml"]),
            ["s/a/b/", "gavel.toml"]
        );
        assert_eq!(writes(&["sed", "-ni.bak", "p", "f"]), ["p", "f"]);
        assert!(writes(&["sed", "-n", "p", "f"]).is_empty());
        assert!(writes(&["sed", "-e", "s/i/x/", "f"]).is_empty());
        assert_eq!(writes(&["sort", "-o", "out", "in"]), ["out"]);
        assert_eq!(writes(&["sort", "-oout", "in"]), ["out"]);
        assert_eq!(writes(&["git", "diff", "--output=FILE"]), ["FILE"]);
        assert_eq!(writes(&["git", "diff", "--outp", "FILE"]), ["FILE"]);
        assert!(writes(&["git", "diff", "--stat"]).is_empty());
        assert_eq!(
            writes(&["truncate", "-s0", ".gavel/audit.db"]),
            [".gavel/audit.db"]
        );
        assert_eq!(writes(&["time", "-o", "f", "ls"]), ["f"]);
        assert_eq!(writes(&["cp", "a", "--backup", "b"]), ["b"]);
        assert_eq!(writes(&["tar", "cf", "out.tar", "x"]), ["out.tar"]);
        assert_eq!(
            writes(&["tar", "-xf", "in.tar", "-C", "d"]),
            ["in.tar", "d"]
        );
        assert_eq!(writes(&["busybox", "tee", "f"]), ["f"]);
        assert_eq!(writes(&["uniq", "-c", "in", "out"]), ["out"]);
        assert!(writes(&["uniq", "in"]).is_empty());
        assert_eq!(writes(&["openssl", "genrsa", "-out", "k.pem"]), ["k.pem"]);
        assert_eq!(writes(&["curl", "-O", "http://x/f"]), ["."]);
        assert!(writes(&["curl", "-K", "cfg", "http://x/f"]).is_empty());
        assert_eq!(writes(&["wget", "http://x/f"]), ["."]);
        assert_eq!(
            writes(&["git", "archive", "-o", "a.tar", "HEAD"]),
            ["a.tar"]
        );
        assert_eq!(writes(&["touch", "--", "-x"]), ["-x"]);
        assert!(writes(&["ls", "-la"]).is_empty());
        assert!(writes(&["fdisk", "-l", "/dev/sda"]).is_empty());
        assert!(writes(&["wipefs", "/dev/sda"]).is_empty());
        assert_eq!(writes(&["wipefs", "-a", "/dev/sda"]), ["/dev/sda"]);
        assert_eq!(writes(&["fdisk", "/dev/sda"]), ["/dev/sda"]);
    }

    #[test]
    fn path_words_include_option_values() {
        let c = command(&["x", "--output=a", "of=b", "-oc", "d"]);
        let words = path_words_of(&c[1..]);
        for w in ["a", "b", "c", "d", "--output=a"] {
            assert!(words.contains(&w), "{w} in {words:?}");
        }
    }

    #[test]
    fn cd_targets() {
        assert_eq!(
            cd_target_of(&command(&["cd", "/dev"])),
            Some(CdTarget::Literal("/dev".into()))
        );
        assert_eq!(
            cd_target_of(&command(&["cd", "-P", "--", "a"])),
            Some(CdTarget::Literal("a".into()))
        );
        assert_eq!(cd_target_of(&command(&["cd"])), Some(CdTarget::Unknown));
        assert_eq!(
            cd_target_of(&command(&["builtin", "cd", "/dev"])),
            Some(CdTarget::Literal("/dev".into()))
        );
        assert_eq!(
            cd_target_of(&command(&["cd", "-"])),
            Some(CdTarget::Unknown)
        );
        assert_eq!(
            cd_target_of(&command(&["cd", "$X"])),
            Some(CdTarget::Unknown)
        );
        assert_eq!(cd_target_of(&command(&["ls", "a"])), None);
    }

    proptest::proptest! {
        #[test]
        fn operands_never_panic(words in proptest::collection::vec("[-a-z=/.é]{0,8}", 1..8)) {
            let _ = operands_of(&words);
            let _ = path_words_of(&words);
            let _ = cd_target_of(&words);
            for program in ["dd", "tee", "cp", "sed", "sort", "git", "tar", "rm", "fdisk", "busybox", "cd"] {
                let mut with = words.clone();
                with[0] = program.to_owned();
                let _ = operands_of(&with);
                let _ = cd_target_of(&with);
            }
        }
    }
}
