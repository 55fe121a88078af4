/* rootcause.c: why a job is slow or stuck, and where (diagnose's causes and
 * the links document, diag.h).
 *
 * Owns three analyses of one communicator, each ending in problems with a
 * cause class and a place (diagnose.h):
 * - late ranks: at each collective the rank that arrived last (GPU side when
 *   kernel times exist), its lateness against the others' median arrival
 *   split into what its host took (from its device's previous end to its
 *   enqueue) and what its GPU took (from both to its kernel start), each
 *   beyond the others' usual gaps, and the rest, inherited from its previous
 *   collective's late end (another cause);
 * - links: per (sender rank -> receiver rank, channel) the typical time of
 *   a network step from ProxyStepSendWait (peer ready, link free) to its
 *   end, against the lower median of all links'; slow links grouped by host
 *   pair, or by host when every link of one host is slow (its NIC); the
 *   links document lists them all;
 * - a stuck collective: per rank and channel the last step it completed
 *   sending and receiving; the rank that received at least as many steps as
 *   it sent is where the wait chain ends (with ranks whose legs inside a node
 *   have no proxy events: the first sender across nodes after it).
 * The proxy events come from one pass over the communicator's whole timeline
 * (ProxyOp, ProxyStep; a step whose ProxyOp was never stored, as in a live
 * hang, is placed by its direction and the channels left). Memory: every
 * ProxyOp seen (32 bytes) and up to RC_LINK_MAX_STEPS step times per link.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dint.h"
#include "grow.h"
#include "qs.h"

/* A rank is late when it arrived last at more than half of at least this many
 * collectives (by chance a rank of n is last at 1/n of them), each time by
 * at least RC_LATE_MIN_NS of its own (host and GPU, beyond the others' usual
 * gaps, and no less than what it inherited): above the noise of hosts that
 * wake late on a loaded machine (the emulator's, 8 processes on 2 cores: up
 * to about 0.5 ms). Counted per collective, not averaged: one long pause of
 * a loaded machine does not make a straggler. */
#define RC_LATE_MIN_COLLS 8
#define RC_LATE_MIN_NS 1000000ull
/* A link is slow when its typical step takes RC_SLOW_RATIO times the
 * reference (check_links) and RC_SLOW_MIN_NS more; links with fewer steps
 * are not judged. */
#define RC_SLOW_RATIO 2.0
/* A slow link whose receiver forwards on that channel over a link at least
 * RC_SLOW_RATIO times slower again is held up by it (its receiver frees
 * buffers late), not slow itself: state NSC_LINK_BEHIND. */
#define RC_SLOW_MIN_NS 20000ull
#define RC_LINK_MIN_STEPS 5
#define RC_LINK_MAX_STEPS 100000
#define RC_MAX_CHANNELS 64

typedef struct rc_rank_late {
    uint64_t prev_kend;
    int has_prev;
    uint64_t last, seen;                     /* collectives it arrived last at / took part in */
    uint64_t own_late;                       /* ... last by RC_LATE_MIN_NS or more of its own */
    uint64_t host_ns, gpu_ns, prev_ns, cost_ns;  /* summed over its last arrivals */
} rc_rank_late;

struct nsc_rc_late {
    int64_t nranks;
    rc_rank_late *r;
    uint64_t *scratch;  /* 3 x nranks: arrivals, host gaps, GPU gaps */
    /* the first collective all ranks entered that never ended */
    int stuck;
    uint64_t stuck_seq, stuck_start;
    char stuck_func[32];
    uint32_t stuck_nch;
    uint64_t *stuck_id;  /* per rank: its Coll event id */
};

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

static int cmp_u64(const void *a, const void *b)
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
    qsort(v, n, sizeof *v, cmp_u64);
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

/* ---- the proxy pass -------------------------------------------------------- */

typedef struct rc_op {
    uint64_t id, parent;  /* id 0: an empty slot */
    int32_t rank, peer;
    uint8_t channel, is_send, open;
} rc_op;

typedef struct rc_link {
    int32_t src, dst;
    uint8_t channel;
    uint64_t bytes, busy_ns;  /* summed over its steps: its achieved bandwidth */
    uint64_t *ns;
    size_t n, cap;
    uint64_t typical;  /* its typical step (trimmed_mean) */
    uint8_t state;     /* NSC_LINK_*, set by link_reference */
} rc_link;

/* A stuck collective's progress on one rank, channel and direction. */
typedef struct rc_prog {
    int32_t done;  /* the last step completed, -1 none */
    int32_t peer;  /* -1 unknown */
    uint8_t seen, incomplete;
} rc_prog;

typedef struct rc_orphan {
    int32_t rank, done;
    uint64_t op;
    uint8_t is_send;
} rc_orphan;

typedef struct rc_pass {
    nsc_rc_late *l;
    int64_t nranks;
    char (*host)[64];
    rc_op *ops;
    size_t ops_cap, ops_n;
    rc_link *links;
    size_t nlinks, links_cap;
    rc_prog *prog;      /* [rank][channel][is_send] */
    int32_t *last_peer; /* [rank][channel][is_send]: from any ProxyOp */
    rc_orphan *orph;
    size_t norph, orph_cap;
    int oom;
} rc_pass;

static size_t pidx(int64_t rank, unsigned ch, unsigned is_send)
{
    return ((size_t)rank * RC_MAX_CHANNELS + ch) * 2 + is_send;
}

static uint64_t op_hash(int32_t rank, uint64_t id)
{
    uint64_t h = id * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uint32_t)rank * 0xc2b2ae3d27d4eb4full;
    return h ^ (h >> 29);
}

static rc_op *op_find(rc_pass *p, int32_t rank, uint64_t id)
{
    if (!p->ops_cap)
        return NULL;
    for (size_t i = op_hash(rank, id) & (p->ops_cap - 1);; i = (i + 1) & (p->ops_cap - 1)) {
        if (!p->ops[i].id)
            return NULL;
        if (p->ops[i].id == id && p->ops[i].rank == rank)
            return &p->ops[i];
    }
}

static int op_put(rc_pass *p, const rc_op *op)
{
    if (2 * (p->ops_n + 1) > p->ops_cap) {
        size_t cap = p->ops_cap ? 2 * p->ops_cap : 1024;
        rc_op *old = p->ops, *ops = calloc(cap, sizeof *ops);
        if (!ops)
            return -1;
        size_t oldcap = p->ops_cap;
        p->ops = ops, p->ops_cap = cap, p->ops_n = 0;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].id && op_put(p, &old[i]))
                return -1;
        free(old);
    }
    size_t i = op_hash(op->rank, op->id) & (p->ops_cap - 1);
    while (p->ops[i].id && !(p->ops[i].id == op->id && p->ops[i].rank == op->rank))
        i = (i + 1) & (p->ops_cap - 1);
    p->ops_n += !p->ops[i].id;
    p->ops[i] = *op;
    return 0;
}

static int is_open(const nsc_json *ev)
{
    const nsc_json *fl = nsc_json_get(ev, "flags");
    for (const nsc_json *x = nsc_json_first(fl); x; x = nsc_json_next(fl, x))
        if (nsc_json_str(x) && strcmp(nsc_json_str(x), "open") == 0)
            return 1;
    return 0;
}

static void on_op(rc_pass *p, const nsc_json *ev, int32_t rank)
{
    rc_op op = {nsc_diag_num(ev, "id"), nsc_diag_num(ev, "parent"), rank, (int32_t)nsc_diag_num(ev, "peer"),
                (uint8_t)nsc_diag_num(ev, "channel"), nsc_diag_num(ev, "is_send") != 0, (uint8_t)is_open(ev)};
    if (!op.id || op.channel >= RC_MAX_CHANNELS)
        return;
    if (op_put(p, &op))
        p->oom = 1;
    p->last_peer[pidx(rank, op.channel, op.is_send)] = op.peer;
    const nsc_rc_late *l = p->l;
    if (l->stuck && l->stuck_id[rank] && op.parent == l->stuck_id[rank]) {
        rc_prog *g = &p->prog[pidx(rank, op.channel, op.is_send)];
        g->seen = 1;
        g->peer = op.peer;
        g->incomplete |= op.open;
    }
}

static rc_link *link_of(rc_pass *p, int32_t src, int32_t dst, uint8_t channel)
{
    for (size_t i = p->nlinks; i-- > 0;)
        if (p->links[i].src == src && p->links[i].dst == dst && p->links[i].channel == channel)
            return &p->links[i];
    if (nsc_grow(&p->links, p->nlinks, &p->links_cap, sizeof *p->links, 16))
        return NULL;
    rc_link *k = &p->links[p->nlinks++];
    memset(k, 0, sizeof *k);
    k->src = src, k->dst = dst, k->channel = channel;
    return k;
}

static void add_sample(rc_pass *p, const rc_op *op, const nsc_json *ev)
{
    const nsc_json *st = nsc_json_get(ev, "states");
    uint64_t stop = nsc_diag_num(ev, "stop_ns");
    for (const nsc_json *s = nsc_json_first(st); s; s = nsc_json_next(st, s)) {
        const char *name = nsc_json_str(nsc_json_get(s, "state"));
        uint64_t ts = nsc_diag_num(s, "ts_ns");
        if (!name || strcmp(name, "ProxyStepSendWait") != 0 || stop < ts)
            continue;
        rc_link *k = link_of(p, op->rank, op->peer, op->channel);
        if (!k || (k->n < RC_LINK_MAX_STEPS && nsc_grow(&k->ns, k->n, &k->cap, sizeof *k->ns, 64))) {
            p->oom = 1;
            return;
        }
        if (k->n < RC_LINK_MAX_STEPS)
            k->ns[k->n++] = stop - ts;
        k->bytes += nsc_diag_num(s, "arg");  /* the step's size */
        k->busy_ns += stop - ts;
        return;
    }
}

/* Direction of a step from its states (its ProxyOp may be unknown). */
static int step_is_send(const nsc_json *ev)
{
    const nsc_json *st = nsc_json_get(ev, "states");
    const nsc_json *s = nsc_json_first(st);
    const char *name = s ? nsc_json_str(nsc_json_get(s, "state")) : NULL;
    return name && strncmp(name, "ProxyStepSend", 13) == 0;
}

static void add_orphan(rc_pass *p, int32_t rank, uint64_t op, int is_send, int32_t step, int open)
{
    for (size_t i = 0; i < p->norph; i++)
        if (p->orph[i].rank == rank && p->orph[i].op == op) {
            if (!open && step > p->orph[i].done)
                p->orph[i].done = step;
            return;
        }
    if (nsc_grow(&p->orph, p->norph, &p->orph_cap, sizeof *p->orph, 16)) {
        p->oom = 1;
        return;
    }
    p->orph[p->norph++] = (rc_orphan){rank, open ? -1 : step, op, (uint8_t)is_send};
}

static void on_step(rc_pass *p, const nsc_json *ev, int32_t rank)
{
    uint64_t parent = nsc_diag_num(ev, "parent");
    int32_t step = (int32_t)nsc_diag_num(ev, "step");
    int open = is_open(ev);
    const rc_op *op = op_find(p, rank, parent);
    if (op && op->is_send && !open)
        add_sample(p, op, ev);
    const nsc_rc_late *l = p->l;
    if (!l->stuck || !l->stuck_id[rank])
        return;
    if (op && op->parent == l->stuck_id[rank]) {
        rc_prog *g = &p->prog[pidx(rank, op->channel, op->is_send)];
        if (!open && step > g->done)
            g->done = step;
    } else if (!op && nsc_diag_num(ev, "start_ns") >= l->stuck_start) {
        add_orphan(p, rank, parent, step_is_send(ev), step, open);
    }
}

static int on_event(void *arg, const nsc_json *v, const char *line, size_t len)
{
    (void)line, (void)len;
    rc_pass *p = arg;
    const char *kind = nsc_json_str(nsc_json_get(v, "kind"));
    if (kind && strcmp(kind, "header") == 0) {
        const nsc_json *ranks = nsc_json_get(v, "ranks");
        for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
            const char *host = nsc_json_str(nsc_json_get(r, "host"));
            uint64_t rank = nsc_diag_num(r, "rank");
            if (host && rank < (uint64_t)p->nranks)
                snprintf(p->host[rank], sizeof p->host[rank], "%s", host);
        }
        return 0;
    }
    const char *type = nsc_json_str(nsc_json_get(v, "type"));
    int64_t rank = -1;
    if (!type || nsc_json_i64(nsc_json_get(v, "rank"), &rank) || rank < 0 || rank >= p->nranks)
        return 0;
    if (strcmp(type, "ProxyOp") == 0)
        on_op(p, v, (int32_t)rank);
    else if (strcmp(type, "ProxyStep") == 0)
        on_step(p, v, (int32_t)rank);
    return p->oom;
}

/* Orphan steps (their ProxyOp not stored: still open in a live job) go to
 * the channels of their rank and direction that no stored ProxyOp covers, in
 * the order the ProxyOps were created (NCCL posts channels in order). */
static int by_rank_op(const void *a, const void *b)
{
    const rc_orphan *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->is_send != y->is_send)
        return x->is_send < y->is_send ? -1 : 1;
    return (x->op > y->op) - (x->op < y->op);
}

static void place_orphans(rc_pass *p)
{
    uint32_t nch = p->l->stuck_nch < RC_MAX_CHANNELS ? p->l->stuck_nch : RC_MAX_CHANNELS;
    if (!p->norph)
        return;
    qsort(p->orph, p->norph, sizeof *p->orph, by_rank_op);
    for (size_t i = 0; i < p->norph;) {
        const rc_orphan *o = &p->orph[i];
        uint32_t ch = 0;
        size_t j = i;
        for (; j < p->norph && p->orph[j].rank == o->rank && p->orph[j].is_send == o->is_send; j++) {
            while (ch < nch && p->prog[pidx(o->rank, ch, o->is_send)].seen)
                ch++;
            if (ch == nch)
                continue;
            rc_prog *g = &p->prog[pidx(o->rank, ch, o->is_send)];
            g->seen = g->incomplete = 1;
            g->done = p->orph[j].done;
            g->peer = p->last_peer[pidx(o->rank, ch, o->is_send)];
        }
        i = j;
    }
}

/* ---- slow links and NICs ------------------------------------------------------ */

static const char *host_of(const rc_pass *p, int32_t rank)
{
    return rank >= 0 && rank < p->nranks && p->host[rank][0] ? p->host[rank] : "?";
}

/* The links of a host and how many of them are slow. */
static void host_links(const rc_pass *p, const char *h, size_t *all, size_t *slow)
{
    *all = *slow = 0;
    for (size_t i = 0; i < p->nlinks; i++) {
        const rc_link *k = &p->links[i];
        if (k->n < RC_LINK_MIN_STEPS ||
            (strcmp(host_of(p, k->src), h) != 0 && strcmp(host_of(p, k->dst), h) != 0))
            continue;
        (*all)++;
        *slow += k->state == NSC_LINK_SLOW;
    }
}

/* The one host every slow link touches and whose links are all slow (its
 * NIC), or NULL (none, or two: with two hosts both ends qualify). */
static const char *slow_nic_host(const rc_pass *p, size_t nslow)
{
    const char *found = NULL;
    for (int64_t r = 0; r < p->nranks; r++) {
        const char *h = host_of(p, (int32_t)r);
        size_t all, slow;
        if (found && strcmp(found, h) == 0)
            continue;
        host_links(p, h, &all, &slow);
        if (all >= 2 && slow == all && slow == nslow) {
            if (found)
                return NULL;
            found = h;
        }
    }
    return found;
}

/* What a slow link's steps took beyond the reference, summed: about what
 * the ring behind it waited for it on that channel (channels run side by
 * side, so problems give the largest of a place's channels). */
static uint64_t extra_ns(const rc_link *k, uint64_t ref)
{
    return k->typical > ref ? (k->typical - ref) * k->n : 0;
}

static void report_nic(nsc_findings *f, const char *comm, const rc_pass *p, const char *h, uint64_t ref)
{
    uint64_t worst = 0, extra = 0;
    size_t n = 0;
    for (size_t i = 0; i < p->nlinks; i++)
        if (p->links[i].state == NSC_LINK_SLOW) {
            n++;
            if (extra_ns(&p->links[i], ref) > extra)
                extra = extra_ns(&p->links[i], ref);
            if (p->links[i].typical > worst)
                worst = p->links[i].typical;
        }
    nsc_problem *x = nsc_diag_add(f, NSC_SEV_SLOW_LINK, "slow_nic", comm, 0, -1,
                                  "slow NIC on %s: all %zu of its network links (per channel) are slow, steps take "
                                  "up to %.1f us against %.1f us on the others (%.1fx), %.1f ms more on one channel",
                                  h, n, (double)worst / 1e3, (double)ref / 1e3, (double)worst / (double)ref,
                                  (double)extra / 1e6);
    if (!x)
        return;
    snprintf(x->hosts[0], sizeof x->hosts[0], "%s", h);
    snprintf(x->figures, sizeof x->figures,
             "\"step_ns\":%" PRIu64 ",\"reference_step_ns\":%" PRIu64 ",\"slow_links\":%zu,\"extra_ns\":%" PRIu64,
             worst, ref, n, extra);
}

/* The largest extra time of the slow links from host a to host b. */
static uint64_t pair_extra(const rc_pass *p, const char *a, const char *b, uint64_t ref)
{
    uint64_t extra = 0;
    for (size_t i = 0; i < p->nlinks; i++) {
        const rc_link *k = &p->links[i];
        if (k->state == NSC_LINK_SLOW && strcmp(host_of(p, k->src), a) == 0 &&
            strcmp(host_of(p, k->dst), b) == 0 && extra_ns(k, ref) > extra)
            extra = extra_ns(k, ref);
    }
    return extra;
}

/* One problem per host pair (direction kept) with a slow link. */
static void report_links(nsc_findings *f, const char *comm, const rc_pass *p, uint64_t ref)
{
    for (size_t i = 0; i < p->nlinks; i++) {
        const rc_link *k = &p->links[i];
        if (k->state != NSC_LINK_SLOW)
            continue;
        const char *a = host_of(p, k->src), *b = host_of(p, k->dst);
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++)
            dup = p->links[j].state == NSC_LINK_SLOW &&
                  strcmp(host_of(p, p->links[j].src), a) == 0 && strcmp(host_of(p, p->links[j].dst), b) == 0;
        if (dup)
            continue;
        uint64_t extra = pair_extra(p, a, b, ref);
        nsc_problem *x = nsc_diag_add(f, NSC_SEV_SLOW_LINK, "slow_link", comm, 0, k->src,
                                      "slow link %s -> %s (rank %d -> rank %d): a network step takes %.1f us "
                                      "against %.1f us on the others (%.1fx), %.1f ms more on one channel",
                                      a, b, k->src, k->dst, (double)k->typical / 1e3, (double)ref / 1e3,
                                      (double)k->typical / (double)ref, (double)extra / 1e6);
        if (!x)
            return;
        x->peer = k->dst;
        x->channel = k->channel;
        snprintf(x->hosts[0], sizeof x->hosts[0], "%s", a);
        snprintf(x->hosts[1], sizeof x->hosts[1], "%s", b);
        snprintf(x->figures, sizeof x->figures,
                 "\"step_ns\":%" PRIu64 ",\"reference_step_ns\":%" PRIu64 ",\"steps\":%zu,\"extra_ns\":%" PRIu64,
                 k->typical, ref, k->n, extra);
    }
}

/* A link's typical step: the mean of its steps without the fastest and the
 * slowest tenth. Not the median: a proxy thread that falls behind makes
 * some steps' events together and the next step absorbs their time, so the
 * steps' times split in two groups around the true one while their sum
 * stays right. */
static uint64_t trimmed_mean(uint64_t *ns, size_t n)
{
    qsort(ns, n, sizeof *ns, cmp_u64);
    size_t cut = n / 10;
    double sum = 0;
    for (size_t i = cut; i < n - cut; i++)
        sum += (double)ns[i];
    return (uint64_t)(sum / (double)(n - 2 * cut));
}

/* Each link's state against the slow limit: slow, or behind a slower link
 * its receiver forwards on (RC_SLOW_RATIO above). */
static void classify_links(rc_pass *p, uint64_t limit)
{
    for (size_t i = 0; i < p->nlinks; i++) {
        rc_link *k = &p->links[i];
        k->state = k->n < RC_LINK_MIN_STEPS ? NSC_LINK_FEW : k->typical >= limit ? NSC_LINK_SLOW : NSC_LINK_OK;
    }
    for (size_t i = 0; i < p->nlinks; i++) {
        rc_link *k = &p->links[i];
        for (size_t j = 0; j < p->nlinks && k->state == NSC_LINK_SLOW; j++) {
            const rc_link *next = &p->links[j];
            if (next->src == k->dst && next->channel == k->channel && next->n >= RC_LINK_MIN_STEPS &&
                (double)next->typical >= (double)k->typical * RC_SLOW_RATIO)
                k->state = NSC_LINK_BEHIND;
        }
    }
}

/* Every link's typical step; the reference is the lower median of those of
 * the links with enough steps, not the fastest: one link that looks fast
 * must not make the others look slow. Sets *limit (a slower link is slow);
 * returns the reference, 0 if no link has enough steps. */
static uint64_t link_reference(rc_pass *p, uint64_t *limit)
{
    uint64_t *meds = malloc((p->nlinks + 1) * sizeof *meds);
    size_t n = 0;
    if (!meds)
        return 0;
    for (size_t i = 0; i < p->nlinks; i++) {
        rc_link *k = &p->links[i];
        if (k->n)
            k->typical = trimmed_mean(k->ns, k->n);
        if (k->n >= RC_LINK_MIN_STEPS)
            meds[n++] = k->typical;
    }
    qsort(meds, n, sizeof *meds, cmp_u64);
    uint64_t ref = n ? meds[(n - 1) / 2] : 0;
    free(meds);
    *limit = (uint64_t)((double)ref * RC_SLOW_RATIO);
    if (*limit < ref + RC_SLOW_MIN_NS)
        *limit = ref + RC_SLOW_MIN_NS;
    classify_links(p, ref ? *limit : UINT64_MAX);
    return ref;
}

static void check_links(nsc_findings *f, const char *comm, rc_pass *p)
{
    uint64_t limit, ref = link_reference(p, &limit);
    if (!ref)
        return;
    size_t nslow = 0;
    for (size_t i = 0; i < p->nlinks; i++)
        nslow += p->links[i].state == NSC_LINK_SLOW;
    if (!nslow)
        return;
    const char *nic = slow_nic_host(p, nslow);
    if (nic)
        report_nic(f, comm, p, nic, ref);
    else
        report_links(f, comm, p, ref);
}

/* ---- where a stuck collective stopped -------------------------------------- */

/* On an incomplete channel, the rank that completed receiving at least as
 * many steps as it completed sending holds data it never forwarded: every
 * other rank forwards each step it receives (sent = received + 1). */
static int32_t stall_on(const rc_pass *p, unsigned ch, int32_t *step)
{
    for (int64_t r = 0; r < p->nranks; r++) {
        const rc_prog *s = &p->prog[pidx(r, ch, 1)], *v = &p->prog[pidx(r, ch, 0)];
        if (s->seen && v->seen && s->incomplete && v->done >= s->done) {
            *step = s->done + 1;
            return (int32_t)r;
        }
    }
    return -1;
}

/* With several ranks per node only the legs between nodes have proxy events.
 * Following the ring across nodes every sender completed more steps than the
 * sender into its node, except past the rank that stopped: the first sender
 * after it completed fewer. That sender is named (the one that stopped, or
 * one of the ranks before it on its node). */
static int32_t stall_across_nodes(const rc_pass *p, unsigned ch, int32_t *step)
{
    for (int64_t r = 0; r < p->nranks; r++) {
        const rc_prog *s = &p->prog[pidx(r, ch, 1)];
        if (!s->seen || !s->incomplete)
            continue;
        const char *h = host_of(p, (int32_t)r);
        for (int64_t u = 0; u < p->nranks; u++) {
            const rc_prog *in = &p->prog[pidx(u, ch, 1)];
            if (u == r || !in->seen || in->peer < 0 || strcmp(host_of(p, in->peer), h) != 0 ||
                strcmp(host_of(p, (int32_t)u), h) == 0)
                continue;
            if (s->done < in->done) {
                *step = s->done + 1;
                return (int32_t)r;
            }
        }
    }
    return -1;
}

static void check_stall(nsc_findings *f, const char *comm, const rc_pass *p)
{
    const nsc_rc_late *l = p->l;
    uint32_t nch = l->stuck_nch < RC_MAX_CHANNELS ? l->stuck_nch : RC_MAX_CHANNELS;
    int32_t culprit = -1, step = -1;
    unsigned ch0 = 0, ch1 = 0;
    int node_only = 0;
    for (unsigned ch = 0; ch < nch; ch++) {
        int32_t s, r = stall_on(p, ch, &s);
        if (r < 0 && (r = stall_across_nodes(p, ch, &s)) >= 0 && culprit < 0)
            node_only = !p->prog[pidx(r, ch, 0)].seen;
        if (r < 0)
            continue;
        if (culprit < 0)
            culprit = r, step = s, ch0 = ch1 = ch;
        else if (r == culprit && s == step && ch == ch1 + 1)
            ch1 = ch;
    }
    if (culprit < 0)
        return;
    int32_t peer = p->prog[pidx(culprit, ch0, 1)].peer;
    char chans[32];
    if (ch0 == ch1)
        snprintf(chans, sizeof chans, "channel %u", ch0);
    else
        snprintf(chans, sizeof chans, "channels %u-%u", ch0, ch1);
    nsc_problem *x = nsc_diag_add(f, NSC_SEV_STALL, "stall", comm, l->stuck_seq, culprit,
                                  "stall: rank %d (%s) stopped sending step %d to rank %d (%s) on %s of %s "
                                  "seq %" PRIu64 "%s%s%s; the other %" PRId64 " ranks wait behind it",
                                  culprit, host_of(p, culprit), step, peer, host_of(p, peer), chans,
                                  l->stuck_func, l->stuck_seq, node_only ? " (or a rank before it on " : "",
                                  node_only ? host_of(p, culprit) : "",
                                  node_only ? ", whose legs inside the node have no proxy events)" : "",
                                  p->nranks - 1);
    if (!x)
        return;
    x->peer = peer;
    x->channel = ch0;
    x->step = step;
    snprintf(x->hosts[0], sizeof x->hosts[0], "%s", host_of(p, culprit));
    snprintf(x->hosts[1], sizeof x->hosts[1], "%s", host_of(p, peer));
    snprintf(x->figures, sizeof x->figures,
             "\"channels\":[%u,%u],\"last_sent_step\":%d,\"last_received_step\":%d", ch0, ch1,
             p->prog[pidx(culprit, ch0, 1)].done, p->prog[pidx(culprit, ch0, 0)].done);
}

/* ---- late ranks ------------------------------------------------------------ */

static void check_late(nsc_findings *f, const char *comm, const rc_pass *p)
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
        gpu ? "GPU late" : "host late", best, host_of(p, (int32_t)best), x->last, x->seen, x->own_late,
        (double)late / (double)x->last / 1e6,
        gpu ? "its GPU started after its enqueue and its previous work" : "its host enqueued after the others were ready",
        (double)x->cost_ns / 1e6);
    if (!q)
        return;
    snprintf(q->hosts[0], sizeof q->hosts[0], "%s", host_of(p, (int32_t)best));
    snprintf(q->figures, sizeof q->figures,
             "\"last_arrivals\":%" PRIu64 ",\"late_of_its_own\":%" PRIu64 ",\"collectives\":%" PRIu64
             ",\"host_late_ns\":%" PRIu64 ",\"gpu_late_ns\":%" PRIu64 ",\"inherited_ns\":%" PRIu64
             ",\"cost_ns\":%" PRIu64,
             x->last, x->own_late, x->seen, x->host_ns, x->gpu_ns, x->prev_ns, x->cost_ns);
}

/* ---- one communicator ------------------------------------------------------- */

static void pass_free(rc_pass *p)
{
    for (size_t i = 0; i < p->nlinks; i++)
        free(p->links[i].ns);
    free(p->links);
    free(p->ops);
    free(p->prog);
    free(p->last_peer);
    free(p->orph);
    free(p->host);
}

/* Set up the pass and run it over the communicator's proxy events. */
static int pass_run(nsc_diag_src *s, rc_pass *p, nsc_rc_late *l, const char *comm, const char *qs)
{
    size_t cells = (size_t)l->nranks * RC_MAX_CHANNELS * 2;
    memset(p, 0, sizeof *p);
    p->l = l;
    p->nranks = l->nranks;
    p->host = calloc((size_t)l->nranks, sizeof *p->host);
    p->prog = malloc(cells * sizeof *p->prog);
    p->last_peer = malloc(cells * sizeof *p->last_peer);
    if (!p->host || !p->prog || !p->last_peer) {
        snprintf(s->err, sizeof s->err, "out of memory");
        return NSC_DIAG_FAIL;
    }
    for (size_t i = 0; i < cells; i++) {
        p->prog[i] = (rc_prog){-1, -1, 0, 0};
        p->last_peer[i] = -1;
    }
    char q[2048];
    snprintf(q, sizeof q, "%s", qs);
    if (nsc_qs_add(q, sizeof q, "comm", comm) || nsc_qs_add(q, sizeof q, "type", "proxyop,proxystep")) {
        snprintf(s->err, sizeof s->err, "query string too long");
        return NSC_DIAG_FAIL;
    }
    int rc = nsc_diag_fetch_pages(s, "timeline", q, NULL, on_event, p);
    if (p->oom) {
        snprintf(s->err, sizeof s->err, "out of memory");
        rc = NSC_DIAG_FAIL;
    }
    return rc;
}

int nsc_rc_comm(nsc_findings *f, nsc_rc_late *l, const char *comm, const char *qs)
{
    rc_pass p;
    int rc = pass_run(f->src, &p, l, comm, qs);
    if (rc == NSC_DIAG_OK) {
        check_links(f, comm, &p);
        if (l->stuck) {
            place_orphans(&p);
            check_stall(f, comm, &p);
        }
        check_late(f, comm, &p);
    }
    pass_free(&p);
    return rc;
}

/* ---- the links document ----------------------------------------------------- */

const char *const nsc_diag_link_state_names[4] = {"few steps", "ok", "SLOW", "behind"};

double nsc_diag_link_gbps(const nsc_diag_link *k)
{
    return k->busy_ns ? (double)k->bytes / (double)k->busy_ns : 0;
}

double nsc_diag_link_ratio(const nsc_diag_links *l, const nsc_diag_link *k)
{
    return l->ref_ns ? (double)k->step_ns / (double)l->ref_ns : 0;
}

void nsc_diag_links_write_json(const nsc_diag_links *l, FILE *out)
{
    fprintf(out, "{\"comm\":\"%s\",\"reference_step_ns\":%" PRIu64 ",\"slow_step_ns\":%" PRIu64 ",\"links\":[",
            l->comm, l->ref_ns, l->slow_ns);
    for (size_t i = 0; i < l->n; i++) {
        const nsc_diag_link *k = &l->link[i];
        fprintf(out, "%s{\"from_rank\":%d,\"from_host\":", i ? "," : "", k->src);
        nsc_json_write_str(out, k->src_host);
        fprintf(out, ",\"to_rank\":%d,\"to_host\":", k->dst);
        nsc_json_write_str(out, k->dst_host);
        fprintf(out, ",\"channel\":%u,\"steps\":%zu,\"step_ns\":%" PRIu64 ",\"bytes\":%" PRIu64
                     ",\"gbps\":%.3f,\"ratio\":%.2f,\"state\":\"%s\"}",
                k->channel, k->steps, k->step_ns, k->bytes, nsc_diag_link_gbps(k), nsc_diag_link_ratio(l, k),
                nsc_diag_link_state_names[k->state]);
    }
    fputs("]}\n", out);
}

static int by_link(const void *a, const void *b)
{
    const rc_link *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    return (x->channel > y->channel) - (x->channel < y->channel);
}

/* The communicator's id and size from comms: `want` an id or a name, or
 * NULL for the one with the most ranks (the first of them by id). */
static int find_comm(nsc_diag_src *s, const char *job_qs, const char *want, char *id, size_t cap,
                     int64_t *nranks)
{
    nsc_doc d;
    int rc = nsc_diag_fetch_doc(s, "comms", job_qs, &d);
    const nsc_json *comms = rc == NSC_DIAG_OK ? nsc_json_get(nsc_json_root(&d.doc), "comms") : NULL;
    int found = 0;
    for (const nsc_json *m = nsc_json_first(comms); m && !(found && want); m = nsc_json_next(comms, m)) {
        const char *mid = nsc_json_str(nsc_json_get(m, "comm")), *name = nsc_json_str(nsc_json_get(m, "name"));
        int64_t n;
        if (!mid || nsc_json_i64(nsc_json_get(m, "nranks"), &n) != 0)
            continue;
        int match = want ? strcmp(mid, want) == 0 || (name && strcmp(name, want) == 0)
                         : !found || n > *nranks || (n == *nranks && strcmp(mid, id) < 0);
        if (match) {
            snprintf(id, cap, "%s", mid);
            *nranks = n;
            found = 1;
        }
    }
    nsc_doc_free(&d);
    if (rc == NSC_DIAG_OK && !found) {
        if (want)
            snprintf(s->err, sizeof s->err, "no communicator %s", want);
        else
            snprintf(s->err, sizeof s->err, "the job has no communicator");
        rc = NSC_DIAG_NOTFOUND;
    }
    return rc;
}

/* The pass's links as the document's rows; the hosts move over. */
static int keep_links(rc_pass *p, nsc_diag_links *out)
{
    if (p->nlinks)
        qsort(p->links, p->nlinks, sizeof *p->links, by_link);
    out->link = calloc(p->nlinks + 1, sizeof *out->link);
    if (!out->link)
        return NSC_DIAG_FAIL;
    for (size_t i = 0; i < p->nlinks; i++) {
        const rc_link *k = &p->links[i];
        out->link[i] = (nsc_diag_link){k->src, k->dst, k->channel, k->state, k->n, k->typical, k->bytes,
                                       k->busy_ns, host_of(p, k->src), host_of(p, k->dst)};
    }
    out->n = p->nlinks;
    out->host = p->host;
    p->host = NULL;
    return NSC_DIAG_OK;
}

int nsc_diag_links_get(nsc_diag_src *s, const char *job, const char *comm, nsc_diag_links *out)
{
    char job_qs[512] = "";
    int64_t nranks = 0;
    memset(out, 0, sizeof *out);
    if (job && nsc_qs_add(job_qs, sizeof job_qs, "job", job) != 0) {
        snprintf(s->err, sizeof s->err, "job name too long");
        return NSC_DIAG_USAGE;
    }
    int rc = find_comm(s, job_qs, comm, out->comm, sizeof out->comm, &nranks);
    nsc_rc_late *l = rc == NSC_DIAG_OK ? nsc_rc_late_new(nranks) : NULL;
    if (rc == NSC_DIAG_OK && !l) {
        snprintf(s->err, sizeof s->err, "out of memory");
        rc = NSC_DIAG_FAIL;
    }
    rc_pass p = {0};
    if (rc == NSC_DIAG_OK && (rc = pass_run(s, &p, l, out->comm, job_qs)) == NSC_DIAG_OK) {
        out->ref_ns = link_reference(&p, &out->slow_ns);
        if ((rc = keep_links(&p, out)) != NSC_DIAG_OK)
            snprintf(s->err, sizeof s->err, "out of memory");
    }
    pass_free(&p);
    nsc_rc_late_free(l);
    return rc;
}

void nsc_diag_links_free(nsc_diag_links *l)
{
    free(l->link);
    free(l->host);
    memset(l, 0, sizeof *l);
}
