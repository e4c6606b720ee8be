//! The reading commands on a central store (`--db postgres://…`): opening
//! it, and running the commands whose logic is local (`show`, `explain`,
//! `replay`, `export`, `report`) on in-memory copies of its logs.

use std::io::IsTerminal;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};

use gavel::checkpoint::VerifierKey;

use gavel::central::Central;
use gavel::central::query::{self, LogRef};
use gavel::store::Store;

use super::query::{QueryArgs, SchemaArg};
use super::{Exit, Integrity, render};

/// The URL without its password, for messages.
pub fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// Connects to the central store at `url`, in the schema `--schema` names,
/// else the URL's `search_path`, else `public` (as `gavel central …` does).
pub fn connect(url: &str, schema: &SchemaArg) -> anyhow::Result<Central> {
    Central::open(url, schema.schema.as_deref())
        .with_context(|| format!("cannot read the central store `{}`", redacted(url)))
}

/// Connects, and finds the log `--log` names (if it names one).
pub fn open(url: &str, args: &QueryArgs) -> anyhow::Result<(Central, Option<LogRef>)> {
    let mut central = connect(url, &args.schema)?;
    let log = args
        .log
        .as_deref()
        .map(|selector| query::resolve_log(central.client(), selector))
        .transpose()?;
    Ok((central, log))
}

/// The bounded check of what a reading command reads (unless
/// `--no-verify`): the newest rows of the log `--log` names, else of every
/// log of the enrolled host `--host` names, else of every log; one
/// [`Integrity`] per log that does not pass, naming its host, origin and
/// first bad seq.
pub fn check(
    client: &mut impl postgres::GenericClient,
    args: &QueryArgs,
    log: Option<&LogRef>,
) -> anyhow::Result<Vec<Integrity>> {
    if args.read.no_verify {
        return Ok(Vec::new());
    }
    let logs = match log {
        Some(log) => vec![log.clone()],
        None => {
            let all = query::logs(client, None)?;
            match &args.host {
                Some(host) if all.iter().any(|l| l.host == *host) => {
                    all.into_iter().filter(|l| l.host == *host).collect()
                }
                _ => all,
            }
        }
    };
    Ok(integrities(gavel::central::verify::check_recent(
        client, &logs,
    )?))
}

/// What [`gavel::central::verify::check_recent`] found, as reading commands show it.
pub fn integrities(broken: Vec<gavel::central::verify::RecentBreak>) -> Vec<Integrity> {
    broken
        .into_iter()
        .map(|b| Integrity {
            text: format!(
                "log {} of host `{}` does not verify: {} at seq {}: {}",
                b.origin, b.host, b.problem, b.first_bad_seq, b.detail
            ),
            log: Some(b.origin),
            first_bad_seq: Some(b.first_bad_seq),
        })
        .collect()
}

/// The logs a command that runs on copies runs over, and the query to run
/// on each: the one log `--log` names, else every log of the enrolled host
/// `--host` names (the filter is then met by the whole log), else every
/// log (`--host` then filters the recorded host name or id, as locally).
pub fn logs(
    client: &mut impl postgres::GenericClient,
    args: &QueryArgs,
) -> anyhow::Result<(Vec<LogRef>, gavel::store::AuditQuery)> {
    let mut query = args.to_query()?;
    let mut logs = match &args.log {
        Some(selector) => vec![query::resolve_log(client, selector)?],
        None => query::logs(client, None)?,
    };
    if let Some(host) = &args.host
        && logs.iter().any(|l| l.host == *host)
    {
        logs.retain(|l| l.host == *host);
        query.host = None;
    }
    Ok((logs, query))
}

/// For `show` and `explain`: an in-memory copy of the events of call
/// `call_id` from the one log that holds it (`--log` when several do), and
/// unless `no_verify`, what the bounded check of that log's newest rows
/// found wrong (read in the same snapshot).
pub fn call_store(
    url: &str,
    schema: &SchemaArg,
    call_id: &str,
    log: Option<&str>,
    no_verify: bool,
) -> anyhow::Result<(Store, LogRef, Option<Integrity>)> {
    let mut central = connect(url, schema)?;
    let mut snapshot = query::snapshot(central.client())?;
    let log = log
        .map(|selector| query::resolve_log(&mut snapshot, selector))
        .transpose()?;
    let log = query::logs_of_call(&mut snapshot, call_id, log.as_ref())?;
    let store = query::mirror(&mut snapshot, &log, Some(call_id))?;
    let integrity = if no_verify {
        None
    } else {
        integrities(gavel::central::verify::check_recent(
            &mut snapshot,
            std::slice::from_ref(&log),
        )?)
        .into_iter()
        .next()
    };
    Ok((store, log, integrity))
}

/// `gavel verify --db postgres://…`: every log, checkpoint, cosignature and
/// the central log; exit 0 intact, 1 tampered, 2 could not verify.
pub fn verify(url: &str, args: &super::verify::VerifyArgs) -> anyhow::Result<Exit> {
    if args.checkpoint.is_some() {
        anyhow::bail!(
            "--checkpoint checks a local log; a central store's checkpoints are all checked"
        );
    }
    let keys: Vec<VerifierKey> = args
        .public_key
        .iter()
        .map(|path| gavel::checkpoint::read_verifier_key(path))
        .collect::<Result<_, _>>()?;
    let mut central = connect(url, &args.schema)?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new_spinner().with_message("verifying");
        if let Ok(style) = ProgressStyle::with_template("{msg} {spinner} {pos} events") {
            bar.set_style(style);
        }
        bar
    });
    let mut snapshot = query::snapshot(central.client())?;
    let report = gavel::central::verify::verify(&mut snapshot, &keys, &mut |n| {
        if let Some(bar) = &bar {
            bar.set_position(n);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if args.format.is_json() {
        render::json(&serde_json::to_value(&report)?)?;
    } else if report.ok {
        render::line(&format!(
            "ok: {} logs, {} events, chains intact{}; {} host checkpoints signed by their enrolled hosts and cosigned; central log of {} leaves intact, {} central checkpoints ({})",
            report.logs,
            report.events,
            if report.cut_logs > 0 {
                format!(" ({} from their retention cut)", report.cut_logs)
            } else {
                String::new()
            },
            report.checkpoints,
            report.central_log,
            report.central_checkpoints,
            if report.central_key_given {
                "central key verified"
            } else {
                "central key NOT checked against one you hold: no --public-key"
            }
        ))?;
    } else {
        let mut place = Vec::new();
        if let Some(origin) = &report.origin {
            place.push(format!("log {origin}"));
        }
        if let Some(host) = &report.host {
            place.push(format!("of host `{host}`"));
        }
        if let Some(seq) = report.first_bad_seq {
            place.push(format!("at seq {seq}"));
        }
        render::line(&render::escape(&format!(
            "TAMPERED: {} in {}: {}",
            report.problem.as_deref().unwrap_or("unknown"),
            place.join(" "),
            report.detail.as_deref().unwrap_or("")
        )))?;
    }
    Ok(if report.ok { Exit::Ok } else { Exit::Failed })
}

/// `gavel replay --db postgres://…`: every selected log, copied into memory
/// and replayed under the current policy; the drift per enrolled host and
/// log. Unless `--skip-verify`, the whole central store is verified first.
pub fn replay(
    url: &str,
    global: &super::Global,
    args: &super::replay::ReplayArgs,
) -> anyhow::Result<Exit> {
    use gavel::replay::{FactSource, Kept};
    let mut central = connect(url, &args.query.schema)?;
    // What is verified is what is replayed: one snapshot for both.
    let mut snapshot = query::snapshot(central.client())?;
    if !args.skip_verify {
        let report = gavel::central::verify::verify(&mut snapshot, &[], &mut |_| {})?;
        if !report.ok {
            anyhow::bail!(
                "refusing to replay: the central store does not verify ({} in {} of host `{}` at seq {}); --skip-verify replays anyway",
                report.problem.as_deref().unwrap_or("unknown"),
                report.origin.as_deref().unwrap_or("?"),
                report.host.as_deref().unwrap_or("?"),
                report.first_bad_seq.unwrap_or(0)
            );
        }
    }
    let (logs, query) = logs(&mut snapshot, &args.query)?;
    let workspace = global.workspace()?;
    let policy = global.policy(&workspace)?;
    let source = if args.live {
        FactSource::Live
    } else {
        FactSource::Recorded
    };
    let kept = if args.format.is_json() && !args.calls {
        Kept::All
    } else {
        Kept::Examples
    };
    let mut failing = 0u64;
    let mut out = Vec::new();
    for log in &logs {
        let store = query::mirror(&mut snapshot, log, None)?;
        let mut changes = Vec::new();
        let mut on_change = |change: &gavel::replay::ChangedCall| -> anyhow::Result<()> {
            if args.calls {
                let mut value = serde_json::to_value(change)?;
                if let Some(object) = value.as_object_mut() {
                    object.insert(
                        "central".into(),
                        serde_json::json!({ "host": log.host, "log": log.origin }),
                    );
                }
                render::json(&value)?;
            } else if kept == Kept::All {
                changes.push(change.clone());
            }
            Ok(())
        };
        let report = match &args.shadow {
            Some(name) => gavel::replay::shadow_calls(
                &store,
                &query,
                name,
                kept,
                &mut |_| {},
                &mut on_change,
            )?,
            None => gavel::replay::replay_calls(
                &store,
                &query,
                &policy,
                source,
                kept,
                &mut |_| {},
                &mut on_change,
            )?,
        };
        failing += super::replay::failing(&report, args.fail_on, args.allow_undecidable);
        if args.calls {
            eprintln!(
                "gavel: host `{}`, log {}: replayed {} calls: unchanged {}, changed {} (loosened {}, tightened {}, rerouted {})",
                log.host,
                log.origin,
                report.total,
                report.unchanged,
                report.changed,
                report.loosened,
                report.tightened,
                report.rerouted
            );
        } else if args.format.is_json() {
            let mut value = serde_json::to_value(&report)?;
            if let Some(object) = value.as_object_mut() {
                object.insert("host".into(), log.host.clone().into());
                object.insert("log".into(), log.origin.clone().into());
                object.insert("calls".into(), serde_json::to_value(&changes)?);
            }
            out.push(value);
        } else {
            render::line(&render::escape(&format!(
                "== host `{}`, log {}",
                log.host, log.origin
            )))?;
            super::replay::print_table(&report, args.skip_verify)?;
        }
    }
    if args.format.is_json() && !args.calls {
        render::json(&serde_json::json!({
            "verified": !args.skip_verify,
            "logs": out,
        }))?;
    } else if logs.is_empty() && !args.calls {
        render::line("no logs match")?;
    }
    Ok(if failing > 0 { Exit::Failed } else { Exit::Ok })
}

/// `gavel export --db postgres://…`: each selected log in turn, copied into
/// memory and exported as locally (JSON lines: one archive per log, each
/// with its own header; CSV: one header, every log's rows).
pub fn export(url: &str, args: &super::export::ExportArgs) -> anyhow::Result<Exit> {
    let mut central = connect(url, &args.query.schema)?;
    let mut snapshot = query::snapshot(central.client())?;
    let (logs, query) = logs(&mut snapshot, &args.query)?;
    for (i, log) in logs.iter().enumerate() {
        let store = query::mirror(&mut snapshot, log, None)?;
        super::export::run_on(&store, args, &query, i == 0)?;
    }
    Ok(Exit::Ok)
}

/// One log's copy for `report`: the store, the query to run on it, the
/// log, the label its page names the store by, and how many logs there are.
pub type ReportLog<'a> =
    dyn FnMut(Store, &gavel::store::AuditQuery, &LogRef, String, usize) -> anyhow::Result<()> + 'a;

/// `gavel report --db postgres://…`: every selected log (the one `--log`
/// names, every log of the enrolled `--host`, else all), copied into
/// memory in turn from one snapshot and handed to `each`.
pub fn report_logs(url: &str, args: &QueryArgs, each: &mut ReportLog<'_>) -> anyhow::Result<()> {
    let mut central = connect(url, &args.schema)?;
    let mut snapshot = query::snapshot(central.client())?;
    let (logs, query) = logs(&mut snapshot, args)?;
    if logs.is_empty() {
        anyhow::bail!("no log of the central store matches");
    }
    for log in &logs {
        let store = query::mirror(&mut snapshot, log, None)?;
        let label = format!("{} (host {}, log {})", redacted(url), log.host, log.origin);
        each(store, &query, log, label, logs.len())?;
    }
    Ok(())
}

/// The logs `--log` (one) or `--host` (every log of that enrolled host)
/// select, else every log; an error when a selector matches nothing.
fn select_logs(
    client: &mut impl postgres::GenericClient,
    log: Option<&str>,
    host: Option<&str>,
) -> anyhow::Result<Vec<LogRef>> {
    let mut logs = match log {
        Some(selector) => vec![query::resolve_log(client, selector)?],
        None => query::logs(client, None)?,
    };
    if let Some(host) = host {
        logs.retain(|l| l.host == host);
        if logs.is_empty() {
            anyhow::bail!(
                "no log of the central store is of the enrolled host `{}`",
                render::escape(host)
            );
        }
    }
    Ok(logs)
}

/// `gavel audit --db postgres://…`: every selected log (`--log`, the
/// enrolled `--host`'s, else all), copied into memory from one snapshot,
/// its chain verified in full and its anomalies listed, each told by host
/// and log; exit 1 when any chain does not verify, else 4 when there are
/// anomalies.
pub fn audit(url: &str, args: &super::audit::AuditArgs) -> anyhow::Result<Exit> {
    use super::audit::{FromLog, audit_store, print};
    let mut central = connect(url, &args.schema)?;
    let mut snapshot = query::snapshot(central.client())?;
    let logs = select_logs(&mut snapshot, args.log.as_deref(), args.host.as_deref())?;
    let mut audited = Vec::with_capacity(logs.len());
    for log in &logs {
        let store = query::mirror(&mut snapshot, log, None)?;
        audited.push(audit_store(&store, args)?);
    }
    let named: Vec<(Option<FromLog<'_>>, super::audit::Audited)> = logs
        .iter()
        .zip(audited)
        .map(|(log, audited)| {
            (
                Some(FromLog {
                    host: &log.host,
                    log: &log.origin,
                }),
                audited,
            )
        })
        .collect();
    print(args, true, &named)
}
