/* The worker's cache of working directories (docs/workers.md, "Running a
 * team's code"): blobs downloaded from rungd (GET /api/v1/blobs/{sha256}),
 * each once, kept as <cache>/blobs/<sha256>.tar, and the virtualenvs of
 * requirements files (envs.h) under <cache>/venvs.
 *
 * A download goes to a temporary file beside its place, is checked against
 * its hash (a mismatch is refused, naming both, and nothing is kept) and
 * renamed into place. Two trials (or two workers sharing the folder) that
 * need the same blob at once download it once: each takes an exclusive
 * flock of <sha256>.lock first and finds the blob there when the other is
 * done. A blob being unpacked is held by a shared flock of its file.
 *
 * Bounded by --cache-mb: after a download or a build, the least recently
 * used blobs and virtualenvs (their file's, or their .rung-ready's,
 * modification time, touched at each use) are removed until the total
 * fits, passing by what is held (a flock taken without waiting fails).
 *
 * Full: the cache's file system has less than BLOBCACHE_MIN_FREE bytes
 * free. Heartbeats say so ("cache": {"free_bytes", "full"}), lease requests
 * then carry "downloads": false (rungd leases no trial with a working
 * directory), and a download is refused saying the disk is full. */
#ifndef RUNG_WORKER_BLOBCACHE_H
#define RUNG_WORKER_BLOBCACHE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"

#define BLOBCACHE_MIN_FREE (64LL << 20) /* bytes free below which the cache is full */

typedef struct BlobCache {
    char dir[PATH_MAX];   /* absolute */
    char blobs[PATH_MAX]; /* dir/blobs */
    char venvs[PATH_MAX]; /* dir/venvs */
    int64_t max_bytes;    /* --cache-mb */
} BlobCache;

/* Sets bc up for the folder dir (relative: to the current folder) and
 * removes the temporary files a killed worker left there. Nothing is made
 * until it is needed (blobcache_ensure): a worker that never runs a
 * working directory leaves no cache. 0, or -1 with why. */
int blobcache_open(BlobCache *bc, const char *dir, int64_t max_bytes, char *why, size_t why_size);

/* Makes dir, dir/blobs and dir/venvs (0700) when missing. 0, or -1 with why. */
int blobcache_ensure(BlobCache *bc, char *why, size_t why_size);

/* Free bytes on the cache's file system, and whether that is full. */
void blobcache_space(const BlobCache *bc, int64_t *free_bytes, bool *full);

/* The blob sha256 (64 lowercase hex digits) as a local tar: downloaded
 * with c when this cache lacks it (cancel: the call's, for a trial that is
 * stopped meanwhile), checked, and held: *hold_fd (close it when done with
 * the file) holds its shared flock. path gets the file's path (PATH_MAX
 * bytes), *downloaded whether it came over the network now. 0, or -1
 * with why (rungd's answer for a missing blob, a mismatched hash, a full
 * disk). */
int blobcache_get(BlobCache *bc, Client *c, const char *sha256, const ClientCall *call, char *path,
                  int *hold_fd, bool *downloaded, char *why, size_t why_size);

/* Removes the least recently used blobs and virtualenvs not held until
 * the total fits in max_bytes. */
void blobcache_evict(BlobCache *bc);

#endif
