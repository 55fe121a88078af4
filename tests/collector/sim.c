/* sim.c: synthetic clocks and networks with known truth (see sim.h). */
#include "sim.h"
#include "order.h"

#include <math.h>
#include <stdlib.h>

uint64_t nsc_sim_next(nsc_sim_rng *r)
{
    /* splitmix64: deterministic, seedable, good enough for test data */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double nsc_sim_uniform(nsc_sim_rng *r)
{
    return (double)(nsc_sim_next(r) >> 11) * 0x1.0p-53;
}

double nsc_sim_range(nsc_sim_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * nsc_sim_uniform(r);
}

double nsc_sim_exp(nsc_sim_rng *r, double mean)
{
    return -mean * log(1.0 - nsc_sim_uniform(r));
}

const nsc_sim_net nsc_sim_lan = {20000, 5000, 0.05, 200000, 5000000};

nsc_sim_host nsc_sim_host_random(nsc_sim_rng *r)
{
    nsc_sim_host h = {0};
    h.ref0 = 1700000000000000000ull + (nsc_sim_next(r) % 1000000000000ull);
    /* Host uptime and the reference epoch are unrelated; on top of that the
     * host is off by up to 1 s either way. */
    h.host0 = 1000000000000ull + (uint64_t)nsc_sim_range(r, 0, 1e12) +
              (uint64_t)(int64_t)nsc_sim_range(r, -1e9, 1e9);
    h.drift = nsc_sim_range(r, -100e-6, 100e-6);
    return h;
}

uint64_t nsc_sim_host_time(const nsc_sim_host *h, double t)
{
    int64_t step = h->step_ns && t >= h->step_at ? h->step_ns : 0;
    return h->host0 + (uint64_t)llround(t * (1 + h->drift)) + (uint64_t)step;
}

uint64_t nsc_sim_ref_time(const nsc_sim_host *h, double t)
{
    return h->ref0 + (uint64_t)llround(t);
}

static double one_way(const nsc_sim_net *n, nsc_sim_rng *r)
{
    double d = n->base_ns + nsc_sim_exp(r, n->jitter_ns);
    if (nsc_sim_uniform(r) < n->outlier_rate)
        d += nsc_sim_range(r, n->outlier_min_ns, n->outlier_max_ns);
    return d;
}

void nsc_sim_probe(const nsc_sim_host *h, const nsc_sim_net *n, nsc_sim_rng *r, double t,
                   nsc_clock_sample *s)
{
    double out = one_way(n, r), back = one_way(n, r), service = 5000;
    s->t1 = nsc_sim_host_time(h, t);
    s->t2 = nsc_sim_ref_time(h, t + out);
    s->t3 = nsc_sim_ref_time(h, t + out + service);
    s->t4 = nsc_sim_host_time(h, t + out + service + back);
}

int nsc_sim_feed(nsc_clock_model *m, const nsc_sim_host *h, const nsc_sim_net *n,
                 nsc_sim_rng *r, double period_ns, double span_ns)
{
    for (double t = 0; t < span_ns; t += period_ns) {
        nsc_clock_sample s;
        nsc_sim_probe(h, n, r, t, &s);
        int rc = nsc_clock_add(m, &s);
        if (rc)
            return rc;
    }
    return nsc_clock_flush(m);
}

uint64_t nsc_sim_ptimer(const nsc_sim_gpu *g, double t)
{
    return g->gpu0 + (uint64_t)llround(t * (1 + g->drift));
}

nsc_sim_gpu nsc_sim_gpu_random(nsc_sim_rng *r)
{
    nsc_sim_gpu g;
    g.gpu0 = 1700000000000000000ull + nsc_sim_next(r) % 1000000000000ull;
    g.drift = nsc_sim_range(r, -100e-6, 100e-6);
    return g;
}

double nsc_sim_quantile(double *v, size_t n, double q)
{
    qsort(v, n, sizeof *v, nsc_cmp_double);
    size_t i = (size_t)ceil(q * (double)n);
    return v[i ? i - 1 : 0];
}
