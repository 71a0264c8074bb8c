/* The event log's entries as the core queues them (docs/api.md,
 * "Events"; schema 13). core.h's CoreChanges carries them to the store. */
#ifndef RUNG_SERVER_CORE_EVENTS_H
#define RUNG_SERVER_CORE_EVENTS_H

#include <jansson.h>
#include <stdint.h>

typedef struct Core Core;

/* One entry of the event log (docs/api.md, "Events"; schema 13): who did
 * what, when, to which experiment, trial or worker. Queued by the core and
 * the handlers (core_event) and written with the change it describes, in
 * the same transaction, so that no committed change lacks its event. */
typedef struct CoreEvent {
    int64_t id;                                 /* set when the store writes it */
    int64_t at;                                 /* ms since the epoch */
    const char *actor_kind;                     /* "user", "worker" or "rungd" (static) */
    char actor[65];                             /* a user's or worker's name, or "rungd" */
    const char *kind;                           /* "experiment.submitted", ... (static) */
    int64_t experiment_id, trial_id, worker_id; /* 0: none */
    json_t *detail;                             /* owned: an object, or NULL */
} CoreEvent;

/* Queues an event of rungd's own (actor "rungd"), or one a person or
 * worker caused (core_event_by; actor_kind "user" or "worker", static).
 * detail is stolen (NULL: none). Events written so far: core_events_total,
 * for the long polls of GET /api/v1/events. */
void core_event(Core *core, int64_t now, const char *kind, int64_t experiment_id, int64_t trial_id,
                int64_t worker_id, json_t *detail);
void core_event_by(Core *core, int64_t now, const char *actor_kind, const char *actor,
                   const char *kind, int64_t experiment_id, int64_t trial_id, int64_t worker_id,
                   json_t *detail);
int64_t core_events_total(const Core *core);

#endif
