/* pbt: the donor's checkpoint a trial starts from, copied from a folder
 * on this worker (ckpt.h) or downloaded from rungd (ckptxfer.h); see
 * docs/schedulers.md, "pbt". */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ckpt.h"
#include "ckptxfer.h"
#include "client.h"
#include "log.h"
#include "trial.h"
#include "trial_internal.h"
#include "why.h"

/* pbt (docs/schedulers.md, "pbt"): the trial goes on from another trial's
 * checkpoint, so that trial's folder is copied into this one (byte copies
 * or clones, never hard links: ckpt.h; the logs stay this trial's own). Without
 * it the program finds no checkpoint and starts over, as a promoted trial
 * does: the log says so, and the trial runs. */
static void copy_donor(WTrial *t, const char *trials, const char *dir, char *line, size_t line_size)
{
    char from[PATH_MAX + 32], err[512];
    rung_why(from, sizeof from, "%s/%" PRId64, trials, t->from_trial);
    if (ckpt_copy_dir(from, dir, err, sizeof err) == 0)
        snprintf(line, line_size,
                 "rung-worker: pbt: copied trial %" PRId64 "'s folder (resuming from step %" PRId64
                 ")\n",
                 t->from_trial, t->resume_step);
    else
        snprintf(line, line_size,
                 "rung-worker: pbt: could not copy trial %" PRId64 "'s folder: %s; the program "
                 "starts without its checkpoint\n",
                 t->from_trial, err);
    LOG_INFO("trial %" PRId64 ": %.*s", t->id, (int)strlen(line) - 1, line);
}

/* A download stops when the trial is asked to end before it started (a
 * stop, a preemption, a hard stop of the worker). */
static bool download_cancel(void *arg)
{
    WTrial *t = arg;
    pthread_mutex_lock(&t->mu);
    bool killed = t->kill_reason != KILL_NONE;
    pthread_mutex_unlock(&t->mu);
    return killed || t->hooks->gave_up(t->hooks->ctx);
}

/* pbt, the donor ran on another worker: its checkpoint, stored in rungd,
 * is downloaded into this trial's folder (ckptxfer.h). As with a local
 * copy, a failure is said in the log and the program starts over without
 * it. */
static void download_donor(WTrial *t, const char *trials, const char *dir, char *line,
                           size_t line_size)
{
    const TrialHooks *h = t->hooks;
    char err[1024] = "", what[128];
    int64_t bytes = 0;
    XferResult r = XFER_FAILED;
    snprintf(what, sizeof what, "download of trial %" PRId64 "'s checkpoint of step %" PRId64,
             t->from_trial, t->from_step);
    Client *c = client_new(h->server, h->token);
    if (c == NULL) {
        snprintf(err, sizeof err, "out of memory for an HTTP client");
    } else {
        ClientCall call = {.retry = true,
                           .max_retries = CKPTXFER_RETRIES,
                           .cancel = download_cancel,
                           .cancel_arg = t,
                           .what = what};
        r = ckptxfer_download(c, t->from_trial, t->from_step, t->from_sha256, t->from_size,
                              h->worker_id, t->lease_token, trials, dir, &call, &bytes, err,
                              sizeof err);
        client_free(c);
    }
    if (r == XFER_OK)
        snprintf(line, line_size,
                 "rung-worker: pbt: downloaded trial %" PRId64 "'s checkpoint of step %" PRId64
                 " from rungd (%" PRId64 " bytes, sha256 verified)\n",
                 t->from_trial, t->from_step, bytes);
    else
        snprintf(line, line_size,
                 "rung-worker: pbt: checkpoint of trial %" PRId64 " step %" PRId64
                 " from rungd: %s; the program starts without it\n",
                 t->from_trial, t->from_step, err);
    if (r == XFER_OK)
        LOG_INFO("trial %" PRId64 ": %.*s", t->id, (int)strlen(line) - 1, line);
    else
        LOG_WARN("trial %" PRId64 ": %.*s", t->id, (int)strlen(line) - 1, line);
}


void wtrial_donor_fetch(WTrial *t, const char *trials, const char *dir, char *line,
                        size_t line_size)
{
    if (t->from_rungd)
        download_donor(t, trials, dir, line, line_size);
    else
        copy_donor(t, trials, dir, line, line_size);
}
