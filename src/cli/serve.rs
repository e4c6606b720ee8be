//! `gavel serve`: governed tool calls over JSON lines (`--stdio`,
//! `gavel::frontend::serve`), or a resident gavel answering hooks and runs
//! on a Unix socket (`--socket`, `gavel::frontend::resident`).

use clap::Args;

use gavel::frontend::{resident, serve};

use super::{Exit, Global, ToolLimits};

/// The protocol and the durability trade-off, shown by `gavel serve --help`.
const PROTOCOL: &str = "\
Protocol, one JSON object per line:
  in   {\"type\":\"tool_use\",\"id\",\"name\",\"input\"}
       or {\"type\":\"function_call\",\"call_id\",\"name\",\"arguments\":\"<json>\"}
  out  the tool_result block with call_id, action, rule_id, reason, approval and status
  ask  out {\"type\":\"approval_request\",\"id\",\"rule_id\",\"reason\",\"tool\",\"input\"},
       in  {\"type\":\"approval\",\"id\",\"approved\":true|false}; end of input or any other
       reply is `cancelled` and the call does not run; a new request sent instead of
       the approval cancels the pending call and is then handled like any other
  A line that is not a request gets {\"type\":\"error\",\"error\":\"...\"} and the server goes on.
  Requests are handled in order; exit 0 at end of input.

Durability: every call is recorded before it is asked about or run.
  --durability full    (default) syncs every commit to disk: survives power loss
  --durability normal  survives a crash or kill of gavel, but may lose the last
                       commits on power loss; much faster";

#[derive(Args, Debug)]
#[command(after_help = PROTOCOL)]
pub struct ServeArgs {
    /// Speak JSON lines on stdin and stdout
    #[arg(long, required_unless_present = "socket", conflicts_with = "socket")]
    pub stdio: bool,
    /// Stay resident and answer `gavel hook` and `gavel run` calls on a Unix socket
    /// (default `<db>.sock`), keeping the database open and the policy parsed (`run`'s
    /// tool and prompt stay in its own process); a call that finds no answer there runs
    /// in its own process
    #[arg(
        long,
        value_name = "PATH",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        value_parser = socket_path
    )]
    pub socket: Option<std::path::PathBuf>,
    /// With --socket: stop after no call came for DURATION (e.g. 30m, 8h)
    #[arg(long, value_name = "DURATION", requires = "socket", conflicts_with = "stdio",
          value_parser = gavel::approvals::parse_wait)]
    pub idle: Option<std::time::Duration>,
    /// `wait[=DURATION]`: instead of an `approval_request` line, an asked call waits in the
    /// pending queue until `gavel approve` or `gavel reject` answers it from another terminal,
    /// or DURATION ends (default 10m; then cancelled, cause timeout)
    #[arg(long, value_name = "wait[=DURATION]", value_parser = super::parse_ask_wait)]
    pub ask: Option<super::AskWait>,
    #[command(flatten)]
    pub limits: ToolLimits,
}

pub fn run(global: &Global, args: ServeArgs) -> anyhow::Result<Exit> {
    let setup = global.setup();
    if let Some(socket) = args.socket {
        let socket = Some(socket).filter(|s| !s.as_os_str().is_empty());
        let idle = args.idle.unwrap_or(std::time::Duration::MAX);
        resident::listen(&setup, socket, idle)?;
    } else {
        serve::stdio(&setup, args.ask, |workspace| args.limits.context(workspace))?;
    }
    Ok(Exit::Ok)
}

/// `--socket`'s value; empty (a bare `--socket`) for the default.
fn socket_path(text: &str) -> Result<std::path::PathBuf, String> {
    Ok(text.into())
}
