/* fuzz_lpack.c: libFuzzer target for the store's ledger values
 * (ledger_pack.h), which the collector and the CLI decode from the store's
 * files. Whatever decodes must survive a re-encode: the bound holds, the
 * copy decodes to the same records, and its second half appended to its
 * first gives the same bytes. Inputs are values of the key
 * FUZZ_LPACK_KEY (the seeds are written for it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_lpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nsc_ledger_key k = FUZZ_LPACK_KEY;
    nsc_lpack a = {0}, b = {0};
    if (nsc_lpack_decode(&k, data, size, &a) != 0) {
        nsc_lpack_free(&a);  /* what the decoder grew stays a's */
        return 0;
    }
    const nsc_ledger_rec **p = malloc((a.n ? a.n : 1) * sizeof *p);
    if (!p)
        abort();
    for (size_t i = 0; i < a.n; i++)
        p[i] = &a.recs[i];
    size_t bound = nsc_lpack_bound(p, a.n);
    uint8_t *out = malloc(bound);
    if (!out)
        abort();
    size_t n = nsc_lpack_encode(&k, p, a.n, out);
    if (n > bound || nsc_lpack_decode(&k, out, n, &b) != 0 || b.n != a.n || b.nedges != a.nedges ||
        (a.nedges && memcmp(b.edges, a.edges, a.nedges * sizeof *a.edges) != 0))
        abort();
    for (size_t i = 0; i < a.n; i++) {
        nsc_ledger_rec x = a.recs[i], y = b.recs[i];
        x.edges = y.edges = NULL;
        if (memcmp(&x, &y, sizeof x) != 0)
            abort();
    }
    /* its second half appended to its first: the same bytes */
    size_t half = a.n / 2, taken, first;
    nsc_lpack_end end, after;
    uint8_t *whole = malloc(2 * bound);
    nsc_lpack c = {0};
    if (!whole)
        abort();
    first = nsc_lpack_encode(&k, p, half, whole);
    if (half && (nsc_lpack_decode(&k, whole, first, &c) != 0 || (end = nsc_lpack_ending(&c)).n != half ||
                 nsc_lpack_append_fit(whole, first, &end, p + half, a.n - half, SIZE_MAX, whole + bound, &taken,
                                      &after) != n ||
                 taken != a.n - half || memcmp(whole + bound, out, n) != 0))
        abort();
    nsc_lpack_free(&c);
    free(whole);
    nsc_lpack_free(&a);
    nsc_lpack_free(&b);
    free(p);
    free(out);
    return 0;
}
