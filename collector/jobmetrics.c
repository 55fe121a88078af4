/* jobmetrics.c: per-communicator Prometheus families (see jobmetrics.h). */
#include "jobmetrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "live.h"
#include "prom.h"

/* The labels identifying one communicator: nccl_job="...",comm="0x...". */
typedef struct comm_labels {
    char text[320];
} comm_labels;

static void labels_of(const nsc_live_comm_stat *s, comm_labels *l)
{
    char job[2 * sizeof s->job];
    nsc_prom_escape(job, sizeof job, s->job);
    snprintf(l->text, sizeof l->text, "nccl_job=\"%s\",comm=\"0x%" PRIx64 "\"", job, s->id);
}

typedef double (*comm_value)(const nsc_live_comm_stat *s);

static double ranks(const nsc_live_comm_stat *s) { return s->nranks; }
static double ranks_seen(const nsc_live_comm_stat *s) { return s->ranks_seen; }
static double events(const nsc_live_comm_stat *s) { return (double)s->events; }
static double bus_bw(const nsc_live_comm_stat *s) { return s->bus_bw; }
static double lag(const nsc_live_comm_stat *s) { return s->lag_s; }
static double lag_rank(const nsc_live_comm_stat *s) { return s->lag_rank; }
static double lagging(const nsc_live_comm_stat *s) { return s->lagging; }
static double hung(const nsc_live_comm_stat *s) { return s->hung; }
static double hung_colls(const nsc_live_comm_stat *s) { return s->hung_colls; }
static double in_flight(const nsc_live_comm_stat *s) { return s->in_flight; }
static double in_flight_max(const nsc_live_comm_stat *s) { return s->in_flight_max_s; }

static const struct {
    const char *name, *type, *help;
    comm_value value;
} families[] = {
    {"ncclscope_comm_ranks", "gauge", "Ranks of the communicator (nranks)", ranks},
    {"ncclscope_comm_ranks_seen", "gauge", "Ranks the collector has heard from", ranks_seen},
    {"ncclscope_comm_events_total", "counter", "Profiler events received", events},
    {"ncclscope_comm_bus_bandwidth_bytes_per_second", "gauge",
     "Mean bus bandwidth (nccl-tests rule) of the collectives completed in the last live interval", bus_bw},
    {"ncclscope_comm_lag_seconds", "gauge",
     "Longest time a rank has been behind the communicator's furthest rank (0: none behind)", lag},
    {"ncclscope_comm_lag_rank", "gauge", "The rank behind longest (-1: none)", lag_rank},
    {"ncclscope_comm_lagging_ranks", "gauge", "Ranks behind for longer than hang_ms, per function (NCCL RAS rule)",
     lagging},
    {"ncclscope_comm_hung_ranks", "gauge",
     "Ranks whose collective is in flight past hang_ms while another rank finished it, per function", hung},
    {"ncclscope_comm_hung_collectives", "gauge",
     "Collectives a rank is hung in or lagging ranks never reached (docs/api-figures.md \"Hung\")", hung_colls},
    {"ncclscope_comm_collectives_in_flight", "gauge", "Ranks' latest collectives started and not completed",
     in_flight},
    {"ncclscope_comm_in_flight_max_seconds", "gauge", "Age of the oldest collective in flight (0: none)",
     in_flight_max},
};

static void render_info(const nsc_live_comm_stat *s, const comm_labels *l, size_t n, struct evbuffer *b)
{
    evbuffer_add_printf(b, "# HELP ncclscope_comm_info Communicators exported, with their names\n"
                           "# TYPE ncclscope_comm_info gauge\n");
    for (size_t i = 0; i < n; i++) {
        char name[2 * sizeof s[i].name];
        nsc_prom_escape(name, sizeof name, s[i].name);
        evbuffer_add_printf(b, "ncclscope_comm_info{%s,name=\"%s\"} 1\n", l[i].text, name);
    }
}

static void render_collectives(const nsc_live_comm_stat *s, const comm_labels *l, size_t n, struct evbuffer *b)
{
    evbuffer_add_printf(b, "# HELP ncclscope_comm_collectives_total Collectives issued (highest seqNumber seen + 1)\n"
                           "# TYPE ncclscope_comm_collectives_total counter\n");
    for (size_t i = 0; i < n; i++)
        for (int f = 0; f < s[i].nf; f++) {
            char fn[2 * sizeof s[i].f[f].name];
            nsc_prom_escape(fn, sizeof fn, s[i].f[f].name);
            evbuffer_add_printf(b, "ncclscope_comm_collectives_total{%s,func=\"%s\"} %" PRIu64 "\n", l[i].text, fn,
                                s[i].f[f].collectives);
        }
}

/* One histogram's series; labels: the comm's and any more (",func=..."). */
static void render_hist(struct evbuffer *b, const char *name, const char *labels, const char *more,
                        const nsc_live_hist *h)
{
    uint64_t below = 0;
    for (int k = 0; k < NSC_LIVE_HIST_BOUNDS; k++) {
        below += h->buckets[k];
        evbuffer_add_printf(b, "%s_bucket{%s%s,le=\"%g\"} %" PRIu64 "\n", name, labels, more, nsc_live_hist_le[k],
                            below);
    }
    below += h->buckets[NSC_LIVE_HIST_BOUNDS];
    evbuffer_add_printf(b, "%s_bucket{%s%s,le=\"+Inf\"} %" PRIu64 "\n%s_sum{%s%s} %.9g\n%s_count{%s%s} %" PRIu64 "\n",
                        name, labels, more, below, name, labels, more, h->sum_s, name, labels, more, h->count);
}

static void render_durations(const nsc_live_comm_stat *s, const comm_labels *l, size_t n, struct evbuffer *b)
{
    const char *h = "ncclscope_comm_collective_duration_seconds";
    evbuffer_add_printf(b, "# HELP %s Collective durations: one per collective as docs/api-figures.md \"Figures\" defines "
                           "it, from the ledger; where the communicator has no ledger record, one per rank and "
                           "collective, Coll start to completion\n"
                           "# TYPE %s histogram\n", h, h);
    for (size_t i = 0; i < n; i++)
        for (int f = 0; f < s[i].nf; f++) {
            char fn[2 * sizeof s[i].f[f].name], more[sizeof fn + 16];
            nsc_prom_escape(fn, sizeof fn, s[i].f[f].name);
            snprintf(more, sizeof more, ",func=\"%s\"", fn);
            render_hist(b, h, l[i].text, more, &s[i].f[f].duration);
        }
}

static void render_arrivals(const nsc_live_comm_stat *s, const comm_labels *l, size_t n, struct evbuffer *b)
{
    const char *h = "ncclscope_comm_arrival_delay_seconds";
    evbuffer_add_printf(b, "# HELP %s How long after the first rank each rank reached a collective (collector clock)\n"
                           "# TYPE %s histogram\n", h, h);
    for (size_t i = 0; i < n; i++)
        render_hist(b, h, l[i].text, "", &s[i].arrival);
}

typedef struct comm_stats {
    size_t max, n, omitted;
    nsc_live_comm_stat *s;
} comm_stats;

static int get_comm_stats(void *arg, const nsc_live *l, uint64_t now)
{
    comm_stats *cs = arg;
    return nsc_live_comm_stats(l, now, cs->max, &cs->s, &cs->n, &cs->omitted);
}

/* This collector's live state: the jobs it holds and evicted, and what
 * its limits refused (docs/configuration.md, "Limits"). */
static void render_live_bounds(nsc_collector *c, struct evbuffer *b)
{
    nsc_live_counts cn;
    pthread_mutex_lock(&c->live_mu);
    nsc_live_counts_get(c->live, nsc_mono_ns(), &cn);
    pthread_mutex_unlock(&c->live_mu);
    nsc_prom_u64(b, "ncclscope_collector_live_jobs", "gauge", "Jobs in the live state", cn.jobs);
    nsc_prom_u64(b, "ncclscope_collector_live_evicted_jobs_total", "counter",
                 "Jobs evicted from the live state live_evict_s after they ended", cn.evicted_jobs);
    nsc_prom_u64(b, "ncclscope_collector_live_ledger_dropped_total", "counter",
                 "Ledger records the live state made no figure of (collective given way past live_open_colls, "
                 "communicator not known, a rank's record again)", cn.ledger_dropped);
    const char *r = "ncclscope_collector_live_refused_total";
    nsc_prom_head(b, r, "counter", "Jobs, communicators and processes not tracked live (stored) because a limit was reached, by limit");
    for (int i = 0; i < NSC_LIVE_LIMITS; i++)
        evbuffer_add_printf(b, "%s{limit=\"max_%s\"} %" PRIu64 "\n", r, nsc_live_limit_name(i), cn.refused[i]);
}

void nsc_jobmetrics_render(nsc_collector *c, struct evbuffer *b)
{
    render_live_bounds(c, b);
    comm_stats cs = {.max = c->cfg.metrics_max_comms};
    int rc = c->store.ops->live_read(c->store.h, get_comm_stats, &cs);
    nsc_live_comm_stat *s = cs.s;
    size_t n = cs.n, omitted = cs.omitted;
    comm_labels *l = n ? calloc(n, sizeof *l) : NULL;
    if (rc || (n && !l)) {
        free(s);
        return;
    }
    for (size_t i = 0; i < n; i++)
        labels_of(&s[i], &l[i]);
    evbuffer_add_printf(b, "# HELP ncclscope_collector_metrics_comms_omitted Communicators left out of /metrics "
                           "(beyond metrics_max_comms)\n"
                           "# TYPE ncclscope_collector_metrics_comms_omitted gauge\n"
                           "ncclscope_collector_metrics_comms_omitted %zu\n", omitted);
    render_info(s, l, n, b);
    for (size_t k = 0; k < sizeof families / sizeof families[0]; k++) {
        nsc_prom_head(b, families[k].name, families[k].type, families[k].help);
        for (size_t i = 0; i < n; i++)
            evbuffer_add_printf(b, "%s{%s} %.15g\n", families[k].name, l[i].text, families[k].value(&s[i]));
    }
    render_collectives(s, l, n, b);
    render_durations(s, l, n, b);
    render_arrivals(s, l, n, b);
    free(l);
    free(s);
}
