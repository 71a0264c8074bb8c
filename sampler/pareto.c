/* Pareto fronts, non-dominated sorting, hypervolume and 2-D EHVI; see
 * pareto.h. */
#include "pareto.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool pareto_dominates(const double *a, const double *b, int m)
{
    bool strict = false;
    for (int j = 0; j < m; j++) {
        if (a[j] > b[j])
            return false;
        if (a[j] < b[j])
            strict = true;
    }
    return strict;
}

static bool row_finite(const double *a, int m)
{
    for (int j = 0; j < m; j++)
        if (!isfinite(a[j]))
            return false;
    return true;
}

/* qsort has no context argument: rows are compared through this. */
typedef struct SortRow {
    const double *y;
    int m;
    int i;
} SortRow;

static int lex_cmp(const void *pa, const void *pb)
{
    const SortRow *a = pa, *b = pb;
    for (int j = 0; j < a->m; j++) {
        if (a->y[j] < b->y[j])
            return -1;
        if (a->y[j] > b->y[j])
            return 1;
    }
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The front of the points with keep[i] set (all when keep is NULL). In
 * lexicographic order a point can only be dominated by one before it, so
 * one pass against the front so far decides each point. */
static int front_of(const double *y, int n, int m, const bool *keep, bool *on_front)
{
    SortRow *rows = malloc((size_t)(n > 0 ? n : 1) * sizeof *rows);
    int *front = malloc((size_t)(n > 0 ? n : 1) * sizeof *front);
    if (rows == NULL || front == NULL) {
        free(rows);
        free(front);
        return -1;
    }
    int r = 0;
    for (int i = 0; i < n; i++) {
        on_front[i] = false;
        if ((keep == NULL || keep[i]) && row_finite(y + (size_t)i * m, m))
            rows[r++] = (SortRow){y + (size_t)i * m, m, i};
    }
    qsort(rows, (size_t)r, sizeof *rows, lex_cmp);
    int f = 0;
    for (int k = 0; k < r; k++) {
        bool dominated = false;
        for (int q = 0; q < f && !dominated; q++)
            dominated = pareto_dominates(y + (size_t)front[q] * m, rows[k].y, m);
        if (!dominated) {
            front[f++] = rows[k].i;
            on_front[rows[k].i] = true;
        }
    }
    free(rows);
    free(front);
    return f;
}

int pareto_front(const double *y, int n, int m, bool *on_front)
{
    return front_of(y, n, m, NULL, on_front);
}

int pareto_ranks(const double *y, int n, int m, int *rank)
{
    bool *left = malloc((size_t)(n > 0 ? n : 1) * sizeof *left);
    bool *on = malloc((size_t)(n > 0 ? n : 1) * sizeof *on);
    if (left == NULL || on == NULL) {
        free(left);
        free(on);
        return -1;
    }
    int n_left = 0;
    for (int i = 0; i < n; i++) {
        left[i] = row_finite(y + (size_t)i * m, m);
        n_left += left[i];
        rank[i] = -1;
    }
    int r = 0;
    for (; n_left > 0; r++) {
        if (front_of(y, n, m, left, on) < 0) {
            free(left);
            free(on);
            return -1;
        }
        for (int i = 0; i < n; i++) {
            if (on[i]) {
                rank[i] = r;
                left[i] = false;
                n_left--;
            }
        }
    }
    /* Points with a non-finite value come last, as one rank. */
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (rank[i] < 0) {
            rank[i] = r;
            any = true;
        }
    }
    free(left);
    free(on);
    return r + any;
}

/* Sorts indices of one rank by one objective (qsort without context). */
typedef struct ObjKey {
    double v;
    int i;
} ObjKey;

static int key_cmp(const void *pa, const void *pb)
{
    const ObjKey *a = pa, *b = pb;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

int pareto_crowding(const double *y, int n, int m, const int *rank, double *crowd)
{
    ObjKey *keys = malloc((size_t)(n > 0 ? n : 1) * sizeof *keys);
    if (keys == NULL)
        return -1;
    int max_rank = -1;
    for (int i = 0; i < n; i++) {
        crowd[i] = 0;
        if (rank[i] > max_rank)
            max_rank = rank[i];
    }
    for (int r = 0; r <= max_rank; r++) {
        for (int j = 0; j < m; j++) {
            int c = 0;
            for (int i = 0; i < n; i++)
                if (rank[i] == r)
                    keys[c++] = (ObjKey){y[(size_t)i * m + j], i};
            if (c == 0)
                break;
            qsort(keys, (size_t)c, sizeof *keys, key_cmp);
            crowd[keys[0].i] = INFINITY;
            crowd[keys[c - 1].i] = INFINITY;
            double range = keys[c - 1].v - keys[0].v;
            if (!(range > 0) || !isfinite(range))
                continue;
            for (int k = 1; k + 1 < c; k++)
                crowd[keys[k].i] += (keys[k + 1].v - keys[k - 1].v) / range;
        }
    }
    free(keys);
    return 0;
}

/* Hypervolume by slicing: sort by the last objective; between consecutive
 * values of it, the slab's volume is its thickness times the (m-1)-D
 * hypervolume of the points at or below it. pts holds n rows of m. */
static double hv_rec(double *pts, int n, int m, const double *ref, double *work)
{
    if (n == 0)
        return 0;
    if (m == 1) {
        double lo = ref[0];
        for (int i = 0; i < n; i++)
            if (pts[i] < lo)
                lo = pts[i];
        return ref[0] - lo;
    }
    if (m == 2) {
        /* Sort by the first objective; sweep keeping the lowest second. */
        SortRow *rows = malloc((size_t)n * sizeof *rows);
        if (rows == NULL)
            return -1;
        for (int i = 0; i < n; i++)
            rows[i] = (SortRow){pts + (size_t)i * 2, 2, i};
        qsort(rows, (size_t)n, sizeof *rows, lex_cmp);
        double vol = 0, best2 = ref[1];
        for (int i = 0; i < n; i++) {
            double x = rows[i].y[0], y2 = rows[i].y[1];
            if (y2 < best2) {
                vol += (ref[0] - x) * (best2 - y2);
                best2 = y2;
            }
        }
        free(rows);
        return vol;
    }
    /* Sort rows by the last objective, ascending. */
    ObjKey *keys = malloc((size_t)n * sizeof *keys);
    if (keys == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        keys[i] = (ObjKey){pts[(size_t)i * m + m - 1], i};
    qsort(keys, (size_t)n, sizeof *keys, key_cmp);
    double vol = 0;
    double *sub = work;                             /* n rows of m - 1 */
    double *next_work = work + (size_t)n * (m - 1); /* for the recursion */
    for (int k = 0; k < n; k++) {
        const double *p = pts + (size_t)keys[k].i * m;
        memcpy(sub + (size_t)k * (m - 1), p, (size_t)(m - 1) * sizeof *p);
        double top = k + 1 < n ? keys[k + 1].v : ref[m - 1];
        double thick = top - keys[k].v;
        if (thick <= 0)
            continue;
        /* The recursion sorts its own copy: sub keeps this level's rows. */
        double *copy = next_work;
        memcpy(copy, sub, (size_t)(k + 1) * (m - 1) * sizeof *copy);
        double a = hv_rec(copy, k + 1, m - 1, ref, copy + (size_t)(k + 1) * (m - 1));
        if (a < 0) {
            free(keys);
            return -1;
        }
        vol += thick * a;
    }
    free(keys);
    return vol;
}

double pareto_hypervolume(const double *y, int n, int m, const double *ref)
{
    /* Only points strictly dominating ref count. Scratch: each level of
     * the recursion keeps two blocks of n rows. */
    size_t cap = (size_t)(n > 0 ? n : 1) * (size_t)m * (size_t)(2 * m + 2);
    double *pts = malloc(cap * sizeof *pts);
    if (pts == NULL)
        return -1;
    int c = 0;
    for (int i = 0; i < n; i++) {
        const double *p = y + (size_t)i * m;
        bool in = row_finite(p, m);
        for (int j = 0; j < m && in; j++)
            in = p[j] < ref[j];
        if (in)
            memcpy(pts + (size_t)c++ * m, p, (size_t)m * sizeof *p);
    }
    double v = hv_rec(pts, c, m, ref, pts + (size_t)c * m);
    free(pts);
    return v;
}

/* psi(x) = E[(x - Y)^+] for Y ~ N(mean, sd^2); 0 at x = -inf. */
static double psi(double x, double mean, double sd)
{
    if (x == -INFINITY)
        return 0;
    double z = (x - mean) / sd;
    return (x - mean) * 0.5 * erfc(-z / sqrt(2)) + sd * exp(-0.5 * z * z) / sqrt(2 * M_PI);
}

double pareto_ehvi2(const double *front, int k, const double *ref, const double *mean,
                    const double *sd)
{
    /* The front's points that dominate ref, by the first objective; a
     * sweep keeps those not dominated (strictly falling second objective). */
    SortRow *rows = malloc((size_t)(k > 0 ? k : 1) * sizeof *rows);
    if (rows == NULL)
        return -1;
    int c = 0;
    for (int i = 0; i < k; i++) {
        const double *p = front + (size_t)i * 2;
        if (row_finite(p, 2) && p[0] < ref[0] && p[1] < ref[1])
            rows[c++] = (SortRow){p, 2, i};
    }
    qsort(rows, (size_t)c, sizeof *rows, lex_cmp);
    /* Cells: [a_i, b_i) x (-inf, u_i): a_0 = -inf, u_0 = ref[1]; each
     * front point p opens a cell at p[0] whose ceiling is p[1]. */
    double ehvi = 0, a = -INFINITY, u = ref[1];
    for (int i = 0; i < c; i++) {
        const double *p = rows[i].y;
        if (p[1] >= u)
            continue; /* dominated by an earlier point */
        double b = p[0];
        ehvi += (psi(b, mean[0], sd[0]) - psi(a, mean[0], sd[0])) * psi(u, mean[1], sd[1]);
        a = b;
        u = p[1];
    }
    ehvi += (psi(ref[0], mean[0], sd[0]) - psi(a, mean[0], sd[0])) * psi(u, mean[1], sd[1]);
    free(rows);
    return ehvi > 0 ? ehvi : 0;
}

/* ---- EHVI of m objectives over a cell decomposition ---------------------- */

struct ParetoCells {
    int m;
    int n_cells;
    int nz[PARETO_MAX_M];    /* grid lines per objective, ref included */
    double *z[PARETO_MAX_M]; /* sorted distinct front coordinates, then ref */
    int *idx;                /* n_cells x (m - 1): interval index per objective */
    int *top;                /* n_cells: index into z[m - 1] of the cell's ceiling */
};

void pareto_cells_free(ParetoCells *c)
{
    if (c == NULL)
        return;
    for (int j = 0; j < PARETO_MAX_M; j++)
        free(c->z[j]);
    free(c->idx);
    free(c->top);
    free(c);
}

static int dbl_cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : (a > b ? 1 : 0);
}

static int sorted_lines(const double *pts, int k, int m, int j, double ref, double *out)
{
    int n = 0;
    for (int i = 0; i < k; i++)
        out[n++] = pts[(size_t)i * m + j];
    qsort(out, (size_t)n, sizeof *out, dbl_cmp);
    int w = 0;
    for (int i = 0; i < n; i++)
        if (w == 0 || out[i] != out[w - 1])
            out[w++] = out[i];
    out[w++] = ref;
    return w;
}

ParetoCells *pareto_cells_new(const double *front, int k, int m, const double *ref, int max_cells)
{
    if (m < 2 || m > PARETO_MAX_M || k < 0)
        return NULL;
    ParetoCells *c = calloc(1, sizeof *c);
    double *pts = malloc((size_t)(k > 0 ? k : 1) * (size_t)m * sizeof *pts);
    bool *on = malloc((size_t)(k > 0 ? k : 1) * sizeof *on);
    if (c == NULL || pts == NULL || on == NULL)
        goto fail;
    c->m = m;
    /* The non-dominated points that dominate ref strictly. */
    int n = 0;
    for (int i = 0; i < k; i++) {
        const double *p = front + (size_t)i * m;
        bool in = row_finite(p, m);
        for (int j = 0; j < m && in; j++)
            in = p[j] < ref[j];
        if (in)
            memcpy(pts + (size_t)n++ * m, p, (size_t)m * sizeof *p);
    }
    if (n > 0 && pareto_front(pts, n, m, on) < 0)
        goto fail;
    int w = 0;
    for (int i = 0; i < n; i++)
        if (on[i])
            memmove(pts + (size_t)w++ * m, pts + (size_t)i * m, (size_t)m * sizeof *pts);
    n = w;
    double cells = 1;
    for (int j = 0; j < m; j++) {
        c->z[j] = malloc((size_t)(n + 1) * sizeof *c->z[j]);
        if (c->z[j] == NULL)
            goto fail;
        c->nz[j] = sorted_lines(pts, n, m, j, ref[j], c->z[j]);
        if (j < m - 1)
            cells *= c->nz[j];
    }
    if (cells > max_cells || n + 1 > PARETO_CELLS_MAX_LINES)
        goto fail;
    c->n_cells = (int)cells;
    c->idx = malloc((size_t)c->n_cells * (size_t)(m - 1) * sizeof *c->idx);
    c->top = malloc((size_t)c->n_cells * sizeof *c->top);
    if (c->idx == NULL || c->top == NULL)
        goto fail;
    /* Cell (i_0, .., i_{m-2}) spans [z_j[i_j - 1], z_j[i_j]) in objective j
     * (from -inf for i_j = 0); a point p dominates its part below height h
     * exactly when p_j <= z_j[i_j - 1] for every j < m - 1 and p_{m-1} <= h,
     * so the cell is non-dominated below the least such p_{m-1} (or ref). */
    for (int cell = 0; cell < c->n_cells; cell++) {
        int *ix = c->idx + (size_t)cell * (m - 1);
        int r = cell;
        for (int j = m - 2; j >= 0; j--) {
            ix[j] = r % c->nz[j];
            r /= c->nz[j];
        }
        double u = ref[m - 1];
        for (int i = 0; i < n; i++) {
            const double *p = pts + (size_t)i * m;
            bool below = true;
            for (int j = 0; j < m - 1 && below; j++)
                below = ix[j] > 0 && p[j] <= c->z[j][ix[j] - 1];
            if (below && p[m - 1] < u)
                u = p[m - 1];
        }
        int t = 0;
        while (c->z[m - 1][t] != u)
            t++;
        c->top[cell] = t;
    }
    free(pts);
    free(on);
    return c;
fail:
    free(pts);
    free(on);
    pareto_cells_free(c);
    return NULL;
}

int pareto_cells_count(const ParetoCells *c)
{
    return c->n_cells;
}

double pareto_cells_ehvi(const ParetoCells *c, const double *mean, const double *sd)
{
    int m = c->m;
    /* psi at every grid line, then each interval's difference. */
    double width[PARETO_MAX_M - 1][PARETO_CELLS_MAX_LINES];
    double height[PARETO_CELLS_MAX_LINES];
    for (int j = 0; j < m - 1; j++) {
        double prev = 0;
        for (int i = 0; i < c->nz[j]; i++) {
            double p = psi(c->z[j][i], mean[j], sd[j]);
            width[j][i] = p - prev;
            prev = p;
        }
    }
    for (int i = 0; i < c->nz[m - 1]; i++)
        height[i] = psi(c->z[m - 1][i], mean[m - 1], sd[m - 1]);
    double ehvi = 0;
    for (int cell = 0; cell < c->n_cells; cell++) {
        const int *ix = c->idx + (size_t)cell * (m - 1);
        double v = height[c->top[cell]];
        for (int j = 0; j < m - 1; j++)
            v *= width[j][ix[j]];
        ehvi += v;
    }
    return ehvi > 0 ? ehvi : 0;
}
