/* test_item_ledger.c: an agent batch's ledger batches at the collector's
 * decoding (nsc_item_batch): one that does not decode is counted and
 * skipped while the batch's sections and its other ledger batches are kept;
 * one whose process has a section in the batch is placed with it, one of
 * another process is left for the writer to place (procmap.h). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "itemutil.h"
#include "mix.h"
#include "storeutil.h"

/* A section of process pid: one context, the mix's strings, no events. */
static size_t section(uint32_t pid, uint8_t *buf, size_t cap)
{
    nsc_batch_hdr h = {.version = NSC_WIRE_VERSION, .proc = nsc_test_proc("job", "node0", pid, 0)};
    nsc_ctx_def ctx = nsc_test_ctx(0, 0xc0, 0, 2);
    nsc_enc e;
    cr_assert_eq(nsc_enc_begin(&e, buf, cap, &h), 0);
    cr_assert_eq(nsc_enc_ctx(&e, &ctx), 0);
    return nsc_enc_finish(&e);
}

/* Process pid's ledger batch of n records of the mix. */
static size_t ledger(uint32_t pid, uint32_t n, uint8_t *buf)
{
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_ledger_rec recs[8];
    nsc_mix_strs(strs);
    for (uint32_t i = 0; i < n; i++)
        nsc_mix_ledger(&recs[i], 0xc0, i, 0);
    nsc_ledger_batch b = {.pid = pid, .nstrs = NSC_MIX_NSTRS, .nrecs = n, .strs = strs, .recs = recs};
    cr_assert_leq(nsc_ledger_bound(&b), 4096);
    return nsc_ledger_encode(&b, buf);
}

Test(item_ledger, undecodable_counted_rest_kept_and_placed)
{
    static uint8_t sec[4096], good[4096], orphan[4096];
    static const uint8_t junk[] = {0x94, 0xc1, 0xff, 0x00};
    nsc_a2c_section secs[1] = {{sec, (uint32_t)section(100, sec, sizeof sec)}};
    nsc_a2c_section ledgers[3] = {{junk, sizeof junk},
                                  {good, (uint32_t)ledger(100, 5, good)},
                                  {orphan, (uint32_t)ledger(200, 3, orphan)}};
    nsc_a2c_batch b = {.agent = "agent-1", .host = "node0", .seq = 1, .nsections = 1, .sections = secs,
                       .nledgers = 3, .ledgers = ledgers};
    unsigned reason = 0;
    nsc_item *it = nsc_test_item(&b, &reason);
    cr_assert_not_null(it, "batch refused: reason %u", reason);
    cr_assert_eq(it->a2c.nsections, 1);
    cr_assert_eq(it->ledger_bad, 1);
    cr_assert_eq(it->nsl, 2);
    cr_assert_eq(it->sl[0].batch->nrecs, 5);
    cr_assert_eq(it->sl[0].proc->pid, 100);
    cr_assert_str_eq(it->sl[0].proc->job, "job");
    cr_assert_eq(it->sl[1].batch->nrecs, 3);
    cr_assert_null(it->sl[1].proc);
    nsc_item_free(it);
}
