/* skew.h: the one definition of a simulated clock, as a function of true time.
 *
 * A simulated node's clock (clockshim.c), a GPU's globaltimer (clock.c) and
 * the truth the clock checker compares with (tests/e2e/clock_check.c) all use
 * these two functions, so the shim, the emulator and the checker cannot
 * disagree. Header-only: the shim is a separate LD_PRELOAD library that links
 * nothing of the emulator.
 *
 *   skew(t) = t + offset + trunc((t - epoch) * drift_ppb / 1e9)
 *             + (t >= epoch + step_at ? step : 0)
 *
 * 128-bit arithmetic; step 0 means no step. docs/emulator-model.md ("Node clock").
 */
#ifndef NCCLSCOPE_EMU_SKEW_H
#define NCCLSCOPE_EMU_SKEW_H

#include <stdint.h>

typedef struct emu_skew_fn {
    int64_t offset_ns;
    int64_t drift_ppb;
    uint64_t epoch_ns;
    int64_t step_at_ns;  /* true time of the step, after the epoch */
    int64_t step_ns;     /* how far the clock jumps then (signed) */
} emu_skew_fn;

static inline __int128 emu_skew_line(const emu_skew_fn *k, __int128 t)
{
    return t + k->offset_ns + (t - (__int128)k->epoch_ns) * k->drift_ppb / 1000000000;
}

static inline int emu_skew_stepped(const emu_skew_fn *k, __int128 t)
{
    return k->step_ns != 0 && t >= (__int128)k->epoch_ns + k->step_at_ns;
}

/* The skewed reading at true time t (negative results read as 0). */
static inline uint64_t emu_skew_apply(const emu_skew_fn *k, uint64_t true_ns)
{
    __int128 s = emu_skew_line(k, true_ns) + (emu_skew_stepped(k, true_ns) ? k->step_ns : 0);
    return s < 0 ? 0 : (uint64_t)s;
}

/* The true time of a reading on the line alone: the t with line(t) closest
 * to raw from below (the line is truncated, so one reading has up to
 * 1 + |drift| ns of true times; this picks the first). */
static inline __int128 emu_skew_line_invert(const emu_skew_fn *k, __int128 raw)
{
    __int128 d = raw - k->offset_ns - (__int128)k->epoch_ns;
    __int128 t = (__int128)k->epoch_ns + d * 1000000000 / (1000000000 + k->drift_ppb);
    while (emu_skew_line(k, t) > raw)
        t--;
    while (emu_skew_line(k, t + 1) <= raw)
        t++;
    return t;
}

/* The true times a reading can have come from: 0 (a forward step skipped
 * it), 1, or 2 (a backward step read it twice: before and after). Returns
 * how many, earliest first in t[]. */
static inline int emu_skew_invert(const emu_skew_fn *k, uint64_t raw, uint64_t t[2])
{
    int n = 0;
    __int128 before = emu_skew_line_invert(k, raw);
    if (!emu_skew_stepped(k, before) && before >= 0)
        t[n++] = (uint64_t)before;
    if (k->step_ns) {
        __int128 after = emu_skew_line_invert(k, (__int128)raw - k->step_ns);
        if (emu_skew_stepped(k, after) && after >= 0)
            t[n++] = (uint64_t)after;
    }
    return n;
}

#endif
