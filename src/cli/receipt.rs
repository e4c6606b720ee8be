//! `gavel receipt`: one call's proof as a file anyone can check offline
//! (docs/receipts.md), and `gavel verify --receipt`, which checks one.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use gavel::receipt::{self, Trust};
use gavel::store::{Durability, Store};

use super::{Exit, Global, QueryArgs, render};

#[derive(Args, Debug)]
pub struct ReceiptArgs {
    /// The call to prove (its id, as `gavel log` shows it)
    #[arg(required_unless_present = "dir")]
    pub call_id: Option<String>,
    /// Write the receipt to FILE instead of standard output
    #[arg(long, short, value_name = "FILE", conflicts_with = "dir")]
    pub out: Option<PathBuf>,
    /// Write one receipt per call the filters select (every call without
    /// filters) into DIR, as CALL_ID.receipt
    #[arg(long, value_name = "DIR", conflicts_with = "call_id")]
    pub dir: Option<PathBuf>,
    /// Every call (with --dir): what --dir does without filters
    #[arg(long, requires = "dir")]
    pub all: bool,
    #[command(flatten)]
    pub query: QueryArgs,
}

pub fn run(global: &Global, args: ReceiptArgs) -> anyhow::Result<Exit> {
    let path = global.db_path()?;
    if !path.exists() {
        anyhow::bail!("no audit database at `{}`", path.display());
    }
    // Writable where it can be, to keep the block roots it computes.
    let store = match Store::open(&path, Durability::Normal) {
        Ok(store) => store,
        Err(_) => Store::open_read_only(&path)?,
    };
    let cosigned = receipt::read_cosigned(&path, &store.identity().log_id)
        .with_context(|| format!("cannot read `{}`", receipt::cosigned_path(&path).display()))?;
    let Some(dir) = &args.dir else {
        let call_id = args.call_id.as_deref().unwrap_or_default();
        let text = receipt::make(&store, call_id, &cosigned)?.to_text();
        match &args.out {
            Some(out) => std::fs::write(out, &text)
                .with_context(|| format!("cannot write `{}`", out.display()))?,
            None => std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes())?,
        }
        return Ok(Exit::Ok);
    };
    let mut ids = Vec::new();
    store.for_each_call(&args.query.to_query()?, |call| {
        ids.push(call.call_id);
        Ok::<_, anyhow::Error>(())
    })?;
    let (written, uncovered) = receipt::write_all(&store, &ids, &cosigned, dir)?;
    let rest = if uncovered > 0 {
        format!("; {uncovered} calls after the newest checkpoint have none yet")
    } else {
        String::new()
    };
    render::line(&format!(
        "wrote {written} receipts to {}{rest}",
        dir.display()
    ))?;
    Ok(Exit::Ok)
}

/// `gavel verify --receipt FILE`: exit 0 when it proves the call, 1 when
/// it does not (the first bad element named), 2 when it cannot be checked.
/// `policy` is `--policy`: a `K-of-N` rule, a tlog-policy file, or (a
/// TOML file, from `$GAVEL_POLICY`) gavel's own policy, which is no rule
/// about keys and is left alone.
pub fn verify(
    path: &Path,
    keys: &[PathBuf],
    policy: Option<&Path>,
    json: bool,
) -> anyhow::Result<Exit> {
    let trust = Trust::from_options(keys, policy).map_err(anyhow::Error::msg)?;
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read receipt `{}`", path.display()))?;
    match (receipt::verify(&bytes, &trust), json) {
        (Ok(checked), true) => render::json(&checked.to_json())?,
        (Ok(checked), false) => render::text(&checked.to_lines())?,
        (Err(failure), true) => {
            let mut value = serde_json::to_value(&failure)?;
            value["ok"] = false.into();
            render::json(&value)?;
            return Ok(Exit::Failed);
        }
        (Err(failure), false) => {
            render::text(&[format!("{}: {failure}", failure.problem.as_str())])?;
            return Ok(Exit::Failed);
        }
    }
    Ok(Exit::Ok)
}
