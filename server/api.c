/* What the handlers of every resource share: the replies, the query
 * arguments, the views of trials and the lookups that try memory first
 * and the store after; see api_internal.h, api.h and docs/api.md for every
 * shape. */
#include "api_internal.h"

#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include "errjson.h"
#include "store_read.h"
#include "views.h"

#define A RUNG_E_INVALID_ARGUMENT

void api_error(Job *job, int code, const char *field, const char *message)
{
    json_decref(job->reply);
    job->status = rung_error_status(code);
    job->reply = rung_error_json(code, field, message);
}

void api_fail(Job *job, const RungError *err)
{
    api_error(job, err->code, err->field, err->message);
}

void api_reply(Job *job, int status, json_t *body)
{
    json_decref(job->reply);
    job->status = status;
    job->reply = body;
}

/* A non-negative integer query argument; fills err on a bad one. */
int api_query_int(const Job *job, const char *name, int64_t def, int64_t min, int64_t max,
                  int64_t *out, RungError *err)
{
    *out = def;
    const char *s = json_string_value(json_object_get(job->query, name));
    if (s == NULL || s[0] == '\0')
        return 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || v < min || v > max)
        return rung_error_set(err, A, name, "%s: must be an integer between %lld and %lld", name,
                              (long long)min, (long long)max);
    *out = v;
    return 0;
}

int api_query_tag(Job *job, const char **tag)
{
    *tag = json_string_value(json_object_get(job->query, "tag"));
    if (*tag != NULL && (*tag)[0] == '\0')
        *tag = NULL; /* as for the other arguments: empty is absent */
    if (*tag != NULL && !spec_tag_ok(*tag, strlen(*tag))) {
        api_error(job, A, "tag",
                  "tag: must be 1 to 64 bytes of printable UTF-8 without commas (a tag)");
        return -1;
    }
    return 0;
}

FILE *api_reply_stream(char **buf, size_t *len)
{
    FILE *out = open_memstream(buf, len);
    if (out == NULL)
        abort();
    __fsetlocking(out, FSETLOCKING_BYCALLER);
    return out;
}

/* ---- objects ---- */

json_t *api_trial_json(const Trial *t)
{
    TrialView v;
    view_of_trial(t, &v);
    return view_trial(&v);
}

json_t *api_list_json(json_t *items, int64_t total)
{
    return json_pack("{s:o, s:I}", "items", items, "total", (json_int_t)total);
}

/* The spec of an experiment in memory (borrowed) or from the store (then
 * *own is set and must be closed). NULL with the reply set on failure. */
const Spec *api_spec_of(Engine *e, Job *job, int64_t id, Spec *own, bool *owned)
{
    *owned = false;
    Experiment *x = core_experiment(engine_core(e), id);
    if (x != NULL)
        return &x->spec;
    RungError err;
    if (store_read_spec(engine_store(e), id, own, &err) != 0) {
        api_fail(job, &err);
        return NULL;
    }
    *owned = true;
    return own;
}

/* The trial as the API shows it: from memory when it is there. */
json_t *api_trial_view(Engine *e, const Spec *spec, int64_t id, RungError *err)
{
    Trial *t = core_trial(engine_core(e), id);
    if (t != NULL)
        return api_trial_json(t);
    json_t *o = NULL;
    int64_t exp_id;
    store_read_trial(engine_store(e), id, spec, &o, &exp_id, err);
    return o;
}

void api_event(Engine *e, const Job *job, const char *kind, int64_t experiment_id, int64_t trial_id,
               int64_t worker_id, json_t *detail)
{
    core_event_by(engine_core(e), engine_now(e), job->who.role == ROLE_WORKER ? "worker" : "user",
                  job->who.name, kind, experiment_id, trial_id, worker_id, detail);
}
