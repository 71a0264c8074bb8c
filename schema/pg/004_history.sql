-- Schema version 4 on PostgreSQL: schema/004_history.sql without its last
-- part, which fills the new columns of rows written before it from their
-- reports with SQLite's SQL (a subquery without an alias, typeof). A
-- PostgreSQL store begins empty at the newest version, or is copied from a
-- SQLite store that already ran it, so this part has no rows to fill here.
-- What follows is the file's, as it is.
--
-- Schema version 4: history is read from the store, not kept in memory.
--
-- rungd keeps in memory only the work in flight (running experiments, their
-- pending, running and paused trials); ended trials and experiments are read
-- from these tables on request (docs/architecture.md). So what the daemon
-- derived from reports in memory is now stored with the row, and the reads
-- have indexes.

-- A trial's summary of its current attempt's reports, written with the row:
-- the last reported step (its time_attr), the last metrics object, the best
-- value of the experiment's metric (finite values only) and its step.
ALTER TABLE trials ADD COLUMN step INTEGER;
ALTER TABLE trials ADD COLUMN last_metrics TEXT;
ALTER TABLE trials ADD COLUMN best_value REAL;
ALTER TABLE trials ADD COLUMN best_step INTEGER;
-- The last lines of the trial's log, as its worker sent them (at most 8 KiB).
ALTER TABLE trials ADD COLUMN log_tail TEXT;

-- An experiment's trial counts by state and its best trial, as JSON
-- ({"counts": {...}, "best": {...} or null}), written with the row.
ALTER TABLE experiments ADD COLUMN summary TEXT;

-- Trials of an experiment by state (listings filtered by state, counts),
-- and the running trials of the whole store (start-up).
CREATE INDEX trials_by_experiment_state ON trials (experiment_id, state, number);
CREATE INDEX trials_by_state ON trials (state, experiment_id);
-- Experiments by state (start-up loads the running ones).
CREATE INDEX experiments_by_state ON experiments (state, id);
-- Reports in arrival order (the dashboard's learning curves read what
-- arrived since a time).
CREATE INDEX reports_by_time ON reports (time);
