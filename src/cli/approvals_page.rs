//! `gavel approvals --listen ADDR`: the approval page. Prints its address
//! with a fresh token once, keeps the token in a file outside the
//! workspace (mode 0600), and serves until interrupted.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use gavel::approvals::page::{self, PageConfig};
use gavel::principal::Principal;

use super::{Exit, Global};

#[derive(Args, Debug)]
pub struct ApprovalsArgs {
    /// Where to listen; only a loopback address unless you name another here
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8377")]
    pub listen: String,
    /// The token's name, recorded as the approver of every answer given with it
    /// [default: web-<your user>]
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Where to keep the token (mode 0600, never inside the workspace)
    /// [default: $XDG_STATE_HOME/gavel/approvals-token, else ~/.local/state/gavel/approvals-token]
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

fn default_token_file() -> anyhow::Result<PathBuf> {
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| !s.is_empty()) {
        return Ok(PathBuf::from(state).join("gavel/approvals-token"));
    }
    let home = std::env::var_os("HOME").context("$HOME is not set; give --token-file")?;
    Ok(PathBuf::from(home).join(".local/state/gavel/approvals-token"))
}

pub fn run(global: &Global, args: ApprovalsArgs) -> anyhow::Result<Exit> {
    let workspace = global.workspace()?;
    let listener = std::net::TcpListener::bind(&args.listen)
        .with_context(|| format!("cannot listen on `{}`", args.listen))?;
    let address = listener.local_addr()?;
    let mut hosts = vec![address.to_string()];
    if address.ip().is_loopback() {
        hosts.push(format!("localhost:{}", address.port()));
    } else {
        let _ = writeln!(
            std::io::stderr(),
            "gavel: warning: the approval page listens on {address}, beyond this machine: anyone who can reach it and holds the token can answer"
        );
    }
    let token_file = match args.token_file {
        Some(path) => path,
        None => default_token_file()?,
    };
    if let Some(dir) = token_file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
        let dir = dir.canonicalize()?;
        if dir.starts_with(workspace.root()) {
            anyhow::bail!(
                "refusing to keep the token in the workspace (`{}`), where the agent could read it; give --token-file outside it",
                token_file.display()
            );
        }
    }
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| anyhow::anyhow!("no randomness for a token: {e}"))?;
    let token = gavel::digest::hex(&secret);
    let user = Principal::current("web").user;
    let name = args.name.unwrap_or_else(|| format!("web-{user}"));
    let _ = std::fs::remove_file(&token_file);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&token_file)
        .with_context(|| format!("cannot write `{}`", token_file.display()))?;
    writeln!(file, "{name} {token}")?;
    drop(file);
    let mut store = global.open_store()?;
    let principal = Arc::new(Principal::current("web").with_host_id_beside(store.path()));
    let _ = writeln!(
        std::io::stderr(),
        "gavel: approval page on http://{address}/#token={token} (token `{name}`, kept in {}); Ctrl-C stops it",
        token_file.display()
    );
    let config = PageConfig {
        token,
        name,
        hosts,
        principal,
    };
    page::serve(listener, &config, &mut store)?;
    Ok(Exit::Ok)
}
