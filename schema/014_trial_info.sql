-- Schema version 14: a trial's info (docs/api.md, "The trial object"): the
-- last value of each key its reports carried that was not a number (a
-- `@rung` line's {"phase": "warmup"}, Ray Tune's {"done": true}), merged
-- across its reports, so that it survives a restart as its last metrics
-- do. A JSON object, or NULL before the first report that carried one.
ALTER TABLE trials ADD COLUMN info TEXT CHECK (info IS NULL OR (json_valid(info) AND json_type(info) = 'object'));
