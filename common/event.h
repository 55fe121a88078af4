/* event.h: the version-neutral event model.
 *
 * Owns the one record type that carries any NCCL profiler event of API v1 to v7,
 * the state record, the per-process metadata records (process, communicator
 * context, interned strings), drop counters and heartbeats. Every component
 * speaks this model; only the plugin knows NCCL's own descriptor layouts.
 *
 * Records are fixed-size plain structs: the plugin copies them into per-thread
 * buffers on NCCL's hot path, so nothing here may own memory.
 */
#ifndef NCCLSCOPE_EVENT_H
#define NCCLSCOPE_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "event_fields.h"

/* Event types. The value is the bit index in NCCL's activation mask. */
typedef enum nsc_type {
    NSC_T_GROUP = 0,
    NSC_T_COLL = 1,
    NSC_T_P2P = 2,
    NSC_T_PROXY_OP = 3,
    NSC_T_PROXY_STEP = 4,
    NSC_T_PROXY_CTRL = 5,
    NSC_T_KERNEL_CH = 6,
    NSC_T_NET_PLUGIN = 7,
    NSC_T_GROUP_API = 8,
    NSC_T_COLL_API = 9,
    NSC_T_P2P_API = 10,
    NSC_T_KERNEL_LAUNCH = 11,
    NSC_T_CE_COLL = 12,
    NSC_T_CE_SYNC = 13,
    NSC_T_CE_BATCH = 14,
    NSC_T_KERNEL_PHASE = 15,
    NSC_T_COUNT = 16
} nsc_type;

#define NSC_MASK_ALL ((1u << NSC_T_COUNT) - 1u)

/* States passed to recordEventState: NCCL's numbering, shared by all versions. */
typedef enum nsc_state {
    NSC_S_PROXY_OP_SEND_POSTED = 0,
    NSC_S_PROXY_OP_SEND_REM_FIFO_WAIT = 1,
    NSC_S_PROXY_OP_SEND_TRANSMITTED = 2,
    NSC_S_PROXY_OP_SEND_DONE = 3,
    NSC_S_PROXY_OP_RECV_POSTED = 4,
    NSC_S_PROXY_OP_RECV_RECEIVED = 5,
    NSC_S_PROXY_OP_RECV_TRANSMITTED = 6,
    NSC_S_PROXY_OP_RECV_DONE = 7,
    NSC_S_PROXY_STEP_SEND_GPU_WAIT = 8,
    NSC_S_PROXY_STEP_SEND_WAIT = 9,
    NSC_S_PROXY_STEP_RECV_WAIT = 10,
    NSC_S_PROXY_STEP_RECV_FLUSH_WAIT = 11,
    NSC_S_PROXY_STEP_RECV_GPU_WAIT = 12,
    NSC_S_PROXY_CTRL_IDLE = 13,
    NSC_S_PROXY_CTRL_ACTIVE = 14,
    NSC_S_PROXY_CTRL_SLEEP = 15,
    NSC_S_PROXY_CTRL_WAKEUP = 16,
    NSC_S_PROXY_CTRL_APPEND = 17,
    NSC_S_PROXY_CTRL_APPEND_END = 18,
    NSC_S_PROXY_OP_IN_PROGRESS = 19,
    NSC_S_PROXY_STEP_SEND_PEER_WAIT = 20,
    NSC_S_NET_PLUGIN_UPDATE = 21,
    NSC_S_KERNEL_CH_STOP = 22,
    NSC_S_GROUP_START_API_STOP = 23,
    NSC_S_GROUP_END_API_START = 24,
    NSC_S_CE_COLL_START = 25,
    NSC_S_CE_COLL_COMPLETE = 26,
    NSC_S_CE_SYNC_START = 27,
    NSC_S_CE_SYNC_COMPLETE = 28,
    NSC_S_CE_BATCH_START = 29,
    NSC_S_CE_BATCH_COMPLETE = 30,
    NSC_S_KERNEL_PHASE_STOP = 31,
    NSC_S_COUNT = 32
} nsc_state;

/* Event flags. */
enum {
    NSC_EVF_FOREIGN = 1u << 0,   /* PXN: started for another process; see origin_* */
    NSC_EVF_GRAPH = 1u << 1,     /* graph captured (API events; copied to children) */
    NSC_EVF_OPEN = 1u << 2,      /* no stopEvent seen (flushed at finalize) */
    NSC_EVF_SYM = 1u << 3,       /* v7 coll.isSymColl */
    NSC_EVF_COLLNET = 1u << 4,   /* v1 coll.isCollnet */
    NSC_EVF_NVLS = 1u << 5,      /* v1 coll.isNvls */
    NSC_EVF_UNRESOLVED = 1u << 6 /* agent: foreign event whose origin was not found */
};

/* Interned string id (func, datatype, algo, proto, ...). 0 means "absent".
 * Ids are per process; an NSC_STR_DEF record maps an id to its text. */
typedef uint16_t nsc_str;

/* One profiler event, written once when it stops. Times are nanoseconds on the
 * host's CLOCK_MONOTONIC, raw (alignment happens downstream). */
typedef struct nsc_event {
    uint64_t id;        /* the plugin's handle id, unique within the process */
    uint64_t parent;    /* id of the parent event in this process; 0: none */
    uint64_t start_ns;  /* startEvent */
    uint64_t stop_ns;   /* stopEvent (for Coll/P2p/API events: enqueue done) */
    uint32_t tid;       /* kernel thread id of the thread that started it */
    int32_t rank;       /* descriptor rank */
    uint16_t ctx;       /* process-local communicator context index (NSC_CTX_*) */
    uint8_t type;       /* nsc_type */
    uint8_t flags;      /* NSC_EVF_* */
    uint32_t origin_pid;     /* FOREIGN: the process that owns parent/context */
    uint64_t origin_parent;  /* FOREIGN: raw parentObj address in origin_pid */
    uint64_t origin_ctx;     /* FOREIGN: raw context address in origin_pid */
    /* The type's descriptor fields: structs made from event_fields.h. */
    union {
#define NSC_MEMBER(a, kind, m, wire, store, json, nccl) NSC_CTYPE_##kind m;
#define NSC_STRUCT(type, name, list) struct { list(NSC_MEMBER, ~) } name;
        NSC_EVENT_STRUCT_TYPES(NSC_STRUCT)
    } d;
} nsc_event;

/* The head and origin rows are the members before the payload, type aside:
 * the same C types (no padding between them), so their sizes add up to it. */
#define NSC_SAME_TYPE(a, kind, m, wire, store, json, nccl)                                   \
    _Static_assert(sizeof(NSC_CTYPE_##kind) == sizeof(((nsc_event *)0)->m),                  \
                   "event_fields.h's kind of " #m " is its type in nsc_event");
NSC_FIELDS_HEAD(NSC_SAME_TYPE, ~)
NSC_FIELDS_ORIGIN(NSC_SAME_TYPE, ~)
_Static_assert(0 NSC_FIELDS_HEAD(NSC_ROW_SIZE, ~) NSC_FIELDS_ORIGIN(NSC_ROW_SIZE, ~) +
                       sizeof(uint8_t) == offsetof(nsc_event, d),
               "a row of NSC_FIELDS_HEAD or NSC_FIELDS_ORIGIN for each member before d but type");

/* P2pApi's list names CollApi's members in CollApi's order (so the block
 * gives both the same columns): a struct made from it lays out alike. */
struct nsc_p2p_api_shape { NSC_FIELDS_P2P_API(NSC_MEMBER, ~) };
#define NSC_SAME_MEMBER(a, kind, m, wire, store, json, nccl)                                \
    _Static_assert(offsetof(struct nsc_p2p_api_shape, m) ==                                 \
                       offsetof(nsc_event, d.coll_api.m) - offsetof(nsc_event, d),          \
                   "P2pApi's rows follow CollApi's: " #m);
NSC_FIELDS_P2P_API(NSC_SAME_MEMBER, ~)
_Static_assert(0 NSC_FIELDS_P2P_API(NSC_ROW_COUNT, ~) == 0 NSC_FIELDS_COLL_API(NSC_ROW_COUNT, ~),
               "P2pApi has a row for each of CollApi's");
#undef NSC_SAME_TYPE
#undef NSC_SAME_MEMBER
#undef NSC_STRUCT
#undef NSC_MEMBER

/* One recordEventState call. */
typedef struct nsc_state_rec {
    uint64_t id;    /* event id it refers to */
    uint64_t ts_ns;
    uint64_t arg;   /* transSize, appendedProxyOps, pTimer, ... (0 if none) */
    uint32_t tid;
    uint8_t state;  /* nsc_state */
} nsc_state_rec;

/* Completion of a Coll or P2p: the last of its ProxyOp/KernelCh children stopped.
 * NCCL's own stopEvent only means "enqueued", so this is the real end. */
typedef struct nsc_completion {
    uint64_t id;
    uint64_t ts_ns;
} nsc_completion;

/* A communicator context: one per plugin init (one per rank of a communicator
 * in this process). Events refer to it by index. */
typedef struct nsc_ctx_def {
    uint64_t comm_id;  /* NCCL commHash */
    uint16_t index;    /* NSC_CTX_NONE is reserved */
    int32_t nnodes, nranks, rank;
    int32_t api_version;
    char name[64];     /* commName, may be empty */
} nsc_ctx_def;

#define NSC_CTX_NONE 0xffffu

/* An interned string. */
typedef struct nsc_str_def {
    nsc_str id;
    char text[64];
} nsc_str_def;

/* Process identity; sent in every batch header. */
typedef struct nsc_proc {
    uint32_t pid;
    int32_t local_rank;  /* -1 unknown */
    int32_t gpu;         /* -1 unknown */
    char job[64];
    char host[64];
} nsc_proc;

/* Cumulative counters since process start, sent with heartbeats: the receiver
 * computes loss as (emitted - shipped) exactly. */
typedef struct nsc_counters {
    uint64_t emitted[NSC_T_COUNT];   /* events the plugin recorded, per type */
    uint64_t dropped[NSC_T_COUNT];   /* events dropped (buffers full), per type */
    uint64_t states_emitted, states_dropped;
    uint64_t bad_handles;            /* stale or foreign handles NCCL passed back */
    /* Completions (nsc_completion) by the completed event's type (Coll, P2p),
     * and those lost because the thread's ring was full. */
    uint64_t completions_emitted[NSC_T_COUNT];
    uint64_t completions_dropped[NSC_T_COUNT];
    /* The self-cost guard (docs/plugin.md): the plugin's own time on NCCL's
     * threads, estimated from sampled calls, against the time its Coll events
     * took; the types it sheds now (1 << type), how often that changed, and
     * the events not recorded because their type was shed. */
    uint64_t cost_ns, coll_ns;
    uint64_t shed_mask, shed_changes, shed_events;
    /* Calls of the chained plugin (NCCLSCOPE_CHAIN) that failed, its init
     * included; children (ProxyOp, KernelCh) NCCL started under a NULL
     * parent while the plugin records their parents' types. */
    uint64_t chain_errors, orphans;
    /* The guard's samples beyond their bound (the thread not running),
     * counted as the median instead. */
    uint64_t cost_outliers;
} nsc_counters;

const char *nsc_type_name(unsigned type);          /* "Coll", "ProxyOp", ... or NULL */
const char *nsc_state_name(unsigned state);        /* "ProxyStepSendWait", ... or NULL */
int nsc_type_from_name(const char *name);          /* case-insensitive; -1 if unknown */

/* Parse an event mask: "all", a number (decimal or 0x...), or a comma list of
 * type names ("coll,kernelch,proxyop"). Returns 0 and sets *mask, or -1. */
int nsc_mask_parse(const char *text, uint32_t *mask);

#endif
