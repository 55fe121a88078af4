/* mono.h: the monotonic clock every component reads (CLOCK_MONOTONIC, ns).
 * Inline so that the plugin's hot path pays one vDSO clock_gettime and
 * nothing more; the plugins, the agent and the collector share this base.
 * Also the wall clock (ns), for what several machines must order: the
 * ClickHouse store's row versions and ages; and the calling thread's CPU
 * time (ns), for what a daemon or a benchmark reports of its own cost. */
#ifndef NSC_MONO_H
#define NSC_MONO_H

#include <stdint.h>
#include <time.h>

static inline uint64_t nsc_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t nsc_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t nsc_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
