/* Unit tests of worker/ckpt.c: a trial folder copied (never hard-linked) (and
 * with bytes across file systems), the logs left out, existing entries
 * replaced; pack and unpack giving back the same tree; a tar changed by
 * one byte refused before anything is extracted; entries that would land
 * outside the folder (a "..", an absolute name, a link to climb through),
 * links of either kind, devices and FIFOs, compressed tars (a gzip bomb),
 * headers that say more bytes than the tar holds, sparse files and too
 * many entries refused, naming the entry, with nothing left behind: the
 * folder that holds the destination unchanged and the destination as it
 * was (not made when missing). A working directory's tree
 * (ckpt_unpack_tree) keeps its links that stay inside and its own logs,
 * and refuses, naming the entry, each way out: absolute names, "..",
 * links absolute, climbing too far, with a ".." after a name or with an
 * entry through them, hard links, FIFOs, devices and a gzip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
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

#include "ckpt.h"

#define BIG_SIZE (700 * 1024 + 13) /* several of ckpt.c's reads, not a multiple of any */

static char root[] = "/tmp/rung-test-ckpt-XXXXXX";

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void write_text(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text));
}

/* The whole file; *n its length. */
static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t k;
    while ((k = fread(buf + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    fclose(f);
    *n = len;
    return buf;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void path_of(char *out, const char *dir, const char *rel)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, rel);
    assert_true(n > 0 && n < PATH_MAX);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        chmod(path, 0700);
    return remove(path);
}

static void remove_tree(const char *path)
{
    nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The names in folder dir, sorted, one per line: a folder's listing to
 * compare before and after. */
static char *listing(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        assert_true(n < 256);
        names[n] = strdup(e->d_name);
        assert_non_null(names[n]);
        n++;
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort: a few names */
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(names[i]) + 1;
    char *out = malloc(len);
    assert_non_null(out);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strcat(out, names[i]);
        strcat(out, "\n");
        free(names[i]);
    }
    return out;
}

/* A trial folder: weights bigger than a read, nested folders, a read-only
 * file, a link, a FIFO, the two logs, and a stdout.log below the top
 * (not a log: copied). */
static void make_trial(const char *dir)
{
    char p[PATH_MAX];
    assert_int_equal(mkdir(dir, 0700), 0);
    char *big = malloc(BIG_SIZE);
    assert_non_null(big);
    uint32_t x = 12345;
    for (size_t i = 0; i < BIG_SIZE; i++) {
        x = x * 1664525u + 1013904223u;
        big[i] = (char)(x >> 24);
    }
    path_of(p, dir, "weights.bin");
    write_bytes(p, big, BIG_SIZE);
    free(big);
    path_of(p, dir, "stdout.log");
    write_text(p, "the source trial's output\n");
    path_of(p, dir, "stderr.log");
    write_text(p, "the source trial's errors\n");
    path_of(p, dir, "ckpt");
    assert_int_equal(mkdir(p, 0750), 0);
    path_of(p, dir, "ckpt/step-7.json");
    write_text(p, "{\"step\": 7}\n");
    path_of(p, dir, "ckpt/stdout.log");
    write_text(p, "not a log: below the top\n");
    path_of(p, dir, "ckpt/deep");
    assert_int_equal(mkdir(p, 0700), 0);
    path_of(p, dir, "ckpt/deep/empty");
    write_text(p, "");
    path_of(p, dir, "ckpt/deep/ro.txt");
    write_text(p, "read-only");
    assert_int_equal(chmod(p, 0444), 0);
    path_of(p, dir, "latest");
    assert_int_equal(symlink("ckpt/step-7.json", p), 0);
    path_of(p, dir, "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    path_of(p, dir, "empty-dir");
    assert_int_equal(mkdir(p, 0700), 0);
}

/* Whether b holds what a holds, the same way: names, types, bytes, link
 * targets, file modes; at the top, a's logs and FIFO are not expected in
 * b, nor a's symbolic links unless links is set (a tar carries none).
 * mtimes too when times is set. */
static void assert_same_tree(const char *a, const char *b, bool top, bool times, bool links)
{
    DIR *d = opendir(a);
    assert_non_null(d);
    struct dirent *e;
    int na = 0;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        char pa[PATH_MAX], pb[PATH_MAX];
        path_of(pa, a, name);
        path_of(pb, b, name);
        struct stat sa, sb;
        assert_int_equal(lstat(pa, &sa), 0);
        bool logs = top && (strcmp(name, "stdout.log") == 0 || strcmp(name, "stderr.log") == 0);
        if (logs || S_ISFIFO(sa.st_mode) || (S_ISLNK(sa.st_mode) && !links))
            continue;
        na++;
        if (lstat(pb, &sb) != 0)
            fail_msg("%s is missing", pb);
        assert_int_equal(sa.st_mode & S_IFMT, sb.st_mode & S_IFMT);
        if (S_ISREG(sa.st_mode)) {
            assert_int_equal(sa.st_mode & 0777, sb.st_mode & 0777);
            size_t la, lb;
            char *ca = read_all(pa, &la), *cb = read_all(pb, &lb);
            assert_non_null(ca);
            assert_non_null(cb);
            assert_int_equal(la, lb);
            assert_memory_equal(ca, cb, la);
            free(ca);
            free(cb);
            if (times)
                assert_int_equal(sa.st_mtim.tv_sec, sb.st_mtim.tv_sec);
        } else if (S_ISLNK(sa.st_mode)) {
            char ta[PATH_MAX], tb[PATH_MAX];
            ssize_t la = readlink(pa, ta, sizeof ta - 1), lb = readlink(pb, tb, sizeof tb - 1);
            assert_true(la > 0 && lb > 0);
            ta[la] = tb[lb] = '\0';
            assert_string_equal(ta, tb);
        } else {
            assert_true(S_ISDIR(sa.st_mode));
            assert_same_tree(pa, pb, false, times, links);
        }
    }
    closedir(d);
    /* and nothing more (the logs of b's own aside, at the top) */
    d = opendir(b);
    assert_non_null(d);
    int nb = 0;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        if (top && (strcmp(name, "stdout.log") == 0 || strcmp(name, "stderr.log") == 0))
            continue;
        nb++;
    }
    closedir(d);
    assert_int_equal(na, nb);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(root) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    remove_tree(root);
    return 0;
}

/* ---- copies ---- */

static void test_copy_files(void **state)
{
    (void)state;
    char src[PATH_MAX], dst[PATH_MAX], a[PATH_MAX], b[PATH_MAX], err[512];
    path_of(src, root, "copy-src");
    path_of(dst, root, "copy-dst");
    make_trial(src);

    /* The destination, a trial that ran already: its own logs, a file and
     * a folder the copy replaces, and a file of its own the copy keeps. */
    assert_int_equal(mkdir(dst, 0700), 0);
    path_of(a, dst, "stdout.log");
    write_text(a, "the destination's own output\n");
    path_of(a, dst, "weights.bin");
    write_text(a, "older weights");
    path_of(a, dst, "ckpt");
    assert_int_equal(mkdir(a, 0700), 0);
    path_of(a, dst, "ckpt/step-3.json");
    write_text(a, "{\"step\": 3}\n");
    path_of(a, dst, "mine.txt");
    write_text(a, "kept");
    path_of(a, dst, "latest"); /* a file where the source has a link */
    write_text(a, "not a link");

    assert_int_equal(ckpt_copy_dir(src, dst, err, sizeof err), 0);
    assert_string_equal(err, "");

    /* Regular files are copies, not links: writing into the copy in place
     * (as torch.save does) leaves the source as it was. */
    const char *copied[] = {"weights.bin", "ckpt/step-7.json", "ckpt/stdout.log", "ckpt/deep/empty",
                            "ckpt/deep/ro.txt"};
    for (size_t i = 0; i < sizeof copied / sizeof *copied; i++) {
        struct stat sa, sb;
        path_of(a, src, copied[i]);
        path_of(b, dst, copied[i]);
        assert_int_equal(stat(a, &sa), 0);
        assert_int_equal(stat(b, &sb), 0);
        assert_true(sa.st_ino != sb.st_ino);
        assert_int_equal(sa.st_nlink, 1);
        assert_int_equal(sb.st_nlink, 1);
        assert_int_equal(sa.st_size, sb.st_size);
    }
    {
        size_t before_len;
        path_of(a, src, "weights.bin");
        char *before = read_all(a, &before_len);
        path_of(b, dst, "weights.bin");
        FILE *f = fopen(b, "w"); /* truncates in place */
        assert_non_null(f);
        fputs("overwritten by the receiver", f);
        fclose(f);
        size_t after_len;
        char *after = read_all(a, &after_len);
        assert_int_equal(after_len, before_len);
        assert_memory_equal(after, before, before_len);
        free(before);
        free(after);
        assert_int_equal(ckpt_copy_dir(src, dst, err, sizeof err), 0); /* as it was */
    }
    /* The link is a link, with the same target. */
    char target[PATH_MAX];
    path_of(b, dst, "latest");
    ssize_t n = readlink(b, target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = '\0';
    assert_string_equal(target, "ckpt/step-7.json");
    /* Folders keep their mode. */
    struct stat st;
    path_of(b, dst, "ckpt");
    assert_int_equal(stat(b, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0750);
    /* The logs at the top are not copied: the destination's stay its own,
     * and the source's stderr.log is not there. */
    size_t len;
    path_of(b, dst, "stdout.log");
    char *text = read_all(b, &len);
    assert_non_null(text);
    assert_int_equal(len, strlen("the destination's own output\n"));
    assert_memory_equal(text, "the destination's own output\n", len);
    free(text);
    path_of(b, dst, "stderr.log");
    assert_false(exists(b));
    /* The FIFO is left out; the destination holds only the source's
     * entries (and its own logs): its other files are gone, so that an
     * old checkpoint of its own is never taken for the donor's. */
    path_of(b, dst, "fifo");
    assert_false(exists(b));
    path_of(b, dst, "ckpt/step-3.json");
    assert_false(exists(b));
    path_of(b, dst, "mine.txt");
    assert_false(exists(b));
    assert_same_tree(src, dst, true, true, true);

    /* A second copy over the first: the same result. */
    assert_int_equal(ckpt_copy_dir(src, dst, err, sizeof err), 0);
    assert_same_tree(src, dst, true, true, true);
    path_of(a, src, "weights.bin");
    assert_int_equal(stat(a, &st), 0);
    assert_int_equal(st.st_nlink, 1);
}

static void test_copy_bytes_across_file_systems(void **state)
{
    (void)state;
    char src[PATH_MAX], a[PATH_MAX], b[PATH_MAX], err[512];
    char other[] = "/dev/shm/rung-test-ckpt-XXXXXX";
    struct stat sr, so;
    if (stat("/dev/shm", &so) != 0 || stat(root, &sr) != 0 || so.st_dev == sr.st_dev ||
        mkdtemp(other) == NULL) {
        skip(); /* no second file system to link across */
        return;
    }
    path_of(src, root, "xfs-src");
    make_trial(src);
    char dst[PATH_MAX];
    path_of(dst, other, "trial");
    int rc = ckpt_copy_dir(src, dst, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    assert_same_tree(src, dst, true, true, true);
    path_of(a, src, "weights.bin");
    path_of(b, dst, "weights.bin");
    struct stat sa, sb;
    assert_int_equal(stat(a, &sa), 0);
    assert_int_equal(stat(b, &sb), 0);
    assert_int_equal(sa.st_nlink, 1); /* copied, not linked */
    assert_int_equal(sb.st_nlink, 1);
    path_of(b, dst, "ckpt/deep/ro.txt");
    assert_int_equal(stat(b, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0444);
    remove_tree(other);
}

static void test_copy_errors(void **state)
{
    (void)state;
    char src[PATH_MAX], dst[PATH_MAX], err[512];
    path_of(src, root, "err-src");
    assert_int_equal(mkdir(src, 0700), 0);
    path_of(dst, src, "inside");

    /* Into itself: refused. Into a folder inside itself: that folder is
     * left out of the copy. */
    assert_int_equal(ckpt_copy_dir(src, src, err, sizeof err), -1);
    assert_non_null(strstr(err, "into itself"));
    char p[PATH_MAX];
    path_of(p, src, "f");
    write_text(p, "f");
    assert_int_equal(ckpt_copy_dir(src, dst, err, sizeof err), 0);
    path_of(p, dst, "f");
    assert_true(exists(p));
    path_of(p, dst, "inside");
    assert_false(exists(p));

    /* Into a folder that holds the source: refused (replacing the
     * source's name there would remove the source). */
    char nested[PATH_MAX];
    path_of(nested, src, "inside/src");
    assert_int_equal(mkdir(nested, 0700), 0);
    path_of(p, nested, "inside");
    write_text(p, "would replace the folder that holds the source");
    path_of(p, src, "inside");
    assert_int_equal(ckpt_copy_dir(nested, p, err, sizeof err), -1);
    assert_non_null(strstr(err, "which holds it"));
    assert_int_equal(ckpt_copy_dir(nested, root, err, sizeof err), -1);
    assert_true(exists(nested));

    /* A missing source, and a destination whose parent is missing: the
     * message names the path. */
    path_of(p, root, "no-such");
    assert_int_equal(ckpt_copy_dir(p, dst, err, sizeof err), -1);
    assert_non_null(strstr(err, p));
    path_of(p, root, "no-such/trial");
    assert_int_equal(ckpt_copy_dir(src, p, err, sizeof err), -1);
    assert_non_null(strstr(err, p));
}

/* ---- pack and unpack ---- */

static void test_pack_unpack_round_trip(void **state)
{
    (void)state;
    char src[PATH_MAX], tar[PATH_MAX], out[PATH_MAX], p[PATH_MAX], err[512];
    path_of(src, root, "pack-src");
    path_of(tar, root, "pack.tar");
    path_of(out, root, "pack-out");
    make_trial(src);

    char hex[65];
    int64_t size = -1;
    int rc = ckpt_pack(src, tar, hex, &size, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    assert_int_equal(strlen(hex), 64);
    assert_int_equal(strspn(hex, "0123456789abcdef"), 64);
    /* The link is left out, and the note says so. */
    assert_non_null(strstr(err, "left out 1 symbolic link (latest)"));
    struct stat st;
    assert_int_equal(stat(tar, &st), 0);
    assert_int_equal(size, st.st_size);
    assert_true(size > BIG_SIZE);
    char again[65];
    int64_t size2 = -1;
    assert_int_equal(ckpt_sha256_file(tar, again, &size2), 0);
    assert_string_equal(again, hex);
    assert_int_equal(size2, size);

    /* No temporary file left beside it. */
    DIR *d = opendir(root);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        assert_null(strstr(e->d_name, ".tmp-"));
    closedir(d);

    /* The tar's entries: relative names, sorted, no logs, no FIFO, no
     * link. */
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    assert_int_equal(archive_read_open_filename(a, tar, 10240), ARCHIVE_OK);
    struct archive_entry *ent;
    char names[1024] = "";
    while (archive_read_next_header(a, &ent) == ARCHIVE_OK) {
        strcat(names, archive_entry_pathname(ent));
        strcat(names, " ");
    }
    archive_read_free(a);
    assert_string_equal(names, "ckpt/ ckpt/deep/ ckpt/deep/empty ckpt/deep/ro.txt "
                               "ckpt/stdout.log ckpt/step-7.json empty-dir/ weights.bin ");

    /* Unpacked into a new folder: the same tree, bytes, modes and times;
     * nothing left beside it. */
    char *before = listing(root);
    rc = ckpt_unpack(tar, hex, out, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    assert_string_equal(err, "");
    assert_same_tree(src, out, true, true, false);
    char *after = listing(root);
    char *expect = malloc(strlen(before) + 16);
    assert_non_null(expect);
    /* (before, with "pack-out" in its place) */
    const char *at = strstr(before, "pack-src\n");
    assert_non_null(at);
    sprintf(expect, "%.*spack-out\n%s", (int)(at - before), before, at);
    assert_string_equal(after, expect);
    free(before);
    free(after);
    free(expect);
    path_of(p, out, "stdout.log");
    assert_false(exists(p));

    /* Over an existing copy (whose files a hard link might have shared with
     * the source's): the files are replaced, and the source's are not
     * written through. The hash may be given in capitals. */
    char copy[PATH_MAX], upper[65];
    path_of(copy, root, "pack-copy");
    assert_int_equal(ckpt_copy_dir(src, copy, err, sizeof err), 0);
    path_of(p, src, "ckpt/step-7.json");
    write_text(p, "{\"step\": 8}\n"); /* in place: only the source's file changes */
    for (int i = 0; i < 65; i++)
        upper[i] = (char)(hex[i] >= 'a' && hex[i] <= 'f' ? hex[i] - 32 : hex[i]);
    rc = ckpt_unpack(tar, upper, copy, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    size_t len;
    char *text = read_all(p, &len); /* the source keeps what it has */
    assert_non_null(text);
    assert_int_equal(len, 12);
    assert_memory_equal(text, "{\"step\": 8}\n", len);
    free(text);
    path_of(p, copy, "ckpt/step-7.json"); /* the copy has the tar's */
    text = read_all(p, &len);
    assert_non_null(text);
    assert_int_equal(len, 12);
    assert_memory_equal(text, "{\"step\": 7}\n", len);
    free(text);
    struct stat sa, sb;
    path_of(p, src, "weights.bin");
    assert_int_equal(stat(p, &sa), 0);
    path_of(p, copy, "weights.bin");
    assert_int_equal(stat(p, &sb), 0);
    assert_true(sa.st_ino != sb.st_ino);
    assert_int_equal(sa.st_nlink, 1);

    /* A tar inside the folder packed is not packed into itself. */
    path_of(p, src, "self.tar");
    rc = ckpt_pack(src, p, hex, &size, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    path_of(p, src, "self.tar");
    a = archive_read_new();
    archive_read_support_format_tar(a);
    assert_int_equal(archive_read_open_filename(a, p, 10240), ARCHIVE_OK);
    while (archive_read_next_header(a, &ent) == ARCHIVE_OK)
        assert_null(strstr(archive_entry_pathname(ent), "self.tar"));
    archive_read_free(a);

    /* A folder that is not there: an error naming it, and no tar. */
    path_of(p, root, "no-such");
    path_of(out, root, "no-such.tar");
    assert_int_equal(ckpt_pack(p, out, hex, &size, err, sizeof err), -1);
    assert_non_null(strstr(err, p));
    assert_false(exists(out));
}

/* A read-only folder at the top travels with its mode, and a second unpack
 * replaces it (Linux moves a folder into another only when it may write
 * it: as a user other than root, the unpack makes it writable meanwhile). */
static void test_read_only_folder(void **state)
{
    (void)state;
    char src[PATH_MAX], tar[PATH_MAX], out[PATH_MAX], p[PATH_MAX], err[512], hex[65];
    path_of(src, root, "ro-src");
    path_of(tar, root, "ro.tar");
    path_of(out, root, "ro-out");
    assert_int_equal(mkdir(src, 0700), 0);
    path_of(p, src, "frozen");
    assert_int_equal(mkdir(p, 0700), 0);
    path_of(p, src, "frozen/w.bin");
    write_text(p, "weights");
    path_of(p, src, "frozen");
    assert_int_equal(chmod(p, 0555), 0);
    int64_t size;
    int rc = ckpt_pack(src, tar, hex, &size, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    for (int round = 0; round < 2; round++) {
        rc = ckpt_unpack(tar, hex, out, err, sizeof err);
        if (rc != 0)
            fail_msg("round %d: %s", round, err);
        struct stat st;
        path_of(p, out, "frozen");
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0555);
        path_of(p, out, "frozen/w.bin");
        size_t len;
        char *text = read_all(p, &len);
        assert_non_null(text);
        assert_int_equal(len, 7);
        free(text);
    }
}

static void test_tampered_tar_is_refused(void **state)
{
    (void)state;
    char src[PATH_MAX], tar[PATH_MAX], out[PATH_MAX], err[512];
    path_of(src, root, "tamper-src");
    path_of(tar, root, "tamper.tar");
    path_of(out, root, "tamper-out");
    make_trial(src);
    char hex[65];
    int64_t size;
    assert_int_equal(ckpt_pack(src, tar, hex, &size, err, sizeof err), 0);

    /* One bit of one byte in the weights' data. */
    int fd = open(tar, O_RDWR);
    assert_true(fd >= 0);
    unsigned char byte;
    off_t at = (off_t)(size / 2);
    assert_int_equal(pread(fd, &byte, 1, at), 1);
    byte ^= 1;
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    close(fd);

    assert_int_equal(ckpt_unpack(tar, hex, out, err, sizeof err), -1);
    char now[65];
    assert_int_equal(ckpt_sha256_file(tar, now, NULL), 0);
    assert_string_not_equal(now, hex);
    assert_non_null(strstr(err, hex)); /* both hashes quoted */
    assert_non_null(strstr(err, now));
    assert_false(exists(out)); /* nothing extracted, not even the folder */

    /* Not a hash: refused as such. */
    assert_int_equal(ckpt_unpack(tar, "abc", out, err, sizeof err), -1);
    assert_non_null(strstr(err, "64 hex digits"));
    assert_false(exists(out));
}

/* One entry of a hand-made tar. */
typedef struct {
    const char *name;
    unsigned type;        /* AE_IFREG, ... */
    const char *data;     /* a file's bytes */
    const char *link;     /* a symbolic link's target */
    const char *hardlink; /* a hard link's target */
} Entry;

static void make_tar(const char *path, const Entry *entries, int n)
{
    struct archive *a = archive_write_new();
    assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (int i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, entries[i].name);
        archive_entry_set_filetype(e, entries[i].type);
        archive_entry_set_perm(e, entries[i].type == AE_IFDIR ? 0755 : 0644);
        size_t len = entries[i].data ? strlen(entries[i].data) : 0;
        archive_entry_set_size(e, (la_int64_t)len);
        if (entries[i].link)
            archive_entry_set_symlink(e, entries[i].link);
        if (entries[i].hardlink)
            archive_entry_set_hardlink(e, entries[i].hardlink);
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        if (len)
            assert_int_equal(archive_write_data(a, entries[i].data, len), (la_ssize_t)len);
        archive_entry_free(e);
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

/* Unpacks tar into out with its true hash; the result, err filled. */
static int unpack(const char *tar, const char *out, char *err, size_t errsize)
{
    char hex[65];
    assert_int_equal(ckpt_sha256_file(tar, hex, NULL), 0);
    return ckpt_unpack(tar, hex, out, err, errsize);
}

static void test_entries_outside_are_refused(void **state)
{
    (void)state;
    char base[PATH_MAX], tar[PATH_MAX], out[PATH_MAX], p[PATH_MAX], err[512];
    path_of(base, root, "evil");
    assert_int_equal(mkdir(base, 0700), 0);
    path_of(tar, base, "evil.tar");
    path_of(out, base, "out");

    /* "../evil" after a good entry: refused before the good one is
     * written, so nothing lands, inside or out. */
    const Entry dotdot[] = {{.name = "good.txt", .type = AE_IFREG, .data = "good"},
                            {.name = "../evil", .type = AE_IFREG, .data = "evil"}};
    make_tar(tar, dotdot, 2);
    assert_int_equal(unpack(tar, out, err, sizeof err), -1);
    assert_non_null(strstr(err, "../evil"));
    path_of(p, base, "evil");
    assert_false(exists(p));
    path_of(p, out, "good.txt");
    assert_false(exists(p));
    assert_false(exists(out));

    /* ".." inside a name, an absolute name, a hard link, a FIFO. */
    char abs_name[PATH_MAX];
    path_of(abs_name, base, "abs");
    const Entry inner[] = {{.name = "a/../../evil", .type = AE_IFREG, .data = "evil"}};
    const Entry absolute[] = {{.name = abs_name, .type = AE_IFREG, .data = "evil"}};
    const Entry hard[] = {{.name = "x", .type = AE_IFREG, .data = "x"},
                          {.name = "h", .type = AE_IFREG, .hardlink = "x"}};
    const Entry fifo[] = {{.name = "f", .type = AE_IFIFO}};
    const struct {
        const Entry *e;
        int n;
        const char *why;
    } cases[] = {{inner, 1, "\"..\""},
                 {absolute, 1, "absolute"},
                 {hard, 2, "hard link"},
                 {fifo, 1, "not a regular file"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        make_tar(tar, cases[i].e, cases[i].n);
        assert_int_equal(unpack(tar, out, err, sizeof err), -1);
        if (strstr(err, cases[i].why) == NULL)
            fail_msg("case %zu: %s", i, err);
        assert_false(exists(out));
        path_of(p, base, "evil");
        assert_false(exists(p));
        assert_false(exists(abs_name));
    }

    /* A link to the folder above, then a file through it: refused at the
     * link. */
    const Entry through[] = {{.name = "up", .type = AE_IFLNK, .link = ".."},
                             {.name = "up/evil2", .type = AE_IFREG, .data = "evil"}};
    make_tar(tar, through, 2);
    assert_int_equal(unpack(tar, out, err, sizeof err), -1);
    assert_non_null(strstr(err, "\"up\" is a symbolic link"));
    path_of(p, base, "evil2");
    assert_false(exists(p));
    assert_false(exists(out));

    /* Not a tar at all. */
    write_text(tar, "this is not a tar file, not even close to one.\n");
    assert_int_equal(unpack(tar, out, err, sizeof err), -1);
    assert_false(exists(out));
}

/* ---- what unpacking refuses (ckpt.h, "What an unpack accepts") ---- */

/* A tar of one entry: a file of `size` zero bytes (written in pieces),
 * through a gzip filter when gzip is set. */
static void make_zeros_tar(const char *path, const char *name, int64_t size, bool gzip)
{
    struct archive *a = archive_write_new();
    assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    if (gzip)
        assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, size);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    static char zeros[64 * 1024];
    for (int64_t left = size; left > 0;) {
        size_t k = left < (int64_t)sizeof zeros ? (size_t)left : sizeof zeros;
        assert_int_equal(archive_write_data(a, zeros, k), (la_ssize_t)k);
        left -= (int64_t)k;
    }
    archive_entry_free(e);
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

/* Unpacking tar into base/out fails with an error that names `entry` and
 * says `why`; base holds afterwards what it held before (no temporary
 * folder, nothing climbed out), and out is not made. */
static void assert_refused(const char *base, const char *tar, const char *entry, const char *why)
{
    char out[PATH_MAX], err[1024];
    path_of(out, base, "out");
    char *before = listing(base);
    int rc = unpack(tar, out, err, sizeof err);
    char *after = listing(base);
    if (rc == 0)
        fail_msg("\"%s\" was unpacked; expected a refusal (%s)", entry, why);
    if (strstr(err, entry) == NULL || strstr(err, why) == NULL)
        fail_msg("the error names neither \"%s\" nor \"%s\": %s", entry, why, err);
    if (strcmp(before, after) != 0)
        fail_msg("the folder changed:\nbefore:\n%safter:\n%s", before, after);
    assert_false(exists(out));
    free(before);
    free(after);
}

static void test_links_are_refused(void **state)
{
    (void)state;
    char base[PATH_MAX], tar[PATH_MAX], victim[PATH_MAX];
    path_of(base, root, "links");
    assert_int_equal(mkdir(base, 0700), 0);
    path_of(tar, base, "links.tar");
    path_of(victim, root, "victim.json");

    /* A link out of the folder, then nothing through it: a program's
     * ordinary open("ckpt.json", "w") would write outside. Refused
     * outright, whatever comes after. */
    const Entry out_link[] = {{.name = "good.txt", .type = AE_IFREG, .data = "good"},
                              {.name = "ckpt.json", .type = AE_IFLNK, .link = victim}};
    make_tar(tar, out_link, 2);
    assert_refused(base, tar, "ckpt.json", "symbolic link");
    assert_false(exists(victim));

    /* A link that stays inside: refused as well (the simplest safe rule). */
    const Entry in_link[] = {{.name = "a.txt", .type = AE_IFREG, .data = "a"},
                             {.name = "latest", .type = AE_IFLNK, .link = "a.txt"}};
    make_tar(tar, in_link, 2);
    assert_refused(base, tar, "latest", "symbolic link");

    /* A hard link, to a name inside or to one outside. */
    const Entry hard[] = {{.name = "x", .type = AE_IFREG, .data = "x"},
                          {.name = "h", .type = AE_IFREG, .hardlink = "x"}};
    make_tar(tar, hard, 2);
    assert_refused(base, tar, "\"h\"", "hard link");
    const Entry hard_out[] = {{.name = "h2", .type = AE_IFREG, .hardlink = victim}};
    make_tar(tar, hard_out, 1);
    assert_refused(base, tar, "h2", "hard link");
    assert_false(exists(victim));
}

static void test_special_and_outside_names_are_refused(void **state)
{
    (void)state;
    char base[PATH_MAX], tar[PATH_MAX], abs_name[PATH_MAX];
    path_of(base, root, "names");
    assert_int_equal(mkdir(base, 0700), 0);
    path_of(tar, base, "names.tar");
    path_of(abs_name, root, "abs-evil");

    const Entry dotdot[] = {{.name = "good.txt", .type = AE_IFREG, .data = "good"},
                            {.name = "../x", .type = AE_IFREG, .data = "evil"}};
    make_tar(tar, dotdot, 2);
    assert_refused(base, tar, "../x", "\"..\"");

    const Entry absolute[] = {{.name = abs_name, .type = AE_IFREG, .data = "evil"}};
    make_tar(tar, absolute, 1);
    assert_refused(base, tar, abs_name, "absolute");
    assert_false(exists(abs_name));

    /* A device: a character device (1, 3), /dev/null's numbers. */
    struct archive *a = archive_write_new();
    assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(a, tar), ARCHIVE_OK);
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, "null");
    archive_entry_set_filetype(e, AE_IFCHR);
    archive_entry_set_perm(e, 0666);
    archive_entry_set_rdevmajor(e, 1);
    archive_entry_set_rdevminor(e, 3);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    archive_entry_free(e);
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    assert_refused(base, tar, "null", "not a regular file or a folder");

    const Entry fifo[] = {{.name = "f", .type = AE_IFIFO}};
    make_tar(tar, fifo, 1);
    assert_refused(base, tar, "\"f\"", "not a regular file or a folder");
}

static void test_bombs_are_refused(void **state)
{
    (void)state;
    char base[PATH_MAX], tar[PATH_MAX];
    path_of(base, root, "bombs");
    assert_int_equal(mkdir(base, 0700), 0);
    path_of(tar, base, "bomb.tar.gz");

    /* A gzip bomb: 50 MB of zeros in some 50 KB. Only a plain tar is read
     * (the worker packs nothing else), so nothing of it is unpacked. */
    make_zeros_tar(tar, "zeros.bin", 50 * 1000 * 1000, true);
    struct stat st;
    assert_int_equal(stat(tar, &st), 0);
    assert_true(st.st_size < 1000 * 1000);
    assert_refused(base, tar, "bomb.tar.gz", "compressed (gzip)");

    /* Headers that lie: an entry that says 64 MiB in a tar cut to 64 KiB.
     * Refused at its header, before a byte of it is written. */
    path_of(tar, base, "liar.tar");
    make_zeros_tar(tar, "weights.bin", 64 << 20, false);
    assert_int_equal(truncate(tar, 64 << 10), 0);
    assert_refused(base, tar, "weights.bin", "more than");

    /* A sparse entry: 1 GiB said, a few bytes stored. */
    struct archive *a = archive_write_new();
    assert_int_equal(archive_write_set_format_pax(a), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(a, tar), ARCHIVE_OK);
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, "sparse.bin");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)1 << 30);
    archive_entry_sparse_add_entry(e, ((la_int64_t)1 << 30) - 4, 4);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    assert_int_equal(archive_write_data(a, "tail", 4), 4);
    archive_entry_free(e);
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    assert_int_equal(stat(tar, &st), 0);
    assert_true(st.st_size < 64 * 1024);
    assert_refused(base, tar, "sparse.bin", "sparse");

    /* More entries than CKPT_MAX_ENTRIES: refused at the first one over. */
    a = archive_write_new();
    assert_int_equal(archive_write_set_format_ustar(a), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(a, tar), ARCHIVE_OK);
    e = archive_entry_new();
    char name[32];
    for (int i = 0; i <= CKPT_MAX_ENTRIES; i++) {
        snprintf(name, sizeof name, "f%d", i);
        archive_entry_clear(e);
        archive_entry_set_pathname(e, name);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, 0);
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    }
    archive_entry_free(e);
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    snprintf(name, sizeof name, "\"f%d\"", CKPT_MAX_ENTRIES);
    assert_refused(base, tar, name, "entries");
}

/* A refused tar leaves a trial folder that was there as it was: its own
 * files (not removed before the refusal) and its logs. */
static void test_refusal_keeps_the_destination(void **state)
{
    (void)state;
    char base[PATH_MAX], tar[PATH_MAX], out[PATH_MAX], p[PATH_MAX], err[512];
    path_of(base, root, "keep");
    assert_int_equal(mkdir(base, 0700), 0);
    path_of(tar, base, "keep.tar");
    path_of(out, base, "out");
    assert_int_equal(mkdir(out, 0700), 0);
    path_of(p, out, "stdout.log");
    write_text(p, "log");
    path_of(p, out, "mine.pt");
    write_text(p, "mine");
    const Entry late[] = {{.name = "a.txt", .type = AE_IFREG, .data = "a"},
                          {.name = "b", .type = AE_IFLNK, .link = "/etc/passwd"}};
    make_tar(tar, late, 2);
    char *before = listing(base), *inside = listing(out);
    assert_int_equal(unpack(tar, out, err, sizeof err), -1);
    assert_non_null(strstr(err, "\"b\""));
    char *after = listing(base), *inside_after = listing(out);
    assert_string_equal(before, after);
    assert_string_equal(inside, inside_after);
    free(before);
    free(after);
    free(inside);
    free(inside_after);
}

/* ---- a working directory's tree (ckpt_unpack_tree) ---- */

static int unpack_tree(const char *tar, const char *out, char *err, size_t errsize)
{
    char hex[65];
    assert_int_equal(ckpt_sha256_file(tar, hex, NULL), 0);
    return ckpt_unpack_tree(tar, hex, out, err, errsize);
}

/* unpack_tree refuses tar, naming `entry` and saying `why`; base is as it
 * was and out not made. */
static void assert_tree_refused(const char *base, const char *tar, const char *entry,
                                const char *why)
{
    char out[PATH_MAX], err[1024];
    path_of(out, base, "tree");
    char *before = listing(base);
    int rc = unpack_tree(tar, out, err, sizeof err);
    char *after = listing(base);
    if (rc == 0)
        fail_msg("\"%s\" was unpacked as a tree; expected a refusal (%s)", entry, why);
    if (strstr(err, entry) == NULL || strstr(err, why) == NULL)
        fail_msg("the error names neither \"%s\" nor \"%s\": %s", entry, why, err);
    if (strcmp(before, after) != 0)
        fail_msg("the folder changed:\nbefore:\n%safter:\n%s", before, after);
    assert_false(exists(out));
    free(before);
    free(after);
}

/* A user's folder as a client packs it: files, folders, its own logs at
 * the top, links that stay inside (to a file, to a folder, up from a
 * sub-folder); all of it lands, the links as links. */
static void test_tree_unpacks_links_inside(void **state)
{
    (void)state;
    char base[PATH_MAX], tar[PATH_MAX], out[PATH_MAX], p[PATH_MAX], err[1024];
    path_of(base, root, "tree-ok");
    assert_int_equal(mkdir(base, 0700), 0);
    path_of(tar, base, "wd.tar");
    path_of(out, base, "tree");
    const Entry good[] = {{.name = "data", .type = AE_IFDIR},
                          {.name = "data/x.txt", .type = AE_IFREG, .data = "21\n"},
                          {.name = "mypkg", .type = AE_IFDIR},
                          {.name = "mypkg/__init__.py", .type = AE_IFREG, .data = "K = 2\n"},
                          {.name = "mypkg/data", .type = AE_IFLNK, .link = "../data"},
                          {.name = "latest.txt", .type = AE_IFLNK, .link = "./data/x.txt"},
                          {.name = "stdout.log", .type = AE_IFREG, .data = "mine"}};
    make_tar(tar, good, 7);
    if (unpack_tree(tar, out, err, sizeof err) != 0)
        fail_msg("%s", err);
    size_t n;
    path_of(p, out, "mypkg/data/x.txt");
    char *text = read_all(p, &n);
    assert_true(text != NULL && n == 3 && memcmp(text, "21\n", 3) == 0);
    free(text);
    path_of(p, out, "latest.txt");
    text = read_all(p, &n);
    assert_true(text != NULL && n == 3 && memcmp(text, "21\n", 3) == 0);
    free(text);
    char target[PATH_MAX];
    ssize_t k = readlink(p, target, sizeof target - 1);
    assert_true(k > 0);
    target[k] = '\0';
    assert_string_equal(target, "./data/x.txt");
    path_of(p, out, "stdout.log"); /* a tree keeps its own logs */
    text = read_all(p, &n);
    assert_true(text != NULL && n == 4 && memcmp(text, "mine", 4) == 0);
    free(text);

    /* `to` must be new: a second unpack into it is refused. */
    assert_int_equal(unpack_tree(tar, out, err, sizeof err), -1);
    assert_non_null(strstr(err, "exists already"));
}

/* Each escape a hostile working directory could try is refused before
 * anything is extracted, naming the entry. */
static void test_tree_refuses_escapes(void **state)
{
    (void)state;
    char base[PATH_MAX], tar[PATH_MAX], victim[PATH_MAX];
    path_of(base, root, "tree-evil");
    assert_int_equal(mkdir(base, 0700), 0);
    path_of(tar, base, "evil.tar");
    path_of(victim, root, "tree-victim");

    const Entry absolute[] = {{.name = victim, .type = AE_IFREG, .data = "evil"}};
    make_tar(tar, absolute, 1);
    assert_tree_refused(base, tar, victim, "absolute name");
    assert_false(exists(victim));

    const Entry dotdot[] = {{.name = "ok.txt", .type = AE_IFREG, .data = "ok"},
                            {.name = "a/../../evil", .type = AE_IFREG, .data = "evil"}};
    make_tar(tar, dotdot, 2);
    assert_tree_refused(base, tar, "a/../../evil", "\"..\"");

    const Entry abs_link[] = {{.name = "ok.txt", .type = AE_IFREG, .data = "ok"},
                              {.name = "passwd", .type = AE_IFLNK, .link = "/etc/passwd"}};
    make_tar(tar, abs_link, 2);
    assert_tree_refused(base, tar, "\"passwd\"", "absolute path");

    /* Relative, but climbing out: from the top, and from one folder down
     * by one ".." too many. */
    const Entry up_link[] = {{.name = "up", .type = AE_IFLNK, .link = "../tree-victim"}};
    make_tar(tar, up_link, 1);
    assert_tree_refused(base, tar, "\"up\"", "leaves the tree");
    const Entry deep_link[] = {{.name = "d", .type = AE_IFDIR},
                               {.name = "d/up", .type = AE_IFLNK, .link = "../../x"}};
    make_tar(tar, deep_link, 2);
    assert_tree_refused(base, tar, "\"d/up\"", "leaves the tree");
    /* ".." after a name: "a" may itself be a link to somewhere deeper. */
    const Entry mid_link[] = {{.name = "d", .type = AE_IFDIR},
                              {.name = "d/e", .type = AE_IFLNK, .link = ".."},
                              {.name = "x", .type = AE_IFLNK, .link = "d/e/.."}};
    make_tar(tar, mid_link, 3);
    assert_tree_refused(base, tar, "\"x\"", "after a name");

    /* An entry through a link of the tree: "d/l" is the top, so "d/l/up"
     * with two ".." (its name has two folders) would climb out. */
    const Entry through[] = {{.name = "d", .type = AE_IFDIR},
                             {.name = "d/l", .type = AE_IFLNK, .link = ".."},
                             {.name = "./d/l/up", .type = AE_IFLNK, .link = "../../x"}};
    make_tar(tar, through, 3);
    assert_tree_refused(base, tar, "\"./d/l/up\"", "inside a symbolic link");

    const Entry hard[] = {{.name = "x", .type = AE_IFREG, .data = "x"},
                          {.name = "h", .type = AE_IFREG, .hardlink = "x"}};
    make_tar(tar, hard, 2);
    assert_tree_refused(base, tar, "\"h\"", "hard link");

    const Entry fifo[] = {{.name = "f", .type = AE_IFIFO}};
    make_tar(tar, fifo, 1);
    assert_tree_refused(base, tar, "\"f\"", "not a regular file or a folder");

    struct archive *a = archive_write_new();
    assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(a, tar), ARCHIVE_OK);
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, "sda");
    archive_entry_set_filetype(e, AE_IFBLK);
    archive_entry_set_perm(e, 0660);
    archive_entry_set_rdevmajor(e, 8);
    archive_entry_set_rdevminor(e, 0);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    archive_entry_free(e);
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    assert_tree_refused(base, tar, "\"sda\"", "not a regular file or a folder");

    char gz[PATH_MAX];
    path_of(gz, base, "wd.tar.gz");
    make_zeros_tar(gz, "zeros.bin", 1000 * 1000, true);
    assert_tree_refused(base, gz, "wd.tar.gz", "compressed (gzip)");
    assert_int_equal(unlink(gz), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_files),
        cmocka_unit_test(test_copy_bytes_across_file_systems),
        cmocka_unit_test(test_copy_errors),
        cmocka_unit_test(test_pack_unpack_round_trip),
        cmocka_unit_test(test_read_only_folder),
        cmocka_unit_test(test_tampered_tar_is_refused),
        cmocka_unit_test(test_entries_outside_are_refused),
        cmocka_unit_test(test_links_are_refused),
        cmocka_unit_test(test_special_and_outside_names_are_refused),
        cmocka_unit_test(test_bombs_are_refused),
        cmocka_unit_test(test_refusal_keeps_the_destination),
        cmocka_unit_test(test_tree_unpacks_links_inside),
        cmocka_unit_test(test_tree_refuses_escapes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
