/* clockshim.c: libnsc-clockshim.so, LD_PRELOAD'ed into the processes of a
 * simulated node to give that node its own clock.
 *
 * Interposes clock_gettime for CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW and
 * CLOCK_REALTIME: skewed = t + offset + (t - epoch) * drift_ppb / 1e9 (128-bit,
 * truncated toward zero), the same function as emu_skew() in clock.c, with
 * NCCLSCOPE_TEST_CLOCK_OFFSET_NS, NCCLSCOPE_TEST_CLOCK_DRIFT_PPM (converted to
 * ppb, rounded) and NCCLSCOPE_TEST_CLOCK_EPOCH_NS. Test-only: the plugin's hot
 * path stays a plain clock_gettime.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static int64_t offset_ns, drift_ppb;
static uint64_t epoch_ns;

__attribute__((constructor)) static void shim_init(void)
{
    real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    const char *o = getenv("NCCLSCOPE_TEST_CLOCK_OFFSET_NS");
    const char *d = getenv("NCCLSCOPE_TEST_CLOCK_DRIFT_PPM");
    const char *e = getenv("NCCLSCOPE_TEST_CLOCK_EPOCH_NS");
    offset_ns = o ? strtoll(o, NULL, 10) : 0;
    drift_ppb = d ? (int64_t)llround(strtod(d, NULL) * 1000.0) : 0;
    epoch_ns = e ? strtoull(e, NULL, 10) : 0;
}

__attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (!real_clock_gettime)
        shim_init();
    int rc = real_clock_gettime(id, ts);
    if (rc != 0 || (id != CLOCK_MONOTONIC && id != CLOCK_MONOTONIC_RAW && id != CLOCK_REALTIME))
        return rc;
    __int128 t = (__int128)ts->tv_sec * 1000000000 + ts->tv_nsec;
    __int128 skewed = t + offset_ns + (t - (__int128)epoch_ns) * drift_ppb / 1000000000;
    if (skewed < 0)
        skewed = 0;
    ts->tv_sec = (time_t)(skewed / 1000000000);
    ts->tv_nsec = (long)(skewed % 1000000000);
    return 0;
}
