/* Parsing and validation of a search space (docs/api.md, "Search space").
 *
 * Every parameter is checked here, once, with the JSON path of the offending
 * field in the error, so that decoding and enumerating later can be plain
 * arithmetic that never fails on bad input. The bounds follow Ray Tune. */
#include "sampler_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonv.h"

#define INVALID RUNG_E_INVALID_SPEC

/* Longest "type" string we look at; longer ones are unknown anyway. */
#define SPACE_MAX_TYPE 32

/* Keys each kind of domain object may have; any other is "unknown field". */
static const char *const KEYS_RANGE[] = {"type", "low", "high", "grid_points", NULL};
static const char *const KEYS_QRANGE[] = {"type", "low", "high", "q", "grid_points", NULL};
static const char *const KEYS_VALUES[] = {"type", "values", NULL};

static const struct {
    const char *name;
    SpaceKind kind;
    const char *const *keys;
} DOMAINS[] = {
    {"uniform", SPACE_UNIFORM, KEYS_RANGE},
    {"quniform", SPACE_QUNIFORM, KEYS_QRANGE},
    {"loguniform", SPACE_LOGUNIFORM, KEYS_RANGE},
    {"qloguniform", SPACE_QLOGUNIFORM, KEYS_QRANGE},
    {"randint", SPACE_RANDINT, KEYS_RANGE},
    {"qrandint", SPACE_QRANDINT, KEYS_QRANGE},
    {"lograndint", SPACE_LOGRANDINT, KEYS_RANGE},
    {"choice", SPACE_CHOICE, KEYS_VALUES},
    {"grid", SPACE_GRID, KEYS_VALUES},
};
#define N_DOMAINS (sizeof DOMAINS / sizeof DOMAINS[0])

static bool is_alpha_(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

/* docs/api.md: [A-Za-z_][A-Za-z0-9_.-]{0,63}. Plain ASCII tests, not <ctype.h>,
 * so that the locale can never widen what a name may hold. */
static bool name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > SPACE_MAX_NAME || !is_alpha_(name[0]))
        return false;
    for (size_t i = 1; i < len; i++) {
        char c = name[i];
        if (!is_alpha_(c) && !(c >= '0' && c <= '9') && c != '.' && c != '-')
            return false;
    }
    return true;
}

/* Floor and ceiling of a / b for b > 0, exact for any sign of a. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && a < 0)
        q--;
    return q;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return -floor_div(-a, b);
}

static int out_of_memory(RungError *err)
{
    return rung_error_set(err, RUNG_E_INTERNAL, NULL, "out of memory");
}

/* "grid_points", shared by every numeric domain; builds the points. */
static int parse_grid_points(const json_t *spec, const char *path, SpaceParam *p, RungError *err)
{
    int rc = jsonv_int(spec, path, "grid_points", JSONV_OPTIONAL, 1, SPACE_MAX_GRID_POINTS,
                       &p->grid_points, INVALID, err);
    if (rc != 0)
        return rc;
    if (p->grid_points > 0 && space__make_points(p) != 0)
        return out_of_memory(err);
    return 0;
}

/* uniform, quniform, loguniform, qloguniform. */
static int parse_float(const json_t *spec, const char *path, SpaceParam *p, RungError *err)
{
    bool is_log = p->kind == SPACE_LOGUNIFORM || p->kind == SPACE_QLOGUNIFORM;
    bool is_quant = p->kind == SPACE_QUNIFORM || p->kind == SPACE_QLOGUNIFORM;
    char field[RUNG_FIELD_MAX];
    int rc = jsonv_number(spec, path, "low", JSONV_REQUIRED, &p->low, INVALID, err);
    if (rc == 0)
        rc = jsonv_number(spec, path, "high", JSONV_REQUIRED, &p->high, INVALID, err);
    if (rc == 0 && is_quant)
        rc = jsonv_number(spec, path, "q", JSONV_REQUIRED, &p->q, INVALID, err);
    if (rc != 0)
        return rc;
    const char *type = is_log ? (is_quant ? "qloguniform" : "loguniform") : "";
    if (is_log && !(p->low > 0.0)) {
        jsonv_path(field, sizeof field, path, "low");
        return rung_error_set(err, INVALID, field, "%s: low must be > 0 for %s", path, type);
    }
    jsonv_path(field, sizeof field, path, "high");
    if (!(p->low < p->high))
        return rung_error_set(err, INVALID, field, "%s: high must be > low", path);
    /* low + u * (high - low) must not overflow. */
    if (!isfinite(p->high - p->low))
        return rung_error_set(err, INVALID, field, "%s: high - low must be finite", path);
    if (is_log) {
        p->log_low = log(p->low);
        p->log_high = log(p->high);
        /* Two huge neighbours can share a logarithm; the cube needs a range. */
        if (!(p->log_low < p->log_high))
            return rung_error_set(err, INVALID, field, "%s: high is too close to low", path);
    }
    if (is_quant) {
        jsonv_path(field, sizeof field, path, "q");
        if (!(p->q > 0.0))
            return rung_error_set(err, INVALID, field, "%s: q must be > 0", path);
        if (fabs(p->low / p->q) > SPACE_QUANT_LIMIT || fabs(p->high / p->q) > SPACE_QUANT_LIMIT)
            return rung_error_set(err, INVALID, field,
                                  "%s: q is too small for [low, high] (more than 2^50 steps)",
                                  path);
        /* A bound that is a multiple of q up to rounding (0.3 / 0.1 is
         * 2.9999999999999996) counts as one. */
        p->kmin = ceil(p->low / p->q - 1e-9);
        p->kmax = floor(p->high / p->q + 1e-9);
        if (p->kmin > p->kmax)
            return rung_error_set(err, INVALID, field, "%s: no multiple of q in [low, high]", path);
    }
    return parse_grid_points(spec, path, p, err);
}

/* randint, qrandint, lograndint. */
static int parse_int(const json_t *spec, const char *path, SpaceParam *p, RungError *err)
{
    char field[RUNG_FIELD_MAX];
    int rc = jsonv_int(spec, path, "low", JSONV_REQUIRED, -SPACE_INT_LIMIT, SPACE_INT_LIMIT,
                       &p->ilow, INVALID, err);
    if (rc == 0)
        rc = jsonv_int(spec, path, "high", JSONV_REQUIRED, -SPACE_INT_LIMIT, SPACE_INT_LIMIT,
                       &p->ihigh, INVALID, err);
    if (rc == 0 && p->kind == SPACE_QRANDINT)
        rc = jsonv_int(spec, path, "q", JSONV_REQUIRED, 1, SPACE_INT_LIMIT, &p->iq, INVALID, err);
    if (rc != 0)
        return rc;
    if (p->kind == SPACE_LOGRANDINT && p->ilow < 1) {
        jsonv_path(field, sizeof field, path, "low");
        return rung_error_set(err, INVALID, field, "%s: low must be >= 1 for lograndint", path);
    }
    jsonv_path(field, sizeof field, path, "high");
    if (p->kind == SPACE_QRANDINT) {
        /* Ray's qrandint includes high. */
        if (p->ihigh < p->ilow)
            return rung_error_set(err, INVALID, field, "%s: high must be >= low", path);
        p->ik0 = ceil_div(p->ilow, p->iq);
        int64_t k1 = floor_div(p->ihigh, p->iq);
        if (k1 < p->ik0) {
            jsonv_path(field, sizeof field, path, "q");
            return rung_error_set(err, INVALID, field, "%s: no multiple of q in [low, high]", path);
        }
        p->count = k1 - p->ik0 + 1;
    } else {
        if (p->ihigh <= p->ilow)
            return rung_error_set(err, INVALID, field, "%s: high must be > low (high is excluded)",
                                  path);
        p->count = p->ihigh - p->ilow;
    }
    if (p->kind == SPACE_LOGRANDINT) {
        p->log_low = log((double)p->ilow);
        p->log_high = log((double)p->ihigh);
    }
    return parse_grid_points(spec, path, p, err);
}

/* choice (numbers, strings, booleans) and grid (any JSON values). */
static int parse_values(const json_t *spec, const char *path, SpaceParam *p, RungError *err)
{
    char field[RUNG_FIELD_MAX];
    jsonv_path(field, sizeof field, path, "values");
    const json_t *values = json_object_get(spec, "values");
    if (values == NULL || json_is_null(values))
        return rung_error_set(err, INVALID, field, "%s: required", field);
    if (!json_is_array(values))
        return rung_error_set(err, INVALID, field, "%s: must be an array", field);
    size_t n = json_array_size(values);
    if (n == 0)
        return rung_error_set(err, INVALID, field, "%s: must not be empty", field);
    if (n > SPACE_MAX_VALUES)
        return rung_error_set(err, INVALID, field, "%s: more than %d values", field,
                              SPACE_MAX_VALUES);
    if (p->kind == SPACE_CHOICE) {
        for (size_t i = 0; i < n; i++) {
            const json_t *v = json_array_get(values, i);
            if (!json_is_number(v) && !json_is_string(v) && !json_is_boolean(v)) {
                char item[RUNG_FIELD_MAX + 24]; /* room for "[index]" */
                snprintf(item, sizeof item, "%s[%zu]", field, i);
                return rung_error_set(err, INVALID, item,
                                      "%s: must be a number, a string or a boolean", item);
            }
        }
    }
    /* A deep copy: the space must not change when the caller's JSON does,
     * nor share reference counts with it across threads. */
    p->values = json_deep_copy(values);
    if (p->values == NULL)
        return out_of_memory(err);
    p->count = (int64_t)n;
    return 0;
}

static int parse_param(const char *name, const json_t *spec, SpaceParam *p, RungError *err)
{
    char path[RUNG_FIELD_MAX];
    jsonv_path(path, sizeof path, "search_space", name);
    if (!name_ok(name))
        return rung_error_set(err, INVALID, path,
                              "%s: invalid parameter name (must match "
                              "[A-Za-z_][A-Za-z0-9_.-]{0,63})",
                              path);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->cube = -1;

    /* Ray passes anything that is not a domain through unchanged. */
    if (!json_is_object(spec) || json_object_get(spec, "type") == NULL) {
        p->kind = SPACE_CONST;
        p->count = 1;
        p->values = json_deep_copy(spec);
        return p->values == NULL ? out_of_memory(err) : 0;
    }

    const char *type = NULL;
    int rc = jsonv_string(spec, path, "type", JSONV_REQUIRED, SPACE_MAX_TYPE, &type, INVALID, err);
    if (rc != 0)
        return rc;
    size_t d = 0;
    while (d < N_DOMAINS && strcmp(DOMAINS[d].name, type) != 0)
        d++;
    if (d == N_DOMAINS) {
        char field[RUNG_FIELD_MAX];
        jsonv_path(field, sizeof field, path, "type");
        return rung_error_set(err, INVALID, field,
                              "%s: unknown type \"%s\" (uniform, quniform, loguniform, "
                              "qloguniform, randint, qrandint, lograndint, choice or grid)",
                              field, type);
    }
    p->kind = DOMAINS[d].kind;
    rc = jsonv_only_keys(spec, path, DOMAINS[d].keys, INVALID, err);
    if (rc != 0)
        return rc;
    switch (p->kind) {
    case SPACE_UNIFORM:
    case SPACE_QUNIFORM:
    case SPACE_LOGUNIFORM:
    case SPACE_QLOGUNIFORM:
        return parse_float(spec, path, p, err);
    case SPACE_RANDINT:
    case SPACE_QRANDINT:
    case SPACE_LOGRANDINT:
        return parse_int(spec, path, p, err);
    default:
        return parse_values(spec, path, p, err);
    }
}

int space_parse(const json_t *search_space, Space **out, RungError *err)
{
    *out = NULL;
    int rc = jsonv_object(search_space, "search_space", INVALID, err);
    if (rc != 0)
        return rc;
    size_t n = json_object_size(search_space);
    if (n > SPACE_MAX_PARAMS)
        return rung_error_set(err, INVALID, "search_space", "search_space: more than %d parameters",
                              SPACE_MAX_PARAMS);
    Space *space = calloc(1, sizeof *space);
    /* calloc(0) may return NULL; one spare slot keeps an empty space simple. */
    SpaceParam *params = calloc(n + 1, sizeof *params);
    if (space == NULL || params == NULL) {
        free(space);
        free(params);
        return out_of_memory(err);
    }
    space->params = params;
    space->grid_size = 1;

    const char *name;
    json_t *spec;
    /* jansson keeps insertion order, which is the order of the spec. */
    json_object_foreach((json_t *)search_space, name, spec) {
        SpaceParam *p = &space->params[space->nparams++];
        rc = parse_param(name, spec, p, err);
        if (rc != 0)
            break;
        if (p->kind == SPACE_GRID) {
            /* grid_size <= SAMPLER_MAX_TRIALS and count <= SPACE_MAX_VALUES,
             * so the product cannot overflow before the check. */
            space->grid_size *= p->count;
            if (space->grid_size > SAMPLER_MAX_TRIALS) {
                char field[RUNG_FIELD_MAX];
                snprintf(field, sizeof field, "search_space.%s.values", name);
                rc = rung_error_set(err, INVALID, field,
                                    "search_space.%s: the grids have more than %lld "
                                    "combinations",
                                    name, SAMPLER_MAX_TRIALS);
                break;
            }
        } else if (p->kind != SPACE_CONST) {
            p->cube = space->dims++;
        }
    }
    if (rc != 0) {
        space_free(space);
        return rc;
    }
    *out = space;
    return 0;
}

void space_free(Space *space)
{
    if (space == NULL)
        return;
    /* calloc left unparsed slots zeroed, so a half-built space frees too. */
    for (int i = 0; i < space->nparams; i++) {
        free(space->params[i].points);
        json_decref(space->params[i].values);
    }
    free(space->params);
    free(space);
}

int space_cube_dims(const Space *space)
{
    return space->dims;
}

int64_t space_grid_size(const Space *space)
{
    return space->grid_size;
}

int space_param_count(const Space *space)
{
    return space->nparams;
}

const char *space_param_name(const Space *space, int i)
{
    if (i < 0 || i >= space->nparams)
        return NULL;
    return space->params[i].name;
}

/* A short form of v for an error message: "5", "\"adam\"", "an object". */
static void describe(const json_t *v, char *buf, size_t size)
{
    if (json_is_object(v) || json_is_array(v)) {
        snprintf(buf, size, "%s", json_is_object(v) ? "an object" : "an array");
        return;
    }
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (text == NULL) {
        snprintf(buf, size, "the value");
        return;
    }
    if (strlen(text) > 40)
        snprintf(buf, size, "%.*s...", (int)jsonv_utf8_cut(text, strlen(text), 40), text);
    else
        snprintf(buf, size, "%s", text);
    free(text);
}

int space_check_value(const Space *space, const char *name, const json_t *value, const char *field,
                      RungError *err)
{
    const SpaceParam *p = NULL;
    for (int i = 0; i < space->nparams && p == NULL; i++)
        if (strcmp(space->params[i].name, name) == 0)
            p = &space->params[i];
    if (p == NULL)
        return rung_error_set(err, INVALID, field, "%s: names no parameter of search_space", field);
    char what[64];
    describe(value, what, sizeof what);
    switch (p->kind) {
    case SPACE_CONST:
        if (!json_equal((json_t *)value, p->values))
            return rung_error_set(err, INVALID, field, "%s: %s is not the constant search_space.%s",
                                  field, what, name);
        return 0;
    case SPACE_CHOICE:
    case SPACE_GRID:
        for (size_t i = 0; i < json_array_size(p->values); i++)
            if (json_equal((json_t *)value, json_array_get(p->values, i)))
                return 0;
        return rung_error_set(err, INVALID, field,
                              "%s: %s is not one of the values of search_space.%s", field, what,
                              name);
    case SPACE_UNIFORM:
    case SPACE_QUNIFORM:
    case SPACE_LOGUNIFORM:
    case SPACE_QLOGUNIFORM: {
        if (!json_is_number(value))
            return rung_error_set(err, INVALID, field, "%s: must be a number, not %s", field, what);
        double x = json_number_value(value);
        if (!(x >= p->low && x <= p->high))
            return rung_error_set(err, INVALID, field, "%s: %s is outside [%.17g, %.17g]", field,
                                  what, p->low, p->high);
        return 0;
    }
    default: { /* the integer domains */
        if (!json_is_integer(value))
            return rung_error_set(err, INVALID, field, "%s: must be an integer, not %s", field,
                                  what);
        int64_t x = (int64_t)json_integer_value(value);
        bool high_in = p->kind == SPACE_QRANDINT;
        if (x < p->ilow || x > p->ihigh || (!high_in && x == p->ihigh))
            return rung_error_set(err, INVALID, field, "%s: %s is outside [%lld, %lld%c", field,
                                  what, (long long)p->ilow, (long long)p->ihigh,
                                  high_in ? ']' : ')');
        if (p->kind == SPACE_QRANDINT && x % p->iq != 0)
            return rung_error_set(err, INVALID, field, "%s: %s is not a multiple of q (%lld)",
                                  field, what, (long long)p->iq);
        return 0;
    }
    }
}

json_t *space_config_value(const Space *space, const char *name, const json_t *value)
{
    const SpaceParam *p = NULL;
    for (int i = 0; i < space->nparams && p == NULL; i++)
        if (strcmp(space->params[i].name, name) == 0)
            p = &space->params[i];
    if (p == NULL || value == NULL)
        return NULL;
    bool is_float = p->kind == SPACE_UNIFORM || p->kind == SPACE_QUNIFORM ||
                    p->kind == SPACE_LOGUNIFORM || p->kind == SPACE_QLOGUNIFORM;
    if (is_float && json_is_integer(value))
        return json_real((double)json_integer_value(value));
    return json_incref((json_t *)value);
}
