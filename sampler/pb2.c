/* PB2's choice of a receiver's new config (pb2.h). */
#include "pb2.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gp.h"
#include "sampler_internal.h"

static double draw(uint64_t seed, uint64_t a, uint64_t b, uint64_t k)
{
    /* b (a step) in the high bits, the candidate and coordinate below. */
    return (double)(sampler__hash(seed, SAMPLER_STREAM_PB2, a, (b << 32) + k) >> 11) * 0x1.0p-53;
}

/* base with the mutated parameters taken from the cube point u. */
static json_t *lay(const Space *mutations, const json_t *base, const double *u)
{
    /* Combination 0 (every grid at its first value) in either order. */
    json_t *chosen = space_decode(mutations, u, 0, GRID_ORDER_RAY);
    json_t *out = chosen ? json_deep_copy(base) : NULL;
    if (out != NULL && json_object_update(out, chosen) != 0) {
        json_decref(out);
        out = NULL;
    }
    json_decref(chosen);
    return out;
}

json_t *pb2_propose(const Space *mutations, const json_t *base, const Pb2Obs *obs, int n,
                    double now, uint64_t seed, uint64_t a, uint64_t b)
{
    int dims = space_cube_dims(mutations), d = dims + 1;
    double u[SPACE_MAX_PARAMS + 1];
    if (n > PB2_MAX_OBS)
        n = PB2_MAX_OBS; /* the caller lists the latest first */
    double *x = malloc((size_t)(n > 0 ? n : 1) * (size_t)d * sizeof *x);
    double *y = malloc((size_t)(n > 0 ? n : 1) * sizeof *y);
    double *cand = malloc((size_t)PB2_CANDIDATES * (size_t)d * sizeof *cand);
    double *mean = malloc(PB2_CANDIDATES * sizeof *mean);
    double *var = malloc(PB2_CANDIDATES * sizeof *var);
    json_t *out = NULL;
    Gp *gp = NULL;
    if (x == NULL || y == NULL || cand == NULL || mean == NULL || var == NULL)
        goto done;
    /* The usable observations: configs the cube can encode. */
    double tmin = now, tmax = now;
    int m = 0;
    for (int i = 0; i < n; i++) {
        RungError err;
        if (!isfinite(obs[i].change) || space_encode(mutations, obs[i].config, x + m * d, &err))
            continue;
        x[m * d + dims] = obs[i].time;
        y[m] = obs[i].change;
        tmin = obs[i].time < tmin ? obs[i].time : tmin;
        tmax = obs[i].time > tmax ? obs[i].time : tmax;
        m++;
    }
    double mu = 0.0, sd = 0.0;
    for (int i = 0; i < m; i++)
        mu += y[i] / m;
    for (int i = 0; i < m; i++)
        sd += (y[i] - mu) * (y[i] - mu) / (m > 1 ? m - 1 : 1);
    sd = sqrt(sd);
    if (m < 2 || !(sd > 0)) {
        for (int j = 0; j < dims; j++)
            u[j] = draw(seed, a, b, (uint64_t)j);
        out = lay(mutations, base, u);
        goto done;
    }
    double span = tmax > tmin ? tmax - tmin : 1.0;
    for (int i = 0; i < m; i++) {
        x[i * d + dims] = (x[i * d + dims] - tmin) / span;
        y[i] = (y[i] - mu) / sd;
    }
    gp = gp_new(d, NULL, m);
    BayesTuning tu;
    bayes__default_tuning(&tu);
    GpFitOptions fit = {.prior = tu.prior,
                        .n_raw = tu.fit_raw,
                        .n_starts = tu.fit_starts,
                        .max_iter = tu.fit_iter,
                        .seed = seed ^ (a * 0x9e3779b97f4a7c15ULL) ^ b};
    /* PB2's time-varying kernel: the time (last feature) multiplies the
     * config's kernel by (1 - eps)^(|dt| / 2), eps fitted (gp.h). */
    if (gp == NULL || gp_set_time_feature(gp, dims) != 0 || gp_set_data(gp, x, y, m) != 0 ||
        gp_fit(gp, &fit, NULL) != 0)
        goto done;
    /* Candidates at the newest time: random points of the cube. */
    double t = (now - tmin) / span;
    for (int c = 0; c < PB2_CANDIDATES; c++) {
        for (int j = 0; j < dims; j++)
            cand[c * d + j] = draw(seed, a, b, (uint64_t)(c + 1) * (uint64_t)d + (uint64_t)j);
        cand[c * d + dims] = t;
    }
    if (gp_predict_many(gp, cand, PB2_CANDIDATES, mean, var) != 0)
        goto done;
    int best = 0;
    double best_ucb = -INFINITY;
    for (int c = 0; c < PB2_CANDIDATES; c++) {
        double ucb = mean[c] + PB2_KAPPA * sqrt(var[c] > 0 ? var[c] : 0);
        if (ucb > best_ucb) {
            best_ucb = ucb;
            best = c;
        }
    }
    out = lay(mutations, base, cand + best * d);
done:
    gp_free(gp);
    free(x);
    free(y);
    free(cand);
    free(mean);
    free(var);
    return out;
}
