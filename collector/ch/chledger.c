/* chledger.c: the ledger_recs table's record columns from event_fields.h
 * (see chledger.h).
 *
 * The column list is made once at run time from a table of every row of
 * NSC_FIELDS_LEDGER and NSC_FIELDS_LEDGER_EDGE (name, place in its struct,
 * size, signedness); the values are read from the record and its edges
 * through the same table, so the columns and the values cannot disagree. */
#include "chledger.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "bytes.h"
#include "chorigin.h"
#include "event_fields.h"

typedef struct field {
    const char *name;
    size_t offset;
    uint8_t size, is_signed;
} field;

/* A string field is its id (NSC_VAL_STR): unsigned. */
#define FIELD_OF(type, kind, m) {#m, offsetof(type, m), sizeof(NSC_CTYPE_##kind), NSC_VAL_##kind == NSC_VAL_SIGNED},
#define REC_FIELD(a, kind, m, doc) FIELD_OF(nsc_ledger_rec, kind, m)
#define EDGE_FIELD(a, kind, m, doc) FIELD_OF(nsc_ledger_edge, kind, m)

static const field rec_fields[] = {NSC_FIELDS_LEDGER(REC_FIELD, _)};
static const field edge_fields[] = {NSC_FIELDS_LEDGER_EDGE(EDGE_FIELD, _)};
#define NREC (sizeof rec_fields / sizeof rec_fields[0])
#define NEDGE (sizeof edge_fields / sizeof edge_fields[0])

#define EDGE "edge_"
/* Every field's name with the longest type, an edge's prefixed and inside Array(). */
#define NAME_ROOM(a, kind, m, doc) +sizeof(EDGE #m ", Array(UInt64)")
enum {
    COLUMNS_ROOM = sizeof(NSC_CH_PROC_COLUMNS ", " NSC_CH_ORIGIN_COLUMNS) NSC_FIELDS_LEDGER(NAME_ROOM, _)
        NSC_FIELDS_LEDGER_EDGE(NAME_ROOM, _)
};

static struct {
    pthread_once_t once;
    char text[COLUMNS_ROOM], names[COLUMNS_ROOM];
} ch = {.once = PTHREAD_ONCE_INIT};

/* ", name [U]IntN" appended to ch.text, "name" to ch.names; an edge's:
 * ", edge_name Array(...)" (a record and its edges share names: peer, bytes). */
static void add_column(const field *f, int edge)
{
    size_t n = strlen(ch.text), m = strlen(ch.names);
    snprintf(ch.text + n, sizeof ch.text - n, ", %s%s %s%sInt%d%s", edge ? EDGE : "", f->name, edge ? "Array(" : "",
             f->is_signed ? "" : "U", 8 * f->size, edge ? ")" : "");
    snprintf(ch.names + m, sizeof ch.names - m, "%s%s%s", m ? ", " : "", edge ? EDGE : "", f->name);
}

static void make_columns(void)
{
    strcpy(ch.text, NSC_CH_PROC_COLUMNS);
    for (size_t i = 0; i < NREC; i++)
        add_column(&rec_fields[i], 0);
    for (size_t i = 0; i < NEDGE; i++)
        add_column(&edge_fields[i], 1);
    strcat(ch.text, ", " NSC_CH_ORIGIN_COLUMNS);
}

const char *nsc_ch_ledger_columns(void)
{
    pthread_once(&ch.once, make_columns);
    return ch.text;
}

const char *nsc_ch_ledger_names(void)
{
    pthread_once(&ch.once, make_columns);
    return ch.names;
}

void nsc_ch_ledger_values(nsc_ch_cols *t, const nsc_ledger_rec *r)
{
    for (size_t i = 0; i < NREC; i++)
        nsc_ch_put_uint(t, nsc_load_uint((const uint8_t *)r + rec_fields[i].offset, rec_fields[i].size),
                        rec_fields[i].size);
    for (size_t i = 0; i < NEDGE; i++) {
        for (uint32_t e = 0; e < r->nedges; e++)
            nsc_ch_put_elem(t, nsc_load_uint((const uint8_t *)&r->edges[e] + edge_fields[i].offset, edge_fields[i].size),
                            edge_fields[i].size);
        nsc_ch_end_array(t);
    }
}

/* Edge field f of n edges from the Array's elements at p into edges. */
static void read_edges(const uint8_t *p, size_t n, const field *f, nsc_ledger_edge *edges)
{
    for (size_t e = 0; e < n; e++)
        nsc_store_uint((uint8_t *)&edges[e] + f->offset, f->size, nsc_get_le(p + e * f->size, f->size));
}

size_t nsc_ch_ledger_read(const uint8_t *p, size_t len, nsc_ledger_rec *r, nsc_ledger_edge *edges, size_t cap)
{
    const uint8_t *q = p, *end = p + len;
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < NREC; q += rec_fields[i++].size) {
        if ((size_t)(end - q) < rec_fields[i].size)
            return 0;
        nsc_store_uint((uint8_t *)r + rec_fields[i].offset, rec_fields[i].size, nsc_get_le(q, rec_fields[i].size));
    }
    for (size_t i = 0; i < NEDGE; i++) {
        size_t n;
        /* every edge Array has the record's edges: the first says how many */
        if (nsc_ch_take_varint(&q, end, &n) || (i && n != r->nedges) || n > UINT32_MAX ||
            (size_t)(end - q) / edge_fields[i].size < n)
            return 0;
        r->nedges = (uint32_t)n;
        if (n <= cap && i == 0)
            memset(edges, 0, n * sizeof *edges);
        if (n <= cap)
            read_edges(q, n, &edge_fields[i], edges);
        q += n * edge_fields[i].size;
    }
    /* more edges than cap: none kept, which the store refuses like an oversized record */
    r->edges = r->nedges && r->nedges <= cap ? edges : NULL;
    return (size_t)(q - p);
}

int nsc_ch_ledger_ended(const nsc_ledger_rec *r)
{
    return !(r->flags & NSC_CH_LEDGER_ENDED_FLAGS) && r->gpu_start_ns != 0 && r->nchannels_done >= r->nchannels;
}
