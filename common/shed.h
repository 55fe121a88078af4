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
 * needed. Group, Coll and P2p are never shed: they are the job's collectives,
 * what the cost is measured against and what live state follows. */
extern const uint8_t nsc_shed_order[];
extern const unsigned nsc_shed_order_len;

typedef struct nsc_shed {
    uint32_t budget_ppm;   /* budget in millionths of collective time; 0: off */
    uint32_t depth;        /* the first depth types of nsc_shed_order are shed */
    uint32_t mask;         /* those types, as 1 << type */
    uint64_t changes;      /* how many times mask changed */
    uint64_t last_cost, last_coll;  /* the cumulative times of the last step */
} nsc_shed;

/* Parse a budget in percent ("1", "0.5"): 0 and *ppm set, or -1. "0" or
 * "off" turns the guard off (*ppm = 0). */
int nsc_shed_parse(const char *text, uint32_t *ppm);

/* One period: cost_ns and coll_ns are cumulative (the plugin's own time and
 * its collectives' time). Over budget, one more type is shed; under half the
 * budget, the last one shed comes back; a period without collective time
 * changes nothing. Returns 1 when the mask changed, else 0. */
int nsc_shed_step(nsc_shed *s, uint64_t cost_ns, uint64_t coll_ns);

#endif
