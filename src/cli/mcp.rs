//! `gavel mcp -- COMMAND [ARGS…]`: a stdio MCP proxy. The client starts
//! gavel as its server; gavel starts COMMAND and relays JSON-RPC both ways,
//! every `tools/call` decided, asked and recorded first (`gavel::mcp`).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};

use gavel::mcp::open::Opener;
use gavel::mcp::wrap::WrapClient;
use gavel::mcp::wrap_file::{self, Applied};
use gavel::mcp::{End, names, relay};

use super::{Exit, Global};

/// The protocol, shown by `gavel mcp --help`.
const PROTOCOL: &str = "\
Every message is relayed untouched except tools/call, which is decided first
(tool name mcp__NAME__TOOL) and recorded write-ahead in the audit log:
  allow  sent to the server; its response completes the call (succeeded, or
         failed for isError, a JSON-RPC error, the timeout or the server's exit)
  deny   answered by gavel as a tool result with isError, its rule id and
         reason; the server never sees it
  ask    with --ask wait (or the policy's [approval] wait): kept waiting in
         the pending queue until `gavel approve` / `gavel reject` / the
         approval page answers it (channel cli or web), or the wait ends
         (cancelled, cause timeout), whatever the client offers; otherwise
         asked through elicitation/create when the client declared the
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
    /// `wait[=DURATION]`: an asked call waits in the pending queue until `gavel approve` or
    /// `gavel reject` answers it from another terminal, or DURATION ends (default 10m; then
    /// cancelled, cause timeout); it wins over the client's elicitation [default: the
    /// policy's `[approval] wait`, if any]
    #[arg(long, value_name = "wait[=DURATION]", value_parser = super::parse_ask_wait)]
    pub ask: Option<super::AskWait>,
    /// Serve MCP's Streamable HTTP at ADDR (`HOST:PORT`, or a PORT on
    /// 127.0.0.1; port 0 picks a free one) and proxy to `--upstream`
    #[arg(
        long,
        value_name = "ADDR",
        requires = "upstream",
        conflicts_with = "command"
    )]
    pub listen: Option<String>,
    /// The remote MCP server's Streamable HTTP endpoint (http:// or https://):
    /// with --listen, served over HTTP; without, over stdio to the client
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub upstream: Option<String>,
    /// With --listen: end a client's session (recorded, and deleted at the
    /// upstream) after SECONDS with nothing in progress and no request
    #[arg(long, value_name = "SECONDS", default_value_t = 1800, requires = "listen",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle: u64,
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
pub enum McpAction {
    /// Put every stdio MCP server of a client's configuration behind `gavel mcp`
    /// (Claude Code `.mcp.json`, Cursor `.cursor/mcp.json`, Gemini CLI
    /// `.gemini/settings.json`, Codex `.codex/config.toml` or `~/.codex/config.toml`),
    /// editing only their `command` and `args`; the file is kept first as FILE.gavel-backup
    Wrap(WrapArgs),
    /// Take the servers `wrap` put behind gavel back out: the file as it was
    /// before `wrap`, byte for byte, when it has not changed since; else the
    /// servers are taken out in place (and gavel says so)
    Unwrap(WrapArgs),
}

#[derive(Args, Debug)]
pub struct WrapArgs {
    /// The client whose configuration to rewrite
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(
        WrapClient::ALL.iter().map(|c| c.name())
    ))]
    pub client: String,
    /// The configuration file [default: the client's project file in the workspace]
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
}

pub fn run(global: &Global, args: McpArgs) -> anyhow::Result<Exit> {
    match args.action {
        Some(McpAction::Wrap(wrap)) => return rewrite(global, &wrap, true),
        Some(McpAction::Unwrap(wrap)) => return rewrite(global, &wrap, false),
        None => {}
    }
    match (&args.listen, &args.upstream) {
        (Some(listen), Some(upstream)) => return listen_http(global, &args, listen, upstream),
        (None, Some(upstream)) => return bridge_http(global, &args, upstream),
        _ => {}
    }
    if args.command.is_empty() {
        anyhow::bail!("give the MCP server to run after `--`: gavel mcp -- COMMAND [ARGS…]");
    }
    let server = match &args.name {
        Some(name) => names::sanitize(name),
        None => names::server_name(&args.command),
    };
    let opener = Opener::new(
        &global.setup(),
        server,
        Duration::from_secs(args.timeout),
        args.ask,
    )?;
    let mut session = opener.open()?;
    let ended = relay::run(
        &mut session,
        &args.command,
        std::io::stdin(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr(),
    )
    .context("gavel mcp")?;
    // The session's end: a signed checkpoint vouches for what it recorded.
    session.close();
    Ok(match ended.by {
        End::ClientGone => Exit::Ok,
        End::ServerGone if ended.server_status == Some(0) => Exit::Ok,
        End::ServerGone => Exit::Failed,
    })
}

fn listen_http(
    global: &Global,
    args: &McpArgs,
    listen: &str,
    upstream: &str,
) -> anyhow::Result<Exit> {
    check_upstream(upstream)?;
    let addr = listen_addr(listen)?;
    let server = match &args.name {
        Some(name) => names::sanitize(name),
        None => names::url_server_name(upstream),
    };
    let timeout = Duration::from_secs(args.timeout);
    let mut sessions = Opener::new(&global.setup(), server.clone(), timeout, args.ask)?;
    let listener =
        std::net::TcpListener::bind(addr).with_context(|| format!("cannot listen on `{addr}`"))?;
    let local = listener.local_addr()?;
    eprintln!("gavel mcp: listening on http://{local}/mcp for `{upstream}` (server `{server}`)");
    let max_body = usize::try_from(global.max_argument_bytes)
        .unwrap_or(usize::MAX)
        .saturating_add(1 << 20);
    let limits = gavel::mcp::http::Limits {
        max_body,
        loopback_only: addr.ip().is_loopback(),
    };
    let upstream = gavel::mcp::upstream::Upstream::new(upstream, timeout, max_body as u64);
    let options = gavel::mcp::hub::Options {
        idle: Duration::from_secs(args.session_idle),
        stop_on_signals: true,
    };
    gavel::mcp::hub::run(
        upstream,
        &mut sessions,
        &mut std::io::stderr(),
        options,
        move |hub| {
            if let Err(err) = gavel::mcp::http::serve(listener, hub, limits) {
                eprintln!("gavel mcp: the listener failed: {err}");
                std::process::exit(1);
            }
        },
    );
    // Stopped by SIGINT or SIGTERM: every session was ended and recorded.
    Ok(Exit::Ok)
}

/// `gavel mcp --upstream URL`: stdio to the client, Streamable HTTP to the server.
fn bridge_http(global: &Global, args: &McpArgs, upstream: &str) -> anyhow::Result<Exit> {
    check_upstream(upstream)?;
    let server = match &args.name {
        Some(name) => names::sanitize(name),
        None => names::url_server_name(upstream),
    };
    let timeout = Duration::from_secs(args.timeout);
    let max_bytes = global.max_argument_bytes.saturating_add(1 << 20);
    let opener = Opener::new(&global.setup(), server, timeout, args.ask)?;
    let mut session = opener.open()?;
    let upstream = gavel::mcp::upstream::Upstream::new(upstream, timeout, max_bytes);
    gavel::mcp::bridge::run(
        &mut session,
        upstream,
        std::io::stdin(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr(),
    )
    .context("gavel mcp")?;
    session.close();
    Ok(Exit::Ok)
}

fn check_upstream(upstream: &str) -> anyhow::Result<()> {
    if !(upstream.starts_with("http://") || upstream.starts_with("https://")) {
        anyhow::bail!("--upstream must be an http:// or https:// URL, not `{upstream}`");
    }
    Ok(())
}

/// `--listen`'s address: `HOST:PORT`, or a bare port on 127.0.0.1.
fn listen_addr(listen: &str) -> anyhow::Result<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    if let Ok(port) = listen.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    listen
        .to_socket_addrs()
        .with_context(|| format!("--listen `{listen}` is not HOST:PORT or a port"))?
        .next()
        .with_context(|| format!("--listen `{listen}` names no address"))
}

/// `gavel mcp wrap|unwrap CLIENT`: rewrites the client's configuration.
fn rewrite(global: &Global, args: &WrapArgs, wrapping: bool) -> anyhow::Result<Exit> {
    // The value parser admits only known names.
    let client = WrapClient::by_name(&args.client)
        .with_context(|| format!("unknown client `{}`", args.client))?;
    let file = match &args.file {
        Some(file) => file.clone(),
        None => wrap_file::config_file(client, global.workspace()?.root())
            .context("no project .codex/config.toml, and neither CODEX_HOME nor HOME is set")?,
    };
    let gavel = if wrapping {
        let gavel = std::env::current_exe().context("cannot find the gavel binary")?;
        Some(gavel.canonicalize().unwrap_or(gavel))
    } else {
        None
    };
    let gavel = gavel.map(|g| g.to_string_lossy().into_owned());
    let Applied { done, notes } = wrap_file::apply(client, &file, gavel.as_deref())?;
    let verb = if wrapping { "wrapped" } else { "unwrapped" };
    let mut stdout = std::io::stdout().lock();
    let list = |names: &[String]| names.join(", ");
    writeln!(
        stdout,
        "{}: {verb} {} server{}{}",
        file.display(),
        done.changed.len(),
        if done.changed.len() == 1 { "" } else { "s" },
        if done.changed.is_empty() {
            String::new()
        } else {
            format!(" ({})", list(&done.changed))
        },
    )?;
    if !done.unchanged.is_empty() {
        writeln!(stdout, "already {verb}: {}", list(&done.unchanged))?;
    }
    if !done.skipped.is_empty() {
        writeln!(
            stdout,
            "not stdio servers (or, in TOML, not `[mcp_servers.NAME]` tables), left as they are: {}",
            list(&done.skipped)
        )?;
    }
    for line in notes {
        writeln!(stdout, "{line}")?;
    }
    Ok(Exit::Ok)
}
