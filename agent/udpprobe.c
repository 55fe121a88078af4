/* udpprobe.c: the UDP clock probe link (see udpprobe.h). */
#include "udpprobe.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mono.h"
#include "uprobe.h"

struct nsc_udpp {
    int fd;
    uint32_t port;
    nsc_udpp_stats *st;
    uint64_t rng;                 /* splitmix64 state: the probes' tokens */
    uint64_t id, token, t1;       /* the newest probe (id 0: none) */
    int answered;
    uint32_t lost_in_a_row;
};

/* A token an off-path sender cannot guess from the ids it sees go by. */
static uint64_t next_token(nsc_udpp *u)
{
    uint64_t z = (u->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* tcp://ADDR:PORT (ADDR maybe [IPv6]) into host; -1 for another form. */
static int endpoint_host(const char *ep, char host[128])
{
    if (strncmp(ep, "tcp://", 6) != 0)
        return -1;
    nsc_uprobe_host(ep + 6, host, 128);
    return host[0] ? 0 : -1;
}

nsc_udpp *nsc_udpp_open(const char *endpoint, uint32_t port, nsc_udpp_stats *st)
{
    char host[128], serv[8];
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV}, *ai;
    snprintf(serv, sizeof serv, "%u", port);
    /* numeric only: a name's lookup would block the agent's loop */
    if (port == 0 || port > 65535 || endpoint_host(endpoint, host) || getaddrinfo(host, serv, &hints, &ai))
        return NULL;
    nsc_udpp *u = calloc(1, sizeof *u);
    if (u && ((u->fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0 ||
              connect(u->fd, ai->ai_addr, ai->ai_addrlen))) {
        nsc_udpp_close(u);
        u = NULL;
    }
    freeaddrinfo(ai);
    if (!u)
        return NULL;
    u->port = port;
    u->st = st;
    if (getrandom(&u->rng, sizeof u->rng, GRND_NONBLOCK) != (ssize_t)sizeof u->rng)
        u->rng = nsc_mono_ns() ^ (uint64_t)(uintptr_t)u;
    return u;
}

void nsc_udpp_close(nsc_udpp *u)
{
    if (!u)
        return;
    if (u->fd >= 0)
        close(u->fd);
    free(u);
}

int nsc_udpp_fd(const nsc_udpp *u) { return u->fd; }
uint32_t nsc_udpp_port(const nsc_udpp *u) { return u->port; }
int nsc_udpp_failed(const nsc_udpp *u) { return u->lost_in_a_row >= NSC_UDPP_LOST_MAX; }

/* The newest probe will not be answered. */
static void lose(nsc_udpp *u)
{
    u->st->lost++;
    u->lost_in_a_row++;
    u->answered = 1;  /* counted once */
}

int nsc_udpp_send(nsc_udpp *u, uint64_t id, uint64_t (*now)(void), uint64_t *t1)
{
    if (u->id && !u->answered)
        lose(u);
    if (nsc_udpp_failed(u))
        return -1;
    nsc_uprobe p = {.kind = NSC_UPROBE_REQUEST, .id = id, .token = next_token(u)};
    uint8_t buf[NSC_UPROBE_LEN];
    nsc_uprobe_encode(&p, buf);
    u->id = id;
    u->token = p.token;
    u->answered = 0;
    u->t1 = now();
    if (send(u->fd, buf, sizeof buf, MSG_DONTWAIT) != (ssize_t)sizeof buf) {
        lose(u);
        return -1;
    }
    *t1 = u->t1;
    u->st->sent++;
    return 0;
}

/* One datagram read at t4: 1 when it answers the newest probe. */
static int take(nsc_udpp *u, const uint8_t *buf, size_t len, uint64_t t4, nsc_udpp_answer *a)
{
    nsc_uprobe p;
    if (nsc_uprobe_decode(buf, len, NSC_UPROBE_ANSWER, &p) != NSC_UPROBE_OK) {
        u->st->malformed++;
        return 0;
    }
    if (p.id != u->id || p.token != u->token || u->answered) {
        if (p.id < u->id || (p.id == u->id && p.token == u->token))
            u->st->late++;  /* an older probe's, or the newest one's after it was given up */
        else
            u->st->foreign++;
        return 0;
    }
    u->answered = 1;
    u->lost_in_a_row = 0;
    u->st->answered++;
    *a = (nsc_udpp_answer){p.id, u->t1, p.t2, p.t3, t4};
    return 1;
}

int nsc_udpp_recv(nsc_udpp *u, uint64_t (*now)(void), nsc_udpp_answer *a)
{
    uint8_t buf[NSC_UPROBE_LEN + 1];  /* one byte more: a longer datagram reads as longer */
    for (;;) {
        ssize_t n = recv(u->fd, buf, sizeof buf, MSG_DONTWAIT);
        uint64_t t4 = now();
        if (n < 0) {
            if (errno == ECONNREFUSED && u->id && !u->answered)  /* nothing listens on the port */
                lose(u);
            return 0;
        }
        if (take(u, buf, (size_t)n, t4, a))
            return 1;
    }
}
