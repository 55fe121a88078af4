/* emu.h: the internal interfaces of ncclscope-emu, the NCCL emulator.
 *
 * The emulator is split by concern: loader.c (NCCL's plugin loading rules),
 * descr.c (version-neutral events -> each API version's descriptor), clock.c
 * (true clock, node and GPU clock models), acct.c (what was emitted, in shared
 * memory so a killed process still tells), engine.c (communicators, emitting
 * with NCCL's mask rules, the proxy thread), scenarios.c, train.c (the train
 * scenario), pxn.c, cluster.c (processes and threads), summary.c, replay.c,
 * bench.c, main.c (options).
 */
#ifndef NCCLSCOPE_EMU_H
#define NCCLSCOPE_EMU_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "../../plugin/nccl/profiler.h"
#include "event.h"

#define EMU_MAX_VERSION 7
#define EMU_MAX_NODES 64
#define EMU_MAX_RANKS 1024
#define EMU_MAX_COMMS 256

/* ---- options (main.c) ---- */
typedef struct emu_node_clock {
    int64_t offset_ns;
    double drift_ppm;
    int64_t step_at_ns;  /* true ns after the epoch at which the clock steps */
    int64_t step_ns;     /* by how much (0: never) */
} emu_node_clock;

/* The cost model (model.c, docs/emulator-model.md "Time"): link and NIC speeds,
 * per-step latencies, GPU work before each collective, and the faults that
 * change them. Durations are model ns; time_scale turns them into real ns
 * (0: no model, ranks do not wait for each other, as before). */
typedef struct emu_model {
    double time_scale;
    double link_gbps, nic_gbps;     /* GB/s per direction: one GPU's intra-node link, one node's NIC */
    double link_lat_us, nic_lat_us; /* latency of one step */
    double compute_us;              /* GPU work before every collective */
    int slow_gpu_rank;              /* its work before each collective takes slow_gpu_us more */
    double slow_gpu_us;
    int slow_link_from, slow_link_to; /* node pair, one direction: bandwidth / slow_link_factor */
    double slow_link_factor;
    int slow_nic_node;              /* every link of this node: bandwidth / slow_nic_factor */
    double slow_nic_factor;
    int stall_rank, stall_coll, stall_ch, stall_step; /* stops sending there */
    const char *stall_comm;         /* train: only in this communicator (tp, pp, dp); NULL: any */
    int mismatch_rank, mismatch_coll;
    const char *mismatch_what;      /* count, dtype or func */
    /* The late host, slow GPU, slow link and slow NIC act in iteration
     * (train: step) fault_from and every fault_every-th one after it. */
    int fault_from, fault_every;
} emu_model;

typedef struct emu_opts {
    const char *scenario;
    const char *plugin;   /* NULL: NCCL_PROFILER_PLUGIN from the environment */
    int api;              /* 0: newest the plugin exports */
    const char *mask;     /* initial activation mask (NCCL_PROFILE_EVENT_MASK) */
    int nodes, ranks_per_node;
    int comms;            /* communicators every rank inits (each its own hash) */
    bool threads;         /* ranks as threads (one process per node) */
    int iters, ops, channels;
    size_t count;
    const char *func, *dtype, *algo, *proto;
    const char *also_func; /* --also-func: NULL, or a function every group also calls */
    int chunk_size;
    int pace_us;
    const char *progress; /* rank 0 writes its iterations issued here */
    int slow_rank, slow_us;  /* a straggler: this rank waits slow_us before each iteration */
    int tp, pp, dp, microbatches; /* train: the parallel sizes, microbatches per step */
    int jitter_us;        /* every rank's host waits a seeded draw in [0, jitter_us] before each group */
    int hang_rank, hang_after, hang_ms;
    int kill_rank, kill_after, kill_delay_ms;
    bool pxn_probe;
    bool unsynced_init;   /* no start barrier (start.c) */
    bool ce;              /* collectives on the copy engine (v6+ CeColl/CeSync/CeBatch) */
    bool kernel_phases;   /* v7 KernelPhase children of each KernelCh */
    int net_qps;          /* IB queue pairs per network step: NetPlugin events each (0: none) */
    emu_model model;      /* the cost model and its faults (model.c) */
    uint64_t seed;
    int64_t gpu_spread_ns;
    double gpu_drift_ppm;
    emu_node_clock node_clock[EMU_MAX_NODES];
    const char *rundir_base, *host_prefix;
    const char *summary;
    const char *replay;
    double speed;
    bool bench;
    int bench_threads, bench_reps;
    long bench_iters;
    uint32_t quirks;      /* --nccl-quirk: EMU_Q_* */
    const char *worker;   /* hidden: "NODE,FIRST,COUNT,WFD,RFD,STARTFILE,ACCTFILE" */
} emu_opts;

/* ---- loader.c ---- */
typedef struct emu_plugin {
    void *dl;             /* dlopen handle; NULL when not loaded */
    int version;          /* 1..7 */
    const void *api;      /* the exported ncclProfiler_vN struct */
    char path[512];
    int refs;             /* communicators that hold it */
} emu_plugin;

/* One process-wide activation mask, as in NCCL. */
extern int emu_mask;
/* The mask now: NCCL samples it once per operation (at GroupApi start) and
 * every event of that operation, down to its proxy children, uses that value. */
uint32_t emu_mask_now(void);

/* ---- quirks.c: --nccl-quirk ---- */

enum {
    EMU_Q_API_RANK0 = 1u << 0,
    EMU_Q_ZERO_GPU_TIMER = 1u << 1,
    EMU_Q_NULL_PARENT = 1u << 2,
    EMU_Q_UNPAIRED_STEPS = 1u << 3,
    EMU_Q_DRIFTING_KERNELCH = 1u << 4
};

typedef struct emu_quirk {
    const char *name;
    uint32_t bit;
    const char *help;
} emu_quirk;

extern const emu_quirk emu_quirk_table[];
extern const int emu_nquirks;
/* The quirks on in this process (set from the options, as emu_mask). */
extern uint32_t emu_quirks;
/* NAME's bit, 0 if no quirk has that name. */
uint32_t emu_quirk_bit(const char *name);

/* Load (or take another reference on) the plugin following NCCL's rules:
 * returns 0 and sets *pl, 1 if profiling is disabled or nothing was found, -1
 * on a hard error (message on stderr). force_version 0 picks the newest. */
int emu_plugin_acquire(emu_plugin *pl, const char *spec, int force_version);
/* Drop one reference; dlclose at zero. */
void emu_plugin_release(emu_plugin *pl);
const char *emu_plugin_name(const emu_plugin *pl);

typedef struct emu_comm_info {
    uint64_t comm_id;
    const char *name;
    int nnodes, nranks, rank;
} emu_comm_info;

/* init with the version's signature; non-zero: NCCL's "init failed". */
int emu_plugin_init(const emu_plugin *pl, void **ctx, const emu_comm_info *ci);
void emu_plugin_finalize(const emu_plugin *pl, void *ctx);
void emu_plugin_start(const emu_plugin *pl, void *ctx, void **h, void *descr);
void emu_plugin_stop(const emu_plugin *pl, void *h);
void emu_plugin_state(const emu_plugin *pl, void *h, int state, void *args);

/* ---- descr.c ---- */
/* A version-neutral event: what NCCL knows when it starts one. */
typedef struct emu_ev {
    unsigned type; /* nsc_type */
    uint32_t mask; /* the activation mask this event's operation sampled */
    void *parent;
    int rank;
    uint64_t comm_id;
    const char *comm_name;
    union {
        struct { bool graph; int depth; } group_api;
        struct {
            const char *func, *dtype;
            size_t count;
            int root;
            void *stream;
            bool graph;
            uint64_t user_tag;
        } api; /* CollApi and P2pApi */
        struct { void *stream; } launch;
        struct {
            uint64_t seq;
            const char *func, *dtype, *algo, *proto, *variant;
            const void *send;
            void *recv;
            size_t count, traffic;
            int root;
            uint8_t nch, nwarps;
            void *parent_group;
            bool sym;
            uint64_t user_tag;
        } coll;
        struct {
            const char *func, *dtype;
            void *buff;
            size_t count;
            int peer;
            uint8_t nch;
            void *parent_group;
            uint64_t user_tag;
        } p2p;
        struct { pid_t pid; uint8_t ch; int peer, nsteps, chunk, is_send; } proxy_op;
        struct { int step; } proxy_step;
        struct { uint8_t ch; uint64_t ptimer; } kernel_ch;
        struct { int64_t id; void *data; } net_plugin;
        struct {
            uint64_t seq;
            const char *func, *dtype, *sync;
            const void *send;
            void *recv;
            size_t count;
            int root;
            void *stream;
            uint32_t ce_seq;
            uint64_t user_tag;
        } ce_coll;
        struct { bool complete; int nranks; } ce_sync;
        struct { int nops; size_t bytes; bool intra_sync; } ce_batch;
        struct { uint8_t ch, phase; const char *name; uint64_t ptimer; } kernel_phase;
    } d;
} emu_ev;

/* Largest descriptor of any version (v7: 136 bytes). */
typedef nsc_any_descr emu_descr;

typedef union emu_state_args {
    ncclProfilerEventStateArgs_v1_t v1;
    ncclProfilerEventStateArgs_v4_t v4;
} emu_state_args;

/* Does `version` have event type `type`? */
bool emu_version_has_type(int version, unsigned type);
/* Build the descriptor; -1 if the version has no such event. */
int emu_descr_build(int version, const emu_ev *ev, emu_descr *out);
/* State args: `arg` is transSize/appendedProxyOps/pTimer; `steps` for v1-v3 ProxyOp. */
void emu_state_args_build(int version, int state, uint64_t arg, int steps, emu_state_args *out);
/* The quirks on (quirks.c) applied to a built descriptor of ev; a KernelChStop's
 * pTimer on channel ch as the quirks make it. */
void emu_quirks_descr(int version, const emu_ev *ev, emu_descr *d);
uint64_t emu_quirk_kch_stop(int ch, uint64_t ptimer);
/* Whether step (of nsteps in its ProxyOp) gets its stopEvent. */
bool emu_quirk_step_stops(int step, int nsteps);

/* ---- clock.c ---- */
uint64_t emu_true_ns(void); /* CLOCK_MONOTONIC, libc's own: never shimmed */
/* Sleep until true time t (0 or past: no sleep). */
void emu_sleep_until(uint64_t t);
/* The clock floor (the shim's, when preloaded): is there one; raise this
 * thread's to true time t (it never goes down, so the thread's stamps stay
 * in order); the time the plugin reads on this thread now. */
bool emu_clock_floor_on(void);
void emu_clock_floor_raise(uint64_t t);
uint64_t emu_clock_stamp_ns(void);
/* The plugin's clock reads on this thread return exactly true time t, a
 * stamp taken before the call made under it, until emu_clock_hold(0) (no-op
 * without the shim). */
void emu_clock_hold(uint64_t t);
/* This thread is due at true time t: its next clock read or stamp returns
 * t (or a later time it read already: its clocks never go back), and where
 * real time is past it then (a loaded machine held the thread back) its
 * clocks and stamps trail real time from there; until its next due time
 * they read at most `work` past it (the clock shim's emu_clockshim_due;
 * no-op without the shim). */
void emu_clock_due(uint64_t t, uint64_t work);
/* A new thread joins the model at true time t: due then, its own calls
 * taking no time, whatever it read before (no-op without the shim). */
void emu_clock_begin(uint64_t t);
typedef struct emu_gpu_clock {
    int64_t offset_ns;
    int64_t drift_ppb;
    uint64_t epoch_ns;
} emu_gpu_clock;
uint64_t emu_gpu_time(const emu_gpu_clock *g, uint64_t true_ns);
void emu_gpu_clock_for(const emu_opts *o, int global_rank, uint64_t epoch_ns, emu_gpu_clock *g);
/* The true time node clocks and GPU timers count their drift from:
 * NCCLSCOPE_EMU_EPOCH_NS if set, else now. */
uint64_t emu_epoch_ns(void);
int64_t emu_ppm_to_ppb(double ppm);
uint64_t emu_splitmix(uint64_t x);

/* ---- acct.c: what was emitted, per (communicator, rank) ---- */
typedef struct emu_coll_rec {
    uint64_t seq;
    uint64_t api_start_ns, start_ns, stop_ns, complete_ns;
    uint64_t ready_ns, end_ns; /* ground truth: the device began it / finished its part (0: never) */
    uint64_t behind_ns;        /* how far real time was past complete_ns as it was made */
    int32_t func;          /* index into emu_func_names */
    int32_t peer;          /* Send/Recv: the peer; else -1 */
    int32_t children_open; /* KernelCh/ProxyOp started, not yet stopped */
    uint32_t faults;       /* EMU_FAULT_* whose origin this rank's part of it is */
    int32_t step;          /* the iteration (train: step) it belongs to */
    uint64_t jitter_ns;    /* the host's jitter before its group (--jitter-us) */
} emu_coll_rec;

typedef struct emu_sample {
    uint64_t ptimer, true_ns;
} emu_sample;

typedef struct emu_acct {
    uint64_t comm_id;
    int32_t rank, nranks, node, version;
    uint32_t pid;
    int32_t used, profiled; /* slot in use; init succeeded */
    uint32_t tids[4];
    uint32_t ntids;
    emu_gpu_clock gpu;
    uint64_t calls[3][NSC_T_COUNT]; /* start, stop, state per event type */
    uint64_t foreign[3][NSC_T_COUNT]; /* PXN calls made for another process */
    uint64_t states[NSC_S_COUNT];
    uint64_t null_handles;
    uint64_t open_states; /* states given to events not (yet) stopped */
    /* The proxy thread's own share of calls, states and open_states: it has
     * no other writer, so it is counted with plain stores, not the locked
     * adds the shared ones need (a few per record, which NCCL never pays);
     * emu_acct_fold adds it to them for the summary. */
    uint64_t proxy_calls[3][NSC_T_COUNT];
    uint64_t proxy_states[NSC_S_COUNT];
    uint64_t proxy_open_states;
    uint64_t pxn_guarded, pxn_unguarded, pxn_probed, pxn_probe_segv;
    uint32_t ncoll, nsamples;
    /* followed by coll_cap emu_coll_rec, then sample_cap emu_sample */
} emu_acct;

enum { EMU_CALL_START, EMU_CALL_STOP, EMU_CALL_STATE };

typedef struct emu_acct_file {
    void *base;
    size_t size;
    uint32_t nslots, coll_cap, sample_cap;
} emu_acct_file;

int emu_acct_create(const char *path, uint32_t nslots, uint32_t coll_cap, uint32_t sample_cap);
int emu_acct_map(const char *path, emu_acct_file *f);
void emu_acct_unmap(emu_acct_file *f);
emu_acct *emu_acct_slot(const emu_acct_file *f, uint32_t i);
emu_coll_rec *emu_acct_colls(const emu_acct_file *f, emu_acct *a);
emu_sample *emu_acct_samples(const emu_acct_file *f, emu_acct *a);
void emu_acct_note_tid(emu_acct *a);
void emu_acct_fold(emu_acct *a); /* the proxy thread's share into the shared counts */

/* ---- engine.c ---- */
/* NCCL's functions, the index into emu_func_names. */
enum emu_func { EMU_F_BROADCAST, EMU_F_REDUCE, EMU_F_ALLGATHER, EMU_F_REDUCESCATTER, EMU_F_ALLREDUCE, EMU_F_SEND,
                EMU_F_RECV, EMU_F_COUNT };
extern const char *const emu_func_names[];
int emu_func_index(const char *name);

typedef struct emu_proxy emu_proxy;
typedef struct emu_world emu_world;

typedef struct emu_open_set {
    struct emu_open_entry { void *h; uint32_t n; } *e; /* a hash table: engine.c */
    unsigned bits;  /* 1 << bits entries */
    uint32_t used;  /* entries holding an event */
} emu_open_set;

/* One rank of one communicator in this process. */
typedef struct emu_rank {
    emu_world *w;
    emu_comm_info ci;
    int global_rank, node;
    int world_base, world_stride; /* world rank of comm rank k: base + stride * k */
    void *ctx;
    bool profiled;
    emu_acct *acct;
    emu_coll_rec *colls;
    emu_sample *samples;
    uint64_t next_seq[8]; /* collectives: per function */
    uint64_t *p2p_seq;    /* Send/Recv: per peer q and function, [2q] Recv, [2q+1] Send */
    uint32_t ce_seq;      /* copy-engine sync counter (comm->ceColl.ceSeqNum) */
    bool ce_complete;     /* which CE sync flag the next sync uses */
    emu_proxy *proxy;
    void *stream;
    /* The device timeline (timeline.c): where the rank's stream is free,
     * EMU_NEVER once a collective never ended; the next collective's number
     * on the wire; this communicator's slots there; every peer's start. */
    uint64_t dev_free;
    uint32_t wire_next;
    int wire_comm;
    uint64_t *peer_ready;
    /* What the host enqueued last: its collectives so far (the wire numbers
     * them alike), the last one, whether a p2p op came after it; the host's
     * own copy of every peer's start (host_sync). */
    uint32_t host_colls;
    uint64_t host_dev_free; /* the device's end as the host last computed it */
    struct emu_op *host_last;
    bool host_last_p2p;
    uint64_t *host_ready;
    bool host_may_publish; /* the host knows where its device is free (host_sync) */
    /* The last group when the host published it whole, all p2p (their
     * start in pub_ready): the host meets its peers on the wire for its end
     * instead of waiting for the proxy thread. host_p2p_n 0: the proxy's. */
    struct emu_op *host_p2p;
    size_t host_p2p_n, host_p2p_cap;
    /* The end of the collective the proxy timed last, for its host: the
     * same schedule, so the host need not compute it again. proxy_timed is
     * its wire number + 1, stored (release) after proxy_end. */
    uint64_t proxy_end;
    uint32_t proxy_timed;
    /* The collectives whose events the proxy has made (wire number + 1, a
     * futex word), and the count the host waits for there (0: none;
     * timeline_host.c). */
    uint32_t proxy_played;
    uint32_t host_waits_played;
    uint32_t *p2p_nth; /* p2p ops with comm rank q so far: [2q] received, [2q+1] sent (the host's count) */
    /* drifting-kernelch (quirks.c): the device's work counter (one per
     * channel in NCCL, advanced alike), how far the host's has fallen behind
     * it, and the timers the device wrote in its ring, [slot][channel]. */
    uint32_t dev_work, host_behind;
    struct emu_kch_slot *kch_ring;
    /* Events of this rank that were given states and are not stopped yet, with
     * how many: so the summary can say which states belong to open events. An
     * event's states and stop come from one thread: the proxy thread's own
     * events are kept apart, without a lock (most states are theirs). */
    pthread_mutex_t open_lock;
    emu_open_set open, proxy_open;
} emu_rank;

/* Everything a worker process shares. */
struct emu_world {
    const emu_opts *o;
    emu_plugin pl;
    const char *plugin_spec;
    emu_acct_file acct;
    uint32_t next_slot;
    pthread_mutex_t lock;
    uint64_t epoch_ns;
    struct emu_pxn *pxn;
    struct emu_wire *wire; /* NULL: no model, or not a cluster run */
};

int emu_rank_open(emu_world *w, emu_rank *r, const emu_comm_info *ci, int global_rank, int node);
void emu_rank_close(emu_rank *r);

/* Emit: start returns the handle (NULL if not started), honouring the version,
 * the mask (an event is started if its bit or a descendant's bit is set) and
 * NULL-handle rules. */
void *emu_start(emu_rank *r, emu_ev *ev);
void emu_stop(emu_rank *r, unsigned type, void *h);
void emu_state(emu_rank *r, unsigned type, void *h, int state, uint64_t arg, int steps);
/* Emit for another process (PXN): context is the originator's. */
void *emu_start_foreign(emu_rank *r, void *foreign_ctx, emu_ev *ev);
/* The same calls, counted as foreign (PXN) or own. */
void *emu_start_on(emu_rank *r, void *ctx, emu_ev *ev, bool foreign);
void emu_stop_on(emu_rank *r, unsigned type, void *h, bool foreign);
/* An event NCCL never stops (--nccl-quirk): no longer tracked as open, its
 * states still counted as open ones (what a killed process leaves). */
void emu_abandon_on(emu_rank *r, void *h, bool foreign);
void emu_state_on(emu_rank *r, unsigned type, void *h, int state, uint64_t arg, int steps, bool foreign);

/* A collective or p2p as the proxy thread sees it. */
typedef struct emu_op {
    void *coll_h;     /* Coll or P2p handle (parent of children) */
    uint32_t coll_index;
    bool p2p;
    int nch;
    int peer;         /* p2p: the peer; collectives: -1 */
    int is_send;
    size_t bytes;
    uint32_t mask;    /* the operation's activation mask */
    bool hang;        /* never completes */
    int func;         /* emu_func_names index */
    int root;
    uint64_t enq_ns;  /* true time the host enqueued it; EMU_NEVER: behind work that never ends */
    uint64_t sig;     /* what the rank called (func, count, datatype; p2p: count,
                       * datatype): ranks (a send and its receive) must agree */
    uint64_t pub_ready; /* the device start its host already published on the
                         * wire (timeline.c); 0: the proxy publishes it */
    bool with_prev;   /* a p2p op of the same group as the previous op: they run together */
    uint32_t nth;     /* p2p: the how-many-th with its peer in its direction (the wire's key) */
    int step;         /* the iteration (train: step): whether a fault acts (emu_fault_on) */
    uint32_t work, host_work; /* drifting-kernelch: the device's and the host's work
                               * counter at its kernel */
} emu_op;

/* drifting-kernelch: the operation's mask as NCCL gives its tasks (a
 * Broadcast's loses KernelCh); op's place in the device's and the host's
 * work counts, as its kernel starts; the pTimer the proxy reads for op's
 * KernelCh on channel ch, given the channel's true start or stop timer. */
uint32_t emu_quirk_task_mask(int func, uint32_t mask);
void emu_quirk_kch_work(emu_rank *r, emu_op *op);
uint64_t emu_quirk_kch_timer(emu_rank *r, const emu_op *op, int ch, bool stop, uint64_t ptimer);
/* The rank's state for the quirks on: 0, or -1 out of memory. */
int emu_quirks_rank_open(emu_rank *r);
void emu_quirks_rank_close(emu_rank *r);

void emu_proxy_start(emu_rank *r);
/* Queue ops for the proxy (a group's together), waiting while it is too far behind. */
void emu_proxy_post(emu_rank *r, const emu_op *ops, size_t n);
void emu_proxy_drain(emu_rank *r); /* wait until every posted op was handled */
void emu_proxy_join(emu_rank *r);

/* The simulated node of a rank of r's communicator. */
int emu_node_of(const emu_rank *r, int comm_rank);
/* Inter-node peers for channel c of a collective: fills sends/recvs, returns counts. */
int emu_net_peers(const emu_rank *r, bool tree, int *send_peers, int *nsend, int *recv_peers,
                  int *nrecv);

/* ---- model.c: the cost model ---- */
#define EMU_NEVER UINT64_MAX

/* One network step as the proxy sees it, in true ns: posted, the data
 * ready (send: produced by the GPU; recv: arrived), the peer ready to take
 * it (send only), done. EMU_NEVER: it never happens. */
typedef struct emu_step_t {
    uint64_t post, data, peer, done;
} emu_step_t;

bool emu_model_on(const emu_opts *o);
/* A model duration in us as true ns (time scale applied). */
uint64_t emu_model_us(const emu_opts *o, double us);
/* Steps of one channel of a collective: loops x steps per loop, bytes per step. */
void emu_model_shape(const emu_rank *r, const emu_op *op, int *loops, int *per_loop, size_t *slice);
/* How many steps rank `me` sends to its ring successor / receives from its predecessor. */
void emu_model_leg_steps(const emu_rank *r, const emu_op *op, int *nsend, int *nrecv);
/* Step cells emu_model_channel fills for op (ring or tree, --algo). */
size_t emu_model_cells(const emu_rank *r, const emu_op *op);
/* Channel ch of collective k given every rank's start (ready[], EMU_NEVER:
 * never): fills this rank's steps of every leg, returns its end. */
uint64_t emu_model_channel(const emu_rank *r, const emu_op *op, uint32_t k, int ch, const uint64_t *ready,
                           emu_step_t *steps);
/* Do all channels of collective k have the same schedule (no fault sets one
 * apart)? Then one channel's is every channel's. */
bool emu_model_same_channels(const emu_rank *r, uint32_t k);
/* The steps, in what emu_model_channel filled, of the leg to (send) or from
 * comm rank peer. */
const emu_step_t *emu_model_leg(const emu_rank *r, const emu_op *op, const emu_step_t *steps, int peer, bool send);
/* Steps of each tree leg: one per chunk. */
int emu_model_tree_steps(const emu_rank *r, const emu_op *op);
/* When the device starts op: after its previous work and the GPU work before it. */
uint64_t emu_model_ready(const emu_rank *r, const emu_op *op, uint64_t dev_free);
/* One transfer of `bytes` of op from comm rank a to b: its duration in true ns. */
uint64_t emu_model_transfer(const emu_rank *r, const emu_op *op, int a, int b, size_t bytes, int nch);
/* The faults whose time depends on the iteration, as bits for the ground truth. */
enum { EMU_FAULT_HOST_LATE = 1, EMU_FAULT_SLOW_GPU = 2, EMU_FAULT_SLOW_LINK = 4, EMU_FAULT_SLOW_NIC = 8 };
/* Do they act in iteration (train: step) `step` (--fault-from, --fault-every)? */
bool emu_fault_on(const emu_opts *o, int step);
/* The faults acting in `step` whose origin is r's part of an op: its host
 * or GPU, or a link or NIC its own transfers cross (a collective's legs to
 * other nodes; a p2p op's, to or from comm rank peer, -1 for a collective). */
uint32_t emu_fault_origins(const emu_rank *r, int peer, bool send, int step);
/* Spread n steps evenly over [t0, t1] (legs the ring does not time: tree, PXN, p2p). */
void emu_model_uniform(emu_step_t *t, int n, uint64_t t0, uint64_t t1);

/* ---- wire.c: what ranks tell each other, in a file mapped by all ---- */
typedef struct emu_wire emu_wire;
int emu_wire_create(const char *path, uint32_t nslots);
emu_wire *emu_wire_map(const char *path);
void emu_wire_unmap(emu_wire *w);
/* The slot of comm rank k of r's communicator. */
uint32_t emu_wire_slot(const emu_rank *r, int comm_rank);
uint32_t emu_wire_slots(const emu_opts *o);
/* Publish slot's collective k; `leader` (the slot of the communicator's rank
 * 0) counts the arrivals of its nranks ranks at k. */
void emu_wire_publish(emu_wire *w, uint32_t slot, uint32_t k, uint64_t ready, uint64_t sig, uint32_t leader,
                      int nranks);
/* Wait (briefly: a hint, the reads below still wait for each rank) until
 * every rank of leader's communicator published k, so a reader of all of
 * them wakes once, at the last. */
void emu_wire_wait_all(emu_wire *w, uint32_t leader, uint32_t k, int nranks);
/* Wait for slot's collective k: 0 with its start and signature; -1 if the
 * rank is gone (exited or died) without it, or nothing came in 120 s. */
int emu_wire_read(emu_wire *w, uint32_t slot, uint32_t k, uint64_t *ready, uint64_t *sig);
/* A p2p op: the nth send (or receive) of slot's rank with comm rank peer,
 * when its device starts it, and its signature (count, datatype). */
typedef struct emu_wire_p2p {
    int32_t peer;
    uint32_t nth;
    bool send;
    uint64_t ready, sig;
} emu_wire_p2p;
/* Publish one entry, without waking its readers; then, once for all of a
 * group's entries (a reader woken at the first would often find its own
 * among the later ones), wake the readers asleep on slot's entries. */
void emu_wire_p2p_publish(emu_wire *w, uint32_t slot, const emu_wire_p2p *e);
void emu_wire_p2p_wake(emu_wire *w, uint32_t slot);
/* Wait for slot's entry matching *e (peer, nth, send): 0 and its ready and
 * sig in *e; -1 as emu_wire_read. */
int emu_wire_p2p_read(emu_wire *w, uint32_t slot, emu_wire_p2p *e);
void emu_wire_gone(emu_wire *w, uint32_t slot);
/* Wake every thread waiting on the 32-bit word; wait while it reads `seen`
 * (at most `left`, NULL: no bound). shared: the word is in memory that
 * other processes map (the wire), else only this process's threads use it. */
void emu_futex_wake(void *word, bool shared);
void emu_futex_wait(void *word, unsigned seen, const struct timespec *left, bool shared);

/* ---- timeline.c: the device timeline of one rank ---- */
/* When r's device ends what its host enqueued so far (true ns; 0: nothing
 * yet or already past; EMU_NEVER: never): from the wire, the same schedule
 * the device computes, so the host need not wait for its proxy thread.
 * `sync`: a stream sync, which NCCL's host leaves no sooner than the proxy
 * moved the data: it also waits for the proxy to have made the events of
 * the collective before the last. */
uint64_t emu_timeline_host_end(emu_rank *r, bool sync);
/* Number the group's p2p ops, and publish the device start of its first op
 * (a collective) or of all its ops (all p2p) from the host, when the host
 * knows it, so the peers find it on the wire before the proxy runs it. */
void emu_timeline_host_publish(emu_rank *r, emu_op *ops, size_t n);
/* What the host's side (timeline_host.c) shares with the proxy's: each
 * rank's start of collective k from the wire into out[] (but `self`'s) and
 * whether all called the same; when a p2p op meets its peer's (EMU_NEVER:
 * never) and its end on each channel then; whether an op's channels never end. */
bool emu_timeline_gather(emu_rank *r, const emu_op *op, uint32_t k, uint64_t *out, int self);
uint64_t emu_timeline_p2p_meet(emu_rank *r, const emu_op *op, uint64_t ready);
uint64_t emu_timeline_p2p_end(const emu_rank *r, const emu_op *op, uint64_t meet);
bool emu_timeline_never_ends(bool model, const emu_op *op);
/* Run a batch the proxy took: each op in stream order, its events at their times. */
void emu_timeline_batch(emu_rank *r, emu_op *ops, size_t n);
/* One leg run for another process (PXN), its steps spread over [t0, t1]. */
typedef struct emu_leg_req {
    emu_ev ev;        /* the ProxyOp */
    void *ctx;
    size_t step_bytes;
    uint64_t t0, t1;  /* 0: no model */
} emu_leg_req;
void emu_timeline_foreign(emu_rank *r, const emu_leg_req *legs, int n);

/* ---- timeline_wait.c ---- */
/* Wait for true time t (0: no model) before doing what is due then, on the
 * proxy (an event) or the host (its device's end). With the clock floor:
 * sleep only while t is more than the horizon (1 ms) ahead, then raise this
 * thread's floor to t, so the plugin stamps what this thread makes next with
 * t. Without it: sleep until t unless t is less than the slack (20 us) ahead. */
void emu_timeline_wait(uint64_t t);
/* A host's own work between two waits, as its clocks may read it: a pause
 * longer than that is the machine's, not the job's. */
#define EMU_HOST_WORK_NS 50000
/* As emu_timeline_wait, for a proxy's event: an event takes no time of its own,
 * so the thread's clocks read t until its next wait (where real time is
 * past t) or the floor's max(real, t) (where it is ahead). */
void emu_timeline_wait_event(uint64_t t);
/* With the clock floor: sleep only while t is more than the horizon ahead,
 * leaving the floor as it is. */
void emu_timeline_wait_horizon(uint64_t t);

/* ---- pxn.c ---- */
typedef struct emu_pxn_msg {
    uint32_t kind;   /* 0 op, 1 done */
    uint32_t origin_pid;
    int32_t rank, nranks;
    uint64_t comm_id;
    uint64_t origin_ctx, origin_coll;
    int32_t ch, peer, nsteps, is_send, chunk;
    uint32_t coll_index;
    uint32_t mask;   /* the originator's operation mask travels with the op */
    uint32_t last;   /* the op's last leg: the legs so far run together */
    uint64_t t0, t1; /* true times the leg's steps span (0: no model) */
    uint64_t step_bytes;
} emu_pxn_msg;

int emu_pxn_setup(emu_world *w, int wfd, int rfd); /* -1: not used */
int emu_pxn_send(emu_world *w, const emu_pxn_msg *m);
int emu_pxn_serve_start(emu_world *w, emu_rank *proxy_rank);
void emu_pxn_serve_join(emu_world *w);
bool emu_pxn_active(const emu_world *w);
/* Reserve the page holding addr PROT_NONE if it is unmapped here: 1 guarded,
 * 0 already mapped here (cannot guarantee a fault), -1 error. */
int emu_pxn_guard(uintptr_t addr);
/* Fork a child that reads addr: true if it died of SIGSEGV. */
bool emu_pxn_probe(uintptr_t addr);

/* ---- scenarios.c ---- */
typedef struct emu_scenario {
    const char *name;
    const char *help;
    bool one_thread_per_node; /* several GPUs per thread */
    int (*run)(emu_world *w, emu_rank **ranks, int nranks);
    int child_comms;          /* communicators each rank splits off */
} emu_scenario;

const emu_scenario *emu_scenario_find(const char *name);
extern const emu_scenario emu_scenarios[];
extern const int emu_nscenarios;
uint64_t emu_comm_hash(const emu_opts *o, int which);

/* The steps every scenario is made of (scenarios.c), train.c's too. */
typedef struct emu_op_desc {
    int func;   /* emu_func_names index */
    bool p2p;
    int peer;
    size_t count;      /* 0: --count */
    const char *dtype; /* NULL: --dtype */
} emu_op_desc;

typedef struct emu_group_flags {
    bool explicit_group, graph, hang, kill_mid;
    int step;          /* the iteration (train: step) the group belongs to */
    uint64_t jitter_ns; /* the host's jitter before it (--jitter-us) */
    bool stuck;         /* its stream holds work that never ends: it never starts */
    bool later_in_step; /* train: not the rank's first group of the step on its communicator, so
                         * not one a late host (late once, at the step's start) delays (fault_truth) */
} emu_group_flags;

enum { EMU_TRAIN_TP, EMU_TRAIN_PP, EMU_TRAIN_DP, EMU_TRAIN_GROUPS };
void emu_group_call(emu_rank **rs, int n, const emu_op_desc *ops, int nops, emu_group_flags f,
                    void **api_out, uint32_t *mask_out);
void emu_host_sync(const emu_opts *o, emu_rank **rs, int n);
void emu_straggle(const emu_opts *o, emu_rank **rs, int n, int step);
void emu_mismatch(const emu_opts *o, const emu_rank *r, int it, emu_op_desc *op);
void emu_iteration_done(const emu_opts *o, emu_rank **rs, int done);
void emu_sleep_us(long us);

/* ---- train.c ---- */
int emu_sc_train(emu_world *w, emu_rank **rs, int n);
/* The hash of communicator c (0..--comms-1) of a cluster run: c 0 is "world". */
uint64_t emu_cluster_comm_hash(const emu_opts *o, int c);

/* ---- cluster.c ---- */
int emu_cluster_run(const emu_opts *o, int argc, char **argv);
int emu_worker_main(const emu_opts *o);

/* ---- start.c: every rank leaves comm init when all have joined ---- */
int emu_start_create(const char *path);
/* Count `joining` ranks in, then wait (30 s at most) until `total` have. */
void emu_start_wait(const char *path, int joining, int total);
uint32_t emu_coll_cap(const emu_opts *o);
uint32_t emu_sample_cap(const emu_opts *o);

/* ---- summary.c ---- */
typedef struct emu_proc_result {
    pid_t pid;
    int node;
    int status;  /* waitpid status */
    char acct_path[512];
} emu_proc_result;

/* Write the summary JSON (docs/emulator.md) to path ("-": stdout; NULL: nothing). */
int emu_summary_write(const emu_opts *o, const char *path, const emu_proc_result *procs,
                      int nprocs, uint64_t epoch_ns);

/* ---- replay.c / bench.c ---- */
int emu_replay_run(const emu_opts *o);
int emu_bench_run(const emu_opts *o);

/* ---- small helpers ---- */
void emu_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
uint32_t emu_gettid(void);

#endif
