/* Text tables for the rung client; see table.h. */
#include "table.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/* Longest cell text kept: a cell is one value or a short list, and a table
 * is read on a terminal. */
#define CELL_MAX 1024
/* Columns of one table: parameters of a search space are bounded by the
 * daemon, and a table wider than this is unreadable anyway. */
#define COLUMNS_MAX 256

typedef struct {
    char *header;
    CliAlign align;
    int max_width; /* cap in columns, 0 = none */
} Column;

struct CliTable {
    Column cols[COLUMNS_MAX];
    int n_cols;
    char **cells; /* row-major, n_cells of them */
    size_t n_cells;
    size_t cap_cells;
};

CliTable *cli_table_new(void)
{
    CliTable *t = cli_xmalloc(sizeof *t);
    memset(t, 0, sizeof *t);
    return t;
}

void cli_table_free(CliTable *t)
{
    if (t == NULL)
        return;
    for (int c = 0; c < t->n_cols; c++)
        free(t->cols[c].header);
    for (size_t i = 0; i < t->n_cells; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

void cli_table_column(CliTable *t, const char *header, CliAlign align, int max_width)
{
    if (t->n_cols >= COLUMNS_MAX || t->n_cells > 0)
        return; /* a programming error; the table stays printable */
    char clean[CELL_MAX];
    cli_fmt_sanitize(header, clean, sizeof clean, false);
    t->cols[t->n_cols++] = (Column){cli_xstrdup(clean), align, max_width};
}

void cli_table_cell(CliTable *t, const char *text)
{
    if (t->n_cols == 0)
        return;
    if (t->n_cells == t->cap_cells) {
        t->cap_cells = t->cap_cells ? 2 * t->cap_cells : 64;
        t->cells = cli_xrealloc(t->cells, t->cap_cells * sizeof *t->cells);
    }
    char clean[CELL_MAX];
    cli_fmt_sanitize(text ? text : "", clean, sizeof clean, true);
    t->cells[t->n_cells++] = cli_xstrdup(clean);
}

void cli_table_cellf(CliTable *t, const char *fmt, ...)
{
    char buf[CELL_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cli_table_cell(t, buf);
}

int cli_table_rows(const CliTable *t)
{
    return t->n_cols ? (int)((t->n_cells + (size_t)t->n_cols - 1) / (size_t)t->n_cols) : 0;
}

/* The cell at (row, col), "" past the last cell of a short last row. */
static const char *cell_at(const CliTable *t, int row, int col)
{
    size_t i = (size_t)row * (size_t)t->n_cols + (size_t)col;
    return i < t->n_cells ? t->cells[i] : "";
}

/* Line `k` of a multi-line cell: its start and length; false past the end. */
static bool cell_line(const char *cell, int k, const char **start, size_t *len)
{
    const char *p = cell;
    for (int i = 0; i < k; i++) {
        p = strchr(p, '\n');
        if (p == NULL)
            return false;
        p++;
    }
    const char *end = strchr(p, '\n');
    *start = p;
    *len = end ? (size_t)(end - p) : strlen(p);
    return true;
}

static int cell_lines(const char *cell)
{
    int n = 1;
    for (const char *p = cell; *p; p++)
        n += *p == '\n';
    return n;
}

/* Shown width of one line of a cell under the column's cap. */
static size_t shown_width(const Column *col, const char *s, size_t len)
{
    size_t w = cli_fmt_width(s, len);
    return col->max_width > 0 && w > (size_t)col->max_width ? (size_t)col->max_width : w;
}

static bool is_number(const char *s)
{
    if (s[0] == '\0' || strcmp(s, "-") == 0)
        return true; /* empty and "-" cells do not make a column textual */
    char *end;
    strtod(s, &end);
    return *end == '\0';
}

static void pad(FILE *out, size_t n, char c)
{
    for (size_t i = 0; i < n; i++)
        fputc(c, out);
}

/* Writes one line of a cell, cut to the column's cap with "…", aligned in
 * `width` columns. */
static void put_cell(FILE *out, const Column *col, bool right, const char *s, size_t len,
                     size_t width)
{
    size_t w = cli_fmt_width(s, len);
    bool cut = col->max_width > 0 && w > (size_t)col->max_width;
    if (cut) {
        len = cli_fmt_prefix(s, len, (size_t)col->max_width - 1);
        w = (size_t)col->max_width;
    }
    if (right)
        pad(out, width - w, ' ');
    fwrite(s, 1, len, out);
    if (cut)
        fputs("…", out);
    if (!right)
        pad(out, width - w, ' ');
}

/* A horizontal rule: "+---+---+" around the table, "|---+---|" under the
 * header (the psql look that Ray Tune's reporter prints). */
static void rule(FILE *out, const size_t *widths, int n, char edge)
{
    fputc(edge, out);
    for (int c = 0; c < n; c++) {
        pad(out, widths[c] + 2, '-');
        fputc(c == n - 1 ? edge : '+', out);
    }
    fputc('\n', out);
}

/* One row (the header when row < 0), every line of it. */
static void print_row(const CliTable *t, FILE *out, CliTableStyle style, const size_t *widths,
                      const bool *right, int row)
{
    int height = 1;
    for (int c = 0; c < t->n_cols && row >= 0; c++) {
        int h = cell_lines(cell_at(t, row, c));
        height = h > height ? h : height;
    }
    /* A plain line goes through a buffer so that its trailing blanks (the
     * gap before an empty last cell) can be left out. */
    FILE *const dest = out;
    char *line = NULL;
    size_t line_size = 0;
    for (int k = 0; k < height; k++) {
        if (style == CLI_TABLE_PLAIN && (out = open_memstream(&line, &line_size)) == NULL)
            out = dest;
        if (style == CLI_TABLE_BOXED)
            fputs("| ", out);
        for (int c = 0; c < t->n_cols; c++) {
            const char *s = "";
            size_t len = 0;
            if (row < 0) {
                s = t->cols[c].header;
                len = strlen(s);
            } else if (!cell_line(cell_at(t, row, c), k, &s, &len)) {
                s = "";
                len = 0;
            }
            bool last = c == t->n_cols - 1;
            /* Plain tables leave no trailing blanks after a left-aligned last
             * column, so `rung ls | cat -A` stays clean. */
            size_t width = last && style == CLI_TABLE_PLAIN && !right[c]
                               ? shown_width(&t->cols[c], s, len)
                               : widths[c];
            put_cell(out, &t->cols[c], right[c], s, len, width);
            if (style == CLI_TABLE_BOXED)
                fputs(last ? " |" : " | ", out);
            else if (!last)
                fputs("  ", out);
        }
        if (out != dest) {
            fclose(out);
            out = dest;
            while (line_size > 0 && line[line_size - 1] == ' ')
                line_size--;
            fwrite(line, 1, line_size, out);
            free(line);
            line = NULL;
        }
        fputc('\n', out);
    }
}

void cli_table_print(const CliTable *t, FILE *out, CliTableStyle style)
{
    if (t->n_cols == 0)
        return;
    size_t widths[COLUMNS_MAX];
    bool right[COLUMNS_MAX];
    int rows = cli_table_rows(t);
    for (int c = 0; c < t->n_cols; c++) {
        const Column *col = &t->cols[c];
        widths[c] = shown_width(col, col->header, strlen(col->header));
        bool numeric = true;
        for (int r = 0; r < rows; r++) {
            const char *cell = cell_at(t, r, c);
            const char *s;
            size_t len;
            for (int k = 0; cell_line(cell, k, &s, &len); k++) {
                size_t w = shown_width(col, s, len);
                widths[c] = w > widths[c] ? w : widths[c];
            }
            numeric = numeric && is_number(cell);
        }
        right[c] = col->align == CLI_ALIGN_RIGHT || (col->align == CLI_ALIGN_AUTO && numeric);
    }
    if (style == CLI_TABLE_BOXED)
        rule(out, widths, t->n_cols, '+');
    print_row(t, out, style, widths, right, -1);
    if (style == CLI_TABLE_BOXED)
        rule(out, widths, t->n_cols, '|');
    for (int r = 0; r < rows; r++)
        print_row(t, out, style, widths, right, r);
    if (style == CLI_TABLE_BOXED)
        rule(out, widths, t->n_cols, '+');
}
