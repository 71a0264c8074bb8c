/* Population Based Training's exploit rule (pbt.h). */
#include "pbt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "splitmix.h"

typedef struct Record {
    PbtMember m;  /* its config owned */
    double score; /* higher is better */
} Record;

/* The records at one milestone. */
typedef struct Milestone {
    int64_t k;
    Record *r;
    int64_t n, cap;
} Milestone;

/* Per trial: the last milestone it was judged at (0: none). */
typedef struct Judged {
    int64_t number, k;
} Judged;

struct Pbt {
    PbtParams p;
    Milestone *m;
    int64_t nm, capm;
    Judged *j;
    int64_t nj, capj;
};

Pbt *pbt_new(const PbtParams *params)
{
    Pbt *pbt = calloc(1, sizeof *pbt);
    if (pbt != NULL)
        pbt->p = *params;
    return pbt;
}

void pbt_free(Pbt *pbt)
{
    if (pbt == NULL)
        return;
    for (int64_t i = 0; i < pbt->nm; i++) {
        for (int64_t r = 0; r < pbt->m[i].n; r++)
            json_decref(pbt->m[i].r[r].m.config);
        free(pbt->m[i].r);
    }
    free(pbt->m);
    free(pbt->j);
    free(pbt);
}

const PbtParams *pbt_params(const Pbt *pbt)
{
    return &pbt->p;
}

static void *grow(void *p, int64_t *cap, int64_t n, size_t size)
{
    if (n < *cap)
        return p;
    int64_t c = *cap > 0 ? 2 * *cap : 8;
    void *q = realloc(p, (size_t)c * size);
    if (q == NULL)
        abort(); /* as the core does: out of memory is not survivable mid-turn */
    *cap = c;
    return q;
}

static Milestone *milestone_at(Pbt *pbt, int64_t k)
{
    for (int64_t i = 0; i < pbt->nm; i++)
        if (pbt->m[i].k == k)
            return &pbt->m[i];
    pbt->m = grow(pbt->m, &pbt->capm, pbt->nm, sizeof *pbt->m);
    Milestone *m = &pbt->m[pbt->nm++];
    *m = (Milestone){.k = k};
    return m;
}

static Judged *judged_of(Pbt *pbt, int64_t number)
{
    for (int64_t i = 0; i < pbt->nj; i++)
        if (pbt->j[i].number == number)
            return &pbt->j[i];
    pbt->j = grow(pbt->j, &pbt->capj, pbt->nj, sizeof *pbt->j);
    Judged *j = &pbt->j[pbt->nj++];
    *j = (Judged){.number = number};
    return j;
}

/* Records the report when it is the trial's first at or past a milestone it
 * was not judged at; returns that milestone, or NULL. */
static Milestone *record(Pbt *pbt, const PbtMember *self, bool has, double value)
{
    const PbtParams *p = &pbt->p;
    int64_t k = self->step / p->interval;
    if (!has || k < 1 || self->step < p->burn_in)
        return NULL;
    Judged *j = judged_of(pbt, self->number);
    if (k <= j->k)
        return NULL;
    j->k = k;
    Milestone *m = milestone_at(pbt, k);
    m->r = grow(m->r, &m->cap, m->n, sizeof *m->r);
    Record *r = &m->r[m->n++];
    /* A diverged member (NaN, or an infinity either way) ranks last. */
    double score = !isfinite(value) ? -INFINITY : p->maximize ? value : -value;
    *r = (Record){.m = *self, .score = score};
    json_incref(r->m.config);
    return m;
}

/* Best first; ties by trial number. */
static int cmp_record(const void *x, const void *y)
{
    const Record *a = x, *b = y;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->m.number > b->m.number) - (a->m.number < b->m.number);
}

/* The bottom and top quantile's size among n records (Ray's rule). */
static int64_t quantile_size(const PbtParams *p, int64_t n)
{
    int64_t q = (int64_t)((double)n * p->quantile);
    if ((double)q < (double)n * p->quantile)
        q++; /* ceil */
    return q > n / 2 ? n / 2 : q;
}

/* The records of m, best first (a new array). */
static Record *ranked(const Milestone *m)
{
    Record *sorted = malloc((size_t)(m->n > 0 ? m->n : 1) * sizeof *sorted);
    if (sorted == NULL)
        abort();
    memcpy(sorted, m->r, (size_t)m->n * sizeof *sorted);
    qsort(sorted, (size_t)m->n, sizeof *sorted, cmp_record);
    return sorted;
}

/* How many of the top q (sorted best first) may give: those with a finite
 * score, which come first. Copying a diverged member helps nobody. */
static int64_t donors_in(const Record *sorted, int64_t q)
{
    int64_t d = 0;
    while (d < q && isfinite(sorted[d].score))
        d++;
    return d;
}

/* The donor of trial `number` at m: one of the top d (donors_in), by a
 * counter-based draw of (seed, number, milestone), so a restart draws the
 * same. */
static PbtMember donor_of(const Pbt *pbt, const Milestone *m, const Record *sorted, int64_t d,
                          int64_t number)
{
    uint64_t h = rung_splitmix_at(rung_splitmix64(pbt->p.seed ^ rung_splitmix64((uint64_t)number)),
                                  (uint64_t)m->k);
    return sorted[h % (uint64_t)d].m;
}

PbtDecision pbt_report(Pbt *pbt, const PbtMember *self, bool has, double value, PbtMember *donor,
                       int64_t *milestone)
{
    const PbtParams *p = &pbt->p;
    if (p->max_t > 0 && self->step >= p->max_t)
        return PBT_COMPLETE;
    Milestone *m = record(pbt, self, has, value);
    if (m == NULL)
        return PBT_CONTINUE;
    *milestone = m->k * p->interval;
    if (p->synch)
        return PBT_SYNC;
    int64_t n = m->n, q = quantile_size(p, n);
    if (q == 0)
        return PBT_CONTINUE;
    Record *sorted = ranked(m);
    int64_t rank = 0;
    while (sorted[rank].m.number != self->number)
        rank++;
    PbtDecision d = PBT_CONTINUE;
    int64_t givers = donors_in(sorted, q);
    if (rank >= n - q && givers > 0) {
        *donor = donor_of(pbt, m, sorted, givers, self->number);
        d = PBT_EXPLOIT;
    }
    free(sorted);
    return d;
}

static Milestone *find_milestone(const Pbt *pbt, int64_t milestone)
{
    if (milestone % pbt->p.interval != 0)
        return NULL;
    for (int64_t i = 0; i < pbt->nm; i++)
        if (pbt->m[i].k == milestone / pbt->p.interval)
            return &pbt->m[i];
    return NULL;
}

bool pbt_reached(const Pbt *pbt, int64_t number, int64_t milestone)
{
    for (int64_t i = 0; i < pbt->nj; i++)
        if (pbt->j[i].number == number)
            return pbt->j[i].k * pbt->p.interval >= milestone;
    return false;
}

int64_t pbt_exploits(Pbt *pbt, int64_t milestone, int64_t *receivers, PbtMember *donors,
                     int64_t cap)
{
    const Milestone *m = find_milestone(pbt, milestone);
    if (m == NULL)
        return 0;
    int64_t n = m->n, q = quantile_size(&pbt->p, n), out = 0;
    if (q == 0)
        return 0;
    Record *sorted = ranked(m);
    int64_t givers = donors_in(sorted, q);
    for (int64_t i = n - q; i < n && out < cap && givers > 0; i++, out++) {
        receivers[out] = sorted[i].m.number;
        donors[out] = donor_of(pbt, m, sorted, givers, sorted[i].m.number);
    }
    free(sorted);
    return out;
}

static const Record *record_of(const Pbt *pbt, int64_t k, int64_t number)
{
    for (int64_t i = 0; i < pbt->nm; i++) {
        const Milestone *m = &pbt->m[i];
        if (m->k != k)
            continue;
        for (int64_t r = 0; r < m->n; r++)
            if (m->r[r].m.number == number)
                return &m->r[r];
    }
    return NULL;
}

int64_t pbt_changes(const Pbt *pbt, PbtChange *out, int64_t cap)
{
    int64_t kmax = 0, n = 0;
    for (int64_t i = 0; i < pbt->nm; i++)
        kmax = pbt->m[i].k > kmax ? pbt->m[i].k : kmax;
    for (int64_t k = kmax; k >= 2 && n < cap; k--) {
        for (int64_t i = 0; i < pbt->nm && n < cap; i++) {
            const Milestone *m = &pbt->m[i];
            if (m->k != k)
                continue;
            for (int64_t r = 0; r < m->n && n < cap; r++) {
                const Record *b = &m->r[r];
                const Record *a = record_of(pbt, k - 1, b->m.number);
                if (a == NULL || !json_equal(a->m.config, b->m.config) ||
                    !isfinite(b->score - a->score))
                    continue; /* a change of config, or a diverged member: no observation */
                out[n++] = (PbtChange){.config = b->m.config,
                                       .milestone = k * pbt->p.interval,
                                       .change = b->score - a->score};
            }
        }
    }
    return n;
}

void pbt_load(Pbt *pbt, const PbtMember *self, bool has, double value)
{
    (void)record(pbt, self, has, value);
}

void pbt_forget(Pbt *pbt, int64_t number)
{
    for (int64_t i = 0; i < pbt->nm; i++) {
        Milestone *m = &pbt->m[i];
        int64_t w = 0;
        for (int64_t r = 0; r < m->n; r++) {
            if (m->r[r].m.number != number)
                m->r[w++] = m->r[r];
            else
                json_decref(m->r[r].m.config);
        }
        m->n = w;
    }
    for (int64_t i = 0; i < pbt->nj; i++)
        if (pbt->j[i].number == number)
            pbt->j[i].k = 0;
}
