/* rcown.c: each process's own time on the follow's timeline (rcfw.h):
 * its host's gap after its latest end on any communicator and its GPU's
 * start after both, and at each collective who arrived last, how late, and
 * whether its own time explains that (late of its own), counted per
 * communicator rank for rcfollow.c to judge. */
#include <stdlib.h>

#include "figures.h"
#include "order.h"
#include "rcfw.h"

static int by_who_api(const void *a, const void *b)
{
    const fw_rec *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->who, y->who), NSC_CMP(x->api, y->api), NSC_CMP(x->done, y->done));
}

void nsc_rc_own_times(nsc_rc_follow *w)
{
    qsort(w->r, w->n, sizeof *w->r, by_who_api);
    uint64_t end = 0;
    int64_t blk = -1;
    for (size_t i = 0; i < w->n; i++) {
        fw_rec *x = &w->r[i];
        if (i == 0 || x->who != w->r[i - 1].who)
            end = 0, blk = -1;
        uint64_t from = x->api > end ? x->api : end;
        x->host = end && x->api > end ? x->api - end : 0;
        x->own = x->host + (x->gpu > from ? x->gpu - from : 0);
        x->blocker = blk;
        x->first = blk < 0;
        if (x->done > end)
            end = x->done, blk = (int64_t)i;
    }
}

typedef struct fw_key {
    uint32_t comm;
    uint64_t seq;
    size_t i;
} fw_key;

static int by_coll(const void *a, const void *b)
{
    const fw_key *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->comm, y->comm), NSC_CMP(x->seq, y->seq), NSC_CMP(x->i, y->i));
}

uint64_t nsc_rc_median(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, nsc_cmp_u64);
    return n ? v[(n - 1) / 2] : 0;
}

static uint64_t arrival(const fw_rec *x)
{
    return x->gpu > x->api ? x->gpu : x->api;
}

/* One collective's records k[0..n): who arrived last, how late against the
 * others' median arrival, and whether its own time beyond the others'
 * median own time is half of that or more; counted per communicator rank. */
static void judge_coll(nsc_rc_follow *w, const fw_key *k, size_t n, uint64_t *scratch, uint32_t *late_n,
                       uint32_t *own_n)
{
    size_t last = 0;
    for (size_t j = 0; j < n; j++) {
        scratch[j] = w->r[k[j].i].own;
        if (arrival(&w->r[k[j].i]) > arrival(&w->r[k[last].i]))
            last = j;
    }
    uint64_t all = nsc_rc_median(scratch, n);
    for (size_t j = 0; j < n; j++)
        w->r[k[j].i].excess = w->r[k[j].i].own > all ? w->r[k[j].i].own - all : 0;
    fw_rec *x = &w->r[k[last].i];
    size_t m = 0;
    for (size_t j = 0; j < n; j++)
        if (j != last)
            scratch[m++] = arrival(&w->r[k[j].i]);
    uint64_t late = arrival(x) - nsc_rc_median(scratch, m);
    m = 0;
    for (size_t j = 0; j < n; j++) {
        w->r[k[j].i].last_who = x->who;
        if (j != last)
            scratch[m++] = w->r[k[j].i].own;
    }
    if (late < NSC_FIG_LATE_MIN_NS)
        return;
    uint64_t others = nsc_rc_median(scratch, m);
    size_t cell = w->c[x->comm].first + (size_t)x->rank;
    x->late_last = 1;
    for (size_t j = 0; j < n; j++)
        x->waited += arrival(x) - arrival(&w->r[k[j].i]);
    late_n[cell]++;
    x->own_late = x->first || (x->own > others && 2 * (x->own - others) >= late);
    own_n[cell] += x->own_late;
}

int nsc_rc_judge_colls(nsc_rc_follow *w, uint32_t *late_n, uint32_t *own_n)
{
    fw_key *k = malloc((w->n + 1) * sizeof *k);
    uint64_t *scratch = malloc((w->n + 1) * sizeof *scratch);
    size_t n = 0;
    for (size_t i = 0; k && i < w->n; i++)
        if (!w->r[i].p2p)
            k[n++] = (fw_key){w->r[i].comm, w->r[i].seq, i};
    if (k && scratch) {
        qsort(k, n, sizeof *k, by_coll);
        for (size_t lo = 0, hi; lo < n; lo = hi) {
            for (hi = lo + 1; hi < n && k[hi].comm == k[lo].comm && k[hi].seq == k[lo].seq; hi++)
                ;
            if (hi - lo >= 2)
                judge_coll(w, k + lo, hi - lo, scratch, late_n, own_n);
        }
    }
    int rc = k && scratch ? 0 : -1;
    free(k);
    free(scratch);
    return rc;
}
