/* A child's environment, built in layers. Pure.
 *
 * A trial's environment is, from weakest to strongest (docs/api.md, "The
 * environment"): defaults of the worker (CUDA_DEVICE_ORDER=PCI_BUS_ID, so
 * CUDA numbers GPUs as NVML does), the worker's own environment (without
 * RUNG_TOKEN), PYTHONUNBUFFERED=1, the trainable's "env", and the variables
 * of the trial (CUDA_VISIBLE_DEVICES, RUNG_*). Each layer is env_set calls
 * on one Env: a later value of a name replaces the earlier one in place. */
#ifndef RUNG_WORKER_ENV_H
#define RUNG_WORKER_ENV_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct Env {
    char **vars; /* owned: "NAME=value" strings, NULL-terminated */
    size_t n, cap;
    bool oom; /* an allocation failed: env_take gives NULL */
} Env;

void env_init(Env *env);
/* Frees what env holds; fine after env_take. */
void env_close(Env *env);

/* Sets name (no '=', not empty; others are ignored) to value (copied). */
void env_set(Env *env, const char *name, const char *value);
/* Removes name when present. */
void env_unset(Env *env, const char *name);
/* Sets every "NAME=value" of list (NULL-terminated, borrowed), e.g. environ. */
void env_set_list(Env *env, char *const *list);
/* Sets every member of obj whose value is a string; false when obj is
 * neither NULL, null nor an object of strings (then nothing is set). */
bool env_set_json(Env *env, const json_t *obj);
/* The layers under the trainable's "env": CUDA_DEVICE_ORDER=PCI_BUS_ID,
 * then base (the worker's environ) without RUNG_TOKEN (the worker's
 * credential is not the trial's), then PYTHONUNBUFFERED=1. Python
 * block-buffers stdout into a pipe, so without it a Python trial's report
 * lines would reach the worker only when the buffer fills or the program
 * exits, too late for the scheduler to stop it early; a trainable's "env"
 * may still set it otherwise. */
void env_trial_base(Env *env, char *const *base);

/* The value of name, borrowed, or NULL. */
const char *env_get(const Env *env, const char *name);

/* Hands over the NULL-terminated array (free with env_free) and empties env.
 * NULL when an allocation failed on the way. */
char **env_take(Env *env);
void env_free(char **vars);

#endif
