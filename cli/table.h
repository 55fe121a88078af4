/* table.h: aligned text tables for people.
 *
 * Owns column widths and printing. Cells are copied in; the table is printed
 * once complete (the answers shown as tables are small: communicators,
 * collectives of a window, stats buckets). A column named in the spec but
 * absent from a JSON row shows "-".
 */
#ifndef NCCLSCOPE_CLI_TABLE_H
#define NCCLSCOPE_CLI_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include "json.h"

typedef struct nsc_col {
    const char *key;     /* JSON member */
    const char *header;
} nsc_col;

typedef struct nsc_table nsc_table;

nsc_table *nsc_table_new(const nsc_col *cols, size_t ncols);
/* A row from a JSON object: each column's member rendered as text. */
int nsc_table_add_json(nsc_table *t, const nsc_json *obj);
/* A row of given cells (ncols of them). */
int nsc_table_add(nsc_table *t, const char *const *cells);
size_t nsc_table_rows(const nsc_table *t);
void nsc_table_print(const nsc_table *t, FILE *f);
void nsc_table_free(nsc_table *t);

/* A JSON scalar as text ("-" for missing or null, nested values as "..."). */
void nsc_json_cell(const nsc_json *v, char *buf, size_t cap);

#endif
