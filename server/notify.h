/* Notices (docs/operations.md, "Notifications"): webhooks an admin
 * configures (rungd --notify-file), each a URL, a secret and the event
 * kinds it wants. The engine hands every committed event to notify_event,
 * which only queues it; one thread of this module POSTs the JSON bodies,
 * signed with HMAC-SHA256 of the body under the notifier's secret, and
 * retries with doubling waits. Each delivery's outcome comes back to the
 * engine (notify_drain), which records it as an event of its own. A slow
 * or dead receiver never delays the engine. */
#ifndef RUNG_SERVER_NOTIFY_H
#define RUNG_SERVER_NOTIFY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define NOTIFY_MAX 32         /* notifiers in one file */
#define NOTIFY_MAX_KINDS 32   /* event kinds one notifier wants */
#define NOTIFY_QUEUE_MAX 1024 /* deliveries waiting; beyond, the oldest is dropped */

typedef enum { NOTIFY_JSON, NOTIFY_SLACK } NotifyFormat;

typedef struct Notifier {
    char name[65];
    char *url;                     /* owned: http:// or https:// */
    char *secret;                  /* owned: the HMAC key, at least 16 bytes */
    char *kinds[NOTIFY_MAX_KINDS]; /* owned: "experiment.ended", a family "trial", or "*" */
    int n_kinds;
    NotifyFormat format;
    int max_attempts;      /* 1 .. 20, default 5 */
    int64_t retry_base_ms; /* the first wait between attempts, default 1000 */
} Notifier;

typedef struct NotifyConfig {
    Notifier notifiers[NOTIFY_MAX];
    int n;
} NotifyConfig;

/* Parses {"notifiers": [...]} (docs/operations.md); errors name the field
 * ("notifiers[1].url"). notify_config_load reads it from a file. Free
 * with notify_config_free. */
int notify_config_parse(const json_t *j, NotifyConfig *out, RungError *err);
int notify_config_load(const char *path, NotifyConfig *out, RungError *err);
void notify_config_free(NotifyConfig *c);
/* The notifier named name, or NULL. */
const Notifier *notify_find(const NotifyConfig *c, const char *name);
/* Whether n wants events of kind. */
bool notify_wants(const Notifier *n, const char *kind);

/* Pure helpers, for the tests: the one readable line of an event
 * ("Rung: experiment 3 ended (completed, all_trials_ended)"), malloc'd;
 * the body a notifier of format f is sent (malloc'd); the signature
 * header's value "sha256=<hex>" of body under secret. */
char *notify_text(const json_t *event);
char *notify_body(const json_t *event, NotifyFormat f);
void notify_signature(const char *secret, const char *body, size_t len, char out[72]);

typedef struct Notify Notify;

/* Starts the delivery thread over cfg (taken: freed by notify_stop). */
Notify *notify_start(NotifyConfig *cfg);
/* Joins the thread, ending an attempt in flight within about a second;
 * deliveries not yet drained or still waiting are written to the log as
 * not delivered ("rungd stopped"), without their secrets. */
void notify_stop(Notify *n);
const NotifyConfig *notify_config(const Notify *n);

/* On the engine thread, for a committed event (docs/api.md's event
 * object): queues a delivery for every notifier that wants its kind and,
 * when chosen is an array of names (the experiment's spec.notify), is one
 * of them. Never waits on the network. Events of kind notify.* are not
 * sent (a failing receiver would feed itself). */
void notify_event(Notify *n, const json_t *event, const json_t *chosen);

typedef struct NotifyOutcome {
    char notifier[65];
    int64_t event_id;
    char kind[64];
    bool delivered;
    int attempts;
    long http_status; /* the last answer's, or 0 when none came */
    char error[160];  /* why not delivered; never the secret */
} NotifyOutcome;

/* The outcomes finished since the last call (at most max). */
size_t notify_drain(Notify *n, NotifyOutcome *out, size_t max);

#endif
