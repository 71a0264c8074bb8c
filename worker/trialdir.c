/* Trial folders: made and held, or removed; see trialdir.h. */
#include "trialdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define OPEN_TRIES 5  /* a folder removed under a new holder is made again this often */
#define MAX_DEPTH 128 /* folders inside folders a removal goes into (a descriptor each) */
#define MAX_PASSES 3  /* a folder that a pass left non-empty is read again */
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

int trialdir_open(const char *trials_dir, int64_t id, char *path, size_t path_size, char *why,
                  size_t why_size)
{
    int len = snprintf(path, path_size, "%s/%" PRId64, trials_dir, id);
    if (len < 0 || (size_t)len >= path_size) {
        snprintf(why, why_size, "the trial folder's path is too long (%.200s)", trials_dir);
        return -1;
    }
    for (int k = 0; k < OPEN_TRIES; k++) {
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            snprintf(why, why_size, "cannot make the trial folder %.300s: %s", path,
                     strerror(errno));
            return -1;
        }
        int fd = open(path, DIR_FLAGS);
        if (fd < 0) {
            if (errno == ENOENT)
                continue; /* removed between the two */
            snprintf(why, why_size, "cannot open the trial folder %.300s: %s", path,
                     errno == ELOOP || errno == ENOTDIR ? "not a folder" : strerror(errno));
            return -1;
        }
        int rc;
        while ((rc = flock(fd, LOCK_SH)) != 0 && errno == EINTR) {
        }
        struct stat st;
        if (rc != 0 || fstat(fd, &st) != 0) {
            snprintf(why, why_size, "cannot lock the trial folder %.300s: %s", path,
                     strerror(errno));
            close(fd);
            return -1;
        }
        if (st.st_nlink > 0)
            return fd;
        close(fd); /* a removal had it: make it again */
    }
    snprintf(why, why_size, "the trial folder %.300s keeps being removed", path);
    return -1;
}

/* Removes what folder dfd holds (not dfd itself). false when something
 * was left. */
static bool empty_folder(int dfd, dev_t dev, int depth, char *why, size_t why_size)
{
    bool ok = true;
    for (int pass = 0; pass < MAX_PASSES; pass++) {
        int copy = dup(dfd);
        DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
        if (d == NULL) {
            if (copy >= 0)
                close(copy);
            snprintf(why, why_size, "cannot read a folder: %s", strerror(errno));
            return false;
        }
        rewinddir(d); /* the copy shares the offset of an earlier pass */
        bool left = false, removed = false;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            const char *name = e->d_name;
            if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                continue;
            if (unlinkat(dfd, name, 0) == 0) {
                removed = true;
                continue;
            }
            if (errno == ENOENT)
                continue;
            if (errno != EISDIR && errno != EPERM) {
                snprintf(why, why_size, "cannot remove %.200s: %s", name, strerror(errno));
                left = true;
                continue;
            }
            /* A folder (O_NOFOLLOW: never a link's target). */
            int sub = openat(dfd, name, DIR_FLAGS);
            struct stat st;
            if (sub < 0 || fstat(sub, &st) != 0) {
                snprintf(why, why_size, "cannot open %.200s: %s", name, strerror(errno));
                if (sub >= 0)
                    close(sub);
                left = true;
                continue;
            }
            if (st.st_dev != dev) {
                snprintf(why, why_size, "%.200s is another file system's mount point; left", name);
                close(sub);
                left = true;
                continue;
            }
            if (depth >= MAX_DEPTH) {
                snprintf(why, why_size, "folders nested deeper than %d; left", MAX_DEPTH);
                close(sub);
                left = true;
                continue;
            }
            /* A folder the program made read-only is emptied all the same. */
            /* (when that fails, removing its entries says why) */
            if ((st.st_mode & S_IRWXU) != S_IRWXU)
                fchmod(sub, (st.st_mode & 07777) | S_IRWXU);
            bool emptied = empty_folder(sub, dev, depth + 1, why, why_size);
            close(sub);
            if (emptied && unlinkat(dfd, name, AT_REMOVEDIR) == 0) {
                removed = true;
            } else {
                if (emptied)
                    snprintf(why, why_size, "cannot remove %.200s: %s", name, strerror(errno));
                left = true;
            }
        }
        closedir(d);
        ok = !left;
        if (ok || !removed)
            break; /* done, or another pass would find the same */
    }
    return ok;
}

int trialdir_remove(const char *trials_dir, int64_t id, char *why, size_t why_size)
{
    why[0] = '\0';
    int tfd = open(trials_dir, DIR_FLAGS);
    if (tfd < 0) {
        snprintf(why, why_size, "cannot open %.300s: %s", trials_dir, strerror(errno));
        return -1;
    }
    char name[24];
    snprintf(name, sizeof name, "%" PRId64, id);
    int rc = 0;
    int fd = openat(tfd, name, DIR_FLAGS);
    struct stat st;
    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR) { /* not a folder: the name alone goes */
            if (unlinkat(tfd, name, 0) != 0 && errno != ENOENT) {
                snprintf(why, why_size, "cannot remove %s: %s", name, strerror(errno));
                rc = -1;
            }
        } else if (errno != ENOENT) {
            snprintf(why, why_size, "cannot open %s: %s", name, strerror(errno));
            rc = -1;
        }
    } else if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        rc = errno == EWOULDBLOCK ? 1 : -1;
        if (rc < 0)
            snprintf(why, why_size, "cannot lock %s: %s", name, strerror(errno));
    } else if (fstat(fd, &st) != 0) {
        snprintf(why, why_size, "cannot stat %s: %s", name, strerror(errno));
        rc = -1;
    } else if (st.st_nlink == 0) {
        rc = 0; /* another removal was first */
    } else if ((st.st_mode & S_IRWXU) != S_IRWXU &&
               fchmod(fd, (st.st_mode & 07777) | S_IRWXU) != 0) {
        snprintf(why, why_size, "cannot make %s writable: %s", name, strerror(errno));
        rc = -1;
    } else if (!empty_folder(fd, st.st_dev, 1, why, why_size)) {
        rc = -1;
    } else if (unlinkat(tfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
        snprintf(why, why_size, "cannot remove %s: %s", name, strerror(errno));
        rc = -1;
    }
    if (fd >= 0)
        close(fd); /* releases the lock, after the folder is gone */
    close(tfd);
    return rc;
}

/* A trial folder's name: its id, digits only. */
static bool is_trial_name(const char *name)
{
    if (name[0] < '1' || name[0] > '9' || strlen(name) > 19)
        return false;
    for (const char *p = name; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

/* The old layout's <workdir>/uploads was <trials_dir>/uploads: packed
 * folders on their way (worker/ckptxfer.h), which no worker sends again
 * (rungd asks anew), so they would only hold the disk. Plain .tar files
 * only; the folder goes when that leaves it empty. */
static void remove_old_uploads(int tfd)
{
    int ufd = openat(tfd, "uploads", DIR_FLAGS);
    if (ufd < 0)
        return;
    DIR *d = fdopendir(ufd);
    if (d == NULL) {
        close(ufd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        struct stat st;
        if (n > 4 && strcmp(e->d_name + n - 4, ".tar") == 0 &&
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
    unlinkat(tfd, "uploads", AT_REMOVEDIR);
}

int trialdir_adopt_old_layout(const char *trials_dir, char *why, size_t why_size)
{
    why[0] = '\0';
    int tfd = open(trials_dir, DIR_FLAGS);
    if (tfd < 0) {
        snprintf(why, why_size, "cannot open %.300s: %s", trials_dir, strerror(errno));
        return -1;
    }
    int ofd = openat(tfd, "trials", DIR_FLAGS);
    if (ofd < 0) {
        int e = errno;
        close(tfd);
        if (e == ENOENT || e == ELOOP || e == ENOTDIR)
            return 0; /* no old layout (or not a folder of ours) */
        snprintf(why, why_size, "cannot open %.300s/trials: %s", trials_dir, strerror(e));
        return -1;
    }
    DIR *d = fdopendir(ofd);
    if (d == NULL) {
        snprintf(why, why_size, "cannot read %.300s/trials: %s", trials_dir, strerror(errno));
        close(ofd);
        close(tfd);
        return -1;
    }
    int moved = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!is_trial_name(e->d_name))
            continue;
        /* renameat2's RENAME_NOREPLACE is not everywhere: a folder already
         * in the new place (a trial run since) keeps its own files. */
        struct stat st;
        if (fstatat(tfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) {
            if (why[0] == '\0')
                snprintf(why, why_size, "trials/%.24s left in the old place: %.24s is taken",
                         e->d_name, e->d_name);
            continue;
        }
        if (renameat(dirfd(d), e->d_name, tfd, e->d_name) != 0) {
            if (why[0] == '\0')
                snprintf(why, why_size, "cannot move trials/%.24s: %s", e->d_name, strerror(errno));
            continue;
        }
        moved++;
    }
    closedir(d);
    unlinkat(tfd, "trials", AT_REMOVEDIR); /* only when empty: else it stays */
    remove_old_uploads(tfd);
    close(tfd);
    return moved;
}
