/* chback.c: the collector's store in ClickHouse (see chback.h, cstore.h).
 *
 * A group is the rows waiting for their insert (chstore.h); a batch is
 * always new here: one inserted twice folds into one (chrows.h), across
 * collectors too, so there is no dedupe state. Its commit is the insert,
 * which runs on the store's inserter thread (NSC_CSTORE_INFLIGHT). The
 * wall clock is recorded with the rows, as the LMDB store's begin records
 * it. Retention runs on the live-state thread (chretain.h), not the
 * writer's. Queries read a job loaded into the query cache's store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chback.h"
#include "chcache.h"
#include "chconn.h"
#include "chlive.h"
#include "chquery.h"
#include "clocks.h"
#include "cstate.h"
#include "item.h"

static int load_clocks(void *h, struct nsc_clocks *clocks)
{
    nsc_chback *b = h;
    return nsc_chstore_clocks(b->ch, nsc_clocks_adopt, clocks);
}

/* Empty, with the wall clock of the store's latest record, else the one
 * this collector records at its first commit: the shared state comes from
 * the snapshots (chlive.h). */
static int load_live(void *h, const nsc_live_cfg *lc, nsc_live **out)
{
    nsc_chback *b = h;
    nsc_store_wall_state none = {0};
    nsc_store_wall_rec now;
    if (nsc_chstore_wall_kept(b->ch, &now.offset_ns))
        nsc_store_wall_due(&none, nsc_mono_ns(), &now);
    if ((*out = nsc_live_new(lc)))
        nsc_live_set_wall(*out, now.offset_ns);
    return *out ? 0 : -1;
}

static int start(void *h)
{
    return nsc_chlive_start(h);
}

static void stop(void *h)
{
    nsc_chlive_stop(h);
}

static void close_back(void *h)
{
    nsc_chback *b = h;
    nsc_chcache_free(b->cache);  /* the queries ended with the HTTP server: none holds a job */
    nsc_chstore_close(b->ch);
    free(b);
}

static int begin(void *h, uint64_t now_ns)
{
    (void)h, (void)now_ns;  /* rows simply start to wait */
    return 0;
}

static nsc_cstore_admit admit(void *h, const nsc_a2c_batch *a)
{
    (void)h, (void)a;
    return NSC_CSTORE_NEW;
}

/* The stored processes are not asked: a query of ClickHouse per unknown pid
 * would stall the writer. */
static int find_proc(void *h, const char *host, uint32_t pid, nsc_proc *out)
{
    (void)h, (void)host, (void)pid, (void)out;
    return -1;
}

static int put_batch(void *h, nsc_item *it)
{
    nsc_chback *b = h;
    const nsc_a2c_batch *a = &it->a2c;
    for (uint32_t i = 0; i < a->nsections; i++)
        nsc_chstore_put(b->ch, a->agent, a->epoch, a->seq, i, &it->sb[i]);
    for (uint32_t i = 0; i < it->nsl; i++) {
        uint32_t k = (uint32_t)(it->sl[i].batch - it->ledgers);  /* its place among the batch's ledgers */
        if (it->sl[i].proc)
            nsc_chstore_put_ledger(b->ch, a->agent, a->epoch, a->seq, k, it->sl[i].proc, a->ledgers[k].data,
                                   a->ledgers[k].len, it->sl[i].batch);
    }
    for (uint32_t i = 0; i < a->nlife; i++) {
        nsc_store_life sl;
        nsc_item_life(it, i, &sl);
        nsc_chstore_put_life(b->ch, a->agent, a->epoch, a->seq, i, &sl);
    }
    return 0;
}

static int wall(void *h, uint64_t now_ns, int64_t *offset_ns)
{
    nsc_chback *b = h;
    int rc = nsc_chstore_put_wall(b->ch, now_ns);
    return rc ? rc : nsc_chstore_wall_kept(b->ch, offset_ns) == 0 ? 0 : 1;
}

static int put_progress(void *h, const nsc_store_progress *p)
{
    nsc_chback *b = h;
    return nsc_chstore_put_progress(b->ch, p);
}

static int put_clock(void *h, const char *host, const nsc_clock_model *m)
{
    nsc_chback *b = h;
    return nsc_chstore_put_clock(b->ch, host, m);
}

/* Larger inserts: rows gather until ch_flush_ms after the group opened. */
static long gather_ms(void *h, uint64_t opened_ns, uint64_t now_ns)
{
    nsc_chback *b = h;
    uint64_t due = opened_ns + b->c->cfg.ch_flush_ms * 1000000ull;
    return now_ns >= due ? 0 : (long)((due - now_ns) / 1000000ull) + 1;
}

/* Enough rows wait, or the group waited ch_flush_ms: a queue that never
 * empties must not hold batches longer. */
static int due(void *h, uint64_t opened_ns, uint64_t now_ns)
{
    nsc_chback *b = h;
    return nsc_chstore_pending(b->ch) >= (b->c->cfg.ch_flush_mb << 20) || gather_ms(h, opened_ns, now_ns) == 0;
}

static int commit(void *h)
{
    nsc_chback *b = h;
    nsc_chstore_insert_start(b->ch);
    return NSC_CSTORE_INFLIGHT;
}

static int commit_fd(void *h)
{
    nsc_chback *b = h;
    return nsc_chstore_insert_fd(b->ch);
}

static int commit_wait(void *h)
{
    nsc_chback *b = h;
    return nsc_chstore_insert_wait(b->ch);
}

static void abort_rows(void *h)
{
    nsc_chback *b = h;
    nsc_chstore_discard(b->ch);
}

static int retain(void *h, uint64_t now_ns, uint64_t *deleted)
{
    (void)h, (void)now_ns;  /* the live-state thread's (chretain.h) */
    *deleted = 0;
    return 0;
}

static int live_read(void *h, nsc_cstore_live_fn fn, void *arg)
{
    return nsc_chlive_read(h, fn, arg);
}

static int announces(void *h, const char *job)
{
    return nsc_chlive_announces(h, job);
}

static int version(void *h, const char *job, uint64_t *out)
{
    nsc_chback *b = h;
    return nsc_chcache_version(b->cache, job, out);
}

static void render(void *h, struct evbuffer *out)
{
    nsc_chback *b = h;
    nsc_chlive_render(b, out);
    nsc_chcache_render(b->cache, out);
}

static nsc_store *direct(void *h)
{
    (void)h;  /* each query holds its job's store (chquery.h) */
    return NULL;
}

static void query_start(void *h, nsc_qstreams *set, struct evhttp_request *req, nsc_query *q)
{
    nsc_chquery_start(h, set, req, q);
}

static void *reads_new(void *h)
{
    nsc_chjobs *s = malloc(sizeof *s);
    if (s)
        nsc_chjobs_init(s, h);
    return s;
}

static int reads_store(void *h, void *reads, const nsc_query *q, nsc_store **st, char *err, size_t errcap)
{
    (void)h;
    nsc_chjobs *s = reads;
    if (!s) {
        snprintf(err, errcap, "out of memory");
        return NSC_QUERY_ESTORE;
    }
    int rc = nsc_chjobs_hold(s, q, err, errcap);
    *st = rc ? NULL : s->st;
    return rc;
}

static void reads_done(void *h, void *reads, nsc_store *st)
{
    (void)h;
    if (reads)
        nsc_chjobs_done(reads, st);
}

static void reads_free(void *h, void *reads)
{
    (void)h;
    if (reads)
        nsc_chjobs_release(reads);
    free(reads);
}

static const nsc_cstore_ops ch_ops = {
    .name = "clickhouse",
    .load_clocks = load_clocks, .load_live = load_live, .start = start, .stop = stop, .close = close_back,
    .begin = begin, .admit = admit, .find_proc = find_proc, .put_batch = put_batch, .wall = wall,
    .put_progress = put_progress, .put_clock = put_clock, .gather_ms = gather_ms, .due = due, .commit = commit,
    .commit_fd = commit_fd, .commit_wait = commit_wait, .abort = abort_rows, .retain = retain,
    .live_read = live_read, .render = render, .direct = direct, .query_start = query_start, .announces = announces,
    .version = version, .reads_new = reads_new, .reads_store = reads_store, .reads_done = reads_done, .reads_free = reads_free,
};

int nsc_chback_open(nsc_collector *c, nsc_cstore *out)
{
    nsc_chback *b = calloc(1, sizeof *b);
    nsc_chconn conn;
    if (!b) {
        fprintf(stderr, "ncclscope-collector: out of memory\n");
        return -1;
    }
    b->c = c;
    if (nsc_chconn_init(&conn, c->cfg.ch_user, c->cfg.ch_password_file, (int)c->cfg.ch_tls, c->cfg.ch_ca_file) ||
        nsc_chstore_open(c->cfg.store, c->cfg.ch_shards, &conn, &b->ch) ||
        !(b->cache = nsc_chcache_new(c, b->ch, c->cfg.ch_query_cache))) {
        close_back(b);
        return -1;
    }
    *out = (nsc_cstore){&ch_ops, b};
    return 0;
}
