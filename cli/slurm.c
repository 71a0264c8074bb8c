/* `rung launch slurm`'s decisions; see slurm.h. */
#include "slurm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t int_or(const json_t *o, const char *key, int64_t dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static bool same(const SlurmShape *a, const SlurmShape *b)
{
    return a->gpus == b->gpus && a->cpus == b->cpus && a->nodes == b->nodes;
}

/* The entry of shape s in out[0..*n), added when missing; NULL when full. */
static SlurmCount *entry(SlurmCount *out, int *n, int max, const SlurmShape *s)
{
    for (int i = 0; i < *n; i++)
        if (same(&out[i].shape, s))
            return &out[i];
    if (*n == max)
        return NULL;
    out[*n] = (SlurmCount){.shape = *s};
    return &out[(*n)++];
}

int slurm_waiting(const json_t *experiments, SlurmCount *out, int max)
{
    int n = 0;
    size_t i;
    const json_t *x;
    json_array_foreach(experiments, i, x) {
        const char *state = json_string_value(json_object_get(x, "state"));
        const char *type =
            json_string_value(json_object_get(json_object_get(x, "trainable"), "type"));
        if (state == NULL || strcmp(state, "running") != 0 || type == NULL ||
            (strcmp(type, "command") != 0 && strcmp(type, "builtin") != 0))
            continue;
        const json_t *counts = json_object_get(x, "counts");
        int64_t waiting = int_or(counts, "pending", 0) + int_or(counts, "preempted", 0);
        int64_t cap = int_or(x, "max_concurrent_trials", 0);
        if (cap > 0) {
            int64_t room = cap - int_or(counts, "running", 0);
            waiting = waiting < room ? waiting : (room > 0 ? room : 0);
        }
        if (waiting <= 0)
            continue;
        const json_t *r = json_object_get(x, "resources_per_trial");
        SlurmShape s = {.gpus = int_or(r, "gpu", 0),
                        .cpus = int_or(r, "cpu", 1),
                        .nodes = int_or(r, "nodes", 1)};
        if (s.cpus < 1)
            s.cpus = 1; /* a worker offers at least one CPU */
        SlurmCount *c = entry(out, &n, max, &s);
        if (c != NULL)
            c->n += waiting;
    }
    return n;
}

void slurm_job_name(const char *prefix, const SlurmShape *s, char *buf, size_t size)
{
    snprintf(buf, size, "%s-g%" PRId64 "-c%" PRId64 "-n%" PRId64, prefix, s->gpus, s->cpus,
             s->nodes);
}

bool slurm_parse_job_name(const char *prefix, const char *name, SlurmShape *s)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0)
        return false;
    char tail[8];
    long long g, c, k;
    if (sscanf(name + n, "-g%lld-c%lld-n%lld%7s", &g, &c, &k, tail) != 3 || g < 0 || c < 1 || k < 1)
        return false;
    char again[128];
    *s = (SlurmShape){.gpus = g, .cpus = c, .nodes = k};
    slurm_job_name(prefix, s, again, sizeof again);
    return strcmp(again, name) == 0; /* no sign, no leading zero, nothing after */
}

void slurm_plan(const SlurmCount *waiting, int n_waiting, const SlurmCount *jobs, int n_jobs,
                int64_t max_jobs, int64_t *submit, int64_t *cancel)
{
    int64_t in_flight = 0;
    for (int j = 0; j < n_jobs; j++) {
        in_flight += jobs[j].n;
        /* Queued jobs of a shape beyond what waits for it. */
        int64_t want = 0;
        for (int i = 0; i < n_waiting; i++)
            if (same(&waiting[i].shape, &jobs[j].shape))
                want = waiting[i].n;
        int64_t queued = jobs[j].n - jobs[j].running;
        cancel[j] = queued > want ? queued - want : 0;
        in_flight -= cancel[j];
    }
    for (int i = 0; i < n_waiting; i++) {
        int64_t queued = 0;
        for (int j = 0; j < n_jobs; j++)
            if (same(&waiting[i].shape, &jobs[j].shape))
                queued = jobs[j].n - jobs[j].running - cancel[j];
        int64_t more = waiting[i].n - queued;
        int64_t room = max_jobs - in_flight;
        submit[i] = more <= 0 || room <= 0 ? 0 : (more < room ? more : room);
        in_flight += submit[i];
    }
}

/* Appends s to the script, each ' closed, escaped and reopened: one word
 * for the shell whatever it holds. */
static void quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    }
    fputc('\'', f);
}

char *slurm_script(const SlurmJob *j)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return NULL;
    const SlurmShape *s = &j->shape;
    fprintf(f, "#!/bin/bash\n");
    fprintf(f,
            "# rung launch slurm: rung-worker for trials of %" PRId64 " GPU(s) and %" PRId64
            " CPU(s) per node on %" PRId64 " node(s) (docs/workers.md, \"On Slurm\")\n",
            s->gpus, s->cpus, s->nodes);
    /* #SBATCH lines are not read by a shell: values without quotes, and
     * the launcher never puts a newline in one. */
    fprintf(f, "#SBATCH --job-name=%s\n", j->name);
    fprintf(f, "#SBATCH --nodes=%" PRId64 "\n", s->nodes);
    fprintf(f, "#SBATCH --ntasks-per-node=1\n");
    fprintf(f, "#SBATCH --cpus-per-task=%" PRId64 "\n", s->cpus);
    if (s->gpus > 0)
        fprintf(f, "#SBATCH --gres=gpu:%" PRId64 "\n", s->gpus);
    if (j->time != NULL)
        fprintf(f, "#SBATCH --time=%s\n", j->time);
    if (j->partition != NULL)
        fprintf(f, "#SBATCH --partition=%s\n", j->partition);
    if (j->account != NULL)
        fprintf(f, "#SBATCH --account=%s\n", j->account);
    /* The workers start there: each makes its folder rung-worker-<its
     * worker id>, apart from the others' even on a shared file system. */
    fprintf(f, "#SBATCH --chdir=%s\n", j->output_dir);
    fprintf(f, "#SBATCH --output=%%x-%%j.out\n");
    for (const char *const *e = j->extra; e != NULL && *e != NULL; e++)
        fprintf(f, "#SBATCH %s\n", *e);
    fprintf(f, "set -eu\n");
    fprintf(f, "export RUNG_SERVER=");
    quoted(f, j->server);
    fprintf(f, "\n");
    /* One worker per node, each offering what Slurm gave its task. A
     * gang's workers run under srun, one task per node, so that scancel
     * reaches each of them. */
    fprintf(f, "%s", s->nodes > 1 ? "exec srun --kill-on-bad-exit=0 " : "exec ");
    quoted(f, j->worker);
    fprintf(f, " --exit-idle-s %" PRId64 " --label slurm_job=\"$SLURM_JOB_ID\"", j->exit_idle_s);
    if (j->token_file != NULL) {
        fprintf(f, " --token-file ");
        quoted(f, j->token_file);
    }
    fprintf(f, "\n");
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
