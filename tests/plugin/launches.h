/* launches.h: load on a communicator of the v5 plugin, for the tests of the
 * plugin's life (test_plugin_life.c, test_plugin_chain.c, tests/e2e/fork_job.c): KernelLaunch, the
 * cheapest event NCCL records, started and stopped at once. */
#ifndef NCCLSCOPE_TEST_LAUNCHES_H
#define NCCLSCOPE_TEST_LAUNCHES_H

#include "../../plugin/nccl/profiler.h"

#include <sys/types.h>

/* Record n KernelLaunch events on ctx. */
void h_launches(const ncclProfiler_v5_t *p, void *ctx, int n);
/* fork() a child that calls in: 20 launches on the communicator it inherited
 * (ctx), 30 on one it initialises ("y", id 2, logging to log), both finalized;
 * it exits 0 if that init succeeded. Returns the child's pid (-1: no fork). */
pid_t h_fork_calling_child(const ncclProfiler_v5_t *p, void *ctx, ncclDebugLogger_t log);

#endif
