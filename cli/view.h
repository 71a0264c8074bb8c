/* Pieces of an experiment's picture that `show` and `watch` share: the
 * progress line, the best trial, and the table of trials with one column per
 * searched parameter. They take the daemon's JSON as it comes (experiment
 * and trial objects of docs/api.md) and tolerate absent fields, so a newer or
 * older daemon still gets a readable screen. */
#ifndef RUNG_CLI_VIEW_H
#define RUNG_CLI_VIEW_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "table.h"

/* Width of the progress bar in characters. */
#define CLI_VIEW_BAR 30

/* "[#####.........] 12/24 trials  4 running, 8 pending, ..." */
void cli_view_progress(FILE *out, const json_t *exp);

/* "best val_loss: 0.123 (trial 17, step 27)" and, on the next line, the
 * config; "best: none yet" when there is no best. */
void cli_view_best(FILE *out, const json_t *exp, const char *indent);

/* Under the pbt scheduler (docs/schedulers.md, "pbt"): the schedule the
 * trial (a trial object) was trained with, the mutated parameters' values
 * from step 1 and from each exploit on. Nothing for other schedulers. */
void cli_view_schedule(FILE *out, const json_t *exp, const json_t *trial, const char *indent);

/* resources_per_trial.nodes of an experiment object: how many workers run
 * each of its trials (docs/api.md, "Gangs"); 1 when absent. */
int64_t cli_view_nodes(const json_t *exp);

/* A table of trials: trial id, state, for an experiment of gangs (nodes > 1)
 * each trial's nodes and, while it runs, its members' worker ids by rank,
 * one column per searched parameter, step, last metric value, best value. trials are borrowed trial
 * objects; `more` > 0 adds a last line "… N more" (`more_what` says of what, may be NULL). */
void cli_view_trials(FILE *out, const json_t *exp, json_t *const *trials, size_t n,
                     CliTableStyle style, size_t more, const char *more_what);

#endif
