/* dint.h: what the files of the analysis share (diag.h is what others see).
 * diagnose.c finds what the collectives and the live state say directly;
 * rootcause.c (with rc*.c, rcint.h) adds, per communicator, why a rank is late, which link is
 * slow and where a stuck collective stopped. */
#ifndef NCCLSCOPE_DIAG_DINT_H
#define NCCLSCOPE_DIAG_DINT_H

#include "diag.h"

/* Add a problem (rank -1 if none); returns it for the caller to fill in the
 * rest of its place and figures, or NULL when the list is full (counted). */
nsc_problem *nsc_diag_add(nsc_findings *f, int severity, const char *kind, const char *comm, uint64_t seq,
                          int64_t rank, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Per communicator: who arrived last at each collective and why, from the
 * collectives' records as they stream by. */
nsc_rc_late *nsc_rc_late_new(int64_t nranks);
/* One collective record; the first one all ranks entered that never ended
 * is kept for nsc_rc_comm (where it stopped). */
void nsc_rc_late_add(nsc_rc_late *l, const nsc_json *coll);
void nsc_rc_late_free(nsc_rc_late *l);

/* Everything that needs the communicator's proxy events: the rank hosts, the
 * links' step times (slow links and NICs), where a stuck collective stopped;
 * then the late ranks, classified. qs: the job's query string. */
int nsc_rc_comm(nsc_findings *f, nsc_rc_late *l, const char *comm, const char *qs);

/* Late ranks followed across the communicators that share processes
 * (rcfollow.c): each communicator's ledger as it is checked, then the
 * late-rank problems of all: those whose own time explains them stand, one
 * verdict per process, the rest folded into their origin's as affected. */
typedef struct nsc_rc_follow nsc_rc_follow;
nsc_rc_follow *nsc_rc_follow_new(void);
int nsc_rc_follow_comm(nsc_findings *f, nsc_rc_follow *w, const char *comm, int64_t nranks, const char *qs);
int nsc_rc_follow_run(nsc_findings *f, nsc_rc_follow *w);
void nsc_rc_follow_free(nsc_rc_follow *w);

/* A number member (0 if absent) and one that may be absent (none). */
uint64_t nsc_diag_num(const nsc_json *o, const char *key);
int64_t nsc_diag_num_or(const nsc_json *o, const char *key, int64_t none);

#endif
