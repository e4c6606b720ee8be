//! `gavel push`: ship this host's audit log to the team's central store,
//! or (`--otlp URL`) its calls as OpenTelemetry traces to an OTLP/HTTP
//! endpoint (protobuf), each completed call once.
//!
//! What was sent over OTLP is remembered beside the database
//! (`DB.otlp-<tag>`): the seq through which every call that completed was
//! sent, written after the endpoint accepted a batch. A push starts after
//! it, so nothing is sent twice; a push that dies between the endpoint's
//! answer and that write sends the batch again, with the same trace and
//! span ids (derived from the log and the call), which a collector takes
//! as the same spans. A call is sent once its result is recorded, or, with
//! none after `--incomplete-after` (an agent killed mid-call, an ask nobody
//! answered), as an incomplete span; its result, if it comes later, is then
//! sent as a `gavel.late_result` child span, never as the call's span again.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use serde_json::json;

use gavel::central::push::{self, Pushed};
use gavel::checkpoint;
use gavel::otlp::{Due, PushState, Sent, state_path, to_protobuf};

use super::{Exit, FormatArgs, Global, render};

#[derive(Args, Debug)]
pub struct PushArgs {
    /// The central store, as the host's role: postgres://ROLE@HOST/DB (what `gavel central enroll` printed)
    #[arg(
        long,
        value_name = "URL",
        env = "GAVEL_PUSH_URL",
        required_unless_present = "otlp"
    )]
    pub to: Option<String>,
    /// This host's checkpoint signing key (from `gavel keygen`; its .pub was enrolled)
    #[arg(
        long,
        value_name = "KEY",
        env = "GAVEL_PUSH_KEY",
        required_unless_present = "otlp"
    )]
    pub key: Option<PathBuf>,
    /// Send the calls as OpenTelemetry traces to this OTLP/HTTP endpoint instead
    /// (…/v1/traces is added unless given): each completed call once, resuming where the
    /// last push stopped
    #[arg(long, value_name = "URL", conflicts_with = "to")]
    pub otlp: Option<String>,
    /// A header for the OTLP endpoint, e.g. `Authorization=Bearer …` (repeatable)
    #[arg(long, value_name = "NAME=VALUE", requires = "otlp")]
    pub otlp_header: Vec<String>,
    /// With --otlp: a call with no result SECONDS after its request (an agent killed
    /// mid-call, an ask nobody answered) is sent as an incomplete span, once; its result,
    /// if it comes, follows as a `gavel.late_result` child span
    #[arg(long, value_name = "SECONDS", default_value_t = 600, requires = "otlp")]
    pub incomplete_after: u64,
    /// Keep pushing every SECONDS until interrupted (errors are reported and retried)
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub every: Option<u64>,
    /// The central store's verifier key (central.key.pub); cosignatures must verify with it
    /// before they are kept in DB.cosigned [default: the key the central store states]
    #[arg(long, value_name = "KEY.pub", env = "GAVEL_CENTRAL_PUB")]
    pub central_key: Option<PathBuf>,
    /// Wait up to SECONDS for the central store to accept (exit 0) or refuse (exit 1) the push
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<u64>,
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn run(global: &Global, args: PushArgs) -> anyhow::Result<Exit> {
    if let Some(url) = &args.otlp {
        let grace = Duration::from_secs(args.incomplete_after);
        return otlp(
            global,
            url,
            &args.otlp_header,
            args.every,
            grace,
            &args.format,
        );
    }
    let (Some(_), Some(key)) = (&args.to, &args.key) else {
        anyhow::bail!("push needs --to and --key (or --otlp URL)");
    };
    let key = checkpoint::read_signing_key(key)?;
    let central = args
        .central_key
        .as_deref()
        .map(checkpoint::read_verifier_key)
        .transpose()?;
    let path = global.db_path()?;
    if !path.exists() {
        anyhow::bail!("no audit database at `{}`: nothing to push", path.display());
    }
    let Some(every) = args.every else {
        return once(global, &args, &key, central.as_ref());
    };
    loop {
        if let Err(err) = once(global, &args, &key, central.as_ref()) {
            eprintln!("gavel: push failed: {}", one_line(&err));
        }
        std::thread::sleep(Duration::from_secs(every));
    }
}

fn one_line(err: &anyhow::Error) -> String {
    err.chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
        .replace('\n', " ")
}

fn once(
    global: &Global,
    args: &PushArgs,
    key: &checkpoint::SigningKey,
    central: Option<&checkpoint::VerifierKey>,
) -> anyhow::Result<Exit> {
    let mut store = global.open_store()?;
    let to = args.to.as_deref().unwrap_or_default();
    let (mut client, _) = gavel::central::open_client(to)?;
    let mut pushed =
        push::push_with(&mut store, &mut client, key, central).context("push failed")?;
    let mut exit = Exit::Ok;
    let mut outcome = serde_json::Value::Null;
    let log = gavel::digest::hex(&pushed.log_id);
    let short = &log[..log.len().min(12)];
    if pushed.diverged {
        // Sent whole for the central side to name the first differing row;
        // it refuses a rewritten or truncated log on every push.
        exit = Exit::Failed;
        eprintln!(
            "gavel: the local log {short} diverges from what the central store holds: {}; all of it was sent for the central side to name the first row that differs (`gavel push --wait` shows its refusal)",
            if pushed.local_size < pushed.acked {
                format!(
                    "it has {} rows, the central store accepted {}",
                    pushed.local_size, pushed.acked
                )
            } else {
                format!(
                    "its row at seq {} no longer has the chain value the central store accepted",
                    pushed.acked
                )
            }
        );
    }
    // Everything not accepted yet is waited for, whether sent now or by an
    // earlier push (still in the inbox).
    if let Some(seconds) = args.wait
        && (pushed.acked < pushed.local_size || pushed.diverged)
    {
        let target = pushed.checkpoint.unwrap_or(pushed.local_size);
        let deadline = Instant::now() + Duration::from_secs(seconds);
        match push::wait_for(
            &mut client,
            &pushed.log_id,
            target,
            pushed.refusals_before,
            pushed.diverged,
            deadline,
        )? {
            Ok(head) => {
                let inbox = push::find_inbox(&mut client)?;
                let central = match central {
                    Some(k) => k.clone(),
                    None => push::read_central_verifier(&mut client, &inbox)?,
                };
                pushed.cosigned += push::keep_cosignatures(
                    &mut client,
                    &inbox,
                    store.path(),
                    &pushed.log_id,
                    &key.verifier(),
                    &central,
                )?;
                outcome = json!({"accepted": head.size});
            }
            Err(refusal) => {
                exit = Exit::Failed;
                eprintln!(
                    "gavel: the central store refused the push of log {short}: {}",
                    render::escape(&refusal.to_string())
                );
                outcome = json!({
                    "refused": refusal.problem,
                    "detail": refusal.detail,
                    "first_seq": refusal.first_seq,
                });
            }
        }
    }
    if let (None, Some(refusal)) = (args.wait, &pushed.standing) {
        eprintln!(
            "gavel: warning: the central store refused an earlier push of log {short} and has accepted nothing of it since: {}",
            render::escape(&refusal.to_string())
        );
    }
    report(args, &pushed, &outcome)?;
    Ok(exit)
}

fn report(args: &PushArgs, pushed: &Pushed, outcome: &serde_json::Value) -> anyhow::Result<()> {
    let log = gavel::digest::hex(&pushed.log_id);
    if args.format.is_json() {
        render::json(&json!({
            "host": pushed.host,
            "log_id": log,
            "local_size": pushed.local_size,
            "acked": pushed.acked,
            "sent": pushed.sent,
            "first_sent": (pushed.sent > 0).then_some(pushed.first_sent),
            "checkpoint": pushed.checkpoint,
            "signed": pushed.signed,
            "diverged": pushed.diverged,
            "cosigned": pushed.cosigned,
            "standing_refusal": pushed.standing.as_ref().map(|r| json!({
                "problem": r.problem,
                "detail": r.detail,
                "first_seq": r.first_seq,
            })),
            "outcome": outcome,
        }))?;
        return Ok(());
    }
    let short = &log[..log.len().min(12)];
    let mut text = if pushed.sent == 0
        && pushed.checkpoint.is_none()
        && !pushed.diverged
        && pushed.acked < pushed.local_size
    {
        format!(
            "nothing new to send: log {short} of host `{}` has {} rows, the central store accepted {}; the rest waits in the inbox from an earlier push",
            pushed.host, pushed.local_size, pushed.acked
        )
    } else if pushed.sent == 0 && pushed.checkpoint.is_none() {
        format!(
            "nothing new to push: log {short} of host `{}` has {} rows, the central store accepted {}",
            pushed.host, pushed.local_size, pushed.acked
        )
    } else {
        format!(
            "pushed {} rows{} of log {short} to host `{}`'s inbox{}; the central store had accepted {}",
            pushed.sent,
            if pushed.sent > 0 {
                format!(
                    " (seq {}..{})",
                    pushed.first_sent,
                    pushed.first_sent + pushed.sent - 1
                )
            } else {
                String::new()
            },
            pushed.host,
            match pushed.checkpoint {
                Some(size) if pushed.signed => format!(" with a new checkpoint at size {size}"),
                Some(size) => format!(" with the checkpoint at size {size}"),
                None => String::new(),
            },
            pushed.acked
        )
    };
    if pushed.diverged {
        text.push_str(
            "; this log no longer holds what the central store accepted, so all of it was sent for the central side to compare",
        );
    }
    if pushed.cosigned > 0 {
        text.push_str("; kept a new cosignature");
    }
    if let Some(size) = outcome.get("accepted") {
        text.push_str(&format!("; accepted: the central store holds {size} rows"));
    }
    if let Some(problem) = outcome.get("refused").and_then(|p| p.as_str()) {
        text.push_str(&format!(
            "; REFUSED ({problem}): {}",
            outcome
                .get("detail")
                .and_then(|d| d.as_str())
                .unwrap_or_default()
        ));
    }
    render::line(&text)?;
    Ok(())
}

/// Spans per request.
const OTLP_BATCH: usize = 512;

/// `--otlp URL`: resolve the endpoint and the headers, then push once or
/// every `every` seconds.
fn otlp(
    global: &Global,
    url: &str,
    headers: &[String],
    every: Option<u64>,
    grace: Duration,
    format: &FormatArgs,
) -> anyhow::Result<Exit> {
    let endpoint = if url.trim_end_matches('/').ends_with("/v1/traces") {
        url.to_owned()
    } else {
        format!("{}/v1/traces", url.trim_end_matches('/'))
    };
    let headers = headers
        .iter()
        .map(|h| {
            h.split_once('=')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .ok_or_else(|| anyhow::anyhow!("--otlp-header `{h}` is not NAME=VALUE"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let Some(every) = every else {
        return otlp_once(global, &endpoint, &headers, grace, format);
    };
    loop {
        if let Err(err) = otlp_once(global, &endpoint, &headers, grace, format) {
            eprintln!("gavel: push failed: {}", super::one_line(&err));
        }
        std::thread::sleep(Duration::from_secs(every));
    }
}

fn otlp_once(
    global: &Global,
    endpoint: &str,
    headers: &[(String, String)],
    grace: Duration,
    format: &FormatArgs,
) -> anyhow::Result<Exit> {
    let db = global.db_path()?;
    if !db.exists() {
        anyhow::bail!("no audit database at `{}`: nothing to push", db.display());
    }
    let store = global.read_store()?;
    let state_file = state_path(&db, endpoint);
    let mut state = PushState::read(&state_file)
        .with_context(|| format!("cannot read `{}`", state_file.display()))?;
    let now_ns = u64::try_from(chrono::Utc::now().timestamp_micros())
        .unwrap_or(0)
        .saturating_mul(1000);
    let cutoff_ns = now_ns.saturating_sub(u64::try_from(grace.as_nanos()).unwrap_or(u64::MAX));
    let mut due = Due::new(&state, cutoff_ns);
    store.for_each_event(|event| -> anyhow::Result<()> {
        due.push(&event);
        Ok(())
    })?;
    let due = due.finish();
    store.check_unchanged()?;
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .http_status_as_error(false)
            .build(),
    );
    let mut sent = 0usize;
    let mut incomplete = 0usize;
    let mut late = 0usize;
    for batch in due.chunks(OTLP_BATCH) {
        let mut request = agent
            .post(endpoint)
            .header("Content-Type", "application/x-protobuf");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = request
            .send(&to_protobuf(batch)[..])
            .map_err(|e| anyhow::anyhow!("cannot reach `{endpoint}`: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            anyhow::bail!(
                "`{endpoint}` answered {status} after {sent} spans were sent; the rest are sent at the next push"
            );
        }
        state.sent(batch);
        state
            .write(&state_file, endpoint)
            .with_context(|| format!("cannot write `{}`", state_file.display()))?;
        sent += batch.len();
        incomplete += batch.iter().filter(|s| s.sent == Sent::Incomplete).count();
        late += batch.iter().filter(|s| s.sent == Sent::LateResult).count();
    }
    let through = state.sent_through;
    if format.is_json() {
        render::json(&json!({
            "endpoint": endpoint,
            "sent": sent,
            "incomplete": incomplete,
            "late_results": late,
            "through": through,
            "open": state.incomplete.len(),
        }))?;
    } else {
        render::line(&format!(
            "pushed {sent} span(s) to {endpoint} ({incomplete} incomplete, {late} late result(s)); every call completed through seq {through} has been sent"
        ))?;
    }
    Ok(Exit::Ok)
}
