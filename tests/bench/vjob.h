/* vjob.h: the ring job nsc-vfeed plays (vjob.c owns it): when each rank of
 * a ring of nodes x ranks-per-node ranks calls, starts and ends each
 * collective, its ledger record (docs/protocol-ledger.md) as its node agent
 * writes it, in flight or completed, with one fault at a known collective,
 * and the ground truth in the emulator's summary fields.
 */
#ifndef NCCLSCOPE_BENCH_VJOB_H
#define NCCLSCOPE_BENCH_VJOB_H

#include <stdint.h>
#include <stdio.h>

#include "ledger.h"

enum { NSC_VJ_NONE, NSC_VJ_HANG, NSC_VJ_STALL, NSC_VJ_HOST_LATE, NSC_VJ_SLOW_LINK };

#define NSC_VJ_NEVER UINT64_MAX
#define NSC_VJ_COMM 0x5eed0001ull
/* A record's strings are the mix's (tests/collector/mix.h: nsc_mix_strs),
 * each process defining them in its first section. */
#define NSC_VJ_MAX_EDGES 4 /* a rank has a send or a receive edge per channel, two channels */

typedef struct nsc_vjob {
    int nodes, rpn, nranks, nch;
    int kind, place;           /* NSC_VJ_*; the fault's rank, or its sending node (slow_link) */
    uint64_t from;             /* the first collective the fault touches */
    uint64_t iters, t0, pace_ns, hang_ns;
    uint64_t *end;             /* per collective: when the ring's last channel ended; NSC_VJ_NEVER */
} nsc_vjob;

/* The job of iters collectives from t0 (CLOCK_MONOTONIC ns), one called
 * every pace_ns; hang and stall stop the job at collective from. 0 or -1. */
int nsc_vj_init(nsc_vjob *j, int nodes, int rpn, uint64_t iters, uint64_t t0, uint64_t pace_ns, uint64_t hang_ns,
                int kind, int place, uint64_t from);
void nsc_vj_free(nsc_vjob *j);
/* When rank's record of collective k is written by its agent (completed,
 * or in flight hang_ns after its enqueue): NSC_VJ_NEVER for none. */
uint64_t nsc_vj_due(const nsc_vjob *j, int rank, uint64_t k);
/* The process id a rank's fed agent reports (one process per rank), also in
 * the summary, where a checker tells ranks of one node apart by it. */
static inline uint32_t nsc_vj_pid(int rank)
{
    return 10000u + (uint32_t)rank;
}
/* Rank's record of collective k as due (edges: NSC_VJ_MAX_EDGES). */
void nsc_vj_record(const nsc_vjob *j, int rank, uint64_t k, nsc_ledger_rec *out, nsc_ledger_edge *edges);
/* The collectives a rank plays (those after a stuck one never start). */
uint64_t nsc_vj_colls(const nsc_vjob *j);
/* The summary rootcause_check.py and verdict_poll.py read; 0 or -1. */
int nsc_vj_summary(const nsc_vjob *j, FILE *f);
/* NSC_VJ_* of a name (hang, stall, host_late, slow_link, none); -1 unknown. */
int nsc_vj_kind(const char *name);

#endif
