//! The central store (issue 16): every host's audit log, shipped to
//! PostgreSQL, verified on ingest, cosigned, queried in one place.
//!
//! This module owns the connection (URL, TLS, the schema it selects), the
//! migrations of `migrations/postgres/`, the errors, the row type that
//! crosses the wire and [`Head`]: a log's head (size, chain value, Merkle
//! frontier, format) and the pure step that extends it by one row, which
//! ingest uses to check a batch. The host side is [`push`], the central
//! side [`admin`] (init, enroll), [`ingest`] and [`cosign`]. It knows
//! nothing of the CLI; it reads local logs only through `store`.
//!
//! The design and the tables are in `docs/central.md`.

pub mod admin;
pub use crate::cosign;
pub mod ingest;
pub mod push;
pub mod query;
pub mod retain;
pub mod verify;

use std::str::FromStr as _;

use postgres::Client;
use postgres::config::{Host, SslMode};

use crate::chain::{EventFields, FORMAT_KIND, FORMAT_VERSION, Hash, Who, link};
use crate::checkpoint::MerkleBuilder;

/// The central schema's migrations, in order: `(version, name, SQL)`.
pub const MIGRATIONS: &[(i32, &str, &str)] = &[
    (
        1,
        "central",
        include_str!("../../migrations/postgres/0001_central.sql"),
    ),
    (
        2,
        "retention",
        include_str!("../../migrations/postgres/0002_retention.sql"),
    ),
];

/// The schema version this build knows.
pub fn schema_version() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// Everything that can go wrong talking to the central store.
#[derive(Debug, thiserror::Error)]
pub enum CentralError {
    #[error("invalid PostgreSQL URL: {detail}")]
    Url { detail: String },
    #[error("cannot connect to PostgreSQL at {target}: {source}")]
    Connect {
        target: String,
        source: postgres::Error,
    },
    #[error("cannot set up TLS: {detail}")]
    Tls { detail: String },
    #[error("{context}: {source}")]
    Sql {
        context: &'static str,
        source: postgres::Error,
    },
    #[error(
        "the central store in schema `{schema}` is at version {found}, newer than this gavel knows ({known}); refusing to use it"
    )]
    Newer {
        schema: String,
        found: i32,
        known: i32,
    },
    #[error(
        "schema `{schema}` holds no central store (or this role cannot read it); run `gavel central init` first"
    )]
    NotInitialized { schema: String },
    #[error(
        "the central store in schema `{schema}` is at version {found}; run `gavel central init` to migrate it to {known}"
    )]
    Older {
        schema: String,
        found: i32,
        known: i32,
    },
    #[error(
        "invalid {what} `{name}`: use 1 to {max} lowercase letters, digits or `_`, starting with a letter"
    )]
    Name {
        what: &'static str,
        name: String,
        max: usize,
    },
    #[error("key: {source}")]
    Key {
        #[from]
        source: crate::checkpoint::CheckpointError,
    },
    #[error(
        "the key `{given}` is not the central key of this store (`{stored}`); use the key `gavel central init` was given"
    )]
    WrongKey { given: String, stored: String },
    #[error("the central store is already initialized with key `{stored}`")]
    OtherKey { stored: String },
    #[error("host `{host}` is not enrolled")]
    UnknownHost { host: String },
    #[error("host `{host}` is already enrolled (role `{role}`)")]
    AlreadyEnrolled { host: String, role: String },
    #[error(
        "role `{role}` exists; a host's role should be made for it (pass --existing-role to grant this one the inbox)"
    )]
    RoleExists { role: String },
    #[error("role `{role}` {why}: a host must push as a role that can do nothing else")]
    RoleTooPowerful { role: String, why: String },
    #[error("stored data is damaged: {detail}")]
    Damaged { detail: String },
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
    #[error("{detail}")]
    Push { detail: String },
}

/// Attaches what was being done to a PostgreSQL error.
pub(crate) fn sql(context: &'static str) -> impl FnOnce(postgres::Error) -> CentralError {
    move |source| CentralError::Sql { context, source }
}

/// The longest schema name (so that `<schema>_inbox` stays within PostgreSQL's 63 bytes).
const MAX_SCHEMA: usize = 48;
/// The longest host name (so that `<host>_checkpoints` fits too).
pub const MAX_HOST: usize = 40;

/// Checks a name used as an SQL identifier: `[a-z][a-z0-9_]*`, at most `max` bytes.
pub fn check_name(what: &'static str, name: &str, max: usize) -> Result<(), CentralError> {
    let ok = !name.is_empty()
        && name.len() <= max
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(CentralError::Name {
            what,
            name: name.to_owned(),
            max,
        })
    }
}

/// `name` as a quoted SQL identifier (names are checked by [`check_name`] first).
pub(crate) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A connection to a central store, in the schema its URL (or `--schema`) selects.
pub struct Central {
    client: Client,
    schema: String,
}

/// How a URL asks for TLS: `sslmode` as given; without one, none for this
/// machine and `require` (never a silent downgrade) for any other host, or
/// when a private CA is named.
fn wants_tls(url: &str, config: &postgres::Config, root_cert: bool) -> Option<SslMode> {
    let explicit = url
        .split(['?', '&', ' '])
        .any(|part| part.trim_start().starts_with("sslmode="));
    let local = config.get_hosts().iter().all(|h| match h {
        Host::Tcp(name) => matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1" | "[::1]"),
        #[cfg(unix)]
        Host::Unix(_) => true,
    });
    match config.get_ssl_mode() {
        SslMode::Disable => None,
        SslMode::Prefer if !explicit && local && !root_cert => None,
        SslMode::Prefer if !explicit => Some(SslMode::Require),
        mode => Some(mode),
    }
}

/// Takes `sslrootcert=FILE` out of a URL (`postgres://…?…` or `key=value`
/// words), which the client library does not know: the URL without it and
/// the file, percent-decoded.
fn take_root_cert(url: &str) -> (String, Option<String>) {
    let is_key = |part: &str| part.starts_with("sslrootcert=");
    let value = |part: &str| part["sslrootcert=".len()..].to_owned();
    if let Some((base, query)) = url.split_once('?') {
        let (mut kept, mut file) = (Vec::new(), None);
        for pair in query.split('&') {
            if is_key(pair) {
                file = Some(percent_decode(&value(pair)));
            } else {
                kept.push(pair);
            }
        }
        let url = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return (url, file);
    }
    if url.contains("://") {
        return (url.to_owned(), None);
    }
    let (mut kept, mut file) = (Vec::new(), None);
    for word in url.split_whitespace() {
        if is_key(word) {
            file = Some(value(word).trim_matches('\'').to_owned());
        } else {
            kept.push(word);
        }
    }
    (kept.join(" "), file)
}

/// `%XX` escapes decoded (an invalid one is kept as it is).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The trust roots: the PEM certificates of `file` (a private CA) when
/// given, else Mozilla's.
fn roots(file: Option<&str>) -> Result<rustls::RootCertStore, CentralError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let Some(file) = file else {
        return Ok(rustls::RootCertStore::from_iter(
            webpki_roots::TLS_SERVER_ROOTS.iter().cloned(),
        ));
    };
    let tls = |detail: String| CentralError::Tls { detail };
    let pem =
        std::fs::read(file).map_err(|e| tls(format!("cannot read sslrootcert `{file}`: {e}")))?;
    let mut store = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| tls(format!("sslrootcert `{file}` is not PEM: {e}")))?;
        store
            .add(cert)
            .map_err(|e| tls(format!("sslrootcert `{file}` holds a bad certificate: {e}")))?;
    }
    if store.is_empty() {
        return Err(tls(format!("sslrootcert `{file}` holds no certificate")));
    }
    Ok(store)
}

/// The schema a URL selects with `options=-csearch_path=…` (its first entry).
fn schema_of(config: &postgres::Config) -> Option<String> {
    let options = config.get_options()?;
    let mut words = options.split_whitespace();
    while let Some(word) = words.next() {
        let setting = if word == "-c" {
            words.next().unwrap_or("")
        } else if let Some(rest) = word.strip_prefix("-c") {
            rest
        } else if let Some(rest) = word.strip_prefix("--") {
            rest
        } else {
            continue;
        };
        if let Some(path) = setting
            .strip_prefix("search_path=")
            .or_else(|| setting.strip_prefix("search-path="))
        {
            let first = path
                .split(',')
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches('"');
            return (!first.is_empty()).then(|| first.to_owned());
        }
    }
    None
}

/// Where a URL points, without its password, for messages.
fn target(config: &postgres::Config) -> String {
    let host = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            Host::Unix(path) => path.display().to_string(),
        })
        .collect::<Vec<_>>()
        .join(",");
    let port = config
        .get_ports()
        .first()
        .map_or(String::new(), |p| format!(":{p}"));
    format!(
        "{}@{host}{port}/{}",
        config.get_user().unwrap_or(""),
        config.get_dbname().unwrap_or("")
    )
}

/// Opens a client for `url`: TLS through rustls unless the URL says
/// `sslmode=disable`, or names only this machine and no `sslmode`; the
/// server's certificate and name are always verified, against Mozilla's
/// roots or the PEM file `sslrootcert=` names.
pub fn open_client(url: &str) -> Result<(Client, postgres::Config), CentralError> {
    let (url, root_cert) = take_root_cert(url);
    let url = url.as_str();
    let mut config = postgres::Config::from_str(url).map_err(|e| CentralError::Url {
        detail: e.to_string(),
    })?;
    let shown = target(&config);
    let connect_error = |source| CentralError::Connect {
        target: shown.clone(),
        source,
    };
    let client = match wants_tls(url, &config, root_cert.is_some()) {
        None => {
            let mut plain = config.clone();
            plain.ssl_mode(SslMode::Disable);
            plain.connect(postgres::NoTls).map_err(connect_error)?
        }
        Some(mode) => {
            config.ssl_mode(mode);
            let provider = rustls::crypto::ring::default_provider();
            let roots = roots(root_cert.as_deref())?;
            let tls = rustls::ClientConfig::builder_with_provider(provider.into())
                .with_safe_default_protocol_versions()
                .map_err(|e| CentralError::Tls {
                    detail: e.to_string(),
                })?
                .with_root_certificates(roots)
                .with_no_client_auth();
            config
                .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
                .map_err(connect_error)?
        }
    };
    Ok((client, config))
}

impl Central {
    /// Connects as the central store's owner (or a reader), in the schema
    /// `schema` names, else the one the URL's `search_path` names, else
    /// `public`. Refuses a store newer than this build; a store not yet
    /// initialized is accepted here only for `init` (see [`Central::check`]).
    pub fn connect(url: &str, schema: Option<&str>) -> Result<Self, CentralError> {
        let (mut client, config) = open_client(url)?;
        let schema = match schema {
            Some(s) => s.to_owned(),
            None => schema_of(&config).unwrap_or_else(|| "public".to_owned()),
        };
        check_name("schema", &schema, MAX_SCHEMA)?;
        client
            .batch_execute(&format!(
                "SET search_path TO {}; SET application_name TO 'gavel'",
                ident(&schema)
            ))
            .map_err(sql("selecting the schema"))?;
        let central = Self { client, schema };
        Ok(central)
    }

    /// Connects and checks the store is initialized at the version this build knows.
    pub fn open(url: &str, schema: Option<&str>) -> Result<Self, CentralError> {
        let mut central = Self::connect(url, schema)?;
        central.check()?;
        Ok(central)
    }

    /// The applied schema version, `None` when no central store is here.
    pub fn version(&mut self) -> Result<Option<i32>, CentralError> {
        let table: Option<String> = self
            .client
            .query_one(
                "SELECT to_regclass(quote_ident($1) || '.gavel_migrations')::text",
                &[&self.schema],
            )
            .map_err(sql("looking for the migrations table"))?
            .get(0);
        if table.is_none() {
            return Ok(None);
        }
        let row = self
            .client
            .query_one("SELECT max(version) FROM gavel_migrations", &[])
            .map_err(sql("reading the schema version"))?;
        Ok(row.get::<_, Option<i32>>(0))
    }

    /// Fails unless the store is initialized at exactly this build's version.
    pub fn check(&mut self) -> Result<(), CentralError> {
        let known = schema_version();
        match self.version()? {
            None => Err(CentralError::NotInitialized {
                schema: self.schema.clone(),
            }),
            Some(found) if found > known => Err(CentralError::Newer {
                schema: self.schema.clone(),
                found,
                known,
            }),
            Some(found) if found < known => Err(CentralError::Older {
                schema: self.schema.clone(),
                found,
                known,
            }),
            Some(_) => Ok(()),
        }
    }

    /// Creates the schema if needed and applies every migration not yet
    /// applied, each in its own transaction; returns how many were applied.
    /// A store newer than this build is refused.
    pub fn migrate(&mut self) -> Result<usize, CentralError> {
        // Nobody but the owner makes objects here (PostgreSQL 14 and older
        // let PUBLIC create in `public`: a host role could plant a table or
        // function that the owner's unqualified names then find).
        self.client
            .batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {0}; REVOKE CREATE ON SCHEMA {0} FROM PUBLIC",
                ident(&self.schema)
            ))
            .map_err(sql("creating the schema"))?;
        self.client
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS gavel_migrations (
                     version    integer PRIMARY KEY,
                     name       text    NOT NULL,
                     applied_us bigint  NOT NULL
                 )",
            )
            .map_err(sql("creating the migrations table"))?;
        let mut applied = 0;
        for &(version, name, text) in MIGRATIONS {
            let mut tx = self
                .client
                .transaction()
                .map_err(sql("starting a migration"))?;
            // One migrator at a time; the others wait, then find it applied.
            tx.execute("LOCK TABLE gavel_migrations IN EXCLUSIVE MODE", &[])
                .map_err(sql("locking the migrations table"))?;
            let newest: Option<i32> = tx
                .query_one("SELECT max(version) FROM gavel_migrations", &[])
                .map_err(sql("reading the schema version"))?
                .get(0);
            if let Some(found) = newest.filter(|&v| v > schema_version()) {
                return Err(CentralError::Newer {
                    schema: self.schema.clone(),
                    found,
                    known: schema_version(),
                });
            }
            if newest.is_some_and(|v| v >= version) {
                continue;
            }
            tx.batch_execute(text)
                .map_err(sql("applying a migration"))?;
            tx.execute(
                "INSERT INTO gavel_migrations (version, name, applied_us) VALUES ($1, $2, $3)",
                &[&version, &name, &now_us()],
            )
            .map_err(sql("recording a migration"))?;
            tx.commit().map_err(sql("committing a migration"))?;
            applied += 1;
        }
        Ok(applied)
    }

    /// The schema the central tables live in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The schema of the per-host inboxes: `gavel_inbox` beside `public`,
    /// else `<schema>_inbox` (so that stores in two schemas never share one).
    pub fn inbox_schema(&self) -> String {
        inbox_schema_for(&self.schema)
    }

    /// The connection, for the read side and tests.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// The inbox schema of a central store in `schema`.
/// The Merkle frontier stored as concatenated 32-byte hashes, over `size`
/// leaves; `whose` names it in the error (`a log's`, `the central`).
pub(crate) fn frontier_tree(
    size: u64,
    frontier: &[u8],
    whose: &str,
) -> Result<MerkleBuilder, CentralError> {
    let damaged = |what: &str| CentralError::Damaged {
        detail: format!("{whose} frontier {what}"),
    };
    if !frontier.len().is_multiple_of(32) {
        return Err(damaged("is not a list of 32-byte hashes"));
    }
    let nodes = frontier
        .chunks_exact(32)
        .map(|c| {
            let mut h = [0u8; 32];
            h.copy_from_slice(c);
            h
        })
        .collect();
    MerkleBuilder::from_frontier(size, nodes).ok_or_else(|| damaged("does not fit its size"))
}

pub fn inbox_schema_for(schema: &str) -> String {
    if schema == "public" {
        "gavel_inbox".to_owned()
    } else {
        format!("{schema}_inbox")
    }
}

/// Microseconds since the Unix epoch, now.
pub fn now_us() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// The columns of a row as it crosses the wire (an inbox row, an event
/// without `part_us`), in this order.
pub const ROW_COLUMNS: &str = "log_id, seq, ts_us, kind, call_id, tool, action, rule_id, approval, \
                               status, \"user\", host, client, session, agent, payload, leaf, chain";

/// One event row as pushed and stored centrally: the SQLite columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub log_id: Vec<u8>,
    pub seq: i64,
    pub ts_us: i64,
    pub kind: String,
    pub call_id: String,
    pub tool: Option<String>,
    pub action: Option<String>,
    pub rule_id: Option<String>,
    pub approval: Option<String>,
    pub status: Option<String>,
    pub user: Option<String>,
    pub host: Option<String>,
    pub client: Option<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub payload: Vec<u8>,
    pub leaf: Vec<u8>,
    pub chain: Vec<u8>,
}

impl Row {
    /// Reads a row selected as [`ROW_COLUMNS`] (from the first column on).
    pub fn from_pg(row: &postgres::Row) -> Result<Self, postgres::Error> {
        Ok(Self {
            log_id: row.try_get(0)?,
            seq: row.try_get(1)?,
            ts_us: row.try_get(2)?,
            kind: row.try_get(3)?,
            call_id: row.try_get(4)?,
            tool: row.try_get(5)?,
            action: row.try_get(6)?,
            rule_id: row.try_get(7)?,
            approval: row.try_get(8)?,
            status: row.try_get(9)?,
            user: row.try_get(10)?,
            host: row.try_get(11)?,
            client: row.try_get(12)?,
            session: row.try_get(13)?,
            agent: row.try_get(14)?,
            payload: row.try_get(15)?,
            leaf: row.try_get(16)?,
            chain: row.try_get(17)?,
        })
    }

    /// The fields the leaf hashes, encoded in `format`.
    pub fn fields(&self, format: u32) -> EventFields<'_> {
        EventFields {
            seq: self.seq.max(0) as u64,
            log_id: &self.log_id,
            ts_us: self.ts_us,
            kind: &self.kind,
            call_id: &self.call_id,
            tool: self.tool.as_deref(),
            action: self.action.as_deref(),
            rule_id: self.rule_id.as_deref(),
            approval: self.approval.as_deref(),
            status: self.status.as_deref(),
            payload: &self.payload,
            format,
            who: Who {
                user: self.user.as_deref(),
                host: self.host.as_deref(),
                client: self.client.as_deref(),
                session: self.session.as_deref(),
                agent: self.agent.as_deref(),
            },
        }
    }
}

/// A log's head: rows 1..size taken, the chain value after row `size`, the
/// Merkle frontier over their leaves, and the format the next row is in.
#[derive(Debug, Clone)]
pub struct Head {
    pub size: u64,
    pub chain: Hash,
    pub tree: MerkleBuilder,
    /// The log's own format (`logs.format`).
    pub log_format: u32,
    /// The log's `format` row, if seen: `(seq, format after it)`.
    pub switch: Option<(u64, u32)>,
}

/// Why a row does not extend a head; `seq` is the row's (or the expected) seq.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Break {
    /// The row is not the next one.
    Gap { expected: u64, found: i64 },
    /// The row names another log.
    LogId { seq: u64 },
    /// The recomputed leaf is not the one sent: a field was changed after hashing.
    Leaf { seq: u64 },
    /// The chain value sent is not the link of the previous one and the leaf.
    Chain { seq: u64 },
    /// A format the build does not know, a switch it does not know, or
    /// provenance columns in a format-1 row.
    Format { seq: u64, detail: String },
}

impl Break {
    /// The seq the break is at.
    pub fn seq(&self) -> u64 {
        match self {
            Break::Gap { expected, .. } => *expected,
            Break::LogId { seq }
            | Break::Leaf { seq }
            | Break::Chain { seq }
            | Break::Format { seq, .. } => *seq,
        }
    }
}

impl std::fmt::Display for Break {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Break::Gap { expected, found } => write!(f, "expected seq {expected}, found {found}"),
            Break::LogId { seq } => write!(f, "seq {seq} belongs to another log"),
            Break::Leaf { seq } => write!(
                f,
                "seq {seq} does not match its leaf hash: a field was changed"
            ),
            Break::Chain { seq } => write!(f, "seq {seq} does not link to the row before it"),
            Break::Format { detail, .. } => f.write_str(detail),
        }
    }
}

impl Head {
    /// The head of an empty log.
    pub fn new(genesis: Hash, log_format: u32) -> Self {
        Self {
            size: 0,
            chain: genesis,
            tree: MerkleBuilder::new(),
            log_format,
            switch: None,
        }
    }

    /// A head as stored in `logs` (size, chain, frontier bytes, format columns).
    pub fn from_stored(
        size: i64,
        chain: &[u8],
        frontier: &[u8],
        log_format: i32,
        switch_seq: Option<i64>,
        switch_format: Option<i32>,
    ) -> Result<Self, CentralError> {
        let damaged = |detail: &str| CentralError::Damaged {
            detail: detail.to_owned(),
        };
        let size = u64::try_from(size).map_err(|_| damaged("a log's size is negative"))?;
        let chain: Hash = chain
            .try_into()
            .map_err(|_| damaged("a log's chain value is not 32 bytes"))?;
        let tree = frontier_tree(size, frontier, "a log's")?;
        let switch = match (switch_seq, switch_format) {
            (Some(seq), Some(format)) => Some((seq.max(0) as u64, format.max(0) as u32)),
            _ => None,
        };
        Ok(Self {
            size,
            chain,
            tree,
            log_format: log_format.max(0) as u32,
            switch,
        })
    }

    /// The frontier as stored: the 32-byte subtree roots, concatenated.
    pub fn frontier_bytes(&self) -> Vec<u8> {
        self.tree.frontier().concat()
    }

    /// The Merkle root over rows 1..size.
    pub fn root(&self) -> Hash {
        self.tree.root()
    }

    /// The format row `seq` is in.
    pub fn format_at(&self, seq: u64) -> u32 {
        crate::store::row_format(self.log_format, self.switch, seq)
    }

    /// Takes the next row: checks its seq, log, format, leaf and chain, and
    /// moves the head past it. On a break the head is unchanged.
    pub fn extend(&mut self, log_id: &[u8], row: &Row) -> Result<(), Break> {
        let expected = self.size + 1;
        if row.seq != expected as i64 {
            return Err(Break::Gap {
                expected,
                found: row.seq,
            });
        }
        let seq = expected;
        if row.log_id != log_id {
            return Err(Break::LogId { seq });
        }
        let format = self.format_at(seq);
        if !crate::chain::known_format(i64::from(format)) {
            return Err(Break::Format {
                seq,
                detail: format!("seq {seq} is in format {format}, which this gavel does not know"),
            });
        }
        let fields = row.fields(format);
        if format == 1 && !fields.who.is_empty() {
            return Err(Break::Format {
                seq,
                detail: format!(
                    "seq {seq} is a format-1 row with provenance columns, which format 1 does not hash"
                ),
            });
        }
        let leaf = fields.leaf_hash();
        if row.leaf[..] != leaf[..] {
            return Err(Break::Leaf { seq });
        }
        let next = link(&self.chain, &leaf);
        if row.chain[..] != next[..] {
            return Err(Break::Chain { seq });
        }
        if row.kind == FORMAT_KIND {
            let to = crate::store::switch_of(&row.kind, &row.payload).unwrap_or(-1);
            if format != 1 || to != i64::from(FORMAT_VERSION) || self.switch.is_some() {
                return Err(Break::Format {
                    seq,
                    detail: format!(
                        "seq {seq} switches the log from format {format} to format {to}, which this gavel does not know"
                    ),
                });
            }
            self.switch = Some((seq, FORMAT_VERSION));
        }
        self.tree.push(leaf);
        self.chain = next;
        self.size = seq;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: &str) -> postgres::Config {
        postgres::Config::from_str(url).unwrap()
    }

    #[test]
    fn tls_is_chosen_by_the_url() {
        let plain = |url: &str| wants_tls(url, &config(url), false).is_none();
        assert!(plain("postgres://u@127.0.0.1/db"));
        assert!(plain("postgres://u@localhost:5432/db"));
        assert!(plain("postgres://u@db.example.com/db?sslmode=disable"));
        let remote = "postgres://u@db.example.com/db";
        assert_eq!(
            wants_tls(remote, &config(remote), false),
            Some(SslMode::Require),
            "no sslmode off this machine: require, not prefer"
        );
        let local = "postgres://u@127.0.0.1/db";
        assert_eq!(
            wants_tls(local, &config(local), true),
            Some(SslMode::Require),
            "a private CA asks for TLS"
        );
        assert!(!plain("postgres://u@127.0.0.1/db?sslmode=require"));
        assert!(!plain("postgres://u@localhost/db?sslmode=prefer"));
        let url = "postgres://u@db.example.com/db?sslmode=require";
        assert_eq!(wants_tls(url, &config(url), false), Some(SslMode::Require));
    }

    #[test]
    fn sslrootcert_is_taken_out_of_the_url() {
        assert_eq!(
            take_root_cert(
                "postgres://u@h/db?sslmode=require&sslrootcert=%2Fetc%2Fca.pem&options=x"
            ),
            (
                "postgres://u@h/db?sslmode=require&options=x".to_owned(),
                Some("/etc/ca.pem".to_owned())
            )
        );
        assert_eq!(
            take_root_cert("postgres://u@h/db?sslrootcert=ca.pem"),
            ("postgres://u@h/db".to_owned(), Some("ca.pem".to_owned()))
        );
        assert_eq!(
            take_root_cert("host=h sslrootcert=ca.pem dbname=d"),
            ("host=h dbname=d".to_owned(), Some("ca.pem".to_owned()))
        );
        assert_eq!(take_root_cert("postgres://u@h/db").1, None);
        let dir = std::env::temp_dir().join(format!("gavel-roots-{}", std::process::id()));
        std::fs::write(&dir, "not a certificate").unwrap();
        let err = roots(Some(dir.to_str().unwrap())).unwrap_err().to_string();
        assert!(err.contains("holds no certificate"), "{err}");
        let _ = std::fs::remove_file(&dir);
        assert!(roots(Some("/nonexistent/ca.pem")).is_err());
        let ca = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tls/test-ca.pem");
        assert_eq!(
            roots(Some(ca)).unwrap().len(),
            1,
            "a private CA is the only root"
        );
    }

    #[test]
    fn the_schema_comes_from_the_url_options() {
        let schema = |url: &str| schema_of(&config(url));
        assert_eq!(schema("postgres://u@h/db"), None);
        assert_eq!(
            schema("postgres://u@h/db?options=-csearch_path%3Dteam1"),
            Some("team1".into())
        );
        assert_eq!(
            schema("postgres://u@h/db?options=-c%20search_path%3Dteam2,public"),
            Some("team2".into())
        );
        assert!(check_name("schema", "team1", MAX_SCHEMA).is_ok());
        for bad in ["", "Team", "1team", "a-b", "a\"b", &"x".repeat(49)] {
            assert!(check_name("schema", bad, MAX_SCHEMA).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_head_round_trips_through_its_stored_form() {
        let genesis = [7u8; 32];
        let mut head = Head::new(genesis, 2);
        let log_id = vec![1u8; 16];
        let mut chain = genesis;
        for seq in 1..=5i64 {
            let mut row = Row {
                log_id: log_id.clone(),
                seq,
                ts_us: seq,
                kind: "lifecycle".into(),
                call_id: format!("c{seq}"),
                tool: None,
                action: None,
                rule_id: None,
                approval: None,
                status: None,
                user: None,
                host: None,
                client: None,
                session: None,
                agent: None,
                payload: b"{}".to_vec(),
                leaf: Vec::new(),
                chain: Vec::new(),
            };
            let leaf = row.fields(2).leaf_hash();
            chain = link(&chain, &leaf);
            row.leaf = leaf.to_vec();
            row.chain = chain.to_vec();
            head.extend(&log_id, &row).unwrap();
            let stored = Head::from_stored(
                head.size as i64,
                &head.chain,
                &head.frontier_bytes(),
                2,
                None,
                None,
            )
            .unwrap();
            assert_eq!(stored.root(), head.root());
            assert_eq!(stored.size, seq as u64);
        }
        // The next row must be seq 6, continue the chain and hash to its leaf.
        let mut next = Row {
            log_id: log_id.clone(),
            seq: 7,
            ts_us: 7,
            kind: "lifecycle".into(),
            call_id: "c7".into(),
            tool: None,
            action: None,
            rule_id: None,
            approval: None,
            status: None,
            user: None,
            host: None,
            client: None,
            session: None,
            agent: None,
            payload: b"{}".to_vec(),
            leaf: vec![0; 32],
            chain: vec![0; 32],
        };
        assert!(matches!(
            head.extend(&log_id, &next),
            Err(Break::Gap { expected: 6, .. })
        ));
        next.seq = 6;
        assert_eq!(head.extend(&log_id, &next), Err(Break::Leaf { seq: 6 }));
        next.leaf = next.fields(2).leaf_hash().to_vec();
        assert_eq!(head.extend(&log_id, &next), Err(Break::Chain { seq: 6 }));
        assert_eq!(head.size, 5, "a break leaves the head where it was");
        assert!(Head::from_stored(3, &chain, &[0u8; 32], 2, None, None).is_err());
    }
}
