/* vposts.h: which of a job's verdicts this collector posts to the webhook,
 * and when (docs/alerts.md, "Webhook").
 *
 * Owns one job's verdicts as its root-cause passes found them: each one's
 * kind and place (what makes it the same verdict from pass to pass, not its
 * figures or text), the problem as last found, since when every pass held
 * it, and whether it has settled and was posted. A verdict has settled once
 * every pass over settle_ns held it: one that a pass formed on a partial
 * view (a share of the job still on its way: another collector's rows or
 * live snapshot, an agent's backlog) is gone before then, replaced by the
 * right one, and one that goes before it has settled starts again from
 * nothing. The job's announcer posts every settled verdict it has not
 * posted, whether the passes still hold it or not: one that takes a job
 * over posts what it settled while the job was another's, a hang that
 * ended meanwhile too. Each verdict is posted once by this collector.
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
} nsc_vposts;

/* Hands verdict p (as last found), found at found_ns (wall clock: the first
 * pass of those that settled it), to the webhook:
 * 0 when handed over (then it counts as posted), -1 when not (out of
 * memory: it is offered again at the next pass). */
typedef int (*nsc_vposts_post_fn)(void *arg, const nsc_problem *p, int64_t found_ns);

/* 1 when a and b are the same verdict: the same kind and place. */
int nsc_vposts_same(const nsc_problem *a, const nsc_problem *b);

/* One pass over the job's problems p[0..n) at now_ns (monotonic) and
 * wall_ns; settle_ns: how long every pass must hold a verdict before it
 * is posted; announces: this collector posts the job's verdicts now. The
 * verdicts found for the first time go into fresh (room for n: pointers
 * into p, *nfresh of them); each settled verdict not posted yet, when
 * announces, to post(arg, ...).
 * 0, or -1 out of memory (a verdict not recorded is found again at the
 * next pass). */
int nsc_vposts_pass(nsc_vposts *v, const nsc_problem *p, size_t n, uint64_t now_ns, int64_t wall_ns, uint64_t settle_ns,
                    int announces, const nsc_problem **fresh, size_t *nfresh, nsc_vposts_post_fn post, void *arg);

/* When (monotonic) a verdict the passes hold becomes one to post, the
 * earliest; 0: none waits. */
uint64_t nsc_vposts_due(const nsc_vposts *v, uint64_t settle_ns);

void nsc_vposts_free(nsc_vposts *v);

#endif
