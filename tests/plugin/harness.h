/* harness.h: driving the built plugin directly from Criterion tests.
 *
 * h_env() points the plugin at a fresh ipc endpoint; h_recv_start() binds an
 * in-process receiver thread there (recv.h); h_load() dlopens the plugin as
 * NCCL does and returns its ncclProfiler_vN struct. Criterion runs every test
 * in its own process, so each test starts with a fresh plugin.
 */
#ifndef NCCLSCOPE_TEST_HARNESS_H
#define NCCLSCOPE_TEST_HARNESS_H

#include "../../plugin/nccl/profiler.h"
#include "recv.h"

/* Set NCCLSCOPE_ENDPOINT (and NCCLSCOPE_EVENT_MASK=all) for a fresh socket. */
const char *h_env(void);
void h_recv_start(void);
/* Wait (up to 30 s) until the receiver has decoded n events (states), or
 * taken n batches; 0, or -1. */
int h_recv_wait_events(uint64_t n);
int h_recv_wait_states(uint64_t n);
int h_recv_wait_batches(uint64_t n); /* messages, decoded or not */
/* Stop the receiver after draining; returns what arrived (caller frees). */
nsc_recv *h_recv_stop(nsc_recv_totals *t);
/* dlopen the plugin; *dl receives the handle. */
const void *h_load(int version, void **dl);
void h_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);
uint64_t h_sum(const uint64_t *v, int n);
/* nsc_recv_find's predicate (never a match) that counts events whose times
 * lie between from and to, CLOCK_MONOTONIC ns give or take a microsecond,
 * in `in`, and the others in `out`. */
typedef struct h_window {
    uint64_t from, to, in, out;
} h_window;
int h_in_window(const nsc_event *ev, void *arg);

#endif
