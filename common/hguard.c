/* hguard.c: limits on what HTTP peers may make a daemon hold (see hguard.h). */
#include "hguard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "mono.h"
#include "prom.h"

/* What is logged at most once a second each (the rest counted in the line);
 * refusals by their reason (nsc_hguard_reject) from NOTE_REJECT on. */
enum { NOTE_CLIENT, NOTE_TOTAL, NOTE_TIMEOUT, NOTE_CUT, NOTE_REJECT, NOTES = NOTE_REJECT + NSC_HGUARD_REJECTS };

/* A client address and its admitted connections. */
typedef struct client {
    uint64_t n;
} client;

typedef struct hconn {
    nsc_hguard *g;
    client *cl;                    /* NULL until admitted */
    struct hconn *prev, *next;     /* in accept order: the oldest first */
    struct bufferevent *bev;
    struct evhttp_connection *conn;  /* NULL until admitted */
    struct event *timer;           /* admission, then the request's deadline or the stall check */
    struct evbuffer_cb_entry *out_cb;
    void (*closefn)(struct evhttp_connection *, void *);
    void *closearg;
    uint64_t progress_ns;          /* busy: when the client last took output */
    int busy;
    int settled;                   /* admitted in a burst that has ended (see end_burst) */
    char peer[INET6_ADDRSTRLEN];
} hconn;

struct nsc_hguard {
    nsc_hguard *next_guard;        /* in guards */
    struct event_base *base;
    struct evconnlistener *lev;
    struct event *resume;          /* the end of an accept back-off */
    nsc_hguard_cfg cfg;
    const char *prog;
    uint64_t cap;                  /* connections at most: max_conns within the descriptor limit */
    hconn *head, *tail;
    uint64_t n;
    uint64_t pending;              /* accepted, awaiting admission: the current burst */
    int full, backoff;             /* why the listener is disabled */
    uint64_t note_ns[NOTES], note_more[NOTES];
    uint64_t refused_client, refused_total, rejects[NSC_HGUARD_REJECTS], timeouts, cuts[NSC_HGUARD_CUTS];
    uint64_t accept_errors;
};

/* Every guard, by listener: libevent hands a listener's error callback the
 * evhttp's argument, not one of ours. */
static pthread_mutex_t guards_mu = PTHREAD_MUTEX_INITIALIZER;
static nsc_hguard *guards;

static nsc_hguard *guard_of(const struct evconnlistener *lev)
{
    pthread_mutex_lock(&guards_mu);
    nsc_hguard *g = guards;
    while (g && g->lev != lev)
        g = g->next_guard;
    pthread_mutex_unlock(&guards_mu);
    return g;
}

int nsc_hguard_cfg_check(const nsc_hguard_cfg *c, const char *prog, FILE *err)
{
    if (c->max_body_kb == 0 || c->max_body_kb > (1u << 20) || c->max_headers_kb == 0 ||
        c->max_headers_kb > (1u << 20) || c->header_timeout_ms == 0 || c->header_timeout_ms > 3600000 ||
        c->write_timeout_ms == 0 || c->write_timeout_ms > 3600000 || c->max_conns == 0 ||
        c->max_conns > 1000000 || c->max_conns_per_client == 0 || c->fd_reserve > 1000000 ||
        c->accept_backoff_ms == 0 || c->accept_backoff_ms > 60000) {
        fprintf(err, "%s: http_max_body_kb, http_max_headers_kb (1..1048576), http_header_timeout_ms, "
                     "http_write_timeout_ms (1..3600000), http_max_conns (1..1000000), "
                     "http_max_conns_per_client (>= 1), http_fd_reserve (<= 1000000) or "
                     "http_accept_backoff_ms (1..60000) out of range\n", prog);
        return -1;
    }
    return 0;
}

/* One log line of kind (written whole, other threads log too), or a count of
 * those it stands for next time. */
static void note(nsc_hguard *g, int kind, const char *fmt, ...)
{
    uint64_t now = nsc_mono_ns();
    if (g->note_ns[kind] && now - g->note_ns[kind] < 1000000000u) {
        g->note_more[kind]++;
        return;
    }
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (g->note_more[kind])
        fprintf(stderr, "%s: http: %s (and %" PRIu64 " more like it since the last such line)\n", g->prog, text,
                g->note_more[kind]);
    else
        fprintf(stderr, "%s: http: %s\n", g->prog, text);
    g->note_ns[kind] = now;
    g->note_more[kind] = 0;
}

static void add_ms(struct event *ev, uint64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(ev, &tv);
}


static void listen_again(nsc_hguard *g)
{
    if (!g->full && !g->backoff)
        evconnlistener_enable(g->lev);
}

static void release(hconn *hc)
{
    nsc_hguard *g = hc->g;
    *(hc->prev ? &hc->prev->next : &g->head) = hc->next;
    *(hc->next ? &hc->next->prev : &g->tail) = hc->prev;
    g->n--;
    if (hc->cl && --hc->cl->n == 0)
        free(hc->cl);
    if (hc->out_cb)
        evbuffer_remove_cb_entry(bufferevent_get_output(hc->bev), hc->out_cb);
    event_free(hc->timer);
    free(hc);
    if (g->full && g->n <= g->cap) {  /* the next one in may close an idle one */
        g->full = 0;
        listen_again(g);
    }
}

/* The guard's close callback of every admitted connection. */
static void closed(struct evhttp_connection *conn, void *arg)
{
    hconn *hc = arg;
    if (hc->closefn)
        hc->closefn(conn, hc->closearg);
    release(hc);
}

static hconn *find(nsc_hguard *g, struct evhttp_connection *conn)
{
    for (hconn *hc = g->head; hc; hc = hc->next)
        if (hc->conn == conn)
            return hc;
    return NULL;
}

size_t nsc_hguard_pending(struct evhttp_connection *conn)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(conn);
    int queued = 0;  /* the kernel's part: sent or not, not acknowledged */
    if (ioctl(bufferevent_getfd(bev), SIOCOUTQ, &queued) || queued < 0)
        queued = 0;
    return evbuffer_get_length(bufferevent_get_output(bev)) + (size_t)queued;
}

/* Output written or added. A reply that begins while no handler holds the
 * connection is libevent's own: an error about the request, counted here as
 * no handler sees it. libevent 2.1 answers a body over the limit 413, and a
 * request line or headers over it 400 like a malformed request; the
 * unparsed input still held tells the two 400s apart. */
static void output_changed(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
    hconn *hc = arg;
    if (info->n_deleted)
        hc->progress_ns = nsc_mono_ns();
    char line[13] = "";
    if (!info->n_added || hc->busy || info->orig_size || evbuffer_copyout(b, line, 12) != 12)
        return;
    nsc_hguard *g = hc->g;
    int why = strncmp(line + 9, "413", 3) == 0 ? NSC_HGUARD_BODY
              : strncmp(line + 9, "400", 3) != 0 ? -1
              : evbuffer_get_length(bufferevent_get_input(hc->bev)) > (g->cfg.max_headers_kb << 10) ? NSC_HGUARD_HEAD
                                                                                                    : NSC_HGUARD_MALFORMED;
    static const char *const text[NSC_HGUARD_REJECTS] = {
        "body over http_max_body_kb", "request line (URL) and headers over http_max_headers_kb", "malformed request"};
    if (why < 0)
        return;
    g->rejects[why]++;
    note(g, NOTE_REJECT + why, "%.3s to %s: %s", line + 9, hc->peer, text[why]);
}

/* Close the connection; its close callback releases hc. While a handler
 * holds a request, only from libevent's side: a socket shut down for reading
 * reads as the client's close, which detaches the request for its owner to
 * end. (Not for writing: a write would then raise SIGPIPE.) */
static void drop(hconn *hc)
{
    if (hc->busy)
        shutdown(bufferevent_getfd(hc->bev), SHUT_RD);
    else
        evhttp_connection_free(hc->conn);
}

/* The connection to close for room: one of the client with the most
 * connections (a flood from one address displaces its own), an idle settled
 * one, the longest idle, else, at a burst's end, the burst's newest (a
 * health check early in a flood's burst is kept). Mid-burst the newcomers'
 * clients are not known yet, so a client's only connection is not taken
 * then: it may be the one the burst is flooding past. */
static hconn *victim(nsc_hguard *g, int burst_end)
{
    hconn *v = NULL;
    for (hconn *hc = g->head; hc; hc = hc->next) {
        if (hc->busy || !hc->conn || !(hc->settled || burst_end))
            continue;
        /* in accept order: a tie keeps a settled one, else takes the newer */
        if (!v || hc->cl->n > v->cl->n || (hc->cl->n == v->cl->n && !v->settled))
            v = hc;
    }
    return v && (burst_end || v->cl->n > 1) ? v : NULL;
}

/* hc's client: shared with its other connections, else a new one. */
static client *client_of(nsc_hguard *g, const hconn *hc)
{
    for (hconn *o = g->head; o; o = o->next)
        if (o != hc && o->cl && strcmp(o->peer, hc->peer) == 0)
            return o->cl;
    return calloc(1, sizeof(client));
}

/* How a refusal names the connection it closes, in the note. */
static const char WHICH_IDLE[] = "an idle one of the client with the most";

static void refuse(nsc_hguard *g, hconn *hc, const char *which)
{
    g->refused_total++;
    note(g, NOTE_TOTAL, "%" PRIu64 " connections, the limit: closing %s, from %s", g->cap, which, hc->peer);
    drop(hc);
}

/* One connection too many, accepted: close an idle one, else stop accepting
 * until one closes (the burst's end then makes room). */
static void make_room(nsc_hguard *g)
{
    hconn *idle = victim(g, 0);
    if (idle)
        return refuse(g, idle, WHICH_IDLE);
    g->full = 1;
    evconnlistener_disable(g->lev);
}

/* The burst's last admission: back within the limit (see victim); the burst
 * is then settled. */
static void end_burst(nsc_hguard *g)
{
    while (g->n > g->cap) {
        hconn *v = victim(g, 1);
        uint64_t before = g->n;
        if (v)
            refuse(g, v, v->settled ? WHICH_IDLE : "the newest one");
        if (g->n == before)  /* nothing closed at once: a busy reply ends first */
            break;
    }
    for (hconn *hc = g->tail; hc && !hc->settled; hc = hc->prev)
        hc->settled = 1;
}

/* Take on a connection accepted in this loop iteration: nothing ran on it
 * since (libevent frees one so young only when out of memory). Its owner is
 * the bufferevent's callback argument. Room is made once the whole burst is
 * admitted (end_burst). */
static void admit(hconn *hc)
{
    nsc_hguard *g = hc->g;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    void *cbarg = NULL;
    g->pending--;
    bufferevent_getcb(hc->bev, NULL, NULL, NULL, &cbarg);
    hc->conn = cbarg;
    /* numeric, so nothing in it needs escaping in the log */
    if (getpeername(bufferevent_getfd(hc->bev), (struct sockaddr *)&ss, &sl) == 0)
        inet_ntop(ss.ss_family,
                  ss.ss_family == AF_INET6 ? (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
                                           : (void *)&((struct sockaddr_in *)&ss)->sin_addr,
                  hc->peer, sizeof hc->peer);
    hc->out_cb = evbuffer_add_cb(bufferevent_get_output(hc->bev), output_changed, hc);
    evhttp_connection_set_closecb(hc->conn, closed, hc);
    if (!(hc->cl = client_of(g, hc)) || ++hc->cl->n > g->cfg.max_conns_per_client) {
        g->refused_client++;
        note(g, NOTE_CLIENT, "%s has http_max_conns_per_client (%" PRIu64 ") connections: closing its new one",
             hc->peer, g->cfg.max_conns_per_client);
        drop(hc);
    } else {
        add_ms(hc->timer, g->cfg.header_timeout_ms);
    }
    if (!g->pending)
        end_burst(g);
}

void nsc_hguard_cut(nsc_hguard *g, struct evhttp_connection *conn, enum nsc_hguard_cut why)
{
    hconn *hc = find(g, conn);
    if (!hc)
        return;
    g->cuts[why]++;
    note(g, NOTE_CUT, "cutting %s off: %s", hc->peer,
         why == NSC_HGUARD_STALLED ? "it took nothing of its reply for http_write_timeout_ms"
                                   : "its reply's unsent output is over the limit");
    drop(hc);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    hconn *hc = arg;
    nsc_hguard *g = hc->g;
    if (!hc->conn)
        return admit(hc);
    if (!hc->busy) {
        g->timeouts++;
        note(g, NOTE_TIMEOUT, "%s sent no whole request within http_header_timeout_ms (%" PRIu64 "): closing",
             hc->peer, g->cfg.header_timeout_ms);
        return drop(hc);
    }
    uint64_t idle_ms = (nsc_mono_ns() - hc->progress_ns) / 1000000u;
    if (nsc_hguard_pending(hc->conn) && idle_ms >= g->cfg.write_timeout_ms)
        return nsc_hguard_cut(g, hc->conn, NSC_HGUARD_STALLED);
    add_ms(hc->timer, g->cfg.write_timeout_ms - (idle_ms < g->cfg.write_timeout_ms ? idle_ms : 0));
}

/* evhttp's hook for each new connection's bufferevent: the connection
 * begins. Admission waits for the loop (the fd and the connection come once
 * this returns); a full house makes room here, or stops the accept loop. */
static struct bufferevent *new_bev(struct event_base *base, void *arg)
{
    nsc_hguard *g = arg;
    hconn *hc = calloc(1, sizeof *hc);
    if (!hc)
        return NULL;
    hc->g = g;
    strcpy(hc->peer, "?");
    if (!(hc->bev = bufferevent_socket_new(base, -1, 0)) || !(hc->timer = evtimer_new(base, on_timer, hc))) {
        if (hc->bev)
            bufferevent_free(hc->bev);
        free(hc);
        return NULL;
    }
    hc->prev = g->tail;
    *(g->tail ? &g->tail->next : &g->head) = hc;
    g->tail = hc;
    g->pending++;
    if (++g->n > g->cap && !g->full)
        make_room(g);  /* another connection's, so the accept loop goes on */
    event_active(hc->timer, EV_TIMEOUT, 1);
    return hc->bev;
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    nsc_hguard *g = arg;
    g->backoff = 0;
    listen_again(g);
}

/* accept() failed (EMFILE, ENFILE, ...): the socket stays readable, so
 * listening on would spin. Stop for a while instead. */
static void accept_failed(struct evconnlistener *lev, void *arg)
{
    (void)arg;
    int err = EVUTIL_SOCKET_ERROR();
    nsc_hguard *g = guard_of(lev);
    g->accept_errors++;
    g->backoff = 1;
    evconnlistener_disable(g->lev);
    fprintf(stderr, "%s: http: accept(): %s; not accepting for %" PRIu64 " ms (%" PRIu64 " connections open)\n",
            g->prog, strerror(err), g->cfg.accept_backoff_ms, g->n);
    add_ms(g->resume, g->cfg.accept_backoff_ms);
}

/* max_conns, within RLIMIT_NOFILE less the reserve (at least one). */
static uint64_t capacity(const nsc_hguard_cfg *cfg, const char *prog)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= cfg->max_conns + cfg->fd_reserve)
        return cfg->max_conns;
    uint64_t cap = rl.rlim_cur > cfg->fd_reserve ? rl.rlim_cur - cfg->fd_reserve : 1;
    fprintf(stderr, "%s: http: at most %" PRIu64 " connections (RLIMIT_NOFILE %" PRIu64 " less http_fd_reserve %" PRIu64 ")\n",
            prog, cap, (uint64_t)rl.rlim_cur, cfg->fd_reserve);
    return cap;
}

nsc_hguard *nsc_hguard_new(struct event_base *base, struct evhttp *http, struct evhttp_bound_socket *bs,
                           const nsc_hguard_cfg *cfg, const char *prog)
{
    nsc_hguard *g = calloc(1, sizeof *g);
    if (!g || !(g->resume = evtimer_new(base, on_resume, g))) {
        free(g);
        return NULL;
    }
    g->base = base;
    g->cfg = *cfg;
    g->prog = prog;
    g->cap = capacity(cfg, prog);
    g->lev = evhttp_bound_socket_get_listener(bs);
    /* evhttp listens with a backlog of 128: a burst of connections beyond it
     * has the kernel drop SYNs, and every client then waits a second to retry,
     * /healthz's too. The kernel caps this at net.core.somaxconn. */
    listen(evhttp_bound_socket_get_fd(bs), SOMAXCONN);
    evhttp_set_max_body_size(http, (ev_ssize_t)(cfg->max_body_kb << 10));
    evhttp_set_max_headers_size(http, (ev_ssize_t)(cfg->max_headers_kb << 10));
    evhttp_set_bevcb(http, new_bev, g);
    evconnlistener_set_error_cb(g->lev, accept_failed);
    pthread_mutex_lock(&guards_mu);
    g->next_guard = guards;
    guards = g;
    pthread_mutex_unlock(&guards_mu);
    return g;
}

void nsc_hguard_free(nsc_hguard *g)
{
    if (!g)
        return;
    while (g->head) {
        hconn *hc = g->head;
        if (hc->conn)
            evhttp_connection_set_closecb(hc->conn, NULL, NULL);
        release(hc);
    }
    pthread_mutex_lock(&guards_mu);
    nsc_hguard **p = &guards;
    while (*p != g)
        p = &(*p)->next_guard;
    *p = g->next_guard;
    pthread_mutex_unlock(&guards_mu);
    event_free(g->resume);
    free(g);
}

static void reply_done(struct evhttp_request *req, void *arg)
{
    (void)req;
    hconn *hc = arg;
    hc->busy = 0;
    add_ms(hc->timer, hc->g->cfg.header_timeout_ms);  /* for the next request on it */
}

void nsc_hguard_busy(nsc_hguard *g, struct evhttp_request *req)
{
    hconn *hc = find(g, evhttp_request_get_connection(req));
    if (!hc)
        return;
    hc->busy = 1;
    hc->progress_ns = nsc_mono_ns();
    evhttp_request_set_on_complete_cb(req, reply_done, hc);
    add_ms(hc->timer, g->cfg.write_timeout_ms);
}

void nsc_hguard_on_close(nsc_hguard *g, struct evhttp_connection *conn,
                         void (*fn)(struct evhttp_connection *, void *), void *arg)
{
    hconn *hc = find(g, conn);
    if (hc) {
        hc->closefn = fn;
        hc->closearg = arg;
    }
}

/* A family's head; name gets PREFIX_http_SUFFIX. */
static void family(struct evbuffer *b, char name[128], const char *prefix, const char *suffix, const char *type,
                   const char *help)
{
    snprintf(name, 128, "%s_http_%s", prefix, suffix);
    nsc_prom_head(b, name, type, help);
}

void nsc_hguard_render(const nsc_hguard *g, const char *prefix, struct evbuffer *b)
{
    char n[128];
    family(b, n, prefix, "connections", "gauge", "HTTP connections open");
    evbuffer_add_printf(b, "%s %" PRIu64 "\n", n, g->n);
    family(b, n, prefix, "connections_max", "gauge", "HTTP connections at most (http_max_conns within RLIMIT_NOFILE - http_fd_reserve)");
    evbuffer_add_printf(b, "%s %" PRIu64 "\n", n, g->cap);
    family(b, n, prefix, "refused_total", "counter", "HTTP connections closed for a connection limit");
    evbuffer_add_printf(b, "%s{limit=\"per_client\"} %" PRIu64 "\n%s{limit=\"total\"} %" PRIu64 "\n", n,
                        g->refused_client, n, g->refused_total);
    family(b, n, prefix, "rejects_total", "counter", "HTTP requests refused before any handler, by reason");
    static const char *const reason[NSC_HGUARD_REJECTS] = {"body_too_large", "head_too_large", "malformed"};
    for (int i = 0; i < NSC_HGUARD_REJECTS; i++)
        evbuffer_add_printf(b, "%s{reason=\"%s\"} %" PRIu64 "\n", n, reason[i], g->rejects[i]);
    family(b, n, prefix, "header_timeouts_total", "counter", "HTTP connections closed for no whole request within http_header_timeout_ms");
    evbuffer_add_printf(b, "%s %" PRIu64 "\n", n, g->timeouts);
    family(b, n, prefix, "cutoffs_total", "counter", "HTTP replies cut off because the client did not take them");
    evbuffer_add_printf(b, "%s{reason=\"stalled\"} %" PRIu64 "\n%s{reason=\"overfull\"} %" PRIu64 "\n", n,
                        g->cuts[NSC_HGUARD_STALLED], n, g->cuts[NSC_HGUARD_OVERFULL]);
    family(b, n, prefix, "accept_errors_total", "counter", "accept() failures on the HTTP port (each stops accepting for http_accept_backoff_ms)");
    evbuffer_add_printf(b, "%s %" PRIu64 "\n", n, g->accept_errors);
}
