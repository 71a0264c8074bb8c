/* Tokens from files; see secret.h. */
#include "secret.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int secret_read_token(const char *path, char *out, size_t cap, bool *loose, char *why,
                      size_t why_cap)
{
    *loose = false;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(why, why_cap, "--token-file %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
        *loose = true;
    char buf[SECRET_TOKEN_MAX + 2];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    bool failed = ferror(f) != 0;
    fclose(f);
    if (failed) {
        snprintf(why, why_cap, "--token-file %s: cannot read it", path);
        return -1;
    }
    while (n > 0 &&
           (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    buf[n] = '\0';
    if (n == 0) {
        snprintf(why, why_cap, "--token-file %s: the file holds no token", path);
        return -1;
    }
    if (n > SECRET_TOKEN_MAX || n + 1 > cap) {
        snprintf(why, why_cap, "--token-file %s: the token is longer than %d bytes", path,
                 SECRET_TOKEN_MAX);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c <= ' ' || c == 0x7f) {
            snprintf(why, why_cap,
                     "--token-file %s: the token has a blank or control character at byte %zu "
                     "(one token on one line, nothing else)",
                     path, i + 1);
            return -1;
        }
    }
    memcpy(out, buf, n + 1);
    return 0;
}
