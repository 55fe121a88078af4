/* diagnose.h: the problems `ncclscope diagnose` reports, shared by
 * diagnose.c (what the collectives and the live state say directly) and
 * rootcause.c (why a rank is late, which link is slow, where a stuck
 * collective stopped).
 *
 * A problem has a kind (its cause class), a place (communicator, seq, rank,
 * peer, channel, step, hosts: each -1 or empty when it does not apply), a
 * one-line text that names the cause and the place, and its evidence figures
 * (JSON object members, written as they are by --json).
 */
#ifndef NCCLSCOPE_DIAGNOSE_H
#define NCCLSCOPE_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

#define NSC_DIAG_MAX_PROBLEMS 64

/* Most severe last: the report sorts by severity, highest first. */
enum nsc_diag_severity {
    NSC_SEV_DROPPED,
    NSC_SEV_LATE,        /* a rank late on its host or GPU: the others wait for it */
    NSC_SEV_SLOW_LINK,   /* a link or a NIC slower than the comparable ones */
    NSC_SEV_IN_FLIGHT,
    NSC_SEV_NEVER_JOINED,
    NSC_SEV_HUNG,
    NSC_SEV_LAGGING,
    NSC_SEV_STALL,       /* a rank stopped sending inside a collective */
    NSC_SEV_MISSING,
    NSC_SEV_DEAD,
    NSC_SEV_MISMATCH
};

typedef struct nsc_problem {
    int severity;
    char kind[24];
    char comm[24];
    uint64_t seq;                   /* the collective's seq (0 if none) */
    int64_t rank, peer, channel, step;  /* -1 if none */
    char hosts[2][64];              /* the host(s) of the place ("" if none) */
    size_t order;                   /* found in this order: the last tie-break */
    char text[320];
    char figures[320];              /* JSON members, "" for none */
} nsc_problem;

typedef struct nsc_rc_late nsc_rc_late;

typedef struct nsc_findings {
    nsc_cli_ctx *c;
    nsc_rc_late *late;  /* the communicator being checked */
    const char *only;  /* --comm: an id or a name */
    const char *comm;
    nsc_problem p[NSC_DIAG_MAX_PROBLEMS];
    size_t n, dropped;
    uint64_t collectives;
} nsc_findings;

/* Add a problem (rank -1 if none); returns it for the caller to fill in the
 * rest of its place and figures, or NULL when the list is full (counted). */
nsc_problem *nsc_diag_add(nsc_findings *f, int severity, const char *kind, const char *comm, uint64_t seq,
                          int64_t rank, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Every problem of the job (NULL: the collector's only or latest one), most
 * severe first; f->c set, f->only NULL or a communicator. `status` is the
 * collector's status document when the caller has it (hosts, for every
 * job), else NULL and it is fetched. Used by diagnose, by watch while a
 * communicator is stuck and by hosts. */
int nsc_diag_find(nsc_cli_ctx *c, const char *job, const nsc_json *status, nsc_findings *f);

/* ---- rootcause.c ---------------------------------------------------------- */

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

#endif
