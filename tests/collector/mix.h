/* mix.h: a realistic mix of NCCL profiler records for store tests and benchmarks.
 *
 * Owns the synthetic workload: per collective, one Coll, a KernelCh per
 * channel, a send and a receive ProxyOp per channel, ProxySteps per op with
 * three states each, ProxyOp progress states and a completion; times with
 * nanosecond noise, records in the order the plugin writes them (by stop time).
 */
#ifndef NCCLSCOPE_TEST_MIX_H
#define NCCLSCOPE_TEST_MIX_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "ledger.h"
#include "sim.h"

#define NSC_MIX_CHANNELS 4
#define NSC_MIX_STEPS 8
#define NSC_MIX_EVENTS_PER_COLL (1 + NSC_MIX_CHANNELS * (1 + 2 + 2 * NSC_MIX_STEPS))
#define NSC_MIX_STATES_PER_COLL (NSC_MIX_CHANNELS * 2 * (1 + 3 * NSC_MIX_STEPS))

/* String ids the mix uses (define them with nsc_mix_strs). */
enum { NSC_MIX_STR_ALLREDUCE = 1, NSC_MIX_STR_FLOAT, NSC_MIX_STR_RING, NSC_MIX_STR_SIMPLE,
       NSC_MIX_NSTRS = 4 };

typedef struct nsc_mix {
    nsc_sim_rng rng;
    uint64_t now_ns;   /* host CPU time */
    uint64_t next_id;
    uint64_t seq;
    nsc_event *events;
    nsc_state_rec *states;
    nsc_completion *completions;
    size_t nevents, nstates, ncompletions, cap_colls;
} nsc_mix;

/* Room for up to max_colls collectives per batch. Returns 0 or -1. */
int nsc_mix_init(nsc_mix *m, uint64_t seed, size_t max_colls);
void nsc_mix_free(nsc_mix *m);
/* Empty the arrays (ids, times and sequence numbers continue). */
void nsc_mix_clear(nsc_mix *m);
/* Append one collective of (ctx, rank); -1 when the arrays are full. */
int nsc_mix_collective(nsc_mix *m, uint16_t ctx, int32_t rank);
void nsc_mix_strs(nsc_str_def out[NSC_MIX_NSTRS]);
/* A completed ledger record of the mix's AllReduce at today's default mask
 * (no network detail): a collective every ~1.1 ms of the rank's, its times
 * jittered by a few microseconds as a function of (seq, rank). */
void nsc_mix_ledger(nsc_ledger_rec *out, uint64_t comm, uint64_t seq, int32_t rank);

#endif
