/* What the files of checkpoint copies share and nobody else uses: the
 * copies between folders and the helpers (ckpt.c), packing (ckpt_pack.c)
 * and unpacking (ckpt_unpack.c). Each returns 0 or -1 with errno set,
 * unless it says otherwise. */
#ifndef RUNG_WORKER_CKPT_INTERNAL_H
#define RUNG_WORKER_CKPT_INTERNAL_H

#include <limits.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_DEPTH 128         /* folders inside folders (a descriptor each) */
#define BUF_SIZE (256 * 1024) /* a read's size when bytes are copied or hashed */
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* The path of the entry being worked on, relative to the folder walked,
 * for entry names in a tar and for messages. */
typedef struct {
    char rel[PATH_MAX];
    size_t len;
} RelPath;

int ckpt_write_all(int fd, const void *data, size_t n);
/* SHA-256: a context (NULL, errno ENOMEM, when none), finished (and freed)
 * into 64 lowercase hex digits and a NUL; or what fd holds from its offset
 * to its end, and its length (size may be NULL). */
EVP_MD_CTX *ckpt_sha256_start(void);
int ckpt_sha256_final(EVP_MD_CTX *ctx, char hex[65]);
int ckpt_sha256_fd(int fd, char hex[65], int64_t *size);

/* The names in folder fd, sorted, without "." and "..", and at the top
 * (top) without the trial's logs; free with ckpt_free_names and free. */
int ckpt_list_dir(int fd, bool top, char ***names_out, size_t *n_out);
void ckpt_free_names(char **names, size_t n);
/* Appends a name to the relative path (ENAMETOOLONG when it does not fit);
 * cuts it back to len bytes. */
int ckpt_rel_push(RelPath *r, const char *name);
void ckpt_rel_pop(RelPath *r, size_t len);

/* Whether folder outer holds folder inner, at any depth. */
bool ckpt_holds(const char *outer, const char *inner);
/* Removes entry name of folder dfd, a whole folder included, not following
 * links or leaving file system dev. */
int ckpt_remove_entry(int dfd, const char *name, dev_t dev, int depth);
/* Removes every entry of folder dfd (named `to` in err) but the two logs
 * at its top; -1 with a message in err. */
int ckpt_clear_dir(int dfd, const char *to, dev_t dev, char *err, size_t errsize);

#endif
