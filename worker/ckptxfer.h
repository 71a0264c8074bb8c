/* Population Based Training's checkpoint copies through rungd, for a
 * trial that exploits a donor that ran on another worker
 * (docs/workers.md, "Population Based Training's checkpoint copies";
 * a donor on this machine is copied locally by trial_donor.c's copy_donor).
 *
 * Upload (the donor's worker). A heartbeat reply may list
 * {"trial", "step", "token"} under "upload": rungd wants this worker's
 * folder of that trial, which holds its checkpoint of that step, and
 * takes it only from this worker with that upload token. The Uploader
 * packs <workdir>/trials/<trial> (ckpt_pack, holding the folder's shared
 * lock so that --keep-trials does not remove it meanwhile) into a file
 * under <workdir>/uploads/, PUTs it to
 * /api/v1/trials/<trial>/checkpoint?step=<step>&worker=<id>&upload_token=<token>
 * (client_put_file: the file streamed, its SHA-256 in X-Rung-Sha256) and
 * removes the file. It runs on a thread of its own with its own Client,
 * one upload at a time from a small queue, so that a big checkpoint never
 * delays a heartbeat. A (trial, step) queued or uploading is not queued
 * again. A 4xx is final (409: the copy is no longer owed); a transport
 * error or a 5xx is retried CKPTXFER_RETRIES times with backoff, then given
 * up: rungd asks again in a later heartbeat. A pair asked again with
 * another token (rungd restarted) takes the new one if it is still queued.
 *
 * Download (the receiver's worker). A lease reply's checkpoint_from with
 * "sha256" and "size": before the program starts, the trial's supervisor
 * GETs /api/v1/trials/<donor>/checkpoint?step=<step>&worker=<id>&lease_token=<its
 * lease token> (rungd gives it only to the worker whose trial resumes
 * from it) into a temporary file
 * in the trials folder (client_get_file: at most size bytes), unpacks it
 * into the trial's folder (ckpt_unpack: nothing is extracted unless the
 * hash matches) and removes the file. */
#ifndef RUNG_WORKER_CKPTXFER_H
#define RUNG_WORKER_CKPTXFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"

#define CKPTXFER_RETRIES 4         /* retries of a transfer after a transport error or a 5xx */
#define CKPTXFER_QUEUE_MAX 8       /* uploads waiting; more are dropped (rungd asks again) */
#define CKPTXFER_UPLOADS "uploads" /* <workdir>/uploads: the packed folders on their way */
#define CKPTXFER_TOKEN_MAX 64      /* bytes of an upload token; rungd's are 32 hex digits */
/* ckptxfer_upload's step for a completed trial's artifacts (docs/api.md,
 * "Artifacts"): PUT /api/v1/trials/<trial>/artifacts instead. */
#define CKPTXFER_ARTIFACTS (-1)

typedef enum {
    XFER_OK,
    XFER_MISSING,  /* upload: no such trial folder here */
    XFER_REFUSED,  /* a 4xx: final */
    XFER_FAILED,   /* packing failed, or no reply / 5xx after the retries */
    XFER_CANCELED, /* the call's cancel said stop */
} XferResult;

/* Packs folder trial_dir into tar_path (its folder must exist) and PUTs it
 * as trial's checkpoint of step, as worker_id with the upload's token;
 * tar_path is removed afterwards in every case. sha256_hex and *size get
 * the tar's hash and length (once packed), *status the reply's status (0
 * when none). err says what failed. */
XferResult ckptxfer_upload(Client *c, const char *trial_dir, const char *tar_path, int64_t trial,
                           int64_t step, int64_t worker_id, const char *token,
                           const ClientCall *call, char sha256_hex[65], int64_t *size, long *status,
                           char *err, size_t errsize);

/* Downloads trial's checkpoint of step (sha256_hex, size bytes, as the
 * lease reply says), as worker_id holding lease_token (the lease of the
 * trial that resumes from it), through a temporary file in tmp_dir (removed
 * afterwards) and unpacks it into dest_dir. XFER_OK with *bytes the
 * tar's length; otherwise err says what failed (a hash that differs:
 * "sha256 mismatch ...", and nothing is extracted). */
XferResult ckptxfer_download(Client *c, int64_t trial, int64_t step, const char *sha256_hex,
                             int64_t size, int64_t worker_id, const char *lease_token,
                             const char *tmp_dir, const char *dest_dir, const ClientCall *call,
                             int64_t *bytes, char *err, size_t errsize);

typedef struct Uploader Uploader;

/* Makes <workdir>/uploads (mode 0700) and starts the uploader thread, with
 * its own Client for server and token. cancel (may be NULL) aborts an
 * upload in flight and empties the queue while it says so (a hard stop).
 * worker_id names the packed files, so that workers sharing a --workdir do
 * not collide. NULL with why when something fails. */
Uploader *uploader_new(const char *server, const char *token, const char *workdir,
                       int64_t worker_id, ClientCancel cancel, void *cancel_arg, char *why,
                       size_t why_size);

/* Queues the upload of trial's folder for its checkpoint of step with
 * rungd's upload token (at most CKPTXFER_TOKEN_MAX bytes), unless that
 * pair is queued (its token is then updated) or uploading already, or the
 * queue is full. Whether it was queued. Any thread. */
bool uploader_request(Uploader *u, int64_t trial, int64_t step, const char *token);

/* Uploads queued or in flight. */
int uploader_pending(Uploader *u);

/* Waits until nothing is queued or in flight, or give_up(arg) (looked at
 * every 200 ms; may be NULL) says stop. Whether it is idle. */
bool uploader_wait_idle(Uploader *u, ClientCancel give_up, void *arg);

/* Cancels the upload in flight (a pack under way is finished first),
 * drops the queue, ends the thread and frees u. NULL is fine. */
void uploader_free(Uploader *u);

#endif
