/* fANOVA parameter importance; see fanova.h and docs/searchers.md,
 * "Parameter importance".
 *
 * The forest. Each tree is a regression tree grown as scikit-learn's
 * RandomForestRegressor grows one with the settings Optuna's
 * FanovaImportanceEvaluator gives it: a bootstrap sample of n rows drawn
 * with replacement (kept as a count per row, as sklearn keeps sample
 * weights), every feature tried at every node in a random order, the split
 * that most reduces the weighted squared error (the first one found wins a
 * tie), numeric thresholds halfway between two neighbouring values, a node
 * left a leaf when it is max_depth deep, has fewer than min_split rows, or
 * its y are all equal; the leaf predicts its rows' weighted mean.
 *
 * Categorical parameters split one category against the rest. That is the
 * split a tree can make on the one-hot columns Optuna encodes a categorical
 * with, so both forests can express the same partitions; but where Optuna
 * marginalizes each one-hot column over [0, 1] as if it were numeric
 * (points with two categories at once among them), the marginal here is
 * over the k categories themselves, each of measure 1/k.
 *
 * The importance. A tree cuts the space (numeric coordinates [0, 1], each
 * categorical's k categories) into boxes, one per leaf, with a constant
 * prediction v_L on each. With the uniform measure on the space, the tree's
 * variance is sum_L vol(L) (v_L - mean)^2, and parameter j's marginal
 * a_j(t) = E[prediction | x_j = t] = sum over the leaves whose box holds t
 * of v_L times the measure of the box in the other parameters. a_j is a
 * step function whose steps are the tree's thresholds on j, so one pass
 * over the leaves, adding each leaf's term to the steps its box spans (a
 * difference array over the sorted thresholds), gives it exactly: O(leaves
 * x parameters) per tree, where a traversal per step (Optuna's) costs
 * O(nodes x steps). Var(a_j) / Var(tree) is j's fraction in that tree;
 * trees with no variance are left out of the mean, as Optuna leaves them.
 *
 * Speed. The numeric split search scans each feature's rows in sorted
 * order: the rows are sorted once per forest, the bootstrap sample keeps
 * that order, and a split partitions every feature's list stably, so no
 * node sorts (O(features x rows) per tree level). Trees are seeded by their
 * index, so the result does not depend on how many threads build them: two
 * when the work is large enough to pay for a thread. */
#include "fanova.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "splitmix.h"
#include "why.h"

/* Most rows and parameters: n x d doubles of input, and the forest keeps a
 * few words per row per parameter. A search space has at most
 * SPACE_MAX_PARAMS (256, sampler.h) parameters, a few more with its
 * conditional choices' branches; the grouping of parameters by activity
 * compares pairs of them. */
#define FANOVA_MAX_ROWS (1 << 24)
#define FANOVA_MAX_PARAMS 4096
/* Threads that build one forest's trees; the second pays for itself only
 * when a forest's rows x trees is at least this much (it takes about
 * 0.1 ms to start, the work about 0.1 us per row per tree per feature). */
#define FANOVA_THREADS 2
#define FANOVA_THREAD_WORK 200000
/* A tree whose variance is below this share of the data's (per row) is
 * taken as constant: rounding alone makes leaves of equal y differ in
 * their last bits. */
#define FANOVA_TINY_VARIANCE 1e-24

void fanova_options_default(FanovaOptions *o)
{
    o->trees = 64;
    o->max_depth = 64;
    o->min_leaf = 1;
    o->min_split = 2;
    o->seed = 0;
}

/* One node of a tree. */
typedef struct {
    int feat;     /* forest feature split on, -1 for a leaf */
    int cat;      /* categorical split: this category goes left */
    int tidx;     /* numeric split: index of thr among the tree's positions */
    int left;     /* children, node indices */
    int right;    /*   (unused for a leaf) */
    double thr;   /* numeric split: x <= thr goes left */
    double value; /* leaf: weighted mean of its y (centered) */
} Node;

/* One forest: a group of rows and the parameters active in all of them.
 * Filled before the trees are grown, read-only while they are. */
typedef struct {
    int nr;                /* rows */
    int nf;                /* features */
    const int *kcat;       /* nf: 0 numeric, k categorical */
    const double *xc;      /* nf x nr, column-major: coordinate or category */
    const double *yc;      /* nr: y minus the rows' mean */
    const uint64_t *order; /* nf x nr: a numeric feature's entries sorted by x */
    double tiny;           /* below this a tree's variance is 0 */
    FanovaOptions opt;     /* trees, depth and leaf bounds */
    uint64_t key;          /* the forest's seed: tree t's stream is key's output t+1 */
    double *frac;          /* trees x nf: fraction per tree, NAN when the tree has no variance */
} Forest;

/* One thread's scratch, reused for each of its trees. */
typedef struct {
    const Forest *fo;
    int first, step;          /* trees first, first + step, ... */
    int *cnt;                 /* nr: bootstrap count of each row */
    double *wt;               /* nr: the count as a double (the row's weight) */
    double *wy;               /* nr: weight times centered y */
    unsigned char *goes_left; /* nr */
    uint64_t *sorted;         /* nf x nr: numeric features' node lists (drawn rows only) */
    uint64_t *tmp64;          /* nr: their partition buffer */
    int *rows;                /* nr: the node's rows in any order */
    int *tmp;                 /* nr: partition buffer */
    int *perm;                /* nf: the feature order of a node */
    Node *nodes;              /* 2 nr */
    int nn;                   /* nodes used */
    uint64_t rng;             /* the tree's stream */
    /* Categorical split search: per category count, weight and sum. */
    int kmax;
    int *ccount;
    double *cw, *cs;
    int *touched;
    /* The importance pass. */
    int *pos_off;   /* nf + 1: offsets into pos and diff */
    double *pos;    /* sorted distinct {0, thresholds, 1} per numeric feature */
    double *diff;   /* difference array of a_j over pos's steps */
    int *cat_off;   /* nf + 1: offsets into single and sub */
    double *single; /* a_j(c) from leaves whose box has category c alone */
    double *sub;    /* a_j(c) to subtract: leaves whose box excludes c */
    double *base;   /* nf: a_j(c) from leaves whose box excludes only some */
    int *lo, *hi;   /* nf: a box's numeric bounds as indices into pos */
    int *only;      /* nf: a box's one category, or -1 */
    int *excluded;  /* nf: how many categories the box excludes */
    int *path_f;    /* max_depth: categorical exclusions on the path */
    int *path_c;
    int npath;
    double *measure;  /* nf: a leaf's box, per feature */
    double *pre;      /* nf + 1: prefix products of measure */
    double *suf;      /* nf + 1: suffix products */
    double *leaf_vol; /* nodes: (volume, value) of each leaf */
    double *leaf_val;
    int nleaf;
} Work;

static double uniform01(uint64_t *s)
{
    return (double)(rung_splitmix_next(s) >> 11) * 0x1.0p-53;
}

/* ---- growing a tree ---- */

/* A numeric feature's sorted lists hold entries (rank << ENTRY_ROW_BITS) |
 * row, rank the dense rank of the row's value among the forest's: the scan
 * tells equal values apart from the entries it reads in order, without a
 * dependent load of x for each. */
#define ENTRY_ROW_BITS 24 /* FANOVA_MAX_ROWS = 2^24 */
#define ENTRY_ROW(e) ((int)((e) & ((1ULL << ENTRY_ROW_BITS) - 1)))
#define ENTRY_RANK(e) ((e) >> ENTRY_ROW_BITS)

/* Stable partition of a[start, end) by goes_left; returns the first right. */
static int partition(int *a, int start, int end, const unsigned char *goes_left, int *tmp)
{
    int w = start, r = 0;
    /* Without a branch: which side a row goes is a coin flip to the branch
     * predictor. Both stores are made, one index advances. */
    for (int p = start; p < end; p++) {
        int i = a[p], left = goes_left[i];
        a[w] = i;
        tmp[r] = i;
        w += left;
        r += !left;
    }
    memcpy(a + w, tmp, (size_t)r * sizeof *a);
    return w;
}

/* The same for a list of entries. */
static void partition_entries(uint64_t *a, int start, int end, const unsigned char *goes_left,
                              uint64_t *tmp)
{
    int w = start, r = 0;
    for (int p = start; p < end; p++) {
        uint64_t e = a[p];
        int left = goes_left[ENTRY_ROW(e)];
        a[w] = e;
        tmp[r] = e;
        w += left;
        r += !left;
    }
    memcpy(a + w, tmp, (size_t)r * sizeof *a);
}

typedef struct {
    double score; /* sum over the two sides of S^2 / W: larger is a better split */
    int feat;     /* -1 when none */
    int pos;      /* numeric: the last left position in the sorted list */
    int cat;      /* categorical: the category that goes left */
    double thr;
} Split;

static void numeric_split(Work *w, int f, int start, int end, double sw, double ss, Split *best)
{
    const Forest *fo = w->fo;
    const double *x = fo->xc + (size_t)f * fo->nr;
    const uint64_t *s = w->sorted + (size_t)f * fo->nr;
    int count = end - start, min_leaf = fo->opt.min_leaf;
    double wl = 0, sl = 0;
    const double *wt = w->wt, *wy = w->wy;
    for (int p = start; p < end - 1; p++) {
        int i = ENTRY_ROW(s[p]);
        wl += wt[i];
        sl += wy[i];
        int nl = p - start + 1;
        if (count - nl < min_leaf)
            break;
        if (nl < min_leaf || ENTRY_RANK(s[p]) == ENTRY_RANK(s[p + 1]))
            continue;
        double wr = sw - wl, sr = ss - sl;
        double score = sl * sl / wl + sr * sr / wr;
        if (score > best->score) {
            /* Halfway, but never rounded up onto xb (then x <= thr would
             * send xb left too). */
            double xa = x[i], xb = x[ENTRY_ROW(s[p + 1])];
            double thr = xa / 2 + xb / 2;
            if (thr >= xb)
                thr = xa;
            *best = (Split){score, f, p, -1, thr};
        }
    }
}

static int cmp_int(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    return (a > b) - (a < b);
}

static void categorical_split(Work *w, int f, int start, int end, double sw, double ss, Split *best)
{
    const Forest *fo = w->fo;
    const double *x = fo->xc + (size_t)f * fo->nr;
    int count = end - start, min_leaf = fo->opt.min_leaf, nt = 0;
    for (int p = start; p < end; p++) {
        int i = w->rows[p], c = (int)x[i];
        if (w->ccount[c] == 0) {
            w->touched[nt++] = c;
            w->cw[c] = w->cs[c] = 0;
        }
        w->ccount[c]++;
        w->cw[c] += w->wt[i];
        w->cs[c] += w->wy[i];
    }
    /* In ascending category order, so that ties go the same way whatever
     * order the rows came in. */
    qsort(w->touched, (size_t)nt, sizeof *w->touched, cmp_int);
    for (int t = 0; t < nt; t++) {
        int c = w->touched[t], nl = w->ccount[c];
        w->ccount[c] = 0;
        if (nl < min_leaf || count - nl < min_leaf)
            continue;
        double wl = w->cw[c], sl = w->cs[c], wr = sw - wl, sr = ss - sl;
        double score = sl * sl / wl + sr * sr / wr;
        if (score > best->score)
            *best = (Split){score, f, -1, c, 0};
    }
}

/* Grows the subtree of the rows at [start, end) of every list; returns
 * its root's index. */
static int grow(Work *w, int start, int end, int depth)
{
    const Forest *fo = w->fo;
    int id = w->nn++;
    Node *nd = &w->nodes[id];
    double sw = 0, ss = 0, ymin = INFINITY, ymax = -INFINITY;
    for (int p = start; p < end; p++) {
        int i = w->rows[p];
        double y = fo->yc[i];
        sw += w->wt[i];
        ss += w->wy[i];
        ymin = y < ymin ? y : ymin;
        ymax = y > ymax ? y : ymax;
    }
    *nd = (Node){.feat = -1, .value = ss / sw};
    int count = end - start;
    if (depth >= fo->opt.max_depth || count < fo->opt.min_split || count < 2 * fo->opt.min_leaf ||
        ymin == ymax)
        return id;

    /* sklearn draws the features in a random order at every node; with all
     * of them tried, the order only breaks ties. */
    for (int k = 0; k < fo->nf; k++)
        w->perm[k] = k;
    for (int k = fo->nf - 1; k > 0; k--) {
        int r = (int)(uniform01(&w->rng) * (k + 1));
        int t = w->perm[k];
        w->perm[k] = w->perm[r];
        w->perm[r] = t;
    }
    Split best = {-INFINITY, -1, -1, -1, 0};
    for (int k = 0; k < fo->nf; k++) {
        int f = w->perm[k];
        if (fo->kcat[f] == 0)
            numeric_split(w, f, start, end, sw, ss, &best);
        else
            categorical_split(w, f, start, end, sw, ss, &best);
    }
    if (best.feat < 0)
        return id;

    const double *x = fo->xc + (size_t)best.feat * fo->nr;
    if (fo->kcat[best.feat] == 0) {
        const uint64_t *s = w->sorted + (size_t)best.feat * fo->nr;
        for (int p = start; p < end; p++)
            w->goes_left[ENTRY_ROW(s[p])] = p <= best.pos;
    } else {
        for (int p = start; p < end; p++)
            w->goes_left[w->rows[p]] = (int)x[w->rows[p]] == best.cat;
    }
    int mid = partition(w->rows, start, end, w->goes_left, w->tmp);
    for (int f = 0; f < fo->nf; f++)
        if (fo->kcat[f] == 0)
            partition_entries(w->sorted + (size_t)f * fo->nr, start, end, w->goes_left, w->tmp64);
    nd->feat = best.feat;
    nd->cat = best.cat;
    nd->thr = best.thr;
    int left = grow(w, start, mid, depth + 1);
    int right = grow(w, mid, end, depth + 1);
    w->nodes[id].left = left;
    w->nodes[id].right = right;
    return id;
}

/* ---- the importance of one tree ---- */

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Index of v in the sorted distinct a[0, n), which holds it. */
static int find(const double *a, int n, double v)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void visit_leaf(Work *w, double v)
{
    const Forest *fo = w->fo;
    int nf = fo->nf;
    for (int f = 0; f < nf; f++) {
        int k = fo->kcat[f];
        if (k == 0) {
            const double *pos = w->pos + w->pos_off[f];
            w->measure[f] = pos[w->hi[f]] - pos[w->lo[f]];
        } else {
            w->measure[f] = w->only[f] >= 0 ? 1.0 / k : (double)(k - w->excluded[f]) / k;
        }
    }
    w->pre[0] = 1;
    for (int f = 0; f < nf; f++)
        w->pre[f + 1] = w->pre[f] * w->measure[f];
    w->suf[nf] = 1;
    for (int f = nf - 1; f >= 0; f--)
        w->suf[f] = w->suf[f + 1] * w->measure[f];
    w->leaf_vol[w->nleaf] = w->pre[nf];
    w->leaf_val[w->nleaf] = v;
    w->nleaf++;
    for (int f = 0; f < nf; f++) {
        /* v times the box's measure in the other parameters: this leaf's
         * term of a_f(t) for every t of f inside the box. */
        double term = v * w->pre[f] * w->suf[f + 1];
        if (fo->kcat[f] == 0) {
            double *diff = w->diff + w->pos_off[f];
            diff[w->lo[f]] += term;
            diff[w->hi[f]] -= term;
        } else if (w->only[f] >= 0) {
            w->single[w->cat_off[f] + w->only[f]] += term;
        } else {
            w->base[f] += term;
            for (int e = 0; e < w->npath; e++)
                if (w->path_f[e] == f)
                    w->sub[w->cat_off[f] + w->path_c[e]] += term;
        }
    }
}

static void visit(Work *w, int id)
{
    const Node *nd = &w->nodes[id];
    if (nd->feat < 0) {
        visit_leaf(w, nd->value);
        return;
    }
    int f = nd->feat;
    if (w->fo->kcat[f] == 0) {
        int hi = w->hi[f], lo = w->lo[f];
        w->hi[f] = nd->tidx;
        visit(w, nd->left);
        w->hi[f] = hi;
        w->lo[f] = nd->tidx;
        visit(w, nd->right);
        w->lo[f] = lo;
    } else {
        int only = w->only[f];
        w->only[f] = nd->cat;
        visit(w, nd->left);
        w->only[f] = only;
        w->excluded[f]++;
        w->path_f[w->npath] = f;
        w->path_c[w->npath] = nd->cat;
        w->npath++;
        visit(w, nd->right);
        w->npath--;
        w->excluded[f]--;
    }
}

/* The fraction of the tree's variance each feature's marginal explains,
 * into frac[nf] (all NAN when the tree is constant). */
static void tree_fractions(Work *w, double *frac)
{
    const Forest *fo = w->fo;
    int nf = fo->nf;
    /* Each numeric feature's positions: 0, its thresholds, 1, distinct. */
    int off = 0;
    for (int f = 0; f < nf; f++) {
        w->pos_off[f] = off;
        if (fo->kcat[f] != 0)
            continue;
        double *pos = w->pos + off;
        int m = 0;
        pos[m++] = 0;
        pos[m++] = 1;
        for (int id = 0; id < w->nn; id++)
            if (w->nodes[id].feat == f)
                pos[m++] = w->nodes[id].thr;
        qsort(pos, (size_t)m, sizeof *pos, cmp_double);
        int u = 1;
        for (int p = 1; p < m; p++)
            if (pos[p] != pos[u - 1])
                pos[u++] = pos[p];
        off += u;
    }
    w->pos_off[nf] = off;
    memset(w->diff, 0, (size_t)off * sizeof *w->diff);
    for (int id = 0; id < w->nn; id++) {
        Node *nd = &w->nodes[id];
        if (nd->feat >= 0 && fo->kcat[nd->feat] == 0) {
            int f = nd->feat;
            nd->tidx = find(w->pos + w->pos_off[f], w->pos_off[f + 1] - w->pos_off[f], nd->thr);
        }
    }
    memset(w->single, 0, (size_t)w->cat_off[nf] * sizeof *w->single);
    memset(w->sub, 0, (size_t)w->cat_off[nf] * sizeof *w->sub);
    for (int f = 0; f < nf; f++) {
        w->base[f] = 0;
        w->lo[f] = 0;
        w->hi[f] = w->pos_off[f + 1] - w->pos_off[f] - 1;
        w->only[f] = -1;
        w->excluded[f] = 0;
    }
    w->npath = 0;
    w->nleaf = 0;
    visit(w, 0);

    double mean = 0, vol = 0, var = 0;
    for (int l = 0; l < w->nleaf; l++) {
        mean += w->leaf_vol[l] * w->leaf_val[l];
        vol += w->leaf_vol[l];
    }
    mean /= vol;
    for (int l = 0; l < w->nleaf; l++) {
        double e = w->leaf_val[l] - mean;
        var += w->leaf_vol[l] * e * e;
    }
    var /= vol;
    if (!(var > fo->tiny)) {
        for (int f = 0; f < nf; f++)
            frac[f] = NAN;
        return;
    }
    for (int f = 0; f < nf; f++) {
        double fm = 0, fv = 0;
        int k = fo->kcat[f];
        if (k == 0) {
            const double *pos = w->pos + w->pos_off[f];
            double *a = w->diff + w->pos_off[f];
            int steps = w->pos_off[f + 1] - w->pos_off[f] - 1;
            for (int s = 1; s < steps; s++)
                a[s] += a[s - 1]; /* the difference array's prefix sums: a_f on step s */
            for (int s = 0; s < steps; s++)
                fm += (pos[s + 1] - pos[s]) * a[s];
            for (int s = 0; s < steps; s++)
                fv += (pos[s + 1] - pos[s]) * (a[s] - fm) * (a[s] - fm);
        } else {
            const double *one = w->single + w->cat_off[f], *sub = w->sub + w->cat_off[f];
            for (int c = 0; c < k; c++)
                fm += w->base[f] + one[c] - sub[c];
            fm /= k;
            for (int c = 0; c < k; c++) {
                double e = w->base[f] + one[c] - sub[c] - fm;
                fv += e * e;
            }
            fv /= k;
        }
        frac[f] = fv / var;
    }
}

/* ---- the forest ---- */

static void work_free(Work *w)
{
    void *all[] = {w->cnt,     w->wt,   w->wy,       w->goes_left, w->sorted, w->tmp64,  w->rows,
                   w->tmp,     w->perm, w->nodes,    w->ccount,    w->cw,     w->cs,     w->touched,
                   w->pos_off, w->pos,  w->diff,     w->cat_off,   w->single, w->sub,    w->base,
                   w->lo,      w->hi,   w->only,     w->excluded,  w->path_f, w->path_c, w->measure,
                   w->pre,     w->suf,  w->leaf_vol, w->leaf_val};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

static int work_init(Work *w, const Forest *fo)
{
    memset((char *)w + offsetof(Work, cnt), 0, sizeof *w - offsetof(Work, cnt));
    size_t nr = (size_t)fo->nr, nf = (size_t)fo->nf, nodes = 2 * nr;
    int kmax = 1, ksum = 0;
    for (size_t f = 0; f < nf; f++) {
        kmax = fo->kcat[f] > kmax ? fo->kcat[f] : kmax;
        ksum += fo->kcat[f];
    }
    w->kmax = kmax;
    w->cnt = malloc(nr * sizeof *w->cnt);
    w->wt = malloc(nr * sizeof *w->wt);
    w->wy = malloc(nr * sizeof *w->wy);
    w->goes_left = malloc(nr);
    w->sorted = malloc(nf * nr * sizeof *w->sorted);
    w->tmp64 = malloc(nr * sizeof *w->tmp64);
    w->rows = malloc(nr * sizeof *w->rows);
    w->tmp = malloc(nr * sizeof *w->tmp);
    w->perm = malloc(nf * sizeof *w->perm);
    w->nodes = malloc(nodes * sizeof *w->nodes);
    w->ccount = calloc((size_t)kmax, sizeof *w->ccount);
    w->cw = malloc((size_t)kmax * sizeof *w->cw);
    w->cs = malloc((size_t)kmax * sizeof *w->cs);
    w->touched = malloc((size_t)kmax * sizeof *w->touched);
    w->pos_off = malloc((nf + 1) * sizeof *w->pos_off);
    /* Every internal node adds one position to one feature: fewer than nr. */
    w->pos = malloc((nr + 2 * nf) * sizeof *w->pos);
    w->diff = malloc((nr + 2 * nf) * sizeof *w->diff);
    w->cat_off = malloc((nf + 1) * sizeof *w->cat_off);
    w->single = malloc((size_t)(ksum + 1) * sizeof *w->single);
    w->sub = malloc((size_t)(ksum + 1) * sizeof *w->sub);
    w->base = malloc(nf * sizeof *w->base);
    w->lo = malloc(nf * sizeof *w->lo);
    w->hi = malloc(nf * sizeof *w->hi);
    w->only = malloc(nf * sizeof *w->only);
    w->excluded = malloc(nf * sizeof *w->excluded);
    w->path_f = malloc((size_t)(fo->opt.max_depth + 1) * sizeof *w->path_f);
    w->path_c = malloc((size_t)(fo->opt.max_depth + 1) * sizeof *w->path_c);
    w->measure = malloc(nf * sizeof *w->measure);
    w->pre = malloc((nf + 1) * sizeof *w->pre);
    w->suf = malloc((nf + 1) * sizeof *w->suf);
    w->leaf_vol = malloc(nodes * sizeof *w->leaf_vol);
    w->leaf_val = malloc(nodes * sizeof *w->leaf_val);
    if (!w->cnt || !w->wt || !w->wy || !w->goes_left || !w->sorted || !w->tmp64 || !w->rows ||
        !w->tmp || !w->perm || !w->nodes || !w->ccount || !w->cw || !w->cs || !w->touched ||
        !w->pos_off || !w->pos || !w->diff || !w->cat_off || !w->single || !w->sub || !w->base ||
        !w->lo || !w->hi || !w->only || !w->excluded || !w->path_f || !w->path_c || !w->measure ||
        !w->pre || !w->suf || !w->leaf_vol || !w->leaf_val) {
        work_free(w);
        return -1;
    }
    int off = 0;
    for (size_t f = 0; f < nf; f++) {
        w->cat_off[f] = off;
        off += fo->kcat[f];
    }
    w->cat_off[nf] = off;
    return 0;
}

static void grow_tree(Work *w, int t, double *frac)
{
    const Forest *fo = w->fo;
    int nr = fo->nr;
    w->rng = rung_splitmix_at(fo->key, (uint64_t)t + 1);
    memset(w->cnt, 0, (size_t)nr * sizeof *w->cnt);
    for (int r = 0; r < nr; r++) {
        int i = (int)(uniform01(&w->rng) * nr);
        w->cnt[i < nr ? i : nr - 1]++;
    }
    /* The drawn rows, each once, keeping every feature's sorted order. */
    int m = 0;
    for (int i = 0; i < nr; i++) {
        w->wt[i] = w->cnt[i];
        w->wy[i] = w->cnt[i] * fo->yc[i];
        if (w->cnt[i] > 0)
            w->rows[m++] = i;
    }
    for (int f = 0; f < fo->nf; f++) {
        if (fo->kcat[f] != 0)
            continue;
        const uint64_t *order = fo->order + (size_t)f * nr;
        uint64_t *s = w->sorted + (size_t)f * nr;
        int q = 0;
        for (int p = 0; p < nr; p++)
            if (w->cnt[ENTRY_ROW(order[p])] > 0)
                s[q++] = order[p];
    }
    w->nn = 0;
    grow(w, 0, m, 0);
    tree_fractions(w, frac);
}

static void *work_main(void *arg)
{
    Work *w = arg;
    const Forest *fo = w->fo;
    for (int t = w->first; t < fo->opt.trees; t += w->step)
        grow_tree(w, t, fo->frac + (size_t)t * fo->nf);
    return NULL;
}

/* Grows the forest's trees into fo->frac. Returns 0, or -1 when out of
 * memory. */
static int forest_run(const Forest *fo)
{
    int threads = (double)fo->nr * fo->opt.trees >= FANOVA_THREAD_WORK ? FANOVA_THREADS : 1;
    if (threads > fo->opt.trees)
        threads = fo->opt.trees;
    Work work[FANOVA_THREADS];
    pthread_t th[FANOVA_THREADS];
    bool started[FANOVA_THREADS] = {false};
    int made = 0;
    for (int k = 0; k < threads; k++) {
        work[k].fo = fo;
        work[k].first = k;
        work[k].step = threads;
        if (work_init(&work[k], fo) != 0)
            break;
        made++;
    }
    if (made == 0)
        return -1;
    /* Fewer workspaces than asked: the ones made share the trees. */
    for (int k = 0; k < made; k++)
        work[k].step = made;
    for (int k = 1; k < made; k++)
        started[k] = pthread_create(&th[k], NULL, work_main, &work[k]) == 0;
    work_main(&work[0]);
    for (int k = 1; k < made; k++) {
        if (started[k])
            pthread_join(th[k], NULL);
        else
            work_main(&work[k]); /* no thread: its trees here */
    }
    for (int k = 0; k < made; k++)
        work_free(&work[k]);
    return 0;
}

/* ---- the groups and the entry point ---- */

typedef struct {
    double v;
    int i;
} Keyed;

static int cmp_keyed(const void *pa, const void *pb)
{
    const Keyed *a = pa, *b = pb;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static int check(const FanovaData *data, const FanovaOptions *o, char *why, size_t why_size)
{
    if (data == NULL)
        return rung_why(why, why_size, "no data");
    if (data->n < 2)
        return rung_why(why, why_size, "n is %d: fANOVA needs at least 2 observations", data->n);
    if (data->n > FANOVA_MAX_ROWS)
        return rung_why(why, why_size, "n is %d: at most %d observations", data->n,
                        FANOVA_MAX_ROWS);
    if (data->d < 1)
        return rung_why(why, why_size, "d is %d: fANOVA needs at least 1 parameter", data->d);
    if (data->d > FANOVA_MAX_PARAMS)
        return rung_why(why, why_size, "d is %d: at most %d parameters", data->d,
                        FANOVA_MAX_PARAMS);
    if (data->x == NULL || data->y == NULL || data->categories == NULL)
        return rung_why(why, why_size, "x, y and categories are required");
    if (o->trees < 1 || o->trees > FANOVA_MAX_TREES)
        return rung_why(why, why_size, "trees is %d: 1 .. %d", o->trees, FANOVA_MAX_TREES);
    if (o->max_depth < 1 || o->max_depth > FANOVA_MAX_DEPTH)
        return rung_why(why, why_size, "max_depth is %d: 1 .. %d", o->max_depth, FANOVA_MAX_DEPTH);
    if (o->min_leaf < 1)
        return rung_why(why, why_size, "min_leaf is %d: at least 1", o->min_leaf);
    if (o->min_split < 2)
        return rung_why(why, why_size, "min_split is %d: at least 2", o->min_split);
    for (int j = 0; j < data->d; j++) {
        int k = data->categories[j];
        if (k != 0 && (k < 2 || k > FANOVA_MAX_CATEGORIES))
            return rung_why(why, why_size,
                            "categories[%d] is %d: 0 (numeric) or 2 .. %d categories", j, k,
                            FANOVA_MAX_CATEGORIES);
    }
    for (int i = 0; i < data->n; i++)
        if (!isfinite(data->y[i]))
            return rung_why(why, why_size, "y[%d] is %g: every y must be finite", i, data->y[i]);
    for (int i = 0; i < data->n; i++) {
        for (int j = 0; j < data->d; j++) {
            double v = data->x[(size_t)i * data->d + j];
            int k = data->categories[j];
            if (isnan(v))
                continue; /* inactive */
            if (k == 0 && !(v >= 0 && v <= 1))
                return rung_why(why, why_size,
                                "x[%d][%d] is %g: a numeric parameter's coordinate is in [0, 1]", i,
                                j, v);
            if (k != 0 && !(v >= 0 && v <= k - 1 && v == floor(v)))
                return rung_why(why, why_size,
                                "x[%d][%d] is %g: parameter %d's category is a whole number "
                                "0 .. %d",
                                i, j, v, j, k - 1);
        }
    }
    return 0;
}

/* FNV-1a over the indices of the rows where parameter j is active. */
static uint64_t active_hash(const FanovaData *data, int j)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < data->n; i++) {
        if (isnan(data->x[(size_t)i * data->d + j]))
            continue;
        h = (h ^ (uint64_t)i) * 0x100000001b3ULL;
    }
    return h;
}

static bool same_rows(const FanovaData *data, int a, int b)
{
    for (int i = 0; i < data->n; i++) {
        const double *row = data->x + (size_t)i * data->d;
        if (isnan(row[a]) != isnan(row[b]))
            return false;
    }
    return true;
}

/* One group's forest: its rows (where parameter lead is active), its
 * features (the parameters active in all of them); adds each member's
 * share-weighted mean fraction into raw[] and std into sd[]. Returns 0,
 * or -1 when out of memory. */
static int fit_group(const FanovaData *data, const FanovaOptions *o, const int *group, int lead,
                     double ss_total, double *raw, double *sd)
{
    int n = data->n, d = data->d, rc = -1;
    int *rows = malloc((size_t)n * sizeof *rows);
    int *feat = malloc((size_t)d * sizeof *feat);
    int *kcat = malloc((size_t)d * sizeof *kcat);
    double *yc = malloc((size_t)n * sizeof *yc);
    double *xc = NULL, *frac = NULL;
    uint64_t *order = NULL;
    Keyed *keyed = NULL;
    if (!rows || !feat || !kcat || !yc)
        goto done;
    int nr = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(data->x[(size_t)i * d + lead]))
            rows[nr++] = i;
    int nf = 0;
    for (int j = 0; j < d; j++) {
        bool all = true;
        for (int r = 0; r < nr && all; r++)
            all = !isnan(data->x[(size_t)rows[r] * d + j]);
        if (all) {
            feat[nf] = j;
            kcat[nf] = data->categories[j];
            nf++;
        }
    }
    double mean = 0, ss = 0;
    for (int r = 0; r < nr; r++)
        mean += data->y[rows[r]];
    mean /= nr;
    for (int r = 0; r < nr; r++) {
        yc[r] = data->y[rows[r]] - mean;
        ss += yc[r] * yc[r];
    }
    if (nr < 2 || !(ss > 0) || !(ss_total > 0)) {
        rc = 0; /* nothing to explain: the members keep 0 */
        goto done;
    }
    xc = malloc((size_t)nf * nr * sizeof *xc);
    order = malloc((size_t)nf * nr * sizeof *order);
    frac = malloc((size_t)o->trees * nf * sizeof *frac);
    keyed = malloc((size_t)nr * sizeof *keyed);
    if (!xc || !order || !frac || !keyed)
        goto done;
    for (int f = 0; f < nf; f++) {
        double *col = xc + (size_t)f * nr;
        for (int r = 0; r < nr; r++)
            col[r] = data->x[(size_t)rows[r] * d + feat[f]];
        if (kcat[f] != 0)
            continue;
        for (int r = 0; r < nr; r++)
            keyed[r] = (Keyed){col[r], r};
        qsort(keyed, (size_t)nr, sizeof *keyed, cmp_keyed);
        uint64_t rank = 0;
        for (int r = 0; r < nr; r++) {
            rank += r > 0 && keyed[r].v != keyed[r - 1].v;
            order[(size_t)f * nr + r] = rank << ENTRY_ROW_BITS | (uint64_t)keyed[r].i;
        }
    }
    Forest fo = {
        .nr = nr,
        .nf = nf,
        .kcat = kcat,
        .xc = xc,
        .yc = yc,
        .order = order,
        .tiny = FANOVA_TINY_VARIANCE * ss / nr,
        .opt = *o,
        /* Keyed by the group's first parameter, so that a parameter's
         * forest does not change when another group comes or goes. */
        .key = rung_splitmix_at(o->seed, (uint64_t)lead + 1),
        .frac = frac,
    };
    if (forest_run(&fo) != 0)
        goto done;
    /* The group's share of the whole sum of squares: by the law of total
     * variance the groups' within-group sums of squares and the
     * between-group part (what decides activity, explained by the forest
     * of the parameters active everywhere) add up to the total. */
    double share = ss / ss_total;
    for (int f = 0; f < nf; f++) {
        int j = feat[f];
        if (group[j] != lead)
            continue;
        double s1 = 0, s2 = 0;
        int used = 0;
        for (int t = 0; t < o->trees; t++) {
            double v = frac[(size_t)t * nf + f];
            if (isnan(v))
                continue;
            s1 += v;
            used++;
        }
        if (used == 0)
            continue;
        double m = s1 / used;
        for (int t = 0; t < o->trees; t++) {
            double v = frac[(size_t)t * nf + f];
            if (!isnan(v))
                s2 += (v - m) * (v - m);
        }
        raw[j] = m * share;
        sd[j] = sqrt(s2 / used) * share;
    }
    rc = 0;
done:
    free(rows);
    free(feat);
    free(kcat);
    free(yc);
    free(xc);
    free(order);
    free(frac);
    free(keyed);
    return rc;
}

int fanova_importance(const FanovaData *data, const FanovaOptions *opt, double *importance,
                      double *std, int *active, char *why, size_t why_size)
{
    FanovaOptions defaults;
    fanova_options_default(&defaults);
    const FanovaOptions *o = opt != NULL ? opt : &defaults;
    if (check(data, o, why, why_size) != 0)
        return -1;
    int n = data->n, d = data->d;
    int *group = malloc((size_t)d * sizeof *group);
    int *count = malloc((size_t)d * sizeof *count);
    uint64_t *hash = malloc((size_t)d * sizeof *hash);
    double *sd = malloc((size_t)d * sizeof *sd);
    if (!group || !count || !hash || !sd) {
        free(group);
        free(count);
        free(hash);
        free(sd);
        return rung_why(why, why_size, "out of memory");
    }
    for (int j = 0; j < d; j++) {
        importance[j] = 0;
        sd[j] = 0;
        count[j] = 0;
        for (int i = 0; i < n; i++)
            count[j] += !isnan(data->x[(size_t)i * d + j]);
        /* A group is led by its first parameter. */
        hash[j] = active_hash(data, j);
        group[j] = j;
        for (int g = 0; g < j; g++) {
            if (group[g] == g && hash[g] == hash[j] && count[g] == count[j] &&
                same_rows(data, g, j)) {
                group[j] = g;
                break;
            }
        }
    }
    double mean = 0, ss_total = 0;
    for (int i = 0; i < n; i++)
        mean += data->y[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        ss_total += (data->y[i] - mean) * (data->y[i] - mean);
    int rc = 0;
    for (int j = 0; j < d && rc == 0; j++)
        if (group[j] == j && count[j] >= 2)
            rc = fit_group(data, o, group, j, ss_total, importance, sd);
    double total = 0;
    for (int j = 0; j < d; j++)
        total += importance[j];
    for (int j = 0; j < d; j++) {
        importance[j] = total > 0 ? importance[j] / total : 0;
        if (std != NULL)
            std[j] = total > 0 ? sd[j] / total : 0;
        if (active != NULL)
            active[j] = count[j];
    }
    free(group);
    free(count);
    free(hash);
    free(sd);
    if (rc != 0)
        return rung_why(why, why_size, "out of memory");
    return 0;
}
