/* sim.h: synthetic hosts, probes and GPU timers with known truth.
 *
 * Owns the ground truth the clock tests and the store benchmark measure
 * against: a host clock with an offset, a drift and an optional step relative
 * to the reference (collector) clock, a network with jitter and asymmetric
 * delay spikes, and a GPU timer observed by a polling CPU thread.
 * Times inside are "t": nanoseconds elapsed on the reference clock.
 */
#ifndef NCCLSCOPE_TEST_SIM_H
#define NCCLSCOPE_TEST_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"

typedef struct nsc_sim_rng {
    uint64_t s;
} nsc_sim_rng;

uint64_t nsc_sim_next(nsc_sim_rng *r);
double nsc_sim_uniform(nsc_sim_rng *r);           /* [0, 1) */
double nsc_sim_range(nsc_sim_rng *r, double lo, double hi);
double nsc_sim_exp(nsc_sim_rng *r, double mean);

typedef struct nsc_sim_host {
    uint64_t ref0;   /* reference time at t = 0 */
    uint64_t host0;  /* host time at t = 0 */
    double drift;    /* host runs (1 + drift) times as fast as the reference */
    int64_t step_ns; /* the host clock jumps by this at t = step_at (0: none) */
    double step_at;
} nsc_sim_host;

typedef struct nsc_sim_net {
    double base_ns;       /* one-way delay floor, both directions */
    double jitter_ns;     /* mean of the exponential extra delay */
    double outlier_rate;  /* chance per direction of a spike */
    double outlier_min_ns, outlier_max_ns;
} nsc_sim_net;

/* The loopback-to-LAN network the clock tests and the benchmark use: 20 us
 * floor, 5 us mean jitter, 5% spikes of 0.2 to 5 ms. */
extern const nsc_sim_net nsc_sim_lan;

/* A host with offset in [-1 s, 1 s] and drift in [-100, 100] ppm. */
nsc_sim_host nsc_sim_host_random(nsc_sim_rng *r);
uint64_t nsc_sim_host_time(const nsc_sim_host *h, double t);
uint64_t nsc_sim_ref_time(const nsc_sim_host *h, double t);
void nsc_sim_probe(const nsc_sim_host *h, const nsc_sim_net *n, nsc_sim_rng *r, double t,
                   nsc_clock_sample *s);

/* Feed probes every period_ns over [0, span_ns) into m, then flush. */
int nsc_sim_feed(nsc_clock_model *m, const nsc_sim_host *h, const nsc_sim_net *n,
                 nsc_sim_rng *r, double period_ns, double span_ns);

/* A GPU timer: ptimer(t) = gpu0 + t * (1 + drift). */
typedef struct nsc_sim_gpu {
    uint64_t gpu0;
    double drift;
} nsc_sim_gpu;

uint64_t nsc_sim_ptimer(const nsc_sim_gpu *g, double t);
/* A GPU timer at a random epoch and a drift in [-100, 100] ppm. */
nsc_sim_gpu nsc_sim_gpu_random(nsc_sim_rng *r);

/* The q-quantile (0..1) of v[0..n); sorts v. */
double nsc_sim_quantile(double *v, size_t n, double q);

#endif
