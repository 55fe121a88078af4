/* endpoints.c: the collector endpoint list (see endpoints.h). */
#include "endpoints.h"
#include "fnv.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Characters that end up in logs and Prometheus labels unquoted. */
static int plain(const char *s)
{
    for (; *s; s++)
        if (!isgraph((unsigned char)*s) || *s == '"' || *s == '\\' || *s == ',')
            return 0;
    return 1;
}

static int valid_host(const char *h, size_t len)
{
    if (len == 0)
        return 0;
    const char *extra = "-._";
    if (h[0] == '[') {  /* [IPv6], maybe with %zone */
        if (len < 3 || h[len - 1] != ']')
            return 0;
        h++, len -= 2, extra = ":.%-_";
    }
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)h[i]) && !strchr(extra, h[i]))
            return 0;
    return 1;
}

/* tcp://HOST:PORT or ipc://PATH; why says what is wrong. */
static int valid_endpoint(const char *ep, const char **why)
{
    *why = "is not tcp://HOST:PORT or ipc://PATH";
    if (strncmp(ep, "ipc://", 6) == 0)
        return ep[6] != 0;
    if (strncmp(ep, "tcp://", 6) != 0)
        return 0;
    const char *hp = ep + 6, *colon = strrchr(hp, ':');
    if (!colon || !valid_host(hp, (size_t)(colon - hp))) {
        *why = "has no valid HOST in tcp://HOST:PORT";
        return 0;
    }
    char *end = NULL;
    unsigned long port = strtoul(colon + 1, &end, 10);
    *why = "has no PORT 1..65535 in tcp://HOST:PORT";
    return isdigit((unsigned char)colon[1]) && *end == 0 && port >= 1 && port <= 65535;
}

/* dns+tcp://NAME:PORT (NAME not an [IPv6] literal) into out's name and port. */
static int take_dns(const char *ep, nsc_endpoints *out, const char **why)
{
    const char *hp = ep + strlen(NSC_ENDPOINTS_DNS), *colon = strrchr(hp, ':');
    char tcp[NSC_ENDPOINT_LEN + 8];
    snprintf(tcp, sizeof tcp, "tcp://%s", hp);
    *why = "names an address, not a name: write tcp://[ADDRESS]:PORT";
    if (hp[0] == '[')
        return -1;
    *why = "has no valid NAME in dns+tcp://NAME:PORT";
    if (!colon || !valid_host(hp, (size_t)(colon - hp)))
        return -1;
    *why = "has no PORT 1..65535 in dns+tcp://NAME:PORT";
    if (!valid_endpoint(tcp, &(const char *){NULL}))
        return -1;
    snprintf(out->dns_name, sizeof out->dns_name, "%.*s", (int)(colon - hp), hp);
    snprintf(out->dns_port, sizeof out->dns_port, "%s", colon + 1);
    return 0;
}

/* Entry i of the list, spaces trimmed, into out->ep[out->n] (a dns+tcp://
 * entry: into out's name, and it must be the only entry). */
static int take_entry(const char *s, size_t len, unsigned i, nsc_endpoints *out, char err[256])
{
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (len == 0) {
        snprintf(err, 256, "collector list: entry %u is empty (a comma too many?)", i);
        return -1;
    }
    if (out->n == NSC_ENDPOINTS_MAX) {
        snprintf(err, 256, "collector list: more than %d endpoints", NSC_ENDPOINTS_MAX);
        return -1;
    }
    if (len >= NSC_ENDPOINT_LEN) {
        snprintf(err, 256, "collector list: entry %u is longer than %d characters", i, NSC_ENDPOINT_LEN - 1);
        return -1;
    }
    char *ep = out->ep[out->n];
    memcpy(ep, s, len);
    ep[len] = 0;
    const char *why = "has spaces, quotes or backslashes";
    int dns = strncmp(ep, NSC_ENDPOINTS_DNS, strlen(NSC_ENDPOINTS_DNS)) == 0;
    if (dns || out->dns_name[0]) {
        if (out->n || out->dns_name[0]) {
            snprintf(err, 256, "collector list: entry %u: a " NSC_ENDPOINTS_DNS " entry must be the whole list", i);
            return -1;
        }
        if (!plain(ep) || take_dns(ep, out, &why) != 0) {
            snprintf(err, 256, "collector list: entry %u '%.120s' %s", i, ep, why);
            return -1;
        }
        return 0;
    }
    if (!plain(ep) || !valid_endpoint(ep, &why)) {
        snprintf(err, 256, "collector list: entry %u '%.120s' %s", i, ep, why);
        return -1;
    }
    for (uint32_t j = 0; j < out->n; j++)
        if (strcmp(out->ep[j], ep) == 0) {
            snprintf(err, 256, "collector list: entry %u '%.120s' repeats entry %u", i, ep, j + 1);
            return -1;
        }
    out->n++;
    return 0;
}

int nsc_endpoints_parse(const char *list, nsc_endpoints *out, char err[256])
{
    out->n = 0;
    out->dns_name[0] = out->dns_port[0] = 0;
    for (unsigned i = 1;; i++) {
        const char *comma = strchr(list, ',');
        size_t len = comma ? (size_t)(comma - list) : strlen(list);
        if (take_entry(list, len, i, out, err) != 0)
            return -1;
        if (!comma)
            return 0;
        list = comma + 1;
    }
}

int32_t nsc_endpoints_find(const nsc_endpoints *eps, const char *ep)
{
    for (uint32_t i = 0; i < eps->n; i++)
        if (strcmp(eps->ep[i], ep) == 0)
            return (int32_t)i;
    return -1;
}

/* The host part's weight first (a name's addresses share one port, so the
 * pick does not change with it), then the whole address's (two addresses
 * on one host). */
uint32_t nsc_endpoints_pick(const char *id, const nsc_endpoints *eps)
{
    uint32_t best = 0;
    uint64_t top[2] = {0, 0};
    for (uint32_t i = 0; i < eps->n; i++) {
        const char *ep = eps->ep[i], *host = strstr(ep, "://");
        host = host ? host + 3 : ep;
        const char *colon = strrchr(host, ':');
        uint64_t w[2] = {nsc_fnv_rendezvous(id, host, colon ? (size_t)(colon - host) : strlen(host)),
                         nsc_fnv_rendezvous(id, ep, strlen(ep))};
        if (i == 0 || w[0] > top[0] || (w[0] == top[0] && w[1] > top[1]))
            best = i, top[0] = w[0], top[1] = w[1];
    }
    return best;
}
