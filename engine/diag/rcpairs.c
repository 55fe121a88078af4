/* rcpairs.c: Send/Recv judged for late hosts (rcfw.h). A pipeline stage's
 * host late before its Recv is last at no collective after it (the other
 * stage is still computing), so the follow of late ranks (rcfollow.c)
 * would name it nowhere: each Send is met with its Recv and with the same
 * Send/Recv of the other pipelines, and a side whose host's gap goes beyond
 * theirs on a beat is late of its own there, whatever it cost. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figures.h"
#include "order.h"
#include "rcfw.h"
#include "rcint.h"

typedef struct fw_pkey {
    uint32_t comm;
    int64_t size;  /* its communicator's ranks */
    int32_t from, to;
    uint64_t seq;
    uint8_t recv;
    size_t i;
} fw_pkey;

static int by_pair(const void *a, const void *b)
{
    const fw_pkey *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->comm, y->comm), NSC_CMP(x->from, y->from), NSC_CMP(x->to, y->to),
                     NSC_CMP(x->seq, y->seq), NSC_CMP(x->recv, y->recv));
}

/* The same Send/Recv side of every pipeline together: communicators of one
 * size, the same ranks, seq and side. */
static int by_replica(const void *a, const void *b)
{
    const fw_pkey *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->size, y->size), NSC_CMP(x->from, y->from), NSC_CMP(x->to, y->to),
                     NSC_CMP(x->seq, y->seq), NSC_CMP(x->recv, y->recv), NSC_CMP(x->comm, y->comm));
}

static int same_replica(const fw_pkey *x, const fw_pkey *y)
{
    return x->size == y->size && x->from == y->from && x->to == y->to && x->seq == y->seq && x->recv == y->recv;
}

/* Each Send/Recv side of k[0..n) (one per pipeline, n >= 2): its host gap
 * beyond the lower median of the other pipelines' there. A whole stage's
 * hosts pause at a step's start on a loaded machine (the 64 processes
 * waking), the other stage's busy computing before its Send: the peer's gap
 * is no measure of a late host, the same stage's in the data-parallel
 * replicas is. */
static void judge_replica(nsc_rc_follow *w, const fw_pkey *k, size_t n, uint64_t *gap)
{
    for (size_t j = 0; j < n; j++)
        gap[j] = w->r[k[j].i].host;
    qsort(gap, n, sizeof *gap, nsc_cmp_u64);
    size_t mid = (n - 2) / 2;  /* the others' lower median, n - 1 of them */
    for (size_t j = 0; j < n; j++) {
        fw_rec *x = &w->r[k[j].i];
        uint64_t others = x->host <= gap[mid] ? gap[mid + 1] : gap[mid];
        x->excess = x->host > others ? x->host - others : 0;
    }
}

/* Each Send met with its Recv (the n-th of a direction meets the n-th:
 * their seq, counted per peer and function, is the same): each side's
 * host gap beyond its peer's (a Send/Recv kernel's start waits on its
 * peer, no work of its own GPU), and how long its peer waited for it to
 * be posted. A pipeline stage's host late before its Recv is seen there,
 * though its lateness may cost nothing (the other stage still computing)
 * and it is last at no collective after. Where other pipelines have the
 * same Send/Recv, its gap is met with theirs instead (judge_replica). 0,
 * or -1 out of memory. */
int nsc_rc_pairs_judge(nsc_rc_follow *w)
{
    fw_pkey *k = malloc((w->n + 1) * sizeof *k);
    uint64_t *gap = malloc((w->n + 1) * sizeof *gap);
    if (!k || !gap) {
        free(k);
        free(gap);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < w->n; i++) {
        const fw_rec *x = &w->r[i];
        int recv = x->p2p == 2;
        if (x->p2p && x->peer >= 0)
            k[n++] = (fw_pkey){x->comm, w->c[x->comm].nranks, recv ? x->peer : x->rank, recv ? x->rank : x->peer,
                               x->seq, (uint8_t)recv, i};
    }
    qsort(k, n, sizeof *k, by_pair);
    for (size_t j = 0; j + 1 < n; j++) {
        const fw_pkey *s = &k[j], *r = &k[j + 1];
        if (s->recv || !r->recv || s->comm != r->comm || s->from != r->from || s->to != r->to || s->seq != r->seq)
            continue;
        fw_rec *a = &w->r[k[j].i], *b = &w->r[k[j + 1].i];
        a->excess = a->host > b->host ? a->host - b->host : 0;
        b->excess = b->host > a->host ? b->host - a->host : 0;
        a->waited = a->api > b->api ? a->api - b->api : 0;
        b->waited = b->api > a->api ? b->api - a->api : 0;
    }
    qsort(k, n, sizeof *k, by_replica);
    for (size_t lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo + 1; hi < n && same_replica(&k[lo], &k[hi]); hi++)
            ;
        if (hi - lo >= 2)
            judge_replica(w, k + lo, hi - lo, gap);
    }
    free(k);
    free(gap);
    return 0;
}

/* A process's host late on a beat at its Send/Recv in communicator c
 * (records [lo, hi) are the process's): its gap 1 ms or more beyond the
 * other pipelines' or its peer's (nsc_rc_pairs_judge) on a beat as the
 * collectives' (rclate.c: RC_LATE_BEAT_NUM, RC_LATE_BEAT_OFF), a training
 * job's stage whose host is late before each step's first Recv. Its
 * problem, with the figures rclate.c's have; its onset moved back by whole
 * beats as a collective's (nsc_rc_beat_start). */
static int p2p_beat(nsc_findings *f, const nsc_rc_follow *w, size_t lo, size_t hi, uint32_t c)
{
    rc_rank_late x = {0};
    uint64_t host = 0, waited = 0;
    const fw_rec *firsts[RC_LATE_ONSETS] = {0};
    for (size_t i = lo; i < hi; i++) {
        const fw_rec *r = &w->r[i];
        if (r->comm != c || !r->p2p)
            continue;
        if (r->excess >= NSC_FIG_LATE_MIN_NS) {
            if (x.affected < RC_LATE_ONSETS)
                firsts[x.affected] = r;
            nsc_rc_late_mark(&x, r->seq, r->api);
            host += r->host, waited += r->waited;
        }
        x.seen++;
    }
    size_t on;
    uint64_t every;
    if (!nsc_rc_late_beat(&x, &on, &every))
        return 0;
    const fw_rec *o = &w->r[nsc_rc_beat_start(w, firsts[on] - w->r, every)];
    nsc_problem *p = nsc_diag_add(
        f, NSC_SEV_LATE, "host_late", w->c[c].id, o->seq, o->rank,
        "host late: rank %" PRId32 " (%.*s) posted its Send/Recv late at %" PRIu64 " of %" PRIu64
        " (its host's gap 1 ms or more beyond its replicas' or its peer's), %.2f ms on average; since seq %" PRIu64
        ", 1 in %" PRIu64 ": its peers waited %.2f ms per such, %.1f ms in all",
        o->rank, (int)strcspn(w->who[o->who], " "), w->who[o->who], x.affected, x.seen,
        (double)host / (double)x.affected / 1e6, o->seq, every, (double)waited / (double)x.affected / 1e6,
        (double)waited / 1e6);
    if (!p)
        return 0;
    nsc_diag_began_ns(p, f, o->api);
    snprintf(p->hosts[0], sizeof p->hosts[0], "%.*s", (int)strcspn(w->who[o->who], " "), w->who[o->who]);
    snprintf(p->figures, sizeof p->figures,
             "\"last_arrivals\":%" PRIu64 ",\"late_of_its_own\":%" PRIu64 ",\"collectives\":%" PRIu64
             ",\"host_late_ns\":%" PRIu64 ",\"gpu_late_ns\":0,\"inherited_ns\":0,\"cost_ns\":%" PRIu64
             ",\"onset_seq\":%" PRIu64 ",\"onset_ns\":%" PRIu64 ",\"every\":%" PRIu64 ",\"own_cost_ns\":%" PRIu64,
             x.affected, x.affected, x.seen, host, waited, o->seq, o->api, every, waited);
    return 1;
}

/* The Send/Recv of every process that no collective's problem stands for
 * (origin[who] 0) judged for a beat in each communicator: a stage's host
 * late before its Recv is named nowhere else, and one that is (a slow GPU
 * holding its host at a communicator switch) is judged there. How many
 * problems were added, -1 out of memory. */
int nsc_rc_pairs_beats(nsc_findings *f, const nsc_rc_follow *w, const uint8_t *origin)
{
    uint8_t *done = calloc(w->nc + 1, 1);
    if (!done)
        return -1;
    int added = 0;
    for (size_t lo = 0, hi; lo < w->n; lo = hi) {
        for (hi = lo; hi < w->n && w->r[hi].who == w->r[lo].who; hi++)
            ;
        memset(done, 0, w->nc);
        for (size_t i = lo; i < hi && !origin[w->r[lo].who]; i++)
            if (w->r[i].p2p && !done[w->r[i].comm]) {
                done[w->r[i].comm] = 1;
                added += p2p_beat(f, w, lo, hi, w->r[i].comm);
            }
    }
    free(done);
    return added;
}
