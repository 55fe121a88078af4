/* endpoints.h: the agent's list of collector endpoints.
 *
 * Owns the syntax of the `collector` option: one or more ZeroMQ endpoints
 * separated by commas (spaces around an entry are ignored), each
 * tcp://HOST:PORT (HOST a name, an IPv4 address or [IPv6], PORT 1..65535) or
 * ipc://PATH. The forwarder uses the first and moves to the next, in order and
 * round the list, when the one it uses dies (forward.h). A malformed list is
 * refused with a message naming the entry and what is wrong with it.
 */
#ifndef NCCLSCOPE_AGENT_ENDPOINTS_H
#define NCCLSCOPE_AGENT_ENDPOINTS_H

#include <stdint.h>

#define NSC_ENDPOINTS_MAX 16
#define NSC_ENDPOINT_LEN 256   /* with the terminating NUL */

typedef struct nsc_endpoints {
    char ep[NSC_ENDPOINTS_MAX][NSC_ENDPOINT_LEN];
    uint32_t n;
} nsc_endpoints;

/* Parse list into out. Returns 0, or -1 with the reason in err. */
int nsc_endpoints_parse(const char *list, nsc_endpoints *out, char err[256]);

#endif
