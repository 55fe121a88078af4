/* shed.c: the self-cost guard's shedding order and hysteresis (see shed.h). */
#include "shed.h"

#include <stdlib.h>
#include <string.h>

#include "event.h"

/* Children before their parents: a shed parent's children are shed already. */
const uint8_t nsc_shed_order[] = {
    NSC_T_PROXY_STEP,  NSC_T_NET_PLUGIN, NSC_T_KERNEL_PHASE, NSC_T_KERNEL_CH,
    NSC_T_PROXY_CTRL,  NSC_T_PROXY_OP,   NSC_T_CE_SYNC,     NSC_T_CE_BATCH,
    NSC_T_KERNEL_LAUNCH, NSC_T_GROUP_API, NSC_T_P2P_API,    NSC_T_COLL_API,
    NSC_T_CE_COLL};
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

int nsc_shed_step(nsc_shed *s, uint64_t cost_ns, uint64_t coll_ns)
{
    uint64_t cost = cost_ns - s->last_cost, coll = coll_ns - s->last_coll;
    s->last_cost = cost_ns;
    s->last_coll = coll_ns;
    if (!s->budget_ppm || !coll)
        return 0;
    /* cost / coll against budget_ppm / 1e6, in integers: no overflow while
     * a period's cost stays under 5 hours */
    uint64_t scaled = cost * 1000000u;
    if (scaled > coll * s->budget_ppm && s->depth < nsc_shed_order_len)
        s->mask |= 1u << nsc_shed_order[s->depth++];
    else if (scaled * 2 < coll * s->budget_ppm && s->depth > 0)
        s->mask &= ~(1u << nsc_shed_order[--s->depth]);
    else
        return 0;
    s->changes++;
    return 1;
}
