//! `gavel policy show|validate|lint|diff|test|suggest`; `diff` and
//! `suggest` live in `policy_cmd/`.

mod diff;
mod suggest;

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::json;

use gavel::policy::cases::{Accepted, accept, parse_cases};
use gavel::policy::{Policy, lint};
use gavel::replay::arguments_summary;

use gavel::store::AuditQuery;

use super::render::progress_bar;
use super::{Exit, GateFormatArgs, Global, read_input, render};

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    /// Print the policy gavel would use now (the built-in one is a good starting point)
    Show {
        /// Print the built-in policy, whatever is in force (`policy show --builtin >
        /// gavel.toml` starts a policy: the shell creates the file before gavel runs)
        #[arg(long)]
        builtin: bool,
        /// Print a ready-made policy: `default` (the built-in one) or `coding-agent`
        /// (for Claude Code, Codex, Gemini CLI, Copilot CLI, Cursor; `gavel init` writes it)
        #[arg(long, value_name = "NAME", conflicts_with = "builtin",
              value_parser = clap::builder::PossibleValuesParser::new(
                  gavel::policy::PRESETS.iter().map(|(name, _)| *name)))]
        preset: Option<String>,
        /// Print every layer in force (system, admin, user, the project's) and the shadows,
        /// with each layer's rules in the order they are tried
        #[arg(long, conflicts_with_all = ["builtin", "preset"])]
        layers: bool,
    },
    /// Check that a policy file loads; prints its name, digest and rule count, and
    /// `policy lint`'s warnings on stderr
    Validate {
        /// The policy file [default: the policy in force: --policy, $GAVEL_POLICY,
        /// gavel.toml in the workspace, else the built-in one; says which]
        file: Option<PathBuf>,
        /// Exit 1 when there are lint warnings
        #[arg(long)]
        strict: bool,
    },
    /// Warn about author mistakes: unconditional allows, rules shadowed by an earlier one,
    /// bash allows that leave the workspace or name programs without a model,
    /// and, over the recorded log, rules that never matched and the rules that matched most
    Lint {
        /// The policy file [default: the policy gavel would use now]
        file: Option<PathBuf>,
        /// Exit 1 when there are static warnings (unconditional allows, shadowed rules,
        /// bash allows without a workspace scope or naming a program gavel has no model of);
        /// never-matched rules are reported but never fail
        #[arg(long)]
        strict: bool,
        /// Skip the usage report over the recorded log
        #[arg(long)]
        no_usage: bool,
        #[command(flatten)]
        format: GateFormatArgs,
    },
    /// What changed from OLD to NEW: rules added, removed, moved, widened, narrowed; which
    /// of a sample of generated requests and of the recorded calls decide differently
    Diff {
        old: PathBuf,
        new: PathBuf,
        /// Leave out the recorded calls
        #[arg(long)]
        no_log: bool,
        #[command(flatten)]
        format: GateFormatArgs,
    },
    /// Propose the narrowest allow rules that would have spared the prompts people
    /// approved, each proven by replay over the record (a TOML diff; --format json)
    Suggest(Box<suggest::SuggestArgs>),
    /// Run regression cases (TOML `[[cases]]` or JSON lines) against the current policy
    Test {
        /// The cases file (`.toml`, else JSON lines as written by `gavel export --requests`)
        cases: PathBuf,
        /// Print only the failing cases (the summary line still counts all)
        #[arg(long)]
        failures_only: bool,
        /// Rewrite the cases file so the failing cases expect what the policy decides now
        /// (their action, and their rule id where they name one); the rest of the file is kept
        #[arg(long)]
        accept: bool,
        #[command(flatten)]
        format: GateFormatArgs,
    },
}

pub fn run(global: &Global, command: PolicyCommand) -> anyhow::Result<Exit> {
    match command {
        PolicyCommand::Show {
            preset: Some(name), ..
        } => {
            let text = gavel::policy::PRESETS
                .iter()
                .find(|(preset, _)| *preset == name)
                .map_or("", |(_, text)| *text);
            render::line(text.trim_end())?;
        }
        PolicyCommand::Show { builtin: true, .. } => {
            render::line(gavel::policy::DEFAULT_POLICY_TOML.trim_end())?;
        }
        PolicyCommand::Show { layers: true, .. } => {
            let workspace = global.workspace()?;
            show_layers(&global.policy(&workspace)?)?;
        }
        PolicyCommand::Show { builtin: false, .. } => {
            let workspace = global.workspace()?;
            let policy = global.policy(&workspace)?;
            render::line(policy.source().trim_end())?;
        }
        PolicyCommand::Validate { file, strict } => {
            let policy = match file {
                Some(file) => Policy::load(&file)?,
                None => {
                    let workspace = global.workspace()?;
                    let (policy, origin) = global.policy_in_force(&workspace)?;
                    render::line(&format!("policy in force: {origin}"))?;
                    policy
                }
            };
            let findings = lint::lint(&policy);
            // With --strict a warning fails validation: the line says so.
            let verdict = if strict && !findings.is_empty() {
                format!(
                    "not ok (--strict): {}",
                    plural(findings.len(), "lint warning")
                )
            } else {
                "ok".to_owned()
            };
            render::line(&format!(
                "{verdict}: policy `{}` ({}, sha256 {})",
                policy.reference().name,
                plural(policy.rules().len(), "rule"),
                policy.reference().digest
            ))?;
            for finding in &findings {
                let _ = writeln!(
                    std::io::stderr(),
                    "gavel: warning: {}",
                    render::escape(&finding.message)
                );
            }
            if strict && !findings.is_empty() {
                return Ok(Exit::Failed);
            }
        }
        PolicyCommand::Lint {
            file,
            strict,
            no_usage,
            format,
        } => return lint_cmd(global, file.as_deref(), strict, no_usage, format),
        PolicyCommand::Diff {
            old,
            new,
            no_log,
            format,
        } => return diff::run(global, &old, &new, no_log, format),
        PolicyCommand::Suggest(args) => return suggest::run(global, *args),
        PolicyCommand::Test {
            cases,
            failures_only,
            accept,
            format,
        } => {
            return test(
                global,
                &cases,
                TestOptions {
                    failures_only,
                    accept,
                    format,
                },
            );
        }
    }
    Ok(Exit::Ok)
}

/// Every layer, top first, with its rules; then the shadows.
fn show_layers(policy: &Policy) -> std::io::Result<()> {
    render::line(
        "gavel's built-in floor is decided first, above every policy. Then a call is decided \
         by each layer; the strictest decision wins (deny over ask over allow), the higher \
         layer's among equals. A layer above the project abstains where none of its rules \
         matches; the project's denies what none of its rules names.",
    )?;
    let layers = std::iter::once((
        gavel::policy::FLOOR_LAYER,
        "<built-in floor>",
        gavel::policy::floor(),
    ))
    .chain(
        policy
            .layers()
            .iter()
            .map(|l| (l.name.as_str(), l.path.as_str(), &l.policy)),
    )
    .chain(std::iter::once((
        gavel::policy::PROJECT_LAYER,
        policy.origin(),
        policy,
    )));
    let mut rows = Vec::new();
    for (layer, path, layer_policy) in layers {
        rows.push([
            layer.to_owned(),
            format!(
                "{} ({}, sha256 {})",
                render::escape(path),
                render::escape(&layer_policy.reference().name),
                render::cell(&layer_policy.reference().digest, 12)
            ),
            String::new(),
        ]);
        for rule in layer_policy.rules() {
            rows.push([
                String::new(),
                format!("  {}", rule.id),
                rule.action.to_string(),
            ]);
        }
    }
    render::table(&["layer", "file / rule", "action"], rows)?;
    render::line(
        "In effect, top down: the first of these that matches a call decides it (a rule \
         counts only where it is the first of its own layer to match).",
    )?;
    render::table(
        &["#", "layer", "rule", "action", "decides"],
        policy
            .effective_order()
            .into_iter()
            .enumerate()
            .map(|(i, step)| {
                [
                    (i + 1).to_string(),
                    step.layer,
                    step.rule_id,
                    step.action.to_string(),
                    step.when,
                ]
            }),
    )?;
    if policy.shadows().is_empty() {
        render::line("shadows: none")?;
    } else {
        render::table(
            &["shadow", "file", "rules"],
            policy.shadows().iter().map(|s| {
                [
                    s.name.clone(),
                    format!(
                        "{} (sha256 {})",
                        render::escape(&s.path),
                        render::cell(&s.policy.reference().digest, 12)
                    ),
                    s.policy.rules().len().to_string(),
                ]
            }),
        )?;
    }
    Ok(())
}

fn lint_cmd(
    global: &Global,
    file: Option<&Path>,
    strict: bool,
    no_usage: bool,
    format: GateFormatArgs,
) -> anyhow::Result<Exit> {
    let (ci, format) = (format.ci(), format.plain());
    let policy = match file {
        Some(file) => Policy::load(file)?,
        None => global.policy(&global.workspace()?)?,
    };
    let findings = lint::lint(&policy);
    // Usage over the log: `--db` (or $GAVEL_DB) must exist; the default log
    // is used when there is one.
    let db = global.db_path()?;
    let usage = if no_usage || (global.db.is_none() && !db.exists()) {
        None
    } else {
        let store = global.read_store()?;
        let bar = progress_bar(&store, "counting rule use")?;
        let counts =
            gavel::replay::rule_usage(&store, &AuditQuery::default(), &policy, &mut |n| {
                if let Some(bar) = &bar {
                    bar.set_position(n);
                }
            })?;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        store.check_unchanged()?;
        Some(lint::usage(&policy, &counts))
    };
    let failing = strict && !findings.is_empty();
    if let Some(ci) = ci {
        let mut report = gavel::ci::Report::for_policy("policy lint", &policy);
        let never = usage.as_ref().map_or(&[][..], |(_, never)| never);
        let sites = gavel::ci::Sites::of(&policy);
        gavel::ci::lint(&mut report, &findings, never, strict, &sites);
        return super::print_ci(&report, ci);
    }
    if format.is_json() {
        render::json(&json!({
            "policy": policy.reference(),
            "findings": findings,
            "usage": usage.as_ref().map(|(usage, never)| json!({
                "db": db.display().to_string(),
                "calls": usage.calls,
                "by_rule": usage.by_rule.iter().map(|(id, n)| json!({"rule_id": id, "calls": n})).collect::<Vec<_>>(),
                "top": usage.top.iter().map(|(id, n)| json!({"rule_id": id, "calls": n})).collect::<Vec<_>>(),
                "never_matched": never.iter().map(|f| f.rule_id.clone()).collect::<Vec<_>>(),
            })),
            "ok": !failing,
        }))?;
        return Ok(if failing { Exit::Failed } else { Exit::Ok });
    }

    let text = lint::text(&policy, &findings, usage.as_ref(), no_usage, &db);
    render::text(&text)?;
    Ok(if failing { Exit::Failed } else { Exit::Ok })
}

/// How `policy test` reports and whether it accepts.
struct TestOptions {
    failures_only: bool,
    accept: bool,
    format: GateFormatArgs,
}

/// How wide the arguments column is.
const ARGUMENTS_CHARS: usize = 40;

fn test(global: &Global, path: &Path, options: TestOptions) -> anyhow::Result<Exit> {
    let (ci, format) = (options.format.ci(), options.format.plain());
    if options.accept && path == Path::new("-") {
        anyhow::bail!("--accept rewrites the cases file; it cannot rewrite stdin");
    }
    if options.accept && ci.is_some() {
        anyhow::bail!(
            "--accept rewrites the failing cases; a CI report is of the cases as they are"
        );
    }
    let text = read_input(path)?;
    let is_toml = path.extension().is_some_and(|e| e == "toml");
    let cases = parse_cases(&text, is_toml)
        .map_err(|e| anyhow::anyhow!("cases `{}`: {e}", path.display()))?;
    let workspace = global.workspace()?;
    let policy = global.policy(&workspace)?;
    let mut failed = 0;
    let mut rows = Vec::new();
    let mut accepted = Vec::new();
    let mut decided = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let facts = match &case.facts {
            Some(facts) => facts.clone(),
            None => {
                let request = case.request(index);
                workspace.facts_with(&request, &policy.path_arguments(&request.name))
            }
        };
        let got = policy.decide_case(case, index, &facts);
        let pass = case.passes(&got);
        if ci.is_some() {
            decided.push(got);
            continue;
        }
        failed += usize::from(!pass);
        if !pass && options.accept {
            accepted.push(Accepted {
                index,
                action: got.action,
                rule_id: got.rule_id.clone(),
                reason: got.reason.clone(),
            });
        }
        if pass && options.failures_only {
            continue;
        }
        let arguments = arguments_summary(&case.tool, &case.arguments);
        let expected = format!(
            "{} {}",
            case.action,
            case.rule_id.as_deref().unwrap_or("(any rule)")
        );
        if format.is_json() {
            render::json(&json!({
                "case": case.label(index),
                "tool": case.tool,
                "arguments": arguments,
                "expected": {"action": case.action, "rule_id": case.rule_id},
                "got": {"action": got.action, "rule_id": got.rule_id, "reason": got.reason},
                "pass": pass,
            }))?;
        } else {
            rows.push([
                case.label(index),
                case.tool.clone(),
                render::cell(&arguments, ARGUMENTS_CHARS),
                expected,
                format!("{} {}", got.action, got.rule_id),
                if pass { "pass" } else { "FAIL" }.to_owned(),
            ]);
        }
    }
    if let Some(ci) = ci {
        let mut report = gavel::ci::Report::for_policy("policy test", &policy);
        let results: Vec<_> = (cases.iter().enumerate().zip(&decided))
            .map(|((index, case), got)| gavel::ci::CaseResult { case, index, got })
            .collect();
        gavel::ci::policy_test(&mut report, &results, &gavel::ci::Sites::of(&policy));
        return super::print_ci(&report, ci);
    }
    if !format.is_json() {
        if rows.is_empty() {
            render::line(if options.failures_only {
                "No case failed."
            } else {
                "No cases."
            })?;
        } else {
            render::table_dropping(
                &["case", "tool", "arguments", "expected", "got", "result"],
                rows,
                // Narrow: the tool, then the arguments go first.
                &[1, 2],
            )?;
        }
        render::line(&format!(
            "policy `{}`: {} passed, {failed} failed",
            policy.reference().name,
            cases.len() - failed
        ))?;
    }
    if options.accept && !accepted.is_empty() {
        let rewritten = accept(&text, is_toml, &accepted)
            .map_err(|e| anyhow::anyhow!("cases `{}`: {e}", path.display()))?;
        gavel::files::write_atomically(path, &rewritten)
            .map_err(|e| anyhow::anyhow!("cannot rewrite `{}`: {e}", path.display()))?;
        let _ = writeln!(
            std::io::stderr(),
            "gavel: accepted {} in `{}`: {} now expect what policy `{}` decides",
            plural(accepted.len(), "case"),
            path.display(),
            if accepted.len() == 1 { "it" } else { "they" },
            policy.reference().name
        );
        return Ok(Exit::Ok);
    }
    Ok(if failed > 0 { Exit::Failed } else { Exit::Ok })
}

pub use gavel::text::plural;
