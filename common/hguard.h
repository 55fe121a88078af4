/* hguard.h: what a peer may make a daemon's HTTP server (libevent evhttp)
 * hold, agent and collector alike.
 *
 * Owns each connection's life on the server: it counts connections in total
 * and per client address, gives a request a deadline for its line, headers
 * and body, cuts a reply the client stops taking, sets libevent's size limits
 * for the request line with headers and for the body (answered 400 and 413
 * by libevent before more is buffered), and backs off when accept() fails for want of
 * descriptors. The total is also kept below RLIMIT_NOFILE less a reserve, so
 * the daemon's ZeroMQ sockets can still accept peers while HTTP is flooded.
 *
 * The guard owns every connection's close callback: code that must learn of
 * a close registers through nsc_hguard_on_close, never
 * evhttp_connection_set_closecb. A request handler calls nsc_hguard_busy
 * first: from then until its reply ends, the connection is not idle.
 * Every limit hit is counted (nsc_hguard_render) and logged with the peer's
 * numeric address, at most one line a second per kind.
 */
#ifndef NSC_HGUARD_H
#define NSC_HGUARD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cfg.h"

struct event_base;
struct evbuffer;
struct evhttp;
struct evhttp_bound_socket;
struct evhttp_connection;
struct evhttp_request;

typedef struct nsc_hguard_cfg {
    uint64_t max_body_kb;        /* request body */
    uint64_t max_headers_kb;     /* request line (the URL) and headers together */
    uint64_t header_timeout_ms;  /* a request must arrive whole within this */
    uint64_t write_timeout_ms;   /* a reply the client takes nothing of this long is cut */
    uint64_t max_conns;          /* connections at once, in total */
    uint64_t max_conns_per_client;
    uint64_t fd_reserve;         /* descriptors HTTP leaves to the rest of the daemon */
    uint64_t accept_backoff_ms;  /* accept() failed: stop accepting this long */
} nsc_hguard_cfg;

/* The option table's rows for a struct T holding an nsc_hguard_cfg named
 * field; ENV is the program's variable prefix ("NCCLSCOPE_COLLECTOR"). */
#define NSC_HGUARD_OPTS(T, field, ENV)                                                                          \
    NSC_OPT_KB(T, "http_max_body_kb", ENV "_HTTP_MAX_BODY_KB", field.max_body_kb, "64",                        \
               "HTTP request body at most (larger: 413 before it is read)"),                                   \
    NSC_OPT_KB(T, "http_max_headers_kb", ENV "_HTTP_MAX_HEADERS_KB", field.max_headers_kb, "64",               \
               "HTTP request line (URL) and headers together at most (larger: 413)"),                          \
    NSC_OPT_MS(T, "http_header_timeout_ms", ENV "_HTTP_HEADER_TIMEOUT_MS", field.header_timeout_ms, "10000",   \
               "an HTTP request must arrive whole within this of the connection (or the last reply); "         \
               "else the connection is closed"),                                                               \
    NSC_OPT_MS(T, "http_write_timeout_ms", ENV "_HTTP_WRITE_TIMEOUT_MS", field.write_timeout_ms, "30000",      \
               "an HTTP client that takes nothing of its reply this long is cut off"),                         \
    NSC_OPT_NUM(T, "http_max_conns", ENV "_HTTP_MAX_CONNS", field.max_conns, "512",                           \
                "HTTP connections at once (also at most RLIMIT_NOFILE - http_fd_reserve); "                    \
                "beyond it an idle one of the client with the most is closed"),                                                   \
    NSC_OPT_NUM(T, "http_max_conns_per_client", ENV "_HTTP_MAX_CONNS_PER_CLIENT", field.max_conns_per_client, \
                "32", "HTTP connections at once from one client address"),                                     \
    NSC_OPT_NUM(T, "http_fd_reserve", ENV "_HTTP_FD_RESERVE", field.fd_reserve, "256",                        \
                "file descriptors HTTP connections leave to the ZeroMQ sockets and the store"),                \
    NSC_OPT_MS(T, "http_accept_backoff_ms", ENV "_HTTP_ACCEPT_BACKOFF_MS", field.accept_backoff_ms, "1000",     \
               "accept() failed (no descriptors): HTTP stops accepting this long")

typedef struct nsc_hguard nsc_hguard;

/* 0, or -1 after printing which setting is out of range to err. */
int nsc_hguard_cfg_check(const nsc_hguard_cfg *cfg, const char *prog, FILE *err);

/* Guard http (bound as bs, on base): its limits, callbacks and listener.
 * prog prefixes the log lines. NULL when out of memory. */
nsc_hguard *nsc_hguard_new(struct event_base *base, struct evhttp *http, struct evhttp_bound_socket *bs,
                           const nsc_hguard_cfg *cfg, const char *prog);
/* Before evhttp_free: forget the connections (evhttp_free closes them). */
void nsc_hguard_free(nsc_hguard *g);

/* req was read whole: its connection is busy until the reply ends. */
void nsc_hguard_busy(nsc_hguard *g, struct evhttp_request *req);
/* Call fn(conn, arg) when conn closes (fn NULL: nothing more). A request
 * whose reply had not ended is then detached from conn (its connection
 * NULL) and left to its owner to end; one with an ended reply is freed. */
void nsc_hguard_on_close(nsc_hguard *g, struct evhttp_connection *conn,
                         void (*fn)(struct evhttp_connection *, void *), void *arg);

/* Why libevent refused a request before any handler (counted). */
enum nsc_hguard_reject { NSC_HGUARD_BODY, NSC_HGUARD_HEAD, NSC_HGUARD_MALFORMED, NSC_HGUARD_REJECTS };
/* Why a reply is cut (nsc_hguard_cut). */
enum nsc_hguard_cut { NSC_HGUARD_STALLED, NSC_HGUARD_OVERFULL, NSC_HGUARD_CUTS };
/* Cut conn's reply off, logged and counted (why): its close callback runs
 * from the event loop soon after, the request detached as on a client's
 * close. */
void nsc_hguard_cut(nsc_hguard *g, struct evhttp_connection *conn, enum nsc_hguard_cut why);
/* Bytes of conn's reply its client has not taken: waiting to be written and
 * in the kernel's send queue. */
size_t nsc_hguard_pending(struct evhttp_connection *conn);

/* Append the guard's gauges and counters, named PREFIX_http_... */
void nsc_hguard_render(const nsc_hguard *g, const char *prefix, struct evbuffer *b);

#endif
