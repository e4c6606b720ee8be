//! What a receipt needs from the log (docs/receipts.md): a call's rows as
//! leaf data, the stored checkpoints that cover them, and audit paths into
//! those, built from the stored roots of 256-leaf blocks (`merkle_blocks`)
//! so that one proof reads about n/256 roots and at most two blocks of
//! leaves, not the whole log.

use std::collections::HashMap;

use rusqlite::OptionalExtension;

use super::*;
use crate::checkpoint::{leaf_hash, merkle_root, node_hash};

/// A block is 2^`BLOCK_LEVEL` leaves.
pub const BLOCK_LEVEL: u32 = 8;
const BLOCK: u64 = 1 << BLOCK_LEVEL;

/// One of a call's rows: its seq and its leaf data (`enc(row)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafData {
    pub seq: u64,
    pub data: Vec<u8>,
}

/// A stored checkpoint: its size and signed note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredNote {
    pub size: u64,
    pub note: String,
}

impl Store {
    /// Every row of `call_id`, in seq order, as leaf data. A row whose
    /// data no longer hashes to its stored leaf is damaged: no receipt can
    /// prove it.
    pub fn call_leaf_data(&self, call_id: &str) -> Result<Vec<LeafData>, StoreError> {
        let formats = self.formats()?;
        self.call_events(call_id)?
            .iter()
            .map(|e| {
                let data = e.fields(formats.of(e.seq as i64)).encode();
                if leaf_hash(&data)[..] != e.leaf[..] {
                    return Err(self.damaged(format!(
                        "row {} no longer hashes to its stored leaf (run `gavel verify`)",
                        e.seq
                    )));
                }
                Ok(LeafData { seq: e.seq, data })
            })
            .collect()
    }

    /// Where a call's rows are and what vouches for them: its first row's
    /// leaf index and the smallest checkpoint covering its rows so far.
    /// `None` for a call with no rows.
    pub fn receipt_reference(
        &self,
        call_id: &str,
    ) -> Result<Option<crate::receipt::Reference>, StoreError> {
        let (first, last): (Option<i64>, Option<i64>) = self
            .conn
            .prepare_cached("SELECT min(seq), max(seq) FROM events WHERE call_id = ?1")
            .and_then(|mut s| s.query_row([call_id], |r| Ok((r.get(0)?, r.get(1)?))))
            .map_err(sql("finding a call's rows"))?;
        let (Some(first), Some(last)) = (first, last) else {
            return Ok(None);
        };
        let checkpoint = self
            .conn
            .prepare_cached(
                "SELECT size, root FROM checkpoints WHERE size >= ?1 ORDER BY size, id LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row([last], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
                })
                .optional()
            })
            .map_err(sql("reading checkpoints"))?;
        Ok(Some(crate::receipt::Reference {
            call_id: call_id.to_owned(),
            log: self.identity.origin.clone(),
            index: (first.max(1) - 1) as u64,
            checkpoint: checkpoint
                .map(|(size, root)| (size.max(0) as u64, crate::digest::hex(&root))),
        }))
    }

    /// The size of the largest stored checkpoint; 0 with none.
    pub fn largest_checkpoint(&self) -> Result<u64, StoreError> {
        let size: Option<i64> = self
            .conn
            .query_row("SELECT max(size) FROM checkpoints", [], |r| r.get(0))
            .map_err(sql("reading checkpoints"))?;
        Ok(size.map_or(0, |s| s.max(0) as u64))
    }

    /// The stored checkpoints of at least `size` leaves, smallest first, at most `limit`.
    pub fn checkpoints_covering(
        &self,
        size: u64,
        limit: usize,
    ) -> Result<Vec<StoredNote>, StoreError> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT size, note FROM checkpoints WHERE size >= ?1 ORDER BY size, id LIMIT ?2",
            )
            .map_err(sql("preparing a query"))?;
        statement
            .query_map(rusqlite::params![size as i64, limit as i64], |r| {
                Ok(StoredNote {
                    size: r.get::<_, i64>(0)?.max(0) as u64,
                    note: r.get(1)?,
                })
            })
            .and_then(|rows| rows.collect())
            .map_err(sql("reading checkpoints"))
    }

    /// The RFC 6962 audit path of leaf `index` (seq − 1) in the tree of the
    /// log's first `size` rows. With `cached`, the stored block roots are
    /// used and missing ones computed and stored; without, every block is
    /// computed from its rows (for when a path from the cache did not lead
    /// to a signed root).
    pub fn inclusion_path(
        &self,
        index: u64,
        size: u64,
        cached: bool,
    ) -> Result<Vec<Hash>, StoreError> {
        if index >= size {
            return Err(self.damaged(format!("row {} is not in the first {size}", index + 1)));
        }
        let complete = size / BLOCK;
        let mut blocks = if cached {
            self.stored_blocks(complete)?
        } else {
            Vec::new()
        };
        let known = blocks.len() as u64;
        if known < complete {
            let fresh = self.block_roots(known, complete)?;
            if cached {
                self.store_blocks(known, &fresh);
            }
            blocks.extend(fresh);
        }
        let mut leaves = HashMap::new();
        let own = index / BLOCK * BLOCK;
        for start in [own, complete * BLOCK] {
            let end = (start + BLOCK).min(size);
            for (i, leaf) in self.leaf_range(start, end)?.into_iter().enumerate() {
                leaves.insert(start + i as u64, leaf);
            }
        }
        let tree = Tree {
            blocks: &blocks,
            leaves: &leaves,
        };
        let mut path = Vec::new();
        tree.path(index, 0, size, &mut path)
            .ok_or_else(|| self.damaged(format!("row {} cannot be read", index + 1)))?;
        Ok(path)
    }

    /// Stores the roots of blocks `first`, `first + 1`, …, best effort: a
    /// cache a read-only or older database goes without.
    pub(crate) fn store_blocks(&self, first: u64, roots: &[Hash]) {
        let store = || -> rusqlite::Result<()> {
            let tx = self.conn.unchecked_transaction()?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT OR IGNORE INTO merkle_blocks (block, root) VALUES (?1, ?2)",
                )?;
                for (i, root) in roots.iter().enumerate() {
                    insert.execute(rusqlite::params![(first + i as u64) as i64, &root[..]])?;
                }
            }
            tx.commit()
        };
        if !roots.is_empty() {
            let _ = store();
        }
    }

    /// The stored roots of blocks 0, 1, … up to the first one missing
    /// (at most `count`); none in a database without the table.
    fn stored_blocks(&self, count: u64) -> Result<Vec<Hash>, StoreError> {
        let exists: Option<i64> = self
            .conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'merkle_blocks'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql("looking for the block table"))?;
        if exists.is_none() {
            return Ok(Vec::new());
        }
        let mut statement = self
            .conn
            .prepare_cached("SELECT block, root FROM merkle_blocks WHERE block < ?1 ORDER BY block")
            .map_err(sql("preparing a query"))?;
        let rows = statement
            .query_map([count as i64], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .map_err(sql("reading block roots"))?;
        let mut blocks = Vec::new();
        for row in rows {
            let (block, root) = row.map_err(sql("reading block roots"))?;
            match Hash::try_from(root.as_slice()) {
                Ok(root) if block == blocks.len() as i64 => blocks.push(root),
                _ => break,
            }
        }
        Ok(blocks)
    }

    /// The roots of blocks `from` up to (not including) `to`, from their rows.
    fn block_roots(&self, from: u64, to: u64) -> Result<Vec<Hash>, StoreError> {
        let leaves = self.leaf_range(from * BLOCK, to * BLOCK)?;
        Ok(leaves.chunks(BLOCK as usize).map(merkle_root).collect())
    }

    /// The stored leaves of rows `start + 1` … `end` (0-based `[start, end)`).
    fn leaf_range(&self, start: u64, end: u64) -> Result<Vec<Hash>, StoreError> {
        if start >= end {
            return Ok(Vec::new());
        }
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT seq, leaf FROM events WHERE seq > ?1 AND seq <= ?2 ORDER BY seq",
            )
            .map_err(sql("preparing a query"))?;
        let rows = statement
            .query_map([start as i64, end as i64], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .map_err(sql("reading leaves"))?;
        let mut leaves = Vec::with_capacity((end - start) as usize);
        for row in rows {
            let (seq, leaf) = row.map_err(sql("reading leaves"))?;
            let expected = start + leaves.len() as u64 + 1;
            match Hash::try_from(leaf.as_slice()) {
                Ok(leaf) if seq as u64 == expected => leaves.push(leaf),
                _ => {
                    return Err(self.damaged(format!(
                        "row {expected} is missing or its leaf is malformed (run `gavel verify`)"
                    )));
                }
            }
        }
        if leaves.len() as u64 != end - start {
            return Err(self.damaged(format!(
                "the log holds {} rows, fewer than the {end} a checkpoint covers (run `gavel verify`)",
                start + leaves.len() as u64
            )));
        }
        Ok(leaves)
    }

    fn damaged(&self, detail: String) -> StoreError {
        StoreError::Damaged {
            path: self.path.display().to_string(),
            detail,
        }
    }
}

/// The tree over a log's first leaves, as far as an audit path needs it:
/// block roots for whole aligned blocks, leaves for the rest.
struct Tree<'a> {
    blocks: &'a [Hash],
    leaves: &'a HashMap<u64, Hash>,
}

impl Tree<'_> {
    /// PATH(m, D[a..b)) of RFC 6962, appended to `path`; `None` when a
    /// leaf it needs was not loaded.
    fn path(&self, m: u64, a: u64, b: u64, path: &mut Vec<Hash>) -> Option<()> {
        let n = b - a;
        if n <= 1 {
            return Some(());
        }
        let k = split(n);
        if m < a + k {
            self.path(m, a, a + k, path)?;
            path.push(self.root(a + k, b)?);
        } else {
            self.path(m, a + k, b, path)?;
            path.push(self.root(a, a + k)?);
        }
        Some(())
    }

    /// MTH(D[a..b)).
    fn root(&self, a: u64, b: u64) -> Option<Hash> {
        let n = b - a;
        if n == 1 {
            return self.leaves.get(&a).copied();
        }
        if a.is_multiple_of(BLOCK) && n.is_multiple_of(BLOCK) && n.is_power_of_two() {
            let blocks = self
                .blocks
                .get((a / BLOCK) as usize..(b / BLOCK) as usize)?;
            return Some(merkle_root(blocks));
        }
        let k = split(n);
        Some(node_hash(&self.root(a, a + k)?, &self.root(a + k, b)?))
    }
}

/// The largest power of two smaller than `n` (n > 1).
fn split(n: u64) -> u64 {
    1 << (63 - (n - 1).leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paths from blocks and leaves are RFC 6962's, for leaves in whole
    /// blocks, in the partial last block, at block edges, and in trees
    /// smaller than a block.
    #[test]
    fn block_paths_are_the_plain_ones() {
        let all: Vec<Hash> = (0u32..1100).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        for size in [1u64, 2, 5, 255, 256, 257, 511, 512, 513, 1024, 1100] {
            let complete = size / BLOCK;
            let blocks: Vec<Hash> = all[..(complete * BLOCK) as usize]
                .chunks(BLOCK as usize)
                .map(merkle_root)
                .collect();
            for index in [
                0,
                1,
                size / 2,
                size.saturating_sub(2),
                size - 1,
                255,
                256,
                700,
            ] {
                if index >= size {
                    continue;
                }
                let mut leaves = HashMap::new();
                let own = index / BLOCK * BLOCK;
                for start in [own, complete * BLOCK] {
                    for i in start..(start + BLOCK).min(size) {
                        leaves.insert(i, all[i as usize]);
                    }
                }
                let tree = Tree {
                    blocks: &blocks,
                    leaves: &leaves,
                };
                let mut path = Vec::new();
                tree.path(index, 0, size, &mut path).unwrap();
                let expected =
                    crate::inclusion::inclusion_proof(&all[..size as usize], index).unwrap();
                assert_eq!(path, expected, "leaf {index} of {size}");
            }
        }
    }
}
