/* colls.c: collectives matched across ranks by (comm, func, seqNumber), for
 * the collectives and stats endpoints (colls_int.h).
 *
 * Per selected rank, one pass over its blocks in the window gathers its Coll
 * events, the KernelCh children (for kernel times, and the pTimer pairs the
 * rank's GPU line is fitted from) and the completions; a second pass over the
 * rank's process blocks finds completions that arrived in a later batch than
 * their event. Then records are grouped by (func, seq). Memory grows with
 * the collectives in the window (narrow it with t0_ns/t1_ns or seq).
 */
#include "colls_int.h"
#include "figures.h"
#include "grow.h"
#include "order.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int want_coll(cl_set *s, uint64_t seq, uint32_t func)
{
    const nsc_query *q = s->c->q;
    return seq >= q->seq_lo && seq <= q->seq_hi &&
           (!(q->has & QP_FUNC) || strcasecmp(nsc_q_text(s->c, func), q->func) == 0);
}

static cl_rec *new_rec(cl_set *s)
{
    if (nsc_grow(&s->recs, s->nrecs, &s->cap, sizeof *s->recs, 256)) {
        nsc_q_fail(s->c, NSC_QUERY_ESTORE, "out of memory");
        return NULL;
    }
    cl_rec *x = &s->recs[s->nrecs++];
    memset(x, 0, sizeof *x);
    return x;
}

static int add_coll(cl_set *s, uint32_t r, const nsc_event *ev)
{
    const nsc_q_rank *qr = &s->c->ranks[r];
    cl_rec *x = new_rec(s);
    if (!x)
        return NSC_QUERY_ESTORE;
    x->func = ev->d.coll.func;
    x->datatype = ev->d.coll.datatype;
    x->algo = ev->d.coll.algo;
    x->proto = ev->d.coll.proto;
    x->seq = ev->d.coll.seq;
    x->id = ev->id;
    x->count = ev->d.coll.count;
    x->rank = qr->rank;
    x->root = ev->d.coll.root;
    x->r = r;
    x->nchannels = ev->d.coll.nchannels;
    x->flags = ev->flags;
    x->enq = nsc_q_align(s->c, qr, ev->start_ns, &x->enq_err);
    x->enq_end = nsc_q_align(s->c, qr, ev->stop_ns, NULL);
    return 0;
}

static int add_done(cl_set *s, const nsc_q_rank *qr, const nsc_block *blk)
{
    for (uint32_t i = 0; i < blk->hdr.ncompletions; i++) {
        if (nsc_grow(&s->done, s->ndone, &s->dcap, sizeof *s->done, 256))
            return nsc_q_fail(s->c, NSC_QUERY_ESTORE, "out of memory");
        s->done[s->ndone++] =
            (cl_done){blk->completions[i].id, nsc_q_align(s->c, qr, blk->completions[i].ts_ns, NULL)};
    }
    return 0;
}

static int add_block(cl_set *s, uint32_t r, const nsc_block *blk, nsc_gpuclock *g)
{
    const nsc_q_rank *qr = &s->c->ranks[r];
    for (uint32_t i = 0; i < blk->hdr.nevents; i++) {
        const nsc_event *ev = &blk->events[i];
        if (ev->type == NSC_T_COLL && want_coll(s, ev->d.coll.seq, ev->d.coll.func)) {
            if (add_coll(s, r, ev))
                return NSC_QUERY_ESTORE;
        } else if (ev->type == NSC_T_KERNEL_CH && ev->parent) {
            if (nsc_grow(&s->kern, s->nkern, &s->kcap, sizeof *s->kern, 256))
                return nsc_q_fail(s->c, NSC_QUERY_ESTORE, "out of memory");
            s->kern[s->nkern++] = (cl_kernel){ev->parent, nsc_q_align(s->c, qr, ev->start_ns, NULL),
                                              nsc_q_align(s->c, qr, ev->stop_ns, NULL),
                                              ev->d.kernel_ch.ptimer_start,
                                              ev->d.kernel_ch.ptimer_stop,
                                              nsc_q_gpu_seen(s->c, qr, NULL, ev),
                                              (ev->flags & NSC_EVF_OPEN) != 0};
            if (nsc_q_gpu_pair(s->c, qr, g, NULL, ev))
                return NSC_QUERY_ESTORE;
        }
    }
    return add_done(s, qr, blk);
}

/* Every block of (comm, rank) in the rank's raw window through add. */
static int scan_rank(cl_set *s, uint32_t r, uint64_t comm, int32_t key_rank, nsc_gpuclock *g)
{
    nsc_q_ctx *c = s->c;
    uint64_t h0, h1;
    nsc_q_raw_window(c, &c->ranks[r], c->q->t0, c->q->t1, &h0, &h1);
    if (comm == NSC_STORE_PROC_COMM) /* completions come after their event */
        h1 = h1 < UINT64_MAX - 60000000000ull ? h1 + 60000000000ull : UINT64_MAX;
    nsc_store_blocks *it;
    int rc = nsc_store_blocks_open(c->rd, c->job, comm, key_rank, h0, h1, &it);
    if (rc)
        return nsc_q_store_fail(c, rc);
    nsc_block_key key;
    nsc_block blk;
    while ((rc = nsc_q_next_block(c, &c->ranks[r], it, NSC_MASK_ALL, NSC_BLOCK_STATES | NSC_BLOCK_COMPLETIONS,
                                  &key, &blk)) == 0) {
        rc = g ? add_block(s, r, &blk, g) : add_done(s, &c->ranks[r], &blk);
        nsc_block_release(&blk);
        if (rc)
            break;
    }
    nsc_store_blocks_close(it);
    return rc == 1 ? 0 : rc;
}

static int by_id(const void *a, const void *b)
{
    const cl_rec *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static cl_rec *find_rec(cl_rec *recs, size_t n, uint64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (recs[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && recs[lo].id == id ? &recs[lo] : NULL;
}

/* Each of a rank's records (in id order: a process numbers its events in
 * the order it starts them) gets its previous collective's kernel end. */
static void chain_prev(cl_rec *recs, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        const cl_rec *p = &recs[i - 1];
        recs[i].has_prev = p->has_prev || nsc_q_cl_kernel_done(p);
        recs[i].prev_end = nsc_q_cl_kernel_done(p) ? p->kend : p->prev_end;
    }
}

/* Join the rank's kernels and completions to its collectives. */
static void join_rank(cl_set *s, uint32_t r, size_t first, const nsc_gpuclock *g)
{
    cl_rec *recs = s->recs + first;
    size_t n = s->nrecs - first;
    qsort(recs, n, sizeof *recs, by_id);
    const nsc_q_rank *qr = &s->c->ranks[r];
    for (size_t i = 0; i < s->nkern; i++) {
        const cl_kernel *k = &s->kern[i];
        cl_rec *x = find_rec(recs, n, k->parent);
        if (!x)
            continue;
        uint64_t a0 = k->start, a1 = k->stop, e0 = 0, e1 = 0;
        if (nsc_gpuclock_kch_stale(g, k->pt_start, k->start, k->pt_stop, k->seen)) {
            x->uncertain = nsc_fig_u_stale; /* its host times stay, as for a missing timer */
        } else {
            nsc_q_gpu_align(s->c, qr, g, NULL, k->pt_start, &a0, &e0);
            nsc_q_gpu_align(s->c, qr, g, NULL, k->pt_stop, &a1, &e1);
        }
        if (!x->has_kernel || a0 < x->kstart)
            x->kstart = a0, x->kstart_err = e0;
        if (!k->open && (!x->nkch || a1 > x->kend))
            x->kend = a1, x->kend_err = e1;
        x->has_kernel = 1;
        x->nkch += !k->open;
    }
    for (size_t i = 0; i < s->ndone; i++) {
        cl_rec *x = find_rec(recs, n, s->done[i].id);
        if (x && (!x->has_done || s->done[i].ts > x->done))
            x->done = s->done[i].ts, x->has_done = 1;
    }
    chain_prev(recs, n);
}

static int gather(cl_set *s)
{
    nsc_q_ctx *c = s->c;
    int rc = 0;
    for (uint32_t r = 0; !rc && r < c->nranks; r++) {
        nsc_gpuclock g;
        nsc_gpuclock_init(&g);
        size_t first = s->nrecs;
        s->nkern = s->ndone = 0;
        rc = scan_rank(s, r, c->comm.comm_id, c->ranks[r].rank, &g);
        if (!rc && s->nrecs > first)
            rc = scan_rank(s, r, NSC_STORE_PROC_COMM, (int32_t)c->ranks[r].info.proc_id, NULL);
        if (!rc && s->nrecs > first) /* nothing to join to (and recs may be NULL) */
            join_rank(s, r, first, &g);
        nsc_gpuclock_free(&g);
    }
    return rc;
}

/* ---- matching and derived numbers --------------------------------------- */

static int by_coll(const void *a, const void *b)
{
    const cl_rec *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->func, y->func), NSC_CMP(x->seq, y->seq), NSC_CMP(x->rank, y->rank));
}

/* Each record's transport cap (nsc_fig_caps) from its group's hosts: the
 * ranks of its host count only when every rank is there (all_ranks);
 * scratch: 3 x g->n (counts, then the hosts). */
static void caps(const nsc_q_ctx *c, const cl_group *g, cl_rec *x, int all_ranks, uint64_t *scratch)
{
    uint32_t *host = (uint32_t *)(scratch + g->n);
    for (size_t i = 0; i < g->n; i++)
        host[i] = (uint32_t)c->ranks[x[i].r].host;
    nsc_fig_caps(x, g->n, host, all_ranks && c->nhosts <= g->n, scratch);
}

/* The group's figures (figures.c) under the operation's bandwidth model;
 * scratch: 3 x g->n. */
static void derive(cl_set *s, cl_group *g, uint64_t *scratch)
{
    nsc_q_ctx *c = s->c;
    cl_rec *x = &s->recs[g->first];
    nsc_busbw bw = nsc_busbw_rule(nsc_q_text(c, x->func), c->comm.nranks, x->count,
                                  nsc_dtype_size(nsc_q_text(c, x->datatype)));
    int all_ranks = c->comm.nranks > 0 && g->n >= (size_t)c->comm.nranks;
    caps(c, g, x, all_ranks, scratch);
    nsc_fig_group(g, x, nsc_q_text(c, x->func), all_ranks, bw, scratch);
    g->odd_rank = -1;
}

/* What a rank called, one field at a time: count, datatype, root. */
static int64_t field_of(const cl_rec *x, int f)
{
    return f == 0 ? (int64_t)x->count : f == 1 ? (int64_t)x->datatype : x->root;
}

/* The first rank whose count, datatype or root differs from what most ranks
 * called (a majority vote per field), described against one of the others. */
static void same_func_mismatch(cl_set *s, cl_group *g)
{
    static const char *const names[3] = {"count", "datatype", "root"};
    const cl_rec *x = &s->recs[g->first];
    for (int f = 0; f < 3; f++) {
        size_t cand = 0, votes = 0;
        for (size_t i = 0; i < g->n; i++) {
            if (!votes)
                cand = i, votes = 1;
            else
                votes += field_of(&x[i], f) == field_of(&x[cand], f) ? 1 : (size_t)-1;
        }
        for (size_t i = 0; i < g->n; i++) {
            if (field_of(&x[i], f) == field_of(&x[cand], f))
                continue;
            if (f == 1)
                snprintf(g->what, sizeof g->what, "datatype: rank %d %s, rank %d %s", x[cand].rank,
                         nsc_q_text(s->c, x[cand].datatype), x[i].rank, nsc_q_text(s->c, x[i].datatype));
            else
                snprintf(g->what, sizeof g->what, "%s: rank %d %lld, rank %d %lld", names[f],
                         x[cand].rank, (long long)field_of(&x[cand], f), x[i].rank,
                         (long long)field_of(&x[i], f));
            g->odd_rank = x[i].rank;
            g->odd_seq = x[i].seq;
            return;
        }
    }
}

/* ---- mismatches across functions ----------------------------------------
 * NCCL numbers each function's calls separately, so a rank that calls another
 * function is in another group; its counterpart is found by position: the
 * nearest earlier record of one rank that shares a group with the other rank
 * anchors both ranks' sequences (so a window that starts mid-job is fine). */

typedef struct cl_ord {
    uint32_t r;
    uint64_t enq, id;
    size_t rec;
} cl_ord;

static int by_rank_time(const void *a, const void *b)
{
    const cl_ord *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->r, y->r), NSC_CMP(x->enq, y->enq), NSC_CMP(x->id, y->id));
}

typedef struct cl_seqs {
    size_t *rec;    /* record indices, by rank then enqueue time */
    size_t *first;  /* rank index r's records: rec[first[r] .. first[r+1]) */
} cl_seqs;

static const cl_rec *rank_in_group(const cl_set *s, size_t grp, uint32_t r)
{
    const cl_group *g = &s->groups[grp];
    size_t lo = g->first, hi = g->first + g->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->recs[mid].r < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->first + g->n && s->recs[lo].r == r ? &s->recs[lo] : NULL;
}

#define CL_ANCHOR_BACK 64

/* Rank index m's record at the place of record p in p's rank's sequence. */
static const cl_rec *counterpart(const cl_set *s, const cl_seqs *q, const cl_rec *p, uint32_t m)
{
    size_t target = p->pos;
    for (size_t k = p->pos, back = 0; k-- > 0 && back < CL_ANCHOR_BACK; back++) {
        const cl_rec *a = &s->recs[q->rec[q->first[p->r] + k]];
        const cl_rec *z = a->grp == CL_NONE ? NULL : rank_in_group(s, a->grp, m);
        if (z) {
            target = z->pos + (p->pos - k);
            break;
        }
    }
    size_t n = q->first[m + 1] - q->first[m];
    return target < n ? &s->recs[q->rec[q->first[m] + target]] : NULL;
}

static void set_func_mismatch(cl_set *s, cl_group *g, const cl_rec *p, const cl_rec *y)
{
    cl_group *h = &s->groups[y->grp];
    int p_odd = g->n < h->n;  /* the rank in the smaller group is the odd one */
    const cl_rec *odd = p_odd ? p : y, *other = p_odd ? y : p;
    cl_group *both[2] = {g, h};
    for (int i = 0; i < 2; i++) {
        if (both[i]->what[0])
            continue;
        snprintf(both[i]->what, sizeof both[i]->what, "function: rank %d %s seq %llu, rank %d %s seq %llu",
                 other->rank, nsc_q_text(s->c, other->func), (unsigned long long)other->seq, odd->rank,
                 nsc_q_text(s->c, odd->func), (unsigned long long)odd->seq);
        both[i]->odd_rank = odd->rank;
        both[i]->odd_seq = other->seq;
    }
}

static int cross_func_mismatch(cl_set *s)
{
    nsc_q_ctx *c = s->c;
    cl_ord *ord = malloc((s->nrecs + 1) * sizeof *ord);
    cl_seqs q = {malloc((s->nrecs + 1) * sizeof *q.rec), calloc(c->nranks + 2, sizeof *q.first)};
    if (!ord || !q.rec || !q.first) {
        free(ord), free(q.rec), free(q.first);
        return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    }
    for (size_t i = 0; i < s->nrecs; i++)
        ord[i] = (cl_ord){s->recs[i].r, s->recs[i].enq, s->recs[i].id, i};
    qsort(ord, s->nrecs, sizeof *ord, by_rank_time);
    for (size_t i = 0; i < s->nrecs; i++) {
        q.rec[i] = ord[i].rec;
        q.first[ord[i].r + 1]++;
    }
    for (size_t r = 0; r < c->nranks; r++)
        q.first[r + 1] += q.first[r];
    for (size_t i = 0; i < s->nrecs; i++)
        s->recs[q.rec[i]].pos = i - q.first[s->recs[q.rec[i]].r];
    for (size_t gi = 0; gi < s->ngroups; gi++) {
        cl_group *g = &s->groups[gi];
        const cl_rec *p = &s->recs[g->first];
        for (uint32_t m = 0; m < c->nranks && g->n < c->nranks && !g->what[0]; m++) {
            const cl_rec *y = rank_in_group(s, gi, m) ? NULL : counterpart(s, &q, p, m);
            if (y && y->grp != CL_NONE && y->func != p->func)
                set_func_mismatch(s, g, p, y);
        }
    }
    free(ord);
    free(q.rec);
    free(q.first);
    return 0;
}

static int match(cl_set *s)
{
    if (s->nrecs)  /* a communicator announced, no collective yet: recs is NULL */
        qsort(s->recs, s->nrecs, sizeof *s->recs, by_coll);
    s->groups = calloc(s->nrecs ? s->nrecs : 1, sizeof *s->groups);
    uint64_t *scratch = malloc((3 * s->nrecs + 1) * sizeof *scratch);
    if (!s->groups || !scratch) {
        free(scratch);
        return nsc_q_fail(s->c, NSC_QUERY_ESTORE, "out of memory");
    }
    for (size_t i = 0; i < s->nrecs;) {
        size_t j = i + 1;
        while (j < s->nrecs && s->recs[j].func == s->recs[i].func && s->recs[j].seq == s->recs[i].seq)
            j++;
        cl_group *g = &s->groups[s->ngroups];
        g->first = i;
        g->n = j - i;
        derive(s, g, scratch);
        int kept = g->start >= s->c->q->t0 && g->start <= s->c->q->t1;
        for (size_t k = i; k < j; k++)
            s->recs[k].grp = kept ? s->ngroups : CL_NONE;
        if (kept) {
            same_func_mismatch(s, g);
            s->ngroups++;
        } else {
            memset(g, 0, sizeof *g);
        }
        i = j;
    }
    free(scratch);
    return cross_func_mismatch(s);
}

/* ---- from the ledger ------------------------------------------------------ */

/* A rank's host time aligned through its host's model (nsc_fig_align_fn). */
typedef struct led_align {
    const nsc_q_ctx *c;
    const nsc_q_rank *qr;
} led_align;

static uint64_t led_time(const void *arg, uint64_t t, uint64_t *err)
{
    const led_align *a = arg;
    return nsc_q_align(a->c, a->qr, t, err);
}

/* One rank's record of a collective (p2p records are the p2p endpoint's). */
static int add_ledger(void *arg, const nsc_ledger_rec *l)
{
    cl_set *s = arg;
    nsc_q_ctx *c = s->c;
    const nsc_q_rank *qr = nsc_q_rank_of(c, l->rank);
    if (!qr || (l->flags & NSC_LEDGER_P2P) || !want_coll(s, l->seq, l->func))
        return 0;
    cl_rec *x = new_rec(s);
    if (!x)
        return NSC_QUERY_ESTORE;
    led_align a = {c, qr};
    nsc_fig_rec_of_ledger(x, l, led_time, &a);
    x->id = l->seq;  /* the record's own: the same whatever window read it */
    x->r = (uint32_t)(qr - c->ranks);
    return 0;
}

static int by_rank_enq(const void *a, const void *b)
{
    const cl_rec *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->r, y->r), NSC_CMP(x->enq, y->enq), NSC_CMP(x->seq, y->seq));
}

/* The communicator's ledger records in the query's seqs, each rank's
 * chained in its order of enqueue. */
static int gather_ledger(cl_set *s)
{
    nsc_q_ctx *c = s->c;
    nsc_store_ledger_q lq = {c->job, c->comm.comm_id, c->q->seq_lo, c->q->seq_hi, 0, 0};
    nsc_q_rank_window(c->q, &lq.rank_lo, &lq.rank_hi);
    int rc = nsc_store_ledger_read(c->rd, &lq, add_ledger, s);
    if (rc)
        return rc == NSC_QUERY_ESTORE ? rc : nsc_q_store_fail(c, rc);
    if (s->nrecs)
        qsort(s->recs, s->nrecs, sizeof *s->recs, by_rank_enq);
    for (size_t i = 1, first = 0; i <= s->nrecs; i++) {
        if (i == s->nrecs || s->recs[i].r != s->recs[first].r) {
            chain_prev(s->recs + first, i - first);
            first = i;
        }
    }
    s->from_ledger = s->nrecs > 0;
    return 0;
}

/* From the ledger; from the raw events where the communicator has no ledger
 * record (a store written before the ledger): from_ledger says which. */
int nsc_q_cl_collect(cl_set *s)
{
    int rc = gather_ledger(s);
    if (!rc && !s->from_ledger)
        rc = gather(s);
    free(s->kern);
    free(s->done);
    s->kern = NULL;
    s->done = NULL;
    return rc ? rc : match(s);
}

void nsc_q_cl_write_source(nsc_q_out *o, const cl_set *s)
{
    nsc_q_cs(o, s->from_ledger ? ",\"source\":\"ledger\"" : ",\"source\":\"events\"");
}

void nsc_q_cl_free(cl_set *s)
{
    free(s->recs);
    free(s->groups);
}
