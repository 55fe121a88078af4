/* clock.c: the emulator's clocks.
 *
 * "True" time is CLOCK_MONOTONIC read through libc's own clock_gettime,
 * looked up in libc itself, so the clock shim (clockshim.c, LD_PRELOAD'ed
 * into simulated nodes, which interposes the symbol) never touches it and the
 * read stays in the vDSO (a raw syscall per read was most of the time
 * model's CPU cost); the raw syscall is the fallback.
 * A node's skewed clock and a GPU's globaltimer are the same exact integer
 * function of true time (skew.h); docs/emulator-model.md gives the formula so tests
 * can compute it.
 * A thread's clock floor: where the clock shim is preloaded (the launcher
 * does so with the time model on), the plugin's clock reads on a proxy (or
 * host) thread return at least the modelled time of what it makes, so the
 * emulator can make events ahead of real time and still have them stamped
 * exactly; and a held time, which it reads exactly for the length of one
 * call (a stamp taken before the call, kept by a thread behind real time).
 * A thread's due time: a thread the machine held back past the modelled
 * time it waited for reads that time and trails real time from there, so it
 * stamps what it makes at the model's times (emu_clock_due); the shim owns
 * the thread's reading, and the emulator's stamps take it from there.
 */
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"
#include "skew.h"

typedef int (*clock_fn)(clockid_t, struct timespec *);

static clock_fn libc_clock;
static pthread_once_t libc_clock_once = PTHREAD_ONCE_INIT;

static void libc_clock_find(void)
{
    void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    if (libc) /* dlsym on libc's handle searches libc, not the preloaded shim */
        libc_clock = (clock_fn)dlsym(libc, "clock_gettime");
}

uint64_t emu_true_ns(void)
{
    struct timespec ts;
    pthread_once(&libc_clock_once, libc_clock_find);
    if (!libc_clock || libc_clock(CLOCK_MONOTONIC, &ts) != 0)
        syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef void (*floor_fn)(uint64_t);
typedef void (*due_fn)(uint64_t, uint64_t);
typedef uint64_t (*now_fn)(void);

static floor_fn shim_floor, shim_hold, shim_begin;
static due_fn shim_due;
static now_fn shim_now;
static pthread_once_t shim_floor_once = PTHREAD_ONCE_INIT;
static __thread uint64_t floor_ns;

static void shim_floor_find(void)
{
    shim_floor = (floor_fn)dlsym(RTLD_DEFAULT, "emu_clockshim_floor");
    shim_hold = (floor_fn)dlsym(RTLD_DEFAULT, "emu_clockshim_hold");
    shim_begin = (floor_fn)dlsym(RTLD_DEFAULT, "emu_clockshim_begin");
    shim_due = (due_fn)dlsym(RTLD_DEFAULT, "emu_clockshim_due");
    shim_now = (now_fn)dlsym(RTLD_DEFAULT, "emu_clockshim_now");
}

bool emu_clock_floor_on(void)
{
    pthread_once(&shim_floor_once, shim_floor_find);
    return shim_floor != NULL;
}

void emu_clock_floor_raise(uint64_t t)
{
    if (t > floor_ns && emu_clock_floor_on()) {
        floor_ns = t;
        shim_floor(t);
    }
}

uint64_t emu_clock_stamp_ns(void)
{
    return emu_clock_floor_on() && shim_now ? shim_now() : emu_true_ns();
}

void emu_clock_due(uint64_t t, uint64_t work)
{
    if (emu_clock_floor_on() && shim_due)
        shim_due(t, work);
}

void emu_clock_begin(uint64_t t)
{
    if (emu_clock_floor_on() && shim_begin)
        shim_begin(t);
}

void emu_clock_hold(uint64_t t)
{
    if (emu_clock_floor_on() && shim_hold)
        shim_hold(t);
}

void emu_sleep_until(uint64_t t)
{
    if (t == 0 || t <= emu_true_ns())
        return;
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
}

/* The launcher's epoch is the workers' (they get it in this variable), and a
 * test that starts a node's agent before the job sets it to share it too. */
uint64_t emu_epoch_ns(void)
{
    const char *e = getenv("NCCLSCOPE_EMU_EPOCH_NS");
    return e && *e ? strtoull(e, NULL, 10) : emu_true_ns();
}

int64_t emu_ppm_to_ppb(double ppm)
{
    return (int64_t)llround(ppm * 1000.0);
}

uint64_t emu_gpu_time(const emu_gpu_clock *g, uint64_t true_ns)
{
    emu_skew_fn k = {g->offset_ns, g->drift_ppb, g->epoch_ns, 0, 0};
    return emu_skew_apply(&k, true_ns);
}

uint64_t emu_splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A GPU's globaltimer reads roughly Unix time, each GPU off by its own amount
 * (the real trace has GPUs of one node ~55 s apart): realtime - monotonic at
 * startup, plus a per-GPU offset in [-spread, +spread] drawn from the seed. */
void emu_gpu_clock_for(const emu_opts *o, int global_rank, uint64_t epoch_ns, emu_gpu_clock *g)
{
    struct timespec rt;
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &rt);
    int64_t unix_minus_mono = ((int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec) - (int64_t)emu_true_ns();
    /* A whole second keeps the base readable; the summary has the exact offset. */
    unix_minus_mono -= unix_minus_mono % 1000000000;
    int64_t spread = o->gpu_spread_ns;
    uint64_t r = emu_splitmix(o->seed * 1000003u + (uint64_t)global_rank);
    int64_t own = spread ? (int64_t)(r % (uint64_t)(2 * spread + 1)) - spread : 0;
    g->offset_ns = unix_minus_mono + own;
    g->drift_ppb = emu_ppm_to_ppb(o->gpu_drift_ppm) * (global_rank % 2 ? -1 : 1);
    g->epoch_ns = epoch_ns;
}
