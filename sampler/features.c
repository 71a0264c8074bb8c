/* A space's parameters as the analysis of finished trials sees them
 * (sampler.h, "Features"; rungd's importance and surface endpoints,
 * docs/api.md): one feature per config key that can vary, valued as the
 * searchers see it in the unit cube, so an analysis measures the space the
 * searcher searched (a log domain on its log scale). */
#include "sampler_internal.h"

#include <math.h>
#include <string.h>

static bool is_log(SpaceKind k)
{
    return k == SPACE_LOGUNIFORM || k == SPACE_QLOGUNIFORM || k == SPACE_LOGRANDINT ||
           k == SPACE_QLOGRANDINT;
}

int space_features(const Space *space, SpaceFeature *out)
{
    int n = 0;
    for (int k = 0; k < space->nkeys; k++) {
        const SpaceParam *p = &space->params[space->keys[k]];
        bool categorical = p->kind == SPACE_CHOICE || p->kind == SPACE_GRID;
        /* A constant, or a single value, explains nothing. A conditional
         * choice has no key of its own: its branches' parameters do. */
        if (p->kind == SPACE_CONST || p->cond || (categorical && p->count < 2))
            continue;
        SpaceFeature *f = &out[n++];
        memset(f, 0, sizeof *f);
        f->name = p->name;
        f->categories = categorical ? (int)p->count : 0;
        f->log = is_log(p->kind);
        f->low = p->low;
        f->high = p->high;
        f->cube = p->cube;
        if (p->kind == SPACE_RANDINT || p->kind == SPACE_QRANDINT || p->kind == SPACE_LOGRANDINT ||
            p->kind == SPACE_QLOGRANDINT) {
            f->low = (double)p->ilow;
            /* randint and lograndint exclude their high bound. */
            bool open = p->kind == SPACE_RANDINT || p->kind == SPACE_LOGRANDINT;
            f->high = (double)p->ihigh - (open ? 1.0 : 0.0);
        }
    }
    return n;
}

/* The active parameter of space named name (the first in spec order), or
 * NULL when none is. */
static const SpaceParam *active_param(const Space *space, const bool *active, const char *name)
{
    for (int i = 0; i < space->nparams; i++)
        if (active[i] && strcmp(space->params[i].name, name) == 0)
            return &space->params[i];
    return NULL;
}

int space_feature_row(const Space *space, const SpaceFeature *f, int nf, const json_t *config,
                      double *x)
{
    double u[SPACE_MAX_PARAMS];
    bool active[SPACE_MAX_PARAMS];
    int sel[SPACE_MAX_PARAMS];
    if (space_encode(space, config, u, NULL) != 0 ||
        space__resolve(space, config, active, sel) != 0)
        return -1;
    for (int k = 0; k < nf; k++) {
        const SpaceParam *p = active_param(space, active, f[k].name);
        const json_t *v = p != NULL ? json_object_get(config, p->name) : NULL;
        if (v == NULL) {
            x[k] = NAN; /* a branch not taken */
        } else if (p->kind == SPACE_CHOICE || p->kind == SPACE_GRID) {
            int64_t c = 0;
            while (c < p->count && !json_equal(json_array_get(p->values, (size_t)c), v))
                c++;
            if (c == p->count)
                return -1;
            x[k] = (double)c;
        } else {
            x[k] = u[p->cube];
        }
    }
    return 0;
}

double space_feature_coord(const Space *space, const SpaceFeature *f, double value)
{
    for (int i = 0; i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        if (p->cube >= 0 && !p->cond && p->kind != SPACE_CHOICE && strcmp(p->name, f->name) == 0)
            return space__encode_number(p, value);
    }
    return NAN;
}
