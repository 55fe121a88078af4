/* resolve.c: a collector name's addresses, on a thread of its own (see resolve.h). */
#include "resolve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "mono.h"

#define RETRY_NS 1000000000ull  /* until the first success */
#define MAX_ANSWERS 256         /* getaddrinfo results looked at */

struct nsc_resolver {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;                   /* the loop's and the thread's: the last one frees */
    int stop, kicked;
    _Atomic uint64_t gen;       /* of list; read without the lock by nsc_resolver_take */
    nsc_endpoints list;         /* the last good list (its n 0 before a success) */
    nsc_resolver_stats st;
    uint64_t refresh_ns;
    FILE *log;
    char failed[160];           /* the reason last logged of the current run of failures */
};

typedef struct answer {
    int family;
    uint8_t addr[16];
    char text[INET6_ADDRSTRLEN + IF_NAMESIZE + 1];  /* an IPv6 address may carry %zone */
} answer;

static int by_address(const void *a, const void *b)
{
    const answer *x = a, *y = b;
    return x->family != y->family ? (x->family < y->family ? -1 : 1) : memcmp(x->addr, y->addr, sizeof x->addr);
}

/* One answer's family, bytes and numeric text; 0 if it is neither IPv4 nor IPv6. */
static int take_answer(const struct addrinfo *ai, answer *out)
{
    memset(out, 0, sizeof *out);
    out->family = ai->ai_family;
    if (ai->ai_family == AF_INET)
        memcpy(out->addr, &((const struct sockaddr_in *)(const void *)ai->ai_addr)->sin_addr, 4);
    else if (ai->ai_family == AF_INET6)
        memcpy(out->addr, &((const struct sockaddr_in6 *)(const void *)ai->ai_addr)->sin6_addr, 16);
    else
        return 0;
    return getnameinfo(ai->ai_addr, ai->ai_addrlen, out->text, sizeof out->text, NULL, 0, NI_NUMERICHOST) == 0;
}

/* Sorted, distinct answers of res into list's endpoints (at most the first
 * NSC_ENDPOINTS_DNS_MAX). */
static void fill_list(const struct addrinfo *res, nsc_endpoints *list)
{
    answer ans[MAX_ANSWERS];  /* 21 KiB of the resolver thread's stack */
    uint32_t n = 0;
    for (; res && n < MAX_ANSWERS; res = res->ai_next)
        n += (uint32_t)take_answer(res, &ans[n]);
    qsort(ans, n, sizeof ans[0], by_address);
    list->n = 0;
    for (uint32_t i = 0; i < n && list->n < NSC_ENDPOINTS_DNS_MAX; i++) {
        if (i && by_address(&ans[i - 1], &ans[i]) == 0)
            continue;
        const char *fmt = ans[i].family == AF_INET6 ? "tcp://[%s]:%s" : "tcp://%s:%s";
        snprintf(list->ep[list->n++], NSC_ENDPOINT_LEN, fmt, ans[i].text, list->dns_port);
    }
}

/* getaddrinfo into list; returns 0, or -1 with the reason in why. */
static int resolve(nsc_endpoints *list, char why[160])
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(list->dns_name, NULL, &hints, &res);
    if (rc != 0) {
        snprintf(why, 160, "%s", rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return -1;
    }
    fill_list(res, list);
    freeaddrinfo(res);
    if (list->n == 0) {
        snprintf(why, 160, "no IPv4 or IPv6 address");
        return -1;
    }
    return 0;
}

static void log_list(const nsc_resolver *r, const nsc_endpoints *l)
{
    if (!r->log)
        return;
    char text[1024] = "";
    size_t len = 0;
    for (uint32_t i = 0; i < l->n && len < sizeof text; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s%s", i ? " " : "", l->ep[i]);
    fprintf(r->log, "ncclscope-agent: " NSC_ENDPOINTS_DNS "%s:%s: %u address%s: %s\n", l->dns_name, l->dns_port, l->n,
            l->n == 1 ? "" : "es", text);
}

/* A resolution's outcome, under the lock: a changed list gets a new
 * generation; a failure is counted, and logged once per reason. */
static void publish(nsc_resolver *r, const nsc_endpoints *l, int ok, const char *why)
{
    if (!ok) {
        r->st.failures++;
        if (r->log && strcmp(r->failed, why) != 0)
            fprintf(r->log, "ncclscope-agent: " NSC_ENDPOINTS_DNS "%s:%s: cannot resolve (%s); %s\n", l->dns_name,
                    l->dns_port, why, r->list.n ? "keeping the last good addresses" : "no address yet, trying again every second");
        snprintf(r->failed, sizeof r->failed, "%s", why);
        return;
    }
    r->st.resolutions++;
    r->failed[0] = 0;
    r->st.addresses = l->n;
    if (l->n == r->list.n && memcmp(l->ep, r->list.ep, sizeof l->ep[0] * l->n) == 0)
        return;
    r->list.n = l->n;
    memcpy(r->list.ep, l->ep, sizeof l->ep[0] * l->n);
    atomic_fetch_add(&r->gen, 1);
    log_list(r, l);
}

/* Drop one reference, under the lock (released here); the last one frees. */
static void release(nsc_resolver *r)
{
    int last = --r->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (!last)
        return;
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* Sleep until the next resolution is due (refresh, or a second while there is
 * no list), asked for, or stop; under the lock. */
static void wait_due(nsc_resolver *r)
{
    uint64_t due = nsc_mono_ns() + (r->list.n ? r->refresh_ns : RETRY_NS < r->refresh_ns ? RETRY_NS : r->refresh_ns);
    struct timespec ts = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
    while (!r->stop && !r->kicked && nsc_mono_ns() < due)
        if (pthread_cond_timedwait(&r->cv, &r->mu, &ts) == ETIMEDOUT)
            break;
    r->kicked = 0;
}

static void *run(void *arg)
{
    nsc_resolver *r = arg;
    nsc_endpoints l;  /* 17 KiB of the resolver thread's stack */
    char why[160] = "";
    pthread_mutex_lock(&r->mu);
    memcpy(l.dns_name, r->list.dns_name, sizeof l.dns_name);
    memcpy(l.dns_port, r->list.dns_port, sizeof l.dns_port);
    while (!r->stop) {
        pthread_mutex_unlock(&r->mu);
        int ok = resolve(&l, why) == 0;
        pthread_mutex_lock(&r->mu);
        if (r->stop)
            break;
        publish(r, &l, ok, why);
        wait_due(r);
    }
    release(r);
    return NULL;
}

/* The mutex, and a condition variable that waits on CLOCK_MONOTONIC (as nsc_mono_ns). */
static int init_sync(nsc_resolver *r)
{
    pthread_condattr_t ca;
    if (pthread_mutex_init(&r->mu, NULL) != 0)
        return -1;
    if (pthread_condattr_init(&ca) != 0 || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&r->cv, &ca) != 0) {
        pthread_mutex_destroy(&r->mu);
        return -1;
    }
    pthread_condattr_destroy(&ca);
    return 0;
}

nsc_resolver *nsc_resolver_new(const nsc_endpoints *eps, uint64_t refresh_ns, FILE *log, char err[256])
{
    nsc_resolver *r = calloc(1, sizeof *r);
    if (!r || init_sync(r) != 0) {
        snprintf(err, 256, "collector name resolver: out of memory");
        free(r);
        return NULL;
    }
    memcpy(r->list.dns_name, eps->dns_name, sizeof r->list.dns_name);
    memcpy(r->list.dns_port, eps->dns_port, sizeof r->list.dns_port);
    r->refresh_ns = refresh_ns;
    r->log = log;
    r->refs = 2;
    pthread_attr_t at;
    pthread_t t;
    int rc = pthread_attr_init(&at);
    if (rc == 0) {  /* detached: nobody ever waits for it (resolve.h) */
        if ((rc = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED)) == 0)
            rc = pthread_create(&t, &at, run, r);
        pthread_attr_destroy(&at);
    }
    if (rc != 0) {
        snprintf(err, 256, "collector name resolver: %s", strerror(rc));
        pthread_mutex_lock(&r->mu);
        r->refs = 1;
        release(r);
        return NULL;
    }
    return r;
}

void nsc_resolver_free(nsc_resolver *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    release(r);
}

void nsc_resolver_kick(nsc_resolver *r)
{
    pthread_mutex_lock(&r->mu);
    r->kicked = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

int nsc_resolver_take(nsc_resolver *r, uint64_t *gen, nsc_endpoints *out)
{
    if (atomic_load(&r->gen) == *gen)
        return 0;
    pthread_mutex_lock(&r->mu);
    *gen = atomic_load(&r->gen);
    memcpy(out->dns_name, r->list.dns_name, sizeof out->dns_name);
    memcpy(out->dns_port, r->list.dns_port, sizeof out->dns_port);
    out->n = r->list.n;
    memcpy(out->ep, r->list.ep, sizeof out->ep[0] * out->n);
    pthread_mutex_unlock(&r->mu);
    return 1;
}

void nsc_resolver_stats_get(nsc_resolver *r, nsc_resolver_stats *st)
{
    pthread_mutex_lock(&r->mu);
    *st = r->st;
    pthread_mutex_unlock(&r->mu);
}
