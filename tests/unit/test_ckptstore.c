/* Unit tests of server/ckptstore.c: paths, put and get (a known SHA-256),
 * a hash mismatch refused with nothing written, a replacement that a
 * reader of the old file never sees half of, removing a trial's
 * checkpoints and nothing else, and the start's sweep of what no row
 * holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckptstore.h"

/* SHA-256 of "abc" (FIPS 180-2, appendix B.1) and of no bytes. */
#define SHA_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static char root[] = "/tmp/rung-test-ckptstore-XXXXXX";

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(root) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

/* A fresh data folder under root. */
static void data_dir(char *out, const char *name)
{
    snprintf(out, PATH_MAX, "%s/%s", root, name);
    assert_int_equal(mkdir(out, 0700), 0);
}

/* The names in folder dir, space-separated and sorted. */
static void listing(const char *dir, char *out, size_t size)
{
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    assert_true(n >= 0);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            strncat(out, name, size - strlen(out) - 1);
            strncat(out, " ", size - strlen(out) - 1);
        }
        free(list[i]);
    }
    free(list);
}

static void test_path(void **state)
{
    (void)state;
    char out[PATH_MAX];
    assert_int_equal(ckptstore_path("/var/lib/rung", 17, 250, out, sizeof out), 0);
    assert_string_equal(out, "/var/lib/rung/checkpoints/17-250.tar");
    assert_int_equal(ckptstore_path(".", 1, 0, out, sizeof out), 0);
    assert_string_equal(out, "./checkpoints/1-0.tar");
    assert_int_equal(ckptstore_path(".", INT64_MAX, INT64_MAX, out, sizeof out), 0);
    assert_string_equal(out, "./checkpoints/9223372036854775807-9223372036854775807.tar");
    char small[24];
    errno = 0;
    assert_int_equal(ckptstore_path("/var/lib/rung", 17, 250, small, sizeof small), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    assert_int_equal(ckptstore_path(".", 0, 1, out, sizeof out), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(ckptstore_path(".", 1, -1, out, sizeof out), -1);
    assert_int_equal(errno, EINVAL);
}

static void test_put_get(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 64], hex[65], err[512];
    data_dir(dir, "putget");

    /* Absent: 1. */
    void *data = (void *)1;
    size_t len = 7;
    assert_int_equal(ckptstore_get(dir, 3, 10, &data, &len, hex), 1);
    assert_null(data);
    assert_int_equal(len, 0);

    assert_int_equal(ckptstore_put(dir, 3, 10, "abc", 3, NULL, hex, err, sizeof err), 0);
    assert_string_equal(hex, SHA_ABC);
    struct stat st;
    snprintf(path, sizeof path, "%s/checkpoints", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(ckptstore_path(dir, 3, 10, path, sizeof path), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 3);
    assert_int_equal(st.st_mode & 0777, 0600);

    char got[65];
    assert_int_equal(ckptstore_get(dir, 3, 10, &data, &len, got), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(data, "abc", 3);
    assert_string_equal(got, SHA_ABC);
    free(data);

    /* The expected hash, in either case; and no bytes at all. */
    assert_int_equal(ckptstore_put(dir, 3, 11, "abc", 3, SHA_ABC, hex, err, sizeof err), 0);
    char upper[65];
    for (int i = 0; i < 65; i++)
        upper[i] = (char)(SHA_ABC[i] >= 'a' && SHA_ABC[i] <= 'f' ? SHA_ABC[i] - 32 : SHA_ABC[i]);
    assert_int_equal(ckptstore_put(dir, 3, 12, "abc", 3, upper, hex, err, sizeof err), 0);
    assert_int_equal(ckptstore_put(dir, 3, 13, NULL, 0, SHA_EMPTY, hex, err, sizeof err), 0);
    assert_string_equal(hex, SHA_EMPTY);
    assert_int_equal(ckptstore_get(dir, 3, 13, &data, &len, got), 0);
    assert_non_null(data);
    assert_int_equal(len, 0);
    assert_string_equal(got, SHA_EMPTY);
    free(data);

    /* A megabyte and a bit, every byte value. */
    size_t n = (1 << 20) + 77;
    unsigned char *big = malloc(n);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = (unsigned char)(i * 131 + (i >> 9));
    assert_int_equal(ckptstore_put(dir, 4, 1, big, n, NULL, hex, err, sizeof err), 0);
    assert_int_equal(ckptstore_get(dir, 4, 1, &data, &len, got), 0);
    assert_int_equal(len, n);
    assert_memory_equal(data, big, n);
    assert_string_equal(got, hex);
    free(data);
    free(big);

    /* No data folder: an error that names the folder it could not make. */
    snprintf(path, sizeof path, "%s/no-such", dir);
    assert_int_equal(ckptstore_put(path, 1, 1, "x", 1, NULL, hex, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
}

static void test_mismatch_writes_nothing(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 64], hex[65] = "", err[512], names[512];
    data_dir(dir, "mismatch");

    /* The first put, refused: not even the folder is made. */
    assert_int_equal(ckptstore_put(dir, 5, 1, "abd", 3, SHA_ABC, hex, err, sizeof err), -1);
    assert_non_null(strstr(err, SHA_ABC));
    assert_non_null(strstr(err, "a52d159f262b2c6d")); /* SHA-256("abd") begins so */
    assert_string_equal(hex, "");
    snprintf(path, sizeof path, "%s/checkpoints", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), -1);

    /* A refused replacement leaves the stored checkpoint, and no
     * temporary file. */
    assert_int_equal(ckptstore_put(dir, 5, 1, "abc", 3, SHA_ABC, hex, err, sizeof err), 0);
    assert_int_equal(ckptstore_put(dir, 5, 1, "abd", 3, SHA_ABC, hex, err, sizeof err), -1);
    void *data;
    size_t len;
    char got[65];
    assert_int_equal(ckptstore_get(dir, 5, 1, &data, &len, got), 0);
    assert_memory_equal(data, "abc", 3);
    free(data);
    listing(path, names, sizeof names);
    assert_string_equal(names, "5-1.tar ");

    /* Not a hash at all: refused the same way. */
    assert_int_equal(ckptstore_put(dir, 5, 2, "abc", 3, "abc", hex, err, sizeof err), -1);
    assert_non_null(strstr(err, SHA_ABC));
    listing(path, names, sizeof names);
    assert_string_equal(names, "5-1.tar ");
}

static void test_replace_is_atomic(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 64], hex[65], err[512], names[512];
    data_dir(dir, "replace");
    const char *v1 = "version one, the older checkpoint";
    const char *v2 = "v2";
    assert_int_equal(ckptstore_put(dir, 9, 100, v1, strlen(v1), NULL, hex, err, sizeof err), 0);

    /* A reader that opened the old file reads all of it after the
     * replacement: the name moved to a new file, the old was not
     * rewritten. */
    assert_int_equal(ckptstore_path(dir, 9, 100, path, sizeof path), 0);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat before, after;
    assert_int_equal(fstat(fd, &before), 0);
    assert_int_equal(ckptstore_put(dir, 9, 100, v2, strlen(v2), NULL, hex, err, sizeof err), 0);
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    assert_int_equal(n, (ssize_t)strlen(v1));
    assert_memory_equal(buf, v1, strlen(v1));
    assert_int_equal(stat(path, &after), 0);
    assert_true(before.st_ino != after.st_ino);

    void *data;
    size_t len;
    char got[65];
    assert_int_equal(ckptstore_get(dir, 9, 100, &data, &len, got), 0);
    assert_int_equal(len, strlen(v2));
    assert_memory_equal(data, v2, len);
    assert_string_equal(got, hex);
    free(data);

    /* Only the checkpoint is there: no temporary file. */
    snprintf(path, sizeof path, "%s/checkpoints", dir);
    listing(path, names, sizeof names);
    assert_string_equal(names, "9-100.tar ");
}

static void test_remove_trial(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 64], hex[65], err[512], names[512];
    data_dir(dir, "remove");

    /* No checkpoints folder: nothing to remove. */
    assert_int_equal(ckptstore_remove_trial(dir, 1), 0);

    const int64_t kept[][2] = {{12, 10}, {2, 1}, {21, 5}};
    assert_int_equal(ckptstore_put(dir, 1, 10, "a", 1, NULL, hex, err, sizeof err), 0);
    assert_int_equal(ckptstore_put(dir, 1, 20, "b", 1, NULL, hex, err, sizeof err), 0);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(ckptstore_put(dir, kept[i][0], kept[i][1], "c", 1, NULL, hex, err,
                                       sizeof err),
                         0);
    /* A crashed put's temporary file of trial 1 (removed), and files that
     * are not trial 1's checkpoints (kept). */
    const char *others[] = {".1-30.tar.Ab12Cd", "1-x.tar", "1-10.tar.bak", "notes.txt",
                            ".12-1.tar.Zz99Yy"};
    for (size_t i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/checkpoints/%s", dir, others[i]);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
    }
    assert_int_equal(ckptstore_remove_trial(dir, 1), 2);
    snprintf(path, sizeof path, "%s/checkpoints", dir);
    listing(path, names, sizeof names);
    assert_string_equal(names, ".12-1.tar.Zz99Yy 1-10.tar.bak 1-x.tar 12-10.tar 2-1.tar "
                               "21-5.tar notes.txt ");
    void *data;
    size_t len;
    assert_int_equal(ckptstore_get(dir, 1, 10, &data, &len, hex), 1);
    assert_int_equal(ckptstore_get(dir, 12, 10, &data, &len, hex), 0);
    free(data);

    /* Again: nothing left to remove. */
    assert_int_equal(ckptstore_remove_trial(dir, 1), 0);
    assert_int_equal(ckptstore_remove_trial(dir, 0), -1);
}

/* keep() of test_sweep: the rows "in the database". */
static bool keep_listed(void *ctx, int64_t trial_id, int64_t step)
{
    const int64_t(*rows)[2] = ctx;
    for (int i = 0; rows[i][0] != 0; i++)
        if (rows[i][0] == trial_id && rows[i][1] == step)
            return true;
    return false;
}

static void test_remove_and_sweep(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 64], hex[65], err[512], names[512];
    data_dir(dir, "sweep");
    const int64_t rows[][2] = {{3, 4}, {7, 8}, {0, 0}};
    assert_int_equal(ckptstore_sweep(dir, keep_listed, (void *)rows), 0); /* no folder yet */
    const int64_t put[][2] = {{3, 4}, {3, 8}, {7, 8}, {9, 12}};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(ckptstore_put(dir, put[i][0], put[i][1], "x", 1, NULL, hex, err,
                                       sizeof err),
                         0);
    /* One removed by name; then the sweep: rows 3-4 and 7-8 stay, 9-12 has
     * none, and a half upload and a crashed put's file go; what is not
     * ours stays. */
    assert_int_equal(ckptstore_remove(dir, 3, 8), 0);
    assert_int_equal(ckptstore_remove(dir, 3, 8), 0); /* gone already: fine */
    const char *others[] = {".upload-Ab12Cd", ".9-16.tar.Zz99Yy", "notes.txt", "03-4.tar"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/checkpoints/%s", dir, others[i]);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
    }
    assert_int_equal(ckptstore_sweep(dir, keep_listed, (void *)rows), 3);
    snprintf(path, sizeof path, "%s/checkpoints", dir);
    listing(path, names, sizeof names);
    assert_string_equal(names, "03-4.tar 3-4.tar 7-8.tar notes.txt ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path),
        cmocka_unit_test(test_put_get),
        cmocka_unit_test(test_mismatch_writes_nothing),
        cmocka_unit_test(test_replace_is_atomic),
        cmocka_unit_test(test_remove_trial),
        cmocka_unit_test(test_remove_and_sweep),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
