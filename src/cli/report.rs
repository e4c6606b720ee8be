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

use super::{Exit, Global, QueryArgs, render};

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
    /// Also write the receipt of each call the page details into DIR and link it
    /// (`gavel verify --receipt` checks one offline)
    #[arg(long, value_name = "DIR")]
    pub receipts: Option<PathBuf>,
    #[command(flatten)]
    pub query: QueryArgs,
}

/// The filters given, as command-line words.
fn filters(query: &QueryArgs) -> String {
    let mut words = Vec::new();
    for (flag, value) in query.given() {
        if let Some(value) = value {
            words.push(format!("--{flag} {value}"));
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

/// The page of the one log read (the local log; a central store's log
/// `--log` names, or a `--host`'s only one); for several, one page per log
/// beside FILE (`STEM-HOST-LOGID.html`) and FILE an index linking them;
/// exit 1 when any log does not verify.
pub fn run(global: &Global, args: ReportArgs) -> anyhow::Result<Exit> {
    let mut source = global.source(&args.query.schema, args.query.selection(), args.query.read)?;
    if let Some(integrity) = source.opened() {
        super::warn(integrity);
    }
    let db = source.label();
    let mut entries = Vec::new();
    let count = source
        .reading()?
        .for_each_log(&args.query.to_query()?, |log| {
            let (Some(from), 2..) = (log.from, log.count) else {
                entries.push(write_page(
                    log.store, log.query, log.label, &args, &args.html,
                )?);
                return Ok::<_, anyhow::Error>(());
            };
            let stem = args
                .html
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "report".into());
            let id = gavel::digest::hex(&from.log_id);
            // Enrolled names are `[a-z][a-z0-9_]*`; what the database says is
            // still kept to a file name.
            let host: String = from
                .host
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            let name = format!("{stem}-{host}-{}.html", &id[..id.len().min(12)]);
            let path = args.html.with_file_name(&name);
            let mut page = write_page(log.store, log.query, log.label, &args, &path)?;
            page.entry = Some(report::IndexEntry {
                host: from.host.clone(),
                origin: from.origin.clone(),
                page: name,
                calls: page.calls,
                verified: page.verified,
                problem: page.problem.clone(),
            });
            entries.push(page);
            Ok(())
        })?;
    if count == 0 {
        anyhow::bail!("no log of the central store matches");
    }
    let verified = entries.iter().all(|p| p.verified);
    if entries.len() > 1 {
        let index = report::Index {
            generated: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            db,
            filters: filters(&args.query),
            logs: entries.into_iter().filter_map(|p| p.entry).collect(),
        };
        let html = report::render_index(&index)?;
        write_with_mode(&args.html, html.as_bytes(), 0o600)
            .with_context(|| format!("cannot write `{}`", args.html.display()))?;
        writeln!(
            std::io::stderr(),
            "gavel: {}",
            render::escape(&format!(
                "wrote {}: the index of {} logs' pages{}",
                args.html.display(),
                index.logs.len(),
                match index.logs.iter().filter(|l| !l.verified).count() {
                    0 => String::new(),
                    n => format!("; {n} of them do not verify"),
                }
            ))
        )?;
    }
    Ok(if verified { Exit::Ok } else { Exit::Failed })
}

/// How the page at `page` links the folder `dir`: relative to the page's
/// folder when it lies inside it (the two can travel together), else absolute.
fn link_to(dir: &std::path::Path, page: &std::path::Path) -> String {
    let absolute = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    let dir = absolute(dir);
    let base = absolute(page.parent().unwrap_or(std::path::Path::new(".")));
    match dir.strip_prefix(&base) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
        _ => format!("file://{}", dir.display()),
    }
}

/// What writing one log's page found. `calls`, `problem` and `entry` make
/// the index of a report over several logs (of a central store).
struct Page {
    calls: u64,
    verified: bool,
    /// `content_mismatch at seq 11`, when it does not verify.
    problem: Option<String>,
    /// Its line in the index, for a report over several logs.
    entry: Option<report::IndexEntry>,
}

/// Writes the report of `store` (the calls `query` selects) to `path`,
/// with the database named `db_label`, and says so on stderr.
fn write_page(
    store: &gavel::store::Store,
    query: &gavel::store::AuditQuery,
    db_label: String,
    args: &ReportArgs,
    path: &std::path::Path,
) -> anyhow::Result<Page> {
    let compare = args
        .compare_policy
        .as_deref()
        .map(Policy::load)
        .transpose()?;
    let options = ReportOptions {
        query,
        filters: filters(&args.query),
        compare: compare.as_ref(),
        generated: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        db_label,
        row_cap: args.max_rows,
        receipts: args.receipts.as_deref().map(|dir| link_to(dir, path)),
    };
    let data = report::gather(store, &options)?;
    if let Some(dir) = &args.receipts {
        let ids: Vec<String> = data
            .calls
            .iter()
            .filter(|c| c.receipt.as_ref().is_some_and(|r| r.file.is_some()))
            .map(|c| c.call_id.clone())
            .collect();
        let cosigned = gavel::receipt::read_cosigned(store.path(), &store.identity().log_id)?;
        gavel::receipt::write_all(store, &ids, &cosigned, dir)?;
    }
    store.check_unchanged()?;
    let page = report::render(&data)?;
    // The page holds what the record holds: it is no more readable than
    // the database it came from (0600 for a local log, as gavel makes it).
    let mode = std::fs::metadata(store.path())
        .map(|m| m.permissions().mode() & 0o666)
        .unwrap_or(0o600);
    write_with_mode(path, page.as_bytes(), mode)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    let mut note = format!(
        "wrote {} ({} calls, {} bytes)",
        path.display(),
        data.stats.calls,
        page.len()
    );
    let problem = (!data.verify.ok).then(|| {
        format!(
            "{}{}",
            data.problem.unwrap_or("unknown"),
            data.verify
                .first_bad_seq
                .map(|seq| format!(" at seq {seq}"))
                .unwrap_or_default()
        )
    });
    if let Some(problem) = &problem {
        note.push_str(&format!("; the log does not verify: {problem}"));
    }
    writeln!(std::io::stderr(), "gavel: {}", render::escape(&note))?;
    Ok(Page {
        calls: data.stats.calls,
        verified: data.verify.ok,
        problem,
        entry: None,
    })
}
