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
/* The status's entry for the job named `job`, or NULL. */
const nsc_json *nsc_status_job(const nsc_json *status, const char *job);

#endif
