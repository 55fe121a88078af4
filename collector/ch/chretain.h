/* chretain.h: retention of the ClickHouse store (retain_age_s).
 *
 * Owns deleting old jobs from ClickHouse: a job none of whose rows was
 * inserted for retain_age_s (the `jobs` table, chrows.h, holds each job's
 * newest insert by wall clock) is deleted from every table that has a job
 * column on every shard, by ALTER TABLE ... DELETE, a mutation ClickHouse
 * carries out in the background (the rows go some time after the pass).
 * Every collector of a store may run it: deleting a job twice deletes
 * nothing more. A pass runs on the live-state thread (chlive.h), never on
 * the writer, ingest or HTTP thread.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHRETAIN_H
#define NCCLSCOPE_COLLECTOR_CHRETAIN_H

#include <stdint.h>

#include "chparts.h"
#include "cstate.h"

/* At most this many jobs are deleted per pass (the next pass takes more). */
#define NSC_CHRETAIN_JOBS_MAX 64

/* How often a pass is due: 0 without retention (retain_age_s 0). */
uint64_t nsc_chretain_period_ns(const nsc_collector *c);

/* Delete the jobs older than retain_age_s at wall clock now_ns (ns): their
 * number, or -1 with err set when ClickHouse failed (the next pass tries
 * again). */
int nsc_chretain_pass(nsc_chback *b, uint64_t now_ns, char *err, size_t errcap);

#endif
