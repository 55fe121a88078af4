/* spool.h: the agent's durable spool of agent-to-collector batches.
 *
 * Owns an LMDB environment with seven databases: "batches" (8-byte big-endian
 * agent sequence -> one encoded a2c batch), "tally" (same key -> what the batch
 * holds: events, records), "meta" (next sequence, refusal counters, the
 * PXN resolver's last new id), "quarantine" (same key -> the tally, then the
 * batch: batches that will never be delivered, moved aside for an operator to
 * look at), "streams" (a plugin's stream id -> the seq of its first batch not yet
 * stored or counted, written in the transaction that stores or counts the
 * batch before it: what the agent acknowledges to the plugin), "held"
 * (the foreign events the PXN resolver holds, see below) and "cands" (what
 * it remembers: chunks keyed by the sequence of their first entry, those
 * wholly older than the newest the caller keeps deleted). A
 * spool's epoch (a random 64-bit number made when the spool is created, kept in
 * "meta") names this spool's sequence space: a spool deleted and created again
 * under the same agent id starts at sequence 0 in a new epoch. A
 * batch is stored with the next sequence number in one transaction that also
 * updates the accounting; a batch that would take the stored bytes over the cap
 * (or that LMDB cannot hold) is refused, takes no sequence number, and what it
 * held is added to the refusal counters exactly. The forwarder reads from here
 * in sequence order and deletes what the collector acknowledged, or moves to
 * the quarantine what is corrupt or what the collector rejected.
 */
#ifndef NCCLSCOPE_AGENT_SPOOL_H
#define NCCLSCOPE_AGENT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"

typedef struct nsc_spool nsc_spool;

/* What one batch holds, for the refusal accounting. */
typedef struct nsc_spool_tally {
    uint64_t events, records;  /* records: every record and lifecycle entry, events included */
} nsc_spool_tally;

typedef struct nsc_spool_stats {
    uint64_t cap_bytes;
    uint64_t entries, bytes;   /* stored now (value bytes) */
    uint64_t next_seq;
    uint64_t refused_entries, refused_bytes, refused_events, refused_records;
    uint64_t errors;           /* LMDB failures other than a full map (also refused) */
    uint64_t quarantined_entries, quarantined_bytes;   /* in the quarantine (recounted at open) */
    uint64_t quarantined_events, quarantined_records;
} nsc_spool_stats;

/* Open (creating) the spool in dir. Returns 0 or -1 with a message in err. */
int nsc_spool_open(nsc_spool **out, const char *dir, uint64_t cap_bytes, char err[128]);
void nsc_spool_close(nsc_spool *s);
uint64_t nsc_spool_next_seq(const nsc_spool *s);
/* The spool's epoch: random and non-zero for a spool this agent created; 0 for
 * one an agent without epochs created (its batches went out without one). */
uint64_t nsc_spool_epoch(const nsc_spool *s);
/* A plugin stream's progress: every batch before `next` is in the spool (or
 * was counted as refused). */
typedef struct nsc_spool_mark {
    uint64_t stream, next;
} nsc_spool_mark;

/* Store msg under nsc_spool_next_seq() and the streams' marks with it.
 * Returns 0 (stored) or 1 (refused, counted; the marks are kept too). */
int nsc_spool_put(nsc_spool *s, const void *msg, size_t len, const nsc_spool_tally *t, const nsc_spool_mark *marks,
                  size_t nmarks);
/* A stream's persisted `next` (0: unknown). */
uint64_t nsc_spool_stream_next(nsc_spool *s, uint64_t stream);
/* Drop a stream's mark (its process is gone). */
void nsc_spool_stream_forget(nsc_spool *s, uint64_t stream);
void nsc_spool_stats_get(const nsc_spool *s, nsc_spool_stats *st);
/* One stored batch, valid during the callback only. */
typedef struct nsc_spool_entry {
    uint64_t seq;
    const void *msg;
    size_t len;
    nsc_spool_tally tally;
} nsc_spool_entry;

/* Call fn for every stored entry from seq `from`, in order; stops early when fn
 * returns non-zero and returns that value (-1 if the spool cannot be read).
 * An entry's pages are unmapped after its call (they stay in the page cache),
 * so reading the spool does not grow the agent's resident memory. */
int nsc_spool_foreach(nsc_spool *s, uint64_t from, int (*fn)(void *arg, const nsc_spool_entry *e), void *arg);
/* Move entry seq to the quarantine in one transaction (it leaves the
 * spool's entries and bytes, and is no longer sent). Returns 0 with its size
 * and tally in *len and *t, 1 if absent, -1 on an LMDB failure (it stays). */
int nsc_spool_quarantine(nsc_spool *s, uint64_t seq, size_t *len, nsc_spool_tally *t);
/* Delete the entries seqs[0..n) in one transaction; absent ones are skipped.
 * The number deleted and what they held are added to *deleted and *gone.
 * Returns 0 or -1 (nothing deleted). */
int nsc_spool_delete(nsc_spool *s, const uint64_t *seqs, size_t n, uint64_t *deleted, nsc_spool_tally *gone);

/* ---- what a killed agent's successor must know -------------------------
 * A foreign event the PXN resolver holds was taken from a batch whose mark
 * is acknowledged: the plugin no longer has it. So it is kept here, written
 * in the transaction that stores the mark of the batch it came in, and
 * deleted in the one that stores it (resolved or flagged) or counts it. */
typedef struct nsc_spool_held {
    uint64_t id;     /* the resolver's, unique in this spool */
    nsc_proc proxy;  /* the process that sent it */
    nsc_event ev;
} nsc_spool_held;

/* What the PXN resolver remembers (pxn.h, nsc_pxn_candidates): a parent
 * candidate (new_id 0) or a moved event, what a successor needs to
 * re-attach a foreign event whose origin (or foreign parent) only its
 * predecessor saw. The process is named by pid and host
 * (nsc_spool_host_hash): its registry key dies with the agent. */
typedef struct nsc_spool_cand {
    uint64_t id, start_ns, host, new_id;
    uint32_t pid, origin_pid;
    int32_t rank;
    uint16_t ctx;
} nsc_spool_cand;

/* The ledger builder's open state of one process (agent/lsave.h), named by
 * host hash and pid; len 0: the process is gone, its state deleted. */
typedef struct nsc_spool_lsave {
    uint64_t host;
    uint32_t pid;
    const void *data;
    size_t len;
} nsc_spool_lsave;

/* Call fn for every saved ledger state (data lives until fn returns); stops
 * early when fn returns non-zero and returns that value (-1 unreadable). */
int nsc_spool_lsave_foreach(nsc_spool *s, int (*fn)(void *arg, const nsc_spool_lsave *l), void *arg);

/* The held events' changes the next nsc_spool_put writes in its transaction
 * (whether it stores or refuses the batch); written says whether it did. */
typedef struct nsc_spool_held_change {
    const nsc_spool_held *add;
    size_t nadd;
    const uint64_t *del;  /* ids; absent ones are skipped */
    size_t ndel;
    uint64_t last_id;     /* the resolver's last re-attached event id (0: none given) */
    const nsc_spool_cand *cand;  /* what the resolver remembered since */
    size_t ncand;
    uint64_t cand_keep;   /* how many of the newest the spool keeps */
    const nsc_spool_lsave *lsave;  /* the ledger builder's states that changed */
    size_t nlsave;
    int written;
} nsc_spool_held_change;

uint64_t nsc_spool_host_hash(const char *host);
/* Call fn for every candidate kept, oldest first (0, or -1 unreadable). */
int nsc_spool_cands_foreach(nsc_spool *s, int (*fn)(void *arg, const nsc_spool_cand *c), void *arg);

/* Stage c for the next nsc_spool_put (NULL: nothing); c must live until it. */
void nsc_spool_held_stage(nsc_spool *s, nsc_spool_held_change *c);
/* Call fn for every held event, in id order; stops early when fn returns
 * non-zero and returns that value (-1 if the spool cannot be read). */
int nsc_spool_held_foreach(nsc_spool *s, int (*fn)(void *arg, const nsc_spool_held *h), void *arg);
/* The last re-attached event id a put wrote (0: none): a successor goes on
 * from there, so an id is never given twice in one spool's life. */
uint64_t nsc_spool_pxn_last_id(nsc_spool *s);
/* Every stream that has a mark (*ids malloc'd, the caller frees). 0 or -1. */
int nsc_spool_streams(nsc_spool *s, uint64_t **ids, size_t *n);
uint64_t nsc_spool_streams_count(nsc_spool *s);

#endif
