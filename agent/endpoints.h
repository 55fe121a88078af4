/* endpoints.h: the agent's list of collector endpoints.
 *
 * Owns the syntax of the `collector` option: one or more ZeroMQ endpoints
 * separated by commas (spaces around an entry are ignored), each
 * tcp://HOST:PORT (HOST a name, an IPv4 address or [IPv6], PORT 1..65535) or
 * ipc://PATH. The forwarder uses the first and moves to the next, in order and
 * round the list, when the one it uses dies (forward.h). Or, alone, one
 * dns+tcp://NAME:PORT: the list is every address NAME resolves to (resolve.h
 * fills it, sorted, in the background), each as tcp://ADDRESS:PORT. A
 * malformed list is refused with a message naming the entry and what is wrong
 * with it.
 */
#ifndef NCCLSCOPE_AGENT_ENDPOINTS_H
#define NCCLSCOPE_AGENT_ENDPOINTS_H

#include <stdint.h>

#define NSC_ENDPOINTS_MAX 16       /* entries of a written list */
#define NSC_ENDPOINTS_DNS_MAX 64   /* addresses of a dns+tcp:// name used */
#define NSC_ENDPOINT_LEN 256       /* with the terminating NUL */
#define NSC_ENDPOINTS_DNS "dns+tcp://"

typedef struct nsc_endpoints {
    char ep[NSC_ENDPOINTS_DNS_MAX][NSC_ENDPOINT_LEN];
    uint32_t n;
    char dns_name[NSC_ENDPOINT_LEN];  /* empty: a written list; else the name, ep its addresses */
    char dns_port[8];
} nsc_endpoints;

/* Parse list into out. A dns+tcp:// entry leaves out->n 0 (its addresses are
 * not known yet). Returns 0, or -1 with the reason in err. */
int nsc_endpoints_parse(const char *list, nsc_endpoints *out, char err[256]);
/* The position of ep in eps, or -1. */
int32_t nsc_endpoints_find(const nsc_endpoints *eps, const char *ep);
/* The address of a name's list (eps->n > 0) that an agent named id uses:
 * the one of highest weight, a hash of (id, the address's host part)
 * (rendezvous hashing). Agents given one name spread over its addresses,
 * each always picks the same one of the same list, and an address added to
 * the list becomes the pick of only the agents it now outweighs (about 1 in
 * n+1): the others keep theirs. */
uint32_t nsc_endpoints_pick(const char *id, const nsc_endpoints *eps);

#endif
