/* engine.c: communicators and emitting events the way NCCL does.
 *
 * Owns a rank's life (plugin reference, init, finalize), the emit calls that
 * apply NCCL's rules (the version must have the type; an event starts when its
 * own mask bit or a descendant's is set, so children always have a parent;
 * NULL handles are never stopped or given states, but are passed on as
 * parents), the accounting of every call, and the per-rank proxy thread that
 * plays NCCL's proxy: ProxyCtrl, KernelCh with GPU timers, ProxyOp/ProxyStep.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emu.h"

const char *const emu_func_names[EMU_F_COUNT + 1] = {
    [EMU_F_BROADCAST] = "Broadcast", [EMU_F_REDUCE] = "Reduce",       [EMU_F_ALLGATHER] = "AllGather",
    [EMU_F_REDUCESCATTER] = "ReduceScatter", [EMU_F_ALLREDUCE] = "AllReduce", [EMU_F_SEND] = "Send",
    [EMU_F_RECV] = "Recv", [EMU_F_COUNT] = NULL};

int emu_func_index(const char *name)
{
    for (int i = 0; emu_func_names[i]; i++)
        if (strcmp(emu_func_names[i], name) == 0)
            return i;
    return -1;
}

uint32_t emu_gettid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

#define BIT(t) (1u << (t))
#define PROXY_TREE (BIT(NSC_T_PROXY_OP) | BIT(NSC_T_PROXY_STEP) | BIT(NSC_T_NET_PLUGIN))
#define KERNEL_TREE (BIT(NSC_T_KERNEL_CH) | BIT(NSC_T_KERNEL_PHASE))
#define OP_TREE (PROXY_TREE | KERNEL_TREE)
#define CE_TREE (BIT(NSC_T_CE_COLL) | BIT(NSC_T_CE_SYNC) | BIT(NSC_T_CE_BATCH))

uint32_t emu_mask_now(void)
{
    return (uint32_t)__atomic_load_n(&emu_mask, __ATOMIC_RELAXED);
}

/* Which mask bits make NCCL start an event of each type. */
static uint32_t wanted_bits(unsigned type)
{
    switch (type) {
    case NSC_T_GROUP_API:
        return BIT(NSC_T_GROUP_API) | BIT(NSC_T_COLL_API) | BIT(NSC_T_P2P_API) |
               BIT(NSC_T_KERNEL_LAUNCH) | BIT(NSC_T_COLL) | BIT(NSC_T_P2P) | OP_TREE | CE_TREE;
    case NSC_T_COLL_API: return BIT(NSC_T_COLL_API) | BIT(NSC_T_COLL) | OP_TREE | CE_TREE;
    case NSC_T_P2P_API: return BIT(NSC_T_P2P_API) | BIT(NSC_T_P2P) | OP_TREE;
    case NSC_T_GROUP: return BIT(NSC_T_GROUP) | BIT(NSC_T_COLL) | BIT(NSC_T_P2P) | OP_TREE;
    case NSC_T_COLL: return BIT(NSC_T_COLL) | OP_TREE;
    case NSC_T_P2P: return BIT(NSC_T_P2P) | OP_TREE;
    case NSC_T_PROXY_OP: return PROXY_TREE;
    case NSC_T_PROXY_STEP: return BIT(NSC_T_PROXY_STEP) | BIT(NSC_T_NET_PLUGIN);
    case NSC_T_KERNEL_CH: return KERNEL_TREE;
    case NSC_T_CE_COLL: return CE_TREE;
    default: return BIT(type);
    }
}

static void count(uint64_t *c)
{
    __atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

/* The rank whose proxy thread this is (NULL: not a proxy thread). */
static __thread const emu_rank *proxy_of_thread;

/* Add d to a count of r's: the proxy thread's own share with a plain store
 * (it is the one writer), a shared count with a locked add. */
static void tally(const emu_rank *r, uint64_t *c, uint64_t d)
{
    if (proxy_of_thread == r)
        __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + d, __ATOMIC_RELAXED);
    else
        __atomic_fetch_add(c, d, __ATOMIC_RELAXED);
}

/* The calls this thread counts as r's own (not PXN's foreign ones). */
static uint64_t (*own_calls(emu_rank *r))[NSC_T_COUNT]
{
    return proxy_of_thread == r ? r->acct->proxy_calls : r->acct->calls;
}

static bool is_foreign(const emu_rank *r, uint64_t (*calls)[NSC_T_COUNT])
{
    return calls == r->acct->foreign;
}

static void count_call(emu_rank *r, uint64_t (*calls)[NSC_T_COUNT], int kind, unsigned type)
{
    if (is_foreign(r, calls))
        count(&calls[kind][type]);
    else
        tally(r, &calls[kind][type], 1);
}

static void *start_in(emu_rank *r, void *ctx, emu_ev *ev, uint64_t (*calls)[NSC_T_COUNT])
{
    int v = r->w->pl.version;
    if (!r->profiled || !emu_version_has_type(v, ev->type) || !(ev->mask & wanted_bits(ev->type)))
        return NULL;
    emu_descr d;
    emu_descr_build(v, ev, &d);
    emu_quirks_descr(v, ev, &d);
    void *h = NULL;
    emu_plugin_start(&r->w->pl, ctx, &h, &d);
    count_call(r, calls, EMU_CALL_START, ev->type);
    if (!h)
        count(&r->acct->null_handles);
    return h;
}

void *emu_start(emu_rank *r, emu_ev *ev)
{
    ev->rank = r->ci.rank;
    ev->comm_id = r->ci.comm_id;
    ev->comm_name = r->ci.name;
    return start_in(r, r->ctx, ev, own_calls(r));
}

/* ev->rank and comm fields already carry the originator's values. */
void *emu_start_foreign(emu_rank *r, void *foreign_ctx, emu_ev *ev)
{
    return start_in(r, foreign_ctx, ev, r->acct->foreign);
}

void *emu_start_on(emu_rank *r, void *ctx, emu_ev *ev, bool foreign)
{
    return foreign ? emu_start_foreign(r, ctx, ev) : emu_start(r, ev);
}

/* This thread's set of r's open events, locked if other threads share it. */
static emu_open_set *open_set(emu_rank *r)
{
    if (proxy_of_thread == r)
        return &r->proxy_open;
    pthread_mutex_lock(&r->open_lock);
    return &r->open;
}

static void open_set_done(emu_rank *r, const emu_open_set *s)
{
    if (s == &r->open)
        pthread_mutex_unlock(&r->open_lock);
}

/* States of own events not yet stopped: +1 per state, and at the stop the
 * event's states are taken back. acct->open_states is what a process that dies
 * leaves: states the plugin saw for events it will never see stopped. The
 * set is a hash table (linear probing, deletion by shifting back), as every
 * state call looks its handle up. NCCL sets no bound on these events (a
 * rank of an AlltoAll holds a ProxyOp and a ProxyStep open per channel and
 * remote peer), so the set doubles when half full: a rank grows it a few
 * times at most, and its probes stay short. */
#define OPEN_SET_BITS 5 /* 32 entries to begin with */

static int open_set_init(emu_open_set *s, unsigned bits)
{
    s->e = calloc((size_t)1 << bits, sizeof *s->e);
    s->bits = bits;
    s->used = 0;
    return s->e ? 0 : -1;
}

static unsigned open_home(const emu_open_set *s, const void *h)
{
    uint64_t x = (uint64_t)(uintptr_t)h * 0x9e3779b97f4a7c15ull;
    return (unsigned)(x >> (64 - s->bits)); /* the top bits: the best mixed */
}

static unsigned open_next(const emu_open_set *s, unsigned i)
{
    return (i + 1) & ((1u << s->bits) - 1);
}

/* Where h is, or the free entry where it would go (the set is never full). */
static int open_find(const emu_open_set *s, const void *h)
{
    unsigned i = open_home(s, h);
    while (s->e[i].h && s->e[i].h != h)
        i = open_next(s, i);
    return (int)i;
}

/* Twice the entries, each event at its home in the larger set. */
static int open_grow(emu_open_set *s)
{
    emu_open_set g;
    if (open_set_init(&g, s->bits + 1))
        return -1;
    for (size_t i = 0; i < (size_t)1 << s->bits; i++)
        if (s->e[i].h)
            g.e[open_find(&g, s->e[i].h)] = s->e[i];
    g.used = s->used;
    free(s->e);
    *s = g;
    return 0;
}

/* Where h is, or the free entry it is to take (counted as used), the set
 * grown first if that entry would fill half of it; -1: out of memory. */
static int open_place(emu_open_set *s, const void *h)
{
    int i = open_find(s, h);
    if (s->e[i].h)
        return i;
    if (2 * (s->used + 1) > 1u << s->bits) {
        if (open_grow(s))
            return -1;
        i = open_find(s, h);
    }
    s->used++;
    return i;
}

static void open_state_add(emu_rank *r, void *h)
{
    emu_open_set *s = open_set(r);
    int i = open_place(s, h);
    if (i < 0)
        emu_die("out of memory for the open events of rank %d", r->ci.rank);
    if (s->e[i].h)
        s->e[i].n++;
    else
        s->e[i].h = h, s->e[i].n = 1;
    tally(r, proxy_of_thread == r ? &r->acct->proxy_open_states : &r->acct->open_states, 1);
    open_set_done(r, s);
}

/* Empty entry i, moving back the later entries of its run that may not
 * stay behind a hole (their home is not between i and them). */
static void open_remove(emu_open_set *s, unsigned i)
{
    s->e[i].h = NULL;
    s->used--;
    for (unsigned j = open_next(s, i); s->e[j].h; j = open_next(s, j)) {
        unsigned home = open_home(s, s->e[j].h);
        bool stays = i < j ? i < home && home <= j : i < home || home <= j;
        if (stays)
            continue;
        s->e[i] = s->e[j];
        s->e[j].h = NULL;
        i = j;
    }
}

/* h leaves the open set; stopped: its states are no longer open ones. */
static void open_state_end(emu_rank *r, void *h, bool stopped)
{
    emu_open_set *s = open_set(r);
    int i = open_find(s, h);
    if (s->e[i].h) {
        if (stopped)
            tally(r, proxy_of_thread == r ? &r->acct->proxy_open_states : &r->acct->open_states,
                  -(uint64_t)s->e[i].n);
        open_remove(s, (unsigned)i);
    }
    open_set_done(r, s);
}

void emu_abandon_on(emu_rank *r, void *h, bool foreign)
{
    if (h && !foreign)
        open_state_end(r, h, false);
}

static void stop_in(emu_rank *r, unsigned type, void *h, uint64_t (*calls)[NSC_T_COUNT])
{
    if (!h)
        return;
    emu_plugin_stop(&r->w->pl, h);
    count_call(r, calls, EMU_CALL_STOP, type);
    if (!is_foreign(r, calls))
        open_state_end(r, h, true);
}

void emu_stop(emu_rank *r, unsigned type, void *h)
{
    stop_in(r, type, h, own_calls(r));
}

void emu_stop_on(emu_rank *r, unsigned type, void *h, bool foreign)
{
    stop_in(r, type, h, foreign ? r->acct->foreign : own_calls(r));
}

static void state_in(emu_rank *r, unsigned type, void *h, int state, uint64_t arg, int steps,
                     uint64_t (*calls)[NSC_T_COUNT])
{
    if (!h)
        return;
    emu_state_args a;
    emu_state_args_build(r->w->pl.version, state, arg, steps, &a);
    emu_plugin_state(&r->w->pl, h, state, &a);
    count_call(r, calls, EMU_CALL_STATE, type);
    if (!is_foreign(r, calls)) { /* PXN states count as "foreign" calls only */
        tally(r, proxy_of_thread == r ? &r->acct->proxy_states[state] : &r->acct->states[state], 1);
        open_state_add(r, h);
    }
}

void emu_state(emu_rank *r, unsigned type, void *h, int state, uint64_t arg, int steps)
{
    state_in(r, type, h, state, arg, steps, own_calls(r));
}

void emu_state_on(emu_rank *r, unsigned type, void *h, int state, uint64_t arg, int steps, bool foreign)
{
    state_in(r, type, h, state, arg, steps, foreign ? r->acct->foreign : own_calls(r));
}

int emu_rank_open(emu_world *w, emu_rank *r, const emu_comm_info *ci, int global_rank, int node)
{
    memset(r, 0, sizeof *r);
    r->w = w;
    r->ci = *ci;
    r->global_rank = global_rank;
    r->node = node;
    r->world_stride = 1;
    r->host_may_publish = true; /* the device is free: nothing enqueued yet */
    r->stream = (void *)(uintptr_t)(0x5000000u + 0x1000u * (unsigned)global_rank);
    size_t nr = (size_t)(ci->nranks > 0 ? ci->nranks : 1);
    r->peer_ready = calloc(nr, sizeof *r->peer_ready);
    r->p2p_nth = calloc(2 * nr, sizeof *r->p2p_nth);
    r->p2p_seq = calloc(2 * nr, sizeof *r->p2p_seq);
    r->host_ready = calloc(nr, sizeof *r->host_ready);
    r->host_last = calloc(1, sizeof *r->host_last);
    if (!r->peer_ready || !r->p2p_nth || !r->p2p_seq || !r->host_ready || !r->host_last ||
        open_set_init(&r->open, OPEN_SET_BITS) || open_set_init(&r->proxy_open, OPEN_SET_BITS) ||
        emu_quirks_rank_open(r))
        return -1;
    pthread_mutex_init(&r->open_lock, NULL);
    pthread_mutex_lock(&w->lock);
    if (w->next_slot >= w->acct.nslots) {
        pthread_mutex_unlock(&w->lock);
        fprintf(stderr, "ncclscope-emu: accounting slots exhausted\n");
        return -1;
    }
    r->acct = emu_acct_slot(&w->acct, w->next_slot++);
    r->colls = emu_acct_colls(&w->acct, r->acct);
    r->samples = emu_acct_samples(&w->acct, r->acct);
    emu_acct *a = r->acct;
    a->comm_id = ci->comm_id;
    a->rank = ci->rank;
    a->nranks = ci->nranks;
    a->node = node;
    a->pid = (uint32_t)getpid();
    emu_gpu_clock_for(w->o, global_rank, w->epoch_ns, &a->gpu);
    emu_acct_note_tid(a);
    if (emu_plugin_acquire(&w->pl, w->plugin_spec, w->o->api) == 0) {
        if (emu_plugin_init(&w->pl, &r->ctx, ci) == 0)
            r->profiled = true;
        else
            emu_plugin_release(&w->pl); /* NCCL unloads the plugin and goes on */
    }
    a->version = r->profiled ? w->pl.version : 0;
    a->profiled = r->profiled;
    a->used = 1;
    pthread_mutex_unlock(&w->lock);
    return 0;
}

void emu_rank_close(emu_rank *r)
{
    if (r->proxy)
        emu_proxy_join(r);
    if (r->w->wire) /* whoever still waits for this rank waits no more */
        emu_wire_gone(r->w->wire, emu_wire_slot(r, r->ci.rank));
    free(r->peer_ready);
    free(r->p2p_nth);
    free(r->p2p_seq);
    free(r->host_ready);
    free(r->host_last);
    free(r->host_p2p);
    emu_quirks_rank_close(r);
    r->peer_ready = r->host_ready = NULL;
    r->p2p_nth = NULL;
    r->p2p_seq = NULL;
    r->host_last = NULL;
    r->host_p2p = NULL;
    pthread_mutex_lock(&r->w->lock);
    if (r->profiled) {
        emu_plugin_finalize(&r->w->pl, r->ctx);
        emu_plugin_release(&r->w->pl);
        r->profiled = false;
    }
    pthread_mutex_unlock(&r->w->lock);
    pthread_mutex_destroy(&r->open_lock);
    free(r->open.e);
    free(r->proxy_open.e);
    r->open.e = r->proxy_open.e = NULL;
}

/* ---- the proxy thread ---- */

/* How many collectives a rank's host thread may run ahead of its proxy
 * thread. In NCCL the work FIFO and the proxy's op pool bound it; here no GPU
 * or network slows the proxy, so without a bound the host thread of a job run
 * flat out gets thousands of collectives ahead, and the proxy's next batch
 * would start that many KernelCh events at once. */
#define EMU_PROXY_AHEAD 16
/* Room for the bound plus one whole group (scenarios.c: at most 64 ops),
 * which is posted at once: its p2p ops run together (timeline.c). */
#define EMU_PROXY_RING 128

/* The proxy sleeps for work on a futex of its own, `bell`, rung only when
 * it sleeps: not on the condition variable, whose waiter takes the mutex
 * back marked contended, so that every unlock after it would be a futex
 * wake syscall too. The host waits on `cv` for room or for the proxy's idle. */
struct emu_proxy {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned bell;
    emu_op ops[EMU_PROXY_RING];
    emu_op batch[EMU_PROXY_RING]; /* the proxy's copy of what it runs, off the lock */
    size_t head, tail, running; /* running: ops of the batch the proxy runs */
    bool quit, busy, asleep;
    uint64_t born_ns; /* the host's time as it started the thread */
};

/* Under p->mu; then, unlocked, emu_futex_wake(&p->bell) if it returned true. */
static bool ring_bell(emu_proxy *p)
{
    if (!p->asleep)
        return false;
    p->asleep = false;
    p->bell++;
    return true;
}

void emu_proxy_post(emu_rank *r, const emu_op *ops, size_t n)
{
    emu_proxy *p = r->proxy;
    if (n > EMU_PROXY_RING - EMU_PROXY_AHEAD)
        emu_die("a group of %zu ops is more than the proxy takes", n);
    pthread_mutex_lock(&p->mu);
    /* A group larger than the bound goes in once the proxy has nothing. */
    while (p->tail - p->head + p->running + n > EMU_PROXY_AHEAD && p->tail - p->head + p->running > 0)
        pthread_cond_wait(&p->cv, &p->mu);
    for (size_t i = 0; i < n; i++)
        p->ops[p->tail++ % EMU_PROXY_RING] = ops[i];
    bool wake = ring_bell(p);
    /* Woken after the unlock: a proxy woken on this CPU runs at once, and
     * with the lock still held it would only block on it and switch back. */
    pthread_mutex_unlock(&p->mu);
    if (wake)
        emu_futex_wake(&p->bell, false);
}

void emu_proxy_drain(emu_rank *r)
{
    emu_proxy *p = r->proxy;
    pthread_mutex_lock(&p->mu);
    while (p->head != p->tail || p->busy)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* ProxyCtrl events read the mask at each start (NCCL lets it change per event). */
static void ctrl_event(emu_rank *r, int state, int appended)
{
    emu_ev ev = {.type = NSC_T_PROXY_CTRL, .mask = emu_mask_now()};
    void *h = emu_start(r, &ev);
    emu_state(r, NSC_T_PROXY_CTRL, h, state, 0, 0);
    if (state == NSC_S_PROXY_CTRL_APPEND)
        emu_state(r, NSC_T_PROXY_CTRL, h, NSC_S_PROXY_CTRL_APPEND_END, (uint64_t)appended, 0);
    emu_stop(r, NSC_T_PROXY_CTRL, h);
}

static void run_batch(emu_rank *r, emu_op *ops, size_t n)
{
    int appended = 0;
    for (size_t i = 0; i < n; i++)
        appended += ops[i].nch;
    ctrl_event(r, NSC_S_PROXY_CTRL_APPEND, appended);
    ctrl_event(r, NSC_S_PROXY_CTRL_ACTIVE, 0);
    emu_timeline_batch(r, ops, n);
}

/* When the host enqueued the first of the batch's ops, which woke the
 * proxy in the model (0: none ever starts); the machine may have woken it
 * later, with others enqueued since. */
static uint64_t batch_enqueued(const emu_op *ops, size_t n)
{
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        if (ops[i].enq_ns != EMU_NEVER && (!t || ops[i].enq_ns < t))
            t = ops[i].enq_ns;
    return t;
}

/* The proxy thread starts when its host started it and wakes when its host
 * enqueued, on the model's time, its own calls taking none: the machine's
 * delay in scheduling it is no part of the job (docs/emulator-model.md, "A
 * machine's pauses"). */
static void *proxy_main(void *arg)
{
    emu_rank *r = arg;
    emu_proxy *p = r->proxy;
    proxy_of_thread = r;
    pthread_mutex_lock(&r->w->lock);
    emu_acct_note_tid(r->acct);
    pthread_mutex_unlock(&r->w->lock);
    emu_clock_begin(p->born_ns);
    ctrl_event(r, NSC_S_PROXY_CTRL_IDLE, 0);
    for (;;) {
        /* NCCL's proxy sleeps only with no op active and none posted
         * (ncclProxyGetPostedOps): a batch posted while it ran is appended
         * at once, with no Sleep. */
        pthread_mutex_lock(&p->mu);
        bool nothing = p->head == p->tail && !p->quit;
        pthread_mutex_unlock(&p->mu);
        void *sleep_h = NULL;
        if (nothing) {
            emu_ev ev = {.type = NSC_T_PROXY_CTRL, .mask = emu_mask_now()};
            sleep_h = emu_start(r, &ev);
            emu_state(r, NSC_T_PROXY_CTRL, sleep_h, NSC_S_PROXY_CTRL_SLEEP, 0, 0);
        }
        pthread_mutex_lock(&p->mu);
        /* Idle only now that the sleep's calls are made: a drain (the kill
         * fault's) must not end while a counted call is still in the plugin. */
        p->busy = false;
        p->running = 0;
        pthread_cond_broadcast(&p->cv);
        while (p->head == p->tail && !p->quit) {
            unsigned seen = p->bell;
            p->asleep = true;
            pthread_mutex_unlock(&p->mu);
            emu_futex_wait(&p->bell, seen, NULL, false);
            pthread_mutex_lock(&p->mu);
        }
        size_t n = p->tail - p->head;
        for (size_t i = 0; i < n; i++)
            p->batch[i] = p->ops[(p->head + i) % EMU_PROXY_RING];
        p->head = p->tail;
        p->running = n;
        p->busy = true;
        pthread_mutex_unlock(&p->mu);
        uint64_t enqueued = batch_enqueued(p->batch, n);
        if (enqueued)
            emu_clock_due(enqueued, 0);
        emu_state(r, NSC_T_PROXY_CTRL, sleep_h, NSC_S_PROXY_CTRL_WAKEUP, 0, 0); /* none: no call */
        emu_stop(r, NSC_T_PROXY_CTRL, sleep_h);
        if (n == 0) {
            ctrl_event(r, NSC_S_PROXY_CTRL_APPEND, 0); /* woken to quit: nothing appended */
            return NULL; /* quitting: emu_proxy_join drained before */
        }
        run_batch(r, p->batch, n);
        ctrl_event(r, NSC_S_PROXY_CTRL_IDLE, 0); /* its ops done: no progress left to make */
    }
}

void emu_proxy_start(emu_rank *r)
{
    emu_proxy *p = calloc(1, sizeof *p);
    if (!p)
        emu_die("out of memory");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->born_ns = emu_clock_stamp_ns();
    r->proxy = p;
    if (pthread_create(&p->thread, NULL, proxy_main, r))
        emu_die("cannot start a proxy thread");
}

void emu_proxy_join(emu_rank *r)
{
    emu_proxy *p = r->proxy;
    emu_proxy_drain(r);
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    bool wake = ring_bell(p);
    pthread_mutex_unlock(&p->mu);
    if (wake)
        emu_futex_wake(&p->bell, false);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
    r->proxy = NULL;
}

/* Ring: send to the next rank, receive from the previous, where they are on
 * another node. Tree: nodes form a binary tree; a rank talks to the rank with
 * its local index on the parent and child nodes. Returns the number of legs. */
int emu_node_of(const emu_rank *r, int comm_rank)
{
    return (r->world_base + r->world_stride * comm_rank) / r->w->o->ranks_per_node;
}

int emu_net_peers(const emu_rank *r, bool tree, int *sends, int *ns, int *recvs, int *nr)
{
    int n = r->ci.nranks, me = r->ci.rank, m = r->w->o->ranks_per_node;
    *ns = *nr = 0;
    if (!tree) {
        int next = (me + 1) % n, prev = (me + n - 1) % n;
        if (emu_node_of(r, next) != r->node)
            sends[(*ns)++] = next;
        if (emu_node_of(r, prev) != r->node)
            recvs[(*nr)++] = prev;
        return *ns + *nr;
    }
    /* Trees are built on the world communicator's node layout. */
    int node = me / m, local = me % m, nnodes = (n + m - 1) / m;
    int kin[3] = {node ? (node - 1) / 2 : -1, 2 * node + 1, 2 * node + 2};
    for (int i = 0; i < 3; i++) {
        int peer = kin[i] * m + local;
        if (kin[i] < 0 || kin[i] >= nnodes || peer >= n)
            continue;
        sends[(*ns)++] = peer; /* reduce up / broadcast down: both directions */
        recvs[(*nr)++] = peer;
    }
    return *ns + *nr;
}
