/* ingest.h: the agents' ZeroMQ ROUTER socket.
 *
 * Owns the ingest thread: it binds the ROUTER (listen, ZMQ_MAXMSGSIZE),
 * answers clock probes at once (t2 at receipt, t3 at reply, on the
 * collector's clock), decodes batches (a2c frame and every section) and hands
 * them and clock samples to the writer, and passes the writer's
 * acknowledgements back to the agents. Malformed input is rejected whole,
 * counted per agent and reason, and logged at most once a second.
 * When the collector stops it stops reading agents, tells the writer, keeps
 * passing acks until the writer is done, then closes (acks flushed).
 */
#ifndef NCCLSCOPE_COLLECTOR_INGEST_H
#define NCCLSCOPE_COLLECTOR_INGEST_H

#include "cstate.h"

typedef struct nsc_ingest nsc_ingest;

/* Bind (c->zmq_port gets the port) and start. */
int nsc_ingest_start(nsc_collector *c, nsc_ingest **out);
void nsc_ingest_join(nsc_ingest *in);

/* Pass one message of the writer (socket from: [routing id, ack], or one
 * part meaning "done") to the agents (socket to). Every part is closed on
 * every path; a failed send is counted in *send_failures and the rest of the
 * message is read and dropped, so the next one starts at its first part.
 * Returns 1 for "done", 0 for a message passed or dropped, -1 when nothing
 * is waiting. */
int nsc_ingest_pass_ack(void *from, void *to, atomic_uint_fast64_t *send_failures);

#endif
