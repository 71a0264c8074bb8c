/* The route table (api.h): every route of docs/api.md but /healthz, which
 * the front answers itself. tests/integration/test_api_doc.py reads this
 * initializer and checks that docs/api.md documents exactly its routes. */
#include "api.h"

const HttpRoute api_routes[] = {
    {"POST", "/api/v1/experiments", api_experiment_create, NULL, false, false},
    {"GET", "/api/v1/experiments", api_experiment_list, NULL, false, false},
    {"GET", "/api/v1/experiments/{id}", api_experiment_get, NULL, false, false},
    {"PATCH", "/api/v1/experiments/{id}", api_experiment_patch, NULL, false, false},
    {"DELETE", "/api/v1/experiments/{id}", api_experiment_delete, NULL, false, false},
    {"POST", "/api/v1/experiments/{id}/cancel", api_experiment_cancel, NULL, false, false},
    {"POST", "/api/v1/experiments/{id}/pause", api_experiment_pause, NULL, false, false},
    {"POST", "/api/v1/experiments/{id}/resume", api_experiment_resume, NULL, false, false},
    {"POST", "/api/v1/experiments/{id}/retry-failed", api_experiment_retry_failed, NULL, false,
     false},
    {"GET", "/api/v1/experiments/{id}/trials", api_experiment_trials, NULL, false, false},
    {"GET", "/api/v1/experiments/{id}/trials.csv", api_experiment_csv, NULL, false, false},
    {"GET", "/api/v1/experiments/{id}/curves", api_experiment_curves, NULL, false, false},
    {"GET", "/api/v1/trials/{id}", api_trial_get, NULL, false, false},
    {"GET", "/api/v1/trials/{id}/metrics", api_trial_metrics, NULL, false, false},
    {"POST", "/api/v1/trials/{id}/stop", api_trial_stop, NULL, false, false},
    {"POST", "/api/v1/trials/{id}/report", api_trial_report, NULL, true, false},
    {"POST", "/api/v1/trials/{id}/finish", api_trial_finish, NULL, false, false},
    {"PUT", "/api/v1/trials/{id}/checkpoint", api_checkpoint_put, api_checkpoint_admit, false,
     false},
    {"GET", "/api/v1/trials/{id}/checkpoint", api_checkpoint_get, NULL, false, false},
    {"PUT", "/api/v1/trials/{id}/artifacts", api_artifacts_put, api_artifacts_admit, false, false},
    {"GET", "/api/v1/trials/{id}/artifacts", api_artifacts_get, NULL, false, false},
    {"GET", "/api/v1/blobs/{sha256}", api_blob_get, NULL, false, false},
    {"PUT", "/api/v1/blobs/{sha256}", api_blob_put, api_blob_admit, false, true},
    {"POST", "/api/v1/workers", api_worker_register, NULL, false, false},
    {"GET", "/api/v1/workers", api_worker_list, NULL, false, false},
    {"POST", "/api/v1/workers/{id}/lease", api_worker_lease, NULL, false, false},
    {"POST", "/api/v1/workers/{id}/heartbeat", api_worker_heartbeat, NULL, false, false},
    {"GET", "/metrics", api_prometheus, NULL, false, false},
};

const size_t api_n_routes = sizeof api_routes / sizeof api_routes[0];
