/* Unit tests of kernels/data.c: IDX files (plain and gzip) written here and
 * read back exactly, their errors (truncated, wrong magic, too large, too
 * long), CSV files good and bad, Fashion-MNIST from the Debian package, the
 * epoch order, rank shards of every global batch, the validation split and
 * the normalization. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "data.h"

/* The temporary folder every test writes its files into. */
static char tmp_dir[] = "/tmp/rung-test-data-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmp_dir) == NULL ? -1 : 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    (void)state;
    return nftw(tmp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* tmp_dir/name into buf. */
static const char *tmp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", tmp_dir, name);
    return buf;
}

static void write_bytes(const char *path, const void *data, size_t len, bool gz)
{
    if (gz) {
        gzFile f = gzopen(path, "wb");
        assert_non_null(f);
        if (len > 0)
            assert_int_equal(gzwrite(f, data, (unsigned)len), (int)len);
        assert_int_equal(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        if (len > 0)
            assert_int_equal(fwrite(data, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
    }
}

static void write_text(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text), false);
}

/* An IDX file of unsigned bytes: magic 0x000008<ndims>, the dims big-endian,
 * then `len` bytes of data. Returns the byte count written into out. */
static size_t idx_bytes(unsigned char *out, int ndims, const uint32_t *dims, const void *data,
                        size_t len)
{
    size_t o = 0;
    out[o++] = 0;
    out[o++] = 0;
    out[o++] = 0x08;
    out[o++] = (unsigned char)ndims;
    for (int i = 0; i < ndims; i++) {
        out[o++] = (unsigned char)(dims[i] >> 24);
        out[o++] = (unsigned char)(dims[i] >> 16);
        out[o++] = (unsigned char)(dims[i] >> 8);
        out[o++] = (unsigned char)dims[i];
    }
    memcpy(out + o, data, len);
    return o + len;
}

/* A small image set: N samples of R x C pixels, covering 0 and 255. */
enum { N = 7, R = 4, C = 3 };
static unsigned char pixels[N * R * C];
static unsigned char labels[N] = {3, 0, 1, 5, 2, 5, 4};

static void fill_pixels(void)
{
    for (int i = 0; i < N * R * C; i++)
        pixels[i] = (unsigned char)((i * 37 + 11) % 256);
    pixels[0] = 0;
    pixels[1] = 255;
}

/* Writes <prefix>-images / <prefix>-labels IDX files, plain or gzip. */
static void write_idx_pair(const char *images, const char *labels_path, bool gz)
{
    static unsigned char buf[64 + sizeof pixels];
    uint32_t di[3] = {N, R, C};
    write_bytes(images, buf, idx_bytes(buf, 3, di, pixels, sizeof pixels), gz);
    uint32_t dl[1] = {N};
    write_bytes(labels_path, buf, idx_bytes(buf, 1, dl, labels, sizeof labels), gz);
}

static void check_small_set(const Dataset *d)
{
    assert_int_equal(d->n, N);
    assert_int_equal(d->dim, R * C);
    assert_int_equal(d->n_classes, 6);
    /* Images are held as their bytes, a byte's value v / 255 (data.h). */
    assert_null(d->x);
    assert_memory_equal(d->code, pixels, N * R * C);
    for (int i = 0; i < N * R * C; i++)
        assert_true(data_value(d, (size_t)i) == (float)pixels[i] / 255.0f);
    assert_true(data_value(d, 0) == 0.0f && data_value(d, 1) == 1.0f);
    for (int i = 0; i < N; i++)
        assert_int_equal(d->y[i], labels[i]);
}

static void test_idx_plain_and_gzip(void **state)
{
    (void)state;
    fill_pixels();
    char pi[512], pl[512], why[512];
    for (int gz = 0; gz < 2; gz++) {
        tmp_path(pi, sizeof pi, gz ? "small-images.gz" : "small-images");
        tmp_path(pl, sizeof pl, gz ? "small-labels.gz" : "small-labels");
        write_idx_pair(pi, pl, gz);
        Dataset d;
        int rc = data_load_idx(pi, pl, &d, why, sizeof why);
        if (rc != 0)
            fail_msg("%s", why);
        check_small_set(&d);
        data_free(&d);
        assert_null(d.code);
        assert_int_equal(d.n, 0);
    }
    data_free(NULL);
}

static void test_idx_shapes(void **state)
{
    (void)state;
    char pi[512], pl[512], why[512];
    unsigned char buf[256], data[12];
    for (int i = 0; i < 12; i++)
        data[i] = (unsigned char)(i * 20);
    /* Two dims: 3 samples of 4 values; all labels 0 still give 2 classes. */
    uint32_t d2[2] = {3, 4};
    write_bytes(tmp_path(pi, sizeof pi, "shape2-images"), buf, idx_bytes(buf, 2, d2, data, 12),
                false);
    uint32_t dl[1] = {3};
    unsigned char zeros[3] = {0, 0, 0};
    write_bytes(tmp_path(pl, sizeof pl, "shape2-labels"), buf, idx_bytes(buf, 1, dl, zeros, 3),
                true);
    Dataset d;
    if (data_load_idx(pi, pl, &d, why, sizeof why) != 0)
        fail_msg("%s", why);
    assert_int_equal(d.n, 3);
    assert_int_equal(d.dim, 4);
    assert_int_equal(d.n_classes, 2);
    assert_true(data_value(&d, 11) == (float)220 / 255.0f);
    data_free(&d);
    /* One dim: each sample is a single value. */
    uint32_t d1[1] = {3};
    write_bytes(tmp_path(pi, sizeof pi, "shape1-images"), buf, idx_bytes(buf, 1, d1, data, 3),
                false);
    if (data_load_idx(pi, pl, &d, why, sizeof why) != 0)
        fail_msg("%s", why);
    assert_int_equal(d.n, 3);
    assert_int_equal(d.dim, 1);
    assert_true(data_value(&d, 2) == (float)40 / 255.0f);
    data_free(&d);
}

/* data_load_idx fails; the message must contain every needle. */
static void expect_idx_error(const char *images, const char *labels_path, const char *needle1,
                             const char *needle2)
{
    char why[1024] = "";
    Dataset d = {.n = 99};
    assert_int_equal(data_load_idx(images, labels_path, &d, why, sizeof why), -1);
    assert_int_equal(d.n, 0);
    assert_null(d.x);
    assert_null(d.code);
    if (strstr(why, needle1) == NULL || (needle2 != NULL && strstr(why, needle2) == NULL))
        fail_msg("error '%s' lacks '%s' / '%s'", why, needle1, needle2 ? needle2 : "");
}

static void test_idx_truncated(void **state)
{
    (void)state;
    fill_pixels();
    char pi[512], pl[512], good_i[512], good_l[512];
    unsigned char buf[64 + sizeof pixels];
    uint32_t di[3] = {N, R, C};
    size_t len = idx_bytes(buf, 3, di, pixels, sizeof pixels);
    write_idx_pair(tmp_path(good_i, sizeof good_i, "tr-good-images"),
                   tmp_path(good_l, sizeof good_l, "tr-good-labels"), false);
    /* 3.5 samples of pixels: truncated at sample 3. */
    size_t cut = len - sizeof pixels + 3 * R * C + R * C / 2;
    for (int gz = 0; gz < 2; gz++) {
        tmp_path(pi, sizeof pi, gz ? "tr-images.gz" : "tr-images");
        write_bytes(pi, buf, cut, gz);
        expect_idx_error(pi, good_l, pi, "truncated at sample 3");
    }
    /* A gzip file cut short (a partial download): its stream ends early. */
    tmp_path(pi, sizeof pi, "tr-cut-images.gz");
    write_bytes(pi, buf, len, true);
    struct stat st;
    assert_int_equal(stat(pi, &st), 0);
    assert_int_equal(truncate(pi, st.st_size / 2), 0);
    expect_idx_error(pi, good_l, pi, "truncated at sample");
    /* Cut inside the header. */
    tmp_path(pi, sizeof pi, "tr-header-images");
    write_bytes(pi, buf, 6, false);
    expect_idx_error(pi, good_l, pi, "header");
    tmp_path(pi, sizeof pi, "tr-empty-images");
    write_bytes(pi, buf, 0, false);
    expect_idx_error(pi, good_l, pi, "header");
    /* Labels cut after 5 of 7. */
    uint32_t dl[1] = {N};
    len = idx_bytes(buf, 1, dl, labels, 5);
    write_bytes(tmp_path(pl, sizeof pl, "tr-labels"), buf, len, false);
    expect_idx_error(good_i, pl, pl, "truncated at sample 5");
    /* Longer than the header says. */
    unsigned char more[N + 3] = {0};
    len = idx_bytes(buf, 1, dl, more, sizeof more);
    write_bytes(tmp_path(pl, sizeof pl, "long-labels"), buf, len, false);
    expect_idx_error(good_i, pl, pl, "longer than its header");
}

static void test_idx_bad_headers(void **state)
{
    (void)state;
    fill_pixels();
    char pi[512], pl[512], good_i[512], good_l[512];
    unsigned char buf[64 + sizeof pixels];
    write_idx_pair(tmp_path(good_i, sizeof good_i, "bad-good-images"),
                   tmp_path(good_l, sizeof good_l, "bad-good-labels"), false);
    /* Images and labels swapped: each magic is wrong. */
    expect_idx_error(good_l, good_i, "magic 0x00000803", good_i);
    /* A wrong type byte (0x0D: float) and a wrong leading byte. */
    uint32_t di[3] = {N, R, C};
    size_t len = idx_bytes(buf, 3, di, pixels, sizeof pixels);
    buf[2] = 0x0D;
    write_bytes(tmp_path(pi, sizeof pi, "magic-images"), buf, len, true);
    expect_idx_error(pi, good_l, pi, "magic 0x00000d03");
    buf[2] = 0x08;
    buf[0] = 0x1f;
    write_bytes(pi, buf, len, false);
    expect_idx_error(pi, good_l, pi, "magic");
    /* Dims whose product overflows 64 bits, or exceeds the limit: refused
     * from the header, before any allocation. */
    uint32_t huge[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
    len = idx_bytes(buf, 3, huge, pixels, 16);
    write_bytes(tmp_path(pi, sizeof pi, "huge-images"), buf, len, false);
    expect_idx_error(pi, good_l, pi, "limit");
    uint32_t big[3] = {60000, 200, 200};
    len = idx_bytes(buf, 3, big, pixels, 16);
    write_bytes(pi, buf, len, false);
    expect_idx_error(pi, good_l, pi, "limit");
    uint32_t zero[3] = {N, 0, C};
    len = idx_bytes(buf, 3, zero, pixels, 0);
    write_bytes(pi, buf, len, false);
    expect_idx_error(pi, good_l, pi, "is 0");
    /* Labels with two dims. */
    uint32_t dl2[2] = {N, 1};
    len = idx_bytes(buf, 2, dl2, labels, N);
    write_bytes(tmp_path(pl, sizeof pl, "dims-labels"), buf, len, false);
    expect_idx_error(good_i, pl, pl, "magic 0x00000802");
    /* Counts that differ. */
    uint32_t dl[1] = {N - 1};
    len = idx_bytes(buf, 1, dl, labels, N - 1);
    write_bytes(tmp_path(pl, sizeof pl, "short-labels"), buf, len, false);
    expect_idx_error(good_i, pl, "7 images but 6 labels", pl);
    /* Missing files and a folder. */
    tmp_path(pi, sizeof pi, "no-such-images");
    expect_idx_error(pi, good_l, pi, "No such file");
    tmp_path(pl, sizeof pl, "no-such-labels");
    expect_idx_error(good_i, pl, pl, "No such file");
    expect_idx_error(tmp_dir, good_l, tmp_dir, "folder");
}

/* data_load_csv fails; the message names the file and the needle. */
static void expect_csv_error(const char *name, const char *text, const char *needle)
{
    char path[512], why[1024] = "";
    tmp_path(path, sizeof path, name);
    write_text(path, text);
    Dataset d = {.n = 99};
    assert_int_equal(data_load_csv(path, &d, why, sizeof why), -1);
    assert_int_equal(d.n, 0);
    assert_null(d.x);
    if (strstr(why, path) == NULL || strstr(why, needle) == NULL)
        fail_msg("csv %s: error '%s' lacks '%s'", name, why, needle);
}

static void test_csv_good(void **state)
{
    (void)state;
    char path[512], why[512];
    Dataset d;
    /* A header, CRLF line ends, spaces, exponents, blank lines, no final newline. */
    write_text(tmp_path(path, sizeof path, "good.csv"),
               "label,a,b,c\r\n2, 0.5,-1.25e2 ,3\r\n\r\n0,1e-3,0,7\r\n4.0,2,2,2");
    if (data_load_csv(path, &d, why, sizeof why) != 0)
        fail_msg("%s", why);
    assert_int_equal(d.n, 3);
    assert_int_equal(d.dim, 3);
    assert_int_equal(d.n_classes, 5);
    const float want[9] = {0.5f, -125.0f, 3.0f, 1e-3f, 0.0f, 7.0f, 2.0f, 2.0f, 2.0f};
    for (int i = 0; i < 9; i++)
        assert_true(d.x[i] == want[i]);
    assert_int_equal(d.y[0], 2);
    assert_int_equal(d.y[1], 0);
    assert_int_equal(d.y[2], 4);
    data_free(&d);
    /* No header; gzip works too; labels all 0 still give 2 classes. Enough
     * rows to make the arrays grow and lines to cross read chunks. */
    tmp_path(path, sizeof path, "many.csv.gz");
    gzFile f = gzopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 5000; i++)
        gzprintf(f, "0,%d,%.17g\n", i, i * 0.001);
    gzclose(f);
    if (data_load_csv(path, &d, why, sizeof why) != 0)
        fail_msg("%s", why);
    assert_int_equal(d.n, 5000);
    assert_int_equal(d.dim, 2);
    assert_int_equal(d.n_classes, 2);
    for (int i = 0; i < 5000; i++) {
        assert_true(d.x[2 * i] == (float)i);
        assert_true(d.x[2 * i + 1] == (float)(i * 0.001));
        assert_int_equal(d.y[i], 0);
    }
    data_free(&d);
}

static void test_csv_bad(void **state)
{
    (void)state;
    expect_csv_error("fields.csv", "1,2,3\n0,1,2\n1,2\n", "line 3: 2 fields, but");
    expect_csv_error("notnum.csv", "label,x\n1,2\n0,abc\n", "line 3: field 2 'abc'");
    expect_csv_error("partial.csv", "1,2x,3\n", "line 1: field 2 '2x'");
    expect_csv_error("empty-field.csv", "1,2,3\n0,,3\n", "line 2: field 2");
    expect_csv_error("nan.csv", "1,2\n0,nan\n", "line 2: field 2 'nan'");
    expect_csv_error("inf.csv", "1,2\n0,1e999\n", "line 2");
    expect_csv_error("float-range.csv", "1,2\n0,1e39\n", "line 2: field 2");
    expect_csv_error("neg-label.csv", "1,2\n-1,2\n", "line 2: label '-1'");
    expect_csv_error("frac-label.csv", "\n\n1,2\n1.5,2\n", "line 4: label '1.5'");
    expect_csv_error("big-label.csv", "1,2\n4096,2\n", "line 2: label '4096'");
    expect_csv_error("text-label.csv", "a,b\n1,2\ncat,2\n", "line 3: label 'cat'");
    expect_csv_error("no-features.csv", "1\n2\n", "line 1: a label but no features");
    expect_csv_error("header-only.csv", "label,x\n", "no samples");
    expect_csv_error("empty.csv", "", "no samples");
    char path[512], why[512];
    Dataset d;
    tmp_path(path, sizeof path, "missing.csv");
    assert_int_equal(data_load_csv(path, &d, why, sizeof why), -1);
    assert_non_null(strstr(why, path));
}

/* The NUL byte above ends the C string early; write that file by hand. */
static void test_csv_nul_byte(void **state)
{
    (void)state;
    char path[512], why[512];
    const char text[] = "1,2\n0,2\0,3\n";
    write_bytes(tmp_path(path, sizeof path, "nul2.csv"), text, sizeof text - 1, false);
    Dataset d;
    assert_int_equal(data_load_csv(path, &d, why, sizeof why), -1);
    if (strstr(why, "line 2: holds a NUL byte") == NULL)
        fail_msg("%s", why);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Loads split of Fashion-MNIST from the Debian package; fails (never skips)
 * where the package is missing. */
static void load_fashion(const char *split, Dataset *d, double *seconds)
{
    struct stat st;
    if (stat(DATA_FASHION_MNIST_DIR, &st) != 0)
        fail_msg("%s is missing: install the Debian package dataset-fashion-mnist "
                 "(scripts/deps.sh)",
                 DATA_FASHION_MNIST_DIR);
    char why[1024];
    double t0 = now_s();
    if (data_load_named("fashion-mnist", NULL, split, d, why, sizeof why) != 0)
        fail_msg("%s", why);
    if (seconds != NULL)
        *seconds = now_s() - t0;
}

static void test_fashion_mnist(void **state)
{
    (void)state;
    Dataset train, test;
    double t_train, t_test;
    load_fashion("train", &train, &t_train);
    load_fashion("test", &test, &t_test);
    print_message("fashion-mnist: train loaded in %.3f s, test in %.3f s\n", t_train, t_test);
    assert_true(t_train < 5.0); /* well under a second here; generous for sanitizers */
    assert_int_equal(train.n, 60000);
    assert_int_equal(test.n, 10000);
    assert_int_equal(train.dim, 784);
    assert_int_equal(test.dim, 784);
    assert_int_equal(train.n_classes, 10);
    assert_int_equal(test.n_classes, 10);
    int64_t count[10] = {0}, count_test[10] = {0};
    for (int64_t i = 0; i < train.n; i++) {
        assert_true(train.y[i] >= 0 && train.y[i] < 10);
        count[train.y[i]]++;
    }
    for (int64_t i = 0; i < test.n; i++) {
        assert_true(test.y[i] >= 0 && test.y[i] < 10);
        count_test[test.y[i]]++;
    }
    for (int c = 0; c < 10; c++) {
        assert_int_equal(count[c], 6000);
        assert_int_equal(count_test[c], 1000);
    }
    float lo = 1.0f, hi = 0.0f;
    double sum = 0.0;
    for (int64_t i = 0; i < train.n * train.dim; i++) {
        float v = data_value(&train, (size_t)i);
        assert_true(v >= 0.0f && v <= 1.0f);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
    }
    assert_true(lo == 0.0f && hi == 1.0f);
    /* torchvision's well-known Fashion-MNIST mean, 0.2860. */
    assert_true(fabs(sum / (double)(train.n * train.dim) - 0.2860) < 1e-3);
    data_free(&train);
    data_free(&test);
}

static void test_named(void **state)
{
    (void)state;
    fill_pixels();
    char folder[256], pi[512], pl[512], why[1024];
    Dataset d;
    /* An MNIST-layout folder: gzip train files, plain test files. */
    tmp_path(folder, sizeof folder, "mnist-folder");
    assert_int_equal(mkdir(folder, 0700), 0);
    snprintf(pi, sizeof pi, "%s/train-images-idx3-ubyte.gz", folder);
    snprintf(pl, sizeof pl, "%s/train-labels-idx1-ubyte.gz", folder);
    write_idx_pair(pi, pl, true);
    snprintf(pi, sizeof pi, "%s/t10k-images-idx3-ubyte", folder);
    snprintf(pl, sizeof pl, "%s/t10k-labels-idx1-ubyte", folder);
    write_idx_pair(pi, pl, false);
    const char *splits[2] = {"train", "test"};
    for (int s = 0; s < 2; s++) {
        if (data_load_named("mnist", folder, splits[s], &d, why, sizeof why) != 0)
            fail_msg("%s", why);
        check_small_set(&d);
        data_free(&d);
        if (data_load_named(folder, NULL, splits[s], &d, why, sizeof why) != 0)
            fail_msg("%s", why);
        check_small_set(&d);
        data_free(&d);
        if (data_load_named("fashion-mnist", folder, splits[s], &d, why, sizeof why) != 0)
            fail_msg("%s", why);
        check_small_set(&d);
        data_free(&d);
    }
    /* mnist without a folder: Debian has no package for it. */
    assert_int_equal(data_load_named("mnist", NULL, "train", &d, why, sizeof why), -1);
    assert_non_null(strstr(why, "Debian has no MNIST package"));
    /* A folder without the files names the file it looked for. */
    char empty[256];
    tmp_path(empty, sizeof empty, "empty-folder");
    assert_int_equal(mkdir(empty, 0700), 0);
    assert_int_equal(data_load_named(empty, NULL, "test", &d, why, sizeof why), -1);
    snprintf(pi, sizeof pi, "%s/t10k-images-idx3-ubyte.gz", empty);
    if (strstr(why, pi) == NULL)
        fail_msg("%s lacks %s", why, pi);
    assert_int_equal(data_load_named("fashion-mnist", empty, "train", &d, why, sizeof why), -1);
    assert_non_null(strstr(why, "train-images-idx3-ubyte.gz"));
    assert_non_null(strstr(why, empty));
    /* CSV: the test split from the second path, or empty. */
    char train_csv[512], test_csv[512];
    write_text(tmp_path(train_csv, sizeof train_csv, "named-train.csv"), "1,2,3\n0,4,5\n");
    write_text(tmp_path(test_csv, sizeof test_csv, "named-test.csv"), "1,6,7\n");
    if (data_load_named(train_csv, test_csv, "train", &d, why, sizeof why) != 0)
        fail_msg("%s", why);
    assert_int_equal(d.n, 2);
    assert_int_equal(d.dim, 2);
    data_free(&d);
    if (data_load_named(train_csv, test_csv, "test", &d, why, sizeof why) != 0)
        fail_msg("%s", why);
    assert_int_equal(d.n, 1);
    assert_true(d.x[1] == 7.0f);
    data_free(&d);
    assert_int_equal(data_load_named(train_csv, NULL, "test", &d, why, sizeof why), 0);
    assert_int_equal(d.n, 0);
    assert_null(d.x);
    /* Unknown names, missing paths and bad splits. */
    assert_int_equal(data_load_named("cifar-10", NULL, "train", &d, why, sizeof why), -1);
    assert_non_null(strstr(why, "cifar-10"));
    assert_non_null(strstr(why, "no such file or folder"));
    assert_int_equal(data_load_named("/nonexistent/x.csv", NULL, "train", &d, why, sizeof why), -1);
    assert_non_null(strstr(why, "/nonexistent/x.csv"));
    assert_int_equal(data_load_named(folder, NULL, "validation", &d, why, sizeof why), -1);
    assert_non_null(strstr(why, "validation"));
    /* The default folder: works here, where the package is installed. */
    struct stat st;
    if (stat(DATA_FASHION_MNIST_DIR, &st) != 0)
        fail_msg("%s is missing: install the Debian package dataset-fashion-mnist",
                 DATA_FASHION_MNIST_DIR);
}

static bool is_permutation(const int64_t *perm, int64_t n)
{
    bool *seen = calloc((size_t)(n > 0 ? n : 1), 1);
    assert_non_null(seen);
    bool ok = true;
    for (int64_t i = 0; i < n && ok; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]])
            ok = false;
        else
            seen[perm[i]] = true;
    }
    free(seen);
    return ok;
}

static void test_epoch_order(void **state)
{
    (void)state;
    enum { M = 1000 };
    static int64_t a[M], b[M];
    const int64_t sizes[] = {0, 1, 2, 3, 17, M};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        data_epoch_order(sizes[s], 42, 0, a);
        assert_true(is_permutation(a, sizes[s]));
    }
    data_epoch_order(M, 42, 3, a);
    data_epoch_order(M, 42, 3, b);
    assert_memory_equal(a, b, sizeof a);
    /* Epochs and seeds give different orders, and orders are far from the
     * identity (a shuffle, not a rotation). */
    for (int64_t e = 0; e < 20; e++) {
        data_epoch_order(M, 42, e, a);
        data_epoch_order(M, 42, e + 1, b);
        assert_true(memcmp(a, b, sizeof a) != 0);
        data_epoch_order(M, 43, e, b);
        assert_true(memcmp(a, b, sizeof a) != 0);
        int fixed = 0;
        for (int i = 0; i < M; i++)
            fixed += a[i] == i;
        assert_true(fixed < 10); /* expected 1 */
    }
    /* Uniformity: over 6,000 epochs each of the 6 orders of 3 appears
     * about 1,000 times (a biased shuffle such as swapping with any index
     * gives counts from 666 to 1,333). */
    int counts[6] = {0};
    for (int64_t e = 0; e < 6000; e++) {
        int64_t p[3];
        data_epoch_order(3, 7, e, p);
        counts[p[0] * 2 + (p[1] > p[2] ? 1 : 0)]++;
    }
    for (int i = 0; i < 6; i++)
        if (counts[i] < 880 || counts[i] > 1120)
            fail_msg("order %d appeared %d times in 6000", i, counts[i]);
}

static void test_shards(void **state)
{
    (void)state;
    enum { M = 103 };
    static int64_t perm[M], idx[M];
    int hits[M];
    data_epoch_order(M, 9, 1, perm);
    const int64_t batches[] = {1, 4, 10, 64, 103, 200};
    for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
        int64_t batch = batches[bi];
        for (int k = 1; k <= 4; k++) {
            int64_t start;
            for (start = 0; start < M; start += batch) {
                int64_t end = start + batch < M ? start + batch : M;
                memset(hits, 0, sizeof hits);
                int64_t total = 0;
                for (int r = 0; r < k; r++) {
                    int64_t m = data_shard(perm, M, start, batch, r, k, idx);
                    /* Ranks' shares differ by at most one. */
                    int64_t want = (end - start) / k + ((end - start) % k > r ? 1 : 0);
                    assert_int_equal(m, want);
                    for (int64_t i = 0; i < m; i++) {
                        assert_int_equal(idx[i], perm[start + r + i * k]);
                        hits[idx[i]]++;
                    }
                    total += m;
                }
                /* Union is the global batch, and no sample twice. */
                assert_int_equal(total, end - start);
                for (int64_t p = start; p < end; p++)
                    assert_int_equal(hits[perm[p]], 1);
            }
            assert_true(start >= M);
        }
    }
    /* The short last batch of 103 with batch 10: 3 samples over 4 ranks. */
    assert_int_equal(data_shard(perm, M, 100, 10, 3, 4, idx), 0);
    assert_int_equal(data_shard(perm, M, 100, 10, 2, 4, idx), 1);
    assert_int_equal(idx[0], perm[102]);
}

/* A synthetic dataset: row i is (i, 2i + 1000, ..., ) with label i % 3. */
static void make_synthetic(Dataset *d, int64_t n, int dim)
{
    *d = (Dataset){0}; /* floats: no code */
    d->n = n;
    d->dim = dim;
    d->n_classes = 3;
    d->x = malloc((size_t)(n * dim) * sizeof *d->x);
    d->y = malloc((size_t)n * sizeof *d->y);
    assert_non_null(d->x);
    assert_non_null(d->y);
    for (int64_t i = 0; i < n; i++) {
        for (int j = 0; j < dim; j++)
            d->x[i * dim + j] = (float)(i * (j + 1) + 1000 * j);
        d->y[i] = (int32_t)(i % 3);
    }
}

static void mean_std(const Dataset *d, double *mean, double *std)
{
    double s = 0, ss = 0;
    int64_t total = d->n * d->dim;
    for (int64_t i = 0; i < total; i++)
        s += data_value(d, (size_t)i);
    *mean = s / (double)total;
    for (int64_t i = 0; i < total; i++)
        ss += (data_value(d, (size_t)i) - *mean) * (data_value(d, (size_t)i) - *mean);
    *std = sqrt(ss / (double)total);
}

static void test_split_truncate_normalize(void **state)
{
    (void)state;
    char why[512];
    Dataset d, val, d2, val2;
    make_synthetic(&d, 1000, 5);
    data_truncate(&d, 800);
    assert_int_equal(d.n, 800);
    data_truncate(&d, 900); /* larger than n: nothing */
    assert_int_equal(d.n, 800);
    assert_true(d.x[799 * 5 + 1] == 799.0f * 2 + 1000);
    assert_int_equal(data_split(&d, 800, 1, &val, why, sizeof why), -1);
    assert_non_null(strstr(why, "800"));
    assert_int_equal(data_split(&d, -1, 1, &val, why, sizeof why), -1);
    if (data_split(&d, 100, 1, &val, why, sizeof why) != 0)
        fail_msg("%s", why);
    assert_int_equal(d.n, 700);
    assert_int_equal(val.n, 100);
    assert_int_equal(val.dim, 5);
    assert_int_equal(val.n_classes, 3);
    /* Rows stay whole; train keeps its order; together they are all 800. */
    int seen[800] = {0};
    for (int64_t i = 0; i < d.n; i++) {
        int64_t r = (int64_t)d.x[i * 5];
        assert_true(r >= 0 && r < 800);
        assert_true(d.x[i * 5 + 4] == (float)(r * 5 + 4000));
        assert_int_equal(d.y[i], r % 3);
        if (i > 0)
            assert_true(d.x[i * 5] > d.x[(i - 1) * 5]);
        seen[r]++;
    }
    bool sorted = true;
    for (int64_t i = 0; i < val.n; i++) {
        int64_t r = (int64_t)val.x[i * 5];
        assert_true(val.x[i * 5 + 2] == (float)(r * 3 + 2000));
        assert_int_equal(val.y[i], r % 3);
        seen[r]++;
        if (i > 0 && val.x[i * 5] < val.x[(i - 1) * 5])
            sorted = false;
    }
    assert_false(sorted); /* permutation order, not file order */
    for (int i = 0; i < 800; i++)
        assert_int_equal(seen[i], 1);
    /* Same seed, same split; another seed, another split. */
    make_synthetic(&d2, 800, 5);
    assert_int_equal(data_split(&d2, 100, 1, &val2, why, sizeof why), 0);
    assert_memory_equal(val.x, val2.x, 100 * 5 * sizeof(float));
    data_free(&d2);
    data_free(&val2);
    make_synthetic(&d2, 800, 5);
    assert_int_equal(data_split(&d2, 100, 2, &val2, why, sizeof why), 0);
    assert_true(memcmp(val.x, val2.x, 100 * 5 * sizeof(float)) != 0);
    data_free(&d2);
    data_free(&val2);
    /* Normalize: train to mean 0, std 1; val with train's numbers. */
    double m0, s0, mean, std, m1, s1;
    mean_std(&d, &m0, &s0);
    float v0 = val.x[7];
    Dataset *others[1] = {&val};
    data_normalize(&d, others, 1, &mean, &std);
    assert_true(fabs(mean - m0) < 1e-9 * fabs(m0));
    assert_true(fabs(std - s0) < 1e-9 * s0);
    mean_std(&d, &m1, &s1);
    assert_true(fabs(m1) < 1e-5);
    assert_true(fabs(s1 - 1.0) < 1e-5);
    assert_true(fabs(val.x[7] - (v0 - mean) / std) < 1e-5);
    data_free(&d);
    data_free(&val);
    /* A constant dataset: std 0 is not divided by. */
    make_synthetic(&d, 10, 2);
    for (int i = 0; i < 20; i++)
        d.x[i] = 3.0f;
    data_normalize(&d, NULL, 0, &mean, &std);
    assert_true(mean == 3.0 && std == 1.0);
    for (int i = 0; i < 20; i++)
        assert_true(d.x[i] == 0.0f);
    /* A split of 0 leaves everything in train. */
    assert_int_equal(data_split(&d, 0, 1, &val, why, sizeof why), 0);
    assert_int_equal(val.n, 0);
    assert_int_equal(d.n, 10);
    data_free(&val);
    data_free(&d);
}

/* The trainer's recipe on the real data: truncate, split, normalize. */
static void test_fashion_pipeline(void **state)
{
    (void)state;
    Dataset train, test, val;
    char why[512];
    load_fashion("train", &train, NULL);
    load_fashion("test", &test, NULL);
    data_truncate(&train, 20000);
    if (data_split(&train, 5000, 11, &val, why, sizeof why) != 0)
        fail_msg("%s", why);
    assert_int_equal(train.n, 15000);
    assert_int_equal(val.n, 5000);
    double mean, std, m, s;
    Dataset *others[2] = {&val, &test};
    data_normalize(&train, others, 2, &mean, &std);
    assert_true(mean > 0.25 && mean < 0.32);
    assert_true(std > 0.3 && std < 0.4);
    mean_std(&train, &m, &s);
    assert_true(fabs(m) < 1e-4);
    assert_true(fabs(s - 1.0) < 1e-4);
    /* Held-out data is near, not at, mean 0 and std 1. */
    mean_std(&val, &m, &s);
    assert_true(fabs(m) < 0.05 && fabs(s - 1.0) < 0.05);
    mean_std(&test, &m, &s);
    assert_true(fabs(m) < 0.05 && fabs(s - 1.0) < 0.05);
    /* Gather an epoch's first shard and compare to the rows. */
    int64_t *perm = malloc((size_t)train.n * sizeof *perm);
    int64_t idx[64];
    float *x = malloc(64 * 784 * sizeof *x);
    int32_t y[64];
    assert_non_null(perm);
    assert_non_null(x);
    data_epoch_order(train.n, 11, 0, perm);
    int64_t mshard = data_shard(perm, train.n, 128, 128, 1, 2, idx);
    assert_int_equal(mshard, 64);
    data_gather(&train, idx, mshard, x, y);
    for (int64_t i = 0; i < mshard; i++) {
        assert_int_equal(idx[i], perm[128 + 1 + 2 * i]);
        for (int j = 0; j < 784; j++)
            assert_true(x[i * 784 + j] == data_value(&train, (size_t)(idx[i] * 784 + j)));
        assert_int_equal(y[i], train.y[idx[i]]);
    }
    free(perm);
    free(x);
    data_free(&train);
    data_free(&val);
    data_free(&test);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idx_plain_and_gzip),
        cmocka_unit_test(test_idx_shapes),
        cmocka_unit_test(test_idx_truncated),
        cmocka_unit_test(test_idx_bad_headers),
        cmocka_unit_test(test_csv_good),
        cmocka_unit_test(test_csv_bad),
        cmocka_unit_test(test_csv_nul_byte),
        cmocka_unit_test(test_named),
        cmocka_unit_test(test_fashion_mnist),
        cmocka_unit_test(test_epoch_order),
        cmocka_unit_test(test_shards),
        cmocka_unit_test(test_split_truncate_normalize),
        cmocka_unit_test(test_fashion_pipeline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
