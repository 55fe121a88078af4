/* table.c: aligned text tables (see table.h). */
#include "table.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grow.h"

#define CELL 96

struct nsc_table {
    const nsc_col *cols;
    size_t ncols;
    char (*cells)[CELL];  /* rows * ncols */
    size_t rows, cap;
    const nsc_units *u;
    char (*head)[CELL];  /* ncols headers */
    int order;           /* the column rows are printed by; -1: as added */
    size_t top;          /* rows printed at most; 0: all */
    double *num;         /* per row: the order column's number (NAN: text) */
    size_t num_cap;
};

/* A column's header: given, or made from its key (see nsc_col). */
static void header(const nsc_col *col, int raw, char *buf)
{
    if (col->header) {
        snprintf(buf, CELL, "%s", col->header);
        return;
    }
    size_t n = strlen(col->key);
    nsc_unit u = nsc_unit_of(col->key, n);
    if (!raw && (u == NSC_UNIT_NS || u == NSC_UNIT_INSTANT) && n > 3 && strcmp(col->key + n - 3, "_ns") == 0)
        n -= 3;
    else if (!raw && u == NSC_UNIT_GBPS && n > 5 && strcmp(col->key + n - 5, "_gbps") == 0)
        n -= 5;
    size_t i = 0;
    for (; i < n && i + 1 < CELL; i++)
        buf[i] = (char)toupper((unsigned char)col->key[i]);
    buf[i] = 0;
}

nsc_table *nsc_table_new(const nsc_col *cols, size_t ncols, const nsc_units *u)
{
    nsc_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->head = calloc(ncols ? ncols : 1, CELL);
    if (!t->head) {
        free(t);
        return NULL;
    }
    t->cols = cols;
    t->ncols = ncols;
    t->u = u;
    t->order = -1;
    for (size_t i = 0; i < ncols; i++)
        header(&cols[i], u->raw, t->head[i]);
    return t;
}

void nsc_json_cell(const nsc_json *v, const nsc_units *u, char *buf, size_t cap)
{
    nsc_unit unit = v && v->kind == NSC_JSON_NUMBER && !u->raw ? nsc_unit_of(v->key, v->key_len) : NSC_UNIT_NONE;
    if (!v || v->kind == NSC_JSON_NULL)
        snprintf(buf, cap, "-");
    else if (unit != NSC_UNIT_NONE)
        nsc_fmt_unit(u, unit, strtod(v->text, NULL), buf, cap);
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

int nsc_table_order(nsc_table *t, const char *name, size_t top, char *names, size_t cap)
{
    char human[CELL];
    size_t used = 0;
    t->top = top;
    for (size_t i = 0; name && i < t->ncols; i++) {
        header(&t->cols[i], 0, human);
        if (strcmp(t->cols[i].key, name) == 0 || strcasecmp(t->head[i], name) == 0 || strcasecmp(human, name) == 0) {
            t->order = (int)i;
            return 0;
        }
        for (char *p = human; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        if (used < cap)
            used += (size_t)snprintf(names + used, cap - used, "%s%s", i ? ", " : "", human);
    }
    return name ? -1 : 0;
}

/* A new row's number in the order column, or NAN. */
static int keep_num(nsc_table *t, const nsc_json *v)
{
    if (t->order < 0)
        return 0;
    if (nsc_grow(&t->num, t->rows - 1, &t->num_cap, sizeof *t->num, 16))
        return -1;
    t->num[t->rows - 1] = v && v->kind == NSC_JSON_NUMBER ? strtod(v->text, NULL) : NAN;
    return 0;
}

/* The answer's own UTC string of instant key ("start_ns": "start_utc",
 * docs/api.md), shown as the API wrote it; NULL when it has none. */
static const nsc_json *api_utc(const nsc_json *obj, const char *key)
{
    char name[CELL];
    size_t n = strlen(key);
    if (nsc_unit_of(key, n) != NSC_UNIT_INSTANT || n < 3 || n + 2 > sizeof name)
        return NULL;
    snprintf(name, sizeof name, "%.*s_utc", (int)(n - 3), key);
    const nsc_json *v = nsc_json_get(obj, name);
    return v && v->kind == NSC_JSON_STRING ? v : NULL;
}

int nsc_table_add_json(nsc_table *t, const nsc_json *obj)
{
    char (*row)[CELL] = new_row(t);
    if (!row)
        return -1;
    for (size_t i = 0; i < t->ncols; i++) {
        const nsc_json *utc = t->u->raw ? NULL : api_utc(obj, t->cols[i].key);
        if (utc)
            snprintf(row[i], CELL, "%s", utc->text);
        else
            nsc_json_cell(nsc_json_get(obj, t->cols[i].key), t->u, row[i], CELL);
    }
    return keep_num(t, t->order < 0 ? NULL : nsc_json_get(obj, t->cols[t->order].key));
}

int nsc_table_add(nsc_table *t, const char *const *cells)
{
    char (*row)[CELL] = new_row(t);
    if (!row)
        return -1;
    for (size_t i = 0; i < t->ncols; i++)
        snprintf(row[i], CELL, "%s", cells[i]);
    return keep_num(t, NULL);
}

/* Rows by the order column: numbers largest first, then text A to Z; ties
 * as added. */
static int by_order(const void *a, const void *b, void *arg)
{
    const nsc_table *t = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    double nx = t->num[x], ny = t->num[y];
    int c;
    if (isnan(nx) != isnan(ny))
        c = isnan(nx) ? 1 : -1;
    else if (!isnan(nx) && nx != ny)
        c = nx > ny ? -1 : 1;
    else
        c = strcmp(t->cells[x * t->ncols + (size_t)t->order], t->cells[y * t->ncols + (size_t)t->order]);
    return c ? c : (x > y) - (x < y);
}

size_t nsc_table_rows(const nsc_table *t) { return t->rows; }

void nsc_table_print(const nsc_table *t, FILE *f)
{
    size_t *row = malloc((t->rows ? t->rows : 1) * sizeof *row);
    if (!row)
        return;
    for (size_t r = 0; r < t->rows; r++)
        row[r] = r;
    if (t->order >= 0)
        qsort_r(row, t->rows, sizeof *row, by_order, (void *)t);
    size_t n = t->top && t->top < t->rows ? t->top : t->rows;
    size_t w[32] = {0};
    size_t nc = t->ncols < 32 ? t->ncols : 32;
    for (size_t c = 0; c < nc; c++) {
        w[c] = strlen(t->head[c]);
        for (size_t r = 0; r < n; r++) {
            size_t l = strlen(t->cells[row[r] * t->ncols + c]);
            w[c] = l > w[c] ? l : w[c];
        }
    }
    for (size_t c = 0; c < nc; c++)
        fprintf(f, "%-*s%s", (int)w[c], t->head[c], c + 1 < nc ? "  " : "\n");
    for (size_t r = 0; r < n; r++)
        for (size_t c = 0; c < nc; c++)
            fprintf(f, "%-*s%s", (int)w[c], t->cells[row[r] * t->ncols + c], c + 1 < nc ? "  " : "\n");
    free(row);
}

void nsc_table_free(nsc_table *t)
{
    if (t) {
        free(t->cells);
        free(t->head);
        free(t->num);
    }
    free(t);
}
