/* The cache of working directories' blobs and virtualenvs (blobcache.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "blobcache.h"
#include "ckpt.h"
#include "envs.h"
#include "log.h"
#include "why.h"

static int make_dir(const char *path, char *why, size_t why_size)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return rung_why(why, why_size, "cannot make %s: %s", path, strerror(errno));
    return 0;
}

int blobcache_open(BlobCache *bc, const char *dir, int64_t max_bytes, char *why, size_t why_size)
{
    memset(bc, 0, sizeof *bc);
    bc->max_bytes = max_bytes;
    char cwd[PATH_MAX];
    if (dir[0] != '/' && getcwd(cwd, sizeof cwd) == NULL)
        return rung_why(why, why_size, "cannot find the current folder: %s", strerror(errno));
    if (snprintf(bc->dir, sizeof bc->dir, "%s%s%s", dir[0] == '/' ? "" : cwd,
                 dir[0] == '/' ? "" : "/", dir) >= (int)sizeof bc->dir ||
        snprintf(bc->blobs, sizeof bc->blobs, "%s/blobs", bc->dir) >= (int)sizeof bc->blobs ||
        snprintf(bc->venvs, sizeof bc->venvs, "%s/venvs", bc->dir) >= (int)sizeof bc->venvs)
        return rung_why(why, why_size, "the cache folder's path %s is too long", dir);
    /* Downloads a killed worker left halfway: .<sha>.tar.XXXXXX */
    DIR *d = opendir(bc->blobs);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL)
        if (de->d_name[0] == '.' && strstr(de->d_name, ".tar.") != NULL)
            unlinkat(dirfd(d), de->d_name, 0);
    if (d != NULL)
        closedir(d);
    return 0;
}

int blobcache_ensure(BlobCache *bc, char *why, size_t why_size)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", bc->dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return rung_why(why, why_size, "cannot make %s: %s", path, strerror(errno));
        *p = '/';
    }
    if (make_dir(bc->dir, why, why_size) != 0 || make_dir(bc->blobs, why, why_size) != 0 ||
        make_dir(bc->venvs, why, why_size) != 0)
        return -1;
    return 0;
}

void blobcache_space(const BlobCache *bc, int64_t *free_bytes, bool *full)
{
    /* The cache's folder, or the nearest one above it (it is made at its
     * first use). */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", bc->dir);
    struct statvfs sv;
    int rc;
    while ((rc = statvfs(path, &sv)) != 0 && strrchr(path, '/') > path)
        *strrchr(path, '/') = '\0';
    if (rc != 0) {
        *free_bytes = 0;
        *full = false; /* unknown: a download will say what is wrong */
        return;
    }
    *free_bytes = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
    *full = *free_bytes < BLOBCACHE_MIN_FREE;
}

/* Downloads blob sha256 into final (via a temporary file beside it) and
 * checks its hash. */
static int download(BlobCache *bc, Client *c, const char *sha256, const ClientCall *call,
                    const char *final, char *why, size_t why_size)
{
    int64_t free_bytes;
    bool full;
    blobcache_space(bc, &free_bytes, &full);
    if (full)
        return rung_why(why, why_size,
                        "the worker's cache disk is full (%" PRId64 " bytes free in %s): cannot "
                        "download the working directory sha256:%s",
                        free_bytes, bc->dir, sha256);
    char tmp[PATH_MAX + 32], path[128];
    snprintf(tmp, sizeof tmp, "%s/.%s.tar.XXXXXX", bc->blobs, sha256);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return rung_why(why, why_size, "cannot make a file in %s: %s", bc->blobs, strerror(errno));
    close(fd);
    snprintf(path, sizeof path, "/api/v1/blobs/%s", sha256);
    ClientReply reply;
    int rc = client_get_file(c, path, tmp, bc->max_bytes, call, &reply);
    int ret = -1;
    char got[65];
    int64_t size = 0;
    if (rc != 0) {
        rung_why(why, why_size, "cannot download the working directory sha256:%s: %s", sha256,
                 reply.error[0] ? reply.error : "no reply");
    } else if (reply.status == 404) {
        rung_why(why, why_size,
                 "rungd does not hold the working directory sha256:%s (never uploaded, or "
                 "deleted): %s",
                 sha256, reply.error);
    } else if (reply.status != 200) {
        rung_why(why, why_size,
                 "cannot download the working directory sha256:%s: rungd answered %s", sha256,
                 reply.error);
    } else if (ckpt_sha256_file(tmp, got, &size) != 0) {
        rung_why(why, why_size, "cannot read %s: %s", tmp, strerror(errno));
    } else if (strcmp(got, sha256) != 0) {
        rung_why(why, why_size,
                 "the working directory downloaded as sha256:%s hashes to %s (%" PRId64
                 " bytes): refused, nothing kept",
                 sha256, got, size);
    } else if (rename(tmp, final) != 0) {
        rung_why(why, why_size, "cannot move the download to %s: %s", final, strerror(errno));
    } else {
        LOG_INFO("working directory sha256:%.12s... downloaded (%" PRId64 " bytes)", sha256, size);
        ret = 0;
    }
    client_reply_clear(&reply);
    if (ret != 0)
        unlink(tmp);
    return ret;
}

int blobcache_get(BlobCache *bc, Client *c, const char *sha256, const ClientCall *call, char *path,
                  int *hold_fd, bool *downloaded, char *why, size_t why_size)
{
    *hold_fd = -1;
    *downloaded = false;
    if (blobcache_ensure(bc, why, why_size) != 0)
        return -1;
    char lock[PATH_MAX + 80];
    rung_why(path, PATH_MAX, "%s/%s.tar", bc->blobs, sha256);
    snprintf(lock, sizeof lock, "%s/%s.lock", bc->blobs, sha256);
    int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lfd < 0)
        return rung_why(why, why_size, "cannot open %s: %s", lock, strerror(errno));
    if (flock(lfd, LOCK_EX) != 0) {
        rung_why(why, why_size, "cannot lock %s: %s", lock, strerror(errno));
        close(lfd);
        return -1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT) {
        if (download(bc, c, sha256, call, path, why, why_size) != 0) {
            close(lfd);
            return -1;
        }
        *downloaded = true;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    }
    if (fd < 0) {
        rung_why(why, why_size, "cannot open %s: %s", path, strerror(errno));
        close(lfd);
        return -1;
    }
    /* Held before the download lock goes: eviction passes it by. */
    flock(fd, LOCK_SH);
    futimens(fd, NULL); /* used now: the LRU's clock */
    close(lfd);
    *hold_fd = fd;
    if (*downloaded)
        blobcache_evict(bc);
    return 0;
}

/* One thing the cache holds. */
typedef struct {
    char path[PATH_MAX];
    char lock[PATH_MAX + 8]; /* flock taken to remove it */
    bool venv;
    int64_t bytes;
    int64_t used; /* mtime, seconds */
} Item;

static int by_use(const void *a, const void *b)
{
    const Item *x = a, *y = b;
    return x->used < y->used ? -1 : x->used > y->used;
}

/* Appends what folder holds (blobs: *.tar; venvs: folders with a
 * .rung-ready) to *items. */
static void list_items(const char *folder, bool venvs, Item **items, size_t *n, size_t *cap)
{
    DIR *d = opendir(folder);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        size_t len = strlen(name);
        if (name[0] == '.')
            continue;
        if (!venvs && (len < 5 || strcmp(name + len - 4, ".tar") != 0))
            continue;
        Item it = {.venv = venvs};
        struct stat st;
        if (snprintf(it.path, sizeof it.path, "%s/%s", folder, name) >= (int)sizeof it.path)
            continue;
        if (venvs) {
            char ready[PATH_MAX + 16];
            snprintf(ready, sizeof ready, "%s/%s", it.path, ENVS_READY);
            FILE *f = fopen(ready, "r");
            if (f == NULL)
                continue;
            if (fscanf(f, "%" SCNd64, &it.bytes) != 1)
                it.bytes = 0;
            fclose(f);
            if (stat(ready, &st) != 0)
                continue;
            snprintf(it.lock, sizeof it.lock, "%s.lock", it.path);
        } else {
            if (stat(it.path, &st) != 0)
                continue;
            it.bytes = (int64_t)st.st_size;
            snprintf(it.lock, sizeof it.lock, "%s", it.path);
        }
        it.used = (int64_t)st.st_mtime;
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            Item *grown = realloc(*items, nc * sizeof *grown);
            if (grown == NULL)
                break;
            *items = grown;
            *cap = nc;
        }
        (*items)[(*n)++] = it;
    }
    if (d != NULL)
        closedir(d);
}

void blobcache_evict(BlobCache *bc)
{
    Item *items = NULL;
    size_t n = 0, cap = 0;
    list_items(bc->blobs, false, &items, &n, &cap);
    list_items(bc->venvs, true, &items, &n, &cap);
    int64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += items[i].bytes;
    if (total > bc->max_bytes && n > 0)
        qsort(items, n, sizeof *items, by_use);
    for (size_t i = 0; i < n && total > bc->max_bytes; i++) {
        int fd = open(items[i].lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (fd >= 0)
                close(fd); /* held: in use */
            continue;
        }
        int rc = items[i].venv ? envs_remove_tree(items[i].path) : unlink(items[i].path);
        close(fd);
        if (rc == 0) {
            total -= items[i].bytes;
            LOG_INFO("cache: removed %s (%" PRId64
                     " bytes, least recently used; --cache-mb %" PRId64 ")",
                     items[i].path, items[i].bytes, bc->max_bytes >> 20);
        }
    }
    free(items);
}
