/* PBT's checkpoint copies through rungd (docs/api.md, "PBT's checkpoints
 * through rungd"): the upload's head check, the upload and the download;
 * the bytes themselves are streamed by the front (http_upload.c) and kept
 * by ckptstore.c. */
#include "api_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckptstore.h"
#include "log.h"

#define A RUNG_E_INVALID_ARGUMENT

/* The step query argument, required. */
static int checkpoint_step(const Job *job, int64_t *step, RungError *err)
{
    if (api_query_int(job, "step", -1, 0, INT64_MAX / 2, step, err) != 0)
        return err->code;
    if (*step < 0)
        return rung_error_set(err, A, "step", "step: required (the checkpoint's step)");
    return 0;
}

/* The worker query argument: the id of the worker sending the request;
 * 0 when it is missing (the core's check names it). */
static int checkpoint_worker(const Job *job, int64_t *worker, RungError *err)
{
    return api_query_int(job, "worker", 0, 1, INT64_MAX / 2, worker, err);
}

int api_checkpoint_admit(Engine *e, const Job *job, RungError *err)
{
    int64_t step, worker;
    if (checkpoint_step(job, &step, err) || checkpoint_worker(job, &worker, err))
        return err->code;
    const char *token = json_string_value(json_object_get(job->query, "upload_token"));
    return core_upload_check(engine_core(e), job->ids[0], step, worker, token, err);
}

void api_checkpoint_put(Engine *e, Job *job)
{
    int64_t id = job->ids[0], step;
    RungError err;
    rung_error_clear(&err);
    /* Again now that the body is in: the copy may have been stored or no
     * longer be owed meanwhile. */
    if (api_checkpoint_admit(e, job, &err) != 0) {
        api_fail(job, &err);
        return;
    }
    checkpoint_step(job, &step, &err);
    const char *file = json_string_value(json_object_get(job->body, "file"));
    const char *sha = json_string_value(json_object_get(job->body, "sha256"));
    const char *claimed = json_string_value(json_object_get(job->body, "claimed"));
    if (file == NULL || sha == NULL) {
        api_error(job, A, "body", "body: empty; send the tar of the trial's folder");
        return;
    }
    if (claimed == NULL || strcasecmp(claimed, sha) != 0) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "X-Rung-Sha256: %s the SHA-256 of the body received (%s): resend it",
                 claimed ? "does not match" : "required: send", sha);
        api_error(job, A, "X-Rung-Sha256", msg);
        return;
    }
    Core *core = engine_core(e);
    const char *dir = engine_config(e)->data_dir;
    char path[PATH_MAX];
    if (ckptstore_path(dir, id, step, path, sizeof path) != 0 || rename(file, path) != 0 ||
        ckptstore_sync_dir(dir) != 0) {
        char msg[PATH_MAX + 64];
        snprintf(msg, sizeof msg, "cannot store the checkpoint as %s: %s", path, strerror(errno));
        api_error(job, RUNG_E_INTERNAL, "", msg);
        return;
    }
    CoreCheckpoint c = {.trial_id = id,
                        .step = step,
                        .size = json_integer_value(json_object_get(job->body, "size")),
                        .stored_at = engine_now(e)};
    snprintf(c.sha256, sizeof c.sha256, "%s", sha);
    core_checkpoint_stored(core, &c);
    LOG_INFO("trial %lld: checkpoint of step %lld stored (%lld bytes)", (long long)id,
             (long long)step, (long long)c.size);
    api_reply(job, 200,
              json_pack("{s:I, s:I, s:s, s:I}", "trial", (json_int_t)id, "step", (json_int_t)step,
                        "sha256", c.sha256, "size", (json_int_t)c.size));
}

void api_checkpoint_get(Engine *e, Job *job)
{
    int64_t id = job->ids[0], step, worker;
    RungError err;
    rung_error_clear(&err);
    /* Only the worker whose trial resumes from it (docs/api.md). */
    if (checkpoint_step(job, &step, &err) || checkpoint_worker(job, &worker, &err) ||
        core_download_check(engine_core(e), id, step, worker,
                            json_string_value(json_object_get(job->query, "lease_token")), &err)) {
        api_fail(job, &err);
        return;
    }
    const CoreCheckpoint *c = core_checkpoint(engine_core(e), id, step);
    char path[PATH_MAX];
    int fd = -1;
    if (c != NULL && ckptstore_path(engine_config(e)->data_dir, id, step, path, sizeof path) == 0)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        char msg[128];
        snprintf(msg, sizeof msg, "no checkpoint of trial %lld at step %lld is stored",
                 (long long)id, (long long)step);
        api_error(job, RUNG_E_NOT_FOUND, "", msg);
        return;
    }
    job->status = 200;
    job->reply_fd = fd;
    job->reply_size = st.st_size;
    job->content_type = "application/x-tar";
}
