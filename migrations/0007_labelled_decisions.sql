-- gavel audit store, schema 7: the labelled decisions of each session.
-- See docs/policy.md ("Session flows"). Never edit this file once shipped.
--
-- A flow rule (`after`, `not_after`) reads the labels the earlier calls of
-- its session carry. Only decision rows whose payload holds a `"labels":`
-- key are indexed (few: a policy labels secrets reads and egress, not
-- every call), so the read costs what those rows cost, not the session's
-- length, and an unlabelled append writes no page of this index. A row
-- indexed by a `"labels":` key deeper in its payload is only read and
-- skipped. Nothing here is hashed: the index is rebuilt from the rows.
CREATE INDEX events_labelled ON events (session, seq)
    WHERE kind = 'decision' AND instr(payload, X'226C6162656C73223A') > 0;
