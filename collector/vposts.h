/* vposts.h: which of a job's verdicts this collector posts to the webhook,
 * and when (docs/alerts.md, "Webhook").
 *
 * Owns one job's verdicts as its root-cause passes found them: each one's
 * kind and place (what makes it the same verdict from pass to pass, not its
 * figures or text), the problem as last found and whether this collector
 * posted it. The caller runs a pass over the job's problems and learns
 * which verdicts are new (the verdicts' fetches want them) and which to
 * post now.
 */
#ifndef NCCLSCOPE_COLLECTOR_VPOSTS_H
#define NCCLSCOPE_COLLECTOR_VPOSTS_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"

typedef struct nsc_vpost nsc_vpost;

/* A job's verdicts; all zero: none yet. */
typedef struct nsc_vposts {
    nsc_vpost *v;
    size_t n, cap;
    int passed, announced;  /* a pass ran; this collector announced the job at the last */
} nsc_vposts;

/* Hands verdict p, first found at found_ns (wall clock), to the webhook:
 * 0 when handed over (then it counts as posted), -1 when not (out of
 * memory: it is offered again at the next pass). */
typedef int (*nsc_vposts_post_fn)(void *arg, const nsc_problem *p, int64_t found_ns);

/* 1 when a and b are the same verdict: the same kind and place. */
int nsc_vposts_same(const nsc_problem *a, const nsc_problem *b);

/* One pass over the job's problems p[0..n) at now_ns (monotonic) and
 * wall_ns; announces: this collector posts the job's verdicts now. The
 * verdicts found for the first time go into fresh (room for n: pointers
 * into p, *nfresh of them); each verdict to post now to post(arg, ...).
 * 0, or -1 out of memory (a verdict not recorded is found again at the
 * next pass). */
int nsc_vposts_pass(nsc_vposts *v, const nsc_problem *p, size_t n, uint64_t now_ns, int64_t wall_ns, uint64_t settle_ns,
                    int announces, const nsc_problem **fresh, size_t *nfresh, nsc_vposts_post_fn post, void *arg);

/* When (monotonic) a verdict the passes hold becomes one to post, the
 * earliest; 0: none waits. */
uint64_t nsc_vposts_due(const nsc_vposts *v, uint64_t settle_ns);

void nsc_vposts_free(nsc_vposts *v);

#endif
