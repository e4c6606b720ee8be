//! Building a receipt from a store: the call's rows, the smallest
//! checkpoint that covers them all (a cosigned one first), with every
//! cosignature `gavel push` kept for it, and an audit path per row, each
//! checked against the signed root before the receipt is handed out.

use std::path::{Path, PathBuf};

use super::Receipt;
use crate::checkpoint::{self, Checkpoint};
use crate::inclusion::{TlogProof, root_from_inclusion};
use crate::store::{Store, StoreError};

/// A checkpoint note of this log with a cosignature line over it (one
/// line of `<db>.cosigned`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignedNote {
    pub size: u64,
    pub note: String,
    pub cosignature: String,
}

/// Why no receipt could be made.
#[derive(Debug, thiserror::Error)]
pub enum MakeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "no checkpoint covers call `{call_id}` yet (its last row is {seq}; {}): sign one with `gavel checkpoint --key KEY`, or let the next call's automatic checkpoint cover it",
        match newest {
            0 => "the log has no checkpoint yet".to_owned(),
            n => format!("the newest checkpoint covers {n}"),
        }
    )]
    NotCovered {
        call_id: String,
        seq: u64,
        newest: u64,
    },
    #[error("cannot write `{}`: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "row {seq} does not lead to the root the checkpoint of size {size} signed: the log changed since it was signed (run `gavel verify`)"
    )]
    Diverged { seq: u64, size: u64 },
}

/// `<db>.cosigned`, where `gavel push` keeps the central store's cosignatures.
pub fn cosigned_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".cosigned");
    PathBuf::from(name)
}

/// The cosigned checkpoints of log `log_id` in `<db>.cosigned`: none when
/// the file is missing; lines of other logs, and lines that do not read,
/// are skipped (a receipt checks every signature it carries anyway).
pub fn read_cosigned(db: &Path, log_id: &[u8]) -> std::io::Result<Vec<CosignedNote>> {
    let text = match std::fs::read_to_string(cosigned_path(db)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let hex = crate::digest::hex(log_id);
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|v| v.get("log_id").and_then(|l| l.as_str()) == Some(hex.as_str()))
        .filter_map(|v| {
            Some(CosignedNote {
                size: v.get("size")?.as_u64()?,
                note: v.get("note")?.as_str()?.to_owned(),
                cosignature: v.get("cosignature")?.as_str()?.to_owned(),
            })
        })
        .collect())
}

/// The file name of a call's receipt: `<call id>.receipt`; an id with a
/// character other than a letter, digit, `-`, `_` or `.` (or starting with
/// `.`) has each such character written `_` and the first 12 hex digits of
/// its SHA-256 added, so that two ids never share a file.
pub fn file_name(call_id: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if !call_id.is_empty() && !call_id.starts_with('.') && call_id.chars().all(plain) {
        return format!("{call_id}.receipt");
    }
    let stem: String = call_id
        .chars()
        .map(|c| if plain(c) { c } else { '_' })
        .collect();
    let digest = crate::digest::hex(&crate::digest::sha256(call_id.as_bytes()));
    format!("{stem}-{}.receipt", &digest[..12])
}

/// Writes the receipt of each call of `ids` into `dir` ([`file_name`]):
/// how many were written, and how many no checkpoint covers yet (none written).
pub fn write_all(
    store: &Store,
    ids: &[String],
    cosigned: &[CosignedNote],
    dir: &Path,
) -> Result<(usize, usize), MakeError> {
    std::fs::create_dir_all(dir).map_err(|source| MakeError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let (mut written, mut uncovered) = (0, 0);
    for id in ids {
        match make(store, id, cosigned) {
            Ok(receipt) => {
                let path = dir.join(file_name(id));
                std::fs::write(&path, receipt.to_text())
                    .map_err(|source| MakeError::Write { path, source })?;
                written += 1;
            }
            Err(MakeError::NotCovered { .. }) => uncovered += 1,
            Err(e) => return Err(e),
        }
    }
    Ok((written, uncovered))
}

/// The receipt of `call_id`: every row of the call with its proof into
/// the smallest checkpoint covering all of them, preferring one the
/// central store cosigned (its cosignatures appended to the note).
pub fn make(store: &Store, call_id: &str, cosigned: &[CosignedNote]) -> Result<Receipt, MakeError> {
    let rows = store.call_leaf_data(call_id)?;
    let last = rows.last().map_or(0, |r| r.seq);
    let note = match cosigned_note(cosigned, last) {
        Some(note) => note,
        None => match store.checkpoints_covering(last, 1)?.pop() {
            Some(stored) => stored.note,
            None => {
                return Err(MakeError::NotCovered {
                    call_id: call_id.to_owned(),
                    seq: last,
                    newest: store.largest_checkpoint()?,
                });
            }
        },
    };
    let checkpoint = checkpoint::parse_unverified(&note).map_err(|e| StoreError::Damaged {
        path: store.path().display().to_string(),
        detail: format!("a stored checkpoint note does not read: {e}"),
    })?;
    let mut proofs = Vec::with_capacity(rows.len());
    for row in rows {
        let path = proof(store, row.seq, &row.data, &checkpoint)?;
        proofs.push(TlogProof {
            extra: Some(row.data),
            index: row.seq - 1,
            path,
            checkpoint: note.clone(),
        });
    }
    Ok(Receipt {
        call_id: call_id.to_owned(),
        proofs,
    })
}

/// The audit path of row `seq`, checked against the checkpoint's root:
/// from the stored block roots, or, when those lead elsewhere, from the rows.
fn proof(
    store: &Store,
    seq: u64,
    data: &[u8],
    checkpoint: &Checkpoint,
) -> Result<Vec<crate::chain::Hash>, MakeError> {
    let leaf = checkpoint::leaf_hash(data);
    for cached in [true, false] {
        let path = store.inclusion_path(seq - 1, checkpoint.size, cached)?;
        if root_from_inclusion(seq - 1, checkpoint.size, &leaf, &path) == Some(checkpoint.root) {
            return Ok(path);
        }
    }
    Err(MakeError::Diverged {
        seq,
        size: checkpoint.size,
    })
}

/// The smallest cosigned checkpoint covering row `seq`, its cosignatures
/// (every line kept for that note) after its own signature lines.
fn cosigned_note(cosigned: &[CosignedNote], seq: u64) -> Option<String> {
    let best = cosigned
        .iter()
        .filter(|c| c.size >= seq)
        .min_by_key(|c| c.size)?;
    let mut note = best.note.clone();
    let mut seen = Vec::new();
    for c in cosigned.iter().filter(|c| c.note == best.note) {
        let line = if c.cosignature.ends_with('\n') {
            c.cosignature.clone()
        } else {
            format!("{}\n", c.cosignature)
        };
        if !seen.contains(&line) && !note.contains(&line) {
            note.push_str(&line);
            seen.push(line);
        }
    }
    Some(note)
}
