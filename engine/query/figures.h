/* figures.h: the one definition of each figure a user reads about a
 * collective (docs/api-figures.md, "Figures"), over the per-rank records of one
 * matched collective (cl_rec, clrec.h), whatever filled them: the raw
 * events today, the ledger's records tomorrow.
 *
 * Owns: arrival, wait, skew, duration, per-collective and per-rank busBW,
 * the straggler, a rank lagging or hung, each time's error bound after the collective's causality
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
#include "clrec.h"
#include "ledger.h"

/* Whether every rank of `func` (any case) needs every other rank's data
 * before it can finish: AllReduce, AllGather, ReduceScatter, AlltoAll (a
 * Broadcast's or Reduce's rank may finish before a rank it does not depend
 * on starts). */
int nsc_fig_needs_all(const char *func);

/* The reason a rank's figures are uncertain when a KernelCh's timers were
 * other work's (the GPU line refused them: store/gpuclock.h), set where the
 * kernels are joined to their collective. */
extern const char nsc_fig_u_stale[];

/* A host time of the record's rank on the reader's clock, its bound into
 * *err (the caller's clock model: the store's, or the collector's). */
typedef uint64_t (*nsc_fig_align_fn)(const void *arg, uint64_t host_ns, uint64_t *err);
/* x made from ledger record l, its times aligned by align(arg, ...), its
 * GPU times' bounds widened by the agent's conversion; x->r, x->id and the
 * neighbours (prev_end) are the caller's. */
void nsc_fig_rec_of_ledger(cl_rec *x, const nsc_ledger_rec *l, nsc_fig_align_fn align, const void *arg);

/* Each of the n records' transport cap (cap_gbps, nsc_busbw_cap) from
 * host[i], record i's host as an index below n: across hosts when they
 * differ, and a host's NICs counted by its ranks among them when
 * count_hosts (every rank of the communicator is there); scratch: n
 * values. The collectives query and the live state both set it so. */
void nsc_fig_caps(cl_rec *x, size_t n, const uint32_t *host, int count_hosts, uint64_t *scratch);

/* Lagging (NCCL RAS's rule): a rank whose last seq of a function is below
 * the furthest any rank of its communicator reached (max_seq), for longer
 * than lag_ns counted from when another rank first went past it (passed_ns,
 * 0 unknown) or from when it reached its seq (since_ns), whichever is later;
 * *for_ns: for how long. */
int nsc_fig_lagging(uint64_t seq, uint64_t max_seq, uint64_t since_ns, uint64_t passed_ns, uint64_t now,
                    uint64_t lag_ns, uint64_t *for_ns);
/* Hung: a rank whose last collective (seq, reached at since_ns) has been in
 * flight (not done) for longer than lag_ns while another rank completed it
 * or went past it: the furthest seq any rank reached (front_seq) is above
 * it, or front_done ranks completed it there. */
int nsc_fig_hung(uint64_t seq, int done, uint64_t since_ns, uint64_t front_seq, uint32_t front_done, uint64_t now,
                 uint64_t lag_ns);

/* A rank's own figures at a collective. */
typedef struct nsc_fig_rank {
    uint64_t wait_ns;           /* last arrival - its arrival */
    int has_own;                /* its kernel ended: own_ns is known */
    uint64_t own_ns, own_err_ns;  /* its kernel time, and its bound */
    uint64_t move_ns;           /* kernel end - max(its start, last arrival): when its data could move,
                                 * at least bytes x factor / cap_gbps where its bound allows */
    double busbw;               /* bytes x factor / move_ns; NaN when unknown */
    double cap_gbps;            /* the most its transport allows (nsc_busbw_cap); 0: unknown */
    const char *uncertain;      /* why a figure of it is uncertain; NULL: none */
} nsc_fig_rank;

/* The group's figures from its records x[0 .. g->n) (sorted by rank), which
 * it may tighten (kernel times and their bounds) by causality: func is the
 * collective's function name, all_ranks whether every rank of the
 * communicator is among them, bw the operation's bandwidth model; scratch
 * has room for 3 x g->n values. */
void nsc_fig_group(cl_group *g, cl_rec *x, const char *func, int all_ranks, nsc_busbw bw, uint64_t *scratch);
/* The rank's own figures at the group. */
void nsc_fig_rank_of(const cl_group *g, const cl_rec *x, nsc_fig_rank *out);
/* A complete collective: every rank seen, ended, no mismatch. What the
 * straggler is counted over. */
int nsc_fig_complete(const cl_group *g);

/* The last rank is late of its own at a collective (g->late_own) when it
 * arrived after the others' median arrival and its host and GPU took
 * NSC_FIG_LATE_MIN_NS or more of that beyond the others' usual gaps (host:
 * previous kernel end to enqueue; GPU: from both to kernel start), and no
 * less than it inherited from its
 * previous collective's end: a slow link that made that collective end late
 * on it does not make it late. Without GPU arrival it is all the host's. 1 ms
 * is above the host wake-up noise of the emulator on a loaded 2-core machine
 * (up to about 0.5 ms). */
#define NSC_FIG_LATE_MIN_NS 1000000ull
/* The straggler among n ranks: the one late of its own most often, at more
 * than half of the complete collectives it was in and at
 * NSC_FIG_STRAGGLER_MIN at least (counted per collective: one long pause of
 * a loaded machine does not make a straggler); -1 when none is. own[r],
 * seen[r]: rank index r's counts. */
#define NSC_FIG_STRAGGLER_MIN 8
int64_t nsc_fig_straggler(const uint64_t *own, const uint64_t *seen, size_t n);

#endif
