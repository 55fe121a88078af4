/* rcpairs.c: Send/Recv judged for late hosts (rcfw.h). A pipeline stage's
 * host late before its Recv is last at no collective after it (the other
 * stage is still computing), so the follow of late ranks (rcfollow.c)
 * would name it nowhere: each Send is met with its Recv and with the same
 * Send/Recv of the other pipelines, each side's host gap beyond theirs
 * kept for rcbeats.c, which names a side late on a beat of them. */
#include <stdlib.h>

#include "order.h"
#include "rcfw.h"

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
