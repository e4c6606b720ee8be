//! Signing checkpoints of the log: of all of it after a full check, or of
//! the rows since the newest one, from the leaves this process kept where
//! it wrote them itself.

use rusqlite::OptionalExtension;

use super::*;
use crate::store::BLOCK_LEVEL;

impl Store {
    /// Verifies the log, then records and returns a checkpoint of it signed by `key`.
    /// Refuses (returns the failing report) when the log does not verify.
    pub fn checkpoint(
        &mut self,
        key: &crate::checkpoint::SigningKey,
    ) -> Result<Result<(Checkpoint, String), VerifyReport>, StoreError> {
        let report = self.verify(
            &VerifyOptions {
                root: true,
                ..VerifyOptions::default()
            },
            &mut |_| {},
        )?;
        let (true, Some(root)) = (report.ok, report.root) else {
            return Ok(Err(report));
        };
        let checkpoint = Checkpoint {
            origin: self.identity.origin.clone(),
            size: report.rows,
            root,
        };
        let frontier = report.frontier.unwrap_or_default();
        let (first, blocks) = report.blocks.unwrap_or_default();
        let note = self.store_checkpoint(key, &checkpoint, &frontier, (first, &blocks))?;
        Ok(Ok((checkpoint, note)))
    }

    /// Signs `checkpoint` and stores it with the frontier of its tree, and
    /// the roots of the 256-leaf blocks it completed (the first one's number, the roots).
    fn store_checkpoint(
        &mut self,
        key: &crate::checkpoint::SigningKey,
        checkpoint: &Checkpoint,
        frontier: &[Hash],
        (first, blocks): (u64, &[Hash]),
    ) -> Result<String, StoreError> {
        let note = key.sign(checkpoint).map_err(|e| StoreError::Sign {
            detail: e.to_string(),
        })?;
        // A checkpoint need not wait for the disk: the rows it vouches for
        // already did, and one lost to a crash is made again at the next
        // call. (Under `Durability::Full` the next commit syncs it.)
        let full = self.durability == Some(crate::store::Durability::Full);
        if full {
            crate::store::set_synchronous(&self.conn, crate::store::Durability::Normal)?;
        }
        let inserted = self.conn
            .execute(
                "INSERT INTO checkpoints (size, root, note, created_us, frontier) VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![
                    checkpoint.size,
                    &checkpoint.root[..],
                    note,
                    chrono::Utc::now().timestamp_micros(),
                    frontier.concat()
                ],
            )
            .map_err(sql("storing a checkpoint"));
        self.store_blocks(first, blocks);
        if full {
            crate::store::set_synchronous(&self.conn, crate::store::Durability::Full)?;
        }
        inserted?;
        Ok(note)
    }

    /// A checkpoint made without reading the whole log: when at least
    /// `every` rows were appended since the newest checkpoint that stored
    /// its frontier, only those rows are checked (their chain links from
    /// the row before them, each leaf matches its row) and added to the
    /// tree, which is signed with `key`. With no such checkpoint yet, the
    /// whole log is verified once ([`Store::checkpoint`]). `Ok(None)` when
    /// fewer than `every` rows are new; a report when the new rows (or the
    /// log) do not verify, and nothing is signed.
    pub fn checkpoint_since_last(
        &mut self,
        key: &crate::checkpoint::SigningKey,
        every: u64,
    ) -> Result<Option<Signed>, StoreError> {
        let last: Option<i64> = self
            .conn
            .query_row("SELECT max(seq) FROM events", [], |r| r.get(0))
            .map_err(sql("sizing the log"))?;
        let rows = last.map_or(0, |seq| seq.max(0) as u64);
        let newest: Option<(i64, Vec<u8>, Option<Vec<u8>>)> = self
            .conn
            .query_row(
                "SELECT size, root, frontier FROM checkpoints ORDER BY id DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(sql("reading the newest checkpoint"))?;
        let since = newest
            .as_ref()
            .map_or(0, |(size, _, _)| (*size).max(0) as u64);
        if rows == 0 || rows < since.saturating_add(every.max(1)) {
            return Ok(None);
        }
        // A log with no checkpoint yet whose every row this process
        // appended: the Merkle tree starts empty, with nothing to read back.
        let fresh = newest.is_none() && self.appended.rows(1, rows).is_some();
        let builder = newest.and_then(|(size, root, frontier)| {
            let hashes: Vec<Hash> = frontier?
                .chunks(32)
                .map(|c| <Hash>::try_from(c).ok())
                .collect::<Option<_>>()?;
            let builder = MerkleBuilder::from_frontier(size.max(0) as u64, hashes)?;
            (builder.root()[..] == root[..]).then_some(builder)
        });
        let Some(builder) = builder.or_else(|| fresh.then(MerkleBuilder::new)) else {
            return self.checkpoint(key).map(Some);
        };
        let start = builder.len() + 1;
        // Rows this process appended itself need no reading back.
        if let Some(leaves) = self.appended.rows(start, rows) {
            let mut merkle = builder;
            let mut blocks = Vec::new();
            for leaf in leaves {
                blocks.extend(merkle.push_completing(*leaf, BLOCK_LEVEL));
            }
            let first = (merkle.len() >> BLOCK_LEVEL).saturating_sub(blocks.len() as u64);
            let checkpoint = Checkpoint {
                origin: self.identity.origin.clone(),
                size: merkle.len(),
                root: merkle.root(),
            };
            let note =
                self.store_checkpoint(key, &checkpoint, merkle.frontier(), (first, &blocks))?;
            return Ok(Some(Ok((checkpoint, note))));
        }
        let previous: Hash = if start == 1 {
            self.identity.genesis
        } else {
            let chain: Option<Vec<u8>> = self
                .conn
                .query_row(
                    "SELECT chain FROM events WHERE seq = ?1",
                    [(start - 1) as i64],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql("reading a chain value"))?;
            match chain.as_deref().map(<Hash>::try_from) {
                Some(Ok(hash)) => hash,
                // A damaged row before the new ones: the full check says what.
                _ => return self.checkpoint(key).map(Some),
            }
        };
        let formats = self.formats()?;
        let mut checker = Checker::resume(previous, start - 1, formats.of(start as i64));
        checker.merkle = Some(builder);
        let mut check = |chunk: Vec<RowCheck>| -> Option<VerifyReport> {
            chunk.into_iter().find_map(|row| checker.row(row))
        };
        if let Some(report) = self.scan(start as i64, &mut check)? {
            return Ok(Some(Err(report)));
        }
        let merkle = checker.merkle.take().unwrap_or_default();
        let (first, blocks) = std::mem::take(&mut checker.blocks);
        let checkpoint = Checkpoint {
            origin: self.identity.origin.clone(),
            size: merkle.len(),
            root: merkle.root(),
        };
        let note = self.store_checkpoint(key, &checkpoint, merkle.frontier(), (first, &blocks))?;
        Ok(Some(Ok((checkpoint, note))))
    }
}
