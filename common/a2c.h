/* a2c.h: the agent-to-collector message codec.
 *
 * Owns the byte format of the messages between a node agent and the
 * collector (docs/protocol-a2c.md, "Agent to collector"): a batch (agent id and
 * sequence, host, one wire-format section per process, process lifecycle
 * records, PXN aliases, one ledger batch per process), an acknowledgement, a rejection, a clock probe,
 * the collector's offer of its UDP probe port, and the detail fetch: a collector's request for a window of the raw
 * sections an agent keeps in its detail ring, and the agent's chunks in answer. Sections are
 * complete plugin-format batches (wire.h) carried as msgpack bin, so events are
 * encoded by one codec only; this file frames them.
 *
 * Encoding writes into a caller buffer sized with the *_bound functions.
 * Decoding validates the whole message before its one allocation, a batch's
 * CRC included; sections point into the caller's message and are validated by
 * nsc_batch_decode.
 */
#ifndef NCCLSCOPE_A2C_H
#define NCCLSCOPE_A2C_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* Acks, probes, samples and rejections are version 1. A batch is version 4:
 * it carries the agent's epoch, the ledger records (ledger.h) and ends with
 * the CRC-32C of everything before that last element. Version 3 (no
 * ledgers) from an older agent's spool still decodes, checked; version 2
 * (epoch, no CRC) and version 1 (neither, epoch 0), unchecked. */
#define NSC_A2C_VERSION 1
#define NSC_A2C_BATCH_VERSION 4

/* A probe goes agent -> collector -> agent; the agent then reports the
 * completed sample (all four times) to the collector, whose clock model for
 * the host needs t4, which only the agent knows. */
/* A rejection tells the agent that the collector will never store a batch
 * (malformed, or its CRC does not match): unlike a missing ack ("not yet
 * committed", sent again), it asks the agent to stop sending it. */
/* A fetch goes collector -> agent, and its detail chunks come back (the last
 * one says so): both version 1. */
/* A UDP offer goes collector -> agent with each probe answer when the
 * collector answers probes on a UDP port too (uprobe.h): version 1. */
enum {
    NSC_A2C_BATCH = 1, NSC_A2C_ACK = 2, NSC_A2C_PROBE = 3, NSC_A2C_SAMPLE = 4, NSC_A2C_REJECT = 5,
    NSC_A2C_FETCH = 6, NSC_A2C_DETAIL = 7, NSC_A2C_UDP = 8
};

/* Lifecycle events and reasons. FINISHED: the process's plugin sent its
 * final batch (every communicator finalized), so its silence or exit from
 * then on is a clean end, not a failure; STARTED follows if it sends again. */
enum { NSC_A2C_STARTED = 1, NSC_A2C_DIED = 2, NSC_A2C_FINISHED = 3 };
enum {
    NSC_A2C_REASON_NONE = 0,
    NSC_A2C_REASON_EXITED = 1,     /* the pid is gone (pidfd readable or kill() ESRCH) */
    NSC_A2C_REASON_SILENT = 2      /* no batch for longer than the heartbeat timeout */
};

/* The last collective a process was seen to start, per (communicator, func). */
typedef struct nsc_a2c_progress {
    uint64_t comm_id;
    uint64_t seq;    /* Coll seqNumber */
    int32_t rank;
    char func[64];
} nsc_a2c_progress;

typedef struct nsc_a2c_life {
    uint8_t event;           /* NSC_A2C_STARTED / DIED */
    uint8_t reason;          /* NSC_A2C_REASON_* (DIED only) */
    uint32_t pid;
    uint64_t ts_ns;          /* agent CLOCK_MONOTONIC: first batch, or death seen */
    uint64_t last_batch_seq; /* the process's last batch sequence received */
    char job[64];
    char host[64];           /* the process's host name (its header's), which
                              * need not be the agent's */
    uint32_t nprogress;
    const nsc_a2c_progress *progress;
} nsc_a2c_life;

/* A re-attached PXN event: what process proxy_pid sent as proxy_id now lives
 * in origin_pid's section as new_id (states keep the proxy's id). */
typedef struct nsc_a2c_alias {
    uint32_t proxy_pid, origin_pid;
    uint64_t proxy_id, new_id;
} nsc_a2c_alias;

typedef struct nsc_a2c_section {
    const uint8_t *data;  /* one wire-format batch */
    uint32_t len;
} nsc_a2c_section;

typedef struct nsc_a2c_batch {
    char agent[64];
    char host[64];
    uint64_t epoch;    /* the agent's spool identity: (agent, epoch, seq) names a batch */
    uint64_t seq;      /* per agent and epoch, from 0, dense */
    uint64_t sent_ns;
    uint32_t crc;      /* version 3 on: the CRC-32C the message carries (checked); 0 before */
    uint32_t nsections, nlife, naliases, nledgers;
    const nsc_a2c_section *sections;
    const nsc_a2c_section *ledgers; /* one ledger batch (ledger.h) per process: version 4 */
    const nsc_a2c_life *life;
    const nsc_a2c_alias *aliases;
    void *mem;         /* decoder's allocation */
} nsc_a2c_batch;

typedef struct nsc_a2c_ack {
    char agent[64];
    uint64_t seq;      /* the batch that was committed */
    uint32_t credit;   /* batches the agent may send beyond those acknowledged */
} nsc_a2c_ack;

typedef struct nsc_a2c_reject {
    char agent[64];
    uint64_t seq;      /* the batch the collector will not store */
    char reason[64];   /* why, the collector's reject reason (a2c_bad_checksum, ...) */
} nsc_a2c_reject;

typedef struct nsc_a2c_probe {
    uint8_t kind;      /* NSC_A2C_PROBE or NSC_A2C_SAMPLE */
    char agent[64];
    char host[64];     /* the host whose clock t1 and t4 read */
    uint64_t id;
    uint64_t t1, t2, t3;  /* agent send, collector receive, collector send (ns) */
    uint64_t t4;          /* agent received the answer; 0 in a PROBE */
} nsc_a2c_probe;

typedef struct nsc_a2c_udp {
    char agent[64];
    uint32_t port;     /* 1..65535, on the address the agent reaches the collector at */
} nsc_a2c_udp;

/* A window of raw detail the collector asks an agent for. Times are the
 * agent host's clock, the clock model's bound already added. */
#define NSC_A2C_FETCH_PIDS 32
typedef struct nsc_a2c_fetch {
    char agent[64];
    uint64_t id;             /* the collector's, echoed by every chunk of the answer */
    char job[64];
    uint64_t from_ns, to_ns; /* from_ns <= to_ns */
    uint64_t types;          /* bit (1 << event type) per type wanted; 0: every type */
    uint32_t npids;          /* 0: every process of the job */
    uint32_t pids[NSC_A2C_FETCH_PIDS];
} nsc_a2c_fetch;

/* One raw section of a detail chunk: a wire-format batch that the agent's
 * ring keeps under the sequence of the a2c batch it was taken from (with
 * the chunk's agent and epoch, and the section's process, it names the
 * section: a window fetched twice is stored once). */
typedef struct nsc_a2c_piece {
    uint64_t seq;
    const uint8_t *data;
    uint32_t len;
} nsc_a2c_piece;

typedef struct nsc_a2c_detail {
    char agent[64];
    char host[64];
    uint64_t epoch;
    uint64_t id;                /* the fetch answered */
    uint32_t chunk;             /* from 0 */
    uint8_t last;               /* no chunk follows */
    uint64_t held_from_ns, held_to_ns; /* what the ring holds now (both 0: nothing) */
    uint32_t npieces;
    const nsc_a2c_piece *pieces;
    void *mem;                  /* decoder's allocation */
} nsc_a2c_detail;

#define NSC_A2C_SMALL_MAX 256  /* an encoded ack, probe or sample never exceeds this */
#define NSC_A2C_FETCH_MAX 512  /* nor an encoded fetch: what an agent accepts from a collector */

/* Upper bound of the encoded size of b; encode returns the exact length. */
size_t nsc_a2c_batch_bound(const nsc_a2c_batch *b);
size_t nsc_a2c_encode_batch(const nsc_a2c_batch *b, uint8_t *out);
size_t nsc_a2c_encode_ack(const nsc_a2c_ack *a, uint8_t out[NSC_A2C_SMALL_MAX]);
size_t nsc_a2c_encode_reject(const nsc_a2c_reject *r, uint8_t out[NSC_A2C_SMALL_MAX]);
/* Encodes a probe or a sample, by p->kind. */
size_t nsc_a2c_encode_probe(const nsc_a2c_probe *p, uint8_t out[NSC_A2C_SMALL_MAX]);
size_t nsc_a2c_encode_udp(const nsc_a2c_udp *u, uint8_t out[NSC_A2C_SMALL_MAX]);

size_t nsc_a2c_encode_fetch(const nsc_a2c_fetch *f, uint8_t out[NSC_A2C_FETCH_MAX]);
size_t nsc_a2c_detail_bound(const nsc_a2c_detail *d);
size_t nsc_a2c_encode_detail(const nsc_a2c_detail *d, uint8_t *out);

/* Message kind (NSC_A2C_*) of buf, or a negative nsc_wire_err. */
int nsc_a2c_kind(const void *buf, size_t len);
/* Decoders return 0 or a negative nsc_wire_err; on error nothing is allocated.
 * Release a decoded batch with nsc_a2c_batch_release. lim may be NULL. */
int nsc_a2c_decode_batch(const void *buf, size_t len, const nsc_dec_limits *lim,
                         nsc_a2c_batch *out);
void nsc_a2c_batch_release(nsc_a2c_batch *b);
/* The agent and seq of a batch whose head [kind, version, agent, (epoch,)
 * seq] reads, whatever follows (a batch about to be rejected is named by
 * them). Returns 0, or a negative nsc_wire_err with agent "unknown". */
int nsc_a2c_batch_name(const void *buf, size_t len, char agent[64], uint64_t *seq);
/* Whether a spooled batch is still what was encoded: a version 3 or 4 batch's CRC
 * matches (no decode), an older one decodes. 0 or a negative nsc_wire_err
 * (NSC_WIRE_BAD_CHECKSUM for a CRC that does not match). */
int nsc_a2c_batch_check(const void *buf, size_t len);
int nsc_a2c_decode_ack(const void *buf, size_t len, nsc_a2c_ack *out);
int nsc_a2c_decode_reject(const void *buf, size_t len, nsc_a2c_reject *out);
/* Decodes either kind (out->kind says which). */
int nsc_a2c_decode_probe(const void *buf, size_t len, nsc_a2c_probe *out);
/* A port outside 1..65535 is NSC_WIRE_BAD_VALUE. */
int nsc_a2c_decode_udp(const void *buf, size_t len, nsc_a2c_udp *out);
/* A fetch whose window runs backwards or that names too many pids is
 * NSC_WIRE_BAD_VALUE. */
int nsc_a2c_decode_fetch(const void *buf, size_t len, nsc_a2c_fetch *out);
/* Pieces point into buf; release with nsc_a2c_detail_release. lim may be NULL. */
int nsc_a2c_decode_detail(const void *buf, size_t len, const nsc_dec_limits *lim, nsc_a2c_detail *out);
void nsc_a2c_detail_release(nsc_a2c_detail *d);

#endif
