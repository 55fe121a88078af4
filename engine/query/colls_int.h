/* colls_int.h: what the collectives' files share (engine/query/colls*.c);
 * nothing outside them includes it.
 *
 * Owns the matched collectives being gathered (cl_set): each rank's Coll
 * records (with kernel times and completions) and their groups by (func,
 * seq) with the numbers derived from them and any mismatch (the record and
 * the group themselves: clrec.h).
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

#include "clrec.h"
#include "qint.h"

typedef struct cl_kernel {
    uint64_t parent, start, stop;  /* aligned CPU times */
    uint64_t pt_start, pt_stop;
    uint64_t seen;                 /* its pair's aligned CPU time (nsc_q_gpu_seen) */
    int open;                      /* never stopped (flushed at finalize): no end */
} cl_kernel;

typedef struct cl_done {
    uint64_t id, ts;
} cl_done;

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

/* The context's collectives in the window, gathered (from the ledger, else
 * from raw events: from_ledger) and matched; returns
 * nonzero on failure (the context says why). Free with nsc_q_cl_free. */
int nsc_q_cl_collect(cl_set *s);
void nsc_q_cl_free(cl_set *s);
/* ,"source":"ledger" or "events": what the figures were made from. */
void nsc_q_cl_write_source(nsc_q_out *o, const cl_set *s);

#endif
