/* test_block_sel.c: nsc_block_decode_sel, the partial block decode the
 * timeline uses, against the full decode of the same realistic block. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "mix.h"

static uint8_t *mix_block(size_t *len, int level)
{
    nsc_mix m;
    cr_assert_eq(nsc_mix_init(&m, 11, 20), 0);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(nsc_mix_collective(&m, 0, 3), 0);
    nsc_block_enc *e;
    cr_assert_eq(nsc_block_enc_new(level, &e), 0);
    nsc_block_begin(e, 1);
    for (size_t i = 0; i < m.nevents; i++)
        cr_assert_eq(nsc_block_add_event(e, &m.events[i]), 0);
    for (size_t i = 0; i < m.nstates; i++)
        cr_assert_eq(nsc_block_add_state(e, &m.states[i]), 0);
    for (size_t i = 0; i < m.ncompletions; i++)
        cr_assert_eq(nsc_block_add_completion(e, &m.completions[i]), 0);
    const uint8_t *buf;
    cr_assert_eq(nsc_block_finish(e, &buf, len, NULL), 0);
    uint8_t *copy = malloc(*len);
    cr_assert_not_null(copy);
    memcpy(copy, buf, *len);
    nsc_block_enc_free(e);
    nsc_mix_free(&m);
    return copy;
}

/* The selected decode equals the full decode filtered by type. */
static void check_mask(const uint8_t *buf, size_t len, const nsc_block *full, uint32_t types,
                       unsigned parts)
{
    nsc_block b;
    cr_assert_eq(nsc_block_decode_sel(buf, len, types, parts, &b), 0);
    uint32_t k = 0;
    for (uint32_t i = 0; i < full->hdr.nevents; i++) {
        if (!(types >> full->events[i].type & 1))
            continue;
        cr_assert_lt(k, b.hdr.nevents);
        nsc_event want = full->events[i];
        if (parts & NSC_BLOCK_TIMES_ONLY) { /* the other common fields read 0 */
            memset(&want, 0, offsetof(nsc_event, d));
            want.type = full->events[i].type;
            want.start_ns = full->events[i].start_ns;
            want.stop_ns = full->events[i].stop_ns;
        }
        cr_assert_eq(memcmp(&b.events[k], &want, sizeof b.events[k]), 0,
                     "mask %#x: event %u (stored %u)", types, k, i);
        k++;
    }
    cr_assert_eq(k, b.hdr.nevents, "mask %#x", types);
    cr_assert_eq(b.hdr.nstates, parts & NSC_BLOCK_STATES ? full->hdr.nstates : 0);
    cr_assert_eq(b.hdr.ncompletions, parts & NSC_BLOCK_COMPLETIONS ? full->hdr.ncompletions : 0);
    if (parts & NSC_BLOCK_STATES)
        cr_assert_eq(memcmp(b.states, full->states, b.hdr.nstates * sizeof *b.states), 0);
    if (parts & NSC_BLOCK_COMPLETIONS)
        cr_assert_eq(memcmp(b.completions, full->completions,
                            b.hdr.ncompletions * sizeof *b.completions), 0);
    nsc_block_release(&b);
}

static void check_level(int level)
{
    size_t len;
    uint8_t *buf = mix_block(&len, level);
    nsc_block full;
    cr_assert_eq(nsc_block_decode(buf, len, &full), 0);
    cr_assert_gt(full.hdr.nstates, 0);
    cr_assert_gt(full.hdr.ncompletions, 0);
    check_mask(buf, len, &full, 1u << NSC_T_KERNEL_CH, 0);
    check_mask(buf, len, &full, 1u << NSC_T_KERNEL_CH, NSC_BLOCK_TIMES_ONLY);
    check_mask(buf, len, &full, 1u << NSC_T_COLL | 1u << NSC_T_PROXY_STEP,
               NSC_BLOCK_TIMES_ONLY | NSC_BLOCK_COMPLETIONS);
    check_mask(buf, len, &full, NSC_MASK_ALL & ~(1u << NSC_T_PROXY_STEP), 0);
    check_mask(buf, len, &full, 1u << NSC_T_COLL | 1u << NSC_T_PROXY_OP, NSC_BLOCK_COMPLETIONS);
    check_mask(buf, len, &full, 1u << NSC_T_PROXY_STEP, NSC_BLOCK_STATES);
    check_mask(buf, len, &full, NSC_MASK_ALL, 0);
    check_mask(buf, len, &full, 0, NSC_BLOCK_STATES | NSC_BLOCK_COMPLETIONS);
    nsc_block_release(&full);
    free(buf);
}

Test(block_sel, matches_the_full_decode_raw) { check_level(0); }
Test(block_sel, matches_the_full_decode_zstd) { check_level(3); }

Test(block_sel, malformed_rejected)
{
    size_t len;
    uint8_t *buf = mix_block(&len, 0);
    nsc_block b;
    /* Every cut of the columns is caught, whatever the selection skips. */
    for (size_t cut = NSC_BLOCK_HDR_LEN; cut < len; cut += 7)
        cr_assert_neq(nsc_block_decode_sel(buf, cut, 1u << NSC_T_KERNEL_CH, 0, &b), 0,
                      "cut at %zu", cut);
    /* An unknown type is an error even where the selection does not ask for it. */
    const uint8_t *p = buf + NSC_BLOCK_HDR_LEN;
    for (int col = 0; col < 33; col++) /* the column table: 33 varints */
        while (*p++ & 0x80)
            ;
    size_t last_type = (size_t)(p - buf) + 20 * NSC_MIX_EVENTS_PER_COLL - 1;
    buf[last_type] = 99;
    cr_assert_eq(nsc_block_decode_sel(buf, len, 1u << NSC_T_KERNEL_CH, 0, &b), NSC_BLOCK_ETYPE);
    free(buf);
}
