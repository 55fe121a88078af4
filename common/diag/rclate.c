/* rclate.c: late ranks, the first of root cause's analyses (rcint.h): who
 * arrived last at each collective, how late, and whether its host, its GPU
 * or its previous collective made it late; also keeps the first collective
 * that never ended, for rcstall.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcint.h"

nsc_rc_late *nsc_rc_late_new(int64_t nranks)
{
    if (nranks <= 0 || nranks > (1 << 20))
        return NULL;
    nsc_rc_late *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->nranks = nranks;
    l->r = calloc((size_t)nranks, sizeof *l->r);
    l->scratch = calloc(3 * (size_t)nranks, sizeof *l->scratch);
    l->stuck_id = calloc((size_t)nranks, sizeof *l->stuck_id);
    if (!l->r || !l->scratch || !l->stuck_id) {
        nsc_rc_late_free(l);
        return NULL;
    }
    return l;
}

void nsc_rc_late_free(nsc_rc_late *l)
{
    if (!l)
        return;
    free(l->r);
    free(l->scratch);
    free(l->stuck_id);
    free(l);
}

static int has_num(const nsc_json *o, const char *key, uint64_t *v)
{
    return nsc_json_u64(nsc_json_get(o, key), v) == 0;
}

int nsc_rc_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void keep_stuck(nsc_rc_late *l, const nsc_json *coll)
{
    const nsc_json *ranks = nsc_json_get(coll, "ranks");
    l->stuck = 1;
    l->stuck_seq = nsc_diag_num(coll, "seq");
    l->stuck_start = nsc_diag_num(coll, "start_ns");
    l->stuck_nch = (uint32_t)nsc_diag_num(coll, "nchannels");
    const char *func = nsc_json_str(nsc_json_get(coll, "func"));
    snprintf(l->stuck_func, sizeof l->stuck_func, "%s", func ? func : "?");
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        uint64_t rank = nsc_diag_num(r, "rank");
        if (rank < (uint64_t)l->nranks)
            l->stuck_id[rank] = nsc_diag_num(r, "id");
    }
}

/* A rank's gaps before a collective: its host's, from its device's previous
 * end to its enqueue, and its GPU's, from both to its kernel start. 0 if
 * its previous end is unknown. */
static void gaps(const nsc_rc_late *l, const nsc_json *r, uint64_t *host, uint64_t *gpu)
{
    uint64_t rank = nsc_diag_num(r, "rank"), enq = nsc_diag_num(r, "enqueue_ns"), arrival = nsc_diag_num(r, "arrival_ns");
    *host = *gpu = 0;
    if (rank >= (uint64_t)l->nranks || !l->r[rank].has_prev)
        return;
    uint64_t idle = l->r[rank].prev_kend, ready = enq > idle ? enq : idle;
    *host = enq > idle ? enq - idle : 0;
    *gpu = arrival > ready ? arrival - ready : 0;
}

static uint64_t median_of(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, nsc_rc_cmp_u64);
    return n ? v[n / 2] : 0;
}

/* Split the last rank's lateness (against the others' median arrival) into
 * what its host and its GPU took beyond what the others' took (their median
 * gaps: every host needs some time to enqueue after a sync) and the rest,
 * inherited from its previous collective's end; charge it the others' waits.
 * Without kernel times it is all the host's. */
static void charge_last(nsc_rc_late *l, const nsc_json *coll, const nsc_json *last, int gpu)
{
    const nsc_json *ranks = nsc_json_get(coll, "ranks");
    size_t n = 0;
    uint64_t cost = 0, *hg = l->scratch + l->nranks, *gg = l->scratch + 2 * l->nranks;
    for (const nsc_json *r = nsc_json_first(ranks); r && n < (size_t)l->nranks; r = nsc_json_next(ranks, r))
        if (r != last) {
            l->scratch[n] = nsc_diag_num(r, "arrival_ns");
            gaps(l, r, &hg[n], &gg[n]);
            cost += nsc_diag_num(r, "wait_ns");
            n++;
        }
    uint64_t rank = nsc_diag_num(last, "rank"), arrival = nsc_diag_num(last, "arrival_ns");
    uint64_t ref = median_of(l->scratch, n);
    if (!n || arrival <= ref || rank >= (uint64_t)l->nranks)
        return;
    rc_rank_late *x = &l->r[rank];
    uint64_t late = arrival - ref, host = late, gpu_x = 0;
    if (gpu) {
        uint64_t h, g, mh = median_of(hg, n), mg = median_of(gg, n);
        gaps(l, last, &h, &g);
        gpu_x = g > mg ? g - mg : 0;
        gpu_x = gpu_x < late ? gpu_x : late;
        host = h > mh ? h - mh : 0;
        host = host < late - gpu_x ? host : late - gpu_x;
    }
    x->last++;
    x->own_late += gpu_x + host >= RC_LATE_MIN_NS && gpu_x + host >= late - gpu_x - host;
    x->cost_ns += cost;
    x->gpu_ns += gpu_x;
    x->host_ns += host;
    x->prev_ns += late - gpu_x - host;
}

void nsc_rc_late_add(nsc_rc_late *l, const nsc_json *coll)
{
    const nsc_json *ranks = nsc_json_get(coll, "ranks"), *missing = nsc_json_get(coll, "missing_ranks");
    const nsc_json *end = nsc_json_get(coll, "end_ns"), *mm = nsc_json_get(coll, "mismatch");
    /* a rank the store never saw is in no missing_ranks: ranks_seen tells */
    if (!ranks || (missing && missing->count) || (mm && mm->kind != NSC_JSON_NULL) ||
        nsc_diag_num(coll, "ranks_seen") < nsc_diag_num(coll, "nranks"))
        return;
    if (!end || end->kind == NSC_JSON_NULL) {
        if (!l->stuck)
            keep_stuck(l, coll);
        return;
    }
    const char *arrival = nsc_json_str(nsc_json_get(coll, "arrival"));
    uint64_t last_rank = nsc_diag_num(coll, "last_rank");
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r))
        if (nsc_diag_num(r, "rank") == last_rank)
            charge_last(l, coll, r, arrival && strcmp(arrival, "gpu") == 0);
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        uint64_t rank = nsc_diag_num(r, "rank"), kend;
        if (rank >= (uint64_t)l->nranks)
            continue;
        l->r[rank].seen++;
        if (has_num(r, "kernel_end_ns", &kend))
            l->r[rank].prev_kend = kend, l->r[rank].has_prev = 1;
    }
}

/* ---- late ranks ------------------------------------------------------------ */

void nsc_rc_check_late(nsc_findings *f, const char *comm, const rc_pass *p)
{
    const nsc_rc_late *l = p->l;
    int64_t best = -1;
    for (int64_t r = 0; r < l->nranks; r++)
        if (l->r[r].own_late && (best < 0 || l->r[r].own_late > l->r[best].own_late))
            best = r;
    if (best < 0)
        return;
    const rc_rank_late *x = &l->r[best];
    uint64_t late = x->host_ns + x->gpu_ns + x->prev_ns;
    /* inherited lateness is the previous collective's cause, reported there */
    if (x->own_late < RC_LATE_MIN_COLLS || 2 * x->own_late <= x->seen)
        return;
    int gpu = x->gpu_ns > x->host_ns;
    nsc_problem *q = nsc_diag_add(
        f, NSC_SEV_LATE, gpu ? "gpu_late" : "host_late", comm, 0, best,
        "%s: rank %" PRId64 " (%s) arrived last at %" PRIu64 " of %" PRIu64 " collectives (at %" PRIu64
        " by 1 ms or more of its own), %.2f ms late on average (%s); the others waited %.1f ms in all",
        gpu ? "GPU late" : "host late", best, nsc_rc_host_of(p, (int32_t)best), x->last, x->seen, x->own_late,
        (double)late / (double)x->last / 1e6,
        gpu ? "its GPU started after its enqueue and its previous work" : "its host enqueued after the others were ready",
        (double)x->cost_ns / 1e6);
    if (!q)
        return;
    snprintf(q->hosts[0], sizeof q->hosts[0], "%s", nsc_rc_host_of(p, (int32_t)best));
    snprintf(q->figures, sizeof q->figures,
             "\"last_arrivals\":%" PRIu64 ",\"late_of_its_own\":%" PRIu64 ",\"collectives\":%" PRIu64
             ",\"host_late_ns\":%" PRIu64 ",\"gpu_late_ns\":%" PRIu64 ",\"inherited_ns\":%" PRIu64
             ",\"cost_ns\":%" PRIu64,
             x->last, x->own_late, x->seen, x->host_ns, x->gpu_ns, x->prev_ns, x->cost_ns);
}

