-- gavel audit store, schema 7: the labels of each session's calls, for
-- flow rules (docs/flows.md). Never edit this file once
-- shipped.
--
-- A flow rule (`after`, `not_after`) asks which earlier call of its
-- session first set a label. This table answers with one index seek, not a
-- scan of the session. gavel writes it in the transaction that appends
-- each decision row (its `labels`, for a decision that is not a deny,
-- with a session); it is in no hash. `gavel replay` re-derives the same
-- state from the chained rows alone, so a row missing here shows there as
-- drift.
CREATE TABLE session_labels (
    session TEXT    NOT NULL,
    label   TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    call_id TEXT    NOT NULL,
    PRIMARY KEY (session, label, seq)
) WITHOUT ROWID;

-- Decisions recorded before this schema carry no labels: nothing to copy.

CREATE TRIGGER session_labels_no_update BEFORE UPDATE ON session_labels
BEGIN SELECT RAISE(ABORT, 'gavel: session labels are append-only'); END;
CREATE TRIGGER session_labels_no_delete BEFORE DELETE ON session_labels
BEGIN SELECT RAISE(ABORT, 'gavel: session labels are append-only'); END;
