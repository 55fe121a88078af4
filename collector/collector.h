/* collector.h: the collector daemon.
 *
 * Owns the daemon's life: it opens the store, starts the threads (ingest,
 * writer, HTTP) over the shared state (cstate.h), serves, and stops them in
 * order.
 */
#ifndef NCCLSCOPE_COLLECTOR_H
#define NCCLSCOPE_COLLECTOR_H

#include "cstate.h"

/* Open the store, start the threads, serve until SIGTERM or SIGINT, then
 * stop accepting, commit and acknowledge what is pending and close the
 * store. Returns the process exit status (0, or 1 when starting failed). */
int nsc_collector_run(const nsc_coll_cfg *cfg);

#endif
