-- Schema version 12: what code a worker can run (docs/api.md, "The worker
-- object"): the environments it maps to interpreters (rung-worker --env)
-- and the container runtimes it offers, as it registered them. A trial
-- whose trainable names an environment or a container is leased only to a
-- worker that offers it (server/core_place.c core_selected), also after
-- rungd restarts, so they are kept as the labels are.
-- {"environments": ["name", ...], "containers": ["podman", ...]}, or NULL.
ALTER TABLE workers ADD COLUMN caps TEXT CHECK (caps IS NULL OR json_valid(caps));
