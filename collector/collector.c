/* collector.c: the daemon's life: open, run until a signal, stop in order. */
#include "collector.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "fetch.h"
#include "clocks.h"
#include "uclock.h"
#include "http.h"
#include "ingest.h"
#include "writer.h"

/* The one place that knows both kinds: --store lmdb, or clickhouse://... */
int nsc_cstore_open(nsc_collector *c, nsc_cstore *out)
{
    return strcmp(c->cfg.store, "lmdb") ? nsc_chback_open(c, out) : nsc_lmdbstore_open(c, out);
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
    if (!f || fprintf(f, "zmq %d\nhttp %d\nudp %d\n", c->zmq_port, c->http_port, c->udp_port) < 0 || fclose(f) ||
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
    if (c->store.ops)
        c->store.ops->close(c->store.h);
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
    nsc_uclock *uc = NULL;
    nsc_http *h = NULL;
    int rc = 1;
    if (!(c.clocks = nsc_clocks_new(cfg->max_hosts, cfg->max_hosts_per_agent)) ||
        !(c.fetch = nsc_cfetch_new(cfg->max_agents, clock_of, &c)) || nsc_cstore_open(&c, &c.store) ||
        c.store.ops->load_live(c.store.h, &lc, &c.live) ||
        !(c.zctx = zmq_ctx_new()) || nsc_writer_start(&c, &w))
        goto out;
    if (nsc_uclock_start(&c, &uc) || nsc_ingest_start(&c, &in)) {
        nsc_writer_stop_alone(&c);
        goto out;
    }
    if (c.store.ops->start(c.store.h) == 0 && nsc_http_start(&c, &h) == 0 && write_ports(&c) == 0) {
        fprintf(stderr, "ncclscope-collector: listening on %s (port %d), http port %d, UDP clock port %d, db %s, store %s\n",
                c.cfg.listen, c.zmq_port, c.http_port, c.udp_port, c.cfg.db, c.cfg.store);
        int sig;
        sigwait(&sigs, &sig);
        fprintf(stderr, "ncclscope-collector: signal %d: committing what is pending\n", sig);
        rc = 0;
    }
    atomic_store(&c.stop, 1);
    nsc_http_join(h);
    c.store.ops->stop(c.store.h);
    nsc_ingest_join(in);
out:
    nsc_uclock_stop(uc);
    if (w)
        nsc_writer_join(w);
    teardown(&c);
    return rc;
}
