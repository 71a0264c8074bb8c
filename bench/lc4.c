/* lc4's curves: bench/lc4.h. */
#include "lc4.h"

#include <math.h>
#include <stddef.h>

#define LC4_SALT 0x6c63342d6265ULL /* "lc4-be": keeps lc4's streams apart from asha's draws */
#define PI 3.14159265358979323846

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* splitmix64: state advances by the golden gamma, output = mix of the state. */
static uint64_t rng_next(uint64_t *state)
{
    uint64_t z = *state;
    *state += 0x9e3779b97f4a7c15ULL;
    return mix64(z);
}

double lc4_uniform(uint64_t *state)
{
    return (double)(rng_next(state) >> 11) * 0x1.0p-53;
}

double lc4_clean(const double *x, double t)
{
    double d0 = x[0] - 0.7, d1 = x[1] - 0.3, d2 = x[2] - 0.5, d3 = x[3] - 0.6;
    double f = 0.05 + 0.5 * d0 * d0 + 0.3 * d1 * d1 + 0.2 * d2 * d2 + 0.1 * d3 * d3;
    double a = 0.3 + 0.7 * x[3], b = 1.0 + 20.0 * x[0];
    return f + a * exp(-t / b);
}

int lc4_draw(int seed, int64_t trial, int jitter, double x[LC4_DIMS], double eps[LC4_STEPS + 1])
{
    uint64_t state = mix64(mix64((uint64_t)seed + LC4_SALT) + (uint64_t)trial);
    for (int d = 0; d < LC4_DIMS; d++)
        x[d] = lc4_uniform(&state);
    eps[0] = 0;
    for (int t = 1; t <= LC4_STEPS; t += 2) {
        double u1 = lc4_uniform(&state), u2 = lc4_uniform(&state);
        double r = sqrt(-2.0 * log(1.0 - u1)),
               e[2] = {r * cos(2.0 * PI * u2), r * sin(2.0 * PI * u2)};
        for (int k = 0; k < 2 && t + k <= LC4_STEPS; k++)
            eps[t + k] = e[k];
    }
    return 1 + (int)(lc4_uniform(&state) * jitter);
}

double lc4_gstar(double xstar[LC4_DIMS])
{
    double x[LC4_DIMS] = {0.0, 0.3, 0.5, 0.0}, best = INFINITY, b0 = 0, b3 = 0;
    for (int i = 0; i <= 200; i++)
        for (int j = 0; j <= 200; j++) {
            x[0] = i / 200.0;
            x[3] = j / 200.0;
            double v = lc4_clean(x, LC4_STEPS);
            if (v < best) {
                best = v;
                b0 = x[0];
                b3 = x[3];
            }
        }
    double cell = 1.0 / 200.0;
    for (int zoom = 0; zoom < 12; zoom++) {
        double c0 = b0, c3 = b3, step = cell / 10.0;
        for (int i = -20; i <= 20; i++)
            for (int j = -20; j <= 20; j++) {
                x[0] = fmin(1.0, fmax(0.0, c0 + i * step));
                x[3] = fmin(1.0, fmax(0.0, c3 + j * step));
                double v = lc4_clean(x, LC4_STEPS);
                if (v < best) {
                    best = v;
                    b0 = x[0];
                    b3 = x[3];
                }
            }
        cell = step;
    }
    if (xstar != NULL) {
        xstar[0] = b0;
        xstar[1] = 0.3;
        xstar[2] = 0.5;
        xstar[3] = b3;
    }
    return best;
}
