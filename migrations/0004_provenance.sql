-- gavel audit store, schema 4: record format 2's provenance columns.
-- See docs/record-format.md ("Format 2"). Never edit this file once shipped.
--
-- Who made each call, from where, through what: the OS user, the host
-- name, the client, the client's session and the subagent. Format-2 rows
-- hash them in their encoding (so editing one breaks the leaf, like any
-- other column); format-1 rows hold NULL and do not hash them.
--
-- No index: filters compare these columns on the decision rows a listing
-- reads anyway, and every index would be one more b-tree page rewritten
-- by each append.
ALTER TABLE events ADD COLUMN user TEXT;
ALTER TABLE events ADD COLUMN host TEXT;
ALTER TABLE events ADD COLUMN client TEXT;
ALTER TABLE events ADD COLUMN session TEXT;
ALTER TABLE events ADD COLUMN agent TEXT;
