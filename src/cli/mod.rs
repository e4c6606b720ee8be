//! The command line: a thin layer over the library. Only this module knows
//! about clap, tables and anyhow; every subcommand has its own file.

mod approvals_page;
mod approve;
mod audit;
#[cfg(feature = "postgres")]
mod central;
#[cfg(feature = "postgres")]
mod central_read;
mod check;
mod demo;
mod doctor;
mod export;
mod grants;
mod hook;
mod init;
mod keys;
mod log;
mod mcp;
mod pending;
mod policy_cmd;
#[cfg(feature = "postgres")]
mod push;
mod query;
mod render;
mod replay;
mod report;
mod run;
mod serve;
mod show;
mod verify;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

use gavel::Workspace;
use gavel::session::Setup;
use gavel::store::{Durability, Store};

/// Exit codes, one place (the README has the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Done: decided, succeeded, intact, no drift.
    Ok = 0,
    /// The thing checked is bad: the tool failed, the log is tampered (`verify`, and
    /// `audit` whatever it finds), drift found, a case failed, a push refused
    /// (`push --wait`) or a local log that diverges from what the central store accepted.
    Failed = 1,
    /// Usage error, unreadable input or any internal error.
    Error = 2,
    /// The call was blocked by policy or approval.
    Blocked = 3,
    /// `audit`: the record holds anomalies (tools that ran outside what gavel decided).
    Anomalies = 4,
    /// `run`: the tool ran (or was blocked) but its result could not be recorded.
    Unrecorded = 5,
}

#[derive(Parser, Debug)]
#[command(
    name = "gavel",
    version,
    about = "Govern AI agents' tool calls and keep a tamper-evident record of them"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand accepts, before or after its name. Each
/// command's `--help` shows, under their own heading, only those that apply
/// to it (see [`NOT_APPLICABLE`]); the others are still accepted, and ignored.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The workspace the agent may touch [default: the current directory]
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Policy file [default: $GAVEL_POLICY, else gavel.toml in the workspace, else built-in]
    #[arg(long, global = true, value_name = "FILE", env = "GAVEL_POLICY")]
    pub policy: Option<PathBuf>,
    /// A policy decided beside the enforced one on every live call and recorded, never
    /// enforced (repeatable; named by its file's stem)
    #[arg(long = "shadow-policy", global = true, value_name = "FILE")]
    pub shadow_policy: Vec<PathBuf>,
    /// Audit database [default: $GAVEL_DB, else .gavel/audit.db in the workspace]; the
    /// reading commands also take a central store, postgres://…
    #[arg(long, global = true, value_name = "FILE|URL", env = "GAVEL_DB")]
    pub db: Option<PathBuf>,
    /// Whether each commit to the audit database waits for the disk
    #[arg(long, global = true, value_enum, default_value_t = DurabilityArg::Full)]
    pub durability: DurabilityArg,
    /// Deny (as request.invalid_arguments) a request whose arguments are larger than BYTES of JSON
    #[arg(
        long,
        global = true,
        value_name = "BYTES",
        env = "GAVEL_MAX_ARGUMENT_BYTES",
        default_value_t = gavel::audit::DEFAULT_MAX_ARGUMENT_BYTES
    )]
    pub max_argument_bytes: u64,
    /// Print tables and text whole, at their natural width: not fitted to the terminal,
    /// $COLUMNS, or (when stdout is neither) 160 columns; `log` adds `who` and layer columns
    #[arg(long, global = true)]
    pub wide: bool,
}

/// Limits on the built-in tools, for the commands that run them.
#[derive(Args, Debug, Clone, Copy)]
#[command(next_help_heading = "Tool limits")]
pub struct ToolLimits {
    /// Kill a `bash` command (its whole process group) after SECONDS; the call fails
    #[arg(
        long,
        value_name = "SECONDS",
        env = "GAVEL_BASH_TIMEOUT",
        default_value_t = gavel::tools::DEFAULT_BASH_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub bash_timeout: u64,
    /// Keep at most BYTES of a tool's output (stdout and stderr together for `bash`), marking the cut
    #[arg(
        long,
        value_name = "BYTES",
        env = "GAVEL_MAX_OUTPUT_BYTES",
        default_value_t = gavel::tools::DEFAULT_OUTPUT_LIMIT as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_output_bytes: u64,
}

impl ToolLimits {
    /// The handlers' context in `workspace` with these limits.
    pub fn context(&self, workspace: &Workspace) -> gavel::tools::ToolContext {
        gavel::tools::ToolContext::new(workspace.clone()).with_limits(
            std::time::Duration::from_secs(self.bash_timeout),
            usize::try_from(self.max_output_bytes).unwrap_or(usize::MAX),
        )
    }
}

pub use gavel::session::{AskWait, parse_ask_wait};

/// `--durability`: `full` syncs every commit; `normal` survives a crash of gavel but not a power loss.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurabilityArg {
    Full,
    Normal,
}

/// How to print results.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Table,
    Json,
    Jsonl,
}

/// `--format` with `--json` as its short form.
#[derive(Args, Debug, Clone, Copy)]
pub struct FormatArgs {
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// JSON, one object per line (short for --format jsonl)
    #[arg(long)]
    pub json: bool,
}

impl FormatArgs {
    pub fn get(self) -> Format {
        if self.json {
            Format::Jsonl
        } else {
            self.format
        }
    }

    pub fn is_json(self) -> bool {
        self.get() != Format::Table
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decide a call without asking, running or recording anything
    Check(check::CheckArgs),
    /// Run a call through policy, approval and execution, and record it
    Run(run::RunArgs),
    /// Show or validate policies
    #[command(subcommand)]
    Policy(policy_cmd::PolicyCommand),
    /// Run a short scripted session in a temporary workspace and show what happened
    Demo(demo::DemoArgs),
    /// List recorded calls, one row per call, oldest first
    Log(log::LogArgs),
    /// Every event of one call, with seq and hashes
    Show(show::ShowArgs),
    /// Why a recorded call ended as it did, in plain words
    Explain(show::ExplainArgs),
    /// Counts per rule, action, approval, status and tool
    Stats(log::StatsArgs),
    /// Every event with its hashes, for archiving
    Export(export::ExportArgs),
    /// Decide recorded calls again under the current policy and report the drift
    Replay(replay::ReplayArgs),
    /// Write an evidence report: one self-contained HTML page for auditors
    Report(report::ReportArgs),
    /// Check the hash chain (and optionally a signed checkpoint)
    Verify(verify::VerifyArgs),
    /// Verify the chain, then list anomalies (tools that ran outside what gavel decided);
    /// exit 1 if the chain does not verify, 4 if there are anomalies
    Audit(audit::AuditArgs),
    /// Write an Ed25519 key for signing checkpoints, and KEY.pub
    Keygen(keys::KeygenArgs),
    /// Sign and store a checkpoint of the log's current size and Merkle root
    Checkpoint(keys::CheckpointArgs),
    /// Answer an agent client's hook: decide its tool calls and record them
    ///
    /// One JSON object on stdin, in the client's own hook format; a tool call is
    /// decided by the current policy against the workspace (--workspace, else the
    /// project the client runs in, else the hook's cwd), recorded write-ahead, and
    /// answered in the client's format. An ask goes to the client's own prompt
    /// where it can prompt, else it is denied as "needs approval" (see --ask).
    /// Completions complete the call they match (by the client's call id, or by
    /// session, tool and input digest); anything else is an anomaly. Other events
    /// are lifecycle events. The database is --db, $GAVEL_DB, else .gavel/audit.db
    /// in the workspace. Anything that goes wrong ends in the client's fail-closed
    /// answer (exit 2, which blocks the call).
    Hook(hook::HookArgs),
    /// Install gavel as a client's hooks, with a starting policy for coding agents
    Init(init::InitArgs),
    /// Check a workspace end to end (hooks, policy, log, checkpoint, git, file modes)
    /// and say what to fix; exit 1 if a check fails
    Doctor(doctor::DoctorArgs),
    /// Govern tool calls over JSON lines: requests in, results out, asks as approval requests
    Serve(serve::ServeArgs),
    /// The calls waiting for approval in the pending queue (`--ask wait`)
    Pending(pending::PendingArgs),
    /// Approve a call waiting in the pending queue, from another terminal
    Approve(approve::AnswerArgs),
    /// Reject a call waiting in the pending queue, from another terminal
    Reject(approve::AnswerArgs),
    /// Serve the approval page: waiting calls live, approve / reject / grant by click
    Approvals(approvals_page::ApprovalsArgs),
    /// The grants in the record (`approve --grant`): scope, limits, uses, state
    Grants(grants::GrantsArgs),
    /// Record a grant's revocation: calls it covered are asked again
    Revoke(grants::RevokeArgs),
    /// Run an MCP server behind gavel: every tools/call decided, asked and recorded
    Mcp(mcp::McpArgs),
    /// Ship this host's audit log to the team's central store (PostgreSQL)
    #[cfg(feature = "postgres")]
    Push(push::PushArgs),
    /// Run a team's central store in PostgreSQL: init, enroll hosts, ingest, list logs
    #[cfg(feature = "postgres")]
    #[command(subcommand)]
    Central(central::CentralCommand),
}

pub fn main() -> std::process::ExitCode {
    // A file-size limit (`ulimit -f`) makes a write fail with EFBIG instead
    // of killing gavel: a call that already ran is then reported, not lost.
    // SAFETY: setting a signal's disposition to "ignore" has no handler to race with.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    let cli = parse();
    let code = match dispatch(cli) {
        Ok(exit) => exit,
        Err(err) if is_broken_pipe(&err) => Exit::Ok,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "gavel: {}", one_line(&err));
            Exit::Error
        }
    };
    std::process::ExitCode::from(code as u8)
}

/// Global options that a command ignores, by command path: hidden from its
/// `--help` (a script that passes `--db` to every command keeps working).
const NOT_APPLICABLE: &[(&str, &[&str])] = &[
    ("check", &["db", "durability", "max_argument_bytes"]),
    (
        "policy",
        &["db", "durability", "max_argument_bytes", "wide"],
    ),
    (
        "policy show",
        &["db", "durability", "max_argument_bytes", "wide"],
    ),
    (
        "policy validate",
        &["db", "durability", "max_argument_bytes", "wide"],
    ),
    ("policy test", &["db", "durability", "max_argument_bytes"]),
    ("policy lint", &["durability", "max_argument_bytes"]),
    (
        "demo",
        &["workspace", "policy", "durability", "max_argument_bytes"],
    ),
    ("log", &["policy", "durability", "max_argument_bytes"]),
    ("show", &["policy", "durability", "max_argument_bytes"]),
    ("explain", &["policy", "durability", "max_argument_bytes"]),
    ("stats", &["policy", "durability", "max_argument_bytes"]),
    (
        "export",
        &["policy", "durability", "max_argument_bytes", "wide"],
    ),
    ("replay", &["durability", "max_argument_bytes"]),
    (
        "report",
        &["policy", "durability", "max_argument_bytes", "wide"],
    ),
    (
        "verify",
        &["policy", "durability", "max_argument_bytes", "wide"],
    ),
    ("audit", &["policy", "durability", "max_argument_bytes"]),
    (
        "keygen",
        &[
            "workspace",
            "policy",
            "db",
            "durability",
            "max_argument_bytes",
        ],
    ),
    ("checkpoint", &["policy", "max_argument_bytes", "wide"]),
    (
        "init",
        &["policy", "db", "durability", "max_argument_bytes", "wide"],
    ),
    ("push", &["policy", "max_argument_bytes", "wide"]),
    (
        "central",
        &[
            "workspace",
            "policy",
            "durability",
            "max_argument_bytes",
            "wide",
        ],
    ),
    (
        "central init",
        &[
            "workspace",
            "policy",
            "durability",
            "max_argument_bytes",
            "wide",
        ],
    ),
    (
        "central enroll",
        &[
            "workspace",
            "policy",
            "durability",
            "max_argument_bytes",
            "wide",
        ],
    ),
    (
        "central ingest",
        &[
            "workspace",
            "policy",
            "durability",
            "max_argument_bytes",
            "wide",
        ],
    ),
    (
        "central logs",
        &["workspace", "policy", "durability", "max_argument_bytes"],
    ),
    (
        "central retain",
        &[
            "workspace",
            "policy",
            "durability",
            "max_argument_bytes",
            "wide",
        ],
    ),
    ("hook", &["wide"]),
    ("doctor", &["durability", "max_argument_bytes"]),
    ("serve", &["wide"]),
    ("pending", &["policy", "durability", "max_argument_bytes"]),
    ("approve", &["policy", "max_argument_bytes", "wide"]),
    ("reject", &["policy", "max_argument_bytes", "wide"]),
    ("grants", &["policy", "durability", "max_argument_bytes"]),
    ("approvals", &["policy", "max_argument_bytes", "wide"]),
    ("revoke", &["policy", "max_argument_bytes", "wide"]),
    ("mcp", &["wide"]),
];

/// Parses the command line with each command's help showing only the global
/// options that apply to it.
fn parse() -> Cli {
    let words: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(cli) = parse_hot(&words) {
        return cli;
    }
    parse_full(&words)
}

/// The commands an agent runs once per tool call, `hook` and `run`, parsed
/// without building every other command's arguments (clap builds the
/// whole tree before it parses; for these two that was a fifth of a
/// call's CPU time). Only a command line that starts with their name and
/// parses cleanly is taken here: help, errors and everything else go
/// through [`parse_full`], which describes them in full.
fn parse_hot(words: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::{Args, FromArgMatches};
    let name = words.get(1)?.to_str()?;
    let sub = match name {
        "hook" => hook::HookArgs::augment_args(clap::Command::new("hook")),
        "run" => run::RunArgs::augment_args(clap::Command::new("run")),
        _ => return None,
    };
    let command = Global::augment_args(clap::Command::new("gavel"))
        .subcommand(sub)
        .disable_help_subcommand(true)
        .disable_help_flag(true)
        .disable_version_flag(true);
    let matches = command.try_get_matches_from(words).ok()?;
    let global = Global::from_arg_matches(&matches).ok()?;
    let (_, matches) = matches.subcommand()?;
    let command = match name {
        "hook" => Command::Hook(hook::HookArgs::from_arg_matches(matches).ok()?),
        _ => Command::Run(run::RunArgs::from_arg_matches(matches).ok()?),
    };
    Some(Cli { global, command })
}

fn parse_full(words: &[std::ffi::OsString]) -> Cli {
    parse_all(words).unwrap_or_else(|err| err.exit())
}

fn parse_all(words: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
    let mut command = <Cli as clap::CommandFactory>::command();
    let globals: Vec<clap::Arg> = command
        .get_arguments()
        .filter(|arg| arg.is_global_set())
        .cloned()
        .collect();
    // Only the commands named on the command line are parsed or described,
    // so only they get their copies (building all of them costs every call).
    let named: Vec<String> = words
        .iter()
        .skip(1)
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    hide_inapplicable(&mut command, "", &globals, &named);
    let matches = command.try_get_matches_from(words)?;
    <Cli as clap::FromArgMatches>::from_arg_matches(&matches)
}

/// Gives every subcommand its own copy of each global option, hidden where
/// it does not apply; clap then propagates nothing over these copies, and
/// still shares their values across levels since they stay global.
fn hide_inapplicable(
    command: &mut clap::Command,
    parent: &str,
    globals: &[clap::Arg],
    words: &[String],
) {
    for sub in command.get_subcommands_mut() {
        if !words.iter().any(|w| w == sub.get_name()) {
            continue;
        }
        let path = format!("{parent}{}", sub.get_name());
        let hidden = NOT_APPLICABLE
            .iter()
            .find(|(name, _)| *name == path)
            .map_or(&[][..], |(_, ids)| ids);
        let mut owned = std::mem::take(sub);
        for global in globals {
            let hide = hidden.iter().any(|id| global.get_id() == *id);
            owned = owned.arg(global.clone().hide(hide));
        }
        hide_inapplicable(&mut owned, &format!("{path} "), globals, words);
        *sub = owned;
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<Exit> {
    let global = cli.global;
    render::set_wide(global.wide);
    match cli.command {
        Command::Check(args) => check::run(&global, args),
        Command::Run(args) => run::run(&global, args),
        Command::Policy(command) => policy_cmd::run(&global, command),
        Command::Demo(args) => demo::run(&global, args),
        Command::Log(args) => log::run(&global, args),
        Command::Show(args) => show::show(&global, args),
        Command::Explain(args) => show::explain(&global, args),
        Command::Stats(args) => log::stats(&global, args),
        Command::Export(args) => export::run(&global, args),
        Command::Replay(args) => replay::run(&global, args),
        Command::Report(args) => report::run(&global, args),
        Command::Verify(args) => verify::run(&global, args),
        Command::Audit(args) => audit::run(&global, args),
        Command::Keygen(args) => keys::keygen(args),
        Command::Checkpoint(args) => keys::checkpoint(&global, args),
        Command::Hook(args) => hook::run(&global, args),
        Command::Init(args) => init::run(&global, args),
        Command::Doctor(args) => doctor::run(&global, args),
        Command::Serve(args) => serve::run(&global, args),
        Command::Pending(args) => pending::run(&global, args),
        Command::Approve(args) => approve::approve(&global, args),
        Command::Reject(args) => approve::reject(&global, args),
        Command::Approvals(args) => approvals_page::run(&global, args),
        Command::Grants(args) => grants::list(&global, args),
        Command::Revoke(args) => grants::revoke(&global, args),
        Command::Mcp(args) => mcp::run(&global, args),
        #[cfg(feature = "postgres")]
        Command::Push(args) => push::run(&global, args),
        #[cfg(feature = "postgres")]
        Command::Central(command) => central::run(&global, command),
    }
}

/// The error and its causes on one line.
fn one_line(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for (i, cause) in err.chain().enumerate() {
        let cause = cause.to_string();
        if i > 0 {
            if text.contains(&cause) {
                continue;
            }
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text.replace('\n', " ")
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

impl Global {
    /// The options a session of the library is opened with.
    pub fn setup(&self) -> Setup {
        Setup {
            workspace: self.workspace.clone(),
            policy: self.policy.clone(),
            shadow_policy: self.shadow_policy.clone(),
            db: self.db.clone(),
            durability: self.durability(),
            max_argument_bytes: self.max_argument_bytes,
            kept: None,
        }
    }

    /// The workspace, canonicalized.
    pub fn workspace(&self) -> anyhow::Result<Workspace> {
        Ok(self.setup().workspace()?)
    }

    /// The central store's URL when `--db` (or `$GAVEL_DB`) names one
    /// (`postgres://…` or `postgresql://…`) rather than a SQLite file.
    pub fn central_url(&self) -> Option<String> {
        self.setup().central_url()
    }

    /// The audit database path: `--db`, `$GAVEL_DB`, `.gavel/audit.db` in the workspace.
    pub fn db_path(&self) -> anyhow::Result<PathBuf> {
        Ok(self.setup().db_path()?)
    }

    /// Opens the audit database for appending, creating it on first use.
    pub fn open_store(&self) -> anyhow::Result<Store> {
        Ok(self.setup().open_store()?)
    }

    /// The policy gavel would use now: `--policy`, `$GAVEL_POLICY`,
    /// `gavel.toml`, built-in; under the layers above it.
    pub fn policy(&self, workspace: &Workspace) -> anyhow::Result<gavel::Policy> {
        Ok(self.setup().policy(workspace)?)
    }

    /// The policy in force and where it comes from, in words.
    pub fn policy_in_force(
        &self,
        workspace: &Workspace,
    ) -> anyhow::Result<(gavel::Policy, String)> {
        Ok(self.setup().policy_in_force(workspace)?)
    }

    /// The durability `--durability` asks for.
    pub fn durability(&self) -> Durability {
        match self.durability {
            DurabilityArg::Full => Durability::Full,
            DurabilityArg::Normal => Durability::Normal,
        }
    }

    /// Opens an existing audit database read-only, for a reading command.
    pub fn read_store(&self) -> anyhow::Result<Store> {
        self.read_store_with(query::ReadArgs::default())
    }

    /// Opens an existing audit database read-only, as `read` says: unless
    /// `--no-verify`, its recent rows are checked first (`check_recent`)
    /// and one warning line goes to stderr when they do not verify; what
    /// the command answers, and its exit code, stay the same.
    pub fn read_store_with(&self, read: query::ReadArgs) -> anyhow::Result<Store> {
        let (store, integrity) = self.read_store_checked(read)?;
        if let Some(integrity) = integrity {
            integrity.warn();
        }
        Ok(store)
    }

    /// [`Global::read_store_with`] without the warning, handing back what
    /// the check found instead, so that a command can mark the rows it
    /// could not verify, refuse filters that read them, and warn.
    pub fn read_store_checked(
        &self,
        read: query::ReadArgs,
    ) -> anyhow::Result<(Store, Option<Integrity>)> {
        let store = Store::open_read_only(&self.db_path()?)?;
        if read.no_verify {
            return Ok((store, None));
        }
        let broken = match store.check_recent() {
            Ok(report) if report.ok => None,
            Ok(report) => Some(Integrity {
                log: None,
                first_bad_seq: report.first_bad_seq,
                text: format!(
                    "the log does not verify: {}{}: {}",
                    report.problem.map_or("unknown", |p| p.as_str()),
                    report
                        .first_bad_seq
                        .map(|seq| format!(" at seq {seq}"))
                        .unwrap_or_default(),
                    report.detail.unwrap_or_default()
                ),
            }),
            Err(err) => Some(Integrity {
                log: None,
                first_bad_seq: Some(1),
                text: format!("could not check the chain: {err}"),
            }),
        };
        Ok((store, broken))
    }
}

/// How a person runs this gavel from a shell: `gavel` when the `gavel` on
/// `PATH` is the same gavel as this binary (the same file, bytes or
/// version), else its absolute path (after `cargo run`).
pub fn gavel_command() -> String {
    match std::env::current_exe().and_then(std::fs::canonicalize) {
        Ok(this) if gavel::install::gavel_on_path(&this).is_none() => {
            gavel::clients::shell_word(&this.to_string_lossy())
        }
        _ => "gavel".to_owned(),
    }
}

/// What a reading command's check of the chain found wrong.
#[derive(Debug, Clone)]
pub struct Integrity {
    /// The log it is about: `None` for the local log, a central log's origin.
    pub log: Option<String>,
    /// Rows from this seq on are not verified (`None`: the log as a whole,
    /// e.g. a checkpoint that does not match).
    pub first_bad_seq: Option<u64>,
    /// One line saying what broke.
    pub text: String,
}

impl Integrity {
    /// One warning line on stderr; a tampered log's text (an origin, a
    /// note) reaches the terminal escaped.
    pub fn warn(&self) {
        let _ = writeln!(
            std::io::stderr(),
            "gavel: warning: {}; `gavel verify` checks the whole chain, --no-verify skips this check",
            render::escape(&self.text)
        );
    }

    /// Whether the row at `seq` is past the first bad one.
    pub fn unverified(&self, seq: u64) -> bool {
        self.first_bad_seq.is_none_or(|bad| seq >= bad)
    }

    /// Whether the row at `seq` of log `log` (`None`: the local log) is
    /// past the first bad row of its log, as one of `found` says.
    pub fn unverified_in(found: &[Integrity], log: Option<&str>, seq: u64) -> bool {
        found
            .iter()
            .any(|i| i.log.as_deref().is_none_or(|l| Some(l) == log) && i.unverified(seq))
    }

    /// Refuses a filter on recorded columns over rows that do not verify:
    /// an edited `action` would hide a call from `--action deny`.
    pub fn refuse_filters(&self, query: &gavel::store::AuditQuery) -> anyhow::Result<()> {
        let filtered = query.selects_calls_only()
            || query.reads_beyond_the_decision()
            || query.since.is_some()
            || query.until.is_some();
        if filtered {
            anyhow::bail!(
                "refusing to filter: {}; a filter reads recorded columns, and an edited one would hide a call; \
                 `gavel verify` says what broke, --no-verify filters anyway",
                render::escape(&self.text)
            );
        }
        Ok(())
    }
}

/// The built-in tools and their arguments, for `--help` (from the same
/// schemas the policy checks requests against).
pub fn builtin_tools_help() -> String {
    let mut text = String::from(
        "Built-in tools and their arguments (a missing required argument, a value of the wrong\n\
         kind or any other key is denied as request.invalid_arguments):\n",
    );
    for tool in gavel::request::BUILTIN_TOOLS {
        text.push_str(&format!("  {}: {}\n", tool.name, tool.about));
        for argument in tool.arguments {
            let need = if argument.required {
                "required"
            } else {
                "optional"
            };
            text.push_str(&format!(
                "      {:<9} {need}, {}\n",
                argument.name, argument.about
            ));
        }
    }
    text.push_str("Any other tool name is judged by the policy alone (default: denied).");
    text
}

/// Tells stderr when `tool` looks like a mistyped built-in tool; returns the suggestion.
pub fn hint_tool_typo(tool: &str) -> Option<&'static str> {
    let suggestion = gavel::request::suggest_tool(tool)?;
    let _ = writeln!(
        std::io::stderr(),
        "gavel: `{tool}` is not a built-in tool; did you mean `{suggestion}`?"
    );
    Some(suggestion)
}

/// Parses an `ARGS_JSON` argument; text that is not JSON at all is a usage error.
pub fn parse_json_arg(text: &str) -> anyhow::Result<serde_json::Value> {
    serde_json::from_str(text).map_err(|e| anyhow::anyhow!("ARGS_JSON is not valid JSON: {e}"))
}

/// Reads a file, or stdin for `-`.
pub fn read_input(path: &Path) -> anyhow::Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("cannot read stdin")?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("cannot read `{}`", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::{parse_all, parse_hot};

    fn words(line: &[&str]) -> Vec<OsString> {
        std::iter::once("gavel")
            .chain(line.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn the_hot_path_parses_as_the_full_parser_does() {
        let lines: &[&[&str]] = &[
            &["run", "read_file", r#"{"path":"a"}"#],
            &["run", "bash", "{}", "--db", "x.db", "--approve", "--json"],
            &[
                "run",
                "--request",
                "-",
                "--workspace",
                "w",
                "--durability",
                "normal",
            ],
            &[
                "run",
                "write_file",
                "{}",
                "--reject",
                "--call-id",
                "c1",
                "--policy",
                "p.toml",
            ],
            &["run", "read_file", "{}", "--max-argument-bytes", "10"],
            &["hook", "claude-code"],
            &["hook", "copilot", "--event", "preToolUse", "--db", "a.db"],
            &["hook", "gemini", "--ask", "deny", "--workspace", "/w"],
            &["hook", "codex", "--ask", "wait=60s"],
            &["hook", "claude-code", "--ask", "wait"],
            &["run", "write_file", "{}", "--ask", "wait=5m", "--json"],
        ];
        for line in lines {
            let words = words(line);
            let hot = parse_hot(&words).unwrap_or_else(|| panic!("{line:?} not taken"));
            let full = parse_all(&words).unwrap();
            assert_eq!(format!("{hot:?}"), format!("{full:?}"), "{line:?}");
        }
    }

    #[test]
    fn help_errors_and_other_commands_are_left_to_the_full_parser() {
        let lines: &[&[&str]] = &[
            &["run", "--help"],
            &["run"],
            &["run", "a", "{}", "--approve", "--reject"],
            &["hook", "nobody"],
            &["hook", "-h"],
            &["hook", "claude-code", "--durability", "sometimes"],
            &["--db", "x.db", "run", "read_file", "{}"],
            &["log"],
            &["--version"],
        ];
        for line in lines {
            assert!(parse_hot(&words(line)).is_none(), "{line:?}");
        }
    }
}
