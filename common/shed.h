/* shed.h: the self-cost guard's policy (NCCLSCOPE_BUDGET_PCT).
 *
 * Owns the order in which event types are shed while the plugin's measured
 * cost is over its budget, and the hysteresis that brings them back. The
 * plugin's shipper steps it once per period with its cumulative counters; the
 * policy keeps no clock of its own, so it is tested without one.
 */
#ifndef NCCLSCOPE_SHED_H
#define NCCLSCOPE_SHED_H

#include <stdint.h>

/* Event types in the order they are shed: first the costliest and least
 * needed, Group last. Coll and P2p are never shed: they are the job's
 * collectives, what the cost is measured against and what live state follows. */
extern const uint8_t nsc_shed_order[];
extern const unsigned nsc_shed_order_len;

typedef struct nsc_shed {
    uint32_t budget_ppm;   /* budget in millionths of collective time; 0: off */
    uint32_t depth;        /* the first depth types of nsc_shed_order are shed */
    uint32_t mask;         /* those types, as 1 << type */
    uint64_t changes;      /* how many times mask changed */
    uint64_t last_cost, last_coll;  /* the cumulative times of the last verdict */
} nsc_shed;

/* Parse a budget in percent ("1", "0.5"): 0 and *ppm set, or -1. "0" or
 * "off" turns the guard off (*ppm = 0). */
int nsc_shed_parse(const char *text, uint32_t *ppm);

/* A verdict needs this much collective time since the last one: a
 * collective's time is counted when it ends, its cost as its calls come, so a
 * heartbeat period alone holds a lumpy, noisy share (0 to 160 ms of
 * collectives in 10 ms periods of the ring job, its share 0.1 to 250 %). A
 * noisy window can only shed more, never restore (the job's share must be
 * low too), so the window is kept short: a short job gets enough verdicts. */
#define NSC_SHED_WINDOW_NS 5000000ull
/* The first verdict comes sooner: until it, every type is recorded at full
 * cost, and a whole window at a few percent would spend much of a short
 * job's budget before the guard said anything. */
#define NSC_SHED_FIRST_WINDOW_NS 2000000ull

/* One period: cost_ns and coll_ns are cumulative (the plugin's own time and
 * its collectives' time). Until NSC_SHED_WINDOW_NS of collective time came
 * since the last verdict (NSC_SHED_FIRST_WINDOW_NS before the first),
 * nothing changes. Then, with the window's or the
 * whole job's share so far over budget, one more type is shed per factor 1.4
 * of the larger overshoot (the budget bounds the job's share: the ramp before
 * shedding is paid back); with both under half the budget, the last one shed
 * comes back. Returns 1 when the mask changed, else 0. */
int nsc_shed_step(nsc_shed *s, uint64_t cost_ns, uint64_t coll_ns);

#endif
