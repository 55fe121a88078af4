/* chstore.h: the collector's ClickHouse store (--store clickhouse://...).
 *
 * Owns the connections to ClickHouse's HTTP interface (libcurl, kept-alive
 * handles: one for the queries, used by the writer thread only, and one per
 * shard, used by the store's inserter thread only; the tables are made at
 * start by chschema.h), and the rows waiting for their insert. The
 * writer puts batches (rows appended per table and shard, column by column:
 * chcols.h) and then starts their insert: per table that has rows, its rows
 * as one Native block in key order (chnative.h) posted to every shard at
 * once (INSERT ... FORMAT Native), on the inserter thread while the writer
 * puts the next batches' rows (two generations of rows: one filling, one
 * being inserted). nsc_chstore_insert_wait returns 0 only when ClickHouse
 * acknowledged every insert, so the writer may then acknowledge the batches
 * of those rows; after a failure the rows are dropped and the agents send
 * those batches again (a repeated row folds into the first, see chrows.h).
 *
 * URL: clickhouse://HOST:PORT/DB[?cluster=NAME], PORT the HTTP port (8123).
 * shards: comma separated HOST:PORT HTTP addresses of the shards. The
 * collector creates DB.T_local on each and inserts there itself, placing a
 * process's rows by a hash of (job, host, pid): the same batch always lands on
 * the same shard. Without shards the store's server is the one shard. With a
 * cluster (which needs shards) it also makes DB.T on the store's server, a
 * Distributed table over cluster NAME (the server's remote_servers), for
 * reading the whole cluster.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHSTORE_H
#define NCCLSCOPE_COLLECTOR_CHSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "chconn.h"
#include "clock.h"
#include "store.h"

#define NSC_CH_PREFIX "clickhouse://"
#define NSC_CHSTORE_SHARDS_MAX 64

typedef struct nsc_chstore nsc_chstore;

/* Parse url, create the database and the tables (IF NOT EXISTS), reaching
 * every server as conn says (copied). Returns 0, or -1 after printing why to
 * stderr. */
int nsc_chstore_open(const char *url, const char *shards, const nsc_chconn *conn, nsc_chstore **out);
void nsc_chstore_close(nsc_chstore *ch);

/* Rows of one section of batch (agent, epoch, seq). */
void nsc_chstore_put(nsc_chstore *ch, const char *agent, uint64_t epoch, uint64_t seq, uint32_t section,
                     const nsc_store_batch *b);
/* The index-th ledger batch of batch (agent, epoch, seq), of process p, as
 * it travelled (data, len) and decoded (b). */
void nsc_chstore_put_ledger(nsc_chstore *ch, const char *agent, uint64_t epoch, uint64_t seq, uint32_t index,
                            const nsc_proc *p, const void *data, size_t len, const nsc_ledger_batch *b);
/* The index-th lifecycle record of batch (agent, epoch, seq). */
void nsc_chstore_put_life(nsc_chstore *ch, const char *agent, uint64_t epoch, uint64_t seq, uint32_t index,
                          const nsc_store_life *l);
/* 0, or NSC_STORE_ENOMEM when the rows could not grow. */
int nsc_chstore_put_clock(nsc_chstore *ch, const char *host, const nsc_clock_model *m);
/* The wall clock of collector time now_ns, when it is due (as the LMDB
 * store's begin records it: nsc_store_wall_due); 0 or NSC_STORE_ENOMEM. */
int nsc_chstore_put_wall(nsc_chstore *ch, uint64_t now_ns);
/* The offset kept (the store's latest record at open, or the one put
 * last): 0, or -1 when none yet. */
int nsc_chstore_wall_kept(const nsc_chstore *ch, int64_t *offset_ns);
/* A rank's progress (nsc_live_progress_fn); 0 or NSC_STORE_ENOMEM. */
int nsc_chstore_put_progress(void *ch, const nsc_store_progress *p);
/* Bytes of rows waiting for the next insert. */
size_t nsc_chstore_pending(const nsc_chstore *ch);
/* Each host's newest stored clock model to fn (arg passed on); 0, -1 when
 * a query failed or an answer did not decode, or what fn returned. */
typedef int (*nsc_chstore_clock_fn)(void *arg, const char *host, const nsc_clock_model *m);
int nsc_chstore_clocks(nsc_chstore *ch, nsc_chstore_clock_fn fn, void *arg);
/* Where a read of the whole store goes (chread.h): with a cluster, the
 * store's server and its Distributed tables (*suffix ""); else each shard's
 * (or the store's server's) local tables ("_local"). Up to max servers
 * ("http://HOST:PORT/", or https) into servers; returns how many. What it gives never
 * changes after open, so any thread may read it while the writer inserts. */
size_t nsc_chstore_sources(const nsc_chstore *ch, const char **servers, size_t max, const char **suffix,
                           const char **db);
/* The servers whose local tables the collector fills ("http://HOST:PORT/",
 * or https), at most max, into servers; db: the database. Never changes
 * after open. */
size_t nsc_chstore_shards(const nsc_chstore *ch, const char **servers, size_t max, const char **db);
/* How the store reaches its servers, for other handles to them (chread.h). */
const nsc_chconn *nsc_chstore_conn(const nsc_chstore *ch);
/* Drop every waiting row (their batches are not acknowledged). */
void nsc_chstore_discard(nsc_chstore *ch);
/* Insert every waiting row, on the store's inserter thread: the rows put
 * from now on wait for the next insert. At most one insert runs at a time:
 * call only when none is, or after nsc_chstore_insert_wait. The tables go
 * in nsc_ch_table order, each acknowledged by every shard before the next is
 * posted, and an insert starts after the previous one ended, so a batches
 * row is never visible before the records of its section (the query
 * cache's fingerprint relies on it, chcache.h). */
void nsc_chstore_insert_start(nsc_chstore *ch);
/* Readable (a byte) when the insert started has ended: for poll. */
int nsc_chstore_insert_fd(const nsc_chstore *ch);
/* Wait for the insert started, if any: 0 when ClickHouse acknowledged all
 * of its rows (or none was started), else -1 (logged). Its rows are gone
 * either way. */
int nsc_chstore_insert_wait(nsc_chstore *ch);

#endif
