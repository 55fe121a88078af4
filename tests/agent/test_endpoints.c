/* Unit tests for the collector endpoint list (agent/endpoints.c): accepted
 * forms, and a clear message naming the entry for every malformed list; the
 * agent's configuration refuses such a list (exit 2). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "endpoints.h"

static nsc_endpoints eps;
static char err[256];

Test(endpoints, accepted)
{
    cr_assert_eq(nsc_endpoints_parse("tcp://collector-a.example:7760", &eps, err), 0, "%s", err);
    cr_assert_eq(eps.n, 1);
    cr_assert_str_eq(eps.ep[0], "tcp://collector-a.example:7760");
    cr_assert_eq(nsc_endpoints_parse(" tcp://10.0.0.1:7760 ,tcp://[fe80::1%eth0]:1,ipc:///run/c.sock", &eps, err), 0, "%s", err);
    cr_assert_eq(eps.n, 3);
    cr_assert_str_eq(eps.ep[0], "tcp://10.0.0.1:7760", "spaces around an entry are dropped");
    cr_assert_str_eq(eps.ep[1], "tcp://[fe80::1%eth0]:1");
    cr_assert_str_eq(eps.ep[2], "ipc:///run/c.sock");
}

/* list is refused with a message containing want. */
static void refused(const char *list, const char *want)
{
    err[0] = 0;
    cr_assert_eq(nsc_endpoints_parse(list, &eps, err), -1, "'%s' accepted", list);
    cr_assert(strstr(err, want), "'%s': message '%s' lacks '%s'", list, err, want);
}

Test(endpoints, malformed)
{
    refused("", "entry 1 is empty");
    refused("tcp://a:1,", "entry 2 is empty");
    refused(",tcp://a:1", "entry 1 is empty");
    refused("tcp://a:1, ,tcp://b:2", "entry 2 is empty");
    refused("tcp://a:1,a:2", "entry 2 'a:2' is not tcp://HOST:PORT or ipc://PATH");
    refused("http://a:1", "is not tcp://HOST:PORT");
    refused("tcp://a", "no valid HOST");
    refused("tcp://:7760", "no valid HOST");
    refused("tcp://a b:7760", "spaces");
    refused("tcp://a\"b:7760", "quotes");
    refused("tcp://[::1:7760", "no valid HOST");
    refused("tcp://a:", "no PORT");
    refused("tcp://a:0", "no PORT");
    refused("tcp://a:65536", "no PORT");
    refused("tcp://a:+1", "no PORT");
    refused("tcp://a:12x", "no PORT");
    refused("tcp://*:7760", "no valid HOST");
    refused("ipc://", "is not tcp://HOST:PORT or ipc://PATH");
    refused("tcp://a:1,tcp://b:2,tcp://a:1", "entry 3 'tcp://a:1' repeats entry 1");
    char many[1024] = "";
    for (int i = 1; i <= NSC_ENDPOINTS_MAX + 1; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%stcp://h:%d", i > 1 ? "," : "", i);
    refused(many, "more than 16 endpoints");
    char longest[400] = "tcp://";
    memset(longest + 6, 'h', 300);
    strcpy(longest + 306, ":1");
    refused(longest, "entry 1 is longer than 255 characters");
}

Test(endpoints, config_refuses_a_bad_list)
{
    nsc_agent_cfg c;
    char *good[] = {"agent", "--collector", "tcp://a:1,tcp://b:2", "--failover-ms", "750"};
    cr_assert_eq(nsc_agent_cfg_load(&c, 5, good, stderr), 0);
    cr_assert_eq(c.failover_ms, 750);
    char msg[512] = "";
    FILE *err_out = fmemopen(msg, sizeof msg, "w");
    char *bad[] = {"agent", "--collector", "tcp://a:1;tcp://b:2"};
    cr_assert_eq(nsc_agent_cfg_load(&c, 3, bad, err_out), -1);
    fclose(err_out);
    cr_assert(strstr(msg, "ncclscope-agent: collector list: entry 1 'tcp://a:1;tcp://b:2' has no valid HOST"), "%s", msg);
    char *zero[] = {"agent", "--failover-ms", "0"};
    cr_assert_eq(nsc_agent_cfg_load(&c, 3, zero, stderr), -1);
}

Test(endpoints, name_stands_for_its_addresses)
{
    cr_assert_eq(nsc_endpoints_parse(" dns+tcp://collectors.ncclscope.svc.cluster.local:7760 ", &eps, err), 0, "%s", err);
    cr_assert_eq(eps.n, 0, "the addresses come from resolving the name");
    cr_assert_str_eq(eps.dns_name, "collectors.ncclscope.svc.cluster.local");
    cr_assert_str_eq(eps.dns_port, "7760");
    cr_assert_eq(nsc_endpoints_parse("tcp://a:1", &eps, err), 0, "%s", err);
    cr_assert_str_eq(eps.dns_name, "", "a written list has no name");
    refused("dns+tcp://c:7760,tcp://a:1", "entry 2: a dns+tcp:// entry must be the whole list");
    refused("tcp://a:1,dns+tcp://c:7760", "entry 2: a dns+tcp:// entry must be the whole list");
    refused("dns+tcp://c:1,dns+tcp://d:1", "entry 2: a dns+tcp:// entry must be the whole list");
    refused("dns+tcp://c", "entry 1 'dns+tcp://c' has no valid NAME in dns+tcp://NAME:PORT");
    refused("dns+tcp://:7760", "has no valid NAME");
    refused("dns+tcp://c*:7760", "has no valid NAME");
    refused("dns+tcp://c:0", "has no PORT 1..65535 in dns+tcp://NAME:PORT");
    refused("dns+tcp://c:7x", "has no PORT");
    refused("dns+tcp://[::1]:7760", "names an address, not a name");
    refused("dns+tcp://c d:7760", "spaces");
    refused("dns://c:7760", "is not tcp://HOST:PORT or ipc://PATH");
}

/* A list of the addresses tcp://10.0.0.K:7760 for K in 1..n. */
static void numbered(nsc_endpoints *l, uint32_t n)
{
    l->n = n;
    for (uint32_t k = 0; k < n; k++)
        snprintf(l->ep[k], sizeof l->ep[k], "tcp://10.0.0.%u:7760", k + 1);
}

Test(endpoints, find_and_pick)
{
    cr_assert_eq(nsc_endpoints_parse("tcp://a:1,tcp://b:1", &eps, err), 0, "%s", err);
    cr_assert_eq(nsc_endpoints_find(&eps, "tcp://b:1"), 1);
    cr_assert_eq(nsc_endpoints_find(&eps, "tcp://c:1"), -1);
    cr_assert_eq(nsc_endpoints_find(&eps, ""), -1);
    nsc_endpoints four, five, other_port;
    numbered(&four, 4);
    numbered(&five, 5);
    numbered(&other_port, 4);
    for (uint32_t k = 0; k < 4; k++)
        snprintf(other_port.ep[k], sizeof other_port.ep[k], "tcp://10.0.0.%u:9", k + 1);
    unsigned hits[5] = {0}, moved = 0;
    for (int i = 0; i < 400; i++) {
        char id[32];
        snprintf(id, sizeof id, "gpu-node-%03d", i);
        uint32_t s = nsc_endpoints_pick(id, &four);
        cr_assert_lt(s, 4);
        cr_assert_eq(nsc_endpoints_pick(id, &four), s, "one id, one pick");
        cr_assert_eq(nsc_endpoints_pick(id, &other_port), s, "the port does not count");
        hits[s]++;
        uint32_t t = nsc_endpoints_pick(id, &five);
        cr_assert(t == s || t == 4, "%s: an added address takes agents, none move between the others (%u -> %u)",
                  id, s, t);
        moved += t == 4;
    }
    for (int i = 0; i < 4; i++)
        cr_assert_geq(hits[i], 50, "400 nodes over 4 addresses: %u pick %d", hits[i], i);
    cr_assert(moved >= 40 && moved <= 130, "a fifth address takes about 80 of 400 agents, took %u", moved);
    nsc_endpoints one;
    numbered(&one, 1);
    cr_assert_eq(nsc_endpoints_pick("x", &one), 0);
}

Test(endpoints, config_checks_the_refresh)
{
    nsc_agent_cfg c;
    char *good[] = {"agent", "--collector", "dns+tcp://collectors:7760", "--dns-refresh-ms", "1500"};
    cr_assert_eq(nsc_agent_cfg_load(&c, 5, good, stderr), 0);
    cr_assert_eq(c.dns_refresh_ms, 1500);
    char *dflt[] = {"agent"};
    cr_assert_eq(nsc_agent_cfg_load(&c, 1, dflt, stderr), 0);
    cr_assert_eq(c.dns_refresh_ms, 30000);
    char *zero[] = {"agent", "--dns-refresh-ms", "0"};
    cr_assert_eq(nsc_agent_cfg_load(&c, 3, zero, stderr), -1);
}
