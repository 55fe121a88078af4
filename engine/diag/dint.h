/* dint.h: what the files of the analysis share (diag.h is what others see).
 * diagnose.c finds what the collectives and the live state say directly;
 * rootcause.c (with rc*.c, rcint.h) adds, per communicator, why a rank is late, which link is
 * slow and where a stuck collective stopped; dcarry.c keeps what a pass
 * carries to the next. Both add their problems and read
 * the documents' numbers through dfind.h, below them. */
#ifndef NCCLSCOPE_DIAG_DINT_H
#define NCCLSCOPE_DIAG_DINT_H

#include "dfind.h"

/* Per communicator: who arrived last at each collective and why, from the
 * collectives' records as they stream by. */
nsc_rc_late *nsc_rc_late_new(int64_t nranks);
/* One collective record; the first one all ranks entered that never ended
 * is kept for nsc_rc_comm (where it stopped). */
void nsc_rc_late_add(nsc_rc_late *l, const nsc_json *coll);
/* dst (as many ranks) becomes what src tallied: 0, or -1 when their ranks differ. */
int nsc_rc_late_copy(nsc_rc_late *dst, const nsc_rc_late *src);
void nsc_rc_late_free(nsc_rc_late *l);

/* The links a mark carries (diag.h): the send edges of the ledger's seqs
 * in span seqs of the communicator's query q added to *carried (made when
 * NULL), and their release. */
int nsc_rc_links_fold(nsc_findings *f, nsc_rc_links **carried, int64_t nranks, const char *q, const char *seqs);
void nsc_rc_links_free(nsc_rc_links *k);

/* Everything that needs the communicator's proxy events: the rank hosts, the
 * links' step times (slow links and NICs), where a stuck collective stopped;
 * then the late ranks, classified. qs: the job's query string. */
int nsc_rc_comm(nsc_findings *f, nsc_rc_late *l, const char *comm, const char *qs);

/* A slow NIC that one communicator could place only on either of two hosts
 * (its network links run between those two alone) is on the one of them
 * that another communicator's slow NIC names alone: that either-or problem
 * is dropped, the other stands; when every slow NIC is such an either-or
 * and one host is in all of them, not all the same pair, it is that host's:
 * the first names it alone, the others are dropped (rclinks.c). */
void nsc_rc_nic_narrow(nsc_findings *f);

/* Late ranks followed across the communicators that share processes
 * (rcfollow.c): each communicator's ledger as it is checked, then the
 * late-rank problems of all: those whose own time explains them stand, one
 * verdict per process, the rest folded into their origin's as affected. */
typedef struct nsc_rc_follow nsc_rc_follow;
nsc_rc_follow *nsc_rc_follow_new(void);
int nsc_rc_follow_comm(nsc_findings *f, nsc_rc_follow *w, const char *comm, int64_t nranks, const char *qs);
int nsc_rc_follow_run(nsc_findings *f, nsc_rc_follow *w);
void nsc_rc_follow_free(nsc_rc_follow *w);

/* What a pass carries between reads of a job (dcarry.c): the mark of a
 * communicator in the carry (added empty when new; NULL without memory); the
 * first seq a pass reads, from the last pass's settled point; the query q
 * of seqs [lo, hi] into out, read from lo - 1 for lo's previous kernel end;
 * the tallies of what went below seq lo since the last pass, folded into
 * the mark and copied into the pass's own (f->late, f->collectives). */
struct nsc_rc_mark *nsc_diag_carry_mark(nsc_rc_carry *s, const char *comm);
uint64_t nsc_diag_from_settled(const nsc_findings *f, const char *id, uint64_t lo);
int nsc_diag_with_previous(char *out, size_t cap, const char *q, uint64_t lo, uint64_t hi);
int nsc_diag_carry_late(nsc_findings *f, const char *q, uint64_t lo, int64_t nranks);

#endif
