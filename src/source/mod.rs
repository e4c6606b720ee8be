//! One read source for every reading command: a local audit log (SQLite,
//! opened read-only, or a JSON-lines export of one, read into memory) or a
//! team's central store (PostgreSQL, feature `postgres`), answering the
//! readers' questions the same way: the calls a query selects and their
//! counts, one call's events, a verification, and each selected log in
//! turn as a [`Store`] for what runs on one log (replay, export, report,
//! audit). Which it is, is decided once, by the [`Location`] it is opened at.
//!
//! It knows nothing of the command line, a terminal or how answers are
//! printed: it hands back stores, rows and reports.

mod audit;
#[cfg(feature = "postgres")]
mod central;

use std::path::PathBuf;

use crate::store::{
    AuditQuery, GivenCheckpoint, Listed, Problem, Stats, Store, StoreError, VerifyOptions,
    VerifyReport,
};

pub use audit::{Audited, audit};
#[cfg(feature = "postgres")]
pub use central::redacted;

/// Why a source could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[cfg(feature = "postgres")]
    #[error("cannot read the central store `{url}`")]
    Connect {
        /// The URL without its password.
        url: String,
        source: crate::central::CentralError,
    },
    #[cfg(feature = "postgres")]
    #[error(transparent)]
    Read(#[from] crate::central::query::ReadError),
    #[error("no log of the central store is of the enrolled host `{host}`")]
    NoLogOfHost { host: String },
    #[error("export `{path}`")]
    Export {
        path: String,
        source: crate::archive::ArchiveError,
    },
}

impl SourceError {
    /// The problem a verification reports when the log could not even be
    /// opened because its identity is missing, malformed or of an unknown
    /// format: the log is tampered, not unreadable.
    pub fn tampered(&self) -> Option<Problem> {
        match self {
            Self::Store(
                StoreError::IdentityMissing { .. } | StoreError::IdentityMalformed { .. },
            ) => Some(Problem::IdentityMismatch),
            Self::Store(StoreError::UnknownFormat { .. }) => Some(Problem::UnknownFormat),
            _ => None,
        }
    }
}

/// Where the record is: the only place that tells a local log from a central store.
#[derive(Debug, Clone)]
pub enum Location {
    /// A local SQLite audit log.
    Local(PathBuf),
    /// A JSON-lines export of a log (`gavel export`), read as the log it
    /// copies (in memory) and verified as `verify --export` verifies it.
    Export(PathBuf),
    /// A central store (`postgres://…`), in `schema` (else the URL's
    /// `search_path`, else `public`).
    #[cfg(feature = "postgres")]
    Central { url: String, schema: Option<String> },
}

impl Location {
    /// Whether this is a central store.
    pub fn is_central(&self) -> bool {
        !matches!(self, Self::Local(_) | Self::Export(_))
    }
}

/// Which logs of a central store are read (a local store is one log).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Only this log, by its id (hex) or a prefix of its origin.
    pub log: Option<String>,
    /// Only the logs of this enrolled host. Unless `enrolled` is set, a
    /// name no enrolled host has is left to the query (the host recorded
    /// in each row) instead.
    pub host: Option<String>,
    /// `host` must name an enrolled host with a log.
    pub enrolled: bool,
}

/// What the bounded check of a log's newest rows found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Integrity {
    /// The log it is about: `None` for a local log, a central log's origin.
    pub log: Option<String>,
    /// Rows from this seq on are not verified (`None`: the log as a whole,
    /// e.g. a checkpoint that does not match).
    pub first_bad_seq: Option<u64>,
    /// One line saying what broke.
    pub text: String,
}

impl Integrity {
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

    /// Whether `query` filters on recorded columns, which rows that do not
    /// verify could have had edited (an edited `action` hides a call from
    /// an `action` filter).
    pub fn filtered_by(query: &AuditQuery) -> bool {
        query.selects_calls_only()
            || query.reads_beyond_the_decision()
            || query.since.is_some()
            || query.until.is_some()
    }
}

/// The bounded check of a local log's recent rows.
pub fn check_local(store: &Store) -> Option<Integrity> {
    match store.check_recent() {
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
    }
}

/// One log of a central store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CentralLog {
    pub log_id: Vec<u8>,
    /// The enrolled host that pushed it.
    pub host: String,
    /// Its origin (`gavel/<hex log id>`).
    pub origin: String,
}

/// Where a listed row of a central store comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowFrom {
    /// The enrolled host that pushed it.
    pub host: String,
    /// Its log's origin.
    pub log: String,
    /// Its seq in that log.
    pub seq: u64,
}

/// What verifying a source found.
#[derive(Debug)]
pub enum Verified {
    /// A local log's report, and what its first event says when a hook
    /// started the log in the middle of a session (`session_id`, `client`).
    Local {
        report: VerifyReport,
        mid_session: Option<serde_json::Value>,
        /// Approved calls whose rule's approvers and quorum the record
        /// does not show met (checked when the chain is intact).
        short_of_quorum: Vec<crate::approvals::Shortfall>,
    },
    /// Every log, checkpoint and cosignature of a central store, and its central log.
    #[cfg(feature = "postgres")]
    Central(crate::central::verify::CentralReport),
}

impl Verified {
    /// Whether everything verified.
    pub fn ok(&self) -> bool {
        match self {
            Self::Local { report, .. } => report.ok,
            #[cfg(feature = "postgres")]
            Self::Central(report) => report.ok,
        }
    }
}

/// One log a reader runs on: the local store, or an in-memory copy of a
/// central store's log.
pub struct Log<'a> {
    pub store: &'a Store,
    /// The central log it is a copy of (`None`: the local log).
    pub from: Option<&'a CentralLog>,
    /// The query to run on it: the one asked, less a host filter that the
    /// choice of log already met.
    pub query: &'a AuditQuery,
    /// Its place among the logs read, from 0, and how many there are.
    pub index: usize,
    pub count: usize,
    /// How a page names where it comes from: a path, or the redacted URL
    /// with its host and log.
    pub label: String,
}

/// One call's log: the local store, or an in-memory copy of the call's
/// events from the one central log that holds it.
pub struct CallLog<'a> {
    store: StoreRef<'a>,
    /// The central log it comes from (`None`: the local log).
    pub from: Option<CentralLog>,
    /// What the bounded check of its log found wrong (not when unchecked).
    pub integrity: Option<Integrity>,
}

impl CallLog<'_> {
    pub fn store(&self) -> &Store {
        match &self.store {
            StoreRef::Borrowed(store) => store,
            StoreRef::Owned(store) => store,
        }
    }
}

enum StoreRef<'a> {
    Borrowed(&'a Store),
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Owned(Box<Store>),
}

/// A local log or a central store, open for reading.
pub struct Source {
    kind: Kind,
    /// The export a local log was read from, kept to verify what was read.
    export: Option<Export>,
    selection: Selection,
    /// Whether the bounded check of recent rows is made.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    check: bool,
}

/// An export read as a log: its path and bytes.
struct Export {
    path: PathBuf,
    bytes: Vec<u8>,
}

enum Kind {
    Local {
        store: Box<Store>,
        integrity: Option<Integrity>,
    },
    #[cfg(feature = "postgres")]
    Central(Box<central::CentralSource>),
}

impl Source {
    /// Opens `location` for reading the logs `selection` picks. With
    /// `check`, a local log's newest rows are checked on opening (see
    /// [`Source::opened`]) and a central store's by [`Source::integrity`].
    pub fn open(
        location: Location,
        selection: Selection,
        check: bool,
    ) -> Result<Source, SourceError> {
        let mut export = None;
        let kind = match location {
            Location::Export(path) => {
                let failed = |source| SourceError::Export {
                    path: path.display().to_string(),
                    source,
                };
                let bytes = std::fs::read(&path)
                    .map_err(|e| failed(crate::archive::ArchiveError::Io(e)))?;
                let read = crate::archive::read_export(&bytes[..]).map_err(failed)?;
                let store = Store::mirror(&read.identity, read.events, &read.checkpoints, &[])?;
                export = Some(Export { path, bytes });
                Kind::Local {
                    store: Box::new(store),
                    integrity: None,
                }
            }
            Location::Local(path) => {
                let store = Store::open_read_only(&path)?;
                let integrity = if check { check_local(&store) } else { None };
                Kind::Local {
                    store: Box::new(store),
                    integrity,
                }
            }
            #[cfg(feature = "postgres")]
            Location::Central { url, schema } => Kind::Central(Box::new(
                central::CentralSource::open(url, schema.as_deref())?,
            )),
        };
        Ok(Source {
            kind,
            export,
            selection,
            check,
        })
    }

    /// Whether this is a central store.
    pub fn is_central(&self) -> bool {
        !matches!(self.kind, Kind::Local { .. })
    }

    /// How to name it: the local log's path, or the URL without its password.
    pub fn label(&self) -> String {
        if let Some(export) = &self.export {
            return export.path.display().to_string();
        }
        match &self.kind {
            Kind::Local { store, .. } => store.path().display().to_string(),
            #[cfg(feature = "postgres")]
            Kind::Central(central) => redacted(&central.url),
        }
    }

    /// What the check made on opening a local log found wrong (a central
    /// store is checked per log by [`Source::integrity`]).
    pub fn opened(&self) -> Option<&Integrity> {
        match &self.kind {
            Kind::Local { integrity, .. } => integrity.as_ref(),
            #[cfg(feature = "postgres")]
            Kind::Central(_) => None,
        }
    }

    /// The bounded check of what a reader that reads rows in place reads:
    /// a local log's (made on opening), or the newest rows of the central
    /// log `--log` names, else of every log of the enrolled host named,
    /// else of every log; one [`Integrity`] per log that does not pass.
    pub fn integrity(&mut self) -> Result<Vec<Integrity>, SourceError> {
        match &mut self.kind {
            Kind::Local { integrity, .. } => Ok(integrity.iter().cloned().collect()),
            #[cfg(feature = "postgres")]
            Kind::Central(central) if self.check => central.check(&self.selection),
            #[cfg(feature = "postgres")]
            Kind::Central(_) => Ok(Vec::new()),
        }
    }

    /// Every call `query` selects (with `events`, the session events among
    /// them), oldest first unless the query says otherwise, each with
    /// where it comes from in a central store.
    pub fn for_each_listed<E: From<SourceError>>(
        &mut self,
        query: &AuditQuery,
        events: bool,
        mut each: impl FnMut(Option<RowFrom>, Listed) -> Result<(), E>,
    ) -> Result<(), E> {
        match &mut self.kind {
            Kind::Local { store, .. } => {
                store
                    .for_each_listed(query, events, |listed| each(None, listed).map_err(Wrapped))
                    .map_err(|wrapped| wrapped.0)?;
                store.check_unchanged().map_err(SourceError::from)?;
                Ok(())
            }
            #[cfg(feature = "postgres")]
            Kind::Central(central) => central.for_each_listed(&self.selection, query, events, each),
        }
    }

    /// Counts per rule, action, approval, status, tool and anomaly over the
    /// calls `query` selects.
    pub fn stats(&mut self, query: &AuditQuery) -> Result<Stats, SourceError> {
        match &mut self.kind {
            Kind::Local { store, .. } => {
                let stats = store.stats(query)?;
                store.check_unchanged()?;
                Ok(stats)
            }
            #[cfg(feature = "postgres")]
            Kind::Central(central) => central.stats(&self.selection, query),
        }
    }

    /// The log that holds call `call_id`: the local one, or a copy of the
    /// call's events from the one central log that holds it (the one
    /// `--log` names when several do), with what the bounded check of
    /// that log found (read in the same snapshot).
    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
    pub fn call(&mut self, call_id: &str) -> Result<CallLog<'_>, SourceError> {
        match &mut self.kind {
            Kind::Local { store, integrity } => Ok(CallLog {
                store: StoreRef::Borrowed(store),
                from: None,
                integrity: integrity.clone(),
            }),
            #[cfg(feature = "postgres")]
            Kind::Central(central) => {
                let (store, from, integrity) =
                    central.call(&self.selection, call_id, self.check)?;
                Ok(CallLog {
                    store: StoreRef::Owned(Box::new(store)),
                    from: Some(from),
                    integrity,
                })
            }
        }
    }

    /// One consistent view to read from: the local log, or one snapshot of
    /// the central store, so that what is verified is what is then read.
    pub fn reading(&mut self) -> Result<Reading<'_>, SourceError> {
        let view = match &mut self.kind {
            Kind::Local { store, .. } => View::Local(store),
            #[cfg(feature = "postgres")]
            Kind::Central(central) => View::Central(central.snapshot()?),
        };
        Ok(Reading {
            view,
            export: self.export.as_ref(),
            selection: &self.selection,
        })
    }
}

/// One consistent view of a source (see [`Source::reading`]).
pub struct Reading<'a> {
    view: View<'a>,
    export: Option<&'a Export>,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    selection: &'a Selection,
}

enum View<'a> {
    Local(&'a Store),
    #[cfg(feature = "postgres")]
    Central(central::Snapshot<'a>),
}

impl Reading<'_> {
    /// How many events a local log holds, for a progress bar; `None` for a
    /// central store.
    pub fn event_count(&self) -> Result<Option<u64>, SourceError> {
        match &self.view {
            View::Local(store) => Ok(Some(store.event_count()?)),
            #[cfg(feature = "postgres")]
            View::Central(_) => Ok(None),
        }
    }

    /// Verifies everything: a local log's chain and every stored checkpoint
    /// note (and `checkpoint`, when given), each note signed by one of
    /// `keys` when any is given; or every log, checkpoint and cosignature
    /// of a central store and its central log. `progress` is told how many
    /// rows are done.
    pub fn verify(
        &mut self,
        checkpoint: Option<GivenCheckpoint<'_>>,
        keys: &[crate::checkpoint::VerifierKey],
        progress: &mut dyn FnMut(u64),
    ) -> Result<Verified, SourceError> {
        match &mut self.view {
            View::Local(store) if self.export.is_some() => {
                let bytes = self.export.map_or(&[][..], |e| &e.bytes[..]);
                let report = crate::archive::verify_export(bytes, checkpoint, keys)
                    .map_err(|source| SourceError::Export {
                        path: self
                            .export
                            .map(|e| e.path.display().to_string())
                            .unwrap_or_default(),
                        source,
                    })?
                    .report;
                Ok(Verified::Local {
                    report,
                    mid_session: begins_mid_session(store),
                    short_of_quorum: Vec::new(),
                })
            }
            View::Local(store) => {
                let options = VerifyOptions {
                    checkpoint,
                    keys,
                    root: false,
                };
                let report = store.verify(&options, progress)?;
                // Beside the chain: approvals that needed a quorum have it.
                let short_of_quorum = match report.ok {
                    true => crate::approvals::quorum_shortfalls(store)?,
                    false => Vec::new(),
                };
                Ok(Verified::Local {
                    report,
                    mid_session: begins_mid_session(store),
                    short_of_quorum,
                })
            }
            #[cfg(feature = "postgres")]
            View::Central(snapshot) => Ok(Verified::Central(snapshot.verify(keys, progress)?)),
        }
    }

    /// Hands each selected log to `each` in turn, with the query to run on
    /// it; the number of logs. A central store's logs are the one `--log`
    /// names, else every log of the enrolled host named (the host filter is
    /// then met by the whole log), else every log.
    pub fn for_each_log<E: From<SourceError>>(
        &mut self,
        query: &AuditQuery,
        mut each: impl FnMut(Log<'_>) -> Result<(), E>,
    ) -> Result<usize, E> {
        match &mut self.view {
            View::Local(store) => {
                let label = match self.export {
                    Some(export) => export.path.display().to_string(),
                    None => store.path().display().to_string(),
                };
                each(Log {
                    store,
                    from: None,
                    query,
                    index: 0,
                    count: 1,
                    label,
                })?;
                Ok(1)
            }
            #[cfg(feature = "postgres")]
            View::Central(snapshot) => snapshot.for_each_log(self.selection, query, each),
        }
    }
}

/// What the log's first event says when a hook started the log in the
/// middle of a session: a note, not a failure (the chain is whole; what
/// came before it was never recorded here).
fn begins_mid_session(store: &Store) -> Option<serde_json::Value> {
    // A first row that cannot even be read (a column of the wrong type) is
    // the verification's finding, not an error of this note.
    let Ok(Some(first)) = store.first_event() else {
        return None;
    };
    if first.kind != "lifecycle" {
        return None;
    }
    let payload: serde_json::Value = serde_json::from_slice(&first.payload).unwrap_or_default();
    if payload["event"] != crate::clients::LOG_STARTED_MID_SESSION {
        return None;
    }
    Some(serde_json::json!({
        "session_id": payload["data"]["session_id"],
        "client": payload["data"]["client"],
    }))
}

/// A caller's error carried through a store scan that wants a
/// `From<StoreError>` error type.
struct Wrapped<E>(E);

impl<E: From<SourceError>> From<StoreError> for Wrapped<E> {
    fn from(err: StoreError) -> Self {
        Wrapped(E::from(SourceError::from(err)))
    }
}

#[cfg(test)]
mod tests;
