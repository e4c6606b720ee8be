//! The baselines' rows: the same thirteen columns and four indexes as
//! gavel's `events` table (migrations/0001_init.sql), a SHA-256 leaf over
//! every stored field (length-prefixed) and a SHA-256 link to the row
//! before. The work per row is the same as gavel's chain; the encoding is
//! the baseline's own, written directly with rusqlite.

use rusqlite::{Connection, Row as SqlRow};
use sha2::{Digest, Sha256};

/// Creates `table` (and its indexes) with the columns of gavel's `events`.
pub fn create_table(conn: &Connection, table: &str) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {table} (
            seq      INTEGER PRIMARY KEY,
            log_id   BLOB    NOT NULL,
            ts_us    INTEGER NOT NULL,
            kind     TEXT    NOT NULL,
            call_id  TEXT    NOT NULL,
            tool     TEXT,
            action   TEXT,
            rule_id  TEXT,
            approval TEXT,
            status   TEXT,
            payload  BLOB    NOT NULL,
            leaf     BLOB    NOT NULL,
            chain    BLOB    NOT NULL
        );
        CREATE INDEX IF NOT EXISTS {table}_call ON {table} (call_id, kind);
        CREATE INDEX IF NOT EXISTS {table}_rule ON {table} (rule_id) WHERE kind = 'decision';"
    ))
}

/// The insert statement for `table`.
pub fn insert_sql(table: &str) -> String {
    format!(
        "INSERT INTO {table} (seq, log_id, ts_us, kind, call_id, tool, action, rule_id,
                              approval, status, payload, leaf, chain)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
    )
}

/// The columns read back, in insert order (without leaf and chain).
pub const COLUMNS: &str =
    "seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status, payload";

/// One row's fields, owned.
#[derive(Debug, Clone)]
pub struct Row {
    pub seq: u64,
    pub log_id: Vec<u8>,
    pub ts_us: i64,
    pub kind: String,
    pub call_id: String,
    pub tool: Option<String>,
    pub action: Option<String>,
    pub rule_id: Option<String>,
    pub approval: Option<String>,
    pub status: Option<String>,
    pub payload: Vec<u8>,
}

impl Row {
    /// Reads a row selected with [`COLUMNS`].
    pub fn from_sql(row: &SqlRow<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            seq: row.get(0)?,
            log_id: row.get(1)?,
            ts_us: row.get(2)?,
            kind: row.get(3)?,
            call_id: row.get(4)?,
            tool: row.get(5)?,
            action: row.get(6)?,
            rule_id: row.get(7)?,
            approval: row.get(8)?,
            status: row.get(9)?,
            payload: row.get(10)?,
        })
    }

    /// SHA-256 over every field, length-prefixed.
    pub fn leaf(&self) -> [u8; 32] {
        leaf(&Fields {
            seq: self.seq,
            log_id: &self.log_id,
            ts_us: self.ts_us,
            kind: self.kind.as_bytes(),
            call_id: self.call_id.as_bytes(),
            optional: [
                self.tool.as_deref().map(str::as_bytes),
                self.action.as_deref().map(str::as_bytes),
                self.rule_id.as_deref().map(str::as_bytes),
                self.approval.as_deref().map(str::as_bytes),
                self.status.as_deref().map(str::as_bytes),
            ],
            payload: &self.payload,
        })
    }

    /// Inserts the row with its leaf and the chain value after `previous`;
    /// returns that chain value.
    pub fn insert(
        &self,
        statement: &mut rusqlite::CachedStatement<'_>,
        previous: &[u8; 32],
    ) -> rusqlite::Result<[u8; 32]> {
        let leaf = self.leaf();
        let chain = link(previous, &leaf);
        statement.execute(rusqlite::params![
            self.seq,
            self.log_id,
            self.ts_us,
            self.kind,
            self.call_id,
            self.tool,
            self.action,
            self.rule_id,
            self.approval,
            self.status,
            self.payload,
            &leaf[..],
            &chain[..],
        ])?;
        Ok(chain)
    }
}

/// Every field of a row, borrowed.
pub struct Fields<'a> {
    pub seq: u64,
    pub log_id: &'a [u8],
    pub ts_us: i64,
    pub kind: &'a [u8],
    pub call_id: &'a [u8],
    /// tool, action, rule_id, approval, status.
    pub optional: [Option<&'a [u8]>; 5],
    pub payload: &'a [u8],
}

fn lp(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_be_bytes());
    hasher.update(bytes);
}

/// SHA-256 over every field, length-prefixed; absent optional fields as one zero byte.
pub fn leaf(fields: &Fields<'_>) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(fields.seq.to_be_bytes());
    lp(&mut hasher, fields.log_id);
    hasher.update(fields.ts_us.to_be_bytes());
    lp(&mut hasher, fields.kind);
    lp(&mut hasher, fields.call_id);
    for value in fields.optional {
        match value {
            None => hasher.update([0u8]),
            Some(bytes) => {
                hasher.update([1u8]);
                lp(&mut hasher, bytes);
            }
        }
    }
    lp(&mut hasher, fields.payload);
    hasher.finalize().into()
}

/// SHA-256 of the previous chain value and the leaf.
pub fn link(previous: &[u8; 32], leaf: &[u8; 32]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(previous);
    hasher.update(leaf);
    hasher.finalize().into()
}

/// Microseconds since the epoch.
pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}
