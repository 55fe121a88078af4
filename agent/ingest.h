/* ingest.h: the agent's receiving side.
 *
 * Owns the PULL socket on ipc://<rundir>/agent.sock (file mode 0660,
 * ZMQ_MAXMSGSIZE twice the decoder's limit), the scan of every message with
 * the wire codec (checked whole as nsc_batch_decode checks it: a malformed one
 * is rejected whole and counted by reason; only the records the agent reads
 * are decoded), and the routing of a scanned batch: registry, PXN resolver,
 * output.
 */
#ifndef NCCLSCOPE_AGENT_INGEST_H
#define NCCLSCOPE_AGENT_INGEST_H

#include "agent.h"

int nsc_ingest_open(nsc_agent *a, char err[256]);
void nsc_ingest_close(nsc_agent *a);
/* Take at most max messages without waiting; returns how many were taken.
 * ZeroMQ's PULL socket queues fairly per peer, so bounding the work per call
 * keeps one busy sender from starving the others, HTTP and the timers. What
 * waits becomes a spool entry as soon as it reaches flush_kb. */
unsigned nsc_ingest_drain(nsc_agent *a, unsigned max);
/* Store what waits as one spool entry (a failed allocation is counted). */
void nsc_ingest_flush(nsc_agent *a, uint64_t now_ns);
/* Route one batch: s, scanned from msg[0..len). */
void nsc_ingest_route(nsc_agent *a, const void *msg, size_t len, const nsc_scan *s, uint64_t now_ns);
/* Metric label of a reject reason index, or NULL for an unused index. */
const char *nsc_ingest_reason(unsigned idx);
/* The ledger builder, its records going into a's output. */
nsc_lbuild *nsc_ingest_lbuild_new(nsc_agent *a);
/* The PXN sink the resolver reports to (routes into a's registry and output). */
nsc_pxn_sink nsc_ingest_pxn_sink(nsc_agent *a);

#endif
