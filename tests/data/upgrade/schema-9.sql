-- made by tests/data/upgrade/make_fixture.py; schema version 9
PRAGMA user_version = 9;
BEGIN TRANSACTION;
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
CREATE TABLE "experiments" (
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
INSERT INTO "experiments" VALUES(1,'bayes-done','{"name":"bayes-done","metric":"acc","mode":"max","search_space":{"x":{"type":"uniform","low":0.0,"high":1.0}},"num_samples":3,"trainable":{"type":"external"},"searcher":{"type":"bayes","seed":3,"multi_fidelity":false},"scheduler":{"type":"fifo","time_attr":"step"},"max_concurrent_trials":0,"max_failures":0,"max_failed_trials":5,"priority":0,"share":1,"best_scope":"all","resources_per_trial":{"cpu":1,"gpu":0,"nodes":1,"gang_wait_s":60}}',3,'completed',3,1795796944985,1795796944989,'{"counts":{"pending":0,"running":0,"completed":3,"stopped":0,"failed":0,"canceled":0,"paused":0,"preempted":0},"best":{"trial_id":3,"value":0.80000000000000004,"step":1,"config":{"x":0.26053906325250864}}}',NULL,'all_trials_ended','{"metric_seen":true,"ended_reporting":0,"keys":[],"errors":[],"best_finished":0.80000000000000004,"since_better":0}');
INSERT INTO "experiments" VALUES(2,'asha-promote','{"name":"asha-promote","metric":"loss","mode":"min","search_space":{"x":{"type":"uniform","low":0.0,"high":1.0}},"num_samples":2,"trainable":{"type":"external"},"scheduler":{"type":"asha","promote":true,"max_t":9,"reduction_factor":3,"grace_period":1,"brackets":1,"time_attr":"step"},"searcher":{"type":"random","seed":864947634166498},"max_concurrent_trials":0,"max_failures":0,"max_failed_trials":5,"priority":0,"share":1,"best_scope":"all","resources_per_trial":{"cpu":1,"gpu":0,"nodes":1,"gang_wait_s":60}}',864947634166498,'paused',2,1795796944990,NULL,'{"counts":{"pending":1,"running":0,"completed":0,"stopped":0,"failed":0,"canceled":0,"paused":1,"preempted":0},"best":{"trial_id":4,"value":1.0,"step":1,"config":{"x":0.63529906200650976}}}',NULL,NULL,'{"metric_seen":true,"ended_reporting":0,"keys":[],"errors":[],"best_finished":null,"since_better":0}');
INSERT INTO "experiments" VALUES(3,'fifo-random','{"name":"fifo-random","metric":"loss","mode":"min","search_space":{"x":{"type":"uniform","low":0.0,"high":1.0}},"num_samples":5,"trainable":{"type":"external"},"searcher":{"type":"random","seed":11},"scheduler":{"type":"fifo","time_attr":"step"},"max_concurrent_trials":0,"max_failures":0,"max_failed_trials":5,"priority":0,"share":1,"best_scope":"all","resources_per_trial":{"cpu":1,"gpu":0,"nodes":1,"gang_wait_s":60}}',11,'running',5,1795796944994,NULL,'{"counts":{"pending":3,"running":0,"completed":1,"stopped":0,"failed":1,"canceled":0,"paused":0,"preempted":0},"best":{"trial_id":6,"value":0.33333333333333331,"step":3,"config":{"x":0.6504215593106627}}}',NULL,NULL,'{"metric_seen":true,"ended_reporting":0,"keys":[],"errors":[{"text":"CUDA out of memory","n":1}],"best_finished":0.33333333333333331,"since_better":0}');
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
INSERT INTO "reports" VALUES(1,1,1,1795796944986,'{"acc":0.59999999999999998}','continue');
INSERT INTO "reports" VALUES(2,1,1,1795796944988,'{"acc":0.69999999999999996}','continue');
INSERT INTO "reports" VALUES(3,1,1,1795796944989,'{"acc":0.80000000000000004}','continue');
INSERT INTO "reports" VALUES(4,1,1,1795796944993,'{"loss":1.0}','stop');
INSERT INTO "reports" VALUES(6,1,1,1795796944995,'{"loss":1.0,"acc":0.59999999999999998}','continue');
INSERT INTO "reports" VALUES(6,1,2,1795796944996,'{"loss":0.5,"acc":0.69999999999999996}','continue');
INSERT INTO "reports" VALUES(6,1,3,1795796944996,'{"loss":0.33333333333333331,"acc":0.80000000000000004}','continue');
INSERT INTO "reports" VALUES(7,1,1,1795796944997,'{"loss":2.0}','continue');
INSERT INTO "reports" VALUES(8,1,1,1795796944998,'{"loss":0.90000000000000002}','continue');
CREATE TABLE "trials" (
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
    preemptions INTEGER NOT NULL DEFAULT 0 CHECK (preemptions >= 0), lineage TEXT
    CHECK (lineage IS NULL OR (json_valid(lineage) AND json_type(lineage) = 'array')), resume_from TEXT
    CHECK (resume_from IS NULL OR json_valid(resume_from)),
    UNIQUE (experiment_id, number)
);
INSERT INTO "trials" VALUES(1,1,0,'completed','{"x":0.51053906325250864}',1,1,'80f4c2a0d93d203e6cd2b24a2fb44c90','{"gpus":[],"cpus":1}',0,NULL,1795796944985,1795796944986,1795796944987,NULL,NULL,1,'{"acc":0.59999999999999998}',0.6,1,NULL,NULL,NULL,0,NULL,NULL,0,NULL,NULL);
INSERT INTO "trials" VALUES(2,1,1,'completed','{"x":0.01053906325250864}',1,1,'3db731da05485b42d1463090bad7bc57','{"gpus":[],"cpus":1}',0,NULL,1795796944985,1795796944987,1795796944988,NULL,NULL,1,'{"acc":0.69999999999999996}',0.7,1,NULL,NULL,NULL,0,NULL,NULL,0,NULL,NULL);
INSERT INTO "trials" VALUES(3,1,2,'completed','{"x":0.26053906325250864}',1,1,'c20e79aa4f9ccc919076d4bd79a6ba10','{"gpus":[],"cpus":1}',0,NULL,1795796944985,1795796944989,1795796944989,NULL,NULL,1,'{"acc":0.80000000000000004}',0.8,1,NULL,NULL,NULL,0,NULL,NULL,0,NULL,NULL);
INSERT INTO "trials" VALUES(4,2,0,'paused','{"x":0.63529906200650976}',1,1,'8500813e8bc3928776df06ef94c5e7b4','{"gpus":[],"cpus":1}',0,NULL,1795796944991,1795796944992,NULL,1.0,NULL,1,'{"loss":1.0}',1.0,1,NULL,NULL,NULL,0,NULL,NULL,0,NULL,NULL);
INSERT INTO "trials" VALUES(5,2,1,'pending','{"x":0.34786921375043334}',1,NULL,NULL,NULL,0,NULL,1795796944991,NULL,NULL,NULL,1,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,0,NULL,NULL);
INSERT INTO "trials" VALUES(6,3,0,'completed','{"x":0.6504215593106627}',1,1,'fdedcb3674a082b3a63090a4be25b49e','{"gpus":[],"cpus":1}',0,NULL,1795796944994,1795796944995,1795796944996,NULL,NULL,3,'{"loss":0.33333333333333331,"acc":0.80000000000000004}',3.33333333333333314829e-01,3,NULL,NULL,NULL,0,NULL,NULL,0,NULL,NULL);
INSERT INTO "trials" VALUES(7,3,1,'failed','{"x":0.92268304003141}',1,1,'109fd7cadf1bb19c2dc63c388f951193','{"gpus":[],"cpus":1}',0,'CUDA out of memory',1795796944994,1795796944997,1795796944997,NULL,NULL,1,'{"loss":2.0}',2.0,1,NULL,NULL,NULL,0,NULL,NULL,0,NULL,NULL);
INSERT INTO "trials" VALUES(8,3,2,'running','{"x":0.92346419207934149}',1,1,'8953274980e3bb4b3f908fdf9b735f95','{"gpus":[],"cpus":1}',0,NULL,1795796944994,1795796944998,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,0,NULL,NULL);
INSERT INTO "trials" VALUES(9,3,3,'pending','{"x":0.42779924028856098}',1,NULL,NULL,NULL,0,NULL,1795796944994,NULL,NULL,NULL,3,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,0,NULL,NULL);
INSERT INTO "trials" VALUES(10,3,4,'pending','{"x":0.78878027294627129}',1,NULL,NULL,NULL,0,NULL,1795796944994,NULL,NULL,NULL,4,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,0,NULL,NULL);
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
, labels TEXT CHECK (labels IS NULL OR json_valid(labels)));
INSERT INTO "workers" VALUES(1,'gpu-box-1','vm','[]',16,1795796944984,1795796944984,NULL,'{"zone":"a"}');
CREATE INDEX reports_by_time ON reports (time);
CREATE INDEX experiments_by_state ON experiments (state, id);
CREATE INDEX trials_by_experiment_state ON trials (experiment_id, state, number);
CREATE INDEX trials_by_state ON trials (state, experiment_id);
COMMIT;
