-- gavel audit store, format 1. See docs/record-format.md.
-- Never edit this file once shipped; add 0002_<what>.sql instead.

CREATE TABLE log_meta (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    log_id     BLOB    NOT NULL,
    origin     TEXT    NOT NULL,
    format     INTEGER NOT NULL,
    created_us INTEGER NOT NULL,
    genesis    BLOB    NOT NULL
);

CREATE TABLE events (
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

-- Every commit rewrites each b-tree page it touches, so indexes are few:
-- calls are found by id, and `log --rule` (the query reviewers run most) has
-- a partial index over decision rows; other filters scan the decisions.
CREATE INDEX events_call ON events (call_id, kind);
CREATE INDEX events_rule ON events (rule_id) WHERE kind = 'decision';

-- The text of every policy that decided a call, by the digest the chain
-- records; a text whose SHA-256 differs from its digest is not trusted.
CREATE TABLE policies (
    digest        TEXT PRIMARY KEY,
    name          TEXT    NOT NULL,
    source        TEXT    NOT NULL,
    first_seen_us INTEGER NOT NULL
);

CREATE TABLE checkpoints (
    id         INTEGER PRIMARY KEY,
    size       INTEGER NOT NULL,
    root       BLOB    NOT NULL,
    note       TEXT    NOT NULL,
    created_us INTEGER NOT NULL
);

-- Refuse edits by accident. Verification does not rely on these: anyone
-- with write access can drop them, which is what the hash chain is for.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'gavel: audit events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'gavel: audit events are append-only'); END;
CREATE TRIGGER log_meta_no_update BEFORE UPDATE ON log_meta
BEGIN SELECT RAISE(ABORT, 'gavel: the log identity is fixed'); END;
CREATE TRIGGER log_meta_no_delete BEFORE DELETE ON log_meta
BEGIN SELECT RAISE(ABORT, 'gavel: the log identity is fixed'); END;
CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints
BEGIN SELECT RAISE(ABORT, 'gavel: checkpoints are append-only'); END;
CREATE TRIGGER checkpoints_no_delete BEFORE DELETE ON checkpoints
BEGIN SELECT RAISE(ABORT, 'gavel: checkpoints are append-only'); END;
