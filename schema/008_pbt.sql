-- Schema version 8: Population Based Training (docs/schedulers.md, "pbt").
--
-- A trial's config may change while it runs: pbt's exploit gives it a
-- donor's config, mutated, and the UPDATE of the trial row writes it. The
-- exploits themselves are kept with the trial, written in the same UPDATE
-- as the state change they bring, so a crash keeps both or neither.

-- The exploits of the trial, oldest first: a JSON array of
-- {"step", "donor", "donor_step", "from", "config", "time"}; NULL: none.
ALTER TABLE trials ADD COLUMN lineage TEXT
    CHECK (lineage IS NULL OR (json_valid(lineage) AND json_type(lineage) = 'array'));
-- While a copy of a donor's checkpoint is owed (the trial has not reported
-- past it yet): {"trial": donor id, "step": its step, "worker": the worker
-- whose disk holds it}; NULL otherwise.
ALTER TABLE trials ADD COLUMN resume_from TEXT
    CHECK (resume_from IS NULL OR json_valid(resume_from));
