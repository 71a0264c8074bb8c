-- Schema version 6: gangs, trials that run on several workers at once
-- (resources_per_trial.nodes > 1, docs/api.md "Gangs").
--
-- The members of a gang trial's current (or last) attempt, written when
-- the gang forms and whenever a member is given its lease or finishes, so
-- that a restart keeps a running gang's members and their tokens. The
-- holds that gather workers for a gang are not stored: a restart starts
-- the gathering over.

-- JSON: {"attempt": n, "master_addr": "10.0.0.3", "master_port": 29500,
-- "members": [{"rank": 0, "worker_id": 3, "lease_token": "<32 hex>" or
-- null (its lease not given yet), "resources": {"gpus": [...], "cpus": n}
-- or null, "done": false}, ...]}, ranks 0 .. nodes-1 in order; NULL for a
-- trial that never ran as a gang. Kept after the attempt ends, until the
-- next one forms.
ALTER TABLE trials ADD COLUMN gang TEXT
    CHECK (gang IS NULL OR (json_valid(gang) AND json_type(gang) = 'object'));
