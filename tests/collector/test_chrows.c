/* test_chrows.c: the ClickHouse rows' values (collector/ch/chrows.c), each
 * table's row made a one-row Native block (collector/ch/chnative.c) whose
 * values, one per column, put end to end are the row in RowBinary, written
 * out by hand from ClickHouse's format: integers little-endian and fixed
 * width, a String as its LEB128 length then its bytes (the tests' texts are
 * shorter than 128: one length byte); and a buffer that must grow by more
 * than one doubling at once. Every table definition
 * ends its ordering key with the batch identity (or is keyed by a definition
 * or a version; a table with a row per section by the section's): what
 * folds a batch inserted twice. An event of every type, every field set to
 * its own value, read back from its row through the table's column list:
 * each common field lands in the column of its name, the type's own in
 * `fields` in the order of its list, then the origin's (only where it has
 * one). A section's states are one row, a field's values one Array. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "chevents.h"
#include "chledger.h"
#include "chnative.h"
#include "chrows.h"
#include "event_fields.h"

/* One Native String at *p (short: one length byte), *p moved past it. */
static size_t skip_text(const uint8_t **p)
{
    size_t len = **p;
    *p += 1 + len;
    return 1 + len;
}

/* The one row of table t in c as RowBinary, into *row (the values of its
 * one-row block in column order; a String with its length byte; an Array
 * of fewer than 128 elements: its one-byte length, then the elements). */
static void row_of(nsc_ch_cols *c, nsc_ch_table t, nsc_ch_buf *row)
{
    nsc_ch_buf block = {0};
    nsc_ch_native *n = nsc_ch_native_new();
    const nsc_ch_table_def d = nsc_ch_def(t);
    cr_assert_eq(c->rows, 1);
    cr_assert_eq(nsc_ch_native_block(n, &d, c, &block), 0, "%s: no block", d.name);
    const uint8_t *p = block.p, *end = block.p + block.len;
    size_t ncols = *p;
    p += 2;  /* the columns (fewer than 128), one row */
    for (size_t i = 0; i < ncols; i++) {
        skip_text(&p);
        const uint8_t *type = p + 1;
        size_t tl = skip_text(&p) - 1, w = 0, array = tl > 7 && !memcmp(type, "Array(", 6);
        if (array)
            type += 6, tl -= 7;
        if (tl == 6 && !memcmp(type, "String", 6))
            w = 1 + *p;
        else if (sscanf((const char *)type + (type[0] == 'I' ? 3 : 4), "%zu", &w) == 1)
            w /= 8;
        else
            cr_assert_fail("type %.*s", (int)tl, (const char *)type);
        if (array) {
            uint64_t count;
            memcpy(&count, p, 8);
            cr_assert_lt(count, 128);
            *nsc_ch_room(row, 1) = (uint8_t)count;
            p += 8, w *= count;
        }
        memcpy(nsc_ch_room(row, w), p, w);
        p += w;
    }
    cr_assert_eq(p, end);
    nsc_ch_native_free(n);
    free(block.p);
}

static void free_tabs(nsc_ch_cols *tabs)
{
    for (int t = 0; t < NSC_CH_NTABLES; t++)
        nsc_ch_cols_free(&tabs[t]);
}

Test(chrows, life_row_bytes)
{
    nsc_ch_cols c = {0};
    nsc_ch_buf b = {0};
    nsc_store_life l = {.pid = 0x01020304, .event = 1, .reason = 0, .ts_ns = 5, .ref_ns = 6, .last_batch_seq = 7};
    strcpy(l.job, "j");
    strcpy(l.host, "hh");
    nsc_ch_origin o = {"ag", 9, 10, 2};
    nsc_ch_rows_life(&c, &o, &l);
    row_of(&c, NSC_CH_LIFECYCLE, &b);
    static const uint8_t want[] = {
        1, 'j', 2, 'h', 'h', 4, 3, 2, 1, 1, 0,  /* job, host, pid, event, reason */
        5, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0,
        2, 'a', 'g', 9, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, /* agent, epoch, batch_seq */
        2, 0, 0, 0, 2, 0, 0, 0};  /* section = idx = the record's index */
    cr_assert_eq(b.len, sizeof want);
    cr_assert_arr_eq(b.p, want, sizeof want);
    nsc_ch_cols_free(&c);
    free(b.p);
}

/* Text fields are fixed arrays that may lack their NUL: at most the array is
 * sent, its length in front. */
Test(chrows, unterminated_texts)
{
    nsc_ch_cols c = {0};
    nsc_ch_buf b = {0}, strs = {0};
    nsc_store_progress p = {.comm_id = 1, .rank = -1, .seq = 2, .ref_ns = 3};
    memset(p.job, 'x', sizeof p.job);  /* no NUL: at most the array is taken */
    strcpy(p.func, "AllReduce");
    nsc_ch_rows_progress(&c, &p);
    row_of(&c, NSC_CH_PROGRESS, &b);
    cr_assert_eq(b.p[0], 64);
    cr_assert_eq(b.p[65 + 8], 0xff);  /* rank -1 after job and comm_id */
    cr_assert_eq(b.len, 1 + 64 + 8 + 4 + 1 + 9 + 8 + 8);
    nsc_ch_cols_free(&c);
    free(b.p);
    nsc_str_def s = {.id = 3};
    memset(s.text, 'y', sizeof s.text);
    nsc_proc proc = {.pid = 1};
    memset(proc.job, 'z', 63);
    nsc_store_batch sb = {.proc = &proc, .strs = &s, .nstrs = 1};
    static nsc_ch_cols tabs[NSC_CH_NTABLES];
    nsc_ch_origin o = {"a", 0, 0, 0};
    nsc_ch_rows_section(tabs, &o, &sb);
    row_of(&tabs[NSC_CH_STRINGS], NSC_CH_STRINGS, &strs);
    cr_assert_eq(strs.p[0], 63);  /* job: 63 'z' then NUL */
    /* text: all 64, then the batch identity ("a", 0, 0, 0, index 0) */
    cr_assert_eq(strs.p[strs.len - 26 - 65], 64);
    cr_assert_eq(tabs[NSC_CH_BATCHES].rows, 1);
    cr_assert_eq(tabs[NSC_CH_EVENTS].rows, 0);
    free_tabs(tabs);
    free(strs.p);
}

Test(chrows, reserve_more_than_a_doubling)
{
    nsc_ch_buf b = {0};
    cr_assert_eq(nsc_ch_reserve(&b, 1000000), 0);
    cr_assert_geq(b.cap, 1000000);
    memset(b.p, 1, 1000000);  /* under ASan an undersized buffer fails here */
    b.len = 1000000;
    cr_assert_eq(nsc_ch_reserve(&b, 3000000), 0);
    cr_assert_geq(b.cap - b.len, 3000000);
    free(b.p);
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

Test(chrows, every_key_folds_a_batch_sent_again)
{
    for (int t = 0; t < NSC_CH_NTABLES; t++) {
        const nsc_ch_table_def def = nsc_ch_def(t), *d = &def;
        int identity = ends_with(d->order_by, "agent, epoch, batch_seq, section, idx");
        int per_section = ends_with(d->order_by, "agent, epoch, batch_seq, section") &&
                          ends_with(d->columns, "section UInt32");
        int definition = t == NSC_CH_CONTEXTS || t == NSC_CH_STRINGS;
        cr_assert(identity || per_section || definition || d->version[0], "%s: its key does not fold repeated rows",
                  d->name);
    }
}

/* Section sb of process pid (job "j", host "h", identity a 9 10 2) as the
 * row of table t (states or completions, the other without a row): want. */
static void section_row_is(nsc_store_batch *sb, uint32_t pid, nsc_ch_table t, const uint8_t *want, size_t len)
{
    nsc_proc proc = {.pid = pid};
    strcpy(proc.job, "j"), strcpy(proc.host, "h");
    sb->proc = &proc;
    static nsc_ch_cols tabs[NSC_CH_NTABLES];
    nsc_ch_origin o = {"a", 9, 10, 2};
    nsc_ch_rows_section(tabs, &o, sb);
    nsc_ch_buf b = {0};
    row_of(&tabs[t], t, &b);
    cr_assert_eq(b.len, len);
    cr_assert_arr_eq(b.p, want, len);
    cr_assert_eq(tabs[t == NSC_CH_STATES ? NSC_CH_COMPLETIONS : NSC_CH_STATES].rows, 0);
    free_tabs(tabs);
    free(b.p);
}

/* A section's states: one row, each field an Array of the section's
 * values in order, times and args as offsets from the smallest, then the
 * section's identity (no record index). */
Test(chrows, states_one_row_per_section)
{
    nsc_state_rec st[2] = {{.id = 1, .ts_ns = 2, .arg = 3, .tid = 4, .state = 5},
                           {.id = 6, .ts_ns = 7, .arg = 8, .tid = 9, .state = 10}};
    static const uint8_t want[] = {
        1, 'j', 1, 'h', 2, 1, 0, 0,                                           /* job, host, pid */
        2, 1, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0,                    /* id */
        2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 5, 0, 0, 0, 0,                 /* ts: base, offsets, none whole */
        3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 5, 0, 0, 0, 0,                 /* arg */
        2, 4, 0, 0, 0, 9, 0, 0, 0, 2, 5, 10,                                  /* tid, state */
        1, 'a', 9, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0}; /* agent .. section */
    section_row_is(&(nsc_store_batch){.states = st, .nstates = 2}, 0x0102, NSC_CH_STATES, want, sizeof want);
}

/* A section whose times lie further apart than 32 bits: the times whole,
 * no offsets. */
Test(chrows, completions_wide_where_offsets_do_not_fit)
{
    nsc_completion cp[2] = {{.id = 5, .ts_ns = 0x100000009ull}, {.id = 4, .ts_ns = 8}};
    static const uint8_t want[] = {
        1, 'j', 1, 'h', 3, 0, 0, 0,                                                    /* job, host, pid */
        2, 5, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,                             /* id */
        8, 0, 0, 0, 0, 0, 0, 0, 0, 2, 9, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, /* ts: base, whole */
        1, 'a', 9, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0};          /* agent .. section */
    section_row_is(&(nsc_store_batch){.completions = cp, .ncompletions = 2}, 3, NSC_CH_COMPLETIONS, want,
                   sizeof want);
}

/* A row read back by the column list: the name and value of each column
 * (strings: their length; an Array: its length, its elements in elems from
 * first on, the row's Arrays' end to end). */
typedef struct column {
    char name[32];
    int64_t value;
    size_t first;
} column;

static int64_t elems[64];

/* The integer of type ("UInt32", "Int8", ...) at row + *at, sign-extended;
 * *at moved past it. */
static int64_t read_int(const char *type, const uint8_t *row, size_t *at)
{
    int bits = 0, is_signed = type[0] == 'I';
    cr_assert_eq(sscanf(type + (is_signed ? 3 : 4), "%d", &bits), 1, "type %s", type);
    uint64_t v = 0;
    for (int i = 0; i < bits / 8; i++)
        v |= (uint64_t)row[*at + i] << (8 * i);
    *at += (size_t)bits / 8;
    if (is_signed && bits < 64 && v >> (bits - 1))
        v |= ~0ull << bits;  /* sign-extend */
    return (int64_t)v;
}

static size_t read_row(const char *columns, const uint8_t *row, size_t len, column *out, size_t max)
{
    size_t n = 0, at = 0, nelems = 0;
    char type[32];
    int used;
    for (const char *c = columns; n < max && sscanf(c, "%31s %31[^,]%n", out[n].name, type, &used) == 2; n++) {
        c += used + (c[used] == ',' ? 2 : 0);
        if (strcmp(type, "String") == 0) {
            out[n].value = row[at];  /* one length byte: the tests' texts are short */
            at += 1 + row[at];
        } else if (strncmp(type, "Array(", 6) == 0) {
            type[strlen(type) - 1] = 0;
            out[n].first = nelems;
            out[n].value = row[at++];  /* fewer than 128 elements: one length byte */
            for (int64_t i = 0; i < out[n].value; i++) {
                cr_assert_lt(nelems, sizeof elems / sizeof elems[0]);
                elems[nelems++] = read_int(type + 6, row, &at);
            }
        } else {
            out[n].value = read_int(type, row, &at);
        }
    }
    cr_assert_eq(at, len, "the row has %zu bytes, its columns %zu", len, at);
    return n;
}

static const column *column_of(const column *cols, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cols[i].name, name) == 0)
            return &cols[i];
    cr_assert_fail("no column %s", name);
    return NULL;
}

static int64_t value_of(const column *cols, size_t n, const char *name)
{
    return column_of(cols, n, name)->value;
}

/* Field k's value: its own, negative where signed, within the member's width. */
static int64_t distinct(int val, size_t size, int k)
{
    int64_t v = size == 1 ? k : 0x100 * k + 0x1000 * (size > 2) + (int64_t)(size > 4) * 0x100000000;
    return val == NSC_VAL_SIGNED ? -v : v;
}

#define SET(a, kind, m, wire, store, json, nccl) a.m = (NSC_CTYPE_##kind)distinct(NSC_VAL_##kind, sizeof a.m, ++k);
#define CHECK(a, kind, m, wire, store, json, nccl)                                \
    {                                                                             \
        cr_assert_neq(a.m, 0);                                                    \
        cr_assert_eq(value_of(cols, n, #m), (int64_t)a.m, "type %d: %s", t, #m); \
    }
#define CHECK_ELEM(a, kind, m, wire, store, json, nccl)                                      \
    {                                                                                        \
        cr_assert_neq(a.m, 0);                                                               \
        cr_assert_lt(at, nelems, "type %d: %s missing", t, #m);                              \
        cr_assert_eq(elems[at], (int64_t)a.m, "type %d: %s, element %zu", t, #m, at + 1); \
        at++;                                                                                \
    }
#define SET_TYPE(t, s, list) case t: list(SET, e.d.s) break;
#define CHECK_TYPE(t, s, list) case t: list(CHECK_ELEM, e.d.s) break;

static void round_trip(int t, int origin)
{
    nsc_event e;
    memset(&e, 0, sizeof e);  /* padding too: the read back is compared whole */
    e.type = (uint8_t)t;
    int k = 0;
    NSC_FIELDS_HEAD(SET, e)
    if (origin) {
        NSC_FIELDS_ORIGIN(SET, e)
    }
    switch (t) { NSC_EVENT_TYPES(SET_TYPE) }
    nsc_proc proc = {.pid = 77};
    strcpy(proc.job, "j"), strcpy(proc.host, "h");
    nsc_store_batch sb = {.proc = &proc, .events = &e, .nevents = 1};
    static nsc_ch_cols tabs[NSC_CH_NTABLES], tabs2[NSC_CH_NTABLES];  /* emptied again by free_tabs */
    nsc_ch_origin o = {"a", 1, 2, 3};
    nsc_ch_rows_section(tabs, &o, &sb);
    nsc_ch_buf rowbuf = {0}, row2 = {0};
    const nsc_ch_buf *row = &rowbuf;
    row_of(&tabs[NSC_CH_EVENTS], NSC_CH_EVENTS, &rowbuf);
    column cols[128];
    size_t n = read_row(nsc_ch_def(NSC_CH_EVENTS).columns, row->p, row->len, cols, 128);
    size_t at = 0, nelems = (size_t)value_of(cols, n, "fields");
    NSC_FIELDS_HEAD(CHECK, e)
    switch (t) { NSC_EVENT_TYPES(CHECK_TYPE) }
    if (origin) {
        NSC_FIELDS_ORIGIN(CHECK_ELEM, e)
    }
    cr_assert_eq(at, nelems, "type %d: %zu elements, %zu fields", t, nelems, at);
    cr_assert_eq(value_of(cols, n, "type"), t);
    cr_assert_eq(value_of(cols, n, "pid"), 77);
    cr_assert_eq(value_of(cols, n, "section"), 3);
    /* read back (after job "j", host "h", pid) and written again: the same bytes */
    nsc_event back;
    size_t used = nsc_ch_event_read(row->p + 8, row->len - 8, &back);
    cr_assert_eq(used, row->len - 8 - 26, "type %d: the values take %zu bytes", t, used);
    cr_assert_eq(nsc_ch_event_read(row->p + 8, used - 1, &back), 0);
    cr_assert_eq(memcmp(&back, &e, sizeof e), 0, "type %d: read back differs", t);
    nsc_store_batch again = {.proc = &proc, .events = &back, .nevents = 1};
    nsc_ch_rows_section(tabs2, &o, &again);
    row_of(&tabs2[NSC_CH_EVENTS], NSC_CH_EVENTS, &row2);
    cr_assert_eq(row2.len, row->len);
    cr_assert_eq(memcmp(row2.p, row->p, row->len), 0, "type %d: read back differs", t);
    free_tabs(tabs), free_tabs(tabs2);
    free(rowbuf.p), free(row2.p);
}

Test(chrows, every_field_in_its_place)
{
    for (int t = 0; t < NSC_T_COUNT; t++)
        round_trip(t, 0), round_trip(t, 1);
}

/* A ledger record, every field and every field of its two edges set to its
 * own value: one row of ledger_recs, each field in the column of its name,
 * edge i's fields element i of their Arrays (edge_NAME); the batch identity's idx is
 * the record's index in its batch. */
#define SET_LEDGER(a, kind, m, doc) a.m = (NSC_CTYPE_##kind)distinct(NSC_VAL_##kind, sizeof a.m, ++k);
#define CHECK_LEDGER(a, kind, m, doc)                           \
    {                                                           \
        cr_assert_neq(a.m, 0);                                  \
        cr_assert_eq(value_of(cols, n, #m), (int64_t)a.m, #m); \
    }
#define CHECK_EDGE(a, kind, m, doc)                                                           \
    {                                                                                         \
        const column *c = column_of(cols, n, "edge_" #m);                                             \
        cr_assert_eq(c->value, 2, "%s: %" PRId64 " edges", #m, c->value);                     \
        for (size_t i = 0; i < 2; i++)                                                        \
            cr_assert_eq(elems[c->first + i], (int64_t)a[i].m, "%s of edge %zu", #m, i);     \
    }

#define REC_SIZE(a, kind, m, doc) +sizeof(NSC_CTYPE_##kind)

/* ledger_recs' row (RowBinary) read back by nsc_ch_ledger_read, between
 * the process (job "j", host "h", pid: 8 bytes) and the batch identity
 * (agent "a", epoch, batch_seq, section, idx: 26 bytes): want's fields and
 * edges; every shorter input, edge Arrays of unequal lengths and more
 * edges than the room given are refused or kept out. */
static void read_back(const nsc_ch_buf *row, const nsc_ledger_rec *want)
{
    const uint8_t *p = row->p + 8;
    size_t len = row->len - 8 - 26;
    nsc_ledger_rec back;
    nsc_ledger_edge edges[2];
    cr_assert_eq(nsc_ch_ledger_read(p, len + 26, &back, edges, 2), len, "the values take their bytes alone");
    cr_assert_eq(back.nedges, 2);
    cr_assert_eq(back.edges, edges);
    cr_assert_eq(memcmp(edges, want->edges, sizeof edges), 0, "the edges read back differ");
    back.edges = want->edges;
    cr_assert_eq(memcmp(&back, want, sizeof back), 0, "the record read back differs");
    for (size_t cut = 0; cut < len; cut++)
        cr_assert_eq(nsc_ch_ledger_read(p, cut, &back, edges, 2), 0, "%zu of %zu bytes read", cut, len);
    cr_assert_eq(nsc_ch_ledger_read(p, len, &back, edges, 1), len);
    cr_assert(back.nedges == 2 && back.edges == NULL, "more edges than room: none kept, the count stays");
    uint8_t bad[512];
    cr_assert_lt(len, sizeof bad);
    memcpy(bad, p, len);
    /* after the record's fields, the first edge Array: its length, two peers (Int32) */
    size_t second = (0 NSC_FIELDS_LEDGER(REC_SIZE, _)) + 1 + 2 * sizeof(int32_t);
    cr_assert_eq(bad[second], 2, "the second edge Array's length");
    bad[second] = 1;
    cr_assert_eq(nsc_ch_ledger_read(bad, len, &back, edges, 2), 0, "edge Arrays of unequal lengths");
}

Test(chrows, ledger_record_every_field_in_its_place)
{
    nsc_ledger_rec recs[2];
    nsc_ledger_edge edges[2];
    memset(recs, 0, sizeof recs), memset(edges, 0, sizeof edges);
    int k = 0;
    NSC_FIELDS_LEDGER(SET_LEDGER, recs[1])
    NSC_FIELDS_LEDGER_EDGE(SET_LEDGER, edges[0])
    NSC_FIELDS_LEDGER_EDGE(SET_LEDGER, edges[1])
    recs[1].nedges = 2, recs[1].edges = edges;
    nsc_ledger_batch lb = {.pid = 77, .nrecs = 2, .recs = recs};
    nsc_proc proc = {.pid = 77};
    strcpy(proc.job, "j"), strcpy(proc.host, "h");
    static nsc_ch_cols tabs[NSC_CH_NTABLES];
    nsc_ch_origin o = {"a", 1, 2, 3};
    nsc_ch_rows_ledger(tabs, &o, &proc, "blob", 4, &lb);
    cr_assert_eq(tabs[NSC_CH_LEDGER].rows, 1, "the batch as it travelled: one row");
    cr_assert_eq(tabs[NSC_CH_LEDGER_RECS].rows, 2, "a row per record");
    const nsc_ch_cols *r = &tabs[NSC_CH_LEDGER_RECS];
    uint32_t idx[2];
    cr_assert_eq(r->col[r->ncols - 1].len, sizeof idx);
    memcpy(idx, r->col[r->ncols - 1].p, sizeof idx);
    cr_assert(idx[0] == 0 && idx[1] == 1, "idx: %u %u", idx[0], idx[1]);
    free_tabs(tabs);
    nsc_ch_buf row = {0};
    nsc_ch_rows_ledger(tabs, &o, &proc, "blob", 4, &(nsc_ledger_batch){.pid = 77, .nrecs = 1, .recs = &recs[1]});
    row_of(&tabs[NSC_CH_LEDGER_RECS], NSC_CH_LEDGER_RECS, &row);
    column cols[128];
    size_t n = read_row(nsc_ch_def(NSC_CH_LEDGER_RECS).columns, row.p, row.len, cols, 128);
    NSC_FIELDS_LEDGER(CHECK_LEDGER, recs[1])
    NSC_FIELDS_LEDGER_EDGE(CHECK_EDGE, edges)
    cr_assert_eq(value_of(cols, n, "pid"), 77);
    cr_assert_eq(value_of(cols, n, "section"), 3);
    read_back(&row, &recs[1]);
    free_tabs(tabs);
    free(row.p);
}

/* Column i's value of row k (a fixed-width column of size bytes). */
static uint64_t cell(const nsc_ch_cols *c, size_t i, size_t k, size_t size)
{
    uint64_t v = 0;
    cr_assert_eq(c->col[i].len, c->rows * size, "column %zu: %zu bytes", i, c->col[i].len);
    memcpy(&v, c->col[i].p + k * size, size);  /* little-endian, as ClickHouse */
    return v;
}

Test(chrows, ledger_marks_ranges)
{
    /* seqs 10 and 20 (bucket 0, the second's kernel not ended), 1030 (bucket 1) */
    nsc_ledger_rec recs[3] = {
        {.comm_id = 5, .seq = 10, .rank = 2, .ctx = 1, .enqueue_ns = 100, .gpu_start_ns = 1, .nchannels = 1,
         .nchannels_done = 1},
        {.comm_id = 5, .seq = 20, .rank = 2, .ctx = 1, .enqueue_ns = 300, .gpu_start_ns = 1, .nchannels = 1},
        {.comm_id = 5, .seq = 1030, .rank = 2, .ctx = 1, .enqueue_ns = 200, .gpu_start_ns = 1, .nchannels = 1,
         .nchannels_done = 1},
    };
    nsc_proc proc = {.pid = 77};
    strcpy(proc.job, "j"), strcpy(proc.host, "h");
    static nsc_ch_cols tabs[NSC_CH_NTABLES];
    nsc_ch_origin o = {"a", 1, 2, 3};
    nsc_ch_rows_ledger(tabs, &o, &proc, "blob", 4, &(nsc_ledger_batch){.pid = 77, .nrecs = 3, .recs = recs});
    const nsc_ch_cols *m = &tabs[NSC_CH_LEDGER_MARKS];
    cr_assert_eq(m->rows, 2, "a row per bucket");
    /* columns: job host pid comm_id bucket ctx rank enq_min enq_max done_min done_max agent epoch batch_seq
     * section idx */
    const uint64_t want[2][9] = {{5, 0, 1, 2, 100, 300, 100, 100, 0}, {5, 1, 1, 2, 200, 200, 200, 200, 2}};
    const size_t col[9] = {3, 4, 5, 6, 7, 8, 9, 10, 15}, size[9] = {8, 8, 2, 4, 8, 8, 8, 8, 4};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < 9; i++)
            cr_assert_eq(cell(m, col[i], k, size[i]), want[k][i], "row %zu, column %zu", k, col[i]);
    free_tabs(tabs);
    /* more groups than gathered at once: each still a row of its own idx */
    nsc_ledger_rec many[40];
    for (uint32_t i = 0; i < 40; i++)
        many[i] = (nsc_ledger_rec){.comm_id = 5, .seq = i, .rank = (int32_t)(i % 20), .enqueue_ns = 1000 + i};
    nsc_ch_rows_ledger(tabs, &o, &proc, "blob", 4, &(nsc_ledger_batch){.pid = 77, .nrecs = 40, .recs = many});
    m = &tabs[NSC_CH_LEDGER_MARKS];
    /* 16 groups at a time (ranks 0-15; 16-19 and 0-11; 12-19): every row its own first record */
    cr_assert_eq(m->rows, 40);
    for (size_t k = 0; k < m->rows; k++) {
        cr_assert_eq(cell(m, 15, k, 4), k, "idx of row %zu", k);
        cr_assert(cell(m, 9, k, 8) == UINT64_MAX && cell(m, 10, k, 8) == 0, "no kernel ended: done_min past done_max");
    }
    free_tabs(tabs);
}

/* Section b's rows (process 77 of job "j" on host "h") into tabs. */
static void section_rows(const nsc_store_batch *b, nsc_ch_cols *tabs)
{
    nsc_proc proc = {.pid = 77};
    strcpy(proc.job, "j"), strcpy(proc.host, "h");
    nsc_store_batch sb = *b;
    sb.proc = &proc;
    nsc_ch_rows_section(tabs, &(nsc_ch_origin){"a", 1, 2, 3}, &sb);
}

/* The event marks of section b: their number, and each row's bucket,
 * t_min and t_max into want order. */
static size_t marks_of(const nsc_store_batch *b, uint64_t (*got)[3], size_t cap)
{
    static nsc_ch_cols tabs[NSC_CH_NTABLES];
    section_rows(b, tabs);
    const nsc_ch_cols *m = &tabs[NSC_CH_EVENT_MARKS];
    /* columns: job host pid bucket t_min t_max p2p_ctxs agent epoch batch_seq section */
    size_t n = m->rows;
    for (size_t k = 0; k < n && k < cap; k++) {
        for (int i = 0; i < 3; i++)
            got[k][i] = cell(m, 3 + (size_t)i, k, 8);
        cr_assert_eq(cell(m, 2, k, 4), 77);
        cr_assert_eq(cell(m, 10, k, 4), 3, "the section's identity");
    }
    free_tabs(tabs);
    return n;
}

/* The P2p contexts of section b's only event mark into ctxs; how many. */
static size_t mark_ctxs(const nsc_store_batch *b, uint16_t *ctxs, size_t cap)
{
    static nsc_ch_cols tabs[NSC_CH_NTABLES];
    section_rows(b, tabs);
    const nsc_ch_cols *m = &tabs[NSC_CH_EVENT_MARKS];
    cr_assert_eq(m->rows, 1);
    size_t n = cell(m, 6, 0, 8) / sizeof *ctxs;
    cr_assert_leq(n, cap);
    if (n) /* no element: no buffer (memcpy wants one even for 0 bytes, UBSan) */
        memcpy(ctxs, m->elems[6].p, n * sizeof *ctxs);
    free_tabs(tabs);
    return n;
}

/* A mark lists the contexts of its section's P2p events, each once (a p2p
 * read picks sections by them), none without one; past
 * NSC_CH_P2P_CTXS_MAX, NSC_CTX_NONE alone, which every p2p read picks. */
Test(chrows, event_marks_name_the_contexts_of_their_p2p_events)
{
    nsc_event ev[NSC_CH_P2P_CTXS_MAX + 1];
    for (size_t i = 0; i < sizeof ev / sizeof *ev; i++)
        ev[i] = (nsc_event){.id = i + 1, .start_ns = 100 + i, .type = NSC_T_P2P, .ctx = (uint16_t)(i % 3 ? 5 : 2)};
    ev[1].type = NSC_T_COLL, ev[1].ctx = 9;
    uint16_t ctxs[NSC_CH_P2P_CTXS_MAX];
    size_t n = mark_ctxs(&(nsc_store_batch){.events = ev, .nevents = 4}, ctxs, NSC_CH_P2P_CTXS_MAX);
    cr_assert(n == 2 && ctxs[0] == 2 && ctxs[1] == 5, "%zu contexts", n);
    cr_assert_eq(mark_ctxs(&(nsc_store_batch){.events = &ev[1], .nevents = 1}, ctxs, NSC_CH_P2P_CTXS_MAX), 0,
                 "a Coll alone");
    for (size_t i = 0; i < sizeof ev / sizeof *ev; i++)
        ev[i].type = NSC_T_P2P, ev[i].ctx = (uint16_t)i;
    n = mark_ctxs(&(nsc_store_batch){.events = ev, .nevents = NSC_CH_P2P_CTXS_MAX}, ctxs, NSC_CH_P2P_CTXS_MAX);
    cr_assert(n == NSC_CH_P2P_CTXS_MAX && ctxs[NSC_CH_P2P_CTXS_MAX - 1] == NSC_CH_P2P_CTXS_MAX - 1);
    n = mark_ctxs(&(nsc_store_batch){.events = ev, .nevents = NSC_CH_P2P_CTXS_MAX + 1}, ctxs, NSC_CH_P2P_CTXS_MAX);
    cr_assert(n == 1 && ctxs[0] == NSC_CTX_NONE, "one context too many: any");
}

/* A section's marks: the range of its record times as a block bounds them
 * (an event to its stop, or its start when that is later; states and
 * completions at their times), a row per bucket of 2^30 ns it touches; past
 * 64 buckets one row in the wide bucket; none without records. */
Test(chrows, event_marks_cover_the_section)
{
    const uint64_t B = 1ull << NSC_CH_TIME_BITS;
    nsc_event ev[2] = {{.id = 1, .start_ns = 3 * B + 5, .stop_ns = 4 * B + 7},
                       {.id = 2, .start_ns = 4 * B + 9, .stop_ns = 2}};
    nsc_state_rec st[1] = {{.id = 1, .ts_ns = 5 * B}};
    nsc_completion cp[1] = {{.id = 1, .ts_ns = 3 * B + 1}};
    uint64_t got[80][3];
    size_t n = marks_of(&(nsc_store_batch){.events = ev, .nevents = 2, .states = st, .nstates = 1,
                                           .completions = cp, .ncompletions = 1}, got, 80);
    cr_assert_eq(n, 3, "buckets 3, 4 and 5: %zu rows", n);
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(got[k][0], 3 + k);
        cr_assert(got[k][1] == 3 * B + 1 && got[k][2] == 5 * B, "row %zu: %" PRIu64 "..%" PRIu64, k, got[k][1],
                  got[k][2]);
    }
    /* a later start than stop: the start ends the range */
    n = marks_of(&(nsc_store_batch){.events = &ev[1], .nevents = 1}, got, 80);
    cr_assert(n == 1 && got[0][0] == 4 && got[0][1] == 4 * B + 9 && got[0][2] == 4 * B + 9);
    /* 64 buckets: a row each; 65: one wide row */
    nsc_event wide = {.id = 3, .start_ns = 0, .stop_ns = 63 * B};
    n = marks_of(&(nsc_store_batch){.events = &wide, .nevents = 1}, got, 80);
    cr_assert(n == NSC_CH_TIME_SPAN && got[63][0] == 63, "%zu rows", n);
    wide.stop_ns = 64 * B;
    n = marks_of(&(nsc_store_batch){.events = &wide, .nevents = 1}, got, 80);
    cr_assert(n == 1 && got[0][0] == NSC_CH_TIME_WIDE && got[0][1] == 0 && got[0][2] == 64 * B);
    /* definitions alone: no mark */
    nsc_str_def sd = {.id = 1, .text = "x"};
    cr_assert_eq(marks_of(&(nsc_store_batch){.strs = &sd, .nstrs = 1}, got, 80), 0);
}
