/* chlive.h: the live state shared by the collectors of one ClickHouse store.
 *
 * Owns the answer of the live-state endpoints (status, live, /metrics' job
 * figures and, through the status, hosts, diagnose's process states and the
 * root-cause metrics): with LMDB the collector's own live state; with
 * ClickHouse its own merged with the newest snapshot of every other
 * collector (nsc_live_merge), so every collector of the store answers alike
 * (docs/clickhouse.md, "Live state from every collector").
 *
 * A thread of its own, once per live interval, writes this collector's
 * snapshot (nsc_live_snapshot) as its row of the `live` table and reads the
 * other collectors' newest rows, written within the heartbeat timeout, into
 * memory. Before its first write it reads its own newest row back (a
 * restart with the same collector_id): that state stays part of its own.
 * ClickHouse is never asked on the HTTP thread, the ingest path or
 * the writer: a request merges what is in memory. A snapshot that does not
 * decode is left out, logged and counted; the others are kept.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHLIVE_H
#define NCCLSCOPE_COLLECTOR_CHLIVE_H

#include <stdint.h>

#include "collector.h"

struct evbuffer;
typedef struct nsc_chlive nsc_chlive;

/* Start sharing (c->ch set): the thread, and c->chlive. 0, or -1. */
int nsc_chlive_start(nsc_collector *c);
/* After c->stop is set: wait for the thread, free it all. */
void nsc_chlive_stop(nsc_collector *c);

/* fn on the live state to answer from, at now (the collector's clock):
 * the own one under its lock, or with ClickHouse the merged view. fn's
 * result, or -1 (memory). */
typedef int (*nsc_chlive_fn)(void *arg, const nsc_live *l, uint64_t now);
int nsc_chlive_read(nsc_collector *c, nsc_chlive_fn fn, void *arg);

/* The sharing's counters (Prometheus text), nothing without ClickHouse. */
void nsc_chlive_render(nsc_collector *c, struct evbuffer *b);

#endif
