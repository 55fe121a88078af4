/* Unit tests for the collector name resolver (agent/resolve.c), a real thread
 * calling the real getaddrinfo: a name's addresses arrive as endpoints with
 * the entry's port, once per change; a kick resolves again at once; a name
 * that does not resolve is counted and gives no list. Several addresses,
 * their order and changes of a hosts file: tests/e2e/dns.sh. */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include "mono.h"
#include "resolve.h"

static nsc_endpoints eps, got;

static nsc_resolver *start(const char *entry, uint64_t refresh_ms)
{
    char err[256];
    cr_assert_eq(nsc_endpoints_parse(entry, &eps, err), 0, "%s", err);
    nsc_resolver *r = nsc_resolver_new(&eps, refresh_ms * 1000000ull, stderr, err);
    cr_assert_not_null(r, "%s", err);
    return r;
}

static nsc_resolver_stats stats(nsc_resolver *r)
{
    nsc_resolver_stats st;
    nsc_resolver_stats_get(r, &st);
    return st;
}

/* Poll (generously: the machine is loaded) until cond(r) holds. */
static int within_30s(nsc_resolver *r, int (*cond)(nsc_resolver *))
{
    uint64_t end = nsc_mono_ns() + 30000000000ull;
    int ok;
    while (!(ok = cond(r)) && nsc_mono_ns() < end)
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    return ok;
}

static uint64_t gen;
static int have_list(nsc_resolver *r) { return nsc_resolver_take(r, &gen, &got); }
static int resolved_twice(nsc_resolver *r) { return stats(r).resolutions >= 2; }
static int failed(nsc_resolver *r) { return stats(r).failures >= 1; }

Test(resolve, addresses_once_per_change_and_kick, .timeout = 60)
{
    gen = 0;
    nsc_resolver *r = start("dns+tcp://127.0.0.1:7760", 3600000);
    cr_assert(within_30s(r, have_list), "no list");
    cr_assert_eq(got.n, 1);
    cr_assert_str_eq(got.ep[0], "tcp://127.0.0.1:7760");
    cr_assert_str_eq(got.dns_name, "127.0.0.1");
    cr_assert_eq(stats(r).addresses, 1);
    cr_assert_eq(stats(r).failures, 0);
    nsc_resolver_kick(r);
    cr_assert(within_30s(r, resolved_twice), "a kick did not resolve again within the hour's refresh");
    cr_assert_eq(nsc_resolver_take(r, &gen, &got), 0, "the same addresses are no new list");
    nsc_resolver_free(r);
}

Test(resolve, failure_counted_no_list, .timeout = 120)
{
    gen = 0;
    nsc_resolver *r = start("dns+tcp://no-such-collector.invalid:7760", 3600000);
    cr_assert(within_30s(r, failed), "no failure counted");
    cr_assert_eq(nsc_resolver_take(r, &gen, &got), 0);
    cr_assert_eq(stats(r).addresses, 0);
    nsc_resolver_free(r);
}
