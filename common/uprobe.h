/* uprobe.h: the clock probe datagram (docs/protocol-a2c.md, "Clock probes
 * over UDP").
 *
 * Owns the byte format of the probes an agent sends to the collector's UDP
 * port and of their answers. Both are NSC_UPROBE_LEN bytes: the request
 * carries the fields the answer fills as zeros, so that an answer is never
 * larger than what asked for it (no amplifier). Layout, integers
 * big-endian (network order):
 *
 *   0  "NSCK"   4  version (1)   5  kind (1 request, 2 answer)   6  two zeros
 *   8  id       16 token         24 t2       32 t3
 *
 * id and token come back as they went; t2 and t3 are the collector's
 * CLOCK_MONOTONIC at receipt and at reply (0 in a request).
 */
#ifndef NCCLSCOPE_UPROBE_H
#define NCCLSCOPE_UPROBE_H

#include <stddef.h>
#include <stdint.h>

#define NSC_UPROBE_LEN 40
#define NSC_UPROBE_VERSION 1

enum { NSC_UPROBE_REQUEST = 1, NSC_UPROBE_ANSWER = 2 };

/* Why a datagram is refused (0: it is not). */
enum {
    NSC_UPROBE_OK = 0,
    NSC_UPROBE_BAD_SIZE = -1,     /* not NSC_UPROBE_LEN bytes */
    NSC_UPROBE_BAD_MAGIC = -2,
    NSC_UPROBE_BAD_VERSION = -3,
    NSC_UPROBE_BAD_KIND = -4,     /* neither request nor answer, or not the kind expected */
    NSC_UPROBE_BAD_FIELD = -5     /* a zero field is not zero */
};

typedef struct nsc_uprobe {
    uint8_t kind;
    uint64_t id, token;
    uint64_t t2, t3;  /* 0 in a request */
} nsc_uprobe;

void nsc_uprobe_encode(const nsc_uprobe *p, uint8_t out[NSC_UPROBE_LEN]);
/* Decode a datagram of the given kind; returns NSC_UPROBE_OK or why not. */
int nsc_uprobe_decode(const void *buf, size_t len, uint8_t kind, nsc_uprobe *out);
const char *nsc_uprobe_strerror(int rc);

/* The HOST of HOST:PORT (an [IPv6] one without its brackets) into host, ""
 * when there is none or it does not fit cap; returns the last ':', NULL
 * without one. Both ends of the probe take their address this way. */
const char *nsc_uprobe_host(const char *hp, char *host, size_t cap);

#endif
