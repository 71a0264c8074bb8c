/* Training data for rung-train (data.h): IDX and CSV loaders, the
 * validation split, the normalization, and the per-epoch order of samples
 * over data-parallel ranks.
 *
 * Every file goes through zlib's gz* reader, which reads gzip and plain
 * files alike, so MNIST-style folders work whether or not they were
 * gunzipped. Loaders trust nothing in a file: sizes come from its header and
 * are bounded before anything is allocated, and a file whose length does not
 * match its header is an error that says where it ends.
 *
 * The workload is one load per trial (Fashion-MNIST: 60,000 x 784 bytes,
 * 26 MB of gzip that inflates to 47 MB), then one permutation per epoch and
 * one gather per step of each rank. Pixels are inflated straight into a
 * small buffer and converted to float as they arrive, so loading needs no
 * second copy of the file. */
#include "data.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

#include "splitmix.h"
#include "why.h"

/* Largest number of values (pixels or CSV features) one dataset may hold:
 * 2^31 values are 8 GiB as float32, more than a trial should be asked to
 * hold; Fashion-MNIST's training set is 47 million. The check runs on the
 * header's numbers before anything is allocated, so a corrupt or hostile
 * header cannot make us allocate (or overflow computing) a huge size. */
#define DATA_MAX_VALUES ((uint64_t)1 << 31)
/* IDX files have at most 255 dims (one byte of the magic says how many). */
#define IDX_MAX_DIMS 255
/* Longest CSV line: 16 MiB is two million features at 8 characters each. */
#define CSV_MAX_LINE ((size_t)1 << 24)
/* Characters of a bad CSV field quoted in an error message. */
#define FIELD_SHOWN(len) ((len) > 40 ? 40 : (len))
/* Bytes inflated per gzread: large enough that zlib inflates straight into
 * our buffer in big strides, small enough to stay in cache. */
#define READ_CHUNK ((size_t)1 << 18)
/* zlib's own input buffer; its default of 8 KiB costs many read calls. */
#define GZ_BUFFER (1u << 17)

_Static_assert(DATA_MAX_CLASSES >= 256, "IDX labels are bytes, so every one is a valid class");

void data_free(Dataset *d)
{
    if (d == NULL)
        return;
    free(d->x);
    free(d->code);
    free(d->lut);
    free(d->y);
    memset(d, 0, sizeof *d);
}

/* ---- IDX ------------------------------------------------------------- */

/* Opens path for reading through zlib; -1 with why filled on failure. */
static int gz_open_read(const char *path, gzFile *out, char *why, size_t size)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return rung_why(why, size, "file %s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return rung_why(why, size, "file %s: is a folder, not a file", path);
    gzFile f = gzopen(path, "rb");
    if (f == NULL)
        return rung_why(why, size, "file %s: %s", path, errno ? strerror(errno) : "cannot open");
    gzbuffer(f, GZ_BUFFER);
    *out = f;
    return 0;
}

/* Reads up to len bytes; returns how many were read (fewer at the end of the
 * file), or -1 with why filled on a read or decompression error. A gzip
 * stream that ends early is not an error here: it reads short, and the
 * caller reports where the file was truncated. */
static int64_t gz_read_full(gzFile f, const char *path, void *buf, size_t len, char *why,
                            size_t size)
{
    size_t got = 0;
    while (got < len) {
        size_t want = len - got;
        if (want > (size_t)INT_MAX)
            want = (size_t)INT_MAX;
        int r = gzread(f, (unsigned char *)buf + got, (unsigned)want);
        if (r < 0) {
            int errnum = 0;
            const char *msg = gzerror(f, &errnum);
            if (errnum == Z_ERRNO)
                msg = strerror(errno);
            return rung_why(why, size, "file %s: %s", path, msg);
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (int64_t)got;
}

/* An IDX header: count (the first dim) and the bytes of one sample (the
 * product of the other dims). */
typedef struct IdxHeader {
    int64_t count;
    int64_t sample; /* bytes per sample; 1 for a one-dim file */
} IdxHeader;

/* Reads and checks the header of an IDX file of unsigned bytes. Labels
 * (is_labels) must have exactly one dim; images any number >= 1. */
static int idx_read_header(gzFile f, const char *path, bool is_labels, IdxHeader *h, char *why,
                           size_t size)
{
    unsigned char magic[4];
    int64_t got = gz_read_full(f, path, magic, 4, why, size);
    if (got < 0)
        return -1;
    if (got < 4)
        return rung_why(why, size, "file %s: truncated in the IDX header (%lld bytes)", path,
                        (long long)got);
    uint32_t m = (uint32_t)magic[0] << 24 | (uint32_t)magic[1] << 16 | (uint32_t)magic[2] << 8 |
                 magic[3];
    int ndims = magic[3];
    bool ok = magic[0] == 0 && magic[1] == 0 && magic[2] == 0x08 &&
              (is_labels ? ndims == 1 : ndims >= 1);
    if (!ok)
        return rung_why(why, size,
                        "file %s: magic 0x%08x is not IDX %s (expected 0x%08x: unsigned bytes, %s)",
                        path, m, is_labels ? "labels" : "images", is_labels ? 0x801u : 0x803u,
                        is_labels ? "1 dim" : "n x rows x cols");
    unsigned char raw[4 * IDX_MAX_DIMS];
    got = gz_read_full(f, path, raw, (size_t)ndims * 4, why, size);
    if (got < 0)
        return -1;
    if (got < (int64_t)ndims * 4)
        return rung_why(why, size, "file %s: truncated in the IDX header (%d dims declared)", path,
                        ndims);
    uint64_t dims[IDX_MAX_DIMS];
    for (int i = 0; i < ndims; i++) {
        const unsigned char *p = raw + 4 * i;
        dims[i] = (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 | (uint64_t)p[2] << 8 | p[3];
    }
    /* Each dim is < 2^32 and the running product stays <= 2^31 before the
     * next multiplication, so no product here can overflow 64 bits. */
    uint64_t sample = 1;
    for (int i = 1; i < ndims; i++) {
        sample *= dims[i];
        if (sample > DATA_MAX_VALUES)
            return rung_why(why, size,
                            "file %s: one sample of the header's dims holds over %llu "
                            "values (the limit)",
                            path, (unsigned long long)DATA_MAX_VALUES);
    }
    if (sample == 0)
        return rung_why(why, size, "file %s: a dim after the first is 0 (empty samples)", path);
    if (sample > (uint64_t)INT_MAX)
        return rung_why(why, size, "file %s: %llu values per sample is over the limit of %d", path,
                        (unsigned long long)sample, INT_MAX);
    if (dims[0] == 0)
        return rung_why(why, size, "file %s: holds no samples", path);
    if (dims[0] * sample > DATA_MAX_VALUES)
        return rung_why(why, size,
                        "file %s: %llu samples of %llu bytes is over the limit of %llu "
                        "values",
                        path, (unsigned long long)dims[0], (unsigned long long)sample,
                        (unsigned long long)DATA_MAX_VALUES);
    h->count = (int64_t)dims[0];
    h->sample = (int64_t)sample;
    return 0;
}

/* After the samples the header declares, the file must end. */
static int idx_expect_end(gzFile f, const char *path, const IdxHeader *h, char *why, size_t size)
{
    unsigned char extra[64];
    int64_t got = gz_read_full(f, path, extra, sizeof extra, why, size);
    if (got < 0)
        return -1;
    if (got > 0)
        return rung_why(why, size,
                        "file %s: longer than its header says (%lld samples of %lld "
                        "bytes, then more data)",
                        path, (long long)h->count, (long long)h->sample);
    return 0;
}

/* Reads the `total` pixel bytes into code, chunk by chunk. */
static int idx_read_pixels(gzFile f, const char *path, const IdxHeader *h, uint8_t *code, char *why,
                           size_t size)
{
    uint64_t total = (uint64_t)h->count * (uint64_t)h->sample;
    uint64_t done = 0;
    while (done < total) {
        size_t want = total - done < READ_CHUNK ? (size_t)(total - done) : READ_CHUNK;
        int64_t got = gz_read_full(f, path, code + done, want, why, size);
        if (got < 0)
            return -1;
        done += (uint64_t)got;
        if ((size_t)got < want)
            return rung_why(why, size, "file %s: truncated at sample %lld of %lld", path,
                            (long long)(done / (uint64_t)h->sample), (long long)h->count);
    }
    return 0;
}

int data_load_idx(const char *images, const char *labels, Dataset *out, char *why, size_t size)
{
    memset(out, 0, sizeof *out);
    gzFile fi = NULL, fl = NULL;
    unsigned char *lab = NULL;
    Dataset d = {0};
    IdxHeader hi, hl;
    int rc = -1;

    if (gz_open_read(images, &fi, why, size) != 0)
        goto done;
    if (idx_read_header(fi, images, false, &hi, why, size) != 0)
        goto done;
    if (gz_open_read(labels, &fl, why, size) != 0)
        goto done;
    if (idx_read_header(fl, labels, true, &hl, why, size) != 0)
        goto done;
    if (hi.count != hl.count) {
        rung_why(why, size, "files %s and %s: %lld images but %lld labels", images, labels,
                 (long long)hi.count, (long long)hl.count);
        goto done;
    }

    d.n = hi.count;
    d.dim = (int)hi.sample;
    d.code = malloc((size_t)d.n * (size_t)d.dim + 1); /* + 1: never malloc(0) */
    d.lut = malloc(DATA_CODEBOOK_SIZE * sizeof *d.lut);
    d.y = malloc((size_t)d.n * sizeof *d.y);
    lab = malloc((size_t)d.n);
    if (d.code == NULL || d.lut == NULL || d.y == NULL || lab == NULL) {
        rung_why(why, size, "files %s and %s: out of memory for %lld samples of %d values", images,
                 labels, (long long)d.n, d.dim);
        goto done;
    }
    for (int v = 0; v < DATA_CODEBOOK_SIZE; v++)
        d.lut[v] = (float)v / 255.0f;
    if (idx_read_pixels(fi, images, &hi, d.code, why, size) != 0)
        goto done;
    if (idx_expect_end(fi, images, &hi, why, size) != 0)
        goto done;

    int64_t got = gz_read_full(fl, labels, lab, (size_t)d.n, why, size);
    if (got < 0)
        goto done;
    if (got < d.n) {
        rung_why(why, size, "file %s: truncated at sample %lld of %lld", labels, (long long)got,
                 (long long)d.n);
        goto done;
    }
    if (idx_expect_end(fl, labels, &hl, why, size) != 0)
        goto done;
    int max_label = 0;
    for (int64_t i = 0; i < d.n; i++) {
        d.y[i] = lab[i];
        if (lab[i] > max_label)
            max_label = lab[i];
    }
    d.n_classes = max_label + 1 < 2 ? 2 : max_label + 1;
    *out = d;
    memset(&d, 0, sizeof d);
    rc = 0;
done:
    if (fi != NULL)
        gzclose(fi);
    if (fl != NULL)
        gzclose(fl);
    free(lab);
    data_free(&d);
    return rc;
}

/* ---- CSV ------------------------------------------------------------- */

/* Splits a file into lines through a buffer that refills READ_CHUNK bytes
 * at a time and grows only for a line longer than what it holds. */
typedef struct LineReader {
    gzFile f;
    const char *path;
    char *buf;
    size_t cap; /* bytes allocated; always > end, to leave room for a '\0' */
    size_t pos; /* start of the next line */
    size_t end; /* end of the bytes read */
    bool eof;
} LineReader;

/* The next line, without its "\n" or "\r\n", NUL-terminated in the
 * reader's buffer (valid until the next call). Returns 1 for a line, 0 at
 * the end of the file, -1 with why filled on an error. */
static int line_next(LineReader *r, int64_t line, char **out, char *why, size_t size)
{
    for (;;) {
        char *s = r->buf + r->pos;
        size_t avail = r->end - r->pos;
        char *nl = memchr(s, '\n', avail);
        if (nl != NULL || (r->eof && avail > 0)) {
            size_t len = nl != NULL ? (size_t)(nl - s) : avail;
            r->pos += nl != NULL ? len + 1 : len;
            if (len > CSV_MAX_LINE)
                return rung_why(why, size, "file %s line %lld: longer than %zu bytes", r->path,
                                (long long)line, CSV_MAX_LINE);
            if (memchr(s, '\0', len) != NULL)
                return rung_why(why, size, "file %s line %lld: holds a NUL byte (not a text file?)",
                                r->path, (long long)line);
            s[len] = '\0';
            if (len > 0 && s[len - 1] == '\r')
                s[len - 1] = '\0';
            *out = s;
            return 1;
        }
        if (r->eof)
            return 0;
        if (avail > CSV_MAX_LINE)
            return rung_why(why, size, "file %s line %lld: longer than %zu bytes", r->path,
                            (long long)line, CSV_MAX_LINE);
        memmove(r->buf, s, avail);
        r->pos = 0;
        r->end = avail;
        if (r->cap - r->end < READ_CHUNK + 1) {
            size_t ncap = r->cap * 2 > r->end + READ_CHUNK + 1 ? r->cap * 2
                                                               : r->end + READ_CHUNK + 1;
            char *nb = realloc(r->buf, ncap);
            if (nb == NULL)
                return rung_why(why, size, "file %s: out of memory", r->path);
            r->buf = nb;
            r->cap = ncap;
        }
        int64_t got = gz_read_full(r->f, r->path, r->buf + r->end, READ_CHUNK, why, size);
        if (got < 0)
            return -1;
        r->end += (size_t)got;
        if ((size_t)got < READ_CHUNK)
            r->eof = true;
    }
}

static bool is_blank(const char *s)
{
    for (; *s != '\0'; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

/* Parses the field starting at *p (ending at ',' or the end of the line) as
 * a finite number; advances *p past the field and its comma. Returns 0, or
 * -1 when it is not a number. */
static int csv_number(char **p, double *out, char **field, int *field_len)
{
    char *s = *p;
    char *end_field = strchr(s, ',');
    if (end_field == NULL)
        end_field = s + strlen(s);
    *field = s;
    *field_len = (int)(end_field - s);
    *p = *end_field == ',' ? end_field + 1 : end_field;
    char saved = *end_field;
    *end_field = '\0';
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    bool ok = end != s && is_blank(end) && isfinite(v);
    /* strtod reports overflow with ERANGE and HUGE_VAL (caught by isfinite);
     * underflow to a tiny value or zero is fine for features. */
    *end_field = saved;
    if (!ok)
        return -1;
    *out = v;
    return 0;
}

/* Counts the fields of a line (commas + 1). */
static int64_t csv_fields(const char *s)
{
    int64_t n = 1;
    for (; *s != '\0'; s++)
        if (*s == ',')
            n++;
    return n;
}

int data_load_csv(const char *path, Dataset *out, char *why, size_t size)
{
    memset(out, 0, sizeof *out);
    LineReader r = {.path = path, .cap = READ_CHUNK + 1};
    Dataset d = {0};
    int64_t cap_n = 0; /* rows allocated in d.x and d.y */
    int64_t fields = 0;
    int64_t line = 0;
    bool first = true; /* before the first non-blank line, which may be a header */
    int max_label = 0;
    int rc = -1;

    if (gz_open_read(path, &r.f, why, size) != 0)
        goto done;
    r.buf = malloc(r.cap);
    if (r.buf == NULL) {
        rung_why(why, size, "file %s: out of memory", path);
        goto done;
    }
    for (;;) {
        char *text = NULL;
        line++;
        int got = line_next(&r, line, &text, why, size);
        if (got < 0)
            goto done;
        if (got == 0)
            break;
        if (is_blank(text))
            continue;
        bool header_allowed = first;
        first = false;
        char *p = text, *field;
        int field_len;
        double label;
        if (csv_number(&p, &label, &field, &field_len) != 0) {
            if (header_allowed)
                continue;
            rung_why(why, size, "file %s line %lld: label '%.*s' is not a number", path,
                     (long long)line, FIELD_SHOWN(field_len), field);
            goto done;
        }
        if (label < 0 || label >= DATA_MAX_CLASSES || label != floor(label)) {
            rung_why(why, size, "file %s line %lld: label '%.*s' is not an integer in [0, %d)",
                     path, (long long)line, FIELD_SHOWN(field_len), field, DATA_MAX_CLASSES);
            goto done;
        }
        int64_t nf = csv_fields(text);
        if (fields == 0) {
            if (nf < 2) {
                rung_why(why, size, "file %s line %lld: a label but no features", path,
                         (long long)line);
                goto done;
            }
            /* The line limit keeps this far below INT_MAX and the value limit. */
            fields = nf;
            d.dim = (int)(nf - 1);
        } else if (nf != fields) {
            rung_why(why, size, "file %s line %lld: %lld fields, but the first row has %lld", path,
                     (long long)line, (long long)nf, (long long)fields);
            goto done;
        }
        if (d.n == cap_n) {
            int64_t ncap = cap_n == 0 ? 1024 : cap_n * 2;
            if ((uint64_t)ncap * (uint64_t)d.dim > DATA_MAX_VALUES)
                ncap = (int64_t)(DATA_MAX_VALUES / (uint64_t)d.dim);
            if (ncap <= d.n) {
                rung_why(why, size, "file %s line %lld: over the limit of %llu values", path,
                         (long long)line, (unsigned long long)DATA_MAX_VALUES);
                goto done;
            }
            float *nx = realloc(d.x, (size_t)ncap * (size_t)d.dim * sizeof *nx);
            if (nx == NULL) {
                rung_why(why, size, "file %s: out of memory at line %lld", path, (long long)line);
                goto done;
            }
            d.x = nx;
            int32_t *ny = realloc(d.y, (size_t)ncap * sizeof *ny);
            if (ny == NULL) {
                rung_why(why, size, "file %s: out of memory at line %lld", path, (long long)line);
                goto done;
            }
            d.y = ny;
            cap_n = ncap;
        }
        float *row = d.x + (size_t)d.n * (size_t)d.dim;
        for (int j = 0; j < d.dim; j++) {
            double v;
            if (csv_number(&p, &v, &field, &field_len) != 0 || fabs(v) > FLT_MAX) {
                rung_why(why, size, "file %s line %lld: field %d '%.*s' is not a finite float",
                         path, (long long)line, j + 2, FIELD_SHOWN(field_len), field);
                goto done;
            }
            row[j] = (float)v;
        }
        d.y[d.n] = (int32_t)label;
        if ((int)label > max_label)
            max_label = (int)label;
        d.n++;
    }
    if (d.n == 0) {
        rung_why(why, size, "file %s: holds no samples", path);
        goto done;
    }
    d.n_classes = max_label + 1 < 2 ? 2 : max_label + 1;
    /* Give back the unused tail of the doubling. */
    float *nx = realloc(d.x, (size_t)d.n * (size_t)d.dim * sizeof *nx);
    if (nx != NULL)
        d.x = nx;
    int32_t *ny = realloc(d.y, (size_t)d.n * sizeof *ny);
    if (ny != NULL)
        d.y = ny;
    *out = d;
    memset(&d, 0, sizeof d);
    rc = 0;
done:
    if (r.f != NULL)
        gzclose(r.f);
    free(r.buf);
    data_free(&d);
    return rc;
}

/* ---- Datasets by name ------------------------------------------------ */

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

static bool ends_with_ci(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

/* Finds "<folder>/<base>.gz" or "<folder>/<base>" into path; -1 with why
 * filled (naming the file looked for, and `hint`) when neither exists. */
static int idx_find(const char *folder, const char *base, const char *hint, char *path,
                    size_t path_size, char *why, size_t size)
{
    int w = snprintf(path, path_size, "%s/%s.gz", folder, base);
    if (w < 0 || (size_t)w >= path_size)
        return rung_why(why, size, "folder %s: path too long", folder);
    if (file_exists(path))
        return 0;
    snprintf(path, path_size, "%s/%s", folder, base);
    if (file_exists(path))
        return 0;
    return rung_why(why, size, "file %s.gz not found (nor %s)%s", path, path, hint);
}

/* Loads split `split` ("train" or "test") of an MNIST-layout folder. */
static int idx_load_folder(const char *folder, const char *split, const char *hint, Dataset *out,
                           char *why, size_t size)
{
    const char *prefix = strcmp(split, "train") == 0 ? "train" : "t10k";
    char base[64];
    char images[4096], labels[4096];
    snprintf(base, sizeof base, "%s-images-idx3-ubyte", prefix);
    if (idx_find(folder, base, hint, images, sizeof images, why, size) != 0)
        return -1;
    snprintf(base, sizeof base, "%s-labels-idx1-ubyte", prefix);
    if (idx_find(folder, base, hint, labels, sizeof labels, why, size) != 0)
        return -1;
    return data_load_idx(images, labels, out, why, size);
}

int data_load_named(const char *name, const char *dir, const char *split, Dataset *out, char *why,
                    size_t size)
{
    memset(out, 0, sizeof *out);
    if (name == NULL || name[0] == '\0')
        return rung_why(why, size,
                        "dataset: no name given (fashion-mnist, mnist, a folder of IDX "
                        "files, or a .csv file)");
    if (split == NULL || (strcmp(split, "train") != 0 && strcmp(split, "test") != 0))
        return rung_why(why, size, "dataset %s: split '%s' is not train or test", name,
                        split == NULL ? "(null)" : split);

    if (strcmp(name, "fashion-mnist") == 0) {
        if (dir != NULL)
            return idx_load_folder(dir, split, "", out, why, size);
        return idx_load_folder(DATA_FASHION_MNIST_DIR, split,
                               "; install the Debian package dataset-fashion-mnist "
                               "(scripts/deps.sh does)",
                               out, why, size);
    }
    if (strcmp(name, "mnist") == 0) {
        if (dir == NULL)
            return rung_why(why, size,
                            "dataset mnist: Debian has no MNIST package; give the folder "
                            "that holds train-images-idx3-ubyte.gz and the other three "
                            "IDX files (or use fashion-mnist)");
        return idx_load_folder(dir, split, "", out, why, size);
    }
    if (ends_with_ci(name, ".csv") || ends_with_ci(name, ".csv.gz")) {
        if (strcmp(split, "train") == 0)
            return data_load_csv(name, out, why, size);
        if (dir == NULL)
            return 0; /* no test file: an empty test split */
        return data_load_csv(dir, out, why, size);
    }
    struct stat st;
    if (stat(name, &st) == 0 && S_ISDIR(st.st_mode))
        return idx_load_folder(name, split, "", out, why, size);
    return rung_why(why, size,
                    "dataset %s: not fashion-mnist, mnist, a folder of IDX files, or a "
                    ".csv file%s",
                    name, stat(name, &st) != 0 ? " (no such file or folder)" : "");
}

/* ---- Split, truncation, normalization -------------------------------- */

void data_truncate(Dataset *d, int64_t n)
{
    if (n < 0 || n >= d->n)
        return;
    d->n = n;
    if (n == 0) {
        /* realloc(p, 0) may free and return NULL; keep the shape, drop the data. */
        free(d->x);
        free(d->code);
        free(d->lut);
        free(d->y);
        d->x = NULL;
        d->code = NULL;
        d->lut = NULL;
        d->y = NULL;
        return;
    }
    /* Shrinking gives the memory back; if realloc fails the old block stays. */
    if (d->code != NULL) {
        uint8_t *nc = realloc(d->code, (size_t)n * (size_t)d->dim);
        if (nc != NULL)
            d->code = nc;
    } else {
        float *nx = realloc(d->x, (size_t)n * (size_t)d->dim * sizeof *nx);
        if (nx != NULL)
            d->x = nx;
    }
    int32_t *ny = realloc(d->y, (size_t)n * sizeof *ny);
    if (ny != NULL)
        d->y = ny;
}

/* Domains of the generator's key, so that the split's permutation and the
 * epochs' orders are independent streams of one seed. */
#define STREAM_EPOCH 0x65706f6368ULL /* "epoch" */
#define STREAM_SPLIT 0x73706c6974ULL /* "split" */

/* A splitmix64 stream (common/splitmix.h): the k-th output is
 * rung_splitmix_at(key, k), so the whole stream is a function of its key. */
typedef struct Stream {
    uint64_t state;
} Stream;

static uint64_t stream_next(Stream *s)
{
    return rung_splitmix_next(&s->state);
}

/* A uniform integer in [0, bound), bound >= 1, without modulo bias
 * (Lemire 2019, "Fast random integer generation in an interval"). */
static uint64_t stream_below(Stream *s, uint64_t bound)
{
    __extension__ typedef unsigned __int128 u128;
    u128 m = (u128)stream_next(s) * bound;
    uint64_t lo = (uint64_t)m;
    if (lo < bound) {
        uint64_t threshold = (0 - bound) % bound;
        while (lo < threshold) {
            m = (u128)stream_next(s) * bound;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* Fisher-Yates over 0..n-1 with the stream keyed on (domain, seed, tag). */
static void permutation(int64_t n, uint64_t domain, uint64_t seed, uint64_t tag, int64_t *perm)
{
    Stream s = {rung_splitmix_mix(rung_splitmix_mix(seed ^ domain) ^ tag)};
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)stream_below(&s, (uint64_t)i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

void data_epoch_order(int64_t n, uint64_t seed, int64_t epoch, int64_t *perm)
{
    permutation(n, STREAM_EPOCH, seed, (uint64_t)epoch, perm);
}

int data_split(Dataset *d, int64_t n_val, uint64_t seed, Dataset *val, char *why, size_t size)
{
    memset(val, 0, sizeof *val);
    if (n_val < 0 || n_val >= d->n)
        return rung_why(why, size,
                        "validation split of %lld samples: the training set has %lld, "
                        "and at least one must stay for training",
                        (long long)n_val, (long long)d->n);
    val->dim = d->dim;
    val->n_classes = d->n_classes;
    if (n_val == 0)
        return 0;
    int64_t *perm = malloc((size_t)d->n * sizeof *perm);
    bool *is_val = calloc((size_t)d->n, sizeof *is_val);
    /* Rows move as they are held: bytes of a coded set (with its table),
     * floats otherwise. */
    bool coded = d->code != NULL;
    size_t row = (size_t)d->dim * (coded ? 1 : sizeof *d->x);
    char *from = coded ? (char *)d->code : (char *)d->x, *to;
    if (coded) {
        val->code = malloc((size_t)n_val * row);
        val->lut = malloc(DATA_CODEBOOK_SIZE * sizeof *val->lut);
        if (val->lut != NULL)
            memcpy(val->lut, d->lut, DATA_CODEBOOK_SIZE * sizeof *val->lut);
        to = (char *)val->code;
    } else {
        val->x = malloc((size_t)n_val * row);
        to = (char *)val->x;
    }
    val->y = malloc((size_t)n_val * sizeof *val->y);
    if (perm == NULL || is_val == NULL || to == NULL || (coded && val->lut == NULL) ||
        val->y == NULL) {
        free(perm);
        free(is_val);
        data_free(val);
        return rung_why(why, size, "validation split of %lld samples: out of memory",
                        (long long)n_val);
    }
    permutation(d->n, STREAM_SPLIT, seed, 0, perm);
    int64_t first = d->n - n_val;
    for (int64_t i = 0; i < n_val; i++) {
        int64_t s = perm[first + i];
        is_val[s] = true;
        memcpy(to + (size_t)i * row, from + (size_t)s * row, row);
        val->y[i] = d->y[s];
    }
    val->n = n_val;
    /* Compact the rest in place, in their original order. */
    int64_t kept = 0;
    for (int64_t s = 0; s < d->n; s++) {
        if (is_val[s])
            continue;
        if (kept != s) {
            memmove(from + (size_t)kept * row, from + (size_t)s * row, row);
            d->y[kept] = d->y[s];
        }
        kept++;
    }
    free(perm);
    free(is_val);
    data_truncate(d, kept);
    return 0;
}

/* Subtracts mean and divides by std, for every value of d (every entry of
 * a coded set's table). */
static void normalize_apply(Dataset *d, float mean, float inv_std)
{
    if (d != NULL && d->code != NULL) {
        for (int v = 0; v < DATA_CODEBOOK_SIZE; v++)
            d->lut[v] = (d->lut[v] - mean) * inv_std;
        return;
    }
    if (d == NULL || d->x == NULL)
        return;
    size_t total = (size_t)d->n * (size_t)d->dim;
    for (size_t i = 0; i < total; i++)
        d->x[i] = (d->x[i] - mean) * inv_std;
}

void data_normalize(Dataset *train, Dataset **others, int n_others, double *mean_out,
                    double *std_out)
{
    size_t total = train->x != NULL || train->code != NULL ? (size_t)train->n * (size_t)train->dim
                                                           : 0;
    double mean = 0.0, std = 1.0;
    if (total > 0) {
        /* Two passes summed in double: float values summed in double lose
         * about n * 2^-53 of relative accuracy (1e-8 at 2^31 values), and
         * the second pass avoids the cancellation of sum(x^2) - n * mean^2. */
        double sum = 0.0;
        for (size_t i = 0; i < total; i++)
            sum += data_value(train, i);
        mean = sum / (double)total;
        double ss = 0.0;
        for (size_t i = 0; i < total; i++) {
            double dv = data_value(train, i) - mean;
            ss += dv * dv;
        }
        std = sqrt(ss / (double)total);
        /* A constant feature set (std 0) is only shifted, never divided by
         * zero; so is one whose spread is lost in float rounding. */
        if (!(std > 1e-12 * (fabs(mean) > 1.0 ? fabs(mean) : 1.0)) || !isfinite(std))
            std = 1.0;
    }
    float m = (float)mean, inv = (float)(1.0 / std);
    normalize_apply(train, m, inv);
    for (int i = 0; i < n_others; i++)
        normalize_apply(others[i], m, inv);
    if (mean_out != NULL)
        *mean_out = mean;
    if (std_out != NULL)
        *std_out = std;
}

/* ---- Per-step sample selection ---------------------------------------- */

int64_t data_shard(const int64_t *perm, int64_t n, int64_t start, int64_t batch, int rank, int k,
                   int64_t *idx)
{
    assert(k >= 1 && rank >= 0 && rank < k);
    assert(start >= 0 && batch >= 1);
    int64_t end = start + batch < n ? start + batch : n;
    int64_t m = 0;
    for (int64_t p = start + rank; p < end; p += k)
        idx[m++] = perm[p];
    return m;
}

void data_gather(const Dataset *d, const int64_t *idx, int64_t m, float *x, int32_t *y)
{
    size_t dim = (size_t)d->dim;
    for (int64_t i = 0; i < m; i++) {
        assert(idx[i] >= 0 && idx[i] < d->n);
        float *out = x + (size_t)i * dim;
        if (d->code != NULL) {
            /* The batch's floats are made here, a row at a time. */
            const uint8_t *c = d->code + (size_t)idx[i] * dim;
            for (size_t j = 0; j < dim; j++)
                out[j] = d->lut[c[j]];
        } else {
            memcpy(out, d->x + (size_t)idx[i] * dim, dim * sizeof *x);
        }
        y[i] = d->y[idx[i]];
    }
}

int data_codebook(const Dataset *const *sets, int n_sets, float lut[DATA_CODEBOOK_SIZE],
                  uint8_t *const *codes)
{
    /* Open addressing over the values' bit patterns, twice as many slots
     * as values, so a probe ends at a free slot; images repeat their last
     * value (background) often, so that one is checked first. */
    enum { SLOTS = 2 * DATA_CODEBOOK_SIZE };
    uint32_t key[SLOTS];
    int16_t code[SLOTS];
    for (int i = 0; i < SLOTS; i++)
        code[i] = -1;
    int used = 0;
    for (int s = 0; s < n_sets; s++) {
        const Dataset *d = sets[s];
        if (d == NULL || d->n == 0)
            continue;
        size_t n = (size_t)d->n * (size_t)d->dim;
        uint32_t last_bits = 0;
        int last = -1;
        for (size_t i = 0; i < n; i++) {
            uint32_t bits;
            float value = data_value(d, i);
            memcpy(&bits, &value, sizeof bits);
            if (last < 0 || bits != last_bits) {
                uint32_t h = (bits * 2654435761u) >> 23; /* 9 bits: SLOTS */
                while (code[h] >= 0 && key[h] != bits)
                    h = (h + 1) % SLOTS;
                if (code[h] < 0) {
                    if (used == DATA_CODEBOOK_SIZE)
                        return 0;
                    key[h] = bits;
                    code[h] = (int16_t)used;
                    lut[used++] = value;
                }
                last_bits = bits;
                last = code[h];
            }
            codes[s][i] = (uint8_t)last;
        }
    }
    return used;
}
