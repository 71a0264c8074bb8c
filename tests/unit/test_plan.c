/* Unit tests of kernels/plan.c and data_codebook (kernels/data.c): what the
 * CUDA backend decides without a device. Gradient buckets for several model
 * shapes and bucket sizes (contiguous, whole layers, last layer first); the
 * "auto" batch search against a scripted allocator that fails above a size
 * (and one that fails otherwise); a rank's rows against data_shard for every
 * split; the byte codebook of a dataset, exact or refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "plan.h"

/* ---- buckets ---- */

/* A model's layers as train_cuda.cu lays them out: W [D, H] then b [H],
 * each padded to 64 floats. Returns n, the vector's length. */
static size_t layout(const int *widths, int L, size_t *begin)
{
    size_t off = 0;
    for (int l = 0; l < L; l++) {
        begin[l] = off;
        size_t w = (size_t)widths[l] * (size_t)widths[l + 1];
        off = (off + w + 63) / 64 * 64;
        off = (off + (size_t)widths[l + 1] + 63) / 64 * 64;
    }
    return off;
}

/* The invariants of any plan, and the number of buckets. */
static int check_plan(const size_t *begin, int L, size_t n, size_t bytes)
{
    PlanBucket b[32];
    int closes[32];
    int nb = plan_buckets(begin, L, n, bytes, b, closes);
    assert_true(nb >= 1 && nb <= L);
    /* Bucket 0 ends the vector; each next one ends where the last began;
     * the last starts at 0. Every bucket but the last holds >= bytes. */
    size_t end = n;
    for (int i = 0; i < nb; i++) {
        assert_int_equal(b[i].off + b[i].len, end);
        assert_true(b[i].len > 0);
        if (i < nb - 1)
            assert_true(b[i].len * sizeof(float) >= bytes);
        end = b[i].off;
    }
    assert_int_equal(end, 0);
    /* closes: layer l closes bucket i exactly when bucket i starts at
     * layer l; buckets are closed in backward order. */
    int seen = 0;
    for (int l = L - 1; l >= 0; l--) {
        if (closes[l] >= 0) {
            assert_int_equal(closes[l], seen);
            assert_int_equal(b[seen].off, begin[l]);
            seen++;
        }
    }
    assert_int_equal(seen, nb);
    assert_int_equal(closes[0], nb - 1);
    return nb;
}

static void test_buckets(void **state)
{
    (void)state;
    size_t begin[32];
    /* The default model: 784-512-256-10. */
    int def[] = {784, 512, 256, 10};
    size_t n = layout(def, 3, begin);
    assert_int_equal(check_plan(begin, 3, n, (size_t)512 << 10), 2); /* {2, 1}, {0} */
    assert_int_equal(check_plan(begin, 3, n, (size_t)4 << 20), 1);   /* the old 4 MiB: one */
    assert_int_equal(check_plan(begin, 3, n, 1), 3);                 /* a layer each */
    /* Wider than 256, forced small: several buckets. */
    int wide[] = {100, 300, 300, 300, 300, 7};
    n = layout(wide, 5, begin);
    assert_int_equal(check_plan(begin, 5, n, (size_t)300 * 300 * 4), 4);
    assert_int_equal(check_plan(begin, 5, n, 4096), 5);
    /* Softmax regression: one layer, one bucket whatever the size. */
    int one[] = {24, 5};
    n = layout(one, 1, begin);
    assert_int_equal(check_plan(begin, 1, n, 1), 1);
    assert_int_equal(check_plan(begin, 1, n, SIZE_MAX / 2), 1);
    /* Sixteen narrow layers and a small bucket: buckets of several layers. */
    int deep[18];
    for (int i = 0; i < 18; i++)
        deep[i] = i == 0 ? 784 : i == 17 ? 10 : 64;
    n = layout(deep, 17, begin);
    int nb = check_plan(begin, 17, n, 64 * 64 * 4 * 3);
    assert_true(nb > 2 && nb < 17);
}

/* ---- the "auto" batch ---- */

typedef struct Script {
    int64_t fits;     /* the largest batch that allocates */
    int64_t error_at; /* a batch whose try fails otherwise (0: none) */
    int64_t tried[64];
    int n_tried;
    int held; /* allocations the caller holds: at most one, after success */
} Script;

static int scripted(int64_t batch, void *ctx)
{
    Script *s = ctx;
    assert_int_equal(s->held, 0); /* a failed try freed what it got */
    s->tried[s->n_tried++] = batch;
    if (batch == s->error_at)
        return -1;
    if (batch > s->fits)
        return 1;
    s->held = 1;
    return 0;
}

static int64_t search(int64_t cap, int64_t n, int64_t fits, int64_t error_at, Script *s)
{
    memset(s, 0, sizeof *s);
    s->fits = fits;
    s->error_at = error_at;
    return plan_auto_batch(cap, n, scripted, s);
}

static void test_auto_batch(void **state)
{
    (void)state;
    Script s;
    /* Fashion-MNIST on a large GPU: the cap, tried first and kept. */
    assert_int_equal(search(1024, 55000, INT64_MAX, 0, &s), 1024);
    assert_int_equal(s.n_tried, 1);
    /* A GPU that fits 300: 1024, 512 fail; 256 fits. */
    assert_int_equal(search(1024, 55000, 300, 0, &s), 256);
    assert_int_equal(s.n_tried, 3);
    assert_true(s.tried[0] == 1024 && s.tried[1] == 512 && s.tried[2] == 256);
    /* Fewer samples than the cap: the largest power of two below n. */
    assert_int_equal(search(1024, 1000, INT64_MAX, 0, &s), 512);
    assert_int_equal(search(1024, 1024, INT64_MAX, 0, &s), 1024);
    assert_int_equal(search(1024, 1, INT64_MAX, 0, &s), 1);
    /* A cap that is no power of two, and a larger one. */
    assert_int_equal(search(1000, 1 << 20, INT64_MAX, 0, &s), 512);
    assert_int_equal(search(1 << 24, 1 << 20, 70000, 0, &s), 65536);
    /* Nothing fits: 0 after trying every power of two down to 1. */
    assert_int_equal(search(1024, 55000, 0, 0, &s), 0);
    assert_int_equal(s.n_tried, 11);
    assert_int_equal(s.tried[10], 1);
    /* Another error stops the search at once. */
    assert_int_equal(search(1024, 55000, 100, 256, &s), -1);
    assert_int_equal(s.n_tried, 3);
}

/* ---- shards ---- */

static void test_shard_rows(void **state)
{
    (void)state;
    enum { N = 100 };
    int64_t perm[N], idx[N];
    for (int i = 0; i < N; i++)
        perm[i] = N - 1 - i;
    for (int k = 1; k <= 9; k++) {
        for (int64_t len = 0; len <= 23; len++) {
            int64_t total = 0;
            for (int r = 0; r < k; r++) {
                int64_t want = len > 0 ? data_shard(perm, N, 10, len, r, k, idx) : 0;
                assert_int_equal(plan_shard_rows(len, r, k), want);
                total += want;
            }
            assert_int_equal(total, len); /* every sample on one rank */
        }
    }
    /* A rank with no sample: the last step of 5 samples over 8 ranks. */
    assert_int_equal(plan_shard_rows(5, 4, 8), 1);
    assert_int_equal(plan_shard_rows(5, 5, 8), 0);
    assert_int_equal(plan_shard_rows(5, 7, 8), 0);
}

/* ---- the codebook ---- */

static void test_codebook(void **state)
{
    (void)state;
    /* Bytes scaled and standardized as data.c does: 200 values, and two
     * zeros of the second set. */
    Dataset a = {.n = 300, .dim = 7, .n_classes = 2};
    Dataset b = {.n = 20, .dim = 7, .n_classes = 2};
    a.x = malloc(300 * 7 * sizeof(float));
    b.x = malloc(20 * 7 * sizeof(float));
    uint8_t *ca = malloc(300 * 7), *cb = malloc(20 * 7);
    assert_non_null(a.x);
    assert_non_null(b.x);
    for (int i = 0; i < 300 * 7; i++)
        a.x[i] = ((float)((i * 37) % 200) / 255.0f - 0.286f) / 0.353f;
    for (int i = 0; i < 20 * 7; i++)
        b.x[i] = ((float)((i * 11) % 200) / 255.0f - 0.286f) / 0.353f;
    b.x[3] = 0.0f;
    b.x[4] = -0.0f; /* another bit pattern: another code */
    float lut[DATA_CODEBOOK_SIZE];
    const Dataset *sets[] = {&a, NULL, &b};
    uint8_t *codes[] = {ca, NULL, cb};
    int used = data_codebook(sets, 3, lut, codes);
    assert_int_equal(used, 202);
    for (int i = 0; i < 300 * 7; i++)
        assert_memory_equal(&lut[ca[i]], &a.x[i], sizeof(float));
    for (int i = 0; i < 20 * 7; i++)
        assert_memory_equal(&lut[cb[i]], &b.x[i], sizeof(float));
    assert_int_not_equal(cb[3], cb[4]);
    /* 257 values: refused. */
    for (int i = 0; i < 300 * 7; i++)
        a.x[i] = (float)(i % 257);
    assert_int_equal(data_codebook(sets, 1, lut, codes), 0);
    /* One value. */
    for (int i = 0; i < 300 * 7; i++)
        a.x[i] = 0.5f;
    assert_int_equal(data_codebook(sets, 1, lut, codes), 1);
    assert_true(lut[0] == 0.5f && ca[0] == 0 && ca[300 * 7 - 1] == 0);
    free(a.x), free(b.x), free(ca), free(cb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_auto_batch),
        cmocka_unit_test(test_shard_rows),
        cmocka_unit_test(test_codebook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
