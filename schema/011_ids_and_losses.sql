-- Schema version 11: ids are never given twice, and lost workers are
-- counted apart from failures.
--
-- rungd gives the next experiment or trial the highest id in its table
-- plus one; after the newest experiment was deleted that id came back.
-- `id_floors` keeps the highest id ever given of each kind, written when
-- an experiment is deleted (server/store.c store_delete_experiment) and
-- read at start (load_totals).
CREATE TABLE id_floors (
    -- 'experiments' or 'trials'.
    kind TEXT PRIMARY KEY CHECK (kind IN ('experiments', 'trials')),
    -- The highest id of that kind ever given out.
    max_id INTEGER NOT NULL CHECK (max_id >= 0)
);

-- How many of a trial's attempts ended because its worker was lost (its
-- lease ran out): such an attempt is retried without counting against
-- max_failures, up to a bound of its own (docs/api.md, "The trial
-- object"). Its failures so far are attempt - 1 - worker_losses.
ALTER TABLE trials ADD COLUMN worker_losses INTEGER NOT NULL DEFAULT 0 CHECK (worker_losses >= 0);
