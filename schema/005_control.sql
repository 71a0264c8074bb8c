-- Schema version 5: failures that show, and control of a running search.
--
-- Experiments gain the states 'paused' (no new trial is leased) and
-- 'failed' (too many trials failed, or no trial reports the metric), why
-- they ended, and the counters behind the rules that end them. A CHECK
-- constraint cannot be altered in place, so the experiments table is
-- rebuilt as migration 002 rebuilt trials (make, copy, drop, rename);
-- rungd runs migrations with foreign keys off and checks them after.

CREATE TABLE experiments_v5 (
    -- Positive id, assigned by rungd in creation order.
    id INTEGER PRIMARY KEY CHECK (id >= 1),
    -- A label for people; not unique.
    name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 256),
    -- The spec as validated JSON, compact; PATCH rewrites num_samples,
    -- priority, max_concurrent_trials and share in it.
    spec TEXT NOT NULL CHECK (json_valid(spec)),
    -- The searcher's effective seed (a restart proposes the same configs).
    seed INTEGER NOT NULL CHECK (seed >= 0),
    -- Lifecycle: running, paused (by its user), or ended: completed,
    -- failed, canceled. A completed or failed experiment can run again
    -- (num_samples raised, failed trials retried).
    state TEXT NOT NULL CHECK (state IN ('running', 'paused', 'completed', 'failed',
                                         'canceled')),
    -- Trials this experiment has in all (grid combinations x num_samples).
    total_trials INTEGER NOT NULL CHECK (total_trials >= 1),
    -- When it was submitted and when it ended (NULL while running or paused).
    created_at INTEGER NOT NULL CHECK (created_at >= 0),
    ended_at INTEGER CHECK (ended_at IS NULL OR ended_at >= created_at),
    -- Counts and best trial as JSON (schema 004).
    summary TEXT,
    -- Why it failed, for people; NULL unless failed.
    error TEXT CHECK (error IS NULL OR length(error) <= 8192),
    -- Why it ended (docs/api.md, "The experiment object"); NULL while it
    -- runs or is paused.
    ended_reason TEXT CHECK (ended_reason IS NULL OR ended_reason IN (
        'all_trials_ended', 'canceled', 'max_failed_trials', 'metric_missing',
        'time_budget', 'metric_threshold', 'patience')),
    -- The counters of the rules that end it (JSON, core.c "health"): whether
    -- any report carried the metric, the keys reported instead, the most
    -- frequent trial errors, finished trials since the best last improved.
    health TEXT CHECK (health IS NULL OR json_valid(health))
);

INSERT INTO experiments_v5 (id, name, spec, seed, state, total_trials, created_at, ended_at,
                            summary, ended_reason)
SELECT id, name, spec, seed, state, total_trials, created_at, ended_at, summary,
       CASE state WHEN 'completed' THEN 'all_trials_ended' WHEN 'canceled' THEN 'canceled' END
FROM experiments;
DROP TABLE experiments;
ALTER TABLE experiments_v5 RENAME TO experiments;
CREATE INDEX experiments_by_state ON experiments (state, id);

-- Who stopped a stopped trial: the scheduler (early stopping), its user
-- (POST /api/v1/trials/{id}/stop), or the experiment's end (a stop rule, or
-- the experiment failed). Every trial stopped before this version was
-- stopped by the scheduler.
ALTER TABLE trials ADD COLUMN stopped_by TEXT
    CHECK (stopped_by IS NULL OR stopped_by IN ('scheduler', 'user', 'experiment'));
UPDATE trials SET stopped_by = 'scheduler' WHERE state = 'stopped';
-- What a running trial becomes at its next report or heartbeat, when
-- stop_requested is 1: 'cancel' (its experiment was canceled; the only
-- kind before this version, so NULL reads as it), 'user' (stopped by its
-- user), 'experiment' (its experiment ended), 'pause' (paused by its user).
ALTER TABLE trials ADD COLUMN stop_kind TEXT
    CHECK (stop_kind IS NULL OR stop_kind IN ('cancel', 'user', 'experiment', 'pause'));
-- 1 for a trial paused by its user (it resumes with its experiment), 0 for
-- one paused by the scheduler (it waits at a rung to be promoted).
ALTER TABLE trials ADD COLUMN user_paused INTEGER NOT NULL DEFAULT 0
    CHECK (user_paused IN (0, 1));
-- The trial's invalid @rung lines as its worker counted them:
-- {"count": n, "last": [{"line": ..., "why": ...}]}; NULL for none.
ALTER TABLE trials ADD COLUMN warnings TEXT CHECK (warnings IS NULL OR json_valid(warnings));

-- A worker's labels as it registered them ({"key": "value"}); NULL: none.
ALTER TABLE workers ADD COLUMN labels TEXT CHECK (labels IS NULL OR json_valid(labels));
