/* out.h: what the agent writes to its spool.
 *
 * Owns the open agent-to-collector batch: one wire-format section per process
 * that has something to say (an nsc_enc over a growing buffer, header = that
 * process's identity), the lifecycle records, PXN aliases and ledger records
 * (one ledger batch per process, common/ledger.h) since the last flush; with
 * a detail ring, the raw records of each section go to the ring instead. A flush encodes them as one a2c batch with the spool's next sequence
 * number and stores it (or has it refused and counted by the spool), with
 * the marks of the plugin streams whose batches it holds, and then reports
 * those marks (for the acknowledgements to the plugins).
 */
#ifndef NCCLSCOPE_AGENT_OUT_H
#define NCCLSCOPE_AGENT_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "a2c.h"
#include "ledger.h"
#include "registry.h"
#include "ring.h"
#include "spool.h"

typedef struct nsc_out nsc_out;

typedef struct nsc_out_stats {
    uint64_t batches, events, records, bytes;  /* handed to the spool */
    uint64_t nomem;                            /* records lost to a failed allocation */
    uint64_t ledger_records, ledger_bytes;     /* ledger records handed to the spool, their batches' bytes */
    uint64_t raw_records;                      /* detail ring: records handed to it */
    uint64_t raw_lost;                         /* and those of batches the spool refused, not kept */
} nsc_out_stats;

/* After a flush stored or counted what waited: the streams it took. */
typedef void nsc_out_stored_fn(void *arg, const nsc_spool_mark *marks, size_t n);

nsc_out *nsc_out_new(const char *agent_id, const char *host, nsc_spool *spool, nsc_out_stored_fn *stored,
                     void *stored_arg);
void nsc_out_free(nsc_out *o);
/* Append one record to p's section. tag: an event type, or NSC_WIRE_TAG_*.
 * base_ns is the section's time base if this opens it. Returns 0 or -1 (no memory, counted). */
int nsc_out_add(nsc_out *o, nsc_reg_proc *p, unsigned tag, const void *rec, uint64_t base_ns);
/* Append the next record sp reads (see nsc_splice_copy), the same as
 * nsc_out_add of its decoded form without decoding and encoding it. */
int nsc_out_splice(nsc_out *o, nsc_reg_proc *p, nsc_splice *sp, uint64_t base_ns);
/* p's plugin stream has been taken up to p->next_seq: its mark goes with
 * p's section into the next flush. Returns 0 or -1 (no memory, counted). */
int nsc_out_mark(nsc_out *o, nsc_reg_proc *p, uint64_t base_ns);
/* A lifecycle record for p (its progress is copied now). */
int nsc_out_life(nsc_out *o, const nsc_reg_proc *p, uint8_t event, uint64_t ts_ns);
int nsc_out_alias(nsc_out *o, const nsc_a2c_alias *a);
/* A ledger record of p (its edges and the texts of its strings are copied). */
int nsc_out_ledger(nsc_out *o, const nsc_reg_proc *p, const nsc_ledger_rec *r);
/* About how many bytes wait to be flushed (0: nothing). */
size_t nsc_out_waiting(const nsc_out *o);
/* Store what waits as one spool entry (nothing if nothing waits).
 * Returns 0 stored or empty, 1 refused by the spool, -1 no memory. */
int nsc_out_flush(nsc_out *o, uint64_t now_ns);
void nsc_out_stats_get(const nsc_out *o, nsc_out_stats *st);
/* detail = on-demand: from now_ns on the raw records (events, states,
 * completions) of each flush go to ring, under the flushed batch's seq, and
 * the batch keeps each section's definitions and counters. Set before the
 * first record. */
void nsc_out_set_ring(nsc_out *o, nsc_ring *ring, uint64_t now_ns);

#endif
