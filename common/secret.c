/* Tokens from files; see secret.h. */
#include "secret.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"

/* The file's size limit: every token at its longest, with line ends. */
#define FILE_MAX (SECRET_TOKENS_MAX * (SECRET_TOKEN_MAX + 2) + 64)

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

int secret_read_tokens(const char *path, SecretToken *out, int max, int *n, bool *loose, char *why,
                       size_t why_cap)
{
    *n = 0;
    *loose = false;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(why, why_cap, "--token-file %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
        *loose = true;
    char buf[FILE_MAX + 1];
    size_t len = fread(buf, 1, FILE_MAX, f);
    bool failed = ferror(f) != 0, more = !failed && fgetc(f) != EOF;
    fclose(f);
    if (failed || more) {
        snprintf(why, why_cap, "--token-file %s: %s", path,
                 failed ? "cannot read it" : "the file is too long to hold tokens");
        return -1;
    }
    buf[len] = '\0';
    int line = 0;
    for (char *p = buf, *end; p < buf + len; p = end + 1) {
        line++;
        end = memchr(p, '\n', (size_t)(buf + len - p));
        if (end == NULL)
            end = buf + len;
        size_t k = (size_t)(end - p);
        while (k > 0 && blank(p[k - 1]))
            k--;
        if (k == 0)
            continue;
        if (*n == max) {
            snprintf(why, why_cap, "--token-file %s: more than %d token%s (line %d)", path, max,
                     max == 1 ? "" : "s", line);
            return -1;
        }
        if (k > SECRET_TOKEN_MAX) {
            snprintf(why, why_cap, "--token-file %s: the token on line %d is longer than %d bytes",
                     path, line, SECRET_TOKEN_MAX);
            return -1;
        }
        for (size_t i = 0; i < k; i++) {
            unsigned char c = (unsigned char)p[i];
            if (c <= ' ' || c == 0x7f) {
                snprintf(why, why_cap,
                         "--token-file %s: the token on line %d has a blank or control "
                         "character at byte %zu (one token a line, nothing else)",
                         path, line, i + 1);
                return -1;
            }
        }
        memcpy(out[*n], p, k);
        out[*n][k] = '\0';
        (*n)++;
    }
    if (*n == 0) {
        snprintf(why, why_cap, "--token-file %s: the file holds no token", path);
        return -1;
    }
    return 0;
}

int secret_load_tokens(const char *prog, const char *path, SecretToken *out, int max, int *n)
{
    bool loose;
    char why[PATH_MAX + 256]; /* the reason names the path */
    if (secret_read_tokens(path, out, max, n, &loose, why, sizeof why) != 0) {
        fprintf(stderr, "%s: %s\n", prog, why);
        return -1;
    }
    if (loose)
        LOG_WARN("%s: --token-file %s can be read by its group or others (chmod 600 it)", prog,
                 path);
    return 0;
}
