/* Layered environments; see env.h. */
#include "env.h"

#include <stdlib.h>
#include <string.h>

void env_init(Env *env)
{
    memset(env, 0, sizeof *env);
}

void env_close(Env *env)
{
    for (size_t i = 0; i < env->n; i++)
        free(env->vars[i]);
    free(env->vars);
    env_init(env);
}

/* Index of name's entry, or env->n. */
static size_t find(const Env *env, const char *name, size_t name_len)
{
    for (size_t i = 0; i < env->n; i++)
        if (strncmp(env->vars[i], name, name_len) == 0 && env->vars[i][name_len] == '=')
            return i;
    return env->n;
}

static void set_n(Env *env, const char *name, size_t name_len, const char *value)
{
    if (name_len == 0 || memchr(name, '=', name_len) != NULL)
        return;
    size_t vlen = strlen(value);
    char *var = malloc(name_len + 1 + vlen + 1);
    if (var == NULL) {
        env->oom = true;
        return;
    }
    memcpy(var, name, name_len);
    var[name_len] = '=';
    memcpy(var + name_len + 1, value, vlen + 1);
    size_t i = find(env, name, name_len);
    if (i < env->n) {
        free(env->vars[i]);
        env->vars[i] = var;
        return;
    }
    if (env->n + 2 > env->cap) {
        size_t cap = env->cap ? env->cap * 2 : 64;
        char **p = realloc(env->vars, cap * sizeof *p);
        if (p == NULL) {
            free(var);
            env->oom = true;
            return;
        }
        env->vars = p;
        env->cap = cap;
    }
    env->vars[env->n++] = var;
    env->vars[env->n] = NULL;
}

void env_set(Env *env, const char *name, const char *value)
{
    set_n(env, name, strlen(name), value);
}

void env_unset(Env *env, const char *name)
{
    size_t i = find(env, name, strlen(name));
    if (i == env->n)
        return;
    free(env->vars[i]);
    memmove(&env->vars[i], &env->vars[i + 1], (env->n - i) * sizeof *env->vars);
    env->n--;
}

void env_set_list(Env *env, char *const *list)
{
    for (; list && *list; list++) {
        const char *eq = strchr(*list, '=');
        if (eq != NULL)
            set_n(env, *list, (size_t)(eq - *list), eq + 1);
    }
}

bool env_set_json(Env *env, const json_t *obj)
{
    if (obj == NULL || json_is_null(obj))
        return true;
    if (!json_is_object(obj))
        return false;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (!json_is_string(v))
            return false;
    }
    json_object_foreach((json_t *)obj, key, v) {
        env_set(env, key, json_string_value(v));
    }
    return true;
}

void env_trial_base(Env *env, char *const *base)
{
    env_set(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    env_set_list(env, base);
    env_unset(env, "RUNG_TOKEN");
    env_set(env, "PYTHONUNBUFFERED", "1");
}

const char *env_get(const Env *env, const char *name)
{
    size_t len = strlen(name);
    size_t i = find(env, name, len);
    return i < env->n ? env->vars[i] + len + 1 : NULL;
}

char **env_take(Env *env)
{
    if (env->oom) {
        env_close(env);
        return NULL;
    }
    char **vars = env->vars;
    if (vars == NULL) {
        vars = calloc(1, sizeof *vars);
        if (vars == NULL)
            return NULL;
    }
    env->vars = NULL;
    env->n = env->cap = 0;
    return vars;
}

void env_free(char **vars)
{
    if (vars == NULL)
        return;
    for (char **v = vars; *v; v++)
        free(*v);
    free(vars);
}
