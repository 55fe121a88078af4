/* prefetch.c: fetch before query (see prefetch.h). */
#include "prefetch.h"

#include <stdio.h>
#include <stdlib.h>

#include "fetch.h"
#include "mono.h"
#include "prom.h"
#include "reply.h"

/* How often a waiting request looks at its fetch: a fetch takes at least
 * a round trip to every agent and a commit. */
#define POLL_MS 20

typedef struct waiting {
    nsc_prefetch *p;
    struct evhttp_request *req;
    uint64_t id, deadline_ns;
    nsc_prefetch_next next;
    struct waiting *prev, *link;
} waiting;

struct nsc_prefetch {
    nsc_collector *c;
    nsc_hguard *guard;
    struct event *timer;
    waiting *head;
    uint64_t fetches, incomplete, refused, left;  /* the counters /metrics shows */
};

static void unlink_one(nsc_prefetch *p, waiting *w)
{
    if (w->prev)
        w->prev->link = w->link;
    else
        p->head = w->link;
    if (w->link)
        w->link->prev = w->prev;
}

/* The client left: a request libevent detached is ours to answer (which
 * frees it); one still on its connection goes with it. */
static void on_close(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    waiting *w = arg;
    unlink_one(w->p, w);
    w->p->left++;
    if (!evhttp_request_get_connection(w->req))
        nsc_http_json_error(w->req, 503, "Service Unavailable", "the client left");
    w->next.drop(w->next.arg);
    free(w);
}

/* Go on with w's request, its fetch's report in hand. */
static void finish(nsc_prefetch *p, waiting *w)
{
    char *text = NULL;
    size_t len = 0;
    int complete = 0;
    FILE *f = open_memstream(&text, &len);
    int rc = !f || nsc_cfetch_report_json(p->c->fetch, w->id, f, &complete);
    if (f && fclose(f))
        rc = -1;
    unlink_one(p, w);
    nsc_hguard_on_close(p->guard, evhttp_request_get_connection(w->req), NULL, NULL);
    if (rc) {
        nsc_http_json_error(w->req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
        w->next.drop(w->next.arg);
    } else {
        p->incomplete += !complete;
        w->next.then(w->next.arg, w->req, text);
    }
    free(text);
    free(w);
}

static void arm(nsc_prefetch *p)
{
    struct timeval tv = {0, POLL_MS * 1000};
    if (p->head && !evtimer_pending(p->timer, NULL))
        evtimer_add(p->timer, &tv);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    nsc_prefetch *p = arg;
    uint64_t now = nsc_mono_ns();
    for (waiting *w = p->head, *link; w; w = link) {
        link = w->link;
        if (nsc_cfetch_done(p->c->fetch, w->id) || now >= w->deadline_ns)
            finish(p, w);
    }
    arm(p);
}

nsc_prefetch *nsc_prefetch_new(struct event_base *base, nsc_hguard *guard, nsc_collector *c)
{
    nsc_prefetch *p = calloc(1, sizeof *p);
    if (p && !(p->timer = evtimer_new(base, on_timer, p))) {
        free(p);
        return NULL;
    }
    if (p)
        p->c = c, p->guard = guard;
    return p;
}

void nsc_prefetch_free(nsc_prefetch *p)
{
    if (!p)
        return;
    while (p->head) {
        waiting *w = p->head;
        unlink_one(p, w);
        nsc_hguard_on_close(p->guard, evhttp_request_get_connection(w->req), NULL, NULL);
        nsc_http_json_error(w->req, 503, "Service Unavailable", "the collector is stopping");
        w->next.drop(w->next.arg);
        free(w);
    }
    event_free(p->timer);
    free(p);
}

int nsc_prefetch_start(nsc_prefetch *p, struct evhttp_request *req, const char *job, uint64_t t0, uint64_t t1,
                       const nsc_prefetch_next *next)
{
    waiting *w = calloc(1, sizeof *w);
    uint64_t id = w ? nsc_cfetch_ask(p->c->fetch, job, t0, t1, 1) : 0;
    if (!id) {
        p->refused++;
        free(w);
        return -1;
    }
    p->fetches++;
    *w = (waiting){.p = p, .req = req, .id = id, .next = *next, .link = p->head,
                   .deadline_ns = nsc_mono_ns() + p->c->cfg.detail_wait_ms * 1000000ull};
    if (p->head)
        p->head->prev = w;
    p->head = w;
    nsc_hguard_on_close(p->guard, evhttp_request_get_connection(req), on_close, w);
    arm(p);
    return 0;
}

void nsc_prefetch_render(const nsc_prefetch *p, struct evbuffer *out)
{
    nsc_prom_u64(out, "ncclscope_collector_detail_query_fetches_total", "counter",
                 "Queries that fetched their window's detail first (detail = on-demand)", p->fetches);
    nsc_prom_u64(out, "ncclscope_collector_detail_query_incomplete_total", "counter",
                 "Of those, answered with detail missing (an agent did not answer in detail_wait_ms, or its ring no longer held the window)",
                 p->incomplete);
    nsc_prom_u64(out, "ncclscope_collector_detail_query_refused_total", "counter",
                 "Queries answered 503: too many detail fetches waiting", p->refused);
    nsc_prom_u64(out, "ncclscope_collector_detail_query_left_total", "counter",
                 "Clients that left while their query waited for detail", p->left);
}
