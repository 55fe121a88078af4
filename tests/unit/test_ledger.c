/* test_ledger.c: the ledger codec (common/ledger.c): records survive the
 * round trip, every malformed message is rejected with its error and nothing
 * leaks, and docs/protocol-ledger.md's table lists every field. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "ledger.h"
#include "wire_samples.h"

static uint8_t buf[1 << 16];

static size_t encode_sample(void)
{
    nsc_ledger_batch b = sample_ledger();
    size_t n = nsc_ledger_encode(&b, buf);
    cr_assert_leq(n, nsc_ledger_bound(&b));
    return n;
}

static int decode(const uint8_t *p, size_t n)
{
    nsc_ledger_batch b;
    int rc = nsc_ledger_decode(p, n, NULL, &b);
    if (rc == NSC_WIRE_OK)
        nsc_ledger_release(&b);
    else
        cr_assert_null(b.mem);
    return rc;
}

static void assert_same_rec(const nsc_ledger_rec *a, const nsc_ledger_rec *b)
{
    nsc_ledger_rec x = *a, y = *b;
    x.edges = y.edges = NULL;
    cr_assert_eq(memcmp(&x, &y, sizeof x), 0, "record seq %lu differs", (unsigned long)a->seq);
    for (uint32_t e = 0; e < a->nedges; e++)
        cr_assert_eq(memcmp(&a->edges[e], &b->edges[e], sizeof a->edges[e]), 0, "edge %u", e);
}

Test(ledger, round_trip)
{
    size_t n = encode_sample();
    nsc_ledger_batch in = sample_ledger(), out;
    cr_assert_eq(nsc_ledger_decode(buf, n, NULL, &out), NSC_WIRE_OK);
    cr_assert_eq(out.pid, 4242);
    cr_assert_eq(out.nstrs, 4);
    cr_assert_str_eq(out.strs[3].text, "Simple");
    cr_assert_eq(out.nrecs, 3);
    for (uint32_t i = 0; i < 3; i++)
        assert_same_rec(&in.recs[i], &out.recs[i]);
    nsc_ledger_release(&out);
}

/* A record that repeats the one before it but for its seq and times costs
 * its times: the figure docs/benchmarks.md quotes comes from a real job. */
Test(ledger, repeated_records_send_only_what_changed)
{
    nsc_ledger_batch b = sample_ledger();
    b.nrecs = 1;
    size_t one = nsc_ledger_encode(&b, buf);
    b.nrecs = 2;
    size_t two = nsc_ledger_encode(&b, buf);
    cr_assert_lt(two - one, 64, "the second record costs %zu bytes", two - one);
}

Test(ledger, empty_batch)
{
    nsc_ledger_batch b = {.pid = 1}, out;
    size_t n = nsc_ledger_encode(&b, buf);
    cr_assert_eq(nsc_ledger_decode(buf, n, NULL, &out), NSC_WIRE_OK);
    cr_assert_eq(out.nrecs + out.nstrs, 0);
    nsc_ledger_release(&out);
}

Test(ledger, truncated_at_every_byte)
{
    size_t n = encode_sample();
    for (size_t cut = 0; cut < n; cut++) {
        int rc = decode(buf, cut);
        cr_assert(rc == NSC_WIRE_TRUNCATED || (cut == 0 && rc == NSC_WIRE_EMPTY),
                  "cut at %zu of %zu: %s", cut, n, nsc_wire_strerror(rc));
    }
}

Test(ledger, trailing_bytes)
{
    size_t n = encode_sample();
    buf[n] = 0;
    cr_assert_eq(decode(buf, n + 1), NSC_WIRE_TRAILING);
}

Test(ledger, every_byte_changed_decodes_or_is_rejected)
{
    size_t n = encode_sample();
    static uint8_t copy[sizeof buf];
    static const uint8_t values[] = {0x00, 0x7f, 0x90, 0xa1, 0xc0, 0xc1, 0xcf, 0xd3, 0xdd, 0xff};
    for (size_t at = 0; at < n; at++)
        for (size_t v = 0; v < sizeof values; v++) {
            memcpy(copy, buf, n);
            copy[at] = values[v];
            int rc = decode(copy, n);
            cr_assert(rc <= 0 && rc > -NSC_WIRE_NERR);
        }
}

/* Messages made by hand: [version, pid, strs, records]. */
static uint8_t *head(uint8_t *p, uint32_t nstrs)
{
    p = nsc_mp_put_array(p, 4);
    p = nsc_mp_put_uint(p, 1);
    p = nsc_mp_put_uint(p, 7);
    p = nsc_mp_put_array(p, nstrs);
    for (uint32_t i = 0; i < nstrs; i++) {
        p = nsc_mp_put_array(p, 2);
        p = nsc_mp_put_uint(p, i + 1);
        p = nsc_mp_put_text(p, "x");
    }
    return p;
}

/* One record whose present bits are `bits`, each value `v`, no edges. */
static size_t one_rec(uint32_t nstrs, uint32_t bits, int64_t v)
{
    uint8_t *p = head(buf, nstrs);
    p = nsc_mp_put_array(p, 1);
    p = nsc_mp_put_array(p, 2 + (uint32_t)__builtin_popcount(bits));
    p = nsc_mp_put_uint(p, bits);
    for (int i = 0; i < __builtin_popcount(bits); i++)
        p = nsc_mp_put_int(p, v);
    p = nsc_mp_put_array(p, 0);
    return (size_t)(p - buf);
}

/* Field numbers in NSC_FIELDS_LEDGER's order. */
enum { F_COMM, F_SEQ, F_RANK, F_FLAGS, F_FUNC, F_NCHANNELS = 12, F_API = 14 };

Test(ledger, hand_made_record_decodes)
{
    nsc_ledger_batch b;
    size_t n = one_rec(1, 1u << F_SEQ | 1u << F_FUNC | 1u << F_API, 1);
    cr_assert_eq(nsc_ledger_decode(buf, n, NULL, &b), NSC_WIRE_OK);
    cr_assert_eq(b.recs[0].seq, 1);
    cr_assert_eq(b.recs[0].func, 1);
    cr_assert_eq(b.recs[0].api_ns, 1);
    cr_assert_eq(b.recs[0].enqueue_ns, 0);
    nsc_ledger_release(&b);
}

Test(ledger, values_out_of_range)
{
    cr_assert_eq(decode(buf, one_rec(1, 1u << F_FUNC, 2)), NSC_WIRE_OK, "a string the process defined before");
    cr_assert_eq(decode(buf, one_rec(1, 1u << F_FUNC, 1 << 16)), NSC_WIRE_BAD_VALUE);
    cr_assert_eq(decode(buf, one_rec(0, 1u << F_NCHANNELS, 256)), NSC_WIRE_BAD_VALUE, "a U8 of 256");
    cr_assert_eq(decode(buf, one_rec(0, 1u << F_FLAGS, -1)), NSC_WIRE_BAD_VALUE, "a U32 below 0");
    cr_assert_eq(decode(buf, one_rec(0, 1u << F_RANK, (int64_t)INT32_MAX + 1)), NSC_WIRE_BAD_VALUE);
    cr_assert_eq(decode(buf, one_rec(0, 1u << F_API, 0)), NSC_WIRE_BAD_VALUE, "a known time of 0");
    cr_assert_eq(decode(buf, one_rec(0, 1u << F_RANK, INT32_MIN)), NSC_WIRE_OK);
}

Test(ledger, wrong_shapes)
{
    cr_assert_eq(decode(buf, one_rec(0, 1u << 25, 1)), NSC_WIRE_BAD_RECORD, "a field past the list");
    size_t n = one_rec(0, 1u << F_SEQ, 1);
    cr_assert_eq(buf[5], 0x93);
    buf[5] = 0x92;  /* the record's array: one element short */
    cr_assert_eq(decode(buf, n), NSC_WIRE_BAD_RECORD);
    uint8_t *p = nsc_mp_put_array(buf, 4);
    p = nsc_mp_put_uint(p, 2);
    cr_assert_eq(decode(buf, (size_t)(p - buf) + 3), NSC_WIRE_BAD_VERSION);
    p = nsc_mp_put_array(buf, 3);
    cr_assert_eq(decode(buf, 8), NSC_WIRE_BAD_RECORD);
}

Test(ledger, duplicate_or_zero_string_ids)
{
    uint8_t *p = nsc_mp_put_array(buf, 4);
    p = nsc_mp_put_uint(p, 1);
    p = nsc_mp_put_uint(p, 7);
    p = nsc_mp_put_array(p, 2);
    for (int i = 0; i < 2; i++) {
        p = nsc_mp_put_array(p, 2);
        p = nsc_mp_put_uint(p, 5);
        p = nsc_mp_put_text(p, "x");
    }
    p = nsc_mp_put_array(p, 0);
    cr_assert_eq(decode(buf, (size_t)(p - buf)), NSC_WIRE_BAD_VALUE);
    cr_assert_eq(decode(buf, one_rec(0, 0, 0)), NSC_WIRE_OK);
    buf[3] = 0x91;  /* one string of id 0 */
    buf[4] = 0x92;
    buf[5] = 0x00;
    cr_assert_eq(decode(buf, 8), NSC_WIRE_BAD_VALUE);
}

Test(ledger, wrong_types)
{
    uint8_t *p = nsc_mp_put_array(buf, 4);
    p = nsc_mp_put_text(p, "1");
    cr_assert_eq(decode(buf, (size_t)(p - buf) + 4), NSC_WIRE_BAD_TYPE, "a text version");
    size_t n = one_rec(0, 1u << F_SEQ, 1);
    buf[n - 2] = 0xc0;  /* the seq: nil */
    cr_assert_eq(decode(buf, n), NSC_WIRE_BAD_TYPE);
    n = one_rec(0, 1u << F_SEQ, 1);
    buf[n - 1] = 0x80;  /* the edges: a map */
    cr_assert_eq(decode(buf, n), NSC_WIRE_BAD_TYPE);
    n = one_rec(0, 1u << F_SEQ, 1);
    buf[n - 3] = 0xa1;  /* the present bits: a text */
    cr_assert_eq(decode(buf, n), NSC_WIRE_BAD_TYPE);
}

Test(ledger, huge_counts)
{
    static const uint8_t huge_array[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
    uint8_t *p = head(buf, 0);
    memcpy(p, huge_array, sizeof huge_array);
    cr_assert_eq(decode(buf, (size_t)(p - buf) + sizeof huge_array), NSC_WIRE_TOO_MANY, "records");
    memcpy(buf + 3, huge_array, sizeof huge_array);
    cr_assert_eq(decode(buf, 3 + sizeof huge_array), NSC_WIRE_TOO_MANY, "strings");
    size_t n = one_rec(0, 1u << F_SEQ, 1);
    memcpy(buf + n - 1, huge_array, sizeof huge_array);
    cr_assert_eq(decode(buf, n - 1 + sizeof huge_array), NSC_WIRE_TOO_MANY, "edges");
    nsc_dec_limits lim = {.max_records = 2};
    nsc_ledger_batch b;
    cr_assert_eq(nsc_ledger_decode(buf, encode_sample(), &lim, &b), NSC_WIRE_TOO_MANY);
    lim = (nsc_dec_limits){.max_msg = 8};
    cr_assert_eq(nsc_ledger_decode(buf, encode_sample(), &lim, &b), NSC_WIRE_TOO_LARGE);
    cr_assert_eq(decode(buf, 0), NSC_WIRE_EMPTY);
}

Test(ledger, wait_classes)
{
    cr_assert_eq(nsc_ledger_wait_of(NSC_S_PROXY_STEP_SEND_GPU_WAIT), NSC_LEDGER_WAIT_GPU);
    cr_assert_eq(nsc_ledger_wait_of(NSC_S_PROXY_STEP_RECV_GPU_WAIT), NSC_LEDGER_WAIT_GPU);
    cr_assert_eq(nsc_ledger_wait_of(NSC_S_PROXY_STEP_SEND_PEER_WAIT), NSC_LEDGER_WAIT_PEER);
    cr_assert_eq(nsc_ledger_wait_of(NSC_S_PROXY_STEP_SEND_WAIT), NSC_LEDGER_WAIT_SEND);
    cr_assert_eq(nsc_ledger_wait_of(NSC_S_PROXY_STEP_RECV_WAIT), NSC_LEDGER_WAIT_RECV);
    cr_assert_eq(nsc_ledger_wait_of(NSC_S_PROXY_STEP_RECV_FLUSH_WAIT), NSC_LEDGER_WAIT_FLUSH);
    cr_assert_eq(nsc_ledger_wait_of(NSC_S_PROXY_OP_SEND_DONE), -1);
    cr_assert_eq(nsc_ledger_wait_of(NSC_S_COUNT), -1);
}

/* docs/protocol-ledger.md, "The ledger": a row "| n | `member` | kind |" for every
 * field, the record's first, then under "Edge fields" the edge's. */
#define DOC_ROW(a, kind, m, text) "| `" #m "` | " #kind " |",
static void assert_rows(const char *doc, const char *const *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char want[128];
        snprintf(want, sizeof want, "| %zu %s", i, rows[i]);
        cr_assert(strstr(doc, want), "docs/protocol-ledger.md, \"The ledger\", has no row %s", want);
    }
}

Test(ledger, protocol_md_lists_every_field)
{
    static const char *recs_rows[] = {NSC_FIELDS_LEDGER(DOC_ROW, _)};
    static const char *edge_rows[] = {NSC_FIELDS_LEDGER_EDGE(DOC_ROW, _)};
    const char *doc = sample_doc(NSC_PROTOCOL_MD);
    cr_assert(doc, "%s", NSC_PROTOCOL_MD);
    const char *ledger = strstr(doc, "## The ledger");
    cr_assert(ledger, "docs/protocol-ledger.md has no section \"The ledger\"");
    const char *edge = strstr(ledger, "Edge fields");
    cr_assert(edge, "docs/protocol-ledger.md, \"The ledger\", has no \"Edge fields\"");
    assert_rows(ledger, recs_rows, sizeof recs_rows / sizeof recs_rows[0]);
    assert_rows(edge, edge_rows, sizeof edge_rows / sizeof edge_rows[0]);
}
