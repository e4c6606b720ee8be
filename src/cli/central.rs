//! `gavel central init|enroll|ingest|logs|retain`: run a team's central store.
//! The store is `--db postgres://…` (or `$GAVEL_DB`); `--schema` or the URL's
//! `options=-csearch_path=…` selects its schema.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Subcommand};

use gavel::central::{self, Central};
use gavel::checkpoint;

use super::{Exit, FormatArgs, Global, render};

#[derive(Subcommand, Debug)]
pub enum CentralCommand {
    /// Create or migrate the central store and the central log's identity and key
    Init(InitArgs),
    /// Enroll a host: its database role, its inbox and its checkpoint key
    Enroll(EnrollArgs),
    /// Verify what hosts pushed and accept it (or refuse it, recording why)
    Ingest(IngestArgs),
    /// List enrolled hosts and their logs (also those only ever refused): state, size, last push, last refusal
    Logs(LogsArgs),
    /// Drop the monthly partitions of events before a month, marking where each log was cut
    Retain(RetainArgs),
}

/// Where the central store is.
#[derive(Args, Debug, Clone)]
pub struct Target {
    /// The schema of the central store [default: the URL's search_path, else public]
    #[arg(long, value_name = "NAME")]
    pub schema: Option<String>,
}

#[derive(Args, Debug)]
pub struct InitArgs {
    /// The central signing key (from `gavel keygen`); its public key goes into the store
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Args, Debug)]
pub struct EnrollArgs {
    /// The host's name in the central store (lowercase letters, digits, `_`)
    pub name: String,
    /// The host's checkpoint verifier key (KEY.pub from `gavel keygen` on the host)
    #[arg(long, value_name = "KEY.pub")]
    pub public_key: PathBuf,
    /// The database role the host pushes as [default: gavel_host_NAME]
    #[arg(long, value_name = "ROLE")]
    pub role: Option<String>,
    /// Grant the inbox to ROLE although it exists (never a superuser, CREATEROLE,
    /// BYPASSRLS or replication role, nor a member of the owner)
    #[arg(long)]
    pub existing_role: bool,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Args, Debug)]
pub struct IngestArgs {
    /// The central signing key given to `gavel central init`
    #[arg(long, value_name = "KEY", env = "GAVEL_CENTRAL_KEY")]
    pub key: PathBuf,
    /// Keep ingesting every SECONDS until interrupted
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub every: Option<u64>,
    /// Connections taking different hosts at once [default: the number of CPUs, at most 4]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=64))]
    pub jobs: Option<u64>,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Args, Debug)]
pub struct LogsArgs {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Args, Debug)]
pub struct RetainArgs {
    /// Drop the partitions of months before this one (YYYY-MM, UTC); at most the current month
    #[arg(long, value_name = "YYYY-MM")]
    pub before: String,
    /// The central signing key given to `gavel central init` (it signs each cut note)
    #[arg(long, value_name = "KEY", env = "GAVEL_CENTRAL_KEY")]
    pub key: PathBuf,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// The central store's URL: `--db` (or `$GAVEL_DB`) when it is a PostgreSQL URL.
pub fn central_url(global: &Global) -> anyhow::Result<String> {
    let Some(db) = &global.db else {
        anyhow::bail!("give the central store as --db postgres://… (or $GAVEL_DB)");
    };
    let url = db.to_string_lossy().into_owned();
    if !is_postgres_url(&url) {
        anyhow::bail!("`--db {url}` is not a PostgreSQL URL (postgres://…)");
    }
    Ok(url)
}

/// Whether `text` is a PostgreSQL connection URL.
pub fn is_postgres_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

pub fn run(global: &Global, command: CentralCommand) -> anyhow::Result<Exit> {
    match command {
        CentralCommand::Init(args) => init(global, args),
        CentralCommand::Enroll(args) => enroll(global, args),
        CentralCommand::Ingest(args) => ingest(global, args),
        CentralCommand::Logs(args) => logs(global, args),
        CentralCommand::Retain(args) => retain(global, args),
    }
}

fn init(global: &Global, args: InitArgs) -> anyhow::Result<Exit> {
    let key = checkpoint::read_signing_key(&args.key)?;
    let url = central_url(global)?;
    let mut central = Central::connect(&url, args.target.schema.as_deref())?;
    let done = central.init(&key)?;
    render::line(&format!(
        "central store in schema `{}`: {} migration(s) applied, central log {} ({}), key {}",
        central.schema(),
        done.migrations,
        done.meta.origin,
        if done.created { "created" } else { "existing" },
        done.meta.verifier
    ))?;
    Ok(Exit::Ok)
}

fn enroll(global: &Global, args: EnrollArgs) -> anyhow::Result<Exit> {
    let verifier = checkpoint::read_verifier_key(&args.public_key)?;
    let url = central_url(global)?;
    let mut central = Central::open(&url, args.target.schema.as_deref())?;
    let enrolled = central
        .enroll(
            &args.name,
            &verifier,
            args.role.as_deref(),
            args.existing_role,
        )
        .with_context(|| format!("cannot enroll `{}`", args.name))?;
    let host_url = gavel::central::admin::host_url(&url, &enrolled.role).context("not a URL")?;
    render::line(&format!(
        "enrolled `{}` as role `{}`{}; inbox {}; the host pushes with: gavel push --to '{host_url}' --key HOST.key",
        enrolled.host,
        enrolled.role,
        if enrolled.role_created {
            " (created, LOGIN; give it a password or a certificate as your pg_hba.conf wants)"
        } else {
            " (existing role)"
        },
        enrolled.inbox,
    ))?;
    Ok(Exit::Ok)
}

fn logs(global: &Global, args: LogsArgs) -> anyhow::Result<Exit> {
    let url = central_url(global)?;
    let mut central = Central::open(&url, args.target.schema.as_deref())?;
    let listing = central.list_logs()?;
    let time = |us: Option<i64>| {
        us.and_then(chrono::DateTime::from_timestamp_micros)
            .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
    };
    if args.format.is_json() {
        let items: Vec<serde_json::Value> = listing
            .iter()
            .map(|l| {
                serde_json::json!({
                    "host": l.host,
                    "role": l.role,
                    "log_id": l.log_id.as_deref().map(gavel::digest::hex),
                    "origin": l.origin,
                    "size": l.size,
                    "cut_size": l.cut_size,
                    "last_push_us": l.last_push_us,
                    "accepted": l.accepted,
                    "refused": l.refused,
                    "last_refusal": l.last_refusal.as_ref().map(|r| serde_json::json!({
                        "at_us": r.at_us,
                        "problem": r.problem,
                        "detail": r.detail,
                        "first_seq": r.first_seq,
                        "last_seq": r.last_seq,
                    })),
                })
            })
            .collect();
        if args.format.get() == super::Format::Json {
            render::json_pretty(&serde_json::Value::Array(items))?;
        } else {
            for item in &items {
                render::json(item)?;
            }
        }
        return Ok(Exit::Ok);
    }
    let rows = listing.iter().map(|l| {
        vec![
            l.host.clone(),
            l.origin.clone().unwrap_or_else(|| "-".into()),
            match (l.log_id.is_some(), l.refused, l.accepted) {
                (false, _, _) => "-".into(),
                (true, true, _) => "REFUSED".into(),
                (true, false, true) => "accepted".into(),
                (true, false, false) => "-".into(),
            },
            l.size.to_string(),
            time(l.last_push_us).unwrap_or_else(|| "-".into()),
            l.last_refusal
                .as_ref()
                .map(|r| {
                    render::cell(
                        &format!(
                            "{} {}{}: {}",
                            time(Some(r.at_us)).unwrap_or_default(),
                            r.problem,
                            r.first_seq
                                .map(|seq| format!(" at seq {seq}"))
                                .unwrap_or_default(),
                            r.detail
                        ),
                        120,
                    )
                })
                .unwrap_or_else(|| "-".into()),
        ]
    });
    render::table_dropping(
        &["host", "log", "state", "size", "last push", "last refusal"],
        rows,
        // Narrow: the last refusal goes first.
        &[5],
    )?;
    let refused = listing.iter().filter(|l| l.refused).count();
    if refused > 0 {
        render::line(&format!(
            "!! {refused} log(s) REFUSED: the central store refused their last push and has accepted nothing of it since"
        ))?;
    }
    Ok(Exit::Ok)
}

fn ingest(global: &Global, args: IngestArgs) -> anyhow::Result<Exit> {
    let key = checkpoint::read_signing_key(&args.key)?;
    let url = central_url(global)?;
    let Some(every) = args.every else {
        let mut central = Central::open(&url, args.target.schema.as_deref())?;
        return ingest_once(&mut central, &url, &key, &args);
    };
    loop {
        let pass = Central::open(&url, args.target.schema.as_deref())
            .map_err(anyhow::Error::from)
            .and_then(|mut central| ingest_once(&mut central, &url, &key, &args));
        if let Err(err) = pass {
            eprintln!(
                "gavel: ingest failed: {}",
                err.to_string().replace('\n', " ")
            );
        }
        std::thread::sleep(std::time::Duration::from_secs(every));
    }
}

/// One ingest pass; exit 1 when anything was refused.
fn ingest_once(
    central: &mut Central,
    url: &str,
    key: &checkpoint::SigningKey,
    args: &IngestArgs,
) -> anyhow::Result<Exit> {
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
        |n| n as usize,
    );
    let report = gavel::central::ingest::ingest_parallel(central, url, key, jobs)?;
    if args.format.is_json() {
        render::json(&serde_json::json!({
            "accepted": report.accepted.iter().map(|a| serde_json::json!({
                "host": a.host,
                "log_id": gavel::digest::hex(&a.log_id),
                "from": a.from,
                "to": a.to,
                "central_seq": a.central_seq,
            })).collect::<Vec<_>>(),
            "refused": report.refused.iter().map(|r| serde_json::json!({
                "host": r.host,
                "log_id": gavel::digest::hex(&r.log_id),
                "problem": r.problem.as_str(),
                "detail": r.detail,
                "first_seq": r.first_seq,
                "last_seq": r.last_seq,
                "rows": r.rows,
            })).collect::<Vec<_>>(),
            "rows": report.rows(),
            "errors": report.errors.iter().map(|(host, error)| serde_json::json!({
                "host": host,
                "error": error,
            })).collect::<Vec<_>>(),
            "policies": report.policies,
            "central_size": report.central_size,
        }))?;
    } else {
        for r in &report.refused {
            render::line(&format!(
                "refused host `{}` ({}): {}",
                r.host,
                r.problem.as_str(),
                r.detail
            ))?;
        }
        render::line(&format!(
            "ingested {} rows in {} batch(es) from {} host(s), refused {}{}",
            report.rows(),
            report.accepted.len(),
            report
                .accepted
                .iter()
                .map(|a| a.host.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            report.refused.len(),
            report
                .central_size
                .map(|s| format!("; central log at {s} checkpoints, signed"))
                .unwrap_or_default()
        ))?;
    }
    for (host, error) in &report.errors {
        eprintln!(
            "gavel: ingest of host `{host}` failed: {}",
            error.replace('\n', " ")
        );
    }
    Ok(if !report.errors.is_empty() {
        Exit::Error
    } else if report.refused.is_empty() {
        Exit::Ok
    } else {
        Exit::Failed
    })
}

/// `retain`: drop the central store's monthly partitions of events before
/// a month; each log keeps where it was cut (chain, Merkle frontier, a note
/// signed by the central key), and `gavel verify` starts it there.
fn retain(global: &Global, args: RetainArgs) -> anyhow::Result<Exit> {
    let before = central::retain::parse_month(&args.before)?;
    let key = checkpoint::read_signing_key(&args.key)?;
    let url = central_url(global)?;
    let mut central = Central::open(&url, args.target.schema.as_deref())?;
    let now = chrono::Utc::now();
    let current = central::retain::parse_month(&now.format("%Y-%m").to_string())?;
    let report = central::retain::retain(&mut central, &key, before, current)?;
    // A partition kept for a log is something to look into: exit 1.
    let exit = if report.held.is_empty() {
        Exit::Ok
    } else {
        Exit::Failed
    };
    if args.format.is_json() {
        render::json(&serde_json::to_value(&report)?)?;
        return Ok(exit);
    }
    for held in &report.held {
        render::line(&render::escape(&format!(
            "kept {}: host `{}`, log {} has rows up to its cut in it (its accept times went backwards); run `gavel verify --db …`",
            held.partition, held.host, held.origin
        )))?;
    }
    if report.partitions.is_empty() {
        render::line(&format!("no partitions before {} dropped", args.before))?;
        return Ok(exit);
    }
    render::line(&format!(
        "dropped {} partition(s) ({}); {} log(s) cut",
        report.partitions.len(),
        report.partitions.join(", "),
        report.cuts.len()
    ))?;
    for cut in &report.cuts {
        render::line(&render::escape(&format!(
            "  host `{}`, log {}: rows 1..{} gone ({} now), verify starts at seq {}",
            cut.host,
            cut.origin,
            cut.size,
            cut.dropped,
            cut.size + 1
        )))?;
    }
    Ok(exit)
}
