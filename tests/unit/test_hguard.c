/* Unit tests for the HTTP connection guard (common/hguard.c) on a real
 * libevent server over loopback: which connection is closed when a burst of
 * new ones passes the limit. */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hguard.h"
#include "mono.h"

#define CAP 4

typedef struct server {
    struct event_base *base;
    struct evhttp *http;
    nsc_hguard *g;
    struct sockaddr_in addr;
} server;

static void on_health(struct evhttp_request *req, void *arg)
{
    server *s = arg;
    nsc_hguard_busy(s->g, req);
    evhttp_send_reply(req, 200, "OK", NULL);
}

static void server_start(server *s)
{
    nsc_hguard_cfg cfg = {.max_body_kb = 64, .max_headers_kb = 64, .header_timeout_ms = 60000,
                          .write_timeout_ms = 60000, .max_conns = CAP, .max_conns_per_client = 1000,
                          .fd_reserve = 0, .accept_backoff_ms = 1000};
    cr_assert_not_null(s->base = event_base_new());
    cr_assert_not_null(s->http = evhttp_new(s->base));
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(s->http, "127.0.0.1", 0);
    cr_assert_not_null(bs);
    socklen_t len = sizeof s->addr;
    cr_assert_eq(getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&s->addr, &len), 0);
    evhttp_set_cb(s->http, "/healthz", on_health, s);
    cr_assert_not_null(s->g = nsc_hguard_new(s->base, s->http, bs, &cfg, "test"));
}

static void server_stop(server *s)
{
    nsc_hguard_free(s->g);
    evhttp_free(s->http);
    event_base_free(s->base);
}

/* A connected client socket from the address src (NULL: any); the server
 * accepts it when its loop runs. */
static int dial_from(const server *s, const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    if (src) {
        struct sockaddr_in a = {.sin_family = AF_INET};
        cr_assert_eq(inet_pton(AF_INET, src, &a.sin_addr), 1);
        cr_assert_eq(bind(fd, (const struct sockaddr *)&a, sizeof a), 0);
    }
    cr_assert_eq(connect(fd, (const struct sockaddr *)&s->addr, sizeof s->addr), 0);
    return fd;
}

static int dial(const server *s)
{
    return dial_from(s, NULL);
}

/* The guard's gauge of open connections. */
static uint64_t open_conns(const server *s)
{
    struct evbuffer *b = evbuffer_new();
    nsc_hguard_render(s->g, "t", b);
    size_t n = evbuffer_get_length(b);
    char *text = calloc(1, n + 1);
    evbuffer_remove(b, text, n);
    evbuffer_free(b);
    const char *line = strstr(text, "\nt_http_connections ");
    cr_assert_not_null(line);
    uint64_t v = strtoull(line + strlen("\nt_http_connections "), NULL, 10);
    free(text);
    return v;
}

/* Run the server's loop until want connections are open (5 s at most). */
static void settle_at(server *s, uint64_t want)
{
    uint64_t end = nsc_mono_ns() + 5000000000ull;
    while (open_conns(s) != want && nsc_mono_ns() < end)
        event_base_loop(s->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    cr_assert_eq(open_conns(s), want);
}

/* Run the server's loop until fd has a reply or is closed: its first bytes
 * in out (5 s at most). 0 bytes: closed. */
static ssize_t reply_of(server *s, int fd, char *out, size_t cap)
{
    uint64_t end = nsc_mono_ns() + 5000000000ull;
    while (nsc_mono_ns() < end) {
        event_base_loop(s->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        ssize_t r = recv(fd, out, cap - 1, MSG_DONTWAIT);
        if (r >= 0) {
            out[r] = 0;
            return r;
        }
        cr_assert(errno == EAGAIN || errno == EWOULDBLOCK);
    }
    cr_assert_fail("no reply nor close within 5 s");
    return -1;
}

static void send_health(int fd)
{
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
    cr_assert_eq(send(fd, req, sizeof req - 1, 0), (ssize_t)(sizeof req - 1));
}

/* fd's health check is answered 200; closed instead: fail with why. */
static void expect_answered(server *s, int fd, const char *why)
{
    char out[256];
    cr_assert_gt(reply_of(s, fd, out, sizeof out), 0, "%s", why);
    cr_assert(strncmp(out, "HTTP/1.1 200", 12) == 0, "reply: %s", out);
}

/* The limit is full of idle connections. In one burst, a health check
 * arrives first, its request sent, then as many idle ones as are open: the
 * server closes every settled idle one, stops accepting at the limit, and
 * must then close the burst's newest, not the health check that was
 * admitted first. */
Test(hguard, burst_keeps_the_first_comer_and_closes_the_newest)
{
    server s = {0};
    server_start(&s);
    int idle[CAP], flood[CAP];
    for (int i = 0; i < CAP; i++)
        idle[i] = dial(&s);
    settle_at(&s, CAP);

    int health = dial(&s);
    send_health(health);
    for (int i = 0; i < CAP; i++)
        flood[i] = dial(&s);

    expect_answered(&s, health, "the health check was closed");
    cr_assert_leq(open_conns(&s), CAP);
    for (int i = 0; i < CAP; i++) {
        close(idle[i]);
        close(flood[i]);
    }
    close(health);
    server_stop(&s);
}

/* A client's only connection, settled and idle (its request not sent yet),
 * while one burst from another address passes the limit: mid-burst the
 * newcomers' address is not known, and the lone connection must not be
 * taken for the flood's; the burst's end closes the flood's newest. */
Test(hguard, burst_from_one_address_keeps_another_clients_lone_connection)
{
    server s = {0};
    server_start(&s);
    int health = dial_from(&s, "127.0.0.2"), flood[CAP + 1];
    settle_at(&s, 1);
    for (int i = 0; i < CAP + 1; i++)
        flood[i] = dial_from(&s, "127.0.0.1");
    settle_at(&s, CAP);

    send_health(health);
    expect_answered(&s, health, "the lone connection was closed");
    for (int i = 0; i < CAP + 1; i++)
        close(flood[i]);
    close(health);
    server_stop(&s);
}
