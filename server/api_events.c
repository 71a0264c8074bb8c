/* The event log (docs/api.md, "Events"): who did what, when, to which
 * experiment, trial or worker, oldest first, paged by id; with wait_s, a
 * long poll that answers as soon as a new event is committed. */
#include "api_internal.h"

#include <string.h>

#include "clock.h"
#include "store.h"

#define A RUNG_E_INVALID_ARGUMENT
#define EVENTS_MAX_WAIT_S 60

/* A long poll wakes when events were queued since it parked. */
static bool events_moved(Engine *e, const Job *job)
{
    return core_events_total(engine_core(e)) != job->mark;
}

static const char *query_text(const Job *job, const char *name)
{
    const char *v = json_string_value(json_object_get(job->query, name));
    return v != NULL && v[0] != '\0' ? v : NULL;
}

void api_event_list(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    EventFilter f = {0};
    int64_t wait_s;
    if (api_query_int(job, "after", 0, 0, INT64_MAX, &f.after, &err) ||
        api_query_int(job, "limit", LIST_DEFAULT, 1, LIST_MAX, &f.limit, &err) ||
        api_query_int(job, "experiment", 0, 0, INT64_MAX, &f.experiment_id, &err) ||
        api_query_int(job, "trial", 0, 0, INT64_MAX, &f.trial_id, &err) ||
        api_query_int(job, "wait_s", 0, 0, EVENTS_MAX_WAIT_S, &wait_s, &err)) {
        api_fail(job, &err);
        return;
    }
    f.kind = query_text(job, "kind");
    f.actor = query_text(job, "actor");
    json_t *items;
    if (store_read_events(engine_store(e), &f, &items, &err)) {
        api_fail(job, &err);
        return;
    }
    size_t n = json_array_size(items);
    if (n == 0 && wait_s > 0) {
        /* The first call sets the deadline; a re-run keeps it. */
        int64_t deadline = job->wake ? job->deadline_ms : rung_mono_ns() / 1000000 + wait_s * 1000;
        job->wake = events_moved;
        job->mark = core_events_total(engine_core(e));
        json_decref(items);
        if (engine_park(e, job, deadline))
            return;
        items = json_array(); /* shutting down: answer now */
    }
    int64_t next = n > 0 ? json_integer_value(json_object_get(json_array_get(items, n - 1), "id"))
                         : f.after;
    json_t *o = json_pack("{s:o, s:I}", "items", items, "next_after", (json_int_t)next);
    api_reply(job, 200, o);
}
