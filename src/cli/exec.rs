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
    // Returns only when the command did not run.
    let err = match exec(&global.db_path()?, &args.call_id, given, args.verbose) {
        gavel::sandbox::exec::ExecError::Store(err) => return Err(err.into()),
        err => err,
    };
    eprintln!("{}", err.line());
    Ok(match err.status() {
        Some(124) => Exit::Unenforceable,
        Some(126) => Exit::NotExecutable,
        Some(127) => Exit::NotFound,
        _ => Exit::Refused,
    })
}
