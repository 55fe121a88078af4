/* block_int.h: the block format as the block's own files share it
 * (block.c, block_enc.c, block_dec.c); nothing else includes it.
 *
 * Owns the frame constants (magic, codecs), the field tables that say what
 * each column holds and what its values are relative to, the column
 * numbering, and reading and writing a field of a record. The tables are
 * static so that each direction's loops see constant tables, as they did
 * when both lived in one file.
 */
#ifndef NCCLSCOPE_BLOCK_INT_H
#define NCCLSCOPE_BLOCK_INT_H

#include <stddef.h>
#include <string.h>

#include "block.h"

#define BLOCK_MAGIC 0x4e534201u /* "NSB", version 1 */
#define BLOCK_MAGIC_MASK 0xffffff00u
#define CODEC_RAW 0u
#define CODEC_ZSTD 1u

/* ---- field tables ------------------------------------------------------ */

enum { F_SIGNED = 1, F_STR = 2 };
#define NO_REL 0xffffu

/* One stored field: where it lives in its record, and what its value is
 * encoded against (rel: another uint64 field of the same record, else the
 * same field of the previous record of the same type). */
typedef struct field {
    uint16_t off;
    uint8_t size;
    uint8_t flags;
    uint16_t rel;
} field;

#define MEMBER_SIZE(T, m) ((uint8_t)sizeof(((T *)0)->m))
#define EF(m, fl) {offsetof(nsc_event, m), MEMBER_SIZE(nsc_event, m), fl, NO_REL}
#define EFR(m, fl, r) {offsetof(nsc_event, m), MEMBER_SIZE(nsc_event, m), fl, offsetof(nsc_event, r)}

#define NCOMMON 11
static const field common_fields[NCOMMON] = {
    EF(id, 0), EF(parent, 0), EF(start_ns, 0), EFR(stop_ns, 0, start_ns), EF(tid, 0),
    EF(rank, F_SIGNED), EF(ctx, 0), EF(flags, 0), EF(origin_pid, 0), EF(origin_parent, 0),
    EF(origin_ctx, 0)};

/* The common fields and the type fill every byte before the payload union
 * (the decoder relies on it: it zeroes only the union). */
_Static_assert(8 * 4 + 4 + 4 + 2 + 1 + 1 + 4 + 8 + 8 == offsetof(nsc_event, d),
               "nsc_event has padding before its payload");

#define NPAYLOAD 14
typedef struct type_fields {
    uint8_t n;
    field f[NPAYLOAD];
} type_fields;

static const type_fields payload_fields[NSC_T_COUNT] = {
    [NSC_T_COLL] = {14, {EF(d.coll.seq, 0), EF(d.coll.count, 0), EF(d.coll.user_tag, 0),
                         EF(d.coll.traffic_bytes, 0), EF(d.coll.parent_group, 0),
                         EF(d.coll.root, F_SIGNED), EF(d.coll.func, F_STR),
                         EF(d.coll.datatype, F_STR), EF(d.coll.algo, F_STR),
                         EF(d.coll.proto, F_STR), EF(d.coll.kernel_variant, F_STR),
                         EF(d.coll.nchannels, 0), EF(d.coll.nwarps, 0), EF(d.coll.op, 0)}},
    [NSC_T_P2P] = {7, {EF(d.p2p.count, 0), EF(d.p2p.user_tag, 0), EF(d.p2p.parent_group, 0),
                       EF(d.p2p.peer, F_SIGNED), EF(d.p2p.func, F_STR),
                       EF(d.p2p.datatype, F_STR), EF(d.p2p.nchannels, 0)}},
    [NSC_T_PROXY_OP] = {6, {EF(d.proxy_op.peer, F_SIGNED), EF(d.proxy_op.nsteps, F_SIGNED),
                            EF(d.proxy_op.chunk_size, F_SIGNED), EF(d.proxy_op.pid, 0),
                            EF(d.proxy_op.channel, 0), EF(d.proxy_op.is_send, 0)}},
    [NSC_T_PROXY_STEP] = {1, {EF(d.proxy_step.step, F_SIGNED)}},
    [NSC_T_KERNEL_CH] = {4, {EFR(d.kernel_ch.ptimer_start, 0, start_ns),
                             EFR(d.kernel_ch.ptimer_stop, 0, d.kernel_ch.ptimer_start),
                             EFR(d.kernel_ch.ptimer_stop_ns, 0, stop_ns),
                             EF(d.kernel_ch.channel, 0)}},
    [NSC_T_NET_PLUGIN] = {2, {EF(d.net_plugin.plugin_id, F_SIGNED), EF(d.net_plugin.data, 0)}},
    [NSC_T_GROUP_API] = {1, {EF(d.group_api.depth, 0)}},
    [NSC_T_COLL_API] = {6, {EF(d.coll_api.func, F_STR), EF(d.coll_api.datatype, F_STR),
                            EF(d.coll_api.root, F_SIGNED), EF(d.coll_api.count, 0),
                            EF(d.coll_api.stream, 0), EF(d.coll_api.user_tag, 0)}},
    [NSC_T_P2P_API] = {6, {EF(d.coll_api.func, F_STR), EF(d.coll_api.datatype, F_STR),
                           EF(d.coll_api.root, F_SIGNED), EF(d.coll_api.count, 0),
                           EF(d.coll_api.stream, 0), EF(d.coll_api.user_tag, 0)}},
    [NSC_T_KERNEL_LAUNCH] = {1, {EF(d.kernel_launch.stream, 0)}},
    [NSC_T_CE_COLL] = {12, {EF(d.ce_coll.seq, 0), EF(d.ce_coll.count, 0), EF(d.ce_coll.stream, 0),
                            EF(d.ce_coll.user_tag, 0), EF(d.ce_coll.root, F_SIGNED),
                            EF(d.ce_coll.batch_size, 0), EF(d.ce_coll.num_batches, 0),
                            EF(d.ce_coll.ce_seq, 0), EF(d.ce_coll.func, F_STR),
                            EF(d.ce_coll.datatype, F_STR), EF(d.ce_coll.sync_strategy, F_STR),
                            EF(d.ce_coll.intra_batch_sync, 0)}},
    [NSC_T_CE_SYNC] = {2, {EF(d.ce_sync.nranks, F_SIGNED), EF(d.ce_sync.is_complete, 0)}},
    [NSC_T_CE_BATCH] = {3, {EF(d.ce_batch.total_bytes, 0), EF(d.ce_batch.num_ops, F_SIGNED),
                            EF(d.ce_batch.use_intra_sync, 0)}},
    [NSC_T_KERNEL_PHASE] = {4, {EFR(d.kernel_phase.ptimer, 0, start_ns),
                                EF(d.kernel_phase.phase_name, F_STR),
                                EF(d.kernel_phase.channel, 0), EF(d.kernel_phase.phase_id, 0)}},
};

#define NSTATE 5
static const field state_fields[NSTATE] = {
    {offsetof(nsc_state_rec, id), 8, 0, NO_REL},
    {offsetof(nsc_state_rec, ts_ns), 8, 0, NO_REL},
    {offsetof(nsc_state_rec, arg), 8, 0, NO_REL},
    {offsetof(nsc_state_rec, tid), 4, 0, NO_REL},
    {offsetof(nsc_state_rec, state), 1, 0, NO_REL}};

#define NCOMPL 2
static const field compl_fields[NCOMPL] = {
    {offsetof(nsc_completion, id), 8, 0, NO_REL},
    {offsetof(nsc_completion, ts_ns), 8, 0, NO_REL}};

/* Columns: event type, common fields, payload slots, state fields, completion fields. */
enum {
    C_TYPE = 0,
    C_COMMON = 1,
    C_PAYLOAD = C_COMMON + NCOMMON,
    C_STATE = C_PAYLOAD + NPAYLOAD,
    C_COMPL = C_STATE + NSTATE,
    NCOLS = C_COMPL + NCOMPL
};
#define EVENT_MIN_BYTES (1 + NCOMMON) /* every event writes at least one byte per column */

static inline uint64_t load(const void *rec, const field *f)
{
    const uint8_t *p = (const uint8_t *)rec + f->off;
    switch (f->size) {
    case 1: { uint8_t v; memcpy(&v, p, 1); return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int8_t)v : v; }
    case 2: { uint16_t v; memcpy(&v, p, 2); return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int16_t)v : v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int32_t)v : v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static inline void store(void *rec, const field *f, uint64_t v)
{
    uint8_t *p = (uint8_t *)rec + f->off;
    uint8_t b = (uint8_t)v;
    uint16_t h = (uint16_t)v;
    uint32_t w = (uint32_t)v;
    switch (f->size) {
    case 1: memcpy(p, &b, 1); break;
    case 2: memcpy(p, &h, 2); break;
    case 4: memcpy(p, &w, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

static inline uint64_t load_u64(const void *rec, uint16_t off)
{
    uint64_t v;
    memcpy(&v, (const uint8_t *)rec + off, 8);
    return v;
}

static inline uint64_t zigzag(uint64_t d)
{
    return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static inline uint64_t unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

/* block.c */
void nsc_blk_write_hdr(uint8_t *p, uint32_t codec, uint32_t raw_len, const nsc_block_hdr *h);

#endif
