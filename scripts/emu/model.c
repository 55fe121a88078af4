/* model.c: the cost model, what time NCCL's work takes (docs/emulator-model.md "Time").
 *
 * Owns the link costs (a GPU's intra-node link, a node's NIC, per-step
 * latencies, the slow-link and slow-NIC faults), when a rank's device starts
 * a collective (after its previous work and the GPU work before it), and the
 * schedule of one channel of a ring-like collective given every rank's start:
 * on the ring r -> r+1, a rank sends step j of a loop once it received step
 * j-1 from its predecessor, its successor has launched (buffers posted) and
 * the link finished the previous step; the data arrives a latency plus
 * bytes / bandwidth later. AllReduce has 2(n-1) steps per loop,
 * AllGather/ReduceScatter n-1, Broadcast/Reduce a chain of n-1 hops from /
 * to the root. Trees: the nodes form a binary tree (per local rank index, as
 * emu_net_peers); each chunk is reduced up (a rank sends it to its parent
 * once it has its own and its children's) and broadcast down from the root.
 * Every rank computes the same recurrence from the same starts (the wire),
 * so all agree without exchanging step times.
 */
#include <string.h>

#include "emu.h"

/* Beyond this many (rank, step) cells a channel is timed in closed form. */
#define EMU_MODEL_CELLS (1u << 18)
#define EMU_MAX_STEPS 1024

bool emu_model_on(const emu_opts *o)
{
    return o->model.time_scale > 0;
}

uint64_t emu_model_us(const emu_opts *o, double us)
{
    return us > 0 ? (uint64_t)(us * 1000.0 * o->model.time_scale) : 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a == EMU_NEVER || b == EMU_NEVER || a > EMU_NEVER - b ? EMU_NEVER : a + b;
}

static uint64_t max2(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static int global_of(const emu_rank *r, int comm_rank)
{
    return r->world_base + r->world_stride * comm_rank;
}

bool emu_fault_on(const emu_opts *o, int step)
{
    const emu_model *m = &o->model;
    return step >= m->fault_from && (step - m->fault_from) % m->fault_every == 0;
}

/* Which of the link and NIC faults slow the link between nodes na -> nb. */
static uint32_t link_faults(const emu_model *m, int na, int nb)
{
    uint32_t f = 0;
    if (na != nb && na == m->slow_link_from && nb == m->slow_link_to)
        f |= EMU_FAULT_SLOW_LINK;
    if (na != nb && (na == m->slow_nic_node || nb == m->slow_nic_node))
        f |= EMU_FAULT_SLOW_NIC;
    return f;
}

uint32_t emu_fault_origins(const emu_rank *r, int peer, bool send, int step)
{
    const emu_opts *o = r->w->o;
    const emu_model *m = &o->model;
    if (!emu_fault_on(o, step))
        return 0;
    int me = global_of(r, r->ci.rank), node = emu_node_of(r, r->ci.rank);
    uint32_t f = (me == o->slow_rank ? EMU_FAULT_HOST_LATE : 0) | (me == m->slow_gpu_rank ? EMU_FAULT_SLOW_GPU : 0);
    int sends[3], recvs[3], ns = 0, nr = 0;
    if (peer < 0)
        emu_net_peers(r, strcmp(o->algo, "TREE") == 0, sends, &ns, recvs, &nr);
    else if (send)
        sends[ns++] = peer;
    else
        recvs[nr++] = peer;
    for (int i = 0; i < ns; i++)
        f |= link_faults(m, node, emu_node_of(r, sends[i]));
    for (int i = 0; i < nr; i++)
        f |= link_faults(m, emu_node_of(r, recvs[i]), node);
    return f;
}

/* Bandwidth (GB/s = bytes/ns) and latency (us) of the link a -> b for op. */
static void link_of(const emu_rank *r, const emu_op *op, int a, int b, double *gbps, double *lat_us)
{
    const emu_model *m = &r->w->o->model;
    int na = emu_node_of(r, a), nb = emu_node_of(r, b);
    if (na == nb) {
        *gbps = m->link_gbps;
        *lat_us = m->link_lat_us;
        return;
    }
    *gbps = m->nic_gbps;
    *lat_us = m->nic_lat_us;
    uint32_t f = emu_fault_on(r->w->o, op->step) ? link_faults(m, na, nb) : 0;
    if (f & EMU_FAULT_SLOW_LINK)
        *gbps /= m->slow_link_factor;
    if (f & EMU_FAULT_SLOW_NIC)
        *gbps /= m->slow_nic_factor;
}

uint64_t emu_model_transfer(const emu_rank *r, const emu_op *op, int a, int b, size_t bytes, int nch)
{
    double gbps, lat;
    link_of(r, op, a, b, &gbps, &lat);
    /* The channels share the link. */
    return emu_model_us(r->w->o, lat + (double)bytes * nch / gbps / 1000.0);
}

uint64_t emu_model_ready(const emu_rank *r, const emu_op *op, uint64_t dev_free)
{
    const emu_model *m = &r->w->o->model;
    if (dev_free == EMU_NEVER || op->enq_ns == EMU_NEVER)
        return EMU_NEVER;
    bool slow = global_of(r, r->ci.rank) == m->slow_gpu_rank && emu_fault_on(r->w->o, op->step);
    double us = m->compute_us + (slow ? m->slow_gpu_us : 0);
    return max2(dev_free, op->enq_ns) + emu_model_us(r->w->o, us);
}

static bool is_chain(const emu_op *op)
{
    return op->func == EMU_F_BROADCAST || op->func == EMU_F_REDUCE;
}

void emu_model_shape(const emu_rank *r, const emu_op *op, int *loops, int *per_loop, size_t *slice)
{
    int n = r->ci.nranks;
    size_t per_ch = op->bytes / (size_t)op->nch + 1, chunk = (size_t)r->w->o->chunk_size;
    bool all_reduce = op->func == EMU_F_ALLREDUCE;
    /* AllReduce moves 1/n of the buffer per step; AllGather/ReduceScatter
     * (count per rank) and the chains the whole slice. */
    size_t per_step = all_reduce ? per_ch / (size_t)n + 1 : per_ch;
    *per_loop = n < 2 ? 1 : is_chain(op) ? n - 1 : all_reduce ? 2 * (n - 1) : n - 1;
    long l = (long)((per_step + chunk - 1) / chunk);
    long cap = EMU_MAX_STEPS / *per_loop;
    *loops = (int)(l < 1 ? 1 : l > cap ? (cap < 1 ? 1 : cap) : l);
    *slice = per_step / (size_t)*loops + 1;
}

/* Ring position of comm rank q: chains start at the root (Broadcast) or
 * end there (Reduce). */
static int pos_of(const emu_rank *r, const emu_op *op, int q)
{
    int n = r->ci.nranks, root = op->root;
    if (op->func == EMU_F_REDUCE)
        return (q - root - 1 + 2 * n) % n;
    return (q - root + n) % n;
}

static bool sends_at(const emu_rank *r, const emu_op *op, int q, int j)
{
    return !is_chain(op) || pos_of(r, op, q) == j;
}

void emu_model_leg_steps(const emu_rank *r, const emu_op *op, int *nsend, int *nrecv)
{
    int loops, per_loop, n = r->ci.nranks, me = r->ci.rank;
    size_t slice;
    emu_model_shape(r, op, &loops, &per_loop, &slice);
    *nsend = *nrecv = 0;
    for (int j = 0; j < per_loop; j++) {
        *nsend += sends_at(r, op, me, j) ? loops : 0;
        *nrecv += sends_at(r, op, (me + n - 1) % n, j) ? loops : 0;
    }
}

/* Whether the stall acts in r's collective k on channel ch (its communicator
 * by name, when --stall gave one). */
static bool stall_in(const emu_rank *r, uint32_t k, int ch)
{
    const emu_model *m = &r->w->o->model;
    return m->stall_rank >= 0 && (int)k == m->stall_coll && ch == m->stall_ch &&
           (!m->stall_comm || (r->ci.name && strcmp(r->ci.name, m->stall_comm) == 0));
}

static bool stalled(const emu_rank *r, uint32_t k, int ch, int sender, int step)
{
    return global_of(r, sender) == r->w->o->model.stall_rank && stall_in(r, k, ch) &&
           step >= r->w->o->model.stall_step;
}

typedef struct ring_ctx {
    const emu_rank *r;
    const emu_op *op;
    uint32_t k;
    int ch, n, me, loops, per_loop;
    size_t slice;
    const uint64_t *ready;
    uint64_t tau[EMU_MAX_RANKS], lat[EMU_MAX_RANKS]; /* link q -> q+1 */
    emu_step_t *send, *recv;
    int isend, irecv;
    uint64_t last_send_data, last_recv_data;
} ring_ctx;

/* One transfer q -> q+1 of step (l, j): when it starts and arrives. */
static void ring_cell(ring_ctx *c, int q, int l, int j, uint64_t got_prev, uint64_t *link_free, uint64_t *arrive)
{
    int nxt = (q + 1) % c->n;
    uint64_t data = max2(c->ready[q], j == 0 ? c->ready[q] : got_prev);
    uint64_t start = max2(max2(data, c->ready[nxt]), link_free[q]);
    if (stalled(c->r, c->k, c->ch, q, l * c->per_loop + j))
        start = EMU_NEVER;
    uint64_t done = sat_add(start, c->tau[q]);
    link_free[q] = start == EMU_NEVER ? EMU_NEVER : done;
    *arrive = sat_add(done, c->lat[q]);
    if (q == c->me) {
        c->send[c->isend++] = (emu_step_t){c->last_send_data, data, start, *arrive};
        c->last_send_data = data;
    }
    if (nxt == c->me) {
        c->recv[c->irecv++] = (emu_step_t){c->last_recv_data, *arrive, *arrive, *arrive};
        c->last_recv_data = *arrive;
    }
}

/* The recurrence over loops, steps and ranks; got[q]: when q received the
 * previous step of this loop. Returns the rank's end. */
static uint64_t ring_exact(ring_ctx *c, uint64_t *got, uint64_t *next, uint64_t *link_free)
{
    for (int q = 0; q < c->n; q++)
        link_free[q] = 0;
    for (int l = 0; l < c->loops; l++)
        for (int j = 0; j < c->per_loop; j++) {
            for (int q = 0; q < c->n; q++)
                next[q] = EMU_NEVER;
            for (int q = 0; q < c->n; q++)
                if (sends_at(c->r, c->op, q, j))
                    ring_cell(c, q, l, j, got[q], link_free, &next[(q + 1) % c->n]);
            memcpy(got, next, (size_t)c->n * sizeof *got);
        }
    uint64_t end = c->ready[c->me];
    if (c->isend)
        end = max2(end, c->send[c->isend - 1].done);
    if (c->irecv)
        end = max2(end, c->recv[c->irecv - 1].data);
    for (int i = 0; i < c->isend; i++)
        end = c->send[i].done == EMU_NEVER ? EMU_NEVER : end;
    for (int i = 0; i < c->irecv; i++)
        end = c->recv[i].data == EMU_NEVER ? EMU_NEVER : end;
    return end;
}

/* Large rings: every rank starts with the last, each step takes the slowest
 * link's time, the latency once per step of a loop. */
static uint64_t ring_closed(ring_ctx *c)
{
    uint64_t base = 0, tau = 0, lat = 0;
    for (int q = 0; q < c->n; q++) {
        base = max2(base, c->ready[q]);
        tau = max2(tau, c->tau[q]);
        lat = max2(lat, c->lat[q]);
    }
    const emu_model *m = &c->r->w->o->model;
    int stall_at = stall_in(c->r, c->k, c->ch) ? m->stall_step : -1;
    int total = c->loops * c->per_loop, prev = (c->me + c->n - 1) % c->n;
    for (int s = 0; s < total; s++) {
        int j = s % c->per_loop;
        uint64_t at = s >= stall_at && stall_at >= 0 ? EMU_NEVER : sat_add(base, (uint64_t)s * tau + (uint64_t)j * lat);
        uint64_t arrive = sat_add(at, tau + lat);
        if (sends_at(c->r, c->op, c->me, j))
            c->send[c->isend++] = (emu_step_t){s ? at : base, at, at, arrive};
        if (sends_at(c->r, c->op, prev, j))
            c->recv[c->irecv++] = (emu_step_t){s ? at : base, arrive, arrive, arrive};
    }
    return stall_at >= 0 ? EMU_NEVER : sat_add(base, (uint64_t)total * tau + (uint64_t)c->per_loop * lat);
}

static uint64_t ring_channel(const emu_rank *r, const emu_op *op, uint32_t k, int ch, const uint64_t *ready,
                             emu_step_t *send, emu_step_t *recv)
{
    static __thread ring_ctx c;
    static __thread uint64_t got[EMU_MAX_RANKS], next[EMU_MAX_RANKS], link_free[EMU_MAX_RANKS];
    /* Field by field: a compound literal would clear the 16 KiB of link
     * arrays on every call, of which only n entries are used. */
    c.r = r, c.op = op, c.k = k, c.ch = ch, c.n = r->ci.nranks, c.me = r->ci.rank, c.ready = ready;
    c.send = send, c.recv = recv, c.isend = c.irecv = 0;
    emu_model_shape(r, op, &c.loops, &c.per_loop, &c.slice);
    c.last_send_data = c.last_recv_data = ready[c.me];
    for (int q = 0; q < c.n; q++) {
        double gbps, lat_us;
        link_of(r, op, q, (q + 1) % c.n, &gbps, &lat_us);
        c.tau[q] = emu_model_us(r->w->o, (double)c.slice * op->nch / gbps / 1000.0);
        c.lat[q] = emu_model_us(r->w->o, lat_us);
    }
    if (c.n < 2)
        return ready[c.me];
    if ((uint64_t)c.n * (uint64_t)(c.loops * c.per_loop) > EMU_MODEL_CELLS)
        return ring_closed(&c);
    for (int q = 0; q < c.n; q++)
        got[q] = ready[q];
    return ring_exact(&c, got, next, link_free);
}

/* ---- trees ---- */

#define TREE_MAX EMU_MAX_NODES

/* The tree of r's local rank index: member v (a node) is comm rank
 * v * m + local; parent (v - 1) / 2, children 2v + 1 and 2v + 2. */
typedef struct tree_ctx {
    const emu_rank *r;
    const emu_op *op;
    uint32_t k;
    int ch, m, local, members, me, loops;
    size_t slice;
    const uint64_t *ready;
    uint64_t up_free[TREE_MAX], down_free[TREE_MAX][2]; /* each link's next free time */
    uint64_t avail[TREE_MAX], down[TREE_MAX];           /* chunk l: reduced at v, broadcast to v */
    uint64_t up_arrive[TREE_MAX];                       /* chunk l from v at its parent */
    emu_step_t *out;                                    /* EMU_TREE_SLOTS x loops of this rank's legs */
} tree_ctx;

enum { TS_SEND_UP, TS_RECV_DOWN, TS_SEND_DOWN0, TS_RECV_UP0, TS_SEND_DOWN1, TS_RECV_UP1, EMU_TREE_SLOTS };

static void tree_shape(const emu_rank *r, const emu_op *op, int *loops, size_t *slice)
{
    size_t per_ch = op->bytes / (size_t)op->nch + 1, chunk = (size_t)r->w->o->chunk_size;
    long l = (long)((per_ch + chunk - 1) / chunk);
    *loops = (int)(l < 1 ? 1 : l > EMU_MAX_STEPS ? EMU_MAX_STEPS : l);
    *slice = per_ch / (size_t)*loops + 1;
}

static int tree_rank(const tree_ctx *t, int v)
{
    return v * t->m + t->local;
}

/* One chunk over one tree link a -> b: its step, and when it arrives. */
static uint64_t tree_hop(tree_ctx *t, int a, int b, uint64_t data, uint64_t *link_free, int l, emu_step_t *from,
                         emu_step_t *to)
{
    double gbps, lat;
    int ra = tree_rank(t, a), rb = tree_rank(t, b);
    link_of(t->r, t->op, ra, rb, &gbps, &lat);
    uint64_t start = max2(max2(data, t->ready[rb]), *link_free);
    if (stalled(t->r, t->k, t->ch, ra, l))
        start = EMU_NEVER;
    uint64_t done = sat_add(start, emu_model_us(t->r->w->o, (double)t->slice * t->op->nch / gbps / 1000.0));
    uint64_t arrive = sat_add(done, emu_model_us(t->r->w->o, lat));
    *link_free = start == EMU_NEVER ? EMU_NEVER : done;
    if (from)
        from[l] = (emu_step_t){l ? from[l - 1].data : t->ready[ra], data, start, arrive};
    if (to)
        to[l] = (emu_step_t){l ? to[l - 1].data : t->ready[rb], arrive, arrive, arrive};
    return arrive;
}

static emu_step_t *tree_slot(tree_ctx *t, int v, int slot)
{
    return v == t->me ? t->out + (size_t)slot * (size_t)t->loops : NULL;
}

/* Chunk l: up from the leaves (children have higher indices), then down. */
static void tree_chunk(tree_ctx *t, int l)
{
    for (int v = t->members - 1; v >= 0; v--) {
        uint64_t a = t->ready[tree_rank(t, v)];
        for (int c = 0; c < 2 && 2 * v + 1 + c < t->members; c++)
            a = max2(a, t->up_arrive[2 * v + 1 + c]);
        t->avail[v] = a;
        if (v) {
            int p = (v - 1) / 2, which = (v - 1) % 2;
            emu_step_t *into = t->me == p ? tree_slot(t, p, which ? TS_RECV_UP1 : TS_RECV_UP0) : NULL;
            t->up_arrive[v] = tree_hop(t, v, p, a, &t->up_free[v], l, tree_slot(t, v, TS_SEND_UP), into);
        }
    }
    t->down[0] = t->avail[0];
    for (int v = 0; v < t->members; v++)
        for (int c = 0; c < 2 && 2 * v + 1 + c < t->members; c++) {
            int child = 2 * v + 1 + c;
            t->down[child] = tree_hop(t, v, child, t->down[v], &t->down_free[v][c], l,
                                      tree_slot(t, v, c ? TS_SEND_DOWN1 : TS_SEND_DOWN0),
                                      tree_slot(t, child, TS_RECV_DOWN));
        }
}

static uint64_t tree_channel(const emu_rank *r, const emu_op *op, uint32_t k, int ch, const uint64_t *ready,
                             emu_step_t *out)
{
    static __thread tree_ctx t;
    int n = r->ci.nranks;
    t.r = r, t.op = op, t.k = k, t.ch = ch, t.ready = ready, t.out = out;
    t.m = r->w->o->ranks_per_node, t.local = r->ci.rank % t.m, t.me = r->ci.rank / t.m;
    t.members = 0;
    while (t.members < TREE_MAX && tree_rank(&t, t.members) < n)
        t.members++;
    tree_shape(r, op, &t.loops, &t.slice);
    for (int v = 0; v < t.members; v++)
        t.up_free[v] = t.down_free[v][0] = t.down_free[v][1] = 0;
    for (int l = 0; l < t.loops; l++)
        tree_chunk(&t, l);
    uint64_t end = t.down[t.me];
    for (int s = 0; s < EMU_TREE_SLOTS; s++) /* every leg of this rank done too */
        end = s == TS_SEND_UP && !t.me ? end : max2(end, out[(size_t)(s + 1) * (size_t)t.loops - 1].done);
    return end;
}

/* ---- either ---- */

bool emu_model_same_channels(const emu_rank *r, uint32_t k)
{
    return !stall_in(r, k, r->w->o->model.stall_ch);
}

static bool is_tree(const emu_rank *r)
{
    return strcmp(r->w->o->algo, "TREE") == 0;
}

size_t emu_model_cells(const emu_rank *r, const emu_op *op)
{
    int loops, per_loop;
    size_t slice;
    if (is_tree(r)) {
        tree_shape(r, op, &loops, &slice);
        return (size_t)EMU_TREE_SLOTS * (size_t)loops;
    }
    emu_model_shape(r, op, &loops, &per_loop, &slice);
    return 2 * (size_t)loops * (size_t)per_loop;
}

uint64_t emu_model_channel(const emu_rank *r, const emu_op *op, uint32_t k, int ch, const uint64_t *ready,
                           emu_step_t *steps)
{
    if (is_tree(r)) {
        for (size_t i = 0; i < emu_model_cells(r, op); i++) /* legs a rank does not have stay unused */
            steps[i] = (emu_step_t){0, 0, 0, 0};
        return tree_channel(r, op, k, ch, ready, steps);
    }
    return ring_channel(r, op, k, ch, ready, steps, steps + emu_model_cells(r, op) / 2);
}

const emu_step_t *emu_model_leg(const emu_rank *r, const emu_op *op, const emu_step_t *steps, int peer, bool send)
{
    if (!is_tree(r))
        return send ? steps : steps + emu_model_cells(r, op) / 2;
    int loops, m = r->w->o->ranks_per_node, me = r->ci.rank / m, v = peer / m;
    size_t slice;
    tree_shape(r, op, &loops, &slice);
    int slot = v == (me - 1) / 2 && me ? (send ? TS_SEND_UP : TS_RECV_DOWN)
               : v == 2 * me + 1   ? (send ? TS_SEND_DOWN0 : TS_RECV_UP0)
                                   : (send ? TS_SEND_DOWN1 : TS_RECV_UP1);
    return steps + (size_t)slot * (size_t)loops;
}

int emu_model_tree_steps(const emu_rank *r, const emu_op *op)
{
    int loops;
    size_t slice;
    tree_shape(r, op, &loops, &slice);
    return loops;
}

void emu_model_uniform(emu_step_t *t, int n, uint64_t t0, uint64_t t1)
{
    for (int s = 0; s < n; s++) {
        uint64_t a = t1 == EMU_NEVER ? (s ? EMU_NEVER : t0) : t0 + (t1 - t0) * (uint64_t)s / (uint64_t)n;
        uint64_t b = t1 == EMU_NEVER ? EMU_NEVER : t0 + (t1 - t0) * (uint64_t)(s + 1) / (uint64_t)n;
        t[s] = (emu_step_t){a, a, a, b};
    }
}
