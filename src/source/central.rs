//! The central store as a read source: finding the logs a reader selects,
//! the bounded check of their newest rows, and in-memory copies of them
//! (from one snapshot) for what runs on one log.

use postgres::Transaction;

use crate::central::Central;
use crate::central::query::{self, LogRef};
use crate::central::verify::{CentralReport, RecentBreak};
use crate::checkpoint::VerifierKey;
use crate::store::{AuditQuery, Listed, Stats, Store};

use super::{CentralLog, Integrity, Log, RowFrom, Selection, SourceError};

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

impl From<LogRef> for CentralLog {
    fn from(log: LogRef) -> Self {
        CentralLog {
            log_id: log.log_id,
            host: log.host,
            origin: log.origin,
        }
    }
}

/// An open connection to a central store.
pub(super) struct CentralSource {
    pub url: String,
    central: Central,
}

/// What [`crate::central::verify::check_recent`] found, as readers tell it.
fn integrities(broken: Vec<RecentBreak>) -> Vec<Integrity> {
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

impl CentralSource {
    /// Connects to the central store at `url`, in `schema`, else the URL's
    /// `search_path`, else `public` (as `gavel central …` does).
    pub fn open(url: String, schema: Option<&str>) -> Result<Self, SourceError> {
        let central = Central::open(&url, schema).map_err(|source| SourceError::Connect {
            url: redacted(&url),
            source,
        })?;
        Ok(CentralSource { url, central })
    }

    /// The log `--log` names, if it names one.
    fn named_log(&mut self, selection: &Selection) -> Result<Option<LogRef>, SourceError> {
        Ok(selection
            .log
            .as_deref()
            .map(|selector| query::resolve_log(self.central.client(), selector))
            .transpose()?)
    }

    /// The newest rows of the log `--log` names, else of every log of the
    /// enrolled host named, else of every log.
    pub fn check(&mut self, selection: &Selection) -> Result<Vec<Integrity>, SourceError> {
        let logs = match self.named_log(selection)? {
            Some(log) => vec![log],
            None => {
                let all = query::logs(self.central.client(), None)?;
                match &selection.host {
                    Some(host) if all.iter().any(|l| l.host == *host) => {
                        all.into_iter().filter(|l| l.host == *host).collect()
                    }
                    _ => all,
                }
            }
        };
        Ok(integrities(crate::central::verify::check_recent(
            self.central.client(),
            &logs,
        )?))
    }

    pub fn for_each_listed<E: From<SourceError>>(
        &mut self,
        selection: &Selection,
        query: &AuditQuery,
        events: bool,
        mut each: impl FnMut(Option<RowFrom>, Listed) -> Result<(), E>,
    ) -> Result<(), E> {
        let log = self.named_log(selection)?;
        query::for_each_listed(
            self.central.client(),
            query,
            log.as_ref(),
            events,
            |at, listed| {
                let from = RowFrom {
                    host: at.host,
                    log: at.origin,
                    seq: at.seq,
                };
                each(Some(from), listed).map_err(Caller)
            },
        )
        .map_err(|caller| caller.0)
    }

    pub fn stats(
        &mut self,
        selection: &Selection,
        query: &AuditQuery,
    ) -> Result<Stats, SourceError> {
        let log = self.named_log(selection)?;
        Ok(query::stats(self.central.client(), query, log.as_ref())?)
    }

    /// A copy of the events of call `call_id` from the one log that holds
    /// it, and with `check`, what the bounded check of that log found
    /// (read in the same snapshot).
    pub fn call(
        &mut self,
        selection: &Selection,
        call_id: &str,
        check: bool,
    ) -> Result<(Store, CentralLog, Option<Integrity>), SourceError> {
        let mut snapshot = query::snapshot(self.central.client())?;
        let log = selection
            .log
            .as_deref()
            .map(|selector| query::resolve_log(&mut snapshot, selector))
            .transpose()?;
        let log = query::logs_of_call(&mut snapshot, call_id, log.as_ref())?;
        let store = query::mirror(&mut snapshot, &log, Some(call_id))?;
        let integrity = if check {
            integrities(crate::central::verify::check_recent(
                &mut snapshot,
                std::slice::from_ref(&log),
            )?)
            .into_iter()
            .next()
        } else {
            None
        };
        Ok((store, log.into(), integrity))
    }

    pub fn snapshot(&mut self) -> Result<Snapshot<'_>, SourceError> {
        Ok(Snapshot {
            url: &self.url,
            tx: query::snapshot(self.central.client())?,
        })
    }
}

/// A caller's error carried through a scan that wants `From<ReadError>`.
struct Caller<E>(E);

impl<E: From<SourceError>> From<query::ReadError> for Caller<E> {
    fn from(err: query::ReadError) -> Self {
        Caller(E::from(SourceError::from(err)))
    }
}

/// One read-only snapshot of the central store.
pub(super) struct Snapshot<'a> {
    url: &'a str,
    tx: Transaction<'a>,
}

impl Snapshot<'_> {
    pub fn verify(
        &mut self,
        keys: &[VerifierKey],
        progress: &mut dyn FnMut(u64),
    ) -> Result<CentralReport, SourceError> {
        Ok(crate::central::verify::verify(
            &mut self.tx,
            keys,
            progress,
        )?)
    }

    /// The logs `selection` picks, and the query to run on each.
    fn logs(
        &mut self,
        selection: &Selection,
        query: &AuditQuery,
    ) -> Result<(Vec<LogRef>, AuditQuery), SourceError> {
        let mut query = query.clone();
        let mut logs = match &selection.log {
            Some(selector) => vec![query::resolve_log(&mut self.tx, selector)?],
            None => query::logs(&mut self.tx, None)?,
        };
        if let Some(host) = &selection.host {
            if selection.enrolled {
                logs.retain(|l| l.host == *host);
                if logs.is_empty() {
                    return Err(SourceError::NoLogOfHost { host: host.clone() });
                }
            } else if logs.iter().any(|l| l.host == *host) {
                logs.retain(|l| l.host == *host);
                query.host = None;
            }
        }
        Ok((logs, query))
    }

    pub fn for_each_log<E: From<SourceError>>(
        &mut self,
        selection: &Selection,
        query: &AuditQuery,
        mut each: impl FnMut(Log<'_>) -> Result<(), E>,
    ) -> Result<usize, E> {
        let (logs, query) = self.logs(selection, query)?;
        for (index, log) in logs.iter().enumerate() {
            let store = query::mirror(&mut self.tx, log, None).map_err(SourceError::from)?;
            let from = CentralLog::from(log.clone());
            each(Log {
                store: &store,
                from: Some(&from),
                query: &query,
                index,
                count: logs.len(),
                label: format!(
                    "{} (host {}, log {})",
                    redacted(self.url),
                    log.host,
                    log.origin
                ),
            })?;
        }
        Ok(logs.len())
    }
}
