//! `gavel receipt`: one call's proof as a file anyone can check offline
//! (docs/receipts.md), and `gavel verify --receipt`, which checks one.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use gavel::checkpoint::{self, VerifierKey};
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
    #[command(flatten)]
    pub query: QueryArgs,
}

pub fn run(global: &Global, args: ReceiptArgs) -> anyhow::Result<Exit> {
    let path = global.db_path()?;
    if !path.exists() {
        anyhow::bail!("no audit database at `{}`", path.display());
    }
    // Writable where it can be, to keep the block roots it computes.
    let mut store = match Store::open(&path, Durability::Normal) {
        Ok(store) => store,
        Err(_) => Store::open_read_only(&path)?,
    };
    let cosigned = receipt::read_cosigned(&path, &store.identity().log_id)
        .with_context(|| format!("cannot read `{}`", receipt::cosigned_path(&path).display()))?;
    let Some(dir) = &args.dir else {
        let call_id = args.call_id.as_deref().unwrap_or_default();
        let text = receipt::make(&mut store, call_id, &cosigned)?.to_text();
        match &args.out {
            Some(out) => write(out, &text)?,
            None => std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes())?,
        }
        return Ok(Exit::Ok);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let mut ids = Vec::new();
    store.for_each_call(&args.query.to_query()?, |call| {
        ids.push(call.call_id);
        Ok::<_, anyhow::Error>(())
    })?;
    let (mut written, mut uncovered) = (0, 0);
    for id in &ids {
        match receipt::make(&mut store, id, &cosigned) {
            Ok(r) => {
                write(
                    &dir.join(format!("{}.receipt", file_name(id))),
                    &r.to_text(),
                )?;
                written += 1;
            }
            Err(receipt::MakeError::NotCovered { .. }) => uncovered += 1,
            Err(e) => return Err(e.into()),
        }
    }
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

/// A call id as a file name: characters other than letters, digits, `-`,
/// `_` and `.` become `_`.
fn file_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write `{}`", path.display()))
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
    let rule = policy.and_then(|p| p.to_str()).filter(|p| is_k_of_n(p));
    let tlog_policy = match policy.filter(|_| rule.is_none()) {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the policy `{}`", file.display()))?;
            match Trust::from_tlog_policy(&text) {
                Ok(trust) => Some(trust),
                Err(_) if text.parse::<toml::Table>().is_ok() => None,
                Err(e) => anyhow::bail!("`{}`: {e}", file.display()),
            }
        }
        None => None,
    };
    let trust = match tlog_policy {
        Some(trust) if keys.is_empty() => trust,
        Some(_) => {
            anyhow::bail!("give the keys either in the tlog-policy or with --public-key, not both")
        }
        None => {
            let keys: Vec<VerifierKey> = keys
                .iter()
                .map(|p| checkpoint::read_verifier_key(p))
                .collect::<Result<_, _>>()?;
            Trust::from_keys(keys, rule).map_err(|e| anyhow::anyhow!(e))?
        }
    };
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
            render::line(&format!("{}: {failure}", failure.problem.as_str()))?;
            return Ok(Exit::Failed);
        }
    }
    Ok(Exit::Ok)
}

/// Whether `--policy` is a `K-of-N` rule rather than a policy file.
fn is_k_of_n(text: &str) -> bool {
    text.split_once("-of-").is_some_and(|(k, n)| {
        !k.is_empty() && !n.is_empty() && (k.to_owned() + n).bytes().all(|b| b.is_ascii_digit())
    })
}
