/* The engine: the one thread that owns the Core and the Store.
 *
 * HTTP threads turn each request into a Job and hand it over with
 * engine_submit, which blocks until the reply is ready. The engine takes
 * every job that queued up while it was busy, runs their handlers in one
 * transaction, commits once, and only then releases the replies (group
 * commit: a 200 always means committed). A lease that finds nothing parks
 * its job until a trial frees up or its deadline passes (long poll). A tick
 * several times a second expires leases and parked jobs; the proposer thread
 * keeps each experiment's pending queue filled. */
#ifndef RUNG_SERVER_ENGINE_H
#define RUNG_SERVER_ENGINE_H

#include <jansson.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "stats.h"
#include "store.h"

typedef struct Engine Engine;
typedef struct Job Job;
typedef void (*JobFn)(Engine *e, Job *job);

struct Job {
    /* Request, set by the HTTP thread; borrowed by the engine. */
    JobFn fn;
    int64_t ids[2];         /* the {id}s of the path, in order */
    json_t *body;           /* parsed JSON body, or NULL */
    json_t *query;          /* query arguments: an object of strings */
    /* Reply, set by the handler. */
    int status;             /* HTTP status */
    json_t *reply;          /* new reference, or NULL */
    char *text;             /* malloc'd non-JSON body, or NULL */
    size_t text_len;
    const char *content_type; /* of text */
    /* Engine's own. */
    bool parked;
    int64_t deadline_ms;    /* parked: when to answer 204 (monotonic ms) */
    sem_t done;             /* posted once the reply is committed */
    Job *next;
    void *data;             /* internal jobs: their payload */
};

typedef struct EngineConfig {
    int64_t lease_ms;       /* lease length (--lease-s) */
    int64_t heartbeat_ms;   /* what workers are told to use: several per lease */
} EngineConfig;

/* Takes ownership of store and core. NULL when threads cannot start. */
Engine *engine_start(Store *store, Core *core, const EngineConfig *cfg, Stats *stats);
/* Runs job on the engine thread and waits for its reply. */
void engine_submit(Engine *e, Job *job);
/* Answers every parked job now (204) and parks no more: for shutdown. */
void engine_drain(Engine *e);
/* Runs what is queued, stops the threads, frees store and core. */
void engine_stop(Engine *e);

/* For handlers, on the engine thread only. */
Core *engine_core(Engine *e);
Store *engine_store(Engine *e);
Stats *engine_stats(Engine *e);
const EngineConfig *engine_config(Engine *e);
int64_t engine_now(Engine *e);  /* the batch's time, ms since the epoch */
/* Parks job until deadline_ms (monotonic, rung_mono_ns() / 1e6); its fn runs again whenever a trial may
 * have become available. Returns false (and parks nothing) when draining. */
bool engine_park(Engine *e, Job *job, int64_t deadline_ms);
/* A fresh lease token: 32 hex characters from the OS's random source. */
void engine_token(char out[CORE_TOKEN_LEN + 1]);
/* A random 53-bit seed for experiments that name none. */
uint64_t engine_seed(void);

#endif
