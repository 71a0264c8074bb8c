/* Unit tests of worker/ckpt.c: a trial folder copied (never hard-linked) (and
 * with bytes across file systems), the logs left out, existing entries
 * replaced; pack and unpack giving back the same tree; a tar changed by
 * one byte refused before anything is extracted; entries that would land
 * outside the folder (a "..", an absolute name, a link to climb through),
 * hard links and FIFOs refused or kept inside. */
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
 * b. mtimes too when times is set. */
static void assert_same_tree(const char *a, const char *b, bool top, bool times)
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
        if (logs || S_ISFIFO(sa.st_mode))
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
            assert_same_tree(pa, pb, false, times);
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
    assert_same_tree(src, dst, true, true);

    /* A second copy over the first: the same result. */
    assert_int_equal(ckpt_copy_dir(src, dst, err, sizeof err), 0);
    assert_same_tree(src, dst, true, true);
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
    assert_same_tree(src, dst, true, true);
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

    /* The tar's entries: relative names, sorted, no logs, no FIFO. */
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
                               "ckpt/stdout.log ckpt/step-7.json empty-dir/ latest weights.bin ");

    /* Unpacked into a new folder: the same tree, bytes, modes and times. */
    rc = ckpt_unpack(tar, hex, out, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    assert_same_tree(src, out, true, true);
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

    /* A link to the folder above, then a file through it: the link may be
     * made, but the file does not land above (libarchive's symlink checks
     * refuse it or replace the link with a folder). */
    const Entry through[] = {{.name = "up", .type = AE_IFLNK, .link = ".."},
                             {.name = "up/evil2", .type = AE_IFREG, .data = "evil"}};
    make_tar(tar, through, 2);
    unpack(tar, out, err, sizeof err);
    path_of(p, base, "evil2");
    assert_false(exists(p));

    /* A link out of the folder is kept as a link (nothing written
     * through it). */
    remove_tree(out);
    const Entry out_link[] = {{.name = "data", .type = AE_IFLNK, .link = "/usr/share"}};
    make_tar(tar, out_link, 1);
    int rc = unpack(tar, out, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    char target[PATH_MAX];
    path_of(p, out, "data");
    ssize_t n = readlink(p, target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = '\0';
    assert_string_equal(target, "/usr/share");

    /* Not a tar at all. */
    write_text(tar, "this is not a tar file, not even close to one.\n");
    remove_tree(out);
    assert_int_equal(unpack(tar, out, err, sizeof err), -1);
    assert_false(exists(out));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_files),
        cmocka_unit_test(test_copy_bytes_across_file_systems),
        cmocka_unit_test(test_copy_errors),
        cmocka_unit_test(test_pack_unpack_round_trip),
        cmocka_unit_test(test_tampered_tar_is_refused),
        cmocka_unit_test(test_entries_outside_are_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
