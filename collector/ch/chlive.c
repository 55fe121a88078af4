/* chlive.c: the live state shared through ClickHouse (see chlive.h). */
#include "chlive.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chanswer.h"
#include "chretain.h"
#include "chrows.h"
#include "chstore.h"
#include "fnv.h"

#define REQUEST_MAX_S 5               /* a request that takes longer fails (and stop waits no longer) */
#define LOG_EVERY_NS 10000000000ull   /* failures repeat every interval: log once per 10 s */
#define ID_MAX 128

typedef struct peer {
    char id[ID_MAX];
    uint64_t wall_ns;  /* when it wrote its snapshot (wall clock) */
    nsc_live *live;    /* in this collector's time base */
} peer;

struct nsc_chlive {
    nsc_collector *c;
    nsc_chback *b;
    nsc_live_cfg cfg;
    char id[ID_MAX];
    char server[256], table[160];  /* where the snapshots are: the first source's live table */
    pthread_t thread;
    pthread_mutex_t mu;            /* guards peers (the thread swaps them, readers merge them) */
    peer *peers;
    size_t npeers;
    /* This collector's newest snapshot from before it started (a restart
     * with the same id), read before its first write replaces it: part of
     * its own state from then on. NULL: none. Set once, under mu. */
    nsc_live *before;
    int peers_read;                /* the peers were read once: whom jobs hash to is known */
    uint64_t quiet_until_ns;
    _Atomic uint64_t written, write_failures, read_failures, rejected;
};

static void log_failure(nsc_chlive *cl, const char *what, const char *why)
{
    uint64_t now = nsc_mono_ns();
    if (now < cl->quiet_until_ns)
        return;
    fprintf(stderr, "ncclscope-collector: live state in clickhouse: %s: %s (logged once per 10 s)\n", what, why);
    cl->quiet_until_ns = now + LOG_EVERY_NS;
}

/* POST body to url; the answer in *ans (malloc'd, *len bytes). 0 or -1 (logged). */
static int request(nsc_chlive *cl, const char *url, const void *body, size_t len, const char *what, char **ans,
                   size_t *anslen)
{
    char err[256];
    int rc = nsc_chanswer_post_text(nsc_chstore_conn(cl->b->ch), url, body, len, REQUEST_MAX_S, what, ans, anslen,
                                  err, sizeof err);
    if (rc)
        log_failure(cl, what, err);
    return rc ? -1 : 0;
}

/* The own state into v: what it took before it started, then since. */
static int merge_own(nsc_chlive *cl, nsc_live *v)
{
    return (cl->before ? nsc_live_merge(v, cl->before) : 0) || nsc_live_merge(v, cl->c->live) ? -1 : 0;
}

/* The own state's snapshot (with what it took before it started: a
 * restarted collector keeps publishing that too). */
static int own_snapshot(nsc_chlive *cl, uint64_t *wall, uint8_t **snap, size_t *len)
{
    nsc_collector *c = cl->c;
    nsc_live *v = NULL;
    if (cl->before && !(v = nsc_live_new(&cl->cfg)))
        return -1;
    pthread_mutex_lock(&c->live_mu);
    uint64_t now = nsc_mono_ns();
    *wall = nsc_wall_ns();
    int rc = v ? merge_own(cl, v) : 0;
    if (!rc)
        rc = nsc_live_snapshot(v ? v : c->live, now, *wall, snap, len);
    pthread_mutex_unlock(&c->live_mu);
    nsc_live_free(v);
    return rc;
}

static void publish(nsc_chlive *cl)
{
    uint8_t *snap = NULL;
    size_t len = 0, anslen;
    uint64_t wall;
    int rc = own_snapshot(cl, &wall, &snap, &len);
    nsc_ch_buf row = {0};
    char url[512], *ans = NULL;
    if (!rc) {
        nsc_ch_rows_live(&row, cl->id, wall, snap, len);
        snprintf(url, sizeof url, "%s?query=INSERT%%20INTO%%20%s%%20FORMAT%%20RowBinary", cl->server, cl->table);
        rc = row.failed || request(cl, url, row.p, row.len, "writing the snapshot", &ans, &anslen);
    }
    atomic_fetch_add(rc ? &cl->write_failures : &cl->written, 1);
    free(ans);
    free(row.p);
    free(snap);
}

static void free_peers(peer *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        nsc_live_free(p[i].live);
    free(p);
}

static uint64_t take_u64(const uint8_t **p, const uint8_t *end)
{
    uint64_t v = 0;
    if (end - *p < 8) {
        *p = NULL;
        return 0;
    }
    for (int i = 7; i >= 0; i--)
        v = v << 8 | (*p)[i];
    *p += 8;
    return v;
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const peer *)a)->id, ((const peer *)b)->id);
}

/* One answer row (collector, wall_ns, snapshot) at *p: a peer into out
 * (none for this collector, a stale or a rejected snapshot; with own, this
 * collector's own of any age and nothing else). -1: the answer does not
 * parse. */
static int take_row(nsc_chlive *cl, const uint8_t **p, const uint8_t *end, uint64_t now, uint64_t wall, int own,
                    peer *out, int *got)
{
    size_t idl, sl;
    const uint8_t *id = nsc_ch_take_string(p, end, &idl), *snap;
    uint64_t at = id ? take_u64(p, end) : 0;
    if (!id || !*p || !(snap = nsc_ch_take_string(p, end, &sl)) || idl >= ID_MAX)
        return -1;
    *got = 0;
    memcpy(out->id, id, idl);
    out->id[idl] = 0;
    out->wall_ns = at;
    if ((strcmp(out->id, cl->id) == 0) != own ||
        (!own && wall > at && wall - at > cl->cfg.heartbeat_timeout_ns))
        return 0;
    const char *why;
    if (nsc_live_from_snapshot(snap, sl, &cl->cfg, now, wall, &out->live, &why)) {
        atomic_fetch_add(&cl->rejected, 1);
        char what[ID_MAX + 40];
        snprintf(what, sizeof what, "snapshot of %s left out", out->id);
        log_failure(cl, what, why);
        return 0;
    }
    /* A collector that missed its last writes is dead or cut off: the rates
     * of its last interval are not current (a tick of a state just read
     * closes an empty window: every rate 0). */
    if (wall > at && wall - at > 2 * cl->c->cfg.live_interval_ms * 1000000ull)
        nsc_live_tick(out->live, now);
    *got = 1;
    return 0;
}

/* The peers of an answer (with own: this collector's row alone); -1 when
 * it does not parse. */
static int parse_peers(nsc_chlive *cl, const uint8_t *p, const uint8_t *end, int own, peer **out, size_t *n)
{
    uint64_t now = nsc_mono_ns(), wall = nsc_wall_ns();
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    while (p != end) {
        if (*n == cap) {
            peer *np = realloc(*out, (cap = cap ? cap * 2 : 4) * sizeof *np);
            if (!np)
                return -1;
            *out = np;
        }
        int got = 0;
        if (take_row(cl, &p, end, now, wall, own, &(*out)[*n], &got))
            return -1;
        *n += (size_t)got;
    }
    if (*n)
        qsort(*out, *n, sizeof **out, by_id);
    return 0;
}

/* The peers kept when a read failed: those still within the timeout. */
static void age_peers(nsc_chlive *cl)
{
    uint64_t wall = nsc_wall_ns();
    size_t k = 0;
    pthread_mutex_lock(&cl->mu);
    for (size_t i = 0; i < cl->npeers; i++)
        if (wall > cl->peers[i].wall_ns && wall - cl->peers[i].wall_ns > cl->cfg.heartbeat_timeout_ns)
            nsc_live_free(cl->peers[i].live);
        else
            cl->peers[k++] = cl->peers[i];
    cl->npeers = k;
    pthread_mutex_unlock(&cl->mu);
}

/* The newest snapshot of every collector (own: of this one) into *got.
 * 0, or -1 (logged and counted). */
static int read_rows(nsc_chlive *cl, int own, peer **got, size_t *n)
{
    char sql[768], lit[2 * ID_MAX + 3] = "", *ans = NULL;
    size_t len = 0;
    *got = NULL, *n = 0;
    if (own && nsc_chanswer_literal(cl->id, lit, sizeof lit))
        return -1;
    snprintf(sql, sizeof sql,
             "SELECT collector, max(wall_ns), argMax(snapshot, wall_ns) FROM %s%s%s GROUP BY collector FORMAT RowBinary",
             cl->table, own ? " WHERE collector = " : "", lit);
    const char *what = own ? "reading its own last snapshot" : "reading the snapshots";
    int rc = request(cl, cl->server, sql, strlen(sql), what, &ans, &len);
    if (!rc && parse_peers(cl, (const uint8_t *)ans, (const uint8_t *)ans + len, own, got, n)) {
        log_failure(cl, what, "the answer does not parse");
        rc = -1;
    }
    free(ans);
    if (rc) {
        free_peers(*got, *n);
        *got = NULL, *n = 0;
        atomic_fetch_add(&cl->read_failures, 1);
    }
    return rc;
}

static void refresh(nsc_chlive *cl)
{
    size_t n;
    peer *got;
    if (read_rows(cl, 0, &got, &n)) {
        age_peers(cl);
        return;
    }
    pthread_mutex_lock(&cl->mu);
    peer *old = cl->peers;
    size_t nold = cl->npeers;
    cl->peers = got, cl->npeers = n;
    cl->peers_read = 1;
    pthread_mutex_unlock(&cl->mu);
    free_peers(old, nold);
}

/* Before its first write: this collector's own last snapshot, if it had
 * one (a restart with the same collector_id), becomes cl->before. 0 when
 * read (found or not), -1 when ClickHouse did not answer: the thread asks
 * again next interval and writes nothing meanwhile, so the row survives. */
static int resume(nsc_chlive *cl)
{
    size_t n;
    peer *got;
    if (read_rows(cl, 1, &got, &n))
        return -1;
    if (n) {
        uint64_t wall = nsc_wall_ns();
        /* its rates were those of the previous run's last interval */
        nsc_live_tick(got[0].live, nsc_mono_ns());
        pthread_mutex_lock(&cl->mu);
        cl->before = got[0].live;
        pthread_mutex_unlock(&cl->mu);
        got[0].live = NULL;
        fprintf(stderr, "ncclscope-collector: live state: collector '%s' resumed from its snapshot of %.1f s ago\n",
                cl->id, wall > got[0].wall_ns ? (double)(wall - got[0].wall_ns) / 1e9 : 0.0);
    }
    free_peers(got, n);
    return 0;
}

/* Retention (chretain.h) when due: it too must not hold the writer or HTTP. */
static void retain(nsc_chlive *cl, uint64_t now, uint64_t *due)
{
    uint64_t period = nsc_chretain_period_ns(cl->c);
    char err[256];
    if (!period || now < *due)
        return;
    *due = now + period;
    if (nsc_chretain_pass(cl->b, nsc_wall_ns(), err, sizeof err) < 0)
        log_failure(cl, "retention", err);
}

static void *run(void *arg)
{
    nsc_chlive *cl = arg;
    nsc_collector *c = cl->c;
    uint64_t period = c->cfg.live_interval_ms * 1000000ull, retain_due = 0;
    int resumed = 0;
    while (!atomic_load(&c->stop)) {
        uint64_t t0 = nsc_mono_ns();
        if (resumed || (resumed = resume(cl) == 0))
            publish(cl);
        refresh(cl);
        retain(cl, t0, &retain_due);
        while (!atomic_load(&c->stop) && nsc_mono_ns() - t0 < period)
            usleep(20000);
    }
    return NULL;
}

static void default_id(const nsc_collector *c, char *id)
{
    char host[64] = "";
    if (gethostname(host, sizeof host - 1))
        snprintf(host, sizeof host, "collector");
    snprintf(id, ID_MAX, "%s:%d", host, c->zmq_port);
}

int nsc_chlive_start(nsc_chback *b)
{
    nsc_collector *c = b->c;
    nsc_chlive *cl = calloc(1, sizeof *cl);
    if (!cl)
        return -1;
    cl->c = c;
    cl->b = b;
    cl->cfg = nsc_collector_live_cfg(&c->cfg);
    if (c->cfg.collector_id[0])
        snprintf(cl->id, sizeof cl->id, "%s", c->cfg.collector_id);
    else
        default_id(c, cl->id);
    const char *server, *suffix, *db;
    nsc_chstore_sources(b->ch, &server, 1, &suffix, &db);
    snprintf(cl->server, sizeof cl->server, "%s", server);
    snprintf(cl->table, sizeof cl->table, "%s.%s%s", db, nsc_ch_def(NSC_CH_LIVE).name, suffix);
    pthread_mutex_init(&cl->mu, NULL);
    if (pthread_create(&cl->thread, NULL, run, cl)) {
        pthread_mutex_destroy(&cl->mu);
        free(cl);
        return -1;
    }
    b->live = cl;
    fprintf(stderr, "ncclscope-collector: live state shared in clickhouse as collector '%s'\n", cl->id);
    return 0;
}

void nsc_chlive_stop(nsc_chback *b)
{
    nsc_chlive *cl = b->live;
    if (!cl)
        return;
    pthread_join(cl->thread, NULL);
    b->live = NULL;
    free_peers(cl->peers, cl->npeers);
    nsc_live_free(cl->before);
    pthread_mutex_destroy(&cl->mu);
    free(cl);
}

/* The own state and the peers', merged in the order of their ids: the
 * same states give the same view (its lists' order too) whoever merges. */
static nsc_live *view(nsc_chlive *cl)
{
    nsc_live *v = nsc_live_new(&cl->cfg);
    int rc = v ? 0 : -1, own = 0;
    pthread_mutex_lock(&cl->mu);
    pthread_mutex_lock(&cl->c->live_mu);
    for (size_t i = 0; !rc && i <= cl->npeers; i++) {
        if (!own && (i == cl->npeers || strcmp(cl->id, cl->peers[i].id) < 0)) {
            own = 1;
            rc = merge_own(cl, v);
        }
        if (!rc && i < cl->npeers)
            rc = nsc_live_merge(v, cl->peers[i].live);
    }
    int64_t off;
    if (!rc && nsc_live_wall(cl->c->live, &off) == 0)  /* the merged times are on this collector's clock */
        nsc_live_set_wall(v, off);
    pthread_mutex_unlock(&cl->c->live_mu);
    pthread_mutex_unlock(&cl->mu);
    if (rc) {
        nsc_live_free(v);
        return NULL;
    }
    return v;
}

int nsc_chlive_announces(nsc_chback *b, const char *job)
{
    nsc_chlive *cl = b->live;
    if (!cl)
        return 0;
    uint64_t own = nsc_fnv_rendezvous(job, cl->id, strlen(cl->id));
    pthread_mutex_lock(&cl->mu);
    int owner = cl->peers_read;
    for (size_t i = 0; owner && i < cl->npeers; i++) {
        uint64_t s = nsc_fnv_rendezvous(job, cl->peers[i].id, strlen(cl->peers[i].id));
        owner = s < own || (s == own && strcmp(cl->id, cl->peers[i].id) < 0);
    }
    pthread_mutex_unlock(&cl->mu);
    return owner;
}

int nsc_chlive_read(nsc_chback *b, nsc_cstore_live_fn fn, void *arg)
{
    if (!b->live)  /* before start, after stop */
        return nsc_cstore_own_live(b->c, fn, arg);
    nsc_live *v = view(b->live);
    int rc = v ? fn(arg, v, nsc_mono_ns()) : -1;
    nsc_live_free(v);
    return rc;
}

void nsc_chlive_render(nsc_chback *cb, struct evbuffer *b)
{
    nsc_chlive *cl = cb->live;
    if (!cl)
        return;
    pthread_mutex_lock(&cl->mu);
    size_t peers = cl->npeers;
    pthread_mutex_unlock(&cl->mu);
    evbuffer_add_printf(b, "# HELP ncclscope_collector_live_snapshots_written_total Live snapshots written to clickhouse\n"
                           "# TYPE ncclscope_collector_live_snapshots_written_total counter\n"
                           "ncclscope_collector_live_snapshots_written_total %" PRIu64 "\n"
                           "# HELP ncclscope_collector_live_snapshot_failures_total Snapshot writes and reads that failed\n"
                           "# TYPE ncclscope_collector_live_snapshot_failures_total counter\n"
                           "ncclscope_collector_live_snapshot_failures_total{op=\"write\"} %" PRIu64 "\n"
                           "ncclscope_collector_live_snapshot_failures_total{op=\"read\"} %" PRIu64 "\n"
                           "# HELP ncclscope_collector_live_snapshots_rejected_total Other collectors' snapshots that did not decode (left out)\n"
                           "# TYPE ncclscope_collector_live_snapshots_rejected_total counter\n"
                           "ncclscope_collector_live_snapshots_rejected_total %" PRIu64 "\n"
                           "# HELP ncclscope_collector_live_peers Other collectors whose live state is merged into this one's answers\n"
                           "# TYPE ncclscope_collector_live_peers gauge\nncclscope_collector_live_peers %zu\n",
                        atomic_load(&cl->written), atomic_load(&cl->write_failures), atomic_load(&cl->read_failures),
                        atomic_load(&cl->rejected), peers);
}
