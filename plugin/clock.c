/* clock.c: the CPU's counter as a clock, and its conversion to CLOCK_MONOTONIC.
 *
 * Reading the counter costs a third of a vDSO clock_gettime, but it counts
 * ticks, not nanoseconds. Whether it can be trusted is decided once, at the
 * first init: on x86-64 only an invariant TSC (constant_tsc and nonstop_tsc
 * in /proc/cpuinfo: a steady rate, not stopped in deep idle), on aarch64 the
 * architected virtual counter always; elsewhere CLOCK_MONOTONIC stays.
 *
 * The conversion is a line through calibration pairs, each a counter read
 * between two CLOCK_MONOTONIC reads (the narrowest of a few tries): the slope
 * from the oldest of the last NSC_CLOCK_WINDOW pairs since the last jump (the
 * first of them, the anchor) to the latest, the origin at the latest. The
 * window keeps the slope on CLOCK_MONOTONIC's rate of the moment, which NTP
 * moves, while spanning enough time that the pairs' brackets hardly tilt it.
 * A new pair far from where the line predicted it says
 * the counter jumped (a migration to a CPU whose counter is offset, a
 * suspend): it becomes the new anchor and the slope is kept. How far each
 * new pair is from the prediction, plus its bracket, is the conversion error
 * measured; the largest so far is the bound the converted times carry,
 * sent with every batch (docs/protocol.md, the header's clock_err_ns).
 * (A pair beyond the reach below is measured at the reach.)
 *
 * A count is converted on the line only within a quarter of the line's span
 * past its latest pair (nsc_clock_rec_ns takes a pair first otherwise): the
 * slope's error, its end pairs' errors over its span, then adds at most a
 * quarter of theirs. A run's first line spans 2 ms, so its first records
 * take a pair each few hundred microseconds, and lie between two pairs, on a
 * line through both; the span then grows by a quarter a pair up to the
 * window's, far beyond the shipper's 10 ms between pairs. An event's counts
 * are converted together, on the line that reaches the latest of them: a
 * pair taken between its start and its stop would put the two lines'
 * difference into its duration.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"

int nsc_g_counter;
int nsc_g_cost_counter;

#define CAL_TRIES 8
#define FLAGS_LINE 8192

/* A whole word of a space-separated flags line. */
static int has_flag(const char *flags, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = flags; (p = strstr(p, name)); p += n) {
        int starts = p == flags || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':';
        int ends = p[n] == '\0' || p[n] == ' ' || p[n] == '\n';
        if (starts && ends)
            return 1;
    }
    return 0;
}

int nsc_clock_invariant(const char *flags)
{
    return has_flag(flags, "constant_tsc") && has_flag(flags, "nonstop_tsc");
}

#if defined(__x86_64__)
/* The first "flags" line of /proc/cpuinfo into buf; 0, or -1 when none. */
static int cpu_flags(char *buf, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    int rc = -1;
    while (fgets(buf, (int)len, f))
        if (strncmp(buf, "flags", 5) == 0) {
            rc = 0;
            break;
        }
    fclose(f);
    return rc;
}
#endif

int nsc_clock_select(void)
{
#if defined(__x86_64__)
    static char line[FLAGS_LINE];
    nsc_g_counter = cpu_flags(line, sizeof line) == 0 && nsc_clock_invariant(line);
#elif defined(__aarch64__)
    nsc_g_counter = 1;
#else
    nsc_g_counter = 0;
#endif
    return nsc_g_counter;
}

static void anchor(nsc_clock *c, uint64_t tick, uint64_t mono, uint64_t bracket_ns)
{
    c->t[0] = c->t1 = tick;
    c->m[0] = c->m1 = mono;
    c->pairs = 1;
    c->err_ns = c->bracket1 = bracket_ns;
}

/* The oldest pair the window holds (before the next is added). */
static uint32_t oldest(const nsc_clock *c)
{
    return c->pairs < NSC_CLOCK_WINDOW ? 0 : c->pairs % NSC_CLOCK_WINDOW;
}

uint64_t nsc_clock_ns(const nsc_clock *c, uint64_t tick)
{
    double d = (double)(int64_t)(tick - c->t1) * c->ns_per_tick;
    return c->m1 + (uint64_t)(int64_t)d;
}

uint64_t nsc_clock_bound(const nsc_clock *c)
{
    /* an anchor's bracket is its error until the next pair measures one */
    return c->err_ns > c->max_err_ns ? c->err_ns : c->max_err_ns;
}

/* The line's error measured by a pair off it, plus the pair's bracket. A
 * pair beyond the line's reach finds it further off than at any count it
 * converted (none was that far past its latest pair): the line's error runs
 * straight from its latest pair's (within that one's bracket) to this one's,
 * so at the reach it is that share of off, plus the larger bracket. */
static uint64_t measured(const nsc_clock *c, uint64_t tick, uint64_t off, uint64_t bracket_ns)
{
    int64_t past = (int64_t)(tick - c->t1);
    if (past <= (int64_t)c->reach)
        return off + bracket_ns;
    uint64_t share = (uint64_t)((double)off * (double)c->reach / (double)past) + 1;
    return share + (c->bracket1 > bracket_ns ? c->bracket1 : bracket_ns);
}

int nsc_clock_pair(nsc_clock *c, uint64_t tick, uint64_t mono, uint64_t bracket_ns)
{
    if (!c->pairs) {
        anchor(c, tick, mono, bracket_ns);
        return 0;
    }
    if (c->ns_per_tick > 0) {
        uint64_t at = nsc_clock_ns(c, tick);
        uint64_t off = at > mono ? at - mono : mono - at;
        if (off > NSC_CLOCK_JUMP_NS) {
            anchor(c, tick, mono, bracket_ns);
            c->jumps++;
            return 1;
        }
        c->err_ns = measured(c, tick, off, bracket_ns);
        if (c->err_ns > c->max_err_ns)
            c->max_err_ns = c->err_ns;
    } else if ((int64_t)(tick - c->t[0]) <= 0 || (int64_t)(mono - c->m[0]) <= 0) {
        /* no slope yet to predict with, and this one would be negative */
        anchor(c, tick, mono, bracket_ns);
        c->jumps++;
        return 1;
    }
    uint32_t o = oldest(c);
    c->reach = (tick - c->t[o]) / NSC_CLOCK_REACH;
    c->ns_per_tick = (double)(mono - c->m[o]) / (double)(tick - c->t[o]);
    c->t1 = c->t[c->pairs % NSC_CLOCK_WINDOW] = tick;
    c->m1 = c->m[c->pairs % NSC_CLOCK_WINDOW] = mono;
    c->bracket1 = bracket_ns;
    c->pairs++;
    return 0;
}

uint64_t nsc_clock_read(uint64_t *tick, uint64_t *mid)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < CAL_TRIES; i++) {
        uint64_t a = nsc_mono_ns();
        uint64_t t = nsc_counter();
        uint64_t b = nsc_mono_ns();
        if (b - a < best) {
            best = b - a;
            *tick = t;
            *mid = a + (b - a) / 2;
        }
    }
    return best / 2 + 1;
}

int nsc_clock_calibrate(nsc_clock *c)
{
    uint64_t tick, mid, half = nsc_clock_read(&tick, &mid);
    return nsc_clock_pair(c, tick, mid, half);
}

int nsc_clock_reaches(const nsc_clock *c, uint64_t tick)
{
    return c->ns_per_tick > 0 && (int64_t)(tick - c->t1) <= (int64_t)c->reach;
}

/* Let the line reach tick (0: none, nothing to reach): a pair first where it
 * does not. 1 when that pair showed a jump. */
static int reach(nsc_clock *c, uint64_t tick)
{
    return tick && !nsc_clock_reaches(c, tick) && nsc_clock_calibrate(c);
}

/* A record's count on the line as it is; 0 (none taken) stays 0. */
static uint64_t on_line(const nsc_clock *c, uint64_t tick)
{
    return tick ? nsc_clock_ns(c, tick) : 0;
}

/* The later of two counts, 0 being none. */
static uint64_t later(uint64_t a, uint64_t b)
{
    return !a || (b && (int64_t)(b - a) > 0) ? b : a;
}

/* An event's times on one line, the one that reaches the latest of them: a
 * stop converted on a line taken after its start was would carry the two
 * lines' difference in its duration, and could come before its start. */
int nsc_clock_rec_ns(nsc_clock *c, nsc_rec *r)
{
    uint64_t *one = r->kind == NSC_REC_STATE        ? &r->u.st.ts_ns
                    : r->kind == NSC_REC_COMPLETION ? &r->u.done.ts_ns
                                                    : NULL;
    if (one) {
        int jumped = reach(c, *one);
        *one = on_line(c, *one);
        return jumped;
    }
    nsc_event *ev = r->u.ev;
    int kch = ev->type == NSC_T_KERNEL_CH;
    uint64_t latest = later(ev->start_ns, ev->stop_ns);
    if (kch)
        latest = later(latest, ev->d.kernel_ch.ptimer_stop_ns);
    int jumped = reach(c, latest);
    ev->start_ns = on_line(c, ev->start_ns);
    ev->stop_ns = on_line(c, ev->stop_ns);
    if (kch)
        ev->d.kernel_ch.ptimer_stop_ns = on_line(c, ev->d.kernel_ch.ptimer_stop_ns);
    return jumped;
}

void nsc_clock_start(nsc_clock *c)
{
    memset(c, 0, sizeof *c);
    nsc_clock_calibrate(c);
    struct timespec ts = {0, NSC_CLOCK_FIRST_SPAN_NS};
    nanosleep(&ts, NULL);
    nsc_clock_calibrate(c);
}
