//! `gavel mcp -- COMMAND [ARGS…]`: a stdio MCP proxy. The client starts
//! gavel as its server; gavel starts COMMAND and relays JSON-RPC both ways,
//! every `tools/call` decided, asked and recorded first (`gavel::mcp`).

use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};

use gavel::GovernedRunner;
use gavel::mcp::{Config, End, Session, names, relay};
use gavel::tools::Registry;

use super::{Exit, Global};

/// The protocol, shown by `gavel mcp --help`.
const PROTOCOL: &str = "\
Every message is relayed untouched except tools/call, which is decided first
(tool name mcp__NAME__TOOL) and recorded write-ahead in the audit log:
  allow  sent to the server; its response completes the call (succeeded, or
         failed for isError, a JSON-RPC error, the timeout or the server's exit)
  deny   answered by gavel as a tool result with isError, its rule id and
         reason; the server never sees it
  ask    asked through elicitation/create when the client declared the
         elicitation capability (recorded with channel client_elicitation);
         otherwise refused as \"needs approval\" and recorded cancelled
Tool definitions from tools/list are digested and recorded once per change;
a call under a definition that changed is the anomaly definition_changed.";

#[derive(Args, Debug)]
#[command(after_help = PROTOCOL, args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    pub action: Option<McpAction>,
    /// The server's name in tool names (mcp__NAME__TOOL) [default: from the
    /// command: its package or program, without `mcp-server-`/`server-`]
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Fail a call the server has not answered, and cancel an approval not
    /// given, after SECONDS
    #[arg(long, value_name = "SECONDS", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// The MCP server to run and its arguments (after `--`, or after gavel's
    /// own options: everything from the first word that is not one is the server's)
    #[arg(
        value_name = "COMMAND",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum McpAction {}

pub fn run(global: &Global, args: McpArgs) -> anyhow::Result<Exit> {
    if let Some(action) = args.action {
        match action {}
    }
    if args.command.is_empty() {
        anyhow::bail!("give the MCP server to run after `--`: gavel mcp -- COMMAND [ARGS…]");
    }
    let server = match &args.name {
        Some(name) => names::sanitize(name),
        None => names::server_name(&args.command),
    };
    let workspace = global.workspace()?;
    let policy = global.calls_policy(&workspace)?;
    let mut store = global.open_store()?;
    Global::vouch_policy(&policy, &store)?;
    store.remember_policy(&policy)?;
    store.set_redaction(policy.redaction());
    let session_id = gavel::runner::new_call_id().replacen("call_", "mcp_", 1);
    let principal = global
        .principal("mcp", &workspace, &policy, &store)
        .with_session(Some(&session_id));
    let runner = GovernedRunner::new(policy, workspace, Registry::empty())
        .with_max_argument_bytes(global.max_argument_bytes)
        .with_principal(principal);
    let config = Config {
        server,
        timeout: Duration::from_secs(args.timeout),
        session_id,
    };
    let mut session = Session::new(runner, store, config);
    let ended = relay::run(
        &mut session,
        &args.command,
        std::io::stdin(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr(),
    )
    .context("gavel mcp")?;
    // The session's end: a signed checkpoint vouches for what it recorded.
    super::auto_checkpoint(session.store_mut(), 1);
    Ok(match ended.by {
        End::ClientGone => Exit::Ok,
        End::ServerGone if ended.server_status == Some(0) => Exit::Ok,
        End::ServerGone => Exit::Failed,
    })
}
