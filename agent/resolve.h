/* resolve.h: the addresses of a dns+tcp://NAME:PORT collector entry.
 *
 * Owns a thread of its own that resolves NAME with getaddrinfo (A and AAAA,
 * /etc/hosts and DNS as the system is configured) at start, every refresh
 * interval and whenever asked (the forwarder's collector died), because
 * getaddrinfo blocks for as long as the DNS servers take: on the agent's
 * loop it would stall ingest, forwarding, HTTP and shutdown. Each success
 * becomes a list of tcp://ADDRESS:PORT endpoints (endpoints.h), sorted by
 * address so that every agent sees one order, handed to the loop under a
 * mutex that getaddrinfo never holds; the loop polls a generation number.
 * A failure (no such name, no answer, no address) keeps the last good list,
 * is counted and logged with its reason (once per run of failures with one
 * reason). Until a first success it tries again every second, so an agent
 * may start before its collectors exist. Freeing never waits for the thread:
 * a thread still inside getaddrinfo frees what they share when it returns.
 */
#ifndef NCCLSCOPE_AGENT_RESOLVE_H
#define NCCLSCOPE_AGENT_RESOLVE_H

#include <stdint.h>
#include <stdio.h>

#include "endpoints.h"

typedef struct nsc_resolver nsc_resolver;

typedef struct nsc_resolver_stats {
    uint64_t resolutions;  /* getaddrinfo calls that gave addresses */
    uint64_t failures;     /* ... that gave none (the last good list stays) */
    uint64_t addresses;    /* in the last good list */
} nsc_resolver_stats;

/* Start resolving eps's dns_name (eps from nsc_endpoints_parse) every
 * refresh_ns; log: where changes and failures are told (NULL: nowhere).
 * Returns NULL with err when the thread cannot start. */
nsc_resolver *nsc_resolver_new(const nsc_endpoints *eps, uint64_t refresh_ns, FILE *log, char err[256]);
/* Stop; never waits for a resolution in progress. */
void nsc_resolver_free(nsc_resolver *r);
/* Resolve again now (coalesced with one pending). */
void nsc_resolver_kick(nsc_resolver *r);
/* When the last good list is newer than *gen: copy it to out (dns_name and
 * dns_port included), advance *gen, return 1. Else 0, cheaply (one atomic
 * load). */
int nsc_resolver_take(nsc_resolver *r, uint64_t *gen, nsc_endpoints *out);
void nsc_resolver_stats_get(nsc_resolver *r, nsc_resolver_stats *st);

#endif
