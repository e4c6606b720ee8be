//! `gavel approvals --listen ADDR`: the approval page. Prints its address
//! with a fresh token once, keeps the token in a file outside the
//! workspace (mode 0600), and serves until interrupted; over TLS with
//! `--tls` (a certificate given, or a self-signed one whose fingerprint it
//! prints) under the public address `--url` names.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use gavel::approvals::page::{self, PageConfig};
use gavel::approvals::{Origin, links};
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
    /// Serve over TLS: with --cert and --key, else a self-signed certificate
    /// for the --url host name, kept beside the token file
    #[arg(long)]
    pub tls: bool,
    /// The certificate chain to serve (PEM); implies --tls
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The certificate's private key (PEM)
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// The address the person's browser uses, `https://NAME[:PORT]`:
    /// passkeys are made for and checked against NAME (browsers refuse them
    /// on a bare IP address) [default: the listening address]
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
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
    let tls = args.tls || args.cert.is_some();
    let public = match args.url.as_deref() {
        Some(url) => Some(Origin::parse(url).with_context(|| {
            format!("--url `{url}` is not http(s)://host[:port], without a path")
        })?),
        None => None,
    };
    if public.as_ref().is_some_and(|o| o.https != tls) {
        anyhow::bail!("--url is https:// exactly when the page serves TLS (--tls, --cert)");
    }
    let listener = std::net::TcpListener::bind(&args.listen)
        .with_context(|| format!("cannot listen on `{}`", args.listen))?;
    let address = listener.local_addr()?;
    let scheme = if tls { "https" } else { "http" };
    let mut origins = Vec::new();
    if let Some(origin) = &public {
        origins.push(origin.to_string());
    }
    origins.push(format!("{scheme}://{address}"));
    if address.ip().is_loopback() {
        origins.push(format!("{scheme}://localhost:{}", address.port()));
    } else {
        let _ = writeln!(
            std::io::stderr(),
            "gavel: warning: the approval page listens on {address}, beyond this machine: anyone who can reach it and holds the token can answer calls whose rules name no approvers"
        );
    }
    // Passkeys are bound to a host name, and browsers offer them only over TLS.
    let rp_id = public
        .as_ref()
        .filter(|o| o.https && o.is_named())
        .map(|o| o.host.clone());
    let token_file = match args.token_file.clone() {
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
    let name = args.name.clone().unwrap_or_else(|| format!("web-{user}"));
    let _ = std::fs::remove_file(&token_file);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&token_file)
        .with_context(|| format!("cannot write `{}`", token_file.display()))?;
    writeln!(file, "{name} {token}")?;
    drop(file);
    // A self-signed certificate is for the public host, else the address.
    let host = public
        .as_ref()
        .map_or_else(|| address.ip().to_string(), |o| o.host.clone());
    let accept = acceptor(&args, tls, &token_file, &host)?;
    let mut store = global.open_store()?;
    let principal = Arc::new(Principal::current("web").with_host_id_beside(store.path()));
    let _ = writeln!(
        std::io::stderr(),
        "gavel: approval page on {}/#token={token} (token `{name}`, kept in {}); Ctrl-C stops it",
        origins[0],
        token_file.display()
    );
    let public = origins[0].clone();
    let mut page = page::Page::new(PageConfig {
        token,
        name,
        origins,
        rp_id,
        principal,
    });
    if let Some(notify) = global.policy(&workspace)?.approval_notify().cloned() {
        let key = page.link_key().clone();
        let db = global.db_path()?;
        std::thread::spawn(move || links::notify_loop(&db, &notify, &key, &public));
    }
    page::serve(listener, &mut page, &mut store, &accept)?;
    Ok(Exit::Ok)
}

/// How each accepted connection is served: as it is, or in TLS (a
/// certificate given, else a self-signed one for `host` kept beside the
/// token file, whose fingerprint is printed for the person to check).
fn acceptor(
    args: &ApprovalsArgs,
    tls: bool,
    token_file: &std::path::Path,
    host: &str,
) -> anyhow::Result<page::Acceptor> {
    if !tls {
        return Ok(page::plain());
    }
    #[cfg(feature = "tls")]
    {
        use gavel::approvals::tls;
        let identity = match (&args.cert, &args.key) {
            (Some(cert), Some(key)) => tls::from_files(cert, key)?,
            _ => tls::self_signed(host, &token_file.with_file_name("approvals-tls.pem"))?,
        };
        let _ = writeln!(
            std::io::stderr(),
            "gavel: TLS certificate SHA-256 {}{}",
            identity.fingerprint,
            identity
                .key_pin
                .as_ref()
                .map(|pin| format!(" (self-signed; public key pin sha256//{pin})"))
                .unwrap_or_default()
        );
        Ok(tls::acceptor(identity.config))
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = (args, token_file, host);
        anyhow::bail!("this gavel was built without TLS (the `tls` feature)")
    }
}
