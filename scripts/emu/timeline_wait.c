/* timeline_wait.c: how a thread of the emulator waits for a modelled time.
 *
 * Owns the pacing of the timelines (timeline.c) against real time: with the
 * clock shim's floor (clock.c) a thread runs ahead up to a horizon and
 * raises its floor to each event's time; without it, it sleeps until the
 * time, less the kernel's timer slack. What happens at each time is
 * timeline.c's.
 */
#include "emu.h"

/* The last time this thread read the clock: time only moves on, so an event
 * due before it plus the slack (or horizon) is due now without reading the
 * clock again (a proxy behind the model makes its events back to back). */
static __thread uint64_t seen_ns;

/* Without the clock floor, an event due less than this ahead is made now: a
 * sleep for it would cost a context switch and wake up late by the kernel's
 * timer slack (50 us) anyway. Not more: a network step's events (its SendWait
 * state to its end, what the links analysis measures) are often closer than
 * 50 us, and making them early would shorten the step (with 50 us the demo's
 * healthy links read 1 us a step instead of 18, docs/benchmarks-history.md). */
#define EMU_SLACK_NS 20000

/* With the clock floor, what is due less than this ahead of real time is
 * done now, stamped with its time: a 4 MiB collective's events (~300 us) in
 * one go, a host's wait for a device end that close not at all. Further
 * ahead, the thread sleeps until it is EMU_LEAD_NS ahead, which a wake-up on
 * a loaded machine is seldom later than, so it is still done before its
 * time. */
#define EMU_HORIZON_NS 1000000
#define EMU_LEAD_NS 500000

static void sleep_with_slack(uint64_t t)
{
    if (t == 0 || t <= seen_ns + EMU_SLACK_NS || t <= (seen_ns = emu_true_ns()) + EMU_SLACK_NS)
        return;
    emu_sleep_until(t);
}

void emu_timeline_wait_horizon(uint64_t t)
{
    if (t > seen_ns + EMU_HORIZON_NS && t > (seen_ns = emu_true_ns()) + EMU_HORIZON_NS) {
        emu_sleep_until(t - EMU_LEAD_NS);
        seen_ns = t - EMU_LEAD_NS;
    }
}

static void wait_due(uint64_t t, uint64_t work)
{
    if (!emu_clock_floor_on()) {
        sleep_with_slack(t);
        return;
    }
    if (t == 0)
        return;
    emu_clock_due(t, work);
    emu_timeline_wait_horizon(t);
    emu_clock_floor_raise(t);
}

void emu_timeline_wait(uint64_t t)
{
    wait_due(t, EMU_HOST_WORK_NS);
}

void emu_timeline_wait_event(uint64_t t)
{
    wait_due(t, 0);
}
