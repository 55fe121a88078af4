/* colls_stats.c: the stats endpoint (colls_int.h): duration and bandwidth
 * percentiles of the matched collectives per (func, size bucket), and the
 * ranks that arrive last most often. */
#include "colls_int.h"
#include "figures.h"
#include "order.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_item {
    uint32_t func;
    unsigned bucket;  /* floor(log2(bytes)) */
    uint64_t dur;
    double algbw, busbw;
} st_item;

static int by_bucket(const void *a, const void *b)
{
    const st_item *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->func, y->func), NSC_CMP(x->bucket, y->bucket), NSC_CMP(x->dur, y->dur));
}

/* Nearest-rank percentile of a sorted array. */
static size_t pct_index(size_t n, unsigned p)
{
    size_t k = (n * p + 99) / 100;
    return k ? k - 1 : 0;
}

static void write_bucket(nsc_q_ctx *c, st_item *it, size_t n, double *scratch, int first)
{
    nsc_q_out *o = c->out;
    nsc_q_cs(o, first ? "{\"func\":" : ",{\"func\":");
    nsc_q_str(o, nsc_q_text(c, it->func));
    nsc_q_lit(o, ",\"bytes_min\":");
    nsc_q_u64(o, it->bucket == 64 ? 0 : 1ull << it->bucket);
    nsc_q_lit(o, ",\"bytes_max\":");
    nsc_q_u64(o, it->bucket == 64 ? 0 : it->bucket == 63 ? UINT64_MAX : (2ull << it->bucket) - 1);
    nsc_q_lit(o, ",\"count\":");
    nsc_q_u64(o, n);
    static const unsigned ps[3] = {50, 90, 99};
    static const char *const lat[3] = {",\"latency_p50_ns\":", ",\"latency_p90_ns\":",
                                       ",\"latency_p99_ns\":"};
    for (int i = 0; i < 3; i++) {
        nsc_q_raw(o, lat[i], strlen(lat[i]));
        nsc_q_u64(o, it[pct_index(n, ps[i])].dur);
    }
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < n; i++)
            scratch[i] = k ? it[i].busbw : it[i].algbw;
        qsort(scratch, n, sizeof *scratch, nsc_cmp_double);
        const char *key = k ? ",\"busbw_gbps_p50\":" : ",\"algbw_gbps_p50\":";
        nsc_q_raw(o, key, strlen(key));
        nsc_q_num(o, scratch[pct_index(n, 50)]);
    }
    nsc_q_lit(o, "}");
}

/* A rank's counts over the complete collectives: last at, late of its own
 * at, taken part in. */
static void write_rank_counts(nsc_q_ctx *c, int32_t rank, uint64_t last, uint64_t own, uint64_t seen)
{
    nsc_q_out *o = c->out;
    nsc_q_lit(o, "{\"rank\":");
    nsc_q_i64(o, rank);
    nsc_q_lit(o, ",\"last_arrivals\":");
    nsc_q_u64(o, last);
    nsc_q_lit(o, ",\"late_of_its_own\":");
    nsc_q_u64(o, own);
    nsc_q_lit(o, ",\"collectives\":");
    nsc_q_u64(o, seen);
    nsc_q_lit(o, "}");
}

/* The straggler (figures.c), then every rank that was last at a complete
 * collective, most often first. */
static void write_stragglers(nsc_q_ctx *c, const cl_set *s)
{
    nsc_q_out *o = c->out;
    size_t n = c->nranks ? c->nranks : 1;
    uint64_t *last = calloc(n, sizeof *last), *own = calloc(n, sizeof *own), *seen = calloc(n, sizeof *seen);
    uint64_t complete = 0;
    int64_t st = -1;
    if (last && own && seen) {
        for (size_t i = 0; i < s->ngroups; i++) {
            const cl_group *g = &s->groups[i];
            int counts = nsc_fig_complete(g);
            complete += (uint64_t)counts;
            for (size_t k = 0; counts && k < g->n; k++) {
                const cl_rec *x = &s->recs[g->first + k];
                seen[x->r]++;
                last[x->r] += x->rank == g->last_rank;
                own[x->r] += x->rank == g->last_rank && g->late_own;
            }
        }
        st = nsc_fig_straggler(own, seen, c->nranks);
    }
    nsc_q_lit(o, ",\"complete\":");
    nsc_q_u64(o, complete);
    nsc_q_lit(o, ",\"straggler\":");
    if (st < 0) {
        nsc_q_lit(o, "null");
    } else {
        write_rank_counts(c, c->ranks[st].rank, last[st], own[st], seen[st]);
    }
    nsc_q_lit(o, ",\"stragglers\":[");
    int first = 1;
    for (; last && own && seen;) { /* ranks by last arrivals, most first (selection: few ranks) */
        size_t best = c->nranks;
        for (size_t r = 0; r < c->nranks; r++)
            if (last[r] && (best == c->nranks || last[r] > last[best]))
                best = r;
        if (best == c->nranks)
            break;
        if (!first)
            nsc_q_lit(o, ",");
        write_rank_counts(c, c->ranks[best].rank, last[best], own[best], seen[best]);
        last[best] = 0;
        first = 0;
    }
    free(last);
    free(own);
    free(seen);
    nsc_q_lit(o, "]");
}

static unsigned log2_bucket(uint64_t bytes)
{
    if (!bytes)
        return 64;
    unsigned b = 0;
    while (bytes >>= 1)
        b++;
    return b;
}

int nsc_q_stats(nsc_q_ctx *c)
{
    cl_set s = {.c = c};
    int rc = nsc_q_cl_collect(&s);
    st_item *items = NULL;
    double *scratch = NULL;
    if (!rc) {
        items = malloc((s.ngroups + 1) * sizeof *items);
        scratch = malloc((s.ngroups + 1) * sizeof *scratch);
        if (!items || !scratch)
            rc = nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    }
    size_t n = 0;
    for (size_t i = 0; !rc && i < s.ngroups; i++) {
        const cl_group *g = &s.groups[i];
        if (!g->has_dur)
            continue;
        items[n++] = (st_item){s.recs[g->first].func, log2_bucket(g->bytes), g->dur,
                               g->algbw, g->busbw};
    }
    if (!rc) {
        qsort(items, n, sizeof *items, by_bucket);
        nsc_q_out *o = c->out;
        nsc_q_lit(o, "{");
        nsc_q_write_comm_head(c);
        nsc_q_cl_write_source(o, &s);
        nsc_q_lit(o, ",\"collectives\":");
        nsc_q_u64(o, s.ngroups);
        nsc_q_lit(o, ",\"buckets\":[");
        for (size_t i = 0; i < n;) {
            size_t j = i + 1;
            while (j < n && items[j].func == items[i].func && items[j].bucket == items[i].bucket)
                j++;
            write_bucket(c, items + i, j - i, scratch, i == 0);
            i = j;
        }
        nsc_q_lit(o, "]");
        write_stragglers(c, &s);
        nsc_q_write_skipped(c);
        nsc_q_lit(o, "}\n");
        rc = o->err;
    }
    free(items);
    free(scratch);
    nsc_q_cl_free(&s);
    return rc;
}
