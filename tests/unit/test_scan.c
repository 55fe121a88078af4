/* Unit tests for the wire scanner (nsc_batch_scan): on the sample batch, on
 * every prefix and on every byte of it changed to a set of telling values,
 * it returns what nsc_batch_decode returns and keeps exactly the selected
 * records as the decoder decodes them; a value error ranks below a later
 * structural one; its arrays are reused and a rejected scan holds nothing. */
#include <criterion/criterion.h>
#include <string.h>

#include "scan_check.h"
#include "wire_samples.h"

#define CAP (1 << 16)
#define AGENT_TYPES (1u << NSC_T_COLL | 1u << NSC_T_P2P)
static uint8_t msg[CAP];

static void agrees(const void *buf, size_t len, uint32_t types, uint8_t flags, nsc_scan *s, const char *what,
                   size_t at)
{
    const char *why = scan_check(buf, len, types, flags, s);
    cr_assert_null(why, "%s at %zu: %s", what, at, why);
}

Test(scan, sample_batch_under_every_keep_setting)
{
    size_t len = sample_batch(msg, CAP);
    cr_assert_gt(len, 0);
    nsc_scan s = {0};
    agrees(msg, len, AGENT_TYPES, NSC_EVF_FOREIGN, &s, "agent", 0);
    cr_assert_eq(s.nevents, 2 * NSC_T_COUNT);
    cr_assert_eq(s.b.nevents, 4 + NSC_T_COUNT - 2, "Coll, P2p and every foreign event");
    cr_assert_eq(s.nstates, NSC_S_COUNT);
    agrees(msg, len, 0, 0, &s, "none", 0);
    cr_assert_eq(s.b.nevents, 0);
    cr_assert_eq(s.b.nstrs, 3, "definitions are always kept");
    agrees(msg, len, 0xffff, 0, &s, "all", 0);
    cr_assert_eq(s.b.nevents, 2 * NSC_T_COUNT);
    nsc_scan_free(&s);
}

/* The ledger builder reads every state and completion. */
Test(scan, states_and_completions_kept_on_request)
{
    size_t len = sample_batch(msg, CAP);
    nsc_scan s = {.keep_states = 1};
    agrees(msg, len, AGENT_TYPES, NSC_EVF_FOREIGN, &s, "states", 0);
    cr_assert_eq(s.b.nstates, NSC_S_COUNT);
    cr_assert_gt(s.b.ncompletions, 0);
    s.keep_states = 0;
    agrees(msg, len, AGENT_TYPES, NSC_EVF_FOREIGN, &s, "no states", 0);
    cr_assert_eq(s.b.nstates + s.b.ncompletions, 0);
    nsc_scan_free(&s);
}

Test(scan, every_prefix_agrees)
{
    size_t len = sample_batch(msg, CAP);
    nsc_scan s = {0};
    for (size_t n = 0; n < len; n++)
        agrees(msg, n, AGENT_TYPES, NSC_EVF_FOREIGN, &s, "prefix", n);
    nsc_scan_free(&s);
}

Test(scan, every_byte_changed_agrees)
{
    static const uint8_t values[] = {0x00, 0x1f, 0x7f, 0x80, 0x90, 0xa1, 0xc0, 0xc1, 0xc4,
                                     0xcc, 0xcf, 0xd3, 0xd9, 0xdc, 0xdd, 0xde, 0xe0, 0xff};
    size_t len = sample_batch(msg, CAP);
    nsc_scan s = {0};
    for (size_t i = 0; i < len; i++) {
        uint8_t was = msg[i];
        for (size_t v = 0; v < sizeof values; v++) {
            msg[i] = values[v];
            agrees(msg, len, AGENT_TYPES, NSC_EVF_FOREIGN, &s, "byte", i);
        }
        msg[i] = was;
    }
    nsc_scan_free(&s);
}

/* A batch whose first record, a state, has an out-of-range state value. */
static size_t bad_state_batch(void)
{
    nsc_batch_hdr h;
    nsc_enc e;
    sample_hdr(&h);
    cr_assert_eq(nsc_enc_begin(&e, msg, CAP, &h), NSC_WIRE_OK);
    nsc_state_rec st = {.id = 1, .ts_ns = h.base_ns, .state = 3, .tid = h.proc.pid};
    cr_assert_eq(nsc_enc_state(&e, &st), NSC_WIRE_OK);
    size_t rec = e.records_at + 5;  /* array32 header of the records */
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        nsc_event ev;
        sample_event(&ev, t, 10 + t, &h);
        cr_assert_eq(nsc_enc_event(&e, &ev), NSC_WIRE_OK);
    }
    size_t len = nsc_enc_finish(&e);
    /* [fixarray, tag 16, id 2, ts 0, state]: id and time are one byte each */
    cr_assert_eq(msg[rec + 1], NSC_WIRE_TAG_STATE);
    cr_assert_eq(msg[rec + 4], 3);
    msg[rec + 4] = 0x7f;
    return len;
}

Test(scan, structure_errors_outrank_an_earlier_bad_value)
{
    size_t len = bad_state_batch();
    nsc_scan s = {0};
    cr_assert_eq(nsc_batch_scan(msg, len, NULL, &s), NSC_WIRE_BAD_VALUE);
    cr_assert_eq(nsc_batch_scan(msg, len - 1, NULL, &s), NSC_WIRE_TRUNCATED);
    msg[len] = 0;
    cr_assert_eq(nsc_batch_scan(msg, len + 1, NULL, &s), NSC_WIRE_TRAILING);
    for (size_t n = 0; n <= len; n++)
        agrees(msg, n, AGENT_TYPES, NSC_EVF_FOREIGN, &s, "bad value prefix", n);
    nsc_scan_free(&s);
}

Test(scan, limits_and_reuse)
{
    size_t len = sample_batch(msg, CAP);
    nsc_scan s = {.keep_types = AGENT_TYPES, .keep_flags = NSC_EVF_FOREIGN};
    cr_assert_eq(nsc_batch_scan(msg, 0, NULL, &s), NSC_WIRE_EMPTY);
    nsc_dec_limits small = {.max_msg = len - 1};
    cr_assert_eq(nsc_batch_scan(msg, len, &small, &s), NSC_WIRE_TOO_LARGE);
    nsc_dec_limits few = {.max_records = 4};
    cr_assert_eq(nsc_batch_scan(msg, len, &few, &s), NSC_WIRE_TOO_MANY);
    cr_assert_eq(nsc_batch_scan(msg, len, NULL, &s), NSC_WIRE_OK);
    size_t kept = s.b.nevents, states = s.nstates;
    const nsc_event *events = s.b.events;
    cr_assert_eq(nsc_batch_scan(msg, len, NULL, &s), NSC_WIRE_OK);
    cr_assert_eq(s.b.nevents, kept, "counts start afresh");
    cr_assert_eq(s.nstates, states);
    cr_assert_eq(s.b.events, events, "the arrays are reused");
    cr_assert_eq(nsc_batch_scan(msg, len - 1, NULL, &s), NSC_WIRE_TRUNCATED);
    cr_assert(s.b.nevents == 0 && s.nevents == 0 && s.b.nstrs == 0 && !s.b.has_counters);
    cr_assert_eq(nsc_batch_scan(msg, len, NULL, &s), NSC_WIRE_OK);
    nsc_batch_hdr h;  /* then a batch without counters: none of the last ones stay */
    nsc_enc e;
    sample_hdr(&h);
    cr_assert_eq(nsc_enc_begin(&e, msg, CAP, &h), NSC_WIRE_OK);
    agrees(msg, nsc_enc_finish(&e), AGENT_TYPES, NSC_EVF_FOREIGN, &s, "no counters", 0);
    nsc_scan_free(&s);
}
