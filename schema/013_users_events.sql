-- Schema version 13: users, their tokens, who owns what, and the event log
-- (docs/api.md, "Users, roles and tokens" and "Events").
--
-- A token is kept only as the SHA-256 of its text: the text is shown once,
-- when it is made. A user is never deleted, only marked removed (with every
-- token revoked), so that the events and experiments that name them still
-- do. owner_id 0 is the bootstrap admin (rungd --token / --token-file);
-- NULL is an experiment or worker from before this schema, which only an
-- admin steers.
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'member', 'viewer', 'worker')),
    labels TEXT CHECK (labels IS NULL OR json_valid(labels)),
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    removed_at INTEGER
);
CREATE TABLE tokens (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (id),
    hash TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    revoked_at INTEGER
);
CREATE INDEX tokens_user ON tokens (user_id);
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    actor_kind TEXT NOT NULL CHECK (actor_kind IN ('user', 'worker', 'rungd')),
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    experiment_id INTEGER,
    trial_id INTEGER,
    worker_id INTEGER,
    detail TEXT CHECK (detail IS NULL OR json_valid(detail))
);
CREATE INDEX events_kind ON events (kind, id);
CREATE INDEX events_experiment ON events (experiment_id, id);
CREATE INDEX events_at ON events (at);
ALTER TABLE experiments ADD COLUMN owner_id INTEGER;
ALTER TABLE experiments ADD COLUMN owner TEXT;
ALTER TABLE workers ADD COLUMN owner_id INTEGER;
