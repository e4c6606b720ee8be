-- The roots of the log's Merkle tree over each complete, aligned block of
-- 256 leaves: block b covers rows 256·b + 1 … 256·b + 256 (see
-- docs/receipts.md). Not part of any hash or signature: they only let
-- `gavel receipt` build an inclusion proof from about n/256 stored roots
-- instead of every leaf. gavel checks each proof it builds against the
-- signed root, so a wrong block is caught and rebuilt from the rows.
CREATE TABLE merkle_blocks (
    block INTEGER PRIMARY KEY,
    root  BLOB    NOT NULL
);

-- The smallest checkpoint covering a row, found without a scan.
CREATE INDEX checkpoints_size ON checkpoints (size);
