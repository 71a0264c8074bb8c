/* Training data for rung-train: loaders for IDX files (plain or gzip, as
 * MNIST and Fashion-MNIST ship them) and CSV, a validation split, the
 * normalization, and the per-epoch order of samples over ranks.
 *
 * A Dataset owns its arrays. Features are float32, one row of `dim` per
 * sample, held either as floats (x) or, for images (IDX: a byte per pixel),
 * as a byte per feature into a table of 256 floats (code, lut): Fashion-
 * MNIST's 60,000 training images are 47 MB that way instead of 188 MB
 * (rung-train's peak memory), and normalization rewrites only the table.
 * data_value reads either. Labels are int32 classes 0..n_classes-1. Errors fill `why` with a
 * message that names the file and what is wrong in it; nothing exits. */
#ifndef RUNG_KERNELS_DATA_H
#define RUNG_KERNELS_DATA_H

#include <stddef.h>
#include <stdint.h>

#define DATA_MAX_CLASSES 4096
/* At most this many distinct feature values make a codebook: one byte per
 * feature, which is what IDX images hold. */
#define DATA_CODEBOOK_SIZE 256
#define DATA_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist" /* Debian's package */

typedef struct Dataset {
    int64_t n;     /* samples */
    int dim;       /* features per sample */
    int n_classes; /* max label + 1 (at least 2) */
    float *x;      /* owned: n * dim, or NULL when coded */
    uint8_t *code; /* owned: n * dim, each feature lut[code]; NULL unless coded */
    float *lut;    /* owned: DATA_CODEBOOK_SIZE values, with code */
    int32_t *y;    /* owned: n */
} Dataset;

/* Feature i (of n * dim, row-major) of d. */
static inline float data_value(const Dataset *d, size_t i)
{
    return d->code != NULL ? d->lut[d->code[i]] : d->x[i];
}

void data_free(Dataset *d); /* frees the arrays and zeroes d; NULL-safe */

/* IDX images (magic 0x00000803, uint8, any number of dims >= 1: each sample
 * is the product of the dims after the first) and labels (0x00000801),
 * gzip-compressed or not (zlib reads both). Pixels are kept as they are
 * (code), the value of byte v being lut[v] = v / 255.
 * The two files must hold the same number of samples. */
int data_load_idx(const char *images, const char *labels, Dataset *out, char *why, size_t size);

/* CSV: one sample per line, the label (a non-negative integer) first, then
 * dim numbers; an optional header line (first field not a number) is
 * skipped; every line must have the same field count. */
int data_load_csv(const char *path, Dataset *out, char *why, size_t size);

/* A dataset by name: "fashion-mnist" or "mnist" (IDX files in a folder:
 * DATA_FASHION_MNIST_DIR, or the folder `dir` when not NULL), a path to a
 * folder with the four IDX files, or a path ending in .csv (its test split
 * then comes from the CSV file `dir`, or is empty). split is "train" or
 * "test". */
int data_load_named(const char *name, const char *dir, const char *split, Dataset *out, char *why,
                    size_t size);

/* Keeps the first n samples (n <= d->n): "train_samples". */
void data_truncate(Dataset *d, int64_t n);

/* Moves a validation split out of d: the last n_val samples of a
 * permutation drawn from seed go to val (in permutation order), the rest
 * stay in d (in their original order). */
int data_split(Dataset *d, int64_t n_val, uint64_t seed, Dataset *val, char *why, size_t size);

/* Standardization with one mean and standard deviation over all features
 * of `train` (as torchvision's Normalize((mean,), (std,)) for images),
 * computed in double; applied to every dataset given (to the table of a
 * coded one: the same float arithmetic, so the same values). */
void data_normalize(Dataset *train, Dataset **others, int n_others, double *mean_out,
                    double *std_out);

/* The order of samples in an epoch: a permutation of 0..n-1 drawn from
 * (seed, epoch) alone (Fisher-Yates on a counter-based generator), so any
 * rank computes the same one, and a resumed run the same as an
 * uninterrupted one. */
void data_epoch_order(int64_t n, uint64_t seed, int64_t epoch, int64_t *perm);

/* DistributedSampler semantics: rank r of k takes positions r, r+k, r+2k,
 * ... of a global batch of `batch` samples starting at position `start` of
 * the epoch's order (the last batch may be short). Writes the sample
 * indices into idx and returns how many there are. */
int64_t data_shard(const int64_t *perm, int64_t n, int64_t start, int64_t batch, int rank, int k,
                   int64_t *idx);

/* Copies the rows idx[0..m) of d into x[m, dim] and y[m]. */
void data_gather(const Dataset *d, const int64_t *idx, int64_t m, float *x, int32_t *y);


/* A byte per feature for the sets given (NULL or empty ones skipped): when
 * all their features together take at most DATA_CODEBOOK_SIZE distinct
 * values (bit patterns, so -0 and +0 differ and the mapping is exact), lut
 * gets the values and codes[s][i] the index into lut of feature i of set s
 * (n * dim bytes each, the caller's); x == lut[code] bit for bit. Returns
 * the number of values (>= 1), or 0 when there are more (a CSV of real
 * numbers, say); codes are then partly written. The CUDA backend keeps
 * such a dataset on the GPU in a quarter of its float size. */
int data_codebook(const Dataset *const *sets, int n_sets, float lut[DATA_CODEBOOK_SIZE],
                  uint8_t *const *codes);

#endif
