/* Unit tests for the agent's detail ring on a real LMDB in a temp dir:
 * bounded by bytes and by age with every drop counted, a piece larger than
 * the ring refused, the window filters (job, pids, types, time), a scan's
 * bounded work resumed where it stopped and never splitting one batch's
 * pieces, and a reopened ring empty. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/nsc-ring-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(ring, .init = make_dir, .fini = remove_dir);

static uint8_t body[4096];

/* Piece i: batch seq i, pid 100 + i % 4, received in [1000 i, 1000 i + 999],
 * holding event type i % 3. */
static nsc_ring_piece piece(uint64_t i, uint32_t len)
{
    nsc_ring_piece p = {.m = {.seq = i, .from_ns = 1000 * i, .to_ns = 1000 * i + 999, .types = 1ull << (i % 3),
                              .pid = (uint32_t)(100 + i % 4), .job = "job1"},
                        .data = body, .len = len};
    return p;
}

static nsc_ring *open_ring(uint64_t cap, uint64_t keep)
{
    nsc_ring *r;
    char err[128];
    cr_assert_eq(nsc_ring_open(&r, dir, cap, keep, err), 0, "%s", err);
    return r;
}

typedef struct seen {
    uint64_t n, seqs[64], bytes;
} seen;

static void take(void *arg, const nsc_ring_meta *m, const uint8_t *data, uint32_t len)
{
    seen *s = arg;
    cr_assert_eq(memcmp(data, body, len), 0);
    if (s->n < 64)
        s->seqs[s->n] = m->seq;
    s->n++;
    s->bytes += len;
}

/* Every match of q, scanned to the end with unbounded work per call. */
static seen scan_all(nsc_ring *r, const nsc_ring_query *q)
{
    seen s = {0};
    uint64_t at = 0;
    int rc;
    while ((rc = nsc_ring_scan(r, q, &at, SIZE_MAX, UINT32_MAX, take, &s)) == 1)
        ;
    cr_assert_eq(rc, 0);
    return s;
}

Test(ring, bounded_by_bytes_oldest_dropped_first)
{
    nsc_ring_piece one = piece(0, 1000);
    uint64_t each = 1000 + (sizeof one.m);
    nsc_ring *r = open_ring(4 * each + each / 2, 0);  /* room for four */
    for (uint64_t i = 0; i < 10; i++) {
        nsc_ring_piece p = piece(i, 1000);
        cr_assert_eq(nsc_ring_put(r, &p, 1, 1000 * i + 999), 1);
    }
    nsc_ring_stats st;
    nsc_ring_stats_get(r, &st);
    cr_assert_eq(st.pieces, 4);
    cr_assert_eq(st.bytes, 4 * each);
    cr_assert_leq(st.bytes, st.cap_bytes);
    cr_assert_eq(st.put_pieces, 10);
    cr_assert_eq(st.dropped_pieces, 6);
    cr_assert_eq(st.dropped_bytes, 6 * each);
    cr_assert_eq(st.held_from_ns, 6000);
    cr_assert_eq(st.held_to_ns, 9999);
    nsc_ring_query q = {.job = "job1", .to_ns = UINT64_MAX};
    seen s = scan_all(r, &q);
    cr_assert_eq(s.n, 4);
    for (uint64_t i = 0; i < 4; i++)
        cr_assert_eq(s.seqs[i], 6 + i);
    /* larger than the whole ring: refused, counted, nothing dropped for it */
    nsc_ring_piece big = piece(10, sizeof body);
    nsc_ring_close(r);
    r = open_ring(2048, 0);
    cr_assert_eq(nsc_ring_put(r, &big, 1, 10999), 0);
    nsc_ring_stats_get(r, &st);
    cr_assert_eq(st.refused_pieces, 1);
    cr_assert_eq(st.refused_bytes, sizeof body + sizeof big.m);
    cr_assert_eq(st.pieces, 0);
    cr_assert_eq(st.held_from_ns, 0);
    cr_assert_eq(st.held_to_ns, 0);
    nsc_ring_close(r);
}

Test(ring, bounded_by_age)
{
    nsc_ring *r = open_ring(1 << 20, 3000);
    nsc_ring_piece p[6];
    for (uint64_t i = 0; i < 6; i++)
        p[i] = piece(i, 100);
    /* cutoff 5999 - 3000: pieces 0 and 1 end before it and are never kept */
    cr_assert_eq(nsc_ring_put(r, p, 6, 5999), 4);
    nsc_ring_stats st;
    nsc_ring_stats_get(r, &st);
    cr_assert_eq(st.put_pieces, 4);
    cr_assert_eq(st.refused_pieces, 2);
    cr_assert_eq(st.dropped_pieces, 0);
    cr_assert_eq(st.held_from_ns, 2000);
    nsc_ring_age(r, 8500);  /* cutoff 5500: 2, 3 and 4 end before it */
    nsc_ring_stats_get(r, &st);
    cr_assert_eq(st.pieces, 1);
    cr_assert_eq(st.dropped_pieces, 3);
    cr_assert_eq(st.held_from_ns, 5000);
    nsc_ring_age(r, 9999);
    nsc_ring_stats_get(r, &st);
    cr_assert_eq(st.pieces, 0);
    cr_assert_eq(st.dropped_pieces, 4);
    cr_assert_eq(st.held_from_ns, 0);
    nsc_ring_close(r);
}

Test(ring, window_filters)
{
    nsc_ring *r = open_ring(1 << 20, 0);
    nsc_ring_piece p[12];
    for (uint64_t i = 0; i < 12; i++)
        p[i] = piece(i, 10);
    strcpy(p[11].m.job, "job2");
    p[10].m.types = 0;  /* states only: matches any types */
    cr_assert_eq(nsc_ring_put(r, p, 12, 11999), 12);
    nsc_ring_query q = {.job = "job1", .from_ns = 2500, .to_ns = 5000};
    seen s = scan_all(r, &q);
    cr_assert_eq(s.n, 4);  /* 2 (to 2999), 3, 4, 5 (from 5000) */
    cr_assert_eq(s.seqs[0], 2);
    cr_assert_eq(s.seqs[3], 5);
    uint32_t pids[] = {101, 103};
    q = (nsc_ring_query){.job = "job1", .to_ns = UINT64_MAX, .pids = pids, .npids = 2};
    s = scan_all(r, &q);
    cr_assert_eq(s.n, 5);  /* 1, 3, 5, 7, 9 */
    q = (nsc_ring_query){.job = "job1", .to_ns = UINT64_MAX, .types = 1ull << 2};
    s = scan_all(r, &q);
    cr_assert_eq(s.n, 4);  /* 2, 5, 8 and 10 (no events) */
    cr_assert_eq(s.seqs[3], 10);
    q = (nsc_ring_query){.job = "job2", .to_ns = UINT64_MAX};
    s = scan_all(r, &q);
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.seqs[0], 11);
    nsc_ring_close(r);
}

Test(ring, scan_work_is_bounded_and_resumes)
{
    nsc_ring *r = open_ring(1 << 20, 5000);
    nsc_ring_piece p[10];
    for (uint64_t i = 0; i < 10; i++)
        p[i] = piece(i, 100);
    cr_assert_eq(nsc_ring_put(r, p, 10, 0), 10);
    nsc_ring_query q = {.job = "job1", .to_ns = UINT64_MAX};
    seen s = {0};
    uint64_t at = 0;
    cr_assert_eq(nsc_ring_scan(r, &q, &at, SIZE_MAX, 3, take, &s), 1);
    cr_assert_eq(s.n, 3);
    cr_assert_eq(nsc_ring_scan(r, &q, &at, 1, UINT32_MAX, take, &s), 1);  /* one piece at least */
    cr_assert_eq(s.n, 4);
    cr_assert_eq(s.seqs[3], 3);
    /* what the ring dropped since (0 to 4) is skipped */
    nsc_ring_age(r, 10500);
    int rc;
    while ((rc = nsc_ring_scan(r, &q, &at, 250, UINT32_MAX, take, &s)) == 1)
        ;
    cr_assert_eq(rc, 0);
    cr_assert_eq(s.n, 9);
    cr_assert_eq(s.seqs[4], 5);
    cr_assert_eq(s.seqs[8], 9);
    cr_assert_eq(nsc_ring_scan(r, &q, &at, SIZE_MAX, UINT32_MAX, take, &s), 0);
    nsc_ring_close(r);
}

Test(ring, reopened_ring_is_empty)
{
    nsc_ring *r = open_ring(1 << 20, 0);
    nsc_ring_piece p = piece(0, 10);
    cr_assert_eq(nsc_ring_put(r, &p, 1, 999), 1);
    nsc_ring_close(r);
    r = open_ring(1 << 20, 0);
    nsc_ring_stats st;
    nsc_ring_stats_get(r, &st);
    cr_assert_eq(st.pieces, 0);
    nsc_ring_query q = {.job = "job1", .to_ns = UINT64_MAX};
    cr_assert_eq(scan_all(r, &q).n, 0);
    nsc_ring_close(r);
}

/* Three batches of four pieces each: a scan bounded to one piece still
 * hands over a batch's matching pieces in one call. */
Test(ring, scan_keeps_a_batch_whole)
{
    nsc_ring *r = open_ring(1 << 20, 0);
    nsc_ring_piece p[12];
    for (uint64_t i = 0; i < 12; i++) {
        p[i] = piece(i, 100);
        p[i].m.seq = i / 4;
    }
    p[5].m.pid = 999;  /* not asked for: the batch is whole without it */
    cr_assert_eq(nsc_ring_put(r, p, 12, 0), 12);
    uint32_t pids[] = {100, 101, 102, 103};
    nsc_ring_query q = {.job = "job1", .to_ns = UINT64_MAX, .pids = pids, .npids = 4};
    seen s = {0};
    uint64_t at = 0;
    cr_assert_eq(nsc_ring_scan(r, &q, &at, 1, 1, take, &s), 1);
    cr_assert_eq(s.n, 4);
    cr_assert_eq(nsc_ring_scan(r, &q, &at, 1, 1, take, &s), 1);
    cr_assert_eq(s.n, 7);
    cr_assert_eq(s.seqs[6], 1);
    cr_assert_eq(nsc_ring_scan(r, &q, &at, 1, 1, take, &s), 0);
    cr_assert_eq(s.n, 11);
    nsc_ring_close(r);
}
