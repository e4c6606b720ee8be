-- gavel central store, schema 1: every host's log, verified on ingest.
-- See docs/central.md. Plain SQL, applied in order by `gavel central init`
-- into the schema the URL (or --schema) selects. Never edit this file once
-- shipped; add 0002_<what>.sql instead.
--
-- Per-host inboxes (schema `gavel_inbox`, or `<schema>_inbox` for a central
-- store in another schema than `public`) are made by `gavel central enroll`,
-- not here: one set of tables per host, since COPY does not work on tables
-- with row-level security.

-- The enrolled hosts: the name the central side knows a host by, the
-- database role it pushes as, and the verifier key of its checkpoints
-- (the text form of docs/checkpoints.md). The host name recorded in rows
-- (`events.host`) is what the host said; this one is what enrollment proved.
CREATE TABLE hosts (
    host        text   PRIMARY KEY,
    role        text   UNIQUE NOT NULL,
    verifier    text   NOT NULL,
    enrolled_us bigint NOT NULL
);

-- One row per host log (one local audit database): its identity and its
-- head. Rows 1..size are accepted; `chain` is the chain value after row
-- `size` (the genesis when 0); `frontier` the Merkle frontier over leaves
-- 1..size (the 32-byte roots of the perfect subtrees, largest first,
-- concatenated). `switch_seq`/`switch_format`: the log's `format` row, if
-- any. `cut_*`: retention dropped rows 1..cut_size; chain and frontier
-- after them.
CREATE TABLE logs (
    log_id        bytea   PRIMARY KEY,
    host          text    NOT NULL REFERENCES hosts,
    origin        text    NOT NULL,
    format        integer NOT NULL,
    created_us    bigint  NOT NULL,
    genesis       bytea   NOT NULL,
    size          bigint  NOT NULL DEFAULT 0,
    chain         bytea   NOT NULL,
    frontier      bytea   NOT NULL DEFAULT ''::bytea,
    switch_seq    bigint,
    switch_format integer,
    cut_size      bigint  NOT NULL DEFAULT 0,
    cut_chain     bytea,
    cut_frontier  bytea
);
CREATE INDEX logs_host ON logs (host);

-- The accepted rows: the SQLite columns, plus `part_us`, the central
-- accept time of the row's batch (never less than the log's previous
-- batch's, so each log's rows are in seq order across partitions and
-- retention drops a prefix). Monthly partitions `events_YYYYMM` are made
-- by ingest on demand.
CREATE TABLE events (
    log_id   bytea  NOT NULL,
    seq      bigint NOT NULL,
    ts_us    bigint NOT NULL,
    kind     text   NOT NULL,
    call_id  text   NOT NULL,
    tool     text,
    action   text,
    rule_id  text,
    approval text,
    status   text,
    "user"   text,
    host     text,
    client   text,
    session  text,
    agent    text,
    payload  bytea  NOT NULL,
    leaf     bytea  NOT NULL,
    chain    bytea  NOT NULL,
    part_us  bigint NOT NULL,
    PRIMARY KEY (log_id, seq, part_us)
) PARTITION BY RANGE (part_us);
-- The primary key serves (log_id, seq); the others serve what `log` filters on.
CREATE INDEX events_rule ON events (rule_id) WHERE kind = 'decision';
CREATE INDEX events_call ON events (call_id);
CREATE INDEX events_ts ON events (ts_us);

-- Policy texts by digest, as pushed (a text whose SHA-256 is not its digest is not kept).
CREATE TABLE policies (
    digest        text   PRIMARY KEY,
    name          text   NOT NULL,
    source        text   NOT NULL,
    first_seen_us bigint NOT NULL
);

-- The central log's identity and key: one row.
CREATE TABLE central_meta (
    id         integer PRIMARY KEY CHECK (id = 1),
    origin     text    NOT NULL,
    created_us bigint  NOT NULL,
    genesis    bytea   NOT NULL,
    verifier   text    NOT NULL
);

-- One leaf per accepted batch (its largest host checkpoint):
-- leaf = SHA-256(0x00 ‖ lp("gavel/central/v1") ‖ lp(note)), chained as host
-- rows are; `frontier` is the Merkle frontier over leaves 1..seq (as in
-- `logs`), so a central checkpoint is signed without rereading every leaf.
CREATE TABLE central_log (
    seq      bigint PRIMARY KEY,
    ts_us    bigint NOT NULL,
    log_id   bytea  NOT NULL REFERENCES logs,
    size     bigint NOT NULL,
    note     text   NOT NULL,
    leaf     bytea  NOT NULL,
    chain    bytea  NOT NULL,
    frontier bytea  NOT NULL
);

-- The accepted host checkpoints (the largest of each accepted batch): the
-- host's signed note as pushed, the central cosignature line (C2SP
-- cosignature/v1) and its central_log leaf.
CREATE TABLE checkpoints (
    id          bigserial PRIMARY KEY,
    log_id      bytea  NOT NULL REFERENCES logs,
    size        bigint NOT NULL,
    root        bytea  NOT NULL,
    note        text   NOT NULL,
    cosignature text   NOT NULL,
    central_seq bigint NOT NULL REFERENCES central_log (seq),
    accepted_us bigint NOT NULL
);
CREATE INDEX checkpoints_log ON checkpoints (log_id, size);

-- The central log's own checkpoints, signed by the central key (a C2SP
-- note that an external witness can cosign).
CREATE TABLE central_checkpoints (
    id   bigserial PRIMARY KEY,
    size bigint NOT NULL,
    root bytea  NOT NULL,
    note text   NOT NULL
);

-- Every refused push: who, which log and rows, a stable problem code
-- (rewritten, truncated, fork, gap, checkpoint_signature, checkpoint_root,
-- unknown_log, format) and a sentence.
CREATE TABLE refusals (
    id        bigserial PRIMARY KEY,
    host      text   NOT NULL,
    log_id    bytea,
    at_us     bigint NOT NULL,
    first_seq bigint,
    last_seq  bigint,
    problem   text   NOT NULL,
    detail    text   NOT NULL
);
CREATE INDEX refusals_host ON refusals (host, id);

-- The rows of a refused batch kept as evidence (same columns as an inbox):
-- at most 1,000 per refusal, from its first bad seq on.
CREATE TABLE refused_events (
    refusal  bigint NOT NULL REFERENCES refusals,
    log_id   bytea  NOT NULL,
    seq      bigint NOT NULL,
    ts_us    bigint NOT NULL,
    kind     text   NOT NULL,
    call_id  text   NOT NULL,
    tool     text,
    action   text,
    rule_id  text,
    approval text,
    status   text,
    "user"   text,
    host     text,
    client   text,
    session  text,
    agent    text,
    payload  bytea  NOT NULL,
    leaf     bytea  NOT NULL,
    chain    bytea  NOT NULL
);
CREATE INDEX refused_events_refusal ON refused_events (refusal, seq);

-- Refuse edits by accident. Verification does not rely on these (the
-- owner can drop them: that is what the chains and signatures are for).
-- Retention (`gavel central retain`) drops whole month partitions, which
-- no row trigger sees; nothing deletes rows from events.
CREATE FUNCTION gavel_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'gavel: % is append-only (% refused)', TG_TABLE_NAME, TG_OP;
END
$$;

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION gavel_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION gavel_append_only();
CREATE TRIGGER central_log_append_only BEFORE UPDATE OR DELETE ON central_log
    FOR EACH ROW EXECUTE FUNCTION gavel_append_only();
CREATE TRIGGER checkpoints_append_only BEFORE UPDATE OR DELETE ON checkpoints
    FOR EACH ROW EXECUTE FUNCTION gavel_append_only();
CREATE TRIGGER central_checkpoints_append_only BEFORE UPDATE OR DELETE ON central_checkpoints
    FOR EACH ROW EXECUTE FUNCTION gavel_append_only();
CREATE TRIGGER refusals_append_only BEFORE UPDATE OR DELETE ON refusals
    FOR EACH ROW EXECUTE FUNCTION gavel_append_only();
CREATE TRIGGER central_meta_append_only BEFORE UPDATE OR DELETE ON central_meta
    FOR EACH ROW EXECUTE FUNCTION gavel_append_only();
