/* test_chnative.c: a table's columns (collector/ch/chcols.c) to a sorted
 * Native block (collector/ch/chnative.c). A small table's block is written out by hand
 * from ClickHouse's Native format (columns and rows as LEB128, per column
 * its name, its type and its values), in the order of the key: Strings by
 * their bytes, a prefix first; signed integers by value; rows equal in the
 * key in the order they came. An Array column's rows (offsets, then the
 * elements) follow the key's order. Many rows in a scrambled order come out
 * in key order, none lost; rows missing a value, an unknown type or an
 * Array in the key are refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "chnative.h"

static const nsc_ch_table_def small = {
    .name = "t", .columns = "job String, n Int32, v UInt64, s String, idx UInt8", .order_by = "job, n, idx"};

static void put(nsc_ch_buf *b, const void *p, size_t n) { memcpy(nsc_ch_room(b, n), p, n); }
static void text(nsc_ch_buf *b, const char *s)
{
    uint8_t len = (uint8_t)strlen(s);
    put(b, &len, 1), put(b, s, len);
}

static void row(nsc_ch_cols *c, const char *job, int32_t n, uint64_t v, const char *s, uint8_t idx)
{
    nsc_ch_put_text(c, job, strlen(job));
    nsc_ch_put_uint(c, (uint32_t)n, 4);
    nsc_ch_put_uint(c, v, 8);
    nsc_ch_put_text(c, s, strlen(s));
    nsc_ch_put_uint(c, idx, 1);
    nsc_ch_end_row(c);
}

Test(chnative, small_block_by_hand)
{
    nsc_ch_cols rows = {0};
    nsc_ch_buf out = {0}, want = {0};
    row(&rows, "b", -1, 1, "x", 0);
    row(&rows, "a", 5, 2, "yy", 1);
    row(&rows, "b", -2, 3, "", 2);
    row(&rows, "ab", 5, 4, "z", 3);
    row(&rows, "a", 5, 5, "w", 1);  /* the key of the second row: after it */
    nsc_ch_native *n = nsc_ch_native_new();
    cr_assert_eq(nsc_ch_native_block(n, &small, &rows, &out), 0);
    /* order: (a,5,1) v2, (a,5,1) v5, (ab,5,3), (b,-2,2), (b,-1,0) */
    put(&want, "\x05\x05", 2);
    text(&want, "job"), text(&want, "String");
    text(&want, "a"), text(&want, "a"), text(&want, "ab"), text(&want, "b"), text(&want, "b");
    text(&want, "n"), text(&want, "Int32");
    int32_t ns[] = {5, 5, 5, -2, -1};
    put(&want, ns, sizeof ns);
    text(&want, "v"), text(&want, "UInt64");
    uint64_t vs[] = {2, 5, 4, 3, 1};
    put(&want, vs, sizeof vs);
    text(&want, "s"), text(&want, "String");
    text(&want, "yy"), text(&want, "w"), text(&want, "z"), text(&want, ""), text(&want, "x");
    text(&want, "idx"), text(&want, "UInt8");
    put(&want, "\x01\x01\x03\x02\x00", 5);
    cr_assert_eq(out.len, want.len);
    cr_assert_arr_eq(out.p, want.p, want.len);
    cr_assert_eq(out.rows, 5);
    nsc_ch_native_free(n);
    nsc_ch_cols_free(&rows);
    free(out.p), free(want.p);
}

static const nsc_ch_table_def arrays = {
    .name = "a", .columns = "k UInt32, a Array(UInt16), b Array(UInt64)", .order_by = "k"};

static void array_row(nsc_ch_cols *c, uint32_t k, const uint16_t *a, size_t n)
{
    nsc_ch_put_uint(c, k, 4);
    for (size_t i = 0; i < n; i++)
        nsc_ch_put_elem(c, a[i], 2);
    nsc_ch_end_array(c);
    for (size_t i = 0; i < n; i++)
        nsc_ch_put_elem(c, 100u + a[i], 8);
    nsc_ch_end_array(c);
    nsc_ch_end_row(c);
}

Test(chnative, array_block_by_hand)
{
    nsc_ch_cols rows = {0};
    nsc_ch_buf out = {0}, want = {0};
    uint16_t x[] = {1, 2, 3}, y[] = {7};
    array_row(&rows, 9, x, 3);
    array_row(&rows, 4, NULL, 0);
    array_row(&rows, 5, y, 1);
    nsc_ch_native *n = nsc_ch_native_new();
    cr_assert_eq(nsc_ch_native_block(n, &arrays, &rows, &out), 0);
    /* order: k 4 [], 5 [7], 9 [1,2,3]; offsets count elements to each row's end */
    put(&want, "", 2);
    text(&want, "k"), text(&want, "UInt32");
    uint32_t ks[] = {4, 5, 9};
    put(&want, ks, sizeof ks);
    text(&want, "a"), text(&want, "Array(UInt16)");
    uint64_t offsets[] = {0, 1, 4};
    uint16_t as[] = {7, 1, 2, 3};
    put(&want, offsets, sizeof offsets), put(&want, as, sizeof as);
    text(&want, "b"), text(&want, "Array(UInt64)");
    uint64_t bs[] = {107, 101, 102, 103};
    put(&want, offsets, sizeof offsets), put(&want, bs, sizeof bs);
    cr_assert_eq(out.len, want.len);
    cr_assert_arr_eq(out.p, want.p, want.len);
    const nsc_ch_table_def keyed = {.name = "a", .columns = arrays.columns, .order_by = "a"};
    cr_assert_eq(nsc_ch_native_block(n, &keyed, &rows, &out), -1, "an Array in the key");
    nsc_ch_native_free(n);
    nsc_ch_cols_free(&rows);
    free(out.p), free(want.p);
}

/* 5000 rows of 40 jobs in a scrambled order, twice through one scratch. */
Test(chnative, many_rows_in_key_order)
{
    nsc_ch_native *n = nsc_ch_native_new();
    for (int round = 0; round < 2; round++) {
        nsc_ch_cols rows = {0};
        nsc_ch_buf out = {0};
        uint64_t sum = 0;
        for (uint32_t i = 0; i < 5000; i++) {
            uint32_t k = (i * 7919u + (uint32_t)round) % 5000u;
            char job[16];
            snprintf(job, sizeof job, "j%02u", k % 40);
            row(&rows, job, (int32_t)(k / 40) - 60, k, "s", 0);
            sum += k;
        }
        cr_assert_eq(nsc_ch_native_block(n, &small, &rows, &out), 0);
        const uint8_t *p = out.p + 3 + 4 + 7, *end = out.p + out.len;  /* after 5000 as two bytes, "job String" */
        char prev[8] = "";
        int32_t prev_n = INT32_MIN;
        const uint8_t *nv = p + 5000 * 4 + 2 + 6;  /* after 5000 "jNN" and "n Int32" */
        for (int i = 0; i < 5000; i++) {
            size_t len;
            const uint8_t *s = nsc_ch_take_string(&p, end, &len);
            cr_assert(s && len == 3);
            int32_t v;
            memcpy(&v, nv + 4 * i, 4);
            int c = memcmp(prev, s, 3);
            cr_assert(c < 0 || (c == 0 && v >= prev_n), "row %d out of order", i);
            memcpy(prev, s, 3), prev_n = v;
        }
        const uint8_t *vv = nv + 5000 * 4 + 2 + 7;  /* after "v UInt64" */
        for (int i = 0; i < 5000; i++) {
            uint64_t v;
            memcpy(&v, vv + 8 * i, 8);
            sum -= v;
        }
        cr_assert_eq(sum, 0);
        nsc_ch_cols_free(&rows);
        free(out.p);
    }
    nsc_ch_native_free(n);
}

Test(chnative, refuses_what_does_not_parse)
{
    nsc_ch_native *n = nsc_ch_native_new();
    nsc_ch_cols rows = {0}, short_row = {0};
    nsc_ch_buf out = {0};
    row(&rows, "a", 1, 2, "s", 3);
    row(&short_row, "a", 1, 2, "s", 3);
    nsc_ch_put_text(&short_row, "b", 1);  /* a second row without its last four values */
    nsc_ch_end_row(&short_row);
    cr_assert_eq(nsc_ch_native_block(n, &small, &short_row, &out), -1);
    rows.rows = 2;  /* a row counted that is not there */
    cr_assert_eq(nsc_ch_native_block(n, &small, &rows, &out), -1);
    rows.rows = 1;
    nsc_ch_put_uint(&rows, 1, 1);  /* a value of no row yet */
    cr_assert_eq(nsc_ch_native_block(n, &small, &rows, &out), -1);
    nsc_ch_end_row(&rows);
    nsc_ch_cols_clear(&rows);
    row(&rows, "a", 1, 2, "s", 3);
    nsc_ch_table_def odd = small;
    odd.columns = "job String, n Float64, v UInt64, s String, idx UInt8";
    cr_assert_eq(nsc_ch_native_block(n, &odd, &rows, &out), -1);
    cr_assert_eq(nsc_ch_native_block(n, &small, &rows, &out), 0);
    nsc_ch_native_free(n);
    nsc_ch_cols_free(&rows), nsc_ch_cols_free(&short_row);
    free(out.p);
}

/* Keys wider than 128 bits together: the last one decides ties of the
 * packed ones from the rows' own keys. */
Test(chnative, keys_wider_than_packed)
{
    static const nsc_ch_table_def wide = {.name = "w", .columns = "a UInt64, b UInt64, c UInt8", .order_by = "a, b, c"};
    static const uint64_t in[][3] = {
        {UINT64_MAX, 0, 1}, {0, UINT64_MAX, 2}, {0, UINT64_MAX, 1}, {0, 0, 0}, {UINT64_MAX, UINT64_MAX, 0}};
    nsc_ch_cols rows = {0};
    nsc_ch_buf out = {0};
    for (size_t i = 0; i < 5; i++) {
        nsc_ch_put_uint(&rows, in[i][0], 8), nsc_ch_put_uint(&rows, in[i][1], 8), nsc_ch_put_uint(&rows, in[i][2], 1);
        nsc_ch_end_row(&rows);
    }
    nsc_ch_native *n = nsc_ch_native_new();
    cr_assert_eq(nsc_ch_native_block(n, &wide, &rows, &out), 0);
    const uint8_t *c = out.p + out.len - 5;  /* the last column's values */
    cr_assert_arr_eq(c, "\x00\x01\x02\x01\x00", 5);
    uint64_t a[5], b[5];
    memcpy(a, out.p + 2 + 2 + 7, sizeof a);  /* after "a UInt64" */
    memcpy(b, out.p + 2 + 2 + 7 + 40 + 2 + 7, sizeof b);
    cr_assert(a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == UINT64_MAX && a[4] == UINT64_MAX);
    cr_assert(b[0] == 0 && b[1] == UINT64_MAX && b[2] == UINT64_MAX && b[3] == 0 && b[4] == UINT64_MAX);
    nsc_ch_native_free(n);
    nsc_ch_cols_free(&rows);
    free(out.p);
}
