-- Schema version 9: checkpoints that travel through rungd (docs/schedulers.md,
-- "pbt"). A trial that exploits another on a worker other than the donor's
-- gets the donor's folder from rungd: the donor's worker uploads it (a tar),
-- rungd keeps the file under its data folder (<folder of the database>/
-- checkpoints/<trial>-<step>.tar, written and renamed before this row is
-- committed) and the row says it is there, with its content hash.
CREATE TABLE checkpoints (
    -- The trial whose folder it is, and the step of the checkpoint asked for.
    trial_id INTEGER NOT NULL REFERENCES trials (id) CHECK (trial_id >= 1),
    step INTEGER NOT NULL CHECK (step >= 0),
    -- SHA-256 of the file, 64 lowercase hex digits, and its size in bytes.
    sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
    size INTEGER NOT NULL CHECK (size >= 0),
    -- When it was stored (ms since the epoch).
    stored_at INTEGER NOT NULL CHECK (stored_at >= 0),
    PRIMARY KEY (trial_id, step)
) WITHOUT ROWID;
