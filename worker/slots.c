/* Free GPUs and CPUs; see slots.h. */
#include "slots.h"

#include <string.h>

void slots_init(Slots *s, const int *gpus, int n_gpus, int64_t cpus)
{
    memset(s, 0, sizeof *s);
    if (n_gpus > SLOTS_MAX_GPUS)
        n_gpus = SLOTS_MAX_GPUS;
    for (int i = 0; i < n_gpus; i++)
        s->gpu_index[i] = gpus[i];
    s->n_gpus = n_gpus < 0 ? 0 : n_gpus;
    s->cpus = cpus < 0 ? 0 : cpus;
}

int slots_free_gpus(const Slots *s, int *out, int max)
{
    int n = 0;
    for (int i = 0; i < s->n_gpus && n < max; i++)
        if (!s->gpu_busy[i] && !s->gpu_used[i])
            out[n++] = s->gpu_index[i];
    return n;
}

int64_t slots_free_cpus(const Slots *s)
{
    return s->cpus - s->cpus_busy;
}

bool slots_any_free(const Slots *s)
{
    if (slots_free_cpus(s) > 0)
        return true;
    for (int i = 0; i < s->n_gpus; i++)
        if (!s->gpu_busy[i] && !s->gpu_used[i])
            return true;
    return false;
}

static int position(const Slots *s, int64_t index)
{
    for (int i = 0; i < s->n_gpus; i++)
        if (s->gpu_index[i] == index)
            return i;
    return -1;
}

bool slots_set_used(Slots *s, int index, bool used)
{
    int i = position(s, index);
    if (i < 0 || s->gpu_used[i] == used)
        return false;
    s->gpu_used[i] = used;
    return true;
}

int slots_n_used(const Slots *s)
{
    int n = 0;
    for (int i = 0; i < s->n_gpus; i++)
        n += s->gpu_used[i];
    return n;
}

int slots_take(Slots *s, const int64_t *gpus, int n, int64_t cpus)
{
    if (cpus < 0 || cpus > slots_free_cpus(s) || n < 0 || n > s->n_gpus)
        return -1;
    bool want[SLOTS_MAX_GPUS] = {false};
    for (int k = 0; k < n; k++) {
        int i = position(s, gpus[k]);
        if (i < 0 || s->gpu_busy[i] || want[i])
            return -1;
        want[i] = true;
    }
    for (int i = 0; i < s->n_gpus; i++)
        if (want[i])
            s->gpu_busy[i] = true;
    s->cpus_busy += cpus;
    return 0;
}

void slots_release(Slots *s, const int64_t *gpus, int n, int64_t cpus)
{
    for (int k = 0; k < n; k++) {
        int i = position(s, gpus[k]);
        if (i >= 0)
            s->gpu_busy[i] = false;
    }
    s->cpus_busy -= cpus;
    if (s->cpus_busy < 0)
        s->cpus_busy = 0;
}
