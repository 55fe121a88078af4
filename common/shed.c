/* shed.c: the self-cost guard's shedding order and hysteresis (see shed.h). */
#include "shed.h"

#include <stdlib.h>
#include <string.h>

#include "event.h"

/* Children before their parents: a shed parent's children are shed already.
 * Group last: it only groups the collectives, which stay. */
const uint8_t nsc_shed_order[] = {
    NSC_T_PROXY_STEP,  NSC_T_NET_PLUGIN, NSC_T_KERNEL_PHASE, NSC_T_KERNEL_CH,
    NSC_T_PROXY_CTRL,  NSC_T_PROXY_OP,   NSC_T_CE_SYNC,     NSC_T_CE_BATCH,
    NSC_T_KERNEL_LAUNCH, NSC_T_GROUP_API, NSC_T_P2P_API,    NSC_T_COLL_API,
    NSC_T_CE_COLL,     NSC_T_GROUP};
const unsigned nsc_shed_order_len = sizeof nsc_shed_order / sizeof nsc_shed_order[0];

int nsc_shed_parse(const char *text, uint32_t *ppm)
{
    if (strcmp(text, "off") == 0) {
        *ppm = 0;
        return 0;
    }
    char *end;
    double pct = strtod(text, &end);
    if (end == text || *end || !(pct >= 0.0 && pct <= 100.0))
        return -1;
    *ppm = (uint32_t)(pct * 10000.0 + 0.5);
    return 0;
}

/* a/b against budget_ppm / 1e6 in integers: a * 1e6 / b, no overflow while a
 * stays under 5 hours; UINT64_MAX for b == 0 */
static uint64_t ratio_ppm(uint64_t a, uint64_t b)
{
    return b ? a * 1000000u / b : UINT64_MAX;
}

int nsc_shed_step(nsc_shed *s, uint64_t cost_ns, uint64_t coll_ns)
{
    uint64_t cost = cost_ns - s->last_cost, coll = coll_ns - s->last_coll;
    if (!s->budget_ppm || coll < (s->last_coll ? NSC_SHED_WINDOW_NS : NSC_SHED_FIRST_WINDOW_NS))
        return 0;
    s->last_cost = cost_ns;
    s->last_coll = coll_ns;
    uint64_t now = ratio_ppm(cost, coll), job = ratio_ppm(cost_ns, coll_ns);
    unsigned depth = s->depth;
    /* The budget bounds the whole job's share: the window's or the job's so
     * far (the ramp before shedding, a type back too early) over it sheds,
     * one type per factor 1.4 of the overshoot (a short job has few verdicts
     * to get under it); a type comes back only when both are under half of it. */
    for (uint64_t r = now > job ? now : job; r > s->budget_ppm && depth < nsc_shed_order_len; r = r * 5 / 7)
        s->mask |= 1u << nsc_shed_order[depth++];
    if (depth == s->depth && now * 2 < s->budget_ppm && job * 2 < s->budget_ppm && depth > 0)
        s->mask &= ~(1u << nsc_shed_order[--depth]);
    if (depth == s->depth)
        return 0;
    s->depth = depth;
    s->changes++;
    return 1;
}
