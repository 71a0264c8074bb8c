/* Artifacts come back (docs/api.md, "Artifacts"): when a trial completes
 * and the spec's keep_artifacts wants its folder, the finish reply asks its
 * worker to upload it (an upload token); the upload's head check, the
 * upload and the download; what a trial object says of them; and their
 * removal when a trial falls out of the best N or its experiment is
 * deleted. The bytes are streamed by the front (http_upload.c) and kept by
 * artifacts.c. */
#include "api_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifacts.h"
#include "ct.h"
#include "log.h"
#include "sha256hex.h"
#include "store_read.h"

#define A RUNG_E_INVALID_ARGUMENT

/* A trial's upload token: a keyed hash of its id under a key drawn when
 * rungd starts, so nothing is stored, and after a restart the old tokens
 * open nothing (the worker's upload is refused and given up). */
static void upload_token(int64_t trial, char out[65])
{
    static unsigned char key[32];
    static bool have_key;
    if (!have_key) {
        for (size_t got = 0; got < sizeof key;) {
            ssize_t n = getrandom(key + got, sizeof key - got, 0);
            if (n > 0)
                got += (size_t)n;
        }
        have_key = true;
    }
    unsigned char buf[sizeof key + 8], md[EVP_MAX_MD_SIZE];
    memcpy(buf, key, sizeof key);
    for (int i = 0; i < 8; i++)
        buf[sizeof key + i] = (unsigned char)((uint64_t)trial >> (8 * i));
    unsigned len = 0;
    EVP_Digest(buf, sizeof buf, md, &len, EVP_sha256(), NULL);
    rung_sha256_to_hex(md, out);
}

/* Whether a trial of experiment exp_id whose best value is (has, value) is
 * among the best keep_count of the experiment's completed trials. */
static bool among_best(Engine *e, const Spec *spec, int64_t exp_id, int64_t trial, bool has,
                       double value)
{
    if (spec->keep_artifacts == SPEC_KEEP_ALL || spec->n_objectives > 1)
        return true; /* several objectives: no one ranking, every trial kept */
    if (spec->keep_artifacts == SPEC_KEEP_NONE || !has)
        return false;
    int64_t better = 0;
    RungError err;
    if (store_read_trial_rank(engine_store(e), exp_id, trial, value, spec->mode == SPEC_MODE_MAX,
                              &better, &err) != 0)
        return true; /* keep rather than lose what the store could not rank */
    return better < spec->keep_count;
}

json_t *api_artifacts_wanted(Engine *e, const Trial *t, const Spec *spec)
{
    if (t->state != TRIAL_COMPLETED || spec->keep_artifacts == SPEC_KEEP_NONE ||
        !among_best(e, spec, t->exp->id, t->id, t->has_best, t->best_value))
        return NULL;
    char token[65];
    upload_token(t->id, token);
    return json_pack("{s:s}", "upload_token", token);
}

typedef struct {
    Engine *e;
    const Spec *spec;
    int64_t keep; /* this trial's stays */
} Evict;

static void evict_one(void *ctx, const ArtifactFile *a)
{
    Evict *v = ctx;
    /* Its best value: memory's when it is still there, else its row's. */
    const Trial *t = core_trial(engine_core(v->e), a->trial);
    double value = t ? t->best_value : 0;
    bool has = t ? t->has_best : false;
    RungError err;
    if (t == NULL && store_read_trial_best(engine_store(v->e), a->trial, &value, &has, &err) != 0)
        return;
    if (a->trial != v->keep && !among_best(v->e, v->spec, a->experiment, a->trial, has, value)) {
        artifacts_remove(engine_config(v->e)->data_dir, a);
        LOG_INFO("trial %lld: artifacts removed: no longer among the best %lld",
                 (long long)a->trial, (long long)v->spec->keep_count);
    }
}

/* The trial's experiment and spec, through its stored row. */
static const Spec *trial_spec(Engine *e, Job *job, int64_t trial, TrialLease *tl, Spec *own,
                              bool *owned)
{
    RungError err;
    if (store_read_trial_lease(engine_store(e), trial, tl, &err)) {
        api_fail(job, &err);
        return NULL;
    }
    return api_spec_of(e, job, tl->exp_id, own, owned);
}

int api_artifacts_admit(Engine *e, const Job *job, RungError *err)
{
    int64_t worker;
    if (api_query_int(job, "worker", 0, 1, INT64_MAX / 2, &worker, err))
        return err->code;
    const char *token = json_string_value(json_object_get(job->query, "upload_token"));
    char want[65];
    upload_token(job->ids[0], want);
    if (token == NULL || strlen(token) != 64 || !rung_ct_equal(token, want, 65))
        return rung_error_set(err, RUNG_E_FORBIDDEN, "upload_token",
                              "upload_token: not the token rungd gave for this trial's artifacts");
    ArtifactFile a;
    const char *dir = engine_config(e)->data_dir;
    if (artifacts_find(dir, job->ids[0], &a))
        return rung_error_set(err, RUNG_E_CONFLICT, "", "trial %lld's artifacts are stored already",
                              (long long)job->ids[0]);
    int64_t total = artifacts_each(dir, 0, NULL, NULL);
    if (total + job->raw_length > engine_config(e)->artifact_quota)
        return rung_error_set(err, RUNG_E_INSUFFICIENT_STORAGE, "Content-Length",
                              "the artifacts held take %lld bytes and these %lld more: past the "
                              "quota of %lld bytes (rungd --artifact-quota-mb)",
                              (long long)total, (long long)job->raw_length,
                              (long long)engine_config(e)->artifact_quota);
    return 0;
}

void api_artifacts_put(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    if (api_artifacts_admit(e, job, &err) != 0) {
        api_fail(job, &err);
        return;
    }
    const char *file = json_string_value(json_object_get(job->body, "file"));
    const char *sha = json_string_value(json_object_get(job->body, "sha256"));
    const char *claimed = json_string_value(json_object_get(job->body, "claimed"));
    if (file == NULL || sha == NULL) {
        api_error(job, A, "body", "body: empty; send the tar of the trial's folder");
        return;
    }
    if (claimed == NULL || strcasecmp(claimed, sha) != 0) {
        api_error(job, A, "X-Rung-Sha256", "X-Rung-Sha256: not the SHA-256 of the body received");
        return;
    }
    TrialLease tl;
    Spec own;
    bool owned;
    const Spec *spec = trial_spec(e, job, job->ids[0], &tl, &own, &owned);
    if (spec == NULL)
        return;
    ArtifactFile a = {.experiment = tl.exp_id,
                      .trial = job->ids[0],
                      .size = json_integer_value(json_object_get(job->body, "size"))};
    snprintf(a.sha256, sizeof a.sha256, "%s", sha);
    const char *dir = engine_config(e)->data_dir;
    if (artifacts_adopt(dir, file, &a) != 0) {
        char msg[PATH_MAX + 64];
        snprintf(msg, sizeof msg, "cannot store the artifacts in %s/artifacts: %s", dir,
                 strerror(errno));
        if (owned)
            spec_close(&own);
        api_error(job, RUNG_E_INTERNAL, "", msg);
        return;
    }
    api_event(e, job, "artifacts.stored", a.experiment, a.trial, 0,
              json_pack("{s:I, s:s}", "bytes", (json_int_t)a.size, "sha256", a.sha256));
    /* Those that this one pushed out of the best N go. */
    if (spec->keep_artifacts == SPEC_KEEP_BEST && spec->n_objectives <= 1) {
        Evict v = {e, spec, a.trial};
        artifacts_each(dir, a.experiment, evict_one, &v);
    }
    if (owned)
        spec_close(&own);
    api_reply(job, 200,
              json_pack("{s:I, s:s, s:I}", "trial", (json_int_t)a.trial, "sha256", a.sha256, "size",
                        (json_int_t)a.size));
}

void api_artifacts_get(Engine *e, Job *job)
{
    ArtifactFile a;
    const char *dir = engine_config(e)->data_dir;
    char path[PATH_MAX];
    int fd = -1;
    if (artifacts_find(dir, job->ids[0], &a) && artifacts_path(dir, &a, path, sizeof path) == 0)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) {
        job->status = 200;
        job->reply_fd = fd;
        job->reply_size = st.st_size;
        job->content_type = "application/x-tar";
        return;
    }
    if (fd >= 0)
        close(fd);
    TrialLease tl;
    Spec own;
    bool owned;
    const Spec *spec = trial_spec(e, job, job->ids[0], &tl, &own, &owned);
    if (spec == NULL)
        return;
    char msg[256];
    if (spec->keep_artifacts == SPEC_KEEP_NONE)
        snprintf(msg, sizeof msg, "trial %lld: its experiment's keep_artifacts is none",
                 (long long)job->ids[0]);
    else if (tl.state != TRIAL_COMPLETED)
        snprintf(msg, sizeof msg, "trial %lld has not completed: artifacts come when it does",
                 (long long)job->ids[0]);
    else
        snprintf(msg, sizeof msg,
                 "trial %lld: none stored (not among the best %lld kept, or its worker has not "
                 "uploaded them yet)",
                 (long long)job->ids[0], (long long)spec->keep_count);
    if (owned)
        spec_close(&own);
    api_error(job, RUNG_E_NOT_FOUND, "", msg);
}

void api_artifacts_describe(Engine *e, int64_t trial, json_t *o)
{
    ArtifactFile a;
    if (json_is_object(o) && artifacts_find(engine_config(e)->data_dir, trial, &a))
        json_object_set_new(o, "artifacts",
                            json_pack("{s:s, s:I}", "sha256", a.sha256, "size",
                                      (json_int_t)a.size));
    else if (json_is_object(o))
        json_object_set_new(o, "artifacts", json_null());
}

static void remove_one(void *ctx, const ArtifactFile *a)
{
    artifacts_remove(ctx, a);
}

void api_artifacts_forget(Engine *e, int64_t experiment)
{
    const char *dir = engine_config(e)->data_dir;
    artifacts_each(dir, experiment, remove_one, (void *)dir);
}
