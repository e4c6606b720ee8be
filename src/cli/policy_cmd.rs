//! `gavel policy show|validate`.

use std::path::PathBuf;

use clap::Subcommand;

use gavel::policy::Policy;

use super::{Exit, Global, render};

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    /// Print the policy gavel would use now (the built-in one is a good starting point)
    Show,
    /// Check that a policy file loads; prints its name, digest and rule count
    Validate {
        /// The policy file
        file: PathBuf,
    },
}

pub fn run(global: &Global, command: PolicyCommand) -> anyhow::Result<Exit> {
    match command {
        PolicyCommand::Show => {
            let workspace = global.workspace()?;
            let policy = global.policy(&workspace)?;
            render::line(policy.source().trim_end())?;
        }
        PolicyCommand::Validate { file } => {
            let policy = Policy::load(&file)?;
            render::line(&format!(
                "ok: policy `{}` ({} rules, sha256 {})",
                policy.reference().name,
                policy.rules().len(),
                policy.reference().digest
            ))?;
        }
    }
    Ok(Exit::Ok)
}
