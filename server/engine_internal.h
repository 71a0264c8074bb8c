/* What the engine's files share (engine.c: the loop; engine_propose.c: the
 * proposal policy), not for the rest of the daemon (engine.h). */
#ifndef RUNG_SERVER_ENGINE_INTERNAL_H
#define RUNG_SERVER_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "analysis.h"
#include "engine.h"
#include "propose.h"

struct Engine {
    pthread_t thread;
    int64_t generation; /* this run's start, ms: see engine_generation */
    EngineFront front;
    bool started;
    int64_t next_prune; /* when the event log is next pruned (monotonic ms) */
    /* Events written in this batch, for the notifiers once it commits:
     * [{"event": {...}, "chosen": [names] or null}] (cfg.notify only). */
    json_t *notices;
    int epfd;    /* waits on the HTTP front's epoll fd and wake_fd */
    int wake_fd; /* eventfd: the proposer's answers, shutdown */
    atomic_bool stop_requested;
    /* Internal jobs (proposals) from other threads, under mu. */
    pthread_mutex_t mu;
    Job *inbox;
    /* Engine thread only: */
    Store *store;
    Core *core;
    EngineConfig cfg;
    Stats *stats;
    Proposer *proposer;
    Analysis *analysis;             /* the analysis thread (analysis.h) */
    struct AnalysisEntry *analyses; /* its results (engine_analysis.c) */
    int64_t n_analyses;
    bool draining;
    Job *done;   /* jobs answered in this batch, released after commit */
    Job *parked; /* parked jobs, newest first */
    int64_t n_parked;
    uint64_t batch_reports; /* reports written in this batch */
    /* The core's event counters as of the last flush that the store took,
     * and of the last commit: a refused write or a failed COMMIT puts them
     * back, so /metrics counts only what happened for good (a rolled back
     * lease expiry happens again, and would count twice). */
    CoreCounters counted, committed;
    int64_t in_flight; /* jobs submitted whose on_done has not run */
    bool resumed;      /* on_done ran last batch: the HTTP front must run again */
    int64_t now;
    int64_t next_tick;
    int64_t rate_at_ms;    /* monotonic ms of the last reports/s sample */
    uint64_t rate_reports; /* reports committed at that sample */
    /* pbt: checkpoints dropped in this batch, whose files go once the
     * deletion of their rows is committed. */
    CoreCheckpoint *unlink;
    int64_t n_unlink, cap_unlink;
};

/* engine_inbox.c: the loop's wake-up and its inbox of internal jobs, the
 * one place other threads reach the engine. Kept apart from engine.c so that
 * the loop (engine.c) and the proposal policy (engine_propose.c) both call
 * it and neither calls the other back (tests/lint/check_calls.py). */
/* Wakes the loop (its eventfd), from any thread. */
void engine_wake(Engine *e);
/* Queues an internal job (taken by the loop's next turn) and wakes the
 * loop, from any thread. */
void engine_inbox_push(Engine *e, Job *job);

/* engine_propose.c, the proposal policy: on the engine thread, once per
 * tick, asks the proposer thread (propose.h) for the configs each running
 * experiment needs next (how many, with the searcher's history for a model
 * and the warm_start trials); on the proposer thread, queues its answers
 * as internal jobs that add the trials on the engine thread. */
void engine_request_proposals(Engine *e);
void engine_on_proposals(void *ctx, Proposals *p);
/* pb2: the proposer's explores, queued as internal jobs that apply them
 * (core_pbt_explored); engine_request_proposals hands them out. */
void engine_on_explored(void *ctx, PbtExplore *x);
/* Frees an internal job (proposals or an explore) that will not run. */
void engine_job_discard(Job *job);

/* engine_analysis.c: the analysis thread's answers (on that thread: queued
 * as internal jobs that engine_analysis_apply runs), the background
 * refresh of cached results whose experiment completed trials (each tick),
 * and the cache's end (after the loop stopped: stops the thread). */
typedef struct AnalysisEntry AnalysisEntry;
void engine_on_analysis(void *ctx, AnalysisJob *job);
void engine_analysis_apply(Engine *e, Job *job);
void engine_analysis_discard(Job *job);
void engine_analysis_tick(Engine *e);
void engine_analysis_free(Engine *e);

#endif
