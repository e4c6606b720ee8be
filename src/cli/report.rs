//! `gavel report --html FILE`: the evidence report, one self-contained HTML
//! page (see `gavel::report`). Exit 0 when the log verifies, 1 when it does
//! not (the page is written either way, with a red banner).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use gavel::policy::Policy;
use gavel::report::{self, ReportOptions};

use super::query::QueryArgs;
use super::{Exit, Global, render};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Write the report to FILE: one self-contained HTML page that fetches nothing (its CSS, SVG and small script are inline)
    #[arg(long, value_name = "FILE")]
    pub html: PathBuf,
    /// Also replay the selected calls under this policy and show the drift
    #[arg(long, value_name = "OLD.toml")]
    pub compare_policy: Option<PathBuf>,
    /// The calls table lists at most N calls (the counts always cover every selected call)
    #[arg(long, value_name = "N", default_value_t = report::DEFAULT_ROW_CAP)]
    pub max_rows: usize,
    #[command(flatten)]
    pub query: QueryArgs,
}

/// The filters given, as command-line words.
fn filters(query: &QueryArgs) -> String {
    let mut words = Vec::new();
    let flags: [(&str, &Option<String>); 14] = [
        ("--tool", &query.tool),
        ("--rule", &query.rule),
        ("--action", &query.action),
        ("--approval", &query.approval),
        ("--status", &query.status),
        ("--session", &query.session),
        ("--user", &query.user),
        ("--host", &query.host),
        ("--client", &query.client),
        ("--agent", &query.agent),
        ("--grep", &query.grep),
        ("--since", &query.since),
        ("--until", &query.until),
        ("--call", &query.call),
    ];
    for (flag, value) in flags {
        if let Some(value) = value {
            words.push(format!("{flag} {value}"));
        }
    }
    if query.anomalies {
        words.push("--anomalies".to_owned());
    }
    if let Some(limit) = query.limit {
        words.push(format!("--limit {limit}"));
    }
    words.join(" ")
}

/// Writes `bytes` to `path` with permission bits `mode`, whether the file
/// is new or replaced.
fn write_with_mode(path: &std::path::Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.write_all(bytes)
}

pub fn run(global: &Global, args: ReportArgs) -> anyhow::Result<Exit> {
    let (store, query, db_label) = match global.central_url() {
        #[cfg(feature = "postgres")]
        Some(url) => super::central_read::report_store(&url, &args.query)?,
        _ => {
            args.query.check_local()?;
            let store = global.read_store_with(args.query.read)?;
            let label = store.path().display().to_string();
            (store, args.query.to_query()?, label)
        }
    };
    let compare = args
        .compare_policy
        .as_deref()
        .map(Policy::load)
        .transpose()?;
    let options = ReportOptions {
        query: &query,
        filters: filters(&args.query),
        compare: compare.as_ref(),
        generated: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        db_label,
        row_cap: args.max_rows,
    };
    let data = report::gather(&store, &options)?;
    store.check_unchanged()?;
    let page = report::render(&data)?;
    // The page holds what the record holds: it is no more readable than
    // the database it came from (0600 for a local log, as gavel makes it).
    let mode = std::fs::metadata(store.path())
        .map(|m| m.permissions().mode() & 0o666)
        .unwrap_or(0o600);
    write_with_mode(&args.html, page.as_bytes(), mode)
        .with_context(|| format!("cannot write `{}`", args.html.display()))?;
    let mut note = format!(
        "wrote {} ({} calls, {} bytes)",
        args.html.display(),
        data.stats.calls,
        page.len()
    );
    if !data.verify.ok {
        note.push_str(&format!(
            "; the log does not verify: {}{}",
            data.problem.unwrap_or("unknown"),
            data.verify
                .first_bad_seq
                .map(|seq| format!(" at seq {seq}"))
                .unwrap_or_default()
        ));
    }
    writeln!(std::io::stderr(), "gavel: {}", render::escape(&note))?;
    Ok(if data.verify.ok {
        Exit::Ok
    } else {
        Exit::Failed
    })
}
