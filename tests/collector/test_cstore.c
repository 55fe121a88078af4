/* test_cstore.c: the collector's store interface (collector/cstore.h), the
 * same cases against whichever store NSC_CSTORE_URL names: "lmdb" (the
 * default, ctest collector_cstore) or clickhouse://HOST:PORT/DB (ctest
 * clickhouse_cstore: tests/clickhouse/cstore.sh starts a real
 * clickhouse-server and runs this program against it). A case drives the
 * store as the writer does (admit, begin, put, wall, commit, waiting for a
 * commit left in flight) and reads back as the query endpoints do (reads_*:
 * the LMDB store, or the job loaded from ClickHouse). Every case writes a job
 * of its own, so the cases never see each other's rows. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "itemutil.h"
#include "mix.h"
#include "storeutil.h"

static nsc_collector coll;
static char *dir;     /* holds the store's --db, made by the store */
static char job[64];  /* the case's job, and its agent */

static void open_store(void)
{
    const char *url = getenv("NSC_CSTORE_URL");
    dir = nsc_tmp_store_dir();
    char db[PATH_MAX];
    snprintf(db, sizeof db, "%s/db", dir);
    char *argv[] = {"test", "--db", db, "--store", (char *)(url ? url : "lmdb"), "--ch-flush-ms", "1"};
    memset(&coll, 0, sizeof coll);
    cr_assert_eq(nsc_coll_cfg_load(&coll.cfg, 7, argv, stderr), 0);
    cr_assert_eq(nsc_stats_init(&coll.stats), 0);
    pthread_mutex_init(&coll.live_mu, NULL);
    cr_assert_eq(nsc_cstore_open(&coll, &coll.store), 0);
    nsc_live_cfg lc = nsc_collector_live_cfg(&coll.cfg);
    cr_assert_eq(coll.store.ops->load_live(coll.store.h, &lc, &coll.live), 0);
    /* a job of the case's own: the ClickHouse server outlives the cases */
    snprintf(job, sizeof job, "cstore-%d-%s", (int)getpid(), strrchr(dir, '/') + 1);
}

static int remove_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb, (void)type, (void)ftw;
    return remove(path);
}

static void close_store(void)
{
    coll.store.ops->close(coll.store.h);
    nsc_live_free(coll.live);
    pthread_mutex_destroy(&coll.live_mu);
    nsc_stats_free(&coll.stats);
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);  /* the store's files, and the query cache's */
    free(dir);
}

TestSuite(cstore, .init = open_store, .fini = close_store);

/* A batch of the case's agent with one section of process pid of the case's job
 * (rank pid % 2 of communicator 0xc0) and that process's ledger batch of n
 * records. */
static nsc_item *batch(uint64_t seq, uint32_t pid, uint32_t n)
{
    static uint8_t sec[4096], led[4096];
    nsc_batch_hdr h = {.version = NSC_WIRE_VERSION, .proc = nsc_test_proc(job, "node0", pid, 0)};
    nsc_ctx_def ctx = nsc_test_ctx(0, 0xc0, (int)(pid % 2), 2);
    nsc_enc e;
    cr_assert_eq(nsc_enc_begin(&e, sec, sizeof sec, &h), 0);
    cr_assert_eq(nsc_enc_ctx(&e, &ctx), 0);
    size_t seclen = nsc_enc_finish(&e);
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_ledger_rec recs[16];
    nsc_mix_strs(strs);
    cr_assert_leq(n, 16);
    for (uint32_t i = 0; i < n; i++)
        nsc_mix_ledger(&recs[i], 0xc0, i, (int32_t)(pid % 2));
    nsc_ledger_batch lb = {.pid = pid, .nstrs = NSC_MIX_NSTRS, .nrecs = n, .strs = strs, .recs = recs};
    nsc_a2c_section secs[1] = {{sec, (uint32_t)seclen}};
    nsc_a2c_section ledgers[1] = {{led, (uint32_t)nsc_ledger_encode(&lb, led)}};
    nsc_a2c_batch b = {.host = "node0", .epoch = 1, .seq = seq, .nsections = 1, .sections = secs,
                       .nledgers = 1, .ledgers = ledgers};
    snprintf(b.agent, sizeof b.agent, "%s", job);
    unsigned reason = 0;
    nsc_item *it = nsc_test_item(&b, &reason);
    cr_assert_not_null(it, "batch refused: reason %u", reason);
    return it;
}

/* What the writer does with one group: each batch the store admits as new
 * put, then the group's wall clock and its commit, waited for. Returns the
 * commit's result; *nnew: how many were admitted as new. */
static int write_group(nsc_item **items, size_t n, size_t *nnew)
{
    const nsc_cstore *s = &coll.store;
    uint64_t now = nsc_mono_ns();
    int64_t off;
    *nnew = 0;
    cr_assert_eq(s->ops->begin(s->h, now), 0);
    for (size_t i = 0; i < n; i++)
        if (s->ops->admit(s->h, &items[i]->a2c) == NSC_CSTORE_NEW) {
            cr_assert_eq(s->ops->put_batch(s->h, items[i]), 0);
            ++*nnew;
        }
    cr_assert_eq(s->ops->wall(s->h, now, &off), 0, "no wall clock for the group");
    int rc = s->ops->commit(s->h);
    return rc == NSC_CSTORE_INFLIGHT ? s->ops->commit_wait(s->h) : rc;
}

static int count_rec(void *arg, const nsc_ledger_rec *r)
{
    (void)r;
    ++*(size_t *)arg;
    return 0;
}

/* The case's job as the query endpoints read it: its communicators and
 * ledger records; 0, or the reads' error. */
static int read_job(size_t *ncomms, size_t *nrecs)
{
    const nsc_cstore *s = &coll.store;
    char err[256] = "", qs[128];
    nsc_query *lq;
    /* the job's ledger, of every communicator: the whole job is read */
    snprintf(qs, sizeof qs, "job=%s", job);
    cr_assert_eq(nsc_query_parse("ledger", qs, &lq, err, sizeof err), 0, "%s", err);
    void *reads = s->ops->reads_new(s->h);
    nsc_store *st;
    int rc = s->ops->reads_store(s->h, reads, lq, &st, err, sizeof err);
    *ncomms = *nrecs = 0;
    if (!rc) {
        nsc_store_reader *rd;
        uint32_t id;
        cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
        if (nsc_store_job_id(rd, job, &id) == 0) {
            nsc_store_comm *comms = NULL;
            nsc_store_ledger_q q = {.job = id, .comm = 0xc0, .seq_lo = 0, .seq_hi = 1000, .rank_lo = 0, .rank_hi = 7};
            cr_assert_eq(nsc_store_comms(rd, id, &comms, ncomms), 0);
            free(comms);
            cr_assert_eq(nsc_store_ledger_read(rd, &q, count_rec, nrecs), 0);
        }
        nsc_store_read_end(rd);
        s->ops->reads_done(s->h, reads, st);
    }
    s->ops->reads_free(s->h, reads);
    nsc_query_free(lq);
    return rc;
}

Test(cstore, committed_batch_reads_back)
{
    nsc_item *its[2] = {batch(1, 100, 5), batch(2, 101, 3)};
    size_t nnew, ncomms, nrecs;
    cr_assert_eq(write_group(its, 2, &nnew), 0);
    cr_assert_eq(nnew, 2);
    cr_assert_eq(read_job(&ncomms, &nrecs), 0);
    cr_assert_eq(ncomms, 1);
    cr_assert_eq(nrecs, 8, "ledger records read back: %zu", nrecs);
    nsc_item_free(its[0]), nsc_item_free(its[1]);
}

/* A batch sent again after its commit (its ack lost) counts once: refused
 * as a duplicate, or stored again and folded into one when read. */
Test(cstore, batch_again_counts_once)
{
    nsc_item *first = batch(1, 100, 4), *again = batch(1, 100, 4);
    size_t nnew, ncomms, nrecs;
    cr_assert_eq(write_group(&first, 1, &nnew), 0);
    cr_assert_eq(write_group(&again, 1, &nnew), 0);
    cr_assert_eq(read_job(&ncomms, &nrecs), 0);
    cr_assert_eq(nrecs, 4, "ledger records read back: %zu", nrecs);
    nsc_item_free(first), nsc_item_free(again);
}

/* An aborted group leaves nothing: a later commit does not bring it back. */
Test(cstore, aborted_group_leaves_nothing)
{
    const nsc_cstore *s = &coll.store;
    nsc_item *lost = batch(1, 100, 6), *kept = batch(2, 101, 2);
    size_t nnew, ncomms, nrecs;
    cr_assert_eq(s->ops->begin(s->h, nsc_mono_ns()), 0);
    cr_assert_eq(s->ops->admit(s->h, &lost->a2c), NSC_CSTORE_NEW);
    cr_assert_eq(s->ops->put_batch(s->h, lost), 0);
    s->ops->abort(s->h);
    cr_assert_eq(write_group(&kept, 1, &nnew), 0);
    cr_assert_eq(read_job(&ncomms, &nrecs), 0);
    cr_assert_eq(nrecs, 2, "ledger records read back: %zu", nrecs);
    nsc_item_free(lost), nsc_item_free(kept);
}

/* The version of the job moves when a share of it is stored and holds
 * while nothing is: on ClickHouse, where another collector's share lands
 * after this one's live state learnt of it; LMDB's one writer keeps one
 * number (lmdbstore.c). */
Test(cstore, version_moves_with_a_share)
{
    const nsc_cstore *s = &coll.store;
    nsc_item *first = batch(1, 100, 2), *second = batch(2, 101, 2);
    size_t nnew;
    uint64_t v0, again, v1;
    cr_assert_eq(write_group(&first, 1, &nnew), 0);
    cr_assert_eq(s->ops->version(s->h, job, &v0), 0);
    cr_assert_eq(s->ops->version(s->h, job, &again), 0);
    cr_assert_eq(again, v0, "version moved with nothing stored");
    cr_assert_eq(write_group(&second, 1, &nnew), 0);
    cr_assert_eq(s->ops->version(s->h, job, &v1), 0);
    if (strcmp(s->ops->name, "clickhouse") == 0)
        cr_assert_neq(v1, v0, "version held after a share was stored");
    else
        cr_assert_eq(v1, v0);
    nsc_item_free(first), nsc_item_free(second);
}

/* The store's /metrics lines are its own and say what it holds. */
Test(cstore, renders_its_metrics)
{
    nsc_item *it = batch(1, 100, 1);
    size_t nnew, ncomms, nrecs;
    cr_assert_eq(write_group(&it, 1, &nnew), 0);
    cr_assert_eq(read_job(&ncomms, &nrecs), 0);
    struct evbuffer *b = evbuffer_new();
    coll.store.ops->render(coll.store.h, b);
    size_t len = evbuffer_get_length(b);
    char *text = calloc(1, len + 1);
    evbuffer_remove(b, text, len);
    evbuffer_free(b);
    int lmdb = strstr(text, "ncclscope_collector_store_map_bytes") != NULL;
    int ch = strstr(text, "ncclscope_collector_query_loads_total") != NULL;
    cr_assert(lmdb != ch, "one store's lines, not %s:\n%s", lmdb ? "both" : "none", text);
    cr_assert_eq(lmdb, strcmp(coll.store.ops->name, "lmdb") == 0);
    free(text);
    nsc_item_free(it);
}

/* A job the store never held reads as empty or not found, never as another's. */
Test(cstore, unknown_job_holds_nothing)
{
    size_t ncomms, nrecs;
    read_job(&ncomms, &nrecs);
    cr_assert_eq(ncomms, 0);
    cr_assert_eq(nrecs, 0);
}
