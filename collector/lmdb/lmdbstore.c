/* lmdbstore.c: the collector's store in LMDB (cstore.h, --store lmdb).
 *
 * Owns the LMDB store of the db directory and the dedupe state of what it
 * committed (dedupe.h): a batch committed already is a duplicate, and while
 * that state is not known no batch is admitted, so none is stored twice.
 * A group is one write transaction; its commit ends at once. Queries read
 * the store directly, each in a read transaction of its own.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocks.h"
#include "cstate.h"
#include "dedupe.h"
#include "item.h"
#include "writer.h"

typedef struct lmdbstore {
    nsc_collector *c;
    nsc_store *st;
    nsc_dedupe *dedupe;
    int txn_open;
    uint64_t next_reload_log_ns;  /* rate limit of the dedupe-reload message */
} lmdbstore;

/* Replace the dedupe state with what the store committed. When that fails
 * which batches are stored is not known: admit refuses every batch until a
 * reload works. */
static int reload_dedupe(lmdbstore *s)
{
    int rc = nsc_dedupe_load(s->dedupe, s->st);
    if (rc) {
        atomic_fetch_add_explicit(&s->c->stats.dedupe_reload_failures, 1, memory_order_relaxed);
        if (nsc_writer_log_due(&s->next_reload_log_ns))
            nsc_writer_log_store("reloading the committed batch sequences (batches refused until it works)", rc);
    }
    return rc;
}

static int load_clocks(void *h, struct nsc_clocks *clocks)
{
    lmdbstore *s = h;
    return nsc_clocks_load(clocks, s->st);
}

/* The live state as the store left it: after a restart status says what
 * `ncclscope --db DIR status` says. */
static int load_live(void *h, const nsc_live_cfg *lc, nsc_live **out)
{
    lmdbstore *s = h;
    nsc_store_reader *rd;
    int rc = nsc_store_read_begin(s->st, &rd);
    if (!rc) {
        rc = nsc_live_from_store(rd, lc, nsc_mono_ns(), out);
        nsc_store_read_end(rd);
    }
    if (rc)
        fprintf(stderr, "ncclscope-collector: live state from %s: %s\n", s->c->cfg.db, nsc_store_strerror(rc));
    return rc ? -1 : 0;
}

static int start(void *h)
{
    (void)h;  /* no work of its own besides the writer's */
    return 0;
}

static void stop(void *h)
{
    (void)h;
}

static void close_store(void *h)
{
    lmdbstore *s = h;
    nsc_store_close(s->st);
    nsc_dedupe_free(s->dedupe);
    free(s);
}

static int begin(void *h, uint64_t now_ns)
{
    lmdbstore *s = h;
    int rc = nsc_store_begin(s->st, now_ns);
    s->txn_open = rc == 0;
    return rc;
}

static nsc_cstore_admit admit(void *h, const nsc_a2c_batch *a)
{
    lmdbstore *s = h;
    if (!nsc_dedupe_known(s->dedupe) && (s->txn_open || reload_dedupe(s)))
        return NSC_CSTORE_UNKNOWN;
    switch (nsc_dedupe_classify(s->dedupe, a->agent, a->epoch, a->seq)) {
    case NSC_DEDUPE_DUPLICATE:
        return NSC_CSTORE_DUPLICATE;
    case NSC_DEDUPE_FULL:
        return NSC_CSTORE_GAP;
    case NSC_DEDUPE_UNKNOWN:
        return NSC_CSTORE_UNKNOWN;
    default:
        return NSC_CSTORE_NEW;
    }
}

static int find_proc(void *h, const char *host, uint32_t pid, nsc_proc *out)
{
    lmdbstore *s = h;
    nsc_store_reader *rd;
    if (nsc_store_read_begin(s->st, &rd))
        return -1;
    int rc = nsc_store_find_proc(rd, host, pid, out);
    nsc_store_read_end(rd);
    return rc ? -1 : 0;
}

/* Sections, placed ledger batches (in the batch's transaction: stored
 * exactly once with it), life, and the batch marked committed. */
static int put_batch(void *h, nsc_item *it)
{
    lmdbstore *s = h;
    int rc = 0;
    for (uint32_t i = 0; !rc && i < it->a2c.nsections; i++)
        rc = nsc_store_put(s->st, &it->sb[i]);
    for (uint32_t i = 0; !rc && i < it->nsl; i++)
        if (it->sl[i].proc)
            rc = nsc_store_put_ledger(s->st, &it->sl[i]);
    for (uint32_t i = 0; !rc && i < it->a2c.nlife; i++) {
        nsc_store_life sl;
        nsc_item_life(it, i, &sl);
        rc = nsc_store_put_life(s->st, &sl);
    }
    if (!rc && nsc_dedupe_mark(s->dedupe, it->a2c.agent, it->a2c.epoch, it->a2c.seq))
        rc = NSC_STORE_ENOMEM;
    return rc;
}

/* begin recorded the wall clock (the store's wall_clock option). */
static int wall(void *h, uint64_t now_ns, int64_t *offset_ns)
{
    lmdbstore *s = h;
    (void)now_ns;
    return nsc_store_wall_kept(s->st, offset_ns) == 0 ? 0 : 1;
}

static int put_progress(void *h, const nsc_store_progress *p)
{
    lmdbstore *s = h;
    return nsc_store_put_progress(s->st, p);
}

static int put_clock(void *h, const char *host, const nsc_clock_model *m)
{
    lmdbstore *s = h;
    return nsc_store_put_clock(s->st, host, m);
}

/* Commit as soon as no batch waits: a transaction's cost barely grows. */
static long gather_ms(void *h, uint64_t opened_ns, uint64_t now_ns)
{
    (void)h, (void)opened_ns, (void)now_ns;
    return 0;
}

static int due(void *h, uint64_t opened_ns, uint64_t now_ns)
{
    (void)h, (void)opened_ns, (void)now_ns;
    return 0;
}

static void abort_txn(void *h)
{
    lmdbstore *s = h;
    s->txn_open = 0;
    nsc_store_abort(s->st);
    reload_dedupe(s);
}

/* The dedupe state joins the transaction; on failure nothing of it is
 * kept and the dedupe state is reloaded from what really was committed. */
static int commit(void *h)
{
    lmdbstore *s = h;
    int rc = nsc_dedupe_put_dirty(s->dedupe, s->st);
    if (rc) {
        abort_txn(s);
    } else {
        s->txn_open = 0;
        if ((rc = nsc_store_commit(s->st)))
            reload_dedupe(s);
    }
    if (rc)
        nsc_writer_log_store("commit (nothing acknowledged)", rc);
    return rc;
}

static int commit_fd(void *h)
{
    (void)h;
    return -1;
}

static int commit_wait(void *h)
{
    (void)h;  /* never in flight */
    return 0;
}

static int retain(void *h, uint64_t now_ns, uint64_t *deleted)
{
    lmdbstore *s = h;
    return nsc_store_retain(s->st, now_ns, deleted);
}

static int live_read(void *h, nsc_cstore_live_fn fn, void *arg)
{
    lmdbstore *s = h;
    return nsc_cstore_own_live(s->c, fn, arg);
}

static void render(void *h, struct evbuffer *b)
{
    lmdbstore *s = h;
    nsc_store_reader *rd;
    nsc_store_stats st;
    /* Never wait for the writer here: while it grows the map it waits for
     * readers, and a reader may be waiting on this thread. */
    if (nsc_store_read_begin_nowait(s->st, &rd))
        return;
    int rc = nsc_store_stats_get(rd, &st);
    nsc_store_read_end(rd);
    if (rc)
        return;
    evbuffer_add_printf(b, "# HELP ncclscope_collector_store_events Events in the store\n"
                           "# TYPE ncclscope_collector_store_events gauge\nncclscope_collector_store_events %" PRIu64 "\n"
                           "# HELP ncclscope_collector_store_live_bytes Pages in use by all databases\n"
                           "# TYPE ncclscope_collector_store_live_bytes gauge\nncclscope_collector_store_live_bytes %" PRIu64 "\n"
                           "# HELP ncclscope_collector_store_map_bytes LMDB map size\n"
                           "# TYPE ncclscope_collector_store_map_bytes gauge\nncclscope_collector_store_map_bytes %" PRIu64 "\n"
                           "# HELP ncclscope_collector_store_bytes_per_event Pages in use per stored event\n"
                           "# TYPE ncclscope_collector_store_bytes_per_event gauge\nncclscope_collector_store_bytes_per_event %.2f\n"
                           "# HELP ncclscope_collector_store_unattached_states_total States stored without their event (never joined to it)\n"
                           "# TYPE ncclscope_collector_store_unattached_states_total counter\nncclscope_collector_store_unattached_states_total %" PRIu64 "\n"
                           "# HELP ncclscope_collector_store_ledger_records Ledger records in the store\n"
                           "# TYPE ncclscope_collector_store_ledger_records gauge\nncclscope_collector_store_ledger_records %" PRIu64 "\n"
                           "# HELP ncclscope_collector_store_ledger_bytes Pages in use by the ledger database\n"
                           "# TYPE ncclscope_collector_store_ledger_bytes gauge\nncclscope_collector_store_ledger_bytes %" PRIu64 "\n",
                        st.events, st.live_bytes, st.map_bytes, st.events ? (double)st.live_bytes / (double)st.events : 0.0,
                        st.unattached_states, st.ledger_records, st.ledger_live_bytes);
}

/* The only collector of its store: it announces every job's verdicts. */
static int announces(void *h, const char *job)
{
    (void)h, (void)job;
    return 1;
}

/* One number for every job: this collector is its store's only writer, and
 * its own live state, whose processes tell that a job ended, learns each
 * batch as it stores it; no other collector's share comes later. */
static int version(void *h, const char *job, uint64_t *out)
{
    (void)h, (void)job;
    *out = 0;
    return 0;
}

static nsc_store *direct(void *h)
{
    lmdbstore *s = h;
    return s->st;
}

static void query_start(void *h, nsc_qstreams *set, struct evhttp_request *req, nsc_query *q)
{
    (void)h;  /* the stream reads direct(), whichever job q names */
    nsc_qstream_start(set, req, q);
}

/* Every job is in the one store: nothing to hold per request. */
static void *reads_new(void *h)
{
    return h;
}

static int reads_store(void *h, void *reads, const nsc_query *q, nsc_store **st, char *err, size_t errcap)
{
    lmdbstore *s = h;
    (void)reads, (void)q, (void)err, (void)errcap;
    *st = s->st;
    return 0;
}

static void reads_done(void *h, void *reads, nsc_store *st)
{
    (void)h, (void)reads, (void)st;
}

static void reads_free(void *h, void *reads)
{
    (void)h, (void)reads;
}

static const nsc_cstore_ops lmdb_ops = {
    .name = "lmdb",
    .load_clocks = load_clocks, .load_live = load_live, .start = start, .stop = stop, .close = close_store,
    .begin = begin, .admit = admit, .find_proc = find_proc, .put_batch = put_batch, .wall = wall,
    .put_progress = put_progress, .put_clock = put_clock, .gather_ms = gather_ms, .due = due, .commit = commit,
    .commit_fd = commit_fd, .commit_wait = commit_wait, .abort = abort_txn, .retain = retain,
    .live_read = live_read, .render = render, .direct = direct, .query_start = query_start, .announces = announces,
    .version = version, .reads_new = reads_new, .reads_store = reads_store, .reads_done = reads_done, .reads_free = reads_free,
};

int nsc_lmdbstore_open(nsc_collector *c, nsc_cstore *out)
{
    nsc_store_opts o = {.wall_clock = 1,
                        .initial_map = (size_t)c->cfg.map_initial_mb << 20,
                        .max_map = (size_t)c->cfg.map_max_mb << 20,
                        .retain_bytes = c->cfg.retain_mb << 20,
                        .retain_age_ns = c->cfg.retain_age_s * 1000000000ull};
    lmdbstore *s = calloc(1, sizeof *s);
    if (!s || !(s->dedupe = nsc_dedupe_new())) {
        fprintf(stderr, "ncclscope-collector: out of memory\n");
        free(s);
        return -1;
    }
    s->c = c;
    int rc = nsc_store_open(c->cfg.db, &o, &s->st);
    if (rc)
        fprintf(stderr, "ncclscope-collector: db %s: %s\n", c->cfg.db, nsc_store_strerror(rc));
    else if ((rc = nsc_dedupe_load(s->dedupe, s->st)))
        nsc_writer_log_store("cannot load the committed batch sequences (not starting: batches could be stored twice)",
                             rc);
    if (rc) {
        close_store(s);
        return -1;
    }
    *out = (nsc_cstore){&lmdb_ops, s};
    return 0;
}
