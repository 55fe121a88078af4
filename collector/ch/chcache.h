/* chcache.h: jobs read back from ClickHouse, kept between queries.
 *
 * Owns the private LMDB stores that queries of a collector on ClickHouse
 * read (chquery.h): one per job, made by chread.h in a folder of the db
 * directory's tmp/, and kept after the query for the next ones while the
 * job in ClickHouse is unchanged. What a collector killed mid-query left
 * in tmp/ (its stores, an answer's file not unlinked yet) goes at start. Unchanged means the same fingerprint, a
 * small query of the job's batches rows and of the clock models
 * (nsc_chread_print): the writer inserts a flush's batches rows after its
 * records, so every section the fingerprint counts is complete in the
 * store loaded after it. A job that changed is loaded again into a new
 * store; the old one goes when its last reader lets it go. At most
 * ch_query_cache jobs are kept (the least recently used go first; 0: each
 * query loads its own and nothing is kept). A query that reads no ledger
 * (nsc_query_reads_ledger) takes a kept store with or without it, and
 * loads one without it (the ledger's records do not weigh on a timeline);
 * a query that reads the ledger takes one with it only, and its load
 * replaces one without. Thread-safe: query workers share it under one lock,
 * and load outside it.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHCACHE_H
#define NCCLSCOPE_COLLECTOR_CHCACHE_H

#include <event2/buffer.h>
#include <stddef.h>
#include <stdint.h>

#include "chstore.h"
#include "query.h"
#include "store.h"

struct nsc_collector;
typedef struct nsc_chcache nsc_chcache;
typedef struct nsc_chcache_job nsc_chcache_job;

/* NULL when out of memory. */
nsc_chcache *nsc_chcache_new(struct nsc_collector *c, const nsc_chstore *ch, size_t max_jobs);
/* Every store closed and removed; no job may be held. */
void nsc_chcache_free(nsc_chcache *cc);

/* The store of job ("" : an empty store, for a query over no job), loaded
 * from ClickHouse unless kept and unchanged, with its ledger unless ledger
 * is 0 (then a kept store with the ledger serves too); held until
 * nsc_chcache_let_go.
 * With a scope (a ledger-reading query's) that holds a record of its
 * communicator, a store of what it asks for alone (nsc_chread_job), loaded
 * each time and never kept; a scope without one reads the whole job (the
 * query answers from the raw events then, as from LMDB). A raw-event
 * scope (events set: a timeline's or p2p's window, comms' definitions) is
 * always loaded so, without the ledger. 0,
 * or an NSC_QUERY_* error with err. */
int nsc_chcache_hold(nsc_chcache *cc, const char *job, const nsc_query_scope *scope, int ledger,
                     nsc_chcache_job **out, char *err, size_t errcap);
nsc_store *nsc_chcache_store(const nsc_chcache_job *j);
/* Whether j's store holds its job's ledger (a scoped store: the scope's). */
int nsc_chcache_has_ledger(const nsc_chcache_job *j);
/* 1 when j holds what one query's scope asked for, not its whole job. */
int nsc_chcache_scoped(const nsc_chcache_job *j);
const char *nsc_chcache_name(const nsc_chcache_job *j);
void nsc_chcache_let_go(nsc_chcache *cc, nsc_chcache_job *j);

/* The folder of the stores, <db>/tmp (made if missing), for other scratch
 * files of queries: 0, or -1 when it cannot be made. */
int nsc_chcache_tmpdir(const nsc_chcache *cc, char *out, size_t cap);

/* The version of job in ClickHouse: a hash of its fingerprint, which a
 * hold compares (the same number: a load now gives the same store). 0
 * with *out, or -1 when it cannot be read. */
int nsc_chcache_version(const nsc_chcache *cc, const char *job, uint64_t *out);

/* Prometheus text: loads, hits, jobs kept. */
void nsc_chcache_render(nsc_chcache *cc, struct evbuffer *out);

#endif
