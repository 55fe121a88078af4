/* chrows.c: table definitions and RowBinary rows (see chrows.h). */
#include "chrows.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define ORIGIN "agent String, epoch UInt64, batch_seq UInt64, section UInt32, idx UInt32"
#define ORIGIN_KEY "agent, epoch, batch_seq, section, idx"
#define JOB_PART "cityHash64(job) % 16"
#define PROC_SHARD "cityHash64(job, host, pid)"

/* Partitions: 16 buckets of the job name, not time: a row's partition must
 * not depend on when it was inserted, or a batch sent again after midnight
 * would escape ReplacingMergeTree's folding (which works within a partition). */
const nsc_ch_table_def nsc_ch_tables[NSC_CH_NTABLES] = {
    [NSC_CH_EVENTS] = {"events",
                       "job String, host String, pid UInt32, ctx UInt16, type UInt8, flags UInt8, "
                       "id UInt64, parent UInt64, start_ns UInt64, stop_ns UInt64, tid UInt32, rank Int32, "
                       "origin_pid UInt32, origin_parent UInt64, origin_ctx UInt64, "
                       "seq UInt64, count UInt64, user_tag UInt64, stream UInt64, traffic_bytes UInt64, "
                       "parent_group UInt64, ptimer_start UInt64, ptimer_stop UInt64, ptimer_stop_ns UInt64, "
                       "net_data UInt64, net_plugin_id Int64, root Int32, peer Int32, nsteps Int32, "
                       "chunk_size Int32, step Int32, ce_nranks Int32, num_ops Int32, depth UInt32, "
                       "proxy_pid UInt32, batch_size UInt32, num_batches UInt32, ce_seq UInt32, "
                       "func UInt16, datatype UInt16, algo UInt16, proto UInt16, kernel_variant UInt16, "
                       "sync_strategy UInt16, phase_name UInt16, nchannels UInt8, nwarps UInt8, op UInt8, "
                       "channel UInt8, is_send UInt8, intra_sync UInt8, is_complete UInt8, phase_id UInt8, " ORIGIN,
                       "job, host, pid, ctx, start_ns, " ORIGIN_KEY, JOB_PART, PROC_SHARD, ""},
    [NSC_CH_STATES] = {"states",
                       "job String, host String, pid UInt32, id UInt64, ts_ns UInt64, arg UInt64, tid UInt32, "
                       "state UInt8, " ORIGIN,
                       "job, host, pid, id, ts_ns, " ORIGIN_KEY, JOB_PART, PROC_SHARD, ""},
    [NSC_CH_COMPLETIONS] = {"completions",
                            "job String, host String, pid UInt32, id UInt64, ts_ns UInt64, " ORIGIN,
                            "job, host, pid, id, " ORIGIN_KEY, JOB_PART, PROC_SHARD, ""},
    /* A process defines a context or string id once (docs/protocol.md), so
     * the definition itself is its identity. */
    [NSC_CH_CONTEXTS] = {"contexts",
                         "job String, host String, pid UInt32, ctx UInt16, comm_id UInt64, nnodes Int32, "
                         "nranks Int32, rank Int32, api_version Int32, name String",
                         "job, host, pid, ctx", JOB_PART, PROC_SHARD, ""},
    [NSC_CH_STRINGS] = {"strings", "job String, host String, pid UInt32, id UInt16, text String",
                        "job, host, pid, id", JOB_PART, PROC_SHARD, ""},
    [NSC_CH_LIFECYCLE] = {"lifecycle",
                          "job String, host String, pid UInt32, event UInt8, reason UInt8, ts_ns UInt64, "
                          "ref_ns UInt64, last_batch_seq UInt64, " ORIGIN,
                          "job, host, pid, " ORIGIN_KEY, JOB_PART, PROC_SHARD, ""},
    [NSC_CH_BATCHES] = {"batches",
                        "job String, host String, pid UInt32, events UInt32, states UInt32, "
                        "completions UInt32, " ORIGIN,
                        "job, " ORIGIN_KEY, JOB_PART, PROC_SHARD, ""},
    /* One row per write of a host's model: the newest (largest wall clock
     * time of the write, ref_ns) wins, also across collector restarts. */
    [NSC_CH_CLOCKS] = {"clocks", "host String, ref_ns UInt64, model String", "host", "", "cityHash64(host)",
                       "ref_ns"},
    /* A rank's last collective per function: the highest seqNumber wins. */
    [NSC_CH_PROGRESS] = {"progress", "job String, comm_id UInt64, rank Int32, func String, seq UInt64, ref_ns UInt64",
                         "job, comm_id, rank, func", JOB_PART, "cityHash64(job, comm_id)", "seq"},
};

int nsc_ch_reserve(nsc_ch_buf *b, size_t n)
{
    /* nsc_grow doubles once per call: a large n may need several */
    while (!b->failed && b->cap - b->len < n)
        b->failed = nsc_grow(&b->p, b->cap, &b->cap, 1, 1 << 16) != 0;
    return b->failed ? -1 : 0;
}

static uint8_t *room(nsc_ch_buf *b, size_t n)
{
    if (nsc_ch_reserve(b, n))
        return NULL;
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}

/* RowBinary: integers little-endian, fixed width. */
static void put_le(nsc_ch_buf *b, uint64_t v, size_t width)
{
    uint8_t *at = room(b, width);
    for (size_t i = 0; at && i < width; i++)
        at[i] = (uint8_t)(v >> (8 * i));
}
static void u8(nsc_ch_buf *b, uint8_t v) { put_le(b, v, 1); }
static void u16(nsc_ch_buf *b, uint16_t v) { put_le(b, v, 2); }
static void u32(nsc_ch_buf *b, uint32_t v) { put_le(b, v, 4); }
static void i32(nsc_ch_buf *b, int32_t v) { put_le(b, (uint32_t)v, 4); }
static void u64(nsc_ch_buf *b, uint64_t v) { put_le(b, v, 8); }

/* RowBinary String: LEB128 length, then the bytes. */
static void leb128(nsc_ch_buf *b, size_t v)
{
    do {
        u8(b, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
        v >>= 7;
    } while (v);
}

/* max bounds a fixed char array that may lack its NUL. */
static void str(nsc_ch_buf *b, const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    leb128(b, n);
    uint8_t *at = room(b, n);
    if (at)
        memcpy(at, s, n);
}

static void proc_cols(nsc_ch_buf *b, const nsc_proc *p)
{
    str(b, p->job, sizeof p->job);
    str(b, p->host, sizeof p->host);
    u32(b, p->pid);
}

static void origin_cols(nsc_ch_buf *b, const nsc_ch_origin *o, uint32_t idx)
{
    str(b, o->agent, 64);
    u64(b, o->epoch);
    u64(b, o->batch_seq);
    u32(b, o->section);
    u32(b, idx);
    b->rows++;
}

/* The union of nsc_event's per-type fields, one member per column: a type
 * fills the fields it has, the rest stay 0 (a column of zeros costs next to
 * nothing compressed). */
typedef struct flat {
    uint64_t seq, count, user_tag, stream, traffic_bytes, parent_group;
    uint64_t ptimer_start, ptimer_stop, ptimer_stop_ns, net_data;
    int64_t net_plugin_id;
    int32_t root, peer, nsteps, chunk_size, step, ce_nranks, num_ops;
    uint32_t depth, proxy_pid, batch_size, num_batches, ce_seq;
    uint16_t func, datatype, algo, proto, kernel_variant, sync_strategy, phase_name;
    uint8_t nchannels, nwarps, op, channel, is_send, intra_sync, is_complete, phase_id;
} flat;

static void flatten_comm_ops(const nsc_event *e, flat *f)
{
    switch (e->type) {
    case NSC_T_COLL:
        *f = (flat){.seq = e->d.coll.seq, .count = e->d.coll.count, .user_tag = e->d.coll.user_tag,
                    .traffic_bytes = e->d.coll.traffic_bytes, .parent_group = e->d.coll.parent_group,
                    .root = e->d.coll.root, .func = e->d.coll.func, .datatype = e->d.coll.datatype,
                    .algo = e->d.coll.algo, .proto = e->d.coll.proto, .kernel_variant = e->d.coll.kernel_variant,
                    .nchannels = e->d.coll.nchannels, .nwarps = e->d.coll.nwarps, .op = e->d.coll.op};
        break;
    case NSC_T_P2P:
        *f = (flat){.count = e->d.p2p.count, .user_tag = e->d.p2p.user_tag, .parent_group = e->d.p2p.parent_group,
                    .peer = e->d.p2p.peer, .func = e->d.p2p.func, .datatype = e->d.p2p.datatype,
                    .nchannels = e->d.p2p.nchannels};
        break;
    case NSC_T_COLL_API:
    case NSC_T_P2P_API:
        *f = (flat){.count = e->d.coll_api.count, .stream = e->d.coll_api.stream, .user_tag = e->d.coll_api.user_tag,
                    .root = e->d.coll_api.root, .func = e->d.coll_api.func, .datatype = e->d.coll_api.datatype};
        break;
    case NSC_T_CE_COLL:
        *f = (flat){.seq = e->d.ce_coll.seq, .count = e->d.ce_coll.count, .stream = e->d.ce_coll.stream,
                    .user_tag = e->d.ce_coll.user_tag, .root = e->d.ce_coll.root,
                    .batch_size = e->d.ce_coll.batch_size, .num_batches = e->d.ce_coll.num_batches,
                    .ce_seq = e->d.ce_coll.ce_seq, .func = e->d.ce_coll.func, .datatype = e->d.ce_coll.datatype,
                    .sync_strategy = e->d.ce_coll.sync_strategy, .intra_sync = e->d.ce_coll.intra_batch_sync};
        break;
    }
}

static void flatten(const nsc_event *e, flat *f)
{
    *f = (flat){0};
    switch (e->type) {
    case NSC_T_PROXY_OP:
        *f = (flat){.peer = e->d.proxy_op.peer, .nsteps = e->d.proxy_op.nsteps,
                    .chunk_size = e->d.proxy_op.chunk_size, .proxy_pid = e->d.proxy_op.op_pid,
                    .channel = e->d.proxy_op.channel, .is_send = e->d.proxy_op.is_send};
        break;
    case NSC_T_PROXY_STEP: f->step = e->d.proxy_step.step; break;
    case NSC_T_KERNEL_CH:
        *f = (flat){.ptimer_start = e->d.kernel_ch.ptimer_start, .ptimer_stop = e->d.kernel_ch.ptimer_stop,
                    .ptimer_stop_ns = e->d.kernel_ch.ptimer_stop_ns, .channel = e->d.kernel_ch.channel};
        break;
    case NSC_T_NET_PLUGIN:
        *f = (flat){.net_plugin_id = e->d.net_plugin.plugin_id, .net_data = e->d.net_plugin.data};
        break;
    case NSC_T_GROUP_API: f->depth = e->d.group_api.depth; break;
    case NSC_T_KERNEL_LAUNCH: f->stream = e->d.kernel_launch.stream; break;
    case NSC_T_CE_SYNC:
        *f = (flat){.ce_nranks = e->d.ce_sync.nranks, .is_complete = e->d.ce_sync.is_complete};
        break;
    case NSC_T_CE_BATCH:
        *f = (flat){.traffic_bytes = e->d.ce_batch.total_bytes, .num_ops = e->d.ce_batch.num_ops,
                    .intra_sync = e->d.ce_batch.use_intra_sync};
        break;
    case NSC_T_KERNEL_PHASE:
        *f = (flat){.ptimer_start = e->d.kernel_phase.ptimer, .phase_name = e->d.kernel_phase.phase_name,
                    .channel = e->d.kernel_phase.channel, .phase_id = e->d.kernel_phase.phase_id};
        break;
    default: flatten_comm_ops(e, f);
    }
}

static void event_row(nsc_ch_buf *b, const nsc_ch_origin *o, const nsc_proc *p, const nsc_event *e, uint32_t idx)
{
    flat f;
    flatten(e, &f);
    proc_cols(b, p);
    u16(b, e->ctx), u8(b, e->type), u8(b, e->flags);
    u64(b, e->id), u64(b, e->parent), u64(b, e->start_ns), u64(b, e->stop_ns);
    u32(b, e->tid), i32(b, e->rank), u32(b, e->origin_pid), u64(b, e->origin_parent), u64(b, e->origin_ctx);
    u64(b, f.seq), u64(b, f.count), u64(b, f.user_tag), u64(b, f.stream), u64(b, f.traffic_bytes);
    u64(b, f.parent_group), u64(b, f.ptimer_start), u64(b, f.ptimer_stop), u64(b, f.ptimer_stop_ns);
    u64(b, f.net_data), u64(b, (uint64_t)f.net_plugin_id);
    i32(b, f.root), i32(b, f.peer), i32(b, f.nsteps), i32(b, f.chunk_size), i32(b, f.step);
    i32(b, f.ce_nranks), i32(b, f.num_ops);
    u32(b, f.depth), u32(b, f.proxy_pid), u32(b, f.batch_size), u32(b, f.num_batches), u32(b, f.ce_seq);
    u16(b, f.func), u16(b, f.datatype), u16(b, f.algo), u16(b, f.proto), u16(b, f.kernel_variant);
    u16(b, f.sync_strategy), u16(b, f.phase_name);
    u8(b, f.nchannels), u8(b, f.nwarps), u8(b, f.op), u8(b, f.channel), u8(b, f.is_send);
    u8(b, f.intra_sync), u8(b, f.is_complete), u8(b, f.phase_id);
    origin_cols(b, o, idx);
}

static void defs_rows(nsc_ch_buf bufs[NSC_CH_NTABLES], const nsc_store_batch *b)
{
    for (size_t i = 0; i < b->nctxs; i++) {
        const nsc_ctx_def *c = &b->ctxs[i];
        nsc_ch_buf *t = &bufs[NSC_CH_CONTEXTS];
        proc_cols(t, b->proc);
        u16(t, c->index), u64(t, c->comm_id), i32(t, c->nnodes), i32(t, c->nranks), i32(t, c->rank);
        i32(t, c->api_version);
        str(t, c->name, sizeof c->name);
        t->rows++;
    }
    for (size_t i = 0; i < b->nstrs; i++) {
        nsc_ch_buf *t = &bufs[NSC_CH_STRINGS];
        proc_cols(t, b->proc);
        u16(t, b->strs[i].id);
        str(t, b->strs[i].text, sizeof b->strs[i].text);
        t->rows++;
    }
}

void nsc_ch_rows_section(nsc_ch_buf bufs[NSC_CH_NTABLES], const nsc_ch_origin *o, const nsc_store_batch *b)
{
    for (size_t i = 0; i < b->nevents; i++)
        event_row(&bufs[NSC_CH_EVENTS], o, b->proc, &b->events[i], (uint32_t)i);
    for (size_t i = 0; i < b->nstates; i++) {
        const nsc_state_rec *s = &b->states[i];
        nsc_ch_buf *t = &bufs[NSC_CH_STATES];
        proc_cols(t, b->proc);
        u64(t, s->id), u64(t, s->ts_ns), u64(t, s->arg), u32(t, s->tid), u8(t, s->state);
        origin_cols(t, o, (uint32_t)i);
    }
    for (size_t i = 0; i < b->ncompletions; i++) {
        nsc_ch_buf *t = &bufs[NSC_CH_COMPLETIONS];
        proc_cols(t, b->proc);
        u64(t, b->completions[i].id), u64(t, b->completions[i].ts_ns);
        origin_cols(t, o, (uint32_t)i);
    }
    defs_rows(bufs, b);
    nsc_ch_buf *t = &bufs[NSC_CH_BATCHES];
    proc_cols(t, b->proc);
    u32(t, (uint32_t)b->nevents), u32(t, (uint32_t)b->nstates), u32(t, (uint32_t)b->ncompletions);
    origin_cols(t, o, 0);
}

void nsc_ch_rows_life(nsc_ch_buf *b, const nsc_ch_origin *o, const nsc_store_life *l)
{
    str(b, l->job, sizeof l->job);
    str(b, l->host, sizeof l->host);
    u32(b, l->pid), u8(b, l->event), u8(b, l->reason), u64(b, l->ts_ns), u64(b, l->ref_ns);
    u64(b, l->last_batch_seq);
    origin_cols(b, o, o->section);
}

void nsc_ch_rows_clock(nsc_ch_buf *b, const char *host, const nsc_clock_model *m, uint64_t wall_ns)
{
    size_t n = nsc_clock_serialized_size(m);
    str(b, host, 64);
    u64(b, wall_ns);
    leb128(b, n);
    uint8_t *at = room(b, n);
    if (at)
        nsc_clock_serialize(m, at);
    b->rows++;
}

void nsc_ch_rows_progress(nsc_ch_buf *b, const nsc_store_progress *p)
{
    str(b, p->job, sizeof p->job);
    u64(b, p->comm_id);
    i32(b, p->rank);
    str(b, p->func, sizeof p->func);
    u64(b, p->seq);
    u64(b, p->ref_ns);
    b->rows++;
}
