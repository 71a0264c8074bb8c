-- Schema version 7: spare GPUs (docs/workers.md).
--
-- Trials gain the state 'preempted' (a worker gave the trial back because
-- other people's work wanted its GPU, or its --hours ended; it waits at
-- the front of its experiment's line to resume from its checkpoint, with
-- the same attempt) and the column `preemptions`. A CHECK constraint cannot
-- be altered in place, so the table is rebuilt as migrations 002 and 005
-- rebuilt tables (make, copy, drop, rename, then its indexes again); rungd
-- runs migrations with foreign keys off and checks them after.

CREATE TABLE trials_v7 (
    -- Positive id, unique across experiments, assigned by rungd.
    id INTEGER PRIMARY KEY CHECK (id >= 1),
    -- The experiment it belongs to.
    experiment_id INTEGER NOT NULL REFERENCES experiments (id) CHECK (experiment_id >= 1),
    -- 0-based position within the experiment; decides its config.
    number INTEGER NOT NULL CHECK (number >= 0),
    -- Lifecycle (docs/api.md, "The trial object"): pending again when a
    -- failed attempt is retried or a paused trial is promoted; preempted
    -- when its worker gave it back, until it is leased again.
    state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'completed', 'stopped',
                                         'failed', 'canceled', 'paused', 'preempted')),
    -- The parameter values (a JSON object).
    config TEXT NOT NULL CHECK (json_valid(config) AND json_type(config) = 'object'),
    -- 1-based attempt; grows by one per retry (at most max_failures + 1),
    -- not with a preemption.
    attempt INTEGER NOT NULL CHECK (attempt >= 1),
    -- The worker holding (or that last held) the trial; NULL before a lease.
    worker_id INTEGER REFERENCES workers (id) CHECK (worker_id IS NULL OR worker_id >= 1),
    -- 32 hex characters while a worker may report on the trial, else NULL.
    -- Lease expiry is not stored: after a restart every running trial gets a
    -- fresh lease, since no worker could heartbeat while rungd was down.
    lease_token TEXT CHECK (lease_token IS NULL OR length(lease_token) = 32),
    -- The resources granted at lease time (JSON), NULL before a lease.
    resources TEXT CHECK (resources IS NULL OR json_valid(resources)),
    -- Set when the trial must stop at its next report or heartbeat
    -- (stop_kind says what it becomes).
    stop_requested INTEGER NOT NULL DEFAULT 0 CHECK (stop_requested IN (0, 1)),
    -- Why the last attempt failed, NULL when it did not.
    error TEXT CHECK (error IS NULL OR length(error) <= 8192),
    -- When the proposer made it.
    created_at INTEGER NOT NULL CHECK (created_at >= 0),
    -- When the current attempt was leased; NULL while pending or preempted.
    started_at INTEGER CHECK (started_at IS NULL OR started_at >= created_at),
    -- When the trial became terminal; NULL until then.
    ended_at INTEGER CHECK (ended_at IS NULL OR ended_at >= created_at),
    -- The rung (its time_attr milestone) where the scheduler stopped or
    -- paused the trial; NULL otherwise.
    rung REAL CHECK (rung IS NULL OR rung > 0),
    -- A pending or preempted trial's place in its experiment's line
    -- (schema 003); NULL otherwise.
    queue_pos INTEGER,
    -- The summary of its current attempt's reports (schema 004): the last
    -- step, the last metrics, the best value of the metric and its step.
    step INTEGER,
    last_metrics TEXT,
    best_value REAL,
    best_step INTEGER,
    -- The last lines of its log, as its worker sent them (at most 8 KiB).
    log_tail TEXT,
    -- Who stopped a stopped trial (schema 005).
    stopped_by TEXT CHECK (stopped_by IS NULL OR stopped_by IN ('scheduler', 'user', 'experiment')),
    -- What a running trial becomes when stop_requested is 1 (schema 005).
    stop_kind TEXT CHECK (stop_kind IS NULL OR stop_kind IN ('cancel', 'user', 'experiment', 'pause')),
    -- 1 for a trial paused by its user, 0 for one paused by the scheduler.
    user_paused INTEGER NOT NULL DEFAULT 0 CHECK (user_paused IN (0, 1)),
    -- Its invalid @rung lines as its worker counted them; NULL for none.
    warnings TEXT CHECK (warnings IS NULL OR json_valid(warnings)),
    -- The members of a gang trial's current or last attempt (schema 006).
    gang TEXT CHECK (gang IS NULL OR (json_valid(gang) AND json_type(gang) = 'object')),
    -- How many times a worker gave the trial back (finish status
    -- "preempted"); never counted as a failure.
    preemptions INTEGER NOT NULL DEFAULT 0 CHECK (preemptions >= 0),
    UNIQUE (experiment_id, number)
);

INSERT INTO trials_v7 (id, experiment_id, number, state, config, attempt, worker_id, lease_token,
                       resources, stop_requested, error, created_at, started_at, ended_at, rung,
                       queue_pos, step, last_metrics, best_value, best_step, log_tail,
                       stopped_by, stop_kind, user_paused, warnings, gang, preemptions)
SELECT id, experiment_id, number, state, config, attempt, worker_id, lease_token, resources,
       stop_requested, error, created_at, started_at, ended_at, rung, queue_pos, step,
       last_metrics, best_value, best_step, log_tail, stopped_by, stop_kind, user_paused,
       warnings, gang, 0
FROM trials;

DROP TABLE trials;
ALTER TABLE trials_v7 RENAME TO trials;
CREATE INDEX trials_by_experiment_state ON trials (experiment_id, state, number);
CREATE INDEX trials_by_state ON trials (state, experiment_id);
