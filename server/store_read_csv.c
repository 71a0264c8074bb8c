/* The read side of the store: an experiment's trials as CSV (docs/api.md,
 * "GET /api/v1/experiments/{id}/trials.csv"); see store_read.h. */
#include "store_read_internal.h"

#include <stdlib.h>
#include <string.h>

#include "flatjson.h"
#include "fmtnum.h"

/* A row is written into a buffer and goes to the stream in pieces of up to
 * its size: one fwrite per row instead of one stdio call per character or
 * field (50,000 rows of a dozen fields, docs/api.md). */
typedef struct RowBuf {
    FILE *out;
    size_t n;
    char b[1024];
} RowBuf;

static void row_flush(RowBuf *r)
{
    fwrite(r->b, 1, r->n, r->out);
    r->n = 0;
}

static void row_put(RowBuf *r, const char *s, size_t len)
{
    while (len > 0) {
        if (r->n == sizeof r->b)
            row_flush(r);
        size_t k = sizeof r->b - r->n < len ? sizeof r->b - r->n : len;
        memcpy(r->b + r->n, s, k);
        r->n += k;
        s += k;
        len -= k;
    }
}

static void row_char(RowBuf *r, char c)
{
    if (r->n == sizeof r->b)
        row_flush(r);
    r->b[r->n++] = c;
}

static void row_real(RowBuf *r, double v)
{
    char t[RUNG_FMTNUM_MAX];
    row_put(r, t, rung_fmt_g17(t, v)); /* "%.17g", the same bytes */
}

static void row_int(RowBuf *r, int64_t v)
{
    char t[RUNG_FMTNUM_MAX];
    row_put(r, t, rung_fmt_i64(t, v));
}

/* s[0..len) as one CSV field: quoted when it needs to be (RFC 4180), and
 * with a leading ' when a spreadsheet would take it for a formula (a text
 * starting with = + - @, a tab or a carriage return). */
static void row_field(RowBuf *r, const char *s, size_t len)
{
    bool formula = len > 0 && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' ||
                               s[0] == '\t' || s[0] == '\r');
    bool quote = false;
    for (size_t i = 0; i < len && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
    if (!quote) {
        if (formula)
            row_char(r, '\'');
        row_put(r, s, len);
        return;
    }
    row_char(r, '"');
    if (formula)
        row_char(r, '\'');
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"')
            row_char(r, '"');
        row_char(r, s[i]);
    }
    row_char(r, '"');
}

void store_csv_field(FILE *out, const char *s)
{
    RowBuf r = {.out = out};
    row_field(&r, s, strlen(s));
    row_flush(&r);
}

static void row_value(RowBuf *r, const json_t *v)
{
    if (v == NULL || json_is_null(v))
        return;
    if (json_is_string(v)) {
        row_field(r, json_string_value(v), strlen(json_string_value(v)));
    } else if (json_is_integer(v)) {
        row_int(r, json_integer_value(v));
    } else if (json_is_real(v)) {
        row_real(r, json_real_value(v));
    } else if (json_is_boolean(v)) {
        row_put(r, json_is_true(v) ? "true" : "false", json_is_true(v) ? 4 : 5);
    } else {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        row_field(r, text ? text : "", text ? strlen(text) : 0);
        free(text);
    }
}

void store_csv_value(FILE *out, const json_t *v)
{
    RowBuf r = {.out = out};
    row_value(&r, v);
    row_flush(&r);
}

/* The same cell as row_value writes for the JSON value that m was read
 * from (flatjson.h). */
static void row_member(RowBuf *r, const FlatMember *m)
{
    if (m == NULL)
        return;
    switch (m->kind) {
    case FLAT_STRING:
        row_field(r, m->text, m->len);
        break;
    case FLAT_INT:
        row_int(r, m->i);
        break;
    case FLAT_REAL:
        row_real(r, m->r);
        break;
    case FLAT_TRUE:
        row_put(r, "true", 4);
        break;
    case FLAT_FALSE:
        row_put(r, "false", 5);
        break;
    case FLAT_NULL:
        break;
    }
}

/* The cells from id to the parameters' last; the rest is the caller's. */
static void row_head(RowBuf *r, int64_t id, int64_t number, const char *state)
{
    row_int(r, id);
    row_char(r, ',');
    row_int(r, number);
    row_char(r, ',');
    row_put(r, state, strlen(state));
}

static void row_tail(RowBuf *r, bool has_step, int64_t step)
{
    if (has_step)
        row_int(r, step);
}

/* A metric:<name> cell: a number in the fewest digits that read back to
 * it, or NaN, Infinity, -Infinity as reported (docs/api.md). */
static void row_metric(RowBuf *r, const json_t *v)
{
    if (json_is_real(v)) {
        char t[RUNG_FMTNUM_MAX];
        row_put(r, t, rung_fmt_shortest(t, json_real_value(v)));
    } else {
        row_value(r, v);
    }
}

/* The metric:<name> cells (docs/api.md): each named metric's value in the
 * trial's last report, empty when it has none. */
static void row_metrics(RowBuf *r, const json_t *names, const json_t *last)
{
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n) {
        row_char(r, ',');
        row_metric(r, last ? json_object_get(last, json_string_value(n)) : NULL);
    }
    row_char(r, '\n');
}

void store_csv_row(FILE *out, const Spec *spec, const json_t *names, int64_t id, int64_t number,
                   const char *state, const json_t *config, bool has_best, double best,
                   const json_t *last, bool has_step, int64_t step)
{
    RowBuf r = {.out = out};
    row_head(&r, id, number, state);
    /* Every parameter path of every branch; a branch not taken is empty. */
    for (int i = 0; i < space_param_count(spec->space); i++) {
        row_char(&r, ',');
        row_value(&r, json_object_get(config, space_param_name(spec->space, i)));
    }
    row_char(&r, ',');
    if (spec->n_objectives > 1) {
        /* Several objectives: each one's value in the last report. */
        for (int k = 0; k < spec->n_objectives; k++) {
            row_value(&r, last ? json_object_get(last, spec->objectives[k].name) : NULL);
            row_char(&r, ',');
        }
    } else {
        if (has_best)
            row_real(&r, best);
        row_char(&r, ',');
        row_value(&r, last ? json_object_get(last, spec->metric) : NULL);
        row_char(&r, ',');
    }
    if (spec->n_constraints > 0) {
        if (last != NULL) {
            bool feasible = spec_feasible(spec, last);
            row_put(&r, feasible ? "true" : "false", feasible ? 4 : 5);
        }
        row_char(&r, ',');
    }
    row_tail(&r, has_step, step);
    row_metrics(&r, names, last);
    row_flush(&r);
}

/* store_csv_row for a row of the store, from the stored JSON text of its
 * config and last metrics read in place (flatjson.h), which costs a
 * fraction of parsing them; the same bytes. False, with nothing written,
 * when either text is not a flat object that flatjson reads, or when the
 * spec has constraints (spec_feasible reads the parsed metrics): the
 * caller parses the texts then. */
static bool csv_row_text(FILE *out, const Spec *spec, const json_t *names, int64_t id,
                         int64_t number, const char *state, const char *config, bool has_best,
                         double best, const char *last, bool has_step, int64_t step)
{
    FlatMember cm[FLATJSON_MAX];
    FlatMember lm[FLATJSON_MAX];
    int nc = 0;
    int nl = 0;
    if (spec->n_constraints > 0 || (config && (nc = flatjson_read(config, cm, FLATJSON_MAX)) < 0) ||
        (last && (nl = flatjson_read(last, lm, FLATJSON_MAX)) < 0))
        return false;
    RowBuf r = {.out = out};
    row_head(&r, id, number, state);
    for (int i = 0; i < space_param_count(spec->space); i++) {
        row_char(&r, ',');
        row_member(&r, flatjson_get(cm, nc, space_param_name(spec->space, i)));
    }
    row_char(&r, ',');
    if (spec->n_objectives > 1) {
        for (int k = 0; k < spec->n_objectives; k++) {
            row_member(&r, flatjson_get(lm, nl, spec->objectives[k].name));
            row_char(&r, ',');
        }
    } else {
        if (has_best)
            row_real(&r, best);
        row_char(&r, ',');
        row_member(&r, flatjson_get(lm, nl, spec->metric));
        row_char(&r, ',');
    }
    row_tail(&r, has_step, step);
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n) {
        row_char(&r, ',');
        const FlatMember *m = flatjson_get(lm, nl, json_string_value(n));
        if (m != NULL && m->kind == FLAT_REAL) {
            char t[RUNG_FMTNUM_MAX];
            row_put(&r, t, rung_fmt_shortest(t, m->r));
        } else {
            row_member(&r, m);
        }
    }
    row_char(&r, '\n');
    row_flush(&r);
    return true;
}

int store_read_metric_names(Store *s, int64_t exp_id, json_t *set, RungError *err)
{
    DbStmt *st;
    if (prepare(s,
                "SELECT DISTINCT j.key FROM trials, json_each(trials.last_metrics) AS j "
                "WHERE trials.experiment_id = ? AND trials.last_metrics IS NOT NULL",
                &st, err))
        return err->code;
    db_bind_int64(st, 1, exp_id);
    int rc;
    while ((rc = db_step(st)) == DB_ROW)
        json_object_set_new(set, db_column_text(st, 0), json_true());
    db_finalize(st);
    return rc == DB_DONE ? 0 : db_error(s, err, "csv");
}

int store_read_csv(Store *s, const Spec *spec, const json_t *names, int64_t exp_id, FILE *out,
                   bool (*row)(void *ctx, int64_t id, FILE *out), void *ctx, RungError *err)
{
    DbStmt *st;
    if (prepare(s,
                "SELECT id, number, state, config, best_value, last_metrics, step FROM trials "
                "WHERE experiment_id = ? ORDER BY number",
                &st, err))
        return err->code;
    db_bind_int64(st, 1, exp_id);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        int64_t id = db_column_int64(st, 0);
        if (row(ctx, id, out))
            continue;
        int64_t number = db_column_int64(st, 1);
        const char *state = db_column_text(st, 2);
        bool has_best = db_column_type(st, 4) != DB_NULL;
        double best = db_column_double(st, 4);
        bool has_step = db_column_type(st, 6) != DB_NULL;
        int64_t step = db_column_int64(st, 6);
        if (csv_row_text(out, spec, names, id, number, state, db_column_text(st, 3), has_best, best,
                         db_column_text(st, 5), has_step, step))
            continue;
        json_t *config = column_json(st, 3);
        json_t *last = column_json(st, 5);
        store_csv_row(out, spec, names, id, number, state, config, has_best, best, last, has_step,
                      step);
        json_decref(config);
        json_decref(last);
    }
    db_finalize(st);
    return rc == DB_DONE ? 0 : db_error(s, err, "csv");
}
