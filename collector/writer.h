/* writer.h: the store's one writer thread.
 *
 * Owns the write side of the store: it takes items from the ingest thread
 * (inproc PAIR, one pointer per message), drops batches already committed
 * (dedupe), puts the others, and commits as soon as its queue is empty or
 * group_max batches are waiting (group commit). Only after nsc_store_commit
 * returned 0 does it send the acknowledgements back to the ingest thread
 * ([routing id, ack] messages), which passes them to the agents. Clock
 * samples feed the host models, written with a transaction every
 * clock_persist_s; retention runs on the same schedule. A NULL item means
 * stop: commit, acknowledge, answer "done" and exit.
 *
 * With a ClickHouse store (nsc_collector.ch) the same loop gathers the
 * batches' rows instead of a transaction (chstore.h), with no dedupe (a batch
 * inserted twice folds into one there), and starts their insert once
 * ch_flush_ms passed since the first batch it holds, or ch_flush_mb of rows
 * or group_max batches wait. The insert runs on the store's inserter thread
 * while the loop takes the next batches; one insert at a time (the next one
 * waits for it). The acknowledgements follow ClickHouse's, as they follow a
 * commit: the loop sends them when the insert's end wakes it.
 */
#ifndef NCCLSCOPE_COLLECTOR_WRITER_H
#define NCCLSCOPE_COLLECTOR_WRITER_H

#include "collector.h"

#define NSC_WRITER_ENDPOINT "inproc://nsc-writer"

typedef struct nsc_writer nsc_writer;

/* Load dedupe state and clock models, bind the inproc socket, start. */
int nsc_writer_start(nsc_collector *c, nsc_writer **out);
/* Stop a writer no ingest thread is connected to (start failed half way). */
void nsc_writer_stop_alone(nsc_collector *c);
void nsc_writer_join(nsc_writer *w);

#endif
