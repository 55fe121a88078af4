/* agent.h: the state of one ncclscope-agent, shared by its parts.
 *
 * main.c owns it and runs the loop; ingest.c fills it from the socket,
 * acks.c keeps the plugins' streams in order and acknowledges them,
 * held.c keeps the PXN resolver's held events in the spool, lbuild.c
 * builds the ledger records and lsave.c keeps its open ones in the spool,
 * forward.c sends the spool to the collector, http.c reads it for /healthz
 * and /metrics. One thread does everything, so
 * nothing here is locked (the name resolver's thread shares nothing of it:
 * what it finds comes through nsc_resolver_take).
 */
#ifndef NCCLSCOPE_AGENT_AGENT_H
#define NCCLSCOPE_AGENT_AGENT_H

#include <stdint.h>

#include "config.h"
#include "curve.h"
#include "forward.h"
#include "hstall.h"
#include "lbuild.h"
#include "mono.h"
#include "out.h"
#include "pxn.h"
#include "registry.h"
#include "resolve.h"
#include "spool.h"

/* Why a message was rejected: index = -nsc_wire_err for decoder errors. */
enum { NSC_REJECT_MULTIPART = 14, NSC_REJECT_COUNT = 15 };

typedef struct nsc_ingest_stats {
    uint64_t messages, bytes, events, states, completions, defs;
    uint64_t foreign;                   /* events handed to the PXN resolver */
    uint64_t rejects[NSC_REJECT_COUNT];
    uint64_t table_full;                /* definitions the registry could not keep */
    uint64_t nomem, lost;               /* records lost to allocation failures */
    uint64_t duplicates;                /* plugin batches dropped: stored before */
    uint64_t out_of_order;              /* plugin batches dropped after a gap (resend asked) */
    uint64_t acks_sent;                 /* acknowledgements published to the plugins */
    uint64_t streams_forgotten;         /* marks of streams not heard within linger_ms of the start */
    uint64_t ledger_restored;           /* processes whose ledger state a predecessor saved, taken back */
    uint64_t ledger_refused;            /* saved ledger states not taken back (another layout, or no memory) */
} nsc_ingest_stats;

typedef struct nsc_agent {
    nsc_agent_cfg cfg;
    void *zctx, *pull;
    void *ackpub;          /* acknowledgements to the plugins (acks.c) */
    nsc_registry *reg;
    nsc_pxn *pxn;
    nsc_lbuild *lb;        /* the ledger builder */
    nsc_out *out;
    nsc_spool *spool;
    nsc_fwd *fwd;          /* NULL: no collector configured (spool only) */
    nsc_ring *ring;        /* detail = on-demand: the raw sections; else NULL */
    nsc_fetch *fetch;      /* answers the collector's detail fetches */
    nsc_resolver *res;     /* a dns+tcp:// collector's name (its own thread); else NULL */
    uint64_t res_gen;      /* of the last list taken from res */
    nsc_endpoints res_list;
    nsc_curve_pair curve;  /* the agent's keys when CURVE is on */
    char collector_pub[NSC_CURVE_KEY_LEN + 1];
    struct event_base *base;
    struct evhttp *http;
    nsc_hguard *hguard;    /* HTTP limits (hguard.h) */
    nsc_hstall stall;      /* how long the loop, which serves HTTP, could not answer */
    nsc_ingest_stats in;
    nsc_scan scan;         /* the batch being routed; its arrays are reused */
    int in_multipart;      /* skipping the later parts of a rejected message */
    int final_waits;       /* a plugin's final batch was taken: flush after this burst */
    uint64_t *unheard;     /* streams marked in the spool at start, not heard since (acks.c) */
    size_t nunheard;
    uint64_t cands_saved, moved_saved;  /* the resolver's entries before these are in the spool (held.c) */
    nsc_spool_cand *cands; /* a predecessor's, of processes not heard since the start (held.c) */
    size_t ncands, capcands;
    int pxn_before;        /* a predecessor saw PXN traffic (it saved what the resolver knew) */
    nsc_spool_lsave *lsaves, *lpred;  /* the ledger states staged; a predecessor's, of processes not heard (lsave.c) */
    size_t nlsaves, caplsaves, nlpred, caplpred;
    nsc_lbuild_gone *lgone; /* a predecessor's states to delete at the next save (lsave.c) */
    size_t nlgone, caplgone;
    uint64_t start_ns;     /* also this agent process's instance id in acknowledgements */
} nsc_agent;

#endif
