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
 *
 * Also the emulator's clock floor: with the time model on, the launcher
 * preloads this library into every rank process, and the emulator makes an
 * event ahead of real time with its thread's floor raised to the event's
 * modelled (true) time (emu_clockshim_floor): on that thread the clocks then
 * read as at max(real, floor), skewed as above, so the plugin stamps the
 * event with its modelled time. A thread that never sets a floor (the
 * plugin's own, an agent's) reads as before. A held time (emu_clockshim_hold)
 * goes further for the one call the emulator makes under it: the thread's
 * clocks read as at exactly that true time, also where real time is past it,
 * so a pair the emulator stamps before the call (a KernelChStop's pTimer)
 * gets the plugin's stamp it modelled, whatever delay a loaded machine put
 * between the two reads. A due time (emu_clockshim_due) has a thread that a
 * loaded machine held back behind its model read the model's times, as if it
 * had not been held (docs/emulator-model.md, "A machine's pauses"): the
 * first read after it returns exactly that time (or the latest the thread
 * read, if later: its clocks never go back) and fixes the thread's trail,
 * how far real time is past it then; later reads return real time less the
 * trail, at most the due time plus the host's own work (the ceiling).
 * emu_clockshim_now gives the emulator's own stamps the same reading.
 *
 * And a slow clock: with NCCLSCOPE_TEST_CLOCK_SLOW_NS, a CLOCK_MONOTONIC read
 * on a thread named NCCLSCOPE_TEST_CLOCK_SLOW_THREAD takes that long, the
 * time it returns in its middle: a caller that brackets another clock's read
 * between two of them (the plugin's calibration of the CPU's counter) gets a
 * bracket that wide, and a time as exact as ever.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "skew.h"

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static emu_skew_fn skew;
static int skewed; /* else only a floor moves the clocks */
static __thread __attribute__((tls_model("initial-exec"))) uint64_t floor_ns;
static __thread __attribute__((tls_model("initial-exec"))) uint64_t hold_ns;
static __thread __attribute__((tls_model("initial-exec"))) uint64_t trail_ns;
static __thread __attribute__((tls_model("initial-exec"))) uint64_t ceil_ns;
static __thread __attribute__((tls_model("initial-exec"))) uint64_t due_ns;
static __thread __attribute__((tls_model("initial-exec"))) uint64_t last_ns;
static uint64_t slow_ns;
static const char *slow_thread;

/* The calling thread's clocks read as at true time max(real, t) from now on
 * (0: real time again). Looked up by the emulator with dlsym. */
__attribute__((visibility("default"))) void emu_clockshim_floor(uint64_t t)
{
    floor_ns = t;
}

/* The calling thread's clocks read as at exactly true time t (0: released,
 * the floor's max(real, floor) again). Looked up by the emulator with dlsym. */
__attribute__((visibility("default"))) void emu_clockshim_hold(uint64_t t)
{
    hold_ns = t;
}

/* The calling thread is due at true time t: its next read returns t and
 * fixes its trail there; until its next due time it reads at most t plus
 * `work`. A thread that read a later time already is due 1 ns after it: its
 * clocks never go back, and two things it does late are never at one time.
 * Looked up by the emulator with dlsym. */
__attribute__((visibility("default"))) void emu_clockshim_due(uint64_t t, uint64_t work)
{
    due_ns = t >= last_ns ? t : last_ns + 1;
    ceil_ns = due_ns + work;
}

/* The calling thread, new, joins the model at true time t, due then with no
 * time of its own: what it read before (a sanitizer's runtime as it started
 * the thread) was not the job's. Looked up by the emulator with dlsym. */
__attribute__((visibility("default"))) void emu_clockshim_begin(uint64_t t)
{
    last_ns = 0;
    emu_clockshim_due(t, 0);
}

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
    skewed = skew.offset_ns || skew.drift_ppb || skew.step_ns;
    const char *slow = getenv("NCCLSCOPE_TEST_CLOCK_SLOW_NS");
    slow_ns = slow ? strtoull(slow, NULL, 10) : 0;
    slow_thread = getenv("NCCLSCOPE_TEST_CLOCK_SLOW_THREAD");
}

/* Spin for ns of real CLOCK_MONOTONIC. */
static void spin(uint64_t ns)
{
    struct timespec a, b;
    real_clock_gettime(CLOCK_MONOTONIC, &a);
    do
        real_clock_gettime(CLOCK_MONOTONIC, &b);
    while ((uint64_t)((b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec)) < ns);
}

static int slow_here(void)
{
    char name[16] = "";
    return slow_ns && slow_thread && prctl(PR_GET_NAME, name) == 0 && strcmp(name, slow_thread) == 0;
}

static __int128 ns_of(const struct timespec *ts)
{
    return (__int128)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/* How far behind real time a thread's clocks may trail: past it, its stamps
 * are late again. */
#define SHIM_TRAIL_MAX_NS 60000000000ull

/* The true time the calling thread reads at real time `real`: held, or real
 * time less its trail, at most its ceiling, never before its floor or a time
 * it read already. The first read after a due time fixes the trail. */
static uint64_t thread_now(uint64_t real)
{
    if (due_ns) {
        uint64_t late = real > due_ns ? real - due_ns : 0;
        trail_ns = late < SHIM_TRAIL_MAX_NS ? late : SHIM_TRAIL_MAX_NS;
        due_ns = 0;
    }
    uint64_t at = hold_ns;
    if (!at) {
        at = real > trail_ns ? real - trail_ns : 0;
        uint64_t low = real > SHIM_TRAIL_MAX_NS ? real - SHIM_TRAIL_MAX_NS : 0;
        if (ceil_ns && at > ceil_ns)
            at = ceil_ns > low ? ceil_ns : low;
        at = at > floor_ns ? at : floor_ns;
    }
    if (at > last_ns)
        last_ns = at;
    return at;
}

/* The true time the calling thread's clocks read now (thread_now), for the
 * emulator's own stamps. Looked up by the emulator with dlsym. */
__attribute__((visibility("default"))) uint64_t emu_clockshim_now(void)
{
    struct timespec ts;
    if (!real_clock_gettime)
        shim_init();
    real_clock_gettime(CLOCK_MONOTONIC, &ts);
    return thread_now((uint64_t)ns_of(&ts));
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
    int slow = id == CLOCK_MONOTONIC && slow_here();
    if (slow)
        spin(slow_ns / 2);
    int rc = real_clock_gettime(id, ts);
    if (slow)
        spin(slow_ns - slow_ns / 2);
    if (rc != 0 || (id != CLOCK_MONOTONIC && !follows_monotonic(id)))
        return rc;
    if (!skewed && !floor_ns && !hold_ns && !trail_ns && !ceil_ns && !due_ns) {
        if (id == CLOCK_MONOTONIC && (uint64_t)ns_of(ts) > last_ns)
            last_ns = (uint64_t)ns_of(ts);
        return rc;
    }
    struct timespec mono = *ts;
    if (id != CLOCK_MONOTONIC && real_clock_gettime(CLOCK_MONOTONIC, &mono) != 0)
        return rc;
    __int128 m = ns_of(&mono);
    uint64_t at = thread_now((uint64_t)m);
    __int128 t = ns_of(ts) + (__int128)emu_skew_apply(&skew, at) - m;
    if (t < 0)
        t = 0;
    ts->tv_sec = (time_t)(t / 1000000000);
    ts->tv_nsec = (long)(t % 1000000000);
    return 0;
}
