/* collector.c: the daemon's life: open, run until a signal, stop in order. */
#include "collector.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "chlive.h"
#include "fetch.h"
#include "chstore.h"
#include "clocks.h"
#include "http.h"
#include "ingest.h"
#include "writer.h"

/* The LMDB store opens in ClickHouse mode too: the HTTP API's queries still
 * read it and find nothing there (docs/clickhouse.md, "Not done yet"). */
static int open_store(nsc_collector *c)
{
    nsc_store_opts o = {.wall_clock = 1,
                        .initial_map = (size_t)c->cfg.map_initial_mb << 20,
                        .max_map = (size_t)c->cfg.map_max_mb << 20,
                        .retain_bytes = c->cfg.retain_mb << 20,
                        .retain_age_ns = c->cfg.retain_age_s * 1000000000ull};
    int rc = nsc_store_open(c->cfg.db, &o, &c->store);
    if (rc)
        fprintf(stderr, "ncclscope-collector: db %s: %s\n", c->cfg.db, nsc_store_strerror(rc));
    if (rc == 0 && strcmp(c->cfg.store, "lmdb")) {
        nsc_chconn conn;
        rc = nsc_chconn_init(&conn, c->cfg.ch_user, c->cfg.ch_password_file, (int)c->cfg.ch_tls, c->cfg.ch_ca_file);
        if (rc == 0)
            rc = nsc_chstore_open(c->cfg.store, c->cfg.ch_shards, &conn, &c->ch);
    }
    return rc ? -1 : 0;
}

nsc_live_cfg nsc_collector_live_cfg(const nsc_coll_cfg *cfg)
{
    return (nsc_live_cfg){.heartbeat_timeout_ns = cfg->heartbeat_timeout_ms * 1000000ull,
                          .lag_ns = cfg->hang_ms * 1000000ull,
                          .evict_ns = cfg->live_evict_s * 1000000000ull,
                          .max_jobs = (uint32_t)cfg->max_jobs,
                          .max_comms_per_job = (uint32_t)cfg->max_comms_per_job,
                          .max_procs_per_job = (uint32_t)cfg->max_procs_per_job,
                          .max_procs_per_agent = (uint32_t)cfg->max_procs_per_agent};
}

/* The live state as the store left it (LMDB): after a restart status says
 * what `ncclscope --db DIR status` says. ClickHouse's starts empty, with
 * the wall clock this collector records at its first commit (writer.c). */
static int load_live(nsc_collector *c, const nsc_live_cfg *lc)
{
    if (c->ch) {
        nsc_store_wall_rec now;
        nsc_store_wall_due(0, 0, nsc_mono_ns(), &now);
        if ((c->live = nsc_live_new(lc)))
            nsc_live_set_wall(c->live, now.offset_ns);
        return c->live ? 0 : -1;
    }
    nsc_store_reader *rd;
    int rc = nsc_store_read_begin(c->store, &rd);
    if (!rc) {
        rc = nsc_live_from_store(rd, lc, nsc_mono_ns(), &c->live);
        nsc_store_read_end(rd);
    }
    if (rc)
        fprintf(stderr, "ncclscope-collector: live state from %s: %s\n", c->cfg.db, nsc_store_strerror(rc));
    return rc ? -1 : 0;
}

/* fetch.c's view of the clock models. */
static int clock_of(void *arg, const char *host, uint64_t ref_ns, uint64_t *off_ns, uint64_t *err_ns)
{
    nsc_collector *c = arg;
    pthread_mutex_lock(&c->clock_mu);
    int rc = nsc_clocks_offset(c->clocks, host, ref_ns, off_ns, err_ns);
    pthread_mutex_unlock(&c->clock_mu);
    return rc;
}

static int write_ports(const nsc_collector *c)
{
    if (!c->cfg.port_file[0])
        return 0;
    char tmp[sizeof c->cfg.port_file + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", c->cfg.port_file);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "zmq %d\nhttp %d\n", c->zmq_port, c->http_port) < 0 || fclose(f) ||
        rename(tmp, c->cfg.port_file)) {
        fprintf(stderr, "ncclscope-collector: port file %s: %s\n", c->cfg.port_file, strerror(errno));
        return -1;
    }
    return 0;
}

static void teardown(nsc_collector *c)
{
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    nsc_store_close(c->store);
    nsc_chstore_close(c->ch);
    nsc_clocks_free(c->clocks);
    nsc_cfetch_free(c->fetch);
    nsc_live_free(c->live);
    pthread_mutex_destroy(&c->clock_mu);
    pthread_mutex_destroy(&c->live_mu);
    nsc_stats_free(&c->stats);
}

int nsc_collector_run(const nsc_coll_cfg *cfg)
{
    static nsc_collector c;
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);  /* threads inherit it; main waits for them */
    signal(SIGPIPE, SIG_IGN);  /* an HTTP client gone mid-reply is a write error, not our end */
    c.cfg = *cfg;
    if (nsc_stats_init(&c.stats))
        return 1;
    pthread_mutex_init(&c.clock_mu, NULL);
    pthread_mutex_init(&c.live_mu, NULL);
    nsc_live_cfg lc = nsc_collector_live_cfg(cfg);
    nsc_writer *w = NULL;
    nsc_ingest *in = NULL;
    nsc_http *h = NULL;
    int rc = 1;
    if (!(c.clocks = nsc_clocks_new(cfg->max_hosts, cfg->max_hosts_per_agent)) ||
        !(c.fetch = nsc_cfetch_new(cfg->max_agents, clock_of, &c)) || open_store(&c) || load_live(&c, &lc) ||
        !(c.zctx = zmq_ctx_new()) || nsc_writer_start(&c, &w))
        goto out;
    if (nsc_ingest_start(&c, &in)) {
        nsc_writer_stop_alone(&c);
        goto out;
    }
    if ((!c.ch || nsc_chlive_start(&c) == 0) && nsc_http_start(&c, &h) == 0 && write_ports(&c) == 0) {
        fprintf(stderr, "ncclscope-collector: listening on %s (port %d), http port %d, db %s, store %s\n",
                c.cfg.listen, c.zmq_port, c.http_port, c.cfg.db, c.cfg.store);
        int sig;
        sigwait(&sigs, &sig);
        fprintf(stderr, "ncclscope-collector: signal %d: committing what is pending\n", sig);
        rc = 0;
    }
    atomic_store(&c.stop, 1);
    nsc_http_join(h);
    nsc_chlive_stop(&c);
    nsc_ingest_join(in);
out:
    if (w)
        nsc_writer_join(w);
    teardown(&c);
    return rc;
}
