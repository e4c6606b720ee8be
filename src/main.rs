//! The `gavel` binary: parse arguments, run the subcommand, map the outcome
//! to an exit code. Everything else lives in the library and in `cli`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
