/* fuzz_a2c.c: libFuzzer target for the agent-to-collector decoders (the
 * collector's ingest port reads these from the network). Whatever decodes
 * must survive a re-encode: the bound holds, and the copy decodes to the same
 * message; every section of a batch goes through the wire decoder too, every
 * ledger batch through the ledger decoder, and
 * the agent's pre-send check agrees with the decoder on what decodes; a
 * fetch and a detail chunk survive it the same way. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "a2c.h"
#include "ledger.h"

static void check_batch(const uint8_t *data, size_t size)
{
    nsc_a2c_batch b, c;
    if (nsc_a2c_decode_batch(data, size, NULL, &b) != NSC_WIRE_OK)
        return;
    if (nsc_a2c_batch_check(data, size) != NSC_WIRE_OK)
        abort();
    for (uint32_t i = 0; i < b.nsections; i++) {
        nsc_batch wb;
        if (nsc_batch_decode(b.sections[i].data, b.sections[i].len, NULL, &wb) == NSC_WIRE_OK)
            nsc_batch_release(&wb);
    }
    for (uint32_t i = 0; i < b.nledgers; i++) {
        nsc_ledger_batch lb;
        if (nsc_ledger_decode(b.ledgers[i].data, b.ledgers[i].len, NULL, &lb) == NSC_WIRE_OK)
            nsc_ledger_release(&lb);
    }
    size_t bound = nsc_a2c_batch_bound(&b);
    uint8_t *out = malloc(bound);
    if (!out)
        abort();
    size_t n = nsc_a2c_encode_batch(&b, out);
    if (n > bound || nsc_a2c_decode_batch(out, n, NULL, &c) != NSC_WIRE_OK)
        abort();
    if (c.epoch != b.epoch || c.seq != b.seq || c.nsections != b.nsections || c.nlife != b.nlife || c.naliases != b.naliases ||
        c.nledgers != b.nledgers ||
        strcmp(c.agent, b.agent) != 0 || strcmp(c.host, b.host) != 0)
        abort();
    for (uint32_t i = 0; i < b.nsections; i++)
        if (c.sections[i].len != b.sections[i].len ||
            memcmp(c.sections[i].data, b.sections[i].data, b.sections[i].len) != 0)
            abort();
    for (uint32_t i = 0; i < b.nledgers; i++)
        if (c.ledgers[i].len != b.ledgers[i].len ||
            memcmp(c.ledgers[i].data, b.ledgers[i].data, b.ledgers[i].len) != 0)
            abort();
    nsc_a2c_batch_release(&c);
    nsc_a2c_batch_release(&b);
    free(out);
}

static void check_small(const uint8_t *data, size_t size, int kind)
{
    uint8_t out[NSC_A2C_SMALL_MAX];
    if (kind == NSC_A2C_ACK) {
        nsc_a2c_ack a, b;
        if (nsc_a2c_decode_ack(data, size, &a) != NSC_WIRE_OK)
            return;
        size_t n = nsc_a2c_encode_ack(&a, out);
        if (nsc_a2c_decode_ack(out, n, &b) != NSC_WIRE_OK || b.seq != a.seq || b.credit != a.credit)
            abort();
        return;
    }
    if (kind == NSC_A2C_REJECT) {
        nsc_a2c_reject r, q;
        if (nsc_a2c_decode_reject(data, size, &r) != NSC_WIRE_OK)
            return;
        size_t n = nsc_a2c_encode_reject(&r, out);
        if (nsc_a2c_decode_reject(out, n, &q) != NSC_WIRE_OK || memcmp(&r, &q, sizeof r) != 0)
            abort();
        return;
    }
    if (kind == NSC_A2C_UDP) {
        nsc_a2c_udp u, v;
        if (nsc_a2c_decode_udp(data, size, &u) != NSC_WIRE_OK)
            return;
        size_t n = nsc_a2c_encode_udp(&u, out);
        if (nsc_a2c_decode_udp(out, n, &v) != NSC_WIRE_OK || memcmp(&u, &v, sizeof u) != 0)
            abort();
        return;
    }
    nsc_a2c_probe p, q;
    if (nsc_a2c_decode_probe(data, size, &p) != NSC_WIRE_OK)
        return;
    size_t n = nsc_a2c_encode_probe(&p, out);
    if (nsc_a2c_decode_probe(out, n, &q) != NSC_WIRE_OK || memcmp(&p, &q, sizeof p) != 0)
        abort();
}

static void check_fetch(const uint8_t *data, size_t size)
{
    uint8_t out[NSC_A2C_FETCH_MAX];
    nsc_a2c_fetch f, g;
    if (nsc_a2c_decode_fetch(data, size, &f) != NSC_WIRE_OK)
        return;
    size_t n = nsc_a2c_encode_fetch(&f, out);
    if (nsc_a2c_decode_fetch(out, n, &g) != NSC_WIRE_OK || memcmp(&f, &g, sizeof f) != 0)
        abort();
}

static void check_detail(const uint8_t *data, size_t size)
{
    nsc_a2c_detail d, e;
    if (nsc_a2c_decode_detail(data, size, NULL, &d) != NSC_WIRE_OK)
        return;
    size_t bound = nsc_a2c_detail_bound(&d);
    uint8_t *out = malloc(bound);
    if (!out)
        abort();
    size_t n = nsc_a2c_encode_detail(&d, out);
    if (n > bound || nsc_a2c_decode_detail(out, n, NULL, &e) != NSC_WIRE_OK || e.npieces != d.npieces ||
        e.epoch != d.epoch || e.id != d.id || e.chunk != d.chunk || e.last != d.last || strcmp(e.host, d.host) != 0)
        abort();
    for (uint32_t i = 0; i < d.npieces; i++) {
        nsc_batch wb;
        if (e.pieces[i].seq != d.pieces[i].seq || e.pieces[i].len != d.pieces[i].len ||
            memcmp(e.pieces[i].data, d.pieces[i].data, d.pieces[i].len) != 0)
            abort();
        if (nsc_batch_decode(d.pieces[i].data, d.pieces[i].len, NULL, &wb) == NSC_WIRE_OK)
            nsc_batch_release(&wb);
    }
    nsc_a2c_detail_release(&e);
    nsc_a2c_detail_release(&d);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int kind = nsc_a2c_kind(data, size);
    if (kind == NSC_A2C_BATCH)
        check_batch(data, size);
    else if (kind == NSC_A2C_FETCH)
        check_fetch(data, size);
    else if (kind == NSC_A2C_DETAIL)
        check_detail(data, size);
    else if (kind > 0)
        check_small(data, size, kind);
    return 0;
}
