/* udpprobe.h: the agent's UDP way to the collector's clock port.
 *
 * Owns one UDP socket connected to the collector's clock port (uprobe.h):
 * the kernel then drops datagrams from any other address. A probe goes with
 * its forwarder's id and a random token; t1 is read just before the send,
 * t4 just after the receive, so nothing but the two kernel paths and the
 * collector's answering thread lies between them. Only the answer to the
 * newest probe is taken: one to an older probe (late), one that does not
 * match (foreign) and a datagram that is no answer (malformed) are dropped
 * and counted. A probe still unanswered when the next one goes, or whose
 * send or answer the kernel refused (ICMP port unreachable), is lost;
 * NSC_UDPP_LOST_MAX lost in a row make the link failed, and the forwarder
 * falls back to its ZeroMQ probes (forward.h).
 */
#ifndef NCCLSCOPE_AGENT_UDPPROBE_H
#define NCCLSCOPE_AGENT_UDPPROBE_H

#include <stdint.h>

#define NSC_UDPP_LOST_MAX 3

typedef struct nsc_udpp nsc_udpp;

typedef struct nsc_udpp_stats {
    uint64_t sent, answered, late, foreign, malformed, lost;
} nsc_udpp_stats;

/* A matched answer: the probe's four times. */
typedef struct nsc_udpp_answer {
    uint64_t id, t1, t2, t3, t4;
} nsc_udpp_answer;

/* A socket connected to port on the address of endpoint (tcp://ADDR:PORT,
 * ADDR numeric); counts go to *st (kept by the caller across links). NULL
 * when the address is not numeric or the socket fails. */
nsc_udpp *nsc_udpp_open(const char *endpoint, uint32_t port, nsc_udpp_stats *st);
void nsc_udpp_close(nsc_udpp *u);
int nsc_udpp_fd(const nsc_udpp *u);
uint32_t nsc_udpp_port(const nsc_udpp *u);
/* Send probe id; *t1 is read just before it goes. -1: not sent (the send
 * failed, or the link failed: nsc_udpp_failed). */
int nsc_udpp_send(nsc_udpp *u, uint64_t id, uint64_t (*now)(void), uint64_t *t1);
/* Read what came, up to the newest probe's answer: 1 with *a, 0 when
 * nothing more is waiting. Never blocks. */
int nsc_udpp_recv(nsc_udpp *u, uint64_t (*now)(void), nsc_udpp_answer *a);
/* NSC_UDPP_LOST_MAX probes lost in a row. */
int nsc_udpp_failed(const nsc_udpp *u);

#endif
