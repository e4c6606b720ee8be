//! `gavel policy show|validate|test`.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::json;

use gavel::policy::Policy;
use gavel::policy::cases::parse_cases;

use super::{Exit, FormatArgs, Global, read_input, render};

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    /// Print the policy gavel would use now (the built-in one is a good starting point)
    Show,
    /// Check that a policy file loads; prints its name, digest and rule count
    Validate {
        /// The policy file [default: the policy in force: --policy, $GAVEL_POLICY,
        /// gavel.toml in the workspace, else the built-in one; says which]
        file: Option<PathBuf>,
    },
    /// Run regression cases (TOML `[[cases]]` or JSON lines) against the current policy
    Test {
        /// The cases file (`.toml`, else JSON lines as written by `gavel export --requests`)
        cases: PathBuf,
        #[command(flatten)]
        format: FormatArgs,
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
            let policy = match file {
                Some(file) => Policy::load(&file)?,
                None => {
                    let workspace = global.workspace()?;
                    let (policy, origin) = global.policy_in_force(&workspace)?;
                    render::line(&format!("policy in force: {origin}"))?;
                    policy
                }
            };
            render::line(&format!(
                "ok: policy `{}` ({} rules, sha256 {})",
                policy.reference().name,
                policy.rules().len(),
                policy.reference().digest
            ))?;
        }
        PolicyCommand::Test { cases, format } => return test(global, &cases, format),
    }
    Ok(Exit::Ok)
}

fn test(global: &Global, path: &Path, format: FormatArgs) -> anyhow::Result<Exit> {
    let text = read_input(path)?;
    let is_toml = path.extension().is_some_and(|e| e == "toml");
    let cases = parse_cases(&text, is_toml)
        .map_err(|e| anyhow::anyhow!("cases `{}`: {e}", path.display()))?;
    let workspace = global.workspace()?;
    let policy = global.policy(&workspace)?;
    let mut failed = 0;
    let mut rows = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let facts = match &case.facts {
            Some(facts) => facts.clone(),
            None => workspace.facts(&case.request(index)),
        };
        let got = policy.decide_case(case, index, &facts);
        let pass = case.passes(&got);
        failed += usize::from(!pass);
        let expected = format!(
            "{} {}",
            case.action,
            case.rule_id.as_deref().unwrap_or("(any rule)")
        );
        if format.is_json() {
            render::json(&json!({
                "case": case.label(index),
                "tool": case.tool,
                "expected": {"action": case.action, "rule_id": case.rule_id},
                "got": {"action": got.action, "rule_id": got.rule_id, "reason": got.reason},
                "pass": pass,
            }))?;
        } else {
            rows.push([
                case.label(index),
                case.tool.clone(),
                expected,
                format!("{} {}", got.action, got.rule_id),
                if pass { "pass" } else { "FAIL" }.to_owned(),
            ]);
        }
    }
    if !format.is_json() {
        render::table(&["case", "tool", "expected", "got", "result"], rows)?;
        render::line(&format!(
            "policy `{}`: {} passed, {failed} failed",
            policy.reference().name,
            cases.len() - failed
        ))?;
    }
    Ok(if failed > 0 { Exit::Failed } else { Exit::Ok })
}
