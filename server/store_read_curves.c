/* The read side of the store: an experiment's learning curves (docs/api.md,
 * "GET /api/v1/experiments/{id}/curves"); see store_read.h. */
#include "store_read_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nonfinite.h"

/* The metric's JSON path for json_extract, quoted so that any key works. */
static void metric_path(const char *metric, char path[SPEC_MAX_METRIC * 2 + 8])
{
    size_t k = 0;
    path[k++] = '$';
    path[k++] = '.';
    path[k++] = '"';
    for (const char *c = metric; *c && k < SPEC_MAX_METRIC * 2 + 8 - 3; c++) {
        if (*c == '"' || *c == '\\')
            path[k++] = '\\';
        path[k++] = *c;
    }
    path[k++] = '"';
    path[k] = '\0';
}

/* Writes the value column `col` of a curves row as ",[trial,attempt,step,v]"
 * (no comma for the first); false when the row has no value of the metric. */
static bool curve_item(DbStmt *st, int col, bool first, FILE *out)
{
    int type = db_column_type(st, col);
    if (type != DB_INTEGER && type != DB_FLOAT && type != DB_TEXT)
        return false; /* the report has no value of the metric */
    const char *text = type == DB_TEXT ? db_column_text(st, col) : NULL;
    double nonfinite;
    if (text != NULL && !rung_nonfinite_parse(text, strlen(text), &nonfinite))
        return false;
    fprintf(out, first ? "[%lld,%d,%lld," : ",[%lld,%d,%lld,",
            (long long)db_column_int64(st, col - 3), db_column_int(st, col - 2),
            (long long)db_column_int64(st, col - 1));
    double v = text ? NAN : db_column_double(st, col);
    if (isfinite(v))
        fprintf(out, "%.9g]", v);
    else
        fputs("null]", out);
    return true;
}

int store_read_curves(Store *s, int64_t exp_id, const char *metric, int64_t from, int64_t before,
                      int64_t limit, FILE *out, int64_t *next, RungError *err)
{
    DbStmt *st;
    char path[SPEC_MAX_METRIC * 2 + 8];
    metric_path(metric, path);
    if (prepare(s,
                "SELECT r.time, r.trial_id, r.attempt, r.step, json_extract(r.metrics, ?) "
                "FROM trials t JOIN reports r ON r.trial_id = t.id "
                "WHERE t.experiment_id = ? AND r.time >= ? AND r.time < ? "
                "ORDER BY r.time, r.trial_id, r.attempt, r.step",
                &st, err))
        return err->code;
    db_bind_text(st, 1, path, -1, DB_TRANSIENT);
    db_bind_int64(st, 2, exp_id);
    db_bind_int64(st, 3, from);
    db_bind_int64(st, 4, before);
    int64_t n = 0, last_time = -1;
    *next = before;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        int64_t time = db_column_int64(st, 0);
        /* A page ends between two times, never inside one: the cursor is a time. */
        if (n >= limit && time != last_time) {
            *next = time;
            break;
        }
        last_time = time;
        if (curve_item(st, 4, n == 0, out))
            n++;
    }
    db_finalize(st);
    return rc == DB_DONE || rc == DB_ROW ? 0 : db_error(s, err, "curves");
}

int store_read_curves_best(Store *s, int64_t exp_id, const char *metric, bool max, int64_t best,
                           FILE *out, int64_t *ranked, RungError *err)
{
    if (count(s, "SELECT count(*) FROM trials WHERE experiment_id = ? AND best_value IS NOT NULL",
              exp_id, 0, ranked, err))
        return err->code;
    if (*ranked <= best)
        return 0;
    DbStmt *st;
    char path[SPEC_MAX_METRIC * 2 + 8];
    metric_path(metric, path);
    /* The best trials by their best value (ties to the lower id), then
     * each one's reports in order. */
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT r.trial_id, r.attempt, r.step, json_extract(r.metrics, ?1) "
             "FROM (SELECT id, best_value FROM trials WHERE experiment_id = ?2 AND "
             "best_value IS NOT NULL ORDER BY best_value %s, id LIMIT ?3) b "
             "JOIN reports r ON r.trial_id = b.id "
             "ORDER BY b.best_value %s, b.id, r.attempt, r.step",
             max ? "DESC" : "ASC", max ? "DESC" : "ASC");
    if (prepare(s, sql, &st, err))
        return err->code;
    db_bind_text(st, 1, path, -1, DB_TRANSIENT);
    db_bind_int64(st, 2, exp_id);
    db_bind_int64(st, 3, best);
    int64_t n = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW)
        if (curve_item(st, 3, n == 0, out))
            n++;
    db_finalize(st);
    return rc == DB_DONE ? 0 : db_error(s, err, "curves");
}
