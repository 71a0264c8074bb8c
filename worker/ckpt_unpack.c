/* Unpacking a tar from another machine, safely (ckpt.h, "What an unpack
 * accepts"). */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "ckpt.h"
#include "ckpt_internal.h"
#include "sha256hex.h"
#include "why.h"

#define READ_BLOCK (64 * 1024) /* libarchive's reads of a tar */

/* One unpack: the tar, its descriptor and what its entries add up to
 * (ckpt.h, "What an unpack accepts"). */
typedef struct {
    const char *tar_path;
    int fd;
    int64_t limit;    /* file bytes at most: the tar's own size */
    int64_t entries;  /* headers read */
    int64_t declared; /* the sum of their sizes */
    bool tree;        /* a working directory (ckpt_unpack_tree): relative links inside it */
    json_t *links;    /* tree: the names of its links so far, normalized (a set) */
    char *err;
    size_t errsize;
} Unpack;

/* The compression whose magic number opens fd, or NULL. ckpt_pack writes
 * plain tar, and a compressed one is refused by name rather than as "not
 * a tar": its contents are bounded by nothing (a gzip bomb). */
static const char *compression(int fd)
{
    unsigned char m[6];
    ssize_t n = pread(fd, m, sizeof m, 0);
    if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b)
        return "gzip";
    if (n >= 2 && m[0] == 0x1f && (m[1] == 0x9d || m[1] == 0xa0))
        return "compress";
    if (n >= 3 && memcmp(m, "BZh", 3) == 0)
        return "bzip2";
    if (n >= 6 && memcmp(m,
                         "\xfd"
                         "7zXZ\0",
                         6) == 0)
        return "xz";
    if (n >= 4 && memcmp(m, "\x28\xb5\x2f\xfd", 4) == 0)
        return "zstd";
    if (n >= 4 && memcmp(m, "\x04\x22\x4d\x18", 4) == 0)
        return "lz4";
    return NULL;
}

/* The folders above a tar entry's name: "a/b/c" has 2 ("." and empty
 * components do not count). */
static int name_depth(const char *name)
{
    int depth = 0;
    for (const char *s = name; *s;) {
        const char *end = strchr(s, '/');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n > 0 && !(n == 1 && s[0] == '.'))
            depth++;
        s += n;
        while (*s == '/')
            s++;
    }
    return depth > 0 ? depth - 1 : 0;
}

/* Why the symbolic link of a working directory's tar, named name, with
 * target `target`, may not be extracted, or NULL when it may (ckpt.h,
 * ckpt_unpack_tree): a relative target whose ".." all come first, no more
 * of them than the folders above the link. A ".." after a name is refused
 * even when it looks harmless ("a/../b"), since a is perhaps a link itself
 * and its ".." then climbs from wherever a points; with every ".." first,
 * the climb starts from the link's own folder, which is a real folder of
 * the tree (an entry is never extracted through a link:
 * ARCHIVE_EXTRACT_SECURE_SYMLINKS), and the rest only descends. */
static const char *link_refused(const char *name, const char *target)
{
    if (target == NULL || target[0] == '\0')
        return "is a symbolic link without a target";
    if (target[0] == '/')
        return "is a symbolic link to an absolute path (outside the tree)";
    int ups = 0;
    bool named = false;
    for (const char *s = target; *s;) {
        const char *end = strchr(s, '/');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            if (named)
                return "is a symbolic link whose target has a \"..\" after a name";
            ups++;
        } else if (n > 0 && !(n == 1 && s[0] == '.')) {
            named = true;
        }
        s += n;
        while (*s == '/')
            s++;
    }
    if (ups > name_depth(name))
        return "is a symbolic link that leaves the tree";
    return NULL;
}

/* name without "." and empty components ("./a//b" is "a/b"), into out
 * (PATH_MAX bytes); -1 when it does not fit. */
static int normalize(const char *name, char *out)
{
    size_t o = 0;
    for (const char *s = name; *s;) {
        const char *end = strchr(s, '/');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n > 0 && !(n == 1 && s[0] == '.')) {
            if (o + n + 2 > PATH_MAX)
                return -1;
            if (o > 0)
                out[o++] = '/';
            memcpy(out + o, s, n);
            o += n;
        }
        s += n;
        while (*s == '/')
            s++;
    }
    out[o] = '\0';
    return 0;
}

/* A tree's entry whose name passes through one of its links ("l/f" after
 * "l"): refused, since where it lands is not where its name says, and a
 * link inside it would climb from there (link_refused counts the folders
 * of the name). Records the entry when it is a link. NULL, or why. */
static const char *through_link(Unpack *u, const char *name, bool is_link)
{
    char norm[PATH_MAX];
    if (normalize(name, norm) != 0)
        return "has too long a name";
    for (char *p = strchr(norm, '/'); p != NULL; p = strchr(p + 1, '/')) {
        *p = '\0';
        bool hit = json_object_get(u->links, norm) != NULL;
        *p = '/';
        if (hit)
            return "lies inside a symbolic link of the tree";
    }
    if (is_link && json_object_set_new(u->links, norm, json_true()) != 0)
        return "cannot be recorded (out of memory)";
    return NULL;
}

/* Why entry e may not be extracted, or NULL when it may. In a checkpoint,
 * links of either kind are refused outright, wherever they point: a link
 * that stays inside today is a name a program writes through tomorrow, and
 * the worker's own tars hold none (ckpt_pack leaves them out). A working
 * directory (tree) may hold symbolic links that stay inside it
 * (link_refused): a user's folder has them, and the trial's copy of the
 * tree is its own, made for it and removed after it. */
static const char *entry_refused(struct archive_entry *e, bool tree)
{
    const char *name = archive_entry_pathname(e);
    if (name == NULL || name[0] == '\0')
        return "has no name";
    if (name[0] == '/')
        return "has an absolute name";
    for (const char *s = name; *s;) {
        const char *end = strchr(s, '/');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return "has a \"..\" in its name";
        s += n;
        while (*s == '/')
            s++;
    }
    /* (a link's target may come with any type: libarchive makes a link
     * of an entry that has one) */
    if (archive_entry_hardlink(e) != NULL)
        return "is a hard link";
    if (tree && archive_entry_filetype(e) == AE_IFLNK)
        return link_refused(name, archive_entry_symlink(e));
    if (archive_entry_symlink(e) != NULL || archive_entry_filetype(e) == AE_IFLNK)
        return "is a symbolic link";
    if (archive_entry_filetype(e) != AE_IFREG && archive_entry_filetype(e) != AE_IFDIR)
        return "is not a regular file or a folder";
    if (archive_entry_sparse_count(e) > 0)
        return "is a sparse file (its size is not what the tar holds)";
    if (archive_entry_size(e) < 0)
        return "has no size";
    return NULL;
}

/* Counts entry e against the limits: -1, err naming it, when it is
 * refused or goes over them. An uncompressed tar holds each file's bytes
 * after its header, so the sum of the sizes its headers say is less than
 * the tar's own size; a header that says more lies. */
static int entry_check(Unpack *u, struct archive_entry *e)
{
    const char *name = archive_entry_pathname(e);
    const char *why = entry_refused(e, u->tree);
    if (why == NULL && u->tree)
        why = through_link(u, name, archive_entry_filetype(e) == AE_IFLNK);
    if (why) {
        rung_why(u->err, u->errsize, "%s: the entry \"%.200s\" %s; nothing extracted", u->tar_path,
                 name ? name : "?", why);
        return -1;
    }
    if (++u->entries > CKPT_MAX_ENTRIES) {
        rung_why(u->err, u->errsize,
                 "%s: the entry \"%.200s\" makes more than %d entries; nothing "
                 "extracted",
                 u->tar_path, name, CKPT_MAX_ENTRIES);
        return -1;
    }
    int64_t size = archive_entry_size(e);
    if (size > u->limit - u->declared) {
        rung_why(
            u->err, u->errsize,
            "%s: the entry \"%.200s\" says %lld bytes, which makes more than the tar's own %lld "
            "bytes can hold; nothing extracted",
            u->tar_path, name, (long long)size, (long long)u->limit);
        return -1;
    }
    u->declared += size;
    return 0;
}

/* A reader of the tar on u->fd, from its start: plain tar only, no filter
 * (archive_read_support_filter_none adds none: it is always there). */
static struct archive *open_reader(Unpack *u)
{
    if (lseek(u->fd, 0, SEEK_SET) != 0) {
        rung_why(u->err, u->errsize, "cannot read %s: %s", u->tar_path, strerror(errno));
        return NULL;
    }
    struct archive *a = archive_read_new();
    if (a == NULL) {
        rung_why(u->err, u->errsize, "out of memory reading %s", u->tar_path);
        return NULL;
    }
    if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
        archive_read_support_filter_none(a) != ARCHIVE_OK ||
        archive_read_open_fd(a, u->fd, READ_BLOCK) != ARCHIVE_OK) {
        rung_why(u->err, u->errsize, "cannot read %s: %s; nothing extracted", u->tar_path,
                 archive_error_string(a));
        archive_read_free(a);
        return NULL;
    }
    u->entries = u->declared = 0;
    if (u->links != NULL)
        json_object_clear(u->links);
    return a;
}

/* Reads every header; -1 at the first entry refused. */
static int check_entries(Unpack *u)
{
    struct archive *a = open_reader(u);
    if (a == NULL)
        return -1;
    int rc = 0;
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            rung_why(u->err, u->errsize, "cannot read %s: %s; nothing extracted", u->tar_path,
                     archive_error_string(a));
            rc = -1;
            break;
        }
        if (entry_check(u, e) != 0) {
            rc = -1;
            break;
        }
    }
    archive_read_free(a);
    return rc;
}

/* Copies the data of entry e (named name) from a to disk, each block
 * bounded by the entry's size and all of them by the tar's. */
static int extract_data(Unpack *u, struct archive *a, struct archive *disk, struct archive_entry *e,
                        const char *name, int64_t *written)
{
    int64_t size = archive_entry_size(e);
    const void *block;
    size_t len;
    la_int64_t offset;
    int r;
    while ((r = archive_read_data_block(a, &block, &len, &offset)) == ARCHIVE_OK) {
        if (offset < 0 || (int64_t)len > size - offset || (int64_t)len > u->limit - *written) {
            rung_why(
                u->err, u->errsize,
                "%s: the entry \"%.200s\" holds more than the %lld bytes its header says; nothing "
                "extracted",
                u->tar_path, name, (long long)size);
            return -1;
        }
        *written += (int64_t)len;
        if (archive_write_data_block(disk, block, len, offset) < ARCHIVE_WARN) {
            rung_why(u->err, u->errsize, "%s: cannot write the entry \"%.200s\": %s", u->tar_path,
                     name, archive_error_string(disk));
            return -1;
        }
    }
    if (r != ARCHIVE_EOF) {
        rung_why(u->err, u->errsize, "%s: cannot read the entry \"%.200s\": %s; nothing extracted",
                 u->tar_path, name, archive_error_string(a));
        return -1;
    }
    return 0;
}

/* Extracts the tar into folder base, an absolute path without links. */
static int extract(Unpack *u, const char *base)
{
    struct archive *a = open_reader(u);
    if (a == NULL)
        return -1;
    /* Entries are extracted to base/<name>, since libarchive extracts
     * relative to the working folder and a chdir would move every thread
     * of the worker. Hence no ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS,
     * which would refuse every such name: entry_refused refuses absolute
     * names itself, before base is prefixed. base is a folder made empty
     * for this unpack, and no link is ever extracted into it, so the
     * SECURE_ checks below are a second line. Neither the owner
     * (ARCHIVE_EXTRACT_OWNER) nor the set-id and sticky bits
     * (ARCHIVE_EXTRACT_PERM) nor ACLs, attributes or flags are restored:
     * a file gets its permission bits less the umask. */
    struct archive *disk = archive_write_disk_new();
    if (disk == NULL) {
        rung_why(u->err, u->errsize, "out of memory extracting %s", u->tar_path);
        archive_read_free(a);
        return -1;
    }
    archive_write_disk_set_options(disk, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_UNLINK |
                                             ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                             ARCHIVE_EXTRACT_SECURE_SYMLINKS);
    int rc = 0;
    int64_t written = 0;
    char full[PATH_MAX];
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            rung_why(u->err, u->errsize, "cannot read %s: %s; nothing extracted", u->tar_path,
                     archive_error_string(a));
            rc = -1;
            break;
        }
        /* again: the file may have changed since it was checked */
        if (entry_check(u, e) != 0) {
            rc = -1;
            break;
        }
        const char *name = archive_entry_pathname(e);
        if (snprintf(full, sizeof full, "%s/%s", base, name) >= (int)sizeof full) {
            rung_why(u->err, u->errsize, "%s: the entry \"%.200s...\" makes too long a path",
                     u->tar_path, name);
            rc = -1;
            break;
        }
        /* (a copy: name points into the entry, which set_pathname frees) */
        char shown[256];
        snprintf(shown, sizeof shown, "%.255s", name);
        archive_entry_set_pathname(e, full);
        archive_entry_set_perm(e, archive_entry_perm(e) & 0777);
        if (archive_write_header(disk, e) < ARCHIVE_WARN) {
            rung_why(u->err, u->errsize, "%s: cannot extract the entry \"%s\": %s", u->tar_path,
                     shown, archive_error_string(disk));
            rc = -1;
            break;
        }
        if (extract_data(u, a, disk, e, shown, &written) != 0) {
            rc = -1;
            break;
        }
        if (archive_write_finish_entry(disk) < ARCHIVE_WARN) {
            rung_why(u->err, u->errsize, "%s: cannot write the entry \"%s\": %s", u->tar_path,
                     shown, archive_error_string(disk));
            rc = -1;
            break;
        }
    }
    /* close sets the folders' times and modes, deferred until their
     * entries are in */
    if (archive_write_close(disk) < ARCHIVE_WARN && rc == 0) {
        rung_why(u->err, u->errsize, "cannot finish extracting %s: %s", u->tar_path,
                 archive_error_string(disk));
        rc = -1;
    }
    archive_write_free(disk);
    archive_read_free(a);
    return rc;
}

/* Splits path into its folder (parent, PATH_MAX bytes) and last name
 * (name, NAME_MAX + 1 bytes), trailing slashes aside. */
static int split_path(const char *path, char *parent, char *name)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t start = n;
    while (start > 0 && path[start - 1] != '/')
        start--;
    if (n - start == 0 || n - start > NAME_MAX || start >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(name, path + start, n - start);
    name[n - start] = '\0';
    if (start == 0) {
        strcpy(parent, ".");
    } else {
        size_t p = start > 1 ? start - 1 : 1; /* "/x": "/" */
        memcpy(parent, path, p);
        parent[p] = '\0';
    }
    return 0;
}

/* Moves the entries of folder tfd (the unpacked tar) into folder `to`,
 * made (0700) when missing, after emptying it but for its logs. A tar's own
 * logs at its top are left out, as ckpt_pack leaves them out: each trial
 * keeps its own. */
static int install(int tfd, const char *to, char *err, size_t errsize)
{
    if (mkdir(to, 0700) != 0 && errno != EEXIST) {
        rung_why(err, errsize, "cannot make the folder %s: %s", to, strerror(errno));
        return -1;
    }
    int dfd = open(to, DIR_FLAGS);
    struct stat st, tst;
    if (dfd < 0 || fstat(dfd, &st) != 0 || fstat(tfd, &tst) != 0) {
        rung_why(err, errsize, "cannot open the folder %s: %s", to,
                 errno == ENOTDIR || errno == ELOOP ? "not a folder" : strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    if (st.st_dev != tst.st_dev) { /* before anything is removed */
        rung_why(err, errsize, "the folder %s is on another file system than its parent", to);
        close(dfd);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    int rc = ckpt_clear_dir(dfd, to, st.st_dev, err, errsize);
    if (rc == 0 && (rc = ckpt_list_dir(tfd, true, &names, &n)) != 0) {
        rung_why(err, errsize, "cannot read the folder unpacked for %s: %s", to, strerror(errno));
        names = NULL;
        n = 0;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (renameat(tfd, names[i], dfd, names[i]) == 0)
            continue;
        /* Linux moves a folder into another only when it may write it
         * (its ".." changes): a read-only one is made writable meanwhile. */
        struct stat es;
        if (errno == EACCES && fstatat(tfd, names[i], &es, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(es.st_mode) &&
            fchmodat(tfd, names[i], (es.st_mode & 07777) | S_IWUSR, 0) == 0) {
            if (renameat(tfd, names[i], dfd, names[i]) == 0) {
                (void)fchmodat(dfd, names[i], es.st_mode & 07777, 0);
                continue;
            }
        }
        rung_why(err, errsize, "cannot move %s into %s: %s", names[i], to, strerror(errno));
        rc = -1;
    }
    ckpt_free_names(names, n);
    close(dfd);
    return rc;
}

/* ckpt_unpack and ckpt_unpack_tree: checks, extracts beside `to`, then
 * moves the entries into `to` (a checkpoint) or renames the folder to `to`
 * (a tree). */
static int unpack(const char *tar_path, const char *expect_sha256_hex, const char *to, bool tree,
                  char *err, size_t errsize)
{
    rung_why(err, errsize, "%s", "");
    if (!rung_is_sha256_hex(expect_sha256_hex)) {
        rung_why(err, errsize, "the expected SHA-256 of %s is not 64 hex digits", tar_path);
        return -1;
    }
    Unpack u = {.tar_path = tar_path, .tree = tree, .err = err, .errsize = errsize};
    if (tree && (u.links = json_object()) == NULL) {
        rung_why(err, errsize, "out of memory unpacking %s", tar_path);
        return -1;
    }
    u.fd = open(tar_path, O_RDONLY | O_CLOEXEC);
    if (u.fd < 0) {
        rung_why(err, errsize, "cannot open %s: %s", tar_path, strerror(errno));
        json_decref(u.links);
        return -1;
    }
    char hex[65], parent[PATH_MAX], name[NAME_MAX + 1], tmp[PATH_MAX];
    const char *z;
    int rc = -1;
    if (ckpt_sha256_fd(u.fd, hex, &u.limit) != 0) {
        rung_why(err, errsize, "cannot read %s: %s", tar_path, strerror(errno));
    } else if (strcasecmp(hex, expect_sha256_hex) != 0) {
        rung_why(err, errsize, "%s: its SHA-256 is %s, not the expected %s; nothing extracted",
                 tar_path, hex, expect_sha256_hex);
    } else if ((z = compression(u.fd)) != NULL) {
        rung_why(err, errsize,
                 "%s is compressed (%s): only a plain tar is unpacked, as a worker packs; nothing "
                 "extracted",
                 tar_path, z);
    } else if (check_entries(&u) != 0) {
        /* err says which entry */
    } else if (split_path(to, parent, name) != 0 ||
               snprintf(tmp, sizeof tmp, "%s/.%s.unpack-XXXXXX", parent, name) >= (int)sizeof tmp) {
        rung_why(err, errsize, "the path %.200s is too long", to);
    } else if (mkdtemp(tmp) == NULL) {
        rung_why(err, errsize, "cannot make a folder to unpack into (%s): %s", tmp,
                 strerror(errno));
    } else {
        /* Unpacked beside `to`, on its file system, and moved in only
         * whole: a refusal halfway leaves `to` as it was. */
        char *base = realpath(tmp, NULL);
        int tfd = base != NULL ? open(base, DIR_FLAGS) : -1;
        bool renamed = false;
        if (tfd < 0) {
            rung_why(err, errsize, "cannot open the folder %s: %s", tmp, strerror(errno));
        } else if (extract(&u, base) == 0) {
            if (!tree) {
                rc = install(tfd, to, err, errsize);
            } else if (rename(tmp, to) == 0) {
                renamed = true;
                rc = 0;
            } else {
                rung_why(err, errsize, "cannot move the unpacked tree to %s: %s", to,
                         strerror(errno));
            }
        }
        struct stat st;
        int pfd = renamed ? -1 : open(parent, DIR_FLAGS);
        const char *tname = strrchr(tmp, '/') + 1;
        if (!renamed &&
            (pfd < 0 || fstat(pfd, &st) != 0 || ckpt_remove_entry(pfd, tname, st.st_dev, 0) != 0) &&
            rc == 0) /* (a failure's own message comes first) */
            rung_why(err, errsize, "unpacked, but cannot remove %s: %s", tmp, strerror(errno));
        if (pfd >= 0)
            close(pfd);
        if (tfd >= 0)
            close(tfd);
        free(base);
    }
    close(u.fd);
    json_decref(u.links);
    return rc;
}

int ckpt_unpack(const char *tar_path, const char *expect_sha256_hex, const char *to, char *err,
                size_t errsize)
{
    return unpack(tar_path, expect_sha256_hex, to, false, err, errsize);
}

int ckpt_unpack_tree(const char *tar_path, const char *expect_sha256_hex, const char *to, char *err,
                     size_t errsize)
{
    struct stat st;
    if (lstat(to, &st) == 0) {
        rung_why(err, errsize, "cannot unpack %s into %s: it exists already", tar_path, to);
        return -1;
    }
    return unpack(tar_path, expect_sha256_hex, to, true, err, errsize);
}
