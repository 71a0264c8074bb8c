/* Checkpoint files; see checkpoint.h. */
#include "checkpoint.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define CKPT_MAGIC "RUNGCKPT"
#define CKPT_VERSION 1

typedef struct CkptHeader {
    char magic[8];
    uint32_t version, pad;
    uint64_t n; /* parameters */
    int64_t epoch;
    int64_t step; /* global steps done */
} CkptHeader;

static void path_of(char *buf, size_t size, const char *dir, int64_t epoch, const char *suffix)
{
    snprintf(buf, size, "%s/ckpt-%lld.bin%s", dir, (long long)epoch, suffix);
}

static int write_all(FILE *f, const void *p, size_t bytes, uLong *crc)
{
    *crc = crc32(*crc, p, (uInt)bytes);
    return fwrite(p, 1, bytes, f) == bytes ? 0 : -1;
}

int checkpoint_save(const char *dir, int64_t epoch, const float *params, const float *opt1,
                    const float *opt2, size_t n, int64_t step, char *why, size_t size)
{
    char tmp[4096], final[4096];
    path_of(tmp, sizeof tmp, dir, epoch, ".tmp");
    path_of(final, sizeof final, dir, epoch, "");
    FILE *f = fopen(tmp, "wb");
    if (f == NULL) {
        snprintf(why, size, "checkpoint: cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    CkptHeader h = {.version = CKPT_VERSION, .n = n, .epoch = epoch, .step = step};
    memcpy(h.magic, CKPT_MAGIC, 8);
    uLong crc = crc32(0L, Z_NULL, 0);
    size_t bytes = n * sizeof(float);
    int bad = write_all(f, &h, sizeof h, &crc) || write_all(f, params, bytes, &crc) ||
              write_all(f, opt1, bytes, &crc) || write_all(f, opt2, bytes, &crc);
    uint32_t c = (uint32_t)crc;
    bad = bad || fwrite(&c, sizeof c, 1, f) != 1;
    bad = fclose(f) != 0 || bad;
    if (bad || rename(tmp, final) != 0) {
        snprintf(why, size, "checkpoint: cannot write %s: %s", final, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

bool checkpoint_exists(const char *dir, int64_t epoch)
{
    char path[4096];
    if (dir == NULL)
        return false;
    path_of(path, sizeof path, dir, epoch, "");
    return access(path, F_OK) == 0;
}

void checkpoint_prune(const char *dir, int64_t below, int64_t keep_every)
{
    DIR *d = dir ? opendir(dir) : NULL;
    if (d == NULL)
        return;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        /* Exactly "ckpt-<digits>.bin". */
        if (strncmp(ent->d_name, "ckpt-", 5) != 0 || !isdigit((unsigned char)ent->d_name[5]))
            continue;
        char *end;
        long long e = strtoll(ent->d_name + 5, &end, 10);
        if (strcmp(end, ".bin") == 0 && e < below && !(keep_every > 0 && e % keep_every == 0)) {
            char path[4096];
            path_of(path, sizeof path, dir, e, "");
            unlink(path);
        }
    }
    closedir(d);
}

static int read_all(FILE *f, void *p, size_t bytes, uLong *crc)
{
    if (fread(p, 1, bytes, f) != bytes)
        return -1;
    *crc = crc32(*crc, p, (uInt)bytes);
    return 0;
}

int checkpoint_load(const char *dir, int64_t epoch, float *params, float *opt1, float *opt2,
                    size_t n, int64_t *step, char *why, size_t size)
{
    char path[4096];
    if (dir == NULL) {
        snprintf(why, size, "checkpoint: no folder to resume from (RUNG_TRIAL_DIR is not set)");
        return -1;
    }
    path_of(path, sizeof path, dir, epoch, "");
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(why, size, "checkpoint: cannot resume from epoch %lld: %s: %s", (long long)epoch,
                 path, strerror(errno));
        return -1;
    }
    CkptHeader h;
    uLong crc = crc32(0L, Z_NULL, 0);
    size_t bytes = n * sizeof(float);
    uint32_t stored;
    int bad = read_all(f, &h, sizeof h, &crc);
    if (!bad && (memcmp(h.magic, CKPT_MAGIC, 8) != 0 || h.version != CKPT_VERSION || h.n != n ||
                 h.epoch != epoch)) {
        fclose(f);
        snprintf(why, size,
                 "checkpoint: %s is not a checkpoint of this model at epoch %lld (it has %llu "
                 "parameters, epoch %lld; the model has %zu)",
                 path, (long long)epoch, (unsigned long long)h.n, (long long)h.epoch, n);
        return -1;
    }
    bad = bad || read_all(f, params, bytes, &crc) || read_all(f, opt1, bytes, &crc) ||
          read_all(f, opt2, bytes, &crc) || fread(&stored, sizeof stored, 1, f) != 1;
    fclose(f);
    if (bad || stored != (uint32_t)crc) {
        snprintf(why, size, "checkpoint: %s is truncated or corrupt", path);
        return -1;
    }
    *step = h.step;
    return 0;
}
