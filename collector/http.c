/* http.c: the HTTP API (see http.h). */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "auth.h"
#include "clocks.h"
#include "diagapi.h"
#include "fetch.h"
#include "hguard.h"
#include "hstall.h"
#include "jobmetrics.h"
#include "livejson.h"
#include "mono.h"
#include "prefetch.h"
#include "prom.h"
#include "qs.h"
#include "qstream.h"
#include "rcmetrics.h"
#include "query.h"
#include "reply.h"
#include "ui.h"

#define TIMER_MS 100
/* A status answer is served again for this long: however many clients ask,
 * the live state is rendered (under its lock, on this thread, which also
 * answers /healthz) at most ten times a second. */
#define STATUS_FRESH_NS 100000000ull

typedef struct sse_client {
    nsc_http *h;
    struct evhttp_request *req;
    struct sse_client *next;
} sse_client;

struct nsc_http {
    nsc_collector *c;
    struct event_base *base;
    struct evhttp *http;
    nsc_hguard *guard;         /* what clients may make it hold */
    struct event *timer;
    pthread_t thread;
    char token[256];
    sse_client *clients;
    nsc_qstreams *queries;     /* running query responses */
    nsc_rcmetrics *rcm;        /* root-cause metrics' thread */
    nsc_prefetch *prefetch;    /* queries waiting for their detail (detail = on-demand) */
    uint64_t last_tick_ns;
    nsc_hstall stall;          /* how long the loop could not answer (run, route, on_timer) */
    char *status_text;         /* the last status answer, rendered at status_ns */
    size_t status_len;
    uint64_t status_ns;
};

static void send_body(struct evhttp_request *req, const char *type, const char *data, size_t len)
{
    struct evbuffer *b = evbuffer_new();
    if (!b || evbuffer_add(b, data, len)) {
        nsc_http_json_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
    } else {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
        evhttp_send_reply(req, HTTP_OK, "OK", b);
    }
    if (b)
        evbuffer_free(b);
}

static void status(nsc_http *h, struct evhttp_request *req)
{
    uint64_t now = nsc_mono_ns();
    if (!h->status_text || now - h->status_ns >= STATUS_FRESH_NS) {
        size_t len;
        char *text = nsc_http_live_json(h->c, nsc_live_status_json, &len);
        if (!text) {
            nsc_http_json_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
            return;
        }
        free(h->status_text);
        h->status_text = text;
        h->status_len = len;
        h->status_ns = now;
    }
    send_body(req, "application/json", h->status_text, h->status_len);
}

static int get_counts(void *arg, const nsc_live *l, uint64_t now)
{
    nsc_live_counts_get(l, now, arg);
    return 0;
}

static void render_live(nsc_collector *c, struct evbuffer *b)
{
    nsc_live_counts n;
    if (c->store.ops->live_read(c->store.h, get_counts, &n))
        return;
    evbuffer_add_printf(b, "# HELP ncclscope_collector_live_processes Processes by state\n"
                           "# TYPE ncclscope_collector_live_processes gauge\n"
                           "ncclscope_collector_live_processes{state=\"alive\"} %" PRIu64 "\n"
                           "ncclscope_collector_live_processes{state=\"dead\"} %" PRIu64 "\n"
                           "ncclscope_collector_live_processes{state=\"finished\"} %" PRIu64 "\n"
                           "# HELP ncclscope_collector_live_agents Agents by state\n"
                           "# TYPE ncclscope_collector_live_agents gauge\n"
                           "ncclscope_collector_live_agents{state=\"alive\"} %" PRIu64 "\n"
                           "ncclscope_collector_live_agents{state=\"dead\"} %" PRIu64 "\n"
                           "# HELP ncclscope_collector_live_comms Communicators known\n"
                           "# TYPE ncclscope_collector_live_comms gauge\nncclscope_collector_live_comms %" PRIu64 "\n"
                           "# HELP ncclscope_collector_live_hangs Ranks whose collective hangs (running jobs)\n"
                           "# TYPE ncclscope_collector_live_hangs gauge\nncclscope_collector_live_hangs %" PRIu64 "\n"
                           "# HELP ncclscope_collector_live_hung_collectives Hung collectives (running jobs)\n"
                           "# TYPE ncclscope_collector_live_hung_collectives gauge\n"
                           "ncclscope_collector_live_hung_collectives %" PRIu64 "\n"
                           "# HELP ncclscope_collector_live_lagging Ranks lagging, NCCL RAS rule (running jobs)\n"
                           "# TYPE ncclscope_collector_live_lagging gauge\nncclscope_collector_live_lagging %" PRIu64 "\n"
                           "# HELP ncclscope_collector_live_jobs_ended Jobs none of whose processes is alive\n"
                           "# TYPE ncclscope_collector_live_jobs_ended gauge\nncclscope_collector_live_jobs_ended %" PRIu64 "\n",
                        n.procs_alive, n.procs_dead, n.procs_finished, n.agents_alive, n.agents_dead, n.comms, n.hangs,
                        n.hung_colls, n.lagging, n.jobs_ended);
}

static void metrics(nsc_http *h, struct evhttp_request *req)
{
    nsc_collector *c = h->c;
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        nsc_http_json_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
        return;
    }
    nsc_stats_render(&c->stats, b);
    pthread_mutex_lock(&c->clock_mu);
    nsc_clocks_render(c->clocks, b);
    pthread_mutex_unlock(&c->clock_mu);
    c->store.ops->render(c->store.h, b);
    render_live(c, b);
    nsc_jobmetrics_render(c, b);
    nsc_rcmetrics_render(h->rcm, b);
    nsc_diagapi_carries_render(c->carries, b);
    nsc_prefetch_render(h->prefetch, b);
    nsc_qstreams_render(h->queries, b);
    nsc_hguard_render(h->guard, "ncclscope_collector", b);
    uint64_t sse = 0;
    for (const sse_client *s = h->clients; s; s = s->next)
        sse++;
    nsc_prom_u64(b, "ncclscope_collector_live_clients", "gauge", "/api/v1/live clients connected", sse);
    nsc_hstall_render(&h->stall, "ncclscope_collector", b);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
    evhttp_send_reply(req, HTTP_OK, "OK", b);
    evbuffer_free(b);
}

/* ---- /api/v1/live ---- */

static void sse_drop(nsc_http *h, struct evhttp_request *req)
{
    for (sse_client **p = &h->clients; *p; p = &(*p)->next)
        if ((*p)->req == req) {
            sse_client *gone = *p;
            *p = gone->next;
            free(gone);
            return;
        }
}

/* The client left or was cut off: its unended reply was detached from the
 * connection and is ours to free. */
static void sse_closed(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    sse_client *s = arg;
    struct evhttp_request *req = s->req;
    sse_drop(s->h, req);
    if (!evhttp_request_get_connection(req))
        evhttp_send_reply_end(req);
}

/* One summary to the client, unless what it has not taken yet is over
 * http_sse_buffer_kb: then it is cut off (it never reads, or too slowly). */
static void sse_send(nsc_http *h, struct evhttp_request *req, const char *json, size_t len)
{
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    if (nsc_hguard_pending(conn) > (h->c->cfg.http_sse_buffer_kb << 10)) {
        nsc_hguard_cut(h->guard, conn, NSC_HGUARD_OVERFULL);
        return;
    }
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return;
    evbuffer_add_printf(b, "event: summary\ndata: ");
    evbuffer_add(b, json, len);
    evbuffer_add_printf(b, "\n\n");
    evhttp_send_reply_chunk(req, b);
    evbuffer_free(b);
}

static void live(nsc_http *h, struct evhttp_request *req)
{
    sse_client *s = calloc(1, sizeof *s);
    size_t len;
    char *json = nsc_http_live_json(h->c, nsc_live_summary_json, &len);
    if (!s || !json) {
        free(s);
        free(json);
        nsc_http_json_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
        return;
    }
    struct evkeyvalq *hd = evhttp_request_get_output_headers(req);
    evhttp_add_header(hd, "Content-Type", "text/event-stream");
    evhttp_add_header(hd, "Cache-Control", "no-cache");
    evhttp_send_reply_start(req, HTTP_OK, "OK");
    nsc_hguard_on_close(h->guard, evhttp_request_get_connection(req), sse_closed, s);
    s->h = h;
    s->req = req;
    s->next = h->clients;
    h->clients = s;
    sse_send(h, req, json, len);
    free(json);
}

static void sse_broadcast(nsc_http *h)
{
    size_t len;
    char *json = h->clients ? nsc_http_live_json(h->c, nsc_live_summary_json, &len) : NULL;
    for (sse_client *s = h->clients; json && s; s = s->next)
        sse_send(h, s->req, json, len);
    free(json);
}

/* ---- query endpoints ---- */

static void run_query(nsc_http *h, struct evhttp_request *req, nsc_query *q)
{
    h->c->store.ops->query_start(h->c->store.h, h->queries, req, q);
}

/* ---- fetch before query (detail = on-demand, prefetch.h) ---- */

/* A query waiting for its detail: what it goes on with, one of the two. */
typedef struct later {
    nsc_http *h;
    nsc_query *q;        /* a query endpoint's (timeline) */
    nsc_diagapi_req *d;  /* an analysis endpoint's (export) */
} later;

static void later_drop(void *arg)
{
    later *l = arg;
    nsc_query_free(l->q);
    nsc_diagapi_free(l->d);
    free(l);
}

/* The report travels in a header too: the only place export's trace has. */
static void later_then(void *arg, struct evhttp_request *req, const char *report)
{
    later *l = arg;
    evhttp_add_header(evhttp_request_get_output_headers(req), "X-Ncclscope-Detail", report);
    if (l->d) {
        nsc_diagapi_run(l->h->queries, req, l->d);
        l->d = NULL;  /* the run's now */
    } else if (nsc_query_set_detail(l->q, report)) {
        nsc_http_json_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
    } else {
        run_query(l->h, req, l->q);
        l->q = NULL;  /* the query's now */
    }
    later_drop(l);
}

/* With detail = on-demand, a timeline's first page (q) or an export (d),
 * each parsed once already, asks the agents for its job's window and
 * answers once it came (or detail_wait_ms passed). 1 when req is taken (q
 * or d with it), 0 when it needs no fetch (detail = all, no job, a later
 * page: the first fetched it; a bad window: the export says so). */
static int prefetch(nsc_http *h, struct evhttp_request *req, nsc_query *q, nsc_diagapi_req *d)
{
    uint64_t t0, t1;
    const char *job = q ? nsc_query_job(q) : NULL;
    int wants = strcmp(h->c->cfg.detail, "on-demand") == 0 &&
                (q ? nsc_query_first_window(q, &t0, &t1) == 0 : nsc_diagapi_window(d, &job, &t0, &t1) == 0);
    later *l = wants ? calloc(1, sizeof *l) : NULL;
    if (!l)
        return 0;
    *l = (later){h, q, d};
    nsc_prefetch_next next = {later_then, later_drop, l};
    if (nsc_prefetch_start(h->prefetch, req, job, t0, t1, &next)) {
        later_drop(l);
        nsc_http_json_error(req, 503, "Service Unavailable", "too many detail fetches waiting; ask again");
    }
    return 1;
}

static void query(nsc_http *h, struct evhttp_request *req, const char *name, const char *qs)
{
    char err[256] = "";
    nsc_query *q;
    int rc = nsc_query_parse(name, qs, &q, err, sizeof err);
    if (rc) {
        int code = nsc_query_http_status(rc);
        nsc_http_json_error(req, code, code == 404 ? "Not Found" : "Bad Request", err);
        return;
    }
    if (strcmp(name, "timeline") || !prefetch(h, req, q, NULL))
        run_query(h, req, q);
}

static void analysis(nsc_http *h, struct evhttp_request *req, const char *name, const char *qs)
{
    nsc_diagapi_req *d = nsc_diagapi_parse(h->c, req, name, qs);
    if (d && !prefetch(h, req, NULL, d))
        nsc_diagapi_run(h->queries, req, d);
}

/* ---- detail fetch ---- */

/* GET /api/v1/detail?job=J[&from_ns=A][&to_ns=B]: ask every agent for job
 * J's raw detail in the window (the agents' clocks); the chunks are stored
 * as they come (fetch.h). Answers at once the fetch's id and what each
 * agent's ring held when it last answered. */
static void detail(nsc_http *h, struct evhttp_request *req, const char *qs)
{
    struct evkeyvalq kv;
    TAILQ_INIT(&kv);
    uint64_t from, to;
    const char *job = NULL;
    if (qs && evhttp_parse_query_str(qs, &kv) == 0)
        job = evhttp_find_header(&kv, "job");
    if (!job || !*job || strlen(job) > 63 || nsc_qs_u64(evhttp_find_header(&kv, "from_ns"), 0, &from) ||
        nsc_qs_u64(evhttp_find_header(&kv, "to_ns"), UINT64_MAX, &to) || from > to) {
        evhttp_clear_headers(&kv);
        nsc_http_json_error(req, HTTP_BADREQUEST, "Bad Request",
                            "detail wants job (1..63 bytes) and from_ns <= to_ns (whole ns)");
        return;
    }
    uint64_t id = nsc_cfetch_ask(h->c->fetch, job, from, to, 0);
    evhttp_clear_headers(&kv);
    if (!id) {
        nsc_http_json_error(req, 503, "Service Unavailable", "too many detail fetches waiting; ask again");
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc = !f || fprintf(f, "{\"fetch\":%llu,\"held\":", (unsigned long long)id) < 0 ||
             nsc_cfetch_held_json(h->c->fetch, f) || fputs("}\n", f) < 0;
    if (f)
        fclose(f);
    if (rc)
        nsc_http_json_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
    else
        send_body(req, "application/json", text, len);
    free(text);
}

/* ---- routing ---- */

/* The query layer's endpoint named NAME, else NULL (the analysis's
 * endpoints, topology among them, are diagapi.c's). */
static const char *query_endpoint(const char *name)
{
    static const char *const queries[] = {"comms", "timeline", "collectives", "stats", "p2p", "ledger"};
    for (size_t i = 0; i < sizeof queries / sizeof *queries; i++)
        if (strcmp(name, queries[i]) == 0)
            return queries[i];
    return NULL;
}

static void serve(struct evhttp_request *req, void *arg)
{
    nsc_http *h = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *qs = uri ? evhttp_uri_get_query(uri) : NULL;
    nsc_hguard_busy(h->guard, req);
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET)
        return nsc_http_json_error(req, 405, "Method Not Allowed", "only GET is served");
    if (!path)
        return nsc_http_json_error(req, HTTP_BADREQUEST, "Bad Request", "malformed request target");
    if (strcmp(path, "/healthz") == 0)
        return send_body(req, "text/plain", "ok\n", 3);
    if (nsc_ui_path(path))
        return nsc_ui_serve(req, path, qs, h->token);
    if (!nsc_auth_ok(req, h->token)) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
        return nsc_http_json_error(req, 401, "Unauthorized", "missing or wrong bearer token");
    }
    if (strcmp(path, "/metrics") == 0)
        return metrics(h, req);
    if (strcmp(path, "/api/v1/status") == 0)
        return status(h, req);
    if (strcmp(path, "/api/v1/live") == 0)
        return live(h, req);
    if (strcmp(path, "/api/v1/detail") == 0)
        return detail(h, req, qs);
    const char *name = strncmp(path, "/api/v1/", 8) == 0 ? path + 8 : NULL;
    if (name && nsc_diagapi_is(name))
        return analysis(h, req, name, qs);
    const char *q = name ? query_endpoint(name) : NULL;
    if (q)
        return query(h, req, q, qs);
    nsc_http_json_error(req, HTTP_NOTFOUND, "Not Found", "no such endpoint");
}

static void tick(nsc_http *h)
{
    nsc_collector *c = h->c;
    if (atomic_load(&c->stop)) {
        event_base_loopbreak(h->base);
        return;
    }
    uint64_t now = nsc_mono_ns();
    if (now - h->last_tick_ns < c->cfg.live_interval_ms * 1000000ull)
        return;
    h->last_tick_ns = now;
    pthread_mutex_lock(&c->live_mu);
    nsc_live_tick(c->live, now);
    pthread_mutex_unlock(&c->live_mu);
    sse_broadcast(h);
}

static void route(struct evhttp_request *req, void *arg)
{
    nsc_http *h = arg;
    nsc_hstall_mark m = nsc_hstall_begin(&h->stall);
    serve(req, h);
    nsc_hstall_stretch(&h->stall, m);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    nsc_http *h = arg;
    nsc_hstall_mark m = nsc_hstall_begin(&h->stall);
    tick(h);
    nsc_hstall_stretch(&h->stall, m);
}

/* One turn at a time, each weighed (hstall.h). */
static void *run(void *arg)
{
    nsc_http *h = arg;
    nsc_hstall_open(&h->stall);
    for (;;) {
        nsc_hstall_mark m = nsc_hstall_begin(&h->stall);
        int r = event_base_loop(h->base, EVLOOP_ONCE);
        nsc_hstall_turn(&h->stall, m);
        if (r || event_base_got_break(h->base))
            break;
    }
    nsc_hstall_close(&h->stall);
    return NULL;
}

static int read_token(nsc_http *h, const char *path)
{
    if (!path[0])
        return 0;
    FILE *f = fopen(path, "r");
    if (!f || !fgets(h->token, sizeof h->token, f)) {
        fprintf(stderr, "ncclscope-collector: token file %s: cannot read\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    h->token[strcspn(h->token, "\r\n")] = 0;
    if (!h->token[0]) {
        fprintf(stderr, "ncclscope-collector: token file %s is empty\n", path);
        return -1;
    }
    return 0;
}

/* Bind addr and guard the server (hguard.h). */
static int bind_http(nsc_http *h, const char *addr)
{
    char host[128];
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= sizeof host) {
        fprintf(stderr, "ncclscope-collector: http: '%s' is not ADDR:PORT\n", addr);
        return -1;
    }
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(h->http, host, (uint16_t)atoi(colon + 1));
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (!bs || getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl)) {
        fprintf(stderr, "ncclscope-collector: http: cannot bind %s\n", addr);
        return -1;
    }
    h->c->http_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                     : ((struct sockaddr_in *)&ss)->sin_port);
    h->guard = nsc_hguard_new(h->base, h->http, bs, &h->c->cfg.hg, "ncclscope-collector");
    return h->guard ? 0 : -1;
}

static void release(nsc_http *h)
{
    while (h->clients) {  /* ending the stream frees its request */
        struct evhttp_request *req = h->clients->req;
        sse_drop(h, req);
        evhttp_send_reply_end(req);
    }
    nsc_prefetch_free(h->prefetch);  /* before the queries: a waiting one goes on with none */
    nsc_qstreams_free(h->queries);
    nsc_hguard_free(h->guard);  /* before the connections go: it owns their close callbacks */
    if (h->timer)
        event_free(h->timer);
    if (h->http)
        evhttp_free(h->http);
    if (h->base)
        event_base_free(h->base);
    free(h->status_text);
    nsc_diagapi_carries_free(h->c->carries);  /* after the queries: none runs now */
    h->c->carries = NULL;
    free(h);
}

int nsc_http_start(nsc_collector *c, nsc_http **out)
{
    *out = NULL;
    if (strcmp(c->cfg.http, "off") == 0)
        return 0;
    nsc_http *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    h->c = c;
    c->carries = nsc_diagapi_carries_new();
    struct timeval tv = {0, TIMER_MS * 1000};
    if (read_token(h, c->cfg.token_file) || !(h->base = event_base_new()) ||
        !(h->http = evhttp_new(h->base)) || bind_http(h, c->cfg.http) ||
        !(h->queries = nsc_qstreams_new(h->base, c->store.ops->direct(c->store.h), h->guard,
                                        c->cfg.hg.write_timeout_ms)) ||
        !(h->prefetch = nsc_prefetch_new(h->base, h->guard, c)) ||
        !(h->timer = event_new(h->base, -1, EV_PERSIST, on_timer, h)) || event_add(h->timer, &tv)) {
        release(h);
        return -1;
    }
    evhttp_set_gencb(h->http, route, h);
    if (pthread_create(&h->thread, NULL, run, h)) {
        release(h);
        return -1;
    }
    if (nsc_rcmetrics_start(c, &h->rcm))
        fprintf(stderr, "ncclscope-collector: cannot start the root-cause metrics' thread\n");
    *out = h;
    return 0;
}

void nsc_http_join(nsc_http *h)
{
    if (!h)
        return;
    pthread_join(h->thread, NULL);
    nsc_rcmetrics_join(h->rcm);
    release(h);
}
