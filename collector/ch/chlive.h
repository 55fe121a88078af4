/* chlive.h: the live state shared by the collectors of one ClickHouse store.
 *
 * Owns the answer of the live-state endpoints (status, live, /metrics' job
 * figures and, through the status, hosts, diagnose's process states and the
 * root-cause metrics) of a collector on ClickHouse (the store's live_read,
 * cstore.h): its own live state merged with the newest snapshot of every
 * other collector (nsc_live_merge), so every collector of the store answers
 * alike (docs/clickhouse-live.md).
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

#include "chparts.h"
#include "cstate.h"

struct evbuffer;
typedef struct nsc_chlive nsc_chlive;

/* Start sharing: the thread, and b->live. 0, or -1. */
int nsc_chlive_start(nsc_chback *b);
/* After the collector's stop is set: wait for the thread, free it all. */
void nsc_chlive_stop(nsc_chback *b);

/* fn on the merged view at now (the collector's clock); the own state
 * alone while sharing has not started. fn's result, or -1 (memory). */
int nsc_chlive_read(nsc_chback *b, nsc_cstore_live_fn fn, void *arg);

/* 1 when this collector announces job's verdicts: the highest of its own
 * and each live peer's rendezvous score for the job (docs/alerts.md,
 * "Webhook"), so the collectors agree without asking each other, and a
 * peer that stops heartbeating hands its jobs on. 0 until the peers were
 * read once (the thread's first pass), and outside start and stop. */
int nsc_chlive_announces(nsc_chback *b, const char *job);

/* The sharing's counters (Prometheus text). */
void nsc_chlive_render(nsc_chback *b, struct evbuffer *out);

#endif
