/* clockshim.c: libnsc-clockshim.so, LD_PRELOAD'ed into the processes of a
 * simulated node (its ranks and its agent) to give that node its own clock.
 *
 * Interposes clock_gettime. CLOCK_MONOTONIC (what the plugin stamps events
 * with and the agent stamps probes with) reads skew(t) of skew.h, with
 * NCCLSCOPE_TEST_CLOCK_OFFSET_NS, NCCLSCOPE_TEST_CLOCK_DRIFT_PPM (converted to
 * ppb, rounded), NCCLSCOPE_TEST_CLOCK_EPOCH_NS, and optionally a step:
 * NCCLSCOPE_TEST_CLOCK_STEP_AT_NS (true ns after the epoch) and
 * NCCLSCOPE_TEST_CLOCK_STEP_NS (signed). Every other clock the kernel keeps
 * in step with it (MONOTONIC_RAW, _COARSE, BOOTTIME, REALTIME, _COARSE) is
 * moved by the same amount as CLOCK_MONOTONIC at that moment, so differences
 * between clocks stay as they were (REALTIME through the skew function
 * itself would add its drift over the whole Unix epoch: days). Test-only: the
 * plugin's hot path stays a plain clock_gettime.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "skew.h"

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static emu_skew_fn skew;

static int64_t env_i64(const char *name)
{
    const char *v = getenv(name);
    return v ? strtoll(v, NULL, 10) : 0;
}

__attribute__((constructor)) static void shim_init(void)
{
    real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    const char *d = getenv("NCCLSCOPE_TEST_CLOCK_DRIFT_PPM");
    const char *e = getenv("NCCLSCOPE_TEST_CLOCK_EPOCH_NS");
    skew.offset_ns = env_i64("NCCLSCOPE_TEST_CLOCK_OFFSET_NS");
    skew.drift_ppb = d ? (int64_t)llround(strtod(d, NULL) * 1000.0) : 0;
    skew.epoch_ns = e ? strtoull(e, NULL, 10) : 0;
    skew.step_at_ns = env_i64("NCCLSCOPE_TEST_CLOCK_STEP_AT_NS");
    skew.step_ns = env_i64("NCCLSCOPE_TEST_CLOCK_STEP_NS");
}

static __int128 ns_of(const struct timespec *ts)
{
    return (__int128)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static int follows_monotonic(clockid_t id)
{
    return id == CLOCK_MONOTONIC_RAW || id == CLOCK_MONOTONIC_COARSE || id == CLOCK_BOOTTIME ||
           id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE;
}

__attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (!real_clock_gettime)
        shim_init();
    int rc = real_clock_gettime(id, ts);
    if (rc != 0 || (id != CLOCK_MONOTONIC && !follows_monotonic(id)))
        return rc;
    struct timespec mono = *ts;
    if (id != CLOCK_MONOTONIC && real_clock_gettime(CLOCK_MONOTONIC, &mono) != 0)
        return rc;
    __int128 m = ns_of(&mono);
    __int128 t = ns_of(ts) + (__int128)emu_skew_apply(&skew, (uint64_t)m) - m;
    if (t < 0)
        t = 0;
    ts->tv_sec = (time_t)(t / 1000000000);
    ts->tv_nsec = (long)(t % 1000000000);
    return 0;
}
