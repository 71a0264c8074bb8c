/* rung-train: the built-in trainer, run by rung-worker for a trainable
 * {"type": "builtin", "model": "mlp", "dataset": "fashion-mnist"}.
 *
 *   rung-train [--config JSON | --config-file F] [--ranks K] [--threads T]
 *
 * (the config from RUNG_CONFIG when neither is given; --ranks and --threads
 * override the config's "ranks", CPU data-parallel ranks, and "threads",
 * threads per rank: OpenBLAS's and its pool's). `rung-train --help` lists the options and the
 * config's keys.
 *
 * The config holds the trial's hyperparameters (docs/trainer.md, "The
 * config"): its keys are the table FIELDS below, from which their parsing,
 * their errors, their defaults and --help all come. A dotted key (the flat
 * configs of nested and conditional spaces) sets the field of its last
 * segment, and hidden_1 ... hidden_N give per-layer widths (parse_config).
 * RUNG_TRAINABLE holds the trainable's model and dataset. It prints one `@rung` line per epoch,
 * checkpoints into RUNG_TRIAL_DIR (keeping multiples of RUNG_KEEP_CHECKPOINTS_EVERY for pbt),
 * and resumes from RUNG_RESUME_STEP. On SIGTERM it finishes the
 * step in progress and exits with status 143.
 *
 * Once the command line is read, it makes sure OpenBLAS runs the best kernel
 * the CPU has (blas.h): OpenBLAS reads OPENBLAS_CORETYPE only when it is loaded, so
 * the program re-executes itself once with the variable set.
 *
 * A member of a multi-node gang (RUNG_NNODES > 1, set by rung-worker with
 * RUNG_NODE_RANK, MASTER_ADDR and MASTER_PORT; docs/trainer.md, "Multi-node
 * training") loads its data, joins the other nodes' processes at
 * MASTER_ADDR:MASTER_PORT (node 0 listens there and hands out the NCCL
 * unique id), checks with them that all train the same thing, and trains
 * its share; only node 0 prints @rung lines and writes checkpoints. */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas.h"
#include "blascore.h"
#include "checkpoint.h"
#include "nonfinite.h"
#include "data.h"
#include "options.h"
#include "train.h"

#define PICKED_ENV "RUNG_TRAIN_CORE_PICKED" /* set on the re-executed process */
/* OpenBLAS's idle threads spin (sched_yield) for 2^28 cycles, about 0.1 s,
 * before they sleep: between a step's GEMMs they would hold the cores the
 * rank's pool (pool.h) gathers the batch and updates the weights on. 2^16
 * cycles (tens of microseconds) keeps them awake from one GEMM of a layer
 * to the next, not through the pool's work (docs/trainer.md, "Threads"). */
#define BLAS_THREAD_TIMEOUT "16"
/* The longest rendezvous wait RUNG_RDZV_TIMEOUT_S may ask for: an hour. */
#define RDZV_TIMEOUT_MAX_S 3600.0

static void on_term(int sig)
{
    (void)sig;
    train_stop_requested = 1;
    train_gpu_stop(); /* the CUDA module's own flag */
}

/* Says why rung-train cannot run (a why buffer filled by the callee:
 * common/why.h) on stderr; returns the exit status of a bad setup. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rung-train: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 2;
}

/* ---- the config ---- */

/* What a field's JSON value may be. */
typedef enum {
    F_REAL,   /* a number in [lo, hi] (or [lo, hi)) */
    F_INT,    /* an integer in [min, max]: a JSON integer, or a real with an integral value */
    F_BOOL,   /* true or false (or the integers 1 and 0) */
    F_CHOICE, /* one of the strings in words; stored as its index */
    F_WIDTHS, /* hidden: one width in [min, max], or a list of at most TRAIN_MAX_LAYERS */
} FieldKind;

/* The config's keys: indices into FIELDS, in docs/trainer.md's order. */
enum {
    C_HIDDEN,
    C_LAYERS,
    C_DROPOUT,
    C_OPTIMIZER,
    C_LR,
    C_MOMENTUM,
    C_NESTEROV,
    C_BETA1,
    C_BETA2,
    C_EPS,
    C_WEIGHT_DECAY,
    C_BATCH_SIZE,
    C_MAX_BATCH_SIZE,
    C_EPOCHS,
    C_WARMUP_EPOCHS,
    C_SEED,
    C_PRECISION,
    C_TRAIN_SAMPLES,
    C_VAL_SAMPLES,
    C_RANKS,
    C_THREADS,
    C__COUNT
};

/* Where the value goes: the C type of the member at offset. */
typedef enum { S_FLOAT, S_DOUBLE, S_INT, S_INT64, S_UINT64, S_BOOL, S_ENUM, S_NONE } FieldStore;

/* The config under construction: the TrainConfig, plus what only the
 * checks across fields need (layers and hidden go together). */
typedef struct Parsed {
    TrainConfig cfg;
    int64_t layers;       /* -1 when not given */
    bool one_width;       /* hidden was one number: cfg.hidden[0], to repeat layers times */
    bool given[C__COUNT]; /* by field: the config names it */
    /* The config's key of each field (`opt.momentum` for momentum), which
     * the errors name; NULL when not given. */
    const char *name[C__COUNT];
    /* Per-layer widths (`hidden_1` ... `hidden_<TRAIN_MAX_LAYERS>`, maybe
     * dotted): layer l's key, NULL when not given, and its width. */
    const char *layer_name[TRAIN_MAX_LAYERS];
    int layer_width[TRAIN_MAX_LAYERS];
} Parsed;

/* One setting of the config: its key, what it accepts, where it goes, its
 * default and its help. Parsing, the messages of a wrong value (which name
 * config.<key> and say what it must be), the defaults and --help all come
 * from this one table, so they cannot disagree; docs/trainer.md ("The
 * config") documents the same keys, which ctest's train_help checks. */
typedef struct ConfigField {
    const char *key;
    FieldKind kind;
    FieldStore store;
    size_t offset;            /* of the member in Parsed */
    double lo, hi;            /* F_REAL */
    bool hi_open;             /* F_REAL: hi itself is refused */
    long long min, max;       /* F_INT, F_WIDTHS */
    const char *zero_word;    /* F_INT: a string that stands for 0 ("auto") */
    const char *const *words; /* F_CHOICE: the strings, NULL-terminated */
    /* The default as JSON text, read by the same parser as a given value
     * (so it obeys the bounds, and --help prints it as written). NULL: the
     * absence means something of its own, stored as `unset` and described
     * in words by `absent`. */
    const char *dflt;
    long long unset;
    const char *absent;
    const char *help;
} ConfigField;

static const char *const OPTIMIZERS[] = {[TRAIN_SGD] = "sgd", [TRAIN_ADAMW] = "adamw", NULL};
static const char *const PRECISIONS[] = {[TRAIN_FP32] = "fp32", [TRAIN_BF16] = "bf16", NULL};

#define AT(member) offsetof(Parsed, member)

/* Laid out by hand, a row per key: clang-format would put every member of
 * a row on a line of its own. */
/* clang-format off */
static const ConfigField FIELDS[C__COUNT] = {
    [C_HIDDEN] = {
        .key = "hidden", .kind = F_WIDTHS, .store = S_NONE,
        .min = 1, .max = TRAIN_MAX_WIDTH, .dflt = "[512, 256]",
        .help = "hidden-layer widths: a list (it may be empty), or one width for every layer"},
    [C_LAYERS] = {
        .key = "layers", .kind = F_INT, .store = S_INT64, .offset = AT(layers),
        .min = 0, .max = TRAIN_MAX_LAYERS, .unset = -1, .absent = "1 with one width in hidden",
        .help = "how many hidden layers of hidden's one width (256 when hidden is not given)"},
    [C_DROPOUT] = {
        .key = "dropout", .kind = F_REAL, .store = S_FLOAT, .offset = AT(cfg.dropout),
        .lo = 0, .hi = 1, .hi_open = true, .dflt = "0",
        .help = "dropout after each hidden ReLU"},
    [C_OPTIMIZER] = {
        .key = "optimizer", .kind = F_CHOICE, .store = S_ENUM, .offset = AT(cfg.optimizer),
        .words = OPTIMIZERS, .dflt = "\"sgd\"",
        .help = "sgd (with momentum, PyTorch's update) or adamw"},
    [C_LR] = {
        .key = "lr", .kind = F_REAL, .store = S_FLOAT, .offset = AT(cfg.lr),
        .lo = 0, .hi = 1e3, .dflt = "0.05",
        .help = "peak learning rate: linear warmup over warmup_epochs, then cosine to 0"},
    [C_MOMENTUM] = {
        .key = "momentum", .kind = F_REAL, .store = S_FLOAT, .offset = AT(cfg.momentum),
        .lo = 0, .hi = 1, .hi_open = true, .dflt = "0.9",
        .help = "SGD's momentum"},
    [C_NESTEROV] = {
        .key = "nesterov", .kind = F_BOOL, .store = S_BOOL, .offset = AT(cfg.nesterov),
        .dflt = "false",
        .help = "SGD with Nesterov momentum"},
    [C_BETA1] = {
        .key = "beta1", .kind = F_REAL, .store = S_FLOAT, .offset = AT(cfg.beta1),
        .lo = 0, .hi = 1, .hi_open = true, .dflt = "0.9",
        .help = "AdamW's first-moment decay"},
    [C_BETA2] = {
        .key = "beta2", .kind = F_REAL, .store = S_FLOAT, .offset = AT(cfg.beta2),
        .lo = 0, .hi = 1, .hi_open = true, .dflt = "0.999",
        .help = "AdamW's second-moment decay"},
    [C_EPS] = {
        .key = "eps", .kind = F_REAL, .store = S_FLOAT, .offset = AT(cfg.eps),
        .lo = 1e-30, .hi = 1, .dflt = "1e-8",
        .help = "AdamW's epsilon"},
    [C_WEIGHT_DECAY] = {
        .key = "weight_decay", .kind = F_REAL, .store = S_FLOAT, .offset = AT(cfg.weight_decay),
        .lo = 0, .hi = 10, .dflt = "0",
        .help = "added to the gradient (SGD) or decoupled (AdamW)"},
    [C_BATCH_SIZE] = {
        .key = "batch_size", .kind = F_INT, .store = S_INT64, .offset = AT(cfg.batch_size),
        .min = 1, .max = 1 << 24, .zero_word = "auto", .dflt = "256",
        .help = "the global batch, split over ranks; \"auto\": the largest power of two up to "
                "max_batch_size that fits a GPU (256 on the CPU)"},
    [C_MAX_BATCH_SIZE] = { /* "1024": TRAIN_AUTO_BATCH_CAP */
        .key = "max_batch_size", .kind = F_INT, .store = S_INT64, .offset = AT(cfg.max_batch_size),
        .min = 1, .max = 1 << 24, .dflt = "1024",
        .help = "the largest batch that batch_size \"auto\" picks"},
    [C_EPOCHS] = {
        .key = "epochs", .kind = F_INT, .store = S_INT64, .offset = AT(cfg.epochs),
        .min = 1, .max = 100000, .dflt = "10",
        .help = "one report per epoch (step = epoch)"},
    [C_WARMUP_EPOCHS] = {
        .key = "warmup_epochs", .kind = F_REAL, .store = S_DOUBLE, .offset = AT(cfg.warmup_epochs),
        .lo = 0, .hi = 1e6, .dflt = "0",
        .help = "the learning rate's warmup; may be fractional"},
    [C_SEED] = {
        .key = "seed", .kind = F_INT, .store = S_UINT64, .offset = AT(cfg.seed),
        .min = 0, .max = INT64_MAX, .dflt = "0",
        .help = "weights, data order, dropout and the validation split"},
    [C_PRECISION] = {
        .key = "precision", .kind = F_CHOICE, .store = S_ENUM, .offset = AT(cfg.precision),
        .words = PRECISIONS, .dflt = "\"fp32\"",
        .help = "bf16: bf16 GEMM inputs with fp32 accumulation (GPU)"},
    [C_TRAIN_SAMPLES] = {
        .key = "train_samples", .kind = F_INT, .store = S_INT64, .offset = AT(cfg.train_samples),
        .min = 0, .max = INT64_MAX / 2, .unset = 0, .absent = "all",
        .help = "use only the first N training samples (0: all)"},
    [C_VAL_SAMPLES] = {
        .key = "val_samples", .kind = F_INT, .store = S_INT64, .offset = AT(cfg.val_samples),
        .min = 0, .max = INT64_MAX / 2, .unset = -1,
        .absent = "5000 (10% below 50,000 training samples)",
        .help = "held out of the training set; 0: report the test set's loss and accuracy as "
                "val_*"},
    [C_RANKS] = {
        .key = "ranks", .kind = F_INT, .store = S_INT, .offset = AT(cfg.ranks),
        .min = 1, .max = TRAIN_MAX_RANKS, .dflt = "1",
        .help = "CPU data-parallel ranks (threads); on GPUs, one rank per GPU (--gpus)"},
    [C_THREADS] = {
        .key = "threads", .kind = F_INT, .store = S_INT, .offset = AT(cfg.threads),
        .min = 0, .max = 1024, .dflt = "1",
        .help = "threads per rank, for OpenBLAS and between the GEMMs (0 counts as 1)"},
};
/* clang-format on */
#define N_FIELDS ((size_t)C__COUNT)

_Static_assert(sizeof(TrainOptimizer) == sizeof(int) && sizeof(TrainPrecision) == sizeof(int),
               "S_ENUM members are stored as int");

/* What a value of f must be, after "must be " in an error and in --help:
 * "a number in [0, 1)", "an integer in [1, 64]", "\"sgd\" or \"adamw\"". */
static void describe(const ConfigField *f, char *buf, size_t size)
{
    size_t n = 0;
    switch (f->kind) {
    case F_REAL:
        snprintf(buf, size, "a number in [%g, %g%s", f->lo, f->hi, f->hi_open ? ")" : "]");
        return;
    case F_INT:
        snprintf(buf, size, "an integer in [%lld, %lld]%s%s%s", f->min, f->max,
                 f->zero_word ? " or \"" : "", f->zero_word ? f->zero_word : "",
                 f->zero_word ? "\"" : "");
        return;
    case F_BOOL:
        snprintf(buf, size, "true or false");
        return;
    case F_WIDTHS:
        snprintf(buf, size, "an integer in [%lld, %lld], or a list of at most %d of them", f->min,
                 f->max, TRAIN_MAX_LAYERS);
        return;
    case F_CHOICE:
        buf[0] = '\0';
        for (int i = 0; f->words[i] != NULL && n < size; i++) {
            const char *sep = i == 0 ? "" : f->words[i + 1] == NULL ? " or " : ", ";
            n += (size_t)snprintf(buf + n, size - n, "%s\"%s\"", sep, f->words[i]);
        }
        return;
    }
}

/* name: the config's key for f (f->key, or a dotted key ending in it). */
static int wrong(const ConfigField *f, const char *name, char *why, size_t size)
{
    char what[128];
    describe(f, what, sizeof what);
    snprintf(why, size, "config.%s: must be %s", name, what);
    return -1;
}

/* An integer in [min, max]: a JSON integer, or a real with an integral value
 * (samplers of integer parameters may send 3.0). */
static bool read_int(const json_t *v, long long min, long long max, long long *out)
{
    long long i;
    if (json_is_integer(v)) {
        i = json_integer_value(v);
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        /* 0x1p63 is the first double past INT64_MAX: converting it or more
         * would be undefined. */
        if (!(d == floor(d) && d >= -0x1p63 && d < 0x1p63))
            return false;
        i = (long long)d;
    } else {
        return false;
    }
    if (i < min || i > max)
        return false;
    *out = i;
    return true;
}

static void store(const ConfigField *f, Parsed *p, double d, long long i)
{
    char *at = (char *)p + f->offset;
    switch (f->store) {
    case S_FLOAT:
        *(float *)at = (float)d;
        break;
    case S_DOUBLE:
        *(double *)at = d;
        break;
    case S_INT:
        *(int *)at = (int)i;
        break;
    case S_INT64:
        *(int64_t *)at = (int64_t)i;
        break;
    case S_UINT64:
        *(uint64_t *)at = (uint64_t)i;
        break;
    case S_BOOL:
        *(bool *)at = i != 0;
        break;
    case S_ENUM:
        *(int *)at = (int)i;
        break;
    case S_NONE:
        break;
    }
}

/* hidden: a list of widths, or one width (repeated later, see finish). */
static int read_widths(const ConfigField *f, const char *name, const json_t *v, Parsed *p,
                       char *why, size_t size)
{
    long long w;
    if (json_is_array(v)) {
        if (json_array_size(v) > TRAIN_MAX_LAYERS) {
            snprintf(why, size, "config.%s: at most %d layers", name, TRAIN_MAX_LAYERS);
            return -1;
        }
        p->cfg.n_hidden = (int)json_array_size(v);
        for (int l = 0; l < p->cfg.n_hidden; l++) {
            if (!read_int(json_array_get(v, (size_t)l), f->min, f->max, &w)) {
                snprintf(why, size, "config.%s[%d]: must be an integer in [%lld, %lld]", name, l,
                         f->min, f->max);
                return -1;
            }
            p->cfg.hidden[l] = (int)w;
        }
        p->one_width = false;
        return 0;
    }
    if (!read_int(v, f->min, f->max, &w))
        return wrong(f, name, why, size);
    p->cfg.n_hidden = 1;
    p->cfg.hidden[0] = (int)w;
    p->one_width = true;
    return 0;
}

/* Reads v, the value of field f given as the config's key name, into p;
 * -1 with why naming that key. */
static int read_field(const ConfigField *f, const char *name, const json_t *v, Parsed *p, char *why,
                      size_t size)
{
    long long i = 0;
    double d = 0;
    switch (f->kind) {
    case F_REAL:
        d = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(d >= f->lo && (f->hi_open ? d < f->hi : d <= f->hi)))
            return wrong(f, name, why, size);
        break;
    case F_INT:
        if (f->zero_word != NULL && json_is_string(v) &&
            strcmp(json_string_value(v), f->zero_word) == 0)
            i = 0;
        else if (!read_int(v, f->min, f->max, &i))
            return wrong(f, name, why, size);
        break;
    case F_BOOL:
        if (json_is_boolean(v))
            i = json_is_true(v);
        else if (!json_is_integer(v) || !read_int(v, 0, 1, &i))
            return wrong(f, name, why, size);
        break;
    case F_CHOICE: {
        const char *s = json_string_value(v);
        for (i = 0; s != NULL && f->words[i] != NULL && strcmp(s, f->words[i]) != 0; i++)
            ;
        if (s == NULL || f->words[i] == NULL)
            return wrong(f, name, why, size);
        break;
    }
    case F_WIDTHS:
        return read_widths(f, name, v, p, why, size);
    }
    store(f, p, d, i);
    return 0;
}

/* Per-layer widths, once every key is read: hidden_1 ... hidden_n without
 * a gap, neither with hidden nor with a layers that counts otherwise. */
static int finish_layer_widths(Parsed *p, char *why, size_t size)
{
    int n = 0;
    for (int l = 0; l < TRAIN_MAX_LAYERS; l++)
        if (p->layer_name[l] != NULL)
            n = l + 1;
    if (n == 0)
        return 0;
    for (int l = 0; l < n; l++) {
        if (p->layer_name[l] == NULL) {
            snprintf(why, size,
                     "config.%s: hidden_%d is missing (per-layer widths run from hidden_1 "
                     "without a gap)",
                     p->layer_name[n - 1], l + 1);
            return -1;
        }
    }
    if (p->given[C_HIDDEN]) {
        snprintf(why, size,
                 "config.%s and config.%s: give either hidden or per-layer widths hidden_1 ... "
                 "hidden_%d, not both",
                 p->name[C_HIDDEN], p->layer_name[0], TRAIN_MAX_LAYERS);
        return -1;
    }
    if (p->layers >= 0 && p->layers != n) {
        snprintf(why, size,
                 "config.%s: %lld, but %d per-layer width(s) are given (hidden_1 ... "
                 "hidden_%d)",
                 p->name[C_LAYERS], (long long)p->layers, n, n);
        return -1;
    }
    p->cfg.n_hidden = n;
    for (int l = 0; l < n; l++)
        p->cfg.hidden[l] = p->layer_width[l];
    p->layers = -1; /* done: finish leaves the widths alone */
    return 0;
}

/* The checks across fields, once every field is read. */
static int finish(Parsed *p, char *why, size_t size)
{
    TrainConfig *cfg = &p->cfg;
    if (finish_layer_widths(p, why, size) != 0)
        return -1;
    if (p->layers >= 0) {
        if (p->given[C_HIDDEN] && !p->one_width) {
            snprintf(why, size,
                     "config.%s: give either a list of widths in hidden, or "
                     "one width and layers",
                     p->name[C_LAYERS]);
            return -1;
        }
        int width = p->given[C_HIDDEN] ? cfg->hidden[0] : 256;
        cfg->n_hidden = (int)p->layers;
        for (int l = 0; l < cfg->n_hidden; l++)
            cfg->hidden[l] = width;
    }
    if (cfg->batch_size > 0 && cfg->batch_size < cfg->ranks) {
        snprintf(why, size, "config.%s: %lld is smaller than ranks (%d)", p->name[C_BATCH_SIZE],
                 (long long)cfg->batch_size, cfg->ranks);
        return -1;
    }
    return 0;
}

/* The layer of a per-layer width's name, `hidden_<l>` (1-based, no
 * leading zero): l in [1, TRAIN_MAX_LAYERS]; 0 for any other name; -1 for
 * a layer out of range. */
static int layer_of(const char *field)
{
    static const char prefix[] = "hidden_";
    if (strncmp(field, prefix, sizeof prefix - 1) != 0)
        return 0;
    const char *d = field + sizeof prefix - 1;
    if (d[0] < '1' || d[0] > '9' || strspn(d, "0123456789") != strlen(d))
        return 0;
    if (strlen(d) > 3)
        return -1;
    int l = atoi(d);
    return l <= TRAIN_MAX_LAYERS ? l : -1;
}

/* Fills cfg from the trial's config c: defaults from the table, then every
 * key of c, then the checks across fields. -1 with why naming the field.
 *
 * A key may be dotted, as the flat configs of nested and conditional
 * spaces are (docs/api.md): it sets the field of its last segment
 * (`opt.momentum` is momentum), and two keys that set one field are an
 * error naming both. `hidden_1` ... `hidden_<TRAIN_MAX_LAYERS>` are layer
 * widths one by one (finish_layer_widths). */
static int parse_config(const json_t *c, TrainConfig *cfg, char *why, size_t size)
{
    if (!json_is_object(c)) {
        snprintf(why, size, "config: must be a JSON object");
        return -1;
    }
    Parsed p;
    memset(&p, 0, sizeof p);
    for (size_t k = 0; k < N_FIELDS; k++) {
        const ConfigField *f = &FIELDS[k];
        p.name[k] = f->key; /* for the errors of the checks across fields */
        if (f->dflt == NULL) {
            store(f, &p, (double)f->unset, f->unset);
            continue;
        }
        json_t *v = json_loads(f->dflt, JSON_DECODE_ANY, NULL);
        int rc = v ? read_field(f, f->key, v, &p, why, size) : -1;
        json_decref(v);
        if (rc != 0) { /* a wrong table; every run reads the defaults, so tests see it */
            snprintf(why, size, "config.%s: the default %s is refused (a bug)", f->key, f->dflt);
            return -1;
        }
    }
    /* Which field each key sets, in the config's order. */
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)c, key, v) {
        const char *dot = strrchr(key, '.');
        const char *field = dot ? dot + 1 : key;
        int layer = layer_of(field);
        const char **seen; /* the key that set this field before, if any */
        if (layer < 0) {
            snprintf(why, size, "config.%s: per-layer widths are hidden_1 ... hidden_%d", key,
                     TRAIN_MAX_LAYERS);
            return -1;
        }
        if (layer > 0) {
            seen = &p.layer_name[layer - 1];
        } else {
            size_t k = 0;
            while (k < N_FIELDS && strcmp(field, FIELDS[k].key) != 0)
                k++;
            if (k == N_FIELDS) {
                snprintf(why, size, "config.%s: not a setting of the builtin mlp trainer", key);
                return -1;
            }
            if (!p.given[k])
                p.name[k] = NULL; /* the default's name until now */
            p.given[k] = true;
            seen = &p.name[k];
        }
        if (*seen != NULL) {
            snprintf(why, size, "config.%s and config.%s: both set %s", *seen, key, field);
            return -1;
        }
        *seen = key;
    }
    /* In table order, so that of two wrong fields the same one is named
     * whatever the order of the keys in c. */
    for (size_t k = 0; k < N_FIELDS; k++) {
        if (!p.given[k])
            continue;
        v = json_object_get(c, p.name[k]);
        if (read_field(&FIELDS[k], p.name[k], v, &p, why, size) != 0)
            return -1;
    }
    for (int l = 0; l < TRAIN_MAX_LAYERS; l++) {
        long long w;
        if (p.layer_name[l] == NULL)
            continue;
        if (!read_int(json_object_get(c, p.layer_name[l]), 1, TRAIN_MAX_WIDTH, &w)) {
            snprintf(why, size, "config.%s: must be an integer in [1, %d]", p.layer_name[l],
                     TRAIN_MAX_WIDTH);
            return -1;
        }
        p.layer_width[l] = (int)w;
    }
    if (finish(&p, why, size) != 0)
        return -1;
    *cfg = p.cfg;
    return 0;
}

/* --help's part about the config: one entry per field of the table. */
static void config_usage(FILE *out)
{
    fprintf(out, "\nThe config: a JSON object of these keys, each optional (docs/trainer.md):\n");
    for (size_t k = 0; k < N_FIELDS; k++) {
        const ConfigField *f = &FIELDS[k];
        char what[128];
        describe(f, what, sizeof what);
        fprintf(out, "  %-14s %s; default %s\n  %-14s %s\n", f->key, what,
                f->dflt ? f->dflt : f->absent, "", f->help);
    }
    fprintf(out,
            "\nA dotted key sets the field of its last segment (opt.momentum is momentum), as\n"
            "the configs of nested and conditional spaces come; two keys of one field are an\n"
            "error. Per-layer widths: hidden_1 ... hidden_%d, integers in [1, %d], give layer\n"
            "i's width; they run from hidden_1 without a gap, layers (when given) must count\n"
            "them, and hidden may not come with them.\n",
            TRAIN_MAX_LAYERS, TRAIN_MAX_WIDTH);
}

/* ---- the command line ---- */

enum { O_CONFIG, O_CONFIG_FILE, O_RANKS, O_THREADS, O_GPUS, O__COUNT };

/* The command line's table (common/options.h); --ranks and --threads
 * override the config's keys of the same name. */
static Option options[O__COUNT] = {
    [O_CONFIG] = {"config", OPT_STRING, NULL, 0, 0, 0,
                  "the trial's config as JSON (default: $RUNG_CONFIG, else every default)"},
    [O_CONFIG_FILE] = {"config-file", OPT_STRING, NULL, 0, 0, 0,
                       "a file holding the config (instead of --config)"},
    [O_RANKS] = {"ranks", OPT_INT, NULL, 0, 1, TRAIN_MAX_RANKS,
                 "CPU data-parallel ranks; overrides config.ranks"},
    [O_THREADS] = {"threads", OPT_INT, NULL, 0, 1, 1024,
                   "threads per rank (OpenBLAS and the rank's pool); overrides config.threads"},
    [O_GPUS] = {"gpus", OPT_INT, NULL, 0, 1, TRAIN_MAX_RANKS,
                "train on the first N usable GPUs (default: every one)"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: rung-train [options]\n\n");
    options_usage(out, options, O__COUNT);
    config_usage(out);
}

static json_t *read_config(char *why, size_t size)
{
    json_error_t jerr;
    json_t *c = NULL;
    const char *text = options[O_CONFIG].value ? options[O_CONFIG].value : getenv("RUNG_CONFIG");
    const char *file = options[O_CONFIG_FILE].value;
    if (file != NULL)
        c = json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);
    else if (text != NULL)
        c = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    else
        c = json_object(); /* every default */
    if (c == NULL)
        snprintf(why, size, "config%s%s: not JSON: %s (line %d)", file ? " file " : "",
                 file ? file : "", jerr.text, jerr.line);
    return c;
}

/* ---- reports ---- */

typedef struct Reporter {
    const Dataset *test;
    int64_t epochs;
    bool auto_batch; /* the config's batch_size was "auto" */
    bool reported;   /* a report was printed */
} Reporter;

/* A metric for the @rung line: "%.6g", or the token a diverged run's value
 * is spelled with (docs/api.md, "Non-finite numbers"); printf's "-nan" is
 * not JSON, and a report the worker refuses would hide the divergence. */
static const char *metric_text(char out[32], double v)
{
    const char *token = rung_nonfinite_format(v);
    if (token != NULL)
        return token;
    snprintf(out, 32, "%.6g", v);
    return out;
}

/* Each epoch's @rung line; the first also names the batch the run trains
 * with, which "auto" chose (and says so on stderr). */
static int report_epoch(const TrainEpoch *e, void *ctx)
{
    Reporter *rep = ctx;
    char batch[64] = "";
    if (!rep->reported) {
        snprintf(batch, sizeof batch, ", \"batch_size\": %lld", (long long)e->batch_size);
        if (rep->auto_batch)
            fprintf(stderr, "rung-train: batch_size \"auto\": %lld\n", (long long)e->batch_size);
        rep->reported = true;
    }
    char loss[32], vloss[32], vacc[32];
    printf("@rung {\"step\": %lld, \"train_loss\": %s, \"val_loss\": %s, \"val_acc\": %s, "
           "\"epoch_s\": %.4g, \"samples_per_s\": %.6g%s}\n",
           (long long)e->epoch, metric_text(loss, e->train_loss), metric_text(vloss, e->val_loss),
           metric_text(vacc, e->val_acc), e->epoch_s, e->samples_per_s, batch);
    fflush(stdout);
    return train_stop_requested != 0;
}

/* ---- several nodes ---- */

/* Where this process stands in a multi-node run, from the environment. */
typedef struct NodeEnv {
    int node, nnodes; /* nnodes 1: a run on one node (the rest unset) */
    const char *addr; /* MASTER_ADDR */
    int port;         /* MASTER_PORT */
    double timeout_s; /* RUNG_RDZV_TIMEOUT_S, or 0 for the rendezvous' default */
} NodeEnv;

/* An integer in [lo, hi] from variable name: 0, or -1 with why naming it. */
static int env_int(const char *name, long lo, long hi, int *out, char *why, size_t size)
{
    const char *v = getenv(name);
    char *end = NULL;
    long x = v ? strtol(v, &end, 10) : 0;
    if (v == NULL || v[0] == '\0' || *end != '\0' || x < lo || x > hi) {
        snprintf(why, size, "%s: %s%s%s must be an integer in [%ld, %ld]", name, v ? "'" : "",
                 v ? v : "not set;", v ? "'" : "", lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* RUNG_NNODES (absent, empty or 1: one node), RUNG_NODE_RANK, MASTER_ADDR,
 * MASTER_PORT and RUNG_RDZV_TIMEOUT_S. */
static int read_node_env(NodeEnv *e, char *why, size_t size)
{
    memset(e, 0, sizeof *e);
    e->nnodes = 1;
    const char *n = getenv("RUNG_NNODES");
    if (n == NULL || n[0] == '\0')
        return 0;
    if (env_int("RUNG_NNODES", 1, TRAIN_MAX_NODES, &e->nnodes, why, size) != 0)
        return -1;
    if (e->nnodes == 1)
        return 0;
    if (env_int("RUNG_NODE_RANK", 0, e->nnodes - 1, &e->node, why, size) != 0 ||
        env_int("MASTER_PORT", 1, 65535, &e->port, why, size) != 0)
        return -1;
    e->addr = getenv("MASTER_ADDR");
    if (e->addr == NULL || e->addr[0] == '\0') {
        snprintf(why, size, "MASTER_ADDR: not set or empty (node 0's address, with RUNG_NNODES %d)",
                 e->nnodes);
        return -1;
    }
    const char *t = getenv("RUNG_RDZV_TIMEOUT_S");
    if (t != NULL && t[0] != '\0') {
        char *end = NULL;
        e->timeout_s = strtod(t, &end);
        if (*end != '\0' || !(e->timeout_s > 0 && e->timeout_s <= RDZV_TIMEOUT_MAX_S)) {
            snprintf(why, size, "RUNG_RDZV_TIMEOUT_S: '%s' must be a number of seconds in (0, %g]",
                     t, RDZV_TIMEOUT_MAX_S);
            return -1;
        }
    }
    return 0;
}

/* The GPU ranks of this process: the first cfg->gpus usable GPUs, or all. */
static int gpu_ranks(const TrainConfig *cfg)
{
    int n = train_gpu_devices();
    return cfg->gpus > 0 && cfg->gpus < n ? cfg->gpus : n;
}

/* Joins the other nodes (node 0 first makes the NCCL unique id when it
 * trains on GPUs) and checks that every node trains the same thing with as
 * many local ranks. nodes is filled and *rdzv opened (close with
 * rdzv_close); -1 with why. */
static int join_nodes(const NodeEnv *e, TrainConfig *cfg, const Dataset *train, const Dataset *val,
                      bool gpu, TrainNodes *nodes, Rdzv **rdzv, char *why, size_t size)
{
    memset(nodes, 0, sizeof *nodes);
    nodes->node = e->node;
    nodes->nnodes = e->nnodes;
    if (e->node == 0 && gpu && train_gpu_unique_id(nodes->nccl_id, why, size) != 0)
        return -1;
    fprintf(stderr, "rung-train: node %d of %d: rendezvous at %s:%d\n", e->node, e->nnodes, e->addr,
            e->port);
    RdzvConfig rc = {.addr = e->addr,
                     .port = e->port,
                     .rank = e->node,
                     .nranks = e->nnodes,
                     .join_s = e->timeout_s};
    if (rdzv_join(&rc, nodes->nccl_id, sizeof nodes->nccl_id, rdzv, why, size) != 0)
        return -1;
    nodes->rdzv = *rdzv;
    cfg->nodes = nodes;
    int local = gpu ? gpu_ranks(cfg) : cfg->ranks;
    if (train_nodes_agree(cfg, train, val, local, gpu, why, size) != 0)
        return -1;
    /* Every node has seen the same config and local ranks: each refuses a
     * batch too small for the run's ranks alike. */
    if (cfg->batch_size > 0 && cfg->batch_size < (int64_t)local * e->nnodes) {
        snprintf(why, size, "config.batch_size: %lld is smaller than the %d ranks of %d nodes",
                 (long long)cfg->batch_size, local * e->nnodes, e->nnodes);
        return -1;
    }
    /* Node 0 decides whether the run resumes (only it keeps checkpoints)
     * and hands its state out when training starts. */
    int64_t resume = cfg->resume_epoch;
    if (rdzv_bcast(*rdzv, &resume, sizeof resume, why, size) != 0)
        return -1;
    cfg->resume_epoch = resume;
    if (e->node != 0)
        cfg->checkpoint_dir = NULL;
    fprintf(stderr, "rung-train: node %d of %d: every node arrived; %d rank(s) in all%s\n", e->node,
            e->nnodes, local * e->nnodes, resume > 0 ? ", resuming from node 0's checkpoint" : "");
    return 0;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    /* The command line first: --help and a wrong option need no BLAS. */
    int parsed = options_parse("rung-train", options, O__COUNT, argc, argv);
    if (parsed == 1) {
        usage(stdout);
        return 0;
    }
    if (parsed == 2)
        return 0; /* --version */
    if (parsed != 0)
        return 2;
    NodeEnv nenv;
    char nwhy[512];
    if (read_node_env(&nenv, nwhy, sizeof nwhy) != 0) {
        fprintf(stderr, "rung-train: %s\n", nwhy);
        return 2;
    }
    blascore_pick_with(argv, PICKED_ENV, "OPENBLAS_THREAD_TIMEOUT", BLAS_THREAD_TIMEOUT);
    char why[1024] = "";
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    fprintf(stderr, "rung-train: OpenBLAS core %s (%s)\n", blas_core_name(),
            blascore_origin(PICKED_ENV));
    if (!blas_check(why, sizeof why)) {
        if (blascore_picked(PICKED_ENV)) {
            /* Our pick computes wrong results: fall back to OpenBLAS's own. */
            fprintf(stderr,
                    "rung-train: the %s kernel failed its check (%s); using OpenBLAS's "
                    "default\n",
                    getenv("OPENBLAS_CORETYPE"), why);
            blascore_unpick(argv);
        }
        return fail("OpenBLAS gives wrong results: %s", why);
    }

    json_t *c = read_config(why, sizeof why);
    if (c == NULL)
        return fail("%s", why);
    TrainConfig cfg;
    if (parse_config(c, &cfg, why, sizeof why) != 0) {
        json_decref(c);
        return fail("%s", why);
    }
    json_decref(c);
    if (options[O_RANKS].value != NULL)
        cfg.ranks = (int)options[O_RANKS].ival;
    if (options[O_THREADS].value != NULL)
        cfg.threads = (int)options[O_THREADS].ival;
    if (options[O_GPUS].value != NULL)
        cfg.gpus = (int)options[O_GPUS].ival;
    if (cfg.batch_size > 0 && cfg.batch_size < cfg.ranks) {
        fprintf(stderr, "rung-train: --ranks %d: more ranks than the batch has samples (%lld)\n",
                cfg.ranks, (long long)cfg.batch_size);
        return 2;
    }

    /* The trainable: model and dataset (copied: the JSON is freed soon). */
    char dataset[1024] = "fashion-mnist";
    json_t *tr = NULL;
    const char *trainable = getenv("RUNG_TRAINABLE");
    if (trainable != NULL && (tr = json_loads(trainable, 0, NULL)) != NULL) {
        const char *model = json_string_value(json_object_get(tr, "model"));
        if (model != NULL && strcmp(model, "mlp") != 0) {
            json_decref(tr);
            return fail("trainable.model: '%s' is not a model of rung-train (mlp)", model);
        }
        if (json_string_value(json_object_get(tr, "dataset")) != NULL)
            snprintf(dataset, sizeof dataset, "%s",
                     json_string_value(json_object_get(tr, "dataset")));
    }
    Dataset train = {0}, test = {0}, val = {0};
    if (data_load_named(dataset, NULL, "train", &train, why, sizeof why) != 0 ||
        data_load_named(dataset, NULL, "test", &test, why, sizeof why) != 0) {
        json_decref(tr);
        return fail("%s", why);
    }
    json_decref(tr);
    if (cfg.train_samples > 0 && cfg.train_samples < train.n)
        data_truncate(&train, cfg.train_samples);
    int64_t n_val = cfg.val_samples >= 0 ? cfg.val_samples : train.n >= 50000 ? 5000 : train.n / 10;
    if (n_val >= train.n) {
        fprintf(stderr, "rung-train: config.val_samples: %lld leaves no training samples\n",
                (long long)n_val);
        return 2;
    }
    if (n_val > 0 && data_split(&train, n_val, cfg.seed, &val, why, sizeof why) != 0)
        return fail("%s", why);
    Dataset *others[2] = {&val, &test};
    double mean, sd;
    data_normalize(&train, others, 2, &mean, &sd);
    int usable = train_gpu_devices();
    bool gpu = usable > 0;
    if (cfg.gpus > usable) {
        const char *absent = train_gpu_absent();
        fprintf(stderr, "rung-train: --gpus %d: %d usable GPU(s) here%s%s%s\n", cfg.gpus, usable,
                absent[0] ? " (" : "", absent, absent[0] ? ")" : "");
        return 2;
    }
    bool auto_batch = cfg.batch_size == 0;
    if (auto_batch && !gpu)
        cfg.batch_size = 256; /* "auto" finds the largest batch that fits a GPU; on CPU: 256 */
    cfg.checkpoint_dir = getenv("RUNG_TRIAL_DIR");
    const char *resume = getenv("RUNG_RESUME_STEP");
    cfg.resume_epoch = resume ? strtoll(resume, NULL, 10) : 0;
    /* pbt: the milestones' checkpoints stay, for members that copy them. */
    const char *keep = getenv("RUNG_KEEP_CHECKPOINTS_EVERY");
    int64_t keep_every = keep ? strtoll(keep, NULL, 10) : 0;
    cfg.nodes = NULL;
    if (nenv.node > 0)
        cfg.resume_epoch = 0; /* node 0's decision comes with the rendezvous */
    if (cfg.resume_epoch > 0 && !checkpoint_exists(cfg.checkpoint_dir, cfg.resume_epoch)) {
        /* Not here (another worker's, or pruned by a run that finished on
         * its own before its pause reached it): start over; rungd answers
         * the steps already reported without judging them again. */
        fprintf(stderr, "rung-train: no checkpoint of epoch %lld here: starting over\n",
                (long long)cfg.resume_epoch);
        cfg.resume_epoch = 0;
    }
    fprintf(stderr,
            "rung-train: %s: %lld training, %lld validation, %lld test samples of %d features, "
            "%d classes; mean %.4f, std %.4f; %d %s rank(s)%s\n",
            dataset, (long long)train.n, (long long)val.n, (long long)test.n, train.dim,
            train.n_classes, mean, sd, gpu ? gpu_ranks(&cfg) : cfg.ranks, gpu ? "GPU" : "CPU",
            cfg.resume_epoch > 0 ? ", resuming" : "");
    if (cfg.resume_epoch > 0)
        fprintf(stderr, "rung-train: resuming after epoch %lld\n", (long long)cfg.resume_epoch);

    const Dataset *valset = val.n ? &val : &test;
    TrainNodes nodes;
    Rdzv *rdzv = NULL;
    if (nenv.nnodes > 1 &&
        join_nodes(&nenv, &cfg, &train, valset, gpu, &nodes, &rdzv, why, sizeof why) != 0) {
        rdzv_abort(rdzv, why); /* the nodes that arrived learn why */
        rdzv_close(rdzv);
        data_free(&train);
        data_free(&val);
        data_free(&test);
        return fail("%s", why);
    }
    if (cfg.resume_epoch > 0)
        checkpoint_prune(cfg.checkpoint_dir, cfg.resume_epoch,
                         keep_every); /* resumes only go forward */
    Reporter rep = {.test = &test, .epochs = cfg.epochs, .auto_batch = auto_batch};
    int rc;
    if (gpu)
        rc = train_gpu(&cfg, &train, valset, report_epoch, &rep, why, sizeof why);
    else
        rc = train_cpu(&cfg, &train, valset, report_epoch, &rep, why, sizeof why);
    data_free(&train);
    data_free(&val);
    data_free(&test);
    if (rdzv != NULL) {
        /* A failure here is told to the other nodes, which stop too; a
         * finished run waits until every node has finished, so that none
         * sees another's connection close while it still trains. After a
         * SIGTERM, a node that fails has most likely lost a peer that was
         * stopped the same way: it counts as stopped. */
        if (rc == 0 && !train_stop_requested && rdzv_barrier(rdzv, why, sizeof why) != 0)
            rc = -1;
        if (rc == -1)
            rdzv_abort(rdzv, why);
        rdzv_close(rdzv);
        if (rc == -1 && train_stop_requested) {
            fprintf(stderr, "rung-train: %s\n", why);
            rc = 1;
            snprintf(why, sizeof why, "stopped by a signal (and the run across nodes with it)");
        }
    }
    if (rc == 1 || (rc == 0 && train_stop_requested)) {
        /* Stopped by a signal: mid-epoch (rc 1), or at an epoch's end, when
         * the report saw it. Not finished: the checkpoints stay for a resume. */
        fprintf(stderr, "rung-train: %s\n", rc == 1 ? why : "stopped by a signal after an epoch");
        return 143; /* as if SIGTERM had killed it */
    }
    if (rc != 0)
        return fail("%s", why);
    /* Done: only the last is kept, and the milestones of a pbt population. */
    checkpoint_prune(cfg.checkpoint_dir, cfg.epochs, keep_every);
    return 0;
}
