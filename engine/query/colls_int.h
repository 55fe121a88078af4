/* colls_int.h: what the collectives' files share (engine/query/colls*.c);
 * nothing outside them includes it.
 *
 * Owns the matched collectives: each rank's Coll records (with kernel times
 * and completions) and their groups by (func, seq) with the numbers derived
 * from them and any mismatch.
 *
 * Which file owns what:
 *   colls.c        gathering the records and matching them across ranks
 *   figures.c      each figure's one definition over a group's records
 *   colls_write.c  the collectives endpoint: one group per line
 *   colls_stats.c  the stats endpoint: percentiles per (func, size) and
 *                  the stragglers
 */
#ifndef NCCLSCOPE_QUERY_COLLS_INT_H
#define NCCLSCOPE_QUERY_COLLS_INT_H

#include <stdint.h>

#include "qint.h"

typedef struct cl_rec {
    uint32_t func, datatype, algo, proto;
    uint64_t seq, id, count;
    int32_t rank, root;
    uint32_t r;                 /* index into c->ranks */
    uint8_t nchannels, flags, has_kernel, has_done;
    uint32_t nkch;              /* its KernelCh stored: a channel that never ended has none */
    uint64_t enq, enq_end;      /* aligned */
    uint64_t enq_err;           /* enq's bound (the host's clock model) */
    uint64_t kstart, kend, done;
    uint64_t prev_end;          /* its previous collective's kernel end (has_prev) */
    uint8_t has_prev;
    uint64_t kstart_err, kend_err;  /* their bounds (figures.c narrows them) */
    uint64_t arrival;           /* kstart when every rank has kernel times, else enq */
    const char *uncertain;      /* the causality its times break beyond their bounds; NULL: none */
    double cap_gbps;            /* the most its transport allows (nsc_busbw_cap); 0: unknown */
    size_t grp;                 /* its group (CL_NONE: outside the window) */
    size_t pos;                 /* its place in its rank's records by enqueue time */
} cl_rec;

#define CL_NONE SIZE_MAX

typedef struct cl_kernel {
    uint64_t parent, start, stop;  /* aligned CPU times */
    uint64_t pt_start, pt_stop;
    uint64_t seen;                 /* its pair's aligned CPU time (nsc_q_gpu_seen) */
    int open;                      /* never stopped (flushed at finalize): no end */
} cl_kernel;

typedef struct cl_done {
    uint64_t id, ts;
} cl_done;

typedef struct cl_group {
    size_t first, n;            /* records[first .. first+n) */
    uint64_t start, end, skew, bytes, last_arrival, dur;
    uint64_t last_err, skew_err, dur_err;  /* bounds of last_arrival, skew, dur */
    int has_end, has_dur, gpu_arrival, all_ranks;
    const char *uncertain;      /* why its figures are uncertain (figures.c); NULL: they are not */
    /* The last rank's lateness (figures.c): against the others' median
     * arrival, its host's and GPU's own parts, and whether it is its own. */
    uint64_t late, late_host, late_gpu;
    int late_own;
    int32_t last_rank;
    double algbw, busbw, factor;
    /* A mismatch: the rank that disagrees with the others and the seq the
     * others called (which is not this group's seq when it called another
     * function); what: its text, "" for none. */
    int32_t odd_rank;
    uint64_t odd_seq;
    char what[160];
} cl_group;

typedef struct cl_set {
    nsc_q_ctx *c;
    int from_ledger;            /* its records are the ledger's, not made from raw events */
    cl_rec *recs;
    size_t nrecs, cap;
    cl_group *groups;
    size_t ngroups;
    /* per-rank scratch */
    cl_kernel *kern;
    size_t nkern, kcap;
    cl_done *done;
    size_t ndone, dcap;
} cl_set;

/* Every channel of the record's kernel ended: its kernel times are known. */
int nsc_q_cl_kernel_done(const cl_rec *x);
/* The context's collectives in the window, gathered (from the ledger, else
 * from raw events: from_ledger) and matched; returns
 * nonzero on failure (the context says why). Free with nsc_q_cl_free. */
int nsc_q_cl_collect(cl_set *s);
void nsc_q_cl_free(cl_set *s);
/* ,"source":"ledger" or "events": what the figures were made from. */
void nsc_q_cl_write_source(nsc_q_out *o, const cl_set *s);

#endif
