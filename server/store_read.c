/* The read side of the store; see store_read.h. Statements are prepared per
 * call (sqlite3_prepare_v2 costs microseconds against a page of rows). */
#include "store_read.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "flatjson.h"
#include "fmtnum.h"
#include "grow.h"
#include "nonfinite.h"
#include "warm.h"

static int db_error(Store *s, RungError *err, const char *what)
{
    return rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: %s: %s", what,
                          sqlite3_errmsg(store_db(s)));
}

static int prepare(Store *s, const char *sql, sqlite3_stmt **st, RungError *err)
{
    if (sqlite3_prepare_v2(store_db(s), sql, -1, st, NULL) != SQLITE_OK)
        return db_error(s, err, sql);
    return 0;
}

static json_t *column_json(sqlite3_stmt *st, int col)
{
    const char *text = (const char *)sqlite3_column_text(st, col);
    return text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
}

static int not_found(RungError *err, const char *what, int64_t id)
{
    return rung_error_set(err, RUNG_E_NOT_FOUND, "", "%s %lld not found", what, (long long)id);
}

/* ---- experiments ---- */

int store_read_spec(Store *s, int64_t id, Spec *spec, RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s, "SELECT spec, seed FROM experiments WHERE id = ?", &st, err))
        return err->code;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? not_found(err, "experiment", id) : db_error(s, err, "spec");
    }
    json_t *json = column_json(st, 0);
    rc = spec_load(json, (uint64_t)sqlite3_column_int64(st, 1), spec, err);
    json_decref(json);
    sqlite3_finalize(st);
    return rc;
}

/* Counts and best of an experiment whose row has no summary (written
 * before schema version 4, or still running). */
static void summary_from_trials(Store *s, int64_t id, const json_t *spec, ExperimentView *v)
{
    sqlite3_stmt *st;
    RungError ignored;
    if (prepare(s, "SELECT state, count(*) FROM trials WHERE experiment_id = ? GROUP BY state", &st,
                &ignored) == 0) {
        sqlite3_bind_int64(st, 1, id);
        while (sqlite3_step(st) == SQLITE_ROW) {
            TrialState ts;
            if (trial_state_parse((const char *)sqlite3_column_text(st, 0), &ts) == 0)
                v->counts[ts] = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    }
    const char *mode = json_string_value(json_object_get(spec, "mode"));
    const char *sql = mode && strcmp(mode, "max") == 0
                          ? "SELECT id, best_value, best_step, config FROM trials WHERE "
                            "experiment_id = ? AND best_value IS NOT NULL ORDER BY best_value "
                            "DESC, number LIMIT 1"
                          : "SELECT id, best_value, best_step, config FROM trials WHERE "
                            "experiment_id = ? AND best_value IS NOT NULL ORDER BY best_value, "
                            "number LIMIT 1";
    if (prepare(s, sql, &st, &ignored) == 0) {
        sqlite3_bind_int64(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW)
            v->best = (BestRef){.has = true,
                                .trial_id = sqlite3_column_int64(st, 0),
                                .value = sqlite3_column_double(st, 1),
                                .step = sqlite3_column_int64(st, 2),
                                .config = column_json(st, 3)}; /* owned here */
        sqlite3_finalize(st);
    }
}

/* The experiment of the current row of st: EXP_COLUMNS. */
static json_t *experiment_of_row(Store *s, sqlite3_stmt *st)
{
    ExperimentView v = {.id = sqlite3_column_int64(st, 0)};
    json_t *spec = column_json(st, 1);
    if (spec == NULL)
        spec = json_object();
    v.spec = spec;
    exp_state_parse((const char *)sqlite3_column_text(st, 2), &v.state);
    v.created_at = sqlite3_column_int64(st, 3);
    v.ended_at = sqlite3_column_int64(st, 4);
    v.total_trials = sqlite3_column_int64(st, 5);
    v.ended_reason = end_reason_parse((const char *)sqlite3_column_text(st, 7));
    v.error = (const char *)sqlite3_column_text(st, 8);
    json_t *summary = column_json(st, 6);
    if (summary != NULL) {
        json_t *counts = json_object_get(summary, "counts");
        for (int k = 0; k < TRIAL__COUNT; k++)
            v.counts[k] = json_integer_value(json_object_get(counts, trial_state_name(k)));
        json_t *b = json_object_get(summary, "best");
        if (json_is_object(b))
            v.best = (BestRef){.has = true,
                               .trial_id = json_integer_value(json_object_get(b, "trial_id")),
                               .value = json_number_value(json_object_get(b, "value")),
                               .step = json_integer_value(json_object_get(b, "step")),
                               .config = json_incref(json_object_get(b, "config"))};
        json_t *pareto = json_object_get(summary, "pareto");
        v.pareto = json_is_array(pareto) ? json_incref(pareto) : NULL;
    } else {
        summary_from_trials(s, v.id, spec, &v);
    }
    /* Several objectives and no front stored yet: an empty one. */
    if (v.pareto == NULL && json_is_array(json_object_get(spec, "metrics")))
        v.pareto = json_array();
    json_t *o = view_experiment(&v);
    json_decref(v.pareto);
    json_decref(v.best.config);
    json_decref(summary);
    json_decref(spec);
    return o;
}

#define EXP_COLUMNS                                                                                \
    "id, spec, state, created_at, ended_at, total_trials, summary, ended_reason, error"

int store_read_experiment(Store *s, int64_t id, json_t **out, RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s, "SELECT " EXP_COLUMNS " FROM experiments WHERE id = ?", &st, err))
        return err->code;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = experiment_of_row(s, st);
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return not_found(err, "experiment", id);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "experiment");
}

static int count(Store *s, const char *sql, int64_t arg, int arg2, int64_t *out, RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s, sql, &st, err))
        return err->code;
    if (sqlite3_bind_parameter_count(st) >= 1)
        sqlite3_bind_int64(st, 1, arg);
    if (sqlite3_bind_parameter_count(st) >= 2)
        sqlite3_bind_int(st, 2, arg2);
    int rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "count");
}

int store_read_experiments(Store *s, int64_t limit, int64_t offset, json_t **items, int64_t *ids,
                           int64_t *total, RungError *err)
{
    if (count(s, "SELECT count(*) FROM experiments", 0, 0, total, err))
        return err->code;
    sqlite3_stmt *st;
    if (prepare(s, "SELECT " EXP_COLUMNS " FROM experiments ORDER BY id DESC LIMIT ? OFFSET ?", &st,
                err))
        return err->code;
    sqlite3_bind_int64(st, 1, limit);
    sqlite3_bind_int64(st, 2, offset);
    json_t *arr = json_array();
    int rc;
    int64_t n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        ids[n++] = sqlite3_column_int64(st, 0);
        json_array_append_new(arr, experiment_of_row(s, st));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return db_error(s, err, "experiments");
    }
    *items = arr;
    return 0;
}

/* ---- trials ---- */

#define TRIAL_COLUMNS                                                                              \
    "id, experiment_id, number, state, config, attempt, worker_id, step, last_metrics, "           \
    "best_value, best_step, error, rung, log_tail, created_at, started_at, ended_at, stopped_by, " \
    "user_paused, warnings, gang, preemptions, lineage, worker_losses"

static json_t *trial_of_row(sqlite3_stmt *st, const Spec *spec)
{
    TrialView v = {.id = sqlite3_column_int64(st, 0),
                   .exp_id = sqlite3_column_int64(st, 1),
                   .number = sqlite3_column_int64(st, 2),
                   .attempt = sqlite3_column_int64(st, 5),
                   .worker_id = sqlite3_column_int64(st, 6),
                   .has_step = sqlite3_column_type(st, 7) != SQLITE_NULL,
                   .step = sqlite3_column_int64(st, 7),
                   .has_best = sqlite3_column_type(st, 9) != SQLITE_NULL,
                   .best_value = sqlite3_column_double(st, 9),
                   .best_step = sqlite3_column_int64(st, 10),
                   .error = (const char *)sqlite3_column_text(st, 11),
                   .rung = sqlite3_column_double(st, 12),
                   .bracket = -1,
                   .log_tail = (const char *)sqlite3_column_text(st, 13),
                   .created_at = sqlite3_column_int64(st, 14),
                   .started_at = sqlite3_column_int64(st, 15),
                   .ended_at = sqlite3_column_int64(st, 16),
                   .stopped_by = stopped_by_parse((const char *)sqlite3_column_text(st, 17)),
                   .user_paused = sqlite3_column_int(st, 18) != 0,
                   .preemptions = sqlite3_column_int64(st, 21),
                   .worker_losses = sqlite3_column_int64(st, 23)};
    trial_state_parse((const char *)sqlite3_column_text(st, 3), &v.state);
    json_t *config = column_json(st, 4);
    json_t *last = column_json(st, 8);
    json_t *warnings = column_json(st, 19);
    json_t *gang = column_json(st, 20);
    json_t *lineage = column_json(st, 22);
    v.lineage = lineage;
    v.warnings = warnings;
    v.gang = gang;
    v.config = config ? config : json_object();
    v.last = last;
    const AshaParams *sched = spec != NULL ? &spec->sched : NULL;
    if (sched != NULL && (sched->type == ASHA_ASHA || sched->type == ASHA_HYPERBAND))
        v.bracket = asha_bracket(sched, v.number);
    /* The spec's nodes; without one, a gang's size tells. */
    v.spec = spec;
    v.nodes = spec != NULL ? spec->nodes
                           : (int64_t)json_array_size(json_object_get(gang, "members"));
    json_t *o = view_trial(&v);
    json_decref((json_t *)v.config);
    json_decref(last);
    json_decref(warnings);
    json_decref(gang);
    json_decref(lineage);
    return o;
}

int store_read_trial(Store *s, int64_t id, const Spec *spec, json_t **out, int64_t *exp_id,
                     RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s, "SELECT " TRIAL_COLUMNS " FROM trials WHERE id = ?", &st, err))
        return err->code;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *exp_id = sqlite3_column_int64(st, 1);
        *out = trial_of_row(st, spec);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return not_found(err, "trial", id);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "trial");
}

int store_read_trial_ranks(Store *s, const Spec *spec, int64_t exp_id, int state, TrialRank **out,
                           int64_t *n, RungError *err)
{
    sqlite3_stmt *st;
    const char *sql = state < 0 ? "SELECT id, number, best_value FROM trials WHERE "
                                  "experiment_id = ? ORDER BY number"
                                : "SELECT id, number, best_value FROM trials WHERE "
                                  "experiment_id = ? AND state = ? ORDER BY number";
    if (prepare(s, sql, &st, err))
        return err->code;
    sqlite3_bind_int64(st, 1, exp_id);
    if (state >= 0)
        sqlite3_bind_text(st, 2, trial_state_name((TrialState)state), -1, SQLITE_STATIC);
    TrialRank *v = NULL;
    int64_t len = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        rung_grow((void **)&v, &cap, len, sizeof *v);
        bool has = sqlite3_column_type(st, 2) != SQLITE_NULL;
        v[len++] = (TrialRank){.id = sqlite3_column_int64(st, 0),
                               .number = sqlite3_column_int64(st, 1),
                               .has_best = has,
                               .loss = has ? spec_loss(spec, sqlite3_column_double(st, 2)) : 0};
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(v);
        return db_error(s, err, "trial ranks");
    }
    *out = v;
    *n = len;
    return 0;
}

int store_read_trials(Store *s, const Spec *spec, int64_t exp_id, int state, int64_t limit,
                      int64_t offset, json_t **items, int64_t *total, RungError *err)
{
    const char *state_name = state < 0 ? NULL : trial_state_name((TrialState)state);
    if (state < 0
            ? count(s, "SELECT count(*) FROM trials WHERE experiment_id = ?", exp_id, 0, total, err)
            : 0)
        return err->code;
    sqlite3_stmt *st;
    if (state >= 0) {
        if (prepare(s, "SELECT count(*) FROM trials WHERE experiment_id = ? AND state = ?", &st,
                    err))
            return err->code;
        sqlite3_bind_int64(st, 1, exp_id);
        sqlite3_bind_text(st, 2, state_name, -1, SQLITE_STATIC);
        *total = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_finalize(st);
    }
    const char *sql = state < 0 ? "SELECT " TRIAL_COLUMNS " FROM trials WHERE experiment_id = ? "
                                  "ORDER BY number LIMIT ? OFFSET ?"
                                : "SELECT " TRIAL_COLUMNS " FROM trials WHERE experiment_id = ? "
                                  "AND state = ?4 ORDER BY number LIMIT ?2 OFFSET ?3";
    if (prepare(s, sql, &st, err))
        return err->code;
    sqlite3_bind_int64(st, 1, exp_id);
    sqlite3_bind_int64(st, 2, limit);
    sqlite3_bind_int64(st, 3, offset);
    if (state >= 0)
        sqlite3_bind_text(st, 4, state_name, -1, SQLITE_STATIC);
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(arr, trial_of_row(st, spec));
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return db_error(s, err, "trials");
    }
    *items = arr;
    return 0;
}

int store_read_trial_lease(Store *s, int64_t id, TrialLease *out, RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s, "SELECT experiment_id, attempt, state, lease_token FROM trials WHERE id = ?",
                &st, err))
        return err->code;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->exp_id = sqlite3_column_int64(st, 0);
        out->attempt = sqlite3_column_int64(st, 1);
        trial_state_parse((const char *)sqlite3_column_text(st, 2), &out->state);
        const char *tok = (const char *)sqlite3_column_text(st, 3);
        snprintf(out->token, sizeof out->token, "%s", tok ? tok : "");
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return not_found(err, "trial", id);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "trial");
}

int store_read_gang_member(Store *s, int64_t id, const char *token, int64_t *rank, int64_t *attempt,
                           RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s, "SELECT gang FROM trials WHERE id = ?", &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    json_t *stored = rc == SQLITE_ROW ? column_json(st, 0) : NULL;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        db_error(s, err, "trial");
        return -1;
    }
    Gang *g = stored != NULL ? members_from_json(stored) : NULL;
    json_decref(stored);
    GangMember *m = members_by_token(g, token);
    if (m != NULL) {
        *rank = members_rank(g, m);
        *attempt = g->attempt;
    }
    members_free(g);
    return m != NULL;
}

int store_read_report_action(Store *s, int64_t trial_id, int64_t attempt, int64_t step,
                             ReportAction *action, RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s, "SELECT action FROM reports WHERE trial_id = ? AND attempt = ? AND step = ?",
                &st, err))
        return -1;
    sqlite3_bind_int64(st, 1, trial_id);
    sqlite3_bind_int64(st, 2, attempt);
    sqlite3_bind_int64(st, 3, step);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *action = strcmp((const char *)sqlite3_column_text(st, 0), "stop") == 0 ? ACTION_STOP
                                                                                : ACTION_CONTINUE;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        db_error(s, err, "report");
        return -1;
    }
    return rc == SQLITE_ROW;
}

/* ---- CSV ---- */

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
    row_char(r, '\n');
}

void store_csv_row(FILE *out, const Spec *spec, int64_t id, int64_t number, const char *state,
                   const json_t *config, bool has_best, double best, const json_t *last,
                   bool has_step, int64_t step)
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
    row_flush(&r);
}

/* store_csv_row for a row of the store, from the stored JSON text of its
 * config and last metrics read in place (flatjson.h), which costs a
 * fraction of parsing them; the same bytes. False, with nothing written,
 * when either text is not a flat object that flatjson reads, or when the
 * spec has constraints (spec_feasible reads the parsed metrics): the
 * caller parses the texts then. */
static bool csv_row_text(FILE *out, const Spec *spec, int64_t id, int64_t number, const char *state,
                         const char *config, bool has_best, double best, const char *last,
                         bool has_step, int64_t step)
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
    row_flush(&r);
    return true;
}

int store_read_csv(Store *s, const Spec *spec, int64_t exp_id, FILE *out,
                   bool (*row)(void *ctx, int64_t id, FILE *out), void *ctx, RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s,
                "SELECT id, number, state, config, best_value, last_metrics, step FROM trials "
                "WHERE experiment_id = ? ORDER BY number",
                &st, err))
        return err->code;
    sqlite3_bind_int64(st, 1, exp_id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (row(ctx, id, out))
            continue;
        int64_t number = sqlite3_column_int64(st, 1);
        const char *state = (const char *)sqlite3_column_text(st, 2);
        bool has_best = sqlite3_column_type(st, 4) != SQLITE_NULL;
        double best = sqlite3_column_double(st, 4);
        bool has_step = sqlite3_column_type(st, 6) != SQLITE_NULL;
        int64_t step = sqlite3_column_int64(st, 6);
        if (csv_row_text(out, spec, id, number, state, (const char *)sqlite3_column_text(st, 3),
                         has_best, best, (const char *)sqlite3_column_text(st, 5), has_step, step))
            continue;
        json_t *config = column_json(st, 3);
        json_t *last = column_json(st, 5);
        store_csv_row(out, spec, id, number, state, config, has_best, best, last, has_step, step);
        json_decref(config);
        json_decref(last);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "csv");
}

/* ---- curves ---- */

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
static bool curve_item(sqlite3_stmt *st, int col, bool first, FILE *out)
{
    int type = sqlite3_column_type(st, col);
    if (type != SQLITE_INTEGER && type != SQLITE_FLOAT && type != SQLITE_TEXT)
        return false; /* the report has no value of the metric */
    const char *text = type == SQLITE_TEXT ? (const char *)sqlite3_column_text(st, col) : NULL;
    double nonfinite;
    if (text != NULL && !rung_nonfinite_parse(text, strlen(text), &nonfinite))
        return false;
    fprintf(out, first ? "[%lld,%d,%lld," : ",[%lld,%d,%lld,",
            (long long)sqlite3_column_int64(st, col - 3), sqlite3_column_int(st, col - 2),
            (long long)sqlite3_column_int64(st, col - 1));
    double v = text ? NAN : sqlite3_column_double(st, col);
    if (isfinite(v))
        fprintf(out, "%.9g]", v);
    else
        fputs("null]", out);
    return true;
}

int store_read_curves(Store *s, int64_t exp_id, const char *metric, int64_t from, int64_t before,
                      int64_t limit, FILE *out, int64_t *next, RungError *err)
{
    sqlite3_stmt *st;
    char path[SPEC_MAX_METRIC * 2 + 8];
    metric_path(metric, path);
    if (prepare(s,
                "SELECT r.time, r.trial_id, r.attempt, r.step, json_extract(r.metrics, ?) "
                "FROM trials t JOIN reports r ON r.trial_id = t.id "
                "WHERE t.experiment_id = ? AND r.time >= ? AND r.time < ? "
                "ORDER BY r.time, r.trial_id, r.attempt, r.step",
                &st, err))
        return err->code;
    sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, exp_id);
    sqlite3_bind_int64(st, 3, from);
    sqlite3_bind_int64(st, 4, before);
    int64_t n = 0, last_time = -1;
    *next = before;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t time = sqlite3_column_int64(st, 0);
        /* A page ends between two times, never inside one: the cursor is a time. */
        if (n >= limit && time != last_time) {
            *next = time;
            break;
        }
        last_time = time;
        if (curve_item(st, 4, n == 0, out))
            n++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : db_error(s, err, "curves");
}

int store_read_curves_best(Store *s, int64_t exp_id, const char *metric, bool max, int64_t best,
                           FILE *out, int64_t *ranked, RungError *err)
{
    if (count(s, "SELECT count(*) FROM trials WHERE experiment_id = ? AND best_value IS NOT NULL",
              exp_id, 0, ranked, err))
        return err->code;
    if (*ranked <= best)
        return 0;
    sqlite3_stmt *st;
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
    sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, exp_id);
    sqlite3_bind_int64(st, 3, best);
    int64_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (curve_item(st, 3, n == 0, out))
            n++;
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "curves");
}

/* ---- workers ---- */

#define WORKERS_SHOWN                                                                              \
    " FROM workers WHERE last_seen_at >= ?1 OR id IN (SELECT worker_id FROM trials WHERE "         \
    "state = 'running') "

int store_read_workers(Store *s, int64_t seen_since, int64_t limit, int64_t offset, json_t **items,
                       int64_t *total, RungError *err)
{
    if (count(s, "SELECT count(*)" WORKERS_SHOWN, seen_since, 0, total, err))
        return err->code;
    sqlite3_stmt *st;
    if (prepare(s,
                "SELECT id, name, hostname, gpus, cpus, registered_at, last_seen_at, heartbeat, "
                "labels" WORKERS_SHOWN "ORDER BY id LIMIT ?2 OFFSET ?3",
                &st, err))
        return err->code;
    sqlite3_bind_int64(st, 1, seen_since);
    sqlite3_bind_int64(st, 2, limit);
    sqlite3_bind_int64(st, 3, offset);
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *gpus = column_json(st, 3);
        json_t *hb = column_json(st, 7);
        json_array_append_new(arr,
                              json_pack("{s:I, s:s, s:s, s:o, s:I, s:o, s:o, s:o}", "id",
                                        (json_int_t)sqlite3_column_int64(st, 0), "name",
                                        (const char *)sqlite3_column_text(st, 1), "hostname",
                                        (const char *)sqlite3_column_text(st, 2), "gpus",
                                        gpus ? gpus : json_array(), "cpus",
                                        (json_int_t)sqlite3_column_int64(st, 4), "registered_at",
                                        view_time(sqlite3_column_int64(st, 5)), "last_seen_at",
                                        view_time(sqlite3_column_int64(st, 6)), "heartbeat",
                                        hb ? hb : json_null()));
        json_t *labels = column_json(st, 8);
        json_object_set_new(json_array_get(arr, json_array_size(arr) - 1), "labels",
                            labels ? labels : json_object());
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return db_error(s, err, "workers");
    }
    *items = arr;
    return 0;
}

/* ---- warm_start ---- */

/* Whether the source's search_space (its stored spec) has every parameter
 * of spec's; else the error names the first missing one. */
static int warm_check_space(int64_t source, const json_t *src_spec, const Spec *spec,
                            RungError *err)
{
    /* Parameter paths, not the spec's keys: sub-spaces flatten to them. */
    Space *src = NULL;
    RungError ignored;
    if (space_parse(json_object_get(src_spec, "search_space"), &src, &ignored) != 0)
        src = NULL;
    for (int i = 0; i < space_param_count(spec->space); i++) {
        const char *name = space_param_name(spec->space, i);
        if (src == NULL || !space_has_param(src, name)) {
            space_free(src);
            return rung_error_set(err, RUNG_E_INVALID_SPEC, "warm_start.experiment",
                                  "warm_start.experiment: experiment %lld has no parameter "
                                  "\"%s\" in its search_space",
                                  (long long)source, name);
        }
    }
    space_free(src);
    return 0;
}

/* At submission: the source exists, has ended, nothing of it can change,
 * and it has every parameter of spec. */
static int warm_check_source(Store *s, int64_t source, const Spec *spec, RungError *err)
{
    const char *field = "warm_start.experiment";
    sqlite3_stmt *st;
    if (prepare(s,
                "SELECT state, spec, (SELECT count(*) FROM trials WHERE experiment_id = ?1 AND "
                "state IN ('pending', 'running', 'paused')) FROM experiments WHERE id = ?1",
                &st, err))
        return err->code;
    sqlite3_bind_int64(st, 1, source);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return db_error(s, err, "warm_start");
        return rung_error_set(err, RUNG_E_INVALID_SPEC, field,
                              "warm_start.experiment: experiment %lld not found",
                              (long long)source);
    }
    const char *state = (const char *)sqlite3_column_text(st, 0);
    json_t *src_spec = column_json(st, 1);
    int64_t unfinished = sqlite3_column_int64(st, 2);
    if (state == NULL || (strcmp(state, "completed") != 0 && strcmp(state, "canceled") != 0 &&
                          strcmp(state, "failed") != 0))
        rc = rung_error_set(err, RUNG_E_INVALID_SPEC, field,
                            "warm_start.experiment: experiment %lld is %s; only an experiment "
                            "that has ended (completed, canceled or failed) can warm-start "
                            "another",
                            (long long)source, state ? state : "in an unknown state");
    else if (unfinished > 0)
        rc = rung_error_set(err, RUNG_E_INVALID_SPEC, field,
                            "warm_start.experiment: experiment %lld has ended, but %lld of its "
                            "trials have not stopped yet",
                            (long long)source, (long long)unfinished);
    else
        rc = warm_check_space(source, src_spec, spec, err);
    json_decref(src_spec);
    sqlite3_finalize(st);
    return rc;
}

int store_read_warm(Store *s, Spec *spec, int64_t before, bool check, Warm **out, RungError *err)
{
    *out = NULL;
    int64_t source = spec->warm_start_exp;
    if (check && warm_check_source(s, source, spec, err))
        return err->code;
    sqlite3_stmt *st;
    if (prepare(s,
                "SELECT state, config, last_metrics FROM trials WHERE experiment_id = ? AND "
                "state IN ('completed', 'stopped', 'failed') AND (ended_at IS NULL OR "
                "ended_at <= ?) ORDER BY number",
                &st, err))
        return err->code;
    sqlite3_bind_int64(st, 1, source);
    sqlite3_bind_int64(st, 2, before);
    Warm *w = warm_new(spec, source);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        TrialState state;
        if (trial_state_parse((const char *)sqlite3_column_text(st, 0), &state) != 0)
            continue;
        json_t *config = column_json(st, 1);
        json_t *last = column_json(st, 2);
        warm_add(w, spec, state, config, last);
        json_decref(config);
        json_decref(last);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        warm_free(w);
        return db_error(s, err, "warm_start trials");
    }
    if (warm_seal(w, spec, err) != 0) {
        warm_free(w);
        return err->code;
    }
    *out = w;
    return 0;
}

int store_read_warm_attach(Store *s, Experiment *e, RungError *err)
{
    if (e->spec.warm_start_exp <= 0 || e->warm != NULL)
        return 0;
    RungError why;
    rung_error_clear(&why);
    if (store_read_warm(s, &e->spec, e->created_at, false, &e->warm, &why) == 0)
        return 0;
    if (why.code == RUNG_E_INVALID_SPEC)
        return 0; /* the source changed since (warm.h): e runs without */
    *err = why;
    return err->code;
}
