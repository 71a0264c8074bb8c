/* The artifacts' files (artifacts.h). */
#include "artifacts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool parse_name(const char *name, ArtifactFile *a)
{
    char sha[65];
    int end = 0;
    if (sscanf(name, "%" SCNd64 "-%" SCNd64 "-%64[0-9a-f].tar%n", &a->experiment, &a->trial, sha,
               &end) != 3 ||
        name[end] != '\0' || strlen(sha) != 64)
        return false;
    memcpy(a->sha256, sha, sizeof a->sha256);
    return true;
}

int artifacts_path(const char *data_dir, const ArtifactFile *a, char *out, size_t size)
{
    int n = snprintf(out, size, "%s/artifacts/%" PRId64 "-%" PRId64 "-%s.tar", data_dir,
                     a->experiment, a->trial, a->sha256);
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int64_t artifacts_each(const char *data_dir, int64_t experiment,
                       void (*fn)(void *ctx, const ArtifactFile *a), void *ctx)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/artifacts", data_dir);
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    int64_t total = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        ArtifactFile a;
        struct stat st;
        if (!parse_name(de->d_name, &a) || (experiment != 0 && a.experiment != experiment) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        a.size = (int64_t)st.st_size;
        total += a.size;
        if (fn != NULL)
            fn(ctx, &a);
    }
    closedir(d);
    return total;
}

typedef struct {
    int64_t trial;
    ArtifactFile *out;
    bool found;
} Find;

static void find_one(void *ctx, const ArtifactFile *a)
{
    Find *f = ctx;
    if (a->trial == f->trial) {
        *f->out = *a;
        f->found = true;
    }
}

bool artifacts_find(const char *data_dir, int64_t trial, ArtifactFile *out)
{
    Find f = {trial, out, false};
    artifacts_each(data_dir, 0, find_one, &f);
    return f.found;
}

int artifacts_adopt(const char *data_dir, const char *from, const ArtifactFile *a)
{
    char dir[PATH_MAX], path[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/artifacts", data_dir);
    if ((mkdir(dir, 0700) != 0 && errno != EEXIST) ||
        artifacts_path(data_dir, a, path, sizeof path))
        return -1;
    int fd = open(from, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    if (rc != 0 || chmod(from, 0600) != 0 || rename(from, path) != 0)
        return -1;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    return 0;
}

void artifacts_remove(const char *data_dir, const ArtifactFile *a)
{
    char path[PATH_MAX];
    if (artifacts_path(data_dir, a, path, sizeof path) == 0)
        unlink(path);
}
