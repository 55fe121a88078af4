/* Unit tests for the spool: dense sequence numbers, exact accounting when the
 * cap refuses entries, persistence of both across a reopen, ordered reading. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spool.h"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/nsc-spool-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

typedef struct seen {
    uint64_t n, first, last, bytes;
    int in_order;
} seen;

static int count(void *arg, uint64_t seq, const void *msg, size_t len)
{
    seen *s = arg;
    if (s->n == 0)
        s->first = seq;
    else if (seq != s->last + 1)
        s->in_order = 0;
    cr_assert_eq(((const uint8_t *)msg)[0], (uint8_t)seq, "entry %llu holds what was stored", (unsigned long long)seq);
    s->last = seq;
    s->n++;
    s->bytes += len;
    return 0;
}

Test(spool, cap_accounting_is_exact, .init = make_dir, .fini = remove_dir)
{
    nsc_spool *s;
    char err[128];
    uint8_t buf[1000];
    const uint64_t cap = 10 * 1000 + 500;  /* ten 1000-byte entries fit, the 11th does not */
    cr_assert_eq(nsc_spool_open(&s, dir, cap, err), 0, "%s", err);
    uint64_t stored = 0, refused = 0;
    for (unsigned i = 0; i < 25; i++) {
        memset(buf, (uint8_t)nsc_spool_next_seq(s), sizeof buf);
        nsc_spool_tally t = {.events = i, .records = 2 * i};
        int rc = nsc_spool_put(s, buf, i == 12 ? 400 : sizeof buf, &t);
        cr_assert(rc == 0 || rc == 1);
        if (rc == 0)
            stored++;
        else
            refused++;
    }
    /* 10 x 1000 fit; then 1000 is refused until the 400-byte entry (i = 12) fits. */
    cr_assert_eq(stored, 11);
    cr_assert_eq(refused, 14);
    nsc_spool_stats st;
    nsc_spool_stats_get(s, &st);
    cr_assert_eq(st.entries, 11);
    cr_assert_eq(st.bytes, 10400);
    cr_assert_eq(st.next_seq, 11);
    cr_assert_eq(st.refused_entries, 14);
    cr_assert_eq(st.refused_bytes, 14000);
    uint64_t ev = 0;
    for (unsigned i = 10; i < 25; i++)
        ev += i == 12 ? 0 : i;
    cr_assert_eq(st.refused_events, ev);
    cr_assert_eq(st.refused_records, 2 * ev);
    cr_assert_eq(st.errors, 0);
    nsc_spool_close(s);

    /* Everything survives a reopen, and sequences continue densely. */
    cr_assert_eq(nsc_spool_open(&s, dir, cap, err), 0, "%s", err);
    nsc_spool_stats again;
    nsc_spool_stats_get(s, &again);
    cr_assert(memcmp(&st, &again, sizeof st) == 0);
    seen sn = {.in_order = 1};
    cr_assert_eq(nsc_spool_foreach(s, 0, count, &sn), 0);
    cr_assert_eq(sn.n, 11);
    cr_assert_eq(sn.first, 0);
    cr_assert_eq(sn.last, 10);
    cr_assert(sn.in_order);
    cr_assert_eq(sn.bytes, 10400);
    seen tail = {.in_order = 1};
    nsc_spool_foreach(s, 7, count, &tail);
    cr_assert_eq(tail.n, 4);
    cr_assert_eq(tail.first, 7);
    nsc_spool_close(s);
}

Test(spool, bad_directory)
{
    nsc_spool *s;
    char err[128];
    cr_assert_eq(nsc_spool_open(&s, "/proc/nonexistent/spool", 1 << 20, err), -1);
    cr_assert_null(s);
    cr_assert_neq(err[0], 0);
}
