/* p2p.c: Send/Recv operations of one communicator matched into pairs.
 *
 * NCCL delivers the operations between two ranks in order: the n-th Send
 * from rank a to peer b meets the n-th Recv on rank b from peer a. Every P2p
 * event of the communicator in the window (read from the blocks the store's
 * p2p index names: a communicator without one decodes none) is keyed by its direction
 * (from, to), with a Send keyed by its own rank and peer and a Recv by its
 * peer and its own rank, and sorted by start time within its direction and
 * side; the two sides then pair up by position. Counts start at the window:
 * a window that cuts a pair's history shifts its matching (the default
 * window is the whole job). settled_ns names a start that cuts none, so
 * that a later read (the collector's root-cause passes) can begin there and
 * not read the job whole again; settle_lag_ns keeps it behind the records
 * still on their way.
 */
#include "qint.h"
#include "busbw.h"
#include "grow.h"
#include "order.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define P2P_UNMATCHED_MAX 100  /* unmatched operations listed (all are counted) */

typedef struct pp_op {
    int32_t from, to;
    uint8_t recv;       /* 0 Send, 1 Recv: a direction's sends sort first */
    uint64_t start, id; /* aligned start */
    uint64_t bytes;
} pp_op;

typedef struct pp_set {
    pp_op *v;
    size_t n, cap;
    uint64_t *last; /* by c->ranks' index: the rank's latest operation's start (0: none) */
} pp_set;

/* One operation in start order: +1 a Send, -1 a Recv of direction dir. */
typedef struct pp_step {
    uint64_t start;
    size_t dir;
    int delta;
} pp_step;

/* Totals of one direction or of the communicator. */
typedef struct pp_count {
    uint64_t sends, recvs, matched, size_mismatches, bytes;
    int64_t wait_sum, wait_max;
} pp_count;

static int add_op(nsc_q_ctx *c, pp_set *s, const nsc_q_rank *r, const nsc_event *ev)
{
    const char *func = nsc_q_text(c, ev->d.p2p.func);
    int recv = strcasecmp(func, "Recv") == 0;
    if (!recv && strcasecmp(func, "Send") != 0)
        return 0;
    if (nsc_grow(&s->v, s->n, &s->cap, sizeof *s->v, 256))
        return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    pp_op *x = &s->v[s->n++];
    x->from = recv ? ev->d.p2p.peer : r->rank;
    x->to = recv ? r->rank : ev->d.p2p.peer;
    x->recv = (uint8_t)recv;
    x->start = nsc_q_align(c, r, ev->start_ns, NULL);
    x->id = ev->id;
    uint64_t *last = &s->last[r - c->ranks];
    *last = x->start > *last ? x->start : *last;
    x->bytes = ev->d.p2p.count * nsc_dtype_size(nsc_q_text(c, ev->d.p2p.datatype));
    return 0;
}

/* The P2p events of one block of rank r that start in the window. */
static int add_block(nsc_q_ctx *c, const nsc_q_rank *r, const nsc_block *blk, void *arg)
{
    int rc = 0;
    for (uint32_t i = 0; !rc && i < blk->hdr.nevents; i++) {
        const nsc_event *ev = &blk->events[i];
        uint64_t t = nsc_q_align(c, r, ev->start_ns, NULL);
        if (ev->type == NSC_T_P2P && t >= c->q->t0 && t <= c->q->t1)
            rc = add_op(c, arg, r, ev);
    }
    return rc;
}

static int by_start(const void *a, const void *b)
{
    const pp_step *x = a, *y = b;
    return NSC_CMP(x->start, y->start);
}

static int by_direction(const void *a, const void *b)
{
    const pp_op *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->from, y->from), NSC_CMP(x->to, y->to), NSC_CMP(x->recv, y->recv),
                     NSC_CMP(x->start, y->start), NSC_CMP(x->id, y->id));
}

static void add_count(pp_count *t, const pp_count *p)
{
    if (p->matched && (!t->matched || p->wait_max > t->wait_max))
        t->wait_max = p->wait_max;
    t->sends += p->sends;
    t->recvs += p->recvs;
    t->matched += p->matched;
    t->size_mismatches += p->size_mismatches;
    t->bytes += p->bytes;
    t->wait_sum += p->wait_sum;
}

static void write_count(nsc_q_out *o, const pp_count *p)
{
    nsc_q_lit(o, ",\"sends\":");
    nsc_q_u64(o, p->sends);
    nsc_q_lit(o, ",\"recvs\":");
    nsc_q_u64(o, p->recvs);
    nsc_q_lit(o, ",\"matched\":");
    nsc_q_u64(o, p->matched);
    nsc_q_lit(o, ",\"unmatched_sends\":");
    nsc_q_u64(o, p->sends - p->matched);
    nsc_q_lit(o, ",\"unmatched_recvs\":");
    nsc_q_u64(o, p->recvs - p->matched);
    nsc_q_lit(o, ",\"size_mismatches\":");
    nsc_q_u64(o, p->size_mismatches);
    nsc_q_lit(o, ",\"bytes\":");
    nsc_q_u64(o, p->bytes);
    nsc_q_lit(o, ",\"wait_ns_mean\":");
    if (p->matched)
        nsc_q_i64(o, p->wait_sum / (int64_t)p->matched);
    else
        nsc_q_lit(o, "null");
    nsc_q_lit(o, ",\"wait_ns_max\":");
    if (p->matched)
        nsc_q_i64(o, p->wait_max);
    else
        nsc_q_lit(o, "null");
}

/* Match the direction v[0..n) (its sends, then its receives) by position. */
static pp_count match_direction(const pp_op *v, size_t n)
{
    pp_count p = {0};
    while (p.sends < n && !v[p.sends].recv)
        p.sends++;
    p.recvs = n - p.sends;
    p.matched = p.sends < p.recvs ? p.sends : p.recvs;
    for (size_t k = 0; k < p.matched; k++) {
        const pp_op *snd = &v[k], *rcv = &v[p.sends + k];
        int64_t wait = (int64_t)(rcv->start - snd->start);
        if (k == 0 || wait > p.wait_max)
            p.wait_max = wait;
        p.wait_sum += wait;
        p.size_mismatches += snd->bytes != rcv->bytes;
        p.bytes += snd->bytes;
    }
    return p;
}

/* The end of the direction that starts at s->v[i]. */
static size_t direction_end(const pp_set *s, size_t i)
{
    size_t j = i;
    while (j < s->n && s->v[j].from == s->v[i].from && s->v[j].to == s->v[i].to)
        j++;
    return j;
}

static pp_count total_count(const pp_set *s)
{
    pp_count total = {0};
    for (size_t i = 0, j; i < s->n; i = j) {
        j = direction_end(s, i);
        pp_count p = match_direction(s->v + i, j - i);
        add_count(&total, &p);
    }
    return total;
}

static void write_pairs(nsc_q_out *o, const pp_set *s)
{
    nsc_q_lit(o, ",\"pairs\":[");
    for (size_t i = 0, j; i < s->n; i = j) {
        j = direction_end(s, i);
        pp_count p = match_direction(s->v + i, j - i);
        nsc_q_cs(o, i ? ",{\"from\":" : "{\"from\":");
        nsc_q_i64(o, s->v[i].from);
        nsc_q_lit(o, ",\"to\":");
        nsc_q_i64(o, s->v[i].to);
        write_count(o, &p);
        nsc_q_lit(o, "}");
    }
    nsc_q_lit(o, "]");
}

/* The operations left over in each direction: a Send never received or a
 * Recv whose Send never came; nth counts that side of the direction from 0. */
static void write_unmatched(nsc_q_ctx *c, const pp_set *s)
{
    nsc_q_out *o = c->out;
    nsc_q_lit(o, ",\"unmatched\":[");
    size_t listed = 0;
    for (size_t i = 0, j; i < s->n; i = j) {
        j = direction_end(s, i);
        pp_count p = match_direction(s->v + i, j - i);
        size_t first = p.sends > p.recvs ? i + p.matched : i + p.sends + p.matched;
        size_t end = p.sends > p.recvs ? i + p.sends : j;
        for (size_t k = first; k < end && listed < P2P_UNMATCHED_MAX; k++, listed++) {
            const pp_op *x = &s->v[k];
            nsc_q_cs(o, listed ? ",{\"func\":" : "{\"func\":");
            nsc_q_cs(o, x->recv ? "\"Recv\",\"rank\":" : "\"Send\",\"rank\":");
            nsc_q_i64(o, x->recv ? x->to : x->from);
            nsc_q_lit(o, ",\"peer\":");
            nsc_q_i64(o, x->recv ? x->from : x->to);
            nsc_q_lit(o, ",\"nth\":");
            nsc_q_u64(o, (uint64_t)(k - (x->recv ? i + p.sends : i)));
            nsc_q_lit(o, ",\"start_ns\":");
            nsc_q_u64(o, x->start);
            nsc_q_write_utc(c, "start_utc", 1, x->start);
            nsc_q_lit(o, ",\"bytes\":");
            nsc_q_u64(o, x->bytes);
            nsc_q_lit(o, "}");
        }
    }
    nsc_q_lit(o, "]");
}

/* The latest start s <= cap such that before it every direction of v (in
 * start order) holds as many Sends as Recvs, else from: a window from s
 * pairs its operations as the whole job does. */
static uint64_t balanced_before(const pp_step *v, size_t n, size_t ndir, uint64_t from, uint64_t cap, int *err)
{
    int64_t *bal = calloc(ndir ? ndir : 1, sizeof *bal);
    uint64_t at = from;
    size_t open = 0, i = 0;
    if (!bal) {
        *err = 1;
        return from;
    }
    for (; i < n && v[i].start <= cap; i++) {
        if (!open && (!i || v[i].start != v[i - 1].start))
            at = v[i].start;
        int64_t was = bal[v[i].dir];
        bal[v[i].dir] += v[i].delta;
        open += !was;
        open -= !bal[v[i].dir];
    }
    if (!open && (!i || v[i - 1].start < cap))
        at = cap;
    free(bal);
    return at > from ? at : from;
}

/* Where a later read can start without cutting a pair (settled_ns): before
 * it the directions balance (balanced_before), every rank with an
 * operation in the window already reported one past it, and it lies
 * settle_lag before the latest operation read. A rank's records need not
 * arrive in start order (an operation's record comes when it ends, after
 * the ones that started later and ended sooner; batches of two agents
 * interleave): one that started before the settled point would be missed by
 * a read from there, and its other side reported unmatched, so the point
 * waits settle_lag for such a record. Only operations count, as only the
 * P2p events are read (the store's p2p index): without one in the window
 * the point stays at the window's start, and the next read from there
 * decodes no block again. s is sorted by direction. */
static int settled_at(nsc_q_ctx *c, const pp_set *s, uint64_t *at)
{
    uint64_t cap = c->q->t1, latest = 0;
    for (size_t r = 0; r < c->nranks; r++) {
        uint64_t a = s->last[r];
        cap = a && a < cap ? a : cap;
        latest = a > latest ? a : latest;
    }
    uint64_t lagged = latest > c->q->settle_lag ? latest - c->q->settle_lag : 0;
    cap = lagged < cap ? lagged : cap;  /* below t0_ns: balanced_before holds t0_ns */
    pp_step *v = malloc((s->n ? s->n : 1) * sizeof *v);
    if (!v)
        return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    size_t ndir = 0;
    for (size_t i = 0; i < s->n; i++) {
        ndir += i && (s->v[i].from != s->v[i - 1].from || s->v[i].to != s->v[i - 1].to);
        v[i] = (pp_step){s->v[i].start, ndir, s->v[i].recv ? -1 : 1};
    }
    if (s->n)
        qsort(v, s->n, sizeof *v, by_start);
    int err = 0;
    *at = balanced_before(v, s->n, ndir + 1, c->q->t0, cap, &err);
    free(v);
    return err ? nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory") : 0;
}

int nsc_q_p2p(nsc_q_ctx *c)
{
    pp_set s = {.last = calloc(c->nranks ? c->nranks : 1, sizeof *s.last)};
    uint64_t settled = 0;
    int rc = s.last ? 0 : nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    for (size_t r = 0; !rc && r < c->nranks; r++)
        rc = nsc_q_rank_p2p_blocks(c, &c->ranks[r], add_block, &s);
    if (!rc && s.n) /* qsort wants an array even for none (UBSan) */
        qsort(s.v, s.n, sizeof *s.v, by_direction);
    if (!rc)
        rc = settled_at(c, &s, &settled);
    if (!rc) {
        nsc_q_out *o = c->out;
        pp_count total = total_count(&s);
        nsc_q_lit(o, "{");
        nsc_q_write_comm_head(c);
        nsc_q_lit(o, ",\"settled_ns\":");
        nsc_q_u64(o, settled);
        write_count(o, &total);
        write_pairs(o, &s);
        write_unmatched(c, &s);
        nsc_q_write_skipped(c);
        nsc_q_lit(o, "}\n");
        rc = o->err;
    }
    free(s.last);
    free(s.v);
    return rc;
}
