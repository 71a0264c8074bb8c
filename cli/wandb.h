/* W&B sweep files for `rung submit` (docs/api.md, "Command lines"): the C
 * port of python/rung/convert.py's wandb_to_spec, whose module docstring
 * (and python/README.md, "Coming from W&B") is the mapping. Both must give
 * the same spec for every sweep of tests/data/wandb/ (tests/unit/test_wandb.c,
 * tests/python/test_wandb_corpus.py). Pure: no I/O. */
#ifndef RUNG_CLI_WANDB_H
#define RUNG_CLI_WANDB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether doc looks like a W&B sweep rather than a Rung spec: an object
 * with `method` and `parameters` and no `search_space`. */
bool cli_wandb_is_sweep(const json_t *doc);

/* The Rung spec fields of a W&B sweep (a new reference): name, metric,
 * mode, search_space, searcher, scheduler, num_samples, stop and trainable,
 * each only where the sweep gives it. NULL when Rung cannot express it,
 * with the reason in err (errlen bytes), starting with the path of the
 * field at fault ("early_terminate.strict: ..."). */
json_t *cli_wandb_to_spec(const json_t *sweep, char *err, size_t errlen);

#endif
