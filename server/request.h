/* The JSON request bodies rungd accepts, parsed into plain structs.
 *
 * Pure: no I/O, no Engine, no Core; only core.h's limits and its LeaseOffer
 * type. Each parser takes the body as http.c hands it over (NULL when the
 * request had none), checks it the way docs/api.md describes the request, and on
 * failure fills a RungError whose field names the offending field and whose
 * message starts with that field's top-level name ("body" for the body
 * itself). The codes are RUNG_E_BAD_JSON for a body that is no JSON object
 * and RUNG_E_INVALID_ARGUMENT for everything else.
 *
 * Every body is checked against JSONV_MAX_DEPTH (jsonv.h) before anything
 * else in it, since the handlers store parts of it (metrics, the worker's
 * gpus, the heartbeat) as JSON text.
 *
 * Strings and JSON values in the structs are borrowed from the body: they
 * live as long as it does. */
#ifndef RUNG_SERVER_REQUEST_H
#define RUNG_SERVER_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "error.h"

#define REQUEST_MAX_TOKEN 64         /* lease_token: CORE_TOKEN_LEN hex digits, with room */
#define REQUEST_MAX_STATUS 16        /* finish status: "completed", "failed", "preempted" */
#define REQUEST_MAX_STEP (1LL << 53) /* a step is exact as a JSON number up to 2^53 */
#define REQUEST_MAX_NAME 256         /* worker name and hostname */
#define REQUEST_MAX_GPUS_JSON 64     /* GPUs a worker may describe */
#define REQUEST_LONG_POLL_MAX_S 30   /* docs/api.md, "Long polls": a lease waits at most 30 s */
#define REQUEST_MAX_TRIAL_IDS 1024   /* trials one heartbeat may list */
#define REQUEST_MAX_LABELS 64        /* labels of a worker */
#define REQUEST_MAX_ENVIRONMENTS 64  /* environments (or runtimes) a worker offers */
#define REQUEST_MAX_WARN_LAST 5      /* invalid lines a warnings object quotes */
#define REQUEST_MAX_WARN_LINE 512    /* bytes of one quoted line */
#define REQUEST_MAX_WARN_WHY 256     /* bytes of why it was refused */
#define REQUEST_MAX_GPU_INDEX 1023   /* a GPU's index, as rung-worker --gpus takes it */
#define REQUEST_MAX_MB (1LL << 40)   /* MiB figures of a GPU: far beyond any */
#define REQUEST_MAX_HOURS 512        /* a heartbeat's hours, as rung-worker's --hours */
/* A report's info (worker/reportline.h, REPORTLINE_INFO_*: test_request.c
 * checks they are equal): bytes of one value as compact JSON, of all its
 * values together, and of a key, as a report line's names. */
#define REQUEST_MAX_INFO_VALUE 1024
#define REQUEST_MAX_INFO 4096
#define REQUEST_MAX_INFO_NAME 64

/* A trial's warnings, in the finish body and per trial in the heartbeat:
 * {"count": 3, "last": [{"line": "@rung {oops", "why": "not JSON ..."}]}
 * count: integer 0..2^53; last: 0..REQUEST_MAX_WARN_LAST objects with
 * exactly "line" (string, 1..REQUEST_MAX_WARN_LINE bytes) and "why"
 * (string, 1..REQUEST_MAX_WARN_WHY bytes), oldest first. The parsed
 * value is the body's object itself (borrowed), stored as it is. */

/* POST /api/v1/trials/{id}/report:
 * {"lease_token": "...", "step": 3, "metrics": {"loss": 0.4, "acc": "NaN"},
 *  "info": {"phase": "warmup", "done": false}} */
typedef struct ReportRequest {
    const char *lease_token; /* 1..REQUEST_MAX_TOKEN bytes */
    int64_t step;            /* 0..REQUEST_MAX_STEP */
    json_t *metrics;         /* an object of 0..CORE_MAX_METRICS values, each a number or
                                "NaN", "Infinity", "-Infinity" */
    json_t *info;            /* NULL when absent, null or {}; else an object of
                                1..CORE_MAX_METRICS values that are not numbers, keys of
                                1..REQUEST_MAX_INFO_NAME bytes none of which is also a
                                metric, each value at most REQUEST_MAX_INFO_VALUE bytes as
                                compact JSON and all at most REQUEST_MAX_INFO */
} ReportRequest;
int request_report_parse(json_t *body, ReportRequest *out, RungError *err);

/* POST /api/v1/trials/{id}/finish:
 * {"lease_token": "...", "status": "completed"|"failed"|"preempted", "error": "...",
 *  "log": "..."}
 * An error longer than CORE_MAX_ERROR bytes is cut in the body, in place, to
 * its longest head of whole UTF-8 characters within CORE_MAX_ERROR bytes
 * (the head is what is kept, and core.c keeps at most CORE_MAX_ERROR bytes;
 * cut anywhere else, the stored text could end in half a character). */
typedef struct FinishRequest {
    const char *lease_token; /* 1..REQUEST_MAX_TOKEN bytes */
    bool completed;          /* status "completed"; false for "failed" and "preempted" */
    bool preempted;          /* status "preempted": the worker gave the trial back */
    const char *error;       /* NULL when absent or null; at most CORE_MAX_ERROR bytes */
    const char *log;         /* the log's last lines; NULL when absent or null */
    json_t *warnings;        /* the trial's invalid @rung lines (REQUEST_WARNINGS), or NULL */
} FinishRequest;
int request_finish_parse(json_t *body, FinishRequest *out, RungError *err);

/* POST /api/v1/workers:
 * {"name": "...", "hostname": "...", "gpus": [{"index": 0, ...}], "cpus": 8}
 * name and hostname may be absent but not null. */
typedef struct RegisterRequest {
    const char *name;     /* 1..REQUEST_MAX_NAME bytes, or NULL when absent */
    const char *hostname; /* 1..REQUEST_MAX_NAME bytes, or "" when absent */
    const char *label;    /* what the worker is called: name, else hostname, else "worker" */
    json_t *gpus;         /* an array of 0..REQUEST_MAX_GPUS_JSON objects, or NULL when
                             absent or null (the worker has none) */
    int64_t cpus;         /* 0..SPEC_MAX_CPUS; 0 when absent */
    json_t *labels;       /* {"key": "value"}: 0..REQUEST_MAX_LABELS entries, keys 1..
                             SPEC_MAX_LABEL_KEY bytes of [A-Za-z0-9_.-/], values strings of
                             0..SPEC_MAX_LABEL_VALUE bytes; NULL when absent or null */
    json_t *environments; /* names it maps to interpreters (spec_environment_ok), or NULL */
    json_t *containers;   /* "podman", "docker", "apptainer": runtimes it offers, or NULL */
} RegisterRequest;
int request_register_parse(json_t *body, RegisterRequest *out, RungError *err);

/* POST /api/v1/workers/{id}/lease:
 * {"gpus": [0, 1], "cpus": 4, "wait_s": 10, "trainables": ["command", "builtin"],
 *  "advertise_addr": "10.0.0.3", "port": 29500}
 * trainables: the trainable types this worker runs (offer.trainables, a
 * mask of SPEC_TRAINABLE_BIT); absent or null: every type. advertise_addr
 * (1..CORE_MAX_ADDR bytes of a host name or IP address: letters, digits
 * and . - : _ %, not starting with -) and port (1..65535) come together or
 * not at all; absent, offer.advertise_addr is NULL and the worker is never
 * part of a gang. */
typedef struct LeaseRequest {
    LeaseOffer offer; /* gpus: 0..CORE_MAX_LEASE_GPUS indices >= 0, in the body's order;
                         cpus: 0..SPEC_MAX_CPUS, default_cpus when absent or null */
    double wait_s;    /* 0..REQUEST_LONG_POLL_MAX_S: a longer wait is capped, not refused */
} LeaseRequest;
int request_lease_parse(json_t *body, int64_t default_cpus, LeaseRequest *out, RungError *err);

/* Checks an offer against the GPUs its worker registered (the array of GPU
 * objects that RegisterRequest.gpus was; NULL for none): each offered index
 * must be the "index" of one of them, once. A registered object without an
 * integer "index" registers no index. The error names the offered entry,
 * "gpus[i]", with RUNG_E_INVALID_ARGUMENT. */
int request_lease_check_gpus(const LeaseOffer *offer, const json_t *registered, RungError *err);

/* POST /api/v1/workers/{id}/heartbeat:
 * {"trials": [17, 18], "gpus": [{"index": 0, "util": 0.97}], "logs": {"17": "text"},
 *  "hours": "Mon-Fri 19:00-07:00", "next_lease_at": "2026-11-23T18:00:00.000Z"}
 * Each gpus item is an object with only: index (integer 0..REQUEST_MAX_GPU_INDEX,
 * required), util and foreign_util (numbers 0..1), memory_used_mb,
 * memory_total_mb and foreign_mb (integers 0..REQUEST_MAX_MB), state ("spare",
 * "trial", "busy" or "waiting") and trial_id (an integer >= 1, or null; only
 * with state "trial"); at most REQUEST_MAX_GPUS_JSON items. hours: a string
 * of 1..REQUEST_MAX_HOURS bytes or null; next_lease_at: an RFC 3339 time or
 * null. The body is kept as the worker's heartbeat (without logs). */
typedef struct HeartbeatRequest {
    int64_t trials[REQUEST_MAX_TRIAL_IDS]; /* the trial ids, in the body's order */
    int64_t n_trials;
    json_t *gpus;     /* an array of GPU objects (above), or NULL when absent or null */
    json_t *logs;     /* an object of trial id (decimal digits) to text, or NULL when
                         absent or null; read it with request_heartbeat_log */
    json_t *warnings; /* an object of trial id (decimal digits) to a warnings
                         object, or NULL; read it with request_heartbeat_warnings */
} HeartbeatRequest;
int request_heartbeat_parse(json_t *body, HeartbeatRequest *out, RungError *err);

/* Iterates a parsed heartbeat's logs in the body's order: *iter starts NULL;
 * each call gives the next entry's trial id and text and returns true, or
 * returns false when there are no more. */
bool request_heartbeat_log(const HeartbeatRequest *hb, void **iter, int64_t *trial_id,
                           const char **text);
/* The same for the heartbeat's warnings objects. */
bool request_heartbeat_warnings(const HeartbeatRequest *hb, void **iter, int64_t *trial_id,
                                json_t **warnings);

#endif
