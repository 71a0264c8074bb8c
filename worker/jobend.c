/* How a worker in a batch job ends; see jobend.h. */
#include "jobend.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"

void jobend_give_back(WorkerState *w, const char *why)
{
    pthread_mutex_lock(&w->mu);
    int n = 0;
    for (WTrial *t = w->trials; t != NULL; t = t->next)
        if (t->holds_slots) /* the others ended already and are being delivered */
            n += wtrial_kill(t, KILL_PREEMPT) ? 1 : 0;
    pthread_mutex_unlock(&w->mu);
    if (n > 0)
        LOG_INFO("%s: giving %d trial(s) back (SIGTERM; each finishes preempted and is "
                 "leased again, docs/api.md \"Preempted trials\")",
                 why, n);
    else
        LOG_INFO("%s", why);
    worker_stop(w, STOP_DRAIN);
}

typedef struct Deadline {
    WorkerState *w;
    int64_t at_s; /* when to give back: the end less the margin */
    int64_t end_s;
} Deadline;

static void *deadline_main(void *arg)
{
    Deadline *d = arg;
    WorkerState *w = d->w;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (atomic_load(&w->exiting) || worker_stopping(w, STOP_DRAIN))
            break;
        int64_t left = d->at_s - (int64_t)time(NULL);
        if (left <= 0)
            break;
        /* A wall-clock deadline: woken at least each second to look again
         * (the condition waits on the monotonic clock). */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += left < 1 ? left : 1;
        pthread_cond_timedwait(&w->cond, &w->mu, &ts);
    }
    bool due = !atomic_load(&w->exiting) && !worker_stopping(w, STOP_DRAIN);
    pthread_mutex_unlock(&w->mu);
    if (due) {
        char why[128];
        snprintf(why, sizeof why, "the job ends in %" PRId64 " s (--deadline)",
                 d->end_s - (int64_t)time(NULL));
        jobend_give_back(w, why);
    }
    free(d);
    return NULL;
}

int jobend_start_deadline(WorkerState *w, int64_t end_s, int64_t margin_s)
{
    Deadline *d = malloc(sizeof *d);
    if (d == NULL)
        return -1;
    *d = (Deadline){.w = w, .at_s = end_s - margin_s, .end_s = end_s};
    pthread_t th;
    if (pthread_create(&th, NULL, deadline_main, d) != 0) {
        free(d);
        return -1;
    }
    pthread_detach(th);
    return 0;
}
