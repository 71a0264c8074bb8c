/* The experiment spec's "trainable" (docs/api.md, "trainable"): command,
 * builtin or external, the placeholders of a command's argv, and where a
 * command's code comes from: an uploaded working directory, a named
 * environment, a container image. */
#include "spec_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "jsonv.h"

/* The placeholders rung-worker fills with the trial's place in its gang
 * (docs/api.md, "trainable"; worker/gang.h), in every trial's argv. */
static bool gang_placeholder(const char *name)
{
    static const char *const names[] = {"node_rank", "nnodes", "master_addr", "master_port"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

/* Checks that every "{name}" in an argv entry names a parameter or a gang
 * placeholder, so a typo in a placeholder fails at submit instead of
 * reaching the program verbatim; and that no parameter used there has a
 * gang placeholder's name, which would leave {name} ambiguous (a stored
 * spec keeps loading: rung-worker refuses such a trial instead). */
static int check_placeholders(const char *arg, const char *field, const Space *space, bool stored,
                              RungError *err)
{
    for (const char *p = strchr(arg, '{'); p != NULL; p = strchr(p + 1, '{')) {
        const char *end = strchr(p + 1, '}');
        if (end == NULL)
            break;
        size_t len = (size_t)(end - p - 1);
        if (len == 0 || len > SPACE_MAX_PATH || !(isalpha((unsigned char)p[1]) || p[1] == '_'))
            continue;
        bool ident = true;
        for (const char *c = p + 1; c < end; c++)
            if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.' && *c != '-')
                ident = false;
        if (!ident)
            continue;
        char name[SPACE_MAX_PATH + 1];
        memcpy(name, p + 1, len);
        name[len] = '\0';
        if (gang_placeholder(name)) {
            if (space_has_param(space, name) && !stored)
                return rung_error_set(err, E, field,
                                      "%s: {%s} is the trial's place in its gang, filled in by "
                                      "the worker, and search_space has a parameter '%s' too: "
                                      "rename the parameter",
                                      field, name, name);
            continue;
        }
        if (!space_has_param(space, name))
            return rung_error_set(err, E, field, "%s: {%s} names no parameter of search_space",
                                  field, name);
    }
    return 0;
}

/* trainable.environment: a name the workers map to an interpreter
 * (rung-worker --env NAME=PATH), so that a spec never carries the
 * submitter's own interpreter path (docs/workers.md, "Running a team's
 * code"). */
static int parse_environment(json_t *t, Spec *spec, RungError *err)
{
    const char *name = NULL;
    if (jsonv_string(t, "trainable", "environment", JSONV_OPTIONAL, 64, &name, E, err))
        return err->code;
    if (name == NULL)
        return 0;
    bool ok = spec_environment_ok(name);
    if (!ok)
        return rung_error_set(err, E, "trainable.environment",
                              "trainable.environment: '%.80s' is not a name: 1 to 64 letters, "
                              "digits, '_', '.' or '-', starting with a letter or digit",
                              name);
    snprintf(spec->environment, sizeof spec->environment, "%s", name);
    return 0;
}

/* trainable.working_dir: "sha256:<64 hex digits>", a blob uploaded first
 * (PUT /api/v1/blobs/{sha256}); whether rungd holds it is checked at
 * submission (api_experiments.c), not here. */
static int parse_working_dir(json_t *t, Spec *spec, RungError *err)
{
    const char *v = NULL;
    if (jsonv_string(t, "trainable", "working_dir", JSONV_OPTIONAL, 128, &v, E, err))
        return err->code;
    if (v == NULL)
        return 0;
    bool ok = strncmp(v, "sha256:", 7) == 0 && strlen(v) == 7 + 64;
    for (const char *c = v + 7; ok && *c; c++)
        ok = isxdigit((unsigned char)*c) != 0;
    if (!ok)
        return rung_error_set(err, E, "trainable.working_dir",
                              "trainable.working_dir: must be \"sha256:\" and the 64 hex digits "
                              "of an uploaded blob, not '%.100s' (the rung clients pack and "
                              "upload a folder for you)",
                              v);
    for (int i = 0; i < 64; i++)
        spec->working_dir[i] = (char)tolower((unsigned char)v[7 + i]);
    spec->working_dir[64] = '\0';
    char lower[7 + 65];
    snprintf(lower, sizeof lower, "sha256:%s", spec->working_dir);
    json_object_set_new(t, "working_dir", json_string(lower)); /* one spelling, stored */
    return 0;
}

/* trainable.cwd inside a working directory: relative, and never above it. */
static int check_tree_cwd(const char *cwd, RungError *err)
{
    bool up = false;
    for (const char *p = cwd; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            up = true;
        p += n;
        while (*p == '/')
            p++;
    }
    if (cwd[0] == '/' || up)
        return rung_error_set(err, E, "trainable.cwd",
                              "trainable.cwd: with a working_dir, a relative path inside it "
                              "(no leading '/', no '..'), not '%.100s'",
                              cwd);
    return 0;
}

/* A list of at most max strings of at most len bytes, or absent. */
static int string_list(json_t *c, const char *key, size_t max, size_t len, RungError *err)
{
    char field[RUNG_FIELD_MAX];
    snprintf(field, sizeof field, "trainable.container.%s", key);
    json_t *a = json_object_get(c, key);
    if (a == NULL || json_is_null(a))
        return 0;
    if (!json_is_array(a) || json_array_size(a) > max)
        return rung_error_set(err, E, field, "%s: must be an array of at most %zu strings", field,
                              max);
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > len)
            return rung_error_set(err, E, field, "%s[%zu]: must be a string of 1 to %zu bytes",
                                  field, i, len);
        if (strcmp(key, "mounts") == 0) {
            const char *m = json_string_value(v);
            const char *colon = strchr(m, ':');
            const char *mode = colon ? strchr(colon + 1, ':') : NULL;
            if (colon == NULL || colon == m || colon[1] != '/' ||
                (mode != NULL && strcmp(mode, ":ro") != 0 && strcmp(mode, ":rw") != 0))
                return rung_error_set(err, E, field,
                                      "%s[%zu]: '%.100s' is not SOURCE:/TARGET or "
                                      "SOURCE:/TARGET:ro",
                                      field, i, m);
        }
    }
    return 0;
}

/* trainable.container: the image the worker runs the argv in (docs/api.md,
 * "trainable"). */
static int parse_container(json_t *t, Spec *spec, RungError *err)
{
    json_t *c = json_object_get(t, "container");
    if (c == NULL || json_is_null(c))
        return 0;
    const char *allowed[] = {"image", "runtime", "mounts", "options", NULL};
    const char *image = NULL, *runtime = NULL;
    if (jsonv_object(c, "trainable.container", E, err) ||
        jsonv_only_keys(c, "trainable.container", allowed, E, err) ||
        jsonv_string(c, "trainable.container", "image", JSONV_REQUIRED, 512, &image, E, err) ||
        jsonv_string(c, "trainable.container", "runtime", JSONV_OPTIONAL, 16, &runtime, E, err))
        return err->code;
    if (image[0] == '\0')
        return rung_error_set(err, E, "trainable.container.image",
                              "trainable.container.image: required, the image to run");
    if (runtime != NULL && strcmp(runtime, "podman") != 0 && strcmp(runtime, "docker") != 0 &&
        strcmp(runtime, "apptainer") != 0)
        return rung_error_set(err, E, "trainable.container.runtime",
                              "trainable.container.runtime: must be podman, docker or apptainer, "
                              "not '%.20s'",
                              runtime);
    if (string_list(c, "mounts", 32, SPEC_MAX_ARG, err) ||
        string_list(c, "options", 64, SPEC_MAX_ARG, err))
        return err->code;
    spec->container = true;
    snprintf(spec->container_runtime, sizeof spec->container_runtime, "%s", runtime ? runtime : "");
    return 0;
}

static int parse_command(json_t *t, Spec *spec, bool stored, RungError *err)
{
    const char *allowed[] = {"type",        "argv",        "env",       "cwd",          "timeout_s",
                             "working_dir", "environment", "container", "wandb_compat", NULL};
    const Space *space = spec->space;
    if (jsonv_only_keys(t, "trainable", allowed, E, err))
        return err->code;
    json_t *argv = json_object_get(t, "argv");
    if (!json_is_array(argv) || json_array_size(argv) == 0)
        return rung_error_set(err, E, "trainable.argv",
                              "trainable.argv: required, a non-empty array of strings");
    if (json_array_size(argv) > SPEC_MAX_ARGV)
        return rung_error_set(err, E, "trainable.argv", "trainable.argv: more than %d entries",
                              SPEC_MAX_ARGV);
    size_t i;
    json_t *a;
    json_array_foreach(argv, i, a) {
        char field[RUNG_FIELD_MAX];
        snprintf(field, sizeof field, "trainable.argv[%zu]", i);
        if (!json_is_string(a) || json_string_length(a) > SPEC_MAX_ARG)
            return rung_error_set(err, E, field, "%s: must be a string of at most %d bytes", field,
                                  SPEC_MAX_ARG);
        if (check_placeholders(json_string_value(a), field, space, stored, err))
            return err->code;
    }
    json_t *env = json_object_get(t, "env");
    if (env != NULL && !json_is_null(env)) {
        if (jsonv_object(env, "trainable.env", E, err))
            return err->code;
        if (json_object_size(env) > SPEC_MAX_ENV)
            return rung_error_set(err, E, "trainable.env", "trainable.env: more than %d entries",
                                  SPEC_MAX_ENV);
        const char *key;
        json_t *v;
        json_object_foreach(env, key, v) {
            char field[RUNG_FIELD_MAX];
            jsonv_path(field, sizeof field, "trainable.env", key);
            if (key[0] == '\0' || strchr(key, '=') != NULL)
                return rung_error_set(err, E, field, "%s: not a valid variable name", field);
            if (!stored && strlen(key) > SPEC_MAX_ENV_NAME)
                return rung_error_set(err, E, field, "%s: a name longer than %d bytes", field,
                                      SPEC_MAX_ENV_NAME);
            if (!json_is_string(v) || json_string_length(v) > SPEC_MAX_ARG)
                return rung_error_set(err, E, field, "%s: must be a string of at most %d bytes",
                                      field, SPEC_MAX_ARG);
        }
    }
    const char *cwd;
    double timeout = 0;
    if (jsonv_string(t, "trainable", "cwd", JSONV_OPTIONAL, SPEC_MAX_ARG, &cwd, E, err) ||
        jsonv_number(t, "trainable", "timeout_s", JSONV_OPTIONAL, &timeout, E, err))
        return err->code;
    if (json_object_get(t, "timeout_s") && timeout <= 0)
        return rung_error_set(err, E, "trainable.timeout_s", "trainable.timeout_s: must be > 0");
    if (parse_working_dir(t, spec, err) || parse_environment(t, spec, err) ||
        parse_container(t, spec, err))
        return err->code;
    if (spec->working_dir[0] != '\0' && cwd != NULL && check_tree_cwd(cwd, err))
        return err->code;
    /* The worker puts its copy of the wandb stand-in on the trial's
     * PYTHONPATH, a path of its own file system: an image has neither. */
    bool wandb = false;
    if (jsonv_bool(t, "trainable", "wandb_compat", JSONV_OPTIONAL, &wandb, E, err))
        return err->code;
    if (wandb && spec->container)
        return rung_error_set(err, E, "trainable.wandb_compat",
                              "trainable.wandb_compat: not with a container (the image has its "
                              "own Python: install the stand-in there, python/rung/compat)");
    return 0;
}

/* docs/api.md, "trainable". At submission a trainable is required: an
 * experiment without one used to wait for workers that never came when the
 * user meant rung-worker to run it. Earlier rungds stored specs without one
 * (workers of one's own): those load as {"type": "external"}, written in. */
int spec_parse_trainable(json_t *spec_json, bool stored, Spec *spec, RungError *err)
{
    json_t *t = json_object_get(spec_json, "trainable");
    spec->trainable = SPEC_TRAINABLE_EXTERNAL;
    if (t == NULL || json_is_null(t)) {
        if (!stored)
            return rung_error_set(err, E, "trainable",
                                  "trainable: required: give a command, a builtin, or "
                                  "{\"type\": \"external\"} for workers of your own");
        json_object_set_new(spec_json, "trainable", json_pack("{s:s}", "type", "external"));
        return 0;
    }
    if (jsonv_object(t, "trainable", E, err))
        return err->code;
    const char *type;
    if (jsonv_string(t, "trainable", "type", JSONV_REQUIRED, 32, &type, E, err))
        return err->code;
    if (strcmp(type, "command") == 0) {
        spec->trainable = SPEC_TRAINABLE_COMMAND;
        return parse_command(t, spec, stored, err);
    }
    if (strcmp(type, "builtin") == 0) {
        const char *allowed[] = {"type", "model", "dataset", "environment", NULL};
        const char *s;
        spec->trainable = SPEC_TRAINABLE_BUILTIN;
        if (jsonv_only_keys(t, "trainable", allowed, E, err) ||
            jsonv_string(t, "trainable", "model", JSONV_OPTIONAL, 64, &s, E, err) ||
            jsonv_string(t, "trainable", "dataset", JSONV_OPTIONAL, 256, &s, E, err) ||
            parse_environment(t, spec, err))
            return err->code;
        return 0;
    }
    if (strcmp(type, "external") == 0) {
        const char *allowed[] = {"type", NULL};
        return jsonv_only_keys(t, "trainable", allowed, E, err);
    }
    return rung_error_set(err, E, "trainable.type",
                          "trainable.type: must be command, builtin or external, not '%s'", type);
}
