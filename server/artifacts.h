/* rungd's store of trials' artifacts (docs/api.md, "Artifacts"): the tar of
 * a completed trial's folder (its artifacts/ and checkpoints) that its
 * worker uploaded because the spec's keep_artifacts wanted it, kept as
 * <data_dir>/artifacts/<experiment>-<trial>-<sha256>.tar, so that one
 * listing tells which trials of an experiment have theirs and with what
 * hash. Pure file I/O, like blobs.h; api_artifacts.c decides what is kept. */
#ifndef RUNG_SERVER_ARTIFACTS_H
#define RUNG_SERVER_ARTIFACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t experiment, trial;
    char sha256[65];
    int64_t size;
} ArtifactFile;

/* The stored artifacts of trial (experiment 0: any); true when found. */
bool artifacts_find(const char *data_dir, int64_t trial, ArtifactFile *out);
/* Its path. */
int artifacts_path(const char *data_dir, const ArtifactFile *a, char *out, size_t size);
/* Moves the uploaded file `from` in as a's (mode 0600, fsync'd). 0 or -1. */
int artifacts_adopt(const char *data_dir, const char *from, const ArtifactFile *a);
/* Calls fn for every stored artifacts file of experiment (0: of all); the
 * total bytes are returned. */
int64_t artifacts_each(const char *data_dir, int64_t experiment,
                       void (*fn)(void *ctx, const ArtifactFile *a), void *ctx);
/* Removes a's file. */
void artifacts_remove(const char *data_dir, const ArtifactFile *a);

#endif
