/* Unit tests for the detail fetch messages of the agent-to-collector codec:
 * a fetch and a detail chunk round trip at their limits, every prefix is
 * truncated, and a malformed corpus, each case asserting its exact error. */
#include <criterion/criterion.h>
#include <string.h>

#include "a2c.h"

static const char agent63[] = "a23456789012345678901234567890123456789012345678901234567890123";

/* The largest fetch: every text full, every pid and time at its maximum. */
static nsc_a2c_fetch full_fetch(void)
{
    nsc_a2c_fetch f;
    memset(&f, 0, sizeof f);
    strcpy(f.agent, agent63);
    memset(f.job, 'j', sizeof f.job - 1);
    f.id = UINT64_MAX;
    f.from_ns = UINT64_MAX - 1;
    f.to_ns = UINT64_MAX;
    f.types = UINT64_MAX;
    f.npids = NSC_A2C_FETCH_PIDS;
    for (uint32_t i = 0; i < f.npids; i++)
        f.pids[i] = UINT32_MAX - i;
    return f;
}

Test(a2c_fetch, fetch_round_trip)
{
    uint8_t buf[NSC_A2C_FETCH_MAX];
    nsc_a2c_fetch f = full_fetch(), d;
    size_t n = nsc_a2c_encode_fetch(&f, buf);
    cr_assert_leq(n, NSC_A2C_FETCH_MAX);
    cr_assert_eq(nsc_a2c_kind(buf, n), NSC_A2C_FETCH);
    cr_assert_eq(nsc_a2c_decode_fetch(buf, n, &d), 0);
    cr_assert(memcmp(&f, &d, sizeof f) == 0);
    for (size_t i = 1; i < n; i++)
        cr_assert_eq(nsc_a2c_decode_fetch(buf, i, &d), NSC_WIRE_TRUNCATED, "prefix %zu", i);
    /* a fetch is no ack, and an ack no fetch */
    nsc_a2c_ack ack = {.agent = "a", .seq = 1, .credit = 2};
    cr_assert_eq(nsc_a2c_decode_ack(buf, n, &ack), NSC_WIRE_BAD_RECORD);
    n = nsc_a2c_encode_ack(&ack, buf);
    cr_assert_eq(nsc_a2c_decode_fetch(buf, n, &d), NSC_WIRE_BAD_RECORD);
}

Test(a2c_fetch, fetch_malformed)
{
    static const struct { const char *name; const char *bytes; size_t len; int want; } cases[] = {
        {"arity", "\x98\x06\x01\xa1" "a\x00\xa0\x00\x00\x00", 10, NSC_WIRE_BAD_RECORD},
        {"version", "\x99\x06\x02\xa1" "a\x00\xa0\x00\x00\x00\x90", 11, NSC_WIRE_BAD_VERSION},
        {"window backwards", "\x99\x06\x01\xa1" "a\x00\xa0\x02\x01\x00\x90", 11, NSC_WIRE_BAD_VALUE},
        {"pid over u32", "\x99\x06\x01\xa1" "a\x00\xa0\x00\x00\x00\x91\xcf\x00\x00\x00\x01\x00\x00\x00\x00", 20,
         NSC_WIRE_BAD_VALUE},
        {"str pid", "\x99\x06\x01\xa1" "a\x00\xa0\x00\x00\x00\x91\xa0", 12, NSC_WIRE_BAD_TYPE},
        {"str types", "\x99\x06\x01\xa1" "a\x00\xa0\x00\x00\xa0\x90", 11, NSC_WIRE_BAD_TYPE},
        {"trailing", "\x99\x06\x01\xa1" "a\x00\xa0\x00\x00\x00\x90\x00", 12, NSC_WIRE_TRAILING},
    };
    nsc_a2c_fetch d;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = nsc_a2c_decode_fetch(cases[i].bytes, cases[i].len, &d);
        cr_assert_eq(rc, cases[i].want, "%s: got %d", cases[i].name, rc);
    }
    cr_assert_eq(nsc_a2c_decode_fetch("\x99\x06\x01\xa1" "a\x00\xa0\x00\x00\x00\x90", 11, &d), 0);
    cr_assert_eq(d.npids, 0);
    /* one pid more than a fetch may name */
    uint8_t many[64] = "\x99\x06\x01\xa1" "a\x00\xa0\x00\x00\x00\xdc\x00\x21";
    cr_assert_eq(nsc_a2c_decode_fetch(many, 13 + NSC_A2C_FETCH_PIDS + 1, &d), NSC_WIRE_BAD_VALUE);
    many[12] = NSC_A2C_FETCH_PIDS;
    cr_assert_eq(nsc_a2c_decode_fetch(many, 13 + NSC_A2C_FETCH_PIDS, &d), 0);
}

static uint8_t msg[1 << 12];

/* A chunk of two pieces (one empty) from the same batch sequence and one from the next. */
static size_t make_detail(void)
{
    static const uint8_t a[] = {1, 2, 3}, b[] = {4};
    static const nsc_a2c_piece pieces[] = {{7, a, sizeof a}, {7, b, 0}, {UINT64_MAX, b, sizeof b}};
    nsc_a2c_detail d = {.epoch = UINT64_MAX, .id = 9, .chunk = UINT32_MAX, .last = 1, .held_from_ns = 5,
                        .held_to_ns = UINT64_MAX, .npieces = 3, .pieces = pieces};
    strcpy(d.agent, agent63);
    strcpy(d.host, "node0");
    cr_assert_leq(nsc_a2c_detail_bound(&d), sizeof msg);
    size_t n = nsc_a2c_encode_detail(&d, msg);
    cr_assert_leq(n, nsc_a2c_detail_bound(&d));
    return n;
}

Test(a2c_fetch, detail_round_trip)
{
    size_t n = make_detail();
    nsc_a2c_detail d;
    cr_assert_eq(nsc_a2c_kind(msg, n), NSC_A2C_DETAIL);
    cr_assert_eq(nsc_a2c_decode_detail(msg, n, NULL, &d), 0);
    cr_assert_str_eq(d.agent, agent63);
    cr_assert_str_eq(d.host, "node0");
    cr_assert_eq(d.epoch, UINT64_MAX);
    cr_assert_eq(d.id, 9);
    cr_assert_eq(d.chunk, UINT32_MAX);
    cr_assert_eq(d.last, 1);
    cr_assert_eq(d.held_from_ns, 5);
    cr_assert_eq(d.held_to_ns, UINT64_MAX);
    cr_assert_eq(d.npieces, 3);
    cr_assert_eq(d.pieces[0].seq, 7);
    cr_assert_eq(d.pieces[0].len, 3);
    cr_assert_eq(d.pieces[0].data[2], 3);
    cr_assert_eq(d.pieces[1].len, 0);
    cr_assert_eq(d.pieces[2].seq, UINT64_MAX);
    cr_assert_eq(d.pieces[2].data[0], 4);
    nsc_a2c_detail_release(&d);
    cr_assert_null(d.mem);
}

static int detail_rc(const void *m, size_t n, const nsc_dec_limits *lim)
{
    nsc_a2c_detail d, zero;
    memset(&zero, 0, sizeof zero);
    int rc = nsc_a2c_decode_detail(m, n, lim, &d);
    if (rc != 0)
        cr_assert(memcmp(&d, &zero, sizeof d) == 0, "output not empty after error %d", rc);
    nsc_a2c_detail_release(&d);
    return rc;
}

Test(a2c_fetch, detail_malformed)
{
    size_t n = make_detail();
    cr_assert_eq(detail_rc(msg, 0, NULL), NSC_WIRE_EMPTY);
    for (size_t i = 1; i < n; i++)
        cr_assert_eq(detail_rc(msg, i, NULL), NSC_WIRE_TRUNCATED, "prefix %zu", i);
    nsc_dec_limits small = {.max_msg = n - 1}, few = {.max_records = 2};
    cr_assert_eq(detail_rc(msg, n, &small), NSC_WIRE_TOO_LARGE);
    cr_assert_eq(detail_rc(msg, n, &few), NSC_WIRE_TOO_MANY);
    static const struct { const char *name; const char *bytes; size_t len; int want; } cases[] = {
        {"arity", "\x9a\x07\x01\xa1" "a\xa0\x00\x00\x00\x00\x00\x00", 12, NSC_WIRE_BAD_RECORD},
        {"last not 0 or 1", "\x9b\x07\x01\xa1" "a\xa0\x00\x00\x00\x02\x00\x00\x90", 13, NSC_WIRE_BAD_VALUE},
        {"held backwards", "\x9b\x07\x01\xa1" "a\xa0\x00\x00\x00\x01\x02\x01\x90", 13, NSC_WIRE_BAD_VALUE},
        {"chunk over u32", "\x9b\x07\x01\xa1" "a\xa0\x00\x00\xcf\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x90", 21,
         NSC_WIRE_BAD_VALUE},
        {"piece arity", "\x9b\x07\x01\xa1" "a\xa0\x00\x00\x00\x00\x00\x00\x91\x91\x00", 15, NSC_WIRE_BAD_RECORD},
        {"str piece", "\x9b\x07\x01\xa1" "a\xa0\x00\x00\x00\x00\x00\x00\x91\x92\x00\xa0", 16, NSC_WIRE_BAD_TYPE},
        {"huge piece count", "\x9b\x07\x01\xa1" "a\xa0\x00\x00\x00\x00\x00\x00\xdd\xff\xff\xff\xff", 17,
         NSC_WIRE_TOO_MANY},
        {"bin longer than message", "\x9b\x07\x01\xa1" "a\xa0\x00\x00\x00\x00\x00\x00\x91\x92\x00\xc4\x09", 17,
         NSC_WIRE_TRUNCATED},
        {"trailing", "\x9b\x07\x01\xa1" "a\xa0\x00\x00\x00\x00\x00\x00\x90\x00", 14, NSC_WIRE_TRAILING},
        {"fetch as detail", "\x99\x06\x01\xa1" "a\x00\xa0\x00\x00\x00\x90", 11, NSC_WIRE_BAD_RECORD},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = detail_rc(cases[i].bytes, cases[i].len, NULL);
        cr_assert_eq(rc, cases[i].want, "%s: got %d", cases[i].name, rc);
    }
    cr_assert_eq(detail_rc("\x9b\x07\x01\xa1" "a\xa0\x00\x00\x00\x00\x00\x00\x90", 13, NULL), 0);
}
