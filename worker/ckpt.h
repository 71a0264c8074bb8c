/* Checkpoint copies for Population Based Training: a trial folder's
 * contents copied into another trial's folder on the same machine
 * (ckpt_copy_dir), or packed into a tar file with its SHA-256 for another
 * machine (ckpt_pack) and unpacked there after the hash is checked
 * (ckpt_unpack). Pure file I/O: nothing here talks to rungd or knows about
 * trials beyond the names of a trial folder's logs.
 *
 * What is copied. Everything in the folder, recursively, except the two
 * files at its top named stdout.log and stderr.log, which trial_supervise.c writes
 * the trial's output into: each trial keeps its own logs, and a copy never
 * touches the logs already in the destination. Regular files, folders and
 * (by ckpt_copy_dir only) symbolic links are copied; a link is recreated
 * with the same target, not followed, and its target is not rewritten (a
 * relative link stays relative; an absolute one points where it pointed).
 * FIFOs, sockets and devices are left out.
 *
 * What an unpack accepts. A tar comes from another machine, through rungd:
 * whoever could upload it chose its bytes. ckpt_unpack takes only what
 * ckpt_pack writes: an uncompressed tar (gzip, bzip2, xz... refused by
 * name: a 200 KB gzip bomb unpacks to gigabytes) of regular files and
 * folders with relative names and no ".." (no symbolic or hard links, of
 * any target, no devices, FIFOs or sockets, no sparse files), at most
 * CKPT_MAX_ENTRIES of them, whose sizes add up to less than the tar's own
 * size (the bound an uncompressed tar's contents cannot pass: a header that
 * says more lies), and whose data blocks stay within those sizes as they
 * are written. Files get their permission bits (never set-id), not their
 * owner. ckpt_pack leaves symbolic links out for the same reason, so that
 * what a worker packs, a worker unpacks.
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
 * path concerned (for an unpack, the entry refused). A failed copy may have
 * left part of its work in the destination; a failed unpack leaves the
 * destination as it was (not made when it was missing), and a failed pack
 * no file at tar_path. On success err is empty or holds a note worth a
 * log line (what a pack left out). */
#ifndef RUNG_WORKER_CKPT_H
#define RUNG_WORKER_CKPT_H

#include <stddef.h>
#include <stdint.h>

/* The files at a trial folder's top that are never copied or packed. */
#define CKPT_STDOUT_LOG "stdout.log"
#define CKPT_STDERR_LOG "stderr.log"

/* The most files and folders a tar may hold, packed or unpacked (each takes
 * an inode on the receiver, whatever its size). */
#define CKPT_MAX_ENTRIES 100000

/* Copies the contents of folder `from` into folder `to`, which is made
 * (mode 0700) when missing; its parent must exist. `to` may be neither
 * `from` nor a folder that holds `from`; when `to` lies inside `from`, it
 * is left out of the copy. */
int ckpt_copy_dir(const char *from, const char *to, char *err, size_t errsize);

/* Writes a pax tar (POSIX.1-2001, extended headers only where ustar's
 * fields are too small), uncompressed, of the files and folders (symbolic
 * links left out, and said in err; more than CKPT_MAX_ENTRIES refused) of
 * folder `dir` to
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
 * archive, still before extracting anything, at the first entry that is
 * not what an unpack accepts (above), naming it and why. Then extracts
 * into a new folder beside `to` (.<name>.unpack-XXXXXX in its parent),
 * checking each entry again and bounding the bytes written, restoring
 * modification times; only when the whole tar is in does it empty `to` but
 * for its two logs (made, mode 0700, when missing; "Replacement" above)
 * and move the entries in (a tar's own logs at its top are left out). The
 * folder beside is removed either way. The same file descriptor is hashed
 * and extracted, so the bytes checked are the bytes read unless something
 * rewrites the file meanwhile. `to` itself keeps its identity (a lock held
 * on it stays). */
int ckpt_unpack(const char *tar_path, const char *expect_sha256_hex, const char *to, char *err,
                size_t errsize);

/* ckpt_unpack for a working directory (docs/workers.md, "Running a team's
 * code"): the same checks, but the tar may also hold symbolic links whose
 * target is relative, with every ".." at its start and no more of them
 * than there are folders above the link (so that it resolves inside the
 * tree, through whatever other links it meets; "a/../b" is refused, since
 * a may be a link); any other link, naming the entry, is refused as a
 * checkpoint's entries are. Its entries are unpacked whole (stdout.log and
 * stderr.log at its top included) into `to`, which must not exist: it is
 * made (mode 0700) by renaming the folder unpacked beside it. */
int ckpt_unpack_tree(const char *tar_path, const char *expect_sha256_hex, const char *to, char *err,
                     size_t errsize);

/* The SHA-256 of the file at path as 64 lowercase hex digits and a NUL,
 * and its length in bytes (size may be NULL). -1 with errno set when the
 * file cannot be opened or read. */
int ckpt_sha256_file(const char *path, char hex[65], int64_t *size);

#endif
