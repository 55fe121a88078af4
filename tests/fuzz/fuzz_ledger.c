/* fuzz_ledger.c: libFuzzer target for the ledger decoder (the collector reads
 * ledger batches from the agents' messages). Whatever decodes must survive a
 * re-encode: the bound holds, and the copy decodes to the same records. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

static int same_rec(const nsc_ledger_rec *a, const nsc_ledger_rec *b)
{
    nsc_ledger_rec x = *a, y = *b;
    x.edges = y.edges = NULL;
    if (memcmp(&x, &y, sizeof x) != 0)
        return 0;
    return a->nedges == 0 || memcmp(a->edges, b->edges, a->nedges * sizeof *a->edges) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nsc_ledger_batch b, c;
    if (nsc_ledger_decode(data, size, NULL, &b) != NSC_WIRE_OK)
        return 0;
    size_t bound = nsc_ledger_bound(&b);
    uint8_t *out = malloc(bound);
    if (!out)
        abort();
    size_t n = nsc_ledger_encode(&b, out);
    if (n > bound || nsc_ledger_decode(out, n, NULL, &c) != NSC_WIRE_OK)
        abort();
    if (c.pid != b.pid || c.nstrs != b.nstrs || c.nrecs != b.nrecs ||
        memcmp(c.strs, b.strs, b.nstrs * sizeof *b.strs) != 0)
        abort();
    for (uint32_t i = 0; i < b.nrecs; i++)
        if (!same_rec(&b.recs[i], &c.recs[i]))
            abort();
    nsc_ledger_release(&c);
    nsc_ledger_release(&b);
    free(out);
    return 0;
}
