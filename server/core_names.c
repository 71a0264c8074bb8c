/* The names of the Core's states and reasons, as the store and the API
 * spell them (docs/api.md), and their parsers. */
#include "core_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const trial_names[TRIAL__COUNT] = {"pending", "running",  "completed",
                                                      "stopped", "failed",   "canceled",
                                                      "paused",  "preempted"};
static const char *const exp_names[EXP__COUNT] = {"running", "completed", "canceled", "failed",
                                                  "paused"};
static const char *const end_names[END__COUNT] = {
    NULL,          "all_trials_ended", "canceled", "max_failed_trials", "metric_missing",
    "time_budget", "metric_threshold", "patience"};
static const char *const stop_names[STOP__COUNT] = {NULL, "cancel", "user", "experiment", "pause"};
static const char *const by_names[BY__COUNT] = {NULL, "scheduler", "user", "experiment"};
static const char *const retry_names[RETRY__COUNT] = {"failed", "worker_lost", "user"};

const char *retry_reason_name(RetryReason r)
{
    return r >= 0 && r < RETRY__COUNT ? retry_names[r] : NULL;
}

/* Index of name in names[0..n), or 0 (the NONE value). */
static int name_index(const char *const *names, int n, const char *name)
{
    for (int i = 1; name != NULL && i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return 0;
}

const char *end_reason_name(EndReason r)
{
    return r > END_NONE && r < END__COUNT ? end_names[r] : NULL;
}

EndReason end_reason_parse(const char *name)
{
    return (EndReason)name_index(end_names, END__COUNT, name);
}

const char *stop_kind_name(StopKind k)
{
    return k > STOP_NONE && k < STOP__COUNT ? stop_names[k] : NULL;
}

StopKind stop_kind_parse(const char *name)
{
    return (StopKind)name_index(stop_names, STOP__COUNT, name);
}

const char *stopped_by_name(StoppedBy b)
{
    return b > BY_NONE && b < BY__COUNT ? by_names[b] : NULL;
}

StoppedBy stopped_by_parse(const char *name)
{
    return (StoppedBy)name_index(by_names, BY__COUNT, name);
}

const char *trial_state_name(TrialState s)
{
    return (s >= 0 && s < TRIAL__COUNT) ? trial_names[s] : "unknown";
}

int trial_state_parse(const char *name, TrialState *out)
{
    for (int i = 0; i < TRIAL__COUNT; i++) {
        if (strcmp(name, trial_names[i]) == 0) {
            *out = (TrialState)i;
            return 0;
        }
    }
    return RUNG_E_INVALID_ARGUMENT;
}

const char *exp_state_name(ExpState s)
{
    return (s >= EXP_RUNNING && s < EXP__COUNT) ? exp_names[s] : "unknown";
}

int exp_state_parse(const char *name, ExpState *out)
{
    for (int i = 0; i < EXP__COUNT; i++) {
        if (strcmp(name, exp_names[i]) == 0) {
            *out = (ExpState)i;
            return 0;
        }
    }
    return RUNG_E_INVALID_ARGUMENT;
}

bool trial_state_terminal(TrialState s)
{
    return s == TRIAL_COMPLETED || s == TRIAL_STOPPED || s == TRIAL_FAILED || s == TRIAL_CANCELED;
}
