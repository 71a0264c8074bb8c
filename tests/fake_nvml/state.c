/* The fake NVML's state file; see state.h. */
#include "state.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define FIELDS_MAX 5 /* the fields before a gpu's name */

/* A decimal integer of exactly len bytes in [lo, hi]; "-" gives dash when
 * dash_ok. */
static bool number(const char *s, size_t len, int64_t lo, int64_t hi, bool dash_ok, int64_t dash,
                   int64_t *out)
{
    if (dash_ok && len == 1 && s[0] == '-') {
        *out = dash;
        return true;
    }
    if (len == 0 || len > 12)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int fake_state_parse(const char *text, size_t len, FakeState *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    if (len > FAKE_MAX_FILE) {
        snprintf(why, why_size, "longer than %d bytes", FAKE_MAX_FILE);
        return -1;
    }
    size_t at = 0;
    for (int line = 1; at < len; line++) {
        const char *s = text + at;
        const char *nl = memchr(s, '\n', len - at);
        size_t n = nl ? (size_t)(nl - s) : len - at;
        at += n + (nl != NULL);
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f) {
                snprintf(why, why_size, "line %d: byte %zu is not printable ASCII", line, i + 1);
                return -1;
            }
        /* Fields: up to FIELDS_MAX words; the rest of a gpu line is its name. */
        const char *f[FIELDS_MAX];
        size_t fl[FIELDS_MAX];
        int nf = 0;
        size_t i = 0;
        while (i < n && s[i] == ' ')
            i++;
        if (i == n || s[i] == '#')
            continue;
        const char *rest = NULL;
        size_t rest_len = 0;
        while (i < n) {
            if (nf == FIELDS_MAX) {
                rest = s + i;
                rest_len = n - i;
                while (rest_len > 0 && rest[rest_len - 1] == ' ')
                    rest_len--;
                break;
            }
            f[nf] = s + i;
            while (i < n && s[i] != ' ')
                i++;
            fl[nf] = (size_t)(s + i - f[nf]);
            nf++;
            while (i < n && s[i] == ' ')
                i++;
        }
        bool is_gpu = fl[0] == 3 && memcmp(f[0], "gpu", 3) == 0;
        bool is_proc = fl[0] == 4 && memcmp(f[0], "proc", 4) == 0;
        int64_t v[4];
        if (is_gpu) {
            if (nf < 5) { /* gpu INDEX MB UTIL NAME...: the name is field 5 and on */
                snprintf(why, why_size, "line %d: gpu: want gpu INDEX MEMORY_MB UTIL NAME", line);
                return -1;
            }
            size_t name_len = (size_t)((rest ? rest + rest_len : f[4] + fl[4]) - f[4]);
            if (!number(f[1], fl[1], 0, FAKE_MAX_GPUS - 1, false, 0, &v[0]) ||
                v[0] != out->n_gpus) {
                snprintf(why, why_size, "line %d: gpu: index '%.*s' is not the next one, %d", line,
                         (int)fl[1], f[1], out->n_gpus);
                return -1;
            }
            if (!number(f[2], fl[2], 1, FAKE_MAX_MB, false, 0, &v[1])) {
                snprintf(why, why_size, "line %d: gpu: memory '%.*s' is not 1..%d MiB", line,
                         (int)fl[2], f[2], FAKE_MAX_MB);
                return -1;
            }
            if (!number(f[3], fl[3], 0, 100, false, 0, &v[2])) {
                snprintf(why, why_size, "line %d: gpu: util '%.*s' is not 0..100", line, (int)fl[3],
                         f[3]);
                return -1;
            }
            if (name_len >= FAKE_NAME_MAX) {
                snprintf(why, why_size, "line %d: gpu: name longer than %d bytes", line,
                         FAKE_NAME_MAX - 1);
                return -1;
            }
            FakeGpu *g = &out->gpus[out->n_gpus++];
            memcpy(g->name, f[4], name_len);
            g->name[name_len] = '\0';
            g->memory_mb = v[1];
            g->util = (int)v[2];
        } else if (is_proc) {
            if (nf != 5 || rest != NULL) {
                snprintf(why, why_size, "line %d: proc: want proc GPU PID MEMORY_MB|- UTIL|-",
                         line);
                return -1;
            }
            if (!number(f[1], fl[1], 0, FAKE_MAX_GPUS - 1, false, 0, &v[0]) ||
                v[0] >= out->n_gpus) {
                snprintf(why, why_size, "line %d: proc: no gpu '%.*s' above it", line, (int)fl[1],
                         f[1]);
                return -1;
            }
            if (!number(f[2], fl[2], 1, 2147483647, false, 0, &v[1])) {
                snprintf(why, why_size, "line %d: proc: pid '%.*s' is not a number", line,
                         (int)fl[2], f[2]);
                return -1;
            }
            if (!number(f[3], fl[3], 0, FAKE_MAX_MB, true, -1, &v[2])) {
                snprintf(why, why_size, "line %d: proc: memory '%.*s' is not 0..%d MiB or -", line,
                         (int)fl[3], f[3], FAKE_MAX_MB);
                return -1;
            }
            if (!number(f[4], fl[4], 0, 100, true, -1, &v[3])) {
                snprintf(why, why_size, "line %d: proc: util '%.*s' is not 0..100 or -", line,
                         (int)fl[4], f[4]);
                return -1;
            }
            if (out->n_procs == FAKE_MAX_PROCS) {
                snprintf(why, why_size, "line %d: more than %d processes", line, FAKE_MAX_PROCS);
                return -1;
            }
            out->procs[out->n_procs++] = (FakeProc){.gpu = (int)v[0],
                                                    .pid = (uint32_t)v[1],
                                                    .memory_mb = v[2],
                                                    .util = (int)v[3]};
        } else {
            snprintf(why, why_size, "line %d: '%.*s' is neither gpu nor proc", line, (int)fl[0],
                     f[0]);
            return -1;
        }
    }
    return 0;
}
