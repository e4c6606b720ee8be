//! `gavel exec`: a recorded, allowed `bash` call run in its sandbox (`gavel::sandbox::exec`).
use super::{Exit, Global};
use gavel::sandbox::exec::exec_recorded as exec;

#[derive(clap::Args, Debug)]
pub struct ExecArgs {
    /// The recorded call to run: its decision must be `allow`
    #[arg(long, value_name = "ID")]
    pub call_id: String,
    /// Say on stderr the profile, its digest and the enforcement before running
    #[arg(long)]
    pub verbose: bool,
    /// The `bash` command exactly as decided [default: the recorded one]
    #[arg(last = true, value_name = "COMMAND", num_args = 0..=1)]
    pub command: Vec<String>,
}
pub fn run(global: &Global, args: ExecArgs) -> anyhow::Result<Exit> {
    let given = args.command.first().map(String::as_str);
    // The record is read, not checked: a warning about its tail is
    // `verify`'s to give, and would be printed into the agent's command
    // output; what runs is bound to the call's own rows.
    let store = gavel::store::Store::open_read_only(&global.db_path()?)?;
    let ran = exec(store, &args.call_id, given, args.verbose);
    let err = ran.map(std::process::exit).unwrap_err();
    eprintln!("gavel exec: refused: {err}");
    Ok([Exit::Refused, Exit::Unenforceable][usize::from(err.unenforceable())])
}
