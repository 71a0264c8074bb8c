/* The engine: one thread that owns the Core, the Store and the HTTP event
 * loop, in the manner of Redis.
 *
 * Each turn of the loop opens a transaction, lets libmicrohttpd read every
 * request that has arrived (http.c turns each into a Job and hands it to
 * engine_submit, which runs its handler at once and parks the connection),
 * applies what the proposer thread has finished, expires leases, commits
 * once, and only then resumes the parked connections so that their replies
 * go out: a 200 always means committed (group commit), and no request pays
 * for a thread switch. A lease that finds nothing stays parked until a
 * trial frees up or its deadline passes (long poll). The proposer thread
 * keeps each experiment's pending queue filled, so no request waits on a
 * sampler. */
#ifndef RUNG_SERVER_ENGINE_H
#define RUNG_SERVER_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "core.h"
#include "stats.h"
#include "store.h"

typedef struct Engine Engine;
typedef struct Job Job;
typedef void (*JobFn)(Engine *e, Job *job);

struct Job {
    /* Request, set by the HTTP layer; borrowed by the engine. */
    JobFn fn;
    int64_t ids[2];     /* the {id}s of the path, in order */
    char sha256[65];    /* the {sha256} of the path (lowercase), or "" */
    int64_t raw_length; /* a raw body's Content-Length (HttpRoute.raw_admit) */
    json_t *body;       /* parsed JSON body, or NULL */
    json_t *query;      /* query arguments: an object of strings */
    Principal who;      /* who sent it (the front's api_access_lookup) */
    char *set_cookie;   /* malloc'd Set-Cookie value for the reply, or NULL */
    /* Reply, set by the handler. */
    int status;    /* HTTP status */
    json_t *reply; /* new reference, or NULL */
    char *text;    /* malloc'd non-JSON body, or NULL */
    size_t text_len;
    const char *content_type; /* of text, or of reply_fd's file */
    int reply_fd;             /* > 0: a file to send instead (the front closes it) */
    int64_t reply_size;       /* its size in bytes */
    /* Called on the engine thread once the reply is committed (or failed). */
    void (*on_done)(Job *job);
    /* Set by a handler whose reply hands something out that must come back
     * if the client never receives it (a leased trial); see
     * engine_undelivered. */
    JobFn on_undelivered;
    /* Set by the HTTP layer: whether the client has hung up. A parked job
     * whose client left is answered rather than handed a trial. */
    bool (*client_gone)(Job *job);
    /* Set by a handler that parks (engine_park) for something other than
     * a trial: whether to run it again now (NULL: when a trial may have
     * become available). mark is the handler's, for wake to compare. */
    bool (*wake)(Engine *e, const Job *job);
    int64_t mark;
    /* Engine's own. */
    bool parked;
    int64_t deadline_ms;  /* parked: when to answer 204 (monotonic ms) */
    int64_t parked_at_ns; /* parked: since when, this time (rung_mono_ns) */
    int64_t parked_ns;    /* all the time it waited parked: the front leaves
                             it out of rung_request_duration_seconds */
    Job *next;
    void *data; /* internal jobs: their payload */
};

typedef struct EngineConfig {
    int64_t lease_ms;           /* lease length (--lease-s) */
    int64_t heartbeat_ms;       /* what workers are told to use: several per lease */
    int64_t forget_workers_ms;  /* gone workers leave listings after this (--forget-workers-s) */
    const char *data_dir;       /* rungd's data folder (checkpoints/ for pbt's copies) */
    int64_t blob_quota;         /* bytes all blobs may hold (--blob-quota-mb; blobs.h) */
    int64_t artifact_quota;     /* bytes all artifacts may hold (--artifact-quota-mb) */
    int64_t event_retention_ms; /* events older than this go, daily (0: never) */
    struct Notify *notify;      /* webhooks (notify.h), or NULL: committed events go to it */
    bool tls;                   /* the front serves HTTPS: session cookies are Secure */
} EngineConfig;

/* The network front the loop drives (http.c provides one). The engine
 * knows it only through these calls, so the pipeline runs one way: the
 * front hands requests to the engine (engine_submit), never the reverse. */
typedef struct EngineFront {
    void *ctx;
    int (*epoll_fd)(void *ctx);       /* readable when run() has work */
    void (*run)(void *ctx);           /* one pass over ready connections */
    int64_t (*timeout_ms)(void *ctx); /* how soon run() is due; -1: no limit */
    void (*quiesce)(void *ctx);       /* stop accepting (shutdown) */
    void (*tick)(void *ctx);          /* about every 100 ms: timeouts, limits */
} EngineFront;

/* Takes ownership of store and core; starts the proposer thread. */
Engine *engine_new(Store *store, Core *core, const EngineConfig *cfg, Stats *stats);
/* Starts the loop thread driving front (copied; its ctx stays the caller's). */
int engine_start(Engine *e, const EngineFront *front);
/* From any thread: answers parked long polls, lets requests in flight
 * finish, commits the last batch and joins the loop thread. The front may
 * then be stopped (its connections' ends still call engine_undelivered). */
void engine_stop(Engine *e);
/* After engine_stop and the front's own stop: frees everything. */
void engine_free(Engine *e);

/* On the engine thread (from the HTTP layer): runs job's handler now, inside
 * the open transaction; job->on_done follows after the commit. */
void engine_submit(Engine *e, Job *job);

/* On the engine thread (from the HTTP layer): job's reply was committed but
 * could not be delivered (the client left); runs job->on_undelivered. */
void engine_undelivered(Engine *e, Job *job);

/* For handlers, on the engine thread only. */
Core *engine_core(Engine *e);
Store *engine_store(Engine *e);
Stats *engine_stats(Engine *e);
const EngineConfig *engine_config(Engine *e);
int64_t engine_now(Engine *e); /* the batch's time, ms since the epoch */
/* Tells this daemon run from others: its start time (ms), for cursors that
 * are valid only within one run (the curves endpoint). */
int64_t engine_generation(Engine *e);
/* Parks job until deadline_ms (monotonic, rung_mono_ns() / 1e6); its fn
 * runs again whenever a trial may have become available. Returns false
 * (and parks nothing) when shutting down. */
bool engine_park(Engine *e, Job *job, int64_t deadline_ms);
/* Lease requests parked in a long poll now. */
int64_t engine_parked(Engine *e);
/* Bytes of the database on disk: its file plus its -wal file (stat(2),
 * so a scrape costs no query); -1 when there is no file to measure. */
int64_t engine_database_bytes(Engine *e);
/* A fresh lease token: 32 hex characters from the OS's random source. */
void engine_token(char out[CORE_TOKEN_LEN + 1]);
/* A random 53-bit seed for experiments that name none. */
uint64_t engine_seed(void);

/* The analysis thread's results (engine_analysis.c; analysis.h), for the
 * handlers of GET .../importance and .../surface (api_analysis.c), on the
 * engine thread. A result is cached under a key the handler makes, with
 * the version it was computed at: how many trials of its experiment were
 * completed (engine_analysis_version; -1 when it cannot be read). */
typedef struct AnalysisJob AnalysisJob;
/* Builds the job (its snapshot) for a key's query at version, for the
 * background refresh when trials complete; NULL when it cannot. */
typedef AnalysisJob *(*AnalysisBuild)(Engine *e, int64_t exp_id, const json_t *query,
                                      int64_t version);
int64_t engine_analysis_version(Engine *e, int64_t exp_id);
/* key's result if computed at a version >= min_version: a new reference
 * with its HTTP status in *status; else NULL. */
json_t *engine_analysis_cached(Engine *e, const char *key, int64_t min_version, int *status);
/* Whether a job for key at a version >= min_version is queued or running. */
bool engine_analysis_running(Engine *e, const char *key, int64_t min_version);
/* Hands job (stolen; its key, exp_id and version set) to the analysis
 * thread; query (copied) and build let the engine refresh it. */
void engine_analysis_submit(Engine *e, AnalysisJob *job, const json_t *query, AnalysisBuild build);
/* Drops an experiment's results (it was deleted). */
void engine_analysis_forget(Engine *e, int64_t exp_id);

#endif
