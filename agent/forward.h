/* forward.h: lossless forwarding of the spool to the collector, and clock probes.
 *
 * Owns the DEALER socket connected to the collector's ROUTER, its monitor, the
 * set of batches in flight and the credit window. Batches leave the spool in
 * sequence order while fewer than `credit` are unacknowledged; a batch is
 * deleted from the spool only when the collector acknowledges it. After a
 * (re)connection, or when the oldest unacknowledged batch waited longer than
 * the ack timeout, every batch still in the spool is sent again from the
 * start (the collector drops duplicates by sequence and acknowledges them
 * again). A batch is checked before each send (nsc_a2c_batch_check: its CRC);
 * one that fails, or that the collector rejects (it will never store it), is
 * moved to the spool's quarantine, logged once and counted, and the rest goes
 * on. Clock probes go out periodically; each answer becomes a sample sent
 * back to the collector, and the minimum-RTT sample of the recent ones is
 * kept for /metrics. When the collector offers its UDP clock port (with
 * each ZeroMQ probe answer; never taken with CURVE), the follow-up probes go
 * there (udpprobe.h), with no ZeroMQ thread hand-off in their round trips,
 * while the scheduled ones stay on ZeroMQ (their answers are the heartbeat
 * below); after NSC_UDPP_LOST_MAX lost in a row they go over ZeroMQ again
 * until the next connection.
 *
 * Detail fetches from the collector go to cfg.fetch, which sends at most one
 * chunk of its answer per run; a new connection forgets them.
 *
 * With several endpoints (endpoints.h) it uses one at a time, the first at
 * start, and gives the current one up as dead when it had no connection to it
 * for failover_ns (refused, closed, or cut by unanswered ZMTP heartbeats), or
 * when, connected, nothing (ack, probe answer) came from it for failover_ns
 * after a batch or a probe went to it. It then opens a fresh socket to the
 * next endpoint round the list and forgets the dead one's state: the credit
 * goes back to the first window, the clock samples (another collector's
 * clock) are dropped, and the connection's rewind sends every spooled batch
 * again. A batch the dead collector stored but never acknowledged is then
 * stored twice; the ClickHouse store folds repeated batch identities
 * (docs/clickhouse-write.md, "Exactly once"). One endpoint is never given up.
 *
 * With a dns+tcp:// name the list starts empty (no connection) and comes from
 * nsc_fwd_set_endpoints, again whenever the name's addresses change; a dead
 * collector is also told to cfg.lost, so that the name is resolved again.
 */
#ifndef NCCLSCOPE_AGENT_FORWARD_H
#define NCCLSCOPE_AGENT_FORWARD_H

#include <stdint.h>
#include <stdio.h>

#include "curve.h"
#include "endpoints.h"
#include "fetch.h"
#include "spool.h"
#include "udpprobe.h"

typedef struct nsc_fwd nsc_fwd;

typedef struct nsc_fwd_cfg {
    const char *endpoint;           /* tcp://HOST:PORT[,...]: the list (endpoints.h) */
    const char *agent_id, *host;
    const char *server_key;         /* collector's public key (Z85) or NULL: no CURVE */
    const nsc_curve_pair *client;   /* the agent's keypair when server_key is set */
    uint32_t window;                /* credit before the first ack */
    uint32_t max_inflight;          /* upper bound on the collector's credit */
    uint64_t max_inflight_bytes;    /* no new send while this much is unacknowledged */
    uint64_t ack_timeout_ns;
    uint64_t probe_ns;              /* probe interval (the first probes come 10x faster) */
    uint64_t probe_spin_ns;         /* the loop polls without sleeping this long for an answer (nsc_fwd_awaits_answer) */
    int reconnect_ms, reconnect_max_ms;
    uint64_t failover_ns;           /* several endpoints: the current one is dead after this */
    FILE *log;                      /* each move to another endpoint is told here; NULL: not */
    void (*lost)(void *arg);        /* the collector in use is dead (again every failover_ns while it is); NULL: nobody asks */
    void *lost_arg;
    uint64_t (*now)(void);          /* CLOCK_MONOTONIC ns: probe times t1 and t4 */
    nsc_fetch *fetch;               /* answers the collector's detail fetches, a chunk a run; NULL: fetches are bad messages */
} nsc_fwd_cfg;

typedef struct nsc_fwd_stats {
    uint64_t batches_sent, events_sent, bytes_sent;  /* resends included */
    uint64_t batches_acked, events_acked;            /* deleted from the spool on ack */
    uint64_t batches_resent;                         /* sends of a batch sent before */
    uint64_t rewinds_connect, rewinds_timeout, rewinds_failover;
    uint64_t acks_duplicate;                         /* acks of batches no longer spooled */
    uint64_t bad_messages;                           /* undecodable or not for this agent */
    uint64_t corrupt, rejected;                      /* batches quarantined: failed the check before a
                                                      * send; rejected by the collector */
    uint64_t connects, disconnects, handshake_failures;
    uint64_t collector_index, failovers;             /* the endpoint in use (0: the first); moves */
    uint64_t rebalances;                             /* moves to a name's address that joined and outweighs */
    uint64_t inflight, inflight_bytes, credit, connected;
    uint64_t probes_sent, samples;
    nsc_udpp_stats udp;                              /* probes over UDP (udpprobe.h) */
    uint64_t udp_fallbacks, udp_active;              /* falls back to ZeroMQ; 1: probes go over UDP */
    uint64_t delete_errors;
    int have_clock;
    int64_t offset_ns;                               /* collector minus agent, min-RTT sample */
    uint64_t rtt_ns;
} nsc_fwd_stats;

/* Connect to the first endpoint (the connection itself is made in the
 * background) in a ZeroMQ context of its own. Returns NULL with a message in
 * err on a bad endpoint list or option. */
nsc_fwd *nsc_fwd_new(const nsc_fwd_cfg *cfg, nsc_spool *spool, char err[256]);
void nsc_fwd_free(nsc_fwd *f);
/* The sockets to poll for input (the DEALER and its monitor); a move to
 * another endpoint replaces them: ask again after each nsc_fwd_run. */
void *nsc_fwd_socket(const nsc_fwd *f);
void *nsc_fwd_monitor(const nsc_fwd *f);
/* The UDP probe socket to poll too, or -1 (none now); ask again after each
 * nsc_fwd_run. */
int nsc_fwd_udp_fd(const nsc_fwd *f);
/* The endpoint in use (cfg.endpoint while a name has no address yet). */
const char *nsc_fwd_endpoint(const nsc_fwd *f);
/* A name's addresses, new or changed (an empty list is ignored). The
 * address nsc_endpoints_pick picks for the agent id is where the forwarder
 * goes: at the first list, when the one in use is gone (a failover), and
 * when the pick is an address that joined the list (a rebalance: a
 * collector added, or back, takes its share of the agents). Each move opens
 * a fresh link, is counted and logged, and sends everything unacknowledged
 * again. Otherwise it stays on the collector in use, connection and state
 * kept. now_ns: as nsc_fwd_run's, whose clock times the new link's
 * connection. */
void nsc_fwd_set_endpoints(nsc_fwd *f, const nsc_endpoints *eps, uint64_t now_ns);
/* Take acks, answers and connection events only. The agent's loop calls it
 * as soon as its poll wakes, before the ranks' events: a probe's answer is
 * stamped (t4) as it is read, and a burst's next probe goes out then, so
 * neither waits behind the loop's other work (which would lengthen the round
 * trip and skew the offset). Never blocks. */
void nsc_fwd_input(nsc_fwd *f, uint64_t now_ns);
/* Whether the newest probe is unanswered and went less than probe_spin_ns
 * ago: the agent's loop then polls without sleeping, so that the answer is
 * read as it comes instead of when the kernel wakes the thread (a probe's
 * round trip sets its bound, and a sleeping thread adds its wake-up to it).
 * Not after an answer that came later than that: on a machine that busy a
 * polling thread, no longer a sleeper to the scheduler, waits its turn
 * behind the others (measured: windows whose probes all took milliseconds),
 * so the loop sleeps until an answer comes in time again. */
int nsc_fwd_awaits_answer(const nsc_fwd *f, uint64_t now_ns);
/* nsc_fwd_input, then send what the credit allows and probes that are due.
 * Never blocks. */
void nsc_fwd_run(nsc_fwd *f, uint64_t now_ns);
void nsc_fwd_stats_get(const nsc_fwd *f, nsc_fwd_stats *st);

#endif
