/* clrec.h: one matched collective's per-rank records and their group.
 *
 * Owns the record of a rank at a collective (cl_rec: its times, their
 * bounds, its kernel's progress) and the group of one (func, seq) with the
 * figures made from it (cl_group). The collectives' files fill them
 * (colls_int.h) and the figures (figures.h) are computed over them; apart
 * from both, so that the figures need none of the code that gathers.
 */
#ifndef NCCLSCOPE_QUERY_CLREC_H
#define NCCLSCOPE_QUERY_CLREC_H

#include <stddef.h>
#include <stdint.h>

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

/* Every channel of the rank's kernel ended (one that hangs is never stored):
 * its kernel times are known. */
static inline int nsc_q_cl_kernel_done(const cl_rec *x)
{
    return x->has_kernel && x->nkch >= x->nchannels;
}

#endif
