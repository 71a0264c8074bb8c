/* rungd's store of blobs: the working directories that clients pack and
 * upload (docs/api.md, "Blobs"), kept as <data_dir>/blobs/<sha256>.tar,
 * named by the SHA-256 of their bytes, so that an upload of a folder rungd
 * already holds sends nothing and every experiment that uses it shares one
 * file. Pure file I/O: no SQLite, no HTTP; api_blobs.c serves them, and
 * which experiments refer to a blob is the Core's (core_blob_referenced).
 *
 * The data folder is the one ckptstore.h describes (the folder of --db).
 * An upload is streamed by the front into <data_dir>/checkpoints/.upload-*
 * (http_upload.c) and renamed here once its hash is known: both folders
 * sit on the same file system. A blob goes when no experiment in memory
 * refers to it and it is older than BLOBS_GRACE_S (a client uploads, then
 * submits): blobs_sweep, at start, before each upload and after an
 * experiment's DELETE. */
#ifndef RUNG_SERVER_BLOBS_H
#define RUNG_SERVER_BLOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BLOBS_GRACE_S 3600 /* an unreferenced blob is kept this long after its upload */

/* out = "<data_dir>/blobs/<sha256_hex>.tar"; sha256_hex: 64 lowercase hex
 * digits. 0, or -1 (ENAMETOOLONG, EINVAL). */
int blobs_path(const char *data_dir, const char *sha256_hex, char *out, size_t size);

/* Whether the blob is held; *size (may be NULL) its length in bytes. */
bool blobs_held(const char *data_dir, const char *sha256_hex, int64_t *size);

/* Moves the uploaded file `from` in as the blob sha256_hex (made mode
 * 0600; <data_dir>/blobs made when missing), durably: the file and the
 * folder are fsync'd. 0, or -1 with errno. */
int blobs_adopt(const char *data_dir, const char *from, const char *sha256_hex);

/* The bytes of every blob held (0 when there is no folder). */
int64_t blobs_total(const char *data_dir);

/* Removes the blobs for which referenced(ctx, sha) is false and whose file
 * is older than grace_s at now_s (seconds since the epoch); returns how
 * many went. */
int blobs_sweep(const char *data_dir, bool (*referenced)(void *ctx, const char *sha256_hex),
                void *ctx, int64_t now_s, int64_t grace_s);

/* Whether s is 64 hex digits (either case). */
bool blobs_is_sha256(const char *s);

#endif
