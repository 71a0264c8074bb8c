/* Device-free planning of a CUDA training run (plan.h). */
#include "plan.h"

int plan_buckets(const size_t *begin, int L, size_t n, size_t bytes, PlanBucket *bucket,
                 int *closes)
{
    int nb = 0;
    size_t end = n;
    for (int l = L - 1; l >= 0; l--) {
        closes[l] = -1;
        if ((end - begin[l]) * sizeof(float) >= bytes || l == 0) {
            bucket[nb] = (PlanBucket){begin[l], end - begin[l]};
            closes[l] = nb++;
            end = begin[l];
        }
    }
    return nb;
}

int64_t plan_auto_batch(int64_t cap, int64_t n, PlanTryFn try_batch, void *ctx)
{
    int64_t top = cap < n ? cap : n;
    int64_t b = 1;
    while (b <= top / 2)
        b *= 2;
    for (; b >= 1; b /= 2) {
        int rc = try_batch(b, ctx);
        if (rc == 0)
            return b;
        if (rc < 0)
            return -1;
    }
    return 0;
}

int64_t plan_shard_rows(int64_t len, int r, int k)
{
    return len > r ? (len - r + k - 1) / k : 0;
}
