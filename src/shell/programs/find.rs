//! `find` (GNU findutils 4.9): options, starting points, then an
//! expression. Tests and `-print`-like actions read names and metadata;
//! `-exec`, `-ok` and their `dir` forms run programs, `-delete` and the
//! `-fprint` family write, `-files0-from` reads the starting points from a
//! file. Any primary not listed here is not known.

use super::{Reading, Walk};

/// Primaries that take no argument and only test or print.
const NO_ARG: &[&str] = &[
    "-print",
    "-print0",
    "-ls",
    "-prune",
    "-quit",
    "-true",
    "-false",
    "-empty",
    "-executable",
    "-readable",
    "-writable",
    "-nouser",
    "-nogroup",
    "-depth",
    "-d",
    "-mount",
    "-xdev",
    "-noleaf",
    "-daystart",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-not",
    "!",
    "-a",
    "-and",
    "-o",
    "-or",
    ",",
    "(",
    ")",
    "-help",
    "--help",
    "-version",
    "--version",
    "-warn",
    "-nowarn",
    "-posix",
];

/// Primaries whose one argument is text: a pattern, a number, a type, a format.
const TEXT_ARG: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-regextype",
    "-lname",
    "-ilname",
    "-type",
    "-xtype",
    "-size",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-used",
    "-maxdepth",
    "-mindepth",
    "-printf",
    "-fstype",
    "-context",
];

/// Primaries whose one argument is a file whose metadata is read.
const FILE_ARG: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];

/// How `find ARGS` reads.
pub(super) fn read(args: &[String]) -> Reading {
    let mut reading = Reading::default();
    let mut follows = false;
    let mut i = 0;
    // Options before the starting points: -H -L -P, -D LIST, -O LEVEL.
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "-P" | "-H" => {}
            "-L" => follows = true,
            "-D" => i += 1,
            a if a.starts_with("-O") => {}
            _ => break,
        }
        i += 1;
    }
    let mut roots = Vec::new();
    while let Some(arg) = args.get(i) {
        if arg.starts_with('-') || matches!(arg.as_str(), "(" | "!" | ")" | ",") {
            break;
        }
        roots.push(arg.clone());
        i += 1;
    }
    let mut hazard = |what: String| {
        if reading.hazards.len() < 4 {
            reading.hazards.push(what);
        }
    };
    while let Some(arg) = args.get(i) {
        let primary = arg.as_str();
        i += 1;
        if NO_ARG.contains(&primary) {
            continue;
        }
        if primary == "-follow" {
            follows = true;
            continue;
        }
        let takes = |i: &mut usize| {
            let value = args.get(*i).cloned();
            *i += 1;
            value
        };
        if TEXT_ARG.contains(&primary) {
            if takes(&mut i).is_none() {
                hazard(format!("`find {primary}` lacks its argument"));
            }
        } else if FILE_ARG.contains(&primary)
            || (primary.starts_with("-newer") && primary.len() == 8)
        {
            match takes(&mut i) {
                // `-newerXt` compares with a time, not a file.
                Some(_) if primary.ends_with('t') && primary.len() == 8 => {}
                Some(file) => reading.lists.push(file),
                None => hazard(format!("`find {primary}` lacks its argument")),
            }
        } else if matches!(primary, "-exec" | "-execdir" | "-ok" | "-okdir") {
            hazard(format!("`find {primary}` runs a program"));
            // Its words run to `;` or `+`.
            while let Some(word) = args.get(i) {
                i += 1;
                if word == ";" || word == "+" {
                    break;
                }
            }
        } else if primary == "-delete" {
            hazard("`find -delete` removes files".to_owned());
        } else if matches!(primary, "-fprint" | "-fprint0" | "-fls") {
            takes(&mut i);
            hazard(format!("`find {primary}` writes a file"));
        } else if primary == "-fprintf" {
            takes(&mut i);
            takes(&mut i);
            hazard("`find -fprintf` writes a file".to_owned());
        } else if primary == "-files0-from" {
            takes(&mut i);
            hazard("`find -files0-from` reads its starting points from a file".to_owned());
        } else {
            hazard(format!("`find` primary `{primary}` is not known"));
        }
    }
    if roots.is_empty() {
        roots.push(".".to_owned());
    }
    reading.walks = roots
        .iter()
        .map(|root| Walk {
            root: root.clone(),
            follows,
            contents: false,
            skips_hidden: false,
            excludes: Vec::new(),
            includes: Vec::new(),
        })
        .collect();
    reading.lists.extend(roots);
    reading
}
