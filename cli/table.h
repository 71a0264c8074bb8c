/* Text tables for the rung client.
 *
 * A table is built column by column, then cell by cell in row order, and
 * printed once all widths are known. Two looks: PLAIN (`docker ps` style,
 * easy to grep and cut) for listings, and BOXED (the psql look of Ray Tune's
 * CLIReporter) for `watch`. Cells are sanitized on the way in (see
 * cli_fmt_sanitize) and may hold several lines ('\n'), which is how a worker
 * shows one GPU per line. */
#ifndef RUNG_CLI_TABLE_H
#define RUNG_CLI_TABLE_H

#include <stdio.h>

typedef enum {
    CLI_ALIGN_LEFT,
    CLI_ALIGN_RIGHT,
    CLI_ALIGN_AUTO, /* right when every cell is a number, else left */
} CliAlign;

typedef enum { CLI_TABLE_PLAIN, CLI_TABLE_BOXED } CliTableStyle;

typedef struct CliTable CliTable;

/* New empty table (free with cli_table_free). */
CliTable *cli_table_new(void);
/* Accepts NULL. */
void cli_table_free(CliTable *t);

/* Adds a column; all columns come before the first cell. max_width caps
 * the cells (longer ones end in "…"); 0 means no cap. */
void cli_table_column(CliTable *t, const char *header, CliAlign align, int max_width);

/* Appends a cell to the current row; a row is full after one cell per
 * column and the next cell starts a new one. text is copied. */
void cli_table_cell(CliTable *t, const char *text);
void cli_table_cellf(CliTable *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Rows added so far. */
int cli_table_rows(const CliTable *t);

void cli_table_print(const CliTable *t, FILE *out, CliTableStyle style);

#endif
