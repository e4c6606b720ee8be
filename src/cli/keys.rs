//! `gavel keygen` and `gavel checkpoint`: Ed25519 keys and signed checkpoints.

use std::path::PathBuf;

use clap::Args;

use gavel::checkpoint::{self, SigningKey};
use gavel::store::Problem;

use super::{Exit, Global, render};

#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Where to write the signing key (mode 0600); the public key goes to KEY.pub
    #[arg(long, value_name = "KEY")]
    pub out: PathBuf,
    /// The key's name, shown on signature lines
    #[arg(long, default_value = "gavel")]
    pub name: String,
}

#[derive(Args, Debug)]
pub struct CheckpointArgs {
    /// The signing key written by `gavel keygen`
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,
}

pub fn keygen(args: KeygenArgs) -> anyhow::Result<Exit> {
    let key = SigningKey::generate(&args.name)?;
    checkpoint::write_keypair(&args.out, &key)?;
    render::line(&format!(
        "wrote {} and {}.pub ({})",
        args.out.display(),
        args.out.display(),
        key.verifier().to_text()
    ))?;
    Ok(Exit::Ok)
}

pub fn checkpoint(global: &Global, args: CheckpointArgs) -> anyhow::Result<Exit> {
    let key = checkpoint::read_signing_key(&args.key)?;
    let mut store = global.open_store()?;
    match store.checkpoint(&key)? {
        Ok((_, note)) => {
            render::line(note.trim_end())?;
            Ok(Exit::Ok)
        }
        Err(report) => {
            let problem = report.problem.map(Problem::as_str).unwrap_or("unknown");
            anyhow::bail!(
                "refusing to sign a checkpoint of a log that does not verify: {problem} at seq {}",
                report.first_bad_seq.unwrap_or(0)
            )
        }
    }
}
