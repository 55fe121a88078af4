/* vfetch.c: raw detail fetched around every verdict (see vfetch.h). */
#include "vfetch.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "prom.h"

#define PENDING 64  /* verdicts waiting for their window's end; more are counted as failures */

typedef struct pending {
    char job[64];
    uint64_t from_ns, to_ns;  /* the collector's clock; due at to_ns */
} pending;

struct nsc_vfetch {
    nsc_collector *c;
    pending p[PENDING];
    size_t n;
    atomic_uint_fast64_t verdicts, fetches, failures;
};

nsc_vfetch *nsc_vfetch_new(nsc_collector *c)
{
    nsc_vfetch *v = calloc(1, sizeof *v);
    if (v)
        v->c = c;
    return v;
}

void nsc_vfetch_free(nsc_vfetch *v)
{
    free(v);
}

static int is_verdict(const char *kind)
{
    static const char *const kinds[] = {"hung",     "in_flight", "missing",   "lagging",
                                        "stall",    "gpu_late",  "host_late", "slow_link", "slow_nic"};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(kind, kinds[i]) == 0)
            return 1;
    return 0;
}

void nsc_vfetch_verdicts(nsc_vfetch *v, const char *job, const nsc_problem *const *fresh, size_t n, uint64_t now)
{
    const nsc_coll_cfg *cfg = &v->c->cfg;
    uint64_t span = cfg->detail_span_ms * 1000000ull, back = span + cfg->rootcause_interval_ms * 1000000ull;
    int asked = 0;  /* one window per job and pass: the verdicts found together share it */
    for (size_t i = 0; i < n; i++) {
        if (!is_verdict(fresh[i]->kind))
            continue;
        atomic_fetch_add(&v->verdicts, 1);
        if (asked++)
            continue;
        if (v->n == PENDING) {
            atomic_fetch_add(&v->failures, 1);
            continue;
        }
        pending *q = &v->p[v->n++];
        snprintf(q->job, sizeof q->job, "%s", job);
        q->from_ns = now > back ? now - back : 1;
        q->to_ns = now + span;
    }
}

void nsc_vfetch_run(nsc_vfetch *v, uint64_t now)
{
    size_t k = 0;
    for (size_t i = 0; i < v->n; i++) {
        const pending *q = &v->p[i];
        if (q->to_ns > now) {
            v->p[k++] = *q;
            continue;
        }
        if (nsc_cfetch_ask(v->c->fetch, q->job, q->from_ns, q->to_ns, 1))
            atomic_fetch_add(&v->fetches, 1);
        else
            atomic_fetch_add(&v->failures, 1);  /* 16 fetches waiting to be sent */
    }
    v->n = k;
}

void nsc_vfetch_render(nsc_vfetch *v, struct evbuffer *out)
{
    nsc_prom_u64(out, "ncclscope_collector_detail_verdicts_total", "counter",
                 "New verdicts (hang, stall, straggler, slow link or NIC) that asked for their window's detail",
                 atomic_load(&v->verdicts));
    nsc_prom_u64(out, "ncclscope_collector_detail_verdict_fetches_total", "counter",
                 "Detail fetches asked around verdicts (one per job and root-cause pass)", atomic_load(&v->fetches));
    nsc_prom_u64(out, "ncclscope_collector_detail_verdict_fetch_failures_total", "counter",
                 "Verdict fetches that could not be asked (too many waiting)", atomic_load(&v->failures));
}
