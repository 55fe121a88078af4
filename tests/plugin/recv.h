/* recv.h: what arrived from plugins, for tests (the test receiver's core).
 *
 * Decodes batches with the common codec and keeps every event, state and
 * completion per process stream, then answers: counts per (communicator,
 * rank), per type and state, parent links resolved within a stream, foreign
 * (PXN) events, and the plugin's own cumulative counters. A stream is one
 * (pid, load of the plugin): batch sequence 0 starts a new one.
 */
#ifndef NCCLSCOPE_TEST_RECV_H
#define NCCLSCOPE_TEST_RECV_H

#include <stdio.h>

#include "wire.h"

typedef struct nsc_recv nsc_recv;

typedef struct nsc_recv_rank {
    uint64_t comm_id;
    int32_t rank;
    uint64_t events[NSC_T_COUNT];
    uint64_t states[NSC_S_COUNT];
    uint64_t completions;
    uint64_t open_events;  /* never stopped: flushed at finalize, NSC_EVF_OPEN */
} nsc_recv_rank;

typedef struct nsc_recv_totals {
    uint64_t batches, bad_batches, streams;
    uint64_t events[NSC_T_COUNT];   /* local and foreign */
    uint64_t foreign[NSC_T_COUNT];
    uint64_t states[NSC_S_COUNT];   /* KernelChStop folded into KernelCh counted here */
    uint64_t completions, open_events;
    uint64_t links, links_resolved;  /* events with a parent; parent found */
    uint64_t states_unmatched;       /* state of an event that never arrived */
    uint64_t states_apart;           /* state not in the batch of its event */
    uint64_t clock_err_ns;           /* the largest conversion bound a batch carried */
    nsc_counters counters;           /* sum of every stream's latest counters */
} nsc_recv_totals;

nsc_recv *nsc_recv_new(void);
void nsc_recv_free(nsc_recv *r);
/* Returns 0, or the decoder's error (counted as a bad batch). */
int nsc_recv_batch(nsc_recv *r, const void *buf, size_t len);
/* Events and states decoded so far (any time, from the decoding thread). */
size_t nsc_recv_nevents(const nsc_recv *r);
size_t nsc_recv_nstates(const nsc_recv *r);
/* Resolve links and aggregate; call before the queries below. */
void nsc_recv_finish(nsc_recv *r, nsc_recv_totals *t);
size_t nsc_recv_nranks(const nsc_recv *r);
const nsc_recv_rank *nsc_recv_rank_at(const nsc_recv *r, size_t i);
/* Find one received event (first match) by type and a predicate; NULL if none. */
const nsc_event *nsc_recv_find(const nsc_recv *r, int type,
                               int (*pred)(const nsc_event *, void *), void *arg);
const nsc_completion *nsc_recv_completion(const nsc_recv *r, uint64_t id);
const char *nsc_recv_str(const nsc_recv *r, uint32_t pid, nsc_str id);
uint32_t nsc_recv_event_pid(const nsc_recv *r, const nsc_event *ev);
/* The JSON summary (docs/plugin.md, "Test receiver"). */
void nsc_recv_json(const nsc_recv *r, const nsc_recv_totals *t, FILE *out);

#endif
