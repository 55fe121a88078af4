/* ledger.h: the collective ledger, one record per (job, communicator, seq,
 * rank).
 *
 * Owns the record's shape and its byte format. The node agent builds the
 * records from the raw events of the processes of its node (agent/ledger.c):
 * a record is written once the rank's part of the collective completed, or,
 * for one stuck past hang_ms, as an in-flight record (NSC_LEDGER_INFLIGHT)
 * that says how far each channel and peer got, replaced when it completes.
 * The collector stores them and every figure a user sees is derived from them
 * (docs/protocol-ledger.md, "The ledger"; docs/api-figures.md, "Figures").
 *
 * Times are the producing host's CLOCK_MONOTONIC nanoseconds, 0 when unknown:
 * the collector aligns them through the host's clock model like any event
 * time. GPU times are already converted from the GPU's timer to the host's
 * clock by the agent, which fits each process's GPU line (store/gpuclock.h);
 * gpu_err_ns bounds that conversion.
 *
 * The fields are listed once, in NSC_FIELDS_LEDGER and NSC_FIELDS_LEDGER_EDGE
 * (event_fields.h, beside the events'); the structs, the codec and the docs'
 * table are made from those lists.
 */
#ifndef NCCLSCOPE_LEDGER_H
#define NCCLSCOPE_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include "event_fields.h"
#include "wire.h"

/* Record flags. */
enum {
    NSC_LEDGER_INFLIGHT = 1u << 0, /* not completed: a snapshot of a stuck collective */
    NSC_LEDGER_GRAPH = 1u << 1,    /* captured in a CUDA graph */
    NSC_LEDGER_CE = 1u << 2,       /* run by the copy engine (CeColl) */
    NSC_LEDGER_PXN = 1u << 3,      /* some of its network steps ran in another process (PXN) */
    NSC_LEDGER_P2P = 1u << 4,      /* a Send/Recv: seq is the rank's own count per (peer, func) */
    NSC_LEDGER_NO_GPU = 1u << 5,   /* no GPU times (KernelCh off, or no pTimer) */
    NSC_LEDGER_NO_NET = 1u << 6,   /* no network detail (ProxyOp/ProxyStep off) */
    NSC_LEDGER_GPU_STALE = 1u << 7 /* some KernelCh timers were other work's (the GPU line refused
                                    * them, gpuclock.h): GPU times from the other channels only */
};

/* Where a network step's time went, by the ProxyStep state it was spent in. */
enum {
    NSC_LEDGER_WAIT_GPU = 0,   /* SendGPUWait, RecvGPUWait: the GPU had not produced/consumed */
    NSC_LEDGER_WAIT_PEER = 1,  /* SendPeerWait: the receiver had no buffer free */
    NSC_LEDGER_WAIT_SEND = 2,  /* SendWait: the network had not completed the send */
    NSC_LEDGER_WAIT_RECV = 3,  /* RecvWait: the data had not arrived */
    NSC_LEDGER_WAIT_FLUSH = 4, /* RecvFlushWait */
    NSC_LEDGER_WAIT_COUNT = 5
};

/* The wait class of a ProxyStep state, or -1 for a state that is not one. */
int nsc_ledger_wait_of(unsigned state);

#define NSC_LEDGER_STRUCT_MEMBER(a, kind, member, ...) NSC_CTYPE_##kind member;

/* One network edge of one rank's collective: (peer, channel, direction). */
typedef struct nsc_ledger_edge {
    NSC_FIELDS_LEDGER_EDGE(NSC_LEDGER_STRUCT_MEMBER, _)
} nsc_ledger_edge;

typedef struct nsc_ledger_rec {
    NSC_FIELDS_LEDGER(NSC_LEDGER_STRUCT_MEMBER, _)
    uint32_t nedges;
    const nsc_ledger_edge *edges; /* decoded: points into the batch's memory */
} nsc_ledger_rec;

#undef NSC_LEDGER_STRUCT_MEMBER

/* A process's records of one agent batch; strings (func, datatype, algo,
 * proto) are ids into strs, like a wire batch's. */
typedef struct nsc_ledger_batch {
    uint32_t pid;
    uint32_t nstrs, nrecs;
    const nsc_str_def *strs;
    const nsc_ledger_rec *recs;
    void *mem; /* decoder's allocation */
} nsc_ledger_batch;

/* Upper bound of the encoded size of b; encode returns the exact length. */
size_t nsc_ledger_bound(const nsc_ledger_batch *b);
size_t nsc_ledger_encode(const nsc_ledger_batch *b, uint8_t *out);
/* 0 or a negative nsc_wire_err; on error nothing is allocated. Release a
 * decoded batch with nsc_ledger_release. lim may be NULL. */
int nsc_ledger_decode(const void *buf, size_t len, const nsc_dec_limits *lim, nsc_ledger_batch *out);
void nsc_ledger_release(nsc_ledger_batch *b);

#endif
