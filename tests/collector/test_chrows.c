/* test_chrows.c: the ClickHouse rows' RowBinary bytes (collector/chrows.c),
 * written out by hand from ClickHouse's format: integers little-endian and
 * fixed width, a String as its LEB128 length then its bytes (the tests'
 * texts are shorter than 128: one length byte); and a buffer
 * that must grow by more than one doubling at once. Every table definition
 * ends its ordering key with the batch identity (or is keyed by a definition
 * or a version): what folds a batch inserted twice. */
#include <criterion/criterion.h>
#include <string.h>

#include "chrows.h"

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
    cr_assert_eq(bufs[NSC_CH_STRINGS].p[bufs[NSC_CH_STRINGS].len - 65], 64);  /* text: all 64 */
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
        const nsc_ch_table_def *d = &nsc_ch_tables[t];
        const char *k = d->order_by;
        size_t n = strlen(k), tail = strlen("agent, epoch, batch_seq, section, idx");
        int identity = n >= tail && strcmp(k + n - tail, "agent, epoch, batch_seq, section, idx") == 0;
        int definition = t == NSC_CH_CONTEXTS || t == NSC_CH_STRINGS;
        cr_assert(identity || definition || d->version[0], "%s: its key does not fold repeated rows", d->name);
    }
}
