/* Checkpoint copies through rungd: uploads on their own thread, downloads
 * for the supervisor; see ckptxfer.h. */
#include "ckptxfer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt.h"
#include "sha256hex.h"
#include "log.h"

#define WAIT_SLICE_MS 200 /* uploader_wait_idle looks at give_up this often */
#define WARNED_MAX 16     /* missing folders remembered, so that rungd's repeats log once */


static bool call_cancelled(const ClientCall *call)
{
    return call && call->cancel && call->cancel(call->cancel_arg);
}

/* Appends "&name=value" to the request path, value percent-encoded
 * (rungd's tokens are hex, but a lease reply's is only a string). False
 * when it does not fit. */
static bool add_arg(char *path, size_t size, const char *name, const char *value)
{
    size_t n = strlen(path);
    int k = snprintf(path + n, size - n, "&%s=", name);
    if (k < 0 || (size_t)k >= size - n)
        return false;
    n += (size_t)k;
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        bool plain = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
                     (*p >= 'A' && *p <= 'Z') || strchr("-._~", *p) != NULL;
        k = plain ? snprintf(path + n, size - n, "%c", *p)
                  : snprintf(path + n, size - n, "%%%02X", *p);
        if (k < 0 || (size_t)k >= size - n)
            return false;
        n += (size_t)k;
    }
    return true;
}

/* /api/v1/trials/<trial>/checkpoint?step=<step>&worker=<id>&<name>=<token>:
 * who asks, and what entitles it (docs/api.md). */
static bool checkpoint_path(char *path, size_t size, int64_t trial, int64_t step, int64_t worker_id,
                            const char *name, const char *token)
{
    /* step < 0: the trial's artifacts (CKPTXFER_ARTIFACTS), the same transfer. */
    int n = step < 0
                ? snprintf(path, size, "/api/v1/trials/%" PRId64 "/artifacts?worker=%" PRId64,
                           trial, worker_id)
                : snprintf(path, size,
                           "/api/v1/trials/%" PRId64 "/checkpoint?step=%" PRId64 "&worker=%" PRId64,
                           trial, step, worker_id);
    return n >= 0 && (size_t)n < size && add_arg(path, size, name, token ? token : "");
}

/* ---- one upload ---- */

XferResult ckptxfer_upload(Client *c, const char *trial_dir, const char *tar_path, int64_t trial,
                           int64_t step, int64_t worker_id, const char *token,
                           const ClientCall *call, char sha256_hex[65], int64_t *size, long *status,
                           char *err, size_t errsize)
{
    sha256_hex[0] = '\0';
    *size = 0;
    *status = 0;
    err[0] = '\0';
    /* The folder's shared lock (trialdir.h) keeps --keep-trials from
     * removing it while it is packed. */
    int dfd = open(trial_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT) {
            snprintf(err, errsize, "no folder %s here", trial_dir);
            return XFER_MISSING;
        }
        snprintf(err, errsize, "cannot open %s: %s", trial_dir,
                 errno == ENOTDIR || errno == ELOOP ? "not a folder" : strerror(errno));
        return XFER_FAILED;
    }
    int rc;
    while ((rc = flock(dfd, LOCK_SH)) != 0 && errno == EINTR) {
    }
    struct stat st;
    if (rc != 0 || fstat(dfd, &st) != 0) {
        snprintf(err, errsize, "cannot lock %s: %s", trial_dir, strerror(errno));
        close(dfd);
        return XFER_FAILED;
    }
    if (st.st_nlink == 0) { /* removed between the open and the lock */
        snprintf(err, errsize, "no folder %s here", trial_dir);
        close(dfd);
        return XFER_MISSING;
    }
    char perr[512];
    rc = ckpt_pack(trial_dir, tar_path, sha256_hex, size, perr, sizeof perr);
    close(dfd);
    if (rc != 0) {
        snprintf(err, errsize, "cannot pack it: %s", perr);
        sha256_hex[0] = '\0';
        return XFER_FAILED;
    }
    char path[512];
    if (!checkpoint_path(path, sizeof path, trial, step, worker_id, "upload_token", token)) {
        unlink(tar_path);
        snprintf(err, errsize, "the upload token is too long");
        return XFER_REFUSED;
    }
    ClientReply reply;
    rc = client_put_file(c, path, tar_path, sha256_hex, call, &reply);
    unlink(tar_path);
    *status = reply.status;
    XferResult res;
    if (rc != 0) {
        res = call_cancelled(call) ? XFER_CANCELED : XFER_FAILED;
        snprintf(err, errsize, "%s", reply.error[0] ? reply.error : "no reply");
    } else if (reply.status == 200) {
        /* rungd's hash is of the bytes it stored: a difference means they
         * are not the bytes sent (it should have refused them). */
        const char *theirs = json_string_value(json_object_get(reply.body, "sha256"));
        if (theirs != NULL && strcasecmp(theirs, sha256_hex) != 0) {
            snprintf(err, errsize, "rungd stored bytes whose SHA-256 is %.64s, not %s", theirs,
                     sha256_hex);
            res = XFER_FAILED;
        } else {
            res = XFER_OK;
        }
    } else if (reply.status >= 400 && reply.status <= 499 && reply.status != 429) {
        snprintf(err, errsize, "%s", reply.error);
        res = XFER_REFUSED;
    } else {
        snprintf(err, errsize, "%s", reply.error[0] ? reply.error : "no reply");
        res = XFER_FAILED;
    }
    client_reply_clear(&reply);
    return res;
}

/* ---- one download ---- */

XferResult ckptxfer_download(Client *c, int64_t trial, int64_t step, const char *sha256_hex,
                             int64_t size, int64_t worker_id, const char *lease_token,
                             const char *tmp_dir, const char *dest_dir, const ClientCall *call,
                             int64_t *bytes, char *err, size_t errsize)
{
    *bytes = 0;
    err[0] = '\0';
    if (!rung_is_sha256_hex(sha256_hex) || size < 0) {
        snprintf(err, errsize, "the lease reply's checkpoint_from has no valid sha256 and size");
        return XFER_FAILED;
    }
    char path[512];
    if (!checkpoint_path(path, sizeof path, trial, step, worker_id, "lease_token", lease_token)) {
        snprintf(err, errsize, "the lease token is too long");
        return XFER_FAILED;
    }
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s/.checkpoint-%" PRId64 "-%" PRId64 ".tar.XXXXXX", tmp_dir,
                     trial, step);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        snprintf(err, errsize, "the path of a temporary file in %.200s is too long", tmp_dir);
        return XFER_FAILED;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errsize, "cannot make a temporary file in %s: %s", tmp_dir, strerror(errno));
        return XFER_FAILED;
    }
    close(fd);
    ClientReply reply;
    int rc = client_get_file(c, path, tmp, size, call, &reply);
    XferResult res = XFER_FAILED;
    if (rc != 0) {
        if (call_cancelled(call)) {
            res = XFER_CANCELED;
            snprintf(err, errsize, "download canceled (the trial or the worker is stopping)");
        } else {
            snprintf(err, errsize, "download failed: %s",
                     reply.error[0] ? reply.error : "no reply");
        }
    } else if (reply.status != 200) {
        snprintf(err, errsize, "rungd answered %s", reply.error);
        res = reply.status >= 400 && reply.status <= 499 ? XFER_REFUSED : XFER_FAILED;
    } else {
        struct stat st;
        if (stat(tmp, &st) == 0)
            *bytes = (int64_t)st.st_size;
        char uerr[768];
        if (ckpt_unpack(tmp, sha256_hex, dest_dir, uerr, sizeof uerr) == 0) {
            res = XFER_OK;
        } else {
            char got[65];
            if (ckpt_sha256_file(tmp, got, NULL) == 0 && strcasecmp(got, sha256_hex) != 0)
                snprintf(err, errsize,
                         "sha256 mismatch: the %" PRId64 " bytes received hash to %s, not %s; "
                         "nothing extracted",
                         *bytes, got, sha256_hex);
            else
                snprintf(err, errsize, "cannot unpack it: %s", uerr);
        }
    }
    client_reply_clear(&reply);
    if (unlink(tmp) != 0 && errno != ENOENT)
        LOG_WARN("cannot remove %s: %s", tmp, strerror(errno));
    return res;
}

/* ---- the uploader thread ---- */

typedef struct Pair {
    int64_t trial, step;
    char token[CKPTXFER_TOKEN_MAX + 1]; /* rungd's for this upload */
} Pair;

struct Uploader {
    Client *client; /* the thread's */
    char *workdir;
    char uploads[PATH_MAX];
    int64_t worker_id;
    ClientCancel cancel;
    void *cancel_arg;
    pthread_t thread;
    atomic_bool stop; /* uploader_free: end now */

    pthread_mutex_t mu;  /* guards what follows */
    pthread_cond_t cond; /* broadcast when the queue or busy changes (CLOCK_MONOTONIC) */
    Pair queue[CKPTXFER_QUEUE_MAX];
    int head, n; /* a ring */
    bool busy;   /* current is being uploaded */
    Pair current;
    Pair warned[WARNED_MAX]; /* missing folders already warned about, a ring */
    int n_warned;
};

static bool up_cancel(void *arg)
{
    Uploader *u = arg;
    return atomic_load(&u->stop) || (u->cancel && u->cancel(u->cancel_arg));
}

/* Whether a missing folder for p was warned about; remembers it. */
static bool warned_before(Uploader *u, Pair p)
{
    int n = u->n_warned < WARNED_MAX ? u->n_warned : WARNED_MAX;
    for (int i = 0; i < n; i++)
        if (u->warned[i].trial == p.trial && u->warned[i].step == p.step)
            return true;
    u->warned[u->n_warned++ % WARNED_MAX] = p;
    if (u->n_warned >= 2 * WARNED_MAX)
        u->n_warned -= WARNED_MAX;
    return false;
}

static void upload_one(Uploader *u, Pair p)
{
    char dir[PATH_MAX + 32], tar[PATH_MAX + 96], what[128];
    snprintf(dir, sizeof dir, "%s/trials/%" PRId64, u->workdir, p.trial);
    snprintf(tar, sizeof tar, "%s/%" PRId64 "-%ld-%" PRId64 "-%" PRId64 ".tar", u->uploads,
             u->worker_id, (long)getpid(), p.trial, p.step);
    snprintf(what, sizeof what, "upload of trial %" PRId64 "'s checkpoint of step %" PRId64,
             p.trial, p.step);
    ClientCall call = {.retry = true,
                       .max_retries = CKPTXFER_RETRIES,
                       .cancel = up_cancel,
                       .cancel_arg = u,
                       .what = what};
    char sha[65], err[768];
    int64_t size;
    long status;
    XferResult r = ckptxfer_upload(u->client, dir, tar, p.trial, p.step, u->worker_id, p.token,
                                   &call, sha, &size, &status, err, sizeof err);
    switch (r) {
    case XFER_OK:
        LOG_INFO("uploaded trial %" PRId64 "'s folder (checkpoint of step %" PRId64 "): %" PRId64
                 " bytes, sha256 %.12s",
                 p.trial, p.step, size, sha);
        break;
    case XFER_MISSING: {
        pthread_mutex_lock(&u->mu);
        bool again = warned_before(u, p);
        pthread_mutex_unlock(&u->mu);
        if (again)
            LOG_DEBUG("rungd asks again for trial %" PRId64 "'s folder (checkpoint of step %" PRId64
                      "): %s; skipped",
                      p.trial, p.step, err);
        else
            LOG_WARN("rungd asks for trial %" PRId64 "'s folder (checkpoint of step %" PRId64
                     "), but there is %s; skipped",
                     p.trial, p.step, err);
        break;
    }
    case XFER_REFUSED:
        LOG_WARN("upload of trial %" PRId64 "'s folder (checkpoint of step %" PRId64
                 ") refused: %s%s",
                 p.trial, p.step, err,
                 status == 409   ? " (rungd no longer needs the copy)"
                 : status == 403 ? " (rungd restarted, or asked another worker: it asks again "
                                   "with a new token where it still needs the copy)"
                                 : "; not sent again");
        break;
    case XFER_FAILED:
        LOG_WARN("upload of trial %" PRId64 "'s folder (checkpoint of step %" PRId64
                 ") failed: %s; given up until rungd asks again",
                 p.trial, p.step, err);
        break;
    case XFER_CANCELED:
        LOG_INFO("upload of trial %" PRId64 "'s folder (checkpoint of step %" PRId64
                 ") canceled: the worker is stopping",
                 p.trial, p.step);
        break;
    }
}

static void *uploader_main(void *arg)
{
    Uploader *u = arg;
    pthread_mutex_lock(&u->mu);
    for (;;) {
        while (u->n == 0 && !atomic_load(&u->stop))
            pthread_cond_wait(&u->cond, &u->mu);
        if (atomic_load(&u->stop))
            break;
        Pair p = u->queue[u->head];
        u->head = (u->head + 1) % CKPTXFER_QUEUE_MAX;
        u->n--;
        u->busy = true;
        u->current = p;
        pthread_mutex_unlock(&u->mu);
        if (up_cancel(u))
            LOG_INFO("upload of trial %" PRId64 "'s folder (checkpoint of step %" PRId64
                     ") dropped: the worker is stopping",
                     p.trial, p.step);
        else
            upload_one(u, p);
        pthread_mutex_lock(&u->mu);
        u->busy = false;
        pthread_cond_broadcast(&u->cond);
    }
    if (u->n > 0) /* dropped: rungd asks for them again if the worker comes back */
        LOG_INFO("%d queued checkpoint upload(s) dropped: the worker is stopping", u->n);
    u->n = 0;
    pthread_cond_broadcast(&u->cond);
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

Uploader *uploader_new(const char *server, const char *token, const char *workdir,
                       int64_t worker_id, ClientCancel cancel, void *cancel_arg, char *why,
                       size_t why_size)
{
    Uploader *u = calloc(1, sizeof *u);
    if (u == NULL) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    int n = snprintf(u->uploads, sizeof u->uploads, "%s/%s", workdir, CKPTXFER_UPLOADS);
    if (n < 0 || (size_t)n >= sizeof u->uploads) {
        snprintf(why, why_size, "the path of %.200s/%s is too long", workdir, CKPTXFER_UPLOADS);
        free(u);
        return NULL;
    }
    if (mkdir(u->uploads, 0700) != 0 && errno != EEXIST) {
        snprintf(why, why_size, "cannot make %s: %s", u->uploads, strerror(errno));
        free(u);
        return NULL;
    }
    u->workdir = strdup(workdir);
    u->client = client_new(server, token);
    if (u->workdir == NULL || u->client == NULL) {
        snprintf(why, why_size, "out of memory");
        client_free(u->client);
        free(u->workdir);
        free(u);
        return NULL;
    }
    u->worker_id = worker_id;
    u->cancel = cancel;
    u->cancel_arg = cancel_arg;
    atomic_init(&u->stop, false);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&u->thread, NULL, uploader_main, u) != 0) {
        snprintf(why, why_size, "cannot start a thread");
        pthread_cond_destroy(&u->cond);
        pthread_mutex_destroy(&u->mu);
        client_free(u->client);
        free(u->workdir);
        free(u);
        return NULL;
    }
    return u;
}

bool uploader_request(Uploader *u, int64_t trial, int64_t step, const char *token)
{
    Pair p = {.trial = trial, .step = step};
    snprintf(p.token, sizeof p.token, "%s", token ? token : "");
    pthread_mutex_lock(&u->mu);
    bool known = u->busy && u->current.trial == trial && u->current.step == step;
    for (int i = 0; i < u->n && !known; i++) {
        Pair *q = &u->queue[(u->head + i) % CKPTXFER_QUEUE_MAX];
        known = q->trial == trial && q->step == step;
        if (known)
            memcpy(q->token, p.token, sizeof q->token); /* rungd's current one */
    }
    bool full = u->n == CKPTXFER_QUEUE_MAX;
    bool queued = !known && !full && !atomic_load(&u->stop);
    if (queued) {
        u->queue[(u->head + u->n) % CKPTXFER_QUEUE_MAX] = p;
        u->n++;
        pthread_cond_broadcast(&u->cond);
    }
    pthread_mutex_unlock(&u->mu);
    if (!known && full)
        LOG_WARN("upload of trial %" PRId64 "'s folder (checkpoint of step %" PRId64
                 ") not queued: %d uploads wait already; rungd will ask again",
                 trial, step, CKPTXFER_QUEUE_MAX);
    else if (queued)
        LOG_DEBUG("rungd asks for trial %" PRId64 "'s folder (checkpoint of step %" PRId64
                  "): queued",
                  trial, step);
    return queued;
}

int uploader_pending(Uploader *u)
{
    pthread_mutex_lock(&u->mu);
    int n = u->n + (u->busy ? 1 : 0);
    pthread_mutex_unlock(&u->mu);
    return n;
}

bool uploader_wait_idle(Uploader *u, ClientCancel give_up, void *arg)
{
    pthread_mutex_lock(&u->mu);
    while ((u->n > 0 || u->busy) && !(give_up && give_up(arg))) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += WAIT_SLICE_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&u->cond, &u->mu, &ts);
    }
    bool idle = u->n == 0 && !u->busy;
    pthread_mutex_unlock(&u->mu);
    return idle;
}

void uploader_free(Uploader *u)
{
    if (u == NULL)
        return;
    pthread_mutex_lock(&u->mu);
    atomic_store(&u->stop, true);
    pthread_cond_broadcast(&u->cond);
    pthread_mutex_unlock(&u->mu);
    pthread_join(u->thread, NULL);
    pthread_cond_destroy(&u->cond);
    pthread_mutex_destroy(&u->mu);
    client_free(u->client);
    free(u->workdir);
    free(u);
}
