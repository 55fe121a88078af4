/* uclock.h: the collector's UDP clock port.
 *
 * Owns a UDP socket and the thread that answers the agents' clock probes on
 * it (uprobe.h): blocked in recvfrom, it reads the collector's clock at
 * receipt (t2) and at reply (t3) and sends the probe back with them, nothing
 * else. It shares no lock with ingest: a probe's round trip has none of
 * ZeroMQ's thread hand-offs in it, and ingest never waits for it. A datagram
 * that is not a request is counted and dropped, unanswered. The ingest
 * thread offers the port to each agent that probes over ZeroMQ
 * (docs/protocol-a2c.md, "Clock probes over UDP").
 *
 * Off (no socket, no thread) with clock_udp = off and with CURVE on: a UDP
 * probe is not authenticated, so a CURVE collector's probes stay on the
 * authenticated ZeroMQ link.
 */
#ifndef NCCLSCOPE_COLLECTOR_UCLOCK_H
#define NCCLSCOPE_COLLECTOR_UCLOCK_H

#include "cstate.h"

typedef struct nsc_uclock nsc_uclock;

/* Bind clock_udp (c->udp_port gets the port) and start the thread. Returns
 * 0 with *out NULL when off, -1 with a message on stderr when clock_udp
 * cannot be bound. */
int nsc_uclock_start(nsc_collector *c, nsc_uclock **out);
/* Stop the thread (within its receive timeout, 100 ms) and close the
 * socket; NULL is a no-op. */
void nsc_uclock_stop(nsc_uclock *u);

#endif
