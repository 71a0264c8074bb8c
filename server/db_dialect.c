/* SQLite's SQL on PostgreSQL (db_dialect.h): the migrations' types, and
 * the JSON functions of SQLite that the schema and the store's queries
 * call, written in PostgreSQL's SQL over jsonb. */
#include "db_dialect.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SQLite's scalar max and min, and its json_valid, json_type,
 * json_extract and json_each as their
 * callers here read them: json_valid a boolean (the CHECKs), json_type
 * SQLite's names (integer, real, text, true, false, null, array, object),
 * json_extract and json_each's value a string's text, a number's or a
 * container's JSON text, NULL for null, and 1 or 0 for true and false.
 * Paths are SQLite's subset that the store writes: $, .key, ."key", [N]. */
const char db_pg_prelude[] =
    /* SQLite's max and min of several arguments (PostgreSQL's GREATEST and
     * LEAST; its max and min of one are the aggregates). */
    "CREATE OR REPLACE FUNCTION max(a bigint, b bigint) RETURNS bigint\n"
    "LANGUAGE sql IMMUTABLE AS $$ SELECT GREATEST(a, b) $$;\n"
    "CREATE OR REPLACE FUNCTION min(a bigint, b bigint) RETURNS bigint\n"
    "LANGUAGE sql IMMUTABLE AS $$ SELECT LEAST(a, b) $$;\n"
    "CREATE OR REPLACE FUNCTION max(a double precision, b double precision)\n"
    "RETURNS double precision LANGUAGE sql IMMUTABLE AS $$ SELECT GREATEST(a, b) $$;\n"
    "CREATE OR REPLACE FUNCTION min(a double precision, b double precision)\n"
    "RETURNS double precision LANGUAGE sql IMMUTABLE AS $$ SELECT LEAST(a, b) $$;\n"
    "CREATE OR REPLACE FUNCTION json_valid(t text) RETURNS boolean\n"
    "LANGUAGE plpgsql IMMUTABLE AS $$\n"
    "BEGIN\n"
    "  IF t IS NULL THEN RETURN NULL; END IF;\n"
    "  PERFORM t::jsonb;\n"
    "  RETURN true;\n"
    "EXCEPTION WHEN others THEN RETURN false;\n"
    "END $$;\n"
    /* The schema's CHECKs call this one (db_pg_migration): plain SQL, which
     * PostgreSQL inlines, where json_valid's exception block costs a
     * subtransaction per row; invalid JSON is an error rather than false,
     * which refuses the row all the same. */
    "CREATE OR REPLACE FUNCTION rung_json_ok(t text) RETURNS boolean\n"
    "LANGUAGE sql IMMUTABLE AS $$ SELECT t IS NULL OR t::jsonb IS NOT NULL $$;\n"
    "CREATE OR REPLACE FUNCTION rung_json_kind(j jsonb) RETURNS text\n"
    "LANGUAGE sql IMMUTABLE AS $$\n"
    "  SELECT CASE jsonb_typeof(j)\n"
    "    WHEN 'number' THEN CASE WHEN j::text ~ '^-?[0-9]+$' THEN 'integer' ELSE 'real' END\n"
    "    WHEN 'boolean' THEN j::text WHEN 'string' THEN 'text' ELSE jsonb_typeof(j) END $$;\n"
    "CREATE OR REPLACE FUNCTION rung_json_value(j jsonb) RETURNS text\n"
    "LANGUAGE sql IMMUTABLE AS $$\n"
    "  SELECT CASE jsonb_typeof(j) WHEN 'string' THEN j #>> '{}' WHEN 'null' THEN NULL\n"
    "    WHEN 'boolean' THEN CASE WHEN j = 'true'::jsonb THEN '1' ELSE '0' END\n"
    "    ELSE j::text END $$;\n"
    "CREATE OR REPLACE FUNCTION rung_json_path(p text) RETURNS text[]\n"
    "LANGUAGE plpgsql IMMUTABLE AS $$\n"
    "DECLARE out text[] := '{}'; i int := 2; n int := length(p); c text; j int;\n"
    "BEGIN\n"
    "  IF left(p, 1) <> '$' THEN RAISE EXCEPTION 'bad JSON path: %', p; END IF;\n"
    "  WHILE i <= n LOOP\n"
    "    c := substr(p, i, 1);\n"
    "    IF c = '.' AND substr(p, i + 1, 1) = '\"' THEN\n"
    "      j := strpos(substr(p, i + 2), '\"');\n"
    "      IF j = 0 THEN RAISE EXCEPTION 'bad JSON path: %', p; END IF;\n"
    "      out := out || substr(p, i + 2, j - 1); i := i + 2 + j;\n"
    "    ELSIF c = '.' THEN\n"
    "      j := i + 1;\n"
    "      WHILE j <= n AND substr(p, j, 1) NOT IN ('.', '[') LOOP j := j + 1; END LOOP;\n"
    "      out := out || substr(p, i + 1, j - i - 1); i := j;\n"
    "    ELSIF c = '[' THEN\n"
    "      j := strpos(substr(p, i), ']');\n"
    "      IF j = 0 THEN RAISE EXCEPTION 'bad JSON path: %', p; END IF;\n"
    "      out := out || substr(p, i + 1, j - 2); i := i + j;\n"
    "    ELSE RAISE EXCEPTION 'bad JSON path: %', p; END IF;\n"
    "  END LOOP;\n"
    "  RETURN out;\n"
    "END $$;\n"
    "CREATE OR REPLACE FUNCTION json_type(t text) RETURNS text\n"
    "LANGUAGE sql IMMUTABLE AS $$ SELECT rung_json_kind(t::jsonb) $$;\n"
    "CREATE OR REPLACE FUNCTION json_type(t text, p text) RETURNS text\n"
    "LANGUAGE sql IMMUTABLE AS $$ SELECT rung_json_kind(t::jsonb #> rung_json_path(p)) $$;\n"
    "CREATE OR REPLACE FUNCTION json_extract(t text, p text) RETURNS text\n"
    "LANGUAGE sql IMMUTABLE AS $$ SELECT rung_json_value(t::jsonb #> rung_json_path(p)) $$;\n"
    "CREATE OR REPLACE FUNCTION json_each(t text)\n"
    "RETURNS TABLE (key text, value text, type text)\n"
    "LANGUAGE sql IMMUTABLE AS $$\n"
    "  SELECT e.key, rung_json_value(e.value), rung_json_kind(e.value)\n"
    "  FROM jsonb_each(CASE WHEN jsonb_typeof(t::jsonb) = 'object' THEN t::jsonb\n"
    "                       ELSE '{}'::jsonb END) e\n"
    "  UNION ALL\n"
    "  SELECT (a.i - 1)::text, rung_json_value(a.v), rung_json_kind(a.v)\n"
    "  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(t::jsonb) = 'array' THEN t::jsonb\n"
    "                                 ELSE '[]'::jsonb END) WITH ORDINALITY a(v, i) $$;\n";

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether sql[i..] starts with the words w, as whole words. */
static bool at_words(const char *sql, size_t i, const char *w)
{
    size_t n = strlen(w);
    if (strncmp(sql + i, w, n) != 0)
        return false;
    if (i > 0 && word_char(sql[i - 1]))
        return false;
    return !word_char(sql[i + n]);
}

char *db_pg_migration(const char *sql)
{
    /* SQLite's words, in the order tried (the longer first), and
     * PostgreSQL's. An INTEGER PRIMARY KEY is SQLite's rowid, which an
     * insert without the id numbers: a sequence's default here. */
    static const struct {
        const char *from, *to;
    } words[] = {
        {"INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY"},
        {"INTEGER", "BIGINT"},
        {"REAL", "DOUBLE PRECISION"},
        {"WITHOUT ROWID", ""},
        {"json_valid", "rung_json_ok"},
    };
    /* The text is written to a memory stream (open_memstream). */
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (f == NULL)
        abort();
    size_t i = 0;
    while (sql[i] != '\0') {
        size_t j = i;
        if (sql[i] == '\'' || sql[i] == '"') {
            char q = sql[i];
            j++;
            while (sql[j] != '\0' && !(sql[j] == q && sql[j + 1] != q))
                j += sql[j] == q ? 2 : 1;
            if (sql[j] != '\0')
                j++;
        } else if (sql[i] == '-' && sql[i + 1] == '-') {
            j += strcspn(sql + i, "\n");
        } else {
            bool done = false;
            for (size_t w = 0; w < sizeof words / sizeof words[0] && !done; w++) {
                if (at_words(sql, i, words[w].from)) {
                    fwrite(words[w].to, 1, strlen(words[w].to), f);
                    i += strlen(words[w].from);
                    done = true;
                }
            }
            if (done)
                continue;
            /* A column's REFERENCES t (c) is left out: SQLite takes a
             * table that is made later in the same migration (001's
             * trials name workers), PostgreSQL does not, and a rebuilt
             * table (below) would drop them anyway. rungd keeps the ids
             * consistent itself (docs/architecture.md, "The store's two
             * databases"). */
            if (at_words(sql, i, "REFERENCES")) {
                size_t k = i + strlen("REFERENCES");
                k += strspn(sql + k, " ");
                while (word_char(sql[k]))
                    k++;
                k += strspn(sql + k, " ");
                if (sql[k] == '(') {
                    const char *close = strchr(sql + k, ')');
                    k = close ? (size_t)(close - sql) + 1 : k;
                }
                i = k;
                continue;
            }
            /* A table dropped when a migration rebuilds it: the foreign
             * keys of other tables that name it go with it (SQLite's
             * follow the name to the new table; PostgreSQL's would stop
             * the drop). */
            if (at_words(sql, i, "DROP TABLE")) {
                size_t k = i + strlen("DROP TABLE");
                k += strspn(sql + k, " ");
                k += strcspn(sql + k, ";");
                fwrite(sql + i, 1, k - i, f);
                fwrite(" CASCADE", 1, 8, f);
                i = k;
                continue;
            }
            j = i + 1;
            while (word_char(sql[i]) && word_char(sql[j]))
                j++;
        }
        fwrite(sql + i, 1, j - i, f);
        i = j;
    }
    if (fclose(f) != 0)
        abort();
    return out;
}
