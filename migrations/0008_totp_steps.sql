-- gavel audit store, schema 8: the TOTP time steps each approver has used
-- (docs/approvals.md, "Approvers"). Never edit this file once shipped.
--
-- An approval by an enrolled person's authenticator code records the
-- code's time step in its chained row; gavel writes the same (name, step)
-- here in that transaction, and the key refuses a second use of one code
-- (RFC 6238, section 5.2). Derived from the chained rows, in no hash.
CREATE TABLE totp_steps (
    name TEXT    NOT NULL,
    step INTEGER NOT NULL,
    seq  INTEGER NOT NULL,
    PRIMARY KEY (name, step)
) WITHOUT ROWID;

CREATE TRIGGER totp_steps_no_update BEFORE UPDATE ON totp_steps
BEGIN SELECT RAISE(ABORT, 'gavel: used codes are append-only'); END;
CREATE TRIGGER totp_steps_no_delete BEFORE DELETE ON totp_steps
BEGIN SELECT RAISE(ABORT, 'gavel: used codes are append-only'); END;
