/* item.h: one message on its way from the ingest thread to the writer.
 *
 * Owns a received batch (its ZeroMQ message, which the decoded sections point
 * into, the decoded a2c frame and sections, the store's view of them) or a
 * clock sample, plus the sender's routing id for the acknowledgement. The
 * ingest thread fills it, the writer releases it after the commit that held it.
 */
#ifndef NCCLSCOPE_COLLECTOR_ITEM_H
#define NCCLSCOPE_COLLECTOR_ITEM_H

#include <stdatomic.h>
#include <stdint.h>
#include <zmq.h>

#include "a2c.h"
#include "store.h"
#include "wire.h"

typedef enum nsc_item_kind { NSC_ITEM_BATCH, NSC_ITEM_SAMPLE } nsc_item_kind;

typedef struct nsc_item {
    nsc_item_kind kind;
    uint8_t ident[256];       /* ZeroMQ routing id of the agent's DEALER */
    size_t ident_len;
    atomic_uint_fast64_t *inflight;  /* its sender's batches in the collector (ingest.c), a detail
                                     * batch's fetch's (fetch.c), or NULL */
    int stored;               /* put (not a duplicate): counted and fed live after the commit */
    int detail;               /* raw detail an agent was asked for (fetch.h): never acknowledged, not fed live */
    uint64_t recv_ns;         /* collector time the message arrived */
    zmq_msg_t body;           /* the batch message: sections point into it */
    nsc_a2c_batch a2c;
    nsc_batch *secs;          /* a2c.nsections decoded sections */
    nsc_store_batch *sb;      /* the store's view of each section */
    nsc_state_rec *moved;     /* states rewritten by PXN aliases (one array) */
    nsc_ledger_batch *ledgers;   /* a2c.nledgers, decoded; those that did not decode are empty */
    nsc_store_ledger *sl;     /* the store's view of those that decoded (nsl of them); */
    nsc_proc *lproc;          /* their processes (sl[i].proc is &lproc[i] once placed, else NULL) */
    uint32_t nsl;
    uint32_t ledger_bad;      /* ledger batches that did not decode */
    uint64_t ledger_unplaced; /* records of a process the writer could not place */
    nsc_a2c_probe sample;
} nsc_item;

/* Decode a batch message into a fresh item, which takes body over (body is
 * left empty either way). A ledger batch that does not decode is counted
 * and skipped: the rest of the batch is stored. One whose process has a
 * section in the batch is placed with that process; the writer places the
 * others (procmap.h). Returns the item, or NULL with *reason set
 * (NSC_REJ_*: NSC_REJ_RANKS for a context claiming more than max_ranks
 * ranks or a rank outside them); *agent gets the agent id, "unknown" when
 * the frame could not be read that far. */
nsc_item *nsc_item_batch(zmq_msg_t *body, const nsc_dec_limits *lim, int32_t max_ranks, unsigned *reason,
                         char agent[64], uint64_t *aliases_applied, uint64_t *aliases_unplaced);
/* The item no longer counts against its sender's credit (before its ack
 * leaves: the sender may send the next batch at once). */
void nsc_item_release_credit(nsc_item *it);
/* Release the item, and its credit if still held. */
void nsc_item_free(nsc_item *it);
/* The store's view of the batch's i-th lifecycle record. */
void nsc_item_life(const nsc_item *it, uint32_t i, nsc_store_life *sl);

#endif
