/* What the files of a worker's trial share and nobody else uses: the
 * trial object (trial.c), its sender (trial_send.c), its supervisor
 * (trial_supervise.c) and the pbt donor copy (trial_donor.c). */
#ifndef RUNG_WORKER_TRIAL_INTERNAL_H
#define RUNG_WORKER_TRIAL_INTERNAL_H

#include <stddef.h>

#include "trial.h"

/* Wakes the supervisor's poll (its eventfd). */
void wtrial_wake(WTrial *t);
/* Sends SIGTERM if a kill was asked, the process runs and none went yet.
 * Caller holds t->mu. */
void wtrial_term_if_asked(WTrial *t);
/* Drops every queued report. Caller holds t->mu. */
void wtrial_drop_queue(WTrial *t);

/* The sender's thread body; arg is the WTrial. Returns once the finish went
 * (or nothing more may be sent). */
void *wtrial_sender_main(void *arg);

/* pbt: puts the checkpoint of t->from_trial (t->from_trial > 0) into dir,
 * the trial's folder under trials (<workdir>/trials), from this worker's
 * folder or from rungd; writes into line what happened, a line for the
 * trial's stderr.log ending in a newline (also logged). Never fails the
 * trial: without the checkpoint the program starts over. */
void wtrial_donor_fetch(WTrial *t, const char *trials, const char *dir, char *line,
                        size_t line_size);

#endif
