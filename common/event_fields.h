/* event_fields.h: the one table of event fields.
 *
 * Owns, for every field of every event type: its kind (C type, and whether it
 * is signed or an interned string id), the nsc_event member that holds it,
 * where it travels in the type's wire record, what its block column is stored
 * relative to, its place in the timeline's JSON object and the member of
 * NCCL's descriptor it is copied from. Made from it: the payload structs of
 * nsc_event (event.h), the wire layouts (wire.c), the block's columns
 * (store/block_int.h), the timeline's descriptor keys (query/timeline.c), the
 * strings an event refers to (plugin/drain.c) and the copies from NCCL's
 * descriptors (plugin/plugin.c); each user checks its counts and positions at
 * compile time. docs/protocol.md, "Event fields", says how to add a field.
 *
 * The fields every event has are here too (NSC_FIELDS_HEAD, NSC_FIELDS_ORIGIN),
 * but event.h declares them by hand, next to `type`, which is no field (the
 * wire record's tag, the block's type column); it checks that the rows cover
 * every byte before the payload.
 */
#ifndef NCCLSCOPE_EVENT_FIELDS_H
#define NCCLSCOPE_EVENT_FIELDS_H

#include <stddef.h>
#include <stdint.h>

/* ---- columns ---------------------------------------------------------------
 *
 * A row is X(a, kind, member, wire, store, json, nccl); `a` is whatever the
 * user passes to the list (most pass the union member, d.<struct>).
 *
 * kind: the value and its C type, and on the wire its encoding (protocol.md,
 *   "How a field travels"): U8 U16 U32 U64 I32 I64; STR an interned string id
 *   (nsc_str, sent as u16); REF an event id, sent as nil or a delta from the
 *   record's id; TIME a host time, sent as a delta from base_ns; PID a pid,
 *   sent as a delta from the header's pid. The common fields also have ID, an
 *   event id sent as a delta from the batch's previous one, and DUR, a time
 *   sent as a delta from the record's last TIME.
 * wire: NSC_W(n), the n-th descriptor field of the record (record field 9 + n),
 *   or NSC_NOWIRE. Positions of a type are 0..n-1, each once.
 * store: the block column's base: NSC_PREV, the same field of the previous
 *   event of the type, or NSC_REL(member), a uint64 member of the same event.
 *   The column is the row's place in its list (rows are in struct order).
 * json: NSC_J(n), the n-th key of the timeline's object after the common keys
 *   (the key is the member's name), or NSC_NOJSON. Positions 0..n-1, each once.
 * nccl: NSC_NCCL(name), the member of the type's NCCL descriptor it is copied
 *   from, alike in every profiler version that has the type (plugin/plugin.c
 *   copies these); NSC_NCCL_BY_VERSION, copied by hand in plugin.c because the
 *   versions differ (a later version, another name); NSC_NCCL_NONE, not from
 *   the descriptor.
 */

#define NSC_W(n) 1, n
#define NSC_NOWIRE 0, 0
#define NSC_J(n) 1, n
#define NSC_NOJSON 0, 0
#define NSC_NCCL(name) 1, name
#define NSC_NCCL_BY_VERSION 0, _
#define NSC_NCCL_NONE 0, _
#define NSC_PREV 0xffffu
#define NSC_REL(m) offsetof(nsc_event, m)

/* What a value is, by kind: the block stores signed values sign-extended and
 * maps string ids, the timeline writes them as signed numbers or texts. */
enum { NSC_VAL_UNSIGNED = 0, NSC_VAL_SIGNED = 1, NSC_VAL_STR = 2 };

#define NSC_CTYPE_U8 uint8_t
#define NSC_CTYPE_U16 uint16_t
#define NSC_CTYPE_U32 uint32_t
#define NSC_CTYPE_U64 uint64_t
#define NSC_CTYPE_I32 int32_t
#define NSC_CTYPE_I64 int64_t
#define NSC_CTYPE_STR nsc_str
#define NSC_CTYPE_REF uint64_t
#define NSC_CTYPE_TIME uint64_t
#define NSC_CTYPE_PID uint32_t
#define NSC_CTYPE_ID uint64_t
#define NSC_CTYPE_DUR uint64_t

#define NSC_VAL_U8 NSC_VAL_UNSIGNED
#define NSC_VAL_U16 NSC_VAL_UNSIGNED
#define NSC_VAL_U32 NSC_VAL_UNSIGNED
#define NSC_VAL_U64 NSC_VAL_UNSIGNED
#define NSC_VAL_I32 NSC_VAL_SIGNED
#define NSC_VAL_I64 NSC_VAL_SIGNED
#define NSC_VAL_REF NSC_VAL_UNSIGNED
#define NSC_VAL_TIME NSC_VAL_UNSIGNED
#define NSC_VAL_PID NSC_VAL_UNSIGNED
#define NSC_VAL_ID NSC_VAL_UNSIGNED
#define NSC_VAL_DUR NSC_VAL_UNSIGNED

/* ---- the table ------------------------------------------------------------- */

/* Columns: X(a, kind, member, wire, store, json, nccl), as above. */

/* The fields every event has. Wire: record fields 1..8 (required). Block: the
 * common columns, these then the origin's. JSON: the timeline writes them
 * itself (aligned times, flag names). Set by the plugin's begin and stop, not
 * copied from a descriptor. */
#define NSC_FIELDS_HEAD(X, a)                                                          \
    X(a, ID,   id,       NSC_W(0), NSC_PREV,          NSC_NOJSON, NSC_NCCL_NONE)       \
    X(a, REF,  parent,   NSC_W(1), NSC_PREV,          NSC_NOJSON, NSC_NCCL_NONE)       \
    X(a, TIME, start_ns, NSC_W(2), NSC_PREV,          NSC_NOJSON, NSC_NCCL_NONE)       \
    X(a, DUR,  stop_ns,  NSC_W(3), NSC_REL(start_ns), NSC_NOJSON, NSC_NCCL_NONE)       \
    X(a, PID,  tid,      NSC_W(4), NSC_PREV,          NSC_NOJSON, NSC_NCCL_NONE)       \
    X(a, I32,  rank,     NSC_W(6), NSC_PREV,          NSC_NOJSON, NSC_NCCL_NONE)       \
    X(a, U16,  ctx,      NSC_W(5), NSC_PREV,          NSC_NOJSON, NSC_NCCL_NONE)       \
    X(a, U8,   flags,    NSC_W(7), NSC_PREV,          NSC_NOJSON, NSC_NCCL_NONE)

/* A PXN event's origin (NSC_EVF_FOREIGN), every type's last fields: on the wire
 * after the descriptor fields (n: the n-th of them), optional like those. */
#define NSC_FIELDS_ORIGIN(X, a)                                                        \
    X(a, PID,  origin_pid,    NSC_W(0), NSC_PREV, NSC_NOJSON, NSC_NCCL_NONE)           \
    X(a, U64,  origin_parent, NSC_W(1), NSC_PREV, NSC_NOJSON, NSC_NCCL_NONE)           \
    X(a, U64,  origin_ctx,    NSC_W(2), NSC_PREV, NSC_NOJSON, NSC_NCCL_NONE)

/* Coll. user_tag, kernel_variant: v7; parent_group: the legacy Group's id
 * (v5+); nchannels: nMaxChannels in v3, nChannels from v4; op and
 * traffic_bytes: v1 only (no version the plugin serves sets them, yet both
 * travel and are stored, and the timeline writes traffic_bytes). Of the v7
 * user tags only Coll's is in the timeline's JSON. */
#define NSC_FIELDS_COLL(X, a)                                                       \
    X(a, U64, seq,            NSC_W(0),  NSC_PREV, NSC_J(0),   NSC_NCCL(seqNumber)) \
    X(a, U64, count,          NSC_W(1),  NSC_PREV, NSC_J(3),   NSC_NCCL(count))     \
    X(a, U64, user_tag,       NSC_W(11), NSC_PREV, NSC_J(9),   NSC_NCCL_BY_VERSION) \
    X(a, U64, traffic_bytes,  NSC_W(13), NSC_PREV, NSC_J(10),  NSC_NCCL_NONE)       \
    X(a, REF, parent_group,   NSC_W(9),  NSC_PREV, NSC_NOJSON, NSC_NCCL_BY_VERSION) \
    X(a, I32, root,           NSC_W(2),  NSC_PREV, NSC_J(4),   NSC_NCCL(root))      \
    X(a, STR, func,           NSC_W(3),  NSC_PREV, NSC_J(1),   NSC_NCCL(func))      \
    X(a, STR, datatype,       NSC_W(4),  NSC_PREV, NSC_J(2),   NSC_NCCL(datatype))  \
    X(a, STR, algo,           NSC_W(5),  NSC_PREV, NSC_J(5),   NSC_NCCL(algo))      \
    X(a, STR, proto,          NSC_W(6),  NSC_PREV, NSC_J(6),   NSC_NCCL(proto))     \
    X(a, STR, kernel_variant, NSC_W(10), NSC_PREV, NSC_NOJSON, NSC_NCCL_BY_VERSION) \
    X(a, U8,  nchannels,      NSC_W(7),  NSC_PREV, NSC_J(7),   NSC_NCCL_BY_VERSION) \
    X(a, U8,  nwarps,         NSC_W(8),  NSC_PREV, NSC_J(8),   NSC_NCCL(nWarps))    \
    X(a, U8,  op,             NSC_W(12), NSC_PREV, NSC_NOJSON, NSC_NCCL_NONE)

/* P2p. nchannels: v4+; parent_group: v5+; user_tag: v7. */
#define NSC_FIELDS_P2P(X, a)                                                     \
    X(a, U64, count,        NSC_W(0), NSC_PREV, NSC_J(2),   NSC_NCCL(count))     \
    X(a, U64, user_tag,     NSC_W(6), NSC_PREV, NSC_NOJSON, NSC_NCCL_BY_VERSION) \
    X(a, REF, parent_group, NSC_W(5), NSC_PREV, NSC_NOJSON, NSC_NCCL_BY_VERSION) \
    X(a, I32, peer,         NSC_W(1), NSC_PREV, NSC_J(3),   NSC_NCCL(peer))      \
    X(a, STR, func,         NSC_W(2), NSC_PREV, NSC_J(0),   NSC_NCCL(func))      \
    X(a, STR, datatype,     NSC_W(3), NSC_PREV, NSC_J(1),   NSC_NCCL(datatype))  \
    X(a, U8,  nchannels,    NSC_W(4), NSC_PREV, NSC_J(4),   NSC_NCCL_BY_VERSION)

/* ProxyOp. op_pid: NCCL's pid, the process whose op the proxy runs (named
 * apart from the process that sends the record, the ClickHouse row's pid). */
#define NSC_FIELDS_PROXY_OP(X, a)                                              \
    X(a, I32, peer,       NSC_W(0), NSC_PREV, NSC_J(1),   NSC_NCCL(peer))      \
    X(a, I32, nsteps,     NSC_W(2), NSC_PREV, NSC_J(3),   NSC_NCCL(nSteps))    \
    X(a, I32, chunk_size, NSC_W(3), NSC_PREV, NSC_J(4),   NSC_NCCL(chunkSize)) \
    X(a, PID, op_pid,     NSC_W(5), NSC_PREV, NSC_NOJSON, NSC_NCCL(pid))       \
    X(a, U8,  channel,    NSC_W(1), NSC_PREV, NSC_J(0),   NSC_NCCL(channelId)) \
    X(a, U8,  is_send,    NSC_W(4), NSC_PREV, NSC_J(2),   NSC_NCCL(isSend))

/* ProxyStep. */
#define NSC_FIELDS_PROXY_STEP(X, a)                               \
    X(a, I32, step, NSC_W(0), NSC_PREV, NSC_J(0), NSC_NCCL(step))

/* KernelCh. ptimer_start: the GPU globaltimer at start (v4+), 0 unknown;
 * ptimer_stop: KernelChStop's pTimer, 0 unknown; ptimer_stop_ns: the CPU time
 * at which ptimer_stop was seen (both set by the state, not the descriptor). */
#define NSC_FIELDS_KERNEL_CH(X, a)                                                                           \
    X(a, U64,  ptimer_start,   NSC_W(1), NSC_REL(start_ns),                 NSC_J(1),   NSC_NCCL_BY_VERSION) \
    X(a, U64,  ptimer_stop,    NSC_W(2), NSC_REL(d.kernel_ch.ptimer_start), NSC_J(2),   NSC_NCCL_NONE)       \
    X(a, TIME, ptimer_stop_ns, NSC_W(3), NSC_REL(stop_ns),                  NSC_NOJSON, NSC_NCCL_NONE)       \
    X(a, U8,   channel,        NSC_W(0), NSC_PREV,                          NSC_J(0),   NSC_NCCL(channelId))

/* NetPlugin. */
#define NSC_FIELDS_NET_PLUGIN(X, a)                                    \
    X(a, I64, plugin_id, NSC_W(0), NSC_PREV, NSC_J(0), NSC_NCCL(id))   \
    X(a, U64, data,      NSC_W(1), NSC_PREV, NSC_J(1), NSC_NCCL(data))

/* GroupApi. */
#define NSC_FIELDS_GROUP_API(X, a)                                       \
    X(a, U32, depth, NSC_W(0), NSC_PREV, NSC_J(0), NSC_NCCL(groupDepth))

/* CollApi. user_tag: v7. */
#define NSC_FIELDS_COLL_API(X, a)                                            \
    X(a, STR, func,     NSC_W(0), NSC_PREV, NSC_J(0),   NSC_NCCL(func))      \
    X(a, STR, datatype, NSC_W(1), NSC_PREV, NSC_J(1),   NSC_NCCL(datatype))  \
    X(a, I32, root,     NSC_W(3), NSC_PREV, NSC_J(3),   NSC_NCCL(root))      \
    X(a, U64, count,    NSC_W(2), NSC_PREV, NSC_J(2),   NSC_NCCL(count))     \
    X(a, U64, stream,   NSC_W(4), NSC_PREV, NSC_J(4),   NSC_NCCL(stream))    \
    X(a, U64, user_tag, NSC_W(5), NSC_PREV, NSC_NOJSON, NSC_NCCL_BY_VERSION)

/* P2pApi shares CollApi's struct (d.coll_api), row for row (checked in
 * event.h). NCCL's P2pApi has no root: the plugin leaves it 0 and the wire
 * skips it, yet the block keeps its column and the timeline writes "root":0.
 * Kept as it was: changing either would change stored bytes or output. */
#define NSC_FIELDS_P2P_API(X, a)                                               \
    X(a, STR, func,     NSC_W(0),   NSC_PREV, NSC_J(0),   NSC_NCCL(func))      \
    X(a, STR, datatype, NSC_W(1),   NSC_PREV, NSC_J(1),   NSC_NCCL(datatype))  \
    X(a, I32, root,     NSC_NOWIRE, NSC_PREV, NSC_J(3),   NSC_NCCL_NONE)       \
    X(a, U64, count,    NSC_W(2),   NSC_PREV, NSC_J(2),   NSC_NCCL(count))     \
    X(a, U64, stream,   NSC_W(3),   NSC_PREV, NSC_J(4),   NSC_NCCL(stream))    \
    X(a, U64, user_tag, NSC_W(4),   NSC_PREV, NSC_NOJSON, NSC_NCCL_BY_VERSION)

/* KernelLaunch. */
#define NSC_FIELDS_KERNEL_LAUNCH(X, a)                                \
    X(a, U64, stream, NSC_W(0), NSC_PREV, NSC_J(0), NSC_NCCL(stream))

/* CeColl (v6+). user_tag: v7. */
#define NSC_FIELDS_CE_COLL(X, a)                                                           \
    X(a, U64, seq,              NSC_W(0),  NSC_PREV, NSC_J(0),   NSC_NCCL(seqNumber))      \
    X(a, U64, count,            NSC_W(1),  NSC_PREV, NSC_J(3),   NSC_NCCL(count))          \
    X(a, U64, stream,           NSC_W(10), NSC_PREV, NSC_NOJSON, NSC_NCCL(stream))         \
    X(a, U64, user_tag,         NSC_W(11), NSC_PREV, NSC_NOJSON, NSC_NCCL_BY_VERSION)      \
    X(a, I32, root,             NSC_W(2),  NSC_PREV, NSC_J(4),   NSC_NCCL(root))           \
    X(a, U32, batch_size,       NSC_W(6),  NSC_PREV, NSC_NOJSON, NSC_NCCL(batchSize))      \
    X(a, U32, num_batches,      NSC_W(7),  NSC_PREV, NSC_NOJSON, NSC_NCCL(numBatches))     \
    X(a, U32, ce_seq,           NSC_W(8),  NSC_PREV, NSC_NOJSON, NSC_NCCL(ceSeqNum))       \
    X(a, STR, func,             NSC_W(3),  NSC_PREV, NSC_J(1),   NSC_NCCL(func))           \
    X(a, STR, datatype,         NSC_W(4),  NSC_PREV, NSC_J(2),   NSC_NCCL(datatype))       \
    X(a, STR, sync_strategy,    NSC_W(5),  NSC_PREV, NSC_J(5),   NSC_NCCL(syncStrategy))   \
    X(a, U8,  intra_batch_sync, NSC_W(9),  NSC_PREV, NSC_NOJSON, NSC_NCCL(intraBatchSync))

/* CeSync (v6+). */
#define NSC_FIELDS_CE_SYNC(X, a)                                               \
    X(a, I32, nranks,      NSC_W(0), NSC_PREV, NSC_J(0), NSC_NCCL(nRanks))     \
    X(a, U8,  is_complete, NSC_W(1), NSC_PREV, NSC_J(1), NSC_NCCL(isComplete))

/* CeBatch (v6+). */
#define NSC_FIELDS_CE_BATCH(X, a)                                                     \
    X(a, U64, total_bytes,    NSC_W(0), NSC_PREV, NSC_J(0),   NSC_NCCL(totalBytes))   \
    X(a, I32, num_ops,        NSC_W(1), NSC_PREV, NSC_J(1),   NSC_NCCL(numOps))       \
    X(a, U8,  use_intra_sync, NSC_W(2), NSC_PREV, NSC_NOJSON, NSC_NCCL(useIntraSync))

/* KernelPhase (v7). */
#define NSC_FIELDS_KERNEL_PHASE(X, a)                                                 \
    X(a, U64, ptimer,     NSC_W(3), NSC_REL(start_ns), NSC_J(3), NSC_NCCL(pTimer))    \
    X(a, STR, phase_name, NSC_W(2), NSC_PREV,          NSC_J(2), NSC_NCCL(phaseName)) \
    X(a, U8,  channel,    NSC_W(0), NSC_PREV,          NSC_J(0), NSC_NCCL(channelId)) \
    X(a, U8,  phase_id,   NSC_W(1), NSC_PREV,          NSC_J(1), NSC_NCCL(phaseId))

/* Every event type with descriptor fields: its nsc_type, the struct that
 * holds them (nsc_event.d.<struct>) and its list. Group and ProxyCtrl have
 * none. Each type declares its struct, but P2pApi, which shares CollApi's
 * (the union's members keep their order: group_api is the first). */
#define NSC_EVENT_STRUCT_TYPES(T)                                                              \
    NSC_TYPE(T, GROUP_API, group_api) NSC_TYPE(T, COLL_API, coll_api)                          \
    NSC_TYPE(T, KERNEL_LAUNCH, kernel_launch) NSC_TYPE(T, COLL, coll) NSC_TYPE(T, P2P, p2p)    \
    NSC_TYPE(T, PROXY_OP, proxy_op) NSC_TYPE(T, PROXY_STEP, proxy_step)                        \
    NSC_TYPE(T, KERNEL_CH, kernel_ch) NSC_TYPE(T, NET_PLUGIN, net_plugin)                      \
    NSC_TYPE(T, CE_COLL, ce_coll) NSC_TYPE(T, CE_SYNC, ce_sync) NSC_TYPE(T, CE_BATCH, ce_batch) \
    NSC_TYPE(T, KERNEL_PHASE, kernel_phase)
#define NSC_EVENT_TYPES(T) NSC_EVENT_STRUCT_TYPES(T) T(NSC_T_P2P_API, coll_api, NSC_FIELDS_P2P_API)
/* T(nsc_type, struct, list) for the type NSC_T_<name>, its list NSC_FIELDS_<name>. */
#define NSC_TYPE(T, name, s) T(NSC_T_##name, s, NSC_FIELDS_##name)

/* ---- helpers for the users -------------------------------------------------
 *
 * For a wire or json column `col`: NSC_AT(col, base, entry) is the
 * initializer "[base + n] = entry," when the field has position n, else
 * nothing; NSC_ONE(col) adds 1 to a count when it has one; NSC_BIT(col) ors
 * in bit n. A type's positions are 0..count-1, each once, exactly when its
 * bits make (1 << count) - 1. */
#define NSC_AT(...) NSC_AT_(__VA_ARGS__)
#define NSC_AT_(has, n, base, ...) NSC_AT_##has(n, base, __VA_ARGS__)
#define NSC_AT_1(n, base, ...) [(base) + (n)] = __VA_ARGS__,
#define NSC_AT_0(n, base, ...)
#define NSC_ONE(...) NSC_ONE_(__VA_ARGS__)
#define NSC_ONE_(has, n) +(has)
#define NSC_BIT(...) NSC_BIT_(__VA_ARGS__)
#define NSC_BIT_(has, n) | ((has) ? 1ull << (n) : 0ull)
#define NSC_DENSE(bits, count) ((bits) == (1ull << (count)) - 1)

/* Row consumers that count: every row, the rows on the wire, the rows in JSON;
 * and one that adds up the members' sizes. */
#define NSC_ROW_COUNT(a, kind, m, wire, store, json, nccl) +1
#define NSC_ROW_WIRE_COUNT(a, kind, m, wire, store, json, nccl) NSC_ONE(wire)
#define NSC_ROW_WIRE_BITS(a, kind, m, wire, store, json, nccl) NSC_BIT(wire)
#define NSC_ROW_JSON_COUNT(a, kind, m, wire, store, json, nccl) NSC_ONE(json)
#define NSC_ROW_JSON_BITS(a, kind, m, wire, store, json, nccl) NSC_BIT(json)
#define NSC_ROW_SIZE(a, kind, m, wire, store, json, nccl) +sizeof(NSC_CTYPE_##kind)

/* ---- the ledger (ledger.h) ---------------------------------------------------
 *
 * One record per (job, communicator, seq, rank), built by the agent from the
 * events above. A row is X(a, kind, member, doc): kinds as above (TIME: the
 * host's CLOCK_MONOTONIC ns, 0 unknown), doc the text docs/protocol.md gives
 * the field ("The ledger"); the codec writes the rows in this order. */
#define NSC_FIELDS_LEDGER(X, a)                                                                   \
    X(a, U64,  comm_id,      "the communicator (NCCL commHash)")                                   \
    X(a, U64,  seq,          "NCCL's seqNumber of the collective in the communicator; a Send/Recv's is the rank's own count per peer and func") \
    X(a, I32,  rank,         "the rank in the communicator")                                       \
    X(a, U32,  flags,        "NSC_LEDGER_* flags: in-flight, graph, copy engine, PXN, p2p, no GPU or network detail, stale GPU timers") \
    X(a, STR,  func,         "the function (AllReduce, ...)")                                      \
    X(a, STR,  datatype,     "the datatype (ncclFloat32, ...)")                                    \
    X(a, STR,  algo,         "the algorithm (Ring, Tree, ...)")                                    \
    X(a, STR,  proto,        "the protocol (Simple, LL, LL128)")                                   \
    X(a, U64,  count,        "elements, as NCCL counts them")                                      \
    X(a, U64,  bytes,        "bytes this rank moves, by the bus-bandwidth rule (busbw.h)")          \
    X(a, I32,  root,         "the root rank (Broadcast, Reduce), else -1")                          \
    X(a, I32,  peer,         "the peer (Send/Recv), else -1")                                      \
    X(a, U8,   nchannels,    "channels NCCL gave the collective")                                  \
    X(a, U64,  user_tag,     "the v7 user tag, 0 none")                                            \
    X(a, TIME, api_ns,       "the application's API call (CollApi start)")                         \
    X(a, TIME, enqueue_ns,   "NCCL enqueued the collective (Coll start)")                          \
    X(a, TIME, launch_ns,    "the kernel was launched (KernelLaunch start)")                       \
    X(a, TIME, done_ns,      "the host saw the rank's part complete (its completion)")             \
    X(a, TIME, gpu_start_ns, "the first channel's kernel start, on the host's clock")              \
    X(a, TIME, gpu_end_ns,   "the last channel's kernel end, on the host's clock")                 \
    X(a, U32,  gpu_spread_ns, "last minus first channel's kernel end")                              \
    X(a, U32,  gpu_err_ns,   "the GPU-to-host conversion's error bound")                            \
    X(a, U8,   nchannels_done, "channels whose kernel ended")                                     \
    X(a, U32,  dropped,      "events and states of this collective known lost (below)")             \
    X(a, U16,  ctx,          "the process's context index of the communicator, as in its events (comm_id 0: resolve it)")

/* One network edge (peer, channel, direction) of a record: its ProxyOps and
 * ProxySteps folded. Wait times are per NSC_LEDGER_WAIT_* class. */
#define NSC_FIELDS_LEDGER_EDGE(X, a)                                                              \
    X(a, I32,  peer,         "the peer rank")                                                      \
    X(a, U8,   channel,      "the channel")                                                        \
    X(a, U8,   is_send,      "1 send, 0 receive")                                                  \
    X(a, U8,   last_state,   "in-flight: the state of the last step seen (nsc_state)")             \
    X(a, I32,  last_step,    "in-flight: the last step seen, -1 none")                             \
    X(a, U32,  steps,        "steps completed")                                                    \
    X(a, U64,  bytes,        "bytes moved")                                                        \
    X(a, U64,  step_sum_ns,  "sum of the steps' durations")                                        \
    X(a, U32,  step_max_ns,  "the longest step")                                                   \
    X(a, U64,  wait_gpu_ns,  "time in GPU wait")                                                   \
    X(a, U64,  wait_peer_ns, "time in peer wait")                                                  \
    X(a, U64,  wait_send_ns, "time in send wait")                                                  \
    X(a, U64,  wait_recv_ns, "time in receive wait")                                               \
    X(a, U64,  wait_flush_ns, "time in flush wait")

#endif
