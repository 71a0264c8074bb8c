/* Request handlers: JSON in, core calls, JSON out. They run on the engine
 * thread (see engine.h), hold no SQL and no policy of their own: validation
 * of request bodies is here (with request.c and spec.c), decisions are in
 * the core. One file per resource of docs/api.md: api_experiments.c,
 * api_trials.c, api_checkpoints.c, api_workers.c, api_metrics.c; what they
 * share is api.c's (api_internal.h); the route table api_routes.c. */
#ifndef RUNG_SERVER_API_H
#define RUNG_SERVER_API_H

#include <stddef.h>

#include "engine.h"
#include "http.h"

void api_experiment_create(Engine *e, Job *job);
void api_experiment_list(Engine *e, Job *job);
void api_experiment_get(Engine *e, Job *job);
void api_experiment_cancel(Engine *e, Job *job);
void api_experiment_pause(Engine *e, Job *job);
void api_experiment_resume(Engine *e, Job *job);
void api_experiment_patch(Engine *e, Job *job);
void api_experiment_retry_failed(Engine *e, Job *job);
void api_experiment_delete(Engine *e, Job *job);
void api_trial_stop(Engine *e, Job *job);
/* api_meta.c: tags and notes of trials, an experiment's submitted spec
 * and its timeline (docs/api.md, "Tags and notes", "Timeline"). */
void api_trial_patch(Engine *e, Job *job);
void api_experiment_spec(Engine *e, Job *job);
void api_experiment_timeline(Engine *e, Job *job);
void api_experiment_trials(Engine *e, Job *job);
void api_experiment_csv(Engine *e, Job *job);
void api_experiment_curves(Engine *e, Job *job);
void api_experiment_importance(Engine *e, Job *job);
void api_experiment_surface(Engine *e, Job *job);
void api_trial_get(Engine *e, Job *job);
void api_trial_metrics(Engine *e, Job *job);
void api_trial_report(Engine *e, Job *job);
void api_trial_finish(Engine *e, Job *job);
/* pbt's copies through rungd (docs/api.md, "Checkpoints"). */
void api_checkpoint_put(Engine *e, Job *job);
/* The head of a checkpoint PUT, before a byte of its body is read: 0 when
 * the worker and upload token of job's query (ids and query set) are
 * those of an upload rungd asked for and someone waits for it; else err
 * says why (403 forbidden, 409 conflict, 400 for a bad query argument). */
int api_checkpoint_admit(Engine *e, const Job *job, RungError *err);
void api_checkpoint_get(Engine *e, Job *job);
/* A working directory's blob (docs/api.md, "Blobs"): its upload's head
 * (the quota), the upload, and the download (GET and HEAD). */
int api_blob_admit(Engine *e, const Job *job, RungError *err);
void api_blob_put(Engine *e, Job *job);
void api_blob_get(Engine *e, Job *job);
/* Removes the blobs no experiment refers to, past their grace (blobs.h):
 * on the engine thread, or with core and store before the engine runs. */
void api_blob_sweep(Engine *e);
void api_blob_sweep_now(const Core *core, Store *store, const char *data_dir, int64_t now_ms);
/* A completed trial's folder (docs/api.md, "Artifacts"): the upload's
 * head (token, quota), the upload, the download. */
int api_artifacts_admit(Engine *e, const Job *job, RungError *err);
void api_artifacts_put(Engine *e, Job *job);
void api_artifacts_get(Engine *e, Job *job);
void api_worker_register(Engine *e, Job *job);
void api_worker_list(Engine *e, Job *job);
void api_worker_lease(Engine *e, Job *job);
void api_worker_heartbeat(Engine *e, Job *job);
void api_prometheus(Engine *e, Job *job);

/* The front's questions (http.h, HttpLookupFn and HttpCheckFn):
 * api_access.c. */
int api_access_lookup(Engine *e, const char *token, Principal *who, RungError *err);
int api_access_check(Engine *e, Access a, const int64_t ids[2], const Principal *who,
                     RungError *err);
/* Users and tokens (docs/api.md, "Users, roles and tokens"): api_users.c. */
void api_user_create(Engine *e, Job *job);
void api_user_list(Engine *e, Job *job);
void api_user_delete(Engine *e, Job *job);
void api_token_create(Engine *e, Job *job);
void api_token_list(Engine *e, Job *job);
void api_token_delete(Engine *e, Job *job);
void api_whoami(Engine *e, Job *job);
/* The dashboard's sessions (docs/api.md, "Sessions"): api_sessions.c. */
int api_session_lookup(Engine *e, const char *sid, const char *csrf, bool unsafe, Principal *who,
                       RungError *err);
void api_session_create(Engine *e, Job *job);
void api_session_get(Engine *e, Job *job);
void api_session_delete(Engine *e, Job *job);
/* The event log (docs/api.md, "Events"): api_events.c. */
void api_event_list(Engine *e, Job *job);

/* Every route with its handler (api_routes.c), handed to the front at
 * start (HttpConfig.routes). */
extern const HttpRoute api_routes[];
extern const size_t api_n_routes;

#endif
