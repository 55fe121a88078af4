/* clockcause.c: host models' errors narrowed by causality (clockcause.h). */
#include "clockcause.h"

#include <math.h>
#include <stdlib.h>

/* d[i][j]: the least known upper bound on e_j - e_i (an edge i -> j). */
static double *at(const nsc_clock_cause *cc, size_t i, size_t j)
{
    return &cc->d[i * (cc->n + 1) + j];
}

int nsc_clock_cause_init(nsc_clock_cause *cc, size_t n)
{
    *cc = (nsc_clock_cause){.n = n};
    if (n > NSC_CLOCK_CAUSE_MAX_HOSTS)
        return NSC_CLOCK_CAUSE_EHOSTS;
    cc->lo = calloc(n ? n : 1, sizeof *cc->lo);
    cc->hi = calloc(n ? n : 1, sizeof *cc->hi);
    cc->d = malloc((n + 1) * (n + 1) * sizeof *cc->d);
    if (!cc->lo || !cc->hi || !cc->d) {
        nsc_clock_cause_free(cc);
        return NSC_CLOCK_CAUSE_ENOMEM;
    }
    for (size_t i = 0; i <= n; i++)
        for (size_t j = 0; j <= n; j++)
            *at(cc, i, j) = i == j ? 0 : INFINITY;
    for (size_t h = 0; h < n; h++)
        nsc_clock_cause_bound(cc, h, INFINITY);
    return NSC_CLOCK_CAUSE_OK;
}

void nsc_clock_cause_free(nsc_clock_cause *cc)
{
    free(cc->lo);
    free(cc->hi);
    free(cc->d);
    *cc = (nsc_clock_cause){0};
}

void nsc_clock_cause_bound(nsc_clock_cause *cc, size_t h, double bound)
{
    cc->lo[h] = -bound;
    cc->hi[h] = bound;
    *at(cc, cc->n, h) = bound;  /* e_h - 0 <= bound */
    *at(cc, h, cc->n) = bound;  /* 0 - e_h <= bound */
}

void nsc_clock_cause_after(nsc_clock_cause *cc, size_t a, uint64_t ta, size_t b, uint64_t tb, double slack)
{
    double u = (double)(int64_t)(ta - tb) + slack;
    if (a == b || u >= *at(cc, b, a))
        return;
    *at(cc, b, a) = u;  /* e_a - e_b <= u */
    cc->nobs++;
}

/* Floyd-Warshall over the hosts and the reference: a negative diagonal is
 * a cycle of constraints that cannot all hold. */
int nsc_clock_cause_solve(nsc_clock_cause *cc)
{
    size_t m = cc->n + 1;
    for (size_t k = 0; k < m; k++)
        for (size_t i = 0; i < m; i++) {
            double ik = *at(cc, i, k);
            if (isinf(ik))
                continue;
            for (size_t j = 0; j < m; j++)
                if (ik + *at(cc, k, j) < *at(cc, i, j))
                    *at(cc, i, j) = ik + *at(cc, k, j);
        }
    for (size_t i = 0; i < m; i++)
        if (*at(cc, i, i) < 0)
            return NSC_CLOCK_CAUSE_ECONTRADICT;
    for (size_t h = 0; h < cc->n; h++) {
        cc->hi[h] = *at(cc, cc->n, h);
        cc->lo[h] = -*at(cc, h, cc->n);
    }
    return NSC_CLOCK_CAUSE_OK;
}
