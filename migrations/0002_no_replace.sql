-- gavel audit store, schema 2: `INSERT OR REPLACE` cannot rewrite a row.
-- Never edit this file once shipped; add 0003_<what>.sql instead.
--
-- REPLACE deletes the conflicting row without firing the delete triggers
-- (unless recursive_triggers is on), so the append-only triggers of
-- 0001_init.sql alone do not stop it. These BEFORE INSERT triggers refuse
-- an insert whose key is already taken, whatever its conflict clause. Like
-- the others they refuse edits by accident; the hash chain and the signed
-- checkpoints are what detect an edit by someone who drops them.

CREATE TRIGGER events_no_replace BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq)
BEGIN SELECT RAISE(ABORT, 'gavel: audit events are append-only'); END;

CREATE TRIGGER checkpoints_no_replace BEFORE INSERT ON checkpoints
WHEN EXISTS (SELECT 1 FROM checkpoints WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'gavel: checkpoints are append-only'); END;

CREATE TRIGGER log_meta_no_replace BEFORE INSERT ON log_meta
WHEN EXISTS (SELECT 1 FROM log_meta)
BEGIN SELECT RAISE(ABORT, 'gavel: the log identity is fixed'); END;

-- A policy text is kept once per digest: a second insert of a digest is
-- skipped (gavel's own INSERT OR IGNORE stays quiet), never replaces it.
CREATE TRIGGER policies_no_replace BEFORE INSERT ON policies
WHEN EXISTS (SELECT 1 FROM policies WHERE digest = NEW.digest)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER policies_no_update BEFORE UPDATE ON policies
BEGIN SELECT RAISE(ABORT, 'gavel: recorded policies are fixed'); END;
CREATE TRIGGER policies_no_delete BEFORE DELETE ON policies
BEGIN SELECT RAISE(ABORT, 'gavel: recorded policies are fixed'); END;
