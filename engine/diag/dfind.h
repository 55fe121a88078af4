/* dfind.h: what every analysis of the diag library calls and that calls none
 * of them back (dfind.c): adding a problem to the findings (and dropping
 * those taken in by another) and reading a
 * number member of a JSON document. dint.h includes it for the analyses;
 * statusdoc.c, which needs only the numbers, includes it alone.
 */
#ifndef NCCLSCOPE_DIAG_DFIND_H
#define NCCLSCOPE_DIAG_DFIND_H

#include "diag.h"

/* Add a problem (rank -1 if none); returns it for the caller to fill in the
 * rest of its place and figures, or NULL when the list is full (counted). */
nsc_problem *nsc_diag_add(nsc_findings *f, int severity, const char *kind, const char *comm, uint64_t seq,
                          int64_t rank, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Drop the problems another one took in (their kind emptied), keeping the
 * order of the rest. */
void nsc_diag_compact(nsc_findings *f);

/* p (if added) began at t_ns on the job's collectives' time line: set
 * from the job's wall clock, when its collectives' header gave one. */
void nsc_diag_began_ns(nsc_problem *p, const nsc_findings *f, uint64_t t_ns);

/* out: q with the seq span seqs ("" for none: q alone), for the endpoints
 * that take seq (collectives, ledger); 0, or -1 when it does not fit. */
int nsc_diag_qs_seqs(char *out, size_t cap, const char *q, const char *seqs);

/* A number member (0 if absent) and one that may be absent (none). */
uint64_t nsc_diag_num(const nsc_json *o, const char *key);
int64_t nsc_diag_num_or(const nsc_json *o, const char *key, int64_t none);

#endif
