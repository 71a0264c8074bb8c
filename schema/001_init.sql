-- 001_init: the first schema of Rung's store.
--
-- Times are integers: milliseconds since the Unix epoch, UTC. The tables are
-- the truth; rungd rebuilds everything it keeps in memory (per-trial best and
-- last values, report de-duplication) from them at start.

-- One row per submitted experiment.
CREATE TABLE experiments (
    -- Positive id, assigned by rungd in creation order.
    id INTEGER PRIMARY KEY CHECK (id >= 1),
    -- A label for people; not unique.
    name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 256),
    -- The spec as submitted (validated JSON, compact).
    spec TEXT NOT NULL CHECK (json_valid(spec)),
    -- The searcher's effective seed: the spec's, or one drawn at creation,
    -- so that a restart proposes the same configs.
    seed INTEGER NOT NULL CHECK (seed >= 0),
    -- Lifecycle: running until every trial is terminal, or canceled.
    state TEXT NOT NULL CHECK (state IN ('running', 'completed', 'canceled')),
    -- Trials this experiment has in all (grid combinations x num_samples).
    total_trials INTEGER NOT NULL CHECK (total_trials >= 1),
    -- When it was submitted and when it ended (NULL while running).
    created_at INTEGER NOT NULL CHECK (created_at >= 0),
    ended_at INTEGER CHECK (ended_at IS NULL OR ended_at >= created_at)
);

-- One row per trial: a config of an experiment and its current attempt.
CREATE TABLE trials (
    -- Positive id, unique across experiments, assigned by rungd.
    id INTEGER PRIMARY KEY CHECK (id >= 1),
    -- The experiment it belongs to.
    experiment_id INTEGER NOT NULL REFERENCES experiments (id) CHECK (experiment_id >= 1),
    -- 0-based position within the experiment; decides its config.
    number INTEGER NOT NULL CHECK (number >= 0),
    -- Lifecycle; pending again when a failed attempt is retried.
    state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'completed', 'stopped',
                                         'failed', 'canceled')),
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
    UNIQUE (experiment_id, number)
);

-- One row per acknowledged report; the primary key makes retries idempotent.
CREATE TABLE reports (
    -- The trial reported on.
    trial_id INTEGER NOT NULL REFERENCES trials (id) CHECK (trial_id >= 1),
    -- The trial's attempt the report belongs to.
    attempt INTEGER NOT NULL CHECK (attempt >= 1),
    -- The report's step (its position in the trial's progress), >= 0.
    step INTEGER NOT NULL CHECK (step >= 0),
    -- When rungd received it.
    time INTEGER NOT NULL CHECK (time >= 0),
    -- The metrics object as reported; non-finite values as "NaN",
    -- "Infinity", "-Infinity" strings.
    metrics TEXT NOT NULL CHECK (json_valid(metrics)),
    -- The answer given, repeated verbatim to a retried report.
    action TEXT NOT NULL CHECK (action IN ('continue', 'stop')),
    PRIMARY KEY (trial_id, attempt, step)
) WITHOUT ROWID;

-- One row per registered worker.
CREATE TABLE workers (
    -- Positive id, assigned by rungd at registration.
    id INTEGER PRIMARY KEY CHECK (id >= 1),
    -- A label for people (the worker's --name, else its host name).
    name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 256),
    -- The machine it runs on, as it says; may be empty.
    hostname TEXT NOT NULL CHECK (length(hostname) <= 256),
    -- The GPUs it offered at registration (JSON array).
    gpus TEXT NOT NULL CHECK (json_valid(gpus) AND json_type(gpus) = 'array'),
    -- CPUs it offered at registration.
    cpus INTEGER NOT NULL CHECK (cpus >= 0),
    -- When it registered.
    registered_at INTEGER NOT NULL CHECK (registered_at >= 0),
    -- Its last request of any kind.
    last_seen_at INTEGER NOT NULL CHECK (last_seen_at >= registered_at),
    -- The body of its last heartbeat (GPU utilization and memory), or NULL.
    heartbeat TEXT CHECK (heartbeat IS NULL OR json_valid(heartbeat))
);

-- Covered by UNIQUE (experiment_id, number) above; no further index: reads
-- of trials come from memory.
