/* dedupe.h: which batch sequences of each agent are committed.
 *
 * Owns, per agent id and epoch, a sorted set of disjoint ranges [lo, hi) of
 * batch sequences; agents send dense sequences, so an agent epoch needs one
 * range in the common case and a few when batches commit out of order. The
 * epoch names the agent's spool: an agent whose spool was deleted starts at
 * sequence 0 again in a new epoch, and its batches are new, not duplicates. The writer marks a
 * batch when it puts it, writes the agent's ranges in the same transaction
 * (nsc_store_put_agent_seqs) and reloads everything from the store when a
 * commit fails, so memory and store never disagree about a committed batch;
 * while a reload fails, the set answers that nothing may be stored.
 * A set never holds more than NSC_DEDUPE_MAX_RANGES ranges: a batch that
 * would open one more gap is refused (NSC_DEDUPE_FULL), so the writer neither
 * stores nor acknowledges it and the agent sends it again later; batches that
 * fill or extend a range are always taken. No sequence is ever marked that
 * was not committed.
 */
#ifndef NCCLSCOPE_COLLECTOR_DEDUPE_H
#define NCCLSCOPE_COLLECTOR_DEDUPE_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define NSC_DEDUPE_MAX_RANGES 1024

typedef struct nsc_dedupe nsc_dedupe;

nsc_dedupe *nsc_dedupe_new(void);
void nsc_dedupe_free(nsc_dedupe *d);
/* Replace the state with the store's (every agent's ranges). Returns 0 or a
 * store error; after an error the state is unknown (nsc_dedupe_known 0):
 * nothing may be marked, every batch gets NSC_DEDUPE_UNKNOWN, until a load
 * works. A partly loaded or empty set would let batches be stored twice. */
int nsc_dedupe_load(nsc_dedupe *d, nsc_store *st);
/* 0 after a failed load, until a load works; else 1. */
int nsc_dedupe_known(const nsc_dedupe *d);

/* What (agent, epoch, seq) is to the set, in one look: the writer's only
 * question before it stores a batch. */
#define NSC_DEDUPE_NEW 0        /* not marked, and marking it fits: store it */
#define NSC_DEDUPE_FULL 1       /* not marked, and it would need a range more than NSC_DEDUPE_MAX_RANGES */
#define NSC_DEDUPE_UNKNOWN 2    /* the last load failed: nothing may be stored */
#define NSC_DEDUPE_DUPLICATE 3  /* marked: committed already (or in the open transaction) */
int nsc_dedupe_classify(const nsc_dedupe *d, const char *agent, uint64_t epoch, uint64_t seq);
/* Mark (agent, epoch, seq); that agent epoch becomes dirty. 0 (marked now or
 * before), NSC_DEDUPE_FULL or NSC_DEDUPE_UNKNOWN (nothing marked, see
 * nsc_dedupe_classify) or -1 (no memory). */
int nsc_dedupe_mark(nsc_dedupe *d, const char *agent, uint64_t epoch, uint64_t seq);
/* Write every dirty agent epoch's ranges into the open transaction and clear the
 * dirty marks. Returns 0 or a store error. */
int nsc_dedupe_put_dirty(nsc_dedupe *d, nsc_store *st);
/* Agent epochs known. */
size_t nsc_dedupe_agents(const nsc_dedupe *d);

#endif
