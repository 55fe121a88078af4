/* cstate.h: the collector daemon's shared state.
 *
 * Owns the one structure the threads share: configuration, the store, the
 * counters, the live state and the stop flag. Threads: ingest (the ZeroMQ
 * ROUTER: decodes, answers probes, forwards acks), writer (the store's one
 * writer: dedupe, group commit, clock models, live state), HTTP (libevent).
 * Every part takes it from here; the daemon that starts them (collector.h)
 * is apart, so that no part needs the code that calls it.
 *
 * Time base: the collector's CLOCK_MONOTONIC. Probes are answered with it, so
 * every host's clock model maps onto it and aligned times are this machine's
 * monotonic nanoseconds (a reboot of the collector's host starts a new base).
 */
#ifndef NCCLSCOPE_COLLECTOR_CSTATE_H
#define NCCLSCOPE_COLLECTOR_CSTATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "config.h"
#include "cstore.h"
#include "live.h"
#include "mono.h"
#include "stats.h"

typedef struct nsc_collector {
    nsc_coll_cfg cfg;
    nsc_cstore store;           /* LMDB or ClickHouse, chosen at start (cstore.h) */
    nsc_stats stats;
    void *zctx;
    atomic_int stop;            /* set by the signal handler's pipe reader */
    pthread_mutex_t clock_mu;   /* guards clocks (writer updates, HTTP reads) */
    struct nsc_clocks *clocks;
    pthread_mutex_t live_mu;    /* guards live (writer feeds, HTTP reads) */
    nsc_live *live;
    struct nsc_cfetch *fetch;   /* detail fetches: HTTP asks, ingest sends and takes the answers (fetch.h) */
    struct nsc_diagapi_carries *carries;  /* diagnose requests' carried analyses (diagapi.h), NULL none */
    int zmq_port, http_port;    /* bound ports (after start) */
    int udp_port;               /* the UDP clock port (uclock.h); 0: none, probes over ZeroMQ only */
} nsc_collector;

/* The live state's settings from the collector's (times, limits). */
nsc_live_cfg nsc_collector_live_cfg(const nsc_coll_cfg *cfg);

/* The collector's own live state under its lock (what a store's live_read
 * gives without other collectors). */
int nsc_cstore_own_live(nsc_collector *c, nsc_cstore_live_fn fn, void *arg);

#endif
