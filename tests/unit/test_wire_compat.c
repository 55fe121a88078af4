/* Wire compatibility with peers of other releases, on checked-in batches
 * (tests/unit/golden/):
 *
 * counters_batch.bin is the batch this encoder writes for the inputs below: a
 * plugin's counters with the self-cost guard's values and the newer ones. The
 * decoder of the release before the guard (one that reads 7 counters fields
 * and rejects more) was run on these bytes and accepted them; a change to
 * them needs that check again, hence the byte comparison.
 *
 * counters7_batch.bin is the batch the encoder before cost_outliers wrote
 * for the same inputs (7 header counters): read with cost_outliers 0.
 *
 * guard_record_batch.bin is the same counters but the two newest as the
 * guard's first encoder sent them, the guard's five as the counters record's
 * last fields: decoders go on reading that form.
 */
#include <criterion/criterion.h>
#include <msgpack.h>
#include <stdio.h>
#include <string.h>

#include "wire.h"

#define CAP 4096
static uint8_t buf[CAP], golden[CAP];

static size_t read_golden(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NSC_GOLDEN_DIR, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(golden, 1, sizeof golden, f);
    fclose(f);
    cr_assert_gt(n, 0);
    return n;
}

static void inputs(nsc_batch_hdr *h, nsc_counters *c)
{
    memset(h, 0, sizeof *h);
    memset(c, 0, sizeof *c);
    h->version = NSC_WIRE_VERSION;
    h->seq = 3;
    h->stream = 0x5eed;
    h->base_ns = 1000000000000ull;
    h->sent_ns = 1000000500000ull;
    h->proc.pid = 4242;
    strcpy(h->proc.job, "job7");
    strcpy(h->proc.host, "node1");
    h->proc.local_rank = 1;
    h->proc.gpu = 2;
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        c->emitted[t] = 100 + t;
        c->dropped[t] = t;
    }
    c->states_emitted = 50;
    c->states_dropped = 5;
    c->bad_handles = 1;
    c->completions_emitted[1] = 9;
    c->cost_ns = 123456789;
    c->coll_ns = 9876543210ull;
    c->shed_mask = 1u << 6;
    c->shed_changes = 2;
    c->shed_events = 777;
    c->chain_errors = 3;
    c->orphans = 4;
    c->cost_outliers = 6;
}

static void assert_counters_eq(const nsc_counters *got, const nsc_counters *want)
{
    cr_assert(memcmp(got, want, sizeof *want) == 0, "counters differ");
}

Test(wire_compat, a_new_batch_is_the_golden_an_old_decoder_accepted)
{
    nsc_batch_hdr h;
    nsc_counters c;
    nsc_enc e;
    inputs(&h, &c);
    cr_assert_eq(nsc_enc_begin(&e, buf, CAP, &h), NSC_WIRE_OK);
    cr_assert_eq(nsc_enc_counters(&e, &c), NSC_WIRE_OK);
    size_t len = nsc_enc_finish(&e), n = read_golden("counters_batch.bin");
    cr_assert_eq(len, n);
    cr_assert(memcmp(buf, golden, n) == 0);
}

/* The old decoder's rules, read with msgpack-c: a header map of at most 15
 * keys (unknown ones skipped) and a counters record of at most 7 fields. */
Test(wire_compat, the_golden_keeps_the_old_counters_arity)
{
    size_t n = read_golden("counters_batch.bin");
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    cr_assert_eq(msgpack_unpack_next(&u, (const char *)golden, n, NULL), MSGPACK_UNPACK_SUCCESS);
    cr_assert_leq(u.data.via.array.ptr[0].via.map.size, 15);
    const msgpack_object *recs = &u.data.via.array.ptr[1];
    cr_assert_eq(recs->via.array.size, 1);
    cr_assert_leq(recs->via.array.ptr[0].via.array.size, 1 + 7, "the tag and at most 7 fields");
    msgpack_unpacked_destroy(&u);
}

/* The inputs' counters, as the golden batch name carries them. */
static void want_counters(const char *name, nsc_counters *want)
{
    nsc_batch_hdr h;
    inputs(&h, want);
    if (strcmp(name, "guard_record_batch.bin") == 0)
        want->chain_errors = want->orphans = 0;  /* newer than that batch */
    if (strcmp(name, "counters_batch.bin") != 0)
        want->cost_outliers = 0;                  /* newer than those */
}

static void assert_decodes_both_ways(const char *name)
{
    nsc_counters want;
    want_counters(name, &want);
    size_t n = read_golden(name);
    nsc_batch b;
    cr_assert_eq(nsc_batch_decode(golden, n, NULL, &b), NSC_WIRE_OK, "%s", name);
    cr_assert_eq(b.has_counters, 1);
    assert_counters_eq(&b.counters, &want);
    nsc_batch_release(&b);
    nsc_scan s = {0};
    cr_assert_eq(nsc_batch_scan(golden, n, NULL, &s), NSC_WIRE_OK, "%s", name);
    assert_counters_eq(&s.b.counters, &want);
    nsc_scan_free(&s);
}

Test(wire_compat, newer_counters_are_read_from_the_header) { assert_decodes_both_ways("counters_batch.bin"); }

Test(wire_compat, seven_header_counters_are_read_as_an_older_sender_sent_them)
{
    assert_decodes_both_ways("counters7_batch.bin");
}

Test(wire_compat, the_guard_is_read_from_a_record_that_has_it) { assert_decodes_both_ways("guard_record_batch.bin"); }

/* The agent splices a plugin's counters into its own batch: the header's
 * counters follow, and the guard's from either form. */
static void assert_splice_keeps_the_header_counters(const char *name)
{
    nsc_counters want;
    want_counters(name, &want);
    size_t n = read_golden(name);
    nsc_splice sp;
    nsc_enc e;
    nsc_batch_hdr out = {.version = NSC_WIRE_VERSION, .seq = 9, .proc = {.pid = 4242}};
    cr_assert_eq(nsc_splice_begin(&sp, golden, n), NSC_WIRE_OK);
    cr_assert_eq(nsc_enc_begin(&e, buf, CAP, &out), NSC_WIRE_OK);
    cr_assert_eq(nsc_splice_copy(&sp, &e), NSC_WIRE_OK);
    nsc_batch b;
    cr_assert_eq(nsc_batch_decode(buf, nsc_enc_finish(&e), NULL, &b), NSC_WIRE_OK);
    assert_counters_eq(&b.counters, &want);
    nsc_batch_release(&b);
}

Test(wire_compat, a_spliced_counters_record_keeps_the_header_counters)
{
    assert_splice_keeps_the_header_counters("counters_batch.bin");
    assert_splice_keeps_the_header_counters("counters7_batch.bin");
    assert_splice_keeps_the_header_counters("guard_record_batch.bin");
}

/* A header "counters" that is not an array of integers is refused, not
 * skipped. */
Test(wire_compat, a_malformed_guard_is_refused)
{
    size_t n = read_golden("counters_batch.bin");
    uint8_t *at = memmem(golden, n, "\xa8" "counters\x98", 10);
    cr_assert_not_null(at);
    at[9] = 0x99;  /* one value more: the records' array32 is read as one */
    nsc_batch b;
    cr_assert_neq(nsc_batch_decode(golden, n, NULL, &b), NSC_WIRE_OK);
    at[9] = 0x98;
    at[10] = 0xc0;  /* nil where a value is due */
    cr_assert_neq(nsc_batch_decode(golden, n, NULL, &b), NSC_WIRE_OK);
}
