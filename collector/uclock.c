/* uclock.c: the UDP clock port (see uclock.h). */
#include "uclock.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "uprobe.h"

#define STOP_CHECK_US 100000  /* the receive timeout: how soon the thread sees stop */

struct nsc_uclock {
    nsc_collector *c;
    int fd;
    pthread_t thread;
    atomic_int stop;
    uint64_t log_ns, log_suppressed;  /* refused datagrams: logged once a second */
};

/* An IPv4 or IPv6 address in numbers: a name's lookup is left out. */
static int numeric(const char *host)
{
    uint8_t addr[16];
    return inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
}

/* The address to bind: clock_udp's ADDR:PORT, or with "listen" listen's
 * address and a port the system picks. 0, 1 when "listen" names no numeric
 * address (no UDP port then), -1 for a bad clock_udp. */
static int bind_addr(const nsc_coll_cfg *cfg, char host[128], char port[8])
{
    const char *spec = cfg->clock_udp, *from = spec;
    int listen = strcmp(spec, "listen") == 0;
    if (listen)
        from = strncmp(cfg->listen, "tcp://", 6) == 0 ? cfg->listen + 6 : "";
    const char *colon = nsc_uprobe_host(from, host, 128);
    if (strcmp(host, "*") == 0)
        snprintf(host, 128, "0.0.0.0");
    char *end = NULL;
    unsigned long p = colon ? strtoul(colon + 1, &end, 10) : 0;
    snprintf(port, 8, "%lu", listen ? 0 : p);
    if (!numeric(host))
        return listen ? 1 : -1;
    return listen || (end && end != colon + 1 && *end == 0 && p <= 65535) ? 0 : -1;
}

/* A UDP socket bound to host:port that times out its receives, or -1. */
static int open_socket(const char *host, const char *port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE}, *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        return -1;
    struct timeval tv = {0, STOP_CHECK_US};
    int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) || bind(fd, ai->ai_addr, ai->ai_addrlen))) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

static int bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char port[8];
    if (getsockname(fd, (struct sockaddr *)&ss, &len) ||
        getnameinfo((struct sockaddr *)&ss, len, NULL, 0, port, sizeof port, NI_NUMERICSERV))
        return -1;
    return atoi(port);
}

static void refuse(nsc_uclock *u, int rc)
{
    atomic_fetch_add_explicit(&u->c->stats.udp_malformed, 1, memory_order_relaxed);
    uint64_t now = nsc_mono_ns();
    if (u->log_ns && now - u->log_ns < 1000000000ull) {
        u->log_suppressed++;
        return;
    }
    fprintf(stderr, "ncclscope-collector: refused a datagram on the UDP clock port: %s (%llu more not logged)\n",
            nsc_uprobe_strerror(rc), (unsigned long long)u->log_suppressed);
    u->log_ns = now;
    u->log_suppressed = 0;
}

/* Answer one datagram read at t2: the request back, as large as it came. */
static void answer(nsc_uclock *u, const uint8_t *buf, size_t len, uint64_t t2, const struct sockaddr *from,
                   socklen_t from_len)
{
    nsc_uprobe p;
    int rc = nsc_uprobe_decode(buf, len, NSC_UPROBE_REQUEST, &p);
    if (rc) {
        refuse(u, rc);
        return;
    }
    uint8_t out[NSC_UPROBE_LEN];
    p.kind = NSC_UPROBE_ANSWER;
    p.t2 = t2;
    p.t3 = nsc_mono_ns();
    nsc_uprobe_encode(&p, out);
    if (sendto(u->fd, out, sizeof out, MSG_DONTWAIT, from, from_len) == (ssize_t)sizeof out)
        atomic_fetch_add_explicit(&u->c->stats.udp_answers, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&u->c->stats.udp_send_failures, 1, memory_order_relaxed);
}

static void release(nsc_uclock *u)
{
    if (u->fd >= 0)
        close(u->fd);
    free(u);
}

static void *run(void *arg)
{
    nsc_uclock *u = arg;
    uint8_t buf[NSC_UPROBE_LEN + 1];  /* one byte more: a longer datagram reads as longer */
    while (!atomic_load_explicit(&u->stop, memory_order_relaxed)) {
        struct sockaddr_storage from;
        socklen_t from_len = sizeof from;
        ssize_t n = recvfrom(u->fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &from_len);
        uint64_t t2 = nsc_mono_ns();
        if (n >= 0)
            answer(u, buf, (size_t)n, t2, (struct sockaddr *)&from, from_len);
    }
    return NULL;
}

int nsc_uclock_start(nsc_collector *c, nsc_uclock **out)
{
    char host[128], port[8];
    *out = NULL;
    c->udp_port = 0;
    if (strcmp(c->cfg.clock_udp, "off") == 0 || c->cfg.curve_secret_file[0])
        return 0;
    int rc = bind_addr(&c->cfg, host, port);
    if (rc) {
        if (rc < 0)
            fprintf(stderr, "ncclscope-collector: clock_udp '%s' is not ADDR:PORT (ADDR numeric), 'listen' or 'off'\n",
                    c->cfg.clock_udp);
        else
            fprintf(stderr, "ncclscope-collector: listen %s has no address for the UDP clock port: probes over ZeroMQ only\n",
                    c->cfg.listen);
        return rc < 0 ? -1 : 0;
    }
    nsc_uclock *u = calloc(1, sizeof *u);
    if (!u)
        return -1;
    u->c = c;
    if ((u->fd = open_socket(host, port)) < 0 || (c->udp_port = bound_port(u->fd)) <= 0 ||
        pthread_create(&u->thread, NULL, run, u)) {
        fprintf(stderr, "ncclscope-collector: UDP clock port %s:%s: %s\n", host, port, strerror(errno));
        release(u);
        c->udp_port = 0;
        return -1;
    }
    *out = u;
    return 0;
}

void nsc_uclock_stop(nsc_uclock *u)
{
    if (!u)
        return;
    atomic_store(&u->stop, 1);
    pthread_join(u->thread, NULL);
    release(u);
}
