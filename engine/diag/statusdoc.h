/* statusdoc.h: reading a /api/v1/status document (docs/api.md), for the
 * analysis (dead ranks) and the CLI's status and watch. */
#ifndef NCCLSCOPE_DIAG_STATUSDOC_H
#define NCCLSCOPE_DIAG_STATUSDOC_H

#include <stdint.h>

#include "json.h"

/* The process entry of (host, pid), or NULL. */
const nsc_json *nsc_status_process(const nsc_json *status, const char *host, uint64_t pid);
/* 1 if one of the rank's functions is below the communicator's highest seq
 * (that function, its seq and the highest), else 0. */
int nsc_status_rank_behind(const nsc_json *comm, const nsc_json *rank, const char **func, uint64_t *seq,
                           uint64_t *max);
/* 1 if the rank has no collective while the communicator ran some: the
 * first function the communicator ran and its highest seq, else 0. */
int nsc_status_rank_unstarted(const nsc_json *comm, const nsc_json *rank, const char **func, uint64_t *max);
/* The status's entry for the job named `job`, or NULL. */
const nsc_json *nsc_status_job(const nsc_json *status, const char *job);
/* The highest seq of any function of communicator comm (its id) in job, 0
 * when the status does not list it. */
uint64_t nsc_status_comm_max_seq(const nsc_json *status, const char *job, const char *comm);
/* What the live state knows of the process of rank `rank` of communicator
 * comm (its id) in job: "alive", "alive until T", "dead since T (why)",
 * "silent since T" (docs/api.md), or "unknown". */
const char *nsc_status_rank_process(const nsc_json *status, const char *job, const char *comm, int64_t rank);

#endif
