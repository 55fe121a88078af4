/* figures.h: the one definition of each figure a user reads about a
 * collective (docs/api.md, "Figures"), over the per-rank records of one
 * matched collective (cl_rec, colls_int.h), whatever filled them: the raw
 * events today, the ledger's records tomorrow.
 *
 * Owns: arrival, wait, skew, duration, per-collective and per-rank busBW,
 * the straggler, each time's error bound after the collective's causality
 * tightened it, and the reason a figure is uncertain (it still contradicts
 * causality beyond its bound, or its bound is as large as the figure). Every
 * endpoint that shows one of these figures, and through them every view,
 * takes it from here.
 */
#ifndef NCCLSCOPE_QUERY_FIGURES_H
#define NCCLSCOPE_QUERY_FIGURES_H

#include <stddef.h>
#include <stdint.h>

#include "busbw.h"
#include "colls_int.h"

/* Whether every rank of `func` (any case) needs every other rank's data
 * before it can finish: AllReduce, AllGather, ReduceScatter, AlltoAll (a
 * Broadcast's or Reduce's rank may finish before a rank it does not depend
 * on starts). */
int nsc_fig_needs_all(const char *func);

/* A rank's own figures at a collective. */
typedef struct nsc_fig_rank {
    uint64_t wait_ns;           /* last arrival - its arrival */
    int has_own;                /* its kernel ended: own_ns is known */
    uint64_t own_ns, own_err_ns;  /* its kernel time, and its bound */
    uint64_t move_ns;           /* kernel end - max(its start, last arrival): when its data could move */
    double busbw;               /* bytes x factor / move_ns; NaN when unknown */
    const char *uncertain;      /* why a figure of it is uncertain; NULL: none */
} nsc_fig_rank;

/* The group's figures from its records x[0 .. g->n) (sorted by rank), which
 * it may tighten (kernel times and their bounds) by causality: func is the
 * collective's function name, all_ranks whether every rank of the
 * communicator is among them, bw the operation's bandwidth model. */
void nsc_fig_group(cl_group *g, cl_rec *x, const char *func, int all_ranks, nsc_busbw bw);
/* The rank's own figures at the group. */
void nsc_fig_rank_of(const cl_group *g, const cl_rec *x, nsc_fig_rank *out);
/* What the straggler counts: a complete collective (every rank, ended, no
 * mismatch) whose last rank is known beyond the bounds of the arrivals
 * (skew > its bound). A figure uncertain for another reason (a kernel's end)
 * leaves who came last known. */
int nsc_fig_last_counts(const cl_group *g);

/* The straggler among n ranks: the one last at more than half of the
 * `counted` collectives (nsc_fig_last_counts), and at NSC_FIG_STRAGGLER_MIN
 * at least; -1 when none is. last[r]: how many rank index r was last at. */
#define NSC_FIG_STRAGGLER_MIN 3
int64_t nsc_fig_straggler(const uint64_t *last, size_t n, uint64_t counted);

#endif
