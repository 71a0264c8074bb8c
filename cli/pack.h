/* Packing a working directory for rungd (docs/api.md, "Blobs"): the files
 * cli/ignore.h packs, as an uncompressed pax tar whose bytes depend on
 * nothing but the files (entries sorted by name, mode 0755 for folders and
 * executables else 0644, owner 0, no names, mtime 0), so that the same
 * folder always gives the same SHA-256 and a second upload sends nothing.
 * Regular files and folders; a symbolic link whose target is relative and
 * stays inside the folder is kept as a link, any other refused naming it,
 * as are FIFOs, sockets and devices (rung-worker's unpack refuses them
 * too, worker/ckpt.h). */
#ifndef RUNG_CLI_PACK_H
#define RUNG_CLI_PACK_H

#include <stddef.h>
#include <stdint.h>

#define CLI_PACK_MAX_ENTRIES 100000 /* what a worker's unpack takes (worker/ckpt.h) */

typedef struct CliPack {
    char sha256[65]; /* of the tar: 64 lowercase hex digits */
    int64_t size;    /* the tar's bytes */
    int64_t files;   /* regular files and links packed */
    int64_t bytes;   /* their contents' bytes */
} CliPack;

/* Packs folder dir into the new file tar_path (mode 0600). 0, or -1 with
 * a message naming the path at fault in why (why_size bytes); the file is
 * then removed. */
int cli_pack_dir(const char *dir, const char *tar_path, CliPack *out, char *why, size_t why_size);

#endif
