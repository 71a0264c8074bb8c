/* server/rank.c: rank_first's first k are the first k of a full sort, in
 * order, for every k, over ranks with tied losses, equal numbers never (as
 * in a real experiment), and trials without a best value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "rank.h"
#include "splitmix.h"

static uint64_t draw(uint64_t *state)
{
    *state += RUNG_SPLITMIX_GAMMA;
    return rung_splitmix_mix(*state);
}

/* n ranks numbered 1..n in a shuffled order; losses from 7 levels (ties),
 * a tenth without a best value. */
static TrialRank *make(int64_t n, uint64_t seed)
{
    TrialRank *r = calloc((size_t)(n > 0 ? n : 1), sizeof *r);
    assert_non_null(r);
    for (int64_t i = 0; i < n; i++) {
        r[i].id = 1000 + i;
        r[i].number = i + 1;
        r[i].has_best = draw(&seed) % 10 != 0;
        r[i].loss = r[i].has_best ? (double)(draw(&seed) % 7) - 3.0 : 0.0;
    }
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(draw(&seed) % (uint64_t)(i + 1));
        TrialRank t = r[i];
        r[i] = r[j];
        r[j] = t;
    }
    return r;
}

static void test_first_k_equal_full_sort(void **state)
{
    (void)state;
    const int64_t sizes[] = {0, 1, 2, 7, 100, 1000, 5003};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        TrialRank *want = make(n, 11 + (uint64_t)s);
        qsort(want, (size_t)n, sizeof *want, rank_cmp);
        const int64_t ks[] = {0, 1, 2, 3, 50, n / 4 - 1, n / 4, n - 1, n};
        for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++) {
            int64_t k = ks[q];
            if (k < 0 || k > n)
                continue;
            TrialRank *got = make(n, 11 + (uint64_t)s);
            rank_first(got, n, k);
            for (int64_t i = 0; i < k; i++)
                if (got[i].id != want[i].id)
                    fail_msg("n %lld, k %lld: place %lld holds trial %lld, want %lld", (long long)n,
                             (long long)k, (long long)i, (long long)got[i].id,
                             (long long)want[i].id);
            /* Nothing lost: the rest holds the others. */
            int64_t sum_got = 0, sum_want = 0;
            for (int64_t i = 0; i < n; i++) {
                sum_got += got[i].id;
                sum_want += want[i].id;
            }
            assert_int_equal(sum_got, sum_want);
            free(got);
        }
        free(want);
    }
}

static void test_order(void **state)
{
    (void)state;
    TrialRank a = {.id = 1, .number = 5, .has_best = true, .loss = 0.5};
    TrialRank b = {.id = 2, .number = 3, .has_best = true, .loss = 0.5};
    TrialRank c = {.id = 3, .number = 1, .has_best = false};
    TrialRank d = {.id = 4, .number = 9, .has_best = true, .loss = -1.0};
    assert_true(rank_cmp(&b, &a) < 0); /* a tie: the lower number */
    assert_true(rank_cmp(&a, &c) < 0); /* none last */
    assert_true(rank_cmp(&d, &b) < 0); /* lower loss first */
    assert_int_equal(rank_cmp(&a, &a), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_first_k_equal_full_sort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
