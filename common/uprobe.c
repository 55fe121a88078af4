/* uprobe.c: the clock probe datagram (see uprobe.h). */
#include "uprobe.h"

#include <stdio.h>
#include <string.h>

#include "bytes.h"

static const uint8_t magic[4] = {'N', 'S', 'C', 'K'};

void nsc_uprobe_encode(const nsc_uprobe *p, uint8_t out[NSC_UPROBE_LEN])
{
    memset(out, 0, NSC_UPROBE_LEN);
    memcpy(out, magic, sizeof magic);
    out[4] = NSC_UPROBE_VERSION;
    out[5] = p->kind;
    nsc_put_be64(out + 8, p->id);
    nsc_put_be64(out + 16, p->token);
    if (p->kind == NSC_UPROBE_ANSWER) {
        nsc_put_be64(out + 24, p->t2);
        nsc_put_be64(out + 32, p->t3);
    }
}

int nsc_uprobe_decode(const void *buf, size_t len, uint8_t kind, nsc_uprobe *out)
{
    const uint8_t *b = buf;
    memset(out, 0, sizeof *out);
    if (len != NSC_UPROBE_LEN)
        return NSC_UPROBE_BAD_SIZE;
    if (memcmp(b, magic, sizeof magic) != 0)
        return NSC_UPROBE_BAD_MAGIC;
    if (b[4] != NSC_UPROBE_VERSION)
        return NSC_UPROBE_BAD_VERSION;
    if (b[5] != kind || (kind != NSC_UPROBE_REQUEST && kind != NSC_UPROBE_ANSWER))
        return NSC_UPROBE_BAD_KIND;
    nsc_uprobe p = {kind, nsc_get_be64(b + 8), nsc_get_be64(b + 16), nsc_get_be64(b + 24), nsc_get_be64(b + 32)};
    /* a request's times are zero: a reflected answer is no request */
    if (b[6] || b[7] || (kind == NSC_UPROBE_REQUEST && (p.t2 || p.t3)))
        return NSC_UPROBE_BAD_FIELD;
    *out = p;
    return NSC_UPROBE_OK;
}

const char *nsc_uprobe_strerror(int rc)
{
    switch (rc) {
    case NSC_UPROBE_OK: return "ok";
    case NSC_UPROBE_BAD_SIZE: return "wrong size";
    case NSC_UPROBE_BAD_MAGIC: return "bad magic";
    case NSC_UPROBE_BAD_VERSION: return "unknown version";
    case NSC_UPROBE_BAD_KIND: return "wrong kind";
    default: return "nonzero reserved field";
    }
}

const char *nsc_uprobe_host(const char *hp, char *host, size_t cap)
{
    const char *colon = strrchr(hp, ':');
    size_t len = colon ? (size_t)(colon - hp) : 0;
    if (len >= 2 && hp[0] == '[' && hp[len - 1] == ']')
        hp++, len -= 2;
    snprintf(host, cap, "%.*s", (int)(len < cap ? len : 0), hp);
    return colon;
}
