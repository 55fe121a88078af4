/* test_chrows.c: the ClickHouse rows' RowBinary bytes (collector/chrows.c),
 * written out by hand from ClickHouse's format: integers little-endian and
 * fixed width, a String as its LEB128 length then its bytes (the tests'
 * texts are shorter than 128: one length byte); and a buffer
 * that must grow by more than one doubling at once. Every table definition
 * ends its ordering key with the batch identity (or is keyed by a definition
 * or a version): what folds a batch inserted twice. An event of every type,
 * every field set to its own value, read back from its row through the
 * table's column list: each field lands in the column of its name, other
 * columns hold 0. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "chevents.h"
#include "chrows.h"
#include "event_fields.h"

Test(chrows, life_row_bytes)
{
    nsc_ch_buf b = {0};
    nsc_store_life l = {.pid = 0x01020304, .event = 1, .reason = 0, .ts_ns = 5, .ref_ns = 6, .last_batch_seq = 7};
    strcpy(l.job, "j");
    strcpy(l.host, "hh");
    nsc_ch_origin o = {"ag", 9, 10, 2};
    nsc_ch_rows_life(&b, &o, &l);
    static const uint8_t want[] = {
        1, 'j', 2, 'h', 'h', 4, 3, 2, 1, 1, 0,  /* job, host, pid, event, reason */
        5, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0,
        2, 'a', 'g', 9, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, /* agent, epoch, batch_seq */
        2, 0, 0, 0, 2, 0, 0, 0};  /* section = idx = the record's index */
    cr_assert_eq(b.len, sizeof want);
    cr_assert_arr_eq(b.p, want, sizeof want);
    cr_assert_eq(b.rows, 1);
    free(b.p);
}

/* Text fields are fixed arrays that may lack their NUL: at most the array is
 * sent, its length in front. */
Test(chrows, unterminated_texts)
{
    nsc_ch_buf b = {0};
    nsc_store_progress p = {.comm_id = 1, .rank = -1, .seq = 2, .ref_ns = 3};
    memset(p.job, 'x', sizeof p.job);  /* no NUL: at most the array is taken */
    strcpy(p.func, "AllReduce");
    nsc_ch_rows_progress(&b, &p);
    cr_assert_eq(b.p[0], 64);
    cr_assert_eq(b.p[65 + 8], 0xff);  /* rank -1 after job and comm_id */
    cr_assert_eq(b.len, 1 + 64 + 8 + 4 + 1 + 9 + 8 + 8);
    free(b.p);
    nsc_str_def s = {.id = 3};
    memset(s.text, 'y', sizeof s.text);
    nsc_proc proc = {.pid = 1};
    memset(proc.job, 'z', 63);
    nsc_store_batch sb = {.proc = &proc, .strs = &s, .nstrs = 1};
    nsc_ch_buf bufs[NSC_CH_NTABLES] = {{0}};
    nsc_ch_origin o = {"a", 0, 0, 0};
    nsc_ch_rows_section(bufs, &o, &sb);
    cr_assert_eq(bufs[NSC_CH_STRINGS].p[0], 63);  /* job: 63 'z' then NUL */
    /* text: all 64, then the batch identity ("a", 0, 0, 0, index 0) */
    cr_assert_eq(bufs[NSC_CH_STRINGS].p[bufs[NSC_CH_STRINGS].len - 26 - 65], 64);
    cr_assert_eq(bufs[NSC_CH_STRINGS].rows, 1);
    cr_assert_eq(bufs[NSC_CH_BATCHES].rows, 1);
    cr_assert_eq(bufs[NSC_CH_EVENTS].len, 0);
    for (int t = 0; t < NSC_CH_NTABLES; t++)
        free(bufs[t].p);
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

Test(chrows, every_key_folds_a_batch_sent_again)
{
    for (int t = 0; t < NSC_CH_NTABLES; t++) {
        const nsc_ch_table_def def = nsc_ch_def(t), *d = &def;
        const char *k = d->order_by;
        size_t n = strlen(k), tail = strlen("agent, epoch, batch_seq, section, idx");
        int identity = n >= tail && strcmp(k + n - tail, "agent, epoch, batch_seq, section, idx") == 0;
        int definition = t == NSC_CH_CONTEXTS || t == NSC_CH_STRINGS;
        cr_assert(identity || definition || d->version[0], "%s: its key does not fold repeated rows", d->name);
    }
}

/* A row read back by the column list: the name and value of each column
 * (strings: their length). */
typedef struct column {
    char name[32];
    int64_t value;
} column;

static size_t read_row(const char *columns, const uint8_t *row, size_t len, column *out, size_t max)
{
    size_t n = 0, at = 0;
    char type[16];
    int used;
    for (const char *c = columns; n < max && sscanf(c, "%31s %15[^,]%n", out[n].name, type, &used) == 2; n++) {
        c += used + (c[used] == ',' ? 2 : 0);
        int bits = 0, is_signed = type[0] == 'I';
        if (strcmp(type, "String") == 0) {
            out[n].value = row[at];  /* one length byte: the tests' texts are short */
            at += 1 + row[at];
            continue;
        }
        cr_assert_eq(sscanf(type + (is_signed ? 3 : 4), "%d", &bits), 1, "%s: type %s", out[n].name, type);
        uint64_t v = 0;
        for (int i = 0; i < bits / 8; i++)
            v |= (uint64_t)row[at + i] << (8 * i);
        at += bits / 8;
        if (is_signed && bits < 64 && v >> (bits - 1))
            v |= ~0ull << bits;  /* sign-extend */
        out[n].value = (int64_t)v;
    }
    cr_assert_eq(at, len, "the row has %zu bytes, its columns %zu", len, at);
    return n;
}

static int64_t value_of(const column *cols, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cols[i].name, name) == 0)
            return cols[i].value;
    cr_assert_fail("no column %s", name);
    return 0;
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
        set[ncheck++] = #m;                                                       \
    }
#define SET_TYPE(t, s, list) case t: list(SET, e.d.s) break;
#define CHECK_TYPE(t, s, list) case t: list(CHECK, e.d.s) break;

static int is_in(const char *name, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static void round_trip(int t)
{
    nsc_event e = {.type = (uint8_t)t};
    int k = 0;
    NSC_FIELDS_HEAD(SET, e) NSC_FIELDS_ORIGIN(SET, e)
    switch (t) { NSC_EVENT_TYPES(SET_TYPE) }
    nsc_proc proc = {.pid = 77};
    strcpy(proc.job, "j"), strcpy(proc.host, "h");
    nsc_store_batch sb = {.proc = &proc, .events = &e, .nevents = 1};
    nsc_ch_buf bufs[NSC_CH_NTABLES] = {{0}};
    nsc_ch_origin o = {"a", 1, 2, 3};
    nsc_ch_rows_section(bufs, &o, &sb);
    column cols[128];
    size_t n = read_row(nsc_ch_def(NSC_CH_EVENTS).columns, bufs[NSC_CH_EVENTS].p, bufs[NSC_CH_EVENTS].len, cols,
                        128);
    const char *set[128];
    size_t ncheck = 0;
    NSC_FIELDS_HEAD(CHECK, e) NSC_FIELDS_ORIGIN(CHECK, e)
    switch (t) { NSC_EVENT_TYPES(CHECK_TYPE) }
    static const char *const others[] = {"job", "host", "pid", "type", "agent", "epoch", "batch_seq", "section"};
    for (size_t i = 0; i < n; i++)
        if (!is_in(cols[i].name, set, ncheck) && !is_in(cols[i].name, others, 8))
            cr_assert_eq(cols[i].value, 0, "type %d: column %s of another type is %lld", t, cols[i].name,
                         (long long)cols[i].value);
    cr_assert_eq(value_of(cols, n, "type"), t);
    cr_assert_eq(value_of(cols, n, "pid"), 77);
    cr_assert_eq(value_of(cols, n, "section"), 3);
    /* read back (after job "j", host "h", pid) and written again: the same bytes */
    nsc_event back;
    const nsc_ch_buf *row = &bufs[NSC_CH_EVENTS];
    size_t used = nsc_ch_event_read(row->p + 8, row->len - 8, &back);
    cr_assert_eq(used, row->len - 8 - 26, "type %d: the values take %zu bytes", t, used);
    cr_assert_eq(nsc_ch_event_read(row->p + 8, used - 1, &back), 0);
    nsc_store_batch again = {.proc = &proc, .events = &back, .nevents = 1};
    nsc_ch_buf bufs2[NSC_CH_NTABLES] = {{0}};
    nsc_ch_rows_section(bufs2, &o, &again);
    cr_assert_eq(bufs2[NSC_CH_EVENTS].len, row->len);
    cr_assert_eq(memcmp(bufs2[NSC_CH_EVENTS].p, row->p, row->len), 0, "type %d: read back differs", t);
    for (int i = 0; i < NSC_CH_NTABLES; i++) {
        free(bufs[i].p);
        free(bufs2[i].p);
    }
}

Test(chrows, every_field_in_its_column)
{
    for (int t = 0; t < NSC_T_COUNT; t++)
        round_trip(t);
}
