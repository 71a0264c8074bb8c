-- Schema version 15: tags and notes (docs/api.md, "Tags and notes"), and
-- the spec as it was submitted.
--
-- tags is a JSON array of distinct strings (at most 32, each 1..64 bytes,
-- no comma: spec_meta.c checks them), notes free text of at most 65,536
-- bytes; rows from before this version get [] and "". They are kept apart
-- from the spec column, which holds what runs (and which PATCH of
-- num_samples and its kin rewrites), so that tagging an ended experiment
-- changes neither its spec nor its state. submitted is the body of POST
-- /api/v1/experiments as rungd parsed it (compact JSON, key order kept),
-- NULL for experiments stored before this version.
ALTER TABLE experiments ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'
    CHECK (json_valid(tags) AND json_type(tags) = 'array');
ALTER TABLE experiments ADD COLUMN notes TEXT NOT NULL DEFAULT '';
ALTER TABLE experiments ADD COLUMN submitted TEXT
    CHECK (submitted IS NULL OR (json_valid(submitted) AND json_type(submitted) = 'object'));
ALTER TABLE trials ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'
    CHECK (json_valid(tags) AND json_type(tags) = 'array');
ALTER TABLE trials ADD COLUMN notes TEXT NOT NULL DEFAULT '';
