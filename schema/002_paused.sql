-- Schema version 2: early stopping (issue "ASHA").
--
-- Trials gain the state 'paused' (the promote variant of ASHA pauses a trial
-- at a rung until it is promoted) and the column `rung`. A CHECK constraint
-- cannot be altered in place, so the table is rebuilt as SQLite's "ALTER
-- TABLE" page describes: make the new table, copy, drop, rename. rungd runs
-- migrations with foreign keys off and checks them before turning them on.

CREATE TABLE trials_v2 (
    -- Positive id, unique across experiments, assigned by rungd.
    id INTEGER PRIMARY KEY CHECK (id >= 1),
    -- The experiment it belongs to.
    experiment_id INTEGER NOT NULL REFERENCES experiments (id) CHECK (experiment_id >= 1),
    -- 0-based position within the experiment; decides its config.
    number INTEGER NOT NULL CHECK (number >= 0),
    -- Lifecycle; pending again when a failed attempt is retried or a paused
    -- trial is promoted (scheduler asha with promote).
    state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'completed', 'stopped',
                                         'failed', 'canceled', 'paused')),
    -- The parameter values (a JSON object).
    config TEXT NOT NULL CHECK (json_valid(config) AND json_type(config) = 'object'),
    -- 1-based attempt; grows by one per retry (at most max_failures + 1).
    attempt INTEGER NOT NULL CHECK (attempt >= 1),
    -- The worker holding (or that last held) the trial; NULL before a lease.
    worker_id INTEGER REFERENCES workers (id) CHECK (worker_id IS NULL OR worker_id >= 1),
    -- 32 hex characters while a worker may report on the trial, else NULL.
    -- Lease expiry is not stored: after a restart every running trial gets a
    -- fresh lease, since no worker could heartbeat while rungd was down.
    lease_token TEXT CHECK (lease_token IS NULL OR length(lease_token) = 32),
    -- The resources granted at lease time (JSON), NULL before a lease.
    resources TEXT CHECK (resources IS NULL OR json_valid(resources)),
    -- Set when the trial must stop at its next report (its experiment was
    -- canceled while it ran).
    stop_requested INTEGER NOT NULL DEFAULT 0 CHECK (stop_requested IN (0, 1)),
    -- Why the last attempt failed, NULL when it did not.
    error TEXT CHECK (error IS NULL OR length(error) <= 8192),
    -- When the proposer made it.
    created_at INTEGER NOT NULL CHECK (created_at >= 0),
    -- When the current attempt was leased; NULL while pending.
    started_at INTEGER CHECK (started_at IS NULL OR started_at >= created_at),
    -- When the trial became terminal; NULL until then.
    ended_at INTEGER CHECK (ended_at IS NULL OR ended_at >= created_at),
    -- The rung (its time_attr milestone) where the scheduler stopped or
    -- paused the trial; NULL otherwise.
    rung REAL CHECK (rung IS NULL OR rung > 0),
    UNIQUE (experiment_id, number)
);

INSERT INTO trials_v2 (id, experiment_id, number, state, config, attempt, worker_id,
                       lease_token, resources, stop_requested, error, created_at,
                       started_at, ended_at, rung)
SELECT id, experiment_id, number, state, config, attempt, worker_id, lease_token, resources,
       stop_requested, error, created_at, started_at, ended_at, NULL
FROM trials;

DROP TABLE trials;
ALTER TABLE trials_v2 RENAME TO trials;
