//! The central store (issue 16): many hosts' logs in one PostgreSQL
//! database. Placeholder until the write side (connect, migrate, push,
//! ingest) is merged.

pub mod query;
pub mod retain;
pub mod verify;

/// Whether `--db` names a central store rather than a SQLite file.
pub fn is_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// Connects to the central store at `url`.
pub fn connect(url: &str) -> Result<postgres::Client, postgres::Error> {
    postgres::Client::connect(url, postgres::NoTls)
}
