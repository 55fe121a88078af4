/* clockcause.h: what causality between hosts says about their clock models.
 *
 * Owns the narrowing of several host models' errors by one-sided
 * observations. Each host's model puts its error e_h (aligned - true, at one
 * reference time) within [-bound, +bound] (the probes' interval, clock.h).
 * An event on host a that cannot have happened before an event on host b
 * (a ring collective's kernel end after another rank's kernel start) says
 * e_a - e_b <= t_a - t_b + slack, t aligned, slack the times' own conversion
 * bounds. Together these are difference constraints; their tightest
 * consequence for each e_h (shortest paths over the hosts and the
 * reference, whose error is 0 by definition) is the narrowed interval. A
 * negative cycle means the observations and the probes cannot all hold: that
 * is reported, and nothing is narrowed. docs/collector-clock.md, "Clock model".
 */
#ifndef NCCLSCOPE_CLOCKCAUSE_H
#define NCCLSCOPE_CLOCKCAUSE_H

#include <stddef.h>
#include <stdint.h>

/* More hosts than this are not narrowed: the solve is cubic in them. */
#define NSC_CLOCK_CAUSE_MAX_HOSTS 256

enum nsc_clock_cause_err {
    NSC_CLOCK_CAUSE_OK = 0,
    NSC_CLOCK_CAUSE_ENOMEM = -1,
    NSC_CLOCK_CAUSE_EHOSTS = -2,     /* more than NSC_CLOCK_CAUSE_MAX_HOSTS */
    NSC_CLOCK_CAUSE_ECONTRADICT = -3 /* the observations contradict the probes' intervals */
};

typedef struct nsc_clock_cause {
    size_t n;
    double *lo, *hi;   /* per host: its error's interval, ns (set, then narrowed by solve) */
    double *d;         /* (n + 1)^2 shortest-path matrix; node n is the reference */
    uint64_t nobs;     /* observations that were tighter than what was known */
} nsc_clock_cause;

/* n hosts, each with the interval [-bound, +bound] until set otherwise. */
int nsc_clock_cause_init(nsc_clock_cause *cc, size_t n);
void nsc_clock_cause_free(nsc_clock_cause *cc);
/* Host h's probe interval: its error is within [-bound, +bound]. */
void nsc_clock_cause_bound(nsc_clock_cause *cc, size_t h, double bound);
/* An event on host a at aligned time ta did not happen before an event on
 * host b at aligned time tb, each aligned time's own conversion error (GPU
 * line, counter) within slack together: e_a - e_b <= ta - tb + slack. */
void nsc_clock_cause_after(nsc_clock_cause *cc, size_t a, uint64_t ta, size_t b, uint64_t tb, double slack);
/* Narrow every host's interval by all the observations. 0, or
 * NSC_CLOCK_CAUSE_ECONTRADICT with the intervals left as the probes gave. */
int nsc_clock_cause_solve(nsc_clock_cause *cc);

#endif
