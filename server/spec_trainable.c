/* The experiment spec's "trainable" (docs/api.md, "trainable"): command,
 * builtin or external, and the placeholders of a command's argv. */
#include "spec_internal.h"

#include <ctype.h>
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

static int parse_command(json_t *t, const Space *space, bool stored, RungError *err)
{
    const char *allowed[] = {"type", "argv", "env", "cwd", "timeout_s", NULL};
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
        return parse_command(t, spec->space, stored, err);
    }
    if (strcmp(type, "builtin") == 0) {
        const char *allowed[] = {"type", "model", "dataset", NULL};
        const char *s;
        spec->trainable = SPEC_TRAINABLE_BUILTIN;
        if (jsonv_only_keys(t, "trainable", allowed, E, err) ||
            jsonv_string(t, "trainable", "model", JSONV_OPTIONAL, 64, &s, E, err) ||
            jsonv_string(t, "trainable", "dataset", JSONV_OPTIONAL, 256, &s, E, err))
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
