/* The C evaluator of LCBench's surrogate (lcbench.h; bench/README.md,
 * "LCBench"). It interprets the exported op list node by node, as
 * bench/lcbench_export.py's numpy evaluator does, so that the two can be
 * checked against each other row by row; the GEMMs go to OpenBLAS's sgemm,
 * everything else is a plain loop. Tensors are float32 or integer (int32
 * and int64 both held as int64: the graph's integers are indices and
 * shapes), of rank <= LCB_MAX_RANK; every value has one buffer that grows
 * to the largest batch seen and is reused after. */
#include "lcbench.h"

#include <cblas.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LCB_MAX_RANK 4
#define LCB_MAX_IN 16 /* a node's inputs: the widest Concat has 8 */
/* the graph's named values (LCBench's has 258): bounds the linear
 * name look-up that runs once at load */
#define LCB_MAX_VALUES 4096
#define LCB_BLOB_MAX (256u << 20) /* the weights: LCBench's are 2.1 MB */

typedef enum { DT_F32, DT_I64 } Dtype;

typedef struct Tensor {
    Dtype dt;
    int rank;                   /* 0 .. LCB_MAX_RANK */
    int64_t dims[LCB_MAX_RANK]; /* dims[0 .. rank-1] */
    size_t cap;                 /* elements the buffer holds */
    void *data;                 /* float or int64_t, owned */
    bool fixed;                 /* an initializer or Constant: never an output */
    bool set;                   /* fixed, an input, or an earlier node's output */
} Tensor;

typedef enum {
    OP_GEMM,
    OP_BATCHNORM,
    OP_RELU,
    OP_GATHER,
    OP_CONCAT,
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_LOG,
    OP_EXP,
    OP_SIGMOID,
    OP_CAST,
    OP_UNSQUEEZE,
    OP_SHAPE,
    OP_SLICE,
    OP_CONSTANT,
    OP_COUNT
} Op;

static const char *const OP_NAMES[OP_COUNT] = {"Gemm",    "BatchNormalization",
                                               "Relu",    "Gather",
                                               "Concat",  "Add",
                                               "Sub",     "Mul",
                                               "Div",     "Log",
                                               "Exp",     "Sigmoid",
                                               "Cast",    "Unsqueeze",
                                               "Shape",   "Slice",
                                               "Constant"};

typedef struct Node {
    Op op;
    int n_in;
    int in[LCB_MAX_IN]; /* value ids; -1: an optional input left out */
    int out;            /* value id */
    int64_t axis;       /* Gather, Concat */
    int trans_a, trans_b;
    float alpha, beta, epsilon;
    Dtype to;   /* Cast */
    int n_axes; /* Unsqueeze's axes as an attribute (opset < 13) */
    int64_t axes[LCB_MAX_RANK];
    int64_t start, end; /* Shape's (opset 15); end = INT64_MAX: to the last */
} Node;

struct LcbGraph {
    int n_values;
    char *names[LCB_MAX_VALUES];
    Tensor vals[LCB_MAX_VALUES];
    int n_nodes;
    Node *nodes;
    int in_cat, in_cont, output;
    char *columns[LCB_OUTPUTS];
    json_t *tasks; /* the file's "tasks": {task id: x_cat}; a new reference */
};

static int fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

static size_t numel(const Tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= (size_t)t->dims[i];
    return n;
}

/* Gives t the shape and dtype, growing its buffer if it is too small. */
static int shape_to(Tensor *t, Dtype dt, int rank, const int64_t *dims, char *err, size_t len)
{
    size_t n = 1;
    if (rank > LCB_MAX_RANK)
        return fail(err, len, "rank %d above %d", rank, LCB_MAX_RANK);
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return fail(err, len, "negative dimension");
        n *= (size_t)dims[i];
    }
    size_t esize = dt == DT_F32 ? sizeof(float) : sizeof(int64_t);
    size_t bytes_have = t->cap * (t->dt == DT_F32 ? sizeof(float) : sizeof(int64_t));
    if (n * esize > bytes_have || t->data == NULL) {
        void *p = realloc(t->data, (n ? n : 1) * esize);
        if (p == NULL)
            return fail(err, len, "out of memory");
        t->data = p;
        bytes_have = (n ? n : 1) * esize;
    }
    t->cap = bytes_have / esize;
    t->dt = dt;
    t->rank = rank;
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    return 0;
}

static float *fp(const Tensor *t)
{
    return (float *)t->data;
}

static int64_t *ip(const Tensor *t)
{
    return (int64_t *)t->data;
}

/* ---- the operators ---- */

/* The four-dimensional view of t right-aligned (numpy's broadcasting):
 * dims padded with 1 on the left, and element strides, 0 where the dim is
 * 1 so that the one element repeats. */
static void view4(const Tensor *t, int64_t d[4], int64_t s[4])
{
    int pad = 4 - t->rank;
    int64_t stride = 1;
    for (int i = 3; i >= 0; i--) {
        d[i] = i < pad ? 1 : t->dims[i - pad];
        s[i] = d[i] == 1 ? 0 : stride;
        stride *= d[i];
    }
}

static float bin_f(Op op, float a, float b)
{
    switch (op) {
    case OP_ADD:
        return a + b;
    case OP_SUB:
        return a - b;
    case OP_MUL:
        return a * b;
    default:
        return a / b;
    }
}

static int64_t bin_i(Op op, int64_t a, int64_t b)
{
    switch (op) {
    case OP_ADD:
        return a + b;
    case OP_SUB:
        return a - b;
    case OP_MUL:
        return a * b;
    default:
        return a / b; /* C truncates toward zero, as ONNX's integer Div */
    }
}

static int op_binary(const Node *nd, const Tensor *a, const Tensor *b, Tensor *y, char *err,
                     size_t len)
{
    if (a->dt != b->dt)
        return fail(err, len, "%s: inputs of two types", OP_NAMES[nd->op]);
    int64_t da[4], sa[4], db[4], sb[4], dy[4];
    view4(a, da, sa);
    view4(b, db, sb);
    for (int i = 0; i < 4; i++) {
        if (da[i] != db[i] && da[i] != 1 && db[i] != 1)
            return fail(err, len, "%s: shapes do not broadcast", OP_NAMES[nd->op]);
        dy[i] = da[i] > db[i] ? da[i] : db[i];
        if (da[i] == 0 || db[i] == 0)
            dy[i] = 0;
    }
    int rank = a->rank > b->rank ? a->rank : b->rank;
    if (shape_to(y, a->dt, rank, dy + 4 - rank, err, len) != 0)
        return -1;
    if (a->dt == DT_I64 && nd->op == OP_DIV) {
        size_t nb = numel(b);
        for (size_t i = 0; i < nb; i++)
            if (ip(b)[i] == 0)
                return fail(err, len, "Div: integer division by zero");
    }
    size_t k = 0;
    for (int64_t i0 = 0; i0 < dy[0]; i0++)
        for (int64_t i1 = 0; i1 < dy[1]; i1++)
            for (int64_t i2 = 0; i2 < dy[2]; i2++) {
                int64_t oa = i0 * sa[0] + i1 * sa[1] + i2 * sa[2];
                int64_t ob = i0 * sb[0] + i1 * sb[1] + i2 * sb[2];
                if (a->dt == DT_F32) {
                    const float *pa = fp(a) + oa, *pb = fp(b) + ob;
                    float *py = fp(y) + k;
                    for (int64_t i3 = 0; i3 < dy[3]; i3++)
                        py[i3] = bin_f(nd->op, pa[i3 * sa[3]], pb[i3 * sb[3]]);
                } else {
                    const int64_t *pa = ip(a) + oa, *pb = ip(b) + ob;
                    int64_t *py = ip(y) + k;
                    for (int64_t i3 = 0; i3 < dy[3]; i3++)
                        py[i3] = bin_i(nd->op, pa[i3 * sa[3]], pb[i3 * sb[3]]);
                }
                k += (size_t)dy[3];
            }
    return 0;
}

static int op_unary(const Node *nd, const Tensor *x, Tensor *y, char *err, size_t len)
{
    if (x->dt != DT_F32)
        return fail(err, len, "%s: needs a float input", OP_NAMES[nd->op]);
    if (shape_to(y, DT_F32, x->rank, x->dims, err, len) != 0)
        return -1;
    size_t n = numel(x);
    const float *px = fp(x);
    float *py = fp(y);
    switch (nd->op) {
    case OP_RELU:
        for (size_t i = 0; i < n; i++)
            py[i] = px[i] > 0.0f ? px[i] : 0.0f;
        break;
    case OP_LOG:
        for (size_t i = 0; i < n; i++)
            py[i] = logf(px[i]);
        break;
    case OP_EXP:
        for (size_t i = 0; i < n; i++)
            py[i] = expf(px[i]);
        break;
    default: /* OP_SIGMOID */
        for (size_t i = 0; i < n; i++)
            py[i] = 1.0f / (1.0f + expf(-px[i]));
        break;
    }
    return 0;
}

static int op_cast(const Node *nd, const Tensor *x, Tensor *y, char *err, size_t len)
{
    if (shape_to(y, nd->to, x->rank, x->dims, err, len) != 0)
        return -1;
    size_t n = numel(x);
    for (size_t i = 0; i < n; i++) {
        if (x->dt == DT_F32 && nd->to == DT_F32)
            fp(y)[i] = fp(x)[i];
        else if (x->dt == DT_F32)
            ip(y)[i] = (int64_t)fp(x)[i]; /* ONNX truncates toward zero */
        else if (nd->to == DT_F32)
            fp(y)[i] = (float)ip(x)[i];
        else
            ip(y)[i] = ip(x)[i];
    }
    return 0;
}

/* Y = alpha op(A) op(B) + beta C, C broadcast to [M, N]; sgemm does the
 * product on top of the broadcast beta C. */
static int op_gemm(const Node *nd, const Tensor *a, const Tensor *b, const Tensor *c, Tensor *y,
                   char *err, size_t len)
{
    if (a->dt != DT_F32 || b->dt != DT_F32 || a->rank != 2 || b->rank != 2)
        return fail(err, len, "Gemm: needs two float matrices");
    int64_t m = nd->trans_a ? a->dims[1] : a->dims[0];
    int64_t k = nd->trans_a ? a->dims[0] : a->dims[1];
    int64_t kb = nd->trans_b ? b->dims[1] : b->dims[0];
    int64_t n = nd->trans_b ? b->dims[0] : b->dims[1];
    if (k != kb)
        return fail(err, len, "Gemm: inner dimensions %lld and %lld", (long long)k, (long long)kb);
    int64_t dims[2] = {m, n};
    if (shape_to(y, DT_F32, 2, dims, err, len) != 0)
        return -1;
    float beta = 0.0f;
    if (c != NULL) {
        int64_t dc[4], sc[4];
        view4(c, dc, sc);
        if (c->dt != DT_F32 || c->rank > 2 || (dc[2] != 1 && dc[2] != m) ||
            (dc[3] != 1 && dc[3] != n))
            return fail(err, len, "Gemm: C does not broadcast to [M, N]");
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                fp(y)[i * n + j] = nd->beta * fp(c)[i * sc[2] + j * sc[3]];
        beta = 1.0f;
    }
    if (m == 0 || n == 0)
        return 0;
    cblas_sgemm(CblasRowMajor, nd->trans_a ? CblasTrans : CblasNoTrans,
                nd->trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, nd->alpha, fp(a),
                (int)a->dims[1], fp(b), (int)b->dims[1], beta, fp(y), (int)n);
    return 0;
}

/* Inference form: y = (x - mean) / sqrt(var + epsilon) * scale + bias, per
 * channel (axis 1). */
static int op_batchnorm(const Node *nd, const Tensor *const *in, Tensor *y, char *err, size_t len)
{
    const Tensor *x = in[0];
    if (x->dt != DT_F32 || x->rank < 2)
        return fail(err, len, "BatchNormalization: needs a float input of rank >= 2");
    int64_t ch = x->dims[1];
    for (int i = 1; i < 5; i++)
        if (in[i]->dt != DT_F32 || (int64_t)numel(in[i]) != ch)
            return fail(err, len, "BatchNormalization: parameter %d is not [C]", i);
    if (shape_to(y, DT_F32, x->rank, x->dims, err, len) != 0)
        return -1;
    size_t inner = numel(x) / (size_t)(x->dims[0] * ch);
    const float *s = fp(in[1]), *bias = fp(in[2]), *mean = fp(in[3]), *var = fp(in[4]);
    size_t k = 0;
    for (int64_t i = 0; i < x->dims[0]; i++)
        for (int64_t c = 0; c < ch; c++) {
            float sd = sqrtf(var[c] + nd->epsilon);
            for (size_t j = 0; j < inner; j++, k++)
                fp(y)[k] = (fp(x)[k] - mean[c]) / sd * s[c] + bias[c];
        }
    return 0;
}

static int norm_axis(int64_t axis, int rank, int64_t *out)
{
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return -1;
    *out = axis;
    return 0;
}

static int op_gather(const Node *nd, const Tensor *x, const Tensor *idx, Tensor *y, char *err,
                     size_t len)
{
    int64_t axis;
    if (idx->dt != DT_I64 || norm_axis(nd->axis, x->rank, &axis) != 0)
        return fail(err, len, "Gather: bad axis or indices");
    int64_t dims[LCB_MAX_RANK];
    int rank = 0;
    if (x->rank - 1 + idx->rank > LCB_MAX_RANK)
        return fail(err, len, "Gather: output rank above %d", LCB_MAX_RANK);
    for (int i = 0; i < axis; i++)
        dims[rank++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++)
        dims[rank++] = idx->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++)
        dims[rank++] = x->dims[i];
    if (shape_to(y, x->dt, rank, dims, err, len) != 0)
        return -1;
    size_t outer = 1, inner = 1, ni = numel(idx);
    for (int i = 0; i < axis; i++)
        outer *= (size_t)x->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++)
        inner *= (size_t)x->dims[i];
    int64_t d = x->dims[axis];
    size_t es = x->dt == DT_F32 ? sizeof(float) : sizeof(int64_t);
    char *py = y->data;
    const char *px = x->data;
    for (size_t o = 0; o < outer; o++)
        for (size_t j = 0; j < ni; j++) {
            int64_t k = ip(idx)[j];
            if (k < 0)
                k += d;
            if (k < 0 || k >= d)
                return fail(err, len, "Gather: index %lld out of range 0 .. %lld",
                            (long long)ip(idx)[j], (long long)(d - 1));
            memcpy(py, px + ((o * (size_t)d + (size_t)k) * inner) * es, inner * es);
            py += inner * es;
        }
    return 0;
}

static int op_concat(const Node *nd, const Tensor *const *in, int n_in, Tensor *y, char *err,
                     size_t len)
{
    const Tensor *x0 = in[0];
    int64_t axis;
    if (norm_axis(nd->axis, x0->rank, &axis) != 0)
        return fail(err, len, "Concat: bad axis");
    int64_t dims[LCB_MAX_RANK];
    memcpy(dims, x0->dims, sizeof(dims));
    for (int i = 1; i < n_in; i++) {
        if (in[i]->dt != x0->dt || in[i]->rank != x0->rank)
            return fail(err, len, "Concat: inputs of two types or ranks");
        for (int j = 0; j < x0->rank; j++)
            if (j != axis && in[i]->dims[j] != x0->dims[j])
                return fail(err, len, "Concat: shapes differ off the axis");
        dims[axis] += in[i]->dims[axis];
    }
    if (shape_to(y, x0->dt, x0->rank, dims, err, len) != 0)
        return -1;
    size_t outer = 1, es = x0->dt == DT_F32 ? sizeof(float) : sizeof(int64_t);
    for (int i = 0; i < axis; i++)
        outer *= (size_t)dims[i];
    char *py = y->data;
    for (size_t o = 0; o < outer; o++)
        for (int i = 0; i < n_in; i++) {
            size_t chunk = outer ? numel(in[i]) / outer * es : 0;
            memcpy(py, (const char *)in[i]->data + o * chunk, chunk);
            py += chunk;
        }
    return 0;
}

static int copy_as(const Tensor *x, Tensor *y, int rank, const int64_t *dims, char *err, size_t len)
{
    if (shape_to(y, x->dt, rank, dims, err, len) != 0)
        return -1;
    memcpy(y->data, x->data, numel(x) * (x->dt == DT_F32 ? sizeof(float) : sizeof(int64_t)));
    return 0;
}

static int op_unsqueeze(const Node *nd, const Tensor *x, const Tensor *axes_t, Tensor *y, char *err,
                        size_t len)
{
    int64_t axes[LCB_MAX_RANK];
    int na = nd->n_axes;
    if (axes_t != NULL) {
        na = (int)numel(axes_t);
        if (axes_t->dt != DT_I64 || na > LCB_MAX_RANK)
            return fail(err, len, "Unsqueeze: bad axes");
        memcpy(axes, axes_t->data, sizeof(int64_t) * (size_t)na);
    } else {
        memcpy(axes, nd->axes, sizeof(int64_t) * (size_t)na);
    }
    int rank = x->rank + na;
    if (rank > LCB_MAX_RANK)
        return fail(err, len, "Unsqueeze: rank above %d", LCB_MAX_RANK);
    bool unit[LCB_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) {
        int64_t a;
        if (norm_axis(axes[i], rank, &a) != 0 || unit[a])
            return fail(err, len, "Unsqueeze: bad axis %lld", (long long)axes[i]);
        unit[a] = true;
    }
    int64_t dims[LCB_MAX_RANK];
    for (int i = 0, j = 0; i < rank; i++)
        dims[i] = unit[i] ? 1 : x->dims[j++];
    return copy_as(x, y, rank, dims, err, len);
}

static int op_shape(const Node *nd, const Tensor *x, Tensor *y, char *err, size_t len)
{
    int64_t s = nd->start < 0 ? nd->start + x->rank : nd->start;
    int64_t e = nd->end == INT64_MAX ? x->rank : nd->end < 0 ? nd->end + x->rank : nd->end;
    s = s < 0 ? 0 : s > x->rank ? x->rank : s;
    e = e < s ? s : e > x->rank ? x->rank : e;
    int64_t dims[1] = {e - s};
    if (shape_to(y, DT_I64, 1, dims, err, len) != 0)
        return -1;
    for (int64_t i = s; i < e; i++)
        ip(y)[i - s] = x->dims[i];
    return 0;
}

/* Slice with ONNX's clamping: a start or end past either end is pulled in
 * to the last element the step can reach. */
static int op_slice(const Tensor *const *in, int n_in, Tensor *y, char *err, size_t len)
{
    const Tensor *x = in[0];
    int64_t start[LCB_MAX_RANK] = {0}, step[LCB_MAX_RANK], dims[LCB_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        step[i] = 1;
        dims[i] = x->dims[i];
    }
    size_t ns = numel(in[1]);
    for (int i = 1; i < n_in; i++)
        if (in[i] != NULL && (in[i]->dt != DT_I64 || numel(in[i]) != ns))
            return fail(err, len, "Slice: starts, ends, axes, steps differ in length");
    for (size_t k = 0; k < ns; k++) {
        int64_t a = (int64_t)k;
        if (n_in > 3 && in[3] != NULL && norm_axis(ip(in[3])[k], x->rank, &a) != 0)
            return fail(err, len, "Slice: bad axis");
        int64_t st = n_in > 4 && in[4] != NULL ? ip(in[4])[k] : 1;
        if (st == 0)
            return fail(err, len, "Slice: step 0");
        int64_t d = x->dims[a], s = ip(in[1])[k], e = ip(in[2])[k];
        s = s < 0 ? s + d : s;
        e = e < 0 ? e + d : e;
        int64_t cnt;
        if (st > 0) {
            s = s < 0 ? 0 : s > d ? d : s;
            e = e < 0 ? 0 : e > d ? d : e;
            cnt = e > s ? (e - s + st - 1) / st : 0;
        } else {
            s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
            cnt = s > e ? (s - e - st - 1) / -st : 0;
        }
        start[a] = s;
        step[a] = st;
        dims[a] = cnt;
    }
    if (shape_to(y, x->dt, x->rank, dims, err, len) != 0)
        return -1;
    /* the source's element strides, right-aligned in four dimensions */
    int pad = 4 - x->rank;
    int64_t d4[4], s4[4], o4[4], stride = 1;
    for (int i = 3; i >= 0; i--) {
        bool real = i >= pad;
        d4[i] = real ? dims[i - pad] : 1;
        s4[i] = real ? stride * step[i - pad] : 0;
        o4[i] = real ? stride * start[i - pad] : 0;
        stride *= real ? x->dims[i - pad] : 1;
    }
    int64_t base = o4[0] + o4[1] + o4[2] + o4[3];
    size_t k = 0;
    for (int64_t i0 = 0; i0 < d4[0]; i0++)
        for (int64_t i1 = 0; i1 < d4[1]; i1++)
            for (int64_t i2 = 0; i2 < d4[2]; i2++)
                for (int64_t i3 = 0; i3 < d4[3]; i3++, k++) {
                    int64_t src = base + i0 * s4[0] + i1 * s4[1] + i2 * s4[2] + i3 * s4[3];
                    if (x->dt == DT_F32)
                        fp(y)[k] = fp(x)[src];
                    else
                        ip(y)[k] = ip(x)[src];
                }
    return 0;
}

static int run_node(LcbGraph *g, const Node *nd, char *err, size_t len)
{
    const Tensor *in[LCB_MAX_IN];
    for (int i = 0; i < nd->n_in; i++)
        in[i] = nd->in[i] < 0 ? NULL : &g->vals[nd->in[i]];
    Tensor *y = &g->vals[nd->out];
    switch (nd->op) {
    case OP_GEMM:
        return op_gemm(nd, in[0], in[1], nd->n_in > 2 ? in[2] : NULL, y, err, len);
    case OP_BATCHNORM:
        return op_batchnorm(nd, in, y, err, len);
    case OP_RELU:
    case OP_LOG:
    case OP_EXP:
    case OP_SIGMOID:
        return op_unary(nd, in[0], y, err, len);
    case OP_GATHER:
        return op_gather(nd, in[0], in[1], y, err, len);
    case OP_CONCAT:
        return op_concat(nd, in, nd->n_in, y, err, len);
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
        return op_binary(nd, in[0], in[1], y, err, len);
    case OP_CAST:
        return op_cast(nd, in[0], y, err, len);
    case OP_UNSQUEEZE:
        return op_unsqueeze(nd, in[0], nd->n_in > 1 ? in[1] : NULL, y, err, len);
    case OP_SHAPE:
        return op_shape(nd, in[0], y, err, len);
    case OP_SLICE:
        return op_slice(in, nd->n_in, y, err, len);
    default: /* OP_CONSTANT: its value was set at load */
        return 0;
    }
}

/* ---- loading ---- */

static int value_id(LcbGraph *g, const char *name, char *err, size_t len)
{
    if (name == NULL)
        return fail(err, len, "a value's name is not a string");
    for (int i = 0; i < g->n_values; i++)
        if (strcmp(g->names[i], name) == 0)
            return i;
    if (g->n_values == LCB_MAX_VALUES)
        return fail(err, len, "more than %d values", LCB_MAX_VALUES);
    g->names[g->n_values] = strdup(name);
    if (g->names[g->n_values] == NULL)
        return fail(err, len, "out of memory");
    return g->n_values++;
}

static int parse_dtype(const char *s, Dtype *dt)
{
    if (strcmp(s, "float32") == 0)
        *dt = DT_F32;
    else if (strcmp(s, "int64") == 0 || strcmp(s, "int32") == 0)
        *dt = DT_I64;
    else
        return -1;
    return 0;
}

static int parse_shape(const json_t *shape, int *rank, int64_t *dims)
{
    if (!json_is_array(shape) || json_array_size(shape) > LCB_MAX_RANK)
        return -1;
    *rank = (int)json_array_size(shape);
    for (int i = 0; i < *rank; i++) {
        json_t *d = json_array_get(shape, (size_t)i);
        if (!json_is_integer(d) || json_integer_value(d) < 0)
            return -1;
        dims[i] = json_integer_value(d);
    }
    return 0;
}

/* A Constant's inline value: {"dtype", "shape", "data": [...]}. */
static int load_constant(Tensor *t, const json_t *v, char *err, size_t len)
{
    Dtype dt;
    int rank;
    int64_t dims[LCB_MAX_RANK];
    json_t *data = json_object_get(v, "data");
    if (!json_is_string(json_object_get(v, "dtype")) ||
        parse_dtype(json_string_value(json_object_get(v, "dtype")), &dt) != 0 ||
        parse_shape(json_object_get(v, "shape"), &rank, dims) != 0 || !json_is_array(data))
        return fail(err, len, "a Constant's value: needs dtype (float32/int32/int64), shape, data");
    if (shape_to(t, dt, rank, dims, err, len) != 0)
        return -1;
    if (json_array_size(data) != numel(t))
        return fail(err, len, "a Constant's value: %zu numbers for %zu elements",
                    json_array_size(data), numel(t));
    for (size_t i = 0; i < numel(t); i++) {
        json_t *x = json_array_get(data, i);
        if (!json_is_number(x))
            return fail(err, len, "a Constant's value: not a number");
        if (dt == DT_F32)
            fp(t)[i] = (float)json_number_value(x); /* the exporter wrote float32s exactly */
        else
            ip(t)[i] = json_is_integer(x) ? json_integer_value(x) : (int64_t)json_number_value(x);
    }
    t->fixed = true;
    return 0;
}

static json_int_t attr_int(const json_t *attrs, const char *key, json_int_t dflt)
{
    json_t *v = json_object_get(attrs, key);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static float attr_float(const json_t *attrs, const char *key, float dflt)
{
    json_t *v = json_object_get(attrs, key);
    return json_is_number(v) ? (float)json_number_value(v) : dflt;
}

static int load_node(LcbGraph *g, const json_t *jn, int k, char *err, size_t len)
{
    Node *nd = &g->nodes[k];
    const char *op = json_string_value(json_object_get(jn, "op"));
    json_t *ins = json_object_get(jn, "inputs"), *outs = json_object_get(jn, "outputs");
    json_t *attrs = json_object_get(jn, "attrs");
    if (op == NULL || !json_is_array(ins) || !json_is_array(outs) || !json_is_object(attrs))
        return fail(err, len, "nodes[%d]: needs op, inputs, outputs, attrs", k);
    int o;
    for (o = 0; o < OP_COUNT && strcmp(OP_NAMES[o], op) != 0; o++)
        ;
    if (o == OP_COUNT)
        return fail(err, len, "nodes[%d]: operator %s is not one this evaluator has", k, op);
    nd->op = (Op)o;
    if (json_array_size(ins) > LCB_MAX_IN)
        return fail(err, len, "nodes[%d] (%s): more than %d inputs", k, op, LCB_MAX_IN);
    nd->n_in = (int)json_array_size(ins);
    for (int i = 0; i < nd->n_in; i++) {
        const char *name = json_string_value(json_array_get(ins, (size_t)i));
        if (name == NULL)
            return fail(err, len, "nodes[%d] (%s): an input is not a name", k, op);
        nd->in[i] = name[0] ? value_id(g, name, err, len) : -1;
        if (name[0] && nd->in[i] < 0)
            return -1;
        if (name[0] && !g->vals[nd->in[i]].set)
            return fail(err, len, "nodes[%d] (%s): input %s is set by no earlier node", k, op,
                        name);
    }
    /* every operator here has one output (BatchNormalization in its
     * inference form); further ones must be left out ("") */
    const char *out = json_string_value(json_array_get(outs, 0));
    for (size_t i = 1; i < json_array_size(outs); i++) {
        const char *extra = json_string_value(json_array_get(outs, i));
        if (extra == NULL || extra[0])
            return fail(err, len, "nodes[%d] (%s): a second output is not supported", k, op);
    }
    if (out == NULL || !out[0])
        return fail(err, len, "nodes[%d] (%s): no output", k, op);
    nd->out = value_id(g, out, err, len);
    if (nd->out < 0)
        return -1;
    if (g->vals[nd->out].set)
        return fail(err, len, "nodes[%d] (%s): writes %s, set already", k, op, out);
    g->vals[nd->out].set = true;
    static const int min_in[OP_COUNT] = {
        [OP_GEMM] = 2,  [OP_BATCHNORM] = 5, [OP_RELU] = 1, [OP_GATHER] = 2,    [OP_CONCAT] = 1,
        [OP_ADD] = 2,   [OP_SUB] = 2,       [OP_MUL] = 2,  [OP_DIV] = 2,       [OP_LOG] = 1,
        [OP_EXP] = 1,   [OP_SIGMOID] = 1,   [OP_CAST] = 1, [OP_UNSQUEEZE] = 1, [OP_SHAPE] = 1,
        [OP_SLICE] = 3, [OP_CONSTANT] = 0};
    if (nd->n_in < min_in[o])
        return fail(err, len, "nodes[%d] (%s): %d inputs, needs %d", k, op, nd->n_in, min_in[o]);
    for (int i = 0; i < min_in[o]; i++)
        if (nd->in[i] < 0)
            return fail(err, len, "nodes[%d] (%s): input %d left out", k, op, i);
    nd->axis = attr_int(attrs, "axis", nd->op == OP_CONCAT ? INT64_MIN : 0);
    if (nd->op == OP_CONCAT && nd->axis == INT64_MIN)
        return fail(err, len, "nodes[%d] (Concat): needs axis", k);
    nd->trans_a = (int)attr_int(attrs, "transA", 0);
    nd->trans_b = (int)attr_int(attrs, "transB", 0);
    nd->alpha = attr_float(attrs, "alpha", 1.0f);
    nd->beta = attr_float(attrs, "beta", 1.0f);
    nd->epsilon = attr_float(attrs, "epsilon", 1e-5f);
    nd->start = attr_int(attrs, "start", 0);
    nd->end = attr_int(attrs, "end", INT64_MAX);
    if (nd->op == OP_BATCHNORM && attr_int(attrs, "training_mode", 0) != 0)
        return fail(err, len, "nodes[%d] (BatchNormalization): training_mode not supported", k);
    if (nd->op == OP_CAST) {
        json_int_t to = attr_int(attrs, "to", -1);
        if (to != 1 && to != 6 && to != 7) /* float, int32, int64 */
            return fail(err, len, "nodes[%d] (Cast): to=%lld not supported (1, 6, 7 are)", k,
                        (long long)to);
        nd->to = to == 1 ? DT_F32 : DT_I64;
    }
    json_t *axes = json_object_get(attrs, "axes");
    if (nd->op == OP_UNSQUEEZE && nd->n_in < 2) {
        if (!json_is_array(axes) || json_array_size(axes) > LCB_MAX_RANK)
            return fail(err, len, "nodes[%d] (Unsqueeze): needs axes", k);
        nd->n_axes = (int)json_array_size(axes);
        for (int i = 0; i < nd->n_axes; i++)
            nd->axes[i] = json_integer_value(json_array_get(axes, (size_t)i));
    }
    if (nd->op == OP_CONSTANT) {
        json_t *v = json_object_get(attrs, "value");
        if (!json_is_object(v))
            return fail(err, len, "nodes[%d] (Constant): needs a tensor value", k);
        if (load_constant(&g->vals[nd->out], v, err, len) != 0)
            return -1;
    }
    return 0;
}

static int load_initializers(LcbGraph *g, const json_t *root, const char *dir, char *err,
                             size_t len)
{
    const char *blob_name = json_string_value(json_object_get(root, "blob"));
    json_t *inits = json_object_get(root, "initializers");
    if (blob_name == NULL || strchr(blob_name, '/') != NULL || !json_is_array(inits))
        return fail(err, len, "needs blob (a file name beside it) and initializers");
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, blob_name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return fail(err, len, "%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size < 0 || (unsigned long)size > LCB_BLOB_MAX) {
        fclose(f);
        return fail(err, len, "%s: size %ld not in 0 .. %u", path, size, LCB_BLOB_MAX);
    }
    unsigned char *blob = malloc((size_t)size + 1);
    size_t got = blob ? fread(blob, 1, (size_t)size, f) : 0;
    fclose(f);
    if (blob == NULL || got != (size_t)size) {
        free(blob);
        return fail(err, len, "%s: cannot read", path);
    }
    int rc = 0;
    for (size_t i = 0; i < json_array_size(inits) && rc == 0; i++) {
        json_t *t = json_array_get(inits, i);
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *dts = json_string_value(json_object_get(t, "dtype"));
        json_t *off = json_object_get(t, "offset");
        Dtype dt;
        int rank;
        int64_t dims[LCB_MAX_RANK];
        if (name == NULL || dts == NULL || parse_dtype(dts, &dt) != 0 || !json_is_integer(off) ||
            parse_shape(json_object_get(t, "shape"), &rank, dims) != 0) {
            rc = fail(err, len, "initializers[%zu]: needs name, dtype, shape, offset", i);
            break;
        }
        int id = value_id(g, name, err, len);
        if (id < 0 || shape_to(&g->vals[id], dt, rank, dims, err, len) != 0) {
            rc = -1;
            break;
        }
        Tensor *v = &g->vals[id];
        size_t n = numel(v), es = strcmp(dts, "int32") == 0 ? 4 : dt == DT_F32 ? 4 : 8;
        json_int_t o = json_integer_value(off);
        if (o < 0 || (size_t)o + n * es > (size_t)size) {
            rc = fail(err, len, "initializers[%zu] (%s): past the blob's end", i, name);
            break;
        }
        /* little-endian, as the exporter writes it, byte by byte so that
         * the host's order does not matter */
        const unsigned char *p = blob + o;
        for (size_t j = 0; j < n; j++, p += es) {
            uint64_t u = 0;
            for (size_t b = 0; b < es; b++)
                u |= (uint64_t)p[b] << (8 * b);
            if (dt == DT_F32) {
                uint32_t w = (uint32_t)u;
                memcpy(&fp(v)[j], &w, 4);
            } else if (es == 4) {
                ip(v)[j] = (int32_t)(uint32_t)u;
            } else {
                ip(v)[j] = (int64_t)u;
            }
        }
        v->fixed = v->set = true;
    }
    free(blob);
    return rc;
}

LcbGraph *lcb_load(const char *dir, char *err, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/lcbench_graph.json", dir);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (root == NULL) {
        fail(err, len, "%s: %s (bench/lcbench_export.py export writes it)", path, jerr.text);
        return NULL;
    }
    LcbGraph *g = calloc(1, sizeof(*g));
    json_t *nodes = json_object_get(root, "nodes");
    json_t *ins = json_object_get(root, "inputs"), *outs = json_object_get(root, "outputs");
    json_t *cols = json_object_get(root, "output_columns");
    if (g == NULL) {
        fail(err, len, "out of memory");
        goto bad;
    }
    if (!json_is_string(json_object_get(root, "format")) ||
        strcmp(json_string_value(json_object_get(root, "format")), "rung-onnx-graph") != 0 ||
        attr_int(root, "version", 0) != 1) {
        fail(err, len, "%s: not a rung-onnx-graph version 1 file", path);
        goto bad;
    }
    if (!json_is_array(nodes) || json_array_size(ins) != 2 || json_array_size(outs) != 1 ||
        json_array_size(cols) != LCB_OUTPUTS) {
        fail(err, len, "%s: needs nodes, 2 inputs, 1 output of %d columns", path, LCB_OUTPUTS);
        goto bad;
    }
    for (int j = 0; j < LCB_OUTPUTS; j++) {
        const char *c = json_string_value(json_array_get(cols, (size_t)j));
        g->columns[j] = strdup(c ? c : "?");
    }
    if (load_initializers(g, root, dir, err, len) != 0)
        goto bad;
    g->n_nodes = (int)json_array_size(nodes);
    g->nodes = calloc((size_t)g->n_nodes + 1, sizeof(Node));
    if (g->nodes == NULL) {
        fail(err, len, "out of memory");
        goto bad;
    }
    g->in_cat = value_id(g, json_string_value(json_object_get(json_array_get(ins, 0), "name")), err,
                         len);
    g->in_cont = value_id(g, json_string_value(json_object_get(json_array_get(ins, 1), "name")),
                          err, len);
    if (g->in_cat < 0 || g->in_cont < 0)
        goto bad;
    g->vals[g->in_cat].set = g->vals[g->in_cont].set = true;
    for (int k = 0; k < g->n_nodes; k++)
        if (load_node(g, json_array_get(nodes, (size_t)k), k, err, len) != 0)
            goto bad;
    g->output = value_id(g, json_string_value(json_object_get(json_array_get(outs, 0), "name")),
                         err, len);
    if (g->output < 0)
        goto bad;
    if (!g->vals[g->output].set) {
        fail(err, len, "%s: no node writes the output", path);
        goto bad;
    }
    g->tasks = json_incref(json_object_get(root, "tasks"));
    json_decref(root);
    return g;
bad:
    json_decref(root);
    lcb_free(g);
    return NULL;
}

void lcb_free(LcbGraph *g)
{
    if (g == NULL)
        return;
    for (int i = 0; i < g->n_values; i++) {
        free(g->names[i]);
        free(g->vals[i].data);
    }
    for (int j = 0; j < LCB_OUTPUTS; j++)
        free(g->columns[j]);
    json_decref(g->tasks);
    free(g->nodes);
    free(g);
}

int lcb_task_index(const LcbGraph *g, const char *task)
{
    json_t *v = json_object_get(g->tasks, task);
    return json_is_integer(v) ? (int)json_integer_value(v) : -1;
}

const char *lcb_output_name(const LcbGraph *g, int j)
{
    return j >= 0 && j < LCB_OUTPUTS && g->columns[j] ? g->columns[j] : "?";
}

int lcb_eval(LcbGraph *g, int n, const int32_t *x_cat, const float *x_cont, float *out, char *err,
             size_t len)
{
    if (n < 1 || n > LCB_MAX_ROWS)
        return fail(err, len, "rows: %d not in 1 .. %d", n, LCB_MAX_ROWS);
    int64_t dcat[2] = {n, 1}, dcont[2] = {n, LCB_X_CONT};
    Tensor *cat = &g->vals[g->in_cat], *cont = &g->vals[g->in_cont];
    if (shape_to(cat, DT_I64, 2, dcat, err, len) != 0 ||
        shape_to(cont, DT_F32, 2, dcont, err, len) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        ip(cat)[i] = x_cat[i];
    memcpy(cont->data, x_cont, sizeof(float) * (size_t)n * LCB_X_CONT);
    for (int k = 0; k < g->n_nodes; k++) {
        char msg[256];
        if (run_node(g, &g->nodes[k], msg, sizeof(msg)) != 0)
            return fail(err, len, "node %d (%s): %s", k, OP_NAMES[g->nodes[k].op], msg);
    }
    const Tensor *y = &g->vals[g->output];
    if (y->dt != DT_F32 || y->rank != 2 || y->dims[0] != n || y->dims[1] != LCB_OUTPUTS)
        return fail(err, len, "the output is not [%d, %d]", n, LCB_OUTPUTS);
    memcpy(out, y->data, sizeof(float) * (size_t)n * LCB_OUTPUTS);
    return 0;
}
