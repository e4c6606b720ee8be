-- gavel central store, schema 2: the note that marks a retention cut, the
-- index the read side uses per call, and its safe JSON conversion.
-- See docs/central.md ("Retention"). Never edit this file once shipped.
--
-- `gavel central retain` drops whole monthly partitions of `events`. For
-- each log it cut, `logs` keeps the chain value and Merkle frontier after
-- the last dropped row (cut_chain, cut_frontier, from 0001) and this note:
-- a C2SP checkpoint of the host's log at the cut (its origin, cut_size and
-- the root of rows 1..cut_size) with the extension line
-- `gavel-cut <base64 cut_chain>`, signed by the central key. `gavel verify`
-- starts each log at its cut and checks the note.
ALTER TABLE logs ADD COLUMN cut_note text;

-- What the read side asks per call: the call's other events in its own log
-- (its request, last approval, first result, anomalies; `show` and
-- `explain`). Call ids are unique per log, not across logs: `(call_id)`
-- alone makes each of those probes read the call's rows in every log, and
-- the primary key alone reads the whole log.
CREATE INDEX events_log_call ON events (log_id, call_id);

-- A payload as jsonb, or NULL when jsonb cannot hold it: a `\u0000` escape
-- (valid JSON, refused by jsonb), or bytes that are not UTF-8 (a host signs
-- whatever bytes it likes). The read side converts payloads only through
-- this, so one such row never fails a listing, a count or a filter for
-- everybody: the row is listed, its payload just matches no JSON filter.
-- PARALLEL UNSAFE: catching the error takes a subtransaction, which a
-- parallel query cannot start (PostgreSQL 15 has no pg_input_is_valid, and
-- no other way to test UTF-8 without the error), so statements that use it
-- run without parallel workers.
CREATE FUNCTION gavel_jsonb(payload bytea) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL UNSAFE AS $$
BEGIN
  RETURN convert_from(payload, 'UTF8')::jsonb;
EXCEPTION WHEN OTHERS THEN
  RETURN NULL;
END
$$;
