/* What the handlers of every resource share (api.c): the replies, the
 * query arguments, and the trials' and specs' lookups that try memory
 * first and the store after. api.h is the handlers' interface to the rest
 * of rungd; this header is theirs alone. The handlers are one file per
 * resource of docs/api.md: api_experiments.c, api_trials.c,
 * api_checkpoints.c, api_workers.c and api_metrics.c (/metrics); they
 * call api.c, which calls none of them. */
#ifndef RUNG_SERVER_API_INTERNAL_H
#define RUNG_SERVER_API_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "api.h"
#include "core.h"
#include "error.h"
#include "spec.h"

#define LIST_DEFAULT 100 /* docs/api.md: lists default to 100 items ... */
#define LIST_MAX 1000    /* ... and give at most 1,000 at once */

/* Sets job's reply to the error of docs/api.md's shape (errjson.h, the one
 * builder of error bodies); field may be "". */
void api_error(Job *job, int code, const char *field, const char *message);
/* The same from a filled RungError. */
void api_fail(Job *job, const RungError *err);
/* Queues an event of the log (core_events.h) caused by job's principal
 * (actor "worker" for a worker token, else "user"); detail is stolen. */
void api_event(Engine *e, const Job *job, const char *kind, int64_t experiment_id, int64_t trial_id,
               int64_t worker_id, json_t *detail);
/* Sets job's reply: body is stolen. */
void api_reply(Job *job, int status, json_t *body);
/* A non-negative integer query argument; fills err on a bad one. */
int api_query_int(const Job *job, const char *name, int64_t def, int64_t min, int64_t max,
                  int64_t *out, RungError *err);
/* The ?tag= of a listing (docs/api.md, "Tags and notes"): *tag is NULL
 * when absent or empty; -1 with the reply set (400, field "tag") when it
 * cannot be a tag. */
int api_query_tag(Job *job, const char **tag);
/* A memory stream for a large reply (free *buf after fclose): only the
 * engine thread writes it, so its calls skip stdio's lock (one per fputc
 * of 50,000 CSV rows). */
FILE *api_reply_stream(char **buf, size_t *len);
/* A trial in memory as the API shows it (views.h). */
json_t *api_trial_json(const Trial *t);
/* api_artifacts.c: {"upload_token"} for a finish reply when the spec keeps
 * this completed trial's folder, else NULL; the trial object's
 * "artifacts" set on o; a deleted experiment's files removed. */
json_t *api_artifacts_wanted(Engine *e, const Trial *t, const Spec *spec);
void api_artifacts_describe(Engine *e, int64_t trial, json_t *o);
void api_artifacts_forget(Engine *e, int64_t experiment);
/* {"items": items (stolen), "total": total}: docs/api.md's lists. */
json_t *api_list_json(json_t *items, int64_t total);
/* The spec of an experiment in memory (borrowed) or from the store (then
 * *own is set and must be closed). NULL with the reply set on failure. */
const Spec *api_spec_of(Engine *e, Job *job, int64_t id, Spec *own, bool *owned);
/* The trial as the API shows it: from memory when it is there. */
json_t *api_trial_view(Engine *e, const Spec *spec, int64_t id, RungError *err);

#endif
