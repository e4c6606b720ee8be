-- gavel audit store: anomaly rows are found without scanning the log.
-- See docs/record-format.md ("Anomalies and size-limited fields").
-- Never edit this file once shipped; add a later migration instead.

-- A partial index: only `anomaly` rows (rare) are in it, so appends of
-- every other kind pay nothing for it.
CREATE INDEX events_anomaly ON events (seq) WHERE kind = 'anomaly';
