/* clocks.c: per-host clock models (see clocks.h). */
#include "clocks.h"
#include "grow.h"
#include "prom.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct host_clock {
    char host[64];
    char agent[64];  /* whose sample made it ("" for a model loaded from the store) */
    nsc_clock_model m;
    int dirty;
} host_clock;

struct nsc_clocks {
    host_clock *h;
    size_t n, cap, max, max_per_agent;
};

nsc_clocks *nsc_clocks_new(size_t max_hosts, size_t max_per_agent)
{
    nsc_clocks *c = calloc(1, sizeof *c);
    if (c)
        c->max = max_hosts, c->max_per_agent = max_per_agent;
    return c;
}

void nsc_clocks_free(nsc_clocks *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        nsc_clock_free(&c->h[i].m);
    free(c->h);
    free(c);
}

static host_clock *find(nsc_clocks *c, const char *host)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->h[i].host, host) == 0)
            return &c->h[i];
    return NULL;
}

/* A new host's slot (c->n < c->max), with an empty model or a copy of *from. */
static host_clock *add(nsc_clocks *c, const char *host, const nsc_clock_model *from)
{
    if (nsc_grow(&c->h, c->n, &c->cap, sizeof *c->h, 16))
        return NULL;
    host_clock *h = &c->h[c->n];
    memset(h, 0, sizeof *h);
    snprintf(h->host, sizeof h->host, "%s", host);
    int rc;
    if (from) {
        size_t len = nsc_clock_serialized_size(from);
        uint8_t *buf = malloc(len);
        if (!buf)
            return NULL;
        nsc_clock_serialize(from, buf);
        rc = nsc_clock_deserialize(&h->m, buf, len);
        free(buf);
    } else {
        rc = nsc_clock_init(&h->m, NULL);
    }
    if (rc)
        return NULL;
    c->n++;
    return h;
}

int nsc_clocks_adopt(void *clocks, const char *host, const nsc_clock_model *m)
{
    nsc_clocks *c = clocks;
    if (find(c, host) || c->n >= c->max)  /* beyond max_hosts: left in the store */
        return 0;
    return add(c, host, m) ? 0 : NSC_STORE_ENOMEM;
}

int nsc_clocks_load(nsc_clocks *c, nsc_store *st)
{
    nsc_store_reader *rd;
    int rc = nsc_store_read_begin(st, &rd);
    if (rc)
        return rc;
    rc = nsc_store_clocks(rd, nsc_clocks_adopt, c);
    nsc_store_read_end(rd);
    return rc;
}

int nsc_clocks_add(nsc_clocks *c, const nsc_a2c_probe *s)
{
    host_clock *h = find(c, s->host);
    if (!h) {
        size_t of_agent = 0;
        for (size_t i = 0; i < c->n; i++)
            of_agent += strcmp(c->h[i].agent, s->agent) == 0;
        if (c->n >= c->max)
            return NSC_CLOCKS_EFULL;
        if (of_agent >= c->max_per_agent)
            return NSC_CLOCKS_EAGENT;
        if (!(h = add(c, s->host, NULL)))
            return NSC_CLOCK_ENOMEM;
        snprintf(h->agent, sizeof h->agent, "%s", s->agent);
    }
    nsc_clock_sample cs = {s->t1, s->t2, s->t3, s->t4};
    int rc = nsc_clock_add(&h->m, &cs);
    h->dirty |= rc == 0;
    return rc;
}

int nsc_clocks_put_dirty(nsc_clocks *c, nsc_clocks_put_fn put, void *arg, uint64_t *n)
{
    for (size_t i = 0; i < c->n; i++) {
        if (!c->h[i].dirty)
            continue;
        int rc = put(arg, c->h[i].host, &c->h[i].m);
        if (rc)
            return rc;
        c->h[i].dirty = 0;
        (*n)++;
    }
    return 0;
}

int nsc_clocks_offset(nsc_clocks *c, const char *host, uint64_t ref_ns, uint64_t *off_ns, uint64_t *err_ns)
{
    const host_clock *h = find(c, host);
    uint64_t ref;
    /* the host time that maps to ref_ns is within the offset of it: the
     * model's drift over that offset is far below its bound */
    if (!h || nsc_clock_host_to_ref(&h->m, ref_ns, &ref, err_ns) != 0)
        return -1;
    *off_ns = ref - ref_ns;
    return 0;
}

void nsc_clocks_render(const nsc_clocks *c, struct evbuffer *b)
{
    static const char *const fam[2][2] = {
        {"ncclscope_collector_clock_offset_seconds", "Collector time minus host time at the host's last sample"},
        {"ncclscope_collector_clock_error_seconds", "Error bound of that offset"}};
    for (int k = 0; k < 2; k++) {
        nsc_prom_head(b, fam[k][0], "gauge", fam[k][1]);
        for (size_t i = 0; i < c->n; i++) {
            uint64_t ref, err, at = c->h[i].m.last_t1;
            if (nsc_clock_host_to_ref(&c->h[i].m, at, &ref, &err) != 0)
                continue;
            evbuffer_add_printf(b, "%s{host=\"", fam[k][0]);
            nsc_prom_label(b, c->h[i].host);
            evbuffer_add_printf(b, "\"} %.9f\n", k == 0 ? (double)(int64_t)(ref - at) / 1e9 : (double)err / 1e9);
        }
    }
}
