/* writer.h: the store's one writer thread.
 *
 * Owns the write side of the store: it takes items from the ingest thread
 * (inproc PAIR, one pointer per message), drops batches already committed
 * (dedupe), puts the others, and commits a group of them when its queue is
 * empty or group_max batches are waiting (group commit). Only after the
 * store's commit returned 0 does it send the acknowledgements back to the
 * ingest thread ([routing id, ack] messages), which passes them to the agents. Clock
 * samples feed the host models, written with a group every
 * clock_persist_s; retention runs on the same schedule. A NULL item means
 * stop: commit, acknowledge, answer "done" and exit.
 *
 * The store (cstore.h) decides the rest: whether a batch is new (LMDB: the
 * dedupe state of what it committed; ClickHouse: always, a batch inserted
 * twice folds into one there), how long a group may gather batches (LMDB:
 * none, it commits as soon as the queue is empty; ClickHouse: ch_flush_ms
 * after the first batch, or ch_flush_mb of rows), and whether a commit ends
 * at once or runs on (ClickHouse's insert, on the store's inserter thread)
 * while the loop takes the next batches, one at a time (the next waits for
 * it). The acknowledgements follow the commit's end either way.
 */
#ifndef NCCLSCOPE_COLLECTOR_WRITER_H
#define NCCLSCOPE_COLLECTOR_WRITER_H

#include "cstate.h"

#define NSC_WRITER_ENDPOINT "inproc://nsc-writer"

typedef struct nsc_writer nsc_writer;

/* 1 at most every 10 s per *next_ns: a message repeated per batch would
 * flood the log. */
int nsc_writer_log_due(uint64_t *next_ns);
/* One line of the log: what failed, and the store's error rc. */
void nsc_writer_log_store(const char *what, int rc);

/* Load the clock models, bind the inproc socket, start. */
int nsc_writer_start(nsc_collector *c, nsc_writer **out);
/* Stop a writer no ingest thread is connected to (start failed half way). */
void nsc_writer_stop_alone(nsc_collector *c);
void nsc_writer_join(nsc_writer *w);

#endif
