/* Unit tests for the wire splicer: records spliced into a batch with other
 * delta bases decode to exactly what was sent, stepped-over records keep the
 * id chain, the FULL contract, and malformed or cut input (errors, never a
 * read out of bounds). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"
#include "wire_samples.h"

#define CAP (1 << 16)
static uint8_t src[CAP], dst[CAP];

/* A destination batch for the same process as sample_hdr's, with its own
 * time base and pid and one event of its own, so every delta differs. */
static void begin_dst(nsc_enc *e, void *buf, size_t cap, int64_t base_shift, int32_t pid_shift)
{
    nsc_batch_hdr h;
    sample_hdr(&h);
    h.base_ns = (uint64_t)((int64_t)h.base_ns + base_shift);
    h.proc.pid = (uint32_t)((int32_t)h.proc.pid + pid_shift);
    cr_assert_eq(nsc_enc_begin(e, buf, cap, &h), NSC_WIRE_OK);
    nsc_event own;
    sample_event(&own, NSC_T_COLL, 900000, &h);
    cr_assert_eq(nsc_enc_event(e, &own), NSC_WIRE_OK);
}

static void decode_ok(const void *msg, size_t len, nsc_batch *b)
{
    int rc = nsc_batch_decode(msg, len, NULL, b);
    cr_assert_eq(rc, NSC_WIRE_OK, "decode: %s", nsc_wire_strerror(rc));
}

/* The record arrays of want and got (after got's first, own event) match. */
static void assert_same_records(const nsc_batch *want, const nsc_batch *got)
{
    cr_assert_eq(got->nevents, want->nevents + 1);
    cr_assert_eq(got->nstates, want->nstates);
    cr_assert_eq(got->ncompletions, want->ncompletions);
    cr_assert_eq(got->nstrs, want->nstrs);
    cr_assert_eq(got->nctxs, want->nctxs);
    cr_assert_eq(got->has_counters, want->has_counters);
    for (size_t i = 0; i < want->nevents; i++)
        cr_assert(memcmp(&got->events[i + 1], &want->events[i], sizeof want->events[i]) == 0,
                  "event %zu (type %u) differs", i, (unsigned)want->events[i].type);
    cr_assert(memcmp(got->states, want->states, want->nstates * sizeof *want->states) == 0);
    cr_assert(memcmp(got->completions, want->completions, want->ncompletions * sizeof *want->completions) == 0);
    cr_assert(memcmp(got->strs, want->strs, want->nstrs * sizeof *want->strs) == 0);
    cr_assert(memcmp(got->ctxs, want->ctxs, want->nctxs * sizeof *want->ctxs) == 0);
    cr_assert(memcmp(&got->counters, &want->counters, sizeof want->counters) == 0);
}

static void splice_all_into(int64_t base_shift, int32_t pid_shift)
{
    size_t len = sample_batch(src, CAP);
    cr_assert_gt(len, 0);
    nsc_batch want, got;
    decode_ok(src, len, &want);
    nsc_enc e;
    begin_dst(&e, dst, CAP, base_shift, pid_shift);
    nsc_splice sp;
    cr_assert_eq(nsc_splice_begin(&sp, src, len), NSC_WIRE_OK);
    size_t n = 0;
    for (int tag; (tag = nsc_splice_tag(&sp)) >= 0; n++) {
        cr_assert_eq(nsc_splice_copy(&sp, &e), NSC_WIRE_OK);
        cr_assert_eq(sp.tag, (unsigned)tag);
    }
    cr_assert_eq(n, want.nevents + want.nstates + want.ncompletions + want.nstrs + want.nctxs + 1);
    cr_assert_eq(nsc_splice_copy(&sp, &e), NSC_WIRE_BAD_RECORD, "nothing is left to take");
    decode_ok(dst, nsc_enc_finish(&e), &got);
    assert_same_records(&want, &got);
    nsc_batch_release(&want);
    nsc_batch_release(&got);
}

Test(splice, records_keep_their_values_under_other_bases)
{
    splice_all_into(0, 0);
    splice_all_into(-123456789, 0);     /* source times after the destination's base */
    splice_all_into(987654321, 0);      /* and before it */
    splice_all_into(-5000, 77);         /* tids re-based on another pid */
    splice_all_into(3, -1000);
}

Test(splice, stepped_over_records_keep_the_id_chain)
{
    size_t len = sample_batch(src, CAP);
    nsc_batch want, got;
    decode_ok(src, len, &want);
    nsc_enc e;
    begin_dst(&e, dst, CAP, 1000, 0);
    nsc_splice sp;
    cr_assert_eq(nsc_splice_begin(&sp, src, len), NSC_WIRE_OK);
    size_t k = 0, kept = 0;
    uint64_t ids[2 * NSC_T_COUNT];
    for (int tag; (tag = nsc_splice_tag(&sp)) >= 0;) {
        int event = tag < NSC_T_COUNT, keep = !event || k % 2 == 1;  /* drop every other event */
        if (event && keep)
            ids[kept++] = want.events[k].id;
        k += event;
        cr_assert_eq(nsc_splice_copy(&sp, keep ? &e : NULL), NSC_WIRE_OK);
    }
    decode_ok(dst, nsc_enc_finish(&e), &got);
    cr_assert_eq(got.nevents, kept + 1);
    for (size_t i = 0; i < kept; i++)
        cr_assert_eq(got.events[i + 1].id, ids[i]);
    cr_assert(memcmp(got.states, want.states, want.nstates * sizeof *want.states) == 0);
    nsc_batch_release(&want);
    nsc_batch_release(&got);
}

Test(splice, full_leaves_both_unchanged)
{
    size_t len = sample_batch(src, CAP);
    static uint8_t small[NSC_WIRE_REC_MAX * 2];
    nsc_enc e;
    begin_dst(&e, small, sizeof small, 0, 0);
    nsc_splice sp;
    cr_assert_eq(nsc_splice_begin(&sp, src, len), NSC_WIRE_OK);
    int full = 0;
    while (nsc_splice_tag(&sp) >= 0) {
        nsc_enc e_before = e;
        nsc_splice sp_before = sp;
        uint8_t bytes_before[sizeof small];
        memcpy(bytes_before, small, sizeof small);
        int rc = nsc_splice_copy(&sp, &e);
        if (rc == NSC_WIRE_FULL) {
            full = 1;
            cr_assert(memcmp(&e, &e_before, sizeof e) == 0);
            cr_assert(memcmp(&sp, &sp_before, sizeof sp) == 0);
            cr_assert(memcmp(small, bytes_before, sizeof small) == 0);
            break;
        }
        cr_assert_eq(rc, NSC_WIRE_OK);
    }
    cr_assert(full, "the small buffer filled up");
    nsc_batch b;
    decode_ok(small, nsc_enc_finish(&e), &b);  /* what fitted is a whole batch */
    nsc_batch_release(&b);
}

/* Walk whatever begin accepts; returns the first error, 0 if all was taken. */
static int splice_walk(const uint8_t *msg, size_t len)
{
    nsc_splice sp;
    nsc_enc e;
    begin_dst(&e, dst, CAP, 42, 1);
    int rc = nsc_splice_begin(&sp, msg, len);
    while (rc == NSC_WIRE_OK && sp.left > 0)
        rc = nsc_splice_copy(&sp, &e);
    return rc;
}

Test(splice, malformed_input_is_an_error)
{
    size_t len = sample_batch(src, CAP);
    cr_assert_eq(splice_walk(src, len), NSC_WIRE_OK);
    for (size_t n = 0; n < len; n++) {  /* every prefix, in a buffer of its own size for ASan */
        uint8_t *m = malloc(n ? n : 1);
        memcpy(m, src, n);
        cr_assert_neq(splice_walk(m, n), NSC_WIRE_OK, "prefix of %zu bytes", n);
        free(m);
    }
    const uint8_t junk[] = {0xc1, 0x00};
    cr_assert_eq(splice_walk(junk, sizeof junk), NSC_WIRE_BAD_TYPE);
    nsc_splice sp;
    cr_assert_neq(nsc_splice_begin(&sp, junk, sizeof junk), NSC_WIRE_OK);
    cr_assert_eq(nsc_splice_tag(&sp), -1, "a failed begin leaves nothing to take");
}
