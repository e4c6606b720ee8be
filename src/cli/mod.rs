//! The command line: a thin layer over the library. Only this module knows
//! about clap, tables and anyhow; every subcommand has its own file.

mod approvals_page;
mod approve;
mod approvers;
mod audit;
#[cfg(feature = "postgres")]
mod central;
mod check;
mod completions;
mod demo;
mod doctor;
mod exec;
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
mod receipt;
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
use gavel::source::{Integrity, Location, Selection, Source};
use gavel::store::{AuditQuery, Durability, Store};

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
    Unenforceable = 124, // `exec`: the kernel cannot enforce the sandbox; nothing ran
    Refused = 125,       // `exec`: unknown, not allowed, or another command; nothing ran
    NotExecutable = 126, // `exec`: contained, the program could not be executed (as bash says)
    NotFound = 127,      // `exec`: contained, the program was not found (as bash says)
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

/// `--format` of the commands a CI job gates on: a table or JSON, or what
/// CI systems read (`gavel::ci`).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateFormat {
    Table,
    Json,
    Jsonl,
    /// JUnit XML: one test case per call, case or finding; failures where the gate fails
    Junit,
    /// SARIF 2.1.0: results located in the policy file at the rule's line
    Sarif,
    /// GitHub Actions workflow commands: `::error file=…,line=…::` annotations
    Github,
}

/// `--format` (with the CI formats) and `--json` as its short form.
#[derive(Args, Debug, Clone, Copy)]
pub struct GateFormatArgs {
    /// Output format
    #[arg(long, value_enum, default_value_t = GateFormat::Table)]
    pub format: GateFormat,
    /// JSON, one object per line (short for --format jsonl)
    #[arg(long)]
    pub json: bool,
}

impl GateFormatArgs {
    /// The CI format asked for (`--json` overrides `--format`, as everywhere).
    pub fn ci(self) -> Option<gavel::ci::Format> {
        match self.format {
            _ if self.json => None,
            GateFormat::Junit => Some(gavel::ci::Format::Junit),
            GateFormat::Sarif => Some(gavel::ci::Format::Sarif),
            GateFormat::Github => Some(gavel::ci::Format::Github),
            _ => None,
        }
    }

    /// The table or JSON format asked for, when not a CI one.
    pub fn plain(self) -> FormatArgs {
        let format = match self.format {
            GateFormat::Json => Format::Json,
            GateFormat::Jsonl => Format::Jsonl,
            _ => Format::Table,
        };
        FormatArgs {
            format,
            json: self.json,
        }
    }
}

/// When the command started, for a CI report's time.
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Prints `report` in `format`; the exit its gate gives.
pub fn print_ci(report: &gavel::ci::Report, format: gavel::ci::Format) -> anyhow::Result<Exit> {
    let started = *STARTED.get_or_init(std::time::Instant::now);
    let text = report.render(format, &gavel::ci::Run::here(started));
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(if report.fails() {
        Exit::Failed
    } else {
        Exit::Ok
    })
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decide a call without asking, running or recording anything
    Check(check::CheckArgs),
    /// Run a call through policy, approval and execution, and record it
    Run(run::RunArgs),
    /// Run a recorded, allowed bash call inside the kernel sandbox its decision names
    Exec(exec::ExecArgs),
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
    /// Write a call's receipt: its rows, their inclusion proofs and the signed
    /// checkpoint, checkable offline with `gavel verify --receipt`
    Receipt(receipt::ReceiptArgs),
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
    /// Enrol, list or remove the people who approve with a second factor (TOTP)
    #[command(subcommand)]
    Approvers(approvers::ApproversCommand),
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
    /// Print a shell's completion script for gavel (`source <(gavel completions bash)`)
    Completions(completions::CompletionsArgs),
    /// Print gavel's man page in roff (`gavel man > gavel.1; man -l gavel.1`)
    Man,
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

/// Global options that a command ignores (their ids, by command path):
/// hidden from its `--help` (a script that passes `--db` to every command
/// keeps working).
const NOT_APPLICABLE: &[(&str, &str)] = &[
    ("check", "db durability max_argument_bytes"),
    ("policy", "db durability max_argument_bytes wide"),
    ("policy show", "db durability max_argument_bytes wide"),
    ("policy validate", "db durability max_argument_bytes wide"),
    ("policy test", "db durability max_argument_bytes"),
    ("policy lint", "durability max_argument_bytes"),
    ("policy suggest", "max_argument_bytes wide"),
    ("demo", "workspace policy durability max_argument_bytes"),
    ("log", "policy durability max_argument_bytes"),
    ("show", "policy durability max_argument_bytes"),
    ("explain", "policy durability max_argument_bytes"),
    ("stats", "policy durability max_argument_bytes"),
    ("export", "policy durability max_argument_bytes wide"),
    ("replay", "durability max_argument_bytes"),
    ("report", "policy durability max_argument_bytes wide"),
    ("verify", "policy durability max_argument_bytes wide"),
    ("audit", "policy durability max_argument_bytes"),
    (
        "keygen",
        "workspace policy db durability max_argument_bytes",
    ),
    ("checkpoint", "policy max_argument_bytes wide"),
    ("init", "policy db durability max_argument_bytes wide"),
    ("push", "policy max_argument_bytes wide"),
    (
        "central",
        "workspace policy durability max_argument_bytes wide",
    ),
    (
        "central init",
        "workspace policy durability max_argument_bytes wide",
    ),
    (
        "central enroll",
        "workspace policy durability max_argument_bytes wide",
    ),
    (
        "central ingest",
        "workspace policy durability max_argument_bytes wide",
    ),
    (
        "central logs",
        "workspace policy durability max_argument_bytes",
    ),
    (
        "central retain",
        "workspace policy durability max_argument_bytes wide",
    ),
    ("hook", "wide"),
    ("doctor", "durability max_argument_bytes"),
    ("serve", "wide"),
    ("pending", "policy durability max_argument_bytes"),
    ("approve", "policy max_argument_bytes wide"),
    ("reject", "policy max_argument_bytes wide"),
    ("grants", "policy durability max_argument_bytes"),
    ("approvals", "policy max_argument_bytes wide"),
    ("revoke", "policy max_argument_bytes wide"),
    ("mcp", "wide"),
    (
        "completions",
        "workspace policy db durability max_argument_bytes wide",
    ),
    (
        "man",
        "workspace policy db durability max_argument_bytes wide",
    ),
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

/// The commands an agent runs once per tool call, `hook`, `run` and `exec`, parsed
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
        "exec" => exec::ExecArgs::augment_args(clap::Command::new("exec")),
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
        "exec" => Command::Exec(exec::ExecArgs::from_arg_matches(matches).ok()?),
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
            .map_or("", |(_, ids)| ids);
        let mut owned = std::mem::take(sub);
        for global in globals {
            let hide = hidden.split(' ').any(|id| global.get_id() == id);
            owned = owned.arg(global.clone().hide(hide));
        }
        hide_inapplicable(&mut owned, &format!("{path} "), globals, words);
        *sub = owned;
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<Exit> {
    let global = cli.global;
    STARTED.get_or_init(std::time::Instant::now);
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
        Command::Verify(args) => match &args.receipt {
            Some(path) => receipt::verify(
                path,
                &args.public_key,
                global.policy.as_deref(),
                args.json(),
            ),
            None => verify::run(&global, args),
        },
        Command::Receipt(args) => receipt::run(&global, args),
        Command::Audit(args) => audit::run(&global, args),
        Command::Keygen(args) => keys::keygen(args),
        Command::Checkpoint(args) => keys::checkpoint(&global, args),
        Command::Hook(args) => hook::run(&global, args),
        Command::Init(args) => init::run(&global, args),
        Command::Doctor(args) => doctor::run(&global, args),
        Command::Exec(args) => exec::run(&global, args),
        Command::Serve(args) => serve::run(&global, args),
        Command::Pending(args) => pending::run(&global, args),
        Command::Approve(args) => approve::approve(&global, args),
        Command::Reject(args) => approve::reject(&global, args),
        Command::Approvals(args) => approvals_page::run(&global, args),
        Command::Approvers(command) => approvers::run(&global, command),
        Command::Grants(args) => grants::list(&global, args),
        Command::Revoke(args) => grants::revoke(&global, args),
        Command::Mcp(args) => mcp::run(&global, args),
        #[cfg(feature = "postgres")]
        Command::Push(args) => push::run(&global, args),
        #[cfg(feature = "postgres")]
        Command::Central(command) => central::run(&global, command),
        Command::Completions(args) => completions::completions(args),
        Command::Man => completions::man(),
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
            session: std::env::var("GAVEL_SESSION").ok(),
        }
    }

    /// The workspace, canonicalized.
    pub fn workspace(&self) -> anyhow::Result<Workspace> {
        Ok(self.setup().workspace()?)
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

    /// Opens an existing audit database read-only: its recent rows are
    /// checked first, and one warning line goes to stderr when they do not
    /// verify; what the command answers, and its exit code, stay the same.
    pub fn read_store(&self) -> anyhow::Result<Store> {
        let store = Store::open_read_only(&self.db_path()?)?;
        if let Some(integrity) = gavel::source::check_local(&store) {
            warn(&integrity);
        }
        Ok(store)
    }

    /// Where a reading command reads: `--db postgres://…` (in `--schema`)
    /// or the local audit database; `--log`, `--host` (with
    /// `selection.enrolled`) and `--schema` only pick in a central store.
    pub fn location(&self, schema: &SchemaArg, selection: &Selection) -> anyhow::Result<Location> {
        #[cfg(feature = "postgres")]
        if let Some(url) = self.setup().central_url() {
            let schema = schema.schema.clone();
            return Ok(Location::Central { url, schema });
        }
        if selection.enrolled && (selection.host.is_some() || selection.log.is_some()) {
            anyhow::bail!("--host and --log pick logs of a central store; give --db postgres://…");
        }
        if selection.log.is_some() {
            anyhow::bail!("--log picks a log of a central store; give --db postgres://…");
        }
        if schema.schema.is_some() {
            anyhow::bail!("--schema selects the schema of a central store; give --db postgres://…");
        }
        Ok(Location::Local(self.db_path()?))
    }

    /// The read source of a reading command (see [`Global::location`]);
    /// unless `--no-verify`, a local log's recent rows are checked on opening.
    pub fn source(
        &self,
        schema: &SchemaArg,
        selection: Selection,
        read: ReadArgs,
    ) -> anyhow::Result<Source> {
        let location = self.location(schema, &selection)?;
        Ok(Source::open(location, selection, !read.no_verify)?)
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

/// One warning line on stderr for what a reading command's check of the
/// chain found wrong; a tampered log's text (an origin, a note) reaches the
/// terminal escaped.
pub fn warn(integrity: &Integrity) {
    let _ = writeln!(
        std::io::stderr(),
        "gavel: warning: {}; `gavel verify` checks the whole chain, --no-verify skips this check",
        render::escape(&integrity.text)
    );
}

/// Refuses a filter on recorded columns over rows that do not verify:
/// an edited `action` would hide a call from `--action deny`.
pub fn refuse_filters(integrity: &Integrity, query: &AuditQuery) -> anyhow::Result<()> {
    if Integrity::filtered_by(query) {
        anyhow::bail!(
            "refusing to filter: {}; a filter reads recorded columns, and an edited one would hide a call; \
             `gavel verify` says what broke, --no-verify filters anyway",
            render::escape(&integrity.text)
        );
    }
    Ok(())
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
/// One line typed on the terminal after `prompt` (on stderr), trimmed.
pub fn read_secret_line(prompt: &str) -> anyhow::Result<String> {
    eprint!("{prompt}");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line.trim().to_owned())
}

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

// ---------------------------------------------------------------------------
// Shared by the reading commands: the filter flags and how they become a
// library `AuditQuery`, the central store's `--schema`, `--no-verify`.

#[derive(Args, Debug, Clone, Default)]
pub struct QueryArgs {
    /// Only calls to this tool
    #[arg(long)]
    pub tool: Option<String>,
    /// Only calls of a tool of this MCP server (tool names `mcp__SERVER__TOOL`,
    /// through `gavel mcp` or a client's own MCP support)
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
    /// Only calls of this MCP tool (the TOOL of `mcp__SERVER__TOOL`), on any server
    #[arg(long, value_name = "TOOL")]
    pub mcp_tool: Option<String>,
    /// Only calls decided by this rule
    #[arg(long = "rule", value_name = "RULE_ID")]
    pub rule: Option<String>,
    /// Only calls with this action (allow, ask, deny)
    #[arg(long)]
    pub action: Option<String>,
    /// Only calls with this approval (not_required, approved, rejected, cancelled, pending)
    #[arg(long)]
    pub approval: Option<String>,
    /// Only calls with this status (blocked, succeeded, failed, incomplete, ungoverned)
    #[arg(long)]
    pub status: Option<String>,
    /// Only calls with an anomaly: ran despite deny, ran without a decision
    /// (ungoverned), a completion that did not match, a second completion
    #[arg(long)]
    pub anomalies: bool,
    /// Only calls (and, with `log --events`, session events) of this client session
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only calls (and session events) made by this OS user
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// Only calls (and session events) made on this host (its name or host id)
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Only calls (and session events) that came through this client (cli, serve, claude-code, ...)
    #[arg(long, value_name = "CLIENT")]
    pub client: Option<String>,
    /// Only calls (and session events) of this subagent (its agent_id)
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,
    /// Only calls whose arguments hold TEXT in a value (a command, a path, a
    /// pattern...); case-sensitive
    #[arg(long, value_name = "TEXT")]
    pub grep: Option<String>,
    /// Calls at or after TIME: RFC 3339, a date (2026-12-01, meaning 00:00 UTC), or an age (30m, 2h, 7d)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Calls before TIME (same forms as --since; a date is 00:00 UTC)
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Only this call
    #[arg(long = "call", value_name = "ID")]
    pub call: Option<String>,
    /// At most N calls: the oldest N (`log --tail N` gives the newest)
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// With a central --db (postgres://…): only this log, by its id (hex) or
    /// a prefix of its origin (`--host` picks an enrolled or recorded host)
    #[arg(long, value_name = "ID|ORIGIN")]
    pub log: Option<String>,
    #[command(flatten)]
    pub schema: SchemaArg,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// The schema of a central store a reading command reads; the same flag and
/// meaning as on `gavel central …` (resolved by `Central::open`).
#[derive(Args, Debug, Clone, Default)]
pub struct SchemaArg {
    /// With a central --db (postgres://…): its schema [default: the URL's
    /// search_path, else public]
    #[arg(long, value_name = "NAME")]
    pub schema: Option<String>,
}

/// How a reading command opens the log.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct ReadArgs {
    /// Do not check the chain's recent rows before answering (by default a
    /// warning goes to stderr when they do not verify; `gavel verify` checks it all)
    #[arg(long)]
    pub no_verify: bool,
}

impl QueryArgs {
    pub fn to_query(&self) -> anyhow::Result<AuditQuery> {
        fn one_of(
            flag: &str,
            value: &Option<String>,
            allowed: &[&str],
        ) -> anyhow::Result<Option<String>> {
            match value {
                Some(v) if !allowed.contains(&v.as_str()) => {
                    anyhow::bail!(
                        "{flag}: unknown value `{v}` (one of {})",
                        allowed.join(", ")
                    )
                }
                other => Ok(other.clone()),
            }
        }
        let time = |flag: &'static str, text: &Option<String>| {
            text.as_deref()
                .map(gavel::archive::parse_time)
                .transpose()
                .context(flag)
        };
        Ok(AuditQuery {
            since: time("--since", &self.since)?,
            until: time("--until", &self.until)?,
            tool: self.tool.clone(),
            rule_id: self.rule.clone(),
            action: one_of("--action", &self.action, &["allow", "ask", "deny"])?,
            approval: one_of(
                "--approval",
                &self.approval,
                &[
                    "not_required",
                    "approved",
                    "rejected",
                    "cancelled",
                    "pending",
                ],
            )?,
            status: one_of(
                "--status",
                &self.status,
                &["blocked", "succeeded", "failed", "incomplete", "ungoverned"],
            )?,
            call_id: self.call.clone(),
            anomalies: self.anomalies,
            session: self.session.clone(),
            user: self.user.clone(),
            host: self.host.clone(),
            client: self.client.clone(),
            agent: self.agent.clone(),
            grep: self.grep.clone(),
            mcp_server: self.server.clone(),
            mcp_tool: self.mcp_tool.clone(),
            newest_first: false,
            limit: self.limit,
        })
    }

    /// The central logs `--log` and `--host` pick.
    pub fn selection(&self) -> Selection {
        Selection {
            log: self.log.clone(),
            host: self.host.clone(),
            enrolled: false,
        }
    }

    /// The filters given, by flag name (`--tool`, ...), as given.
    pub fn given(&self) -> [(&'static str, &Option<String>); 16] {
        [
            ("tool", &self.tool),
            ("server", &self.server),
            ("mcp-tool", &self.mcp_tool),
            ("rule", &self.rule),
            ("action", &self.action),
            ("approval", &self.approval),
            ("status", &self.status),
            ("session", &self.session),
            ("user", &self.user),
            ("host", &self.host),
            ("client", &self.client),
            ("agent", &self.agent),
            ("grep", &self.grep),
            ("since", &self.since),
            ("until", &self.until),
            ("call", &self.call),
        ]
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
