/* rung-train: the built-in trainer, run by rung-worker for a trainable
 * {"type": "builtin", "model": "mlp", "dataset": "fashion-mnist"}.
 *
 *   rung-train [--config JSON | --config-file F] [--ranks K] [--threads T]
 *
 * (the config from RUNG_CONFIG when neither is given; --ranks and --threads
 * override the config's "ranks", CPU data-parallel ranks, and "threads",
 * OpenBLAS threads per rank).
 *
 * The config holds the trial's hyperparameters (API.md; the keys are in
 * parse_config below); RUNG_TRAINABLE holds the trainable's model and
 * dataset. It prints one `@rung` line per epoch, checkpoints into
 * RUNG_TRIAL_DIR and resumes from RUNG_RESUME_STEP. On SIGTERM it finishes
 * the step in progress and exits with status 143.
 *
 * Before anything else it makes sure OpenBLAS runs the best kernel the CPU
 * has (blas.h): OpenBLAS reads OPENBLAS_CORETYPE only when it is loaded, so
 * the program re-executes itself once with the variable set. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas.h"
#include "checkpoint.h"
#include "data.h"
#include "train.h"

#define PICKED_ENV "RUNG_TRAIN_CORE_PICKED" /* set on the re-executed process */

static void on_term(int sig)
{
    (void)sig;
    train_stop_requested = 1;
}

static int fail(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "rung-train: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    return 2;
}

/* ---- the config ---- */

/* An integer field: a JSON integer or a real with an integral value. */
static int get_int(json_t *c, const char *key, int64_t lo, int64_t hi, int64_t *out, char *why,
                   size_t size)
{
    json_t *v = json_object_get(c, key);
    if (v == NULL)
        return 0;
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(d == floor(d)) || d < (double)lo || d > (double)hi) {
        snprintf(why, size, "config.%s: must be an integer in [%lld, %lld]", key, (long long)lo,
                 (long long)hi);
        return -1;
    }
    *out = (int64_t)d;
    return 0;
}

static int get_real(json_t *c, const char *key, double lo, double hi, bool hi_open, double *out,
                    char *why, size_t size)
{
    json_t *v = json_object_get(c, key);
    if (v == NULL)
        return 0;
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(d >= lo && (hi_open ? d < hi : d <= hi))) {
        snprintf(why, size, "config.%s: must be a number in [%g, %g%s", key, lo, hi,
                 hi_open ? ")" : "]");
        return -1;
    }
    *out = d;
    return 0;
}

static int get_bool(json_t *c, const char *key, bool *out, char *why, size_t size)
{
    json_t *v = json_object_get(c, key);
    if (v == NULL)
        return 0;
    if (!json_is_boolean(v) && !(json_is_integer(v) && json_integer_value(v) >= 0 &&
                                 json_integer_value(v) <= 1)) {
        snprintf(why, size, "config.%s: must be true or false", key);
        return -1;
    }
    *out = json_is_boolean(v) ? json_is_true(v) : json_integer_value(v) == 1;
    return 0;
}

static const char *const config_keys[] = {
    "lr",        "batch_size",    "hidden",        "layers",        "optimizer",
    "momentum",  "nesterov",      "weight_decay",  "dropout",       "epochs",
    "warmup_epochs", "seed",      "precision",     "train_samples", "val_samples",
    "ranks",     "threads",       "beta1",         "beta2",         "eps",
    NULL};

/* Fills cfg from the trial's config (defaults first). */
static int parse_config(json_t *c, TrainConfig *cfg, char *why, size_t size)
{
    *cfg = (TrainConfig){.n_hidden = 2,
                         .hidden = {512, 256},
                         .optimizer = TRAIN_SGD,
                         .lr = 0.05f,
                         .momentum = 0.9f,
                         .beta1 = 0.9f,
                         .beta2 = 0.999f,
                         .eps = 1e-8f,
                         .batch_size = 256,
                         .epochs = 10,
                         .seed = 0,
                         .val_samples = -1,
                         .ranks = 1,
                         .threads = 0};
    if (!json_is_object(c)) {
        snprintf(why, size, "config: must be a JSON object");
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(c, key, v)
    {
        bool known = false;
        for (int i = 0; config_keys[i] && !known; i++)
            known = strcmp(key, config_keys[i]) == 0;
        if (!known) {
            snprintf(why, size, "config.%s: not a setting of the builtin mlp trainer", key);
            return -1;
        }
    }
    double d;
    int64_t i64;
    if ((d = cfg->lr, get_real(c, "lr", 0, 1e3, false, &d, why, size)) != 0)
        return -1;
    cfg->lr = (float)d;
    if ((d = cfg->momentum, get_real(c, "momentum", 0, 1, true, &d, why, size)) != 0)
        return -1;
    cfg->momentum = (float)d;
    if ((d = cfg->weight_decay, get_real(c, "weight_decay", 0, 10, false, &d, why, size)) != 0)
        return -1;
    cfg->weight_decay = (float)d;
    if ((d = cfg->dropout, get_real(c, "dropout", 0, 1, true, &d, why, size)) != 0)
        return -1;
    cfg->dropout = (float)d;
    if ((d = cfg->beta1, get_real(c, "beta1", 0, 1, true, &d, why, size)) != 0)
        return -1;
    cfg->beta1 = (float)d;
    if ((d = cfg->beta2, get_real(c, "beta2", 0, 1, true, &d, why, size)) != 0)
        return -1;
    cfg->beta2 = (float)d;
    if ((d = cfg->eps, get_real(c, "eps", 1e-30, 1, false, &d, why, size)) != 0)
        return -1;
    cfg->eps = (float)d;
    if (get_real(c, "warmup_epochs", 0, 1e6, false, &cfg->warmup_epochs, why, size) ||
        get_int(c, "epochs", 1, 100000, &cfg->epochs, why, size) ||
        get_int(c, "train_samples", 0, INT64_MAX / 2, &cfg->train_samples, why, size) ||
        get_int(c, "val_samples", 0, INT64_MAX / 2, &cfg->val_samples, why, size) ||
        get_bool(c, "nesterov", &cfg->nesterov, why, size))
        return -1;
    i64 = (int64_t)cfg->seed;
    if (get_int(c, "seed", 0, INT64_MAX, &i64, why, size))
        return -1;
    cfg->seed = (uint64_t)i64;
    i64 = cfg->ranks;
    if (get_int(c, "ranks", 1, TRAIN_MAX_RANKS, &i64, why, size))
        return -1;
    cfg->ranks = (int)i64;
    i64 = cfg->threads;
    if (get_int(c, "threads", 0, 1024, &i64, why, size))
        return -1;
    cfg->threads = (int)i64;
    json_t *bs = json_object_get(c, "batch_size");
    if (json_is_string(bs) && strcmp(json_string_value(bs), "auto") == 0)
        cfg->batch_size = 0;
    else if (get_int(c, "batch_size", 1, 1 << 24, &cfg->batch_size, why, size))
        return -1;
    json_t *opt = json_object_get(c, "optimizer");
    if (opt != NULL) {
        const char *o = json_string_value(opt);
        if (o != NULL && strcmp(o, "sgd") == 0)
            cfg->optimizer = TRAIN_SGD;
        else if (o != NULL && strcmp(o, "adamw") == 0)
            cfg->optimizer = TRAIN_ADAMW;
        else {
            snprintf(why, size, "config.optimizer: must be \"sgd\" or \"adamw\"");
            return -1;
        }
    }
    json_t *prec = json_object_get(c, "precision");
    if (prec != NULL) {
        const char *p = json_string_value(prec);
        if (p != NULL && strcmp(p, "fp32") == 0)
            cfg->precision = TRAIN_FP32;
        else if (p != NULL && strcmp(p, "bf16") == 0)
            cfg->precision = TRAIN_BF16;
        else {
            snprintf(why, size, "config.precision: must be \"fp32\" or \"bf16\"");
            return -1;
        }
    }
    /* hidden: one width (with layers: how many), or a list of widths. */
    json_t *hidden = json_object_get(c, "hidden");
    int64_t layers = -1;
    if (get_int(c, "layers", 0, TRAIN_MAX_LAYERS, &layers, why, size))
        return -1;
    if (json_is_array(hidden)) {
        if (layers >= 0) {
            snprintf(why, size, "config.layers: give either a list of widths in hidden, or "
                                "one width and layers");
            return -1;
        }
        if (json_array_size(hidden) > TRAIN_MAX_LAYERS) {
            snprintf(why, size, "config.hidden: at most %d layers", TRAIN_MAX_LAYERS);
            return -1;
        }
        cfg->n_hidden = (int)json_array_size(hidden);
        for (int l = 0; l < cfg->n_hidden; l++) {
            double w = json_is_number(json_array_get(hidden, (size_t)l))
                           ? json_number_value(json_array_get(hidden, (size_t)l))
                           : NAN;
            if (!(w == floor(w)) || w < 1 || w > TRAIN_MAX_WIDTH) {
                snprintf(why, size, "config.hidden[%d]: must be an integer in [1, %d]", l,
                         TRAIN_MAX_WIDTH);
                return -1;
            }
            cfg->hidden[l] = (int)w;
        }
    } else if (hidden != NULL) {
        int64_t w;
        if (get_int(c, "hidden", 1, TRAIN_MAX_WIDTH, &w, why, size))
            return -1;
        cfg->n_hidden = layers >= 0 ? (int)layers : 1;
        for (int l = 0; l < cfg->n_hidden; l++)
            cfg->hidden[l] = (int)w;
    } else if (layers >= 0) {
        cfg->n_hidden = (int)layers;
        for (int l = 0; l < cfg->n_hidden; l++)
            cfg->hidden[l] = 256;
    }
    if (cfg->batch_size > 0 && cfg->batch_size < cfg->ranks) {
        snprintf(why, size, "config.batch_size: %lld is smaller than ranks (%d)",
                 (long long)cfg->batch_size, cfg->ranks);
        return -1;
    }
    return 0;
}

/* Command-line overrides of the config; 0 = not given. */
static int64_t flag_ranks, flag_threads;

static int flag_int(const char *name, const char *text, int64_t lo, int64_t hi, int64_t *out,
                    char *why, size_t size)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
        snprintf(why, size, "%s: must be an integer in [%lld, %lld], not '%s'", name,
                 (long long)lo, (long long)hi, text);
        return -1;
    }
    *out = v;
    return 0;
}

static json_t *read_config(int argc, char **argv, char *why, size_t size)
{
    json_error_t jerr;
    json_t *c = NULL;
    const char *text = getenv("RUNG_CONFIG");
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            text = argv[++i];
        } else if (strcmp(argv[i], "--config-file") == 0 && i + 1 < argc) {
            file = argv[++i];
        } else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) {
            if (flag_int("--ranks", argv[++i], 1, TRAIN_MAX_RANKS, &flag_ranks, why, size))
                return NULL;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            if (flag_int("--threads", argv[++i], 1, 1024, &flag_threads, why, size))
                return NULL;
        } else {
            snprintf(why, size,
                     "unknown argument '%s'; usage: rung-train [--config JSON | --config-file F] "
                     "[--ranks K] [--threads T]",
                     argv[i]);
            return NULL;
        }
    }
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
} Reporter;

static int report_epoch(const TrainEpoch *e, void *ctx)
{
    (void)ctx;
    printf("@rung {\"step\": %lld, \"train_loss\": %.6g, \"val_loss\": %.6g, \"val_acc\": %.6g, "
           "\"epoch_s\": %.4g, \"samples_per_s\": %.6g}\n",
           (long long)e->epoch, e->train_loss, e->val_loss, e->val_acc, e->epoch_s,
           e->samples_per_s);
    fflush(stdout);
    return train_stop_requested != 0;
}

/* ---- main ---- */

/* Re-executes with OPENBLAS_CORETYPE set to the best kernel this CPU runs,
 * unless the user chose one or this is the re-executed process. */
static void pick_blas_core(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE") != NULL || getenv(PICKED_ENV) != NULL)
        return;
    const char *best = blas_best_core();
    setenv(PICKED_ENV, best ? best : "default", 1);
    if (best == NULL)
        return;
    setenv("OPENBLAS_CORETYPE", best, 1);
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE"); /* exec failed: carry on with OpenBLAS's choice */
}

int main(int argc, char **argv)
{
    pick_blas_core(argv);
    char why[1024] = "";
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    const char *picked = getenv(PICKED_ENV);
    fprintf(stderr, "rung-train: OpenBLAS core %s (%s)\n", blas_core_name(),
            getenv("OPENBLAS_CORETYPE") == NULL ? "OpenBLAS's own choice"
            : picked && strcmp(picked, "default") != 0 ? "picked from cpuid"
                                                        : "OPENBLAS_CORETYPE");
    if (!blas_check(why, sizeof why)) {
        if (picked != NULL && getenv("OPENBLAS_CORETYPE") != NULL) {
            /* Our pick computes wrong results: fall back to OpenBLAS's own. */
            fprintf(stderr, "rung-train: the %s kernel failed its check (%s); using OpenBLAS's "
                            "default\n",
                    getenv("OPENBLAS_CORETYPE"), why);
            unsetenv("OPENBLAS_CORETYPE");
            execv("/proc/self/exe", argv);
        }
        return fail("OpenBLAS gives wrong results: %s%s", why, "");
    }

    json_t *c = read_config(argc, argv, why, sizeof why);
    if (c == NULL)
        return fail("%s%s", why, "");
    TrainConfig cfg;
    if (parse_config(c, &cfg, why, sizeof why) != 0) {
        json_decref(c);
        return fail("%s%s", why, "");
    }
    json_decref(c);
    if (flag_ranks > 0)
        cfg.ranks = (int)flag_ranks;
    if (flag_threads > 0)
        cfg.threads = (int)flag_threads;
    if (cfg.batch_size > 0 && cfg.batch_size < cfg.ranks)
        return fail("--ranks %s: more ranks than the batch has samples%s", "", "");

    /* The trainable: model and dataset (copied: the JSON is freed soon). */
    char dataset[1024] = "fashion-mnist";
    json_t *tr = NULL;
    const char *trainable = getenv("RUNG_TRAINABLE");
    if (trainable != NULL && (tr = json_loads(trainable, 0, NULL)) != NULL) {
        const char *model = json_string_value(json_object_get(tr, "model"));
        if (model != NULL && strcmp(model, "mlp") != 0) {
            json_decref(tr);
            return fail("trainable.model: '%s' is not a model of rung-train (mlp)%s", model, "");
        }
        if (json_string_value(json_object_get(tr, "dataset")) != NULL)
            snprintf(dataset, sizeof dataset, "%s",
                     json_string_value(json_object_get(tr, "dataset")));
    }
    Dataset train = {0}, test = {0}, val = {0};
    if (data_load_named(dataset, NULL, "train", &train, why, sizeof why) != 0 ||
        data_load_named(dataset, NULL, "test", &test, why, sizeof why) != 0) {
        json_decref(tr);
        return fail("%s%s", why, "");
    }
    json_decref(tr);
    if (cfg.train_samples > 0 && cfg.train_samples < train.n)
        data_truncate(&train, cfg.train_samples);
    int64_t n_val = cfg.val_samples >= 0 ? cfg.val_samples
                    : train.n >= 50000   ? 5000
                                         : train.n / 10;
    if (n_val >= train.n) {
        fprintf(stderr, "rung-train: config.val_samples: %lld leaves no training samples\n",
                (long long)n_val);
        return 2;
    }
    if (n_val > 0 && data_split(&train, n_val, cfg.seed, &val, why, sizeof why) != 0)
        return fail("%s%s", why, "");
    Dataset *others[2] = {&val, &test};
    double mean, sd;
    data_normalize(&train, others, 2, &mean, &sd);
    bool gpu = train_cuda_devices() > 0;
    if (cfg.batch_size == 0 && !gpu)
        cfg.batch_size = 256; /* "auto" finds the largest batch that fits a GPU; on CPU: 256 */
    cfg.checkpoint_dir = getenv("RUNG_TRIAL_DIR");
    const char *resume = getenv("RUNG_RESUME_STEP");
    cfg.resume_epoch = resume ? strtoll(resume, NULL, 10) : 0;
    fprintf(stderr,
            "rung-train: %s: %lld training, %lld validation, %lld test samples of %d features, "
            "%d classes; mean %.4f, std %.4f; %d rank(s)%s\n",
            dataset, (long long)train.n, (long long)val.n, (long long)test.n, train.dim,
            train.n_classes, mean, sd, cfg.ranks,
            cfg.resume_epoch > 0 ? ", resuming" : "");
    if (cfg.resume_epoch > 0)
        fprintf(stderr, "rung-train: resuming after epoch %lld\n", (long long)cfg.resume_epoch);

    if (cfg.resume_epoch > 0)
        checkpoint_prune(cfg.checkpoint_dir, cfg.resume_epoch); /* resumes only go forward */
    Reporter rep = {.test = &test, .epochs = cfg.epochs};
    int rc;
    if (gpu)
        rc = train_cuda(&cfg, &train, val.n ? &val : &test, report_epoch, &rep, why, sizeof why);
    else
        rc = train_cpu(&cfg, &train, val.n ? &val : &test, report_epoch, &rep, why, sizeof why);
    data_free(&train);
    data_free(&val);
    data_free(&test);
    if (rc == 1 || (rc == 0 && train_stop_requested)) {
        /* Stopped by a signal: mid-epoch (rc 1), or at an epoch's end, when
         * the report saw it. Not finished: the checkpoints stay for a resume. */
        fprintf(stderr, "rung-train: %s\n", rc == 1 ? why : "stopped by a signal after an epoch");
        return 143; /* as if SIGTERM had killed it */
    }
    if (rc != 0)
        return fail("%s%s", why, "");
    checkpoint_prune(cfg.checkpoint_dir, cfg.epochs); /* done: only the last is kept */
    return 0;
}
