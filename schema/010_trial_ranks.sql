-- Schema version 10: an index that holds what ranking an experiment's
-- trials reads (server/store_read.c store_read_trial_ranks: GET
-- .../trials?sort=value, and the curves of the best trials), so that it
-- reads the index alone instead of every trial's row: 100,000 trials of an
-- experiment are ranked in a few tens of milliseconds (bench/README.md,
-- "The daemon at scale").
CREATE INDEX trials_ranks ON trials (experiment_id, number, best_value, state);
