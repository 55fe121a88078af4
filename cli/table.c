/* table.c: aligned text tables (see table.h). */
#include "table.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define CELL 96

struct nsc_table {
    const nsc_col *cols;
    size_t ncols;
    char (*cells)[CELL];  /* rows * ncols */
    size_t rows, cap;
};

nsc_table *nsc_table_new(const nsc_col *cols, size_t ncols)
{
    nsc_table *t = calloc(1, sizeof *t);
    if (t) {
        t->cols = cols;
        t->ncols = ncols;
    }
    return t;
}

void nsc_json_cell(const nsc_json *v, char *buf, size_t cap)
{
    if (!v || v->kind == NSC_JSON_NULL)
        snprintf(buf, cap, "-");
    else if (v->kind == NSC_JSON_STRING || v->kind == NSC_JSON_NUMBER)
        snprintf(buf, cap, "%s", v->text);
    else if (v->kind == NSC_JSON_TRUE || v->kind == NSC_JSON_FALSE)
        snprintf(buf, cap, "%s", v->kind == NSC_JSON_TRUE ? "yes" : "no");
    else
        snprintf(buf, cap, "...");
}

static char (*new_row(nsc_table *t))[CELL]
{
    if (nsc_grow(&t->cells, t->rows, &t->cap, t->ncols * CELL, 16))
        return NULL;
    return t->cells + t->rows++ * t->ncols;
}

int nsc_table_add_json(nsc_table *t, const nsc_json *obj)
{
    char (*row)[CELL] = new_row(t);
    if (!row)
        return -1;
    for (size_t i = 0; i < t->ncols; i++)
        nsc_json_cell(nsc_json_get(obj, t->cols[i].key), row[i], CELL);
    return 0;
}

int nsc_table_add(nsc_table *t, const char *const *cells)
{
    char (*row)[CELL] = new_row(t);
    if (!row)
        return -1;
    for (size_t i = 0; i < t->ncols; i++)
        snprintf(row[i], CELL, "%s", cells[i]);
    return 0;
}

size_t nsc_table_rows(const nsc_table *t) { return t->rows; }

void nsc_table_print(const nsc_table *t, FILE *f)
{
    size_t w[32] = {0};
    size_t nc = t->ncols < 32 ? t->ncols : 32;
    for (size_t c = 0; c < nc; c++) {
        w[c] = strlen(t->cols[c].header);
        for (size_t r = 0; r < t->rows; r++) {
            size_t l = strlen(t->cells[r * t->ncols + c]);
            w[c] = l > w[c] ? l : w[c];
        }
    }
    for (size_t c = 0; c < nc; c++)
        fprintf(f, "%-*s%s", (int)w[c], t->cols[c].header, c + 1 < nc ? "  " : "\n");
    for (size_t r = 0; r < t->rows; r++)
        for (size_t c = 0; c < nc; c++)
            fprintf(f, "%-*s%s", (int)w[c], t->cells[r * t->ncols + c], c + 1 < nc ? "  " : "\n");
}

void nsc_table_free(nsc_table *t)
{
    if (t)
        free(t->cells);
    free(t);
}
