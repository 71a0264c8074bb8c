/* The blob routes (docs/api.md, "Blobs"): a client uploads a packed
 * working directory once, named by its SHA-256, and workers download it.
 * The bytes are streamed by the front (http_upload.c) and kept by
 * blobs.c; whether an experiment still refers to one is the Core's (in
 * memory) and the store's (ended experiments). */
#include "api_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blobs.h"
#include "log.h"
#include "store_read.h"

typedef struct {
    const Core *core;
    Store *store;
    bool failed; /* the store could not say: keep everything */
} RefCtx;

static bool referenced(void *ctx, const char *sha)
{
    RefCtx *r = ctx;
    bool yes = false;
    RungError err;
    if (r->failed || core_blob_referenced(r->core, sha))
        return true;
    if (store_read_blob_referenced(r->store, sha, &yes, &err) != 0) {
        r->failed = true;
        return true;
    }
    return yes;
}

void api_blob_sweep_now(const Core *core, Store *store, const char *data_dir, int64_t now_ms)
{
    RefCtx r = {core, store, false};
    int n = blobs_sweep(data_dir, referenced, &r, now_ms / 1000, BLOBS_GRACE_S);
    if (n > 0)
        LOG_INFO("removed %d blob%s that no experiment refers to", n, n == 1 ? "" : "s");
}

void api_blob_sweep(Engine *e)
{
    api_blob_sweep_now(engine_core(e), engine_store(e), engine_config(e)->data_dir, engine_now(e));
}

/* A blob's upload, at its head: refused when it would pass the quota. One
 * already held is let in (the reply says so; nothing is stored twice). */
int api_blob_admit(Engine *e, const Job *job, RungError *err)
{
    const EngineConfig *cfg = engine_config(e);
    if (blobs_held(cfg->data_dir, job->sha256, NULL))
        return 0;
    api_blob_sweep(e);
    int64_t total = blobs_total(cfg->data_dir);
    if (total + job->raw_length > cfg->blob_quota)
        return rung_error_set(err, RUNG_E_INSUFFICIENT_STORAGE, "Content-Length",
                              "the blobs held take %lld bytes and this one %lld more: past the "
                              "quota of %lld bytes (rungd --blob-quota-mb); delete experiments "
                              "whose working directories are no longer needed",
                              (long long)total, (long long)job->raw_length,
                              (long long)cfg->blob_quota);
    return 0;
}

void api_blob_put(Engine *e, Job *job)
{
    const char *dir = engine_config(e)->data_dir;
    const char *file = json_string_value(json_object_get(job->body, "file"));
    const char *sha = json_string_value(json_object_get(job->body, "sha256"));
    json_int_t size = json_integer_value(json_object_get(job->body, "size"));
    if (file == NULL || sha == NULL) {
        api_error(job, RUNG_E_INVALID_ARGUMENT, "body", "body: empty; send the packed folder");
        return;
    }
    if (strcasecmp(sha, job->sha256) != 0) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "sha256: the path names %s but the body received hashes to %s: resend it",
                 job->sha256, sha);
        api_error(job, RUNG_E_INVALID_ARGUMENT, "sha256", msg);
        return; /* the front removes the file */
    }
    int status = 200;
    if (!blobs_held(dir, job->sha256, NULL)) {
        if (blobs_adopt(dir, file, job->sha256) != 0) {
            char msg[PATH_MAX + 64];
            snprintf(msg, sizeof msg, "cannot store the blob in %s/blobs: %s", dir,
                     strerror(errno));
            api_error(job, RUNG_E_INTERNAL, "", msg);
            return;
        }
        status = 201;
        LOG_INFO("blob %.12s… stored (%lld bytes)", job->sha256, (long long)size);
    }
    api_reply(job, status, json_pack("{s:s, s:I}", "sha256", job->sha256, "size", size));
}

/* GET (and HEAD: the front sends the head alone). A blob asked for is
 * touched, so that the sweep's grace counts from its last use: a client
 * that found it held submits next. */
void api_blob_get(Engine *e, Job *job)
{
    char path[PATH_MAX];
    int fd = -1;
    if (blobs_path(engine_config(e)->data_dir, job->sha256, path, sizeof path) == 0)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        char msg[160];
        snprintf(msg, sizeof msg, "no blob sha256:%s is held: upload it first", job->sha256);
        api_error(job, RUNG_E_NOT_FOUND, "", msg);
        return;
    }
    futimens(fd, NULL);
    job->status = 200;
    job->reply_fd = fd;
    job->reply_size = st.st_size;
    job->content_type = "application/x-tar";
}
