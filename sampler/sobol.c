/* Points of GSL's Sobol sequence by index, with a digital shift.
 *
 * gsl_qrng_sobol only steps forward, so point n would cost n steps, and a
 * proposer asking for trials 0, 1, 2, ... would pay a quadratic total. But a
 * Sobol sequence in gray-code order (GSL's, after Antonov and Saleev) is
 * linear over bits: the k-th point GSL returns (k = 1, 2, ...) is the XOR of
 * the direction numbers v_i for the bits i set in gray(k) = k ^ (k >> 1), and
 * GSL's k-th point XOR its (k-1)-th is v_i for i = the lowest set bit of k.
 * So we learn v_0 .. v_{b-1} from GSL's own output by stepping 2^(b-1) times,
 * keep them for the process (they are constants), and then compute any point
 * below 2^b in O(b * dims). The table grows on demand, under a mutex, and is
 * learned over all 40 dimensions at once (a dimension's direction numbers do
 * not depend on how many dimensions the generator has). */
#include "sampler_internal.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_qrng.h>
#include <pthread.h>
#include <string.h>

/* The first table covers 2^12 points: cheap, and enough for most experiments. */
#define SOBOL_MIN_LEARN_BITS 12

static pthread_mutex_t sobol_lock = PTHREAD_MUTEX_INITIALIZER;
/* Direction numbers as 30-bit numerators; rows below sobol_known are valid. */
static uint32_t sobol_dir[SOBOL_BITS][SOBOL_MAX_DIMS];
static int sobol_known;

/* Learns rows 0 .. bits-1 of sobol_dir by stepping a fresh GSL generator to
 * point 2^(bits-1). Called with sobol_lock held. Returns 0 or -1. */
static int sobol_learn(int bits)
{
    /* Library code never aborts: GSL reports through return values. */
    gsl_set_error_handler_off();
    gsl_qrng *gen = gsl_qrng_alloc(gsl_qrng_sobol, SOBOL_MAX_DIMS);
    if (gen == NULL)
        return -1;
    uint32_t prev[SOBOL_MAX_DIMS] = {0}; /* GSL's point 0 is the origin */
    double x[SOBOL_MAX_DIMS];
    uint64_t last = UINT64_C(1) << (bits - 1);
    int rc = 0;
    for (uint64_t k = 1; k <= last && rc == 0; k++) {
        if (gsl_qrng_get(gen, x) != GSL_SUCCESS) {
            rc = -1;
            break;
        }
        int row = -1;
        if ((k & (k - 1)) == 0) { /* k = 2^row: first sight of v_row */
            row = 0;
            while ((UINT64_C(1) << row) != k)
                row++;
        }
        for (int j = 0; j < SOBOL_MAX_DIMS; j++) {
            /* GSL's points are numerators over 2^30, exact in a double;
             * anything else means GSL changed and we must not guess. */
            double scaled = x[j] * 1073741824.0; /* 2^30 */
            uint32_t cur = (uint32_t)scaled;
            if (!(x[j] >= 0.0 && x[j] < 1.0) || (double)cur != scaled) {
                rc = -1;
                break;
            }
            if (row >= 0)
                sobol_dir[row][j] = cur ^ prev[j];
            prev[j] = cur;
        }
    }
    gsl_qrng_free(gen);
    if (rc == 0)
        sobol_known = bits;
    return rc;
}

int sampler__sobol_raw(uint64_t index, int dims, uint32_t *x)
{
    /* GSL's generator fails after 2^30 - 1 points. */
    if (dims < 0 || dims > SOBOL_MAX_DIMS || index >= (UINT64_C(1) << SOBOL_BITS))
        return -1;
    /* Point 0 is the origin, where GSL's generator starts but which it never
     * returns. We keep it: the first 2^m points are then a (t, m, s)-net
     * (16 points in each of 16 bins for 256 points), which skipping it
     * breaks; and the digital shift moves it off the corner anyway. */
    uint64_t k = index;
    int bits = 0;
    while ((k >> bits) != 0)
        bits++;
    pthread_mutex_lock(&sobol_lock);
    int rc = 0;
    if (bits > sobol_known)
        rc = sobol_learn(bits > SOBOL_MIN_LEARN_BITS ? bits : SOBOL_MIN_LEARN_BITS);
    if (rc == 0) {
        memset(x, 0, (size_t)dims * sizeof *x);
        uint64_t gray = k ^ (k >> 1);
        for (int i = 0; gray != 0; i++, gray >>= 1) {
            if ((gray & 1) == 0)
                continue;
            for (int j = 0; j < dims; j++)
                x[j] ^= sobol_dir[i][j];
        }
    }
    pthread_mutex_unlock(&sobol_lock);
    return rc;
}

int sampler__sobol_point(uint64_t index, int dims, uint64_t seed, uint64_t shift_key, double *u)
{
    uint32_t x[SOBOL_MAX_DIMS];
    if (sampler__sobol_raw(index, dims, x) != 0)
        return -1;
    for (int j = 0; j < dims; j++) {
        /* A digital shift XORs the same 30 bits into every point of a
         * dimension: it maps each dyadic interval onto another, so the
         * sequence keeps its spread while the seed moves it. */
        uint32_t shift =
            (uint32_t)(sampler__hash(seed, SAMPLER_STREAM_SOBOL_SHIFT, shift_key, (uint64_t)j) >>
                       (64 - SOBOL_BITS));
        u[j] = (double)(x[j] ^ shift) * 0x1.0p-30;
    }
    return 0;
}
