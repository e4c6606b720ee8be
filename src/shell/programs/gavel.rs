//! gavel's own command line, as its parser (clap) reads it: the options
//! every subcommand accepts may come before the subcommand's name, long
//! names only and exactly (`--db FILE` or `--db=FILE`, no abbreviations),
//! plus clap's `-h`/`--help` and `-V`/`--version`. Read only to tell which
//! subcommand a `gavel` command runs (`bash.self_approval` denies the
//! approval commands and nothing else), never to prove a read.

use super::Subcommand;
use super::getopt::{Arg, Does, Opt, both, long};

/// The options gavel accepts before its subcommand (`Global` in
/// `src/cli/mod.rs`), with clap's own. A test runs the real binary with
/// each one its `--help` lists, so this table cannot fall behind silently.
pub const GLOBALS: &[Opt] = &[
    long("workspace", Arg::Required, Does::Nothing),
    long("policy", Arg::Required, Does::Nothing),
    long("shadow-policy", Arg::Required, Does::Nothing),
    long("db", Arg::Required, Does::Nothing),
    long("durability", Arg::Required, Does::Nothing),
    long("max-argument-bytes", Arg::Required, Does::Nothing),
    long("wide", Arg::No, Does::Nothing),
    both('h', "help", Arg::No, Does::Nothing),
    both('V', "version", Arg::No, Does::Nothing),
];

/// Which subcommand `gavel ARGS` runs: the first word that is neither one
/// of [`GLOBALS`] nor the value of one. An option it does not know, a
/// flag given a value, a valued option without one, or `--` make the
/// command line unreadable (gavel itself would refuse most of them; a rule
/// decides what unreadable means).
pub(super) fn subcommand(args: &[String]) -> Subcommand<'_> {
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let word = word.as_str();
        if word == "--" {
            return Subcommand::Unreadable;
        }
        if let Some(body) = word.strip_prefix("--") {
            let (name, attached) = match body.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (body, None),
            };
            let Some(opt) = GLOBALS.iter().find(|o| o.long == name) else {
                return Subcommand::Unreadable;
            };
            match (opt.arg, attached) {
                (Arg::No, None) | (Arg::Required, Some(_)) => {}
                (Arg::Required, None) if words.next().is_some() => {}
                _ => return Subcommand::Unreadable,
            }
            continue;
        }
        if let Some(cluster) = word.strip_prefix('-')
            && !cluster.is_empty()
        {
            // Only clap's flags have short names; a cluster of them is still flags.
            let flags = cluster
                .chars()
                .all(|c| GLOBALS.iter().any(|o| o.short == c && o.arg == Arg::No));
            if !flags {
                return Subcommand::Unreadable;
            }
            continue;
        }
        return Subcommand::Named(word);
    }
    Subcommand::Absent
}
