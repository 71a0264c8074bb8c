/* Checkpoint copies for Population Based Training: a trial folder's
 * contents copied into another trial's folder on the same machine
 * (ckpt_copy_dir), or packed into a tar file with its SHA-256 for another
 * machine (ckpt_pack) and unpacked there after the hash is checked
 * (ckpt_unpack). Pure file I/O: nothing here talks to rungd or knows about
 * trials beyond the names of a trial folder's logs.
 *
 * What is copied. Everything in the folder, recursively, except the two
 * files at its top named stdout.log and stderr.log, which trial.c writes
 * the trial's output into: each trial keeps its own logs, and a copy never
 * touches the logs already in the destination. Regular files, folders and
 * symbolic links are copied; a link is recreated with the same target, not
 * followed, and its target is not rewritten (a relative link stays
 * relative; an absolute one points where it pointed). FIFOs, sockets and
 * devices are left out.
 *
 * No hard links. ckpt_copy_dir copies each regular file's bytes, as a
 * copy-on-write clone (FICLONE) where the file system has them, so the
 * receiver's files are its own. Hard links were tried first and undone: a
 * linked file is one file in two folders, and a program that opens an
 * existing name for writing writes through it into the donor's checkpoint
 * (torch.save does; so does open(tmp, "w") on a temporary name that the
 * copy took while the donor was writing it, which tests/integration/
 * test_pbt.py caught). A file renamed or removed between the listing and
 * its copy (a temporary name) is skipped. ckpt_unpack unlinks an existing
 * file before writing it, for the same reason.
 *
 * Replacement. The destination ends up with exactly the source's entries
 * plus its own two logs: everything else it held is removed first. A
 * checkpoint the donor no longer has (a trainer that pruned old ones) must
 * not be found in the receiver's folder, where it would be the receiver's
 * own weights under the donor's config; without it the program starts
 * over and says so.
 *
 * Errors: each function returns 0 on success and -1 on failure, with a
 * message in err (at most errsize bytes, always terminated) that names the
 * path concerned. A failed copy or unpack may have left part of its work in
 * the destination; a failed pack leaves no file at tar_path. */
#ifndef RUNG_WORKER_CKPT_H
#define RUNG_WORKER_CKPT_H

#include <stddef.h>
#include <stdint.h>

/* The files at a trial folder's top that are never copied or packed. */
#define CKPT_STDOUT_LOG "stdout.log"
#define CKPT_STDERR_LOG "stderr.log"

/* Copies the contents of folder `from` into folder `to`, which is made
 * (mode 0700) when missing; its parent must exist. `to` may be neither
 * `from` nor a folder that holds `from`; when `to` lies inside `from`, it
 * is left out of the copy. */
int ckpt_copy_dir(const char *from, const char *to, char *err, size_t errsize);

/* Writes a pax tar (POSIX.1-2001, extended headers only where ustar's
 * fields are too small), uncompressed, of the contents of folder `dir` to
 * tar_path (mode 0600): through a temporary file in tar_path's folder
 * (tar_path.tmp-XXXXXX, left out of the tar when it lies inside `dir`),
 * fsync'd and renamed over tar_path. Entry names are relative to `dir` ("ckpt/w.bin"),
 * in sorted order. sha256_hex receives the SHA-256 of the file written (64
 * lowercase hex digits and a NUL: 65 bytes), *size its length in bytes. A
 * file whose size changes while it is packed fails the pack. */
int ckpt_pack(const char *dir, const char *tar_path, char *sha256_hex, int64_t *size, char *err,
              size_t errsize);

/* Checks that the SHA-256 of the file tar_path is expect_sha256_hex (64 hex
 * digits, either case); a mismatch fails with a message that quotes both,
 * before anything is made. Then reads every entry's header and refuses the
 * archive, still before extracting anything, when an entry is not a
 * regular file, a folder or a symbolic link (hard links included), or has
 * an absolute name or a ".." component. Then empties `to` but for its two
 * logs (as ckpt_copy_dir does, "Replacement" above) and extracts into it
 * (made, mode 0700, when missing), restoring modification times, unlinking an existing
 * file before writing one of the same name, and refusing to write through a
 * symbolic link (libarchive's ARCHIVE_EXTRACT_SECURE_* checks). The same
 * file descriptor is hashed and extracted, so the bytes checked are the
 * bytes read unless something rewrites the file meanwhile. */
int ckpt_unpack(const char *tar_path, const char *expect_sha256_hex, const char *to, char *err,
                size_t errsize);

/* The SHA-256 of the file at path as 64 lowercase hex digits and a NUL,
 * and its length in bytes (size may be NULL). -1 with errno set when the
 * file cannot be opened or read. */
int ckpt_sha256_file(const char *path, char hex[65], int64_t *size);

#endif
