/* Population Based Training's explore step, space_mutate (sampler.h;
 * docs/schedulers.md, "pbt"). It follows Ray Tune's PopulationBasedTraining
 * explore: resample with resample_probability, else scale a number by 0.8
 * or 1.2, or step a choice to a neighbouring value. One difference: a
 * scaled number is put back into its domain, where Ray's may leave it (a
 * learning rate scaled by 1.2 at every exploit would otherwise grow past
 * the range its user allows). */
#include "sampler_internal.h"

#include <math.h>

static double draw(uint64_t seed, uint64_t a, uint64_t b, int param, int what)
{
    /* b (a step) in the high bits, the parameter and the purpose below. */
    uint64_t key = (b << 16) + ((uint64_t)param << 2) + (uint64_t)what;
    return (double)(sampler__hash(seed, SAMPLER_STREAM_MUTATE, a, key) >> 11) * 0x1.0p-53;
}

/* The index of v among a choice's (or grid's) values, -1 when none. */
static int64_t value_index(const SpaceParam *p, const json_t *v)
{
    if (p->kind == SPACE_GRID) {
        for (int64_t k = 0; k < space__enum_count(p); k++) {
            json_t *e = space__enum_value(p, k);
            bool eq = e != NULL && json_equal(e, v);
            json_decref(e);
            if (eq)
                return k;
        }
        return -1;
    }
    for (int64_t k = 0; k < p->count; k++)
        if (json_equal(json_array_get(p->values, (size_t)k), v))
            return k;
    return -1;
}

static json_t *value_at(const SpaceParam *p, int64_t k)
{
    if (p->kind == SPACE_GRID)
        return space__enum_value(p, k);
    return json_incref(json_array_get(p->values, (size_t)k));
}

/* A number p's domain can take: within its bounds, an integer where the
 * domain is one, a multiple of q where it is quantized. */
static bool number_fits(const SpaceParam *p, const json_t *v)
{
    if (!json_is_number(v))
        return false;
    double x = json_number_value(v);
    if (p->kind == SPACE_UNIFORM || p->kind == SPACE_LOGUNIFORM)
        return x >= p->low && x <= p->high;
    /* A normal takes any finite number (its round trip through the cube
     * is not exact near the mean, where x is small). */
    if (p->kind == SPACE_NORMAL)
        return isfinite(x);
    /* The nearest value of the domain, within rounding of x. */
    json_t *back = space__decode_value(p, space__encode_number(p, x));
    bool fits = back != NULL && fabs(json_number_value(back) - x) <= 1e-9 * (fabs(x) + 1e-300);
    json_decref(back);
    return fits;
}

static json_t *mutate_one(const SpaceParam *p, const json_t *v, double resample_p, uint64_t seed,
                          uint64_t a, uint64_t b, int i)
{
    bool listed = p->kind == SPACE_CHOICE || p->kind == SPACE_GRID;
    int64_t count = p->kind == SPACE_GRID ? space__enum_count(p) : p->count;
    int64_t k = listed ? value_index(p, v) : 0;
    bool fits = listed ? k >= 0 : number_fits(p, v);
    bool up = draw(seed, a, b, i, 1) < 0.5;
    if (!fits || draw(seed, a, b, i, 0) < resample_p) {
        double u = draw(seed, a, b, i, 2);
        if (listed) {
            int64_t j = (int64_t)(u * (double)count);
            return value_at(p, j < count ? j : count - 1);
        }
        return space__decode_value(p, u);
    }
    if (listed) {
        int64_t j = k + (up ? 1 : -1);
        return value_at(p, j < 0 || j >= count ? k : j);
    }
    double x = json_number_value(v) * (up ? 1.2 : 0.8);
    if (p->kind == SPACE_UNIFORM || p->kind == SPACE_LOGUNIFORM)
        return json_real(x < p->low ? p->low : (x > p->high ? p->high : x));
    /* A normal has no bounds to keep to, but 1.2 times a huge value (a
     * point to evaluate) may overflow: that one goes back to the mean. */
    if (p->kind == SPACE_NORMAL)
        return isfinite(x) ? json_real(x) : space__decode_value(p, 0.5);
    return space__decode_value(p, space__encode_number(p, x));
}

json_t *space_mutate(const Space *mutations, const json_t *config, double resample_p, uint64_t seed,
                     uint64_t a, uint64_t b)
{
    json_t *out = json_deep_copy(config);
    if (out == NULL)
        return NULL;
    for (int i = 0; i < mutations->nparams; i++) {
        const SpaceParam *p = &mutations->params[i];
        const json_t *v = json_object_get(config, p->name);
        if (v == NULL || p->kind == SPACE_CONST || p->cond)
            continue;
        json_t *nv = mutate_one(p, v, resample_p, seed, a, b, i);
        if (nv == NULL || json_object_set_new(out, p->name, nv) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}
