/* cstore.h: the collector's store, one interface over its two kinds.
 *
 * Owns the contract between the collector's threads and where its data
 * lies: an LMDB store in the db directory (lmdbstore.c, --store lmdb) or
 * ClickHouse (ch/chback.c, --store clickhouse://...). nsc_cstore_open picks
 * one at start; nothing else in the collector knows which it got.
 *
 * Write side, the writer thread only (writer.h). A group of batches is
 * opened by begin; each batch is admitted (new, a duplicate, or refused)
 * and, when new, put whole (sections, placed ledger batches, process life)
 * with its processes placed first (find_proc); the group's state (the wall
 * clock, the ranks' progress, the clock models due) goes with it; then
 * commit, or abort (nothing of the group kept). A commit ends at once (0 or
 * an error) or runs on while the writer takes the next batches
 * (NSC_CSTORE_INFLIGHT): commit_fd becomes readable at its end and
 * commit_wait says how it went; one commit in flight at a time. gather_ms
 * and due say how long the store wants a group to grow. retain runs the
 * store's retention, if it is the writer's to run.
 *
 * Read side, any thread: the live state the endpoints answer from
 * (live_read: the own one, or one merged with other collectors'), the
 * store's /metrics lines, the query endpoints (query_start), for the
 * analysis's many queries of one request, the LMDB store that holds the job
 * a parsed query names (reads_*), and whether this collector is the one of
 * the store's that tells the outside world of a job's verdicts (announces),
 * and a version of what the store holds of a job (version).
 */
#ifndef NCCLSCOPE_COLLECTOR_CSTORE_H
#define NCCLSCOPE_COLLECTOR_CSTORE_H

#include <event2/buffer.h>
#include <event2/http.h>
#include <stddef.h>
#include <stdint.h>

#include "a2c.h"
#include "clock.h"
#include "live.h"
#include "qstream.h"
#include "query.h"
#include "store.h"

struct nsc_collector;
struct nsc_clocks;
struct nsc_item;

/* What the store says of a batch before it is put. */
typedef enum nsc_cstore_admit {
    NSC_CSTORE_NEW,        /* put it */
    NSC_CSTORE_DUPLICATE,  /* stored already: acknowledge it again */
    NSC_CSTORE_GAP,        /* would open one gap too many in its agent's sequences: refuse */
    NSC_CSTORE_UNKNOWN     /* which batches are stored is not known now: refuse */
} nsc_cstore_admit;

/* commit: started, its end is for commit_wait. */
#define NSC_CSTORE_INFLIGHT 1

/* fn on a live state at now (the collector's clock): fn's result, or -1. */
typedef int (*nsc_cstore_live_fn)(void *arg, const nsc_live *l, uint64_t now);

typedef struct nsc_cstore_ops {
    const char *name;
    /* ---- start ---- */
    int (*load_clocks)(void *h, struct nsc_clocks *clocks);
    int (*load_live)(void *h, const nsc_live_cfg *lc, nsc_live **out);
    /* Once the ports are bound: background work, if any. 0 or -1. */
    int (*start)(void *h);
    /* After the collector's stop flag is set: that work ended. */
    void (*stop)(void *h);
    void (*close)(void *h);
    /* ---- write side (writer thread) ---- */
    int (*begin)(void *h, uint64_t now_ns);
    nsc_cstore_admit (*admit)(void *h, const nsc_a2c_batch *a);
    /* Process pid of host as stored before: 0, or -1 (none, or not asked). */
    int (*find_proc)(void *h, const char *host, uint32_t pid, nsc_proc *out);
    int (*put_batch)(void *h, struct nsc_item *it);
    /* The wall clock of the group begun at now_ns: 0 with *offset_ns, 1
     * when none is known yet, or NSC_STORE_ENOMEM. */
    int (*wall)(void *h, uint64_t now_ns, int64_t *offset_ns);
    int (*put_progress)(void *h, const nsc_store_progress *p);
    int (*put_clock)(void *h, const char *host, const nsc_clock_model *m);
    /* How long the open group (opened at opened_ns) may wait for more
     * batches once none is waiting, in ms; due: it must go now. */
    long (*gather_ms)(void *h, uint64_t opened_ns, uint64_t now_ns);
    int (*due)(void *h, uint64_t opened_ns, uint64_t now_ns);
    int (*commit)(void *h);
    int (*commit_fd)(void *h);  /* -1: commits never stay in flight */
    int (*commit_wait)(void *h);
    void (*abort)(void *h);
    int (*retain)(void *h, uint64_t now_ns, uint64_t *deleted);
    /* ---- read side (any thread) ---- */
    int (*live_read)(void *h, nsc_cstore_live_fn fn, void *arg);
    void (*render)(void *h, struct evbuffer *b);
    /* The store query streams read in a transaction of their own, or NULL
     * when each query reads a store it holds itself (qstream.h). */
    nsc_store *(*direct)(void *h);
    /* Answer req with q (taken). */
    void (*query_start)(void *h, nsc_qstreams *set, struct evhttp_request *req, nsc_query *q);
    /* What one request's queries read, held until reads_free (NULL: out
     * of memory, which reads_store then reports). */
    void *(*reads_new)(void *h);
    /* The store holding what q reads of its job (none named: the only
     * job), until reads_done: 0, or an NSC_QUERY_* error with err. */
    int (*reads_store)(void *h, void *reads, const nsc_query *q, nsc_store **st, char *err, size_t errcap);
    /* The query that read st ended (a store loaded for it alone goes). */
    void (*reads_done)(void *h, void *reads, nsc_store *st);
    void (*reads_free)(void *h, void *reads);
    /* 1 when this collector posts job's verdicts to the webhook: one
     * collector of those sharing the store per job, so a receiver hears
     * each verdict once however many collectors found it. */
    int (*announces)(void *h, const char *job);
    /* What the store holds of job now, as a number that changes when a
     * share of it is stored (one collector's, or another's of the same
     * store): 0 with *out, or -1 when it cannot tell. */
    int (*version)(void *h, const char *job, uint64_t *out);
} nsc_cstore_ops;

typedef struct nsc_cstore {
    const nsc_cstore_ops *ops;
    void *h;
} nsc_cstore;

/* The store cfg->store names, for collector c: 0, or -1 after printing why. */
int nsc_cstore_open(struct nsc_collector *c, nsc_cstore *out);

/* The two implementations. */
int nsc_lmdbstore_open(struct nsc_collector *c, nsc_cstore *out);
int nsc_chback_open(struct nsc_collector *c, nsc_cstore *out);

#endif
