/* The worker in a batch job; see batchjob.h. timegm and strptime come
 * with _GNU_SOURCE, which the build defines. */
#include "batchjob.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A comma-separated list of GPU indices ("0,2"); ranges ("0-3") as Slurm
 * writes them in SLURM_JOB_GPUS on some set-ups. false when it is not one
 * (CUDA_VISIBLE_DEVICES may hold UUIDs). */
static bool index_list(const char *s, int *out, int *n)
{
    *n = 0;
    const char *p = s;
    while (*p != '\0') {
        char *end;
        errno = 0;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p || errno || lo < 0 || lo > 1023)
            return false;
        if (*end == '-') {
            p = end + 1;
            hi = strtol(p, &end, 10);
            if (end == p || errno || hi < lo || hi > 1023)
                return false;
        }
        for (long v = lo; v <= hi; v++) {
            for (int i = 0; i < *n; i++)
                if (out[i] == v)
                    return false;
            if (*n == SLOTS_MAX_GPUS)
                return false;
            out[(*n)++] = (int)v;
        }
        if (*end != ',' && *end != '\0')
            return false;
        p = *end == ',' ? end + 1 : end;
    }
    return true;
}

int batchjob_read(BatchJob *j, const char *(*get)(const char *name), char *why, size_t size)
{
    memset(j, 0, sizeof *j);
    const char *id = get("SLURM_JOB_ID");
    if (id == NULL || id[0] == '\0')
        return 0;
    j->slurm = true;
    snprintf(j->job_id, sizeof j->job_id, "%s", id);
    const char *cpus = get("SLURM_CPUS_ON_NODE");
    if (cpus != NULL && cpus[0] != '\0') {
        char *end;
        errno = 0;
        long long v = strtoll(cpus, &end, 10);
        if (end == cpus || *end != '\0' || errno || v < 1 || v > 1000000) {
            snprintf(why, size, "SLURM_CPUS_ON_NODE is '%s', not a number of CPUs", cpus);
            return -1;
        }
        j->cpus = v;
    }
    const char *names[] = {"SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        const char *v = get(names[k]);
        if (v == NULL || v[0] == '\0')
            continue;
        if (!index_list(v, j->gpus, &j->n_gpus)) {
            snprintf(why, size,
                     "%s is '%s', not a list of GPU indices (give --gpus with the indices NVML "
                     "numbers the job's GPUs by)",
                     names[k], v);
            return -1;
        }
        j->gpus_from = names[k];
        break;
    }
    return 0;
}

int batchjob_parse_time(const char *text, int64_t now_s, int64_t *out, char *why, size_t size)
{
    const char *s = text;
    char *end;
    if (s[0] == '+') {
        errno = 0;
        long long v = strtoll(s + 1, &end, 10);
        long long unit = 1;
        if (*end == 'm')
            unit = 60, end++;
        else if (*end == 'h')
            unit = 3600, end++;
        else if (*end == 's')
            end++;
        if (end == s + 1 || *end != '\0' || errno || v < 0 || v > 100LL * 365 * 86400 / unit) {
            snprintf(why, size, "'%s' is not +N, +Nm or +Nh", text);
            return -1;
        }
        *out = now_s + v * unit;
        return 0;
    }
    bool digits = s[0] != '\0';
    for (const char *p = s; *p; p++)
        digits &= isdigit((unsigned char)*p) != 0;
    if (digits) {
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || v <= 0) {
            snprintf(why, size, "'%s' is not a time", text);
            return -1;
        }
        *out = v;
        return 0;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    end = strptime(s, "%Y-%m-%dT%H:%M", &tm);
    if (end != NULL && *end == ':')
        end = strptime(end, ":%S", &tm);
    bool utc = end != NULL && *end == 'Z';
    if (end == NULL || (utc ? end[1] != '\0' : *end != '\0')) {
        snprintf(why, size,
                 "'%s' is not a time: seconds since the epoch, +N[s|m|h], or "
                 "YYYY-MM-DDTHH:MM[:SS][Z]",
                 text);
        return -1;
    }
    tm.tm_isdst = -1;
    time_t t = utc ? timegm(&tm) : mktime(&tm);
    if (t == (time_t)-1) {
        snprintf(why, size, "'%s' is not a time", text);
        return -1;
    }
    *out = (int64_t)t;
    return 0;
}

int64_t batchjob_slurm_end(const char *job_id)
{
    for (const char *p = job_id; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_')
            return -1; /* never anything a shell would read: there is none, but still */
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execlp("squeue", "squeue", "-h", "-j", job_id, "-o", "%e", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[128];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 && (r = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || buf[0] == '\0')
        return -1;
    int64_t t;
    char why[160];
    return batchjob_parse_time(buf, 0, &t, why, sizeof why) == 0 ? t : -1;
}
