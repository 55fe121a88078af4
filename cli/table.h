/* table.h: aligned text tables for people.
 *
 * Owns column widths and printing. Cells are copied in; the table is printed
 * once complete (the answers shown as tables are small: communicators,
 * collectives of a window, stats buckets). A column named in the spec but
 * absent from a JSON row shows "-". An instant ("start_ns") the row also
 * has as a UTC string ("start_utc", docs/api.md) shows that string.
 */
#ifndef NCCLSCOPE_CLI_TABLE_H
#define NCCLSCOPE_CLI_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include "json.h"
#include "units.h"

typedef struct nsc_col {
    const char *key;     /* JSON member */
    const char *header;  /* NULL: the key in capitals, less its unit (_ns, _gbps) unless raw */
} nsc_col;

typedef struct nsc_table nsc_table;

/* Numbers in units for people, or as the source sent them (units.h); u is
 * kept by reference (a header read later may set its wall clock). */
nsc_table *nsc_table_new(const nsc_col *cols, size_t ncols, const nsc_units *u);
/* A row from a JSON object: each column's member rendered as text. */
int nsc_table_add_json(nsc_table *t, const nsc_json *obj);
/* A row of given cells (ncols of them). */
int nsc_table_add(nsc_table *t, const char *const *cells);
/* Print the rows ordered by the column `name` (its key, or its header in
 * any case: "duration", "DURATION_NS"; NULL: as added), numbers largest
 * first and text A to Z, and at most top of them (0: all). Call before
 * adding rows. -1: no such column, and `names` lists the columns. */
int nsc_table_order(nsc_table *t, const char *name, size_t top, char *names, size_t cap);
size_t nsc_table_rows(const nsc_table *t);
void nsc_table_print(const nsc_table *t, FILE *f);
void nsc_table_free(nsc_table *t);

/* A JSON scalar as text ("-" for missing or null, nested values as "...");
 * a number in the unit its member name says, unless u->raw. */
void nsc_json_cell(const nsc_json *v, const nsc_units *u, char *buf, size_t cap);

#endif
