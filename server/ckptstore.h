/* rungd's store of Population Based Training checkpoints: the tar files
 * that workers pack (worker/ckpt.h) and upload, kept as
 * <data_dir>/checkpoints/<trial_id>-<step>.tar until no trial needs it
 * (core_ckpt.c core_drop_unneeded_ckpts; engine.c removes the file after the commit
 * that deletes its row; ckptstore_sweep at start removes what no row holds). Pure file I/O: no
 * SQLite, no HTTP; whoever calls it records what it holds.
 *
 * The data folder. rungd has no option for one today: its only file is the
 * SQLite database, --db (server/main.c, default "rung.db" in the working
 * folder), which main.c hands to store_open as it is. The folder meant here
 * is that file's folder (dirname of --db, "." for the default), so that a
 * daemon's checkpoints sit beside its database and go with it.
 *
 * Writes are atomic and durable: a checkpoint is written to a temporary
 * file in the same folder (named ".<trial_id>-<step>.tar.XXXXXX", which no
 * reader takes for a checkpoint), fsync'd, renamed over its final name, and
 * the folder fsync'd; a reader sees the old file whole or the new one
 * whole, never a part. A crash may leave a temporary file behind;
 * ckptstore_remove_trial removes the trial's.
 *
 * Hashes are SHA-256 as 64 lowercase hex digits and a NUL (65 bytes); an
 * expected hash is accepted in either case. */
#ifndef RUNG_SERVER_CKPTSTORE_H
#define RUNG_SERVER_CKPTSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* out = "<data_dir>/checkpoints/<trial_id>-<step>.tar". 0, or -1 (errno
 * EINVAL) for trial_id < 1 or step < 0, or (ENAMETOOLONG) when it does not
 * fit in size bytes. */
int ckptstore_path(const char *data_dir, int64_t trial_id, int64_t step, char *out, size_t size);

/* Stores len bytes at data as trial_id's checkpoint at step, replacing one
 * stored before, and puts their SHA-256 in sha256_hex. When
 * expect_sha256_hex is not NULL and is not that hash (or not a hash), it
 * fails with a message in err that quotes both, and writes nothing. Makes
 * <data_dir>/checkpoints (mode 0700) when missing; data_dir must exist.
 * Files are made mode 0600. 0, or -1 with a message in err. */
int ckptstore_put(const char *data_dir, int64_t trial_id, int64_t step, const void *data,
                  size_t len, const char *expect_sha256_hex, char sha256_hex[65], char *err,
                  size_t errsize);

/* Reads trial_id's checkpoint at step into *data (malloc'd; the caller
 * frees it; never NULL on success, even for 0 bytes) and *len, and
 * computes its SHA-256 into sha256_hex. 0 when read, 1 when there is no
 * such checkpoint (*data NULL), -1 with errno set on an error. */
int ckptstore_get(const char *data_dir, int64_t trial_id, int64_t step, void **data, size_t *len,
                  char sha256_hex[65]);

/* fsyncs <data_dir>/checkpoints, after a file was renamed into it (rungd
 * writes uploads there as they arrive, then renames them into place). 0,
 * or -1 with errno set. */
int ckptstore_sync_dir(const char *data_dir);

/* Removes every checkpoint of trial_id (<trial_id>-<digits>.tar), and the
 * temporary files a crashed put of it left; nothing else. The number of
 * checkpoints removed (0 when there is no checkpoints folder), or -1 with
 * errno set at the first that could not be removed. */
int ckptstore_remove_trial(const char *data_dir, int64_t trial_id);

/* Removes trial_id's checkpoint at step. 0 (also when there is none), or
 * -1 with errno set. */
int ckptstore_remove(const char *data_dir, int64_t trial_id, int64_t step);

/* At start, before any upload: removes every checkpoint for which
 * keep(ctx, trial_id, step) is false (its row never committed, or it was
 * dropped and the daemon stopped before removing it), every temporary file
 * a crashed put left, and every partial upload (".upload-*", http_upload.c). The
 * number of files removed, or -1 with errno set when the folder cannot be
 * read (0 when there is none). */
int ckptstore_sweep(const char *data_dir, bool (*keep)(void *ctx, int64_t trial_id, int64_t step),
                    void *ctx);

#endif
