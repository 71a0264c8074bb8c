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

-- Rows written before this version: summaries from their reports, as rungd
-- derives them. The step is the last report's time_attr value when the
-- scheduler counts in another field than "step" and that value is an
-- integer, else the last report's step. The best value follows the
-- experiment's metric and mode; a report whose metric is not a number has
-- none.
UPDATE trials SET
    step = (SELECT max(r.step) FROM reports r
            WHERE r.trial_id = trials.id AND r.attempt = trials.attempt),
    last_metrics = (SELECT r.metrics FROM reports r
                    WHERE r.trial_id = trials.id AND r.attempt = trials.attempt
                    ORDER BY r.step DESC LIMIT 1);
UPDATE trials SET step = coalesce(
    (SELECT CASE WHEN ta <> 'step'
                      AND json_type(trials.last_metrics, '$."' || ta || '"') = 'integer'
                 THEN json_extract(trials.last_metrics, '$."' || ta || '"') END
     FROM (SELECT coalesce(json_extract(e.spec, '$.scheduler.time_attr'), 'step') AS ta
           FROM experiments e WHERE e.id = trials.experiment_id)),
    step)
WHERE last_metrics IS NOT NULL;
UPDATE trials SET (best_value, best_step) = (
    SELECT v, s FROM (
        SELECT json_extract(r.metrics, '$."' || json_extract(e.spec, '$.metric') || '"') AS v,
               r.step AS s,
               coalesce(json_extract(e.spec, '$.mode'), 'min') AS mode
        FROM reports r JOIN experiments e ON e.id = trials.experiment_id
        WHERE r.trial_id = trials.id AND r.attempt = trials.attempt)
    WHERE typeof(v) IN ('integer', 'real')
    ORDER BY CASE mode WHEN 'max' THEN -v ELSE v END, s
    LIMIT 1)
WHERE step IS NOT NULL;
