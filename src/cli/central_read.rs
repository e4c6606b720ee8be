//! The reading commands on a central store (`--db postgres://…`): opening
//! it, and running the commands whose logic is local (`show`, `explain`,
//! `replay`, `export`, `report`) on in-memory copies of its logs.

use anyhow::Context;

use gavel::central::Central;
use gavel::central::query::{self, LogRef};
use gavel::store::Store;

use super::query::QueryArgs;

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

/// Connects to the central store at `url` (in the schema its `search_path` names).
pub fn connect(url: &str) -> anyhow::Result<Central> {
    Central::open(url, None)
        .with_context(|| format!("cannot read the central store `{}`", redacted(url)))
}

/// Connects, and finds the log `--log` names (if it names one).
pub fn open(url: &str, args: &QueryArgs) -> anyhow::Result<(Central, Option<LogRef>)> {
    let mut central = connect(url)?;
    let log = args
        .log
        .as_deref()
        .map(|selector| query::resolve_log(central.client(), selector))
        .transpose()?;
    Ok((central, log))
}

/// The logs a command runs over: the one `--log` names, else every log of
/// the enrolled host `--host` names (when it names one), else every log.
pub fn logs(client: &mut postgres::Client, args: &QueryArgs) -> anyhow::Result<Vec<LogRef>> {
    if let Some(selector) = &args.log {
        return Ok(vec![query::resolve_log(client, selector)?]);
    }
    let enrolled = match &args.host {
        Some(host) => {
            let logs = query::logs(client, Some(host))?;
            if logs.is_empty() { None } else { Some(logs) }
        }
        None => None,
    };
    match enrolled {
        Some(logs) => Ok(logs),
        None => Ok(query::logs(client, None)?),
    }
}

/// For `show` and `explain`: an in-memory copy of the events of call
/// `call_id` from the one log that holds it (`--log` when several do).
pub fn call_store(url: &str, call_id: &str, log: Option<&str>) -> anyhow::Result<(Store, LogRef)> {
    let mut central = connect(url)?;
    let client = central.client();
    let log = log
        .map(|selector| query::resolve_log(client, selector))
        .transpose()?;
    let log = query::logs_of_call(client, call_id, log.as_ref())?;
    let store = query::mirror(client, &log, Some(call_id))?;
    Ok((store, log))
}
