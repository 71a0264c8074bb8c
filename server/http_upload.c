/* Raw bodies (HttpRoute.raw_admit, the checkpoint uploads of docs/api.md,
 * "PBT's checkpoints through rungd"): let in at their head, then written
 * to a file and hashed as they arrive; see http_internal.h. */
#include "http_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "sha256hex.h"

/* Checkpoint uploads (docs/api.md, "PBT's checkpoints through rungd"): an
 * upload must keep up an average of RAW_MIN_RATE bytes a second from its
 * head on, after RAW_GRACE_MS; the bytes all uploads in flight declared
 * stay under RAW_IN_FLIGHT_MAXES times --max-checkpoint-mb; and one is let
 * in only while the data folder's file system keeps RAW_FREE_MARGIN bytes
 * free beside them, so that the database's commits still find room. */
#define RAW_MIN_RATE (64 * 1024)
#define RAW_GRACE_MS 4000
#define RAW_IN_FLIGHT_MAXES 2
#define RAW_FREE_MARGIN (64ULL * 1024 * 1024)

/* The head of a raw body (a checkpoint upload): everything that can be
 * checked before a byte of it is read or written is checked here
 * (docs/api.md, "PBT's checkpoints through rungd"): its length, declared;
 * the asked worker's upload token and someone waiting for it (the route's
 * raw_admit, on this engine thread); the bytes of the uploads in flight
 * and the free space. req->job has its ids and query. True when it is let
 * in; else a refusal is queued (*rc), which MHD sends before closing. */
bool http_raw_admit(Http *h, struct MHD_Connection *c, Request *req, const HttpRoute *route,
                    const char *length, enum MHD_Result *rc)
{
    char msg[256];
    if (length == NULL) {
        *rc = http_send_error(c, RUNG_E_INVALID_ARGUMENT, "Content-Length",
                              "Content-Length: required for an upload (a chunked body is refused): "
                              "send the tar's length");
        return false;
    }
    uint64_t declared = strtoull(length, NULL, 10); /* digits: the screen checked them */
    req->job.raw_length = (int64_t)declared;
    RungError err;
    rung_error_clear(&err);
    if (route->raw_admit(h->engine, &req->job, &err) != 0) {
        *rc = http_send_error(c, err.code, err.field, err.message);
        return false;
    }
    uint64_t cap = RAW_IN_FLIGHT_MAXES * (uint64_t)http_max_raw(h);
    if (h->raw_in_flight + declared > cap) {
        snprintf(msg, sizeof msg,
                 "uploads in flight hold %llu of their %llu bytes already: retry later",
                 (unsigned long long)h->raw_in_flight, (unsigned long long)cap);
        *rc = http_send_error(c, RUNG_E_UNAVAILABLE, "", msg);
        return false;
    }
    struct statvfs fs;
    if ((mkdir(h->upload_dir, 0700) != 0 && errno != EEXIST) || statvfs(h->upload_dir, &fs) != 0) {
        snprintf(msg, sizeof msg, "cannot prepare %.150s: %s", h->upload_dir, strerror(errno));
        *rc = http_send_error(c, RUNG_E_INTERNAL, "", msg);
        return false;
    }
    uint64_t avail = (uint64_t)fs.f_bavail * fs.f_frsize;
    if (avail < h->raw_in_flight + declared + RAW_FREE_MARGIN) {
        snprintf(msg, sizeof msg,
                 "the data folder's file system has %llu bytes free: not enough for %llu more "
                 "(uploads in flight and %llu kept free for the database): retry later",
                 (unsigned long long)avail, (unsigned long long)declared,
                 (unsigned long long)RAW_FREE_MARGIN);
        *rc = http_send_error(c, RUNG_E_UNAVAILABLE, "", msg);
        return false;
    }
    req->raw_declared = declared;
    h->raw_in_flight += declared;
    req->raw_t0_ms = mono_ms();
    if (req->conn) {
        req->conn->deadline_ms = req->raw_t0_ms + RAW_GRACE_MS;
        req->conn->raw = req;
    }
    return true;
}

/* One more piece of a raw body: into the file (made at the first piece)
 * and the hash. A body past its route's limit (max_checkpoint, max_blob) is dropped (413 at the
 * end). An upload's deadline moves on with its bytes, at the minimum rate: one slower on average
 * since it was let in than RAW_MIN_RATE (after RAW_GRACE_MS) is cut, however long it keeps sending.
 */
int http_raw_chunk(Http *h, Request *req, const char *data, size_t n)
{
    if (req->raw_cut)
        return -1; /* bytes MHD had read before the cut: no new file */
    size_t limit = req->route != NULL && req->route->blob ? h->max_blob : h->max_checkpoint;
    if (req->len + n > limit) {
        req->too_large = true;
        http_raw_discard(req);
        return 0;
    }
    if (req->sha == NULL) {
        if (mkdir(h->upload_dir, 0700) != 0 && errno != EEXIST)
            return -1;
        snprintf(req->tmp, sizeof req->tmp, "%s/.upload-XXXXXX", h->upload_dir);
        req->fd = mkstemp(req->tmp);
        req->sha = EVP_MD_CTX_new();
        if (req->fd < 0 || req->sha == NULL || EVP_DigestInit_ex(req->sha, EVP_sha256(), NULL) != 1)
            return -1;
    }
    for (size_t off = 0; off < n;) {
        ssize_t w = write(req->fd, data + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    EVP_DigestUpdate(req->sha, data, n);
    req->len += n;
    if (req->conn)
        req->conn->deadline_ms = req->raw_t0_ms + RAW_GRACE_MS +
                                 (int64_t)(req->len * 1000 / RAW_MIN_RATE);
    return 0;
}

/* The whole raw body is in: {"file", "size", "sha256"} for the handler,
 * which moves the file where it belongs (or leaves it to http_raw_discard). An
 * empty body has no file. NULL when it could not be made durable. */
json_t *http_raw_done(struct MHD_Connection *c, Request *req)
{
    const char *claimed = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Rung-Sha256");
    json_t *o = json_pack("{s:I}", "size", (json_int_t)req->len);
    if (claimed != NULL)
        json_object_set_new(o, "claimed", json_string(claimed));
    if (req->sha == NULL)
        return o;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    char hex[65];
    if (EVP_DigestFinal_ex(req->sha, md, &mdlen) != 1 || mdlen != 32 || fsync(req->fd) != 0) {
        json_decref(o);
        return NULL;
    }
    rung_sha256_to_hex(md, hex);
    close(req->fd);
    req->fd = -1;
    json_object_set_new(o, "file", json_string(req->tmp));
    json_object_set_new(o, "sha256", json_string(hex));
    return o;
}

/* Removes what is left of a raw body: the handler renamed the file away,
 * or the request failed. */
void http_raw_discard(Request *req)
{
    if (req->fd > 0)
        close(req->fd);
    req->fd = -1;
    if (req->tmp[0] != '\0')
        unlink(req->tmp); /* ENOENT once the handler has moved it */
    req->tmp[0] = '\0';
    EVP_MD_CTX_free(req->sha);
    req->sha = NULL;
}
