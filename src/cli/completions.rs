//! `gavel completions SHELL` and `gavel man`: what a shell and `man` need
//! from gavel, generated from the same command-line definition that parses
//! it (clap_complete, clap_mangen), so they never fall behind.

use clap::{Args, CommandFactory, ValueEnum};

use super::{Cli, Exit};

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete gavel in
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The shells clap_complete writes for.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

/// Prints the completion script for the shell (`source <(gavel completions bash)`).
pub fn completions(args: CompletionsArgs) -> anyhow::Result<Exit> {
    use clap_complete::Shell as S;
    let shell = match args.shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
        Shell::Elvish => S::Elvish,
        Shell::Powershell => S::PowerShell,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "gavel", &mut out);
    std::io::Write::write_all(&mut std::io::stdout().lock(), &out)?;
    Ok(Exit::Ok)
}

/// Prints the man page, gavel(1), in roff (`gavel man > gavel.1; man -l gavel.1`).
pub fn man() -> anyhow::Result<Exit> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    std::io::Write::write_all(&mut std::io::stdout().lock(), &out)?;
    Ok(Exit::Ok)
}
