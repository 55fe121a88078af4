/* launches.h: load on a communicator of the v5 plugin, for the tests of the
 * plugin's life (test_plugin_life.c, tests/e2e/fork_job.c): KernelLaunch, the
 * cheapest event NCCL records, started and stopped at once. */
#ifndef NCCLSCOPE_TEST_LAUNCHES_H
#define NCCLSCOPE_TEST_LAUNCHES_H

#include "../../plugin/nccl/profiler.h"

/* Record n KernelLaunch events on ctx. */
void h_launches(const ncclProfiler_v5_t *p, void *ctx, int n);

#endif
